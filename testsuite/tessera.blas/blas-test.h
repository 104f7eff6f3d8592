/* blas-test.h - what the BLAS backend's tests share: finding the
   backend (UNSUPPORTED when it was not built), filling tensors, and a
   double-precision reference for mul_mat.  */
#ifndef BLAS_TEST_H
#define BLAS_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <tessera.h>
#include "tsr-test.h"

/* Was the module built in this tree?  Then it must load.  */
static inline bool
blas_module_built (void)
{
  const char *dir = getenv ("TSR_TEST_BUILDDIR");
  char path[4096];
  struct stat st;

  if (!dir)
    return false;
  snprintf (path, sizeof path, "%s/modules/blas/tessera-blas.la", dir);
  return stat (path, &st) == 0;
}

/* The BLAS device, or NULL after reporting why there is none: FAIL when
   the module was built here, UNSUPPORTED otherwise.  */
static inline tsr_device *
blas_device (void)
{
  tsr_device *dev = tsr_device_by_name ("BLAS");
  struct tsr_module_failure f;

  if (dev)
    return dev;
  if (blas_module_built ())
    CHECK (0, "the BLAS module was built and loads: %s",
           tsr_registry_failure_find ("blas", &f) ? f.reason
                                                  : "not on the search path");
  else
    tsr_test_unsupported ("BLAS backend: not built (configure found no BLIS, "
                          "or --without-blis)");
  return NULL;
}

/* Fill N floats with uniform values in [-1, 1).  */
static inline void
blas_fill (float *v, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    v[i] = tsr_test_uniform (-1, 1);
}

/* T's elements (any float type, contiguous rows) as floats: what the
   backend must multiply with.  */
static inline float *
blas_values (const tsr_tensor *t)
{
  int64_t k = t->ne[0], rows = t->ne[1] * t->ne[2] * t->ne[3];
  float *v = malloc ((size_t) (k * rows) * sizeof *v);
  for (int64_t r = 0; r < rows && v; r++)
    tsr_type_traits (t->type)->to_float ((const char *) t->data
                                         + (size_t) r * t->nb[1],
                                         v + r * k, k);
  return v;
}

/* T's element (i0, i1, i2, i3) of an f32 tensor, through its strides.  */
static inline float
blas_at (const tsr_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
  return *(const float *) ((const char *) t->data + i0 * t->nb[0]
                           + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]);
}

/* Compare DST = mul_mat (a, b) with a double-precision reference over
   the weights' float values AV (contiguous [k, m, a2, a3]).  Every
   element must be within TOL * sum |a_il b_jl| of the reference: what
   single-precision rounding of the products and sums allows.  Returns
   the worst ratio of error to that bound (<= 1 passes).  */
static inline double
blas_check (const tsr_tensor *dst, const float *av, const tsr_tensor *a,
            const tsr_tensor *b, double tol)
{
  int64_t k = a->ne[0], m = a->ne[1], n = b->ne[1];
  int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  double worst = 0;

  for (int64_t i3 = 0; i3 < b->ne[3]; i3++)
    for (int64_t i2 = 0; i2 < b->ne[2]; i2++)
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++)
          {
            const float *arow = av + ((i3 / r3 * a->ne[2] + i2 / r2) * m
                                      + i) * k;
            double acc = 0, mag = 0;
            for (int64_t l = 0; l < k; l++)
              {
                double p = (double) arow[l] * blas_at (b, l, j, i2, i3);
                acc += p;
                mag += fabs (p);
              }
            double err = fabs (blas_at (dst, i, j, i2, i3) - acc);
            double ratio = err / (tol * mag + 1e-30);
            if (!(ratio <= worst))
              worst = isnan (ratio) ? INFINITY : ratio;
          }
  return worst;
}

#endif /* BLAS_TEST_H */
