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

#include <tessera/status.h>
#include <tessera/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Check NODE as its builder would have: the types and shapes of its
   operands, its parameters, and its own type and shape (for views:
   its type and that it lies inside the memory it views).  TSR_OK, or
   the status the builder would have given (TSR_ERR_SHAPE,
   TSR_ERR_TYPE, TSR_ERR_INVALID_ARG) with a message naming the op and
   the node.  Builders' results always pass; this is for nodes made or
   changed by hand, and is what tsr_device_supports_op and graph
   computation run before a backend sees a node.  */
tsr_status tsr_node_validate (const tsr_tensor *node);

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
   must lie inside a's memory, and OFFSET and the strides be multiples
   of the alignment of a's elements (4 bytes for f32, i32 and q8_K, 1
   for mxfp4, 2 for the other types), else TSR_ERR_INVALID_ARG.  */
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
   batches share weights, as attention heads share a key head).  With
   q8_0 or q4_0 weights a backend may round b's rows to q8_0 first
   (tsr_quantize_row's values) and multiply those.  */
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

/* Element-wise functions of one f32 tensor of any layout (views and
   permutes included); the result is a contiguous f32 tensor of a's
   shape.  IEEE semantics: NaN in gives NaN out, sqrt and log of a
   negative number are NaN, log (0) is -inf.  */
/* x^2.  */
tsr_tensor *tsr_sqr (tsr_context *ctx, tsr_tensor *a);
/* sqrt (x).  */
tsr_tensor *tsr_sqrt (tsr_context *ctx, tsr_tensor *a);
/* e^x.  */
tsr_tensor *tsr_exp (tsr_context *ctx, tsr_tensor *a);
/* Natural logarithm (op "log"; tsr_log is the logging function of
   tessera/log.h, hence the name).  */
tsr_tensor *tsr_ln (tsr_context *ctx, tsr_tensor *a);
/* -x.  */
tsr_tensor *tsr_neg (tsr_context *ctx, tsr_tensor *a);
/* |x|.  */
tsr_tensor *tsr_abs (tsr_context *ctx, tsr_tensor *a);
/* 1 / (1 + e^-x).  */
tsr_tensor *tsr_sigmoid (tsr_context *ctx, tsr_tensor *a);
/* tanh (x).  */
tsr_tensor *tsr_tanh (tsr_context *ctx, tsr_tensor *a);
/* max (x, 0); NaN stays NaN.  */
tsr_tensor *tsr_relu (tsr_context *ctx, tsr_tensor *a);
/* x * sigmoid (1.702 x).  */
tsr_tensor *tsr_gelu_quick (tsr_context *ctx, tsr_tensor *a);
/* The exact GELU, x * (1 + erf (x / sqrt 2)) / 2.  */
tsr_tensor *tsr_gelu_erf (tsr_context *ctx, tsr_tensor *a);

/* Gated activations, f32 operands of any layout -> contiguous f32.
   With B: B has a's shape and the result, of that shape, is
   act (a) * b.  With B NULL: a->ne[0] must be even, and the result
   [a->ne[0] / 2, a->ne[1], a->ne[2], a->ne[3]] holds act (x) * y where
   x is the first half of each row of a and y the second half.
   Note: a NULL B means "split a", so a failed builder passed as B is
   not caught here (check its result first).
   swiglu: act = silu, x * sigmoid (x).
   geglu: act = gelu, tanh approximation (as tsr_gelu).  */
tsr_tensor *tsr_swiglu (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b);
tsr_tensor *tsr_geglu (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b);

/* Reductions of f32 tensors of any layout.  */
/* Sum of all elements (accumulated in double): f32 [1, 1, 1, 1].  */
tsr_tensor *tsr_sum (tsr_context *ctx, tsr_tensor *a);
/* Mean of each row: [n, r, s, t] -> f32 [1, r, s, t].  */
tsr_tensor *tsr_mean (tsr_context *ctx, tsr_tensor *a);
/* Index of the largest element of each row: [n, r, s, t] -> i32
   [r, s, t, 1].  Ties give the lowest index; NaNs are skipped, and a
   row of nothing but NaNs gives 0.  */
tsr_tensor *tsr_argmax (tsr_context *ctx, tsr_tensor *a);

/* f32 a tiled to B's shape: result[i] = a[i % a->ne] in every
   dimension; needs b->ne[i] % a->ne[i] == 0.  B only gives the shape
   (any type; its data is not read, but it is a source of the node).
   Result f32 of b's shape.  */
tsr_tensor *tsr_repeat (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b);

/* f32 a followed by f32 b along dimension DIM (0..3): the two are equal
   in every other dimension; the result (f32, contiguous) has
   a->ne[DIM] + b->ne[DIM] there.  A DIM out of range is
   TSR_ERR_INVALID_ARG.  */
tsr_tensor *tsr_concat (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b,
                        int dim);

/* min (max (x, MIN), MAX) of f32 a; needs MIN <= MAX (neither NaN),
   else TSR_ERR_INVALID_ARG.  NaN stays NaN.  */
tsr_tensor *tsr_clamp (tsr_context *ctx, tsr_tensor *a, float min,
                       float max);

/* Causal mask of f32 a: element (i0, i1, i2, i3) becomes -INFINITY
   where i0 > N_PAST + i1, the others are copied.  Any N_PAST (a
   negative one masks the diagonal and more).  */
tsr_tensor *tsr_diag_mask_inf (tsr_context *ctx, tsr_tensor *a, int n_past);

/* f32 a with P_i zeros appended at the end of dimension i (P_i >= 0,
   else TSR_ERR_INVALID_ARG): f32 [ne0 + p0, ne1 + p1, ne2 + p2,
   ne3 + p3].  */
tsr_tensor *tsr_pad (tsr_context *ctx, tsr_tensor *a, int p0, int p1,
                     int p2, int p3);

/* f32 [n] with n = ceil ((STOP - START) / STEP) elements
   START + i * STEP (computed in double, then rounded).  No operands.
   STEP == 0, a count below 1 (STOP not beyond START in STEP's
   direction), non-finite arguments or more than 2^31 - 1 elements are
   TSR_ERR_INVALID_ARG.  */
tsr_tensor *tsr_arange (tsr_context *ctx, float start, float stop,
                        float step);

/* Nearest-neighbour upscale of f32 a by integer FACTOR >= 1 (else
   TSR_ERR_INVALID_ARG) in dimensions 0 and 1: f32 [ne0 * FACTOR,
   ne1 * FACTOR, ne2, ne3], result (i0, i1, i2, i3) =
   a (i0 / FACTOR, i1 / FACTOR, i2, i3).  */
tsr_tensor *tsr_upscale (tsr_context *ctx, tsr_tensor *a, int factor);

enum tsr_sort_order
{
  TSR_SORT_ASC,                 /* smallest first */
  TSR_SORT_DESC                 /* largest first */
};

/* For each row of f32 a, the indices (i32, a's shape) that sort it in
   ORDER.  Stable: equal values keep their index order (in either
   order).  NaNs sort after every number in both orders.  An ORDER
   other than the two is TSR_ERR_INVALID_ARG.  */
tsr_tensor *tsr_argsort (tsr_context *ctx, tsr_tensor *a,
                         enum tsr_sort_order order);

/* The indices of the K largest elements of each row of f32 a, largest
   first, equal values by lower index first (the first K of a
   descending tsr_argsort): i32 [K, ne1, ne2, ne3].  Needs
   1 <= K <= a->ne[0] (else TSR_ERR_INVALID_ARG).  */
tsr_tensor *tsr_top_k (tsr_context *ctx, tsr_tensor *a, int k);

/* --- Transformer and convolution ops (ops-nn.c) --- */

/* Sources and parameters of these ops, for backends: each builder's
   comment lists src[] in order and the op_params words (i32 unless
   marked f32, read with tsr_get_op_param_i32 / _f32).  */

/* Rotary position embedding.  */
enum tsr_rope_mode {
  TSR_ROPE_NORMAL = 0,  /* rotate adjacent pairs (2i, 2i + 1) */
  TSR_ROPE_NEOX = 1     /* rotate pairs (i, i + n_dims / 2) */
};
/* A f32 [head_dim, n_head, n_tokens, batch], POS i32 [n_tokens] (one
   position per token, shared by every head and batch) -> f32, same
   shape, contiguous.  For pair index i in [0, n_dims / 2) of each
   vector, theta = pos[t] * freq_scale * freq_base^(-2i / n_dims) and
   (x0, x1) -> (x0 cos theta - x1 sin theta, x0 sin theta + x1 cos
   theta), the pair chosen by MODE; elements n_dims .. head_dim - 1
   pass through unchanged.  N_DIMS must be even, 2 <= n_dims <=
   head_dim; FREQ_BASE > 0; FREQ_SCALE finite.
   src: a, pos.  params: n_dims, mode, freq_base (f32), freq_scale
   (f32).  */
tsr_tensor *tsr_rope (tsr_context *ctx, tsr_tensor *a, tsr_tensor *pos,
                      int n_dims, enum tsr_rope_mode mode, float freq_base,
                      float freq_scale);
/* tsr_rope with per-pair frequency factors: FREQ_FACTORS (may be NULL)
   is a contiguous f32 [n_dims / 2] and pair i's angle is divided by
   its factor i, theta = pos[t] * freq_scale * freq_base^(-2i / n_dims)
   / freq_factors[i] (how model files of the Llama 3 family give their
   long-context scaling, as the tensor rope_freqs.weight).
   src: a, pos, freq_factors (absent when NULL).  params as tsr_rope.  */
tsr_tensor *tsr_rope_ext (tsr_context *ctx, tsr_tensor *a, tsr_tensor *pos,
                          tsr_tensor *freq_factors, int n_dims,
                          enum tsr_rope_mode mode, float freq_base,
                          float freq_scale);

/* Write rows of SRC into rows of DST picked by IDX (a KV cache
   update).  DST [k, r, d2, d3] is f32, f16, bf16, q8_0 or q4_0 (for
   the quantized types k is a multiple of 32 and dst rows are dense);
   SRC f32 [k, n, b2, b3] with b2 % d2 == 0 and b3 % d3 == 0; IDX i32
   [n, b2, b3].  Mirroring tsr_get_rows:
     dst[:, idx[i, j, l], j % d2, l % d3] = src[:, i, j, l]
   converted to dst's type (quantized rows through the reference row
   quantizer).  When several source rows name the same destination row
   the last in row-major source order (i fastest, then j, then l) wins.
   Returns a view of DST ordered after the write (like tsr_cpy): use it
   in place of DST to see the new rows.  An index outside [0, r) is a
   compute-time error, and then nothing is written.
   src: dst, src, idx.  */
tsr_tensor *tsr_set_rows (tsr_context *ctx, tsr_tensor *dst, tsr_tensor *src,
                          tsr_tensor *idx);

/* Fused attention.  Q f32 [d, n_q, n_head, batch]; K [d, n_kv,
   n_head_kv, batch] and V [d_v, n_kv, n_head_kv, batch], each f32 or
   f16, with n_head % n_head_kv == 0: query head h reads kv head
   h / (n_head / n_head_kv).  MASK (may be NULL) f32 or f16 [n_kv,
   >= n_q, m2, m3] with n_head % m2 == 0 and batch % m3 == 0; query
   (q, h, b) adds mask row (q, h % m2, b % m3).  Result f32 [d_v, n_q,
   n_head, batch]: for each query row,
     out = softmax (scale * (q . k_j) + mask[j]) over j, times V,
   i.e. out = sum_j p_j v_j.  A query whose mask is -inf at every key
   gets a row of zeros.
   src: q, k, v, mask.  params: scale (f32).  */
tsr_tensor *tsr_flash_attn_ext (tsr_context *ctx, tsr_tensor *q,
                                tsr_tensor *k, tsr_tensor *v,
                                tsr_tensor *mask, float scale);
/* tsr_flash_attn_ext with soft-capped scores (Gemma 2's attention):
   each score is SOFTCAP tanh (scale (q . k_j) / SOFTCAP) before the
   mask is added.  SOFTCAP 0 is tsr_flash_attn_ext; it must be finite
   and not negative (else TSR_ERR_INVALID_ARG).
   src: q, k, v, mask.  params: scale (f32), softcap (f32).  */
tsr_tensor *tsr_flash_attn_ext_softcap (tsr_context *ctx, tsr_tensor *q,
                                        tsr_tensor *k, tsr_tensor *v,
                                        tsr_tensor *mask, float scale,
                                        float softcap);

/* Mixture-of-experts product: one expert's weights per (slot, token).
   AS [k, m, n_expert] of any type tsr_mul_mat accepts for weights
   (dense rows); B f32 [k, n_b, n_tokens] with n_b == 1 or n_b ==
   n_used; IDS i32 [n_used, n_tokens].  Result f32 [m, n_used,
   n_tokens]:
     result[:, e, t] = as[:, :, ids[e, t]] . b[:, e % n_b, t]
   (each output element a dot of a weight row with the b row).  An id
   outside [0, n_expert) is a compute-time error.
   src: as, b, ids.  */
tsr_tensor *tsr_mul_mat_id (tsr_context *ctx, tsr_tensor *as, tsr_tensor *b,
                            tsr_tensor *ids);

/* Unfold convolution patches into rows.  Only KERNEL's shape is read:
   2-D (IS_2D true): KERNEL [KW, KH, C, OC], INPUT f32 [W, H, C, N] ->
   [KW * KH * C, OW, OH, N];  1-D: KERNEL [KW, C, OC], INPUT f32 [W, C,
   N] -> [KW * C, OW, N] (s1, p1, d1 ignored).  OW = (W + 2 p0 - d0 (KW
   - 1) - 1) / s0 + 1, OH likewise with (H, p1, d1, KH, s1); both must
   be >= 1.  Patch element (kw, kh, c) is at row position (c * KH + kh)
   * KW + kw (c slowest, kw fastest) and holds input[ow * s0 - p0 + kw
   * d0, oh * s1 - p1 + kh * d1, c, n], 0 outside the input (zero
   padding).  Strides and dilations >= 1, paddings >= 0.  DST_TYPE is
   f32 or f16.
   src: kernel, input.  params: s0, s1, p0, p1, d0, d1, is_2d.  */
tsr_tensor *tsr_im2col (tsr_context *ctx, tsr_tensor *kernel,
                        tsr_tensor *input, int s0, int s1, int p0, int p1,
                        int d0, int d1, bool is_2d, tsr_type dst_type);

/* 2-D pooling.  */
enum tsr_pool_op {
  TSR_POOL_MAX = 0,
  TSR_POOL_AVG = 1
};
/* A f32 [W, H, C, N] -> f32 [OW, OH, C, N] with OW = (W + 2 p0 - k0) /
   s0 + 1 and OH = (H + 2 p1 - k1) / s1 + 1 (both >= 1).  Window (ow,
   oh) covers x in [ow s0 - p0, ow s0 - p0 + k0), y likewise; padding
   cells are excluded from both the maximum and the average's count,
   so every window averages only real cells.  Kernel sizes and strides
   >= 1, 0 <= p0 < k0, 0 <= p1 < k1 (every window holds a real cell).
   src: a.  params: op, k0, k1, s0, s1, p0, p1.  */
tsr_tensor *tsr_pool_2d (tsr_context *ctx, tsr_tensor *a, enum tsr_pool_op op,
                         int k0, int k1, int s0, int s1, int p0, int p1);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_OPS_H */
