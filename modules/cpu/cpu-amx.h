/* cpu-amx.h - whether this process may run AMX tile instructions.
 *
 * Shared by the CPU backend's dispatch (the feature term
 * TSR_CPU_X86_AMX of cpu-levels.def, level v4-amx) and tessera-bench's
 * peaks, so that both decide alike.  */
#ifndef TSR_CPU_AMX_H
#define TSR_CPU_AMX_H

#include <stdbool.h>
#include <stdint.h>
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>        /* SYS_arch_prctl: a number, no call */
#endif

/* A tile configuration (LDTILECFG's 64 bytes): palette 1, then tile
   t's bytes a row and rows.  */
struct tsr_cpu_amx_config
{
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

/* The configuration both AMX kernels take (cpu-qdot-x8.c, blocks of
   32; cpu-kquant.c, groups of the super-blocks), in *C: palette 1;
   tiles 0 and 1 the int32 sums of 16 activation rows by 16 weight
   rows, 2 and 3 16 activation rows' group of G bytes, 4 and 5 16
   weight rows' group (G / 4 tile rows of 16 rows by 4 values); two of
   each, for groups in turn.  */
static inline void
tsr_cpu_amx_config_16x16 (struct tsr_cpu_amx_config *c, int g)
{
  *c = (struct tsr_cpu_amx_config) { .palette = 1 };
  for (int t = 0; t < 6; t++)
    {
      c->colsb[t] = (uint16_t) (t == 2 || t == 3 ? g : 64);
      c->rows[t] = (uint8_t) (t < 4 ? 16 : g / 4);
    }
}

/* The CPU has AMX-TILE and AMX-INT8 (CPUID leaf 7: EDX bits 24 and
   25), the OS enables the tile state (XCR0 bits 17 and 18), and Linux
   grants it to this process (arch_prctl ARCH_REQ_XCOMP_PERM for
   XFEATURE_XTILEDATA, Linux 5.16 and later; granted once, for every
   thread; asking again is harmless).  Without the grant the first tile
   instruction would kill the process, so AMX is usable only where the
   request succeeds.  No library call (ifunc resolvers use it): cpuid,
   xgetbv and the system call are written out.  Other systems: not
   usable.  */
static inline bool
tsr_cpu_amx_usable (void)
{
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) \
    && defined(SYS_arch_prctl)
  enum { ARCH_REQ_XCOMP_PERM_ = 0x1023, XFEATURE_XTILEDATA_ = 18 };
  uint32_t a, b, c, d;

  __asm__ ("cpuid" : "=a" (a), "=b" (b), "=c" (c), "=d" (d) : "a" (0), "c" (0));
  if (a < 7)
    return false;
  __asm__ ("cpuid" : "=a" (a), "=b" (b), "=c" (c), "=d" (d) : "a" (1), "c" (0));
  if (!(c & (1u << 27)))        /* OSXSAVE: xgetbv is there */
    return false;
  __asm__ ("cpuid" : "=a" (a), "=b" (b), "=c" (c), "=d" (d) : "a" (7), "c" (0));
  if ((d & (3u << 24)) != (3u << 24))
    return false;
  __asm__ ("xgetbv" : "=a" (a), "=d" (d) : "c" (0));
  if ((a & (3u << 17)) != (3u << 17))
    return false;
  long ret;
  __asm__ volatile ("syscall"
                    : "=a" (ret)
                    : "a" ((long) SYS_arch_prctl),
                      "D" ((long) ARCH_REQ_XCOMP_PERM_),
                      "S" ((long) XFEATURE_XTILEDATA_)
                    : "rcx", "r11", "memory");
  return ret == 0;
#else
  return false;
#endif
}

#endif /* TSR_CPU_AMX_H */
