/* cuda-kernels.h - the CUDA kernels as the C side of the module sees
 * them.  Not installed.
 *
 * The kernels live in the .cu files (compiled by nvcc, see local.mk);
 * each has a C-callable launcher declared here that queues it on a
 * stream and returns the launch's cudaError_t as an int (0: queued).
 * A tensor reaches a kernel as a struct cu_tdesc: its device address,
 * shape and byte strides, so every kernel follows views and
 * permutations.  Launchers accept any size, including those above a
 * grid's limit: kernels walk their items in grid-stride loops.  */
#ifndef TSR_CUDA_KERNELS_H
#define TSR_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CU_HIDDEN __attribute__ ((visibility ("hidden")))
#else
#define CU_HIDDEN
#endif

struct cu_tdesc
{
  char *data;                   /* device address of element 0 */
  int64_t ne[4];
  int64_t nb[4];
};

/* What kernels report through the status word: status nonzero means
   an index was out of range, value is the first bad one.  Status is
   the tag the launcher was given: the failing node's position in the
   graph plus one.  */
struct cu_status
{
  int status;
  int value;
};

/* Partial sums of cu_sum at most (doubles of its scratch).  */
#define CU_SUM_BLOCKS 1024
/* Bytes of scratch cu_argsort uses at most, unless one row needs
   more.  */
#define CU_SORT_SCRATCH ((int64_t) 64 << 20)

/* cuda-elementwise.cu */
/* d = a OP b (add, sub, mul, div), b broadcast to a's shape.  */
CU_HIDDEN int cu_binary (cudaStream_t s, int op, struct cu_tdesc d,
                         struct cu_tdesc a, struct cu_tdesc b);
/* d = f (a): scale, silu, gelu and the unary math ops; P0, P1 the op's
   float parameters (scale: factor; clamp: min, max).  */
CU_HIDDEN int cu_unary (cudaStream_t s, int op, float p0, float p1,
                        struct cu_tdesc d, struct cu_tdesc a);
/* swiglu / geglu: d = act (a) * b, or with SPLIT the second half of
   each row of a as the gate.  */
CU_HIDDEN int cu_glu (cudaStream_t s, int op, struct cu_tdesc d,
                      struct cu_tdesc a, struct cu_tdesc b, int split);

/* cuda-copy.cu */
/* Element I (row-major) of s into element I of d, converted from
   STYPE to DTYPE (f32, f16, bf16, i32 destinations; any source, block
   sources having d's shape and dense rows).  */
CU_HIDDEN int cu_convert (cudaStream_t s, struct cu_tdesc d, int dtype,
                          struct cu_tdesc src, int stype);
/* Element I of s into element I of d unchanged, ESIZE bytes each (for
   block types the caller counts blocks as elements).  */
CU_HIDDEN int cu_copy_bytes (cudaStream_t s, struct cu_tdesc d,
                             struct cu_tdesc src, int esize);
/* d[:, i, j, l] = a[:, rows[i, j, l], j % a2, l % a3] as f32; a bad
   index is recorded in STATUS (device memory).  */
CU_HIDDEN int cu_get_rows (cudaStream_t s, struct cu_tdesc d,
                           struct cu_tdesc a, int atype,
                           struct cu_tdesc rows, struct cu_status *status,
                           int tag);

/* cuda-rows.cu */
CU_HIDDEN int cu_sum_rows (cudaStream_t s, struct cu_tdesc d,
                           struct cu_tdesc a);
/* norm (RMS false) or rms_norm (RMS true).  */
CU_HIDDEN int cu_norm (cudaStream_t s, int rms, float eps, struct cu_tdesc d,
                       struct cu_tdesc a);
/* softmax (a * scale + mask); MTYPE < 0: no mask.  */
CU_HIDDEN int cu_soft_max (cudaStream_t s, float scale, struct cu_tdesc d,
                           struct cu_tdesc a, struct cu_tdesc mask,
                           int mtype);
/* FF: the frequency factors (f32 [n_dims / 2]) when HAS_FF.  */
CU_HIDDEN int cu_rope (cudaStream_t s, struct cu_tdesc d, struct cu_tdesc a,
                       struct cu_tdesc pos, struct cu_tdesc ff, int has_ff,
                       int n_dims, int neox, float freq_base,
                       float freq_scale);

/* cuda-quant.cu */
/* N elements of the dense array S (STYPE: f32, f16, bf16, or a block
   type; 16-byte aligned) into the dense array D (DTYPE: f32, f16, or bf16
   from a float source; 16-byte aligned).  */
CU_HIDDEN int cu_convert_dense (cudaStream_t s, void *d, int dtype,
                                const void *src, int stype, int64_t n);
/* Columns at most in one cu_mul_mat_vec_q.  */
#define CU_MMV_MAX_COLS 8
/* d = a^T b for q8_0 / q4_0 weights a [k, m, a2, a3] (dense rows) and
   f32 b [k, n, b2, b3] with n <= CU_MMV_MAX_COLS, dense rows, row and
   batch strides and address multiples of 16 bytes; d f32 [m, n, b2,
   b3] with dense rows, b2 * b3 <= 65535.  */
CU_HIDDEN int cu_mul_mat_vec_q (cudaStream_t s, struct cu_tdesc d,
                                struct cu_tdesc a, int atype,
                                struct cu_tdesc b);
/* The same for the other block types (q4_1 .. mxfp4, not q8_K).  */
CU_HIDDEN int cu_mul_mat_vec_blocks (cudaStream_t s, struct cu_tdesc d,
                                     struct cu_tdesc a, int atype,
                                     struct cu_tdesc b);

/* cuda-set-rows.cu */
/* d[:, idx[i, j, l], j % d2, l % d3] = s[:, i, j, l] converted to
   DTYPE (f32, f16, bf16; q8_0 / q4_0 with dense rows), the last source
   row in row-major order winning where several name one row.  A bad
   index goes to STATUS, and then nothing is written.  CLAIM: scratch
   device memory of one int per row of d (d.ne[1] * d.ne[2] * d.ne[3]);
   the source has fewer than 2^31 rows.  */
CU_HIDDEN int cu_set_rows (cudaStream_t s, struct cu_tdesc d, int dtype,
                           struct cu_tdesc src, struct cu_tdesc idx,
                           int *claim, struct cu_status *status, int tag);
/* Element I (row-major) of s into element I of d, quantized: DTYPE
   q8_0 or q4_0 with dense rows, STYPE f32, f16 or bf16.  */
CU_HIDDEN int cu_quantize (cudaStream_t s, struct cu_tdesc d, int dtype,
                           struct cu_tdesc src, int stype);

/* cuda-attn.cu */
/* Bytes of shared memory cu_flash_attn needs for these head sizes (the
   caller keeps it within the 48 KiB a launch gets by default).  */
CU_HIDDEN size_t cu_flash_attn_shared (int64_t dk, int64_t dv);
/* flash_attn_ext (tessera/ops.h): K and V f32 or f16 (KTYPE, VTYPE);
   MTYPE f32, f16, or < 0 for no mask.  */
CU_HIDDEN int cu_flash_attn (cudaStream_t s, struct cu_tdesc d,
                             struct cu_tdesc q, struct cu_tdesc k, int ktype,
                             struct cu_tdesc v, int vtype,
                             struct cu_tdesc mask, int mtype, float scale);

/* cuda-mul-mat-id.cu */
/* mul_mat_id (tessera/ops.h), weights AS of ATYPE (f32, f16, bf16; a
   block type with dense rows); a bad expert id goes to STATUS.  */
CU_HIDDEN int cu_mul_mat_id (cudaStream_t s, struct cu_tdesc d,
                             struct cu_tdesc as, int atype,
                             struct cu_tdesc b, struct cu_tdesc ids,
                             struct cu_status *status, int tag);

/* cuda-reduce.cu */
/* The sum of every element of a into d[0]; PARTIAL: scratch device
   memory of CU_SUM_BLOCKS doubles.  */
CU_HIDDEN int cu_sum (cudaStream_t s, struct cu_tdesc d, struct cu_tdesc a,
                      double *partial);
CU_HIDDEN int cu_mean (cudaStream_t s, struct cu_tdesc d, struct cu_tdesc a);
/* i32 d[i1, i2, i3, 0] = argmax of row (i1, i2, i3) of a.  */
CU_HIDDEN int cu_argmax (cudaStream_t s, struct cu_tdesc d,
                         struct cu_tdesc a);

/* cuda-shape.cu (f32 to f32) */
CU_HIDDEN int cu_diag_mask_inf (cudaStream_t s, struct cu_tdesc d,
                                struct cu_tdesc a, int n_past);
CU_HIDDEN int cu_repeat (cudaStream_t s, struct cu_tdesc d,
                         struct cu_tdesc a);
CU_HIDDEN int cu_concat (cudaStream_t s, struct cu_tdesc d,
                         struct cu_tdesc a, struct cu_tdesc b, int dim);
CU_HIDDEN int cu_pad (cudaStream_t s, struct cu_tdesc d, struct cu_tdesc a);
CU_HIDDEN int cu_upscale (cudaStream_t s, struct cu_tdesc d,
                          struct cu_tdesc a, int factor);
/* d[i] = start + i * step for the ne[0] elements of d.  */
CU_HIDDEN int cu_arange (cudaStream_t s, struct cu_tdesc d, float start,
                         float step);

/* cuda-sort.cu */
/* Bytes of scratch cu_argsort needs for NROWS rows of N elements.  */
CU_HIDDEN size_t cu_argsort_scratch (int64_t n, int64_t nrows);
/* i32 d = the first d.ne[0] indices of each row of f32 a sorted
   stably, descending when DESC (NaNs last either way).  */
CU_HIDDEN int cu_argsort (cudaStream_t s, struct cu_tdesc d,
                          struct cu_tdesc a, int desc, void *scratch);

/* cuda-conv.cu */
/* im2col (tessera/ops.h) into d of DTYPE (f32 or f16); KERNEL_NE the
   kernel's shape, PARAMS the op's seven parameters.  */
CU_HIDDEN int cu_im2col (cudaStream_t s, struct cu_tdesc d, int dtype,
                         struct cu_tdesc in, const int64_t kernel_ne[4],
                         const int32_t params[7]);
/* pool_2d (tessera/ops.h), PARAMS the op's seven parameters.  */
CU_HIDDEN int cu_pool_2d (cudaStream_t s, struct cu_tdesc d,
                          struct cu_tdesc a, const int32_t params[7]);

#ifdef __cplusplus
}
#endif
#endif /* TSR_CUDA_KERNELS_H */
