/* opcheck.h - what the parts of tessera-opcheck share.  Not installed.
 *
 * tessera-opcheck checks every operation on every device against a
 * reference.  It is split by concern:
 *   tessera-opcheck.c     options, devices, the test/perf/support modes
 *                         and the checker's self-test
 *   opcheck-run.c         one case on one backend: inputs, guarded
 *                         allocation, compute, read-back; comparison
 *                         and the error thresholds
 *   opcheck-cases.c       the case list and the cases of the foundation
 *                         ops (include/tessera/ops.h, first part)
 *   opcheck-cases-math.c  cases of the element-wise math, reduction and
 *                         shape ops
 *   opcheck-cases-nn.c    cases of the transformer and convolution ops
 *
 * A case is an operation, its operand types and shapes and its
 * parameters: a builder function and an oc_params block.  The builder
 * makes the inputs with oc_input (so the runner knows which tensors to
 * fill and how) and returns the tensor to compare.  It runs once per
 * backend, so it must build the same graph every time.  Only Tessera's
 * public API is used.  */
#ifndef OPCHECK_H
#define OPCHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <tessera.h>

#include "tool-util.h"   /* random numbers, clock, usage checks */

/* How an input is filled: uniform floats in [lo, hi), or for i32
   tensors uniform integers in [lo, hi).  */
struct oc_fill
{
  double lo, hi;
  double p_special;   /* chance of NaN, +inf, -inf or 0 instead */
  double p_neginf;    /* chance of -inf instead (masks) */
  bool unique;        /* i32: distinct values within each row */
};
#define OC_UNIFORM(a, b) ((struct oc_fill) { .lo = (a), .hi = (b) })

/* Memory layout of an input with a given logical shape.  */
enum oc_layout
{
  OC_CONT,        /* contiguous */
  OC_TRANSPOSED,  /* dims 0 and 1 swapped in memory (a transpose view) */
  OC_PERMUTED,    /* dims 1 and 2 swapped in memory (a permute view) */
  OC_STRIDED      /* rows of a wider tensor, at an offset (a view) */
};

#define OC_MAX_INPUTS 8

/* Elements of array A.  */
#define OC_N(a) (sizeof (a) / sizeof *(a))

/* What a builder gets: the context to build in and the inputs made.  */
struct oc_build
{
  tsr_context *ctx;
  int n_inputs;
  tsr_tensor *inputs[OC_MAX_INPUTS];
  struct oc_fill fills[OC_MAX_INPUTS];
};

/* The parameters of a case, read by its builder.  */
struct oc_params
{
  tsr_type type[4];              /* operand types */
  int64_t ne[4][TSR_MAX_DIMS];   /* operand shapes */
  enum oc_layout layout[4];      /* operand layouts */
  int iv[8];                     /* integer parameters */
  float fv[4];                   /* float parameters */
};

struct oc_case;
typedef tsr_tensor *(*oc_build_fn) (struct oc_build *b,
                                    const struct oc_case *c);

struct oc_case
{
  char name[192];
  tsr_op op;            /* the operation under test */
  oc_build_fn build;
  struct oc_params p;
  double max_nmse;      /* 0: the threshold table decides */
};

/* The case list.  */
struct oc_list
{
  struct oc_case *cases;
  size_t n, cap;
};

/* Append a case named by the printf-style FMT; exits on allocation
   failure.  */
void oc_add (struct oc_list *l, tsr_op op, oc_build_fn build,
             const struct oc_params *p, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__ ((format (printf, 5, 6)))
#endif
  ;
void oc_list_free (struct oc_list *l);
/* Every case (opcheck-cases*.c).  */
void oc_cases_all (struct oc_list *l);
void oc_cases_core (struct oc_list *l);
void oc_cases_math (struct oc_list *l);
void oc_cases_nn (struct oc_list *l);

/* Builder helpers (opcheck-cases.c).  */
/* Every weight type of mul_mat, get_rows and friends.  */
#define OC_N_WEIGHT_TYPES 5
extern const tsr_type oc_weight_types[OC_N_WEIGHT_TYPES];
/* The block types of model files beyond q8_0 and q4_0 (q4_1 .. mxfp4,
   not q8_K): weights of get_rows, mul_mat and mul_mat_id, in cases
   whose rows are whole super-blocks (multiples of 256).  */
#define OC_N_BLOCK_TYPES 11
extern const tsr_type oc_block_types[OC_N_BLOCK_TYPES];
/* The weight types whose blocks are 32 elements or fewer (f32 .. q4_0,
   then q4_1 q5_0 q5_1 iq4_nl mxfp4): types of cpy and set_rows cases
   whose rows are 32 long.  */
extern const tsr_type oc_row32_types[];
extern const size_t oc_n_row32_types;
/* A new input of TYPE, logical shape NE, filled from FILL, laid out as
   LAYOUT (a view of a root input when not OC_CONT).  */
tsr_tensor *oc_input (struct oc_build *b, tsr_type type,
                      const int64_t ne[TSR_MAX_DIMS], struct oc_fill fill,
                      enum oc_layout layout);
/* Operand I of P as an input filled from FILL.  */
tsr_tensor *oc_operand (struct oc_build *b, const struct oc_params *p, int i,
                        struct oc_fill fill);
/* "f32[17,3,2]T" for case names: type, shape without trailing 1s, and a
   letter for the layout.  */
const char *oc_shape_str (char *buf, size_t n, tsr_type type,
                          const int64_t ne[TSR_MAX_DIMS],
                          enum oc_layout layout);
/* Set ne to {n0, n1, n2, n3}.  */
void oc_ne (int64_t ne[TSR_MAX_DIMS], int64_t n0, int64_t n1, int64_t n2,
            int64_t n3);


/* Running a case (opcheck-run.c).  */

enum oc_status
{
  OC_OK,
  OC_UNSUPPORTED,   /* the backend does not support a node */
  OC_ERROR          /* building, allocating or computing failed, or a
                       guard was overwritten */
};

/* Deliberate errors for the checker's self-test, applied to the device
   under test after compute.  */
struct oc_inject
{
  bool corrupt_output;   /* change one output element */
  bool nan_output;       /* make one output element NaN */
  bool guard_write;      /* change one byte of a guard */
};

/* The output of one case on one backend.  */
struct oc_output
{
  enum oc_status status;
  char msg[512];
  bool is_int;            /* i32 output: compared exactly */
  int64_t n;              /* elements */
  int64_t ne[TSR_MAX_DIMS];
  float *f;               /* n floats, or */
  int32_t *i;             /* n integers */
  double us_per_run;      /* perf mode */
};

struct oc_run_opts
{
  uint64_t seed;
  bool reference;         /* pre-fill outputs with the reference
                             pattern */
  int repeat;             /* perf: timed runs (0: test mode) */
  bool support_only;      /* only ask the backend whether it supports
                             every node (status OC_OK or
                             OC_UNSUPPORTED) */
  const struct oc_inject *inject;   /* NULL: none */
};

/* Run case C on backend BE into OUT (free with oc_output_free).  */
void oc_run (const struct oc_case *c, tsr_backend *be,
             const struct oc_run_opts *opts, struct oc_output *out);
void oc_output_free (struct oc_output *out);

/* Compare OUT with the reference REF; true when they agree within
   MAX_NMSE.  Otherwise a reason goes to MSG.  */
bool oc_compare (const struct oc_output *ref, const struct oc_output *out,
                 double max_nmse, char *msg, size_t msg_size);
/* The NMSE threshold of case C, from the table.  */
double oc_threshold (const struct oc_case *c);
/* Print the threshold table, one line per entry.  */
void oc_print_thresholds (FILE *f);

#endif /* OPCHECK_H */
