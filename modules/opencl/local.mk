## modules/opencl/local.mk - the OpenCL backend (see modules/local.mk
## for the pattern): OpenCL is linked into the module only, or,
## compiled in, into libtessera.
##
## The kernels are OpenCL C in .cl files, compiled by the driver at run
## time.  The build turns them into one C string, ocl-kernels.h, with
## sed: each line becomes a string literal (backslashes and quotes
## escaped, "\n" appended), the files concatenated in the order below
## (ocl-common.cl first: the others use it).

opencl_sources = modules/opencl/ocl-impl.h modules/opencl/ocl-module.c \
	modules/opencl/ocl-device.c modules/opencl/ocl-buffer.c \
	modules/opencl/ocl-backend.c modules/opencl/ocl-ops.c \
	modules/opencl/ocl-cache.c modules/opencl/ocl-profile.c
opencl_kernels = modules/opencl/ocl-common.cl modules/opencl/ocl-quant.cl \
	modules/opencl/ocl-elementwise.cl modules/opencl/ocl-fit.cl \
	modules/opencl/ocl-copy.cl \
	modules/opencl/ocl-rows.cl modules/opencl/ocl-matmul.cl \
	modules/opencl/ocl-shape.cl

if TSR_BACKEND_OPENCL
noinst_LTLIBRARIES += modules/opencl/libtsr-opencl.la
modules_opencl_libtsr_opencl_la_SOURCES = $(opencl_sources)
nodist_modules_opencl_libtsr_opencl_la_SOURCES = \
	modules/opencl/ocl-kernels.h
modules_opencl_libtsr_opencl_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(TSR_BACKEND_CPPFLAGS) -I$(top_builddir)/modules/opencl \
	$(OPENCL_CFLAGS) -DCL_TARGET_OPENCL_VERSION=120 \
	-DTSR_MODULE_NAME=tessera_opencl
modules_opencl_libtsr_opencl_la_CFLAGS = $(TSR_BACKEND_CFLAGS)
modules_opencl_libtsr_opencl_la_LIBADD = $(OPENCL_LIBS)
if TSR_MODULES
backend_LTLIBRARIES += modules/opencl/tessera-opencl.la
modules_opencl_tessera_opencl_la_SOURCES =
modules_opencl_tessera_opencl_la_LDFLAGS = $(TSR_MODULE_LDFLAGS)
modules_opencl_tessera_opencl_la_LIBADD = modules/opencl/libtsr-opencl.la \
	$(TSR_MODULE_LIBS)
else
lib_libtessera_la_LIBADD += modules/opencl/libtsr-opencl.la
endif
BUILT_SOURCES += modules/opencl/ocl-kernels.h
endif

EXTRA_DIST += $(opencl_sources) $(opencl_kernels) \
	modules/opencl/tsr-opencl.m4 testsuite/tessera.opencl
CLEANFILES += modules/opencl/ocl-kernels.h

modules/opencl/ocl-kernels.h: $(opencl_kernels) modules/opencl/local.mk
	$(AM_V_GEN)$(MKDIR_P) modules/opencl && { \
	  echo '/* Generated from the .cl files by make: do not edit.  */'; \
	  echo 'static const char tsr_ocl_kernel_source[] ='; \
	  for f in $(opencl_kernels); do \
	    echo "/* $$f */"; \
	    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' \
	      $(srcdir)/$$f || exit 1; \
	  done; \
	  echo ';'; \
	} > $@.tmp && mv $@.tmp $@
