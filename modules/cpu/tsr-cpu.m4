# tsr-cpu.m4 - ISA levels of the CPU backend and ifunc support;
# configure.ac includes this file, which registers the backend at its
# end (the CPU backend is always built).

# TSR_CPU_LEVELS: choose the ISA levels the CPU backend's hot loops are
# compiled for.  Default: every level of the host CPU family that the
# compiler accepts; --with-cpu-levels=LIST names them (an unknown or
# unaccepted level is then an error).  Defines TSR_CPU_LEVELS_BUILT,
# TSR_CPU_HAVE_LEVEL_<L> and the automake conditionals TSR_LEVEL_<L>.
AC_DEFUN([TSR_CPU_LEVELS], [
  AC_REQUIRE([AC_CANONICAL_HOST])
  AC_ARG_WITH([cpu-levels],
    [AS_HELP_STRING([--with-cpu-levels=LIST],
      [ISA levels for the CPU backend, space or comma separated:
       x86-64, x86-64-v2, x86-64-v3, x86-64-v3+avxvnni, x86-64-v4,
       x86-64-v4+avx512vnni (x86_64 hosts);
       armv8-a, armv8.2-a+dotprod+fp16, armv8.6-a+i8mm+sve (aarch64);
       generic (default: every level of the host family the compiler
       accepts)])],
    [tsr_levels_asked=yes; tsr_levels=`echo "$withval" | tr ',' ' '`],
    [tsr_levels_asked=no
     AS_CASE([$host_cpu],
       [x86_64|amd64], [tsr_levels="x86-64 x86-64-v2 x86-64-v3 x86-64-v3+avxvnni x86-64-v4 x86-64-v4+avx512vnni"],
       [aarch64|arm64], [tsr_levels="armv8-a armv8.2-a+dotprod+fp16 armv8.6-a+i8mm+sve"],
       [tsr_levels=generic])])
  m4_foreach_w([tsr_l], [X86_64 V2 V3 V3VNNI V4 V4VNNI ARMV8 ARMV8_2 ARMV8_6 GENERIC],
    [AH_TEMPLATE([TSR_CPU_HAVE_LEVEL_]tsr_l,
      [The CPU backend is built for this ISA level.])])
  tsr_levels_built=
  tsr_levels_names=
  for tsr_level in $tsr_levels; do
    AS_CASE([$tsr_level],
      [x86-64], [tsr_suffix=x86_64; tsr_name=x86-64],
      [x86-64-v2], [tsr_suffix=v2; tsr_name=v2],
      [x86-64-v3], [tsr_suffix=v3; tsr_name=v3],
      [x86-64-v3+avxvnni], [tsr_suffix=v3vnni; tsr_name=v3-vnni],
      [x86-64-v4], [tsr_suffix=v4; tsr_name=v4],
      [x86-64-v4+avx512vnni], [tsr_suffix=v4vnni; tsr_name=v4-vnni],
      [armv8-a], [tsr_suffix=armv8; tsr_name=armv8-a],
      [armv8.2-a+dotprod+fp16], [tsr_suffix=armv8_2; tsr_name=armv8.2-a],
      [armv8.6-a+i8mm+sve], [tsr_suffix=armv8_6; tsr_name=armv8.6-a],
      [generic], [tsr_suffix=generic; tsr_name=generic],
      [AC_MSG_ERROR([unknown CPU level '$tsr_level' (see --help)])])
    # A level named -march=BASE+EXT compiles with -march=BASE -mEXT, and
    # its CPU test needs __builtin_cpu_supports ("EXT").
    tsr_probe=
    AS_CASE([$tsr_level],
      [generic], [tsr_flag=],
      [*+avxvnni|*+avx512vnni],
        [tsr_ext=`echo "$tsr_level" | sed 's/^.*+//'`
         tsr_flag="-march=`echo "$tsr_level" | sed 's/+.*$//'` -m$tsr_ext"
         tsr_probe="return __builtin_cpu_supports (\"$tsr_ext\");"],
      [tsr_flag="-march=$tsr_level"])
    AC_MSG_CHECKING([whether $CC can compile for CPU level $tsr_level])
    tsr_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS $tsr_flag"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [$tsr_probe])], [tsr_ok=yes],
                      [tsr_ok=no])
    CFLAGS=$tsr_save_CFLAGS
    AC_MSG_RESULT([$tsr_ok])
    if test "$tsr_ok" = yes; then
      tsr_levels_built="$tsr_levels_built $tsr_suffix"
      tsr_levels_names="$tsr_levels_names $tsr_name"
      eval "TSR_LEVEL_CFLAGS_$tsr_suffix=\$tsr_flag"
      AC_DEFINE_UNQUOTED(AS_TR_CPP([TSR_CPU_HAVE_LEVEL_$tsr_suffix]), [1],
        [The CPU backend is built for this ISA level.])
    elif test "$tsr_levels_asked" = yes; then
      AC_MSG_ERROR([$CC cannot compile for CPU level $tsr_level])
    fi
  done
  test -n "$tsr_levels_built" ||
    AC_MSG_ERROR([no CPU level can be compiled; try --with-cpu-levels=generic])
  tsr_levels_names=`echo $tsr_levels_names`
  AC_DEFINE_UNQUOTED([TSR_CPU_LEVELS_BUILT], ["$tsr_levels_names"],
    [ISA levels the CPU backend is built for.])
  AC_SUBST([TSR_LEVEL_CFLAGS_x86_64])
  AC_SUBST([TSR_LEVEL_CFLAGS_v2])
  AC_SUBST([TSR_LEVEL_CFLAGS_v3])
  AC_SUBST([TSR_LEVEL_CFLAGS_v3vnni])
  AC_SUBST([TSR_LEVEL_CFLAGS_v4])
  AC_SUBST([TSR_LEVEL_CFLAGS_v4vnni])
  AC_SUBST([TSR_LEVEL_CFLAGS_armv8])
  AC_SUBST([TSR_LEVEL_CFLAGS_armv8_2])
  AC_SUBST([TSR_LEVEL_CFLAGS_armv8_6])
  AC_SUBST([TSR_CPU_LEVELS_BUILT], [$tsr_levels_names])
  m4_foreach_w([tsr_l], [x86_64 v2 v3 v3vnni v4 v4vnni armv8 armv8_2 armv8_6 generic], [
    AM_CONDITIONAL(AS_TR_CPP([TSR_LEVEL_]tsr_l),
      [case " $tsr_levels_built " in *" ]tsr_l[ "*) true;; *) false;; esac])])
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
