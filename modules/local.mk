## modules/local.mk - how every backend is built: a libtool module
## (tessera-NAME.la in $(backenddir)) in modular builds, a convenience
## library linked into libtessera otherwise.  One source list serves
## both; TSR_MODULE_NAME gives the descriptor its NAME_LTX_ prefix.

TSR_MODULE_LDFLAGS = -module -avoid-version -no-undefined \
	-export-symbols-regex '_LTX_tsr_module_descriptor$$'

# Checks several backends' supports_op share (static inline functions).
EXTRA_DIST += modules/op-checks.h

if TSR_MODULES
backend_LTLIBRARIES += modules/cpu/tessera-cpu.la
modules_cpu_tessera_cpu_la_SOURCES = $(cpu_sources)
modules_cpu_tessera_cpu_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_cpu
modules_cpu_tessera_cpu_la_LDFLAGS = $(TSR_MODULE_LDFLAGS)
modules_cpu_tessera_cpu_la_LIBADD = $(cpu_level_libs) lib/libtessera.la \
	$(PTHREAD_LIBS)
else
noinst_LTLIBRARIES += modules/cpu/libtessera-cpu-builtin.la
modules_cpu_libtessera_cpu_builtin_la_SOURCES = $(cpu_sources)
modules_cpu_libtessera_cpu_builtin_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_cpu
modules_cpu_libtessera_cpu_builtin_la_CFLAGS = $(AM_CFLAGS) \
	-fvisibility=hidden
modules_cpu_libtessera_cpu_builtin_la_LIBADD = $(cpu_level_libs)
endif

# The BLAS backend (configure --with-blis): BLIS is linked into the
# module only, or, compiled in, into libtessera through the
# convenience library.
if TSR_BLAS
if TSR_MODULES
backend_LTLIBRARIES += modules/blas/tessera-blas.la
modules_blas_tessera_blas_la_SOURCES = $(blas_sources)
modules_blas_tessera_blas_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_blas $(BLIS_CFLAGS)
modules_blas_tessera_blas_la_LDFLAGS = $(TSR_MODULE_LDFLAGS) $(BLIS_RPATH)
modules_blas_tessera_blas_la_LIBADD = lib/libtessera.la $(BLIS_LIBS) \
	$(PTHREAD_LIBS)
else
noinst_LTLIBRARIES += modules/blas/libtessera-blas-builtin.la
modules_blas_libtessera_blas_builtin_la_SOURCES = $(blas_sources)
modules_blas_libtessera_blas_builtin_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_blas $(BLIS_CFLAGS)
modules_blas_libtessera_blas_builtin_la_CFLAGS = $(AM_CFLAGS) \
	-fvisibility=hidden
modules_blas_libtessera_blas_builtin_la_LDFLAGS = $(BLIS_RPATH)
modules_blas_libtessera_blas_builtin_la_LIBADD = $(BLIS_LIBS)
lib_libtessera_la_LIBADD += modules/blas/libtessera-blas-builtin.la
endif
endif

## OpenCL (modules/opencl/local.mk lists the sources): OpenCL is linked
## into the module only, or, compiled in, into libtessera.
if TSR_OPENCL
if TSR_MODULES
backend_LTLIBRARIES += modules/opencl/tessera-opencl.la
modules_opencl_tessera_opencl_la_SOURCES = $(opencl_sources)
nodist_modules_opencl_tessera_opencl_la_SOURCES = \
	modules/opencl/ocl-kernels.h
modules_opencl_tessera_opencl_la_CPPFLAGS = $(OPENCL_MODULE_CPPFLAGS)
modules_opencl_tessera_opencl_la_LDFLAGS = $(TSR_MODULE_LDFLAGS)
modules_opencl_tessera_opencl_la_LIBADD = lib/libtessera.la $(OPENCL_LIBS) \
	$(PTHREAD_LIBS)
else
noinst_LTLIBRARIES += modules/opencl/libtessera-opencl-builtin.la
modules_opencl_libtessera_opencl_builtin_la_SOURCES = $(opencl_sources)
nodist_modules_opencl_libtessera_opencl_builtin_la_SOURCES = \
	modules/opencl/ocl-kernels.h
modules_opencl_libtessera_opencl_builtin_la_CPPFLAGS = \
	$(OPENCL_MODULE_CPPFLAGS)
modules_opencl_libtessera_opencl_builtin_la_CFLAGS = $(AM_CFLAGS) \
	-fvisibility=hidden
modules_opencl_libtessera_opencl_builtin_la_LIBADD = $(OPENCL_LIBS)
lib_libtessera_la_LIBADD += modules/opencl/libtessera-opencl-builtin.la
endif
endif

## CUDA (modules/cuda/local.mk lists the sources and builds the kernels'
## .lo objects): the CUDA runtime is linked into the module only, or,
## compiled in, into libtessera.
if TSR_CUDA
if TSR_MODULES
backend_LTLIBRARIES += modules/cuda/tessera-cuda.la
modules_cuda_tessera_cuda_la_SOURCES = $(cuda_sources)
modules_cuda_tessera_cuda_la_CPPFLAGS = $(CUDA_MODULE_CPPFLAGS)
modules_cuda_tessera_cuda_la_LDFLAGS = $(TSR_MODULE_LDFLAGS) $(CUDA_RPATH)
modules_cuda_tessera_cuda_la_LIBADD = $(cuda_kernel_objects) \
	lib/libtessera.la $(CUDA_LIBS) $(PTHREAD_LIBS)
else
noinst_LTLIBRARIES += modules/cuda/libtessera-cuda-builtin.la
modules_cuda_libtessera_cuda_builtin_la_SOURCES = $(cuda_sources)
modules_cuda_libtessera_cuda_builtin_la_CPPFLAGS = $(CUDA_MODULE_CPPFLAGS)
modules_cuda_libtessera_cuda_builtin_la_CFLAGS = $(AM_CFLAGS) \
	-fvisibility=hidden
modules_cuda_libtessera_cuda_builtin_la_LDFLAGS = $(CUDA_RPATH)
modules_cuda_libtessera_cuda_builtin_la_LIBADD = $(cuda_kernel_objects) \
	$(CUDA_LIBS)
lib_libtessera_la_LIBADD += modules/cuda/libtessera-cuda-builtin.la
endif
endif
