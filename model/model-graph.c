/* model-graph.c - the forward pass of a llama-family model as a
 * Tessera graph.
 *
 * Owns tsri_model_build: given the loaded weights, a batch shape and
 * the key/value caches, it builds the graph of one batch (embedding,
 * the blocks, the final norm and the logits).  It never computes or
 * allocates: sessions (model-session.c) place, allocate and run it.
 *
 * Per block: rms_norm -> q, k, v projections (+ biases) -> rope ->
 * set_rows of k and v into the caches -> flash_attn_ext over the first
 * n_kv cache positions under the causal mask -> output projection ->
 * residual; rms_norm -> SwiGLU feed-forward -> residual.
 *
 * Over several processes (model.h, enum tsr_model_split) the graph is
 * this rank's part: tensor parallel, its heads and feed-forward rows
 * with an all_reduce after the attention output and after down (and
 * an all_gather of the logits when the vocabulary is split); pipeline,
 * its layers between a recv from the previous rank and a send to the
 * next.  */
#include <config.h>

#include <math.h>

#include "model-lib.h"
#include "model-impl.h"

static tsr_tensor *
norm (tsr_context *ctx, tsr_tensor *x, tsr_tensor *w, float eps)
{
  return tsr_mul (ctx, tsr_rms_norm (ctx, x, eps), w);
}

/* W x (+ B).  */
static tsr_tensor *
project (tsr_context *ctx, tsr_tensor *w, tsr_tensor *b, tsr_tensor *x)
{
  tsr_tensor *y = tsr_mul_mat (ctx, w, x);
  return b ? tsr_add (ctx, y, b) : y;
}

/* One projection split into heads, rotated, and with the heads made
   the outer dimension: [head_dim, n_tokens, n_heads].  */
static tsr_tensor *
heads (tsr_context *ctx, const tsr_model *m, const struct tsri_layer *l,
       tsr_tensor *w, tsr_tensor *b, tsr_tensor *h, int64_t n_heads,
       const struct tsri_graph_inputs *in, bool rotate)
{
  const struct tsr_model_hparams *hp = &m->hp;
  int64_t n = h ? h->ne[1] : 0;
  tsr_tensor *x = tsr_reshape_3d (ctx, project (ctx, w, b, h), hp->head_dim,
                                  n_heads, n);
  if (rotate)
    x = tsr_rope_ext (ctx, x, in->pos, l->rope_freqs, (int) hp->n_rot,
                      hp->rope_mode, hp->rope_freq_base,
                      hp->rope_freq_scale);
  return tsr_permute (ctx, x, 0, 2, 1, 3);
}

/* Store this batch's keys or values in CACHE and view the first N_KV
   positions of the result.  */
static tsr_tensor *
cache_rows (tsr_context *ctx, tsr_tensor *cache, tsr_tensor *x,
            const struct tsri_graph_inputs *in, int n_kv)
{
  tsr_tensor *c = tsr_set_rows (ctx, cache, x, in->kv_idx);
  if (!c)
    return NULL;
  return tsr_view_3d (ctx, c, c->ne[0], n_kv, c->ne[2], c->nb[1], c->nb[2],
                      0);
}

/* Tensor parallel: the sum of every rank's partial product X.  */
static tsr_tensor *
reduce (tsr_context *ctx, const tsr_model *m, tsr_tensor *x)
{
  if (m->split.mode != TSR_SPLIT_TENSOR || m->split.size < 2 || !x)
    return x;
  return tsr_all_reduce (ctx, m->split.comm, x);
}

/* This rank's heads (all of them in one process): q, k and v are its
   rows of Wq, Wk, Wv, the output its columns of Wo, whose partial
   products the ranks sum.  */
static tsr_tensor *
attention (tsr_context *ctx, const tsr_model *m, const struct tsri_layer *l,
           tsr_tensor *h, tsr_tensor *kc, tsr_tensor *vc,
           const struct tsri_graph_inputs *in, int n_kv)
{
  const struct tsr_model_hparams *hp = &m->hp;
  const struct tsri_split *sp = &m->split;
  tsr_tensor *q = heads (ctx, m, l, l->wq, l->bq, h, sp->n_head, in, true);
  tsr_tensor *k = heads (ctx, m, l, l->wk, l->bk, h, sp->n_head_kv, in,
                         true);
  tsr_tensor *v = heads (ctx, m, l, l->wv, l->bv, h, sp->n_head_kv, in,
                         false);
  k = cache_rows (ctx, kc, k, in, n_kv);
  v = cache_rows (ctx, vc, v, in, n_kv);
  tsr_tensor *o = tsr_flash_attn_ext (ctx, q, k, v, in->mask,
                                      1.0f / sqrtf ((float) hp->head_dim));
  /* [head_dim, n_tokens, n_head] -> [head_dim * n_head, n_tokens].  */
  o = tsr_cont (ctx, tsr_permute (ctx, o, 0, 2, 1, 3));
  o = o ? tsr_reshape_2d (ctx, o, hp->head_dim * sp->n_head, o->ne[2])
        : NULL;
  return reduce (ctx, m, tsr_mul_mat (ctx, l->wo, o));
}

static tsr_tensor *
feed_forward (tsr_context *ctx, const tsr_model *m,
              const struct tsri_layer *l, tsr_tensor *h)
{
  tsr_tensor *f = tsr_swiglu (ctx, tsr_mul_mat (ctx, l->gate, h),
                              tsr_mul_mat (ctx, l->up, h));
  return f ? reduce (ctx, m, tsr_mul_mat (ctx, l->down, f)) : NULL;
}

/* Tensor parallel with the vocabulary split: every rank's rows of the
   logits [n_vocab / size, n_out], gathered into [n_vocab, n_out].  */
static tsr_tensor *
gather_logits (tsr_context *ctx, const tsr_model *m, tsr_tensor *part)
{
  if (!m->split.gather_logits || !part)
    return part;
  tsr_tensor *g = tsr_all_gather (ctx, m->split.comm, part);
  /* [rows, n_out, 1, size] -> [rows, size, n_out]: rank r's rows at
     r * rows of each column.  */
  g = tsr_cont (ctx, tsr_permute (ctx, g, 0, 2, 3, 1));
  return g ? tsr_reshape_2d (ctx, g, m->hp.n_vocab, part->ne[1]) : NULL;
}

static tsr_tensor *
input (tsr_context *ctx, tsr_type type, int64_t ne0, int64_t ne1,
       const char *name)
{
  tsr_tensor *t = ne1 ? tsr_new_tensor_2d (ctx, type, ne0, ne1)
                      : tsr_new_tensor_1d (ctx, type, ne0);
  if (t)
    tsr_set_input (tsr_set_name (t, name));
  return t;
}

int
tsri_model_build (const tsr_model *m, tsr_context *ctx,
                  tsr_tensor *const *k_cache, tsr_tensor *const *v_cache,
                  int n_tokens, int n_kv, int n_out,
                  struct tsri_graph_inputs *in)
{
  const struct tsr_model_hparams *hp = &m->hp;
  const struct tsri_split *sp = &m->split;
  const bool first = sp->layer0 == 0, last = sp->layer1 == hp->n_layer;
  const float eps = hp->norm_eps;
  *in = (struct tsri_graph_inputs) { 0 };
  in->tokens = first ? input (ctx, TSR_TYPE_I32, n_tokens, 0, "tokens")
                     : NULL;
  in->pos = input (ctx, TSR_TYPE_I32, n_tokens, 0, "positions");
  in->kv_idx = input (ctx, TSR_TYPE_I32, n_tokens, sp->n_head_kv,
                      "kv_rows");
  in->mask = input (ctx, TSR_TYPE_F32, n_kv, n_tokens, "kq_mask");
  in->out_idx = last && n_out < n_tokens
                ? input (ctx, TSR_TYPE_I32, n_out, 0, "out_rows") : NULL;

  /* Pipeline: the activations come from the previous rank and go to
     the next (tag 1: in order between two ranks).  */
  tsr_tensor *x;
  if (first)
    x = tsr_get_rows (ctx, m->tok_embd, in->tokens);
  else
    {
      int64_t ne[2] = { hp->n_embd, n_tokens };
      x = tsr_recv (ctx, sp->comm, TSR_TYPE_F32, 2, ne, sp->rank - 1, 1);
    }
  for (int64_t il = sp->layer0; il < sp->layer1; il++)
    {
      const struct tsri_layer *l = &m->layers[il];
      tsr_tensor *a = attention (ctx, m, l, norm (ctx, x, l->attn_norm, eps),
                                 k_cache[il], v_cache[il], in, n_kv);
      x = tsr_add (ctx, x, a);
      x = tsr_add (ctx, x, feed_forward (ctx, m, l,
                                         norm (ctx, x, l->ffn_norm, eps)));
    }
  if (!last)
    {
      in->result = tsr_send (ctx, sp->comm, x, sp->rank + 1, 1);
      if (!in->result)
        return tsr_last_status () != TSR_OK ? tsr_last_status ()
                                            : TSR_ERR_INVALID_ARG;
      tsr_set_output (tsr_set_name (in->result, "send_next"));
      return TSR_OK;
    }
  if (in->out_idx)
    x = tsr_get_rows (ctx, x, in->out_idx);
  in->logits = gather_logits (ctx, m, tsr_mul_mat (ctx, m->output,
                                                   norm (ctx, x, m->out_norm,
                                                         eps)));
  if (!in->logits)
    return tsr_last_status () != TSR_OK ? tsr_last_status ()
                                        : TSR_ERR_INVALID_ARG;
  tsr_set_output (tsr_set_name (in->logits, "logits"));
  in->result = in->logits;
  return TSR_OK;
}
