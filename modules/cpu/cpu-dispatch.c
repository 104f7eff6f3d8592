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
 * With GNU ifunc (configure's TSR_USE_IFUNC) each tsr_cpu_<name> is an
 * indirect function resolved once by the dynamic loader.  Resolvers run
 * before everything else of this module is relocated, so they touch no
 * relocated data: levels are looked up through switch statements and
 * functions named directly.  Without ifunc, a table of function
 * pointers is filled once by tsr_cpu_dispatch_init and the entries call
 * through it.  */
#include <config.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Resolvers may run before this module's calls into the C library are
   bound, so what they use is written here: no libc calls.  */
static bool
str_eq (const char *a, const char *b)
{
  while (*a && *a == *b)
    a++, b++;
  return *a == *b;
}

extern char **environ;

static const char *
env_var (const char *key)
{
  for (char **e = environ; e && *e; e++)
    {
      size_t i = 0;
      while (key[i] && (*e)[i] == key[i])
        i++;
      if (!key[i])
        return *e + i;
    }
  return NULL;
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
    if (str_eq (s, level_name (l)))
      return l;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (str_eq (s, aliases[i].alias))
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

static int level_from_name (const char *s);
static const char *env_var (const char *key);

/* TESSERA_CPU_LEVEL_CAP (for testing) makes the CPU look as if it ran
   nothing above that level.  */
static bool
level_capped (int l)
{
  const char *cap = env_var ("TESSERA_CPU_LEVEL_CAP=");
  int c = cap ? level_from_name (cap) : -2;
  return c >= 0 && l > c;
}

static bool
level_runs_really (int l);

static bool
level_runs (int l)
{
  return !level_capped (l) && level_runs_really (l);
}

static bool
level_runs_really (int l)
{
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
      return (getauxval (AT_HWCAP) & (HWCAP_ASIMDDP | HWCAP_ASIMDHP))
             == (HWCAP_ASIMDDP | HWCAP_ASIMDHP);
#endif
#if defined(__linux__) && defined(HWCAP2_I8MM) && defined(HWCAP_SVE)
    case LVL_ARMV8_6:
      return level_runs_really (LVL_ARMV8_2)
             && (getauxval (AT_HWCAP) & HWCAP_SVE)
             && (getauxval (AT_HWCAP2) & HWCAP2_I8MM);
#endif
#endif
    case LVL_GENERIC: return true;
    default: return false;
    }
}

/* The choice, made once.  -2: not yet; -1: no level built runs here.
   Why TESSERA_CPU_LEVEL was not followed is kept as a code and turned
   into words later (resolvers cannot call snprintf).  */
static int chosen = -2;
static enum { NOTE_NONE, NOTE_UNKNOWN, NOTE_NOT_BUILT, NOTE_NOT_RUNNABLE,
              NOTE_HIGHER } note_kind;
static const char *note_value;

static int
lowest_built (void)
{
  for (int l = 0; l < LVL_COUNT; l++)
    if (level_built (l))
      return l;
  return 0;
}

static int
choose_level (void)
{
  if (chosen != -2)
    return chosen;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init ();
#endif
  int best = -1;
  for (int l = 0; l < LVL_COUNT; l++)
    if (level_built (l) && level_runs (l))
      best = l;
  const char *env = env_var ("TESSERA_CPU_LEVEL=");
  if (env && *env && best >= 0)
    {
      int want = level_from_name (env);
      if (want == -1)           /* "baseline": the lowest that runs */
        for (want = 0; !(level_built (want) && level_runs (want)); want++)
          ;
      note_value = env;
      if (want == -2)
        note_kind = NOTE_UNKNOWN;
      else if (!level_built (want))
        note_kind = NOTE_NOT_BUILT;
      else if (!level_runs (want))
        note_kind = NOTE_NOT_RUNNABLE;
      else if (want > best)
        note_kind = NOTE_HIGHER;
      else
        best = want;
    }
  chosen = best;
  return chosen;
}

#include <pthread.h>

/* The function table: the dispatch without ifunc, and with ifunc too
   when the resolvers ran before the environment was set up (see
   below).  Filled once, by tsr_cpu_dispatch_init.  */
static struct
{
#define TSR_CPU_VEC(ret, name, params, args) ret (*name) params;
#include "cpu-vec.def"
#undef TSR_CPU_VEC
} table;

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

/* Entries that call through the table.  */
#undef TSR_CPU_VEC_V
#define TSR_CPU_VEC(ret, name, params, args) \
  static ret via_table_##name params { return table.name args; }
#define TSR_CPU_VEC_V(name, params, args) \
  static void via_table_##name params { table.name args; }
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#undef TSR_CPU_VEC_V
#define TSR_CPU_VEC_V(name, params, args) TSR_CPU_VEC (void, name, params, args)

#ifdef TSR_USE_IFUNC
static bool use_table;          /* entries go through the table */
#endif

static void
fill_table (void)
{
  /* Choose again: the first choice may have been made without the
     environment, so without TESSERA_CPU_LEVEL.  */
  chosen = -2;
  note_kind = NOTE_NONE;
  int l = choose_level ();
#define TSR_CPU_VEC(ret, name, params, args) table.name = pick_##name (l);
#include "cpu-vec.def"
#undef TSR_CPU_VEC
}

static pthread_once_t table_once = PTHREAD_ONCE_INIT;

#ifdef TSR_USE_IFUNC

/* One resolver per function; the first to run makes the choice.  When
   the CPU backend is compiled into a program (static builds), the
   resolvers run while the program is relocated, before the C library
   has set up environ: TESSERA_CPU_LEVEL cannot be read yet, so they
   return the table entries and tsr_cpu_dispatch_init chooses later,
   with the same rules.  */
#define TSR_CPU_VEC(ret, name, params, args)                            \
  typedef ret (*name##_fn) params;                                     \
  static name##_fn resolve_##name (void)                               \
  {                                                                    \
    if (!environ)                                                      \
      {                                                                \
        use_table = true;                                              \
        return via_table_##name;                                       \
      }                                                                \
    int l = choose_level ();                                           \
    switch (l < 0 ? lowest_built () : l)                               \
      {                                                                \
        ALL_CASES (name)                                               \
      default: return NULL;                                            \
      }                                                                \
  }                                                                    \
  ret tsr_cpu_##name params __attribute__ ((ifunc ("resolve_" #name)));
#include "cpu-vec.def"
#undef TSR_CPU_VEC

const char *
tsr_cpu_dispatch_kind (void)
{
  return use_table ? "ifunc, resolved through a table at start-up"
                   : "ifunc";
}

#else /* !TSR_USE_IFUNC */

#undef TSR_CPU_VEC_V
#define TSR_CPU_VEC(ret, name, params, args) \
  ret tsr_cpu_##name params { return via_table_##name args; }
#define TSR_CPU_VEC_V(name, params, args) \
  void tsr_cpu_##name params { via_table_##name args; }
#include "cpu-vec.def"
#undef TSR_CPU_VEC
#undef TSR_CPU_VEC_V
#define TSR_CPU_VEC_V(name, params, args) TSR_CPU_VEC (void, name, params, args)

const char *
tsr_cpu_dispatch_kind (void)
{
  return "function table";
}

#endif /* !TSR_USE_IFUNC */

void
tsr_cpu_dispatch_init (void)
{
#ifdef TSR_USE_IFUNC
  if (use_table)
    pthread_once (&table_once, fill_table);
  else
    choose_level ();
#else
  pthread_once (&table_once, fill_table);
#endif
  tsr_cpu_levels_runnable ();
}

const char *
tsr_cpu_level_name (void)
{
  int l = choose_level ();
  return l < 0 ? NULL : level_name (l);
}

const char *
tsr_cpu_levels_built (void)
{
  return TSR_CPU_LEVELS_BUILT;
}

const char *
tsr_cpu_levels_runnable (void)
{
  static char buf[128];
  if (!buf[0])
    {
      size_t len = 0;
      for (int l = 0; l < LVL_COUNT; l++)
        if (level_built (l) && level_runs (l))
          len += (size_t) snprintf (buf + len, sizeof buf - len, "%s%s",
                                    len ? " " : "", level_name (l));
      if (!len)
        snprintf (buf, sizeof buf, "none");
    }
  return buf;
}

/* The CPU features the levels test, those this CPU has: why the level
   is what it is (tessera-info prints them).  */
const char *
tsr_cpu_features_seen (void)
{
  static char buf[256];
  size_t len = 0;

  if (buf[0])
    return buf;
#define SEEN(name, have)                                                \
  do                                                                    \
    if ((have) && len < sizeof buf)                                     \
      len += (size_t) snprintf (buf + len, sizeof buf - len, "%s%s",     \
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
    snprintf (buf, sizeof buf, "none tested");
  return buf;
}

const char *
tsr_cpu_level_note (void)
{
  static char note[256];
  const char *best = tsr_cpu_level_name ();
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
