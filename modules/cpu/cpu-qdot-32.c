/* cpu-qdot-32.c - q4_1, q5_0, q5_1, iq4_nl and mxfp4 weights (blocks
 * of 32) on the CPU: rows to f32, and integer dot products with the
 * q8_0 activation rows of cpu-qdot.c (layout in cpu-vec.h).  Compiled
 * once per ISA level, like cpu-qdot.c.
 *
 * Each block gives 32 small integers and a scale: q4_1 / q5_1 their
 * levels 0..15 / 0..31 (plus a minimum m), q5_0 its levels 0..31
 * (value: level - 16), iq4_nl and mxfp4 an index into a table of int8
 * values (mxfp4's holds twice the E2M1 values, its E8M0 scale is
 * halved to match).  Per block and activation row the dot S of the
 * integers with the activation's int8 values is exact in int32; the
 * result sums d_x d_y S in f32, plus m_x times the activation block's
 * scaled sum (cpu-vec.h) for q4_1 and q5_1.  By level:
 * - AVX-512BW (v4): 4 blocks per register; levels are unsigned, so
 *   pmaddubsw takes them as they are; q5_0's offset of 16 is a minimum
 *   of -16 d, taken off with the activation block sums as q4_1's
 *   minimum is (reading the offset sums of cpu-qdot.c's q4_0 path too
 *   made q5_0 half as fast on rows far larger than the caches);
 *   iq4_nl's values are looked up as magnitudes with vpshufb and their
 *   signs moved onto the activations (the sign is bit 3 of the index);
 *   mxfp4's are looked up plus 16 and treated as q5_0 levels.
 * - AVX2 (v3): 2 blocks per register, SSSE3 (v2): one; both take the
 *   table values' magnitudes with their signs on the activations.
 * - Arm with the dot product extension: signed values and sdot.
 * - Otherwise plain C (the baseline, and the reference the tests use).
 * Rows to f32 decode the same integers and compute
 * (float) q * d (+ m) with one rounding per operation, as
 * tsr_dequantize_row does: the same bits (this file is compiled without
 * contraction into fused multiply-adds).  */
#include <config.h>

#include <stdbool.h>
#include <stdint.h>
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

/* The types, as constants that the inlined kernels fold.  */
enum { Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4 };

_Static_assert (sizeof (struct tsr_block_q4_1) == 20, "q4_1 block");
_Static_assert (sizeof (struct tsr_block_q5_0) == 22, "q5_0 block");
_Static_assert (sizeof (struct tsr_block_q5_1) == 24, "q5_1 block");
_Static_assert (sizeof (struct tsr_block_iq4_nl) == 18, "iq4_nl block");
_Static_assert (sizeof (struct tsr_block_mxfp4) == 17, "mxfp4 block");

/* Bytes of a block; where its 4-bit fields, its fifth bits (q5_0,
   q5_1) and its minimum (q4_1, q5_1, after d) are.  */
static inline int
block_bytes (int t)
{
  return t == Q4_1 ? 20 : t == Q5_0 ? 22 : t == Q5_1 ? 24
         : t == IQ4_NL ? 18 : 17;
}

static inline int
qs_at (int t)
{
  return t == Q4_1 ? 4 : t == Q5_0 ? 6 : t == Q5_1 ? 8 : t == IQ4_NL ? 2 : 1;
}

static inline int
qh_at (int t)
{
  return t == Q5_0 ? 2 : 4;
}

static inline bool
has_qh (int t)
{
  return t == Q5_0 || t == Q5_1;
}

static inline bool
has_min (int t)
{
  return t == Q4_1 || t == Q5_1;
}

static inline bool
is_table (int t)
{
  return t == IQ4_NL || t == MXFP4;
}

#if defined(__AVX512BW__)
static const int8_t magnitudes_iq4nl[16] = {
  127, 104, 83, 65, 49, 35, 22, 10, 1, 13, 25, 38, 53, 69, 89, 113
};
/* mxfp4's values plus 16 (4..28), unsigned like q5_0's levels (v4):
   the offset comes off as q5_0's does.  */
static const int8_t shifted_mxfp4[16] = {
  16, 17, 18, 19, 20, 22, 24, 28, 16, 15, 14, 13, 12, 10, 8, 4
};
#endif

static inline const int8_t *
table_of (int t)
{
  return t == IQ4_NL ? tsr_cpu_iq4nl_values : tsr_cpu_mxfp4_values;
}

static inline float
block_d (int t, const char *b)
{
  return t == MXFP4 ? tsr_cpu_e8m0_half ((uint8_t) b[0])
                    : fp16_to_f32 (load_fp16 (b));
}

static inline float
block_m (int t, const char *b)
{
  return has_min (t) ? fp16_to_f32 (load_fp16 (b + 2)) : 0.0f;
}

/* The 32 integers of block B in element order: levels for q4_1 and
   q5_1, level - 16 for q5_0, table values for iq4_nl and mxfp4.  */
static inline void
block_ints (int t, const char *b, int8_t *w)
{
  const uint8_t *qs = (const uint8_t *) b + qs_at (t);
  uint32_t qh = has_qh (t) ? load_le32 (b + qh_at (t)) : 0;

  for (int i = 0; i < QK / 2; i++)
    {
      int lo = qs[i] & 0x0f, hi = qs[i] >> 4;
      if (has_qh (t))
        {
          lo |= (int) (qh >> i & 1) << 4;
          hi |= (int) (qh >> (i + 16) & 1) << 4;
        }
      if (is_table (t))
        {
          lo = table_of (t)[lo];
          hi = table_of (t)[hi];
        }
      else if (t == Q5_0)
        {
          lo -= 16;
          hi -= 16;
        }
      w[i] = (int8_t) lo;
      w[i + QK / 2] = (int8_t) hi;
    }
}

/* Decoding 16-byte halves (SSSE3 and up).  */
#if defined(__SSSE3__)
/* 0x10 in byte i of the result where bit i of BITS (< 2^16) is set.  */
static inline __m128i
fifth_bits16 (uint32_t bits)
{
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  return _mm_maskz_mov_epi8 ((__mmask16) bits, _mm_set1_epi8 (0x10));
#else
  const __m128i spread = _mm_setr_epi8 (0, 0, 0, 0, 0, 0, 0, 0,
                                        1, 1, 1, 1, 1, 1, 1, 1);
  const __m128i bit = _mm_setr_epi8 (1, 2, 4, 8, 16, 32, 64, -128,
                                     1, 2, 4, 8, 16, 32, 64, -128);
  __m128i v = _mm_shuffle_epi8 (_mm_cvtsi32_si128 ((int) bits), spread);
  v = _mm_cmpeq_epi8 (_mm_and_si128 (v, bit), bit);
  return _mm_and_si128 (v, _mm_set1_epi8 (0x10));
#endif
}

/* Elements 0..15 of block B to *LO, 16..31 to *HI: levels (q5_0's
   unshifted, 0..31), or table values.  */
static inline void
decode16 (int t, const char *b, __m128i *lo, __m128i *hi)
{
  const __m128i m4 = _mm_set1_epi8 (0x0f);
  __m128i q = _mm_loadu_si128 ((const __m128i *) (b + qs_at (t)));

  *lo = _mm_and_si128 (q, m4);
  *hi = _mm_and_si128 (_mm_srli_epi16 (q, 4), m4);
  if (has_qh (t))
    {
      uint32_t qh = load_le32 (b + qh_at (t));
      *lo = _mm_or_si128 (*lo, fifth_bits16 (qh & 0xffff));
      *hi = _mm_or_si128 (*hi, fifth_bits16 (qh >> 16));
    }
  if (is_table (t))
    {
      __m128i tab = _mm_loadu_si128 ((const __m128i *) table_of (t));
      *lo = _mm_shuffle_epi8 (tab, *lo);
      *hi = _mm_shuffle_epi8 (tab, *hi);
    }
}
#endif

/* Rows to f32.  */

#if defined(__AVX512F__) && defined(__SSSE3__)
#define STORE_STEP 16
#elif defined(__AVX2__)
#define STORE_STEP 8
#elif defined(__SSE4_1__) && defined(__SSSE3__)
#define STORE_STEP 4
#endif

#ifdef STORE_STEP
/* Y[0..16) = (float) V[i] * D (+ M): the int8 V widened STORE_STEP at a
   time.  */
static inline void
store16 (int t, float *y, __m128i v, float d, float m)
{
  for (int i = 0; i < 16; i += STORE_STEP, v = _mm_srli_si128 (v, STORE_STEP))
    {
#if STORE_STEP == 16
      __m512 f = _mm512_mul_ps (_mm512_cvtepi32_ps (_mm512_cvtepi8_epi32 (v)),
                                _mm512_set1_ps (d));
      if (has_min (t))
        f = _mm512_add_ps (f, _mm512_set1_ps (m));
      _mm512_storeu_ps (y + i, f);
#elif STORE_STEP == 8
      __m256 f = _mm256_mul_ps (_mm256_cvtepi32_ps (_mm256_cvtepi8_epi32 (v)),
                                _mm256_set1_ps (d));
      if (has_min (t))
        f = _mm256_add_ps (f, _mm256_set1_ps (m));
      _mm256_storeu_ps (y + i, f);
#else
      __m128 f = _mm_mul_ps (_mm_cvtepi32_ps (_mm_cvtepi8_epi32 (v)),
                             _mm_set1_ps (d));
      if (has_min (t))
        f = _mm_add_ps (f, _mm_set1_ps (m));
      _mm_storeu_ps (y + i, f);
#endif
    }
}
#endif

static inline __attribute__ ((always_inline)) void
row_to_f32 (int t, int64_t n, float *y, const char *x)
{
  const int bs = block_bytes (t);

  for (int64_t j = 0; j < n / QK; j++, x += bs, y += QK)
    {
      const float d = block_d (t, x), m = block_m (t, x);
#ifdef STORE_STEP
      __m128i lo, hi;
      decode16 (t, x, &lo, &hi);
      if (t == Q5_0)
        {
          lo = _mm_sub_epi8 (lo, _mm_set1_epi8 (16));
          hi = _mm_sub_epi8 (hi, _mm_set1_epi8 (16));
        }
      store16 (t, y, lo, d, m);
      store16 (t, y + 16, hi, d, m);
#else
      int8_t w[QK];
      block_ints (t, x, w);
      for (int i = 0; i < QK; i++)
        {
          y[i] = (float) w[i] * d;
          if (has_min (t))
            y[i] = y[i] + m;
        }
#endif
    }
}

/* Dot products: KERNEL (t, k, x, ny, y, out) as in cpu-qdot.c.  */

#if defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__FMA__) \
    && defined(__F16C__)

/* mxfp4's halved E8M0 scales of the exponent bytes E (one per lane),
   as tsr_cpu_e8m0_half.  */
static inline __m512
e8m0_half16 (__m512i e)
{
  __m512i normal = _mm512_slli_epi32 (_mm512_sub_epi32
                                      (e, _mm512_set1_epi32 (1)), 23);
  __m512i tiny = _mm512_sllv_epi32 (_mm512_set1_epi32 (0x00200000), e);
  __mmask16 small = _mm512_cmplt_epu32_mask (e, _mm512_set1_epi32 (2));
  return _mm512_castsi512_ps (_mm512_mask_blend_epi32 (small, normal, tiny));
}

/* The scales (and minimums) of blocks 0..CNT-1 (CNT <= 16) at X as f32
   lanes, zeros after, from the first 4 bytes of each block (d, then m
   for q4_1 / q5_1, or mxfp4's exponent).  (Inserting them into
   registers is faster than a gather or a store to memory and one load,
   whose forwarding fails.)  */
static inline __attribute__ ((always_inline)) void
scales16 (int t, const char *x, int cnt, __m512 *dx, __m512 *mx)
{
  const int bs = block_bytes (t);
  const __mmask16 there = cnt >= 16 ? 0xffff : (__mmask16) ((1u << cnt) - 1);
  __m512i g;

  if (cnt >= 16)
    {
      __m128i q[4];
      for (int l = 0; l < 4; l++)
        {
          const char *p = x + 4 * l * bs;
          q[l] = _mm_cvtsi32_si128 ((int) load_le32 (p));
          q[l] = _mm_insert_epi32 (q[l], (int) load_le32 (p + bs), 1);
          q[l] = _mm_insert_epi32 (q[l], (int) load_le32 (p + 2 * bs), 2);
          q[l] = _mm_insert_epi32 (q[l], (int) load_le32 (p + 3 * bs), 3);
        }
      g = _mm512_inserti64x4 (_mm512_castsi256_si512
                              (_mm256_set_m128i (q[1], q[0])),
                              _mm256_set_m128i (q[3], q[2]), 1);
    }
  else
    {
      uint32_t u[16] = { 0 };
      for (int i = 0; i < cnt; i++)
        u[i] = load_le32 (x + i * bs);
      g = _mm512_loadu_si512 (u);
    }

  if (t == MXFP4)
    {
      __m512 d = e8m0_half16 (_mm512_and_si512 (g, _mm512_set1_epi32 (0xff)));
      *dx = _mm512_maskz_mov_ps (there, d);
      return;
    }
  *dx = _mm512_cvtph_ps (_mm512_cvtepi32_epi16 (g));
  if (has_min (t))
    *mx = _mm512_cvtph_ps (_mm512_cvtepi32_epi16 (_mm512_srli_epi32 (g, 16)));
}

/* The 4-bit fields (with fifth bits) of 4 blocks at X, CNT of them
   there (missing ones are zeros): elements 0..15 of block i in lane i
   of *LO, 16..31 in lane i of *HI, as the activations have them.  */
static inline __attribute__ ((always_inline)) void
load4 (int t, const char *x, int cnt, __m512i *lo, __m512i *hi)
{
  const int bs = block_bytes (t), at = qs_at (t);
  const __m512i m4 = _mm512_set1_epi8 (0x0f);
  __m512i q;

  if (cnt >= 4)
    {
      q = _mm512_castsi128_si512 (_mm_loadu_si128 ((const __m128i *)
                                                   (x + at)));
      q = _mm512_inserti32x4 (q, _mm_loadu_si128 ((const __m128i *)
                                                  (x + bs + at)), 1);
      q = _mm512_inserti32x4 (q, _mm_loadu_si128 ((const __m128i *)
                                                  (x + 2 * bs + at)), 2);
      q = _mm512_inserti32x4 (q, _mm_loadu_si128 ((const __m128i *)
                                                  (x + 3 * bs + at)), 3);
    }
  else
    {
      uint8_t buf[64] = { 0 };
      for (int i = 0; i < cnt; i++)
        memcpy (buf + 16 * i, x + i * bs + at, 16);
      q = _mm512_loadu_si512 (buf);
    }
  *lo = _mm512_and_si512 (q, m4);
  *hi = _mm512_and_si512 (_mm512_srli_epi16 (q, 4), m4);
  if (has_qh (t))
    {
      const __m512i sixteen = _mm512_set1_epi8 (0x10);
      uint64_t blo = 0, bhi = 0;
      if (cnt >= 4)
        {
          /* The 4 words of fifth bits, their low halves packed into
             the first 64 bits, their high halves into the next.  */
          const char *p = x + qh_at (t);
          __m128i h = _mm_cvtsi32_si128 ((int) load_le32 (p));
          h = _mm_insert_epi32 (h, (int) load_le32 (p + bs), 1);
          h = _mm_insert_epi32 (h, (int) load_le32 (p + 2 * bs), 2);
          h = _mm_insert_epi32 (h, (int) load_le32 (p + 3 * bs), 3);
          h = _mm_shuffle_epi8 (h, _mm_setr_epi8 (0, 1, 4, 5, 8, 9, 12, 13,
                                                  2, 3, 6, 7, 10, 11, 14,
                                                  15));
          blo = (uint64_t) _mm_cvtsi128_si64 (h);
          bhi = (uint64_t) _mm_extract_epi64 (h, 1);
        }
      else
        for (int i = 0; i < cnt; i++)
          {
            uint64_t h = load_le32 (x + i * bs + qh_at (t));
            blo |= (h & 0xffff) << (16 * i);
            bhi |= (h >> 16) << (16 * i);
          }
      *lo = _mm512_or_si512 (*lo, _mm512_maskz_mov_epi8 (blo, sixteen));
      *hi = _mm512_or_si512 (*hi, _mm512_maskz_mov_epi8 (bhi, sixteen));
    }
}

/* Blocks B0..B0+3 (CNT of them there), at XG, with the NY activation
   rows: ACC[c] += the integer sums, each lane scaled by its block's
   d_x d_y, picked from DD[c] by IDX.  */
static inline __attribute__ ((always_inline)) void
group_v4 (int t, const char *xg, int cnt, int64_t b0, int64_t k,
          const int ny, const void *const *y, const __m512 *dd,
          __m512i idx, __m512 *acc)
{
  const __m512i zero = _mm512_setzero_si512 ();
  __m512i lo, hi;
  __mmask64 nlo = 0, nhi = 0;

  load4 (t, xg, cnt, &lo, &hi);
  if (t == IQ4_NL)
    {
      const __m512i mag = _mm512_broadcast_i32x4
        (_mm_loadu_si128 ((const __m128i *) magnitudes_iq4nl));
      nlo = _mm512_testn_epi8_mask (lo, _mm512_set1_epi8 (8));
      nhi = _mm512_testn_epi8_mask (hi, _mm512_set1_epi8 (8));
      lo = _mm512_shuffle_epi8 (mag, lo);
      hi = _mm512_shuffle_epi8 (mag, hi);
    }
  else if (t == MXFP4)
    {
      const __m512i shifted = _mm512_broadcast_i32x4
        (_mm_loadu_si128 ((const __m128i *) shifted_mxfp4));
      lo = _mm512_shuffle_epi8 (shifted, lo);
      hi = _mm512_shuffle_epi8 (shifted, hi);
    }
  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + b0 * QK;
      __m512i ylo = _mm512_loadu_si512 (yq);
      __m512i yhi = _mm512_loadu_si512 (yq + 64), s;

      if (t == IQ4_NL)
        {
          ylo = _mm512_mask_sub_epi8 (ylo, nlo, zero, ylo);
          yhi = _mm512_mask_sub_epi8 (yhi, nhi, zero, yhi);
        }
      /* iq4_nl: pairs of products up to 2 * 127 * 127, no room to add
         the halves in int16.  */
      s = qdot_sum2_512 (lo, ylo, hi, yhi, t != IQ4_NL);
      acc[c] = _mm512_fmadd_ps (_mm512_cvtepi32_ps (s),
                                _mm512_permutexvar_ps (idx, dd[c]), acc[c]);
    }
}

/* Blocks J..J+CNT-1 (CNT <= 16) of the row, at XJ.  */
static inline __attribute__ ((always_inline)) void
chunk_v4 (int t, const char *xj, int cnt, int64_t j, int64_t k,
          const int ny, const void *const *y, __m512 *acc0, __m512 *acc1)
{
  const int bs = block_bytes (t);
  const __m512i four = _mm512_set1_epi32 (4);
  __m512i idx = _mm512_setr_epi32 (0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                   3, 3, 3, 3);
  __m512 dx, mx = _mm512_setzero_ps (), dd[TSR_CPU_QDOT_MAX_COLS];

  scales16 (t, xj, cnt, &dx, &mx);
  if (t == Q5_0 || t == MXFP4)
    mx = _mm512_mul_ps (dx, _mm512_set1_ps (-16.0f));
  for (int c = 0; c < ny; c++)
    {
      dd[c] = _mm512_mul_ps (dx, _mm512_loadu_ps (tsr_cpu_qact_scales (y[c], k)
                                                  + j));
      if (has_min (t) || t == Q5_0 || t == MXFP4)
        acc1[c] = _mm512_fmadd_ps (mx, _mm512_loadu_ps
                                   (tsr_cpu_qact_sums (y[c], k) + j),
                                   acc1[c]);
    }
  if (cnt == 16)
    {
      group_v4 (t, xj, 4, j, k, ny, y, dd, idx, acc0);
      idx = _mm512_add_epi32 (idx, four);
      group_v4 (t, xj + 4 * bs, 4, j + 4, k, ny, y, dd, idx, acc1);
      idx = _mm512_add_epi32 (idx, four);
      group_v4 (t, xj + 8 * bs, 4, j + 8, k, ny, y, dd, idx, acc0);
      idx = _mm512_add_epi32 (idx, four);
      group_v4 (t, xj + 12 * bs, 4, j + 12, k, ny, y, dd, idx, acc1);
    }
  else
    for (int g = 0; 4 * g < cnt; g++)
      {
        group_v4 (t, xj + 4 * g * bs, cnt - 4 * g, j + 4 * g, k, ny, y, dd,
                  idx, acc0);
        idx = _mm512_add_epi32 (idx, four);
      }
}

static inline __attribute__ ((always_inline)) void
qdot_v4 (int t, int64_t k, const char *x, const int ny,
         const void *const *y, float *out)
{
  const int64_t nb = k / QK;
  const int bs = block_bytes (t);
  __m512 acc0[TSR_CPU_QDOT_MAX_COLS], acc1[TSR_CPU_QDOT_MAX_COLS];
  int64_t j = 0;

  for (int c = 0; c < ny; c++)
    acc0[c] = acc1[c] = _mm512_setzero_ps ();
  for (; j + 16 <= nb; j += 16)
    {
      qdot_prefetch_ny (x + j * bs, 16 * (size_t) bs, ny);
      chunk_v4 (t, x + j * bs, 16, j, k, ny, y, acc0, acc1);
    }
  if (j < nb)
    chunk_v4 (t, x + j * bs, (int) (nb - j), j, k, ny, y, acc0, acc1);
  for (int c = 0; c < ny; c++)
    out[c] = _mm512_reduce_add_ps (_mm512_add_ps (acc0[c], acc1[c]));
}
#define QDOT(t, k, x, ny, y, out) qdot_v4 (t, k, x, ny, y, out)

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

/* As scales16, for 8 blocks.  */
static inline __attribute__ ((always_inline)) void
scales8 (int t, const char *x, int cnt, __m256 *dx, __m256 *mx)
{
  const __m256i at = _mm256_mullo_epi32 (_mm256_setr_epi32 (0, 1, 2, 3, 4,
                                                            5, 6, 7),
                                         _mm256_set1_epi32 (block_bytes (t)));
  const __m256i there = _mm256_cmpgt_epi32 (_mm256_set1_epi32 (cnt),
                                            _mm256_setr_epi32 (0, 1, 2, 3, 4,
                                                               5, 6, 7));
  __m256i g = _mm256_mask_i32gather_epi32 (_mm256_setzero_si256 (),
                                           (const int *) x, at, there, 1);

  if (t == MXFP4)
    {
      __m256i e = _mm256_and_si256 (g, _mm256_set1_epi32 (0xff));
      __m256i normal = _mm256_slli_epi32 (_mm256_sub_epi32
                                          (e, _mm256_set1_epi32 (1)), 23);
      __m256i tiny = _mm256_sllv_epi32 (_mm256_set1_epi32 (0x00200000), e);
      __m256i small = _mm256_cmpgt_epi32 (_mm256_set1_epi32 (2), e);
      *dx = _mm256_and_ps (_mm256_castsi256_ps (there), _mm256_castsi256_ps
                           (_mm256_blendv_epi8 (normal, tiny, small)));
      return;
    }
  /* The low 16 bits of each lane, packed (within 128-bit lanes, then
     the two lanes' halves put together).  */
  const __m256i low16 = _mm256_setr_epi8 (0, 1, 4, 5, 8, 9, 12, 13, -1, -1,
                                          -1, -1, -1, -1, -1, -1,
                                          0, 1, 4, 5, 8, 9, 12, 13, -1, -1,
                                          -1, -1, -1, -1, -1, -1);
  __m256i d = _mm256_permute4x64_epi64 (_mm256_shuffle_epi8 (g, low16), 0x08);
  *dx = _mm256_cvtph_ps (_mm256_castsi256_si128 (d));
  if (has_min (t))
    {
      __m256i m = _mm256_permute4x64_epi64
        (_mm256_shuffle_epi8 (_mm256_srli_epi32 (g, 16), low16), 0x08);
      *mx = _mm256_cvtph_ps (_mm256_castsi256_si128 (m));
    }
}

/* 0x10 in byte i where bit i of BITS is set, 32 bytes.  */
static inline __m256i
fifth_bits32 (uint32_t bits)
{
  const __m256i spread = _mm256_setr_epi8 (0, 0, 0, 0, 0, 0, 0, 0,
                                           1, 1, 1, 1, 1, 1, 1, 1,
                                           2, 2, 2, 2, 2, 2, 2, 2,
                                           3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x ((long long) 0x8040201008040201ull);
  __m256i v = _mm256_shuffle_epi8 (_mm256_set1_epi32 ((int) bits), spread);
  v = _mm256_cmpeq_epi8 (_mm256_and_si256 (v, bit), bit);
  return _mm256_and_si256 (v, _mm256_set1_epi8 (0x10));
}

/* Blocks at X and (if TWO) the next one: elements 0..15 of each in
   *LO's two lanes, 16..31 in *HI's; levels, or table values.  */
static inline __attribute__ ((always_inline)) void
load2 (int t, const char *x, bool two, __m256i *lo, __m256i *hi)
{
  const int bs = block_bytes (t), at = qs_at (t);
  const __m256i m4 = _mm256_set1_epi8 (0x0f);
  __m128i a = _mm_loadu_si128 ((const __m128i *) (x + at));
  __m128i b = two ? _mm_loadu_si128 ((const __m128i *) (x + bs + at))
                  : _mm_setzero_si128 ();
  __m256i q = _mm256_inserti128_si256 (_mm256_castsi128_si256 (a), b, 1);

  *lo = _mm256_and_si256 (q, m4);
  *hi = _mm256_and_si256 (_mm256_srli_epi16 (q, 4), m4);
  if (has_qh (t))
    {
      uint32_t h0 = load_le32 (x + qh_at (t));
      uint32_t h1 = two ? load_le32 (x + bs + qh_at (t)) : 0;
      *lo = _mm256_or_si256 (*lo, fifth_bits32 ((h0 & 0xffff) | h1 << 16));
      *hi = _mm256_or_si256 (*hi, fifth_bits32 ((h0 >> 16)
                                                | (h1 & 0xffff0000u)));
    }
  if (is_table (t))
    {
      __m256i tab = _mm256_broadcastsi128_si256
        (_mm_loadu_si128 ((const __m128i *) table_of (t)));
      *lo = _mm256_shuffle_epi8 (tab, *lo);
      *hi = _mm256_shuffle_epi8 (tab, *hi);
    }
}

/* Blocks B0, B0 + 1 (the second missing if !TWO), at XP, with the NY
   activation rows, as group_v4 does for 4 blocks.  */
static inline __attribute__ ((always_inline)) void
pair_v3 (int t, const char *xp, bool two, int64_t b0, int64_t k,
         const int ny, const void *const *y, const __m256 *dd, __m256i idx,
         __m256 *acc)
{
  const __m256i ones = _mm256_set1_epi16 (1);
  const int64_t at = tsr_cpu_qact_pos (b0, 0);
  __m256i lo, hi, alo = _mm256_setzero_si256 (), ahi = alo;

  load2 (t, xp, two, &lo, &hi);
  if (is_table (t))
    {
      alo = _mm256_abs_epi8 (lo);
      ahi = _mm256_abs_epi8 (hi);
    }
  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + at;
      __m256i ylo = _mm256_loadu_si256 ((const __m256i *) yq);
      __m256i yhi = _mm256_loadu_si256 ((const __m256i *) (yq + 64)), s;

      if (is_table (t))
        s = qdot_sum2_256 (alo, _mm256_sign_epi8 (ylo, lo), ahi,
                           _mm256_sign_epi8 (yhi, hi), t != IQ4_NL);
      else
        {
          __m256i p = _mm256_add_epi16 (_mm256_maddubs_epi16 (lo, ylo),
                                        _mm256_maddubs_epi16 (hi, yhi));
          if (t == Q5_0)
            p = _mm256_sub_epi16 (p, _mm256_slli_epi16
                                  (_mm256_loadu_si256
                                   ((const __m256i *)
                                    (tsr_cpu_qact_offsets (y[c], k)
                                     + b0 * 8)), 1));
          s = _mm256_madd_epi16 (p, ones);
        }
      acc[c] = _mm256_fmadd_ps (_mm256_cvtepi32_ps (s),
                                _mm256_permutevar8x32_ps (dd[c], idx),
                                acc[c]);
    }
}

static inline __attribute__ ((always_inline)) void
qdot_v3 (int t, int64_t k, const char *x, const int ny,
         const void *const *y, float *out)
{
  const int64_t nb = k / QK;
  const int bs = block_bytes (t);
  const __m256i lanes = _mm256_setr_epi32 (0, 0, 0, 0, 1, 1, 1, 1);
  const __m256i two = _mm256_set1_epi32 (2);
  __m256 acc0[TSR_CPU_QDOT_MAX_COLS], acc1[TSR_CPU_QDOT_MAX_COLS];
  __m256 dd[TSR_CPU_QDOT_MAX_COLS];

  for (int c = 0; c < ny; c++)
    acc0[c] = acc1[c] = _mm256_setzero_ps ();
  for (int64_t j = 0; j < nb; j += 8)
    {
      const char *xj = x + j * bs;
      int cnt = nb - j < 8 ? (int) (nb - j) : 8;
      __m256 dx, mx = _mm256_setzero_ps ();
      __m256i idx = lanes;

      qdot_prefetch_ny (xj, 8 * (size_t) bs, ny);
      scales8 (t, xj, cnt, &dx, &mx);
      for (int c = 0; c < ny; c++)
        {
          dd[c] = _mm256_mul_ps (dx, _mm256_loadu_ps
                                     (tsr_cpu_qact_scales (y[c], k) + j));
          if (has_min (t))
            acc1[c] = _mm256_fmadd_ps (mx, _mm256_loadu_ps
                                       (tsr_cpu_qact_sums (y[c], k) + j),
                                       acc1[c]);
        }
      if (cnt == 8)
        for (int p = 0; p < 4; p += 2)
          {
            pair_v3 (t, xj + 2 * p * bs, true, j + 2 * p, k, ny, y, dd, idx,
                     acc0);
            idx = _mm256_add_epi32 (idx, two);
            pair_v3 (t, xj + (2 * p + 2) * bs, true, j + 2 * p + 2, k, ny,
                     y, dd, idx, acc1);
            idx = _mm256_add_epi32 (idx, two);
          }
      else
        for (int p = 0; 2 * p < cnt; p++)
          {
            pair_v3 (t, xj + 2 * p * bs, 2 * p + 1 < cnt, j + 2 * p, k, ny,
                     y, dd, idx, acc0);
            idx = _mm256_add_epi32 (idx, two);
          }
    }
  for (int c = 0; c < ny; c++)
    out[c] = qdot_hsum256 (acc0[c], acc1[c]);
}
#define QDOT(t, k, x, ny, y, out) qdot_v3 (t, k, x, ny, y, out)

#elif defined(__SSSE3__)

/* Block J at XJ with the NY activation rows; the minimum's part goes
   to ACCM.  */
static inline __attribute__ ((always_inline)) void
block_v2 (int t, const char *xj, int64_t j, int64_t k, const int ny,
          const void *const *y, __m128 *acc, float *accm)
{
  const __m128i ones = _mm_set1_epi16 (1);
  const int64_t at = tsr_cpu_qact_pos (j, 0);
  const float dx = block_d (t, xj), mx = block_m (t, xj);
  __m128i lo, hi, alo = _mm_setzero_si128 (), ahi = alo;

  decode16 (t, xj, &lo, &hi);
  if (is_table (t))
    {
      alo = _mm_abs_epi8 (lo);
      ahi = _mm_abs_epi8 (hi);
    }
  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + at;
      __m128i ylo = _mm_loadu_si128 ((const __m128i *) yq);
      __m128i yhi = _mm_loadu_si128 ((const __m128i *) (yq + 64)), s;

      if (t == IQ4_NL)
        s = _mm_add_epi32
          (_mm_madd_epi16 (_mm_maddubs_epi16 (alo, _mm_sign_epi8 (ylo, lo)),
                           ones),
           _mm_madd_epi16 (_mm_maddubs_epi16 (ahi, _mm_sign_epi8 (yhi, hi)),
                           ones));
      else
        {
          __m128i p;
          if (t == MXFP4)
            p = _mm_add_epi16
              (_mm_maddubs_epi16 (alo, _mm_sign_epi8 (ylo, lo)),
               _mm_maddubs_epi16 (ahi, _mm_sign_epi8 (yhi, hi)));
          else
            p = _mm_add_epi16 (_mm_maddubs_epi16 (lo, ylo),
                               _mm_maddubs_epi16 (hi, yhi));
          if (t == Q5_0)
            p = _mm_sub_epi16 (p, _mm_slli_epi16
                               (_mm_loadu_si128
                                ((const __m128i *)
                                 (tsr_cpu_qact_offsets (y[c], k) + j * 8)),
                                1));
          s = _mm_madd_epi16 (p, ones);
        }
      acc[c] = _mm_add_ps (acc[c], _mm_mul_ps
                           (_mm_cvtepi32_ps (s),
                            _mm_set1_ps (dx * tsr_cpu_qact_scales (y[c], k)[j])));
      if (has_min (t))
        accm[c] += mx * tsr_cpu_qact_sums (y[c], k)[j];
    }
}

static inline __attribute__ ((always_inline)) void
qdot_v2 (int t, int64_t k, const char *x, const int ny,
         const void *const *y, float *out)
{
  const int64_t nb = k / QK;
  const int bs = block_bytes (t);
  __m128 acc0[TSR_CPU_QDOT_MAX_COLS], acc1[TSR_CPU_QDOT_MAX_COLS];
  float accm[TSR_CPU_QDOT_MAX_COLS] = { 0 };
  int64_t j = 0;

  for (int c = 0; c < ny; c++)
    acc0[c] = acc1[c] = _mm_setzero_ps ();
  for (; j + 2 <= nb; j += 2)
    {
      block_v2 (t, x + j * bs, j, k, ny, y, acc0, accm);
      block_v2 (t, x + (j + 1) * bs, j + 1, k, ny, y, acc1, accm);
    }
  if (j < nb)
    block_v2 (t, x + j * bs, j, k, ny, y, acc0, accm);
  for (int c = 0; c < ny; c++)
    out[c] = qdot_hsum128 (acc0[c], acc1[c]) + accm[c];
}
#define QDOT(t, k, x, ny, y, out) qdot_v2 (t, k, x, ny, y, out)

#elif defined(__ARM_FEATURE_DOTPROD)

/* Block J at XJ with the NY activation rows: signed values (q5_0's
   levels shifted, the tables looked up) and sdot.  */
static inline __attribute__ ((always_inline)) void
block_sdot (int t, const char *xj, int64_t j, int64_t k, const int ny,
            const void *const *y, float32x4_t *acc, float *accm)
{
  const int64_t at = tsr_cpu_qact_pos (j, 0);
  const float dx = block_d (t, xj), mx = block_m (t, xj);
  uint8x16_t q = vld1q_u8 ((const uint8_t *) xj + qs_at (t));
  uint8x16_t lo = vandq_u8 (q, vdupq_n_u8 (0x0f)), hi = vshrq_n_u8 (q, 4);
  int8x16_t wlo, whi;

  if (has_qh (t))
    {
      static const uint8_t bit[16] = { 1, 2, 4, 8, 16, 32, 64, 128,
                                       1, 2, 4, 8, 16, 32, 64, 128 };
      const uint8x16_t sel = vld1q_u8 (bit), sixteen = vdupq_n_u8 (0x10);
      uint32_t qh = load_le32 (xj + qh_at (t));
      uint8x16_t blo = vcombine_u8 (vdup_n_u8 ((uint8_t) qh),
                                    vdup_n_u8 ((uint8_t) (qh >> 8)));
      uint8x16_t bhi = vcombine_u8 (vdup_n_u8 ((uint8_t) (qh >> 16)),
                                    vdup_n_u8 ((uint8_t) (qh >> 24)));
      lo = vorrq_u8 (lo, vandq_u8 (vtstq_u8 (blo, sel), sixteen));
      hi = vorrq_u8 (hi, vandq_u8 (vtstq_u8 (bhi, sel), sixteen));
    }
  if (is_table (t))
    {
      int8x16_t tab = vld1q_s8 (table_of (t));
      wlo = vqtbl1q_s8 (tab, lo);
      whi = vqtbl1q_s8 (tab, hi);
    }
  else
    {
      wlo = vreinterpretq_s8_u8 (lo);
      whi = vreinterpretq_s8_u8 (hi);
      if (t == Q5_0)
        {
          wlo = vsubq_s8 (wlo, vdupq_n_s8 (16));
          whi = vsubq_s8 (whi, vdupq_n_s8 (16));
        }
    }
  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + at;
      int32x4_t s = vdotq_s32 (vdupq_n_s32 (0), wlo, vld1q_s8 (yq));
      s = vdotq_s32 (s, whi, vld1q_s8 (yq + 64));
      acc[c] = vfmaq_n_f32 (acc[c], vcvtq_f32_s32 (s),
                            dx * tsr_cpu_qact_scales (y[c], k)[j]);
      if (has_min (t))
        accm[c] += mx * tsr_cpu_qact_sums (y[c], k)[j];
    }
}

static inline __attribute__ ((always_inline)) void
qdot_sdot (int t, int64_t k, const char *x, const int ny,
           const void *const *y, float *out)
{
  const int64_t nb = k / QK;
  const int bs = block_bytes (t);
  float32x4_t acc0[TSR_CPU_QDOT_MAX_COLS], acc1[TSR_CPU_QDOT_MAX_COLS];
  float accm[TSR_CPU_QDOT_MAX_COLS] = { 0 };
  int64_t j = 0;

  for (int c = 0; c < ny; c++)
    acc0[c] = acc1[c] = vdupq_n_f32 (0);
  for (; j + 2 <= nb; j += 2)
    {
      block_sdot (t, x + j * bs, j, k, ny, y, acc0, accm);
      block_sdot (t, x + (j + 1) * bs, j + 1, k, ny, y, acc1, accm);
    }
  if (j < nb)
    block_sdot (t, x + j * bs, j, k, ny, y, acc0, accm);
  for (int c = 0; c < ny; c++)
    out[c] = vaddvq_f32 (vaddq_f32 (acc0[c], acc1[c])) + accm[c];
}
#define QDOT(t, k, x, ny, y, out) qdot_sdot (t, k, x, ny, y, out)

#else

/* Plain C: the exact integer sum of each block, times the scales.  */
static inline __attribute__ ((always_inline)) void
qdot_c (int t, int64_t k, const char *x, const int ny,
        const void *const *y, float *out)
{
  const int64_t nb = k / QK;
  const int bs = block_bytes (t);
  float acc[TSR_CPU_QDOT_MAX_COLS] = { 0 };

  for (int64_t j = 0; j < nb; j++)
    {
      const char *xj = x + j * bs;
      const int64_t at = tsr_cpu_qact_pos (j, 0);
      const float dx = block_d (t, xj), mx = block_m (t, xj);
      int8_t w[QK];

      block_ints (t, xj, w);
      for (int c = 0; c < ny; c++)
        {
          const int8_t *yq = (const int8_t *) y[c] + at;
          int32_t s = 0;
          for (int i = 0; i < QK / 2; i++)
            s += w[i] * yq[i] + w[i + QK / 2] * yq[64 + i];
          acc[c] += dx * tsr_cpu_qact_scales (y[c], k)[j] * (float) s;
          if (has_min (t))
            acc[c] += mx * tsr_cpu_qact_sums (y[c], k)[j];
        }
    }
  for (int c = 0; c < ny; c++)
    out[c] = acc[c];
}
#define QDOT(t, k, x, ny, y, out) qdot_c (t, k, x, ny, y, out)

#endif

/* The entry points of cpu-vec.def.  */
#define ENTRIES(name, T)                                                \
  void                                                                  \
  TSR_CPU_LEVEL_FN (row_##name##_to_f32) (int64_t n, float *y,          \
                                          const void *x)                \
  {                                                                     \
    row_to_f32 (T, n, y, (const char *) x);                             \
  }                                                                     \
  void                                                                  \
  TSR_CPU_LEVEL_FN (vec_dot_##name##_q8_0) (int64_t k, const void *x,   \
                                            size_t bx, int nr, int ny,  \
                                            const void *const *y,       \
                                            float *out)                 \
  {                                                                     \
    TSR_CPU_DISPATCH_ROWS (QDOT, T, k, (const char *) x, bx, nr, ny, y, \
                           out);                                        \
  }

ENTRIES (q4_1, Q4_1)
ENTRIES (q5_0, Q5_0)
ENTRIES (q5_1, Q5_1)
ENTRIES (iq4_nl, IQ4_NL)
ENTRIES (mxfp4, MXFP4)
