/* ops-nn.c - builders of the transformer and convolution ops: rope,
 * set_rows, flash_attn_ext, mul_mat_id, im2col, pool_2d.
 *
 * Like ops.c, each builder checks shapes, types and parameters at
 * graph-build time (a backend may trust a built node) and stores its
 * scalar parameters in op_params in the order ops.h documents.  What
 * only the data can tell (index ranges) is checked by the kernels.  */
#include <config.h>

#include <math.h>
#include <string.h>

#include "tessera-impl.h"

/* The first error naming OP for a source that is NULL while a required
   sibling is present.  */
static bool
present (tsr_op op, tsr_context *ctx, tsr_tensor *const *t, int n)
{
  for (int i = 0; i < n; i++)
    if (!tsri_operands_ok (op, ctx, t[i], NULL, false))
      return false;
  return true;
}

static bool
is_f32_or_f16 (const tsr_tensor *t)
{
  return t->type == TSR_TYPE_F32 || t->type == TSR_TYPE_F16;
}

/* False with a TSR_ERR_TYPE error unless T is f32 or f16.  */
static bool
require_f32_or_f16 (tsr_op op, const tsr_tensor *t, const char *which)
{
  if (is_f32_or_f16 (t))
    return true;
  tsr_set_error (TSR_ERR_TYPE, "%s: %s is %s, f32 or f16 required",
                 tsr_op_name (op), which, tsr_type_name (t->type));
  return false;
}

static tsr_tensor *
new_result (tsr_context *ctx, tsr_op op, tsr_type type,
            const int64_t ne[TSR_MAX_DIMS], tsr_tensor *const *src, int n)
{
  tsr_tensor *r = tsri_new_result (ctx, op, type, ne, src[0], NULL);
  if (r)
    for (int i = 1; i < n; i++)
      r->src[i] = src[i];
  return r;
}

/* rope */

tsr_tensor *
tsr_rope (tsr_context *ctx, tsr_tensor *a, tsr_tensor *pos, int n_dims,
          enum tsr_rope_mode mode, float freq_base, float freq_scale)
{
  return tsr_rope_ext (ctx, a, pos, NULL, n_dims, mode, freq_base,
                       freq_scale);
}

/* FF, when given, is f32 [n_dims / 2], contiguous.  */
static bool
rope_factors_ok (const tsr_tensor *ff, int n_dims)
{
  char sf[80];
  if (!ff)
    return true;
  if (!tsri_require_type (TSR_OP_ROPE, ff, "frequency factors",
                          TSR_TYPE_F32))
    return false;
  if (ff->ne[0] != n_dims / 2 || tsr_nelements (ff) != ff->ne[0]
      || !tsr_is_contiguous (ff))
    {
      tsr_set_error (TSR_ERR_SHAPE, "rope: frequency factors %s must be a "
                     "contiguous vector of n_dims / 2 = %d values",
                     tsri_shape_str (ff, sf, sizeof sf), n_dims / 2);
      return false;
    }
  return true;
}

tsr_tensor *
tsr_rope_ext (tsr_context *ctx, tsr_tensor *a, tsr_tensor *pos,
              tsr_tensor *freq_factors, int n_dims, enum tsr_rope_mode mode,
              float freq_base, float freq_scale)
{
  const tsr_op op = TSR_OP_ROPE;
  char sa[80], sp[80];
  if (!present (op, ctx, (tsr_tensor *[]) { a, pos }, 2)
      || !tsri_require_type (op, a, "operand", TSR_TYPE_F32)
      || !tsri_require_type (op, pos, "position tensor", TSR_TYPE_I32))
    return NULL;
  if (pos->ne[0] != a->ne[2] || pos->ne[1] != 1 || pos->ne[2] != 1
      || pos->ne[3] != 1)
    {
      tsr_set_error (TSR_ERR_SHAPE, "rope: positions %s do not give one "
                     "position per token of %s (dimension 2)",
                     tsri_shape_str (pos, sp, sizeof sp),
                     tsri_shape_str (a, sa, sizeof sa));
      return NULL;
    }
  if (n_dims < 2 || n_dims % 2 != 0 || n_dims > a->ne[0])
    {
      tsr_set_error (TSR_ERR_SHAPE, "rope: n_dims %d must be even and in "
                     "[2, %lld] (head size of %s)", n_dims,
                     (long long) a->ne[0], tsri_shape_str (a, sa, sizeof sa));
      return NULL;
    }
  if (mode != TSR_ROPE_NORMAL && mode != TSR_ROPE_NEOX)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "rope: unknown mode %d",
                     (int) mode);
      return NULL;
    }
  if (!(freq_base > 0) || !isfinite (freq_base) || !isfinite (freq_scale))
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "rope: freq_base %g must be a "
                     "positive number and freq_scale %g finite",
                     (double) freq_base, (double) freq_scale);
      return NULL;
    }
  if (!rope_factors_ok (freq_factors, n_dims))
    return NULL;
  tsr_tensor *r = new_result (ctx, op, TSR_TYPE_F32, a->ne,
                              (tsr_tensor *[]) { a, pos, freq_factors },
                              freq_factors ? 3 : 2);
  if (r)
    {
      r->op_params[0] = n_dims;
      r->op_params[1] = (int32_t) mode;
      tsri_set_param_f32 (r, 2, freq_base);
      tsri_set_param_f32 (r, 3, freq_scale);
    }
  return r;
}

/* set_rows */

/* Float types, and block types that have a quantizer (which backend
   computes it is supports_op's question).  */
static bool
set_rows_dst_type_ok (tsr_type type)
{
  const struct tsr_type_traits *tr = tsr_type_traits (type);
  return type == TSR_TYPE_F32 || type == TSR_TYPE_F16
         || type == TSR_TYPE_BF16
         || (tr && tr->is_quantized && tr->from_float);
}

tsr_tensor *
tsr_set_rows (tsr_context *ctx, tsr_tensor *dst, tsr_tensor *src,
              tsr_tensor *idx)
{
  const tsr_op op = TSR_OP_SET_ROWS;
  char sd[80], ss[80], si[80];
  if (!present (op, ctx, (tsr_tensor *[]) { dst, src, idx }, 3)
      || !tsri_require_type (op, src, "source", TSR_TYPE_F32)
      || !tsri_require_type (op, idx, "row index tensor", TSR_TYPE_I32))
    return NULL;
  if (!set_rows_dst_type_ok (dst->type))
    {
      tsr_set_error (TSR_ERR_TYPE, "set_rows: destination type %s not "
                     "supported (f32, f16, bf16 or a block type)",
                     tsr_type_name (dst->type));
      return NULL;
    }
  if (src->ne[0] != dst->ne[0] || idx->ne[0] != src->ne[1]
      || idx->ne[1] != src->ne[2] || idx->ne[2] != src->ne[3]
      || idx->ne[3] != 1 || src->ne[2] % dst->ne[2] != 0
      || src->ne[3] % dst->ne[3] != 0)
    {
      tsr_set_error (TSR_ERR_SHAPE, "set_rows: source %s and indices %s do "
                     "not fit destination %s (want source [k, n, b2, b3] "
                     "with b2, b3 multiples of the destination's, indices "
                     "[n, b2, b3])", tsri_shape_str (src, ss, sizeof ss),
                     tsri_shape_str (idx, si, sizeof si),
                     tsri_shape_str (dst, sd, sizeof sd));
      return NULL;
    }
  if (tsr_type_traits (dst->type)->is_quantized
      && !tsr_is_rows_contiguous (dst))
    {
      tsr_set_error (TSR_ERR_SHAPE, "set_rows: %s destination %s needs "
                     "dense rows", tsr_type_name (dst->type),
                     tsri_shape_str (dst, sd, sizeof sd));
      return NULL;
    }
  /* The result aliases DST, as tsr_cpy's does.  */
  tsr_tensor *r = tsri_new_tensor_impl (ctx, dst->type, dst->ne, dst, 0);
  if (!r)
    return NULL;
  memcpy (r->nb, dst->nb, sizeof r->nb);
  r->op = op;
  r->src[0] = dst;
  r->src[1] = src;
  r->src[2] = idx;
  return r;
}

/* flash_attn_ext */

static bool
attn_shapes_ok (const tsr_tensor *q, const tsr_tensor *k,
                const tsr_tensor *v, const tsr_tensor *mask)
{
  if (k->ne[0] != q->ne[0] || v->ne[1] != k->ne[1] || v->ne[2] != k->ne[2]
      || k->ne[3] != q->ne[3] || v->ne[3] != q->ne[3]
      || q->ne[2] % k->ne[2] != 0)
    {
      char sq[80], sk[80], sv[80];
      tsr_set_error (TSR_ERR_SHAPE, "flash_attn_ext: q %s, k %s, v %s do "
                     "not fit (want q [d, n_q, n_head, b], k [d, n_kv, "
                     "n_head_kv, b], v [d_v, n_kv, n_head_kv, b], n_head a "
                     "multiple of n_head_kv)", tsri_shape_str (q, sq, sizeof sq),
                     tsri_shape_str (k, sk, sizeof sk),
                     tsri_shape_str (v, sv, sizeof sv));
      return false;
    }
  if (mask
      && (mask->ne[0] != k->ne[1] || mask->ne[1] < q->ne[1]
          || q->ne[2] % mask->ne[2] != 0 || q->ne[3] % mask->ne[3] != 0))
    {
      char sq[80], sk[80], sm[80];
      tsr_set_error (TSR_ERR_SHAPE, "flash_attn_ext: mask %s does not fit "
                     "q %s and k %s (want [n_kv, >= n_q, m2, m3] with m2, m3 "
                     "dividing n_head, batch)",
                     tsri_shape_str (mask, sm, sizeof sm),
                     tsri_shape_str (q, sq, sizeof sq),
                     tsri_shape_str (k, sk, sizeof sk));
      return false;
    }
  return true;
}

tsr_tensor *
tsr_flash_attn_ext (tsr_context *ctx, tsr_tensor *q, tsr_tensor *k,
                    tsr_tensor *v, tsr_tensor *mask, float scale)
{
  const tsr_op op = TSR_OP_FLASH_ATTN_EXT;
  if (!present (op, ctx, (tsr_tensor *[]) { q, k, v }, 3)
      || !tsri_require_type (op, q, "q", TSR_TYPE_F32)
      || !require_f32_or_f16 (op, k, "k") || !require_f32_or_f16 (op, v, "v")
      || (mask && !require_f32_or_f16 (op, mask, "mask"))
      || !attn_shapes_ok (q, k, v, mask))
    return NULL;
  int64_t ne[TSR_MAX_DIMS] = { v->ne[0], q->ne[1], q->ne[2], q->ne[3] };
  tsr_tensor *r = new_result (ctx, op, TSR_TYPE_F32, ne,
                              (tsr_tensor *[]) { q, k, v, mask }, 4);
  if (r)
    tsri_set_param_f32 (r, 0, scale);
  return r;
}

/* mul_mat_id */

tsr_tensor *
tsr_mul_mat_id (tsr_context *ctx, tsr_tensor *as, tsr_tensor *b,
                tsr_tensor *ids)
{
  const tsr_op op = TSR_OP_MUL_MAT_ID;
  char sa[80], sb[80], si[80];
  if (!present (op, ctx, (tsr_tensor *[]) { as, b, ids }, 3)
      || !tsri_require_type (op, b, "second operand", TSR_TYPE_F32)
      || !tsri_require_type (op, ids, "expert id tensor", TSR_TYPE_I32))
    return NULL;
  if (!tsr_type_traits (as->type)->is_float)
    {
      tsr_set_error (TSR_ERR_TYPE, "mul_mat_id: weight type %s not "
                     "supported", tsr_type_name (as->type));
      return NULL;
    }
  if (as->ne[3] != 1 || b->ne[0] != as->ne[0] || b->ne[3] != 1
      || ids->ne[2] != 1 || ids->ne[3] != 1 || ids->ne[1] != b->ne[2]
      || (b->ne[1] != 1 && b->ne[1] != ids->ne[0]))
    {
      tsr_set_error (TSR_ERR_SHAPE, "mul_mat_id: weights %s, input %s and "
                     "ids %s do not fit (want [k, m, n_expert], [k, 1 or "
                     "n_used, n_tokens], [n_used, n_tokens])",
                     tsri_shape_str (as, sa, sizeof sa),
                     tsri_shape_str (b, sb, sizeof sb),
                     tsri_shape_str (ids, si, sizeof si));
      return NULL;
    }
  if (!tsr_is_rows_contiguous (as))
    {
      tsr_set_error (TSR_ERR_SHAPE, "mul_mat_id: weight rows must be "
                     "contiguous (use tsr_cont)");
      return NULL;
    }
  int64_t ne[TSR_MAX_DIMS] = { as->ne[1], ids->ne[0], ids->ne[1], 1 };
  return new_result (ctx, op, TSR_TYPE_F32, ne,
                     (tsr_tensor *[]) { as, b, ids }, 3);
}

/* im2col */

/* Output length of a convolution along one axis (< 1 when none).  */
static int64_t
conv_out (int64_t in, int64_t k, int s, int p, int d)
{
  int64_t span = in + 2 * (int64_t) p - (int64_t) d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

static bool
im2col_params_ok (int s0, int s1, int p0, int p1, int d0, int d1, bool is_2d)
{
  if (s0 >= 1 && d0 >= 1 && p0 >= 0
      && (!is_2d || (s1 >= 1 && d1 >= 1 && p1 >= 0)))
    return true;
  tsr_set_error (TSR_ERR_INVALID_ARG, "im2col: strides (%d, %d) and "
                 "dilations (%d, %d) must be >= 1, paddings (%d, %d) >= 0",
                 s0, s1, d0, d1, p0, p1);
  return false;
}

tsr_tensor *
tsr_im2col (tsr_context *ctx, tsr_tensor *kernel, tsr_tensor *input, int s0,
            int s1, int p0, int p1, int d0, int d1, bool is_2d,
            tsr_type dst_type)
{
  const tsr_op op = TSR_OP_IM2COL;
  char sk[80], si[80];
  if (!present (op, ctx, (tsr_tensor *[]) { kernel, input }, 2)
      || !tsri_require_type (op, input, "input", TSR_TYPE_F32))
    return NULL;
  if (dst_type != TSR_TYPE_F32 && dst_type != TSR_TYPE_F16)
    {
      tsr_set_error (TSR_ERR_TYPE, "im2col: result type %s not supported "
                     "(f32 or f16)", tsr_type_name (dst_type));
      return NULL;
    }
  if (!im2col_params_ok (s0, s1, p0, p1, d0, d1, is_2d))
    return NULL;
  int64_t ne[TSR_MAX_DIMS];
  bool fits;
  if (is_2d)
    {
      ne[0] = kernel->ne[0] * kernel->ne[1] * kernel->ne[2];
      ne[1] = conv_out (input->ne[0], kernel->ne[0], s0, p0, d0);
      ne[2] = conv_out (input->ne[1], kernel->ne[1], s1, p1, d1);
      ne[3] = input->ne[3];
      fits = kernel->ne[2] == input->ne[2];
    }
  else
    {
      ne[0] = kernel->ne[0] * kernel->ne[1];
      ne[1] = conv_out (input->ne[0], kernel->ne[0], s0, p0, d0);
      ne[2] = input->ne[2];
      ne[3] = 1;
      fits = kernel->ne[1] == input->ne[1] && kernel->ne[3] == 1
             && input->ne[3] == 1;
    }
  if (!fits || ne[1] < 1 || ne[2] < 1)
    {
      tsr_set_error (TSR_ERR_SHAPE, "im2col: %s kernel %s does not fit input "
                     "%s (channels differ, or no output position)",
                     is_2d ? "2-D" : "1-D",
                     tsri_shape_str (kernel, sk, sizeof sk),
                     tsri_shape_str (input, si, sizeof si));
      return NULL;
    }
  tsr_tensor *r = new_result (ctx, op, dst_type, ne,
                              (tsr_tensor *[]) { kernel, input }, 2);
  if (r)
    {
      const int32_t p[7] = { s0, s1, p0, p1, d0, d1, is_2d ? 1 : 0 };
      memcpy (r->op_params, p, sizeof p);
    }
  return r;
}

/* pool_2d */

tsr_tensor *
tsr_pool_2d (tsr_context *ctx, tsr_tensor *a, enum tsr_pool_op pool_op,
             int k0, int k1, int s0, int s1, int p0, int p1)
{
  const tsr_op op = TSR_OP_POOL_2D;
  char sa[80];
  if (!tsri_operands_ok (op, ctx, a, NULL, false)
      || !tsri_require_type (op, a, "operand", TSR_TYPE_F32))
    return NULL;
  if (pool_op != TSR_POOL_MAX && pool_op != TSR_POOL_AVG)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "pool_2d: unknown pooling %d",
                     (int) pool_op);
      return NULL;
    }
  if (k0 < 1 || k1 < 1 || s0 < 1 || s1 < 1 || p0 < 0 || p1 < 0 || p0 >= k0
      || p1 >= k1)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "pool_2d: kernel (%d, %d) and "
                     "strides (%d, %d) must be >= 1, paddings (%d, %d) in "
                     "[0, kernel size)", k0, k1, s0, s1, p0, p1);
      return NULL;
    }
  int64_t w = a->ne[0] + 2 * (int64_t) p0 - k0;
  int64_t h = a->ne[1] + 2 * (int64_t) p1 - k1;
  if (w < 0 || h < 0)
    {
      tsr_set_error (TSR_ERR_SHAPE, "pool_2d: a (%d, %d) window does not "
                     "fit operand %s padded by (%d, %d)", k0, k1,
                     tsri_shape_str (a, sa, sizeof sa), p0, p1);
      return NULL;
    }
  int64_t ne[TSR_MAX_DIMS] = { w / s0 + 1, h / s1 + 1, a->ne[2], a->ne[3] };
  tsr_tensor *r = tsri_new_result (ctx, op, TSR_TYPE_F32, ne, a, NULL);
  if (r)
    {
      const int32_t p[7] = { (int32_t) pool_op, k0, k1, s0, s1, p0, p1 };
      memcpy (r->op_params, p, sizeof p);
    }
  return r;
}
