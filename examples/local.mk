## examples/local.mk - programs an embedder copies from.

noinst_PROGRAMS += examples/tessera-demo
examples_tessera_demo_SOURCES = examples/demo.c
examples_tessera_demo_LDADD = lib/libtessera.la -lm
noinst_PROGRAMS += examples/tessera-generate
examples_tessera_generate_SOURCES = examples/generate.c
examples_tessera_generate_LDADD = lib/libtessera.la -lm
noinst_PROGRAMS += examples/tessera-transformer
examples_tessera_transformer_SOURCES = examples/transformer.c
examples_tessera_transformer_LDADD = lib/libtessera.la -lm

# Run the main job on the default device, from the build tree: the
# demo, then a small model with random weights written by synth and run
# by tessera-run from a text prompt.
DEMO_MODEL = demo-model.gguf
demo: all
	TESSERA_BACKEND_PATH=$(TSR_BUILD_BACKEND_PATH) ./tools/tessera-info
	TESSERA_BACKEND_PATH=$(TSR_BUILD_BACKEND_PATH) ./examples/tessera-demo
	./tools/tessera-gguf synth --like=tiny --layers=4 --embd=256 \
	  --heads=8 --kv-heads=2 --ff=512 --vocab=4096 --type=q8_0 \
	  --tokenizer=llama $(DEMO_MODEL)
	TESSERA_BACKEND_PATH=$(TSR_BUILD_BACKEND_PATH) ./tools/tessera-run \
	  -m $(DEMO_MODEL) -p "Once upon a time" -n 24
.PHONY: demo
CLEANFILES += $(DEMO_MODEL)
