/* cuda-kernels.h - the CUDA kernels as the C side of the module sees
 * them.  Not installed.
 *
 * The kernels live in the .cu files (compiled by nvcc, see local.mk);
 * each has a C-callable launcher declared here that queues it on a
 * stream and returns the launch's cudaError_t as an int (0: queued).
 * A tensor reaches a kernel as a struct tsr_cuda_tdesc: its device address,
 * shape and byte strides, so every kernel follows views and
 * permutations.  Launchers accept any size, including those above a
 * grid's limit: kernels walk their items in grid-stride loops.  */
#ifndef TSR_CUDA_KERNELS_H
#define TSR_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include <tessera/module.h>   /* TSR_MODULE_HIDDEN */

#ifdef __cplusplus
extern "C" {
#endif

struct tsr_cuda_tdesc
{
  char *data;                   /* device address of element 0 */
  int64_t ne[4];
  int64_t nb[4];
};

/* What kernels report through the status word: status nonzero means
   an index was out of range, value is the first bad one.  Status is
   the tag the launcher was given: the failing node's position in the
   graph plus one.  */
struct tsr_cuda_status
{
  int status;
  int value;
};

/* Partial sums of tsr_cuda_sum at most (doubles of its scratch).  */
#define CU_SUM_BLOCKS 1024
/* Bytes of scratch tsr_cuda_argsort uses at most, unless one row needs
   more.  */
#define CU_SORT_SCRATCH ((int64_t) 64 << 20)

/* cuda-backend.c */
/* Count N kernels queued by this thread (the backend's counters read
   the count around each compute).  */
TSR_MODULE_HIDDEN void tsr_cuda_count (int n);
TSR_MODULE_HIDDEN uint64_t tsr_cuda_counted (void);
/* How this thread's launchers queue kernels until the next call (a
   backend's walk sets its own and clears them after; the defaults,
   all zero, are plain launches):
     pdl          programmatic dependent launch (sm_90 and newer) for
                  the kernels of a token's step that wait for their
                  predecessor in the kernel itself (cuda-common.cuh,
                  tsr_cuda_launch): the next kernel is launched while
                  the one before it runs, instead of after it ends;
     mmvq_split   the most warps that share one row of a matrix-vector
                  product (1, 2 or 4; 0: 4).  */
struct tsr_cuda_tuning
{
  int pdl;
  int mmvq_split;
};
TSR_MODULE_HIDDEN void tsr_cuda_set_tuning (const struct tsr_cuda_tuning *t);
TSR_MODULE_HIDDEN struct tsr_cuda_tuning tsr_cuda_get_tuning (void);

/* cuda-reduce.cu */
/* A kernel that holds stream S for about US microseconds.  */
TSR_MODULE_HIDDEN int tsr_cuda_hold (cudaStream_t s, double us);

/* cuda-elementwise.cu */
/* d = a OP b (add, sub, mul, div), b broadcast to a's shape.  */
TSR_MODULE_HIDDEN int tsr_cuda_binary (cudaStream_t s, int op, struct tsr_cuda_tdesc d,
                         struct tsr_cuda_tdesc a, struct tsr_cuda_tdesc b);
/* d = f (a): scale, silu, gelu and the unary math ops; P0, P1 the op's
   float parameters (scale: factor; clamp: min, max).  */
TSR_MODULE_HIDDEN int tsr_cuda_unary (cudaStream_t s, int op, float p0, float p1,
                        struct tsr_cuda_tdesc d, struct tsr_cuda_tdesc a);
/* swiglu / geglu: d = act (a) * b, or with SPLIT the second half of
   each row of a as the gate.  */
TSR_MODULE_HIDDEN int tsr_cuda_glu (cudaStream_t s, int op, struct tsr_cuda_tdesc d,
                      struct tsr_cuda_tdesc a, struct tsr_cuda_tdesc b, int split);

/* cuda-copy.cu */
/* Element I (row-major) of s into element I of d, converted from
   STYPE to DTYPE (f32, f16, bf16, i32 destinations; any source, block
   sources having d's shape and dense rows).  */
TSR_MODULE_HIDDEN int tsr_cuda_convert (cudaStream_t s, struct tsr_cuda_tdesc d, int dtype,
                          struct tsr_cuda_tdesc src, int stype);
/* Element I of s into element I of d unchanged, ESIZE bytes each (for
   block types the caller counts blocks as elements).  */
TSR_MODULE_HIDDEN int tsr_cuda_copy_bytes (cudaStream_t s, struct tsr_cuda_tdesc d,
                             struct tsr_cuda_tdesc src, int esize);
/* d[:, i, j, l] = a[:, rows[i, j, l], j % a2, l % a3] as f32; a bad
   index is recorded in STATUS (device memory).  */
TSR_MODULE_HIDDEN int tsr_cuda_get_rows (cudaStream_t s, struct tsr_cuda_tdesc d,
                           struct tsr_cuda_tdesc a, int atype,
                           struct tsr_cuda_tdesc rows, struct tsr_cuda_status *status,
                           int tag);

/* cuda-rows.cu */
TSR_MODULE_HIDDEN int tsr_cuda_sum_rows (cudaStream_t s, struct tsr_cuda_tdesc d,
                           struct tsr_cuda_tdesc a);
/* norm (RMS false) or rms_norm (RMS true).  */
TSR_MODULE_HIDDEN int tsr_cuda_norm (cudaStream_t s, int rms, float eps, struct tsr_cuda_tdesc d,
                       struct tsr_cuda_tdesc a);
/* softmax (a * scale + mask); MTYPE < 0: no mask.  */
TSR_MODULE_HIDDEN int tsr_cuda_soft_max (cudaStream_t s, float scale, struct tsr_cuda_tdesc d,
                           struct tsr_cuda_tdesc a, struct tsr_cuda_tdesc mask,
                           int mtype);
/* FF: the frequency factors (f32 [n_dims / 2]) when HAS_FF.  */
TSR_MODULE_HIDDEN int tsr_cuda_rope (cudaStream_t s, struct tsr_cuda_tdesc d, struct tsr_cuda_tdesc a,
                       struct tsr_cuda_tdesc pos, struct tsr_cuda_tdesc ff, int has_ff,
                       int n_dims, int neox, float freq_base,
                       float freq_scale);

/* cuda-quant.cu */
/* N elements of the dense array S (STYPE: f32, f16, bf16, or a block
   type; 16-byte aligned) into the dense array D (DTYPE: f32, f16, or bf16
   from a float source; 16-byte aligned).  */
TSR_MODULE_HIDDEN int tsr_cuda_convert_dense (cudaStream_t s, void *d, int dtype,
                                const void *src, int stype, int64_t n);
/* rms_norm (x) * w (nodes rms_norm, mul fused), x = a, or with ADD
   x = a + b, also stored in SUM (nodes add, rms_norm, mul): a, b, sum
   and d of one shape, w broadcast over it.  With Q8 (d two-dimensional,
   rows a multiple of 32 long), d also as tsr_cuda_quantize_q8 would
   round it into Q8 and DS8.  */
TSR_MODULE_HIDDEN int tsr_cuda_rms_norm_mul (cudaStream_t s, float eps,
                               struct tsr_cuda_tdesc d,
                               struct tsr_cuda_tdesc a,
                               struct tsr_cuda_tdesc b,
                               struct tsr_cuda_tdesc sum, int add,
                               struct tsr_cuda_tdesc w, signed char *q8,
                               void *ds8);
/* Columns at most in one matrix-vector product.  */
#define CU_MMV_MAX_COLS 8
/* Matrix-vector products of one set of activations in one launch:
   d[m] = a[m]^T b for m < n, the matrices of one block type (not q8_K)
   and one row length, with dense rows; f32 b [k, c, b2, b3] with
   c <= CU_MMV_MAX_COLS, dense rows, row and batch strides and address
   multiples of 16 bytes; d f32 with dense rows.  A set of one may be
   batched (b2 * b3 <= 65535); a set of several (fused nodes) is
   two-dimensional.  With GLU (TSR_OP_SWIGLU or TSR_OP_GEGLU; n == 2,
   equal rows) only d[0] = act (a[0]^T b) * (a[1]^T b) is written.
   q8_0 and q4_0 matrices in a set of several must have rows of whole
   16-byte words, a multiple of 256 elements long (cuda-quant.cu's
   staged kernel); cuda-mmvq.cu takes two-dimensional ones otherwise.  */
#define CU_MMV_MAX_SET 3
struct tsr_cuda_mmv_set
{
  int n;
  int glu;                      /* 0, or the gated unit's op */
  struct tsr_cuda_tdesc a[CU_MMV_MAX_SET], d[CU_MMV_MAX_SET];
};
TSR_MODULE_HIDDEN int tsr_cuda_mul_mat_vec_set (cudaStream_t s,
                                  const struct tsr_cuda_mmv_set *set,
                                  int atype, struct tsr_cuda_tdesc b);

/* cuda-mmvq.cu */
/* The activations B (f32 [k, n], dense rows, n <= CU_MMV_MAX_COLS) in
   blocks of 32 rounded to 8-bit integers: Q (k * n bytes, 16-byte
   aligned) and DS (k / 32 * n pairs of floats: scale, scaled sum).  */
TSR_MODULE_HIDDEN int tsr_cuda_quantize_q8 (cudaStream_t s,
                              struct tsr_cuda_tdesc b, signed char *q,
                              void *ds);
/* Whether tsr_cuda_mmvq multiplies weights of block type TYPE (all
   but q2_K and q3_K).  */
static inline bool
tsr_cuda_mmvq_takes (int type)
{
  switch (type)
    {
    case TSR_TYPE_Q8_0: case TSR_TYPE_Q4_0: case TSR_TYPE_Q4_1:
    case TSR_TYPE_Q5_0: case TSR_TYPE_Q5_1: case TSR_TYPE_IQ4_NL:
    case TSR_TYPE_MXFP4: case TSR_TYPE_Q4_K: case TSR_TYPE_Q5_K:
    case TSR_TYPE_Q6_K: case TSR_TYPE_IQ4_XS:
      return true;
    default:
      return false;
    }
}
/* The products of SET (weights of a type tsr_cuda_mmvq_takes, K
   columns, two-dimensional) with NCOLS columns of activations so
   rounded.  */
TSR_MODULE_HIDDEN int tsr_cuda_mmvq (cudaStream_t s,
                       const struct tsr_cuda_mmv_set *set, int atype,
                       const signed char *q, const void *ds, int64_t k,
                       int ncols);

/* cuda-set-rows.cu */
/* Phases: a few small rope and set_rows nodes that follow each other
   in a graph (a token's q and k rotations and its key and value rows
   into the caches) in one thread block, in order, with a barrier before
   each phase that reads or writes what an earlier one writes, so each
   phase sees the previous ones' writes: the work and results of the
   separate kernels in one launch.  A rope phase
   has at most CU_PHASE_ROPE_MAX elements; a set_rows phase at most
   CU_PHASE_ROWS_MAX source rows.  */
#define CU_PHASES_MAX 4
#define CU_PHASE_ROPE_MAX 16384
#define CU_PHASE_ROWS_MAX 256   /* CU_THREADS of cuda-common.cuh */
struct tsr_cuda_phase
{
  int op;                       /* TSR_OP_ROPE or TSR_OP_SET_ROWS */
  /* rope: d, a, pos, ff; set_rows: d, s, idx (x unused) */
  struct tsr_cuda_tdesc d, a, b, x;
  int has_ff, n_dims, neox;     /* rope */
  float freq_base, freq_scale;
  int dtype, tag;               /* set_rows: d's type, status tag */
  int sync, slot;               /* set by tsr_cuda_run_phases */
};
struct tsr_cuda_phases
{
  int n;
  struct tsr_cuda_phase p[CU_PHASES_MAX];
};
TSR_MODULE_HIDDEN int tsr_cuda_run_phases (cudaStream_t s,
                                           const struct tsr_cuda_phases *ph,
                                           struct tsr_cuda_status *status);
/* d[:, idx[i, j, l], j % d2, l % d3] = s[:, i, j, l] converted to
   DTYPE (f32, f16, bf16; q8_0 / q4_0 with dense rows), the last source
   row in row-major order winning where several name one row.  A bad
   index goes to STATUS, and then nothing is written.  CLAIM: scratch
   device memory of one int per row of d (d.ne[1] * d.ne[2] * d.ne[3]);
   the source has fewer than 2^31 rows.  */
TSR_MODULE_HIDDEN int tsr_cuda_set_rows (cudaStream_t s, struct tsr_cuda_tdesc d, int dtype,
                           struct tsr_cuda_tdesc src, struct tsr_cuda_tdesc idx,
                           int *claim, struct tsr_cuda_status *status, int tag);
/* Element I (row-major) of s into element I of d, quantized: DTYPE
   q8_0 or q4_0 with dense rows, STYPE f32, f16 or bf16.  */
TSR_MODULE_HIDDEN int tsr_cuda_quantize (cudaStream_t s, struct tsr_cuda_tdesc d, int dtype,
                           struct tsr_cuda_tdesc src, int stype);

/* cuda-attn.cu */
/* Bytes of shared memory tsr_cuda_flash_attn needs for these head sizes (the
   caller keeps it within the 48 KiB a launch gets by default).  */
TSR_MODULE_HIDDEN size_t tsr_cuda_flash_attn_shared (int64_t dk, int64_t dv);
/* flash_attn_ext (tessera/ops.h): K and V f32 or f16 (KTYPE, VTYPE);
   MTYPE f32, f16, or < 0 for no mask; SOFTCAP 0 for none.  With Q8 (d
   dense, rows a multiple of 32 long), d also as tsr_cuda_quantize_q8
   would round d's memory as [rows, n] activations into Q8 and DS8.  */
TSR_MODULE_HIDDEN int tsr_cuda_flash_attn (cudaStream_t s, struct tsr_cuda_tdesc d,
                             struct tsr_cuda_tdesc q, struct tsr_cuda_tdesc k, int ktype,
                             struct tsr_cuda_tdesc v, int vtype,
                             struct tsr_cuda_tdesc mask, int mtype, float scale,
                             float softcap, signed char *q8, void *ds8);

/* cuda-mul-mat-id.cu */
/* mul_mat_id (tessera/ops.h), weights AS of ATYPE (f32, f16, bf16; a
   block type with dense rows); a bad expert id goes to STATUS.  */
TSR_MODULE_HIDDEN int tsr_cuda_mul_mat_id (cudaStream_t s, struct tsr_cuda_tdesc d,
                             struct tsr_cuda_tdesc as, int atype,
                             struct tsr_cuda_tdesc b, struct tsr_cuda_tdesc ids,
                             struct tsr_cuda_status *status, int tag);

/* cuda-reduce.cu */
/* The sum of every element of a into d[0]; PARTIAL: scratch device
   memory of CU_SUM_BLOCKS doubles.  */
TSR_MODULE_HIDDEN int tsr_cuda_sum (cudaStream_t s, struct tsr_cuda_tdesc d, struct tsr_cuda_tdesc a,
                      double *partial);
TSR_MODULE_HIDDEN int tsr_cuda_mean (cudaStream_t s, struct tsr_cuda_tdesc d, struct tsr_cuda_tdesc a);
/* i32 d[i1, i2, i3, 0] = argmax of row (i1, i2, i3) of a.  */
TSR_MODULE_HIDDEN int tsr_cuda_argmax (cudaStream_t s, struct tsr_cuda_tdesc d,
                         struct tsr_cuda_tdesc a);

/* cuda-shape.cu (f32 to f32) */
TSR_MODULE_HIDDEN int tsr_cuda_diag_mask_inf (cudaStream_t s, struct tsr_cuda_tdesc d,
                                struct tsr_cuda_tdesc a, int n_past);
TSR_MODULE_HIDDEN int tsr_cuda_repeat (cudaStream_t s, struct tsr_cuda_tdesc d,
                         struct tsr_cuda_tdesc a);
TSR_MODULE_HIDDEN int tsr_cuda_concat (cudaStream_t s, struct tsr_cuda_tdesc d,
                         struct tsr_cuda_tdesc a, struct tsr_cuda_tdesc b, int dim);
TSR_MODULE_HIDDEN int tsr_cuda_pad (cudaStream_t s, struct tsr_cuda_tdesc d, struct tsr_cuda_tdesc a);
TSR_MODULE_HIDDEN int tsr_cuda_upscale (cudaStream_t s, struct tsr_cuda_tdesc d,
                          struct tsr_cuda_tdesc a, int factor);
/* d[i] = start + i * step for the ne[0] elements of d.  */
TSR_MODULE_HIDDEN int tsr_cuda_arange (cudaStream_t s, struct tsr_cuda_tdesc d, float start,
                         float step);

/* cuda-sort.cu */
/* Bytes of scratch tsr_cuda_argsort needs for NROWS rows of N elements.  */
TSR_MODULE_HIDDEN size_t tsr_cuda_argsort_scratch (int64_t n, int64_t nrows);
/* i32 d = the first d.ne[0] indices of each row of f32 a sorted
   stably, descending when DESC (NaNs last either way).  */
TSR_MODULE_HIDDEN int tsr_cuda_argsort (cudaStream_t s, struct tsr_cuda_tdesc d,
                          struct tsr_cuda_tdesc a, int desc, void *scratch);

/* cuda-conv.cu */
/* im2col (tessera/ops.h) into d of DTYPE (f32 or f16); KERNEL_NE the
   kernel's shape, PARAMS the op's seven parameters.  */
TSR_MODULE_HIDDEN int tsr_cuda_im2col (cudaStream_t s, struct tsr_cuda_tdesc d, int dtype,
                         struct tsr_cuda_tdesc in, const int64_t kernel_ne[4],
                         const int32_t params[7]);
/* pool_2d (tessera/ops.h), PARAMS the op's seven parameters.  */
TSR_MODULE_HIDDEN int tsr_cuda_pool_2d (cudaStream_t s, struct tsr_cuda_tdesc d,
                          struct tsr_cuda_tdesc a, const int32_t params[7]);

#ifdef __cplusplus
}
#endif
#endif /* TSR_CUDA_KERNELS_H */
