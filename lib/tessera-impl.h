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
/* A tensor shaped like NE[0..3] (unused dims 1).  */
tsr_tensor *tsri_new_tensor_impl (tsr_context *ctx, tsr_type type,
                                  const int64_t ne[TSR_MAX_DIMS],
                                  tsr_tensor *view_src, size_t view_offs);
tsr_context *tsri_tensor_context (const tsr_tensor *t);

/* ops.c: helpers for op builders (also used by ops-*.c).  */
/* Writes "[ne0, ne1, ne2, ne3]" into BUF.  */
const char *tsri_shape_str (const tsr_tensor *t, char *buf, size_t n);
/* False (with the first error kept or recorded) if CTX or a needed
   operand is NULL.  */
bool tsri_operands_ok (tsr_op op, tsr_context *ctx, tsr_tensor *a,
                       tsr_tensor *b, bool need_b);
/* False with a TSR_ERR_TYPE error naming WHICH unless T has TYPE.  */
bool tsri_require_type (tsr_op op, const tsr_tensor *t, const char *which,
                        tsr_type type);
/* A new contiguous result of OP with sources A and B.  */
tsr_tensor *tsri_new_result (tsr_context *ctx, tsr_op op, tsr_type type,
                             const int64_t ne[TSR_MAX_DIMS], tsr_tensor *a,
                             tsr_tensor *b);
void tsri_set_param_f32 (tsr_tensor *t, int i, float v);

/* alloc.c */
tsr_buffer *tsri_gallocr_buffer (const tsr_gallocr *ga);

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
