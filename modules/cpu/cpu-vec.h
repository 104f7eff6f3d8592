/* cpu-vec.h - the CPU backend's hot loops over contiguous arrays.
 *
 * Everything the kernels spend their time in goes through these small
 * functions: dot products, element-wise loops, row conversions.  The
 * operation files (cpu-ops-*.c) walk tensors, split work between
 * threads and check arguments; they never loop over a row themselves
 * when a function here can do it.  That keeps this file the one place
 * to compile per instruction set.
 *
 * ISA levels: cpu-vec.c, cpu-qdot.c and cpu-gemm.c are compiled once
 * per level (x86-64, -v2, -v3, -v4; armv8-a, ...) with a per-level
 * suffix, and each entry below is an ifunc whose resolver picks the
 * best level the CPU and OS support (with a table chosen once at init
 * where ifunc is missing); see cpu-vec.def.
 *
 * Arrays may not overlap unless said; "in place" (Y == X) is allowed
 * for the element-wise functions.  */
#ifndef TSR_CPU_VEC_H
#define TSR_CPU_VEC_H

#include <stddef.h>
#include <stdint.h>

#include <tessera/types.h>

#include <tessera/module.h> /* TSR_MODULE_HIDDEN */

/* sum x[i] * y[i].  Blocked summation: the rounding error grows with
   the block length, not with N.  */
TSR_MODULE_HIDDEN float tsr_cpu_vec_dot_f32 (int64_t n, const float *x,
                                          const float *y);

/* sum x[i] * y[i] for weights X stored as f16, bf16, q8_0 or q4_0
   (N a multiple of the block size: whole blocks) and f32 Y: the
   weights are widened to their f32 values, multiplied and summed in
   float, blocks of partial sums in double.  */
TSR_MODULE_HIDDEN float tsr_cpu_vec_dot_f16 (int64_t n, const tsr_fp16_t *x,
                                          const float *y);
TSR_MODULE_HIDDEN float tsr_cpu_vec_dot_bf16 (int64_t n, const tsr_bf16_t *x,
                                           const float *y);
TSR_MODULE_HIDDEN float tsr_cpu_vec_dot_q8_0 (int64_t n, const void *x,
                                           const float *y);
TSR_MODULE_HIDDEN float tsr_cpu_vec_dot_q4_0 (int64_t n, const void *x,
                                           const float *y);

/* sum x[i] and sum (x[i] - c)^2, accumulated in double.  */
TSR_MODULE_HIDDEN double tsr_cpu_vec_sum_f32 (int64_t n, const float *x);
TSR_MODULE_HIDDEN double tsr_cpu_vec_sumsq_f32 (int64_t n, const float *x,
                                             double c);

/* z[i] = x[i] OP y[i].  */
TSR_MODULE_HIDDEN void tsr_cpu_vec_add_f32 (int64_t n, float *z, const float *x,
                                         const float *y);
TSR_MODULE_HIDDEN void tsr_cpu_vec_sub_f32 (int64_t n, float *z, const float *x,
                                         const float *y);
TSR_MODULE_HIDDEN void tsr_cpu_vec_mul_f32 (int64_t n, float *z, const float *x,
                                         const float *y);
TSR_MODULE_HIDDEN void tsr_cpu_vec_div_f32 (int64_t n, float *z, const float *x,
                                         const float *y);

/* y[i] = v.  */
TSR_MODULE_HIDDEN void tsr_cpu_vec_set_f32 (int64_t n, float *y, float v);
/* y[i] = x[i] * s.  */
TSR_MODULE_HIDDEN void tsr_cpu_vec_scale_f32 (int64_t n, float *y,
                                           const float *x, float s);
/* y[i] = (x[i] - c) * s, in double: the difference keeps its digits
   when the row sits far from zero (norm of 1000 +- 1).  */
TSR_MODULE_HIDDEN void tsr_cpu_vec_center_scale_f32 (int64_t n, float *y,
                                                  const float *x, double c,
                                                  double s);
/* y[i] = x[i] / (1 + exp (-x[i])).  */
TSR_MODULE_HIDDEN void tsr_cpu_vec_silu_f32 (int64_t n, float *y,
                                          const float *x);
/* y[i] = gelu (x[i]), tanh approximation.  */
TSR_MODULE_HIDDEN void tsr_cpu_vec_gelu_f32 (int64_t n, float *y,
                                          const float *x);
/* y[i] = tanh (x[i]).  */
TSR_MODULE_HIDDEN void tsr_cpu_vec_tanh_f32 (int64_t n, float *y,
                                          const float *x);
/* y[i] = exp (x[i] - m); returns the sum of the y[i] (double).  */
TSR_MODULE_HIDDEN double tsr_cpu_vec_exp_sub_f32 (int64_t n, float *y,
                                               const float *x, float m);
/* The largest x[i], -INFINITY for n == 0 (NaNs are skipped).  */
TSR_MODULE_HIDDEN float tsr_cpu_vec_max_f32 (int64_t n, const float *x);
/* y[i] += a * x[i], X f32 or f16 (attention's weighted sum of values).  */
TSR_MODULE_HIDDEN void tsr_cpu_vec_mad_f32 (int64_t n, float *y, const float *x,
                                         float a);
TSR_MODULE_HIDDEN void tsr_cpu_vec_mad_f16 (int64_t n, float *y,
                                         const tsr_fp16_t *x, float a);
/* The same for NR (1 .. TSR_CPU_F16_ROWS) rows at once, X widened once
   for all of them (attention: one key or value row against the query
   rows of a group): OUT[r] = tsr_cpu_vec_dot_f16 (N, X, Y[r]), and
   Y[r][i] += A[r] * X[i], bit for bit the single-row results.  */
#define TSR_CPU_F16_ROWS 4
TSR_MODULE_HIDDEN void tsr_cpu_vec_dot_f16_rows (int64_t n, const tsr_fp16_t *x,
                                              int nr, const float *const *y,
                                              float *out);
TSR_MODULE_HIDDEN void tsr_cpu_vec_mad_f16_rows (int64_t n, float *const *y,
                                              int nr, const tsr_fp16_t *x,
                                              const float *a);
/* The same over a list of NK f16 rows (keys or values), row j at X +
   IDX[j] XS bytes: OUT[r][j] = tsr_cpu_vec_dot_f16_rows' OUT[r] for
   row j, and Y[r] += A[r][j] row j for each j in order whose weight
   A[r][j] is not 0, bit for bit the one-row calls one after another
   (attention: a block of a row's visible keys in one call).  */
TSR_MODULE_HIDDEN void tsr_cpu_vec_dot_f16_keys (int64_t n, const char *x,
                                              size_t xs, const int32_t *idx,
                                              int nk, int nr,
                                              const float *const *y,
                                              float *const *out);
TSR_MODULE_HIDDEN void tsr_cpu_vec_mad_f16_keys (int64_t n, float *const *y,
                                              int nr, const char *x,
                                              size_t xs, const int32_t *idx,
                                              int nk, const float *const *a);

/* The dots of MR (1 to 4) weight rows X[r], of TYPE f32, f16 or bf16,
   with NC (1 to TSR_CPU_DOT_TILE_NC) f32 rows Y[c], into
   OUT[r * TSR_CPU_DOT_TILE_NC + c]: each weight vector is loaded once
   for the NC rows and each activation vector once for the rows of a
   register tile (4 rows by 6 columns with 32 vector registers, 2 by 4
   with 16), so a few columns run on the FMA units rather than on
   loads.  Each result is the single dot's (tsr_cpu_vec_dot_f32 / _f16
   / _bf16) up to the order of its float additions.  */
#define TSR_CPU_DOT_TILE_NC 6
TSR_MODULE_HIDDEN void tsr_cpu_vec_dot_tile (int64_t n, tsr_type type,
                                             int mr, const void *const *x,
                                             int nc, const float *const *y,
                                             float *out);

/* Row conversions.  */
TSR_MODULE_HIDDEN void tsr_cpu_row_f16_to_f32 (int64_t n, float *y,
                                            const tsr_fp16_t *x);
TSR_MODULE_HIDDEN void tsr_cpu_row_f32_to_f16 (int64_t n, tsr_fp16_t *y,
                                            const float *x);
TSR_MODULE_HIDDEN void tsr_cpu_row_bf16_to_f32 (int64_t n, float *y,
                                             const tsr_bf16_t *x);
TSR_MODULE_HIDDEN void tsr_cpu_row_f32_to_bf16 (int64_t n, tsr_bf16_t *y,
                                             const float *x);

/* N (a multiple of 32) elements of q8_0 / q4_0 (q4_1, q5_0, q5_1,
   iq4_nl, mxfp4: cpu-qdot-32.c) blocks X to f32: the values
   tsr_dequantize_row gives, bit for bit.  */
TSR_MODULE_HIDDEN void tsr_cpu_row_q8_0_to_f32 (int64_t n, float *y,
                                             const void *x);
TSR_MODULE_HIDDEN void tsr_cpu_row_q4_0_to_f32 (int64_t n, float *y,
                                             const void *x);
#define TSR_CPU_ROW_TO_F32(t) \
  TSR_MODULE_HIDDEN void tsr_cpu_row_##t##_to_f32 (int64_t n, float *y, \
                                                const void *x);
TSR_CPU_ROW_TO_F32 (q4_1)
TSR_CPU_ROW_TO_F32 (q5_0)
TSR_CPU_ROW_TO_F32 (q5_1)
TSR_CPU_ROW_TO_F32 (iq4_nl)
TSR_CPU_ROW_TO_F32 (mxfp4)

/* Integer dot products of q8_0 / q4_0 weights (cpu-qdot.c).

   mul_mat and mul_mat_id quantize each activation row once, to the
   q8_0 values of the library's reference quantizer (tsr_quantize_row:
   the same 8-bit values and f16 scale per block of 32), and dot the
   weight rows with them in integers: per block an exact int32 sum of
   products, times the two scales in f32.

   An activation row of K elements (a multiple of 32) in nb = K / 32
   blocks, padded with zero blocks to NBP = tsr_cpu_qact_blocks (K), is
   laid out for the vector kernels rather than as tsr_block_q8_0:
   - NBP * 32 values (int8), in groups of 4 blocks: 128 bytes holding
     values 0..15 of the group's 4 blocks, then their values 16..31, so
     that one 64-byte load matches the low (or the high) nibbles of 4
     q4_0 blocks;
   - NBP * 8 int16, per block: w[i] = 8 (y[2i] + y[2i + 1] + y[16 + 2i]
     + y[17 + 2i]), what a q4_0 block's offset of 8 contributes to the
     pairwise sums of pmaddubsw, subtracted from them exactly;
   - NBP f32 scales, the values of the f16 scales;
   - NBP f32 sums, per block d * (the sum of its 32 values), one
     rounding of an exact integer sum: what the minimum m of a q4_1 or
     q5_1 weight block contributes is m times it;
   - NBP int32, per block -8 times the sum of its 32 values: q4_0's
     offset of 8 in integers (the repacked dots, cpu-qdot-x8.c);
   - NBP * 32 values (int8) again, block by block in element order: a
     block's 32 values as one row of an AMX tile (the 32-row tiles'
     kernels at v4-amx take 16 activation rows' blocks in one tile
     load, cpu-qdot-x8.c).
   The row takes tsr_cpu_qact_size (K) bytes, a multiple of 64.  */
#define TSR_CPU_QACT_GROUP 4        /* blocks whose halves interleave */
#define TSR_CPU_QACT_PAD 16         /* blocks are padded to a multiple */
#define TSR_CPU_QDOT_MAX_COLS 8     /* activation rows per weight pass */
/* Rows of weights interleaved per group in the CPU_REPACK buffer type
   (cpu-repack.c), and the bits of tsr_cpu_repack_level.  */
#define TSR_CPU_REPACK_ROWS 8
#define TSR_CPU_REPACK_Q4_0 1
#define TSR_CPU_REPACK_Q8_0 2
#define TSR_CPU_REPACK_Q4_K 4
#define TSR_CPU_REPACK_Q6_K 8
/* Not a type: tsr_cpu_x8_pack has vector code (plain rows are packed
   for the repacked dots as they are used, cpu-ops-matmul.c).  */
#define TSR_CPU_REPACK_PACK 16
/* Not a type either: plain rows of the super-block types are packed
   likewise (tsr_cpu_kp8_pack, cpu-vec-k.h) with vector code; with
   TSR_CPU_REPACK_PACK_K16 (AVX-512) from TSR_CPU_KP8_MIN_N columns,
   otherwise from TSR_CPU_KP8_MIN_N_TILE (cpu-impl.h).  */
#define TSR_CPU_REPACK_PACK_K 32
#define TSR_CPU_REPACK_PACK_K16 64
#define TSR_CPU_REPACK_Q5_K 128
#define TSR_CPU_REPACK_IQ4_XS 256
#define TSR_CPU_REPACK_Q5_0 512      /* q5_0 and q5_1 */
#define TSR_CPU_REPACK_LUT 1024      /* iq4_nl and mxfp4 */
/* Not a type: the 32-row tiles of the blocks of 32 (tsr_cpu_x32_from_x8;
   AVX-512BW with VNNI).  */
#define TSR_CPU_REPACK_X32 2048
/* Not a type either: those tiles' kernels on AMX tiles (v4-amx; the
   tiles' values then signed, cpu-qdot-x8.c).  */
#define TSR_CPU_REPACK_AMX 4096

/* How tsr_cpu_x8_pack packs a plain block of 32 of a type into a group
   for the repacked dots (cpu-qdot-x8.c), the one description both the
   packers and the kernels' callers read: the block's bytes BB, where
   its values or nibbles (QS), fifth bits (QH; -1: none) and f16 scale
   (at 0; the minimum at 2 with TSR_CPU_X8_MINS, mxfp4's E8M0 byte with
   TSR_CPU_X8_F32S) are; and the group's block: four vectors of bytes
   (Q8) or two of nibbles, the multiplier OM of the activations' -8
   sums (1: q4_0's offset of 8; 16: values plus 128; 2: q5_0's offset
   of 16; 0: none), and EXT, what comes before the vectors: 0, the 8
   rows' f16 scales (16 bytes); TSR_CPU_X8_MINS, those and the rows'
   f16 minimums (32); TSR_CPU_X8_F32S, the scales as f32 (32);
   TSR_CPU_X8_E8M0 (mxfp4 stored repacked), the rows' E8M0 bytes (8).  */
#define TSR_CPU_X8_MINS 1
#define TSR_CPU_X8_F32S 2
#define TSR_CPU_X8_E8M0 3

struct tsr_cpu_x8_layout
{
  int bb, qs, qh, q8, om, ext;
};

static inline struct tsr_cpu_x8_layout
tsr_cpu_x8_layout_of (tsr_type type)
{
  switch (type)
    {
    case TSR_TYPE_Q8_0:
      return (struct tsr_cpu_x8_layout) { 34, 2, -1, 1, 16, 0 };
    case TSR_TYPE_Q5_0:
      return (struct tsr_cpu_x8_layout) { 22, 6, 2, 1, 2, 0 };
    case TSR_TYPE_IQ4_NL:
      return (struct tsr_cpu_x8_layout) { 18, 2, -1, 1, 16, 0 };
    case TSR_TYPE_Q4_1:
      return (struct tsr_cpu_x8_layout) { 20, 4, -1, 0, 0, TSR_CPU_X8_MINS };
    case TSR_TYPE_Q5_1:
      return (struct tsr_cpu_x8_layout) { 24, 8, 4, 1, 0, TSR_CPU_X8_MINS };
    case TSR_TYPE_MXFP4:
      return (struct tsr_cpu_x8_layout) { 17, 1, -1, 1, 16, TSR_CPU_X8_F32S };
    default:                    /* q4_0 */
      return (struct tsr_cpu_x8_layout) { 18, 2, -1, 0, 1, 0 };
    }
}

/* Where a group's block's vectors start, and its bytes.  */
static inline int
tsr_cpu_x8_vectors_at (int ext)
{
  return ext == TSR_CPU_X8_E8M0 ? 8 : ext ? 32 : 16;
}

static inline size_t
tsr_cpu_x8_group_bytes (int q8, int ext)
{
  return (size_t) tsr_cpu_x8_vectors_at (ext) + (q8 ? 256 : 128);
}

/* The 32-row tiles (cpu-qdot-x8.c): rows a tile, and the bytes of a
   tile's block of 32 elements: 32 f32 scales (and, with MINS, 32 f32
   minimums), 16 vectors of 64 values.  */
#define TSR_CPU_X32_ROWS 32
static inline size_t
tsr_cpu_x32_block_bytes (int mins)
{
  return (size_t) (mins ? 256 : 128) + 1024;
}

static inline int64_t
tsr_cpu_qact_blocks (int64_t k)
{
  return (k / 32 + TSR_CPU_QACT_PAD - 1) / TSR_CPU_QACT_PAD
         * TSR_CPU_QACT_PAD;
}

static inline size_t
tsr_cpu_qact_size (int64_t k)
{
  return (size_t) tsr_cpu_qact_blocks (k) * (32 + 16 + 2 * sizeof (float)
                                             + sizeof (int32_t) + 32);
}

/* Where value I (< 32) of block J of an activation row sits.  */
static inline int64_t
tsr_cpu_qact_pos (int64_t j, int i)
{
  return j / TSR_CPU_QACT_GROUP * 128 + (i < 16 ? 0 : 64)
         + j % TSR_CPU_QACT_GROUP * 16 + i % 16;
}

/* The int16 offset sums of an activation row Y, its scales and its
   scaled block sums.  */
static inline const int16_t *
tsr_cpu_qact_offsets (const void *y, int64_t k)
{
  return (const int16_t *) ((const char *) y + 32 * tsr_cpu_qact_blocks (k));
}

static inline const float *
tsr_cpu_qact_scales (const void *y, int64_t k)
{
  return (const float *) ((const char *) y + 48 * tsr_cpu_qact_blocks (k));
}

static inline const float *
tsr_cpu_qact_sums (const void *y, int64_t k)
{
  return (const float *) ((const char *) y + 52 * tsr_cpu_qact_blocks (k));
}

static inline const int32_t *
tsr_cpu_qact_offset8 (const void *y, int64_t k)
{
  return (const int32_t *) ((const char *) y + 56 * tsr_cpu_qact_blocks (k));
}

/* The values of an activation row Y block by block (block j's 32 at
   32 j).  */
static inline const int8_t *
tsr_cpu_qact_blockwise (const void *y, int64_t k)
{
  return (const int8_t *) ((const char *) y + 60 * tsr_cpu_qact_blocks (k));
}

/* The activation row Y of X[0..K) (padding included).  Values and
   scales are those of tsr_quantize_row (TSR_TYPE_Q8_0) for finite
   inputs; a non-finite x * (1 / d) gives 0, as the reference's lrintf
   does on x86-64.  */
TSR_MODULE_HIDDEN void tsr_cpu_quantize_act_q8_0 (int64_t k, void *y,
                                               const float *x);
/* OUT[r NY + c] = dot (weight row r, activation row Y[c]) for r < NR
   and c < NY (1 .. TSR_CPU_QDOT_MAX_COLS), weight row r at X + r BX
   holding K elements of q8_0 (resp. q4_0) blocks: the sum over blocks
   of d_x d_y S, S the exact integer dot of the block's values,
   accumulated in f32.  Each weight row is read once for all NY
   activation rows; each result is computed the same way whatever NR
   (one row at a time, with the per-row call and dispatch hoisted out).  */
#define TSR_CPU_QDOT_DECL(name)                                         \
  TSR_MODULE_HIDDEN void name (int64_t k, const void *x, size_t bx, int nr, \
                            int ny, const void *const *y, float *out);
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q8_0_q8_0)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q4_0_q8_0)
/* The same for q4_1, q5_0, q5_1, iq4_nl and mxfp4 weights
   (cpu-qdot-32.c): per block the exact integer dot S of the weights'
   stored integers (levels, or table values: twice the E2M1 values for
   mxfp4) with the activations, d_x d_y S, plus m_x times the block's
   activation sum for q4_1 and q5_1.  */
#define TSR_CPU_VEC_DOT_Q8(t) TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_##t##_q8_0)
TSR_CPU_VEC_DOT_Q8 (q4_1)
TSR_CPU_VEC_DOT_Q8 (q5_0)
TSR_CPU_VEC_DOT_Q8 (q5_1)
TSR_CPU_VEC_DOT_Q8 (iq4_nl)
TSR_CPU_VEC_DOT_Q8 (mxfp4)
/* q4_0 and q8_0 weights repacked in groups of TSR_CPU_REPACK_ROWS rows
   (cpu-repack.c, cpu-qdot-x8.c): X the first row of a group, BX the
   bytes of a row, NR a multiple of the group; the same sums as
   tsr_cpu_vec_dot_q4_0_q8_0 (q8_0_q8_0), in another order of the f32
   additions.  */
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q4_0x8_q8_0)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q8_0x8_q8_0)
/* q4_1 (q4_0's layout) with the rows' minimums after their scales,
   times the activation blocks' sums.  */
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q4_1x8_q8_0)
/* The same kernels for plain rows packed into a thread's scratch as
   they are used (tsr_cpu_x8_pack; mul_mat, mul_mat_id), which are in
   the caches already: they prefetch less far ahead than the repacked
   weights' kernels, which stream from memory (cpu-qdot.h,
   qdot_ahead).  Also q5_0 rows in the q8_0 layout (their 5-bit values,
   the offset of 16 applied in integers), q5_1 in q8_0's (values
   0..31) with minimums as q4_1's, mxfp4 in q8_0's (table values plus
   128) with f32 scales.  */
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q4_0x8s_q8_0)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q8_0x8s_q8_0)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q4_1x8s_q8_0)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q5_0x8s_q8_0)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q5_1x8s_q8_0)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_mxfp4x8s_q8_0)
/* q5_0 and q5_1 stored repacked: q4_0's and q4_1's layouts with 32
   bytes of fifth bits before the nibbles (cpu-repack.c).  */
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q5_0x8m_q8_0)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q5_1x8m_q8_0)
/* iq4_nl and mxfp4 stored repacked: q4_0's layout of their 4-bit
   indices, looked up in the kernel (mxfp4's E8M0 bytes for scales).  */
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_iq4_nlx8n_q8_0)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_mxfp4x8n_q8_0)
/* NR <= TSR_CPU_REPACK_ROWS plain rows of TYPE (a block type of 32
   but q8_1), K elements, at X, BX bytes apart, into one group at DST in
   the layout of the repacked dots (cpu-qdot-x8.c): q4_0's for q4_0 and
   q4_1 (bytes a block: 144, 160 with q4_1's minimums), q8_0's for the
   others (272; 288 with q5_1's minimums or mxfp4's f32 scales),
   iq4_nl's and mxfp4's table values plus 128 as q8_0's values plus
   128, q5_0's and q5_1's stored values 0..31; rows NR and after are
   zero.  So plain weights take the repacked kernels, and their order
   of additions.  */
TSR_MODULE_HIDDEN void tsr_cpu_x8_pack (tsr_type type, int64_t k,
                                        const void *x, size_t bx, int nr,
                                        void *dst);
/* The blocks of 32 in 32-row tiles (cpu-qdot-x8.c): blocks [J0, J0 +
   NJ) of a tile's rows at X (block J0 first; tsr_cpu_x32_block_bytes
   each) by NY activation rows Y of K elements, added to ACC (column c's
   32 rows at ACC + 32 c; zero before the first block), in the f32
   steps of the repacked kernels above, so that a tile's blocks taken
   in any runs give those kernels' results, bit for bit.  q4_0 (offset
   -8 times the activation sums), q5_0 (-16), q8_0, iq4_nl and mxfp4
   (values plus 128: -128), q4_1 and q5_1 (minimums).  */
#define TSR_CPU_X32_DECL(name)                                          \
  TSR_MODULE_HIDDEN void name (int64_t k, int64_t j0, int64_t nj,       \
                               const void *x, int ny,                   \
                               const void *const *y, float *acc);
TSR_CPU_X32_DECL (tsr_cpu_vec_dot_x32o1_q8_0)
TSR_CPU_X32_DECL (tsr_cpu_vec_dot_x32o2_q8_0)
TSR_CPU_X32_DECL (tsr_cpu_vec_dot_x32o16_q8_0)
TSR_CPU_X32_DECL (tsr_cpu_vec_dot_x32m_q8_0)
/* NG (<= 4) groups of 8 rows of TYPE (a block type of 32) at X,
   GSTRIDE bytes apart, K elements, as the buffer type stores them
   (REPACKED) or as tsr_cpu_x8_pack packs plain rows, into one 32-row
   tile at DST; the rows of the missing groups are zero.  */
TSR_MODULE_HIDDEN void tsr_cpu_x32_from_x8 (tsr_type type, int64_t k,
                                            const void *x, size_t gstride,
                                            int ng, int repacked,
                                            void *dst);
/* q4_K, q5_K, q6_K and iq4_xs weights so repacked, with q8_K activations
   (cpu-vec-k.h).  */
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q4_Kx8_q8_K)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q5_Kx8_q8_K)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_q6_Kx8_q8_K)
TSR_CPU_QDOT_DECL (tsr_cpu_vec_dot_iq4_xsx8_q8_K)
/* The types this level has vector code for in the repacked dots:
   TSR_CPU_REPACK_Q4_0 (q4_0 and q4_1) and TSR_CPU_REPACK_Q5_0 (q5_0
   and q5_1) with AVX2 or AVX-512, TSR_CPU_REPACK_Q8_0 and
   TSR_CPU_REPACK_LUT (iq4_nl and mxfp4) with VNNI too (values plus 128
   overflow pmaddubsw's pairs); TSR_CPU_REPACK_Q4_K, TSR_CPU_REPACK_Q5_K
   and TSR_CPU_REPACK_Q6_K with AVX-512BW; TSR_CPU_REPACK_IQ4_XS with
   AVX-512BW and VNNI; 0 where it has the plain C reference only.  */
TSR_MODULE_HIDDEN int tsr_cpu_repack_level (void);

/* The f32 GEMM of cpu-gemm.c.  *MR, *NR: this level's micro-kernel
   shape (MR <= TSR_CPU_GEMM_MAX_MR, NR <= TSR_CPU_GEMM_MAX_NR).  */
#define TSR_CPU_GEMM_MAX_MR 16
#define TSR_CPU_GEMM_MAX_NR 32
TSR_MODULE_HIDDEN void tsr_cpu_gemm_shape (int *mr, int *nr);
/* Pack ROWS (<= NR, resp. MR) rows of KC floats, row r at SRC + r * LDS,
   into a panel DST[l * NR + r] (resp. MR), zero-padded to NR (MR) rows.  */
TSR_MODULE_HIDDEN void tsr_cpu_gemm_pack_a (int64_t kc, int64_t rows,
                                         const float *src, int64_t lds,
                                         float *dst);
TSR_MODULE_HIDDEN void tsr_cpu_gemm_pack_b (int64_t kc, int64_t rows,
                                         const float *src, int64_t lds,
                                         float *dst);
/* C[j * LDC + i] = (ACC ? C[j * LDC + i] : 0) + sum over l < KC of
   A[l * NR + i] * B[l * MR + j], for j < MR_USED, i < NR_USED; A and B
   packed panels.  */
TSR_MODULE_HIDDEN void tsr_cpu_gemm_kernel (int64_t kc, const float *a,
                                         const float *b, float *c,
                                         int64_t ldc, int mr_used,
                                         int nr_used, int acc);

#include "cpu-vec-k.h"

#endif /* TSR_CPU_VEC_H */
