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
## into its own convenience library with that level's -march and symbol
## suffix; cpu-dispatch.c picks a level at load time (ifunc) or at init
## (function table).  They are compiled without contraction of a
## multiply and an add into an FMA, so that rows to f32 round like
## libtessera's reference (explicit FMA intrinsics are unaffected).

cpu_sources = modules/cpu/cpu-module.c modules/cpu/cpu-impl.h \
	modules/cpu/cpu-threadpool.c modules/cpu/cpu-threadpool.h \
	modules/cpu/cpu-ops.c modules/cpu/cpu-ops-elementwise.c \
	modules/cpu/cpu-ops-copy.c modules/cpu/cpu-ops-rows.c \
	modules/cpu/cpu-ops-matmul.c modules/cpu/cpu-vec.h \
	modules/cpu/cpu-ops-math.c \
	modules/cpu/cpu-ops-nn.c modules/cpu/cpu-dispatch.c \
	modules/cpu/cpu-dispatch.h modules/cpu/cpu-vec.def \
	modules/cpu/cpu-vec-k.h modules/cpu/cpu-vec-k.def

cpu_level_sources = modules/cpu/cpu-vec.c modules/cpu/cpu-vec.h \
	modules/cpu/cpu-qdot.c modules/cpu/cpu-gemm.c \
	modules/cpu/cpu-kquant.c \
	modules/cpu/cpu-qdot-32.c modules/cpu/cpu-qdot.h \
	modules/cpu/cpu-level.h modules/cpu/cpu-vec.def

cpu_level_cflags = $(AM_CFLAGS) $(TSR_EXACT_CFLAGS) -fvisibility=hidden
cpu_level_libs =

if TSR_LEVEL_X86_64
noinst_LTLIBRARIES += modules/cpu/libcpu-x86_64.la
cpu_level_libs += modules/cpu/libcpu-x86_64.la
modules_cpu_libcpu_x86_64_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_x86_64_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=x86_64
modules_cpu_libcpu_x86_64_la_CFLAGS = $(cpu_level_cflags) \
	$(TSR_LEVEL_CFLAGS_x86_64)
endif
if TSR_LEVEL_V2
noinst_LTLIBRARIES += modules/cpu/libcpu-v2.la
cpu_level_libs += modules/cpu/libcpu-v2.la
modules_cpu_libcpu_v2_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_v2_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=v2
modules_cpu_libcpu_v2_la_CFLAGS = $(cpu_level_cflags) $(TSR_LEVEL_CFLAGS_v2)
endif
if TSR_LEVEL_V3
noinst_LTLIBRARIES += modules/cpu/libcpu-v3.la
cpu_level_libs += modules/cpu/libcpu-v3.la
modules_cpu_libcpu_v3_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_v3_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=v3
modules_cpu_libcpu_v3_la_CFLAGS = $(cpu_level_cflags) $(TSR_LEVEL_CFLAGS_v3)
endif
if TSR_LEVEL_V3VNNI
noinst_LTLIBRARIES += modules/cpu/libcpu-v3vnni.la
cpu_level_libs += modules/cpu/libcpu-v3vnni.la
modules_cpu_libcpu_v3vnni_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_v3vnni_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=v3vnni
modules_cpu_libcpu_v3vnni_la_CFLAGS = $(cpu_level_cflags) \
	$(TSR_LEVEL_CFLAGS_v3vnni)
endif
if TSR_LEVEL_V4
noinst_LTLIBRARIES += modules/cpu/libcpu-v4.la
cpu_level_libs += modules/cpu/libcpu-v4.la
modules_cpu_libcpu_v4_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_v4_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=v4
modules_cpu_libcpu_v4_la_CFLAGS = $(cpu_level_cflags) $(TSR_LEVEL_CFLAGS_v4)
endif
if TSR_LEVEL_V4VNNI
noinst_LTLIBRARIES += modules/cpu/libcpu-v4vnni.la
cpu_level_libs += modules/cpu/libcpu-v4vnni.la
modules_cpu_libcpu_v4vnni_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_v4vnni_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=v4vnni
modules_cpu_libcpu_v4vnni_la_CFLAGS = $(cpu_level_cflags) \
	$(TSR_LEVEL_CFLAGS_v4vnni)
endif
if TSR_LEVEL_ARMV8
noinst_LTLIBRARIES += modules/cpu/libcpu-armv8.la
cpu_level_libs += modules/cpu/libcpu-armv8.la
modules_cpu_libcpu_armv8_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_armv8_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=armv8
modules_cpu_libcpu_armv8_la_CFLAGS = $(cpu_level_cflags) \
	$(TSR_LEVEL_CFLAGS_armv8)
endif
if TSR_LEVEL_ARMV8_2
noinst_LTLIBRARIES += modules/cpu/libcpu-armv8_2.la
cpu_level_libs += modules/cpu/libcpu-armv8_2.la
modules_cpu_libcpu_armv8_2_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_armv8_2_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_CPU_SUFFIX=armv8_2
modules_cpu_libcpu_armv8_2_la_CFLAGS = $(cpu_level_cflags) \
	$(TSR_LEVEL_CFLAGS_armv8_2)
endif
if TSR_LEVEL_ARMV8_6
noinst_LTLIBRARIES += modules/cpu/libcpu-armv8_6.la
cpu_level_libs += modules/cpu/libcpu-armv8_6.la
modules_cpu_libcpu_armv8_6_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_armv8_6_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_CPU_SUFFIX=armv8_6
modules_cpu_libcpu_armv8_6_la_CFLAGS = $(cpu_level_cflags) \
	$(TSR_LEVEL_CFLAGS_armv8_6)
endif
if TSR_LEVEL_GENERIC
noinst_LTLIBRARIES += modules/cpu/libcpu-generic.la
cpu_level_libs += modules/cpu/libcpu-generic.la
modules_cpu_libcpu_generic_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_generic_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTSR_CPU_SUFFIX=generic
modules_cpu_libcpu_generic_la_CFLAGS = $(cpu_level_cflags)
endif

noinst_LTLIBRARIES += modules/cpu/libtsr-cpu.la
modules_cpu_libtsr_cpu_la_SOURCES = $(cpu_sources)
modules_cpu_libtsr_cpu_la_CPPFLAGS = $(AM_CPPFLAGS) $(TSR_BACKEND_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_cpu
modules_cpu_libtsr_cpu_la_CFLAGS = $(TSR_BACKEND_CFLAGS)
modules_cpu_libtsr_cpu_la_LIBADD = $(cpu_level_libs)
if TSR_MODULES
backend_LTLIBRARIES += modules/cpu/tessera-cpu.la
modules_cpu_tessera_cpu_la_SOURCES =
modules_cpu_tessera_cpu_la_LDFLAGS = $(TSR_MODULE_LDFLAGS)
modules_cpu_tessera_cpu_la_LIBADD = modules/cpu/libtsr-cpu.la \
	$(TSR_MODULE_LIBS)
else
lib_libtessera_la_LIBADD += modules/cpu/libtsr-cpu.la
endif

EXTRA_DIST += modules/cpu/tsr-cpu.m4 testsuite/tessera.cpu
