## modules/local.mk - what every backend's build shares, and the list of
## backends: one "include modules/NAME/local.mk" line each, at the end.
## It is the only list: configure.ac reads these lines when autoconf
## runs to include each modules/NAME/tsr-NAME.m4, in the same order
## (the order of the configure summary and of the compiled-in table).
##
## A backend modules/NAME compiles its sources once, into the
## convenience library modules/NAME/libtsr-NAME.la, with
## $(TSR_BACKEND_CPPFLAGS) $(TSR_BACKEND_CFLAGS).  Its local.mk then
## either links that into the libtool module tessera-NAME.la
## ($(backenddir); sources empty, LDFLAGS $(TSR_MODULE_LDFLAGS), LIBADD
## the convenience library and $(TSR_MODULE_LIBS)) or, compiled in, adds
## it to libtessera.  Internal symbols are hidden (TSR_MODULE_HIDDEN and
## -fvisibility=hidden) and named tsr_NAME_..., so the module exports
## its descriptor only and a static libtessera.a nothing outside "tsr".

TSR_BACKEND_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
TSR_MODULE_LDFLAGS = -module -avoid-version -no-undefined \
	-export-symbols-regex '_LTX_tsr_module_descriptor$$'
TSR_MODULE_LIBS = lib/libtessera.la $(PTHREAD_LIBS)

# configure's list of backends comes from this file.
CONFIGURE_DEPENDENCIES = $(top_srcdir)/modules/local.mk

# Checks several backends' supports_op share (static inline functions).
EXTRA_DIST += modules/op-checks.h modules/kernel-times.h

include modules/cpu/local.mk
include modules/blas/local.mk
include modules/opencl/local.mk
include modules/cuda/local.mk
include modules/mpi/local.mk
