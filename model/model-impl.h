/* model-impl.h - what the model loader, graph builder and sessions
 * share: the loaded model's layout.  Internal to libtessera.  */
#ifndef TESSERA_MODEL_IMPL_H
#define TESSERA_MODEL_IMPL_H

#include <tessera/model.h>
#include <tessera/sched.h>

#define TSRI_MODEL_MAX_BACKENDS TSR_SCHED_MAX_BACKENDS

/* One transformer block's weights (NULL where the architecture or
   the file has none) and its settings.  */
struct tsri_layer
{
  /* Attention: q, k, v projections (or one fused wqkv: q rows, then
     k, then v) with optional biases; per-head norms of q and k; the
     output projection; a norm of the attention's output (gemma).  */
  tsr_tensor *attn_norm, *wq, *wk, *wv, *wqkv, *bq, *bk, *bv, *wo;
  tsr_tensor *q_norm, *k_norm, *attn_post_norm;
  /* Feed-forward: gate, up, down (gate NULL: up is fused, the gate's
     rows first); a norm of its output (gemma).  */
  tsr_tensor *ffn_norm, *gate, *up, *down, *ffn_post_norm;
  /* Mixture of experts: the router, the experts [in, out, n_expert],
     and a shared expert with its own scalar gate (qwen2moe).  */
  tsr_tensor *gate_inp, *gate_exps, *up_exps, *down_exps;
  tsr_tensor *gate_inp_shexp, *gate_shexp, *up_shexp, *down_shexp;
  tsr_tensor *rope_freqs;       /* the copy its rope reads, or NULL */
  bool swa;                     /* attends within the sliding window */
  float rope_base, rope_scale;  /* this layer's rope */
  int backend;                  /* index into tsr_model.backends */
};

/* This process's share of the model (model-load.c): the whole of it
   without a communicator.  */
struct tsri_split
{
  tsr_comm *comm;               /* NULL: one process */
  enum tsr_model_split mode;
  int rank, size;
  /* Heads, key/value heads and feed-forward rows held here.  */
  int64_t n_head, n_head_kv, n_ff;
  /* Rows of the output matrix held here: all n_vocab, or n_vocab / size
     when the logits are gathered.  */
  int64_t n_vocab_out;
  bool gather_logits;
  /* Layers held here: [layer0, layer1).  */
  int64_t layer0, layer1;
};

/* A weight held as a slice of the file's tensor: rows (DIM 1) or
   columns (DIM 0) [START, START + COUNT).  */
struct tsri_slice
{
  tsr_tensor *t;
  int64_t file_index;
  int dim;
  int64_t start, count;
};

struct tsri_arch;

struct tsr_model
{
  tsr_gguf *gguf;
  struct tsr_model_hparams hp;
  const struct tsri_arch *arch;
  /* Set by the architecture (defaults: 1, 1 / sqrt (head_dim), false):
     the embedding's scale, the attention's query scale, whether the
     weights of the selected experts are normalized to sum to 1.  */
  float embd_scale, attn_scale;
  bool moe_norm;
  tsr_backend *backends[TSRI_MODEL_MAX_BACKENDS];
  int n_backends;
  bool own_backends;            /* opened by tsr_model_load: freed here */
  /* The load's failure is the same on every rank (found after the ranks
     checked that they read the same file): no rank waits for another,
     and none is told of it (tsr_comm_fail).  */
  bool fail_agreed;
  /* Per backend: the weights placed there and their buffer.  */
  tsr_context *ctx[TSRI_MODEL_MAX_BACKENDS];
  tsr_buffer *buf[TSRI_MODEL_MAX_BACKENDS];
  /* Per backend: the sliced weights (tensor parallel), copied.  */
  tsr_context *slice_ctx[TSRI_MODEL_MAX_BACKENDS];
  tsr_buffer *slice_buf[TSRI_MODEL_MAX_BACKENDS];
  /* Per backend: matrices copied into its device's extra buffer type
     (repack_buft, NULL for none or with no_repack), e.g. the CPU's
     CPU_REPACK; loaded like the slices (whole ones without tensor
     parallelism).  */
  tsr_buffer_type *repack_buft[TSRI_MODEL_MAX_BACKENDS];
  tsr_context *repack_ctx[TSRI_MODEL_MAX_BACKENDS];
  tsr_buffer *repack_buf[TSRI_MODEL_MAX_BACKENDS];
  int n_repacked;
  int n_moved;                  /* weights kept off their layer's backend */
  struct tsri_slice *slices;
  int n_slices, cap_slices;
  struct tsri_split split;
  tsr_tensor *tok_embd;         /* on embd_backend, for get_rows */
  tsr_tensor *out_norm, *output;
  /* rope_freqs.weight, one copy in the memory of each backend whose
     layers' ropes read it (NULL: none, or the file has none).  */
  tsr_tensor *rope_freqs[TSRI_MODEL_MAX_BACKENDS];
  int embd_backend, out_backend;
  struct tsri_layer *layers;
  uint64_t bytes_per_token, n_params;
  char describe[512];
  /* While loading: which of the file's tensors the architecture took
     (by position), for the warning about the others.  */
  uint8_t *used;
};

/* The graph of one batch shape (model-graph.c).  */
struct tsri_graph_inputs
{
  tsr_tensor *tokens;           /* i32 [n_tokens] */
  tsr_tensor *pos;              /* i32 [n_tokens] */
  tsr_tensor *kv_idx;           /* i32 [n_tokens, n_head_kv]: cache rows */
  tsr_tensor *mask;             /* f32 [n_kv, n_tokens] (NULL: every
                                   layer has a sliding window) */
  tsr_tensor *mask_swa;         /* the same within the sliding window
                                   (NULL: no layer has one) */
  tsr_tensor *out_idx;          /* i32 [n_out] (NULL: every token) */
  tsr_tensor *logits;           /* f32 [n_vocab, n_out]; NULL on the
                                   pipeline's ranks but the last */
  tsr_tensor *result;           /* what the graph is built from: the
                                   logits, or the send to the next
                                   rank */
};

/* Build in CTX the forward pass of N_TOKENS tokens attending to the
   first N_KV cache positions, with logits for N_OUT of the tokens (the
   ones out_idx names; every token when N_OUT == N_TOKENS).  K_CACHE and
   V_CACHE hold one tensor per layer, [head_dim, n_ctx, n_head_kv of
   this rank] (NULL for the layers other ranks hold).  Inputs a rank
   does not read (tokens past the pipeline's first rank, out_idx before
   its last) are NULL.  G (may be NULL) is the graph that will be built
   from in->result: blocks add some nodes to it early, in the order a
   backend fuses best.  */
int tsri_model_build (const tsr_model *m, tsr_context *ctx,
                      tsr_tensor *const *k_cache, tsr_tensor *const *v_cache,
                      int n_tokens, int n_kv, int n_out,
                      struct tsri_graph_inputs *in, tsr_graph *g);

/* The graph of a context shift (model-graph.c): cache rows [SRC,
   SRC + N_MOVE) of every layer this rank holds moved to [DST, DST +
   N_MOVE), keys rotated by DST - SRC positions with each layer's rope.
   Inputs: POS i32 [n_move] (each DST - SRC) and ROWS i32 [n_move,
   n_head_kv] (the destination rows), set by the caller.  Every
   set_rows is added to G.  */
struct tsri_shift_inputs
{
  tsr_tensor *pos, *rows;
};
int tsri_model_build_shift (const tsr_model *m, tsr_context *ctx,
                            tsr_graph *g, tsr_tensor *const *k_cache,
                            tsr_tensor *const *v_cache, int src, int n_move,
                            struct tsri_shift_inputs *in);

#endif /* TESSERA_MODEL_IMPL_H */
