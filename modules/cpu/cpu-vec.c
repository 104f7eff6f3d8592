/* cpu-vec.c - the CPU backend's hot loops, compiled once per ISA level.
 *
 * The build compiles this file once for every level configure chose,
 * with that level's -march flags and -DTSR_CPU_SUFFIX=<level>, so each
 * function below exists as tsr_cpu_<name>_<level>; cpu-dispatch.c picks
 * one per process.  Each function uses nothing but the arrays it is
 * given (no tensors, no threads, no errors).  The hot ones have
 * #if branches for what the level's flags enable (__AVX512F__,
 * __AVX2__ + __FMA__ + __F16C__), written with intrinsics; the plain C
 * branch is the baseline and the reference.  Plain C loops are written
 * so that a compiler can vectorize them without -ffast-math
 * (independent accumulators instead of one serial sum).  */
#include <config.h>

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "cpu-vec.h"
#include "cpu-level.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* Inline versions of libtessera's exact conversions (same results bit
   for bit: these conversions are exact, or round to nearest even),
   so the row loops need no call per element; bits_to_f32 and
   fp16_to_f32 are in cpu-level.h.  f32 -> f16 rounding is intricate
   enough to stay with the library's reference.  */
static inline tsr_bf16_t
f32_to_bf16 (float f)
{
  uint32_t x;

  memcpy (&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u)  /* NaN stays a quiet NaN */
    return (tsr_bf16_t) ((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (tsr_bf16_t) (x >> 16);
}

/* Elements summed in float before the partial sum moves to double.  */
#define DOT_BLOCK 256
#define LANES 8

#if defined(__AVX512F__)
/* Lanes of x . y over [0, n) for n < 2^31, 4 accumulators, the tail
   through a mask: nothing past x[n - 1] / y[n - 1] is read.  */
static inline __m512
dot_f32_lanes (int64_t n, const float *x, const float *y)
{
  __m512 s0 = _mm512_setzero_ps (), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;

  for (; i + 64 <= n; i += 64)
    {
      s0 = _mm512_fmadd_ps (_mm512_loadu_ps (x + i), _mm512_loadu_ps (y + i), s0);
      s1 = _mm512_fmadd_ps (_mm512_loadu_ps (x + i + 16),
                            _mm512_loadu_ps (y + i + 16), s1);
      s2 = _mm512_fmadd_ps (_mm512_loadu_ps (x + i + 32),
                            _mm512_loadu_ps (y + i + 32), s2);
      s3 = _mm512_fmadd_ps (_mm512_loadu_ps (x + i + 48),
                            _mm512_loadu_ps (y + i + 48), s3);
    }
  for (; i + 16 <= n; i += 16)
    s0 = _mm512_fmadd_ps (_mm512_loadu_ps (x + i), _mm512_loadu_ps (y + i), s0);
  if (i < n)
    {
      __mmask16 m = (__mmask16) ((1u << (n - i)) - 1);
      s1 = _mm512_fmadd_ps (_mm512_maskz_loadu_ps (m, x + i),
                            _mm512_maskz_loadu_ps (m, y + i), s1);
    }
  return _mm512_add_ps (_mm512_add_ps (s0, s1), _mm512_add_ps (s2, s3));
}
#define DOT_VEC_BLOCK 2048
#elif defined(__AVX2__) && defined(__FMA__)
static inline float
hsum256 (__m256 v)
{
  __m128 s = _mm_add_ps (_mm256_castps256_ps128 (v),
                         _mm256_extractf128_ps (v, 1));
  s = _mm_add_ps (s, _mm_movehl_ps (s, s));
  s = _mm_add_ss (s, _mm_movehdup_ps (s));
  return _mm_cvtss_f32 (s);
}

static inline float
dot_f32_block (int64_t n, const float *x, const float *y)
{
  __m256 s0 = _mm256_setzero_ps (), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  float tail = 0;

  for (; i + 32 <= n; i += 32)
    {
      s0 = _mm256_fmadd_ps (_mm256_loadu_ps (x + i), _mm256_loadu_ps (y + i), s0);
      s1 = _mm256_fmadd_ps (_mm256_loadu_ps (x + i + 8),
                            _mm256_loadu_ps (y + i + 8), s1);
      s2 = _mm256_fmadd_ps (_mm256_loadu_ps (x + i + 16),
                            _mm256_loadu_ps (y + i + 16), s2);
      s3 = _mm256_fmadd_ps (_mm256_loadu_ps (x + i + 24),
                            _mm256_loadu_ps (y + i + 24), s3);
    }
  for (; i + 8 <= n; i += 8)
    s0 = _mm256_fmadd_ps (_mm256_loadu_ps (x + i), _mm256_loadu_ps (y + i), s0);
  for (; i < n; i++)
    tail += x[i] * y[i];
  return hsum256 (_mm256_add_ps (_mm256_add_ps (s0, s1),
                                 _mm256_add_ps (s2, s3))) + tail;
}
#define DOT_VEC_BLOCK 1024
#endif

float
TSR_CPU_LEVEL_FN (vec_dot_f32) (int64_t n, const float *x, const float *y)
{
  double total = 0;
  int64_t i = 0;

#if defined(__AVX512F__)
  /* Each lane sums at most DOT_VEC_BLOCK / 16 products in float.  */
  for (; i < n; i += DOT_VEC_BLOCK)
    {
      int64_t len = n - i < DOT_VEC_BLOCK ? n - i : DOT_VEC_BLOCK;
      total += _mm512_reduce_add_ps (dot_f32_lanes (len, x + i, y + i));
    }
  return (float) total;
#elif defined(__AVX2__) && defined(__FMA__)
  for (; i < n; i += DOT_VEC_BLOCK)
    {
      int64_t len = n - i < DOT_VEC_BLOCK ? n - i : DOT_VEC_BLOCK;
      total += dot_f32_block (len, x + i, y + i);
    }
  return (float) total;
#else
  while (i < n)
    {
      int64_t end = n - i > DOT_BLOCK ? i + DOT_BLOCK : n;
      float acc[LANES] = { 0 };

      for (; i + LANES <= end; i += LANES)
        for (int l = 0; l < LANES; l++)
          acc[l] += x[i + l] * y[i + l];
      for (; i < end; i++)
        acc[0] += x[i] * y[i];
      total += (double) ((acc[0] + acc[4]) + (acc[1] + acc[5]))
               + (double) ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    }
  return (float) total;
#endif
}

double
TSR_CPU_LEVEL_FN (vec_sum_f32) (int64_t n, const float *x)
{
  double acc[4] = { 0 };
  int64_t i = 0;

  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; l++)
      acc[l] += x[i + l];
  for (; i < n; i++)
    acc[0] += x[i];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}


void
TSR_CPU_LEVEL_FN (vec_add_f32) (int64_t n, float *z, const float *x, const float *y)
{
  for (int64_t i = 0; i < n; i++)
    z[i] = x[i] + y[i];
}

void
TSR_CPU_LEVEL_FN (vec_sub_f32) (int64_t n, float *z, const float *x, const float *y)
{
  for (int64_t i = 0; i < n; i++)
    z[i] = x[i] - y[i];
}

void
TSR_CPU_LEVEL_FN (vec_mul_f32) (int64_t n, float *z, const float *x, const float *y)
{
  for (int64_t i = 0; i < n; i++)
    z[i] = x[i] * y[i];
}

void
TSR_CPU_LEVEL_FN (vec_div_f32) (int64_t n, float *z, const float *x, const float *y)
{
  for (int64_t i = 0; i < n; i++)
    z[i] = x[i] / y[i];
}

void
TSR_CPU_LEVEL_FN (vec_set_f32) (int64_t n, float *y, float v)
{
  for (int64_t i = 0; i < n; i++)
    y[i] = v;
}


void
TSR_CPU_LEVEL_FN (vec_center_scale_f32) (int64_t n, float *y, const float *x, double c,
                              double s)
{
  for (int64_t i = 0; i < n; i++)
    y[i] = (float) (((double) x[i] - c) * s);
}

void
TSR_CPU_LEVEL_FN (row_f16_to_f32) (int64_t n, float *y, const tsr_fp16_t *x)
{
  int64_t i = 0;

#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps (y + i, _mm512_cvtph_ps (_mm256_loadu_si256
                                              ((const __m256i *) (x + i))));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps (y + i, _mm256_cvtph_ps (_mm_loadu_si128
                                              ((const __m128i *) (x + i))));
#endif
  for (; i < n; i++)
    y[i] = fp16_to_f32 (x[i]);
}

/* Rounded to nearest, ties to even, as tsr_fp32_to_fp16: the F16C
   conversion gives its bits for every input (NaN: quiet, the top of the
   payload kept), checked in tessera.cpu/f16-rows.c.  */
void
TSR_CPU_LEVEL_FN (row_f32_to_f16) (int64_t n, tsr_fp16_t *y, const float *x)
{
  int64_t i = 0;

#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256 ((__m256i *) (y + i),
                         _mm512_cvtps_ph (_mm512_loadu_ps (x + i),
                                          _MM_FROUND_TO_NEAREST_INT));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128 ((__m128i *) (y + i),
                      _mm256_cvtps_ph (_mm256_loadu_ps (x + i),
                                       _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; i++)
    y[i] = tsr_fp32_to_fp16 (x[i]);
}

void
TSR_CPU_LEVEL_FN (row_bf16_to_f32) (int64_t n, float *y, const tsr_bf16_t *x)
{
  int64_t i = 0;

  /* The bits moved up 16 places: exact, as the scalar tail.  */
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_si512 ((void *) (y + i), _mm512_slli_epi32
                         (_mm512_cvtepu16_epi32 (_mm256_loadu_si256
                                                 ((const __m256i *) (x + i))),
                          16));
#elif defined(__AVX2__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_si256 ((__m256i *) (y + i), _mm256_slli_epi32
                         (_mm256_cvtepu16_epi32 (_mm_loadu_si128
                                                 ((const __m128i *) (x + i))),
                          16));
#endif
  for (; i < n; i++)
    y[i] = bits_to_f32 ((uint32_t) x[i] << 16);
}

void
TSR_CPU_LEVEL_FN (row_f32_to_bf16) (int64_t n, tsr_bf16_t *y, const float *x)
{
  for (int64_t i = 0; i < n; i++)
    y[i] = f32_to_bf16 (x[i]);
}

/* Dot products of a weight row stored as f16, bf16, q8_0 or q4_0 with
   f32 activations: the weights are widened to f32 in registers (the
   same values tsr_cpu_row_to_f32 would give) and multiplied in f32, so
   the result matches converting the row first, up to summation order.
   Per vector lane, partial sums move to double every DOT_BLOCK_ELEMS
   elements.  */
#define DOT_BLOCK_ELEMS 2048

#if defined(__AVX512F__)
/* The sum of V's 16 lanes by halves: lane i + 8 added to lane i, then
   i + 4 to i, i + 2 to i, 1 to 0 (the order of GCC's
   _mm512_reduce_add_ps, written out so that reduce16 can follow it
   exactly whatever the compiler).  */
static inline float
hsum512 (__m512 v)
{
  __m256 a = _mm256_add_ps (_mm512_castps512_ps256 (v),
                            _mm256_castpd_ps (_mm512_extractf64x4_pd
                                              (_mm512_castps_pd (v), 1)));
  __m128 b = _mm_add_ps (_mm256_castps256_ps128 (a),
                         _mm256_extractf128_ps (a, 1));
  b = _mm_add_ps (b, _mm_movehl_ps (b, b));
  return _mm_cvtss_f32 (_mm_add_ss (b, _mm_movehdup_ps (b)));
}

/* Lane j of the result: hsum512 (T[j]), the same additions of the same
   lanes, 16 vectors at once by shuffles between them (31 shuffles and
   15 additions where 16 hsum512 take 64 of each): halves of two
   vectors side by side, added, and so on down.  */
static inline __m512
reduce16 (const __m512 *t)
{
  __m512 a[8], b[4], c[2];

  for (int p = 0; p < 8; p++)
    a[p] = _mm512_add_ps (_mm512_shuffle_f32x4 (t[2 * p], t[2 * p + 1], 0x44),
                          _mm512_shuffle_f32x4 (t[2 * p], t[2 * p + 1], 0xee));
  /* 128-bit lane 2e + h of a[p]: lanes 4h .. 4h + 3 of vector 2p + e's
     sums of 8.  */
  for (int p = 0; p < 4; p++)
    b[p] = _mm512_add_ps (_mm512_shuffle_f32x4 (a[2 * p], a[2 * p + 1], 0x88),
                          _mm512_shuffle_f32x4 (a[2 * p], a[2 * p + 1], 0xdd));
  /* 128-bit lane q of b[p]: vector 4p + q's sums of 4.  */
  for (int p = 0; p < 2; p++)
    c[p] = _mm512_add_ps (_mm512_shuffle_ps (b[2 * p], b[2 * p + 1],
                                             _MM_SHUFFLE (1, 0, 1, 0)),
                          _mm512_shuffle_ps (b[2 * p], b[2 * p + 1],
                                             _MM_SHUFFLE (3, 2, 3, 2)));
  /* Lane 4q + 2e + h of c[p]: vector 8p + 4e + q's sum of 2, h.  */
  __m512 r = _mm512_add_ps (_mm512_shuffle_ps (c[0], c[1],
                                               _MM_SHUFFLE (2, 0, 2, 0)),
                            _mm512_shuffle_ps (c[0], c[1],
                                               _MM_SHUFFLE (3, 1, 3, 1)));
  /* Lane 4q + m of r: vector q + 4m.  */
  return _mm512_permutexvar_ps (_mm512_set_epi32 (15, 11, 7, 3, 14, 10, 6, 2,
                                                  13, 9, 5, 1, 12, 8, 4, 0),
                                r);
}

#define VF __m512
#define VF_ZERO() _mm512_setzero_ps ()
#define VF_FMA(a, b, c) _mm512_fmadd_ps (a, b, c)
#define VF_MUL(a, b) _mm512_mul_ps (a, b)
#define VF_ADD(a, b) _mm512_add_ps (a, b)
#define VF_SET1(v) _mm512_set1_ps (v)
#define VF_LOAD(p) _mm512_loadu_ps (p)
#define VF_STORE(p, v) _mm512_storeu_ps (p, v)
#define VF_HSUM(v) hsum512 (v)
#define VF_WIDTH 16
#define LOAD_F16(p) _mm512_cvtph_ps (_mm256_loadu_si256 ((const __m256i *) (p)))
#define LOAD_BF16(p) _mm512_castsi512_ps (_mm512_slli_epi32 \
  (_mm512_cvtepu16_epi32 (_mm256_loadu_si256 ((const __m256i *) (p))), 16))
#define LOAD_I8(p) _mm512_cvtepi32_ps \
  (_mm512_cvtepi8_epi32 (_mm_loadu_si128 ((const __m128i *) (p))))
#define CVT_I8(v) _mm512_cvtepi32_ps (_mm512_cvtepi8_epi32 (v))
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define VF __m256
#define VF_ZERO() _mm256_setzero_ps ()
#define VF_FMA(a, b, c) _mm256_fmadd_ps (a, b, c)
#define VF_MUL(a, b) _mm256_mul_ps (a, b)
#define VF_ADD(a, b) _mm256_add_ps (a, b)
#define VF_SET1(v) _mm256_set1_ps (v)
#define VF_LOAD(p) _mm256_loadu_ps (p)
#define VF_STORE(p, v) _mm256_storeu_ps (p, v)
#define VF_HSUM(v) hsum256 (v)
#define VF_WIDTH 8
#define LOAD_F16(p) _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (p)))
#define LOAD_BF16(p) _mm256_castsi256_ps (_mm256_slli_epi32 \
  (_mm256_cvtepu16_epi32 (_mm_loadu_si128 ((const __m128i *) (p))), 16))
#define LOAD_I8(p) _mm256_cvtepi32_ps \
  (_mm256_cvtepi8_epi32 (_mm_loadl_epi64 ((const __m128i *) (p))))
#define CVT_I8(v) _mm256_cvtepi32_ps (_mm256_cvtepi8_epi32 (v))
#endif

#ifdef VF
/* The f16 / bf16 dot: LOADW widens VF_WIDTH weights.  */
#define DOT_WIDEN(n, x, y, LOADW)                                         \
  do {                                                                    \
    double total_ = 0;                                                    \
    int64_t i_ = 0;                                                       \
    while (i_ + VF_WIDTH <= (n))                                          \
      {                                                                   \
        int64_t end_ = (n) - i_ > DOT_BLOCK_ELEMS ? i_ + DOT_BLOCK_ELEMS  \
                                                  : (n);                  \
        VF s0_ = VF_ZERO (), s1_ = VF_ZERO ();                            \
        for (; i_ + 2 * VF_WIDTH <= end_; i_ += 2 * VF_WIDTH)             \
          {                                                               \
            s0_ = VF_FMA (LOADW ((x) + i_), VF_LOAD ((y) + i_), s0_);     \
            s1_ = VF_FMA (LOADW ((x) + i_ + VF_WIDTH),                    \
                          VF_LOAD ((y) + i_ + VF_WIDTH), s1_);            \
          }                                                               \
        for (; i_ + VF_WIDTH <= end_; i_ += VF_WIDTH)                     \
          s0_ = VF_FMA (LOADW ((x) + i_), VF_LOAD ((y) + i_), s0_);       \
        total_ += VF_HSUM (VF_ADD (s0_, s1_));                            \
      }                                                                   \
    for (; i_ < (n); i_++)                                                \
      total_ += (double) (WIDEN1 ((x)[i_]) * (y)[i_]);                    \
    return (float) total_;                                                \
  } while (0)
#endif

#ifndef VF
/* Without vectors: widen DOT_BLOCK elements of X (f16, or bf16 if
   BF16) at a time, then the f32 dot.  */
static float
dot_widened (int64_t n, const void *x, const float *y, bool bf16)
{
  float buf[DOT_BLOCK];
  double total = 0;

  for (int64_t i = 0; i < n; i += DOT_BLOCK)
    {
      int64_t len = n - i < DOT_BLOCK ? n - i : DOT_BLOCK;
      if (bf16)
        TSR_CPU_LEVEL_FN (row_bf16_to_f32) (len, buf,
                                            (const tsr_bf16_t *) x + i);
      else
        TSR_CPU_LEVEL_FN (row_f16_to_f32) (len, buf,
                                           (const tsr_fp16_t *) x + i);
      total += TSR_CPU_LEVEL_FN (vec_dot_f32) (len, buf, y + i);
    }
  return (float) total;
}
#endif

float
TSR_CPU_LEVEL_FN (vec_dot_f16) (int64_t n, const tsr_fp16_t *x,
                                const float *y)
{
#ifdef VF
#define WIDEN1 fp16_to_f32
  DOT_WIDEN (n, x, y, LOAD_F16);
#undef WIDEN1
#else
  return dot_widened (n, x, y, false);
#endif
}

/* vec_dot_f16 and vec_mad_f16 on NR rows, X widened once: the same
   operations per row in the same order, so the same bits.  */
#ifdef VF
/* The two accumulators of each of NR rows over the whole vectors of X
   [I, END): vectors in pairs, then one more if there is one; where the
   vectors stopped.  */
static inline __attribute__ ((always_inline)) int64_t
dot_f16_rows_block (const tsr_fp16_t *x, int64_t i, int64_t end,
                    const int nr, const float *const *y, VF *s0, VF *s1)
{
  TSR_CPU_UNROLL
  for (int r = 0; r < nr; r++)
    s0[r] = s1[r] = VF_ZERO ();
  for (; i + 2 * VF_WIDTH <= end; i += 2 * VF_WIDTH)
    {
      VF a = LOAD_F16 (x + i), b = LOAD_F16 (x + i + VF_WIDTH);
      TSR_CPU_UNROLL
      for (int r = 0; r < nr; r++)
        {
          s0[r] = VF_FMA (a, VF_LOAD (y[r] + i), s0[r]);
          s1[r] = VF_FMA (b, VF_LOAD (y[r] + i + VF_WIDTH), s1[r]);
        }
    }
  for (; i + VF_WIDTH <= end; i += VF_WIDTH)
    {
      VF a = LOAD_F16 (x + i);
      TSR_CPU_UNROLL
      for (int r = 0; r < nr; r++)
        s0[r] = VF_FMA (a, VF_LOAD (y[r] + i), s0[r]);
    }
  return i;
}

static inline __attribute__ ((always_inline)) void
dot_f16_rows (int64_t n, const tsr_fp16_t *x, const int nr,
              const float *const *y, float *out)
{
  double total[TSR_CPU_F16_ROWS] = { 0 };
  int64_t i = 0;

  while (i + VF_WIDTH <= n)
    {
      int64_t end = n - i > DOT_BLOCK_ELEMS ? i + DOT_BLOCK_ELEMS : n;
      VF s0[TSR_CPU_F16_ROWS], s1[TSR_CPU_F16_ROWS];

      i = dot_f16_rows_block (x, i, end, nr, y, s0, s1);
      TSR_CPU_UNROLL
      for (int r = 0; r < nr; r++)
        total[r] += VF_HSUM (VF_ADD (s0[r], s1[r]));
    }
  for (; i < n; i++)
    {
      float w = fp16_to_f32 (x[i]);
      TSR_CPU_UNROLL
      for (int r = 0; r < nr; r++)
        total[r] += (double) (w * y[r][i]);
    }
  TSR_CPU_UNROLL
  for (int r = 0; r < nr; r++)
    out[r] = (float) total[r];
}

static inline __attribute__ ((always_inline)) void
mad_f16_rows (int64_t n, float *const *y, const int nr, const tsr_fp16_t *x,
              const float *a)
{
  int64_t i = 0;

  for (; i + VF_WIDTH <= n; i += VF_WIDTH)
    {
      VF v = LOAD_F16 (x + i);
      TSR_CPU_UNROLL
      for (int r = 0; r < nr; r++)
        VF_STORE (y[r] + i, VF_FMA (VF_SET1 (a[r]), v, VF_LOAD (y[r] + i)));
    }
  for (; i < n; i++)
    {
      float w = fp16_to_f32 (x[i]);
      TSR_CPU_UNROLL
      for (int r = 0; r < nr; r++)
        y[r][i] += a[r] * w;
    }
}
#endif

void
TSR_CPU_LEVEL_FN (vec_dot_f16_rows) (int64_t n, const tsr_fp16_t *x, int nr,
                                     const float *const *y, float *out)
{
#ifdef VF
  switch (nr)
    {
    case 1: dot_f16_rows (n, x, 1, y, out); break;
    case 2: dot_f16_rows (n, x, 2, y, out); break;
    case 3: dot_f16_rows (n, x, 3, y, out); break;
    default: dot_f16_rows (n, x, 4, y, out); break;
    }
#else
  for (int r = 0; r < nr; r++)
    out[r] = dot_widened (n, x, y[r], false);
#endif
}

void
TSR_CPU_LEVEL_FN (vec_mad_f16_rows) (int64_t n, float *const *y, int nr,
                                     const tsr_fp16_t *x, const float *a)
{
#ifdef VF
  switch (nr)
    {
    case 1: mad_f16_rows (n, y, 1, x, a); break;
    case 2: mad_f16_rows (n, y, 2, x, a); break;
    case 3: mad_f16_rows (n, y, 3, x, a); break;
    default: mad_f16_rows (n, y, 4, x, a); break;
    }
#else
  for (int r = 0; r < nr; r++)
    TSR_CPU_LEVEL_FN (vec_mad_f16) (n, y[r], x, a[r]);
#endif
}

/* The key lists of attention: the f16 rows at X + IDX[j] XS bytes, j <
   NK.  Dots: row j with each of the NR rows Y, OUT[r][j], each as
   vec_dot_f16_rows computes it.  Sums: Y[r] += A[r][j] row j for every
   j in order whose A[r][j] is not 0, element by element the operations
   vec_mad_f16_rows takes for one row j after another, with the
   accumulators held in registers over the keys a vector of elements at
   a time.  */
#define KEY_ROW(x, xs, idx, j) \
  ((const tsr_fp16_t *) ((x) + (size_t) (idx)[j] * (xs)))
/* The rows of a cache's key list lie apart (one sequence's cells among
   the others', heads between them), where the hardware prefetchers do
   not follow: each row is asked for KEYS_AHEAD keys before it is used,
   the first ones on entry.  Decode steps of 8 and 32 sequences of a 1B
   model (Q4_K_M, prompts of 128, two Zen 5 cores): 27.1-28.3 ->
   25.5-26.4 ms and 102.0-104.7 -> 96.1-96.7 ms; the two functions'
   share of the step 13.9 -> 9.9%.  */
#define KEYS_AHEAD 16

static inline __attribute__ ((always_inline)) void
prefetch_key (const char *x, size_t xs, const int32_t *idx, int j, int nk,
              int64_t n)
{
#if defined(__SSE__)
  if (j < nk)
    for (int64_t o = 0; o < n * (int64_t) sizeof (tsr_fp16_t); o += 64)
      _mm_prefetch ((const char *) KEY_ROW (x, xs, idx, j) + o, _MM_HINT_T0);
#else
  (void) x, (void) xs, (void) idx, (void) j, (void) nk, (void) n;
#endif
}
#ifdef VF
static inline __attribute__ ((always_inline)) void
dot_f16_keys (int64_t n, const char *x, size_t xs, const int32_t *idx,
              int nk, const int nr, const float *const *y, float *const *out)
{
#if defined(__AVX512F__)
  /* Rows of whole vectors in one block (a head of 64 or 128): 16 keys
     at a time, each row's sums of the 16 reduced together (reduce16)
     instead of one horizontal sum a key and row, the same additions as
     dot_f16_rows: its s0 + s1, summed as hsum512 sums (this function's
     share of an 8-sequence decode step of a 1B model, 9.0 -> 7.4%).  */
  if (n % VF_WIDTH == 0 && n <= DOT_BLOCK_ELEMS)
    {
      for (int j = 0; j < KEYS_AHEAD; j++)
        prefetch_key (x, xs, idx, j, nk, n);
      for (int j0 = 0; j0 < nk; j0 += 16)
        {
          __m512 t[TSR_CPU_F16_ROWS][16];
          for (int j = 0; j < 16; j++)
            {
              VF s0[TSR_CPU_F16_ROWS], s1[TSR_CPU_F16_ROWS];
              prefetch_key (x, xs, idx, j0 + j + KEYS_AHEAD, nk, n);
              /* Past the list: zeros, whose sums are not stored.  */
              dot_f16_rows_block (KEY_ROW (x, xs, idx, j0 + j < nk
                                                     ? j0 + j : 0),
                                  0, j0 + j < nk ? n : 0, nr, y, s0, s1);
              TSR_CPU_UNROLL
              for (int r = 0; r < nr; r++)
                t[r][j] = VF_ADD (s0[r], s1[r]);
            }
          const int m = nk - j0 < 16 ? nk - j0 : 16;
          TSR_CPU_UNROLL
          for (int r = 0; r < nr; r++)
            _mm512_mask_storeu_ps (out[r] + j0, (__mmask16) ((1u << m) - 1),
                                   reduce16 (t[r]));
        }
      return;
    }
#endif
  for (int j = 0; j < KEYS_AHEAD; j++)
    prefetch_key (x, xs, idx, j, nk, n);
  for (int j = 0; j < nk; j++)
    {
      float d[TSR_CPU_F16_ROWS];
      prefetch_key (x, xs, idx, j + KEYS_AHEAD, nk, n);
      dot_f16_rows (n, KEY_ROW (x, xs, idx, j), nr, y, d);
      TSR_CPU_UNROLL
      for (int r = 0; r < nr; r++)
        out[r][j] = d[r];
    }
}

static inline __attribute__ ((always_inline)) void
mad_f16_keys (int64_t n, float *const *y, const int nr, const char *x,
              size_t xs, const int32_t *idx, int nk, const float *const *a)
{
  int64_t i = 0;

  for (int j = 0; j < KEYS_AHEAD; j++)
    prefetch_key (x, xs, idx, j, nk, n);
  for (; i + VF_WIDTH <= n; i += VF_WIDTH)
    {
      VF acc[TSR_CPU_F16_ROWS];
      TSR_CPU_UNROLL
      for (int r = 0; r < nr; r++)
        acc[r] = VF_LOAD (y[r] + i);
      for (int j = 0; j < nk; j++)
        {
          /* The rows' first pass: asked for ahead (then in L1).  */
          if (i == 0)
            prefetch_key (x, xs, idx, j + KEYS_AHEAD, nk, n);
          VF v = LOAD_F16 (KEY_ROW (x, xs, idx, j) + i);
          TSR_CPU_UNROLL
          for (int r = 0; r < nr; r++)
            if (a[r][j] != 0)
              acc[r] = VF_FMA (VF_SET1 (a[r][j]), v, acc[r]);
        }
      TSR_CPU_UNROLL
      for (int r = 0; r < nr; r++)
        VF_STORE (y[r] + i, acc[r]);
    }
  for (int j = 0; i < n && j < nk; j++)
    for (int64_t e = i; e < n; e++)
      {
        float w = fp16_to_f32 (KEY_ROW (x, xs, idx, j)[e]);
        TSR_CPU_UNROLL
        for (int r = 0; r < nr; r++)
          if (a[r][j] != 0)
            y[r][e] += a[r][j] * w;
      }
}
#endif

void
TSR_CPU_LEVEL_FN (vec_dot_f16_keys) (int64_t n, const char *x, size_t xs,
                                     const int32_t *idx, int nk, int nr,
                                     const float *const *y, float *const *out)
{
#ifdef VF
  switch (nr)
    {
    case 1: dot_f16_keys (n, x, xs, idx, nk, 1, y, out); break;
    case 2: dot_f16_keys (n, x, xs, idx, nk, 2, y, out); break;
    case 3: dot_f16_keys (n, x, xs, idx, nk, 3, y, out); break;
    default: dot_f16_keys (n, x, xs, idx, nk, 4, y, out); break;
    }
#else
  for (int j = 0; j < nk; j++)
    for (int r = 0; r < nr; r++)
      out[r][j] = dot_widened (n, KEY_ROW (x, xs, idx, j), y[r], false);
#endif
}

void
TSR_CPU_LEVEL_FN (vec_mad_f16_keys) (int64_t n, float *const *y, int nr,
                                     const char *x, size_t xs,
                                     const int32_t *idx, int nk,
                                     const float *const *a)
{
#ifdef VF
  switch (nr)
    {
    case 1: mad_f16_keys (n, y, 1, x, xs, idx, nk, a); break;
    case 2: mad_f16_keys (n, y, 2, x, xs, idx, nk, a); break;
    case 3: mad_f16_keys (n, y, 3, x, xs, idx, nk, a); break;
    default: mad_f16_keys (n, y, 4, x, xs, idx, nk, a); break;
    }
#else
  for (int j = 0; j < nk; j++)
    for (int r = 0; r < nr; r++)
      if (a[r][j] != 0)
        TSR_CPU_LEVEL_FN (vec_mad_f16) (n, y[r], KEY_ROW (x, xs, idx, j),
                                        a[r][j]);
#endif
}
#undef KEY_ROW

static inline float
bf16_to_f32 (tsr_bf16_t h)
{
  return bits_to_f32 ((uint32_t) h << 16);
}

/* vec_dot_tile: MR weight rows by NC activation rows in registers.
   Per (row, column) the sums run as in the single dots (float lanes,
   moved to double every DOT_BLOCK_ELEMS elements), with one accumulator
   instead of two, so the results agree with them up to the order of the
   float additions.  */
#ifdef VF
#if VF_WIDTH == 16
#define TILE_MR 4               /* 24 accumulators of 32 registers */
#define TILE_NC 6
#else
#define TILE_MR 2               /* 8 of 16 */
#define TILE_NC 4
#endif
#define OUT_NC TSR_CPU_DOT_TILE_NC

#define W1_F32(v) (v)
#define DEFINE_DOT_TILE(NAME, T, LOADW, WIDEN1)                           \
  static inline __attribute__ ((always_inline)) void                      \
  NAME (int64_t n, const T *const *x, const int mr, const float *const *y,\
        const int nc, float *out)                                         \
  {                                                                       \
    double total[TILE_MR][TILE_NC] = { { 0 } };                           \
    int64_t i = 0;                                                        \
    while (i + VF_WIDTH <= n)                                             \
      {                                                                   \
        int64_t end = n - i > DOT_BLOCK_ELEMS ? i + DOT_BLOCK_ELEMS : n;  \
        VF s[TILE_MR][TILE_NC];                                           \
        TSR_CPU_UNROLL                                                    \
        for (int r = 0; r < mr; r++)                                      \
          {                                                               \
            TSR_CPU_UNROLL                                                \
            for (int c = 0; c < nc; c++)                                  \
              s[r][c] = VF_ZERO ();                                       \
          }                                                               \
        for (; i + VF_WIDTH <= end; i += VF_WIDTH)                        \
          {                                                               \
            VF w[TILE_MR];                                                \
            TSR_CPU_UNROLL                                                \
            for (int r = 0; r < mr; r++)                                  \
              w[r] = LOADW (x[r] + i);                                    \
            TSR_CPU_UNROLL                                                \
            for (int c = 0; c < nc; c++)                                  \
              {                                                           \
                VF a = VF_LOAD (y[c] + i);                                \
                TSR_CPU_UNROLL                                            \
                for (int r = 0; r < mr; r++)                              \
                  s[r][c] = VF_FMA (w[r], a, s[r][c]);                    \
              }                                                           \
          }                                                               \
        TSR_CPU_UNROLL                                                    \
        for (int r = 0; r < mr; r++)                                      \
          {                                                               \
            TSR_CPU_UNROLL                                                \
            for (int c = 0; c < nc; c++)                                  \
              total[r][c] += VF_HSUM (s[r][c]);                           \
          }                                                               \
      }                                                                   \
    for (; i < n; i++)                                                    \
      for (int r = 0; r < mr; r++)                                        \
        {                                                                 \
          float w = WIDEN1 (x[r][i]);                                     \
          for (int c = 0; c < nc; c++)                                    \
            total[r][c] += (double) (w * y[c][i]);                        \
        }                                                                 \
    for (int r = 0; r < mr; r++)                                          \
      for (int c = 0; c < nc; c++)                                        \
        out[r * OUT_NC + c] = (float) total[r][c];                        \
  }

DEFINE_DOT_TILE (dot_tile_f32, float, VF_LOAD, W1_F32)
DEFINE_DOT_TILE (dot_tile_f16, tsr_fp16_t, LOAD_F16, fp16_to_f32)
DEFINE_DOT_TILE (dot_tile_bf16, tsr_bf16_t, LOAD_BF16, bf16_to_f32)

/* Rows of X in groups of TILE_MR, columns in groups of at most TILE_NC,
   each full tile with constant sizes.  */
#define DOT_TILE_SWITCH(FN, X, MR, Y, NC, O)                              \
  switch (NC)                                                             \
    {                                                                     \
    case 1: FN (n, X, MR, Y, 1, O); break;                                \
    case 2: FN (n, X, MR, Y, 2, O); break;                                \
    case 3: FN (n, X, MR, Y, 3, O); break;                                \
    DOT_TILE_CASES_5_6 (FN, X, MR, Y, O)                                  \
    default: FN (n, X, MR, Y, 4, O);                                      \
    }
#if TILE_NC == 6
#define DOT_TILE_CASES_5_6(FN, X, MR, Y, O)                               \
    case 5: FN (n, X, MR, Y, 5, O); break;                                \
    case 6: FN (n, X, MR, Y, 6, O); break;
#else
#define DOT_TILE_CASES_5_6(FN, X, MR, Y, O)
#endif
#define DOT_TILE_CALL(FN, T)                                              \
  do                                                                      \
    {                                                                     \
      const T *const *xt = (const T *const *) x;                          \
      for (int c = 0; c < nc; c += TILE_NC)                               \
        {                                                                 \
          int w = nc - c < TILE_NC ? nc - c : TILE_NC;                    \
          const float *const *yc = y + c;                                 \
          for (int r = 0; r < mr; r += TILE_MR)                           \
            {                                                             \
              int k = mr - r < TILE_MR ? mr - r : TILE_MR;                \
              float *o = out + r * OUT_NC + c;                            \
              if (k == TILE_MR)                                           \
                DOT_TILE_SWITCH (FN, xt + r, TILE_MR, yc, w, o)           \
              else                                                        \
                for (int q = 0; q < k; q++)                               \
                  DOT_TILE_SWITCH (FN, xt + r + q, 1, yc, w,              \
                                   o + q * OUT_NC)                        \
            }                                                             \
        }                                                                 \
    }                                                                     \
  while (0)
#endif

void
TSR_CPU_LEVEL_FN (vec_dot_tile) (int64_t n, tsr_type type, int mr,
                                 const void *const *x, int nc,
                                 const float *const *y, float *out)
{
#ifdef VF
  switch (type)
    {
    case TSR_TYPE_F16: DOT_TILE_CALL (dot_tile_f16, tsr_fp16_t); break;
    case TSR_TYPE_BF16: DOT_TILE_CALL (dot_tile_bf16, tsr_bf16_t); break;
    default: DOT_TILE_CALL (dot_tile_f32, float); break;
    }
#else
  for (int r = 0; r < mr; r++)
    for (int c = 0; c < nc; c++)
      out[r * TSR_CPU_DOT_TILE_NC + c]
        = type == TSR_TYPE_F16
          ? TSR_CPU_LEVEL_FN (vec_dot_f16) (n, x[r], y[c])
          : type == TSR_TYPE_BF16
          ? TSR_CPU_LEVEL_FN (vec_dot_bf16) (n, x[r], y[c])
          : TSR_CPU_LEVEL_FN (vec_dot_f32) (n, x[r], y[c]);
#endif
}

float
TSR_CPU_LEVEL_FN (vec_dot_bf16) (int64_t n, const tsr_bf16_t *x,
                                 const float *y)
{
#ifdef VF
#define WIDEN1 bf16_to_f32
  DOT_WIDEN (n, x, y, LOAD_BF16);
#undef WIDEN1
#else
  return dot_widened (n, x, y, true);
#endif
}

/* Blocks per double partial sum in the quantized dots.  */
#define DOT_QBLOCKS 64

float
TSR_CPU_LEVEL_FN (vec_dot_q8_0) (int64_t n, const void *x, const float *y)
{
  const struct tsr_block_q8_0 *b = x;
  const int64_t nb = n / TSR_QK8_0;
  double total = 0;

  for (int64_t i = 0; i < nb; i += DOT_QBLOCKS)
    {
      int64_t end = nb - i < DOT_QBLOCKS ? nb : i + DOT_QBLOCKS;
#ifdef VF
      VF acc0 = VF_ZERO (), acc1 = VF_ZERO ();
      for (int64_t j = i; j < end; j++)
        {
          const float *yb = y + j * TSR_QK8_0;
          VF s = VF_ZERO ();
          for (int l = 0; l < TSR_QK8_0; l += VF_WIDTH)
            s = VF_FMA (LOAD_I8 (b[j].qs + l), VF_LOAD (yb + l), s);
          if (j & 1)
            acc1 = VF_FMA (VF_SET1 (fp16_to_f32 (b[j].d)), s, acc1);
          else
            acc0 = VF_FMA (VF_SET1 (fp16_to_f32 (b[j].d)), s, acc0);
        }
      total += VF_HSUM (VF_ADD (acc0, acc1));
#else
      float part = 0;
      for (int64_t j = i; j < end; j++)
        {
          const float *yb = y + j * TSR_QK8_0;
          float s[4] = { 0 };
          for (int l = 0; l < TSR_QK8_0; l += 4)
            for (int u = 0; u < 4; u++)
              s[u] += (float) b[j].qs[l + u] * yb[l + u];
          part += fp16_to_f32 (b[j].d) * ((s[0] + s[1]) + (s[2] + s[3]));
        }
      total += part;
#endif
    }
  return (float) total;
}

float
TSR_CPU_LEVEL_FN (vec_dot_q4_0) (int64_t n, const void *x, const float *y)
{
  const struct tsr_block_q4_0 *b = x;
  const int64_t nb = n / TSR_QK4_0;
  const int half = TSR_QK4_0 / 2;
  double total = 0;

  for (int64_t i = 0; i < nb; i += DOT_QBLOCKS)
    {
      int64_t end = nb - i < DOT_QBLOCKS ? nb : i + DOT_QBLOCKS;
#if defined(VF)
      const __m128i low = _mm_set1_epi8 (0x0f), eight = _mm_set1_epi8 (8);
      VF acc0 = VF_ZERO (), acc1 = VF_ZERO ();
      for (int64_t j = i; j < end; j++)
        {
          const float *yb = y + j * TSR_QK4_0;
          __m128i q = _mm_loadu_si128 ((const __m128i *) b[j].qs);
          __m128i lo = _mm_sub_epi8 (_mm_and_si128 (q, low), eight);
          __m128i hi = _mm_sub_epi8 (_mm_and_si128 (_mm_srli_epi16 (q, 4),
                                                    low), eight);
          VF s = VF_MUL (CVT_I8 (lo), VF_LOAD (yb));
          s = VF_FMA (CVT_I8 (hi), VF_LOAD (yb + half), s);
#if VF_WIDTH == 8
          s = VF_FMA (CVT_I8 (_mm_srli_si128 (lo, 8)), VF_LOAD (yb + 8), s);
          s = VF_FMA (CVT_I8 (_mm_srli_si128 (hi, 8)),
                      VF_LOAD (yb + half + 8), s);
#endif
          if (j & 1)
            acc1 = VF_FMA (VF_SET1 (fp16_to_f32 (b[j].d)), s, acc1);
          else
            acc0 = VF_FMA (VF_SET1 (fp16_to_f32 (b[j].d)), s, acc0);
        }
      total += VF_HSUM (VF_ADD (acc0, acc1));
#else
      float part = 0;
      for (int64_t j = i; j < end; j++)
        {
          const float *yb = y + j * TSR_QK4_0;
          float s[4] = { 0 };
          for (int l = 0; l < half; l += 2)
            {
              s[0] += (float) ((b[j].qs[l] & 0x0f) - 8) * yb[l];
              s[1] += (float) ((b[j].qs[l + 1] & 0x0f) - 8) * yb[l + 1];
              s[2] += (float) ((b[j].qs[l] >> 4) - 8) * yb[l + half];
              s[3] += (float) ((b[j].qs[l + 1] >> 4) - 8) * yb[l + half + 1];
            }
          part += fp16_to_f32 (b[j].d) * ((s[0] + s[1]) + (s[2] + s[3]));
        }
      total += part;
#endif
    }
  return (float) total;
}

/* Quantized rows to f32: d * q, one rounding, as tsr_dequantize_row.  */
void
TSR_CPU_LEVEL_FN (row_q8_0_to_f32) (int64_t n, float *y, const void *x)
{
  const struct tsr_block_q8_0 *b = x;

  for (int64_t j = 0; j < n / TSR_QK8_0; j++, y += TSR_QK8_0)
    {
      float d = fp16_to_f32 (b[j].d);
#if defined(VF)
      for (int l = 0; l < TSR_QK8_0; l += VF_WIDTH)
        VF_STORE (y + l, VF_MUL (VF_SET1 (d), LOAD_I8 (b[j].qs + l)));
#else
      for (int l = 0; l < TSR_QK8_0; l++)
        y[l] = d * (float) b[j].qs[l];
#endif
    }
}

void
TSR_CPU_LEVEL_FN (row_q4_0_to_f32) (int64_t n, float *y, const void *x)
{
  const struct tsr_block_q4_0 *b = x;
  const int half = TSR_QK4_0 / 2;

  for (int64_t j = 0; j < n / TSR_QK4_0; j++, y += TSR_QK4_0)
    {
      float d = fp16_to_f32 (b[j].d);
#if defined(VF) && VF_WIDTH == 16
      const __m128i low = _mm_set1_epi8 (0x0f), eight = _mm_set1_epi8 (8);
      __m128i q = _mm_loadu_si128 ((const __m128i *) b[j].qs);
      __m128i lo = _mm_sub_epi8 (_mm_and_si128 (q, low), eight);
      __m128i hi = _mm_sub_epi8 (_mm_and_si128 (_mm_srli_epi16 (q, 4), low),
                                 eight);
      _mm512_storeu_ps (y, VF_MUL (VF_SET1 (d), CVT_I8 (lo)));
      _mm512_storeu_ps (y + half, VF_MUL (VF_SET1 (d), CVT_I8 (hi)));
#elif defined(VF) && VF_WIDTH == 8
      /* The plain loop below, vectorized by the compiler, read the
         nibbles byte by byte: six times slower than this.  */
      const __m128i low = _mm_set1_epi8 (0x0f), eight = _mm_set1_epi8 (8);
      __m128i q = _mm_loadu_si128 ((const __m128i *) b[j].qs);
      __m128i lo = _mm_sub_epi8 (_mm_and_si128 (q, low), eight);
      __m128i hi = _mm_sub_epi8 (_mm_and_si128 (_mm_srli_epi16 (q, 4), low),
                                 eight);
      VF_STORE (y, VF_MUL (VF_SET1 (d), CVT_I8 (lo)));
      VF_STORE (y + 8, VF_MUL (VF_SET1 (d), CVT_I8 (_mm_srli_si128 (lo, 8))));
      VF_STORE (y + half, VF_MUL (VF_SET1 (d), CVT_I8 (hi)));
      VF_STORE (y + half + 8, VF_MUL (VF_SET1 (d),
                                      CVT_I8 (_mm_srli_si128 (hi, 8))));
#else
      for (int l = 0; l < half; l++)
        {
          y[l] = d * (float) ((b[j].qs[l] & 0x0f) - 8);
          y[l + half] = d * (float) ((b[j].qs[l] >> 4) - 8);
        }
#endif
    }
}

/* Row loops of norms and soft_max.  Each has a plain C version (the
   reference and the baseline) and vector versions where VF is.  */
double
TSR_CPU_LEVEL_FN (vec_sumsq_f32) (int64_t n, const float *x, double c)
{
  double acc[4] = { 0 };
  int64_t i = 0;

#if defined(__AVX512F__)
  /* The same sums in double, eight lanes at a time.  */
  __m512d v0 = _mm512_setzero_pd (), v1 = v0, vc = _mm512_set1_pd (c);
  for (; i + 16 <= n; i += 16)
    {
      __m512d d0 = _mm512_sub_pd (_mm512_cvtps_pd (_mm256_loadu_ps (x + i)),
                                  vc);
      __m512d d1 = _mm512_sub_pd (_mm512_cvtps_pd
                                  (_mm256_loadu_ps (x + i + 8)), vc);
      v0 = _mm512_fmadd_pd (d0, d0, v0);
      v1 = _mm512_fmadd_pd (d1, d1, v1);
    }
  acc[0] = _mm512_reduce_add_pd (_mm512_add_pd (v0, v1));
#endif

  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; l++)
      {
        double d = x[i + l] - c;
        acc[l] += d * d;
      }
  for (; i < n; i++)
    {
      double d = x[i] - c;
      acc[0] += d * d;
    }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

void
TSR_CPU_LEVEL_FN (vec_scale_f32) (int64_t n, float *y, const float *x, float s)
{
  int64_t i = 0;

#ifdef VF
  for (; i + VF_WIDTH <= n; i += VF_WIDTH)
    VF_STORE (y + i, VF_MUL (VF_LOAD (x + i), VF_SET1 (s)));
#endif
  for (; i < n; i++)
    y[i] = x[i] * s;
}

void
TSR_CPU_LEVEL_FN (vec_mad_f32) (int64_t n, float *y, const float *x, float a)
{
  int64_t i = 0;

#ifdef VF
  for (; i + VF_WIDTH <= n; i += VF_WIDTH)
    VF_STORE (y + i, VF_FMA (VF_SET1 (a), VF_LOAD (x + i), VF_LOAD (y + i)));
#endif
  for (; i < n; i++)
    y[i] += a * x[i];
}

void
TSR_CPU_LEVEL_FN (vec_mad_f16) (int64_t n, float *y, const tsr_fp16_t *x,
                                float a)
{
  int64_t i = 0;

#ifdef VF
  for (; i + VF_WIDTH <= n; i += VF_WIDTH)
    VF_STORE (y + i, VF_FMA (VF_SET1 (a), LOAD_F16 (x + i), VF_LOAD (y + i)));
#endif
  for (; i < n; i++)
    y[i] += a * fp16_to_f32 (x[i]);
}

float
TSR_CPU_LEVEL_FN (vec_max_f32) (int64_t n, const float *x)
{
  float m = -INFINITY;
  int64_t i = 0;

#if defined(__AVX512F__)
  /* max_ps (x, acc) gives acc where x is NaN: NaNs are skipped.  */
  __m512 vm = _mm512_set1_ps (-INFINITY);
  for (; i + 16 <= n; i += 16)
    vm = _mm512_max_ps (_mm512_loadu_ps (x + i), vm);
  m = _mm512_reduce_max_ps (vm);
#elif defined(__AVX2__)
  __m256 vm = _mm256_set1_ps (-INFINITY);
  for (; i + 8 <= n; i += 8)
    vm = _mm256_max_ps (_mm256_loadu_ps (x + i), vm);
  {
    float t[8];
    _mm256_storeu_ps (t, vm);
    for (int l = 0; l < 8; l++)
      m = t[l] > m ? t[l] : m;
  }
#endif
  for (; i < n; i++)
    m = x[i] > m ? x[i] : m;
  return m;
}

#ifdef VF
/* exp (x) for x <= 0 (soft_max's x - max), relative error about 2e-7:
   x = k ln 2 + r, |r| <= ln 2 / 2, exp (r) by its degree-6 Taylor
   polynomial (remainder below 1.2e-7), times 2^k.  Inputs below -87
   give 0 with AVX2 (exp (-87) ~ 1.6e-38), AVX-512 goes on to the
   subnormals; -inf gives exactly 0, NaN stays NaN.  */
static inline VF
exp_neg (VF x)
{
#if defined(__AVX512F__)
  x = _mm512_max_ps (_mm512_set1_ps (-104.0f), x);
  VF k = _mm512_roundscale_ps (VF_MUL (x, VF_SET1 (1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
  /* Lanes below -87 (and -inf) become exactly 0.  */
  __m256 keep = _mm256_cmp_ps (x, _mm256_set1_ps (-87.0f), _CMP_NLT_UQ);
  x = _mm256_max_ps (_mm256_set1_ps (-87.0f), x);
  VF k = _mm256_round_ps (VF_MUL (x, VF_SET1 (1.44269504088896341f)),
                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#endif
  VF r = VF_FMA (k, VF_SET1 (-0.693145751953125f), x);
  r = VF_FMA (k, VF_SET1 (-1.428606765330187045e-06f), r);
  VF p = VF_SET1 (1.0f / 720.0f);
  p = VF_FMA (p, r, VF_SET1 (1.0f / 120.0f));
  p = VF_FMA (p, r, VF_SET1 (1.0f / 24.0f));
  p = VF_FMA (p, r, VF_SET1 (1.0f / 6.0f));
  p = VF_FMA (p, r, VF_SET1 (0.5f));
  p = VF_FMA (p, r, VF_SET1 (1.0f));
  p = VF_FMA (p, r, VF_SET1 (1.0f));
#if defined(__AVX512F__)
  return _mm512_scalef_ps (p, k);
#else
  __m256i e = _mm256_slli_epi32 (_mm256_add_epi32 (_mm256_cvtps_epi32 (k),
                                                   _mm256_set1_epi32 (127)),
                                 23);
  return _mm256_and_ps (_mm256_mul_ps (p, _mm256_castsi256_ps (e)), keep);
#endif
}

/* V sigmoid (U) = V / (1 + exp (-U)), with e = exp (-|U|) (in exp_neg's
   range, never overflowing): V / (1 + e) for U >= 0, V e / (1 + e)
   below.  silu is V = U; gelu's tanh form is U = 2 sqrt (2 / pi) (x +
   0.044715 x^3).  */
static inline VF
mul_sigmoid (VF v, VF u)
{
#if defined(__AVX512F__)
  VF e = exp_neg (_mm512_castsi512_ps
                  (_mm512_or_si512 (_mm512_castps_si512 (u),
                                    _mm512_set1_epi32 (INT32_MIN))));
  VF num = _mm512_mask_mul_ps (v, _mm512_cmp_ps_mask (u, VF_ZERO (),
                                                      _CMP_LT_OQ), v, e);
  return _mm512_div_ps (num, VF_ADD (e, VF_SET1 (1.0f)));
#else
  VF e = exp_neg (_mm256_or_ps (u, _mm256_set1_ps (-0.0f)));
  VF num = _mm256_blendv_ps (v, VF_MUL (v, e),
                             _mm256_cmp_ps (u, VF_ZERO (), _CMP_LT_OQ));
  return _mm256_div_ps (num, VF_ADD (e, VF_SET1 (1.0f)));
#endif
}
#endif

/* silu (x) = x / (1 + exp (-x)), with e = exp (-|x|) (in exp_neg's
   range, never overflowing): x / (1 + e) for x >= 0, x e / (1 + e)
   below.  Relative error a few 1e-7; NaN stays NaN, silu (inf) = inf
   and silu (-inf) is NaN, as the plain C loop gives.  One libm expf per
   element made swiglu ~3% of a generated token.  */
void
TSR_CPU_LEVEL_FN (vec_silu_f32) (int64_t n, float *y, const float *x)
{
  int64_t i = 0;

#ifdef VF
  for (; i + VF_WIDTH <= n; i += VF_WIDTH)
    {
      VF v = VF_LOAD (x + i);
      VF_STORE (y + i, mul_sigmoid (v, v));
    }
#endif
  for (; i < n; i++)
    y[i] = x[i] / (1.0f + expf (-x[i]));
}

/* GELU, tanh form: 0.5 x (1 + tanh u), u = sqrt (2 / pi) (x + 0.044715
   x^3), computed as x sigmoid (2u) (mul_sigmoid, as silu).  The same
   function (relative error a few 1e-7); tanhf per element made Gemma's
   GeGLU 15% of a generated token.  */
void
TSR_CPU_LEVEL_FN (vec_gelu_f32) (int64_t n, float *y, const float *x)
{
  const float sqrt_2_over_pi = 0.79788456080286535588f;
  const float coef = 0.044715f;
  int64_t i = 0;

#ifdef VF
  for (; i + VF_WIDTH <= n; i += VF_WIDTH)
    {
      VF v = VF_LOAD (x + i);
      VF u = VF_MUL (VF_SET1 (2.0f * sqrt_2_over_pi),
                     VF_FMA (VF_MUL (VF_SET1 (coef), v), VF_MUL (v, v), v));
      VF_STORE (y + i, mul_sigmoid (v, u));
    }
#endif
  for (; i < n; i++)
    {
      float v = x[i];
      y[i] = 0.5f * v * (1.0f + tanhf (sqrt_2_over_pi
                                       * (v + coef * v * v * v)));
    }
}

/* tanh: for |x| >= 0.3, (1 - e) / (1 + e) with e = exp (-2 |x|) and
   x's sign; below, the odd Taylor series through x^11 (the next term is
   below 3e-9 of the result).  Relative error a few 1e-7; tanh (+-inf)
   = +-1, NaN stays NaN, -0 stays -0.  tanhf per element made the
   soft-capped scores of Gemma 2 a quarter of a generated token.  */
void
TSR_CPU_LEVEL_FN (vec_tanh_f32) (int64_t n, float *y, const float *x)
{
  int64_t i = 0;

#ifdef VF
  for (; i + VF_WIDTH <= n; i += VF_WIDTH)
    {
      VF v = VF_LOAD (x + i);
      VF x2 = VF_MUL (v, v);
      VF p = VF_SET1 (-1382.0f / 155925.0f);
      p = VF_FMA (p, x2, VF_SET1 (62.0f / 2835.0f));
      p = VF_FMA (p, x2, VF_SET1 (-17.0f / 315.0f));
      p = VF_FMA (p, x2, VF_SET1 (2.0f / 15.0f));
      p = VF_FMA (p, x2, VF_SET1 (-1.0f / 3.0f));
      VF small = VF_FMA (VF_MUL (v, x2), p, v);
#if defined(__AVX512F__)
      VF a = _mm512_abs_ps (v);
      VF e = exp_neg (VF_MUL (VF_SET1 (-2.0f), a));
      VF big = _mm512_div_ps (_mm512_sub_ps (VF_SET1 (1.0f), e),
                              VF_ADD (VF_SET1 (1.0f), e));
      big = _mm512_castsi512_ps
              (_mm512_or_si512 (_mm512_castps_si512 (big),
                                _mm512_and_si512 (_mm512_castps_si512 (v),
                                                  _mm512_set1_epi32
                                                    (INT32_MIN))));
      VF_STORE (y + i, _mm512_mask_blend_ps
                         (_mm512_cmp_ps_mask (a, VF_SET1 (0.3f),
                                              _CMP_LT_OQ), big, small));
#else
      const __m256 sign = _mm256_set1_ps (-0.0f);
      VF a = _mm256_andnot_ps (sign, v);
      VF e = exp_neg (VF_MUL (VF_SET1 (-2.0f), a));
      VF big = _mm256_div_ps (_mm256_sub_ps (VF_SET1 (1.0f), e),
                              VF_ADD (VF_SET1 (1.0f), e));
      big = _mm256_or_ps (big, _mm256_and_ps (sign, v));
      VF_STORE (y + i, _mm256_blendv_ps (big, small,
                                         _mm256_cmp_ps (a, VF_SET1 (0.3f),
                                                        _CMP_LT_OQ)));
#endif
    }
#endif
  for (; i < n; i++)
    y[i] = tanhf (x[i]);
}

double
TSR_CPU_LEVEL_FN (vec_exp_sub_f32) (int64_t n, float *y, const float *x, float m)
{
  double sum = 0;
  int64_t i = 0;

#ifdef VF
  /* Partial sums in float for at most DOT_BLOCK elements per lane.  */
  while (i + VF_WIDTH <= n)
    {
      int64_t end = n - i > DOT_BLOCK * VF_WIDTH ? i + DOT_BLOCK * VF_WIDTH
                                                 : n;
      VF acc = VF_ZERO ();
      for (; i + VF_WIDTH <= end; i += VF_WIDTH)
        {
          VF e = exp_neg (VF_ADD (VF_LOAD (x + i), VF_SET1 (-m)));
          VF_STORE (y + i, e);
          acc = VF_ADD (acc, e);
        }
      sum += VF_HSUM (acc);
    }
#endif
  for (; i < n; i++)
    {
      y[i] = expf (x[i] - m);
      sum += y[i];
    }
  return sum;
}
