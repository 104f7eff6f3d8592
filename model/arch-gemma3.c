/* arch-gemma3.c - "gemma3": Gemma 3 (the text model).
 *
 * gemma2's block (scaled embeddings, norms before and after attention
 * and feed-forward, GeGLU) with per-head norms of q and k
 * (attn_q_norm.weight, attn_k_norm.weight) and no soft-capping.  Five
 * layers in six (il % 6 < 5) attend within
 * gemma3.attention.sliding_window positions, with rope base 10000 and
 * no scaling; the others attend to everything, with gemma3.rope.freq_base
 * and the file's linear rope scaling.  Queries scaled by 1 / sqrt
 * (key_length); the 27B model (62 layers) by 1 / sqrt (n_embd /
 * n_head), as it was trained.  */
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
  for (int64_t il = 0; il < hp->n_layer; il++)
    if ((m->layers[il].swa = il % 6 < 5))
      {
        m->layers[il].rope_base = 10000.0f;
        m->layers[il].rope_scale = 1.0f;
      }
  m->embd_scale = sqrtf ((float) hp->n_embd);
  if (hp->n_layer == 62)
    m->attn_scale = 1.0f / sqrtf ((float) (hp->n_embd / hp->n_head));
}

static void
tensors (struct tsri_loader *ld, int64_t il, struct tsri_layer *l)
{
  tsri_want_attention (ld, il, l, false, true);
  tsri_want_ffn (ld, il, l);
  tsri_want_post_norms (ld, il, l);
}

static tsr_tensor *
layer (struct tsri_build *b, const struct tsri_layer *l, tsr_tensor *x)
{
  return tsri_block_sandwich (b, l, x, TSRI_GELU);
}

const struct tsri_arch tsri_arch_gemma3 = {
  .name = "gemma3",
  .rope = TSR_ROPE_NEOX,
  .eps = 1e-6f,
  .hparams = hparams,
  .tensors = tensors,
  .layer = layer,
};
