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

# One folder per layer: core (status, log, hashing, files, tensors,
# graphs), types (element types and their quantization), ops (the
# builders and the one check of a node), backend (buffers, backends,
# the graph allocator, the scheduler, the registry and module loader),
# gguf (the file format), comm (communication between processes).
lib_libtessera_la_SOURCES = lib/core/tessera-impl.h lib/core/status.c \
	lib/core/log.c lib/core/hash.c lib/core/siphash.h lib/core/files.c \
	lib/core/tensor.c lib/core/graph.c \
	lib/types/types-impl.h lib/types/types.c lib/types/types-fit.c \
	lib/types/types-quant.c lib/types/types-kquant.c lib/types/types-iq.c \
	lib/ops/ops.c lib/ops/ops-math.c lib/ops/ops-nn.c lib/ops/validate.c \
	lib/backend/buffer.c lib/backend/backend.c lib/backend/alloc.c \
	lib/backend/sched.c lib/backend/registry.c lib/backend/loader.c \
	lib/backend/module-glue.c \
	lib/gguf/gguf-impl.h lib/gguf/gguf.c lib/gguf/gguf-parse.c \
	lib/gguf/gguf-write.c lib/gguf/gguf-load.c \
	lib/comm/comm.c
nodist_lib_libtessera_la_SOURCES = lib/builtin-modules.h
# Unfused multiply-adds: the reference conversions must give the bits of
# the formats' published dequantization (m4/tsr-checks.m4).
lib_libtessera_la_CFLAGS = $(AM_CFLAGS) $(TSR_EXACT_CFLAGS)
lib_libtessera_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lib/core \
	-I$(top_srcdir)/lib/types -I$(top_srcdir)/lib/gguf \
	-DTSR_BACKEND_DIR='"$(backenddir)"'
lib_libtessera_la_LDFLAGS = -version-info $(TSR_LT_VERSION) -no-undefined \
	-export-symbols-regex '^tsr_'
lib_libtessera_la_LIBADD = $(LTDL_LIBS) $(PTHREAD_LIBS)
EXTRA_DIST += include/tessera/version.h.in tessera.pc.in
DISTCLEANFILES += lib/builtin-modules.h
