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
#include "arch.h"

tsr_tensor *
tsri_norm (struct tsri_build *b, tsr_tensor *x, tsr_tensor *w)
{
  return tsr_mul (b->ctx, tsr_rms_norm (b->ctx, x, b->m->hp.norm_eps), w);
}

/* Y (+ B).  */
static tsr_tensor *
bias (tsr_context *ctx, tsr_tensor *y, tsr_tensor *b)
{
  return b && y ? tsr_add (ctx, y, b) : y;
}

/* W x (+ B).  */
static tsr_tensor *
project (tsr_context *ctx, tsr_tensor *w, tsr_tensor *b, tsr_tensor *x)
{
  return bias (ctx, tsr_mul_mat (ctx, w, x), b);
}

/* Heads X [head_dim, n_heads, n_tokens]: normed by NORM when given,
   rotated when ROTATE, and with the heads made the outer dimension:
   [head_dim, n_tokens, n_heads].  */
static tsr_tensor *
heads (struct tsri_build *b, const struct tsri_layer *l, tsr_tensor *x,
       tsr_tensor *norm, bool rotate)
{
  const struct tsr_model_hparams *hp = &b->m->hp;
  if (norm)
    x = tsri_norm (b, x, norm);
  if (rotate)
    x = tsr_rope_ext (b->ctx, x, b->in->pos, l->rope_freqs, (int) hp->n_rot,
                      hp->rope_mode, l->rope_base, l->rope_scale);
  return tsr_permute (b->ctx, x, 0, 2, 1, 3);
}

/* Rows [OFF, OFF + N_HEADS * head_dim) of the fused product QKV as
   heads [head_dim, n_heads, n_tokens].  */
static tsr_tensor *
fused_part (struct tsri_build *b, tsr_tensor *qkv, int64_t n_heads,
            int64_t off)
{
  const int64_t hd = b->m->hp.head_dim;
  if (!qkv)
    return NULL;
  tsr_tensor *v = tsr_view_3d (b->ctx, qkv, hd, n_heads, qkv->ne[1],
                               (size_t) hd * sizeof (float), qkv->nb[1],
                               (size_t) off * sizeof (float));
  return tsr_cont (b->ctx, v);
}

/* Store this batch's keys or values in CACHE and view the first N_KV
   positions of the result.  */
static tsr_tensor *
cache_rows (struct tsri_build *b, tsr_tensor *cache, tsr_tensor *x)
{
  tsr_tensor *c = tsr_set_rows (b->ctx, cache, x, b->in->kv_idx);
  if (!c)
    return NULL;
  return tsr_view_3d (b->ctx, c, c->ne[0], b->n_kv, c->ne[2], c->nb[1],
                      c->nb[2], 0);
}

/* Tensor parallel: the sum of every rank's partial product X.  */
static tsr_tensor *
reduce (tsr_context *ctx, const tsr_model *m, tsr_tensor *x)
{
  if (m->split.mode != TSR_SPLIT_TENSOR || m->split.size < 2 || !x)
    return x;
  return tsr_all_reduce (ctx, m->split.comm, x);
}

tsr_tensor *
tsri_attention (struct tsri_build *b, const struct tsri_layer *l,
                tsr_tensor *h)
{
  const tsr_model *m = b->m;
  const struct tsr_model_hparams *hp = &m->hp;
  const struct tsri_split *sp = &m->split;
  tsr_context *ctx = b->ctx;
  const int64_t hd = hp->head_dim, n = h ? h->ne[1] : 0;
  tsr_tensor *q, *k, *v;
  if (l->wqkv)
    {
      tsr_tensor *qkv = project (ctx, l->wqkv, NULL, h);
      const int64_t dq = sp->n_head * hd, dkv = sp->n_head_kv * hd;
      q = fused_part (b, qkv, sp->n_head, 0);
      k = fused_part (b, qkv, sp->n_head_kv, dq);
      v = fused_part (b, qkv, sp->n_head_kv, dq + dkv);
    }
  else
    {
      /* The three products of H next to each other in the graph, before
         their biases and rotations: a backend may compute them in one
         kernel (CUDA's fused matrix-vector products).  */
      tsr_tensor *pq = tsr_mul_mat (ctx, l->wq, h);
      tsr_tensor *pk = tsr_mul_mat (ctx, l->wk, h);
      tsr_tensor *pv = tsr_mul_mat (ctx, l->wv, h);
      if (b->g && pq && pk && pv
          && (tsr_graph_add (b->g, pq) != TSR_OK
              || tsr_graph_add (b->g, pk) != TSR_OK
              || tsr_graph_add (b->g, pv) != TSR_OK))
        return NULL;
      q = tsr_reshape_3d (ctx, bias (ctx, pq, l->bq), hd, sp->n_head, n);
      k = tsr_reshape_3d (ctx, bias (ctx, pk, l->bk), hd, sp->n_head_kv, n);
      v = tsr_reshape_3d (ctx, bias (ctx, pv, l->bv), hd, sp->n_head_kv, n);
    }
  q = heads (b, l, q, l->q_norm, true);
  k = heads (b, l, k, l->k_norm, true);
  v = heads (b, l, v, NULL, false);
  k = cache_rows (b, b->k_cache, k);
  v = cache_rows (b, b->v_cache, v);
  tsr_tensor *mask = l->swa ? b->in->mask_swa : b->in->mask;
  tsr_tensor *o = tsr_flash_attn_ext_softcap (ctx, q, k, v, mask,
                                              m->attn_scale,
                                              hp->attn_softcap);
  /* [head_dim, n_tokens, n_head] -> [head_dim * n_head, n_tokens]; for
     one token that is the memory as it is (no copy).  */
  if (n > 1)
    o = tsr_cont (ctx, tsr_permute (ctx, o, 0, 2, 1, 3));
  o = o ? tsr_reshape_2d (ctx, o, hd * sp->n_head, n) : NULL;
  return reduce (ctx, m, tsr_mul_mat (ctx, l->wo, o));
}

static tsr_tensor *
gated (tsr_context *ctx, tsr_tensor *a, tsr_tensor *u, enum tsri_act act)
{
  if (!a)
    return NULL;                /* a NULL U would mean "split a" */
  return act == TSRI_GELU ? tsr_geglu (ctx, a, u) : tsr_swiglu (ctx, a, u);
}

tsr_tensor *
tsri_ffn (struct tsri_build *b, const struct tsri_layer *l, tsr_tensor *h,
          enum tsri_act act)
{
  tsr_context *ctx = b->ctx;
  tsr_tensor *f;
  if (l->gate)
    {
      tsr_tensor *u = tsr_mul_mat (ctx, l->up, h);
      f = u ? gated (ctx, tsr_mul_mat (ctx, l->gate, h), u, act) : NULL;
    }
  else
    {
      /* Fused: the gate's rows, then the up's, split by the op.  */
      tsr_tensor *gu = tsr_mul_mat (ctx, l->up, h);
      f = !gu ? NULL : act == TSRI_GELU ? tsr_geglu (ctx, gu, NULL)
                                        : tsr_swiglu (ctx, gu, NULL);
    }
  return f ? reduce (ctx, b->m, tsr_mul_mat (ctx, l->down, f)) : NULL;
}

tsr_tensor *
tsri_moe (struct tsri_build *b, const struct tsri_layer *l, tsr_tensor *h)
{
  const tsr_model *m = b->m;
  const struct tsr_model_hparams *hp = &m->hp;
  tsr_context *ctx = b->ctx;
  if (!h)
    return NULL;
  const int64_t n = h->ne[1], e = hp->n_embd, k = hp->n_expert_used;
  /* Router: probabilities of every expert [n_expert, n], the K best
     [k, n] and their weights [1, k, n].  */
  tsr_tensor *p = tsr_soft_max (ctx, tsr_mul_mat (ctx, l->gate_inp, h),
                                NULL, 1.0f);
  tsr_tensor *sel = tsr_top_k (ctx, p, (int) k);
  tsr_tensor *w = p ? tsr_get_rows (ctx, tsr_reshape_3d (ctx, p, 1,
                                                         hp->n_expert, n),
                                    sel) : NULL;
  if (w && m->moe_norm)
    {
      tsr_tensor *w2 = tsr_reshape_2d (ctx, w, k, n);
      w = tsr_reshape_3d (ctx, tsr_div (ctx, w2, tsr_sum_rows (ctx, w2)), 1,
                          k, n);
    }
  /* Each token's K experts: [n_ff_exp, k, n] -> [e, k, n].  */
  tsr_tensor *x = tsr_reshape_3d (ctx, h, e, 1, n);
  tsr_tensor *up = tsr_mul_mat_id (ctx, l->up_exps, x, sel);
  tsr_tensor *f = up ? tsr_swiglu (ctx, tsr_mul_mat_id (ctx, l->gate_exps,
                                                        x, sel), up)
                     : NULL;
  tsr_tensor *d = tsr_mul (ctx, tsr_mul_mat_id (ctx, l->down_exps, f, sel),
                           w);
  /* The sum over the K slots.  */
  tsr_tensor *y = d ? tsr_view_2d (ctx, d, e, n, d->nb[2], 0) : NULL;
  for (int64_t i = 1; i < k && y; i++)
    y = tsr_add (ctx, y, tsr_view_2d (ctx, d, e, n, d->nb[2],
                                      (size_t) i * d->nb[1]));
  if (k == 1 && y)
    y = tsr_cont (ctx, y);
  if (l->gate_shexp && y)
    {
      tsr_tensor *su = tsr_mul_mat (ctx, l->up_shexp, h);
      tsr_tensor *sf = su ? tsr_swiglu (ctx, tsr_mul_mat (ctx, l->gate_shexp,
                                                          h), su) : NULL;
      tsr_tensor *s = tsr_mul_mat (ctx, l->down_shexp, sf);
      tsr_tensor *g = tsr_sigmoid (ctx, tsr_mul_mat (ctx, l->gate_inp_shexp,
                                                     h));
      y = tsr_add (ctx, y, tsr_mul (ctx, s, g));
    }
  return y;
}

tsr_tensor *
tsri_block (struct tsri_build *b, const struct tsri_layer *l, tsr_tensor *x)
{
  x = tsr_add (b->ctx, x, tsri_attention (b, l, tsri_norm (b, x,
                                                           l->attn_norm)));
  tsr_tensor *h = tsri_norm (b, x, l->ffn_norm);
  return tsr_add (b->ctx, x, l->gate_exps ? tsri_moe (b, l, h)
                                          : tsri_ffn (b, l, h, TSRI_SILU));
}

tsr_tensor *
tsri_block_sandwich (struct tsri_build *b, const struct tsri_layer *l,
                     tsr_tensor *x, enum tsri_act act)
{
  tsr_tensor *a = tsri_attention (b, l, tsri_norm (b, x, l->attn_norm));
  x = tsr_add (b->ctx, x, tsri_norm (b, a, l->attn_post_norm));
  tsr_tensor *f = tsri_ffn (b, l, tsri_norm (b, x, l->ffn_norm), act);
  return tsr_add (b->ctx, x, tsri_norm (b, f, l->ffn_post_norm));
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
                  struct tsri_graph_inputs *in, tsr_graph *g)
{
  const struct tsr_model_hparams *hp = &m->hp;
  const struct tsri_split *sp = &m->split;
  const bool first = sp->layer0 == 0, last = sp->layer1 == hp->n_layer;
  *in = (struct tsri_graph_inputs) { 0 };
  in->tokens = first ? input (ctx, TSR_TYPE_I32, n_tokens, 0, "tokens")
                     : NULL;
  in->pos = input (ctx, TSR_TYPE_I32, n_tokens, 0, "positions");
  in->kv_idx = input (ctx, TSR_TYPE_I32, n_tokens, sp->n_head_kv,
                      "kv_rows");
  /* The masks the layers read: causal, and within the window.  */
  bool full = false, swa = false;
  for (int64_t il = sp->layer0; il < sp->layer1; il++)
    {
      full |= !m->layers[il].swa;
      swa |= m->layers[il].swa;
    }
  in->mask = full || !swa ? input (ctx, TSR_TYPE_F32, n_kv, n_tokens,
                                   "kq_mask") : NULL;
  in->mask_swa = swa ? input (ctx, TSR_TYPE_F32, n_kv, n_tokens,
                              "kq_mask_swa") : NULL;
  in->out_idx = last && n_out < n_tokens
                ? input (ctx, TSR_TYPE_I32, n_out, 0, "out_rows") : NULL;

  /* Pipeline: the activations come from the previous rank and go to
     the next (tag 1: in order between two ranks).  */
  tsr_tensor *x;
  if (first)
    {
      x = tsr_get_rows (ctx, m->tok_embd, in->tokens);
      if (m->embd_scale != 1.0f)
        x = tsr_scale (ctx, x, m->embd_scale);
    }
  else
    {
      int64_t ne[2] = { hp->n_embd, n_tokens };
      x = tsr_recv (ctx, sp->comm, TSR_TYPE_F32, 2, ne, sp->rank - 1, 1);
    }
  struct tsri_build b = { .m = m, .ctx = ctx, .in = in, .n_kv = n_kv,
                          .g = g };
  for (int64_t il = sp->layer0; il < sp->layer1; il++)
    {
      b.k_cache = k_cache[il];
      b.v_cache = v_cache[il];
      x = m->arch->layer (&b, &m->layers[il], x);
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
  tsr_tensor *y = tsr_mul_mat (ctx, m->output, tsri_norm (&b, x,
                                                         m->out_norm));
  if (hp->final_softcap > 0)
    y = tsr_scale (ctx, tsr_tanh (ctx, tsr_scale (ctx, y, 1.0f
                                                  / hp->final_softcap)),
                   hp->final_softcap);
  in->logits = gather_logits (ctx, m, y);
  if (!in->logits)
    return tsr_last_status () != TSR_OK ? tsr_last_status ()
                                        : TSR_ERR_INVALID_ARG;
  tsr_set_output (tsr_set_name (in->logits, "logits"));
  in->result = in->logits;
  return TSR_OK;
}

/* Rows [SRC, SRC + N) of CACHE [hd, n_ctx, n_kv] as f32 [hd, n_kv, n]
   (the layout rope takes).  */
static tsr_tensor *
cache_rows_f32 (tsr_context *ctx, tsr_tensor *cache, int src, int n)
{
  tsr_tensor *v = tsr_view_3d (ctx, cache, cache->ne[0], n, cache->ne[2],
                               cache->nb[1], cache->nb[2],
                               (size_t) src * cache->nb[1]);
  return tsr_cast (ctx, tsr_permute (ctx, v, 0, 2, 1, 3), TSR_TYPE_F32);
}

int
tsri_model_build_shift (const tsr_model *m, tsr_context *ctx, tsr_graph *g,
                        tsr_tensor *const *k_cache,
                        tsr_tensor *const *v_cache, int src, int n_move,
                        struct tsri_shift_inputs *in)
{
  const struct tsr_model_hparams *hp = &m->hp;
  const struct tsri_split *sp = &m->split;
  in->pos = input (ctx, TSR_TYPE_I32, n_move, 0, "shift_positions");
  in->rows = input (ctx, TSR_TYPE_I32, n_move, sp->n_head_kv, "shift_rows");
  int st = in->pos && in->rows ? TSR_OK : tsr_last_status ();
  for (int64_t il = sp->layer0; il < sp->layer1 && st == TSR_OK; il++)
    {
      const struct tsri_layer *l = &m->layers[il];
      /* Keys: rotated by the shift (rope is a rotation by the position,
         so rotating by DST - SRC moves a key to its new position).  */
      tsr_tensor *k = tsr_rope_ext (ctx, cache_rows_f32 (ctx, k_cache[il],
                                                         src, n_move),
                                    in->pos, l->rope_freqs, (int) hp->n_rot,
                                    hp->rope_mode, l->rope_base,
                                    l->rope_scale);
      k = tsr_permute (ctx, k, 0, 2, 1, 3);
      tsr_tensor *v = tsr_permute (ctx, cache_rows_f32 (ctx, v_cache[il],
                                                        src, n_move),
                                   0, 2, 1, 3);
      st = tsr_graph_build (g, tsr_set_rows (ctx, k_cache[il], k, in->rows));
      if (st == TSR_OK)
        st = tsr_graph_build (g, tsr_set_rows (ctx, v_cache[il], v,
                                               in->rows));
    }
  return st;
}
