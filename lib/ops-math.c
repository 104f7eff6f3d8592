/* ops-math.c - builders of element-wise math, reductions and shape
 * ops (see the matching section of include/tessera/ops.h).
 *
 * Like ops.c, each builder checks operand types and shapes and the
 * op's arguments at graph-build time, records a message naming the op
 * and the shapes involved, and returns NULL; a NULL operand gives NULL
 * with the first error kept.  The arguments a kernel needs go into
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

#include "tessera-impl.h"

/* One f32 operand (any layout), result of TYPE shaped NE.  */
static tsr_tensor *
one_f32 (tsr_op op, tsr_context *ctx, tsr_tensor *a, tsr_type type,
         const int64_t *ne)
{
  if (!tsri_operands_ok (op, ctx, a, NULL, false)
      || !tsri_require_type (op, a, "operand", TSR_TYPE_F32))
    return NULL;
  return tsri_new_result (ctx, op, type, ne ? ne : a->ne, a, NULL);
}

/* Element-wise unary functions: f32 in, contiguous f32 of its shape
   out.  */
#define UNARY_BUILDER(fn, id)                                             \
  tsr_tensor *                                                            \
  fn (tsr_context *ctx, tsr_tensor *a)                                    \
  {                                                                       \
    return one_f32 (TSR_OP_##id, ctx, a, TSR_TYPE_F32, NULL);             \
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

/* Gated activations: act (a) * b, or act and gate as the two halves
   of each row of a when B is NULL.  */
static tsr_tensor *
glu (tsr_op op, tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  char sa[80], sb[80];
  if (!tsri_operands_ok (op, ctx, a, NULL, false)
      || !tsri_require_type (op, a, "first operand", TSR_TYPE_F32))
    return NULL;
  if (b)
    {
      if (!tsri_require_type (op, b, "gate operand", TSR_TYPE_F32))
        return NULL;
      if (!tsr_same_shape (a, b))
        {
          tsr_set_error (TSR_ERR_SHAPE, "%s: gate %s differs in shape from "
                         "the operand %s", tsr_op_name (op),
                         tsri_shape_str (b, sb, sizeof sb),
                         tsri_shape_str (a, sa, sizeof sa));
          return NULL;
        }
      return tsri_new_result (ctx, op, TSR_TYPE_F32, a->ne, a, b);
    }
  if (a->ne[0] % 2 != 0)
    {
      tsr_set_error (TSR_ERR_SHAPE, "%s: without a gate operand the rows of "
                     "%s must have an even length to split in halves",
                     tsr_op_name (op), tsri_shape_str (a, sa, sizeof sa));
      return NULL;
    }
  int64_t ne[TSR_MAX_DIMS] = { a->ne[0] / 2, a->ne[1], a->ne[2], a->ne[3] };
  return tsri_new_result (ctx, op, TSR_TYPE_F32, ne, a, NULL);
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
indexable_rows (tsr_op op, const tsr_tensor *a)
{
  char sa[80];
  if (a->ne[0] <= INT32_MAX)
    return true;
  tsr_set_error (TSR_ERR_SHAPE, "%s: rows of %s are too long for i32 "
                 "indices", tsr_op_name (op), tsri_shape_str (a, sa, sizeof sa));
  return false;
}


tsr_tensor *
tsr_sum (tsr_context *ctx, tsr_tensor *a)
{
  static const int64_t one[TSR_MAX_DIMS] = { 1, 1, 1, 1 };
  return one_f32 (TSR_OP_SUM, ctx, a, TSR_TYPE_F32, one);
}

tsr_tensor *
tsr_mean (tsr_context *ctx, tsr_tensor *a)
{
  if (!tsri_operands_ok (TSR_OP_MEAN, ctx, a, NULL, false))
    return NULL;
  int64_t ne[TSR_MAX_DIMS] = { 1, a->ne[1], a->ne[2], a->ne[3] };
  return one_f32 (TSR_OP_MEAN, ctx, a, TSR_TYPE_F32, ne);
}

tsr_tensor *
tsr_argmax (tsr_context *ctx, tsr_tensor *a)
{
  if (!tsri_operands_ok (TSR_OP_ARGMAX, ctx, a, NULL, false))
    return NULL;
  int64_t ne[TSR_MAX_DIMS] = { a->ne[1], a->ne[2], a->ne[3], 1 };
  if (!tsri_require_type (TSR_OP_ARGMAX, a, "operand", TSR_TYPE_F32)
      || !indexable_rows (TSR_OP_ARGMAX, a))
    return NULL;
  return one_f32 (TSR_OP_ARGMAX, ctx, a, TSR_TYPE_I32, ne);
}

/* Shape ops.  */

tsr_tensor *
tsr_repeat (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b)
{
  const tsr_op op = TSR_OP_REPEAT;
  char sa[80], sb[80];
  if (!tsri_operands_ok (op, ctx, a, b, true)
      || !tsri_require_type (op, a, "operand", TSR_TYPE_F32))
    return NULL;
  if (!tsr_can_repeat (a, b))
    {
      tsr_set_error (TSR_ERR_SHAPE, "repeat: operand %s does not tile the "
                     "shape %s (each dimension must divide it)",
                     tsri_shape_str (a, sa, sizeof sa),
                     tsri_shape_str (b, sb, sizeof sb));
      return NULL;
    }
  return tsri_new_result (ctx, op, TSR_TYPE_F32, b->ne, a, b);
}

tsr_tensor *
tsr_concat (tsr_context *ctx, tsr_tensor *a, tsr_tensor *b, int dim)
{
  const tsr_op op = TSR_OP_CONCAT;
  char sa[80], sb[80];
  if (!tsri_operands_ok (op, ctx, a, b, true)
      || !tsri_require_type (op, a, "first operand", TSR_TYPE_F32)
      || !tsri_require_type (op, b, "second operand", TSR_TYPE_F32))
    return NULL;
  if (dim < 0 || dim >= TSR_MAX_DIMS)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "concat: dimension %d is not in "
                     "0..3", dim);
      return NULL;
    }
  int64_t ne[TSR_MAX_DIMS];
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    {
      if (i != dim && a->ne[i] != b->ne[i])
        {
          tsr_set_error (TSR_ERR_SHAPE, "concat: %s and %s differ in "
                         "dimension %d (concatenating along %d)",
                         tsri_shape_str (a, sa, sizeof sa),
                         tsri_shape_str (b, sb, sizeof sb), i, dim);
          return NULL;
        }
      ne[i] = i == dim ? a->ne[i] + b->ne[i] : a->ne[i];
    }
  tsr_tensor *r = tsri_new_result (ctx, op, TSR_TYPE_F32, ne, a, b);
  if (r)
    r->op_params[0] = dim;
  return r;
}

tsr_tensor *
tsr_clamp (tsr_context *ctx, tsr_tensor *a, float min, float max)
{
  if (!tsri_operands_ok (TSR_OP_CLAMP, ctx, a, NULL, false))
    return NULL;
  if (!(min <= max))
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "clamp: min %g is not <= max %g",
                     (double) min, (double) max);
      return NULL;
    }
  tsr_tensor *r = one_f32 (TSR_OP_CLAMP, ctx, a, TSR_TYPE_F32, NULL);
  if (r)
    {
      tsri_set_param_f32 (r, 0, min);
      tsri_set_param_f32 (r, 1, max);
    }
  return r;
}

tsr_tensor *
tsr_diag_mask_inf (tsr_context *ctx, tsr_tensor *a, int n_past)
{
  tsr_tensor *r = one_f32 (TSR_OP_DIAG_MASK_INF, ctx, a, TSR_TYPE_F32, NULL);
  if (r)
    r->op_params[0] = n_past;
  return r;
}

tsr_tensor *
tsr_pad (tsr_context *ctx, tsr_tensor *a, int p0, int p1, int p2, int p3)
{
  const int p[TSR_MAX_DIMS] = { p0, p1, p2, p3 };
  if (!tsri_operands_ok (TSR_OP_PAD, ctx, a, NULL, false))
    return NULL;
  int64_t ne[TSR_MAX_DIMS];
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    {
      if (p[i] < 0)
        {
          tsr_set_error (TSR_ERR_INVALID_ARG, "pad: padding (%d, %d, %d, %d) "
                         "has a negative amount", p0, p1, p2, p3);
          return NULL;
        }
      ne[i] = a->ne[i] + p[i];
    }
  tsr_tensor *r = one_f32 (TSR_OP_PAD, ctx, a, TSR_TYPE_F32, ne);
  if (r)
    for (int i = 0; i < TSR_MAX_DIMS; i++)
      r->op_params[i] = p[i];
  return r;
}

tsr_tensor *
tsr_arange (tsr_context *ctx, float start, float stop, float step)
{
  const tsr_op op = TSR_OP_ARANGE;
  if (!ctx)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "arange: NULL context");
      return NULL;
    }
  double n = ceil (((double) stop - start) / step);
  if (!isfinite (start) || !isfinite (stop) || !isfinite (step) || step == 0
      || !(n >= 1) || n > INT32_MAX)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "arange: start %g, stop %g, step %g"
                     " give %g elements (need a finite, nonzero step and 1 to"
                     " 2^31 - 1 elements)", (double) start, (double) stop,
                     (double) step, isfinite (n) ? n : 0.0);
      return NULL;
    }
  int64_t ne[TSR_MAX_DIMS] = { (int64_t) n, 1, 1, 1 };
  tsr_tensor *r = tsri_new_result (ctx, op, TSR_TYPE_F32, ne, NULL, NULL);
  if (r)
    {
      tsri_set_param_f32 (r, 0, start);
      tsri_set_param_f32 (r, 1, stop);
      tsri_set_param_f32 (r, 2, step);
    }
  return r;
}

tsr_tensor *
tsr_upscale (tsr_context *ctx, tsr_tensor *a, int factor)
{
  char sa[80];
  if (!tsri_operands_ok (TSR_OP_UPSCALE, ctx, a, NULL, false))
    return NULL;
  if (factor < 1 || a->ne[0] > INT64_MAX / factor
      || a->ne[1] > INT64_MAX / factor)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "upscale: factor %d is not a "
                     "positive integer that fits %s", factor,
                     tsri_shape_str (a, sa, sizeof sa));
      return NULL;
    }
  int64_t ne[TSR_MAX_DIMS] = { a->ne[0] * factor, a->ne[1] * factor,
                               a->ne[2], a->ne[3] };
  tsr_tensor *r = one_f32 (TSR_OP_UPSCALE, ctx, a, TSR_TYPE_F32, ne);
  if (r)
    r->op_params[0] = factor;
  return r;
}

tsr_tensor *
tsr_argsort (tsr_context *ctx, tsr_tensor *a, enum tsr_sort_order order)
{
  const tsr_op op = TSR_OP_ARGSORT;
  if (!tsri_operands_ok (op, ctx, a, NULL, false))
    return NULL;
  if (order != TSR_SORT_ASC && order != TSR_SORT_DESC)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "argsort: order %d is neither "
                     "TSR_SORT_ASC nor TSR_SORT_DESC", (int) order);
      return NULL;
    }
  if (!tsri_require_type (op, a, "operand", TSR_TYPE_F32)
      || !indexable_rows (op, a))
    return NULL;
  tsr_tensor *r = one_f32 (op, ctx, a, TSR_TYPE_I32, NULL);
  if (r)
    r->op_params[0] = (int32_t) order;
  return r;
}

tsr_tensor *
tsr_top_k (tsr_context *ctx, tsr_tensor *a, int k)
{
  const tsr_op op = TSR_OP_TOP_K;
  char sa[80];
  if (!tsri_operands_ok (op, ctx, a, NULL, false)
      || !tsri_require_type (op, a, "operand", TSR_TYPE_F32)
      || !indexable_rows (op, a))
    return NULL;
  if (k < 1 || k > a->ne[0])
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "top_k: k %d is not in 1..%lld "
                     "(the row length of %s)", k, (long long) a->ne[0],
                     tsri_shape_str (a, sa, sizeof sa));
      return NULL;
    }
  int64_t ne[TSR_MAX_DIMS] = { k, a->ne[1], a->ne[2], a->ne[3] };
  tsr_tensor *r = one_f32 (op, ctx, a, TSR_TYPE_I32, ne);
  if (r)
    r->op_params[0] = k;
  return r;
}
