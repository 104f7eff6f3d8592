/* cpu-level.h - naming for code compiled once per ISA level.
 *
 * Included by the per-level sources (cpu-vec.c, cpu-qdot.c,
 * cpu-gemm.c), compiled with -DTSR_CPU_SUFFIX=<level>:
 * TSR_CPU_LEVEL_FN (vec_dot_f32) names tsr_cpu_vec_dot_f32_<level>, and
 * every function of cpu-vec.def gets its per-level prototype.  Also the
 * small exact conversions those sources share.  */
#ifndef TSR_CPU_LEVEL_H
#define TSR_CPU_LEVEL_H

#include <stdint.h>
#include <string.h>

#include <tessera/types.h>

#include <tessera/module.h> /* TSR_MODULE_HIDDEN */

#ifndef TSR_CPU_SUFFIX
#error "per-level sources need -DTSR_CPU_SUFFIX=<level>"
#endif

#define TSR_CPU_NAME3_(name, level) tsr_cpu_##name##_##level
#define TSR_CPU_NAME3(name, level) TSR_CPU_NAME3_ (name, level)
#define TSR_CPU_LEVEL_FN(name) TSR_CPU_NAME3 (name, TSR_CPU_SUFFIX)

/* Full unrolling of short loops over registers, rows and columns, so
   that arrays of vector accumulators stay in registers (GCC 12
   otherwise keeps them in memory, at a third of the speed or less).  */
#if defined(__GNUC__)
#define TSR_CPU_UNROLL _Pragma ("GCC unroll 8")
#define TSR_CPU_UNROLL16 _Pragma ("GCC unroll 16")
#else
#define TSR_CPU_UNROLL
#define TSR_CPU_UNROLL16
#endif

#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_MODULE_HIDDEN ret TSR_CPU_LEVEL_FN (name) params;
#define TSR_CPU_VEC_V(name, params, args) TSR_CPU_VEC (void, name, params, args)
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#undef TSR_CPU_VEC_V

/* libtessera's f16 -> f32 conversion, inline (exact: the same value bit
   for bit), so that row loops make no call per element.  */
static inline float
bits_to_f32 (uint32_t u)
{
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

static inline float
fp16_to_f32 (tsr_fp16_t h)
{
  uint32_t sign = ((uint32_t) h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;

  if (exp == 0x1f)
    return bits_to_f32 (sign | 0x7f800000u | (mant << 13));
  if (exp == 0)
    {
      float v = (float) mant * 0x1p-24f;
      return sign ? -v : v;
    }
  return bits_to_f32 (sign | ((exp + 112u) << 23) | (mant << 13));
}

#endif /* TSR_CPU_LEVEL_H */
