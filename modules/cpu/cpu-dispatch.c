/* cpu-dispatch.c - choosing the ISA level of the CPU backend's kernels.
 *
 * Every function of cpu-vec.def exists once per level built
 * (tsr_cpu_<name>_<level>, from cpu-vec.c).  This file, compiled at
 * the baseline level only, makes tsr_cpu_<name> the best level the CPU
 * and the operating system support (AVX state enabled in XCR0 is part
 * of what __builtin_cpu_supports checks), or the lower level named by
 * TESSERA_CPU_LEVEL.  A higher level than the CPU supports is refused,
 * never run: the note says so and the best supported level is used.
 *
 * One mechanism, two forms.  The entry points tsr_cpu_<name> call
 * through a pointer to a table of one level's functions; the pointer
 * starts at a table of entries that initialize the dispatch and call
 * again (the GMP "fat binary" way), so nothing needs an init call
 * first.  With GNU ifunc (configure's TSR_USE_IFUNC), the level the
 * CPU's features allow is also bound by ifunc resolvers that test
 * features only (x86: __builtin_cpu_supports; aarch64: the hardware
 * capabilities glibc passes them), and the pointer is NULL when that is
 * the level chosen: the entry points call the resolved functions.
 * TESSERA_CPU_LEVEL and TESSERA_CPU_LEVEL_CAP are read once, by
 * ordinary code (tsr_cpu_dispatch_init), never by a resolver; a level
 * they force goes through the table.  Resolvers run while the module
 * is relocated (in a static program, before the C library is set up),
 * so they touch no relocated data: levels are looked up through switch
 * statements and functions named directly.  */
#include <config.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <pthread.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include "cpu-dispatch.h"
#include "cpu-vec.h"

/* Level positions, lowest first within a family; "generic" (the
   compiler's default target) is below everything.  */
enum
{
  LVL_GENERIC,
  LVL_X86_64, LVL_V2, LVL_V3, LVL_V3VNNI, LVL_V4, LVL_V4VNNI,
  LVL_ARMV8, LVL_ARMV8_2, LVL_ARMV8_6,
  LVL_COUNT
};

/* Per-level prototypes of the levels built.  */
#define TSR_CPU_VEC_V(name, params, args) TSR_CPU_VEC (void, name, params, args)
#ifdef TSR_CPU_HAVE_LEVEL_X86_64
#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_x86_64 params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V2
#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_v2 params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V3
#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_v3 params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V3VNNI
#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_v3vnni params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V4
#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_v4 params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V4VNNI
#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_v4vnni params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#endif
#ifdef TSR_CPU_HAVE_LEVEL_ARMV8
#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_armv8 params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#endif
#ifdef TSR_CPU_HAVE_LEVEL_ARMV8_2
#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_armv8_2 params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#endif
#ifdef TSR_CPU_HAVE_LEVEL_ARMV8_6
#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_armv8_6 params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#endif
#ifdef TSR_CPU_HAVE_LEVEL_GENERIC
#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_generic params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#endif

/* "case LVL: return that level's function" for the levels built.  */
#ifdef TSR_CPU_HAVE_LEVEL_X86_64
#define CASE_X86_64(n) case LVL_X86_64: return tsr_cpu_##n##_x86_64;
#else
#define CASE_X86_64(n)
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V2
#define CASE_V2(n) case LVL_V2: return tsr_cpu_##n##_v2;
#else
#define CASE_V2(n)
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V3
#define CASE_V3(n) case LVL_V3: return tsr_cpu_##n##_v3;
#else
#define CASE_V3(n)
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V3VNNI
#define CASE_V3VNNI(n) case LVL_V3VNNI: return tsr_cpu_##n##_v3vnni;
#else
#define CASE_V3VNNI(n)
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V4
#define CASE_V4(n) case LVL_V4: return tsr_cpu_##n##_v4;
#else
#define CASE_V4(n)
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V4VNNI
#define CASE_V4VNNI(n) case LVL_V4VNNI: return tsr_cpu_##n##_v4vnni;
#else
#define CASE_V4VNNI(n)
#endif
#ifdef TSR_CPU_HAVE_LEVEL_ARMV8
#define CASE_ARMV8(n) case LVL_ARMV8: return tsr_cpu_##n##_armv8;
#else
#define CASE_ARMV8(n)
#endif
#ifdef TSR_CPU_HAVE_LEVEL_ARMV8_2
#define CASE_ARMV8_2(n) \
  case LVL_ARMV8_2: return tsr_cpu_##n##_armv8_2;
#else
#define CASE_ARMV8_2(n)
#endif
#ifdef TSR_CPU_HAVE_LEVEL_ARMV8_6
#define CASE_ARMV8_6(n) \
  case LVL_ARMV8_6: return tsr_cpu_##n##_armv8_6;
#else
#define CASE_ARMV8_6(n)
#endif
#ifdef TSR_CPU_HAVE_LEVEL_GENERIC
#define CASE_GENERIC(n) case LVL_GENERIC: return tsr_cpu_##n##_generic;
#else
#define CASE_GENERIC(n)
#endif
#define ALL_CASES(n) CASE_X86_64 (n) CASE_V2 (n) CASE_V3 (n) \
  CASE_V3VNNI (n) CASE_V4 (n) CASE_V4VNNI (n) \
  CASE_ARMV8 (n) CASE_ARMV8_2 (n) CASE_ARMV8_6 (n) CASE_GENERIC (n)

static bool
level_built (int l)
{
  switch (l)
    {
#ifdef TSR_CPU_HAVE_LEVEL_X86_64
    case LVL_X86_64: return true;
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V2
    case LVL_V2: return true;
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V3
    case LVL_V3: return true;
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V3VNNI
    case LVL_V3VNNI: return true;
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V4
    case LVL_V4: return true;
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V4VNNI
    case LVL_V4VNNI: return true;
#endif
#ifdef TSR_CPU_HAVE_LEVEL_ARMV8
    case LVL_ARMV8: return true;
#endif
#ifdef TSR_CPU_HAVE_LEVEL_ARMV8_2
    case LVL_ARMV8_2: return true;
#endif
#ifdef TSR_CPU_HAVE_LEVEL_ARMV8_6
    case LVL_ARMV8_6: return true;
#endif
#ifdef TSR_CPU_HAVE_LEVEL_GENERIC
    case LVL_GENERIC: return true;
#endif
    default: return false;
    }
}

static const char *
level_name (int l)
{
  switch (l)
    {
    case LVL_X86_64: return "x86-64";
    case LVL_V2: return "v2";
    case LVL_V3: return "v3";
    case LVL_V3VNNI: return "v3-vnni";
    case LVL_V4: return "v4";
    case LVL_V4VNNI: return "v4-vnni";
    case LVL_ARMV8: return "armv8-a";
    case LVL_ARMV8_2: return "armv8.2-a";
    case LVL_ARMV8_6: return "armv8.6-a";
    case LVL_GENERIC: return "generic";
    default: return "?";
    }
}

/* The name TESSERA_CPU_LEVEL may use: the short name or the -march.  */
static int
level_from_name (const char *s)
{
  static const struct { const char *alias; int level; } aliases[] = {
    { "baseline", -1 }, { "x86-64-v2", LVL_V2 }, { "x86-64-v3", LVL_V3 },
    { "x86-64-v3+avxvnni", LVL_V3VNNI }, { "x86-64-v4", LVL_V4 },
    { "x86-64-v4+avx512vnni", LVL_V4VNNI },
    { "armv8.2-a+dotprod+fp16", LVL_ARMV8_2 },
    { "armv8.6-a+i8mm+sve", LVL_ARMV8_6 }
  };
  for (int l = 0; l < LVL_COUNT; l++)
    if (strcmp (s, level_name (l)) == 0)
      return l;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp (s, aliases[i].alias) == 0)
      return aliases[i].level;
  return -2;
}

#if defined(__x86_64__) || defined(__i386__)
static bool
x86_v2 (void)
{
  return __builtin_cpu_supports ("popcnt") && __builtin_cpu_supports ("sse3")
         && __builtin_cpu_supports ("ssse3")
         && __builtin_cpu_supports ("sse4.1")
         && __builtin_cpu_supports ("sse4.2");
}

static bool
x86_v3 (void)
{
  return x86_v2 () && __builtin_cpu_supports ("avx")
         && __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma")
#ifdef TSR_CPU_SUPPORTS_F16C
         && __builtin_cpu_supports ("f16c")
#endif
         && __builtin_cpu_supports ("bmi") && __builtin_cpu_supports ("bmi2");
}

static bool
x86_v4 (void)
{
  return x86_v3 () && __builtin_cpu_supports ("avx512f")
         && __builtin_cpu_supports ("avx512bw")
         && __builtin_cpu_supports ("avx512dq")
         && __builtin_cpu_supports ("avx512vl");
}

#ifdef TSR_CPU_HAVE_LEVEL_V3VNNI
static bool
x86_v3vnni (void)
{
  return x86_v3 () && __builtin_cpu_supports ("avxvnni");
}
#endif

#ifdef TSR_CPU_HAVE_LEVEL_V4VNNI
static bool
x86_v4vnni (void)
{
  return x86_v4 () && __builtin_cpu_supports ("avx512vnni");
}
#endif
#endif

/* What the levels test of the CPU.  x86: nothing here, the compiler's
   __builtin_cpu_supports (initialized by __builtin_cpu_init); aarch64:
   the kernel's hardware capabilities, which glibc passes to ifunc
   resolvers and getauxval gives elsewhere.  */
struct cpu_caps
{
  unsigned long hwcap, hwcap2;
};

/* Whether the CPU described by C has the features of level L.  No
   library calls and no relocated data: the ifunc resolvers use it.  */
static bool
level_has_features (int l, const struct cpu_caps *c)
{
  (void) c;
  switch (l)
    {
#if defined(__x86_64__)
    case LVL_X86_64: return true;
    case LVL_V2: return x86_v2 ();
    case LVL_V3: return x86_v3 ();
    case LVL_V4: return x86_v4 ();
#ifdef TSR_CPU_HAVE_LEVEL_V3VNNI
    case LVL_V3VNNI: return x86_v3vnni ();
#endif
#ifdef TSR_CPU_HAVE_LEVEL_V4VNNI
    case LVL_V4VNNI: return x86_v4vnni ();
#endif
#endif
#if defined(__aarch64__)
    case LVL_ARMV8: return true;
#if defined(__linux__) && defined(HWCAP_ASIMDDP) && defined(HWCAP_ASIMDHP)
    case LVL_ARMV8_2:
      return (c->hwcap & (HWCAP_ASIMDDP | HWCAP_ASIMDHP))
             == (HWCAP_ASIMDDP | HWCAP_ASIMDHP);
#endif
#if defined(__linux__) && defined(HWCAP2_I8MM) && defined(HWCAP_SVE)
    case LVL_ARMV8_6:
      return level_has_features (LVL_ARMV8_2, c) && (c->hwcap & HWCAP_SVE)
             && (c->hwcap2 & HWCAP2_I8MM);
#endif
#endif
    case LVL_GENERIC: return true;
    default: return false;
    }
}

/* The best level built that the CPU has the features of, or -1.  */
static int
best_by_features (const struct cpu_caps *c)
{
  int best = -1;
  for (int l = 0; l < LVL_COUNT; l++)
    if (level_built (l) && level_has_features (l, c))
      best = l;
  return best;
}

static int
lowest_built (void)
{
  for (int l = 0; l < LVL_COUNT; l++)
    if (level_built (l))
      return l;
  return 0;
}

/* Level L's function NAME (the lowest level built for L < 0).  */
#define TSR_CPU_VEC(ret, name, params, args)                            \
  static ret (*pick_##name (int l)) params                             \
  {                                                                    \
    switch (l < 0 ? lowest_built () : l)                               \
      {                                                                \
        ALL_CASES (name)                                               \
      default: return NULL;                                            \
      }                                                                \
  }
#include "cpu-vec.def"
#undef TSR_CPU_VEC

/* The choice, made once by tsr_cpu_dispatch_init (ordinary code: the
   environment and the C library are there): the best level the CPU
   runs, or the one TESSERA_CPU_LEVEL names when it may.
   TESSERA_CPU_LEVEL_CAP (for testing) makes the CPU look as if it ran
   nothing above that level.  -1: no level built runs here.  */
static int chosen = -1;
static bool runs[LVL_COUNT];
static enum { NOTE_NONE, NOTE_UNKNOWN, NOTE_NOT_BUILT, NOTE_NOT_RUNNABLE,
              NOTE_HIGHER } note_kind;
static const char *note_value;
static char features_buf[256];
static char runnable_buf[128];

static void
runtime_caps (struct cpu_caps *c)
{
  c->hwcap = c->hwcap2 = 0;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init ();
#endif
#if defined(__aarch64__) && defined(__linux__)
  c->hwcap = getauxval (AT_HWCAP);
  c->hwcap2 = getauxval (AT_HWCAP2);
#endif
}

static void
choose (void)
{
  struct cpu_caps c;
  runtime_caps (&c);
  const char *cap_env = getenv ("TESSERA_CPU_LEVEL_CAP");
  int cap = cap_env ? level_from_name (cap_env) : -2;
  int best = -1;
  for (int l = 0; l < LVL_COUNT; l++)
    {
      runs[l] = level_built (l) && level_has_features (l, &c)
                && !(cap >= 0 && l > cap);
      if (runs[l])
        best = l;
    }
  const char *env = getenv ("TESSERA_CPU_LEVEL");
  if (env && *env && best >= 0)
    {
      int want = level_from_name (env);
      if (want == -1)           /* "baseline": the lowest that runs */
        for (want = 0; !runs[want]; want++)
          ;
      note_value = env;
      if (want == -2)
        note_kind = NOTE_UNKNOWN;
      else if (!level_built (want))
        note_kind = NOTE_NOT_BUILT;
      else if (!level_has_features (want, &c) || (cap >= 0 && want > cap))
        note_kind = NOTE_NOT_RUNNABLE;
      else if (want > best)
        note_kind = NOTE_HIGHER;
      else
        best = want;
    }
  chosen = best;
}

/* The kernels of one level, and the entry points' way to them.  KERN
   starts at LAZY, whose entries initialize the dispatch and call again
   (the GMP "fat binary" way: no function may be called before an init
   function, the first call is the init); tsr_cpu_dispatch_init then
   points it at TABLE, filled with the chosen level's functions.  With
   ifunc, KERN becomes NULL instead when the chosen level is the one
   the resolvers picked from the CPU's features alone (no
   TESSERA_CPU_LEVEL or TESSERA_CPU_LEVEL_CAP in effect), and the
   entry points call the ifunc-resolved functions.  */
struct kernels
{
#define TSR_CPU_VEC(ret, name, params, args) ret (*name) params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
};

#undef TSR_CPU_VEC_V
#define TSR_CPU_VEC(ret, name, params, args)                            \
  static ret lazy_##name params                                        \
  {                                                                    \
    tsr_cpu_dispatch_init ();                                          \
    return tsr_cpu_##name args;                                        \
  }
#define TSR_CPU_VEC_V(name, params, args)                               \
  static void lazy_##name params                                       \
  {                                                                    \
    tsr_cpu_dispatch_init ();                                          \
    tsr_cpu_##name args;                                               \
  }
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#undef TSR_CPU_VEC_V
#define TSR_CPU_VEC_V(name, params, args) TSR_CPU_VEC (void, name, params, args)

static const struct kernels lazy = {
#define TSR_CPU_VEC(ret, name, params, args) .name = lazy_##name,
#include "cpu-vec.def"
#undef TSR_CPU_VEC
};

static struct kernels table;
static const struct kernels *_Atomic kern = &lazy;

static inline const struct kernels *
kernels (void)
{
  return atomic_load_explicit (&kern, memory_order_acquire);
}

#ifdef TSR_USE_IFUNC

/* The resolvers: the best level built that the CPU's features allow,
   nothing else (no environment, no library calls: they run while the
   module is relocated, in a static program before the C library is
   set up).  On aarch64 glibc passes the hardware capabilities.  */
#if defined(__aarch64__)
#include <sys/ifunc.h>
#define RESOLVER_PARAMS (uint64_t hwcap, const __ifunc_arg_t *arg)
#define RESOLVER_CAPS(c)                                                \
  ((c).hwcap = (unsigned long) hwcap,                                   \
   (c).hwcap2 = (hwcap & _IFUNC_ARG_HWCAP) ? (unsigned long) arg->_hwcap2 \
                                           : 0)
#else
#define RESOLVER_PARAMS (void)
#define RESOLVER_CAPS(c) (__builtin_cpu_init (), (c).hwcap = (c).hwcap2 = 0)
#endif

#define TSR_CPU_VEC(ret, name, params, args)                            \
  typedef ret (*name##_fn) params;                                     \
  static name##_fn resolve_##name RESOLVER_PARAMS                      \
  {                                                                    \
    struct cpu_caps c;                                                 \
    RESOLVER_CAPS (c);                                                 \
    return pick_##name (best_by_features (&c));                        \
  }                                                                    \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_best params                   \
    __attribute__ ((ifunc ("resolve_" #name)));
#include "cpu-vec.def"
#undef TSR_CPU_VEC

#undef TSR_CPU_VEC_V
#define TSR_CPU_VEC(ret, name, params, args)                            \
  ret tsr_cpu_##name params                                            \
  {                                                                    \
    const struct kernels *kt_ = kernels ();                            \
    return kt_ ? kt_->name args : tsr_cpu_##name##_best args;          \
  }
#define TSR_CPU_VEC_V(name, params, args)                               \
  void tsr_cpu_##name params                                           \
  {                                                                    \
    const struct kernels *kt_ = kernels ();                            \
    if (kt_)                                                           \
      kt_->name args;                                                  \
    else                                                               \
      tsr_cpu_##name##_best args;                                      \
  }
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#undef TSR_CPU_VEC_V
#define TSR_CPU_VEC_V(name, params, args) TSR_CPU_VEC (void, name, params, args)

#else /* !TSR_USE_IFUNC */

#undef TSR_CPU_VEC_V
#define TSR_CPU_VEC(ret, name, params, args) \
  ret tsr_cpu_##name params { return kernels ()->name args; }
#define TSR_CPU_VEC_V(name, params, args) \
  void tsr_cpu_##name params { kernels ()->name args; }
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#undef TSR_CPU_VEC_V
#define TSR_CPU_VEC_V(name, params, args) TSR_CPU_VEC (void, name, params, args)

#endif /* !TSR_USE_IFUNC */

static void features_seen (void);

static void
init_once (void)
{
  choose ();
  features_seen ();
  size_t len = 0;
  for (int l = 0; l < LVL_COUNT; l++)
    if (runs[l])
      len += (size_t) snprintf (runnable_buf + len, sizeof runnable_buf - len,
                                "%s%s", len ? " " : "", level_name (l));
  if (!len)
    snprintf (runnable_buf, sizeof runnable_buf, "none");
#define TSR_CPU_VEC(ret, name, params, args) \
  table.name = pick_##name (chosen);
#include "cpu-vec.def"
#undef TSR_CPU_VEC
  const struct kernels *k = &table;
#ifdef TSR_USE_IFUNC
  struct cpu_caps c;
  runtime_caps (&c);
  if (chosen == best_by_features (&c))
    k = NULL;                   /* what the resolvers chose */
#endif
  atomic_store_explicit (&kern, k, memory_order_release);
}

static pthread_once_t init_control = PTHREAD_ONCE_INIT;

void
tsr_cpu_dispatch_init (void)
{
  pthread_once (&init_control, init_once);
}

const char *
tsr_cpu_dispatch_kind (void)
{
  tsr_cpu_dispatch_init ();
#ifdef TSR_USE_IFUNC
  return kernels () ? "ifunc; the level forced through a function table"
                    : "ifunc";
#else
  return "function table";
#endif
}

const char *
tsr_cpu_level_name (void)
{
  tsr_cpu_dispatch_init ();
  return chosen < 0 ? NULL : level_name (chosen);
}

const char *
tsr_cpu_levels_built (void)
{
  return TSR_CPU_LEVELS_BUILT;
}

const char *
tsr_cpu_levels_runnable (void)
{
  tsr_cpu_dispatch_init ();
  return runnable_buf;
}

/* The CPU features the levels test, those this CPU has: why the level
   is what it is (tessera-info prints them).  */
static void
features_seen (void)
{
  char *buf = features_buf;
  size_t size = sizeof features_buf, len = 0;

#define SEEN(name, have)                                                \
  do                                                                    \
    if ((have) && len < size)                                     \
      len += (size_t) snprintf (buf + len, size - len, "%s%s",     \
                                len ? " " : "", name);                   \
  while (0)
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init ();
  SEEN ("popcnt", __builtin_cpu_supports ("popcnt"));
  SEEN ("sse3", __builtin_cpu_supports ("sse3"));
  SEEN ("ssse3", __builtin_cpu_supports ("ssse3"));
  SEEN ("sse4.1", __builtin_cpu_supports ("sse4.1"));
  SEEN ("sse4.2", __builtin_cpu_supports ("sse4.2"));
  SEEN ("avx", __builtin_cpu_supports ("avx"));
  SEEN ("avx2", __builtin_cpu_supports ("avx2"));
  SEEN ("fma", __builtin_cpu_supports ("fma"));
#ifdef TSR_CPU_SUPPORTS_F16C
  SEEN ("f16c", __builtin_cpu_supports ("f16c"));
#endif
  SEEN ("bmi", __builtin_cpu_supports ("bmi"));
  SEEN ("bmi2", __builtin_cpu_supports ("bmi2"));
#ifdef TSR_CPU_HAVE_LEVEL_V3VNNI
  SEEN ("avxvnni", __builtin_cpu_supports ("avxvnni"));
#endif
  SEEN ("avx512f", __builtin_cpu_supports ("avx512f"));
  SEEN ("avx512bw", __builtin_cpu_supports ("avx512bw"));
  SEEN ("avx512dq", __builtin_cpu_supports ("avx512dq"));
  SEEN ("avx512vl", __builtin_cpu_supports ("avx512vl"));
#ifdef TSR_CPU_HAVE_LEVEL_V4VNNI
  SEEN ("avx512vnni", __builtin_cpu_supports ("avx512vnni"));
#endif
#elif defined(__aarch64__) && defined(__linux__)
  unsigned long hw = getauxval (AT_HWCAP), hw2 = getauxval (AT_HWCAP2);
  (void) hw2;
#ifdef HWCAP_ASIMD
  SEEN ("asimd", hw & HWCAP_ASIMD);
#endif
#ifdef HWCAP_ASIMDHP
  SEEN ("asimdhp", hw & HWCAP_ASIMDHP);
#endif
#ifdef HWCAP_ASIMDDP
  SEEN ("asimddp", hw & HWCAP_ASIMDDP);
#endif
#ifdef HWCAP_SVE
  SEEN ("sve", hw & HWCAP_SVE);
#endif
#ifdef HWCAP2_I8MM
  SEEN ("i8mm", hw2 & HWCAP2_I8MM);
#endif
#endif
#undef SEEN
  if (!len)
    snprintf (buf, size, "none tested");
}

const char *
tsr_cpu_features_seen (void)
{
  tsr_cpu_dispatch_init ();
  return features_buf;
}

const char *
tsr_cpu_level_note (void)
{
  static char note[256];
  const char *best = tsr_cpu_level_name ();

  if (!best)
    best = "none";
  switch (note_kind)
    {
    case NOTE_NONE:
      return NULL;
    case NOTE_UNKNOWN:
      snprintf (note, sizeof note, "TESSERA_CPU_LEVEL=%s is not a CPU level "
                "(built: %s); using %s", note_value, TSR_CPU_LEVELS_BUILT,
                best);
      break;
    case NOTE_NOT_BUILT:
      snprintf (note, sizeof note, "TESSERA_CPU_LEVEL=%s was not built "
                "(built: %s); using %s", note_value, TSR_CPU_LEVELS_BUILT,
                best);
      break;
    case NOTE_NOT_RUNNABLE:
    case NOTE_HIGHER:
      snprintf (note, sizeof note, "TESSERA_CPU_LEVEL=%s refused: this CPU "
                "supports at most %s; using %s", note_value, best, best);
      break;
    }
  return note;
}
