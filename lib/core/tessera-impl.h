/* tessera-impl.h - what libtessera's own files share.  Not installed.  */
#ifndef TESSERA_IMPL_H
#define TESSERA_IMPL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tessera.h>
#include <tessera/module.h>

/* Invariants the library owns (never user input).  */
#define TSR_ASSERT(cond)                                                  \
  do                                                                      \
    {                                                                     \
      if (!(cond))                                                        \
        tsri_assert_fail (#cond, __FILE__, __LINE__);                     \
    }                                                                     \
  while (0)
_Noreturn void tsri_assert_fail (const char *what, const char *file,
                                 int line);

/* log.c */
void tsri_vlog (tsr_log_level level, const char *fmt, va_list ap);


/* tensor.c */
struct tsr_context
{
  bool no_alloc;
  struct tsri_chunk *chunks;    /* every allocation, freed together */
  tsr_tensor *first, *last;     /* tensors in creation order */
};
/* Memory owned by CTX, zeroed, aligned to 64 bytes; NULL + error.  */
void *tsri_context_alloc (tsr_context *ctx, size_t size);

/* The slot of pointer P in an open-addressing table of CAP slots (a
   power of two): a fixed mix of the address, for tables keyed by
   objects this process allocated (tensors, buffers), which input cannot
   choose.  */
static inline size_t
tsri_hash_ptr (const void *p, size_t cap)
{
  uintptr_t x = (uintptr_t) p;
  x ^= x >> 17;
  x *= (uintptr_t) 0x9e3779b97f4a7c15ULL;
  return (size_t) (x ^ (x >> 29)) & (cap - 1);
}

/* hash.c: keyed hashes (SipHash-2-4, a random key per process) for
   tables indexed by what input supplies, which therefore cannot be
   made to collide.  */
uint64_t tsri_hash (const void *data, size_t len);
uint64_t tsri_hash_u64 (uint64_t v);
/* An index of names to positions 0, 1... in an OWNER's table (open
   addressing on tsri_hash, at most half full, grown as names are added,
   so its size follows the names added, not a count claimed).  Names
   are read back through NAME_AT.  Zero-initialize; free with
   tsri_name_index_free.  */
struct tsri_name_index
{
  int64_t *slots;               /* position + 1; 0 is empty */
  uint64_t mask;                /* capacity - 1 (slots NULL: empty) */
  int64_t count;
};
typedef void (*tsri_name_at) (const void *owner, int64_t pos, const char **s,
                              size_t *len);
/* The position of the name S of LEN bytes, or -1.  */
int64_t tsri_name_index_find (const struct tsri_name_index *ix,
                              const char *s, size_t len,
                              tsri_name_at name_at, const void *owner);
/* Index position POS (its name is NAME_AT (OWNER, POS)); returns TSR_OK
   or, when out of memory, TSR_ERR_NO_MEMORY with an error recorded.  */
int tsri_name_index_add (struct tsri_name_index *ix, int64_t pos,
                         tsri_name_at name_at, const void *owner);
void tsri_name_index_free (struct tsri_name_index *ix);

/* registry.c: DELTA more (or fewer) live objects made from device
   DEV's module (backends, buffers, events); a module is not unloaded
   while it has any.  DEV may be NULL (nothing to count).  */
void tsri_registry_hold (tsr_device *dev, int delta);
/* The registration of communication module NAME (tessera-comm-NAME),
   loaded from the search path when it is not yet; NULL with an error
   naming the directories tried (registry.c).  */
tsr_reg *tsri_registry_comm_module (const char *name);

/* tensor.c: T's dense strides from its type and shape.  */
void tsri_set_strides (tsr_tensor *t);
/* tensor.c: whether a tensor of TYPE shaped NE (non-negative, whole
   blocks) can exist: its element count fits in int64_t and its bytes in
   half the address space, with dimensions of 0 counted as 1.  */
bool tsri_shape_fits (tsr_type type, const int64_t ne[TSR_MAX_DIMS]);

/* A * B for sizes (A, B >= 0), INT64_MAX when the product does not fit:
   a saturated size is refused later as too large, never wrapped.  */
static inline int64_t
tsri_mul_sat (int64_t a, int64_t b)
{
  if (a < 0 || b < 0)
    return INT64_MAX;
  return b != 0 && a > INT64_MAX / b ? INT64_MAX : a * b;
}

/* files.c */
struct stat;
/* "a directory", "a FIFO"... for a st_mode.  */
const char *tsri_file_kind (unsigned mode);
/* Open PATH for reading if it is a regular file (without blocking on a
   FIFO): the descriptor, with *ST filled; else -1 and a REASON such as
   "it is a FIFO, not a regular file" or strerror's text.  */
int tsri_open_regular (const char *path, struct stat *st, char *reason,
                       size_t size);
/* Whether FD (SIZE bytes) is a shared library of this process's ELF
   class whose headers and loaded segments lie inside the file; else
   REASON ("is empty", "is truncated: segment 2 ends at...").  */
bool tsri_check_shared_object (int fd, uint64_t size, char *reason,
                               size_t rsize);
/* A tensor shaped like NE[0..3] (unused dims 1).  */
tsr_tensor *tsri_new_tensor_impl (tsr_context *ctx, tsr_type type,
                                  const int64_t ne[TSR_MAX_DIMS],
                                  tsr_tensor *view_src, size_t view_offs);
tsr_context *tsri_tensor_context (const tsr_tensor *t);
/* TSR_OK when bytes [OFFSET, OFFSET + SIZE) lie inside T's data and T
   is allocated; else an error naming WHAT.  */
int tsri_check_range (const char *what, const tsr_tensor *t,
                      const void *data, size_t offset, size_t size);

/* ops.c: helpers for op builders (also used by ops-*.c).  */
/* Writes "[ne0, ne1, ne2, ne3]" into BUF.  */
const char *tsri_shape_str (const tsr_tensor *t, char *buf, size_t n);
/* False (with the first error kept or recorded) if CTX or a needed
   operand is NULL.  */
bool tsri_operands_ok (tsr_op op, tsr_context *ctx, tsr_tensor *a,
                       tsr_tensor *b, bool need_b);
void tsri_set_param_f32 (tsr_tensor *t, int i, float v);

/* validate.c: one rule per op, shared by its builder and by
   tsr_node_validate.  A rule reads a node's operands (src), parameters
   (op_params) and, for the ops whose result type is an argument
   (cast, im2col), its type; it says what the result must be, or what
   is wrong.  The generic checks run first (tsri_node_check): sources a
   rule reads are present, with known types, positive sizes and whole
   blocks.  Builders make only such operands, so they call the rule
   alone (tsri_build).  */
struct tsri_verdict
{
  int status;
  char msg[256];
};
struct tsri_result
{
  tsr_type type;
  int64_t ne[TSR_MAX_DIMS];
  int alias;                    /* the source the result aliases, or -1 */
};
typedef int tsri_rule_fn (const tsr_tensor *n, struct tsri_result *r,
                          struct tsri_verdict *v);
/* Record STATUS and a message in V; returns STATUS.  */
int tsri_reject (struct tsri_verdict *v, int status, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__ ((format (printf, 3, 4)))
#endif
  ;
/* False, with V set, unless the first N sources of N are there.  */
bool tsri_need_srcs (const tsr_tensor *n, int count, struct tsri_verdict *v);
/* False, with a TSR_ERR_TYPE verdict naming WHICH, unless T has TYPE.  */
bool tsri_need_type (const tsr_tensor *n, const tsr_tensor *t,
                     const char *which, tsr_type type,
                     struct tsri_verdict *v);
/* The rules, by the file of their builders.  */
tsri_rule_fn tsri_rule_binary, tsri_rule_unary, tsri_rule_sum_rows,
  tsri_rule_soft_max, tsri_rule_cpy, tsri_rule_cont, tsri_rule_get_rows,
  tsri_rule_mul_mat;                                    /* ops.c */
tsri_rule_fn tsri_rule_glu, tsri_rule_sum, tsri_rule_mean,
  tsri_rule_argmax, tsri_rule_repeat, tsri_rule_concat, tsri_rule_clamp,
  tsri_rule_pad, tsri_rule_arange, tsri_rule_upscale, tsri_rule_argsort,
  tsri_rule_top_k;                                      /* ops-math.c */
tsri_rule_fn tsri_rule_rope, tsri_rule_set_rows, tsri_rule_flash_attn_ext,
  tsri_rule_mul_mat_id, tsri_rule_im2col, tsri_rule_pool_2d; /* ops-nn.c */
tsri_rule_fn tsri_rule_all_reduce, tsri_rule_all_gather, tsri_rule_send,
  tsri_rule_recv;                                       /* comm.c */
/* What PROTO's op makes of its sources and parameters, checked; the
   new result node, or NULL with the rule's error recorded.  */
tsr_tensor *tsri_build (tsr_context *ctx, const tsr_tensor *proto);
/* The result of one-operand op OP of A with the N_F32 f32 parameters
   F32 (ops.c).  */
tsr_tensor *tsri_build_unary (tsr_op op, tsr_context *ctx, tsr_tensor *a,
                              int n_f32, const float *f32);
/* The opening checks before DEV's backend computes NODE: it is
   valid, and it and its sources are allocated in memory DEV reads
   (backend.c).  TSR_OK or an error recorded naming the device and the
   node.  Whether DEV has a kernel is its backend's question.  */
int tsri_node_ready (tsr_device *dev, const tsr_tensor *node);
/* Wait for BACKEND after work whose status is STATUS (backend.c):
   STATUS with its message kept when it is a failure, else the
   synchronize's own status.  */
int tsri_sync_after (tsr_backend *backend, int status);

/* More devices than any machine has: a registration claiming more is
   refused rather than walked (registry.c, tsr_reg_new).  */
#define TSRI_MAX_DEVICES_PER_REG 4096
/* Free REG if tsr_reg_new made it (after the module's finalize).  */
void tsri_reg_release (tsr_reg *reg);
/* The generic checks and the rule; TSR_OK or V set.  */
int tsri_node_check (const tsr_tensor *n, struct tsri_verdict *v);

/* alloc.c */
tsr_buffer *tsri_gallocr_buffer (const tsr_gallocr *ga);
/* Whether B is a buffer that exists (not yet given to tsr_buffer_free):
   a tensor's buffer pointer outlives its buffer.  */
bool tsri_buffer_live (const tsr_buffer *b);
/* Mark B as a graph allocator's memory for graph results; whether B is
   (false for a freed buffer).  */
void tsri_buffer_set_scratch (const tsr_buffer *b);
bool tsri_buffer_scratch (const tsr_buffer *b);

/* graph.c */
struct tsr_graph
{
  tsr_context *ctx;
  int n_nodes, n_leafs, cap_nodes, cap_leafs;
  tsr_tensor **nodes, **leafs;
  struct tsri_visited *visited;  /* hash set of tensors seen */
};

/* buffer.c */
/* Set T's data from its view source; T->view_src must be placed.  */
int tsri_tensor_init_view (tsr_tensor *t);

/* loader.c: turn a file into a module descriptor.  */
struct tsri_opened
{
  void *handle;                 /* lt_dlhandle */
  const struct tsr_module_descriptor *desc;
};
/* Open PATH and find its descriptor.  On failure returns the kind of
   error and writes a sentence into REASON.  */
tsr_module_error tsri_loader_open (const char *path, struct tsri_opened *out,
                                   char *reason, size_t reason_size);
void tsri_loader_close (void *handle);
/* Call FN for each candidate module in DIR (tessera-*.la or
   tessera-*<shared library extension>), once per stem, sorted.  */
int tsri_loader_scan_dir (const char *dir,
                          void (*fn) (const char *stem, void *data),
                          void *data);
bool tsri_is_dir (const char *path);

#endif /* TESSERA_IMPL_H */
