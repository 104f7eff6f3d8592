/* port-loops.c - how many of the integer-dot kernels' instructions an
 * x86-64 core with AVX-512 VNNI issues a cycle, alone and side by side.
 *
 * The manual's CPU section ("What the repacked kernels run short of")
 * quotes these loops' results on Zen 5.  Each loop is written out in
 * assembly, so that no compiler adds moves, spills or reloads; each
 * runs 16 vpdpbusd (independent accumulators) beside 16 of another
 * instruction, and the cycles a loop takes say whether the two compete
 * for the same execution ports: 8 cycles for 16 vpdpbusd alone (two a
 * cycle) means the other instruction came free.
 *
 * Not built by make (it needs an assembler that knows AVX-512 VNNI and a
 * CPU that has it).  Build and run with:
 *
 *   gcc -O2 -o port-loops doc/port-loops.c && ./port-loops
 *
 * Cycles come from a calibration loop of dependent integer additions
 * (one a cycle), so they are core cycles at whatever clock the core ran
 * during the calibration; run on an idle machine.  */
#include <stdio.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)

static double
now (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

#define ITERS 50000000L

/* Seconds a cycle: a chain of dependent additions.  */
static double
cycle_seconds (void)
{
  long x = 0, n = ITERS * 4;
  double t = now ();
  for (long i = 0; i < n; i++)
    __asm__ volatile ("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                      "add $1, %0" : "+r" (x));
  return (now () - t) / ((double) n * 4);
}

/* 128 bytes of slack for the loads that cross a cache line.  */
static unsigned char buf[4096 + 128] __attribute__ ((aligned (64)));

#define CLOBBERS                                                        \
  "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",     \
    "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",         \
    "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",      \
    "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27",      \
    "xmm28", "xmm29", "xmm30", "xmm31"

/* 16 vpdpbusd into zmm2..zmm17, each followed by OTHER (a string with
   %%zmm%d for its destination, zmm18..zmm31 in turn, and %d for a
   byte offset into the buffer), ITERS times.  */
#define DP(r) "vpdpbusd %%zmm1, %%zmm0, %%zmm" #r "\n\t"
#define LOOP16(other)                                                   \
  DP (2) other (18, 0) DP (3) other (19, 64) DP (4) other (20, 128)     \
  DP (5) other (21, 192) DP (6) other (22, 256) DP (7) other (23, 320)  \
  DP (8) other (24, 384) DP (9) other (25, 448) DP (10) other (26, 512) \
  DP (11) other (27, 576) DP (12) other (28, 640) DP (13) other (29, 704) \
  DP (14) other (30, 768) DP (15) other (31, 832) DP (16) other (18, 896) \
  DP (17) other (19, 960)

#define NONE(r, o) ""
#define MOVE(r, o) "vmovdqa64 %%zmm1, %%zmm" #r "\n\t"
#define XOR(r, o) "vpxord %%zmm1, %%zmm0, %%zmm" #r "\n\t"
#define PACK(r, o) "vpackssdw %%zmm1, %%zmm0, %%zmm" #r "\n\t"
#define BCAST(r, o) "vpbroadcastq " #o "(%1), %%zmm" #r "\n\t"
#define LOAD(r, o) "vmovdqu64 " #o "(%1), %%zmm" #r "\n\t"
#define FMA(r, o) "vfmadd231ps %%zmm1, %%zmm0, %%zmm" #r "\n\t"
#define MULPS(r, o) "vmulps %%zmm1, %%zmm0, %%zmm" #r "\n\t"
#define CVT(r, o) "vcvtdq2ps %%zmm1, %%zmm" #r "\n\t"
#define SHUFD(r, o) "vpshufd $0x44, %%zmm1, %%zmm" #r "\n\t"
#define SPLIT(r, o) "vmovdqu64 " #o "+8(%1), %%zmm" #r "\n\t"

#define RUN(name, body)                                                 \
  __attribute__ ((target ("avx512f,avx512bw,avx512vnni")))             \
  static double name (void)                                             \
  {                                                                     \
    long n = ITERS;                                                     \
    double t = now ();                                                  \
    __asm__ volatile ("vpxord %%zmm0, %%zmm0, %%zmm0\n\t"               \
                      "vpxord %%zmm1, %%zmm1, %%zmm1\n"                 \
                      "1:\n\t" body "dec %0\n\tjnz 1b"                  \
                      : "+r" (n) : "r" (buf) : CLOBBERS);               \
    return (now () - t) / ITERS;                                        \
  }

RUN (dp_alone, LOOP16 (NONE))
RUN (dp_move, LOOP16 (MOVE))
RUN (dp_xor, LOOP16 (XOR))
RUN (dp_pack, LOOP16 (PACK))
RUN (dp_bcast, LOOP16 (BCAST))
RUN (dp_load, LOOP16 (LOAD))
RUN (dp_split, LOOP16 (SPLIT))
RUN (dp_fma, LOOP16 (FMA))
RUN (dp_mulps, LOOP16 (MULPS))
RUN (dp_cvt, LOOP16 (CVT))
RUN (dp_shufd, LOOP16 (SHUFD))

/* The loads alone (16 a loop).  */
#define ONLY16(other)                                                   \
  other (18, 0) other (19, 64) other (20, 128) other (21, 192)          \
  other (22, 256) other (23, 320) other (24, 384) other (25, 448)       \
  other (26, 512) other (27, 576) other (28, 640) other (29, 704)       \
  other (30, 768) other (31, 832) other (18, 896) other (19, 960)
RUN (bcast_alone, ONLY16 (BCAST))
RUN (load_alone, ONLY16 (LOAD))
RUN (split_alone, ONLY16 (SPLIT))

/* A 16-row tile's unit for 8 columns, as the tiles sum q4_K: per
   column two chains of 4 vpdpbusd from zero, packed to words and
   scaled by one vpdpwssd (64 vpdpbusd, 8 vpackssdw, 8 vpdpwssd).  */
#define UNIT(a, s0, s1)                                                 \
  "vpxord %%zmm" #s0 ", %%zmm" #s0 ", %%zmm" #s0 "\n\t"                 \
  "vpxord %%zmm" #s1 ", %%zmm" #s1 ", %%zmm" #s1 "\n\t"                 \
  "vpdpbusd %%zmm1, %%zmm0, %%zmm" #s0 "\n\t"                           \
  "vpdpbusd %%zmm1, %%zmm0, %%zmm" #s1 "\n\t"                           \
  "vpdpbusd %%zmm1, %%zmm0, %%zmm" #s0 "\n\t"                           \
  "vpdpbusd %%zmm1, %%zmm0, %%zmm" #s1 "\n\t"                           \
  "vpdpbusd %%zmm1, %%zmm0, %%zmm" #s0 "\n\t"                           \
  "vpdpbusd %%zmm1, %%zmm0, %%zmm" #s1 "\n\t"                           \
  "vpdpbusd %%zmm1, %%zmm0, %%zmm" #s0 "\n\t"                           \
  "vpdpbusd %%zmm1, %%zmm0, %%zmm" #s1 "\n\t"                           \
  "vpackssdw %%zmm" #s1 ", %%zmm" #s0 ", %%zmm" #s0 "\n\t"              \
  "vpdpwssd %%zmm1, %%zmm" #s0 ", %%zmm" #a "\n\t"
RUN (tile_unit, UNIT (2, 10, 11) UNIT (3, 12, 13) UNIT (4, 14, 15)
     UNIT (5, 16, 17) UNIT (6, 18, 19) UNIT (7, 20, 21) UNIT (8, 22, 23)
     UNIT (9, 24, 25))

int
main (void)
{
  static const struct
  {
    const char *what;
    double (*fn) (void);
    int dots;                   /* vpdpbusd a loop */
  } loops[] = {
    { "16 vpdpbusd", dp_alone, 16 },
    { "16 vpdpbusd + 16 register moves", dp_move, 16 },
    { "16 vpdpbusd + 16 vpxord", dp_xor, 16 },
    { "16 vpdpbusd + 16 vpackssdw", dp_pack, 16 },
    { "16 vpdpbusd + 16 vpbroadcastq m64", dp_bcast, 16 },
    { "16 vpdpbusd + 16 aligned 64-byte loads", dp_load, 16 },
    { "16 vpdpbusd + 16 64-byte loads across a line", dp_split, 16 },
    { "16 vpdpbusd + 16 vfmadd231ps", dp_fma, 16 },
    { "16 vpdpbusd + 16 vmulps", dp_mulps, 16 },
    { "16 vpdpbusd + 16 vcvtdq2ps", dp_cvt, 16 },
    { "16 vpdpbusd + 16 vpshufd", dp_shufd, 16 },
    { "16 vpbroadcastq m64", bcast_alone, 0 },
    { "16 aligned 64-byte loads", load_alone, 0 },
    { "16 64-byte loads across a line", split_alone, 0 },
    { "tile unit: 64 vpdpbusd, 8 vpackssdw, 8 vpdpwssd", tile_unit, 64 },
  };
  if (!__builtin_cpu_supports ("avx512vnni"))
    {
      fputs ("port-loops: this CPU has no AVX-512 VNNI\n", stderr);
      return 77;
    }
  double cyc = cycle_seconds ();

  memset (buf, 1, sizeof buf);
  printf ("clock: %.2f GHz (dependent additions)\n", 1e-9 / cyc);
  for (size_t i = 0; i < sizeof loops / sizeof loops[0]; i++)
    {
      double c = loops[i].fn () / cyc;
      if (loops[i].dots)
        printf ("%-52s %6.2f cycles  (%.0f%% of 2 vpdpbusd a cycle)\n",
                loops[i].what, c, 100.0 * loops[i].dots / (2.0 * c));
      else
        printf ("%-52s %6.2f cycles\n", loops[i].what, c);
    }
  return 0;
}

#else
int
main (void)
{
  fputs ("port-loops: x86-64 only\n", stderr);
  return 77;
}
#endif
