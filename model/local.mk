## model/local.mk - libtessera-model: model files, their graphs,
## sessions and caches, sampling, vocabularies and tokenizers.  Built on
## libtessera's public API only (model-lib.h): no -I of lib/, and
## libtessera's internal symbols are not exported to it.

lib_LTLIBRARIES += model/libtessera-model.la

include_HEADERS += include/tessera-model.h
pkginclude_HEADERS += include/tessera/model.h include/tessera/vocab.h \
	include/tessera/chat.h

model_libtessera_model_la_SOURCES = model/model-lib.h model/model-impl.h \
	model/arch.h model/model-arch.c model/arch-llama.c model/arch-qwen2.c \
	model/arch-qwen2moe.c model/arch-qwen3.c model/arch-qwen3moe.c \
	model/arch-gemma2.c model/arch-gemma3.c model/arch-phi3.c \
	model/model-load.c model/model-graph.c model/model-session.c \
	model/sample.c model/chat.c model/vocab-impl.h model/vocab.c \
	model/vocab-load.c \
	model/vocab-unicode.c model/vocab-ucd.c model/vocab-pretok.c \
	model/vocab-tokenize.c model/vocab-wpm.c model/vocab-ugm.c
model_libtessera_model_la_CPPFLAGS = -I$(top_builddir)/include \
	-I$(top_srcdir)/include -DTSR_BUILDING
model_libtessera_model_la_LDFLAGS = -version-info $(TSR_LT_VERSION) \
	-no-undefined -export-symbols-regex '^tsr_'
model_libtessera_model_la_LIBADD = lib/libtessera.la -lm
pkgconfig_DATA += tessera-model.pc
EXTRA_DIST += tessera-model.pc.in model/gen-ucd.awk
