# tsr-blas.m4 - configure check for the BLAS backend (modules/blas) on
# BLIS; configure.ac includes this file, which registers the backend
# (TSR_BACKEND, m4/tsr-checks.m4) at its end.

# TSR_CHECK_BLIS: handle --with-blis[=PREFIX] (default: auto).
#
# BLIS is looked for through pkg-config (package "blis") first, then as
# the header blis.h and the library -lblis (Debian's libblis-dev has no
# .pc file).  With PREFIX, PREFIX/lib/pkgconfig is searched first, then
# PREFIX/include[/blis] and PREFIX/lib[64], and the module gets a run
# path to that library directory.  "auto" builds the backend when BLIS
# is found; --with-blis or --with-blis=PREFIX make its absence an error.
#
# Sets BLIS_CFLAGS, BLIS_LIBS, BLIS_RPATH (libtool -R flags) and what
# TSR_BACKEND reads: tsr_have_blas, tsr_blas_why, tsr_blas_what (how
# BLIS was found) and tsr_blas_libs.
AC_DEFUN([TSR_CHECK_BLIS], [
  AC_ARG_WITH([blis],
    [AS_HELP_STRING([--with-blis@<:@=PREFIX@:>@],
      [build the BLAS backend on BLIS (installed under PREFIX); default: auto, built when BLIS is found])],
    [], [with_blis=auto])
  tsr_blis_found=no
  tsr_blis_how=
  BLIS_RPATH=
  AS_CASE([$with_blis],
    [no], [tsr_blas_why="no (--without-blis)"],
    [yes|auto], [tsr_blis_prefix=],
    [tsr_blis_prefix=$with_blis])
  AS_IF([test "x$with_blis" != xno], [
    # 1. pkg-config.
    tsr_save_PKG_CONFIG_PATH=${PKG_CONFIG_PATH-}
    AS_IF([test -n "$tsr_blis_prefix"],
      [PKG_CONFIG_PATH="$tsr_blis_prefix/lib/pkgconfig:$tsr_blis_prefix/lib64/pkgconfig:$tsr_blis_prefix/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
       export PKG_CONFIG_PATH])
    AS_IF([test -z "${BLIS_CFLAGS+set}${BLIS_LIBS+set}"],
      [AC_MSG_CHECKING([for BLIS with pkg-config])
       AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists blis 2>/dev/null],
         [BLIS_CFLAGS=`$PKG_CONFIG --cflags blis`
          BLIS_LIBS=`$PKG_CONFIG --libs blis`
          tsr_blis_how="pkg-config, blis `$PKG_CONFIG --modversion blis`"
          AC_MSG_RESULT([yes])],
         [AC_MSG_RESULT([no])])],
      [tsr_blis_how="BLIS_CFLAGS/BLIS_LIBS"])
    PKG_CONFIG_PATH=$tsr_save_PKG_CONFIG_PATH
    AS_IF([test -n "$tsr_blis_how"],
      [TSR_BLIS_TRY([$BLIS_CFLAGS], [$BLIS_LIBS])])
    # 2. The header and the library.
    AS_IF([test "x$tsr_blis_found" = xno], [
      AS_IF([test -n "$tsr_blis_prefix"],
        [tsr_blis_cands="-I$tsr_blis_prefix/include/blis|-L$tsr_blis_prefix/lib -lblis
-I$tsr_blis_prefix/include|-L$tsr_blis_prefix/lib -lblis
-I$tsr_blis_prefix/include/blis|-L$tsr_blis_prefix/lib64 -lblis
-I$tsr_blis_prefix/include|-L$tsr_blis_prefix/lib64 -lblis"],
        [tsr_blis_cands="|-lblis
-I/usr/include/blis|-lblis
-I/usr/local/include/blis|-L/usr/local/lib -lblis"])
      tsr_save_IFS=$IFS
      IFS='
'
      for tsr_blis_cand in $tsr_blis_cands; do
        IFS=$tsr_save_IFS
        tsr_blis_c=`echo "$tsr_blis_cand" | sed 's/|.*//'`
        tsr_blis_l=`echo "$tsr_blis_cand" | sed 's/.*|//'`
        # Under PREFIX, only a blis.h that is there (the compiler would
        # find the system's otherwise).
        AS_IF([test -n "$tsr_blis_prefix" &&
               test ! -f "`echo $tsr_blis_c | sed 's/^-I//'`/blis.h"],
          [continue])
        TSR_BLIS_TRY([$tsr_blis_c], [$tsr_blis_l])
        AS_IF([test "x$tsr_blis_found" = xyes],
          [BLIS_CFLAGS=$tsr_blis_c; BLIS_LIBS=$tsr_blis_l
           tsr_blis_how="blis.h and -lblis"; break])
      done
      IFS=$tsr_save_IFS])
    AS_IF([test "x$tsr_blis_found" = xyes && test -n "$tsr_blis_prefix"],
      [for tsr_blis_d in $BLIS_LIBS; do
         AS_CASE([$tsr_blis_d], [-L*],
           [BLIS_RPATH="$BLIS_RPATH -R `echo $tsr_blis_d | sed 's/^-L//'`"])
       done])
    AS_IF([test "x$tsr_blis_found" = xyes],
      [tsr_have_blas=yes
       tsr_blas_what=$tsr_blis_how
       tsr_blas_libs=$BLIS_LIBS],
      [AS_IF([test "x$with_blis" != xauto],
         [AC_MSG_ERROR([--with-blis${tsr_blis_prefix:+=$tsr_blis_prefix}: BLIS not found (no pkg-config 'blis', and no usable blis.h with -lblis${tsr_blis_prefix:+ under $tsr_blis_prefix}); install it (Debian: apt-get install libblis-dev), set BLIS_CFLAGS and BLIS_LIBS, or use --without-blis.  See config.log.])])
       BLIS_CFLAGS=
       BLIS_LIBS=
       tsr_blas_why="no (BLIS not found: install libblis-dev or use --with-blis=PREFIX)"])
  ])
  AC_ARG_VAR([BLIS_CFLAGS], [C compiler flags for BLIS, overriding the search])
  AC_ARG_VAR([BLIS_LIBS], [linker flags for BLIS, overriding the search])
  AC_SUBST([BLIS_RPATH])
])

# TSR_BLIS_TRY(CFLAGS, LIBS): does a program using the parts of BLIS
# the backend needs (the typed gemm with a runtime object, the version
# string) compile and link?  Sets tsr_blis_found=yes if so.
AC_DEFUN([TSR_BLIS_TRY], [
  AC_MSG_CHECKING([for BLIS with '$1' '$2'])
  tsr_save_CPPFLAGS=$CPPFLAGS
  tsr_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $1"
  LIBS="$2 $LIBS"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <blis.h>]], [[
    float a = 1, b = 1, c = 0, one = 1, zero = 0;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads (1, &rntm);
    bli_sgemm_ex (BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, 1, 1, 1, &one,
                  &a, 1, 1, &b, 1, 1, &zero, &c, 1, 1, NULL, &rntm);
    return bli_info_get_version_str () == 0;]])],
    [tsr_blis_found=yes], [tsr_blis_found=no])
  CPPFLAGS=$tsr_save_CPPFLAGS
  LIBS=$tsr_save_LIBS
  AC_MSG_RESULT([$tsr_blis_found])
])

TSR_BACKEND([blas], [TSR_CHECK_BLIS])
