/* cpu-vec.h - the CPU backend's hot loops over contiguous arrays.
 *
 * Everything the kernels spend their time in goes through these small
 * functions: dot products, element-wise loops, row conversions.  The
 * operation files (cpu-ops-*.c) walk tensors, split work between
 * threads and check arguments; they never loop over a row themselves
 * when a function here can do it.  That keeps this file the one place
 * to compile per instruction set.
 *
 * ISA levels: see issue 3.  cpu-vec.c will be compiled once per level
 * (x86-64, -v2, -v3, -v4; armv8-a, ...) with a per-level suffix, and
 * each entry below becomes an ifunc whose resolver picks the best level
 * the CPU and OS support (with a table chosen once at init where ifunc
 * is missing).  Until then cpu-vec.c is the plain C reference.
 *
 * Arrays may not overlap unless said; "in place" (Y == X) is allowed
 * for the element-wise functions.  */
#ifndef TSR_CPU_VEC_H
#define TSR_CPU_VEC_H

#include <stdint.h>

#include <tessera/types.h>

#include "cpu-visibility.h"

/* sum x[i] * y[i].  Blocked summation: the rounding error grows with
   the block length, not with N.  */
TSR_CPU_HIDDEN float tsr_cpu_vec_dot_f32 (int64_t n, const float *x,
                                          const float *y);

/* sum x[i] and sum (x[i] - c)^2, accumulated in double.  */
TSR_CPU_HIDDEN double tsr_cpu_vec_sum_f32 (int64_t n, const float *x);
TSR_CPU_HIDDEN double tsr_cpu_vec_sumsq_f32 (int64_t n, const float *x,
                                             double c);

/* z[i] = x[i] OP y[i].  */
TSR_CPU_HIDDEN void tsr_cpu_vec_add_f32 (int64_t n, float *z, const float *x,
                                         const float *y);
TSR_CPU_HIDDEN void tsr_cpu_vec_sub_f32 (int64_t n, float *z, const float *x,
                                         const float *y);
TSR_CPU_HIDDEN void tsr_cpu_vec_mul_f32 (int64_t n, float *z, const float *x,
                                         const float *y);
TSR_CPU_HIDDEN void tsr_cpu_vec_div_f32 (int64_t n, float *z, const float *x,
                                         const float *y);

/* y[i] = v.  */
TSR_CPU_HIDDEN void tsr_cpu_vec_set_f32 (int64_t n, float *y, float v);
/* y[i] = x[i] * s.  */
TSR_CPU_HIDDEN void tsr_cpu_vec_scale_f32 (int64_t n, float *y,
                                           const float *x, float s);
/* y[i] = (x[i] - c) * s, in double: the difference keeps its digits
   when the row sits far from zero (norm of 1000 +- 1).  */
TSR_CPU_HIDDEN void tsr_cpu_vec_center_scale_f32 (int64_t n, float *y,
                                                  const float *x, double c,
                                                  double s);
/* y[i] = x[i] / (1 + exp (-x[i])).  */
TSR_CPU_HIDDEN void tsr_cpu_vec_silu_f32 (int64_t n, float *y,
                                          const float *x);
/* y[i] = gelu (x[i]), tanh approximation.  */
TSR_CPU_HIDDEN void tsr_cpu_vec_gelu_f32 (int64_t n, float *y,
                                          const float *x);
/* y[i] = exp (x[i] - m); returns the sum of the y[i] (double).  */
TSR_CPU_HIDDEN double tsr_cpu_vec_exp_sub_f32 (int64_t n, float *y,
                                               const float *x, float m);
/* The largest x[i], -INFINITY for n == 0 (NaNs are skipped).  */
TSR_CPU_HIDDEN float tsr_cpu_vec_max_f32 (int64_t n, const float *x);

/* Row conversions.  */
TSR_CPU_HIDDEN void tsr_cpu_row_f16_to_f32 (int64_t n, float *y,
                                            const tsr_fp16_t *x);
TSR_CPU_HIDDEN void tsr_cpu_row_f32_to_f16 (int64_t n, tsr_fp16_t *y,
                                            const float *x);
TSR_CPU_HIDDEN void tsr_cpu_row_bf16_to_f32 (int64_t n, float *y,
                                             const tsr_bf16_t *x);
TSR_CPU_HIDDEN void tsr_cpu_row_f32_to_bf16 (int64_t n, tsr_bf16_t *y,
                                             const float *x);

#endif /* TSR_CPU_VEC_H */
