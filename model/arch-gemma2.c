/* arch-gemma2.c - "gemma2": Gemma 2.
 *
 *   x = token_embd row * sqrt (n_embd)
 *   per layer: x += norm (attention (norm (x) * attn_norm)) *
 *                   post_attention_norm
 *              x += norm (ffn (norm (x) * ffn_norm)) * post_ffw_norm
 *   the feed-forward GeGLU (tanh GELU); the attention scores soft-capped,
 *   c tanh (s / c) with c = gemma2.attn_logit_softcapping (50), and on
 *   even layers limited to gemma2.attention.sliding_window positions;
 *   the queries scaled by 1 / sqrt (key_length) (the 27B model, 46
 *   layers: 1 / sqrt (n_embd / n_head), as it was trained);
 *   logits soft-capped by gemma2.final_logit_softcapping (30).  */
#include <config.h>

#include <math.h>

#include "model-lib.h"
#include "arch.h"

static void
hparams (struct tsri_loader *ld)
{
  tsr_model *m = ld->m;
  struct tsr_model_hparams *hp = &m->hp;
  tsri_key_count (ld, "attention.sliding_window", -1, INT32_MAX, &hp->n_swa);
  tsri_key_float (ld, "attn_logit_softcapping", 50.0f, &hp->attn_softcap);
  tsri_key_float (ld, "final_logit_softcapping", 30.0f, &hp->final_softcap);
  for (int64_t il = 0; il < hp->n_layer; il++)
    m->layers[il].swa = il % 2 == 0;
  m->embd_scale = sqrtf ((float) hp->n_embd);
  if (hp->n_layer == 46)
    m->attn_scale = 1.0f / sqrtf ((float) (hp->n_embd / hp->n_head));
}

static void
tensors (struct tsri_loader *ld, int64_t il, struct tsri_layer *l)
{
  tsri_want_attention (ld, il, l, false, false);
  tsri_want_ffn (ld, il, l);
  tsri_want_post_norms (ld, il, l);
}

static tsr_tensor *
layer (struct tsri_build *b, const struct tsri_layer *l, tsr_tensor *x)
{
  return tsri_block_sandwich (b, l, x, TSRI_GELU);
}

const struct tsri_arch tsri_arch_gemma2 = {
  .name = "gemma2",
  .rope = TSR_ROPE_NEOX,
  .eps = 1e-6f,
  .hparams = hparams,
  .tensors = tensors,
  .layer = layer,
};
