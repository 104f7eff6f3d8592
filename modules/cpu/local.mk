cpu_sources = modules/cpu/cpu-module.c modules/cpu/cpu-impl.h \
	modules/cpu/cpu-threadpool.c modules/cpu/cpu-threadpool.h \
	modules/cpu/cpu-ops.c modules/cpu/cpu-ops-elementwise.c \
	modules/cpu/cpu-ops-copy.c modules/cpu/cpu-ops-rows.c \
	modules/cpu/cpu-ops-matmul.c modules/cpu/cpu-vec.c modules/cpu/cpu-vec.h \
	modules/cpu/cpu-visibility.h modules/cpu/cpu-ops-math.c \
	modules/cpu/cpu-ops-nn.c
