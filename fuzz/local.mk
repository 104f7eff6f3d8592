## fuzz/local.mk - libFuzzer targets (configure --enable-fuzzing CC=clang).
## See fuzz/README for how to run them.

if TSR_FUZZING
noinst_PROGRAMS += fuzz/gguf-fuzz fuzz/graph-fuzz
endif
fuzz_gguf_fuzz_SOURCES = fuzz/gguf-fuzz.c
fuzz_gguf_fuzz_LDADD = lib/libtessera.la
# -static links the uninstalled libtessera into the target, so it runs
# from the build tree without a wrapper.
fuzz_gguf_fuzz_LDFLAGS = -static $(TSR_FUZZ_LDFLAGS)
fuzz_graph_fuzz_SOURCES = fuzz/graph-fuzz.c
fuzz_graph_fuzz_LDADD = lib/libtessera.la
fuzz_graph_fuzz_LDFLAGS = -static $(TSR_FUZZ_LDFLAGS)

EXTRA_DIST += fuzz/README fuzz/corpus

# Run the GGUF reader's fuzzer for FUZZ_TIME seconds on a copy of the
# seed corpus (new inputs go to fuzz/corpus-gguf in the build tree).
FUZZ_TIME = 60
fuzz-gguf: fuzz/gguf-fuzz$(EXEEXT)
	@mkdir -p fuzz/corpus-gguf
	./fuzz/gguf-fuzz$(EXEEXT) -max_total_time=$(FUZZ_TIME) \
	  fuzz/corpus-gguf $(srcdir)/fuzz/corpus
.PHONY: fuzz-gguf
# The same for graph building and validation (no seed corpus: inputs
# are programs, and any bytes are one).
fuzz-graph: fuzz/graph-fuzz$(EXEEXT)
	@mkdir -p fuzz/corpus-graph
	./fuzz/graph-fuzz$(EXEEXT) -max_total_time=$(FUZZ_TIME) \
	  fuzz/corpus-graph
.PHONY: fuzz-graph
clean-local: clean-fuzz
clean-fuzz:
	-rm -rf fuzz/corpus-gguf fuzz/corpus-graph
.PHONY: clean-fuzz
