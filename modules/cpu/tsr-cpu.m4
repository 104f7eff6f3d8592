# tsr-cpu.m4 - ISA levels of the CPU backend and ifunc support;
# configure.ac includes this file, which registers the backend at its
# end (the CPU backend is always built).

# TSR_CPU_LEVELS: choose the ISA levels the CPU backend's hot loops are
# compiled for, from the one table of levels, modules/cpu/cpu-levels.def
# (read at configure time through gen-levels-mk.sh --table).  Default:
# every level of the host's family whose flags and feature tests the
# compiler accepts (generic on other hosts); --with-cpu-levels=LIST
# names them (an unknown or unaccepted level is then an error).  Sets
# TSR_CPU_LEVELS_BUILT (names), TSR_CPU_LEVEL_LIBS (the per-level
# libraries to build) and TSR_CPU_LEVEL_CPPFLAGS (-DTSR_CPU_BUILT_<s>=0
# or 1 for every level of the table: what cpu-dispatch.c and the tests
# expand).
AC_DEFUN([TSR_CPU_LEVELS], [
  AC_REQUIRE([AC_CANONICAL_HOST])
  AC_ARG_WITH([cpu-levels],
    [AS_HELP_STRING([--with-cpu-levels=LIST],
      [ISA levels for the CPU backend, space or comma separated, by name
       or -march spelling (modules/cpu/cpu-levels.def): x86-64, v2, v3,
       v3-vnni, v4, v4-vnni, v4-amx (x86_64 hosts); armv8-a, armv8.2-a,
       armv8.6-a (aarch64); generic (default: every level of the host
       family the compiler accepts)])],
    [tsr_levels_asked=yes; tsr_levels_want=`echo "$withval" | tr ',' ' '`],
    [tsr_levels_asked=no; tsr_levels_want=])
  AS_CASE([$host_cpu],
    [x86_64|amd64], [tsr_family=x86_64],
    [aarch64|arm64], [tsr_family=aarch64],
    [tsr_family=none])
  tsr_levels_table=`$SHELL "$srcdir/modules/cpu/gen-levels-mk.sh" --table \
    "$srcdir/modules/cpu/cpu-levels.def"` ||
    AC_MSG_ERROR([cannot read $srcdir/modules/cpu/cpu-levels.def])
  test "$tsr_levels_asked" = yes ||
    echo "$tsr_levels_table" | grep "^[[^|]]*|[[^|]]*|$tsr_family|" >/dev/null ||
    tsr_levels_want=generic
  tsr_levels_built=
  tsr_levels_names=
  tsr_levels_seen=
  TSR_CPU_LEVEL_LIBS=
  TSR_CPU_LEVEL_CPPFLAGS=
  while IFS='|' read -r tsr_suffix tsr_name tsr_fam tsr_flags tsr_march tsr_feats; do
    test -n "$tsr_suffix" || continue
    tsr_want=no
    if test -n "$tsr_levels_want"; then
      for tsr_w in $tsr_levels_want; do
        case $tsr_w in
          "$tsr_name"|"$tsr_march"|"$tsr_suffix")
            tsr_want=yes
            tsr_levels_seen="$tsr_levels_seen $tsr_w" ;;
        esac
      done
    elif test "$tsr_fam" = "$tsr_family"; then
      tsr_want=yes
    fi
    tsr_built=0
    tsr_testable=0
    dnl Every level of the host's family is probed (its feature test
    dnl serves the levels above it), the wanted ones are built.
    if test "$tsr_want" = yes || test "$tsr_fam" = "$tsr_family" ||
       test "$tsr_fam" = any; then
      AC_MSG_CHECKING([whether $CC can compile for CPU level $tsr_name])
      tsr_save_CFLAGS=$CFLAGS
      CFLAGS="$CFLAGS $tsr_flags"
      dnl The level's feature test as cpu-dispatch.c writes it (the terms
      dnl of cpu-levels.def): the compiler must know every feature name.
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#if defined (__linux__) && defined (__aarch64__)
#include <sys/auxv.h>
#endif
#define TSR_CPU_ABOVE(s)
#define TSR_CPU_X86(f) && __builtin_cpu_supports (f)
#define TSR_CPU_X86_F16C
#define TSR_CPU_X86_AMX
#define TSR_CPU_HWCAP(f) && (getauxval (AT_HWCAP) & HWCAP_##f)
#define TSR_CPU_HWCAP2(f) && (getauxval (AT_HWCAP2) & HWCAP2_##f)
]], [[return 1 $tsr_feats;]])], [tsr_ok=yes], [tsr_ok=no])
      CFLAGS=$tsr_save_CFLAGS
      AC_MSG_RESULT([$tsr_ok])
      test "$tsr_ok" = yes && tsr_testable=1
      if test "$tsr_ok" = yes && test "$tsr_want" = yes; then
        tsr_built=1
        tsr_levels_built="$tsr_levels_built $tsr_suffix"
        tsr_levels_names="$tsr_levels_names $tsr_name"
        TSR_CPU_LEVEL_LIBS="$TSR_CPU_LEVEL_LIBS modules/cpu/libcpu-$tsr_suffix.la"
      elif test "$tsr_want" = yes && test "$tsr_levels_asked" = yes; then
        AC_MSG_ERROR([$CC cannot compile for CPU level $tsr_name])
      fi
    fi
    TSR_CPU_LEVEL_CPPFLAGS="$TSR_CPU_LEVEL_CPPFLAGS -DTSR_CPU_BUILT_$tsr_suffix=$tsr_built -DTSR_CPU_TESTABLE_$tsr_suffix=$tsr_testable"
  done <<TSR_LEVELS_EOF
$tsr_levels_table
TSR_LEVELS_EOF
  for tsr_w in $tsr_levels_want; do
    case " $tsr_levels_seen " in
      *" $tsr_w "*) ;;
      *) AC_MSG_ERROR([unknown CPU level '$tsr_w' (see --help)]) ;;
    esac
  done
  test -n "$tsr_levels_built" ||
    AC_MSG_ERROR([no CPU level can be compiled; try --with-cpu-levels=generic])
  tsr_levels_names=`echo $tsr_levels_names`
  AC_DEFINE_UNQUOTED([TSR_CPU_LEVELS_BUILT], ["$tsr_levels_names"],
    [ISA levels the CPU backend is built for.])
  AC_SUBST([TSR_CPU_LEVELS_BUILT], [$tsr_levels_names])
  AC_SUBST([TSR_CPU_LEVEL_LIBS])
  AC_SUBST([TSR_CPU_LEVEL_CPPFLAGS])
  tsr_summary_cpu_levels=$tsr_levels_names
])

# TSR_CHECK_IFUNC: GNU indirect functions, trusted on glibc and FreeBSD
# only (x86, and aarch64 with <sys/ifunc.h>: resolvers get the hardware
# capabilities as arguments), checked with a link test under -Werror.  --disable-ifunc uses
# the function-pointer table everywhere, and so do instrumented builds
# (-fsanitize in CFLAGS, --enable-fuzzing) unless --enable-ifunc.
AC_DEFUN([TSR_CHECK_IFUNC], [
  AC_ARG_ENABLE([ifunc],
    [AS_HELP_STRING([--disable-ifunc],
      [choose CPU kernels through a function table set once at start-up
       instead of GNU ifunc resolvers])],
    [], [enable_ifunc=auto])
  tsr_ifunc=no
  tsr_ifunc_why=
  # Sanitizers and coverage instrument the resolvers too, and resolvers
  # run while the program is being relocated, before the sanitizer's
  # runtime is ready: an instrumented build crashes at start.  Such
  # builds take the table unless --enable-ifunc insists.
  case "x$enable_fuzzing $CFLAGS" in
    xyes*|*-fsanitize=*)
      if test "x$enable_ifunc" = xauto; then
        enable_ifunc=no
        tsr_ifunc_why=": instrumented build, -fsanitize or --enable-fuzzing"
      fi ;;
  esac
  if test "x$enable_ifunc" != xno; then
    AC_CACHE_CHECK([for GNU ifunc support], [tsr_cv_ifunc], [
      tsr_save_CFLAGS=$CFLAGS
      CFLAGS="$CFLAGS -Werror"
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[
#include <stdlib.h>
#if !defined (__GLIBC__) && !defined (__FreeBSD__)
# error "ifunc is trusted on glibc and FreeBSD only"
#endif
static int impl (void) { return 42; }
#if defined (__aarch64__)
/* The resolvers read the hardware capabilities glibc passes them.  */
#include <stdint.h>
#include <sys/ifunc.h>
static void *resolve (uint64_t hwcap, const __ifunc_arg_t *arg)
{ (void) arg; return hwcap ? (void *) impl : (void *) impl; }
#elif defined (__x86_64__) || defined (__i386__)
static void *resolve (void) { __builtin_cpu_init (); return (void *) impl; }
#else
# error "no resolvers written for this architecture"
#endif
int probe (void) __attribute__ ((ifunc ("resolve")));
]], [[return probe () != 42;]])],
        [tsr_cv_ifunc=yes], [tsr_cv_ifunc=no])
      CFLAGS=$tsr_save_CFLAGS])
    tsr_ifunc=$tsr_cv_ifunc
    if test "x$enable_ifunc" = xyes && test "$tsr_ifunc" != yes; then
      AC_MSG_ERROR([--enable-ifunc given but ifunc does not work here])
    fi
  fi
  AS_IF([test "$tsr_ifunc" = yes],
    [AC_DEFINE([TSR_USE_IFUNC], [1],
       [CPU kernels are chosen by GNU ifunc resolvers.])
     tsr_summary_dispatch="ifunc"],
    [tsr_summary_dispatch="function table (no ifunc$tsr_ifunc_why)"])
  AC_CACHE_CHECK([whether __builtin_cpu_supports knows f16c],
    [tsr_cv_cpu_f16c], [
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [[
#if defined (__x86_64__) || defined (__i386__)
return __builtin_cpu_supports ("f16c");
#endif
]])], [tsr_cv_cpu_f16c=yes], [tsr_cv_cpu_f16c=no])])
  AS_IF([test "$tsr_cv_cpu_f16c" = yes],
    [AC_DEFINE([TSR_CPU_SUPPORTS_F16C], [1],
       [__builtin_cpu_supports accepts "f16c".])])
  dnl tessera-bench's read bandwidth (the roof) reads with the widest
  dnl vectors the CPU has: functions with a target attribute, chosen
  dnl at run time.
  AC_CACHE_CHECK([for x86 function target attributes and __builtin_cpu_supports],
    [tsr_cv_target_x86], [
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#if !defined (__x86_64__) && !defined (__i386__)
# error "not x86"
#endif
typedef unsigned long long v8 __attribute__ ((vector_size (64)));
__attribute__ ((target ("avx512f"))) static v8 add8 (v8 a, v8 b)
{ return a + b; }
typedef unsigned long long v4 __attribute__ ((vector_size (32)));
__attribute__ ((target ("avx2"))) static v4 add4 (v4 a, v4 b)
{ return a + b; }
]], [[
v8 x = { 1 }; v4 y = { 1 };
if (__builtin_cpu_supports ("avx512f")) x = add8 (x, x);
if (__builtin_cpu_supports ("avx2")) y = add4 (y, y);
return (int) (x[0] + y[0]);
]])], [tsr_cv_target_x86=yes], [tsr_cv_target_x86=no])])
  AS_IF([test "$tsr_cv_target_x86" = yes],
    [AC_DEFINE([TSR_HAVE_TARGET_X86_VECTORS], [1],
       [The compiler takes target ("avx2") / target ("avx512f") function
        attributes and __builtin_cpu_supports knows those features.])])
])

TSR_BACKEND([cpu], [
  TSR_CPU_LEVELS
  TSR_CHECK_IFUNC
  tsr_have_cpu=yes
  tsr_cpu_detail="      ISA levels .... $tsr_summary_cpu_levels
      dispatch ...... $tsr_summary_dispatch"])
