/* cpu-qdot.h - what the per-level integer dot files (cpu-qdot.c,
 * cpu-qdot-32.c) share: unaligned loads of block fields and the
 * dispatch on the number of activation rows.  Include after
 * cpu-level.h.  */
#ifndef TSR_CPU_QDOT_H
#define TSR_CPU_QDOT_H

#include <stdint.h>
#include <string.h>

#include <tessera/types.h>

#include "cpu-vec.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

static inline tsr_fp16_t
load_fp16 (const char *p)
{
  tsr_fp16_t h;
  memcpy (&h, p, sizeof h);
  return h;
}

/* 8 bytes at P as one 64-bit value (to broadcast).  */
static inline int64_t
load_i64 (const void *p)
{
  int64_t v;
  memcpy (&v, p, sizeof v);
  return v;
}

/* A little-endian 32-bit field (q5_0 / q5_1 fifth bits).  */
static inline uint32_t
load_le32 (const char *p)
{
  const unsigned char *u = (const unsigned char *) p;
  return (uint32_t) u[0] | (uint32_t) u[1] << 8 | (uint32_t) u[2] << 16
         | (uint32_t) u[3] << 24;
}

/* Keep the vector X in a register.  A vector of weights loaded once
   and read by several instructions (the nibbles of a vector: an and,
   a shift and an and) is, as GCC 12 compiles it, loaded again by each
   of them as a memory operand, and loads are what the repacked kernels
   run short of: each vpdpbusd takes a broadcast of activations, and
   the core loads two vectors a cycle (Zen 5).  The empty asm claims
   to change X, so the load happens once.  Repacked q6_K, 2048 x 8192
   hot, one thread, 8 columns: 428-436 -> 476-480 GFLOP/s (its 3
   vectors were loaded 8 times a group).  Without GNU C's asm: a plain
   expression.  */
#if defined(__GNUC__)
#define QDOT_IN_REG(x) __asm__ ("" : "+v" (x))
#else
#define QDOT_IN_REG(x) ((void) 0)
#endif

/* The published value tables of iq4_nl (and iq4_xs) and mxfp4 (twice
   the E2M1 values), as lib/types/types-iq.c has them: iq4_nl's entries
   0..7 are negative.  */
static const int8_t tsr_cpu_iq4nl_values[16] = {
  -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
};
static const int8_t tsr_cpu_mxfp4_values[16] = {
  0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12
};

/* mxfp4's scale 2^(e - 127) times one half (its table values are
   doubled), built from its bits (subnormal for e < 2), as the reference
   does.  */
static inline float
tsr_cpu_e8m0_half (uint8_t e)
{
  return bits_to_f32 (e < 2 ? 0x00200000u << e : (uint32_t) (e - 1) << 23);
}

/* Weight bytes prefetched ahead of the ones being multiplied, every
   cache line of them.  gemv streams its weights from memory once; the
   hardware prefetchers alone did not keep two Zen 5 cores busy, and one
   prefetch per block (blocks of 17 to 210 bytes do not start on lines)
   left most lines to them.  Measured on gemvs far larger than the
   caches (two threads, runs of each distance alternated, roof 26-27
   GB/s), in GB/s at 131072 x 2048 and 16384 x 16384:
     ahead   q8_0        q4_0        q4_K        q6_K        q5_0 (2048)
     1024    23-25 24-26 24    22    21    21    24-26 22-24
     2048    25-26 27-28 28    26-27 25-26 23-25 28    25-26  24-25
     4096    19-20 23-25 24-26 24    22-26 24-27 25    24-27  21-22
     8192    18    22-23 23    28    26-27 26-28 25-26 26-27  16-17
   and in a model's token generation (Llama-3.2-1B shape, tg64): q8_0
   11.0 -> 12.5-12.9 tokens/s, q4_0 20.6 -> 27.2-27.9, Q4_K_M 23.8-24.3
   -> 24.9-25.0 going from 8192 to 2048.  Rows of 2048 elements, most of
   a model's, suffered most at 8192.  (-DTSR_CPU_PREFETCH_AHEAD=N
   overrides it, for such measurements.)  */
#ifndef TSR_CPU_PREFETCH_AHEAD
#define TSR_CPU_PREFETCH_AHEAD 2048
#endif

/* Prefetch the lines of the BYTES at P + AHEAD.  always_inline: GCC 12
   found a plain static wrapper of the prefetch "const" and deleted its
   calls, prefetches and all.  */
static inline __attribute__ ((always_inline)) void
qdot_prefetch_ahead (const char *p, size_t ahead, size_t bytes)
{
#if defined(__SSE__)
  for (size_t o = 0; o < bytes + 63; o += 64)
    _mm_prefetch (p + ahead + o, _MM_HINT_T0);
#else
  (void) p;
  (void) ahead;
  (void) bytes;
#endif
}

/* The same, TSR_CPU_PREFETCH_AHEAD ahead.  */
static inline __attribute__ ((always_inline)) void
qdot_prefetch (const char *p, size_t bytes)
{
  qdot_prefetch_ahead (p, TSR_CPU_PREFETCH_AHEAD, bytes);
}

/* How far ahead a kernel that multiplies each weight with NY
   activation columns prefetches: the more columns, the slower the
   weights are consumed and the further the hardware prefetchers fall
   behind, so 2, 3, and from 4 columns 4 times TSR_CPU_PREFETCH_AHEAD.
   Measured with the repacked weights' kernels (which stream from
   memory), 4096 x 14336, two Zen 5 cores, read roof 48 GB/s, runs
   alternated; GFLOP/s from 2048 bytes ahead at every n to this:
     n       2                     4                 8
     q4_0    296-303 -> 324-341    466-516 -> 632    807 -> 1,189
     q8_0    164-177 -> 170-187    305-330 -> 351    536 -> 639
     q4_K    302-320 -> 306-324    540 -> 610        862 -> 1,123
     q6_K    188-212 -> 215-227    355-363 -> 433    579 -> 722
     iq4_xs                        575-584 -> 654-674  869 -> 1,109
   and the plain dots of the blocks of 32 (below 4 columns) at n = 3:
   q8_0 161-164 -> 231-234, q4_0 229-231 -> 241-244.
   (8192, 12288 and 16384 bytes about even from 8 columns; at one
   column 4096 and 8192 were the same or a few percent slower).  The
   plain dots of the super-block types (cpu-kquant.c), which go along a
   row a chunk at a time and then to the next row's, lost with it (q6_K
   at n = 8: 442 -> 254): they prefetch in their own order of reads
   (kdot_rows); kernels that read rows packed into the caches as they
   are used keep the one distance.  */
static inline size_t
qdot_ahead (int ny)
{
  return (size_t) TSR_CPU_PREFETCH_AHEAD * (size_t) (ny < 4 ? ny : 4);
}

/* qdot_prefetch for a kernel of NY columns.  */
static inline __attribute__ ((always_inline)) void
qdot_prefetch_ny (const char *p, size_t bytes, int ny)
{
  qdot_prefetch_ahead (p, qdot_ahead (ny), bytes);
}

/* KERNEL (what, k, x, ny, y, out) for the NR weight rows at X, BX
   bytes apart, row r's NY results at OUT + r NY: one inlined copy of
   the kernel per column count NY, so that the per-column loops unroll
   and the accumulators stay in registers, inside the loop over the
   rows (a gemv of short rows, 2048 elements, spent a quarter of its
   time around the per-row calls).  */
#define TSR_CPU_ROWS_(KERNEL, what, k, x, bx, nr, NY, y, out)           \
  for (int r_ = 0; r_ < (nr); r_++)                                     \
    KERNEL (what, k, (x) + (size_t) r_ * (bx), NY, y, (out) + r_ * NY)
#define TSR_CPU_DISPATCH_ROWS(KERNEL, what, k, x, bx, nr, ny, y, out)   \
  switch (ny)                                                           \
    {                                                                   \
    case 1: TSR_CPU_ROWS_ (KERNEL, what, k, x, bx, nr, 1, y, out); break; \
    case 2: TSR_CPU_ROWS_ (KERNEL, what, k, x, bx, nr, 2, y, out); break; \
    case 3: TSR_CPU_ROWS_ (KERNEL, what, k, x, bx, nr, 3, y, out); break; \
    case 4: TSR_CPU_ROWS_ (KERNEL, what, k, x, bx, nr, 4, y, out); break; \
    case 5: TSR_CPU_ROWS_ (KERNEL, what, k, x, bx, nr, 5, y, out); break; \
    case 6: TSR_CPU_ROWS_ (KERNEL, what, k, x, bx, nr, 6, y, out); break; \
    case 7: TSR_CPU_ROWS_ (KERNEL, what, k, x, bx, nr, 7, y, out); break; \
    default: TSR_CPU_ROWS_ (KERNEL, what, k, x, bx, nr, 8, y, out); break; \
    }

_Static_assert (TSR_CPU_QDOT_MAX_COLS == 8, "TSR_CPU_DISPATCH_ROWS covers 1..8");

/* The sum of the lanes of A + B, the kernels' two accumulators.  */
#if defined(__AVX__)
static inline float
qdot_hsum256 (__m256 a, __m256 b)
{
  __m256 v = _mm256_add_ps (a, b);
  __m128 s = _mm_add_ps (_mm256_castps256_ps128 (v),
                         _mm256_extractf128_ps (v, 1));
  s = _mm_add_ps (s, _mm_movehl_ps (s, s));
  s = _mm_add_ss (s, _mm_movehdup_ps (s));
  return _mm_cvtss_f32 (s);
}
#endif
#if defined(__SSE2__)
static inline float
qdot_hsum128 (__m128 a, __m128 b)
{
  __m128 s = _mm_add_ps (a, b);
  s = _mm_add_ps (s, _mm_movehl_ps (s, s));
  s = _mm_add_ss (s, _mm_shuffle_ps (s, s, 1));
  return _mm_cvtss_f32 (s);
}
#endif

/* The q8_K rows Y of NY columns (cpu-vec-k.h): their values, sums of
   16 and scales; ACC zeroed (the super-block types' tile kernels).  */
#if defined(__AVX__)
static inline __attribute__ ((always_inline)) void
qdot_kcolumns (int64_t k, const int NY, const void *const *y,
               const int8_t **q, const int16_t **bs, const float **dy,
               __m256 *acc)
{
  TSR_CPU_UNROLL
  for (int c = 0; c < NY; c++)
    {
      q[c] = y[c];
      bs[c] = tsr_cpu_kact_sums (y[c], k);
      dy[c] = tsr_cpu_kact_scales (y[c], k);
      acc[c] = _mm256_setzero_ps ();
    }
}
#endif

/* q6_K's offset sums of two groups of 16 for one activation row (the
   q8_K row's offset sums, cpu-vec-k.h: 4 int32 at OS, a pair per
   group) as the starts of two lane sums whose lanes 2r + h meet group
   0's (*Z0) or group 1's (*Z1) sum h: one 128-bit broadcast, each pair
   spread by an in-lane shuffle.  Loads, not shuffles, are what the
   kernels run short of (QDOT_IN_REG): two 64-bit broadcasts cost
   repacked q6_K 4-5% at 8 columns.  */
#if defined(__AVX512F__)
static inline __attribute__ ((always_inline)) void
qdot_offsets6_512 (const int32_t *os, __m512i *z0, __m512i *z1)
{
  const __m512i o4 = _mm512_broadcast_i32x4 (_mm_loadu_si128
                                             ((const __m128i *) os));
  *z0 = _mm512_shuffle_epi32 (o4, _MM_PERM_BABA);
  *z1 = _mm512_shuffle_epi32 (o4, _MM_PERM_DCDC);
}
#endif

/* The products of unsigned bytes A by signed bytes B plus those of C by
   D, summed in fours into int32 lanes.  With VNNI (levels v3-vnni and
   v4-vnni) two vpdpbusd; otherwise pmaddubsw into int16 pairs, then
   pmaddwd by ones.  FITS16: the sum of a pair of A.B and a pair of C.D
   stays within int16 (so the pairs are added before pmaddwd, one
   instruction fewer).  Every caller's operands keep each pair within
   int16, where pmaddubsw does not saturate: both forms give the same
   integers.  */
#if defined(__AVX512BW__)
static inline __m512i
qdot_sum2_512 (__m512i a, __m512i b, __m512i c, __m512i d, int fits16)
{
#if defined(__AVX512VNNI__)
  (void) fits16;
  return _mm512_dpbusd_epi32 (_mm512_dpbusd_epi32 (_mm512_setzero_si512 (),
                                                   a, b), c, d);
#else
  const __m512i ones = _mm512_set1_epi16 (1);
  if (fits16)
    return _mm512_madd_epi16 (_mm512_add_epi16 (_mm512_maddubs_epi16 (a, b),
                                                _mm512_maddubs_epi16 (c, d)),
                              ones);
  return _mm512_add_epi32 (_mm512_madd_epi16 (_mm512_maddubs_epi16 (a, b),
                                              ones),
                           _mm512_madd_epi16 (_mm512_maddubs_epi16 (c, d),
                                              ones));
#endif
}
#endif
#if defined(__AVX2__)
static inline __m256i
qdot_sum2_256 (__m256i a, __m256i b, __m256i c, __m256i d, int fits16)
{
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  (void) fits16;
  return _mm256_dpbusd_epi32 (_mm256_dpbusd_epi32 (_mm256_setzero_si256 (),
                                                   a, b), c, d);
#elif defined(__AVXVNNI__)
  (void) fits16;
  return _mm256_dpbusd_avx_epi32 (_mm256_dpbusd_avx_epi32
                                  (_mm256_setzero_si256 (), a, b), c, d);
#else
  const __m256i ones = _mm256_set1_epi16 (1);
  if (fits16)
    return _mm256_madd_epi16 (_mm256_add_epi16 (_mm256_maddubs_epi16 (a, b),
                                                _mm256_maddubs_epi16 (c, d)),
                              ones);
  return _mm256_add_epi32 (_mm256_madd_epi16 (_mm256_maddubs_epi16 (a, b),
                                              ones),
                           _mm256_madd_epi16 (_mm256_maddubs_epi16 (c, d),
                                              ones));
#endif
}
#endif

#endif /* TSR_CPU_QDOT_H */
