## testsuite/local.mk - the DejaGnu testsuite and its check-only modules.

DEJATOOL = tessera
RUNTESTDEFAULTFLAGS = --tool tessera --srcdir $$srcdir/testsuite
EXTRA_DEJAGNU_SITE_CONFIG = testsuite/site-extra.exp
DISTCLEANFILES += testsuite/site-extra.exp site.exp site.bak tessera.sum \
	tessera.log

# A missing runtest must fail make check, not just warn.
check-local:
	@if $(SHELL) -c '$(RUNTEST) --version' >/dev/null 2>&1; then :; else \
	  echo "error: DejaGnu's runtest not found; install DejaGnu (Debian: apt-get install dejagnu)" >&2; \
	  exit 1; fi

# Check-only modules that fail to load, each in its own way.
if TSR_SHARED
TSR_CHECK_MODULE_LDFLAGS = -module -avoid-version -no-undefined \
	-rpath $(abs_builddir)/testsuite/modules
check_LTLIBRARIES += testsuite/modules/tessera-badabi.la \
	testsuite/modules/tessera-zeroscore.la \
	testsuite/modules/tessera-initnull.la \
	testsuite/modules/tessera-notmodule.la \
	testsuite/modules/tessera-mockgpu.la \
	testsuite/modules/tessera-partial.la \
	testsuite/modules/tessera-asyncfail.la \
	testsuite/modules/tessera-badflags.la \
	testsuite/modules/tessera-undefsym.la \
	testsuite/modules/tessera-shortdesc.la
testsuite_modules_tessera_badabi_la_SOURCES = testsuite/modules/badabi.c
testsuite_modules_tessera_badabi_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_badabi
testsuite_modules_tessera_badabi_la_LDFLAGS = $(TSR_CHECK_MODULE_LDFLAGS)
testsuite_modules_tessera_zeroscore_la_SOURCES = testsuite/modules/zeroscore.c
testsuite_modules_tessera_zeroscore_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_zeroscore
testsuite_modules_tessera_zeroscore_la_LDFLAGS = $(TSR_CHECK_MODULE_LDFLAGS)
testsuite_modules_tessera_initnull_la_SOURCES = testsuite/modules/initnull.c
testsuite_modules_tessera_initnull_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_initnull
testsuite_modules_tessera_initnull_la_LDFLAGS = $(TSR_CHECK_MODULE_LDFLAGS)
testsuite_modules_tessera_notmodule_la_SOURCES = testsuite/modules/notmodule.c
testsuite_modules_tessera_notmodule_la_LDFLAGS = $(TSR_CHECK_MODULE_LDFLAGS)
testsuite_modules_tessera_mockgpu_la_SOURCES = testsuite/modules/mockgpu.c
testsuite_modules_tessera_mockgpu_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_mockgpu
testsuite_modules_tessera_mockgpu_la_LDFLAGS = $(TSR_CHECK_MODULE_LDFLAGS)
testsuite_modules_tessera_mockgpu_la_LIBADD = lib/libtessera.la
testsuite_modules_tessera_partial_la_SOURCES = testsuite/modules/partial.c
testsuite_modules_tessera_partial_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_partial
testsuite_modules_tessera_partial_la_LDFLAGS = $(TSR_CHECK_MODULE_LDFLAGS)
testsuite_modules_tessera_partial_la_LIBADD = lib/libtessera.la
testsuite_modules_tessera_asyncfail_la_SOURCES = testsuite/modules/asyncfail.c
testsuite_modules_tessera_asyncfail_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_asyncfail
testsuite_modules_tessera_asyncfail_la_LDFLAGS = $(TSR_CHECK_MODULE_LDFLAGS)
testsuite_modules_tessera_asyncfail_la_LIBADD = lib/libtessera.la
testsuite_modules_tessera_badflags_la_SOURCES = testsuite/modules/badflags.c
testsuite_modules_tessera_badflags_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_badflags
testsuite_modules_tessera_badflags_la_LDFLAGS = $(TSR_CHECK_MODULE_LDFLAGS)
# Linked with a symbol left undefined on purpose (so no -no-undefined).
testsuite_modules_tessera_undefsym_la_SOURCES = testsuite/modules/undefsym.c
testsuite_modules_tessera_undefsym_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_undefsym
testsuite_modules_tessera_undefsym_la_LDFLAGS = -module -avoid-version \
	-rpath $(abs_builddir)/testsuite/modules
testsuite_modules_tessera_shortdesc_la_SOURCES = testsuite/modules/shortdesc.c
testsuite_modules_tessera_shortdesc_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_shortdesc
testsuite_modules_tessera_shortdesc_la_LDFLAGS = $(TSR_CHECK_MODULE_LDFLAGS)
endif

# The test programs themselves are built by testsuite/lib/tessera.exp.
EXTRA_DIST += testsuite/config/default.exp testsuite/lib/tessera.exp \
	testsuite/lib/tsr-test.h testsuite/lib/tsr-model-ref.h \
	testsuite/lib/tsr-gpu-quant.h \
	testsuite/site-extra.exp.in \
	testsuite/modules/README testsuite/README testsuite/tessera.rules \
	testsuite/tessera.types testsuite/tessera.ops \
	testsuite/tessera.registry testsuite/tessera.loader \
	testsuite/tessera.alloc testsuite/tessera.static \
	testsuite/tessera.examples testsuite/tessera.ops-math \
	testsuite/tessera.ops-nn testsuite/tessera.sched \
	testsuite/tessera.opcheck testsuite/tessera.gguf \
	testsuite/tessera.bench testsuite/tessera.model \
	testsuite/tessera.vocab testsuite/tessera.validate \
	testsuite/tessera.soak
clean-local: clean-testsuite
clean-testsuite:
	-rm -rf testsuite/bin testsuite/cache sanitize levels soak
.PHONY: clean-testsuite

# The sanitizer job: ASan+UBSan and TSan builds of their own in
# sanitize/, running the areas that handle hostile input and the
# registry's threaded tests (testsuite/check-sanitize.sh).
check-sanitize:
	$(SHELL) $(srcdir)/testsuite/check-sanitize.sh $(abs_top_srcdir) \
	  $(abs_top_builddir)/sanitize
.PHONY: check-sanitize
EXTRA_DIST += testsuite/check-sanitize.sh testsuite/build-dir.sh

# The soak tests (testsuite/tessera.soak): a 20,000-token generation
# and 1,000 model load/free cycles, kept out of make check; their
# tessera.sum and tessera.log go to soak/, beside make check's.
check-soak:
	$(MKDIR_P) soak
	TESSERA_SOAK=1 $(MAKE) $(AM_MAKEFLAGS) check \
	  RUNTESTFLAGS="--outdir $(abs_builddir)/soak soak.exp"
.PHONY: check-soak

# The levels job: a --disable-ifunc build (the function-table dispatch
# at every level) and an aarch64 cross build run under qemu-user with
# three CPU models, in levels/ (testsuite/check-levels.sh).
check-levels:
	$(SHELL) $(srcdir)/testsuite/check-levels.sh $(abs_top_srcdir) \
	  $(abs_top_builddir)/levels
.PHONY: check-levels
EXTRA_DIST += testsuite/check-levels.sh
