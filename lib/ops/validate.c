/* validate.c - the one check of a node: its operands, parameters,
 * type and shape, as its builder would have made them.
 *
 * Every op has one rule (tsri_rule_*, next to its builder in ops*.c).
 * A builder fills a prototype node with its operands and parameters
 * and calls tsri_build, which runs the rule and makes the result; the
 * same rule answers tsr_node_validate for a node built by hand, which
 * tsr_device_supports_op, tsr_backend_graph_compute and the scheduler
 * call before a backend sees the node.  Backends therefore check only
 * what is theirs: which types and layouts their kernels take.  */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tessera-impl.h"

static tsri_rule_fn *const rules[TSR_OP_COUNT] = {
  [TSR_OP_ADD] = tsri_rule_binary,
  [TSR_OP_SUB] = tsri_rule_binary,
  [TSR_OP_MUL] = tsri_rule_binary,
  [TSR_OP_DIV] = tsri_rule_binary,
  [TSR_OP_SCALE] = tsri_rule_unary,
  [TSR_OP_CPY] = tsri_rule_cpy,
  [TSR_OP_CONT] = tsri_rule_cont,
  [TSR_OP_GET_ROWS] = tsri_rule_get_rows,
  [TSR_OP_MUL_MAT] = tsri_rule_mul_mat,
  [TSR_OP_SUM_ROWS] = tsri_rule_sum_rows,
  [TSR_OP_NORM] = tsri_rule_unary,
  [TSR_OP_RMS_NORM] = tsri_rule_unary,
  [TSR_OP_SOFT_MAX] = tsri_rule_soft_max,
  [TSR_OP_SILU] = tsri_rule_unary,
  [TSR_OP_GELU] = tsri_rule_unary,
  [TSR_OP_SQR] = tsri_rule_unary,
  [TSR_OP_SQRT] = tsri_rule_unary,
  [TSR_OP_EXP] = tsri_rule_unary,
  [TSR_OP_LOG] = tsri_rule_unary,
  [TSR_OP_NEG] = tsri_rule_unary,
  [TSR_OP_ABS] = tsri_rule_unary,
  [TSR_OP_SIGMOID] = tsri_rule_unary,
  [TSR_OP_TANH] = tsri_rule_unary,
  [TSR_OP_RELU] = tsri_rule_unary,
  [TSR_OP_GELU_QUICK] = tsri_rule_unary,
  [TSR_OP_SWIGLU] = tsri_rule_glu,
  [TSR_OP_GEGLU] = tsri_rule_glu,
  [TSR_OP_SUM] = tsri_rule_sum,
  [TSR_OP_MEAN] = tsri_rule_mean,
  [TSR_OP_ARGMAX] = tsri_rule_argmax,
  [TSR_OP_REPEAT] = tsri_rule_repeat,
  [TSR_OP_CONCAT] = tsri_rule_concat,
  [TSR_OP_CLAMP] = tsri_rule_clamp,
  [TSR_OP_DIAG_MASK_INF] = tsri_rule_unary,
  [TSR_OP_PAD] = tsri_rule_pad,
  [TSR_OP_ARANGE] = tsri_rule_arange,
  [TSR_OP_UPSCALE] = tsri_rule_upscale,
  [TSR_OP_ARGSORT] = tsri_rule_argsort,
  [TSR_OP_TOP_K] = tsri_rule_top_k,
  [TSR_OP_ROPE] = tsri_rule_rope,
  [TSR_OP_SET_ROWS] = tsri_rule_set_rows,
  [TSR_OP_FLASH_ATTN_EXT] = tsri_rule_flash_attn_ext,
  [TSR_OP_MUL_MAT_ID] = tsri_rule_mul_mat_id,
  [TSR_OP_IM2COL] = tsri_rule_im2col,
  [TSR_OP_POOL_2D] = tsri_rule_pool_2d,
  [TSR_OP_GELU_ERF] = tsri_rule_unary,
  [TSR_OP_ALL_REDUCE] = tsri_rule_all_reduce,
  [TSR_OP_ALL_GATHER] = tsri_rule_all_gather,
  [TSR_OP_SEND] = tsri_rule_send,
  [TSR_OP_RECV] = tsri_rule_recv,
};

int
tsri_reject (struct tsri_verdict *v, int status, const char *fmt, ...)
{
  va_list ap;

  v->status = status;
  va_start (ap, fmt);
  vsnprintf (v->msg, sizeof v->msg, fmt, ap);
  va_end (ap);
  return status;
}

bool
tsri_need_srcs (const tsr_tensor *n, int count, struct tsri_verdict *v)
{
  for (int i = 0; i < count; i++)
    if (!n->src[i])
      {
        tsri_reject (v, TSR_ERR_INVALID_ARG, "%s: operand %d is NULL",
                     tsr_op_name (n->op), i);
        return false;
      }
  return true;
}

bool
tsri_need_type (const tsr_tensor *n, const tsr_tensor *t, const char *which,
                tsr_type type, struct tsri_verdict *v)
{
  if (t->type == type)
    return true;
  tsri_reject (v, TSR_ERR_TYPE, "%s: %s is %s, %s required",
               tsr_op_name (n->op), which, tsr_type_name (t->type),
               tsr_type_name (type));
  return false;
}

static int
run_rule (const tsr_tensor *n, struct tsri_result *r, struct tsri_verdict *v)
{
  if ((unsigned) n->op >= TSR_OP_COUNT || !rules[n->op])
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "op %d has no rule",
                        (int) n->op);
  r->alias = -1;
  v->status = TSR_OK;
  v->msg[0] = '\0';
  return rules[n->op] (n, r, v);
}

static int check_tensor (const tsr_tensor *n, const tsr_tensor *t,
                         const char *which, struct tsri_verdict *v);

tsr_tensor *
tsri_build (tsr_context *ctx, const tsr_tensor *proto)
{
  struct tsri_result r;
  struct tsri_verdict v;
  tsr_tensor *alias, *t;
  char which[16];

  /* Operands a rule may divide by or index with: positive sizes
     (tensors may be empty; operations on them are refused here, not
     divided by at compute).  */
  v.status = TSR_OK;
  for (int i = 0; i < TSR_MAX_SRC && v.status == TSR_OK; i++)
    if (proto->src[i])
      {
        snprintf (which, sizeof which, "operand %d", i);
        check_tensor (proto, proto->src[i], which, &v);
      }
  if (v.status != TSR_OK || run_rule (proto, &r, &v) != TSR_OK)
    {
      tsr_set_error (v.status, "%s", v.msg);
      return NULL;
    }
  alias = r.alias >= 0 ? proto->src[r.alias] : NULL;
  t = tsri_new_tensor_impl (ctx, r.type, r.ne, alias, 0);
  if (!t)
    return NULL;
  if (alias)
    memcpy (t->nb, alias->nb, sizeof t->nb);
  t->op = proto->op;
  memcpy (t->src, proto->src, sizeof t->src);
  memcpy (t->op_params, proto->op_params, sizeof t->op_params);
  return t;
}

const char *
tsr_tensor_label (const tsr_tensor *t)
{
  return t->name[0] ? t->name : "(unnamed)";
}

/* What every kernel relies on: a known type, positive sizes, whole
   blocks, a span that fits in memory.  WHICH names T in the message
   ("result", "operand 1").  */
static int
check_tensor (const tsr_tensor *n, const tsr_tensor *t, const char *which,
              struct tsri_verdict *v)
{
  if (!tsr_type_valid (t->type))
    return tsri_reject (v, TSR_ERR_TYPE, "%s '%s': %s has type %d, which "
                        "is not a type", tsr_op_name (n->op), tsr_tensor_label (n),
                        which, (int) t->type);
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    if (t->ne[i] < 1)
      return tsri_reject (v, TSR_ERR_SHAPE, "%s '%s': dimension %d of %s "
                          "is %lld", tsr_op_name (n->op), tsr_tensor_label (n), i,
                          which, (long long) t->ne[i]);
  if (t->ne[0] % tsr_type_traits (t->type)->block_size != 0)
    return tsri_reject (v, TSR_ERR_SHAPE, "%s '%s': rows of %s (%lld) are "
                        "not whole %s blocks", tsr_op_name (n->op),
                        tsr_tensor_label (n), which, (long long) t->ne[0],
                        tsr_type_name (t->type));
  if (tsr_nbytes (t) == SIZE_MAX)
    return tsri_reject (v, TSR_ERR_SHAPE, "%s '%s': the strides of %s "
                        "span more bytes than memory has",
                        tsr_op_name (n->op), tsr_tensor_label (n), which);
  return TSR_OK;
}

/* A view: of its source's type, inside the memory it views.  */
static int
check_view (const tsr_tensor *n, struct tsri_verdict *v)
{
  const tsr_tensor *a = n->src[0], *base = n->view_src;

  if (n->op == TSR_OP_NONE)
    return TSR_OK;
  if (!tsri_need_srcs (n, 1, v))
    return v->status;
  if (n->type != a->type)
    return tsri_reject (v, TSR_ERR_TYPE, "%s '%s': a view of %s cannot be "
                        "%s", tsr_op_name (n->op), tsr_tensor_label (n),
                        tsr_type_name (a->type), tsr_type_name (n->type));
  if (base && (n->view_offs > tsr_nbytes (base)
               || tsr_nbytes (n) > tsr_nbytes (base) - n->view_offs))
    return tsri_reject (v, TSR_ERR_SHAPE, "%s '%s': %zu bytes at offset "
                        "%zu exceed the %zu bytes it views",
                        tsr_op_name (n->op), tsr_tensor_label (n), tsr_nbytes (n),
                        n->view_offs, tsr_nbytes (base));
  return TSR_OK;
}

int
tsri_node_check (const tsr_tensor *n, struct tsri_verdict *v)
{
  struct tsri_result r;
  char which[16], want[80], have[80];

  v->status = TSR_OK;
  v->msg[0] = '\0';
  if (!n)
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "validate: NULL node");
  if ((unsigned) n->op >= TSR_OP_COUNT)
    return tsri_reject (v, TSR_ERR_INVALID_ARG, "node '%s': op %d is not "
                        "an operation", tsr_tensor_label (n), (int) n->op);
  if (check_tensor (n, n, "the result", v) != TSR_OK)
    return v->status;
  for (int i = 0; i < TSR_MAX_SRC; i++)
    if (n->src[i])
      {
        snprintf (which, sizeof which, "operand %d", i);
        if (check_tensor (n, n->src[i], which, v) != TSR_OK)
          return v->status;
      }
  if (tsr_op_get_kind (n->op) == TSR_OP_KIND_VIEW)
    return check_view (n, v);
  if (run_rule (n, &r, v) != TSR_OK)
    {
      /* The builder's message, and which node it is about.  */
      size_t len = strlen (v->msg);
      snprintf (v->msg + len, sizeof v->msg - len, " (node '%s')",
                tsr_tensor_label (n));
      return v->status;
    }
  if (r.type != n->type)
    return tsri_reject (v, TSR_ERR_TYPE, "%s '%s': the result is %s, its "
                        "operands make %s", tsr_op_name (n->op),
                        tsr_tensor_label (n), tsr_type_name (n->type),
                        tsr_type_name (r.type));
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    if (r.ne[i] != n->ne[i])
      {
        tsr_tensor shape = { .type = r.type };
        memcpy (shape.ne, r.ne, sizeof shape.ne);
        return tsri_reject (v, TSR_ERR_SHAPE, "%s '%s': the result is %s, "
                            "its operands make %s", tsr_op_name (n->op),
                            tsr_tensor_label (n),
                            tsri_shape_str (n, have, sizeof have),
                            tsri_shape_str (&shape, want, sizeof want));
      }
  return TSR_OK;
}

tsr_status
tsr_node_validate (const tsr_tensor *node)
{
  struct tsri_verdict v;

  if (tsri_node_check (node, &v) != TSR_OK)
    return (tsr_status) tsr_set_error (v.status, "%s", v.msg);
  return TSR_OK;
}
