## modules/blas/local.mk - the BLAS backend's sources (built as
## modules/local.mk says, only when configure found BLIS).
blas_sources = modules/blas/blas-module.c modules/blas/blas-matmul.c \
	modules/blas/blas-impl.h
EXTRA_DIST += m4/tsr-blas.m4
