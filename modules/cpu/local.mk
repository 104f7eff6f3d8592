## modules/cpu/local.mk - the CPU backend (always built; see
## modules/local.mk for the pattern every backend follows).
##
## cpu_sources is compiled once, at the baseline level (glue: device,
## thread pool, op walks, dispatch).  cpu-vec.c (the hot loops),
## cpu-qdot.c and cpu-qdot-32.c (integer dots of quantized weights,
## rows of them to f32), cpu-kquant.c (the same for the super-block
## types) and cpu-gemm.c (the
## GEMM micro-kernel) are compiled once per ISA level
## configure chose (--with-cpu-levels), each
## into its own convenience library with that level's flags and symbol
## suffix (cpu-levels.def, the one table of levels; levels.mk is
## generated from it); cpu-dispatch.c picks a level.  They are compiled
## without contraction of a multiply and an add into an FMA, so that
## rows to f32 round like libtessera's reference (explicit FMA
## intrinsics are unaffected).

cpu_sources = modules/cpu/cpu-module.c modules/cpu/cpu-impl.h \
	modules/cpu/cpu-threadpool.c modules/cpu/cpu-threadpool.h \
	modules/cpu/cpu-ops.c modules/cpu/cpu-ops-elementwise.c \
	modules/cpu/cpu-ops-copy.c modules/cpu/cpu-ops-rows.c \
	modules/cpu/cpu-ops-matmul.c modules/cpu/cpu-vec.h \
	modules/cpu/cpu-ops-math.c \
	modules/cpu/cpu-ops-nn.c modules/cpu/cpu-dispatch.c \
	modules/cpu/cpu-repack.c \
	modules/cpu/cpu-levels.def \
	modules/cpu/cpu-dispatch.h modules/cpu/cpu-amx.h \
	modules/cpu/cpu-vec.def \
	modules/cpu/cpu-vec-k.h modules/cpu/cpu-vec-k.def

cpu_level_sources = modules/cpu/cpu-vec.c modules/cpu/cpu-vec.h \
	modules/cpu/cpu-qdot.c modules/cpu/cpu-gemm.c \
	modules/cpu/cpu-kquant.c modules/cpu/cpu-qdot-x8.c \
	modules/cpu/cpu-qdot-32.c modules/cpu/cpu-qdot.h modules/cpu/cpu-amx.h \
	modules/cpu/cpu-level.h modules/cpu/cpu-vec.def

cpu_level_cflags = $(AM_CFLAGS) $(TSR_EXACT_CFLAGS) -fvisibility=hidden
# One convenience library per ISA level of cpu-levels.def (levels.mk,
# generated from it); configure chooses which are built.
EXTRA_LTLIBRARIES =
include modules/cpu/levels.mk
noinst_LTLIBRARIES += $(TSR_CPU_LEVEL_LIBS)
cpu_level_libs = $(TSR_CPU_LEVEL_LIBS)
$(srcdir)/modules/cpu/levels.mk: $(srcdir)/modules/cpu/cpu-levels.def \
		$(srcdir)/modules/cpu/gen-levels-mk.sh
	$(AM_V_GEN)$(SHELL) $(srcdir)/modules/cpu/gen-levels-mk.sh \
	  $(srcdir)/modules/cpu/cpu-levels.def > $@-t && mv $@-t $@

noinst_LTLIBRARIES += modules/cpu/libtsr-cpu.la
modules_cpu_libtsr_cpu_la_SOURCES = $(cpu_sources)
modules_cpu_libtsr_cpu_la_CPPFLAGS = $(AM_CPPFLAGS) $(TSR_BACKEND_CPPFLAGS) \
	$(TSR_CPU_LEVEL_CPPFLAGS) -DTSR_MODULE_NAME=tessera_cpu
modules_cpu_libtsr_cpu_la_CFLAGS = $(TSR_BACKEND_CFLAGS)
modules_cpu_libtsr_cpu_la_LIBADD = $(cpu_level_libs)
modules_cpu_libtsr_cpu_la_DEPENDENCIES = $(cpu_level_libs)
if TSR_MODULES
backend_LTLIBRARIES += modules/cpu/tessera-cpu.la
modules_cpu_tessera_cpu_la_SOURCES =
modules_cpu_tessera_cpu_la_LDFLAGS = $(TSR_MODULE_LDFLAGS)
modules_cpu_tessera_cpu_la_LIBADD = modules/cpu/libtsr-cpu.la \
	$(TSR_MODULE_LIBS)
else
lib_libtessera_la_LIBADD += modules/cpu/libtsr-cpu.la
endif

EXTRA_DIST += modules/cpu/tsr-cpu.m4 modules/cpu/gen-levels-mk.sh \
	modules/cpu/levels.mk testsuite/tessera.cpu
