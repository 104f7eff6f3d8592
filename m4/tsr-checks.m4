# tsr-checks.m4 - Tessera's own configure checks.

# TSR_VERSION_SPLIT: substitute TSR_VERSION_MAJOR/MINOR/MICRO.
AC_DEFUN([TSR_VERSION_SPLIT], [
  AC_SUBST([TSR_VERSION_MAJOR], [`echo $PACKAGE_VERSION | cut -d. -f1`])
  AC_SUBST([TSR_VERSION_MINOR], [`echo $PACKAGE_VERSION | cut -d. -f2`])
  AC_SUBST([TSR_VERSION_MICRO], [`echo $PACKAGE_VERSION | cut -d. -f3`])
])

# TSR_CHECK_C11: the compiler must accept C11 (with GNU extensions off
# by default; we ask for gnu11 only to get the POSIX headers cleanly).
AC_DEFUN([TSR_CHECK_C11], [
  AC_CACHE_CHECK([whether $CC accepts -std=gnu11], [tsr_cv_std_gnu11], [
    tsr_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -std=gnu11"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[_Static_assert (1, "c11");]], [])],
      [tsr_cv_std_gnu11=yes], [tsr_cv_std_gnu11=no])
    CFLAGS=$tsr_save_CFLAGS])
  AS_IF([test "x$tsr_cv_std_gnu11" = xyes],
    [TSR_STD_CFLAGS=-std=gnu11],
    [AC_MSG_ERROR([a C11 compiler is required])])
  AC_SUBST([TSR_STD_CFLAGS])
])

# TSR_CHECK_FP_CONTRACT: TSR_EXACT_CFLAGS turns off the fusing of a
# multiply and an add into one FMA (GCC fuses by default in GNU C mode
# on CPUs that have FMA).  libtessera's reference dequantization must
# round every product as the format's published code does.
AC_DEFUN([TSR_CHECK_FP_CONTRACT], [
  AC_CACHE_CHECK([whether $CC accepts -ffp-contract=off],
    [tsr_cv_fp_contract_off], [
    tsr_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror -ffp-contract=off"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
      [tsr_cv_fp_contract_off=yes], [tsr_cv_fp_contract_off=no])
    CFLAGS=$tsr_save_CFLAGS])
  TSR_EXACT_CFLAGS=
  AS_IF([test "x$tsr_cv_fp_contract_off" = xyes],
    [TSR_EXACT_CFLAGS=-ffp-contract=off])
  AC_SUBST([TSR_EXACT_CFLAGS])
])

# TSR_CHECK_PTHREADS: POSIX threads, as PTHREAD_CFLAGS/PTHREAD_LIBS.
AC_DEFUN([TSR_CHECK_PTHREADS], [
  PTHREAD_CFLAGS=-pthread
  tsr_save_CFLAGS=$CFLAGS
  CFLAGS="$CFLAGS -pthread"
  AC_SEARCH_LIBS([pthread_create], [pthread], [],
    [AC_MSG_ERROR([POSIX threads are required])])
  CFLAGS=$tsr_save_CFLAGS
  PTHREAD_LIBS=
  AS_IF([test "x$ac_cv_search_pthread_create" != "xnone required"],
    [PTHREAD_LIBS=$ac_cv_search_pthread_create])
  AC_SUBST([PTHREAD_CFLAGS])
  AC_SUBST([PTHREAD_LIBS])
])

# TSR_CHECK_LTDL: the system libltdl (Debian: libltdl-dev).
AC_DEFUN([TSR_CHECK_LTDL], [
  AC_CHECK_HEADER([ltdl.h], [],
    [AC_MSG_ERROR([ltdl.h not found: install libltdl (Debian: apt-get install libltdl-dev)])])
  AC_CHECK_LIB([ltdl], [lt_dladvise_init], [LTDL_LIBS=-lltdl],
    [AC_MSG_ERROR([libltdl not found: install libltdl (Debian: apt-get install libltdl-dev)])])
  AC_SUBST([LTDL_LIBS])
  AC_CHECK_FUNCS([dladdr])
])

# TSR_CHECK_WARNINGS: warning flags the compiler accepts.
AC_DEFUN([TSR_CHECK_WARNINGS], [
  TSR_WARN_CFLAGS=
  for tsr_flag in -Wall -Wextra -Wshadow -Wstrict-prototypes \
                  -Wmissing-prototypes -Wno-unused-parameter; do
    AC_MSG_CHECKING([whether $CC accepts $tsr_flag])
    tsr_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror $tsr_flag"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
      [TSR_WARN_CFLAGS="$TSR_WARN_CFLAGS $tsr_flag"; AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])])
    CFLAGS=$tsr_save_CFLAGS
  done
  AC_SUBST([TSR_WARN_CFLAGS])
])

# TSR_BACKEND(NAME, CHECKS): one backend, modules/NAME.  Its
# modules/NAME/tsr-NAME.m4 (which configure.ac m4_includes: the one line
# a backend adds outside its folder) calls this with the shell code
# CHECKS, which must set
#   tsr_have_NAME    yes or no
#   tsr_NAME_why     when no: the summary's "no (reason)"
# and may set
#   tsr_NAME_what    when yes: a detail for the summary (versions...)
#   tsr_NAME_libs    the libraries a compiled-in copy adds to
#                    libtessera (tessera.pc's Libs.private)
#   tsr_NAME_detail  further summary lines, indented, newline-separated.
# From them it defines the automake conditional TSR_BACKEND_<NAME>, the
# backend's configure-summary line, its entry in the table of built-in
# backends (--disable-modules), its libraries in TSR_BUILTIN_LIBS and
# its build directory in TSR_BUILD_BACKEND_PATH (the uninstalled
# modules, for make check and the examples).
AC_DEFUN([TSR_BACKEND], [
  tsr_have_$1=no
  tsr_$1_why="no"
  tsr_$1_what=
  tsr_$1_libs=
  tsr_$1_detail=
  $2
  AS_IF([test "x$tsr_have_$1" = xyes],
    [AS_IF([test "x$enable_modules" = xyes],
       [tsr_summary_line="yes (module${tsr_$1_what:+; $tsr_$1_what})"],
       [tsr_summary_line="yes (compiled in${tsr_$1_what:+; $tsr_$1_what})"
        tsr_builtin_backends="$tsr_builtin_backends tessera_$1"
        TSR_BUILTIN_LIBS="$TSR_BUILTIN_LIBS $tsr_$1_libs"])
     TSR_BUILD_BACKEND_PATH="$TSR_BUILD_BACKEND_PATH${TSR_BUILD_BACKEND_PATH:+:}\$(abs_top_builddir)/modules/$1"],
    [tsr_summary_line=$tsr_$1_why])
  tsr_backend_summary="$tsr_backend_summary
    $1 m4_substr([................], m4_len([$1])) $tsr_summary_line"
  AS_IF([test -n "$tsr_$1_detail"],
    [tsr_backend_summary="$tsr_backend_summary
$tsr_$1_detail"])
  AM_CONDITIONAL(m4_toupper([TSR_BACKEND_$1]), [test "x$tsr_have_$1" = xyes])
])

# TSR_BACKENDS_OUTPUT: after the TSR_BACKEND calls, write
# lib/builtin-modules.h, the table of the descriptors compiled into
# libtessera (tsri_builtin_tessera_NAME, see TSR_MODULE_DESCRIPTOR in
# tessera/module.h), and substitute what the calls collected.
AC_DEFUN([TSR_BACKENDS_OUTPUT], [
  AC_CONFIG_COMMANDS([lib/builtin-modules.h], [
    tsr_out=lib/builtin-modules.h
    test -d lib || mkdir lib
    {
      echo "/* Generated by configure: backends compiled into libtessera.  */"
      for m in $tsr_builtin_list; do
        echo "extern const struct tsr_module_descriptor tsri_builtin_${m};"
      done
      echo "static const struct tsr_module_descriptor *const tsr_builtin_modules[[]] = {"
      for m in $tsr_builtin_list; do
        echo "  &tsri_builtin_${m},"
      done
      echo "  NULL"
      echo "};"
    } > $tsr_out.tmp
    if cmp -s $tsr_out.tmp $tsr_out; then rm -f $tsr_out.tmp; else mv $tsr_out.tmp $tsr_out; fi
  ], [tsr_builtin_list="$tsr_builtin_backends"])
  AC_SUBST([TSR_BUILTIN_LIBS])
  AC_SUBST([TSR_BUILD_BACKEND_PATH])
])
