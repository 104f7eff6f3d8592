## modules/local.mk - how every backend is built: a libtool module
## (tessera-NAME.la in $(backenddir)) in modular builds, a convenience
## library linked into libtessera otherwise.  One source list serves
## both; TSR_MODULE_NAME gives the descriptor its NAME_LTX_ prefix.

TSR_MODULE_LDFLAGS = -module -avoid-version -no-undefined \
	-export-symbols-regex '_LTX_tsr_module_descriptor$$'

if TSR_MODULES
backend_LTLIBRARIES += modules/cpu/tessera-cpu.la
modules_cpu_tessera_cpu_la_SOURCES = $(cpu_sources)
modules_cpu_tessera_cpu_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_cpu
modules_cpu_tessera_cpu_la_LDFLAGS = $(TSR_MODULE_LDFLAGS)
modules_cpu_tessera_cpu_la_LIBADD = lib/libtessera.la $(PTHREAD_LIBS)
else
noinst_LTLIBRARIES += modules/cpu/libtessera-cpu-builtin.la
modules_cpu_libtessera_cpu_builtin_la_SOURCES = $(cpu_sources)
modules_cpu_libtessera_cpu_builtin_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_cpu
modules_cpu_libtessera_cpu_builtin_la_CFLAGS = $(AM_CFLAGS) \
	-fvisibility=hidden
endif
