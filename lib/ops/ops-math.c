/* ops-math.c - builders of element-wise math, reductions and shape
 * ops (see the matching section of include/tessera/ops.h).
 *
 * Like ops.c, each op has a rule checking operand types and shapes and
 * the op's arguments (for its builder and for tsr_node_validate); a
 * builder records the rule's message naming the op and the shapes
 * involved and returns NULL; a NULL operand gives NULL with the first
 * error kept.  The arguments a kernel needs go into
 * op_params:
 *   clamp          f32 [0] min, [1] max
 *   diag_mask_inf  i32 [0] n_past
 *   pad            i32 [0..3] p0..p3
 *   arange         f32 [0] start, [1] stop, [2] step
 *   upscale        i32 [0] factor
 *   argsort        i32 [0] order (enum tsr_sort_order)
 *   top_k          i32 [0] k
 *   concat         i32 [0] dim
 * Computation lives in the backends.  */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tessera-impl.h"

/* One f32 operand (any layout): a result of TYPE shaped like it.  */
static int
one_f32 (const tsr_tensor *n, struct tsri_result *r, struct tsri_verdict *v,
         tsr_type type)
{
  if (!tsri_need_srcs (n, 1, v)
      || !tsri_need_type (n, n->src[0], "operand", TSR_TYPE_F32, v))
    return v->status;
  r->type = type;
  memcpy (r->ne, n->src[0]->ne, sizeof r->ne);
  return TSR_OK;
}

/* The result of one-operand op OP of A with the N I32 parameters P.  */
static tsr_tensor *
build_i32 (tsr_op op, tsr_context *ctx, tsr_tensor *a, int n, const int *p)
{
  tsr_tensor proto = { .op = op, .src = { a } };

  if (!tsri_operands_ok (op, ctx, a, NULL, false))
    return NULL;
  for (int i = 0; i < n; i++)
    proto.op_params[i] = p[i];
  return tsri_build (ctx, &proto);
}

/* Element-wise unary functions: f32 in, contiguous f32 of its shape
   out (tsri_rule_unary).  */
#define UNARY_BUILDER(fn, id)                                             \
  tsr_tensor *                                                            \
  fn (tsr_context *ctx, tsr_tensor *a)                                    \
  {                                                                       \
    return tsri_build_unary (TSR_OP_##id, ctx, a, 0, NULL);               \
  }

UNARY_BUILDER (tsr_sqr, SQR)
UNARY_BUILDER (tsr_sqrt, SQRT)
UNARY_BUILDER (tsr_exp, EXP)
UNARY_BUILDER (tsr_ln, LOG)
UNARY_BUILDER (tsr_neg, NEG)
UNARY_BUILDER (tsr_abs, ABS)
UNARY_BUILDER (tsr_sigmoid, SIGMOID)
UNARY_BUILDER (tsr_tanh, TANH)
UNARY_BUILDER (tsr_relu, RELU)
UNARY_BUILDER (tsr_gelu_quick, GELU_QUICK)
UNARY_BUILDER (tsr_gelu_erf, GELU_ERF)

/* Gated activations: act (a) * b, or act and gate as the two halves
   of each row of a when B is NULL.  */
int
tsri_rule_glu (const tsr_tensor *n, struct tsri_result *r,
               struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0], *b = n->src[1];
  char sa[80], sb[80];

  if (!tsri_need_srcs (n, 1, v)
      || !tsri_need_type (n, a, "first operand", TSR_TYPE_F32, v))
    return v->status;
  r->type = TSR_TYPE_F32;
  memcpy (r->ne, a->ne, sizeof r->ne);
  if (b)
    {
      if (!tsri_need_type (n, b, "gate operand", TSR_TYPE_F32, v))
        return v->status;
      if (!tsr_same_shape (a, b))
        return tsri_reject (v, TSR_ERR_SHAPE, "%s: gate %s differs in shape "
                            "from the operand %s", tsr_op_name (n->op),
                            tsri_shape_str (b, sb, sizeof sb),
                            tsri_shape_str (a, sa, sizeof sa));
      return TSR_OK;
    }
  if (a->ne[0] % 2 != 0)
    return tsri_reject (v, TSR_ERR_SHAPE, "%s: without a gate operand the "
                        "rows of %s must have an even length to split in "
                        "halves", tsr_op_name (n->op),
                        tsri_shape_str (a, sa, sizeof sa));
  r->ne[0] = a->ne[0] / 2;
  return TSR_OK;
}

static tsr_tensor *
glu (tsr_op op, tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  if (!tsri_operands_ok (op, ctx, a, NULL, false))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) { .op = op, .src = { a, b } });
}

tsr_tensor *
tsr_swiglu (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  return glu (TSR_OP_SWIGLU, ctx, a, b);
}

tsr_tensor *
tsr_geglu (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  return glu (TSR_OP_GEGLU, ctx, a, b);
}

/* Reductions.  */

/* Row lengths an i32 index can address.  */
static bool
indexable_rows (const tsr_tensor *n, struct tsri_verdict *v)
{
  char sa[80];
  if (n->src[0]->ne[0] <= INT32_MAX)
    return true;
  tsri_reject (v, TSR_ERR_SHAPE, "%s: rows of %s are too long for i32 "
               "indices", tsr_op_name (n->op),
               tsri_shape_str (n->src[0], sa, sizeof sa));
  return false;
}

int
tsri_rule_sum (const tsr_tensor *n, struct tsri_result *r,
               struct tsri_verdict *v)
{
  if (one_f32 (n, r, v, TSR_TYPE_F32) != TSR_OK)
    return v->status;
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    r->ne[i] = 1;
  return TSR_OK;
}

tsr_tensor *
tsr_sum (tsr_context *ctx, tsr_tensor *a)
{
  return tsri_build_unary (TSR_OP_SUM, ctx, a, 0, NULL);
}

int
tsri_rule_mean (const tsr_tensor *n, struct tsri_result *r,
                struct tsri_verdict *v)
{
  if (one_f32 (n, r, v, TSR_TYPE_F32) != TSR_OK)
    return v->status;
  r->ne[0] = 1;
  return TSR_OK;
}

tsr_tensor *
tsr_mean (tsr_context *ctx, tsr_tensor *a)
{
  return tsri_build_unary (TSR_OP_MEAN, ctx, a, 0, NULL);
}

int
tsri_rule_argmax (const tsr_tensor *n, struct tsri_result *r,
                  struct tsri_verdict *v)
{
  if (one_f32 (n, r, v, TSR_TYPE_I32) != TSR_OK || !indexable_rows (n, v))
    return v->status;
  r->ne[0] = n->src[0]->ne[1];
  r->ne[1] = n->src[0]->ne[2];
  r->ne[2] = n->src[0]->ne[3];
  r->ne[3] = 1;
  return TSR_OK;
}

tsr_tensor *
tsr_argmax (tsr_context *ctx, tsr_tensor *a)
{
  return tsri_build_unary (TSR_OP_ARGMAX, ctx, a, 0, NULL);
}

/* Shape ops.  */

int
tsri_rule_repeat (const tsr_tensor *n, struct tsri_result *r,
                  struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0], *b = n->src[1];
  char sa[80], sb[80];

  if (!tsri_need_srcs (n, 2, v)
      || !tsri_need_type (n, a, "operand", TSR_TYPE_F32, v))
    return v->status;
  if (!tsr_can_repeat (a, b))
    return tsri_reject (v, TSR_ERR_SHAPE, "repeat: operand %s does not tile "
                        "the shape %s (each dimension must divide it)",
                        tsri_shape_str (a, sa, sizeof sa),
                        tsri_shape_str (b, sb, sizeof sb));
  r->type = TSR_TYPE_F32;
  memcpy (r->ne, b->ne, sizeof r->ne);
  return TSR_OK;
}

tsr_tensor *
tsr_repeat (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  if (!tsri_operands_ok (TSR_OP_REPEAT, ctx, a, b, true))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) { .op = TSR_OP_REPEAT,
                                          .src = { a, b } });
}

int
tsri_rule_concat (const tsr_tensor *n, struct tsri_result *r,
                  struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0], *b = n->src[1];
  int32_t dim = n->op_params[0];
  char sa[80], sb[80];

  if (!tsri_need_srcs (n, 2, v)
      || !tsri_need_type (n, a, "first operand", TSR_TYPE_F32, v)
      || !tsri_need_type (n, b, "second operand", TSR_TYPE_F32, v))
    return v->status;
  if (dim < 0 || dim >= TSR_MAX_DIMS)
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "concat: dimension %d is "
                        "not in 0..3", (int) dim);
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    {
      if (i != dim && a->ne[i] != b->ne[i])
        return tsri_reject (v, TSR_ERR_SHAPE, "concat: %s and %s differ in "
                            "dimension %d (concatenating along %d)",
                            tsri_shape_str (a, sa, sizeof sa),
                            tsri_shape_str (b, sb, sizeof sb), i, (int) dim);
      r->ne[i] = i == dim ? a->ne[i] + b->ne[i] : a->ne[i];
    }
  r->type = TSR_TYPE_F32;
  return TSR_OK;
}

tsr_tensor *
tsr_concat (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b, int dim)
{
  if (!tsri_operands_ok (TSR_OP_CONCAT, ctx, a, b, true))
    return NULL;
  return tsri_build (ctx, &(tsr_tensor) { .op = TSR_OP_CONCAT,
                                          .src = { a, b },
                                          .op_params = { dim } });
}

int
tsri_rule_clamp (const tsr_tensor *n, struct tsri_result *r,
                 struct tsri_verdict *v)
{
  float min = tsr_get_op_param_f32 (n, 0), max = tsr_get_op_param_f32 (n, 1);

  if (!tsri_need_srcs (n, 1, v))
    return v->status;
  if (!(min <= max))
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "clamp: min %g is not <= "
                        "max %g", (double) min, (double) max);
  return one_f32 (n, r, v, TSR_TYPE_F32);
}

tsr_tensor *
tsr_clamp (tsr_context *ctx, tsr_tensor *a, float min, float max)
{
  return tsri_build_unary (TSR_OP_CLAMP, ctx, a, 2, (float[]) { min, max });
}

tsr_tensor *
tsr_diag_mask_inf (tsr_context *ctx, tsr_tensor *a, int n_past)
{
  return build_i32 (TSR_OP_DIAG_MASK_INF, ctx, a, 1, &n_past);
}

int
tsri_rule_pad (const tsr_tensor *n, struct tsri_result *r,
               struct tsri_verdict *v)
{
  const int32_t *p = n->op_params;

  if (one_f32 (n, r, v, TSR_TYPE_F32) != TSR_OK)
    return v->status;
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    {
      if (p[i] < 0)
        return tsri_reject (v, TSR_ERR_INVALID_ARG, "pad: padding (%d, %d, "
                            "%d, %d) has a negative amount", (int) p[0],
                            (int) p[1], (int) p[2], (int) p[3]);
      r->ne[i] += p[i];
    }
  return TSR_OK;
}

tsr_tensor *
tsr_pad (tsr_context *ctx, tsr_tensor *a, int p0, int p1, int p2, int p3)
{
  return build_i32 (TSR_OP_PAD, ctx, a, 4, (int[]) { p0, p1, p2, p3 });
}

int
tsri_rule_arange (const tsr_tensor *n, struct tsri_result *r,
                  struct tsri_verdict *v)
{
  float start = tsr_get_op_param_f32 (n, 0);
  float stop = tsr_get_op_param_f32 (n, 1);
  float step = tsr_get_op_param_f32 (n, 2);
  double count = ceil (((double) stop - start) / step);

  if (!isfinite (start) || !isfinite (stop) || !isfinite (step) || step == 0
      || !(count >= 1) || count > INT32_MAX)
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "arange: start %g, stop %g, "
                        "step %g give %g elements (need a finite, nonzero "
                        "step and 1 to 2^31 - 1 elements)", (double) start,
                        (double) stop, (double) step,
                        isfinite (count) ? count : 0.0);
  r->type = TSR_TYPE_F32;
  r->ne[0] = (int64_t) count;
  r->ne[1] = r->ne[2] = r->ne[3] = 1;
  return TSR_OK;
}

tsr_tensor *
tsr_arange (tsr_context *ctx, float start, float stop, float step)
{
  tsr_tensor proto = { .op = TSR_OP_ARANGE };

  if (!ctx)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "arange: NULL context");
      return NULL;
    }
  tsri_set_param_f32 (&proto, 0, start);
  tsri_set_param_f32 (&proto, 1, stop);
  tsri_set_param_f32 (&proto, 2, step);
  return tsri_build (ctx, &proto);
}

int
tsri_rule_upscale (const tsr_tensor *n, struct tsri_result *r,
                   struct tsri_verdict *v)
{
  int32_t factor = n->op_params[0];
  char sa[80];

  if (one_f32 (n, r, v, TSR_TYPE_F32) != TSR_OK)
    return v->status;
  if (factor < 1 || r->ne[0] > INT64_MAX / factor
      || r->ne[1] > INT64_MAX / factor)
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "upscale: factor %d is not "
                        "a positive integer that fits %s", (int) factor,
                        tsri_shape_str (n->src[0], sa, sizeof sa));
  r->ne[0] *= factor;
  r->ne[1] *= factor;
  return TSR_OK;
}

tsr_tensor *
tsr_upscale (tsr_context *ctx, tsr_tensor *a, int factor)
{
  return build_i32 (TSR_OP_UPSCALE, ctx, a, 1, &factor);
}

int
tsri_rule_argsort (const tsr_tensor *n, struct tsri_result *r,
                   struct tsri_verdict *v)
{
  int32_t order = n->op_params[0];

  if (!tsri_need_srcs (n, 1, v))
    return v->status;
  if (order != TSR_SORT_ASC && order != TSR_SORT_DESC)
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "argsort: order %d is "
                        "neither TSR_SORT_ASC nor TSR_SORT_DESC",
                        (int) order);
  if (one_f32 (n, r, v, TSR_TYPE_I32) != TSR_OK || !indexable_rows (n, v))
    return v->status;
  return TSR_OK;
}

tsr_tensor *
tsr_argsort (tsr_context *ctx, tsr_tensor *a, enum tsr_sort_order order)
{
  return build_i32 (TSR_OP_ARGSORT, ctx, a, 1, (int[]) { (int) order });
}

int
tsri_rule_top_k (const tsr_tensor *n, struct tsri_result *r,
                 struct tsri_verdict *v)
{
  int32_t k = n->op_params[0];
  char sa[80];

  if (one_f32 (n, r, v, TSR_TYPE_I32) != TSR_OK || !indexable_rows (n, v))
    return v->status;
  if (k < 1 || k > r->ne[0])
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "top_k: k %d is not in "
                        "1..%lld (the row length of %s)", (int) k,
                        (long long) r->ne[0],
                        tsri_shape_str (n->src[0], sa, sizeof sa));
  r->ne[0] = k;
  return TSR_OK;
}

tsr_tensor *
tsr_top_k (tsr_context *ctx, tsr_tensor *a, int k)
{
  return build_i32 (TSR_OP_TOP_K, ctx, a, 1, &k);
}
