/* arch-qwen2.c - "qwen2": Qwen 1.5 and 2, 2.5.
 *
 * Llama's block with biases on the q, k and v projections and rope on
 * the two halves of each head (NEOX).  */
#include <config.h>

#include "model-lib.h"
#include "arch.h"

static void
tensors (struct tsri_loader *ld, int64_t il, struct tsri_layer *l)
{
  tsri_want_attention (ld, il, l, true, false);
  tsri_want_ffn (ld, il, l);
}

const struct tsri_arch tsri_arch_qwen2 = {
  .name = "qwen2",
  .rope = TSR_ROPE_NEOX,
  .eps = 1e-6f,
  .tensors = tensors,
  .layer = tsri_block,
};
