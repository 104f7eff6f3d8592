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

#include <ctype.h>
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

#include "cpu-amx.h"
#include "cpu-dispatch.h"
#include "cpu-vec.h"

/* The levels, from the one table (cpu-levels.def).  configure defines
   TSR_CPU_BUILT_<suffix> (the level's kernels are built) and
   TSR_CPU_TESTABLE_<suffix> (the compiler can test its features: the
   host's family) as 0 or 1 for every level of the table;
   TSR_CPU_IF (C) (CODE) is CODE where C is 1.  */
#include "cpu-levels.def"

#define TSR_CPU_IF(c) TSR_CPU_IF_ (c)
#define TSR_CPU_IF_(c) TSR_CPU_IF_##c
#define TSR_CPU_IF_0(...)
#define TSR_CPU_IF_1(...) __VA_ARGS__
#define TSR_CPU_UNPAREN(...) __VA_ARGS__
#define TSR_CPU_CALL(m, ...) m (__VA_ARGS__)

/* Level positions, in table order: lowest first within a family;
   "generic" (the compiler's default target) is below everything.  */
enum
{
#define X_ENUM(s, n, f, fl, m, ft, c) LVL_##s,
  TSR_CPU_LEVELS (X_ENUM, )
#undef X_ENUM
  LVL_COUNT
};

#define TSR_CPU_VEC_V(name, params, args) TSR_CPU_VEC (void, name, params, args)

/* Per-level prototypes of the levels built: every function of
   cpu-vec.def for every level.  */
#define X_PROTO_(s, ret, name, params) \
  TSR_MODULE_HIDDEN ret tsr_cpu_##name##_##s params;
#define X_PROTO(s, n, f, fl, m, ft, c) \
  TSR_CPU_IF (TSR_CPU_BUILT_##s) (TSR_CPU_CALL (X_PROTO_, s, TSR_CPU_UNPAREN c))
#define TSR_CPU_VEC(ret, name, params, args) \
  TSR_CPU_LEVELS (X_PROTO, (ret, name, params))
#include "cpu-vec.def"
#undef TSR_CPU_VEC

/* "case LVL: return that level's function" for the levels built.  */
#define X_CASE_(s, name) case LVL_##s: return tsr_cpu_##name##_##s;
#define X_CASE(s, n, f, fl, m, ft, c) \
  TSR_CPU_IF (TSR_CPU_BUILT_##s) (X_CASE_ (s, c))
#define ALL_CASES(name) TSR_CPU_LEVELS (X_CASE, name)

static bool
level_built (int l)
{
  switch (l)
    {
#define X_BUILT(s, n, f, fl, m, ft, c) \
  TSR_CPU_IF (TSR_CPU_BUILT_##s) (case LVL_##s: return true;)
      TSR_CPU_LEVELS (X_BUILT, )
#undef X_BUILT
    default: return false;
    }
}

static const char *
level_name (int l)
{
  static const char *const names[] = {
#define X_NAME(s, n, f, fl, m, ft, c) n,
    TSR_CPU_LEVELS (X_NAME, )
#undef X_NAME
  };
  return l >= 0 && l < LVL_COUNT ? names[l] : "?";
}

/* The name TESSERA_CPU_LEVEL may use: the level's name, its -march
   spelling, or "baseline" (-1).  -2: none of them.  */
static int
level_from_name (const char *s)
{
  static const char *const march[] = {
#define X_MARCH(s, n, f, fl, m, ft, c) m,
    TSR_CPU_LEVELS (X_MARCH, )
#undef X_MARCH
  };
  if (strcmp (s, "baseline") == 0)
    return -1;
  for (int l = 0; l < LVL_COUNT; l++)
    if (strcmp (s, level_name (l)) == 0 || strcmp (s, march[l]) == 0)
      return l;
  return -2;
}

/* What the levels test of the CPU.  x86: nothing here, the compiler's
   __builtin_cpu_supports (initialized by __builtin_cpu_init); aarch64:
   the kernel's hardware capabilities, which glibc passes to ifunc
   resolvers and getauxval gives elsewhere.  */
struct cpu_caps
{
  unsigned long hwcap, hwcap2;
};

/* The feature terms of cpu-levels.def as tests.  */
#define TSR_CPU_ABOVE(s) && level_has_features (LVL_##s, c)
#define TSR_CPU_X86(f) && __builtin_cpu_supports (f)
#ifdef TSR_CPU_SUPPORTS_F16C
#define TSR_CPU_X86_F16C && __builtin_cpu_supports ("f16c")
#else
#define TSR_CPU_X86_F16C
#endif
#define TSR_CPU_X86_AMX && tsr_cpu_amx_usable ()
#define TSR_CPU_HWCAP(f) && (c->hwcap & HWCAP_##f)
#define TSR_CPU_HWCAP2(f) && (c->hwcap2 & HWCAP2_##f)

/* Whether the CPU described by C has the features of level L.  No
   library calls and no relocated data: the ifunc resolvers use it.  */
static bool
level_has_features (int l, const struct cpu_caps *c)
{
  (void) c;
  switch (l)
    {
#define X_FEAT(s, n, f, fl, m, ft, cx) \
  TSR_CPU_IF (TSR_CPU_TESTABLE_##s) (case LVL_##s: return true ft;)
      TSR_CPU_LEVELS (X_FEAT, )
#undef X_FEAT
    default: return false;
    }
}

#undef TSR_CPU_ABOVE
#undef TSR_CPU_X86
#undef TSR_CPU_X86_F16C
#undef TSR_CPU_X86_AMX
#undef TSR_CPU_HWCAP
#undef TSR_CPU_HWCAP2

#ifdef TSR_USE_IFUNC
/* The best level built that the CPU has the features of, or -1 (what
   the resolvers bind).  */
static int
best_by_features (const struct cpu_caps *c)
{
  int best = -1;
  for (int l = 0; l < LVL_COUNT; l++)
    if (level_built (l) && level_has_features (l, c))
      best = l;
  return best;
}
#endif

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
choose (const struct cpu_caps *c)
{
  const char *cap_env = getenv ("TESSERA_CPU_LEVEL_CAP");
  int cap = cap_env ? level_from_name (cap_env) : -2;
  int best = -1;
  for (int l = 0; l < LVL_COUNT; l++)
    {
      runs[l] = level_built (l) && level_has_features (l, c)
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
      else if (!level_has_features (want, c) || (cap >= 0 && want > cap))
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

static void features_seen (const struct cpu_caps *c);

static void
init_once (void)
{
  struct cpu_caps c;

  runtime_caps (&c);
  choose (&c);
  features_seen (&c);
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

/* The CPU features the levels test (each level's own terms in
   cpu-levels.def), those this CPU has: why the level is what it is
   (tessera-info prints them).  */
static void
features_seen (const struct cpu_caps *c)
{
  char *buf = features_buf;
  size_t size = sizeof features_buf, len = 0;

  (void) c;
#define SEEN(name, have)                                                \
  do                                                                    \
    if ((have) && len < size)                                           \
      {                                                                 \
        size_t at_ = len;                                               \
        len += (size_t) snprintf (buf + len, size - len, "%s%s",        \
                                  len ? " " : "", name);                \
        for (; at_ < len && at_ < size; at_++)                          \
          buf[at_] = (char) tolower ((unsigned char) buf[at_]);         \
      }                                                                 \
  while (0);
#define TSR_CPU_ABOVE(s)
#define TSR_CPU_X86(f) SEEN (f, __builtin_cpu_supports (f))
#ifdef TSR_CPU_SUPPORTS_F16C
#define TSR_CPU_X86_F16C SEEN ("f16c", __builtin_cpu_supports ("f16c"))
#else
#define TSR_CPU_X86_F16C
#endif
#define TSR_CPU_X86_AMX SEEN ("amx-int8", tsr_cpu_amx_usable ())
#define TSR_CPU_HWCAP(f) SEEN (#f, c->hwcap & HWCAP_##f)
#define TSR_CPU_HWCAP2(f) SEEN (#f, c->hwcap2 & HWCAP2_##f)
#define X_SEEN(s, n, f, fl, m, ft, cx) TSR_CPU_IF (TSR_CPU_TESTABLE_##s) (ft)
  TSR_CPU_LEVELS (X_SEEN, )
#undef X_SEEN
#undef TSR_CPU_ABOVE
#undef TSR_CPU_X86
#undef TSR_CPU_X86_F16C
#undef TSR_CPU_X86_AMX
#undef TSR_CPU_HWCAP
#undef TSR_CPU_HWCAP2
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
