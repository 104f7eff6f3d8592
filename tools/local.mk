## tools/local.mk - command-line tools.

bin_PROGRAMS += tools/tessera-info
tools_tessera_info_SOURCES = tools/tessera-info.c tools/tool-util.c \
	tools/tool-util.h
tools_tessera_info_LDADD = lib/libtessera.la -lm $(PTHREAD_LIBS)

bin_PROGRAMS += tools/tessera-opcheck
tools_tessera_opcheck_SOURCES = tools/tessera-opcheck.c tools/opcheck.h \
	tools/opcheck-run.c tools/opcheck-cases.c tools/opcheck-cases-math.c \
	tools/opcheck-cases-nn.c tools/tool-util.c tools/tool-util.h
tools_tessera_opcheck_LDADD = lib/libtessera.la -lm $(PTHREAD_LIBS)
man_MANS += doc/tessera-opcheck.1
EXTRA_DIST += doc/tessera-opcheck.1

bin_PROGRAMS += tools/tessera-gguf
tools_tessera_gguf_SOURCES = tools/tessera-gguf.c tools/gguf-synth.c \
	tools/gguf-synth-vocab.c tools/gguf-synth.h tools/gguf-recipe.c \
	tools/gguf-recipe.h tools/tool-util.c tools/tool-util.h
tools_tessera_gguf_LDADD = lib/libtessera.la -lm $(PTHREAD_LIBS)
man_MANS += doc/tessera-gguf.1
EXTRA_DIST += doc/tessera-gguf.1

bin_PROGRAMS += tools/tessera-run
tools_tessera_run_SOURCES = tools/tessera-run.c tools/run.h \
	tools/run-bench.c tools/run-batched.c tools/tool-util.c \
	tools/tool-util.h
tools_tessera_run_LDADD = model/libtessera-model.la lib/libtessera.la -lm \
	$(PTHREAD_LIBS)
man_MANS += doc/tessera-run.1
EXTRA_DIST += doc/tessera-run.1

bin_PROGRAMS += tools/tessera-bench
tools_tessera_bench_SOURCES = tools/tessera-bench.c tools/bench.h \
	tools/bench-run.c tools/bench-report.c tools/bench-comm.c \
	tools/bench-peaks.c tools/bench-plot.c tools/tool-util.c \
	tools/tool-util.h modules/cpu/cpu-amx.h
tools_tessera_bench_LDADD = lib/libtessera.la -lm $(PTHREAD_LIBS)
man_MANS += doc/tessera-bench.1
EXTRA_DIST += doc/tessera-bench.1

# make bench: the default cases on the CPU with 2 threads, the uninstalled
# modules loaded (a minute or two; not part of make check).  Extra
# options go in BENCHFLAGS, e.g. make bench BENCHFLAGS='--format csv'.
BENCHFLAGS =
bench: tools/tessera-bench$(EXEEXT) $(backend_LTLIBRARIES)
	TESSERA_BACKEND_PATH=$(TSR_BUILD_BACKEND_PATH) \
	  tools/tessera-bench$(EXEEXT) --device cpu --threads 2 --roof \
	  $(BENCHFLAGS)
.PHONY: bench
