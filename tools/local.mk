## tools/local.mk - command-line tools.

bin_PROGRAMS += tools/tessera-info
tools_tessera_info_SOURCES = tools/tessera-info.c
tools_tessera_info_LDADD = lib/libtessera.la
