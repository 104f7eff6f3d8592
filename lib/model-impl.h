/* model-impl.h - what the model loader, graph builder and sessions
 * share: the loaded model's layout.  Internal to libtessera.  */
#ifndef TESSERA_MODEL_IMPL_H
#define TESSERA_MODEL_IMPL_H

#include <tessera/model.h>
#include <tessera/sched.h>

#define TSRI_MODEL_MAX_BACKENDS TSR_SCHED_MAX_BACKENDS

/* One transformer block's weights (biases NULL when the file has
   none).  */
struct tsri_layer
{
  tsr_tensor *attn_norm, *wq, *wk, *wv, *bq, *bk, *bv, *wo;
  tsr_tensor *ffn_norm, *gate, *up, *down;
  int backend;                  /* index into tsr_model.backends */
};

struct tsr_model
{
  tsr_gguf *gguf;
  struct tsr_model_hparams hp;
  tsr_backend *backends[TSRI_MODEL_MAX_BACKENDS];
  int n_backends;
  bool own_backends;            /* opened by tsr_model_load: freed here */
  /* Per backend: the weights placed there and their buffer.  */
  tsr_context *ctx[TSRI_MODEL_MAX_BACKENDS];
  tsr_buffer *buf[TSRI_MODEL_MAX_BACKENDS];
  tsr_tensor *tok_embd;         /* on embd_backend, for get_rows */
  tsr_tensor *out_norm, *output, *rope_freqs;
  int embd_backend, out_backend;
  struct tsri_layer *layers;
  uint64_t bytes_per_token, n_params;
  char describe[512];
};

/* The graph of one batch shape (model-graph.c).  */
struct tsri_graph_inputs
{
  tsr_tensor *tokens;           /* i32 [n_tokens] */
  tsr_tensor *pos;              /* i32 [n_tokens] */
  tsr_tensor *kv_idx;           /* i32 [n_tokens, n_head_kv]: cache rows */
  tsr_tensor *mask;             /* f32 [n_kv, n_tokens] */
  tsr_tensor *out_idx;          /* i32 [n_out] (NULL: every token) */
  tsr_tensor *logits;           /* f32 [n_vocab, n_out] */
};

/* Build in CTX the forward pass of N_TOKENS tokens attending to the
   first N_KV cache positions, with logits for N_OUT of the tokens (the
   ones out_idx names; every token when N_OUT == N_TOKENS).  K_CACHE and
   V_CACHE hold one tensor per layer, [head_dim, n_ctx, n_head_kv].  */
int tsri_model_build (const tsr_model *m, tsr_context *ctx,
                      tsr_tensor *const *k_cache, tsr_tensor *const *v_cache,
                      int n_tokens, int n_kv, int n_out,
                      struct tsri_graph_inputs *in);

#endif /* TESSERA_MODEL_IMPL_H */
