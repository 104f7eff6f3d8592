## levels.mk - generated from modules/cpu/cpu-levels.def by
## modules/cpu/gen-levels-mk.sh (make regenerates it): do not edit.

EXTRA_LTLIBRARIES += modules/cpu/libcpu-generic.la
modules_cpu_libcpu_generic_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_generic_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=generic
modules_cpu_libcpu_generic_la_CFLAGS = $(cpu_level_cflags)

EXTRA_LTLIBRARIES += modules/cpu/libcpu-x86_64.la
modules_cpu_libcpu_x86_64_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_x86_64_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=x86_64
modules_cpu_libcpu_x86_64_la_CFLAGS = $(cpu_level_cflags) -march=x86-64

EXTRA_LTLIBRARIES += modules/cpu/libcpu-v2.la
modules_cpu_libcpu_v2_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_v2_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=v2
modules_cpu_libcpu_v2_la_CFLAGS = $(cpu_level_cflags) -march=x86-64-v2

EXTRA_LTLIBRARIES += modules/cpu/libcpu-v3.la
modules_cpu_libcpu_v3_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_v3_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=v3
modules_cpu_libcpu_v3_la_CFLAGS = $(cpu_level_cflags) -march=x86-64-v3

EXTRA_LTLIBRARIES += modules/cpu/libcpu-v3vnni.la
modules_cpu_libcpu_v3vnni_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_v3vnni_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=v3vnni
modules_cpu_libcpu_v3vnni_la_CFLAGS = $(cpu_level_cflags) -march=x86-64-v3 -mavxvnni

EXTRA_LTLIBRARIES += modules/cpu/libcpu-v4.la
modules_cpu_libcpu_v4_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_v4_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=v4
modules_cpu_libcpu_v4_la_CFLAGS = $(cpu_level_cflags) -march=x86-64-v4

EXTRA_LTLIBRARIES += modules/cpu/libcpu-v4vnni.la
modules_cpu_libcpu_v4vnni_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_v4vnni_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=v4vnni
modules_cpu_libcpu_v4vnni_la_CFLAGS = $(cpu_level_cflags) -march=x86-64-v4 -mavx512vnni

EXTRA_LTLIBRARIES += modules/cpu/libcpu-v4amx.la
modules_cpu_libcpu_v4amx_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_v4amx_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=v4amx
modules_cpu_libcpu_v4amx_la_CFLAGS = $(cpu_level_cflags) -march=x86-64-v4 -mavx512vnni -mamx-tile -mamx-int8

EXTRA_LTLIBRARIES += modules/cpu/libcpu-armv8.la
modules_cpu_libcpu_armv8_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_armv8_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=armv8
modules_cpu_libcpu_armv8_la_CFLAGS = $(cpu_level_cflags) -march=armv8-a

EXTRA_LTLIBRARIES += modules/cpu/libcpu-armv8_2.la
modules_cpu_libcpu_armv8_2_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_armv8_2_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=armv8_2
modules_cpu_libcpu_armv8_2_la_CFLAGS = $(cpu_level_cflags) -march=armv8.2-a+dotprod+fp16

EXTRA_LTLIBRARIES += modules/cpu/libcpu-armv8_6.la
modules_cpu_libcpu_armv8_6_la_SOURCES = $(cpu_level_sources)
modules_cpu_libcpu_armv8_6_la_CPPFLAGS = $(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=armv8_6
modules_cpu_libcpu_armv8_6_la_CFLAGS = $(cpu_level_cflags) -march=armv8.6-a+i8mm+sve
