/* tessera/tensor.h - tensors and the contexts that own them.
 *
 * A tensor has up to four dimensions: ne[0] is the innermost (row
 * length), nb[i] the byte stride of dimension i.  Tensors live in a
 * context, an arena released in one call.  A context made with
 * no_alloc = true holds metadata only, and a graph allocator or
 * tsr_context_alloc_tensors() places the data in a backend buffer; with
 * no_alloc = false each tensor gets host memory right away.  */
#ifndef TESSERA_TENSOR_H
#define TESSERA_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tessera/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSR_MAX_DIMS 4
#define TSR_MAX_SRC 6
#define TSR_MAX_OP_PARAMS 16
#define TSR_MAX_NAME 64

typedef enum tsr_op {
#define TSR_OP(id, name, kind) TSR_OP_##id,
#include <tessera/ops.def>
#undef TSR_OP
  TSR_OP_COUNT
} tsr_op;

typedef enum tsr_op_kind {
  TSR_OP_KIND_VIEW,
  TSR_OP_KIND_UNARY,
  TSR_OP_KIND_BINARY,
  TSR_OP_KIND_OTHER
} tsr_op_kind;

enum tsr_tensor_flag {
  TSR_FLAG_INPUT = 1,   /* set by the user before each compute */
  TSR_FLAG_OUTPUT = 2,  /* read after compute: never reused */
  TSR_FLAG_PARAM = 4    /* a weight */
};

struct tsr_buffer;

typedef struct tsr_tensor {
  tsr_type type;
  int64_t ne[TSR_MAX_DIMS];       /* elements per dimension */
  size_t nb[TSR_MAX_DIMS];        /* byte strides */
  tsr_op op;
  int32_t op_params[TSR_MAX_OP_PARAMS];
  int32_t flags;
  struct tsr_tensor *src[TSR_MAX_SRC];
  struct tsr_tensor *view_src;    /* the tensor whose memory this views */
  size_t view_offs;               /* byte offset into view_src */
  struct tsr_buffer *buffer;      /* where data lives (NULL: host arena) */
  void *data;
  void *extra;                    /* backend-private */
  char name[TSR_MAX_NAME];
} tsr_tensor;

typedef struct tsr_context tsr_context;

/* A new context.  NO_ALLOC: see above.  NULL on allocation failure.  */
tsr_context *tsr_context_new (bool no_alloc);
void tsr_context_free (tsr_context *ctx);
bool tsr_context_no_alloc (const tsr_context *ctx);

/* The first tensor of CTX, and the one after T (creation order).  */
tsr_tensor *tsr_context_first_tensor (tsr_context *ctx);
tsr_tensor *tsr_context_next_tensor (tsr_context *ctx, tsr_tensor *t);
tsr_tensor *tsr_context_get_tensor (tsr_context *ctx, const char *name);

/* New tensors with N_DIMS dimensions (1 to 4).  NULL and an error
   for bad shapes or types.  */
tsr_tensor *tsr_new_tensor (tsr_context *ctx, tsr_type type, int n_dims,
                            const int64_t *ne);
tsr_tensor *tsr_new_tensor_1d (tsr_context *ctx, tsr_type type, int64_t ne0);
tsr_tensor *tsr_new_tensor_2d (tsr_context *ctx, tsr_type type, int64_t ne0,
                               int64_t ne1);
tsr_tensor *tsr_new_tensor_3d (tsr_context *ctx, tsr_type type, int64_t ne0,
                               int64_t ne1, int64_t ne2);
tsr_tensor *tsr_new_tensor_4d (tsr_context *ctx, tsr_type type, int64_t ne0,
                               int64_t ne1, int64_t ne2, int64_t ne3);

tsr_tensor *tsr_set_name (tsr_tensor *t, const char *name);
const char *tsr_get_name (const tsr_tensor *t);
void tsr_set_input (tsr_tensor *t);
void tsr_set_output (tsr_tensor *t);
void tsr_set_param (tsr_tensor *t);

int64_t tsr_nelements (const tsr_tensor *t);
int64_t tsr_nrows (const tsr_tensor *t);
/* Bytes spanned by T's data, from its first to past its last byte.  */
size_t tsr_nbytes (const tsr_tensor *t);
/* Highest dimension with ne > 1, plus one (at least 1).  */
int tsr_n_dims (const tsr_tensor *t);
bool tsr_is_contiguous (const tsr_tensor *t);
/* Rows are contiguous, though rows themselves may be strided.  */
bool tsr_is_rows_contiguous (const tsr_tensor *t);
bool tsr_is_view (const tsr_tensor *t);
bool tsr_same_shape (const tsr_tensor *a, const tsr_tensor *b);
/* B can be broadcast to A: every a->ne[i] is a multiple of b->ne[i].  */
bool tsr_can_repeat (const tsr_tensor *b, const tsr_tensor *a);

const char *tsr_op_name (tsr_op op);
tsr_op_kind tsr_op_get_kind (tsr_op op);

/* Parameter word I (0 to TSR_MAX_OP_PARAMS - 1) of T, as an int32 or
   a float; 0 with TSR_ERR_INVALID_ARG recorded when I is out of range
   or T is NULL.  */
int32_t tsr_get_op_param_i32 (const tsr_tensor *t, int i);
float tsr_get_op_param_f32 (const tsr_tensor *t, int i);

/* Host access for tensors with host data (no_alloc = false contexts,
   or host buffers).  Element index I follows the tensor's strides.  */
float tsr_get_f32_1d (const tsr_tensor *t, int64_t i);
void tsr_set_f32_1d (tsr_tensor *t, int64_t i, float v);

/* Copy SIZE bytes at OFFSET of T's data from/to host memory, whatever
   the buffer (device buffers included).  */
int tsr_tensor_set (tsr_tensor *t, const void *data, size_t offset,
                    size_t size);
int tsr_tensor_get (const tsr_tensor *t, void *data, size_t offset,
                    size_t size);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_TENSOR_H */
