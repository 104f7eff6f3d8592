/* cpu-level.h - naming for code compiled once per ISA level.
 *
 * Included by the per-level sources (cpu-vec.c), compiled with
 * -DTSR_CPU_SUFFIX=<level>: TSR_CPU_LEVEL_FN (vec_dot_f32) names
 * tsr_cpu_vec_dot_f32_<level>, and every function of cpu-vec.def gets
 * its per-level prototype.  */
#ifndef TSR_CPU_LEVEL_H
#define TSR_CPU_LEVEL_H

#include <stdint.h>

#include <tessera/types.h>

#include "cpu-visibility.h"

#ifndef TSR_CPU_SUFFIX
#error "per-level sources need -DTSR_CPU_SUFFIX=<level>"
#endif

#define TSR_CPU_NAME3_(name, level) tsr_cpu_##name##_##level
#define TSR_CPU_NAME3(name, level) TSR_CPU_NAME3_ (name, level)
#define TSR_CPU_LEVEL_FN(name) TSR_CPU_NAME3 (name, TSR_CPU_SUFFIX)

#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_CPU_HIDDEN ret TSR_CPU_LEVEL_FN (name) params;
#define TSR_CPU_VEC_V(name, params, args) TSR_CPU_VEC (void, name, params, args)
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#undef TSR_CPU_VEC_V

#endif /* TSR_CPU_LEVEL_H */
