/* cpu-vec-k.h - the hot loops of the super-block types (q2_K, q3_K,
 * q4_K, q5_K, q6_K, iq4_xs): row dequantization and integer dot
 * products with q8_K activations.  Included by cpu-vec.h; defined per
 * ISA level in cpu-qdot-k.c (see cpu-vec-k.def).
 *
 * mul_mat and mul_mat_id with these weights quantize each activation
 * row once to q8_K: per super-block of 256 values a float scale d =
 * amax / 127 and the values round (x * 127 / amax) in -127..127, the
 * values and scale of the library's reference quantizer
 * (tsr_quantize_row (TSR_TYPE_Q8_K)), the sums of each 16 values and
 * those of each 32.  A row of K elements (a multiple of 256) is laid
 * out as four arrays, so that the values of every super-block start
 * 64-byte aligned:
 *   K int8 values, K / 16 int16 sums of 16, K / 256 float scales,
 *   K / 32 int16 sums of 32, per super-block those of the even groups
 *   of 32 (0, 2, 4, 6) then of the odd ones,
 * tsr_cpu_kact_size (K) bytes in all (a multiple of 64).  The sums of
 * 32 serve the types whose biases go by groups of 32 (q4_K, q5_K,
 * iq4_xs): read as int32, a pair of them meets a pair of biases in one
 * vpdpwssd; read as int64, the even or the odd ones meet the 8 rows'
 * even or odd biases of the repacked layouts.
 * Rows quantized for q6_K weights carry a fifth array after those
 * (tsr_cpu_kact6_size (K) bytes in all): per group of 16 values two
 * int32, minus 32 (q6_K's offset) times the sum of its values 0-3 and
 * 8-11, then of 4-7 and 12-15 -- the values that one lane of the
 * vector kernels meets in two vpdpbusd (8 bytes broadcast, then the
 * next 8) -- so that the lanes start from them and sum (stored - 32)
 * y, within int16 for 8 products (tsr_cpu_kact_offsets6).  */
#ifndef TSR_CPU_VEC_K_H
#define TSR_CPU_VEC_K_H

#include <stddef.h>
#include <stdint.h>

#include <tessera/types.h>

#include <tessera/module.h> /* TSR_MODULE_HIDDEN */

static inline size_t
tsr_cpu_kact_size (int64_t k)
{
  return ((size_t) k + (size_t) k / 8 + (size_t) k / 64 + (size_t) k / 16
          + 63) & ~(size_t) 63;
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

static inline const int16_t *
tsr_cpu_kact_sums32 (const void *y, int64_t k)
{
  return (const int16_t *) ((const char *) y + k + k / 8 + k / 64);
}

static inline size_t
tsr_cpu_kact6_size (int64_t k)
{
  return tsr_cpu_kact_size (k) + (size_t) k / 2;
}

static inline const int32_t *
tsr_cpu_kact_offsets6 (const void *y, int64_t k)
{
  return (const int32_t *) ((const char *) y + tsr_cpu_kact_size (k));
}

/* The activation row Y of X[0..K), K a multiple of 256.  */
TSR_MODULE_HIDDEN void tsr_cpu_quantize_act_q8_K (int64_t k, void *y,
                                               const float *x);
/* The q6_K offset sums of the activation row Y (quantized, K values;
   tsr_cpu_kact6_size (K) bytes).  */
TSR_MODULE_HIDDEN void tsr_cpu_kact_fill_offsets6 (int64_t k, void *y);

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

/* Plain rows of the super-block types packed 8 at a time for register
   tiles of 8 or 16 rows by up to 8 columns (mul_mat and mul_mat_id
   pack a thread's tile of rows as they use it, tsr_cpu_kp8_pack).  Per
   super-block, TSR_CPU_KP8_BYTES for the 8 rows:
     KP8_D     8 f32: each row's d;
     KP8_DM    8 f32: -dmin (q2_K, q4_K, q5_K), else 0;
     KP8_SC    16 x 8 int16: the scale of group of 16 g of row r at
               16 g + 2 r;
     KP8_BIAS  8 pairs of groups of 32 bytes: int16 pair r of pair s
               holds row r's biases of groups 2 s, 2 s + 1 (q2_K,
               q4_K, q5_K: the minimums; q3_K, q6_K: -4 and -32 times
               the scales; iq4_xs: -128 times them), so that one
               vpdpwssd by a pair of activation sums broadcast gives a
               row a lane;
     KP8_W     32 vectors of 64 bytes: vector v holds elements 8 v ..
               8 v + 7 of row r in bytes 8 r .. 8 r + 7, as unsigned
               bytes: the stored integers (0..63, offsets not
               subtracted), iq4_xs's table values plus 128.
   The dot of row r with an activation row, per super-block: I = sum_g
   sc_g sum (w y) (plus sum_g bias_g Y_g for the types without
   minimums) and B = sum_g bias_g Y_g (the others), two exact int32,
   then acc = fma (I, d dy, acc), acc = fma (B, -dmin dy, acc) (one
   rounding each): the integers the plain dots compute, and the steps
   of the repacked q4_K and q6_K kernels (cpu-qdot-x8.c), whose results
   these are, bit for bit.  The plain dots (few columns) add the same
   integers in another order (in lanes), which is cheaper per
   super-block: a canonical order there cost 5-17% of the generation
   speed of q3_K and q5_K models.  */
#define TSR_CPU_KP8_ROWS 8
#define TSR_CPU_KP8_D 0
#define TSR_CPU_KP8_DM 32
#define TSR_CPU_KP8_SC 64
#define TSR_CPU_KP8_BIAS 320
#define TSR_CPU_KP8_W 576
#define TSR_CPU_KP8_BYTES 2624

/* NR <= 8 plain rows of TYPE (a super-block type), K elements, at X,
   BX bytes apart, into one packed group at DST (K / 256 super-blocks
   of TSR_CPU_KP8_BYTES); rows NR and after are zero.  */
TSR_MODULE_HIDDEN void tsr_cpu_kp8_pack (tsr_type type, int64_t k,
                                         const void *x, size_t bx, int nr,
                                         void *dst);
/* Where a repacked group of 8 rows (CPU_REPACK, cpu-repack.c) keeps,
   per super-block, the vectors of group of 32 J's values: q4_K, q5_K
   (and q5_K's vector of fifth bits, for groups J and J + 1 of an even
   J), q6_K (two of low bits, then one of high bits), iq4_xs.  */
#define TSR_CPU_X8_Q4K_VALUES(j) (128 + 128 * (j))
#define TSR_CPU_X8_Q5K_VALUES(j) (128 + 320 * ((j) / 2) + 128 * ((j) % 2))
#define TSR_CPU_X8_Q5K_HIGH(j) (128 + 320 * ((j) / 2) + 256)
#define TSR_CPU_X8_Q6K_VALUES(j) (144 + 192 * (j))
#define TSR_CPU_X8_XS_VALUES(j) (64 + 128 * (j))
/* One repacked group of 8 rows of TYPE (q4_K, q5_K, q6_K or iq4_xs),
   K elements, at X, into the packed super-blocks at DST
   (TSR_CPU_KP8_BYTES each), as tsr_cpu_kp8_pack would pack the 8 plain
   rows, byte for byte: mul_mat computes repacked weights with the
   packed tiles from TSR_CPU_KP8_MIN_N_X8 columns.  */
TSR_MODULE_HIDDEN void tsr_cpu_kp8_from_x8 (tsr_type type, int64_t k,
                                            const void *x, void *dst);
/* OUT[r NY + c] for the packed rows at X (groups of 8, BX bytes a
   row), as tsr_cpu_vec_dot_q4_K_q8_K and the others.  */
#define TSR_CPU_KP8DOT(type) \
  TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_##type##p8_q8_K)
TSR_CPU_KP8DOT (q2_K)
TSR_CPU_KP8DOT (q3_K)
TSR_CPU_KP8DOT (q4_K)
TSR_CPU_KP8DOT (q5_K)
TSR_CPU_KP8DOT (q6_K)
TSR_CPU_KP8DOT (iq4_xs)
#undef TSR_CPU_KP8DOT

/* The packed tiles on AMX (v4-amx): a thread converts its two packed
   groups (16 rows) once for all its columns into this layout, whose
   values an AMX tile multiply (tdpbssd) reads as 16 rows by 4 bytes a
   tile row.  Per super-block, TSR_CPU_KT_BYTES:
     bytes 0..4095     64 tile rows of 64 bytes: byte 4 n + b of row q
                       the value of element 4 q + b of row n (n < 16),
                       signed: the packed value less the type's offset
                       (q3_K 4, q6_K 32, iq4_xs 128; q2_K, q4_K, q5_K
                       none), so that the biases of the types without
                       minimums are in the products;
     bytes 4096..5119  the rows' scales as int32, of group g at 4096 +
                       64 g + 4 n; groups of 32 elements (q4_K, q5_K,
                       iq4_xs: 8 of them) or of 16 (q2_K, q3_K, q6_K).
   A tile multiply takes 16 activation rows' group (their q8_K values
   in place) against the 16 rows' group: 16 by 16 exact int32 group
   sums, each times its row's scale, summed over the groups: the
   integer I of the packed tiles' kernels (cpu-vec-k.h above), exactly;
   B (the minimums times the activation sums) and the f32 steps are
   theirs, so the results are theirs, bit for bit.  */
#define TSR_CPU_KT_ROWS 16
#define TSR_CPU_KT_BYTES 5120
/* The two packed groups at G0 and G1 (the same for 8 rows alone), K
   elements of TYPE (a super-block type), into the AMX layout at DST
   (K / 256 super-blocks of TSR_CPU_KT_BYTES).  */
TSR_MODULE_HIDDEN void tsr_cpu_kt_from_kp8 (tsr_type type, int64_t k,
                                            const void *g0, const void *g1,
                                            void *dst);
/* OUT[16 c + n] = dot (row n of the 16 at G0, G1 and T (its packed
   groups and their AMX layout), activation row c of NY at Y, YS bytes
   apart), n < 16, c < NY; AMX tiles at v4-amx, elsewhere the
   reference (what the tests hold them to).  */
#define TSR_CPU_KTDOT(type)                                             \
  TSR_MODULE_HIDDEN void tsr_cpu_vec_dot_##type##t16_q8_K               \
    (int64_t k, const void *g0, const void *g1, const void *t, int ny,  \
     const void *y, size_t ys, float *out);
TSR_CPU_KTDOT (q2_K)
TSR_CPU_KTDOT (q3_K)
TSR_CPU_KTDOT (q4_K)
TSR_CPU_KTDOT (q5_K)
TSR_CPU_KTDOT (q6_K)
TSR_CPU_KTDOT (iq4_xs)
#undef TSR_CPU_KTDOT

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
