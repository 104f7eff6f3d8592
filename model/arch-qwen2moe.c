/* arch-qwen2moe.c - "qwen2moe": Qwen 1.5-MoE, Qwen 2 57B-A14B.
 *
 * qwen2's attention (biases on q, k, v); in place of the feed-forward,
 * the top qwen2moe.expert_used_count of qwen2moe.expert_count experts
 * with their router probabilities as weights (not normalized), plus a
 * shared expert every token runs, scaled by sigmoid
 * (ffn_gate_inp_shexp . h):
 *   ffn_gate_inp_shexp.weight [n_embd], ffn_{gate,up}_shexp.weight
 *   [n_embd, n_ff_shexp], ffn_down_shexp.weight [n_ff_shexp, n_embd].
 * Rows: qwen2moe.expert_feed_forward_length (default feed_forward_length
 * / expert_used_count) and expert_shared_feed_forward_length (default
 * feed_forward_length).  */
#include <config.h>

#include "model-lib.h"
#include "arch.h"

static void
hparams (struct tsri_loader *ld)
{
  struct tsr_model_hparams *hp = &ld->m->hp;
  tsri_key_experts (ld, true);
  tsri_key_expert_ff (ld);
  tsri_key_count (ld, "expert_shared_feed_forward_length", hp->n_ff,
                  INT32_MAX, &hp->n_ff_shexp);
  ld->m->moe_norm = false;
}

static void
tensors (struct tsri_loader *ld, int64_t il, struct tsri_layer *l)
{
  const struct tsr_model_hparams *hp = &ld->m->hp;
  const int64_t d = hp->n_embd, ff = hp->n_ff_shexp;
  tsri_want_attention (ld, il, l, true, false);
  tsri_want_moe (ld, il, l);
  l->gate_inp_shexp = tsri_want (ld, il, "ffn_gate_inp_shexp.weight", d, 1,
                                 TSRI_WHOLE, 0);
  l->gate_shexp = tsri_want (ld, il, "ffn_gate_shexp.weight", d, ff,
                             TSRI_WHOLE, 0);
  l->up_shexp = tsri_want (ld, il, "ffn_up_shexp.weight", d, ff, TSRI_WHOLE,
                           0);
  l->down_shexp = tsri_want (ld, il, "ffn_down_shexp.weight", ff, d,
                             TSRI_WHOLE, 0);
}

const struct tsri_arch tsri_arch_qwen2moe = {
  .name = "qwen2moe",
  .rope = TSR_ROPE_NEOX,
  .eps = 1e-6f,
  .hparams = hparams,
  .tensors = tensors,
  .layer = tsri_block,
};
