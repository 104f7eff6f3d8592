## modules/opencl/local.mk - the OpenCL backend's sources and kernels
## (the module rules are in modules/local.mk).
##
## The kernels are OpenCL C in .cl files, compiled by the driver at run
## time.  The build turns them into one C string, ocl-kernels.h, with
## sed: each line becomes a string literal (backslashes and quotes
## escaped, "\n" appended), the files concatenated in the order below
## (ocl-common.cl first: the others use it).

opencl_sources = modules/opencl/ocl-impl.h modules/opencl/ocl-module.c \
	modules/opencl/ocl-device.c modules/opencl/ocl-buffer.c \
	modules/opencl/ocl-backend.c modules/opencl/ocl-ops.c
opencl_kernels = modules/opencl/ocl-common.cl modules/opencl/ocl-quant.cl \
	modules/opencl/ocl-elementwise.cl modules/opencl/ocl-copy.cl \
	modules/opencl/ocl-rows.cl modules/opencl/ocl-matmul.cl
OPENCL_MODULE_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/modules/opencl \
	$(OPENCL_CFLAGS) -DCL_TARGET_OPENCL_VERSION=120 \
	-DTSR_MODULE_NAME=tessera_opencl

EXTRA_DIST += $(opencl_kernels) m4/tsr-opencl.m4

if TSR_OPENCL
BUILT_SOURCES += modules/opencl/ocl-kernels.h
endif
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
