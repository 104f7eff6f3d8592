## lib/local.mk - libtessera.

lib_LTLIBRARIES += lib/libtessera.la

include_HEADERS = include/tessera.h
pkginclude_HEADERS += include/tessera/status.h include/tessera/log.h \
	include/tessera/types.h include/tessera/tensor.h \
	include/tessera/ops.h include/tessera/ops.def include/tessera/graph.h \
	include/tessera/backend.h include/tessera/alloc.h \
	include/tessera/registry.h include/tessera/module.h \
	include/tessera/gguf.h include/tessera/comm.h \
	include/tessera/sched.h include/tessera/hash.h
nodist_pkginclude_HEADERS += include/tessera/version.h

lib_libtessera_la_SOURCES = lib/tessera-impl.h lib/status.c lib/log.c \
	lib/types.c lib/types-impl.h lib/types-fit.c lib/types-quant.c \
	lib/types-kquant.c lib/types-iq.c lib/tensor.c lib/ops.c lib/ops-math.c lib/ops-nn.c \
	lib/validate.c lib/module-glue.c lib/hash.c lib/siphash.h lib/files.c \
	lib/graph.c lib/buffer.c \
	lib/backend.c lib/alloc.c lib/sched.c lib/registry.c lib/loader.c \
	lib/gguf-impl.h lib/gguf.c lib/gguf-parse.c lib/gguf-write.c \
	lib/gguf-load.c lib/comm.c
nodist_lib_libtessera_la_SOURCES = lib/builtin-modules.h
# Unfused multiply-adds: the reference conversions must give the bits of
# the formats' published dequantization (m4/tsr-checks.m4).
lib_libtessera_la_CFLAGS = $(AM_CFLAGS) $(TSR_EXACT_CFLAGS)
lib_libtessera_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_BACKEND_DIR='"$(backenddir)"'
lib_libtessera_la_LDFLAGS = -version-info $(TSR_LT_VERSION) -no-undefined \
	-export-symbols-regex '^tsr_'
lib_libtessera_la_LIBADD = $(LTDL_LIBS) $(PTHREAD_LIBS)
EXTRA_DIST += include/tessera/version.h.in tessera.pc.in
DISTCLEANFILES += lib/builtin-modules.h
