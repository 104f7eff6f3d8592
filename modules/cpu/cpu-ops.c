/* cpu-ops.c - which kernel computes which operation.
 *
 * The one table of the CPU backend: adding an operation is a kernel in
 * a cpu-ops-*.c file and a line here.  supports_op and graph_compute
 * both read it, so they cannot disagree.  */
#include <config.h>

#include "cpu-impl.h"

static const struct tsr_cpu_op op_table[TSR_OP_COUNT] = {
  [TSR_OP_ADD] = { tsr_cpu_binary, tsr_cpu_binary_supports, NULL },
  [TSR_OP_SUB] = { tsr_cpu_binary, tsr_cpu_binary_supports, NULL },
  [TSR_OP_MUL] = { tsr_cpu_binary, tsr_cpu_binary_supports, NULL },
  [TSR_OP_DIV] = { tsr_cpu_binary, tsr_cpu_binary_supports, NULL },
  [TSR_OP_SCALE] = { tsr_cpu_unary, tsr_cpu_unary_supports, NULL },
  [TSR_OP_SILU] = { tsr_cpu_unary, tsr_cpu_unary_supports, NULL },
  [TSR_OP_GELU] = { tsr_cpu_unary, tsr_cpu_unary_supports, NULL },
  [TSR_OP_CPY] = { tsr_cpu_copy, tsr_cpu_copy_supports,
                   tsr_cpu_copy_scratch },
  [TSR_OP_CONT] = { tsr_cpu_copy, tsr_cpu_copy_supports,
                    tsr_cpu_copy_scratch },
  [TSR_OP_GET_ROWS] = { tsr_cpu_get_rows, tsr_cpu_get_rows_supports,
                        tsr_cpu_rows_scratch },
  [TSR_OP_MUL_MAT] = { tsr_cpu_mul_mat, tsr_cpu_mul_mat_supports,
                       tsr_cpu_mul_mat_scratch, tsr_cpu_mul_mat_shared,
                       tsr_cpu_mul_mat_prepare },
  [TSR_OP_SUM_ROWS] = { tsr_cpu_sum_rows, tsr_cpu_sum_rows_supports,
                        tsr_cpu_rows_scratch },
  [TSR_OP_NORM] = { tsr_cpu_norm, tsr_cpu_norm_supports,
                    tsr_cpu_rows_scratch },
  [TSR_OP_RMS_NORM] = { tsr_cpu_norm, tsr_cpu_norm_supports,
                        tsr_cpu_rows_scratch },
  [TSR_OP_SOFT_MAX] = { tsr_cpu_soft_max, tsr_cpu_soft_max_supports,
                        tsr_cpu_rows_scratch },
  /* math ops (cpu-ops-math.c) */
  [TSR_OP_SQR] = { tsr_cpu_math_unary, tsr_cpu_math_unary_supports, NULL },
  [TSR_OP_SQRT] = { tsr_cpu_math_unary, tsr_cpu_math_unary_supports, NULL },
  [TSR_OP_EXP] = { tsr_cpu_math_unary, tsr_cpu_math_unary_supports, NULL },
  [TSR_OP_LOG] = { tsr_cpu_math_unary, tsr_cpu_math_unary_supports, NULL },
  [TSR_OP_NEG] = { tsr_cpu_math_unary, tsr_cpu_math_unary_supports, NULL },
  [TSR_OP_ABS] = { tsr_cpu_math_unary, tsr_cpu_math_unary_supports, NULL },
  [TSR_OP_SIGMOID] = { tsr_cpu_math_unary, tsr_cpu_math_unary_supports, NULL },
  [TSR_OP_TANH] = { tsr_cpu_math_unary, tsr_cpu_math_unary_supports, NULL },
  [TSR_OP_RELU] = { tsr_cpu_math_unary, tsr_cpu_math_unary_supports, NULL },
  [TSR_OP_GELU_QUICK] = { tsr_cpu_math_unary, tsr_cpu_math_unary_supports,
                          NULL },
  [TSR_OP_CLAMP] = { tsr_cpu_math_unary, tsr_cpu_math_unary_supports, NULL },
  [TSR_OP_SWIGLU] = { tsr_cpu_glu, tsr_cpu_glu_supports, tsr_cpu_glu_scratch },
  [TSR_OP_GEGLU] = { tsr_cpu_glu, tsr_cpu_glu_supports, tsr_cpu_glu_scratch },
  [TSR_OP_SUM] = { tsr_cpu_sum, tsr_cpu_sum_supports, NULL },
  [TSR_OP_MEAN] = { tsr_cpu_mean, tsr_cpu_mean_supports, NULL },
  [TSR_OP_ARGMAX] = { tsr_cpu_argmax, tsr_cpu_argmax_supports, NULL },
  [TSR_OP_REPEAT] = { tsr_cpu_repeat, tsr_cpu_repeat_supports, NULL },
  [TSR_OP_CONCAT] = { tsr_cpu_concat, tsr_cpu_concat_supports, NULL },
  [TSR_OP_DIAG_MASK_INF] = { tsr_cpu_diag_mask_inf,
                             tsr_cpu_diag_mask_inf_supports, NULL },
  [TSR_OP_PAD] = { tsr_cpu_pad, tsr_cpu_pad_supports, NULL },
  [TSR_OP_ARANGE] = { tsr_cpu_arange, tsr_cpu_arange_supports, NULL },
  [TSR_OP_UPSCALE] = { tsr_cpu_upscale, tsr_cpu_upscale_supports, NULL },
  [TSR_OP_ARGSORT] = { tsr_cpu_argsort, tsr_cpu_argsort_supports,
                       tsr_cpu_argsort_scratch },
  [TSR_OP_TOP_K] = { tsr_cpu_argsort, tsr_cpu_argsort_supports,
                     tsr_cpu_argsort_scratch },
  /* transformer and convolution ops (cpu-ops-nn.c) */
  [TSR_OP_ROPE] = { tsr_cpu_rope, tsr_cpu_rope_supports,
                    tsr_cpu_rope_scratch },
  [TSR_OP_SET_ROWS] = { tsr_cpu_set_rows, tsr_cpu_set_rows_supports,
                        tsr_cpu_set_rows_scratch },
  [TSR_OP_FLASH_ATTN_EXT] = { tsr_cpu_flash_attn_ext,
                              tsr_cpu_flash_attn_ext_supports,
                              tsr_cpu_flash_attn_ext_scratch },
  [TSR_OP_MUL_MAT_ID] = { tsr_cpu_mul_mat_id, tsr_cpu_mul_mat_id_supports,
                          tsr_cpu_mul_mat_id_scratch,
                          tsr_cpu_mul_mat_id_shared,
                          tsr_cpu_mul_mat_id_prepare },
  [TSR_OP_IM2COL] = { tsr_cpu_im2col, tsr_cpu_im2col_supports, NULL },
  [TSR_OP_POOL_2D] = { tsr_cpu_pool_2d, tsr_cpu_pool_2d_supports, NULL },
};

const struct tsr_cpu_op *
tsr_cpu_op_get (tsr_op op)
{
  if ((unsigned) op >= TSR_OP_COUNT || !op_table[op].kernel)
    return NULL;
  return &op_table[op];
}

/* Shapes every kernel relies on: positive sizes, known types, sources
   that are there.  The builders guarantee this; a hand-made tensor may
   not, and must not crash a kernel.  */
static bool
sane_tensor (const tsr_tensor *t)
{
  if (!t || !tsr_type_valid (t->type))
    return false;
  for (int d = 0; d < TSR_MAX_DIMS; d++)
    if (t->ne[d] < 1)
      return false;
  return t->ne[0] % tsr_type_traits (t->type)->block_size == 0;
}

bool
tsr_cpu_supports_op (const tsr_tensor *op)
{
  const struct tsr_cpu_op *entry;

  if (!op || (unsigned) op->op >= TSR_OP_COUNT)
    return false;
  if (tsr_op_get_kind (op->op) == TSR_OP_KIND_VIEW)
    return true;                /* nothing to compute */
  entry = tsr_cpu_op_get (op->op);
  /* arange is the one op without operands.  */
  if (!entry || !sane_tensor (op)
      || (op->op != TSR_OP_ARANGE && !sane_tensor (op->src[0])))
    return false;
  for (int i = 1; i < TSR_MAX_SRC; i++)
    if (op->src[i] && !sane_tensor (op->src[i]))
      return false;
  return entry->supports (op);
}
