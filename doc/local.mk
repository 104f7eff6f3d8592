## doc/local.mk - manual and man pages.

info_TEXINFOS = doc/tessera.texi
doc_tessera_TEXINFOS = doc/model.texi doc/parallel.texi
# One info file, however long the manual grows.
AM_MAKEINFOFLAGS = --no-split
man_MANS += doc/tessera-info.1 doc/tessera-model.3
EXTRA_DIST += doc/tessera-info.1 doc/tessera-model.3

# distcheck builds html rather than dvi: TeX is not needed to check a
# release.
AM_DISTCHECK_DVI_TARGET = html
