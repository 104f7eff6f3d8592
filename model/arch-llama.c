/* arch-llama.c - "llama": Llama 2 and 3, TinyLlama, SmolLM, Mistral,
 * Mixtral.
 *
 * The pre-norm block every architecture here starts from: rms_norm,
 * attention with grouped key/value heads and rope on adjacent pairs,
 * residual; rms_norm, SwiGLU feed-forward, residual.  Optional, as the
 * files give them:
 *   llama.attention.sliding_window   every layer attends to that many
 *                                    positions (Mistral 7B v0.1);
 *   llama.expert_count,              Mixtral's experts in place of the
 *   llama.expert_used_count          feed-forward: ffn_gate_inp
 *                                    [n_embd, n_expert], ffn_{gate,up}_exps
 *                                    [n_embd, n_ff, n_expert], ffn_down_exps
 *                                    [n_ff, n_embd, n_expert]; the top
 *                                    experts' weights normalized;
 *   rope_freqs.weight                Llama 3's frequency factors;
 *   blk.N.attn_{q,k,v}.bias.  */
#include <config.h>

#include "model-lib.h"
#include "arch.h"

static void
hparams (struct tsri_loader *ld)
{
  tsr_model *m = ld->m;
  struct tsr_model_hparams *hp = &m->hp;
  tsri_key_experts (ld, false);
  hp->n_ff_exp = hp->n_expert ? hp->n_ff : 0;
  m->moe_norm = true;
  tsri_key_window_all (ld);
}

static void
tensors (struct tsri_loader *ld, int64_t il, struct tsri_layer *l)
{
  tsri_want_attention (ld, il, l, false, false);
  if (ld->m->hp.n_expert)
    tsri_want_moe (ld, il, l);
  else
    tsri_want_ffn (ld, il, l);
}

const struct tsri_arch tsri_arch_llama = {
  .name = "llama",
  .rope = TSR_ROPE_NORMAL,
  .eps = 1e-5f,
  .hparams = hparams,
  .tensors = tensors,
  .layer = tsri_block,
};
