/* blas-impl.h - what the BLAS backend's files share.  Not installed.
 *
 * The module is split by concern:
 *   blas-module.c   descriptor, registration, device, backend, options
 *                   (threads, the min_batch threshold), graph walk
 *   blas-matmul.c   mul_mat on BLIS: which operands it takes, and the
 *                   calls to bli_sgemm_ex (weights other than f32 are
 *                   converted to f32 in bounded scratch memory first)
 * Only blas-matmul.c includes blis.h.  Everything here has hidden
 * visibility: the module exports only its descriptor.  */
#ifndef TSR_BLAS_IMPL_H
#define TSR_BLAS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tessera/module.h>


/* Most bytes of converted weights held at once by default (backend
   parameter max_scratch): larger weight matrices are converted and
   multiplied in chunks of rows.  */
#define TSR_BLAS_SCRATCH_MAX ((size_t) 64 << 20)

/* Memory a backend reuses from one mul_mat to the next.  */
struct tsr_blas_scratch
{
  size_t limit;                 /* bytes of converted rows at most (at
                                   least one row is always converted) */
  float *a;                     /* converted weight rows */
  size_t a_bytes;
  float *b;                     /* a repacked batch of b (odd strides) */
  size_t b_bytes;
};

/* Can the backend compute mul_mat node DST at all (types, shapes,
   strides)?  The n threshold is the device's business, not this.  */
TSR_MODULE_HIDDEN bool tsr_blas_mul_mat_ok (const tsr_tensor *dst);

/* Compute mul_mat node DST with N_THREADS threads.  TSR_OK, or an
   error status with tsr_set_error called.  */
TSR_MODULE_HIDDEN int tsr_blas_mul_mat (tsr_tensor *dst, int n_threads,
                                      struct tsr_blas_scratch *scratch);
TSR_MODULE_HIDDEN void tsr_blas_scratch_free (struct tsr_blas_scratch *s);

/* "BLIS 0.9.0, haswell, OpenMP" into BUF.  */
TSR_MODULE_HIDDEN void tsr_blas_describe (char *buf, size_t size);

#endif /* TSR_BLAS_IMPL_H */
