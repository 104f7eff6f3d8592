/* op-checks.h - what several backends' supports_op check alike: the
 * element types and layouts their kernels take.  Not installed; each
 * module includes it (static inline: nothing is exported).
 *
 * Shapes, operand types and parameters are the core's: every op has
 * one rule (tsr_node_validate), which runs before a module's
 * supports_op and graph walk see a node.  A backend checks only what
 * is its own business, which types and layouts its kernels take; a
 * helper lives here once two backends need it word for word.  */
#ifndef TSR_MODULES_OP_CHECKS_H
#define TSR_MODULES_OP_CHECKS_H

#include <stdbool.h>
#include <stdint.h>

#include <tessera/tensor.h>
#include <tessera/types.h>

static inline bool
tsr_chk_is_plain_float (tsr_type t)
{
  return t == TSR_TYPE_F32 || t == TSR_TYPE_F16 || t == TSR_TYPE_BF16;
}

static inline bool
tsr_chk_is_quant (tsr_type t)
{
  return t == TSR_TYPE_Q8_0 || t == TSR_TYPE_Q4_0;
}

static inline bool
tsr_chk_dense_rows (const tsr_tensor *t)
{
  return t->nb[0] == tsr_type_traits (t->type)->type_size;
}

/* Block types the GPU kernels decode as weights (get_rows, mul_mat,
   mul_mat_id): every quantized type but q8_K, the activation type of
   the CPU's k-quant dot products, which no model file holds.  */
static inline bool
tsr_chk_is_block_weight (tsr_type t)
{
  switch (t)
    {
    case TSR_TYPE_Q8_0: case TSR_TYPE_Q4_0: case TSR_TYPE_Q4_1:
    case TSR_TYPE_Q5_0: case TSR_TYPE_Q5_1: case TSR_TYPE_Q2_K:
    case TSR_TYPE_Q3_K: case TSR_TYPE_Q4_K: case TSR_TYPE_Q5_K:
    case TSR_TYPE_Q6_K: case TSR_TYPE_IQ4_NL: case TSR_TYPE_IQ4_XS:
    case TSR_TYPE_MXFP4:
      return true;
    default:
      return false;
    }
}

/* A weight operand the GPU kernels read: f32, f16, bf16, or a block
   type with dense rows.  */
static inline bool
tsr_chk_weight (const tsr_tensor *a)
{
  return tsr_chk_is_plain_float (a->type)
         || (tsr_chk_is_block_weight (a->type) && tsr_chk_dense_rows (a));
}

#endif /* TSR_MODULES_OP_CHECKS_H */
