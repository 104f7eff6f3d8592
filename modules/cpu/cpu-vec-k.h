/* cpu-vec-k.h - the hot loops of the super-block types (q2_K, q3_K,
 * q4_K, q5_K, q6_K, iq4_xs): row dequantization and integer dot
 * products with q8_K activations.  Included by cpu-vec.h; defined per
 * ISA level in cpu-qdot-k.c (see cpu-vec-k.def).
 *
 * mul_mat and mul_mat_id with these weights quantize each activation
 * row once to q8_K: per super-block of 256 values a float scale d =
 * amax / 127 and the values round (x * 127 / amax) in -127..127, the
 * values and scale of the library's reference quantizer
 * (tsr_quantize_row (TSR_TYPE_Q8_K)), and the sums of each 16 values.
 * A row of K elements (a multiple of 256) is laid out as three arrays,
 * so that the values of every super-block start 64-byte aligned:
 *   K int8 values, K / 16 int16 sums, K / 256 float scales,
 * tsr_cpu_kact_size (K) bytes in all (a multiple of 64).  */
#ifndef TSR_CPU_VEC_K_H
#define TSR_CPU_VEC_K_H

#include <stddef.h>
#include <stdint.h>

#include <tessera/module.h> /* TSR_MODULE_HIDDEN */

static inline size_t
tsr_cpu_kact_size (int64_t k)
{
  return ((size_t) k + (size_t) k / 8 + (size_t) k / 64 + 63) & ~(size_t) 63;
}

static inline const int16_t *
tsr_cpu_kact_sums (const void *y, int64_t k)
{
  return (const int16_t *) ((const char *) y + k);
}

static inline const float *
tsr_cpu_kact_scales (const void *y, int64_t k)
{
  return (const float *) ((const char *) y + k + k / 8);
}

/* The activation row Y of X[0..K), K a multiple of 256.  */
TSR_MODULE_HIDDEN void tsr_cpu_quantize_act_q8_K (int64_t k, void *y,
                                               const float *x);

/* OUT[r NY + c] = dot (weight row r, activation row Y[c]), rows and
   columns as for tsr_cpu_vec_dot_q8_0_q8_0, weight rows of K elements
   of the named type: per
   super-block the exact int32 sum of the products of the stored
   integers with the 8-bit activations, each 16 or 32 of them times
   their integer group scale, and the group minimums or offsets times
   the activation sums; those two integers times the super-block's
   float scales, accumulated in f32.  The weights are read once for all
   NY rows.  */
#define TSR_CPU_KDOT(type) TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_##type##_q8_K)
TSR_CPU_KDOT (q2_K)
TSR_CPU_KDOT (q3_K)
TSR_CPU_KDOT (q4_K)
TSR_CPU_KDOT (q5_K)
TSR_CPU_KDOT (q6_K)
TSR_CPU_KDOT (iq4_xs)
#undef TSR_CPU_KDOT

/* N (a multiple of 256) elements of the named type X to f32: the bits
   tsr_dequantize_row gives, by the same float operations.  The one
   sum among them, d1 * q - m1 (q2_K, q4_K, q5_K), has an exact
   product (11-bit d times a 4- or 6-bit scale times a 5-bit q), so a
   compiler's fusing it into a multiply-add changes nothing.  */
#define TSR_CPU_KROW(type)                                               \
  TSR_MODULE_HIDDEN void tsr_cpu_row_##type##_to_f32 (int64_t n, float *y,   \
                                                   const void *x);
TSR_CPU_KROW (q2_K)
TSR_CPU_KROW (q3_K)
TSR_CPU_KROW (q4_K)
TSR_CPU_KROW (q5_K)
TSR_CPU_KROW (q6_K)
TSR_CPU_KROW (iq4_xs)
#undef TSR_CPU_KROW

#endif /* TSR_CPU_VEC_K_H */
