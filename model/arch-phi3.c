/* arch-phi3.c - "phi3": Phi-3 and Phi-3.5 mini/medium, Phi-4 (4k-context
 * rope).
 *
 * Llama's block with rope on halves (NEOX), one fused projection
 * blk.N.attn_qkv.weight [n_embd, (n_head + 2 n_head_kv) head_dim] (q's
 * rows, then k's, then v's; files with separate attn_q, attn_k, attn_v
 * are read too) and one fused blk.N.ffn_up.weight [n_embd, 2 n_ff]
 * whose first n_ff rows are the gate.  phi3.attention.sliding_window,
 * when the file has it, limits every layer's attention to that many
 * positions.  LongRoPE files (rope_factors_long.weight,
 * rope_factors_short.weight: the 128k-context models) are refused.
 * Fused matrices are not cut for tensor parallelism.  */
#include <config.h>

#include "model-lib.h"
#include "arch.h"

static void
hparams (struct tsri_loader *ld)
{
  tsr_model *m = ld->m;
  static const char *const longrope[] = { "rope_factors_long.weight",
                                          "rope_factors_short.weight" };
  for (int i = 0; i < 2; i++)
    if (tsr_gguf_find_tensor (m->gguf, longrope[i]) >= 0)
      tsri_fail (ld, TSR_ERR_UNSUPPORTED, "tensor %s: LongRoPE scaling "
                 "(phi3 models of 128k positions) is not supported",
                 longrope[i]);
  tsri_key_window_all (ld);
}

static void
tensors (struct tsri_loader *ld, int64_t il, struct tsri_layer *l)
{
  const struct tsr_model_hparams *hp = &ld->m->hp;
  const int64_t d = hp->n_embd, dq = hp->n_head * hp->head_dim;
  const int64_t dkv = hp->n_head_kv * hp->head_dim;
  if (tsri_has (ld, il, "attn_qkv.weight"))
    {
      l->attn_norm = tsri_want (ld, il, "attn_norm.weight", d, 0, TSRI_WHOLE,
                                0);
      l->wqkv = tsri_want (ld, il, "attn_qkv.weight", d, dq + 2 * dkv,
                           TSRI_WHOLE, 0);
      l->wo = tsri_want (ld, il, "attn_output.weight", dq, d, TSRI_WHOLE, 0);
    }
  else
    tsri_want_attention (ld, il, l, false, false);
  l->ffn_norm = tsri_want (ld, il, "ffn_norm.weight", d, 0, TSRI_WHOLE, 0);
  l->up = tsri_want (ld, il, "ffn_up.weight", d, 2 * hp->n_ff, TSRI_WHOLE,
                     0);
  l->down = tsri_want (ld, il, "ffn_down.weight", hp->n_ff, d, TSRI_WHOLE, 0);
}

const struct tsri_arch tsri_arch_phi3 = {
  .name = "phi3",
  .rope = TSR_ROPE_NEOX,
  .eps = 1e-5f,
  .hparams = hparams,
  .tensors = tensors,
  .layer = tsri_block,
  .no_tensor_split = true,
};
