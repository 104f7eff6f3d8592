/* bench-peaks.c - the compute roofs of the host's CPU for tessera-bench.
 *
 * A roofline needs the peak of the instructions a kernel actually
 * issues, not of the best the CPU has: the CPU backend picks an ISA
 * level at run time (or TESSERA_CPU_LEVEL does), and at each level its
 * f32 products use one kind of multiply-add and its quantized products
 * one kind of 8-bit dot product.  So the peaks are measured per level:
 *
 *   level        f32 multiply-add        8-bit dot product
 *   v4-amx       AVX-512 vfmadd          AMX tdpbssd (16 x 16 x 32 tiles)
 *   v4-vnni      AVX-512 vfmadd          AVX512-VNNI vpdpbusd (zmm)
 *   v4           AVX-512 vfmadd          AVX-512BW vpmaddubsw+vpmaddwd
 *   v3-vnni      AVX2 vfmadd             AVX-VNNI vpdpbusd (ymm)
 *   v3           AVX2 vfmadd             AVX2 vpmaddubsw+vpmaddwd
 *   v2, x86-64   SSE mulps+addps         none (scalar kernels)
 *   armv8.2-a,   NEON fmla               sdot
 *   armv8.6-a
 *   armv8-a      NEON fmla               none
 *   generic      scalar                  none
 *
 * Each pass runs independent chains (more than the units' latency
 * times their count, so that one issues every cycle) for a fixed
 * number of steps on every thread at once; the best of three passes is
 * the peak.  Operations count a multiply and an add as two, for floats
 * and bytes alike, as the cases' operation counts do.  */
#include <config.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#if defined(__aarch64__) && defined(HAVE_ARM_DOTPROD_TARGET_ATTRIBUTE)
#include <arm_neon.h>
#include <sys/auxv.h>
#include <asm/hwcap.h>
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#include "bench.h"
#include "../modules/cpu/cpu-amx.h"

/* Steps of a pass.  */
#define PEAK_ITERS 4000000L

/* Where the passes' results go, so that they are computed.  */
static volatile float peak_sink_f;
/* Unsigned: the integer chains wrap, and their lanes are added with
   wrapping too (in int, an overflow would be undefined).  */
static volatile uint32_t peak_sink_i;

/* Chains as named variables (an array would live in memory): REPn (X)
   expands X (0) ... X (n - 1).  */
#define REP8(X) X (0) X (1) X (2) X (3) X (4) X (5) X (6) X (7)
#define REP12(X) REP8 (X) X (8) X (9) X (10) X (11)
#define REP16(X) REP12 (X) X (12) X (13) X (14) X (15)

/* Keeps the compiler from computing an expression of V once for many
   steps (hoisting it out of a loop, or sharing it between chains): it
   no longer knows the value.  */
#if defined(__GNUC__)
#define OPAQUE(v) __asm__ volatile ("" : "+x" (v))
#endif

typedef double peak_fn (long iters);

/* A peak function NAME (with attributes ATTR): SETUP, then REP (DECL)
   declares the chains, each step runs REP (STEP), and REP (SUM) folds
   the chains into SINK_VAR, which goes to SINK; OPS operations a
   step.  DECL, STEP and SUM are function-like macros of the chain's
   number.  */
#define PEAK(name, attr, REP, setup, DECL, STEP, SUM, sink_var, sink, ops) \
  attr static double                                                    \
  name (long iters)                                                     \
  {                                                                     \
    setup                                                               \
    REP (DECL)                                                          \
    for (long it = 0; it < iters; it++)                                 \
      {                                                                 \
        REP (STEP)                                                      \
      }                                                                 \
    REP (SUM)                                                           \
    sink = sink_var;                                                    \
    return (ops) * (double) iters;                                      \
  }

/* A vector's lanes added into SUM through memory (the 256-bit and
   128-bit vectors have no reduction intrinsic).  */
#define LANES_INTO(sum, store, type, lanes, v)                          \
  {                                                                     \
    type l_[lanes];                                                     \
    store (l_, v);                                                      \
    for (int k_ = 0; k_ < (lanes); k_++)                                \
      sum += l_[k_];                                                    \
  }

#define PLAIN_DECL(c) float acc##c = (float) (c);
#define PLAIN_STEP(c) acc##c = acc##c * m + a;
#define PLAIN_SUM(c) sum += acc##c;
PEAK (fma_plain, , REP8,
      volatile float mv = 0.999999f; volatile float av = 1e-6f;
      const float m = mv; const float a = av; float sum = 0;,
      PLAIN_DECL, PLAIN_STEP, PLAIN_SUM, sum, peak_sink_f, 2.0 * 8)

#ifdef HAVE_X86_TARGET_ATTRIBUTE
#include <immintrin.h>

#define F512_DECL(c) __m512 acc##c = _mm512_set1_ps ((float) (c));
#define F512_STEP(c) acc##c = _mm512_fmadd_ps (acc##c, m, a);
#define F512_SUM(c) sum += _mm512_reduce_add_ps (acc##c);
PEAK (fma_avx512, __attribute__ ((target ("avx512f"))), REP16,
      const __m512 m = _mm512_set1_ps (0.999999f);
      const __m512 a = _mm512_set1_ps (1e-6f); float sum = 0;,
      F512_DECL, F512_STEP, F512_SUM, sum, peak_sink_f, 2.0 * 16 * 16)

#define F256_DECL(c) __m256 acc##c = _mm256_set1_ps ((float) (c));
#define F256_STEP(c) acc##c = _mm256_fmadd_ps (acc##c, m, a);
#define F256_SUM(c) LANES_INTO (sum, _mm256_storeu_ps, float, 8, acc##c)
PEAK (fma_avx2, __attribute__ ((target ("avx2,fma"))), REP12,
      const __m256 m = _mm256_set1_ps (0.999999f);
      const __m256 a = _mm256_set1_ps (1e-6f); float sum = 0;,
      F256_DECL, F256_STEP, F256_SUM, sum, peak_sink_f, 2.0 * 8 * 12)

/* SSE has no fused multiply-add: a multiply and an add per lane.  */
#define F128_DECL(c) __m128 acc##c = _mm_set1_ps ((float) (c));
#define F128_STEP(c) acc##c = _mm_add_ps (_mm_mul_ps (acc##c, m), a);
#define F128_SUM(c) LANES_INTO (sum, _mm_storeu_ps, float, 4, acc##c)
PEAK (fma_sse, , REP12,
      const __m128 m = _mm_set1_ps (0.999999f);
      const __m128 a = _mm_set1_ps (1e-6f); float sum = 0;,
      F128_DECL, F128_STEP, F128_SUM, sum, peak_sink_f, 2.0 * 4 * 12)

/* vpmaddubsw (32 or 64 unsigned-by-signed byte products, summed in
   pairs to 16-bit) then vpmaddwd by ones (to 32-bit) then vpaddd: the
   sequence the AVX2 and AVX-512BW kernels use.  The byte operand is
   made opaque at every step, or the compiler would compute the two
   products once, outside the loop.  */
#define I256_DECL(c) __m256i acc##c = _mm256_set1_epi32 (c);
#define U256_STEP(c)                                                    \
  OPAQUE (x);                                                           \
  acc##c = _mm256_add_epi32 (acc##c, _mm256_madd_epi16                  \
                             (_mm256_maddubs_epi16 (x, (c) & 1 ? w1 : w0), \
                              ones));
#define STORE256I(p, v) _mm256_storeu_si256 ((__m256i *) (p), v)
#define I256_SUM(c) LANES_INTO (sum, STORE256I, uint32_t, 8, acc##c)
PEAK (dot8_avx2, __attribute__ ((target ("avx2"))), REP8,
      __m256i x = _mm256_set1_epi8 (3);
      const __m256i ones = _mm256_set1_epi16 (1);
      const __m256i w0 = _mm256_set1_epi8 (-5);
      const __m256i w1 = _mm256_set1_epi8 (7); uint32_t sum = 0;,
      I256_DECL, U256_STEP, I256_SUM, sum, peak_sink_i, 2.0 * 32 * 8)

#define I512_DECL(c) __m512i acc##c = _mm512_set1_epi32 (c);
#define U512_STEP(c)                                                    \
  OPAQUE (x);                                                           \
  acc##c = _mm512_add_epi32 (acc##c, _mm512_madd_epi16                  \
                             (_mm512_maddubs_epi16 (x, (c) & 1 ? w1 : w0), \
                              ones));
#define STORE512I(p, v) _mm512_storeu_si512 (p, v)
#define I512_SUM(c) LANES_INTO (sum, STORE512I, uint32_t, 16, acc##c)
PEAK (dot8_avx512bw, __attribute__ ((target ("avx512f,avx512bw"))), REP16,
      __m512i x = _mm512_set1_epi8 (3);
      const __m512i ones = _mm512_set1_epi16 (1);
      const __m512i w0 = _mm512_set1_epi8 (-5);
      const __m512i w1 = _mm512_set1_epi8 (7); uint32_t sum = 0;,
      I512_DECL, U512_STEP, I512_SUM, sum, peak_sink_i, 2.0 * 64 * 16)

#ifdef HAVE_X86_VNNI_TARGET_ATTRIBUTE
/* vpdpbusd: 4 byte products summed into each 32-bit lane.  */
#define V512_STEP(c) acc##c = _mm512_dpbusd_epi32 (acc##c, x, w);
PEAK (dot8_vnni512, __attribute__ ((target ("avx512f,avx512vnni"))), REP16,
      const __m512i x = _mm512_set1_epi8 (3);
      const __m512i w = _mm512_set1_epi8 (-5); uint32_t sum = 0;,
      I512_DECL, V512_STEP, I512_SUM, sum, peak_sink_i, 2.0 * 64 * 16)

#define V256_STEP(c) acc##c = _mm256_dpbusd_avx_epi32 (acc##c, x, w);
PEAK (dot8_vnni256, __attribute__ ((target ("avxvnni"))), REP12,
      const __m256i x = _mm256_set1_epi8 (3);
      const __m256i w = _mm256_set1_epi8 (-5); uint32_t sum = 0;,
      I256_DECL, V256_STEP, I256_SUM, sum, peak_sink_i, 2.0 * 32 * 12)
#endif /* HAVE_X86_VNNI_TARGET_ATTRIBUTE */

#ifdef HAVE_X86_AMX_TARGET_ATTRIBUTE
/* tdpbssd on the tiles the CPU backend's AMX kernels use (level
   v4-amx): 16 rows by 16 columns of int32 sums, 32 byte products
   each (a block of 32), four sums' tiles in turn against two pairs of
   operand tiles.  Not the PEAK macro: tiles are no variables.  */
__attribute__ ((target ("amx-tile,amx-int8"))) static double
dot8_amx (long iters)
{
  static const int8_t a[16 * 32] = { 3 }, b[8 * 64] = { -5 };
  _Alignas (64) int32_t c[16 * 16];
  struct tsr_cpu_amx_config cfg;

  memset (&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++)
    {
      cfg.colsb[t] = t == 4 || t == 5 ? 32 : 64;
      cfg.rows[t] = t < 6 ? 16 : 8;
    }
  _tile_loadconfig (&cfg);
  _tile_loadd (4, a, 32);
  _tile_loadd (5, a, 32);
  _tile_loadd (6, b, 64);
  _tile_loadd (7, b, 64);
  _tile_zero (0);
  _tile_zero (1);
  _tile_zero (2);
  _tile_zero (3);
  for (long it = 0; it < iters / 16; it++)
    {
      _tile_dpbssd (0, 4, 6);
      _tile_dpbssd (1, 4, 7);
      _tile_dpbssd (2, 5, 6);
      _tile_dpbssd (3, 5, 7);
    }
  _tile_stored (0, c, 64);
  _tile_release ();
  peak_sink_i = (uint32_t) c[0];
  return 2.0 * 16 * 16 * 32 * 4 * (double) (iters / 16);
}

#endif /* HAVE_X86_AMX_TARGET_ATTRIBUTE */
#endif /* HAVE_X86_TARGET_ATTRIBUTE */

#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__)
#define FNEON_DECL(c) float32x4_t acc##c = vdupq_n_f32 ((float) (c));
#define FNEON_STEP(c) acc##c = vfmaq_f32 (a, acc##c, m);
#define FNEON_SUM(c) sum += vaddvq_f32 (acc##c);
PEAK (fma_neon, , REP16,
      const float32x4_t m = vdupq_n_f32 (0.999999f);
      const float32x4_t a = vdupq_n_f32 (1e-6f); float sum = 0;,
      FNEON_DECL, FNEON_STEP, FNEON_SUM, sum, peak_sink_f, 2.0 * 4 * 16)

#ifdef HAVE_ARM_DOTPROD_TARGET_ATTRIBUTE
/* sdot: 4 signed byte products summed into each 32-bit lane.  */
#define SDOT_DECL(c) int32x4_t acc##c = vdupq_n_s32 (c);
#define SDOT_STEP(c) acc##c = vdotq_s32 (acc##c, x, w);
#define SDOT_SUM(c) sum += vaddvq_u32 (vreinterpretq_u32_s32 (acc##c));
PEAK (dot8_sdot, __attribute__ ((target ("arch=armv8.2-a+dotprod"))), REP16,
      const int8x16_t x = vdupq_n_s8 (3);
      const int8x16_t w = vdupq_n_s8 (-5); uint32_t sum = 0;,
      SDOT_DECL, SDOT_STEP, SDOT_SUM, sum, peak_sink_i, 2.0 * 16 * 16)
#endif
#endif /* __aarch64__ */

/* The instructions of each level; the first entry a CPU runs is the
   best level when none is named.  */
struct level_peaks
{
  const char *level;
  peak_fn *fma;
  const char *fma_unit;
  peak_fn *dot8;                /* NULL: no 8-bit dot products */
  const char *dot8_unit;
  bool (*runs) (void);
};

#ifdef HAVE_X86_TARGET_ATTRIBUTE
static bool
runs_v4_vnni (void)
{
  return __builtin_cpu_supports ("avx512f")
         && __builtin_cpu_supports ("avx512bw")
         && __builtin_cpu_supports ("avx512vnni");
}
#ifdef HAVE_X86_AMX_TARGET_ATTRIBUTE
/* As the CPU backend decides (cpu-amx.h, which also asks Linux for the
   tile state).  */
static bool
runs_v4_amx (void)
{
  return runs_v4_vnni () && tsr_cpu_amx_usable ();
}
#endif
static bool
runs_v4 (void)
{
  return __builtin_cpu_supports ("avx512f")
         && __builtin_cpu_supports ("avx512bw");
}
#ifdef HAVE_X86_VNNI_TARGET_ATTRIBUTE
static bool
runs_v3_vnni (void)
{
  return __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma")
         && __builtin_cpu_supports ("avxvnni");
}
#endif
static bool
runs_v3 (void)
{
  return __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma");
}
#endif
static bool
runs_always (void)
{
  return true;
}
#if defined(__aarch64__) && defined(HAVE_ARM_DOTPROD_TARGET_ATTRIBUTE)
static bool
runs_dotprod (void)
{
  return (getauxval (AT_HWCAP) & HWCAP_ASIMDDP) != 0;
}
#endif

static const struct level_peaks levels[] = {
#ifdef HAVE_X86_TARGET_ATTRIBUTE
#ifdef HAVE_X86_AMX_TARGET_ATTRIBUTE
  { "v4-amx", fma_avx512, "AVX-512 vfmadd", dot8_amx,
    "AMX tdpbssd, 16 x 16 x 32 tiles", runs_v4_amx },
#endif
#ifdef HAVE_X86_VNNI_TARGET_ATTRIBUTE
  { "v4-vnni", fma_avx512, "AVX-512 vfmadd", dot8_vnni512,
    "AVX512-VNNI vpdpbusd", runs_v4_vnni },
#endif
  { "v4", fma_avx512, "AVX-512 vfmadd", dot8_avx512bw,
    "AVX-512BW vpmaddubsw+vpmaddwd", runs_v4 },
#ifdef HAVE_X86_VNNI_TARGET_ATTRIBUTE
  { "v3-vnni", fma_avx2, "AVX2 vfmadd", dot8_vnni256, "AVX-VNNI vpdpbusd",
    runs_v3_vnni },
#endif
  { "v3", fma_avx2, "AVX2 vfmadd", dot8_avx2, "AVX2 vpmaddubsw+vpmaddwd",
    runs_v3 },
  { "v2", fma_sse, "SSE mulps+addps", NULL, NULL, runs_always },
  { "x86-64", fma_sse, "SSE mulps+addps", NULL, NULL, runs_always },
#endif
#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__)
#ifdef HAVE_ARM_DOTPROD_TARGET_ATTRIBUTE
  { "armv8.6-a", fma_neon, "NEON fmla", dot8_sdot, "sdot", runs_dotprod },
  { "armv8.2-a", fma_neon, "NEON fmla", dot8_sdot, "sdot", runs_dotprod },
#endif
  { "armv8-a", fma_neon, "NEON fmla", NULL, NULL, runs_always },
#endif
  { "generic", fma_plain, "scalar multiply and add", NULL, NULL,
    runs_always },
};

struct peak_job
{
  peak_fn *fn;
  double ops;
};

static void *
peak_thread (void *arg)
{
  struct peak_job *j = arg;
  j->ops = j->fn (PEAK_ITERS);
  return NULL;
}

/* FN's peak in billions of operations per second on THREADS threads,
   the best of 3 passes.  */
static double
measure (peak_fn *fn, int threads)
{
  pthread_t tid[256];
  struct peak_job jobs[256];
  double best = 0;
  for (int pass = 0; pass < 3; pass++)
    {
      bool started[256] = { false };
      double t0 = tt_now_us ();
      for (int t = 0; t < threads; t++)
        jobs[t] = (struct peak_job) { fn, 0 };
      for (int t = 1; t < threads; t++)
        started[t] = pthread_create (&tid[t], NULL, peak_thread,
                                     &jobs[t]) == 0;
      peak_thread (&jobs[0]);
      double ops = jobs[0].ops;
      for (int t = 1; t < threads; t++)
        if (started[t])
          {
            pthread_join (tid[t], NULL);
            ops += jobs[t].ops;
          }
      double us = tt_now_us () - t0;
      if (us > 0 && ops / us / 1e3 > best)
        best = ops / us / 1e3;
    }
  return best;
}

void
bench_peaks_measure (const char *level, int threads, struct bench_peaks *p)
{
  const struct level_peaks *l = NULL;
  size_t n = sizeof levels / sizeof *levels;
#ifdef HAVE_X86_TARGET_ATTRIBUTE
  __builtin_cpu_init ();
#endif
  /* The level named, if this build knows it and the CPU runs it; else
     the best one the CPU runs.  */
  for (size_t i = 0; level && i < n && !l; i++)
    if (strcmp (levels[i].level, level) == 0 && levels[i].runs ())
      l = &levels[i];
  for (size_t i = 0; i < n && !l; i++)
    if (levels[i].runs ())
      l = &levels[i];
  if (threads < 1 || threads > 256)
    threads = 1;
  memset (p, 0, sizeof *p);
  snprintf (p->level, sizeof p->level, "%s", l->level);
  p->fma_unit = l->fma_unit;
  p->fma = measure (l->fma, threads);
  if (l->dot8)
    {
      p->dot8_unit = l->dot8_unit;
      p->dot8 = measure (l->dot8, threads);
    }
}
