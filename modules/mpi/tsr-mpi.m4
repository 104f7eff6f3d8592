# tsr-mpi.m4 - configure check for the communication module over MPI
# (modules/mpi); configure.ac includes this file, which registers the
# module (TSR_BACKEND, m4/tsr-checks.m4) at its end.

# TSR_CHECK_MPI: handle --with-mpi[=auto|yes|no] (default: auto).
#
# MPI is found, in order, through MPI_CFLAGS/MPI_LIBS set by the user,
# Open MPI's compiler wrapper (mpicc --showme:compile / --showme:link),
# MPICH's (mpicc -compile_info / -link_info, without the compiler
# word), then pkg-config (ompi-c, mpich); a link test checks the MPI-3
# calls the module makes.  The module is loadable only: libtessera
# never links MPI, so --disable-modules (or --disable-shared) leaves it
# out.  The tests need a launcher: MPIEXEC (mpirun or mpiexec) and
# MPIEXEC_FLAVOR (openmpi, mpich or other) go to site-extra.exp.
#
# Sets MPI_CFLAGS, MPI_LIBS, MPIEXEC, MPIEXEC_FLAVOR and what
# TSR_BACKEND reads: tsr_have_mpi, tsr_mpi_why, tsr_mpi_what.
AC_DEFUN([TSR_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi@<:@=auto|yes|no@:>@],
      [build the communication module over MPI, for running one model on several processes and hosts (Open MPI or MPICH); default: auto, built when MPI is found])],
    [], [with_mpi=auto])
  AC_ARG_VAR([MPI_CFLAGS], [C compiler flags for MPI, overriding the search])
  AC_ARG_VAR([MPI_LIBS], [linker flags for MPI, overriding the search])
  AC_ARG_VAR([MPICC], [the MPI compiler wrapper asked for flags (mpicc)])
  AC_ARG_VAR([MPIEXEC], [the MPI launcher the tests use (mpirun)])
  tsr_mpi_how=
  MPIEXEC_FLAVOR=
  AS_CASE([$with_mpi],
    [no], [tsr_mpi_why="no (--without-mpi)"],
    [yes|auto], [],
    [AC_MSG_ERROR([--with-mpi=$with_mpi: use yes, no or auto (point MPICC or MPI_CFLAGS/MPI_LIBS at another MPI)])])
  AS_IF([test "x$with_mpi" != xno && test "x$enable_modules" != xyes], [
    AS_IF([test "x$with_mpi" = xyes],
      [AC_MSG_ERROR([--with-mpi needs loadable modules (libtessera never links MPI): drop --disable-modules/--disable-shared, or use --without-mpi])])
    tsr_mpi_why="no (needs loadable modules: libtessera never links MPI)"
    with_mpi=no])
  AS_IF([test "x$with_mpi" != xno], [
    AS_IF([test -n "${MPI_CFLAGS+set}${MPI_LIBS+set}"],
      [tsr_mpi_how="MPI_CFLAGS/MPI_LIBS"],
      [AC_PATH_PROGS([MPICC], [mpicc])
       AS_IF([test -n "$MPICC"], [
         AC_MSG_CHECKING([for MPI flags from $MPICC])
         AS_IF([tsr_mpi_c=`$MPICC --showme:compile 2>/dev/null` &&
                tsr_mpi_l=`$MPICC --showme:link 2>/dev/null`],
           [MPI_CFLAGS=$tsr_mpi_c; MPI_LIBS=$tsr_mpi_l
            tsr_mpi_how="mpicc --showme"],
           [AS_IF([tsr_mpi_c=`$MPICC -compile_info 2>/dev/null` &&
                   tsr_mpi_l=`$MPICC -link_info 2>/dev/null`],
              [MPI_CFLAGS=`echo "$tsr_mpi_c" | sed 's/^[[^ ]]* *//; s/ -c / /'`
               MPI_LIBS=`echo "$tsr_mpi_l" | sed 's/^[[^ ]]* *//'`
               tsr_mpi_how="mpicc -compile_info"])])
         AS_IF([test -n "$tsr_mpi_how"], [AC_MSG_RESULT([$tsr_mpi_how])],
           [AC_MSG_RESULT([none])])])
       AS_IF([test -z "$tsr_mpi_how" && test -n "$PKG_CONFIG"], [
         for tsr_mpi_pc in ompi-c mpich; do
           AS_IF([$PKG_CONFIG --exists $tsr_mpi_pc 2>/dev/null],
             [MPI_CFLAGS=`$PKG_CONFIG --cflags $tsr_mpi_pc`
              MPI_LIBS=`$PKG_CONFIG --libs $tsr_mpi_pc`
              tsr_mpi_how="pkg-config $tsr_mpi_pc"
              break])
         done])])
    tsr_mpi_ok=no
    AS_IF([test -n "$tsr_mpi_how"], [
      AC_MSG_CHECKING([whether MPI-3 programs link with '$MPI_CFLAGS' '$MPI_LIBS'])
      tsr_save_CPPFLAGS=$CPPFLAGS
      tsr_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $MPI_CFLAGS"
      LIBS="$MPI_LIBS $LIBS"
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[
        MPI_Request r; float x = 0, y = 0; int level;
        MPI_Init_thread (0, 0, MPI_THREAD_SERIALIZED, &level);
        MPI_Iallreduce (&x, &y, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Ibarrier (MPI_COMM_WORLD, &r);
        return MPI_Finalize ();]])],
        [tsr_mpi_ok=yes])
      CPPFLAGS=$tsr_save_CPPFLAGS
      LIBS=$tsr_save_LIBS
      AC_MSG_RESULT([$tsr_mpi_ok])])
    AS_IF([test "x$tsr_mpi_ok" = xyes],
      [# dladdr, to keep the module and MPI loaded once MPI has started.
       tsr_save_LIBS=$LIBS
       LIBS=
       AC_SEARCH_LIBS([dladdr], [dl],
         [AC_DEFINE([HAVE_DLADDR], [1], [Define if dladdr is available.])])
       MPI_DL_LIBS=$LIBS
       LIBS=$tsr_save_LIBS
       tsr_have_mpi=yes
       tsr_mpi_what="tessera-comm-mpi, loaded on demand; $tsr_mpi_how"
       AC_PATH_PROGS([MPIEXEC], [mpirun mpiexec])
       AS_IF([test -n "$MPIEXEC"],
         [AS_IF([$MPIEXEC --version 2>/dev/null | grep -q 'Open MPI'],
            [MPIEXEC_FLAVOR=openmpi],
            [$MPIEXEC --version 2>/dev/null | grep -qi 'HYDRA\|mpich'],
            [MPIEXEC_FLAVOR=mpich],
            [MPIEXEC_FLAVOR=other])
          tsr_mpi_detail="      launcher ...... $MPIEXEC ($MPIEXEC_FLAVOR)"],
         [tsr_mpi_detail="      launcher ...... none found (the MPI tests are UNSUPPORTED)"])],
      [AS_IF([test "x$with_mpi" = xyes],
         [AC_MSG_ERROR([--with-mpi: no usable MPI (no mpicc giving flags, no pkg-config ompi-c or mpich, or MPI-3 programs do not link); install one (Debian: apt-get install libopenmpi-dev openmpi-bin), set MPICC or MPI_CFLAGS and MPI_LIBS, or use --without-mpi.  See config.log.])])
       MPI_CFLAGS=
       MPI_LIBS=
       tsr_mpi_why="no (MPI not found: install libopenmpi-dev openmpi-bin)"])
  ])
  AS_IF([test "x$tsr_have_mpi" = xyes], [TSR_HAVE_MPI=yes], [TSR_HAVE_MPI=no])
  AC_SUBST([TSR_HAVE_MPI])
  AC_SUBST([MPIEXEC_FLAVOR])
  AC_SUBST([MPI_DL_LIBS])
])

TSR_BACKEND([mpi], [TSR_CHECK_MPI])
