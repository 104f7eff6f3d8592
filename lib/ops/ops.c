/* ops.c - operation builders: validate operands, shape the result.
 *
 * Each op has a rule (tsri_rule_*, see validate.c) that checks its
 * operands' types and shapes and its parameters and says what the
 * result is; the builder puts its arguments into a prototype node and
 * lets tsri_build run the rule, so a builder and tsr_node_validate
 * cannot disagree.  Errors are recorded (tsr_last_error) at graph-build
 * time.  Computation itself lives in the backends.  */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "tessera-impl.h"

static const struct
{
  const char *name;
  tsr_op_kind kind;
} op_table[TSR_OP_COUNT] = {
#define TSR_OP(id, name, kind) [TSR_OP_##id] = { name, TSR_OP_KIND_##kind },
#include <tessera/ops.def>
#undef TSR_OP
};

const char *
tsr_op_name (tsr_op op)
{
  return (unsigned) op < TSR_OP_COUNT ? op_table[op].name : "(invalid op)";
}

tsr_op_kind
tsr_op_get_kind (tsr_op op)
{
  return (unsigned) op < TSR_OP_COUNT ? op_table[op].kind : TSR_OP_KIND_OTHER;
}

/* "[4, 3, 1, 1]" for messages.  */
const char *
tsri_shape_str (const tsr_tensor *t, char *buf, size_t n)
{
  snprintf (buf, n, "[%lld, %lld, %lld, %lld]", (long long) t->ne[0],
            (long long) t->ne[1], (long long) t->ne[2], (long long) t->ne[3]);
  return buf;
}

/* NULL operands: keep the earlier error (or record one).  */
bool
tsri_operands_ok (tsr_op op, tsr_context *ctx, tsr_tensor *a, tsr_tensor *b,
             bool need_b)
{
  if (!ctx)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "%s: NULL context",
                     tsr_op_name (op));
      return false;
    }
  if (!a || (need_b && !b))
    {
      if (tsr_last_status () == TSR_OK)
        tsr_set_error (TSR_ERR_INVALID_ARG, "%s: NULL operand",
                       tsr_op_name (op));
      return false;
    }
  return true;
}

void
tsri_set_param_f32 (tsr_tensor *t, int i, float v)
{
  memcpy (&t->op_params[i], &v, sizeof v);
}

/* Element-wise binary ops.  */

int
tsri_rule_binary (const tsr_tensor *n, struct tsri_result *r,
                  struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0], *b = n->src[1];
  char sa[80], sb[80];

  if (!tsri_need_srcs (n, 2, v)
      || !tsri_need_type (n, a, "first operand", TSR_TYPE_F32, v)
      || !tsri_need_type (n, b, "second operand", TSR_TYPE_F32, v))
    return v->status;
  if (!tsr_can_repeat (b, a))
    return tsri_reject (v, TSR_ERR_SHAPE, "%s: second operand %s cannot be "
                        "broadcast to the first %s", tsr_op_name (n->op),
                        tsri_shape_str (b, sb, sizeof sb),
                        tsri_shape_str (a, sa, sizeof sa));
  r->type = TSR_TYPE_F32;
  memcpy (r->ne, a->ne, sizeof r->ne);
  return TSR_OK;
}

static tsr_tensor *
binary (tsr_op op, tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  if (!tsri_operands_ok (op, ctx, a, b, true))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) { .op = op, .src = { a, b } });
}

tsr_tensor *
tsr_add (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  return binary (TSR_OP_ADD, ctx, a, b);
}

tsr_tensor *
tsr_sub (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  return binary (TSR_OP_SUB, ctx, a, b);
}

tsr_tensor *
tsr_mul (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  return binary (TSR_OP_MUL, ctx, a, b);
}

tsr_tensor *
tsr_div (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  return binary (TSR_OP_DIV, ctx, a, b);
}

/* Ops of one f32 operand that keep its shape (any layout in, a
   contiguous result out); their parameters take any value.  */
int
tsri_rule_unary (const tsr_tensor *n, struct tsri_result *r,
                 struct tsri_verdict *v)
{
  if (!tsri_need_srcs (n, 1, v)
      || !tsri_need_type (n, n->src[0], "operand", TSR_TYPE_F32, v))
    return v->status;
  r->type = TSR_TYPE_F32;
  memcpy (r->ne, n->src[0]->ne, sizeof r->ne);
  return TSR_OK;
}

tsr_tensor *
tsri_build_unary (tsr_op op, tsr_context *ctx, tsr_tensor *a, int n_f32,
                  const float *f32)
{
  tsr_tensor proto = { .op = op, .src = { a } };

  if (!tsri_operands_ok (op, ctx, a, NULL, false))
    return NULL;
  for (int i = 0; i < n_f32; i++)
    tsri_set_param_f32 (&proto, i, f32[i]);
  return tsri_build (ctx, &proto);
}

tsr_tensor *
tsr_scale (tsr_context *ctx, tsr_tensor *a, float s)
{
  return tsri_build_unary (TSR_OP_SCALE, ctx, a, 1, &s);
}

tsr_tensor *
tsr_silu (tsr_context *ctx, tsr_tensor *a)
{
  return tsri_build_unary (TSR_OP_SILU, ctx, a, 0, NULL);
}

tsr_tensor *
tsr_gelu (tsr_context *ctx, tsr_tensor *a)
{
  return tsri_build_unary (TSR_OP_GELU, ctx, a, 0, NULL);
}

tsr_tensor *
tsr_norm (tsr_context *ctx, tsr_tensor *a, float eps)
{
  return tsri_build_unary (TSR_OP_NORM, ctx, a, 1, &eps);
}

tsr_tensor *
tsr_rms_norm (tsr_context *ctx, tsr_tensor *a, float eps)
{
  return tsri_build_unary (TSR_OP_RMS_NORM, ctx, a, 1, &eps);
}

int
tsri_rule_sum_rows (const tsr_tensor *n, struct tsri_result *r,
                    struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0];

  if (!tsri_need_srcs (n, 1, v)
      || !tsri_need_type (n, a, "operand", TSR_TYPE_F32, v))
    return v->status;
  r->type = TSR_TYPE_F32;
  memcpy (r->ne, a->ne, sizeof r->ne);
  r->ne[0] = 1;
  return TSR_OK;
}

tsr_tensor *
tsr_sum_rows (tsr_context *ctx, tsr_tensor *a)
{
  return tsri_build_unary (TSR_OP_SUM_ROWS, ctx, a, 0, NULL);
}

int
tsri_rule_soft_max (const tsr_tensor *n, struct tsri_result *r,
                    struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0], *mask = n->src[1];
  char sa[80], sm[80];

  if (!tsri_need_srcs (n, 1, v)
      || !tsri_need_type (n, a, "operand", TSR_TYPE_F32, v))
    return v->status;
  if (mask && mask->type != TSR_TYPE_F32 && mask->type != TSR_TYPE_F16)
    return tsri_reject (v, TSR_ERR_TYPE, "soft_max: mask is %s, f32 or f16 "
                        "required", tsr_type_name (mask->type));
  if (mask
      && (mask->ne[0] != a->ne[0] || mask->ne[1] < a->ne[1]
          || a->ne[2] % mask->ne[2] != 0 || a->ne[3] % mask->ne[3] != 0))
    return tsri_reject (v, TSR_ERR_SHAPE, "soft_max: mask %s does not fit "
                        "operand %s", tsri_shape_str (mask, sm, sizeof sm),
                        tsri_shape_str (a, sa, sizeof sa));
  r->type = TSR_TYPE_F32;
  memcpy (r->ne, a->ne, sizeof r->ne);
  return TSR_OK;
}

tsr_tensor *
tsr_soft_max (tsr_context *ctx, tsr_tensor *a, tsr_tensor *mask, float scale)
{
  tsr_tensor proto = { .op = TSR_OP_SOFT_MAX, .src = { a, mask } };

  if (!tsri_operands_ok (TSR_OP_SOFT_MAX, ctx, a, NULL, false))
    return NULL;
  tsri_set_param_f32 (&proto, 0, scale);
  return tsri_build (ctx, &proto);
}

/* Copies and conversions.  */

static bool
convertible (tsr_type from, tsr_type to)
{
  const struct tsr_type_traits *f = tsr_type_traits (from);
  const struct tsr_type_traits *t = tsr_type_traits (to);
  if (!f || !t)
    return false;
  if (from == to)
    return true;
  if (from == TSR_TYPE_I32 || to == TSR_TYPE_I32)
    return from == TSR_TYPE_F32 || to == TSR_TYPE_F32;
  /* quantized -> quantized needs two steps: not offered.  */
  return !(f->is_quantized && t->is_quantized);
}

/* cpy writes src[0] into src[1] (the result aliases it); without
   src[1] (tsr_cast, tsr_dup) into a fresh result of the node's type.  */
int
tsri_rule_cpy (const tsr_tensor *n, struct tsri_result *r,
               struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0], *b = n->src[1];
  const char *name = b ? "cpy" : "cpy (cast)";
  tsr_type to = b ? b->type : n->type;
  char sa[80], sb[80];

  if (!tsri_need_srcs (n, 1, v))
    return v->status;
  if (!tsr_type_valid (to))
    return tsri_reject (v, TSR_ERR_TYPE, "cpy (cast): invalid type %d",
                        (int) to);
  if (!convertible (a->type, to))
    return tsri_reject (v, TSR_ERR_TYPE, "%s: no conversion from %s to %s",
                        name, tsr_type_name (a->type), tsr_type_name (to));
  bool aq = tsr_type_traits (a->type)->is_quantized;
  bool bq = tsr_type_traits (to)->is_quantized;
  if (!b)
    {
      if (bq && !aq && a->ne[0] % tsr_type_traits (to)->block_size != 0)
        return tsri_reject (v, TSR_ERR_SHAPE, "cpy (cast): row length %lld "
                            "is not a multiple of the %s block size",
                            (long long) a->ne[0], tsr_type_name (to));
      r->type = to;
      memcpy (r->ne, a->ne, sizeof r->ne);
      return TSR_OK;
    }
  if (tsr_nelements (a) != tsr_nelements (b))
    return tsri_reject (v, TSR_ERR_SHAPE, "cpy: source %s and destination "
                        "%s differ in element count",
                        tsri_shape_str (a, sa, sizeof sa),
                        tsri_shape_str (b, sb, sizeof sb));
  /* Quantized data moves a block at a time: rows must line up.  */
  if ((aq && !tsr_same_shape (a, b)) || (bq && !tsr_is_rows_contiguous (b)))
    return tsri_reject (v, TSR_ERR_SHAPE, "cpy: quantized copies need the "
                        "same shape (source %s, destination %s) and "
                        "contiguous destination rows",
                        tsri_shape_str (a, sa, sizeof sa),
                        tsri_shape_str (b, sb, sizeof sb));
  r->type = b->type;
  memcpy (r->ne, b->ne, sizeof r->ne);
  r->alias = 1;
  return TSR_OK;
}

tsr_tensor *
tsr_cpy (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  if (!tsri_operands_ok (TSR_OP_CPY, ctx, a, b, true))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) { .op = TSR_OP_CPY, .src = { a, b } });
}

tsr_tensor *
tsr_cast (tsr_context *ctx, tsr_tensor *a, tsr_type type)
{
  if (!tsri_operands_ok (TSR_OP_CPY, ctx, a, NULL, false))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) { .op = TSR_OP_CPY, .type = type,
                                          .src = { a } });
}

tsr_tensor *
tsr_dup (tsr_context *ctx, tsr_tensor *a)
{
  if (!tsri_operands_ok (TSR_OP_CPY, ctx, a, NULL, false))
    return NULL;
  return tsr_cast (ctx, a, a->type);
}

int
tsri_rule_cont (const tsr_tensor *n, struct tsri_result *r,
                struct tsri_verdict *v)
{
  if (!tsri_need_srcs (n, 1, v))
    return v->status;
  r->type = n->src[0]->type;
  memcpy (r->ne, n->src[0]->ne, sizeof r->ne);
  return TSR_OK;
}

tsr_tensor *
tsr_cont (tsr_context *ctx, tsr_tensor *a)
{
  return tsri_build_unary (TSR_OP_CONT, ctx, a, 0, NULL);
}

/* Views.  */

/* A view of A shaped NE with strides NB (NULL: dense) at byte OFFSET,
   with PARAMS (NULL or TSR_MAX_OP_PARAMS words).  The node is judged by
   the same checks tsr_node_validate makes (positive sizes, inside the
   memory it views) before it is made, so that a builder never returns
   a node the validator refuses.  */
static tsr_tensor *
new_view (tsr_context *ctx, tsr_op op, tsr_tensor *a,
          const int64_t ne[TSR_MAX_DIMS], const size_t *nb, size_t offset,
          const int32_t *params)
{
  tsr_tensor proto = { .type = a->type, .op = op };
  memcpy (proto.ne, ne, sizeof proto.ne);
  if (nb)
    memcpy (proto.nb, nb, sizeof proto.nb);
  else
    tsri_set_strides (&proto);      /* as the view will have */
  proto.src[0] = a;
  proto.view_src = a->view_src ? a->view_src : a;
  proto.view_offs = offset + (a->view_src ? a->view_offs : 0);
  if (params)
    memcpy (proto.op_params, params, sizeof proto.op_params);
  struct tsri_verdict v;
  if (tsri_node_check (&proto, &v) != TSR_OK)
    {
      tsr_set_error (v.status, "%s", v.msg);
      return NULL;
    }
  tsr_tensor *r = tsri_new_tensor_impl (ctx, a->type, ne, a, offset);
  if (r)
    {
      r->op = op;
      r->src[0] = a;
      if (nb)
        memcpy (r->nb, nb, sizeof r->nb);
      if (params)
        memcpy (r->op_params, params, sizeof r->op_params);
    }
  return r;
}

static tsr_tensor *
reshape (tsr_context *ctx, tsr_tensor *a, int64_t ne0, int64_t ne1,
         int64_t ne2, int64_t ne3)
{
  char sa[80];
  if (!tsri_operands_ok (TSR_OP_RESHAPE, ctx, a, NULL, false))
    return NULL;
  if (!tsr_is_contiguous (a))
    {
      tsr_set_error (TSR_ERR_SHAPE, "reshape: operand %s is not contiguous "
                     "(use tsr_cont first)", tsri_shape_str (a, sa, sizeof sa));
      return NULL;
    }
  /* The product without overflow: a factor too large for it cannot
     match the operand's count anyway.  */
  const int64_t f[4] = { ne0, ne1, ne2, ne3 };
  int64_t prod = 1;
  bool fits = true;
  for (int i = 0; i < 4 && fits; i++)
    if (f[i] < 0 || (f[i] > 0 && prod > INT64_MAX / f[i]))
      fits = false;
    else
      prod *= f[i];
  if (!fits || prod != tsr_nelements (a))
    {
      tsr_set_error (TSR_ERR_SHAPE, "reshape: [%lld, %lld, %lld, %lld] does "
                     "not hold the %lld elements of %s", (long long) ne0,
                     (long long) ne1, (long long) ne2, (long long) ne3,
                     (long long) tsr_nelements (a),
                     tsri_shape_str (a, sa, sizeof sa));
      return NULL;
    }
  int64_t ne[TSR_MAX_DIMS] = { ne0, ne1, ne2, ne3 };
  return new_view (ctx, TSR_OP_RESHAPE, a, ne, NULL, 0, NULL);
}

tsr_tensor *
tsr_reshape_1d (tsr_context *ctx, tsr_tensor *a, int64_t ne0)
{
  return reshape (ctx, a, ne0, 1, 1, 1);
}

tsr_tensor *
tsr_reshape_2d (tsr_context *ctx, tsr_tensor *a, int64_t ne0, int64_t ne1)
{
  return reshape (ctx, a, ne0, ne1, 1, 1);
}

tsr_tensor *
tsr_reshape_3d (tsr_context *ctx, tsr_tensor *a, int64_t ne0, int64_t ne1,
                int64_t ne2)
{
  return reshape (ctx, a, ne0, ne1, ne2, 1);
}

tsr_tensor *
tsr_reshape_4d (tsr_context *ctx, tsr_tensor *a, int64_t ne0, int64_t ne1,
                int64_t ne2, int64_t ne3)
{
  return reshape (ctx, a, ne0, ne1, ne2, ne3);
}

/* The alignment in bytes the kernels read TYPE's elements (or blocks)
   with: that of its widest field.  */
static size_t
type_align (tsr_type type)
{
  switch (type)
    {
    case TSR_TYPE_F32: case TSR_TYPE_I32: case TSR_TYPE_Q8_K:
      return 4;                 /* Q8_K: a float scale */
    case TSR_TYPE_MXFP4:
      return 1;                 /* bytes only */
    default:
      return 2;                 /* f16, bf16; the other blocks: fp16 scales */
    }
}

tsr_tensor *
tsr_view_4d (tsr_context *ctx, tsr_tensor *a, int64_t ne0, int64_t ne1,
             int64_t ne2, int64_t ne3, size_t nb1, size_t nb2, size_t nb3,
             size_t offset)
{
  char sa[80];
  if (!tsri_operands_ok (TSR_OP_VIEW, ctx, a, NULL, false))
    return NULL;
  /* A view whose elements would start at a misaligned address is
     refused: every kernel loads elements as their type.  */
  size_t al = type_align (a->type);
  if (offset % al || nb1 % al || nb2 % al || nb3 % al)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "view: offset %zu and strides "
                     "%zu, %zu, %zu must be multiples of %zu, the alignment "
                     "of %s elements", offset, nb1, nb2, nb3, al,
                     tsr_type_name (a->type));
      return NULL;
    }
  int64_t ne[TSR_MAX_DIMS] = { ne0, ne1, ne2, ne3 };
  tsr_tensor probe = { .type = a->type };
  memcpy (probe.ne, ne, sizeof ne);
  probe.nb[0] = a->nb[0];
  probe.nb[1] = nb1;
  probe.nb[2] = nb2;
  probe.nb[3] = nb3;
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    if (ne[i] < 1)
      {
        tsr_set_error (TSR_ERR_SHAPE, "view: dimension %d is %lld", i,
                       (long long) ne[i]);
        return NULL;
      }
  size_t need = tsr_nbytes (&probe), have = tsr_nbytes (a);
  if (offset > have || need > have - offset)
    {
      tsr_set_error (TSR_ERR_SHAPE, "view: %zu bytes at offset %zu exceed "
                     "the %zu bytes of %s", need, offset, have,
                     tsri_shape_str (a, sa, sizeof sa));
      return NULL;
    }
  return new_view (ctx, TSR_OP_VIEW, a, ne, probe.nb, offset, NULL);
}

tsr_tensor *
tsr_view_1d (tsr_context *ctx, tsr_tensor *a, int64_t ne0, size_t offset)
{
  if (!tsri_operands_ok (TSR_OP_VIEW, ctx, a, NULL, false))
    return NULL;
  size_t row = tsr_row_size (a->type, ne0);
  return tsr_view_4d (ctx, a, ne0, 1, 1, 1, row, row, row, offset);
}

tsr_tensor *
tsr_view_2d (tsr_context *ctx, tsr_tensor *a, int64_t ne0, int64_t ne1,
             size_t nb1, size_t offset)
{
  return tsr_view_4d (ctx, a, ne0, ne1, 1, 1, nb1, nb1 * (size_t) ne1,
                      nb1 * (size_t) ne1, offset);
}

tsr_tensor *
tsr_view_3d (tsr_context *ctx, tsr_tensor *a, int64_t ne0, int64_t ne1,
             int64_t ne2, size_t nb1, size_t nb2, size_t offset)
{
  return tsr_view_4d (ctx, a, ne0, ne1, ne2, 1, nb1, nb2,
                      nb2 * (size_t) ne2, offset);
}

tsr_tensor *
tsr_permute (tsr_context *ctx, tsr_tensor *a, int axis0, int axis1,
             int axis2, int axis3)
{
  const int axes[TSR_MAX_DIMS] = { axis0, axis1, axis2, axis3 };
  int seen = 0;
  if (!tsri_operands_ok (TSR_OP_PERMUTE, ctx, a, NULL, false))
    return NULL;
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    {
      if (axes[i] < 0 || axes[i] >= TSR_MAX_DIMS || (seen & (1 << axes[i])))
        {
          tsr_set_error (TSR_ERR_INVALID_ARG, "permute: axes (%d, %d, %d, "
                         "%d) are not a permutation of 0..3", axis0, axis1,
                         axis2, axis3);
          return NULL;
        }
      seen |= 1 << axes[i];
    }
  if (tsr_type_traits (a->type)->is_quantized && axis0 != 0)
    {
      tsr_set_error (TSR_ERR_TYPE, "permute: rows of %s cannot be split",
                     tsr_type_name (a->type));
      return NULL;
    }
  int64_t ne[TSR_MAX_DIMS];
  size_t nb[TSR_MAX_DIMS];
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    {
      ne[axes[i]] = a->ne[i];
      nb[axes[i]] = a->nb[i];
    }
  int32_t params[TSR_MAX_OP_PARAMS] = { axes[0], axes[1], axes[2],
                                         axes[3] };
  return new_view (ctx, TSR_OP_PERMUTE, a, ne, nb, 0, params);
}

tsr_tensor *
tsr_transpose (tsr_context *ctx, tsr_tensor *a)
{
  tsr_tensor *r = tsr_permute (ctx, a, 1, 0, 2, 3);
  if (r)
    r->op = TSR_OP_TRANSPOSE;
  return r;
}

/* Indexing and products.  */

int
tsri_rule_get_rows (const tsr_tensor *n, struct tsri_result *r,
                    struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0], *rows = n->src[1];
  char sa[80], sr[80];

  if (!tsri_need_srcs (n, 2, v)
      || !tsri_need_type (n, rows, "row index tensor", TSR_TYPE_I32, v))
    return v->status;
  if (!tsr_type_traits (a->type)->is_float)
    return tsri_reject (v, TSR_ERR_TYPE, "get_rows: source type %s not "
                        "supported", tsr_type_name (a->type));
  if (rows->ne[3] != 1 || rows->ne[1] % a->ne[2] != 0
      || rows->ne[2] % a->ne[3] != 0)
    return tsri_reject (v, TSR_ERR_SHAPE, "get_rows: indices %s do not fit "
                        "source %s", tsri_shape_str (rows, sr, sizeof sr),
                        tsri_shape_str (a, sa, sizeof sa));
  r->type = TSR_TYPE_F32;
  r->ne[0] = a->ne[0];
  r->ne[1] = rows->ne[0];
  r->ne[2] = rows->ne[1];
  r->ne[3] = rows->ne[2];
  return TSR_OK;
}

tsr_tensor *
tsr_get_rows (tsr_context *ctx, tsr_tensor *a, tsr_tensor *rows)
{
  if (!tsri_operands_ok (TSR_OP_GET_ROWS, ctx, a, rows, true))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) { .op = TSR_OP_GET_ROWS,
                                          .src = { a, rows } });
}

int
tsri_rule_mul_mat (const tsr_tensor *n, struct tsri_result *r,
                   struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0], *b = n->src[1];
  char sa[80], sb[80];

  if (!tsri_need_srcs (n, 2, v)
      || !tsri_need_type (n, b, "second operand", TSR_TYPE_F32, v))
    return v->status;
  if (!tsr_type_traits (a->type)->is_float)
    return tsri_reject (v, TSR_ERR_TYPE, "mul_mat: weight type %s not "
                        "supported", tsr_type_name (a->type));
  if (a->ne[0] != b->ne[0] || b->ne[2] % a->ne[2] != 0
      || b->ne[3] % a->ne[3] != 0)
    return tsri_reject (v, TSR_ERR_SHAPE, "mul_mat: %s x %s: inner "
                        "dimensions differ or batches do not broadcast",
                        tsri_shape_str (a, sa, sizeof sa),
                        tsri_shape_str (b, sb, sizeof sb));
  if (!tsr_is_rows_contiguous (a))
    return tsri_reject (v, TSR_ERR_SHAPE, "mul_mat: weight rows must be "
                        "contiguous (use tsr_cont)");
  r->type = TSR_TYPE_F32;
  r->ne[0] = a->ne[1];
  r->ne[1] = b->ne[1];
  r->ne[2] = b->ne[2];
  r->ne[3] = b->ne[3];
  return TSR_OK;
}

tsr_tensor *
tsr_mul_mat (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  if (!tsri_operands_ok (TSR_OP_MUL_MAT, ctx, a, b, true))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) { .op = TSR_OP_MUL_MAT,
                                          .src = { a, b } });
}
