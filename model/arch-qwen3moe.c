/* arch-qwen3moe.c - "qwen3moe": Qwen 3 mixture-of-experts (30B-A3B,
 * 235B-A22B).
 *
 * qwen3's attention; in place of the feed-forward, qwen3moe.expert_count
 * experts of which qwen3moe.expert_used_count run per token, their
 * router weights normalized to sum to 1; no shared expert.  Each
 * expert's rows: qwen3moe.expert_feed_forward_length (default
 * feed_forward_length / expert_used_count).  */
#include <config.h>

#include "model-lib.h"
#include "arch.h"

static void
hparams (struct tsri_loader *ld)
{
  tsri_key_experts (ld, true);
  tsri_key_expert_ff (ld);
  ld->m->moe_norm = true;
}

static void
tensors (struct tsri_loader *ld, int64_t il, struct tsri_layer *l)
{
  tsri_want_attention (ld, il, l, false, true);
  tsri_want_moe (ld, il, l);
}

const struct tsri_arch tsri_arch_qwen3moe = {
  .name = "qwen3moe",
  .rope = TSR_ROPE_NEOX,
  .eps = 1e-6f,
  .hparams = hparams,
  .tensors = tensors,
  .layer = tsri_block,
};
