/* arch-qwen3.c - "qwen3": Qwen 3 (dense).
 *
 * qwen2's block without biases and with each head of q and k
 * rms-normed (blk.N.attn_q_norm.weight, attn_k_norm.weight, [head_dim])
 * before its rotation.  Heads are usually wider than n_embd / n_head
 * (qwen3.attention.key_length).  The smallest architecture file: the
 * manual's example of adding one.  */
#include <config.h>

#include "model-lib.h"
#include "arch.h"

static void
tensors (struct tsri_loader *ld, int64_t il, struct tsri_layer *l)
{
  tsri_want_attention (ld, il, l, false, true);
  tsri_want_ffn (ld, il, l);
}

const struct tsri_arch tsri_arch_qwen3 = {
  .name = "qwen3",
  .rope = TSR_ROPE_NEOX,
  .eps = 1e-6f,
  .tensors = tensors,
  .layer = tsri_block,
};
