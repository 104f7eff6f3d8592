## modules/blas/local.mk - the BLAS backend on BLIS (configure
## --with-blis; see modules/local.mk for the pattern).  BLIS is linked
## into the module only, or, compiled in, into libtessera.

blas_sources = modules/blas/blas-module.c modules/blas/blas-matmul.c \
	modules/blas/blas-impl.h

if TSR_BACKEND_BLAS
noinst_LTLIBRARIES += modules/blas/libtsr-blas.la
modules_blas_libtsr_blas_la_SOURCES = $(blas_sources)
modules_blas_libtsr_blas_la_CPPFLAGS = $(AM_CPPFLAGS) $(TSR_BACKEND_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_blas $(BLIS_CFLAGS)
modules_blas_libtsr_blas_la_CFLAGS = $(TSR_BACKEND_CFLAGS)
modules_blas_libtsr_blas_la_LIBADD = $(BLIS_LIBS)
if TSR_MODULES
backend_LTLIBRARIES += modules/blas/tessera-blas.la
modules_blas_tessera_blas_la_SOURCES =
modules_blas_tessera_blas_la_LDFLAGS = $(TSR_MODULE_LDFLAGS) $(BLIS_RPATH)
modules_blas_tessera_blas_la_LIBADD = modules/blas/libtsr-blas.la \
	$(TSR_MODULE_LIBS)
else
lib_libtessera_la_LIBADD += modules/blas/libtsr-blas.la
lib_libtessera_la_LDFLAGS += $(BLIS_RPATH)
endif
endif

EXTRA_DIST += $(blas_sources) modules/blas/tsr-blas.m4 testsuite/tessera.blas
