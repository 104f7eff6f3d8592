/* cpu-ops.c - which kernel computes which operation.
 *
 * The one table of the CPU backend: adding an operation is a kernel in
 * a cpu-ops-*.c file and a line here.  supports_op and graph_compute
 * both read it, so they cannot disagree.  The core checks shapes and
 * parameters (tsr_node_validate); an entry's SUPPORTS says only which
 * types and layouts its kernel takes (NULL: every valid node).  */
#include <config.h>

#include "cpu-impl.h"

static const struct tsr_cpu_op op_table[TSR_OP_COUNT] = {
  [TSR_OP_ADD] = { tsr_cpu_binary, NULL, NULL },
  [TSR_OP_SUB] = { tsr_cpu_binary, NULL, NULL },
  [TSR_OP_MUL] = { tsr_cpu_binary, NULL, NULL },
  [TSR_OP_DIV] = { tsr_cpu_binary, NULL, NULL },
  [TSR_OP_SCALE] = { tsr_cpu_unary, NULL, NULL },
  [TSR_OP_SILU] = { tsr_cpu_unary, NULL, NULL },
  [TSR_OP_GELU] = { tsr_cpu_unary, NULL, NULL },
  [TSR_OP_CPY] = { tsr_cpu_copy, tsr_cpu_copy_supports,
                   tsr_cpu_copy_scratch },
  [TSR_OP_CONT] = { tsr_cpu_copy, tsr_cpu_copy_supports,
                    tsr_cpu_copy_scratch },
  [TSR_OP_GET_ROWS] = { tsr_cpu_get_rows, tsr_cpu_get_rows_supports,
                        tsr_cpu_rows_scratch },
  [TSR_OP_MUL_MAT] = { tsr_cpu_mul_mat, tsr_cpu_mul_mat_supports,
                       tsr_cpu_mul_mat_scratch, tsr_cpu_mul_mat_shared,
                       tsr_cpu_mul_mat_prepare },
  [TSR_OP_SUM_ROWS] = { tsr_cpu_sum_rows, NULL,
                        tsr_cpu_rows_scratch },
  [TSR_OP_NORM] = { tsr_cpu_norm, NULL,
                    tsr_cpu_rows_scratch },
  [TSR_OP_RMS_NORM] = { tsr_cpu_norm, NULL,
                        tsr_cpu_rows_scratch },
  [TSR_OP_SOFT_MAX] = { tsr_cpu_soft_max, NULL,
                        tsr_cpu_rows_scratch },
  /* math ops (cpu-ops-math.c) */
  [TSR_OP_SQR] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_SQRT] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_EXP] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_LOG] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_NEG] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_ABS] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_SIGMOID] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_TANH] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_RELU] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_GELU_QUICK] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_GELU_ERF] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_CLAMP] = { tsr_cpu_math_unary, NULL, NULL },
  [TSR_OP_SWIGLU] = { tsr_cpu_glu, NULL, tsr_cpu_glu_scratch },
  [TSR_OP_GEGLU] = { tsr_cpu_glu, NULL, tsr_cpu_glu_scratch },
  [TSR_OP_SUM] = { tsr_cpu_sum, NULL, NULL },
  [TSR_OP_MEAN] = { tsr_cpu_mean, NULL, NULL },
  [TSR_OP_ARGMAX] = { tsr_cpu_argmax, NULL, NULL },
  [TSR_OP_REPEAT] = { tsr_cpu_repeat, NULL, NULL },
  [TSR_OP_CONCAT] = { tsr_cpu_concat, NULL, NULL },
  [TSR_OP_DIAG_MASK_INF] = { tsr_cpu_diag_mask_inf,
                             NULL, NULL },
  [TSR_OP_PAD] = { tsr_cpu_pad, NULL, NULL },
  [TSR_OP_ARANGE] = { tsr_cpu_arange, NULL, NULL },
  [TSR_OP_UPSCALE] = { tsr_cpu_upscale, NULL, NULL },
  [TSR_OP_ARGSORT] = { tsr_cpu_argsort, NULL,
                       tsr_cpu_argsort_scratch },
  [TSR_OP_TOP_K] = { tsr_cpu_argsort, NULL,
                     tsr_cpu_argsort_scratch },
  /* transformer and convolution ops (cpu-ops-nn.c) */
  [TSR_OP_ROPE] = { tsr_cpu_rope, NULL,
                    tsr_cpu_rope_scratch },
  [TSR_OP_SET_ROWS] = { tsr_cpu_set_rows, tsr_cpu_set_rows_supports,
                        tsr_cpu_set_rows_scratch },
  [TSR_OP_FLASH_ATTN_EXT] = { tsr_cpu_flash_attn_ext,
                              NULL,
                              tsr_cpu_flash_attn_ext_scratch },
  [TSR_OP_MUL_MAT_ID] = { tsr_cpu_mul_mat_id, tsr_cpu_mul_mat_id_supports,
                          tsr_cpu_mul_mat_id_scratch,
                          tsr_cpu_mul_mat_id_shared,
                          tsr_cpu_mul_mat_id_prepare },
  [TSR_OP_IM2COL] = { tsr_cpu_im2col, NULL, NULL },
  [TSR_OP_POOL_2D] = { tsr_cpu_pool_2d, NULL, NULL },
};

const struct tsr_cpu_op *
tsr_cpu_op_get (tsr_op op)
{
  if ((unsigned) op >= TSR_OP_COUNT || !op_table[op].kernel)
    return NULL;
  return &op_table[op];
}

/* The core has checked the node (tsr_node_validate): what is left is
   whether a kernel takes its types and layouts.  */
bool
tsr_cpu_supports_op (const tsr_tensor *op)
{
  const struct tsr_cpu_op *entry;

  if (tsr_op_get_kind (op->op) == TSR_OP_KIND_VIEW)
    return true;                /* nothing to compute */
  /* Repacked weights (CPU_REPACK) hold another layout: mul_mat reads
     them (and checks how), and get_rows a whole matrix's rows (a tied
     embedding); no other op.  */
  if (op->op != TSR_OP_MUL_MAT)
    for (int i = 0; i < TSR_MAX_SRC; i++)
      if (op->src[i] && tsr_cpu_repacked (op->src[i])
          && !(op->op == TSR_OP_GET_ROWS && i == 0
               && !op->src[0]->view_src))
        return false;
  entry = tsr_cpu_op_get (op->op);
  return entry && (!entry->supports || entry->supports (op));
}
