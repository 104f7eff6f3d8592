# tsr-cuda.m4 - the CUDA backend's configure check; configure.ac
# includes this file, which registers the backend at its end.

# TSR_CHECK_CUDA: --enable-cuda[=auto|yes|no] (default auto: built when
# a CUDA toolkit is found), --with-cuda=PREFIX (default /usr/local/cuda,
# then the nvcc on PATH) and --with-cuda-archs=LIST|native|all-major.
#
# Finds nvcc and the toolkit's include and library directories,
# compiles a test .cu with nvcc for the first architecture asked for,
# and links it with the C compiler against the runtime (cudart) and
# cuBLAS.  Every architecture is checked against "nvcc --list-gpu-code"
# rather than compiled, which keeps configure fast.
#
# Sets NVCC, CUDA_CPPFLAGS, CUDA_LIBS (the runtime, and libstdc++ for
# the C++ runtime support nvcc's host code needs; cuBLAS is opened by
# the module on first use, see modules/cuda/cuda-blas.c), CUDA_LIBDIR,
# CUDA_RPATH and CUDA_GENCODE (nvcc's -gencode options), all used by
# modules/cuda only: libtessera itself never links CUDA unless the
# backend is compiled in.  Also, for TSR_BACKEND: tsr_have_cuda
# (yes/no), tsr_cuda_why (the summary's "no (reason)"), tsr_cuda_what
# (version and architectures) and tsr_cuda_libs.  With --enable-cuda=yes anything missing is an error.
#
# Architectures: LIST is comma-separated compute capabilities without
# the dot, "90" for real code (SASS) for sm_90, "compute_90" for PTX
# that the driver compiles for newer GPUs.  The default, the precious
# variable CUDA_ARCHS when set, is every major GPU generation the
# toolkit supports from Turing on (75,80,86,89,90,100,120) plus PTX of
# the newest; CI sets CUDA_ARCHS=90 to compile for one only.  From
# that default list, architectures the toolkit does not know (100 and
# 120 need CUDA 12.8) are left out, the PTX then being that of the
# newest one kept; an architecture asked for by name that nvcc does
# not know disables the backend (an error with --enable-cuda=yes).
AC_DEFUN([TSR_CHECK_CUDA], [
  AC_ARG_ENABLE([cuda],
    [AS_HELP_STRING([--enable-cuda@<:@=auto|yes|no@:>@],
      [build the CUDA backend (needs the CUDA toolkit: nvcc, the runtime and cuBLAS; default: auto, built when found)])],
    [], [enable_cuda=auto])
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda=PREFIX],
      [the CUDA toolkit's prefix (default: /usr/local/cuda, else the directory above the nvcc on PATH)])],
    [], [with_cuda=])
  AC_ARG_WITH([cuda-archs],
    [AS_HELP_STRING([--with-cuda-archs=LIST|native|all-major],
      [GPU architectures to compile for: comma-separated, 90 for sm_90 code, compute_90 for PTX; native for the GPUs of this machine (default: $CUDA_ARCHS, else 75,80,86,89,90,100,120,compute_120)])],
    [tsr_cuda_archs_default=no],
    [AS_IF([test -n "$CUDA_ARCHS"],
       [with_cuda_archs=$CUDA_ARCHS; tsr_cuda_archs_default=no],
       [with_cuda_archs=75,80,86,89,90,100,120,compute_120
        tsr_cuda_archs_default=yes])])
  AC_ARG_VAR([NVCC], [the CUDA compiler driver])
  AC_ARG_VAR([NVCCFLAGS], [extra flags for nvcc (e.g. -O3 -lineinfo)])
  AC_ARG_VAR([CUDA_ARCHS], [default for --with-cuda-archs])
  case $enable_cuda in
    auto|yes|no) ;;
    *) AC_MSG_ERROR([--enable-cuda=$enable_cuda: use auto, yes or no]) ;;
  esac
  AS_CASE([$with_cuda], [yes], [with_cuda=], [no], [enable_cuda=no])
  tsr_have_cuda=no
  tsr_cuda_why=
  tsr_cuda_what=
  CUDA_CPPFLAGS=
  CUDA_LIBS=
  CUDA_LIBDIR=
  CUDA_RPATH=
  CUDA_GENCODE=
  AS_IF([test "x$enable_cuda" = xno],
    [tsr_cuda_why="no (disabled by --disable-cuda)"],
    [_TSR_CUDA_FIND
     AS_IF([test -z "$tsr_cuda_why"], [_TSR_CUDA_ARCHS])
     AS_IF([test -z "$tsr_cuda_why"], [_TSR_CUDA_COMPILE])
     AS_IF([test -z "$tsr_cuda_why"],
       [tsr_have_cuda=yes
        AC_CHECK_LIB([dl], [dlopen], [CUDA_LIBS="$CUDA_LIBS -ldl"])])
     AS_IF([test "x$tsr_have_cuda" = xno && test "x$enable_cuda" = xyes],
       [AC_MSG_ERROR([--enable-cuda: $tsr_cuda_why; install the CUDA toolkit, or point --with-cuda=PREFIX (or NVCC) at it])])])
  AS_IF([test "x$tsr_have_cuda" = xno],
    [CUDA_CPPFLAGS=; CUDA_LIBS=; CUDA_LIBDIR=; CUDA_RPATH=; CUDA_GENCODE=])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([CUDA_LIBDIR])
  AC_SUBST([CUDA_RPATH])
  AC_SUBST([CUDA_GENCODE])
  tsr_cuda_libs=$CUDA_LIBS
])

# _TSR_CUDA_FIND: nvcc, the prefix, its include and library dirs.
AC_DEFUN([_TSR_CUDA_FIND], [
  AS_IF([test -z "$NVCC"],
    [AS_IF([test -n "$with_cuda"],
       [AS_IF([test -x "$with_cuda/bin/nvcc"], [NVCC=$with_cuda/bin/nvcc])],
       [test -x /usr/local/cuda/bin/nvcc],
       [NVCC=/usr/local/cuda/bin/nvcc],
       [AC_PATH_PROG([NVCC], [nvcc])])])
  AC_MSG_CHECKING([for nvcc])
  AS_IF([test -n "$NVCC" && $NVCC --version >/dev/null 2>&1],
    [AC_MSG_RESULT([$NVCC])
     AS_IF([test -z "$with_cuda"],
       [tsr_nvcc_path=`command -v "$NVCC"`
        with_cuda=`dirname "$tsr_nvcc_path"`
        with_cuda=`dirname "$with_cuda"`])
     tsr_cuda_version=`$NVCC --version 2>/dev/null | sed -n 's/.*release \([[0-9.]]*\),.*/\1/p'`
     tsr_cuda_what="CUDA $tsr_cuda_version"],
    [AC_MSG_RESULT([no])
     tsr_cuda_why="no (nvcc not found${with_cuda:+ in $with_cuda/bin})"])
  AS_IF([test -z "$tsr_cuda_why"],
    [AC_MSG_CHECKING([for the CUDA library directory])
     for d in "$with_cuda/lib64" "$with_cuda/lib" \
              "$with_cuda/targets/x86_64-linux/lib" \
              "$with_cuda/targets/sbsa-linux/lib"; do
       AS_IF([test -f "$d/libcudart.so" || test -f "$d/libcudart.a"],
         [CUDA_LIBDIR=$d; break])
     done
     AS_IF([test -n "$CUDA_LIBDIR"],
       [AC_MSG_RESULT([$CUDA_LIBDIR])
        CUDA_CPPFLAGS="-I$with_cuda/include"
        CUDA_LIBS="-L$CUDA_LIBDIR -lcudart -lstdc++"
        CUDA_RPATH="-R $CUDA_LIBDIR"],
       [AC_MSG_RESULT([no])
        tsr_cuda_why="no (libcudart not found under $with_cuda)"])])
])

# _TSR_CUDA_ARCHS: --with-cuda-archs into -gencode options.
AC_DEFUN([_TSR_CUDA_ARCHS], [
  AC_MSG_CHECKING([the GPU architectures to compile for])
  tsr_cuda_codes=`$NVCC --list-gpu-code 2>/dev/null | tr '\n' ' '`
  tsr_cuda_first=
  tsr_cuda_newest=
  tsr_cuda_skipped=
  AS_CASE([$with_cuda_archs],
    [native|all-major|all],
      [CUDA_GENCODE="-arch=$with_cuda_archs"; tsr_cuda_first=$CUDA_GENCODE],
    [for a in `echo "$with_cuda_archs" | tr ',' ' '`; do
       AS_CASE([$a],
         [compute_*], [n=`echo $a | sed 's/^compute_//'`
                       g="-gencode arch=compute_$n,code=compute_$n"],
         [sm_*], [n=`echo $a | sed 's/^sm_//'`
                  g="-gencode arch=compute_$n,code=sm_$n"],
         [n=$a; g="-gencode arch=compute_$n,code=sm_$n"])
       AS_CASE([" $tsr_cuda_codes "], [*" sm_$n "*], [tsr_cuda_known=yes],
         [tsr_cuda_known=no])
       AS_IF([test $tsr_cuda_known = no &&
              test "x$tsr_cuda_archs_default" = xyes],
         [tsr_cuda_skipped="$tsr_cuda_skipped $a"
          continue],
         [test $tsr_cuda_known = no],
         [tsr_cuda_why="no (nvcc $tsr_cuda_version cannot compile for $a; it knows: $tsr_cuda_codes)"
          break])
       AS_CASE([$a], [compute_*], [], [tsr_cuda_newest=$n])
       CUDA_GENCODE="$CUDA_GENCODE $g"
       test -n "$tsr_cuda_first" || tsr_cuda_first=$g
     done
     # The default list's PTX, when the toolkit lacks its architecture:
     # that of the newest architecture kept.
     AS_CASE([" $tsr_cuda_skipped "], [*" compute_"*],
       [AS_IF([test -n "$tsr_cuda_newest"],
          [CUDA_GENCODE="$CUDA_GENCODE -gencode arch=compute_$tsr_cuda_newest,code=compute_$tsr_cuda_newest"
           tsr_cuda_skipped="$tsr_cuda_skipped (PTX of $tsr_cuda_newest instead)"])])
     AS_IF([test -z "$CUDA_GENCODE" && test -z "$tsr_cuda_why"],
       [tsr_cuda_why="no (--with-cuda-archs names no architecture)"])])
  AS_IF([test -z "$tsr_cuda_why"],
    [AS_IF([test -n "$tsr_cuda_skipped"],
       [AC_MSG_RESULT([$with_cuda_archs, without$tsr_cuda_skipped (unknown to nvcc $tsr_cuda_version)])
        tsr_cuda_what="$tsr_cuda_what, archs $with_cuda_archs without$tsr_cuda_skipped"],
       [AC_MSG_RESULT([$with_cuda_archs])
        tsr_cuda_what="$tsr_cuda_what, archs $with_cuda_archs"])],
    [AC_MSG_RESULT([no])])
])

# _TSR_CUDA_COMPILE: nvcc compiles a kernel and a cuBLAS call; the C
# compiler links it with the runtime and cuBLAS.
AC_DEFUN([_TSR_CUDA_COMPILE], [
  AC_MSG_CHECKING([whether nvcc compiles a CUDA kernel])
  cat > conftest_cu.cu <<'EOF'
#include <cuda_runtime.h>
#include <cublas_v2.h>
__global__ void tsr_k (float *x) { x@<:@threadIdx.x@:>@ *= 2.0f; }
extern "C" int tsr_cu_probe (void)
{
  int n = 0;
  cublasHandle_t h;
  tsr_k<<<1, 1>>> (0);
  if (cublasCreate (&h) == CUBLAS_STATUS_SUCCESS)
    cublasDestroy (h);
  return cudaGetDeviceCount (&n) == cudaSuccess ? n : -1;
}
EOF
  AS_IF([$NVCC $CUDA_CPPFLAGS $NVCCFLAGS $tsr_cuda_first -Xcompiler -fPIC \
           -c conftest_cu.cu -o conftest_cu.o >&AS_MESSAGE_LOG_FD 2>&1],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     tsr_cuda_why="no (nvcc fails to compile a test kernel, see config.log)"])
  AS_IF([test -z "$tsr_cuda_why"],
    [AC_MSG_CHECKING([whether the CUDA runtime and cuBLAS link])
     tsr_save_LIBS=$LIBS
     LIBS="conftest_cu.o -L$CUDA_LIBDIR -lcublas -lcudart -lstdc++ $LIBS"
     AC_LINK_IFELSE([AC_LANG_PROGRAM([[int tsr_cu_probe (void);]],
         [[return tsr_cu_probe () > 1000;]])],
       [AC_MSG_RESULT([yes])],
       [AC_MSG_RESULT([no])
        tsr_cuda_why="no (cannot link libcudart and libcublas from $CUDA_LIBDIR)"])
     LIBS=$tsr_save_LIBS])
  rm -f conftest_cu.cu conftest_cu.o
])

TSR_BACKEND([cuda], [TSR_CHECK_CUDA])
