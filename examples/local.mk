## examples/local.mk - programs an embedder copies from.

noinst_PROGRAMS += examples/tessera-demo
examples_tessera_demo_SOURCES = examples/demo.c
examples_tessera_demo_LDADD = lib/libtessera.la -lm
noinst_PROGRAMS += examples/tessera-generate
examples_tessera_generate_SOURCES = examples/generate.c
examples_tessera_generate_LDADD = model/libtessera-model.la \
	lib/libtessera.la -lm
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

# installcheck (distcheck runs it on the tree it installs; quickstart
# check on the static build's): the installed tessera.pc names the
# directory the modules went to, and the demo builds as its comment
# says, against the installed headers and pkg-config file (--static
# for a static library, whose Libs.private must bring the compiled-in
# backends' libraries), and runs.
if TSR_SHARED
TSR_PC_STATIC =
else
TSR_PC_STATIC = --static
endif
installcheck-local:
	@if test -z "$(PKG_CONFIG)"; then \
	  echo "installcheck: no pkg-config, not checking tessera.pc"; \
	  exit 0; \
	fi; \
	PKG_CONFIG_PATH="$(libdir)/pkgconfig"; export PKG_CONFIG_PATH; \
	pc="$(PKG_CONFIG) --define-variable=prefix=$(prefix)"; \
	bd=`$$pc --variable=backenddir tessera` || exit 1; \
	if test "x$$bd" != "x$(backenddir)"; then \
	  echo "installcheck: pkg-config --variable=backenddir tessera" \
	    "prints '$$bd', not '$(backenddir)'" >&2; \
	  exit 1; \
	fi; \
	cflags=`$$pc --cflags tessera` && \
	  libs=`$$pc $(TSR_PC_STATIC) --libs tessera` || exit 1; \
	echo "$(CC) -o installcheck-demo demo.c $$cflags $$libs -lm"; \
	$(CC) -o installcheck-demo $(srcdir)/examples/demo.c $$cflags \
	  $$libs -lm || exit 1; \
	LD_LIBRARY_PATH="$(libdir)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" \
	  ./installcheck-demo > installcheck-demo.log 2>&1; rc=$$?; \
	if test $$rc -ne 0; then cat installcheck-demo.log >&2; fi; \
	rm -f installcheck-demo installcheck-demo.log; \
	test $$rc -eq 0 && echo "installcheck: demo built with pkg-config" \
	  "$(TSR_PC_STATIC) and ran"
	@PKG_CONFIG_PATH="$(libdir)/pkgconfig"; export PKG_CONFIG_PATH; \
	pc="$(PKG_CONFIG) --define-variable=prefix=$(prefix)"; \
	test -z "$(PKG_CONFIG)" && exit 0; \
	cflags=`$$pc --cflags tessera-model` && \
	  libs=`$$pc $(TSR_PC_STATIC) --libs tessera-model` || exit 1; \
	echo "$(CC) -o installcheck-generate generate.c $$cflags $$libs -lm"; \
	$(CC) -o installcheck-generate $(srcdir)/examples/generate.c \
	  $$cflags $$libs -lm || exit 1; \
	rm -f installcheck-generate; \
	echo "installcheck: generate built against tessera-model.pc"
	@$(TSR_INSTALLCHECK_BACKEND)
# A backend module built out of the tree (examples/backend), against the
# installed headers and pkg-config file only, loaded by a program built
# the same way.  Shared builds only: a static libtessera has no symbols
# for a dlopened module to bind to.
if TSR_SHARED
TSR_INSTALLCHECK_BACKEND = \
	PKG_CONFIG_PATH="$(libdir)/pkgconfig"; export PKG_CONFIG_PATH; \
	pc="$(PKG_CONFIG) --define-variable=prefix=$(prefix)"; \
	cflags=`$$pc --cflags tessera` && libs=`$$pc --libs tessera` || exit 1; \
	echo "$(CC) -shared -fPIC -DTSR_MODULE_NAME=tessera_example" \
	  "-o tessera-example.so example-backend.c $$cflags $$libs"; \
	$(CC) -shared -fPIC -DTSR_MODULE_NAME=tessera_example \
	  -o tessera-example.so $(srcdir)/examples/backend/example-backend.c \
	  $$cflags $$libs || exit 1; \
	$(CC) -o installcheck-use-example \
	  $(srcdir)/examples/backend/use-example.c $$cflags $$libs || exit 1; \
	LD_LIBRARY_PATH="$(libdir)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" \
	  ./installcheck-use-example ./tessera-example.so; rc=$$?; \
	rm -f tessera-example.so installcheck-use-example; \
	test $$rc -eq 0 && echo "installcheck: an out-of-tree backend module" \
	  "built with pkg-config, loaded and computed"
else
TSR_INSTALLCHECK_BACKEND = :
endif
