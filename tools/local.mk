## tools/local.mk - command-line tools.

bin_PROGRAMS += tools/tessera-info
tools_tessera_info_SOURCES = tools/tessera-info.c
tools_tessera_info_LDADD = lib/libtessera.la

bin_PROGRAMS += tools/tessera-opcheck
tools_tessera_opcheck_SOURCES = tools/tessera-opcheck.c tools/opcheck.h \
	tools/opcheck-run.c tools/opcheck-cases.c tools/opcheck-cases-math.c \
	tools/opcheck-cases-nn.c
tools_tessera_opcheck_LDADD = lib/libtessera.la -lm
man_MANS += doc/tessera-opcheck.1
EXTRA_DIST += doc/tessera-opcheck.1

bin_PROGRAMS += tools/tessera-gguf
tools_tessera_gguf_SOURCES = tools/tessera-gguf.c
tools_tessera_gguf_LDADD = lib/libtessera.la -lm
man_MANS += doc/tessera-gguf.1
EXTRA_DIST += doc/tessera-gguf.1
