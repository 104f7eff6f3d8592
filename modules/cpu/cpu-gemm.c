/* cpu-gemm.c - the f32 GEMM micro-kernel and its packing, compiled once
 * per ISA level (see cpu-vec.c for how).
 *
 * mul_mat's large products (cpu-ops-matmul.c) are computed BLIS-style:
 * the weights are packed, NR rows at a time, into panels holding for
 * each k index the NR row values side by side (a[l * NR + i]); the
 * activations, MR rows at a time, into panels b[l * MR + j].  The
 * micro-kernel keeps an MR x NR block of the result in vector registers
 * over a run of k, reading one vector row of a and MR broadcasts of b
 * per k index.  The shape is chosen per level to fill the registers:
 * 12 x 32 with AVX-512 (24 of 32 zmm accumulate), 6 x 16 with AVX2 (12
 * of 16 ymm), 4 x 8 in plain C elsewhere.  */
#include <config.h>

#include <string.h>

#include "cpu-vec.h"
#include "cpu-level.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
#define MR 12
#define NR 32
#elif defined(__AVX2__) && defined(__FMA__)
#define MR 6
#define NR 16
#else
#define MR 4
#define NR 8
#endif

void
TSR_CPU_LEVEL_FN (gemm_shape) (int *mr, int *nr)
{
  *mr = MR;
  *nr = NR;
}

/* Pack ROWS (at most PER) rows of KC floats, row r at SRC + r * LDS,
   as DST[l * PER + r], zeros in rows ROWS..PER-1.  */
static inline void
pack_panel_scalar (int64_t kc, int64_t rows, const float *src, int64_t lds,
                   float *dst, int per)
{
  if (rows < per)
    memset (dst, 0, (size_t) kc * (size_t) per * sizeof *dst);
  for (int64_t r = 0; r < rows; r++)
    {
      const float *s = src + r * lds;
      for (int64_t l = 0; l < kc; l++)
        dst[l * per + r] = s[l];
    }
}

#if defined(__AVX512F__)
/* Columns L..L+15 of rows R..R+15 (ROWS of them real, the rest zero)
   to DST[(l + t) * PER + R + 0..15]: a 16 x 16 transpose in registers
   (pairs, then quads within 128-bit lanes, then lanes).  */
static inline void
transpose16 (const float *src, int64_t lds, int64_t rows, float *dst,
             int per)
{
  __m512 r[16], t[16], u[16];

#pragma GCC unroll 16
  for (int i = 0; i < 16; i++)
    r[i] = i < rows ? _mm512_loadu_ps (src + i * lds) : _mm512_setzero_ps ();
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)
    {
      t[2 * i] = _mm512_unpacklo_ps (r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps (r[2 * i], r[2 * i + 1]);
    }
  /* u[4 g + p]: rows 4g..4g+3, column p of every 128-bit lane.  */
#pragma GCC unroll 4
  for (int g = 0; g < 4; g++)
    {
      u[4 * g] = _mm512_shuffle_ps (t[4 * g], t[4 * g + 2], 0x44);
      u[4 * g + 1] = _mm512_shuffle_ps (t[4 * g], t[4 * g + 2], 0xee);
      u[4 * g + 2] = _mm512_shuffle_ps (t[4 * g + 1], t[4 * g + 3], 0x44);
      u[4 * g + 3] = _mm512_shuffle_ps (t[4 * g + 1], t[4 * g + 3], 0xee);
    }
#pragma GCC unroll 4
  for (int p = 0; p < 4; p++)
    {
      __m512 v0 = _mm512_shuffle_f32x4 (u[p], u[4 + p], 0x88);
      __m512 v1 = _mm512_shuffle_f32x4 (u[8 + p], u[12 + p], 0x88);
      __m512 w0 = _mm512_shuffle_f32x4 (u[p], u[4 + p], 0xdd);
      __m512 w1 = _mm512_shuffle_f32x4 (u[8 + p], u[12 + p], 0xdd);
      _mm512_storeu_ps (dst + (p) * per,
                        _mm512_shuffle_f32x4 (v0, v1, 0x88));
      _mm512_storeu_ps (dst + (8 + p) * per,
                        _mm512_shuffle_f32x4 (v0, v1, 0xdd));
      _mm512_storeu_ps (dst + (4 + p) * per,
                        _mm512_shuffle_f32x4 (w0, w1, 0x88));
      _mm512_storeu_ps (dst + (12 + p) * per,
                        _mm512_shuffle_f32x4 (w0, w1, 0xdd));
    }
}

static inline void
pack_panel (int64_t kc, int64_t rows, const float *src, int64_t lds,
            float *dst, int per)
{
  int64_t l = 0;

  if (per % 16 != 0)
    {
      pack_panel_scalar (kc, rows, src, lds, dst, per);
      return;
    }
  for (; l + 16 <= kc; l += 16)
    for (int r0 = 0; r0 < per; r0 += 16)
      transpose16 (src + r0 * lds + l, lds,
                   rows - r0 < 0 ? 0 : rows - r0, dst + l * per + r0, per);
  if (l < kc)
    {
      for (int64_t t = l; t < kc; t++)
        for (int r = 0; r < per; r++)
          dst[t * per + r] = r < rows ? src[r * lds + t] : 0.0f;
    }
}
#else
#define pack_panel pack_panel_scalar
#endif

void
TSR_CPU_LEVEL_FN (gemm_pack_a) (int64_t kc, int64_t rows, const float *src,
                                int64_t lds, float *dst)
{
  pack_panel (kc, rows, src, lds, dst, NR);
}

void
TSR_CPU_LEVEL_FN (gemm_pack_b) (int64_t kc, int64_t rows, const float *src,
                                int64_t lds, float *dst)
{
  pack_panel (kc, rows, src, lds, dst, MR);
}

/* Write (or add, ACC) the MR x NR block T to C, only its first MR_USED
   rows and NR_USED columns.  */
static inline void
store_partial (const float *t, float *c, int64_t ldc, int mr_used,
               int nr_used, int acc)
{
  for (int j = 0; j < mr_used; j++)
    for (int i = 0; i < nr_used; i++)
      c[j * ldc + i] = acc ? c[j * ldc + i] + t[j * NR + i] : t[j * NR + i];
}

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#if defined(__AVX512F__)
#define V __m512
#define VW 16
#define V_ZERO _mm512_setzero_ps
#define V_LOAD _mm512_loadu_ps
#define V_STORE _mm512_storeu_ps
#define V_SET1 _mm512_set1_ps
#define V_FMA _mm512_fmadd_ps
#define V_ADD _mm512_add_ps
#define FOR_ROWS(X) X (0) X (1) X (2) X (3) X (4) X (5) X (6) X (7) \
  X (8) X (9) X (10) X (11)
#else
#define V __m256
#define VW 8
#define V_ZERO _mm256_setzero_ps
#define V_LOAD _mm256_loadu_ps
#define V_STORE _mm256_storeu_ps
#define V_SET1 _mm256_set1_ps
#define V_FMA _mm256_fmadd_ps
#define V_ADD _mm256_add_ps
#define FOR_ROWS(X) X (0) X (1) X (2) X (3) X (4) X (5)
#endif

void
TSR_CPU_LEVEL_FN (gemm_kernel) (int64_t kc, const float *a, const float *b,
                                float *c, int64_t ldc, int mr_used,
                                int nr_used, int acc)
{
#define DECL(j) V c##j##_0 = V_ZERO (), c##j##_1 = V_ZERO ();
  FOR_ROWS (DECL)
#undef DECL
  for (int64_t l = 0; l < kc; l++, a += NR, b += MR)
    {
      V a0 = V_LOAD (a), a1 = V_LOAD (a + VW);
#define STEP(j)                                 \
      {                                         \
        V bj = V_SET1 (b[j]);                   \
        c##j##_0 = V_FMA (a0, bj, c##j##_0);    \
        c##j##_1 = V_FMA (a1, bj, c##j##_1);    \
      }
      FOR_ROWS (STEP)
#undef STEP
    }
  if (mr_used == MR && nr_used == NR)
    {
#define PUT(j)                                                          \
      {                                                                 \
        float *cj = c + j * ldc;                                        \
        if (acc)                                                        \
          {                                                             \
            c##j##_0 = V_ADD (c##j##_0, V_LOAD (cj));                   \
            c##j##_1 = V_ADD (c##j##_1, V_LOAD (cj + VW));              \
          }                                                             \
        V_STORE (cj, c##j##_0);                                         \
        V_STORE (cj + VW, c##j##_1);                                    \
      }
      FOR_ROWS (PUT)
#undef PUT
    }
  else
    {
      float t[MR * NR];
#define PUT(j)                                  \
      V_STORE (t + j * NR, c##j##_0);           \
      V_STORE (t + j * NR + VW, c##j##_1);
      FOR_ROWS (PUT)
#undef PUT
      store_partial (t, c, ldc, mr_used, nr_used, acc);
    }
}
#else
void
TSR_CPU_LEVEL_FN (gemm_kernel) (int64_t kc, const float *a, const float *b,
                                float *c, int64_t ldc, int mr_used,
                                int nr_used, int acc)
{
  float t[MR * NR] = { 0 };

  for (int64_t l = 0; l < kc; l++, a += NR, b += MR)
    for (int j = 0; j < MR; j++)
      for (int i = 0; i < NR; i++)
        t[j * NR + i] += a[i] * b[j];
  store_partial (t, c, ldc, mr_used, nr_used, acc);
}
#endif
