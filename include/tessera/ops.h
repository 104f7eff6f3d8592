/* tessera/ops.h - building computations.
 *
 * Each builder validates its operands and returns a new tensor that
 * stands for the result; nothing is computed until a backend runs the
 * graph.  On bad operands a builder returns NULL and records the reason
 * (tsr_last_error).  A NULL operand makes the builder return NULL while
 * keeping the first error, so a chain of calls can be checked once at
 * the end.  */
#ifndef TESSERA_OPS_H
#define TESSERA_OPS_H

#include <tessera/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element-wise a OP b; b is broadcast (repeated) to a's shape, which
   needs a->ne[i] % b->ne[i] == 0 in every dimension.  f32 operands.  */
tsr_tensor *tsr_add (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b);
tsr_tensor *tsr_sub (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b);
tsr_tensor *tsr_mul (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b);
tsr_tensor *tsr_div (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b);

/* a * s.  */
tsr_tensor *tsr_scale (tsr_context *ctx, tsr_tensor *a, float s);

/* A new contiguous tensor of TYPE holding a's values converted.  */
tsr_tensor *tsr_cast (tsr_context *ctx, tsr_tensor *a, tsr_type type);
/* A contiguous copy of a in its own type.  */
tsr_tensor *tsr_dup (tsr_context *ctx, tsr_tensor *a);
/* Write a's values into b's memory (converting to b's type); same
   number of elements.  Returns a view of b ordered after the copy.  */
tsr_tensor *tsr_cpy (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b);
/* a made contiguous (a copy when a is not).  */
tsr_tensor *tsr_cont (tsr_context *ctx, tsr_tensor *a);

/* Views: share a's memory.  Reshape needs a contiguous a with the same
   number of elements.  */
tsr_tensor *tsr_reshape_1d (tsr_context *ctx, tsr_tensor *a, int64_t ne0);
tsr_tensor *tsr_reshape_2d (tsr_context *ctx, tsr_tensor *a, int64_t ne0,
                            int64_t ne1);
tsr_tensor *tsr_reshape_3d (tsr_context *ctx, tsr_tensor *a, int64_t ne0,
                            int64_t ne1, int64_t ne2);
tsr_tensor *tsr_reshape_4d (tsr_context *ctx, tsr_tensor *a, int64_t ne0,
                            int64_t ne1, int64_t ne2, int64_t ne3);
/* Views with explicit strides NB1..NB3 (bytes) at byte OFFSET; the view
   must lie inside a's memory.  */
tsr_tensor *tsr_view_1d (tsr_context *ctx, tsr_tensor *a, int64_t ne0,
                         size_t offset);
tsr_tensor *tsr_view_2d (tsr_context *ctx, tsr_tensor *a, int64_t ne0,
                         int64_t ne1, size_t nb1, size_t offset);
tsr_tensor *tsr_view_3d (tsr_context *ctx, tsr_tensor *a, int64_t ne0,
                         int64_t ne1, int64_t ne2, size_t nb1, size_t nb2,
                         size_t offset);
tsr_tensor *tsr_view_4d (tsr_context *ctx, tsr_tensor *a, int64_t ne0,
                         int64_t ne1, int64_t ne2, int64_t ne3, size_t nb1,
                         size_t nb2, size_t nb3, size_t offset);
/* Dimension i of a becomes dimension AXIS_i of the result.  */
tsr_tensor *tsr_permute (tsr_context *ctx, tsr_tensor *a, int axis0,
                         int axis1, int axis2, int axis3);
/* Swap dimensions 0 and 1.  */
tsr_tensor *tsr_transpose (tsr_context *ctx, tsr_tensor *a);

/* Rows of a selected by the i32 indices in ROWS: a [k, r, a2, a3],
   rows [n, b2, b3] with b2 % a2 == 0 and b3 % a3 == 0 -> f32
   [k, n, b2, b3]: result[:, i, j, l] = a[:, rows[i, j, l], j % a2,
   l % a3] (index batches repeat the source's batches cyclically).
   Out-of-range indices are a compute-time error.  */
tsr_tensor *tsr_get_rows (tsr_context *ctx, tsr_tensor *a, tsr_tensor *rows);

/* Matrix product with a as weights: a [k, m, a2, a3] of any float or
   quantized type, b f32 [k, n, b2, b3] with b2 % a2 == 0 and
   b3 % a3 == 0 -> f32 [m, n, b2, b3], result[i, j] = dot (a row i,
   b row j).  Batch i2 of b uses batch i2 / (b2 / a2) of a (consecutive
   batches share weights, as attention heads share a key head).  */
tsr_tensor *tsr_mul_mat (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b);

/* Sum of each row: [n, r, ...] -> [1, r, ...].  */
tsr_tensor *tsr_sum_rows (tsr_context *ctx, tsr_tensor *a);
/* (x - mean) / sqrt (var + eps) per row.  */
tsr_tensor *tsr_norm (tsr_context *ctx, tsr_tensor *a, float eps);
/* x / sqrt (mean (x^2) + eps) per row.  */
tsr_tensor *tsr_rms_norm (tsr_context *ctx, tsr_tensor *a, float eps);
/* softmax (a * scale + mask) per row.  MASK (f32 or f16, may be NULL)
   has a's row length and at least a's number of rows in dimension 1;
   its dimensions 2 and 3 are broadcast.  */
tsr_tensor *tsr_soft_max (tsr_context *ctx, tsr_tensor *a, tsr_tensor *mask,
                          float scale);
/* x * sigmoid (x).  */
tsr_tensor *tsr_silu (tsr_context *ctx, tsr_tensor *a);
/* GELU, tanh approximation:
   0.5 x (1 + tanh (sqrt (2 / pi) (x + 0.044715 x^3))).  */
tsr_tensor *tsr_gelu (tsr_context *ctx, tsr_tensor *a);

/* --- Element-wise math, reductions and shape ops (ops-math.c) --- */

/* --- Transformer and convolution ops (ops-nn.c) --- */

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_OPS_H */
