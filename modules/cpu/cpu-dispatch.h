/* cpu-dispatch.h - which ISA level the CPU backend runs at.  */
#ifndef TSR_CPU_DISPATCH_H
#define TSR_CPU_DISPATCH_H

#include <tessera/module.h> /* TSR_MODULE_HIDDEN */

/* Choose the level (once; idempotent).  Must run before any kernel
   where ifunc is not used.  */
TSR_MODULE_HIDDEN void tsr_cpu_dispatch_init (void);
/* The chosen level's name ("v3"), or NULL when this CPU runs none of
   the levels built.  */
TSR_MODULE_HIDDEN const char *tsr_cpu_level_name (void);
/* Levels built, and those of them this CPU (and OS) can run.  */
TSR_MODULE_HIDDEN const char *tsr_cpu_levels_built (void);
TSR_MODULE_HIDDEN const char *tsr_cpu_levels_runnable (void);
/* The CPU features the levels test that this CPU has ("avx2 fma ...",
   "asimd asimddp ..."): why the level is what it is.  */
TSR_MODULE_HIDDEN const char *tsr_cpu_features_seen (void);
/* Why TESSERA_CPU_LEVEL was not followed, or NULL.  */
TSR_MODULE_HIDDEN const char *tsr_cpu_level_note (void);
/* "ifunc" or "function table".  */
TSR_MODULE_HIDDEN const char *tsr_cpu_dispatch_kind (void);

#endif /* TSR_CPU_DISPATCH_H */
