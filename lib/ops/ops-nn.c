/* ops-nn.c - builders of the transformer and convolution ops: rope,
 * set_rows, flash_attn_ext, mul_mat_id, im2col, pool_2d.
 *
 * Like ops.c, each op has a rule that checks shapes, types and
 * parameters (for its builder and for tsr_node_validate) and each
 * builder stores its scalar parameters in op_params in the order ops.h
 * documents.  What only the data can tell (index ranges) is checked by
 * the kernels.  */
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

/* False with a TSR_ERR_TYPE verdict unless T is f32 or f16.  */
static bool
need_f32_or_f16 (const tsr_tensor *n, const tsr_tensor *t, const char *which,
                 struct tsri_verdict *v)
{
  if (t->type == TSR_TYPE_F32 || t->type == TSR_TYPE_F16)
    return true;
  tsri_reject (v, TSR_ERR_TYPE, "%s: %s is %s, f32 or f16 required",
               tsr_op_name (n->op), which, tsr_type_name (t->type));
  return false;
}

/* rope: op_params [0] n_dims, [1] mode, [2] freq_base, [3] freq_scale
   (f32); src[2], when given, the frequency factors.  */

int
tsri_rule_rope (const tsr_tensor *n, struct tsri_result *r,
                struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0], *pos = n->src[1], *ff = n->src[2];
  int32_t n_dims = n->op_params[0], mode = n->op_params[1];
  float freq_base = tsr_get_op_param_f32 (n, 2);
  float freq_scale = tsr_get_op_param_f32 (n, 3);
  char sa[80], sp[80];

  if (!tsri_need_srcs (n, 2, v)
      || !tsri_need_type (n, a, "operand", TSR_TYPE_F32, v)
      || !tsri_need_type (n, pos, "position tensor", TSR_TYPE_I32, v))
    return v->status;
  if (pos->ne[0] != a->ne[2] || pos->ne[1] != 1 || pos->ne[2] != 1
      || pos->ne[3] != 1)
    return tsri_reject (v, TSR_ERR_SHAPE, "rope: positions %s do not give "
                        "one position per token of %s (dimension 2)",
                        tsri_shape_str (pos, sp, sizeof sp),
                        tsri_shape_str (a, sa, sizeof sa));
  if (n_dims < 2 || n_dims % 2 != 0 || n_dims > a->ne[0])
    return tsri_reject (v, TSR_ERR_SHAPE, "rope: n_dims %d must be even and "
                        "in [2, %lld] (head size of %s)", (int) n_dims,
                        (long long) a->ne[0],
                        tsri_shape_str (a, sa, sizeof sa));
  if (mode != TSR_ROPE_NORMAL && mode != TSR_ROPE_NEOX)
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "rope: unknown mode %d",
                        (int) mode);
  if (!(freq_base > 0) || !isfinite (freq_base) || !isfinite (freq_scale))
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "rope: freq_base %g must be "
                        "a positive number and freq_scale %g finite",
                        (double) freq_base, (double) freq_scale);
  if (ff && !tsri_need_type (n, ff, "frequency factors", TSR_TYPE_F32, v))
    return v->status;
  if (ff && (ff->ne[0] != n_dims / 2 || tsr_nelements (ff) != ff->ne[0]
             || !tsr_is_contiguous (ff)))
    return tsri_reject (v, TSR_ERR_SHAPE, "rope: frequency factors %s must "
                        "be a contiguous vector of n_dims / 2 = %d values",
                        tsri_shape_str (ff, sp, sizeof sp), (int) n_dims / 2);
  r->type = TSR_TYPE_F32;
  memcpy (r->ne, a->ne, sizeof r->ne);
  return TSR_OK;
}

tsr_tensor *
tsr_rope (tsr_context *ctx, tsr_tensor *a, tsr_tensor *pos, int n_dims,
          enum tsr_rope_mode mode, float freq_base, float freq_scale)
{
  return tsr_rope_ext (ctx, a, pos, NULL, n_dims, mode, freq_base,
                       freq_scale);
}

tsr_tensor *
tsr_rope_ext (tsr_context *ctx, tsr_tensor *a, tsr_tensor *pos,
              tsr_tensor *freq_factors, int n_dims, enum tsr_rope_mode mode,
              float freq_base, float freq_scale)
{
  tsr_tensor proto = { .op = TSR_OP_ROPE, .src = { a, pos, freq_factors },
                       .op_params = { n_dims, (int32_t) mode } };

  if (!present (TSR_OP_ROPE, ctx, (tsr_tensor *[]) { a, pos }, 2))
    return NULL;
  tsri_set_param_f32 (&proto, 2, freq_base);
  tsri_set_param_f32 (&proto, 3, freq_scale);
  return tsri_build (ctx, &proto);
}

/* set_rows: src[0] the destination (the result aliases it), src[1]
   the rows, src[2] their indices.  */

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

int
tsri_rule_set_rows (const tsr_tensor *n, struct tsri_result *r,
                    struct tsri_verdict *v)
{
  const tsr_tensor *dst = n->src[0], *src = n->src[1], *idx = n->src[2];
  char sd[80], ss[80], si[80];

  if (!tsri_need_srcs (n, 3, v)
      || !tsri_need_type (n, src, "source", TSR_TYPE_F32, v)
      || !tsri_need_type (n, idx, "row index tensor", TSR_TYPE_I32, v))
    return v->status;
  if (!set_rows_dst_type_ok (dst->type))
    return tsri_reject (v, TSR_ERR_TYPE, "set_rows: destination type %s not "
                        "supported (f32, f16, bf16 or a block type)",
                        tsr_type_name (dst->type));
  if (src->ne[0] != dst->ne[0] || idx->ne[0] != src->ne[1]
      || idx->ne[1] != src->ne[2] || idx->ne[2] != src->ne[3]
      || idx->ne[3] != 1 || src->ne[2] % dst->ne[2] != 0
      || src->ne[3] % dst->ne[3] != 0)
    return tsri_reject (v, TSR_ERR_SHAPE, "set_rows: source %s and indices "
                        "%s do not fit destination %s (want source [k, n, "
                        "b2, b3] with b2, b3 multiples of the destination's, "
                        "indices [n, b2, b3])",
                        tsri_shape_str (src, ss, sizeof ss),
                        tsri_shape_str (idx, si, sizeof si),
                        tsri_shape_str (dst, sd, sizeof sd));
  if (tsr_type_traits (dst->type)->is_quantized
      && !tsr_is_rows_contiguous (dst))
    return tsri_reject (v, TSR_ERR_SHAPE, "set_rows: %s destination %s "
                        "needs dense rows", tsr_type_name (dst->type),
                        tsri_shape_str (dst, sd, sizeof sd));
  r->type = dst->type;
  memcpy (r->ne, dst->ne, sizeof r->ne);
  r->alias = 0;
  return TSR_OK;
}

tsr_tensor *
tsr_set_rows (tsr_context *ctx, tsr_tensor *dst, tsr_tensor *src,
              tsr_tensor *idx)
{
  if (!present (TSR_OP_SET_ROWS, ctx, (tsr_tensor *[]) { dst, src, idx }, 3))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) { .op = TSR_OP_SET_ROWS,
                                          .src = { dst, src, idx } });
}

/* flash_attn_ext: src q, k, v, mask (optional); op_params [0] scale,
   [1] softcap (0: none).  */

int
tsri_rule_flash_attn_ext (const tsr_tensor *n, struct tsri_result *r,
                          struct tsri_verdict *v)
{
  const tsr_tensor *q = n->src[0], *k = n->src[1], *val = n->src[2];
  const tsr_tensor *mask = n->src[3];
  char sq[80], sk[80], sv[80];

  if (!tsri_need_srcs (n, 3, v)
      || !tsri_need_type (n, q, "q", TSR_TYPE_F32, v)
      || !need_f32_or_f16 (n, k, "k", v) || !need_f32_or_f16 (n, val, "v", v)
      || (mask && !need_f32_or_f16 (n, mask, "mask", v)))
    return v->status;
  if (k->ne[0] != q->ne[0] || val->ne[1] != k->ne[1]
      || val->ne[2] != k->ne[2] || k->ne[3] != q->ne[3]
      || val->ne[3] != q->ne[3] || q->ne[2] % k->ne[2] != 0)
    return tsri_reject (v, TSR_ERR_SHAPE, "flash_attn_ext: q %s, k %s, v %s "
                        "do not fit (want q [d, n_q, n_head, b], k [d, n_kv, "
                        "n_head_kv, b], v [d_v, n_kv, n_head_kv, b], n_head "
                        "a multiple of n_head_kv)",
                        tsri_shape_str (q, sq, sizeof sq),
                        tsri_shape_str (k, sk, sizeof sk),
                        tsri_shape_str (val, sv, sizeof sv));
  if (mask
      && (mask->ne[0] != k->ne[1] || mask->ne[1] < q->ne[1]
          || q->ne[2] % mask->ne[2] != 0 || q->ne[3] % mask->ne[3] != 0))
    return tsri_reject (v, TSR_ERR_SHAPE, "flash_attn_ext: mask %s does not "
                        "fit q %s and k %s (want [n_kv, >= n_q, m2, m3] with "
                        "m2, m3 dividing n_head, batch)",
                        tsri_shape_str (mask, sv, sizeof sv),
                        tsri_shape_str (q, sq, sizeof sq),
                        tsri_shape_str (k, sk, sizeof sk));
  float cap = tsr_get_op_param_f32 (n, 1);
  if (!isfinite (cap) || cap < 0)
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "flash_attn_ext: soft-cap %g "
                        "must be finite and not negative", (double) cap);
  r->type = TSR_TYPE_F32;
  r->ne[0] = val->ne[0];
  r->ne[1] = q->ne[1];
  r->ne[2] = q->ne[2];
  r->ne[3] = q->ne[3];
  return TSR_OK;
}

tsr_tensor *
tsr_flash_attn_ext_softcap (tsr_context *ctx, tsr_tensor *q, tsr_tensor *k,
                            tsr_tensor *v, tsr_tensor *mask, float scale,
                            float softcap)
{
  tsr_tensor proto = { .op = TSR_OP_FLASH_ATTN_EXT,
                       .src = { q, k, v, mask } };

  if (!present (TSR_OP_FLASH_ATTN_EXT, ctx, (tsr_tensor *[]) { q, k, v }, 3))
    return NULL;
  tsri_set_param_f32 (&proto, 0, scale);
  tsri_set_param_f32 (&proto, 1, softcap);
  return tsri_build (ctx, &proto);
}

tsr_tensor *
tsr_flash_attn_ext (tsr_context *ctx, tsr_tensor *q, tsr_tensor *k,
                    tsr_tensor *v, tsr_tensor *mask, float scale)
{
  return tsr_flash_attn_ext_softcap (ctx, q, k, v, mask, scale, 0.0f);
}

/* mul_mat_id: src as [k, m, n_expert], b [k, 1 or n_used, n_tokens],
   ids [n_used, n_tokens].  */

int
tsri_rule_mul_mat_id (const tsr_tensor *n, struct tsri_result *r,
                      struct tsri_verdict *v)
{
  const tsr_tensor *as = n->src[0], *b = n->src[1], *ids = n->src[2];
  char sa[80], sb[80], si[80];

  if (!tsri_need_srcs (n, 3, v)
      || !tsri_need_type (n, b, "second operand", TSR_TYPE_F32, v)
      || !tsri_need_type (n, ids, "expert id tensor", TSR_TYPE_I32, v))
    return v->status;
  if (!tsr_type_traits (as->type)->is_float)
    return tsri_reject (v, TSR_ERR_TYPE, "mul_mat_id: weight type %s not "
                        "supported", tsr_type_name (as->type));
  if (as->ne[3] != 1 || b->ne[0] != as->ne[0] || b->ne[3] != 1
      || ids->ne[2] != 1 || ids->ne[3] != 1 || ids->ne[1] != b->ne[2]
      || (b->ne[1] != 1 && b->ne[1] != ids->ne[0]))
    return tsri_reject (v, TSR_ERR_SHAPE, "mul_mat_id: weights %s, input %s "
                        "and ids %s do not fit (want [k, m, n_expert], [k, 1 "
                        "or n_used, n_tokens], [n_used, n_tokens])",
                        tsri_shape_str (as, sa, sizeof sa),
                        tsri_shape_str (b, sb, sizeof sb),
                        tsri_shape_str (ids, si, sizeof si));
  if (!tsr_is_rows_contiguous (as))
    return tsri_reject (v, TSR_ERR_SHAPE, "mul_mat_id: weight rows must be "
                        "contiguous (use tsr_cont)");
  r->type = TSR_TYPE_F32;
  r->ne[0] = as->ne[1];
  r->ne[1] = ids->ne[0];
  r->ne[2] = ids->ne[1];
  r->ne[3] = 1;
  return TSR_OK;
}

tsr_tensor *
tsr_mul_mat_id (tsr_context *ctx, tsr_tensor *as, tsr_tensor *b,
                tsr_tensor *ids)
{
  if (!present (TSR_OP_MUL_MAT_ID, ctx, (tsr_tensor *[]) { as, b, ids }, 3))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) { .op = TSR_OP_MUL_MAT_ID,
                                          .src = { as, b, ids } });
}

/* im2col: src kernel, input; op_params s0, s1, p0, p1, d0, d1, is_2d;
   the result type (f32 or f16) is the builder's argument.  */

/* Output length of a convolution along one axis (< 1 when none;
   INT64_MAX when too long to exist), in overflow-free arithmetic:
   (in + 2 p - d (k - 1) - 1) / s + 1 with s, d >= 1, p >= 0.  */
static int64_t
conv_out (int64_t in, int64_t k, int s, int p, int d)
{
  if (k < 1 || s < 1 || d < 1 || p < 0)
    return 0;
  /* The window's reach, d (k - 1) + 1.  */
  int64_t reach = tsri_mul_sat (d, k - 1);
  if (reach == INT64_MAX)
    return 0;
  reach += 1;
  uint64_t pad2 = 2 * (uint64_t) p, span;
  if (in >= reach)
    span = (uint64_t) (in - reach) + pad2;
  else if ((uint64_t) (reach - in) <= pad2)
    span = pad2 - (uint64_t) (reach - in);
  else
    return 0;
  uint64_t out = span / (uint64_t) s + 1;
  return out > (uint64_t) INT64_MAX ? INT64_MAX : (int64_t) out;
}

int
tsri_rule_im2col (const tsr_tensor *n, struct tsri_result *r,
                  struct tsri_verdict *v)
{
  const tsr_tensor *kernel = n->src[0], *input = n->src[1];
  const int32_t *p = n->op_params;
  int s0 = p[0], s1 = p[1], p0 = p[2], p1 = p[3], d0 = p[4], d1 = p[5];
  bool is_2d = p[6] != 0, fits;
  char sk[80], si[80];

  if (!tsri_need_srcs (n, 2, v)
      || !tsri_need_type (n, input, "input", TSR_TYPE_F32, v))
    return v->status;
  if (n->type != TSR_TYPE_F32 && n->type != TSR_TYPE_F16)
    return tsri_reject (v, TSR_ERR_TYPE, "im2col: result type %s not "
                        "supported (f32 or f16)", tsr_type_name (n->type));
  if (s0 < 1 || d0 < 1 || p0 < 0 || (is_2d && (s1 < 1 || d1 < 1 || p1 < 0))
      || (p[6] != 0 && p[6] != 1))
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "im2col: strides (%d, %d) "
                        "and dilations (%d, %d) must be >= 1, paddings (%d, "
                        "%d) >= 0", s0, s1, d0, d1, p0, p1);
  if (is_2d)
    {
      r->ne[0] = tsri_mul_sat (tsri_mul_sat (kernel->ne[0], kernel->ne[1]),
                               kernel->ne[2]);
      r->ne[1] = conv_out (input->ne[0], kernel->ne[0], s0, p0, d0);
      r->ne[2] = conv_out (input->ne[1], kernel->ne[1], s1, p1, d1);
      r->ne[3] = input->ne[3];
      fits = kernel->ne[2] == input->ne[2];
    }
  else
    {
      r->ne[0] = tsri_mul_sat (kernel->ne[0], kernel->ne[1]);
      r->ne[1] = conv_out (input->ne[0], kernel->ne[0], s0, p0, d0);
      r->ne[2] = input->ne[2];
      r->ne[3] = 1;
      fits = kernel->ne[1] == input->ne[1] && kernel->ne[3] == 1
             && input->ne[3] == 1;
    }
  if (!fits || r->ne[1] < 1 || r->ne[2] < 1)
    return tsri_reject (v, TSR_ERR_SHAPE, "im2col: %s kernel %s does not fit "
                        "input %s (channels differ, or no output position)",
                        is_2d ? "2-D" : "1-D",
                        tsri_shape_str (kernel, sk, sizeof sk),
                        tsri_shape_str (input, si, sizeof si));
  r->type = n->type;
  return TSR_OK;
}

tsr_tensor *
tsr_im2col (tsr_context *ctx, tsr_tensor *kernel, tsr_tensor *input, int s0,
            int s1, int p0, int p1, int d0, int d1, bool is_2d,
            tsr_type dst_type)
{
  if (!present (TSR_OP_IM2COL, ctx, (tsr_tensor *[]) { kernel, input }, 2))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) {
                       .op = TSR_OP_IM2COL, .type = dst_type,
                       .src = { kernel, input },
                       .op_params = { s0, s1, p0, p1, d0, d1, is_2d } });
}

/* pool_2d: op_params pool op, k0, k1, s0, s1, p0, p1.  */

int
tsri_rule_pool_2d (const tsr_tensor *n, struct tsri_result *r,
                   struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0];
  const int32_t *p = n->op_params;
  int k0 = p[1], k1 = p[2], s0 = p[3], s1 = p[4], p0 = p[5], p1 = p[6];
  char sa[80];

  if (!tsri_need_srcs (n, 1, v)
      || !tsri_need_type (n, a, "operand", TSR_TYPE_F32, v))
    return v->status;
  if (p[0] != TSR_POOL_MAX && p[0] != TSR_POOL_AVG)
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "pool_2d: unknown pooling "
                        "%d", (int) p[0]);
  if (k0 < 1 || k1 < 1 || s0 < 1 || s1 < 1 || p0 < 0 || p1 < 0 || p0 >= k0
      || p1 >= k1)
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "pool_2d: kernel (%d, %d) "
                        "and strides (%d, %d) must be >= 1, paddings (%d, "
                        "%d) in [0, kernel size)", k0, k1, s0, s1, p0, p1);
  int64_t w = a->ne[0] + 2 * (int64_t) p0 - k0;
  int64_t h = a->ne[1] + 2 * (int64_t) p1 - k1;
  if (w < 0 || h < 0)
    return tsri_reject (v, TSR_ERR_SHAPE, "pool_2d: a (%d, %d) window does "
                        "not fit operand %s padded by (%d, %d)", k0, k1,
                        tsri_shape_str (a, sa, sizeof sa), p0, p1);
  r->type = TSR_TYPE_F32;
  r->ne[0] = w / s0 + 1;
  r->ne[1] = h / s1 + 1;
  r->ne[2] = a->ne[2];
  r->ne[3] = a->ne[3];
  return TSR_OK;
}

tsr_tensor *
tsr_pool_2d (tsr_context *ctx, tsr_tensor *a, enum tsr_pool_op pool_op,
             int k0, int k1, int s0, int s1, int p0, int p1)
{
  if (!tsri_operands_ok (TSR_OP_POOL_2D, ctx, a, NULL, false))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) {
                       .op = TSR_OP_POOL_2D, .src = { a },
                       .op_params = { (int32_t) pool_op, k0, k1, s0, s1, p0,
                                      p1 } });
}
