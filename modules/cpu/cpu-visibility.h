/* cpu-visibility.h - TSR_CPU_HIDDEN, the mark of the CPU module's
 * internal functions: visible across its files, never exported (the
 * module exports only its descriptor, and a copy compiled into
 * libtessera must not leak or clash).  */
#ifndef TSR_CPU_VISIBILITY_H
#define TSR_CPU_VISIBILITY_H

#if defined(__GNUC__)
#define TSR_CPU_HIDDEN __attribute__ ((visibility ("hidden")))
#else
#define TSR_CPU_HIDDEN
#endif

#endif /* TSR_CPU_VISIBILITY_H */
