## examples/local.mk - programs an embedder copies from.

noinst_PROGRAMS += examples/tessera-demo
examples_tessera_demo_SOURCES = examples/demo.c
examples_tessera_demo_LDADD = lib/libtessera.la -lm
noinst_PROGRAMS += examples/tessera-transformer
examples_tessera_transformer_SOURCES = examples/transformer.c
examples_tessera_transformer_LDADD = lib/libtessera.la -lm

# Run the main job on the default device, from the build tree.
demo: all
	TESSERA_BACKEND_PATH=$(TSR_BUILD_BACKEND_PATH) ./tools/tessera-info
	TESSERA_BACKEND_PATH=$(TSR_BUILD_BACKEND_PATH) ./examples/tessera-demo
.PHONY: demo
