/* cpu-qdot.c - integer dot products of q8_0 and q4_0 weights with
 * quantized activations, compiled once per ISA level (see cpu-vec.c for
 * how; the activation layout is described in cpu-vec.h).
 *
 * Per block of 32 the products of the 8-bit (or 4-bit) weights and the
 * 8-bit activations are summed exactly in int32; the sum times the two
 * scales is accumulated in f32.  By level:
 * - AVX-512BW (v4): 4 blocks per register.  pmaddubsw multiplies
 *   unsigned by signed bytes, so q8_0 weights use |x| and y * sign (x),
 *   and q4_0 weights their stored nibbles (0..15), the offset of 8
 *   taken off as a minimum -8 d times the activation block sums;
 *   pmaddwd folds the pairs into int32.
 *   The f16 scales of 16 blocks are picked out of the rows with vpermw
 *   and converted at once (a gather is far slower).
 * - AVX2 (v3): the same with 2 blocks per register.
 * - SSSE3 (v2): one block per register, pmaddubsw / pmaddwd on 16 bytes.
 * - Arm with the dot product extension (armv8.2-a+dotprod and up):
 *   sdot, signed by signed, no offset trick needed.
 * - Otherwise plain C (the baseline and the reference).
 * The quantizer rounds like tsr_quantize_row: amax / 127, 1 / d, x * id
 * rounded to nearest even, the scale rounded to f16.  */
#include <config.h>

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "cpu-vec.h"
#include "cpu-level.h"
#include "cpu-qdot.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>
#endif

#define QK 32
#define Q8_BYTES 34                     /* sizeof (struct tsr_block_q8_0) */
#define Q4_BYTES 18                     /* sizeof (struct tsr_block_q4_0) */

/* Quantization.  */

/* The f16 scale of a block whose largest magnitude is AMAX, as f32;
   *ID the multiplier of the values.  */
static inline float
block_scale (float amax, float *id)
{
  float d = amax / 127.0f;

  *id = d > 0 ? 1.0f / d : 0.0f;
#if defined(__F16C__)
  return _cvtsh_ss (_cvtss_sh (d, _MM_FROUND_TO_NEAREST_INT));
#else
  return fp16_to_f32 (tsr_fp32_to_fp16 (d));
#endif
}

/* The block's values 0..15 to LO, 16..31 to HI, its scale to *D; with
   AVX-512 also the 8 offsets 8 (v[2i] + v[2i + 1] + v[16 + 2i] + v[17 +
   2i]) to W and their sum over 8 to *SUM, from the registers (read
   back byte by byte from the stores, they took a third of the time).  */
#if defined(__AVX512BW__)
#define QUANTIZE_SUMS 1
static inline void
quantize_block (const float *x, int8_t *lo, int8_t *hi, float *d,
                int16_t *w, int *sum)
{
  const __m512 sign = _mm512_set1_ps (-0.0f);
  const __m512i bad = _mm512_set1_epi32 (INT32_MIN);
  __m512 a = _mm512_loadu_ps (x), b = _mm512_loadu_ps (x + 16), id;
  /* max_ps returns its second operand when one is NaN: NaNs are
     skipped, as fmaxf does.  */
  __m512 m = _mm512_max_ps (_mm512_andnot_ps (sign, a), _mm512_setzero_ps ());
  float inv;

  m = _mm512_max_ps (_mm512_andnot_ps (sign, b), m);
  *d = block_scale (_mm512_reduce_max_ps (m), &inv);
  id = _mm512_set1_ps (inv);
  __m512i qa = _mm512_cvtps_epi32 (_mm512_mul_ps (a, id));
  __m512i qb = _mm512_cvtps_epi32 (_mm512_mul_ps (b, id));
  /* Non-finite products convert to INT32_MIN; lrintf's result there
     casts to 0.  */
  qa = _mm512_maskz_mov_epi32 (_mm512_cmpneq_epi32_mask (qa, bad), qa);
  qb = _mm512_maskz_mov_epi32 (_mm512_cmpneq_epi32_mask (qb, bad), qb);
  _mm_storeu_si128 ((__m128i *) lo, _mm512_cvtepi32_epi8 (qa));
  _mm_storeu_si128 ((__m128i *) hi, _mm512_cvtepi32_epi8 (qb));
  /* |values| <= 127: the bytes stored are these integers.  Pairs: the
     even and the odd dwords of each qword, added.  */
  __m512i t = _mm512_add_epi32 (qa, qb);
  __m256i pair = _mm256_add_epi32 (_mm512_cvtepi64_epi32 (t),
                                   _mm512_cvtepi64_epi32
                                   (_mm512_srli_epi64 (t, 32)));
  _mm_storeu_si128 ((__m128i *) w, _mm256_cvtepi32_epi16
                                   (_mm256_slli_epi32 (pair, 3)));
  __m128i h = _mm_add_epi32 (_mm256_castsi256_si128 (pair),
                             _mm256_extracti128_si256 (pair, 1));
  h = _mm_add_epi32 (h, _mm_shuffle_epi32 (h, 0x4e));
  h = _mm_add_epi32 (h, _mm_shuffle_epi32 (h, 0xb1));
  *sum = _mm_cvtsi128_si32 (h);
}
#elif defined(__AVX2__)
static inline void
quantize_block (const float *x, int8_t *lo, int8_t *hi, float *d)
{
  const __m256 sign = _mm256_set1_ps (-0.0f);
  const __m256i bad = _mm256_set1_epi32 (INT32_MIN);
  __m256 v[4], m = _mm256_setzero_ps ();
  __m256i q[4];
  __m128 m4;
  float inv;

  for (int i = 0; i < 4; i++)
    {
      v[i] = _mm256_loadu_ps (x + 8 * i);
      m = _mm256_max_ps (_mm256_andnot_ps (sign, v[i]), m);
    }
  m4 = _mm_max_ps (_mm256_castps256_ps128 (m), _mm256_extractf128_ps (m, 1));
  m4 = _mm_max_ps (m4, _mm_movehl_ps (m4, m4));
  m4 = _mm_max_ss (m4, _mm_movehdup_ps (m4));
  *d = block_scale (_mm_cvtss_f32 (m4), &inv);
  __m256 id = _mm256_set1_ps (inv);
  for (int i = 0; i < 4; i++)
    {
      q[i] = _mm256_cvtps_epi32 (_mm256_mul_ps (v[i], id));
      q[i] = _mm256_andnot_si256 (_mm256_cmpeq_epi32 (q[i], bad), q[i]);
    }
  /* Packing works within 128-bit lanes: dwords come out as q0[0..3]
     q1[0..3] q2[0..3] q3[0..3] q0[4..7] ...; put them in order.  */
  __m256i b = _mm256_packs_epi16 (_mm256_packs_epi32 (q[0], q[1]),
                                  _mm256_packs_epi32 (q[2], q[3]));
  b = _mm256_permutevar8x32_epi32 (b, _mm256_setr_epi32 (0, 4, 1, 5, 2, 6,
                                                         3, 7));
  _mm_storeu_si128 ((__m128i *) lo, _mm256_castsi256_si128 (b));
  _mm_storeu_si128 ((__m128i *) hi, _mm256_extracti128_si256 (b, 1));
}
#elif defined(__SSSE3__)
static inline void
quantize_block (const float *x, int8_t *lo, int8_t *hi, float *d)
{
  const __m128 sign = _mm_set1_ps (-0.0f);
  const __m128i bad = _mm_set1_epi32 (INT32_MIN);
  __m128 v[8], m = _mm_setzero_ps (), id;
  __m128i q[8];
  float inv;

  for (int i = 0; i < 8; i++)
    {
      v[i] = _mm_loadu_ps (x + 4 * i);
      m = _mm_max_ps (_mm_andnot_ps (sign, v[i]), m);
    }
  m = _mm_max_ps (m, _mm_movehl_ps (m, m));
  m = _mm_max_ss (m, _mm_shuffle_ps (m, m, 1));
  *d = block_scale (_mm_cvtss_f32 (m), &inv);
  id = _mm_set1_ps (inv);
  for (int i = 0; i < 8; i++)
    {
      q[i] = _mm_cvtps_epi32 (_mm_mul_ps (v[i], id));
      q[i] = _mm_andnot_si128 (_mm_cmpeq_epi32 (q[i], bad), q[i]);
    }
  _mm_storeu_si128 ((__m128i *) lo,
                    _mm_packs_epi16 (_mm_packs_epi32 (q[0], q[1]),
                                     _mm_packs_epi32 (q[2], q[3])));
  _mm_storeu_si128 ((__m128i *) hi,
                    _mm_packs_epi16 (_mm_packs_epi32 (q[4], q[5]),
                                     _mm_packs_epi32 (q[6], q[7])));
}
#else
/* The reference's own steps, lrintf included.  */
static inline void
quantize_block (const float *x, int8_t *lo, int8_t *hi, float *d)
{
  float amax = 0, id;

  for (int i = 0; i < QK; i++)
    amax = fmaxf (amax, fabsf (x[i]));
  *d = block_scale (amax, &id);
  for (int i = 0; i < QK; i++)
    {
      int8_t q = (int8_t) lrintf (x[i] * id);
      if (i < QK / 2)
        lo[i] = q;
      else
        hi[i - QK / 2] = q;
    }
}
#endif

void
TSR_CPU_LEVEL_FN (quantize_act_q8_0) (int64_t k, void *y, const float *x)
{
  const int64_t nb = k / QK, nbp = tsr_cpu_qact_blocks (k);
  int8_t *q = y;
  int16_t *w = (int16_t *) tsr_cpu_qact_offsets (y, k);
  float *d = (float *) tsr_cpu_qact_scales (y, k);
  float *sums = (float *) tsr_cpu_qact_sums (y, k);
  int32_t *off8 = (int32_t *) tsr_cpu_qact_offset8 (y, k);
  int8_t *bw = (int8_t *) tsr_cpu_qact_blockwise (y, k);

  for (int64_t j = 0; j < nbp; j++)
    {
      int8_t *lo = q + tsr_cpu_qact_pos (j, 0), *hi = lo + 64;

      int sum = 0;
      if (j >= nb)
        {
          memset (lo, 0, QK / 2);
          memset (hi, 0, QK / 2);
          memset (w + j * 8, 0, 8 * sizeof *w);
          d[j] = 0;
        }
      else
        {
#ifdef QUANTIZE_SUMS
          quantize_block (x + j * QK, lo, hi, &d[j], w + j * 8, &sum);
#else
          quantize_block (x + j * QK, lo, hi, &d[j]);
          for (int i = 0; i < 8; i++)
            {
              int pair = lo[2 * i] + lo[2 * i + 1] + hi[2 * i]
                         + hi[2 * i + 1];
              w[j * 8 + i] = (int16_t) (8 * pair);
              sum += pair;
            }
#endif
        }
      sums[j] = d[j] * (float) sum;
      off8[j] = -8 * sum;
      memcpy (bw + 32 * j, lo, QK / 2);
      memcpy (bw + 32 * j + QK / 2, hi, QK / 2);
    }
}

/* Dot products.  Each kernel takes the weight row X of NB blocks, NY
   activation rows Y and writes NY results; NY is a constant in the
   inlined copies (see TSR_CPU_DISPATCH_ROWS), so the per-column loops
   unroll and the accumulators stay in registers (so does every array
   indexed only by constants: no index may depend on a loop counter).  */

/* The block loop of the kernels that take one block at a time: blocks
   alternate between the accumulators ACC0 and ACC1 (so that one block
   need not wait for the last), BLOCK (q4, x of block j, j, k, ny, y,
   acc) does the work.  */
#define EACH_BLOCK(BLOCK, q4, k, x, ny, y, acc0, acc1)                  \
  do                                                                    \
    {                                                                   \
      const int64_t nb_ = (k) / QK;                                     \
      const int bsize_ = (q4) ? Q4_BYTES : Q8_BYTES;                    \
      int64_t j_ = 0;                                                   \
      for (; j_ + 2 <= nb_; j_ += 2)                                    \
        {                                                               \
          BLOCK (q4, (x) + j_ * bsize_, j_, k, ny, y, acc0);            \
          BLOCK (q4, (x) + (j_ + 1) * bsize_, j_ + 1, k, ny, y, acc1);  \
        }                                                               \
      if (j_ < nb_)                                                     \
        BLOCK (q4, (x) + j_ * bsize_, j_, k, ny, y, acc0);              \
    }                                                                   \
  while (0)

#if defined(__AVX512BW__)

/* The f16 scales of blocks 0..15 at X (BSIZE bytes per block, scale
   first) as f32.  vpermw picks 16-bit words out of two registers (128
   bytes), enough for 8 q4_0 blocks or 4 q8_0 blocks; the pieces are
   blended.  Reads nothing past the 16 blocks.  */
static inline __m512
scales16 (const char *x, int bsize)
{
  static const uint16_t idx4[32] = { 0, 9, 18, 27, 36, 45, 54, 63,
                                     0, 9, 18, 27, 36, 45, 54, 63 };
  static const uint16_t idx8[32] = { 0, 17, 34, 51, 0, 17, 34, 51,
                                     0, 17, 34, 51, 0, 17, 34, 51 };
  __m512i r;

  if (bsize == Q4_BYTES)
    {
      __m512i i4 = _mm512_loadu_si512 (idx4);
      r = _mm512_permutex2var_epi16 (_mm512_loadu_si512 (x), i4,
                                     _mm512_loadu_si512 (x + 64));
      r = _mm512_mask_blend_epi16
        (0xff00, r, _mm512_permutex2var_epi16
                      (_mm512_loadu_si512 (x + 8 * Q4_BYTES), i4,
                       _mm512_loadu_si512 (x + 8 * Q4_BYTES + 64)));
    }
  else
    {
      __m512i i8 = _mm512_loadu_si512 (idx8);
      r = _mm512_permutex2var_epi16 (_mm512_loadu_si512 (x), i8,
                                     _mm512_loadu_si512 (x + 64));
      for (int w = 1; w < 4; w++)
        {
          const char *p = x + 4 * w * Q8_BYTES;
          r = _mm512_mask_blend_epi16
            ((__mmask32) (0xfu << (4 * w)), r,
             _mm512_permutex2var_epi16 (_mm512_loadu_si512 (p), i8,
                                        _mm512_loadu_si512 (p + 64)));
        }
    }
  return _mm512_cvtph_ps (_mm512_castsi512_si256 (r));
}

/* The same for the last CNT (< 16) blocks of a row, zeros after.  */
static inline __m512
scales_tail (const char *x, int bsize, int cnt)
{
  uint16_t h[16] = { 0 };

  for (int i = 0; i < cnt; i++)
    h[i] = load_fp16 (x + i * bsize);
  return _mm512_cvtph_ps (_mm256_loadu_si256 ((const __m256i *) h));
}

/* Weights of 4 blocks: the low / high 16 values of each block in the
   four 128-bit lanes of *LO / *HI, as the activations have them.  CNT
   blocks are there (4 or more: the first 4); missing ones are zeros.
   q4_0 gives the stored nibbles, q8_0 the signed values.  */
static inline void
load4_q4 (const char *x, int cnt, __m512i *lo, __m512i *hi)
{
  const __m512i m4 = _mm512_set1_epi8 (0x0f);
  __m512i q;

  if (cnt >= 4)
    {
      q = _mm512_castsi128_si512 (_mm_loadu_si128 ((const __m128i *) (x + 2)));
      q = _mm512_inserti32x4 (q, _mm_loadu_si128 ((const __m128i *)
                                                  (x + Q4_BYTES + 2)), 1);
      q = _mm512_inserti32x4 (q, _mm_loadu_si128 ((const __m128i *)
                                                  (x + 2 * Q4_BYTES + 2)), 2);
      q = _mm512_inserti32x4 (q, _mm_loadu_si128 ((const __m128i *)
                                                  (x + 3 * Q4_BYTES + 2)), 3);
    }
  else
    {
      uint8_t buf[64] = { 0 };
      for (int i = 0; i < cnt; i++)
        memcpy (buf + 16 * i, x + i * Q4_BYTES + 2, 16);
      q = _mm512_loadu_si512 (buf);
    }
  *lo = _mm512_and_si512 (q, m4);
  *hi = _mm512_and_si512 (_mm512_srli_epi16 (q, 4), m4);
}

static inline void
load4_q8 (const char *x, int cnt, __m512i *lo, __m512i *hi)
{
  __m512i a, b;

  if (cnt >= 4)
    {
      a = _mm512_inserti64x4 (_mm512_castsi256_si512
                              (_mm256_loadu_si256 ((const __m256i *)
                                                   (x + 2))),
                              _mm256_loadu_si256 ((const __m256i *)
                                                  (x + Q8_BYTES + 2)), 1);
      b = _mm512_inserti64x4 (_mm512_castsi256_si512
                              (_mm256_loadu_si256 ((const __m256i *)
                                                   (x + 2 * Q8_BYTES + 2))),
                              _mm256_loadu_si256 ((const __m256i *)
                                                  (x + 3 * Q8_BYTES + 2)), 1);
    }
  else
    {
      int8_t buf[128] = { 0 };
      for (int i = 0; i < cnt; i++)
        memcpy (buf + 32 * i, x + i * Q8_BYTES + 2, 32);
      a = _mm512_loadu_si512 (buf);
      b = _mm512_loadu_si512 (buf + 64);
    }
  /* a = x0 x1, b = x2 x3 (two lanes each): take the first lane of each
     block, then the second.  */
  *lo = _mm512_shuffle_i64x2 (a, b, _MM_SHUFFLE (2, 0, 2, 0));
  *hi = _mm512_shuffle_i64x2 (a, b, _MM_SHUFFLE (3, 1, 3, 1));
}

/* Blocks B0..B0+3 of the row (CNT of them there), weights at XG, with
   the NY activation rows: ACC[c] += the products, each lane scaled by
   its block's d_x d_y, picked from DD[c] by IDX.  */
static inline __attribute__ ((always_inline)) void
group_v4 (bool q4, const char *xg, int cnt, int64_t b0, int64_t k,
          const int ny, const void *const *y, const __m512 *dd,
          __m512i idx, __m512 *acc)
{
  __m512i lo, hi, alo = _mm512_setzero_si512 (), ahi = alo;
  __mmask64 nlo = 0, nhi = 0;

  if (q4)
    load4_q4 (xg, cnt, &lo, &hi);
  else
    {
      load4_q8 (xg, cnt, &lo, &hi);
      alo = _mm512_abs_epi8 (lo);
      ahi = _mm512_abs_epi8 (hi);
      nlo = _mm512_movepi8_mask (lo);
      nhi = _mm512_movepi8_mask (hi);
    }
  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + b0 * QK;
      __m512i ylo = _mm512_loadu_si512 (yq);
      __m512i yhi = _mm512_loadu_si512 (yq + 64), s;

      if (q4)
        s = qdot_sum2_512 (lo, ylo, hi, yhi, 1);
      else
        {
          /* y * sign (x): negate where x < 0.  */
          ylo = _mm512_mask_sub_epi8 (ylo, nlo, _mm512_setzero_si512 (), ylo);
          yhi = _mm512_mask_sub_epi8 (yhi, nhi, _mm512_setzero_si512 (), yhi);
          s = qdot_sum2_512 (alo, ylo, ahi, yhi, 0);
        }
      acc[c] = _mm512_fmadd_ps (_mm512_cvtepi32_ps (s),
                                _mm512_permutexvar_ps (idx, dd[c]), acc[c]);
    }
}

/* ACC plus what q4_0's offset of 8 takes off blocks J..J+15 (scales
   DX) of activation row Y: -8 d_x times the blocks' scaled sums, once
   per 16 blocks (the int16 offset sums of the activation row, a third
   stream to read per group, made the DRAM-bound gemv slower).  */
static inline __m512
offset8_v4 (__m512 dx, const void *y, int64_t k, int64_t j, __m512 acc)
{
  return _mm512_fmadd_ps (_mm512_mul_ps (dx, _mm512_set1_ps (-8.0f)),
                          _mm512_loadu_ps (tsr_cpu_qact_sums (y, k) + j),
                          acc);
}

static inline __attribute__ ((always_inline)) void
qdot_v4 (bool q4, int64_t k, const char *x, const int ny,
         const void *const *y, float *out)
{
  const int64_t nb = k / QK;
  const int bsize = q4 ? Q4_BYTES : Q8_BYTES;
  /* Lane l of a group's products belongs to its block l / 4.  */
  const __m512i lanes = _mm512_setr_epi32 (0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                           2, 3, 3, 3, 3);
  const __m512i four = _mm512_set1_epi32 (4);
  __m512 acc0[TSR_CPU_QDOT_MAX_COLS], acc1[TSR_CPU_QDOT_MAX_COLS];
  __m512 dd[TSR_CPU_QDOT_MAX_COLS];
  int64_t j = 0;

  for (int c = 0; c < ny; c++)
    acc0[c] = acc1[c] = _mm512_setzero_ps ();
  /* 16 blocks at a time, two accumulators per row.  */
  for (; j + 16 <= nb; j += 16)
    {
      const char *xj = x + j * bsize;
      __m512 dx = scales16 (xj, bsize);
      __m512i idx = lanes;

      qdot_prefetch_ny (xj, 16 * (size_t) bsize, ny);

      for (int c = 0; c < ny; c++)
        {
          dd[c] = _mm512_mul_ps (dx, _mm512_loadu_ps
                                     (tsr_cpu_qact_scales (y[c], k) + j));
          if (q4)
            acc1[c] = offset8_v4 (dx, y[c], k, j, acc1[c]);
        }
      group_v4 (q4, xj, 4, j, k, ny, y, dd, idx, acc0);
      idx = _mm512_add_epi32 (idx, four);
      group_v4 (q4, xj + 4 * bsize, 4, j + 4, k, ny, y, dd, idx, acc1);
      idx = _mm512_add_epi32 (idx, four);
      group_v4 (q4, xj + 8 * bsize, 4, j + 8, k, ny, y, dd, idx, acc0);
      idx = _mm512_add_epi32 (idx, four);
      group_v4 (q4, xj + 12 * bsize, 4, j + 12, k, ny, y, dd, idx, acc1);
    }
  if (j < nb)
    {
      const char *xj = x + j * bsize;
      int cnt = (int) (nb - j);
      __m512 dx = scales_tail (xj, bsize, cnt);
      __m512i idx = lanes;

      for (int c = 0; c < ny; c++)
        {
          dd[c] = _mm512_mul_ps (dx, _mm512_loadu_ps
                                     (tsr_cpu_qact_scales (y[c], k) + j));
          if (q4)
            acc1[c] = offset8_v4 (dx, y[c], k, j, acc1[c]);
        }
      for (int g = 0; 4 * g < cnt; g++)
        {
          group_v4 (q4, xj + 4 * g * bsize, cnt - 4 * g, j + 4 * g, k, ny,
                    y, dd, idx, acc0);
          idx = _mm512_add_epi32 (idx, four);
        }
    }
  for (int c = 0; c < ny; c++)
    out[c] = _mm512_reduce_add_ps (_mm512_add_ps (acc0[c], acc1[c]));
}
#define QDOT(q4, k, x, ny, y, out) qdot_v4 (q4, k, x, ny, y, out)

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

/* The f16 scales of CNT (<= 8) blocks at X as f32, zeros after.  Put
   together in a register, one pinsrw each: through an array in memory,
   eight 2-byte stores then one 16-byte load stalled on store
   forwarding, and the whole v3 kernel ran at a third of its speed.  */
static inline __attribute__ ((always_inline)) __m256
scales8 (const char *x, int bsize, int cnt)
{
  __m128i h;

  if (cnt == 8)
    {
      h = _mm_cvtsi32_si128 (load_fp16 (x));
      h = _mm_insert_epi16 (h, load_fp16 (x + bsize), 1);
      h = _mm_insert_epi16 (h, load_fp16 (x + 2 * bsize), 2);
      h = _mm_insert_epi16 (h, load_fp16 (x + 3 * bsize), 3);
      h = _mm_insert_epi16 (h, load_fp16 (x + 4 * bsize), 4);
      h = _mm_insert_epi16 (h, load_fp16 (x + 5 * bsize), 5);
      h = _mm_insert_epi16 (h, load_fp16 (x + 6 * bsize), 6);
      h = _mm_insert_epi16 (h, load_fp16 (x + 7 * bsize), 7);
    }
  else
    {
#define AT(i) ((i) < cnt ? load_fp16 (x + (i) * bsize) : 0)
      h = _mm_cvtsi32_si128 (AT (0));
      h = _mm_insert_epi16 (h, AT (1), 1);
      h = _mm_insert_epi16 (h, AT (2), 2);
      h = _mm_insert_epi16 (h, AT (3), 3);
      h = _mm_insert_epi16 (h, AT (4), 4);
      h = _mm_insert_epi16 (h, AT (5), 5);
      h = _mm_insert_epi16 (h, AT (6), 6);
      h = _mm_insert_epi16 (h, AT (7), 7);
#undef AT
    }
  return _mm256_cvtph_ps (h);
}

/* Weights of 2 blocks (the second missing if !TWO), as in load4_q4 /
   load4_q8 with two 128-bit lanes.  */
static inline void
load2_q4 (const char *x, bool two, __m256i *lo, __m256i *hi)
{
  const __m256i m4 = _mm256_set1_epi8 (0x0f);
  __m128i a = _mm_loadu_si128 ((const __m128i *) (x + 2));
  __m128i b = two ? _mm_loadu_si128 ((const __m128i *) (x + Q4_BYTES + 2))
                  : _mm_setzero_si128 ();
  __m256i q = _mm256_inserti128_si256 (_mm256_castsi128_si256 (a), b, 1);

  *lo = _mm256_and_si256 (q, m4);
  *hi = _mm256_and_si256 (_mm256_srli_epi16 (q, 4), m4);
}

static inline void
load2_q8 (const char *x, bool two, __m256i *lo, __m256i *hi)
{
  __m256i a = _mm256_loadu_si256 ((const __m256i *) (x + 2));
  __m256i b = two ? _mm256_loadu_si256 ((const __m256i *)
                                        (x + Q8_BYTES + 2))
                  : _mm256_setzero_si256 ();

  *lo = _mm256_permute2x128_si256 (a, b, 0x20);
  *hi = _mm256_permute2x128_si256 (a, b, 0x31);
}

/* Blocks B0, B0 + 1 (the second missing if !TWO), weights at XP, with
   the NY activation rows, as group_v4 does for 4 blocks.  */
static inline __attribute__ ((always_inline)) void
pair_v3 (bool q4, const char *xp, bool two, int64_t b0, int64_t k,
         const int ny, const void *const *y, const __m256 *dd, __m256i idx,
         __m256 *acc)
{
  const __m256i ones = _mm256_set1_epi16 (1);
  /* The pair's place in its group of 4.  */
  const int64_t at = tsr_cpu_qact_pos (b0, 0);
  __m256i lo, hi, alo = _mm256_setzero_si256 (), ahi = alo;

  if (q4)
    load2_q4 (xp, two, &lo, &hi);
  else
    {
      load2_q8 (xp, two, &lo, &hi);
      alo = _mm256_abs_epi8 (lo);
      ahi = _mm256_abs_epi8 (hi);
    }
  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + at;
      __m256i ylo = _mm256_loadu_si256 ((const __m256i *) yq);
      __m256i yhi = _mm256_loadu_si256 ((const __m256i *) (yq + 64)), s;

      if (q4)
        {
          __m256i p = _mm256_add_epi16 (_mm256_maddubs_epi16 (lo, ylo),
                                        _mm256_maddubs_epi16 (hi, yhi));
          p = _mm256_sub_epi16 (p, _mm256_loadu_si256
                                ((const __m256i *)
                                 (tsr_cpu_qact_offsets (y[c], k) + b0 * 8)));
          s = _mm256_madd_epi16 (p, ones);
        }
      else
        s = qdot_sum2_256 (alo, _mm256_sign_epi8 (ylo, lo), ahi,
                           _mm256_sign_epi8 (yhi, hi), 0);
      acc[c] = _mm256_fmadd_ps (_mm256_cvtepi32_ps (s),
                                _mm256_permutevar8x32_ps (dd[c], idx),
                                acc[c]);
    }
}

static inline __attribute__ ((always_inline)) void
qdot_v3 (bool q4, int64_t k, const char *x, const int ny,
         const void *const *y, float *out)
{
  const int64_t nb = k / QK;
  const int bsize = q4 ? Q4_BYTES : Q8_BYTES;
  const __m256i lanes = _mm256_setr_epi32 (0, 0, 0, 0, 1, 1, 1, 1);
  const __m256i two = _mm256_set1_epi32 (2);
  __m256 acc0[TSR_CPU_QDOT_MAX_COLS], acc1[TSR_CPU_QDOT_MAX_COLS];
  __m256 dd[TSR_CPU_QDOT_MAX_COLS];

  for (int c = 0; c < ny; c++)
    acc0[c] = acc1[c] = _mm256_setzero_ps ();
  for (int64_t j = 0; j < nb; j += 8)
    {
      const char *xj = x + j * bsize;
      int cnt = nb - j < 8 ? (int) (nb - j) : 8;
      __m256 dx = scales8 (xj, bsize, cnt);
      __m256i idx = lanes;

      qdot_prefetch_ny (xj, 8 * (size_t) bsize, ny);

      for (int c = 0; c < ny; c++)
        dd[c] = _mm256_mul_ps (dx, _mm256_loadu_ps
                                   (tsr_cpu_qact_scales (y[c], k) + j));
      if (cnt == 8)
        for (int p = 0; p < 4; p += 2)
          {
            pair_v3 (q4, xj + 2 * p * bsize, true, j + 2 * p, k, ny, y, dd,
                     idx, acc0);
            idx = _mm256_add_epi32 (idx, two);
            pair_v3 (q4, xj + (2 * p + 2) * bsize, true, j + 2 * p + 2, k,
                     ny, y, dd, idx, acc1);
            idx = _mm256_add_epi32 (idx, two);
          }
      else
        for (int p = 0; 2 * p < cnt; p++)
          {
            pair_v3 (q4, xj + 2 * p * bsize, 2 * p + 1 < cnt, j + 2 * p, k,
                     ny, y, dd, idx, acc0);
            idx = _mm256_add_epi32 (idx, two);
          }
    }
  for (int c = 0; c < ny; c++)
    out[c] = qdot_hsum256 (acc0[c], acc1[c]);
}
#define QDOT(q4, k, x, ny, y, out) qdot_v3 (q4, k, x, ny, y, out)

#elif defined(__SSSE3__)

/* Block J, weights at XJ, with the NY activation rows.  */
static inline __attribute__ ((always_inline)) void
block_v2 (bool q4, const char *xj, int64_t j, int64_t k, const int ny,
          const void *const *y, __m128 *acc)
{
  const __m128i ones = _mm_set1_epi16 (1), m4 = _mm_set1_epi8 (0x0f);
  const int64_t at = tsr_cpu_qact_pos (j, 0);
  float dx = fp16_to_f32 (load_fp16 (xj));
  __m128i lo, hi;

  if (q4)
    {
      __m128i q = _mm_loadu_si128 ((const __m128i *) (xj + 2));
      lo = _mm_and_si128 (q, m4);
      hi = _mm_and_si128 (_mm_srli_epi16 (q, 4), m4);
    }
  else
    {
      lo = _mm_loadu_si128 ((const __m128i *) (xj + 2));
      hi = _mm_loadu_si128 ((const __m128i *) (xj + 18));
    }
  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + at;
      __m128i ylo = _mm_loadu_si128 ((const __m128i *) yq);
      __m128i yhi = _mm_loadu_si128 ((const __m128i *) (yq + 64)), s;
      float dy = tsr_cpu_qact_scales (y[c], k)[j];

      if (q4)
        s = _mm_madd_epi16
          (_mm_sub_epi16 (_mm_add_epi16 (_mm_maddubs_epi16 (lo, ylo),
                                         _mm_maddubs_epi16 (hi, yhi)),
                          _mm_loadu_si128 ((const __m128i *)
                                           (tsr_cpu_qact_offsets (y[c], k)
                                            + j * 8))),
           ones);
      else
        s = _mm_add_epi32
          (_mm_madd_epi16 (_mm_maddubs_epi16 (_mm_abs_epi8 (lo),
                                              _mm_sign_epi8 (ylo, lo)), ones),
           _mm_madd_epi16 (_mm_maddubs_epi16 (_mm_abs_epi8 (hi),
                                              _mm_sign_epi8 (yhi, hi)), ones));
      acc[c] = _mm_add_ps (acc[c], _mm_mul_ps (_mm_cvtepi32_ps (s),
                                               _mm_set1_ps (dx * dy)));
    }
}

static inline __attribute__ ((always_inline)) void
qdot_v2 (bool q4, int64_t k, const char *x, const int ny,
         const void *const *y, float *out)
{
  __m128 acc0[TSR_CPU_QDOT_MAX_COLS], acc1[TSR_CPU_QDOT_MAX_COLS];

  for (int c = 0; c < ny; c++)
    acc0[c] = acc1[c] = _mm_setzero_ps ();
  EACH_BLOCK (block_v2, q4, k, x, ny, y, acc0, acc1);
  for (int c = 0; c < ny; c++)
    out[c] = qdot_hsum128 (acc0[c], acc1[c]);
}
#define QDOT(q4, k, x, ny, y, out) qdot_v2 (q4, k, x, ny, y, out)

#elif defined(__ARM_FEATURE_DOTPROD)

/* Block J, weights at XJ, with the NY activation rows: sdot takes
   signed bytes on both sides, the q4_0 offset is subtracted first.  */
static inline __attribute__ ((always_inline)) void
block_sdot (bool q4, const char *xj, int64_t j, int64_t k, const int ny,
            const void *const *y, float32x4_t *acc)
{
  const int64_t at = tsr_cpu_qact_pos (j, 0);
  float dx = fp16_to_f32 (load_fp16 (xj));
  int8x16_t lo, hi;

  if (q4)
    {
      uint8x16_t q = vld1q_u8 ((const uint8_t *) xj + 2);
      lo = vsubq_s8 (vreinterpretq_s8_u8 (vandq_u8 (q, vdupq_n_u8 (0x0f))),
                     vdupq_n_s8 (8));
      hi = vsubq_s8 (vreinterpretq_s8_u8 (vshrq_n_u8 (q, 4)), vdupq_n_s8 (8));
    }
  else
    {
      lo = vld1q_s8 ((const int8_t *) xj + 2);
      hi = vld1q_s8 ((const int8_t *) xj + 18);
    }
  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + at;
      int32x4_t s = vdotq_s32 (vdupq_n_s32 (0), lo, vld1q_s8 (yq));
      s = vdotq_s32 (s, hi, vld1q_s8 (yq + 64));
      acc[c] = vfmaq_n_f32 (acc[c], vcvtq_f32_s32 (s),
                            dx * tsr_cpu_qact_scales (y[c], k)[j]);
    }
}

static inline __attribute__ ((always_inline)) void
qdot_sdot (bool q4, int64_t k, const char *x, const int ny,
           const void *const *y, float *out)
{
  float32x4_t acc0[TSR_CPU_QDOT_MAX_COLS], acc1[TSR_CPU_QDOT_MAX_COLS];

  for (int c = 0; c < ny; c++)
    acc0[c] = acc1[c] = vdupq_n_f32 (0);
  EACH_BLOCK (block_sdot, q4, k, x, ny, y, acc0, acc1);
  for (int c = 0; c < ny; c++)
    out[c] = vaddvq_f32 (vaddq_f32 (acc0[c], acc1[c]));
}
#define QDOT(q4, k, x, ny, y, out) qdot_sdot (q4, k, x, ny, y, out)

#else

/* Plain C: the exact integer sum of each block, times the scales.  */
static inline __attribute__ ((always_inline)) void
block_c (bool q4, const char *xj, int64_t j, int64_t k, const int ny,
         const void *const *y, float *acc)
{
  const int64_t at = tsr_cpu_qact_pos (j, 0);
  float dx = fp16_to_f32 (load_fp16 (xj));
  int8_t w[QK];

  for (int i = 0; i < QK / 2; i++)
    if (q4)
      {
        uint8_t b = (uint8_t) xj[2 + i];
        w[i] = (int8_t) ((b & 0x0f) - 8);
        w[i + QK / 2] = (int8_t) ((b >> 4) - 8);
      }
    else
      {
        w[i] = (int8_t) xj[2 + i];
        w[i + QK / 2] = (int8_t) xj[2 + QK / 2 + i];
      }
  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + at;
      int32_t s = 0;
      for (int i = 0; i < QK / 2; i++)
        s += w[i] * yq[i] + w[i + QK / 2] * yq[64 + i];
      acc[c] += dx * tsr_cpu_qact_scales (y[c], k)[j] * (float) s;
    }
}

static inline __attribute__ ((always_inline)) void
qdot_c (bool q4, int64_t k, const char *x, const int ny,
        const void *const *y, float *out)
{
  float acc0[TSR_CPU_QDOT_MAX_COLS] = { 0 };
  float acc1[TSR_CPU_QDOT_MAX_COLS] = { 0 };

  EACH_BLOCK (block_c, q4, k, x, ny, y, acc0, acc1);
  for (int c = 0; c < ny; c++)
    out[c] = acc0[c] + acc1[c];
}
#define QDOT(q4, k, x, ny, y, out) qdot_c (q4, k, x, ny, y, out)

#endif

_Static_assert (sizeof (struct tsr_block_q8_0) == Q8_BYTES, "q8_0 block");
_Static_assert (sizeof (struct tsr_block_q4_0) == Q4_BYTES, "q4_0 block");

void
TSR_CPU_LEVEL_FN (vec_dot_q8_0_q8_0) (int64_t k, const void *x, size_t bx,
                                      int nr, int ny, const void *const *y,
                                      float *out)
{
  TSR_CPU_DISPATCH_ROWS (QDOT, false, k, (const char *) x, bx, nr, ny, y, out);
}

void
TSR_CPU_LEVEL_FN (vec_dot_q4_0_q8_0) (int64_t k, const void *x, size_t bx,
                                      int nr, int ny, const void *const *y,
                                      float *out)
{
  TSR_CPU_DISPATCH_ROWS (QDOT, true, k, (const char *) x, bx, nr, ny, y, out);
}
