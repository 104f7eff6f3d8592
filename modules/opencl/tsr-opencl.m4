# tsr-opencl.m4 - the OpenCL backend's configure check; configure.ac
# includes this file, which registers the backend at its end.

# TSR_CHECK_OPENCL: --enable-opencl[=auto|yes|no] (default auto).
# Looks for CL/cl.h and the libOpenCL ICD loader (flags from pkg-config
# "OpenCL" when it knows them, else plain -lOpenCL).  Sets OPENCL_CFLAGS
# and OPENCL_LIBS (used only by modules/opencl: libtessera itself never
# links OpenCL unless the backend is compiled in), tsr_have_opencl
# (yes/no), tsr_opencl_why (the summary's "no (reason)") and
# tsr_opencl_libs, for TSR_BACKEND.  With
# --enable-opencl=yes a missing header or library is an error.
AC_DEFUN([TSR_CHECK_OPENCL], [
  AC_ARG_ENABLE([opencl],
    [AS_HELP_STRING([--enable-opencl@<:@=auto|yes|no@:>@],
      [build the OpenCL backend (needs CL/cl.h and the libOpenCL ICD loader, Debian: ocl-icd-opencl-dev opencl-headers; default: auto, built when found)])],
    [], [enable_opencl=auto])
  case $enable_opencl in
    auto|yes|no) ;;
    *) AC_MSG_ERROR([--enable-opencl=$enable_opencl: use auto, yes or no]) ;;
  esac
  tsr_have_opencl=no
  tsr_opencl_why=
  AS_IF([test "x$enable_opencl" = xno],
    [tsr_opencl_why="no (disabled by --disable-opencl)"],
    [AS_IF([test -z "$OPENCL_CFLAGS$OPENCL_LIBS" && test -n "$PKG_CONFIG"],
       [AC_MSG_CHECKING([for OpenCL flags from pkg-config])
        AS_IF([$PKG_CONFIG --exists OpenCL 2>/dev/null],
          [OPENCL_CFLAGS=`$PKG_CONFIG --cflags OpenCL`
           OPENCL_LIBS=`$PKG_CONFIG --libs OpenCL`
           AC_MSG_RESULT([$OPENCL_CFLAGS $OPENCL_LIBS])],
          [AC_MSG_RESULT([none])])])
     AS_IF([test -z "$OPENCL_LIBS"], [OPENCL_LIBS=-lOpenCL])
     tsr_save_CPPFLAGS=$CPPFLAGS
     tsr_save_LIBS=$LIBS
     CPPFLAGS="$CPPFLAGS $OPENCL_CFLAGS -DCL_TARGET_OPENCL_VERSION=120"
     LIBS="$OPENCL_LIBS $LIBS"
     AC_CHECK_HEADER([CL/cl.h], [tsr_opencl_header=yes],
       [tsr_opencl_header=no])
     AS_IF([test "x$tsr_opencl_header" = xyes], [
       AC_MSG_CHECKING([whether $OPENCL_LIBS links clGetPlatformIDs])
       AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <CL/cl.h>]],
           [[cl_uint n = 0; return clGetPlatformIDs (0, 0, &n) != 0;]])],
         [tsr_have_opencl=yes], [tsr_opencl_why="no (libOpenCL, the ICD loader, not found)"])
       AC_MSG_RESULT([$tsr_have_opencl])],
       [tsr_opencl_why="no (CL/cl.h not found)"])
     CPPFLAGS=$tsr_save_CPPFLAGS
     LIBS=$tsr_save_LIBS
     AS_IF([test "x$tsr_have_opencl" = xno && test "x$enable_opencl" = xyes],
       [AC_MSG_ERROR([--enable-opencl: $tsr_opencl_why; install the OpenCL headers and ICD loader (Debian: apt-get install ocl-icd-opencl-dev opencl-headers), or set OPENCL_CFLAGS and OPENCL_LIBS])])])
  AS_IF([test "x$tsr_have_opencl" = xno], [OPENCL_CFLAGS=; OPENCL_LIBS=])
  AC_ARG_VAR([OPENCL_CFLAGS], [C compiler flags for OpenCL (CL/cl.h)])
  AC_ARG_VAR([OPENCL_LIBS], [linker flags for the OpenCL ICD loader])
  tsr_opencl_libs=$OPENCL_LIBS
])

TSR_BACKEND([opencl], [TSR_CHECK_OPENCL])
