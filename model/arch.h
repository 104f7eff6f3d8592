/* arch.h - what an architecture file of libtessera-model gives and
 * uses.
 *
 * An architecture is one file, model/arch-NAME.c, defining one
 * `const struct tsri_arch tsri_arch_NAME` and listed once in the table
 * of model-arch.c.  The descriptor names the file's keys beyond the
 * common ones (hparams), declares each layer's tensors with their
 * shapes (tensors), and builds a layer's part of the forward pass from
 * the shared blocks below (layer).  Everything else -- the common keys,
 * token_embd/output_norm/output, placement on backends, splits over
 * processes, caches, masks, the logits -- is shared (model-load.c,
 * model-graph.c, model-session.c).
 *
 * The common keys, read before the architecture's own:
 * ARCH.embedding_length, block_count, feed_forward_length,
 * attention.head_count, attention.head_count_kv (default head_count),
 * attention.key_length (default n_embd / n_head; value_length must be
 * the same), rope.dimension_count (default head_dim),
 * attention.layer_norm_rms_epsilon, rope.freq_base, rope scaling,
 * context_length, vocab_size.  */
#ifndef TESSERA_MODEL_ARCH_H
#define TESSERA_MODEL_ARCH_H

#include "model-impl.h"

/* Loading: a model being loaded and the first error (every helper does
   nothing once ST is set, so a list of declarations is checked once at
   the end).  */
struct tsri_loader
{
  tsr_model *m;
  int st;
};

/* How a weight is cut when the model is split over ranks by tensor
   parallelism (whole otherwise): rows or columns by this rank's heads
   (Q: query heads, KV: key/value heads) or feed-forward rows.  */
enum tsri_cut
{
  TSRI_WHOLE,
  TSRI_ROWS_Q, TSRI_ROWS_KV, TSRI_ROWS_FF,
  TSRI_COLS_Q, TSRI_COLS_FF
};

enum
{
  TSRI_OPTIONAL = 1             /* absent is no error: NULL */
};

/* The integer key ARCH.SUFFIX in 1 .. MAX (DEF when absent and DEF >= 0;
   an error naming the key when absent and DEF < 0).  */
void tsri_key_count (struct tsri_loader *ld, const char *suffix,
                     int64_t def, int64_t max, int64_t *v);
/* The float key ARCH.SUFFIX (DEF when absent).  */
void tsri_key_float (struct tsri_loader *ld, const char *suffix, float def,
                     float *v);
/* Whether the file has key ARCH.SUFFIX.  */
bool tsri_key_present (const struct tsri_loader *ld, const char *suffix);
/* The keys of a mixture of experts into the hyper-parameters:
   ARCH.expert_count (absent or 0: none, unless REQUIRED) and
   ARCH.expert_used_count (1 .. expert_count).  */
void tsri_key_experts (struct tsri_loader *ld, bool required);
/* ARCH.expert_feed_forward_length into n_ff_exp, by default n_ff /
   n_expert_used (the Qwen mixtures).  */
void tsri_key_expert_ff (struct tsri_loader *ld);
/* ARCH.attention.sliding_window when the file has it: every layer
   attends within that many positions (Mistral, phi3).  */
void tsri_key_window_all (struct tsri_loader *ld);
/* The error of a malformed file, naming what is wrong.  */
void tsri_fail (struct tsri_loader *ld, int status, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__ ((format (printf, 3, 4)))
#endif
  ;

/* Layer IL's tensor "blk.IL.WHAT" of shape NE0 x NE1 (NE1 0: a vector,
   which must be f32), cut as CUT for tensor parallelism; NULL when
   absent with TSRI_OPTIONAL in FLAGS, else an error naming it.  */
tsr_tensor *tsri_want (struct tsri_loader *ld, int64_t il, const char *what,
                       int64_t ne0, int64_t ne1, enum tsri_cut cut,
                       unsigned flags);
/* Layer IL's experts "blk.IL.WHAT", [NE0, NE1, n_expert].  */
tsr_tensor *tsri_want_experts (struct tsri_loader *ld, int64_t il,
                               const char *what, int64_t ne0, int64_t ne1);
/* Whether the file has layer IL's tensor WHAT.  */
bool tsri_has (const struct tsri_loader *ld, int64_t il, const char *what);
/* The common attention tensors of layer IL: attn_norm, attn_q, attn_k,
   attn_v (with biases when BIAS; optional ones when the file has
   blk.0.attn_q.bias and BIAS is false is an error), attn_output; and
   with QK_NORM attn_q_norm, attn_k_norm.  */
void tsri_want_attention (struct tsri_loader *ld, int64_t il,
                          struct tsri_layer *l, bool bias, bool qk_norm);
/* ffn_norm and the gated feed-forward: ffn_gate, ffn_up, ffn_down.  */
void tsri_want_ffn (struct tsri_loader *ld, int64_t il,
                    struct tsri_layer *l);
/* Gemma's norms after the attention and the feed-forward:
   post_attention_norm and post_ffw_norm.  */
void tsri_want_post_norms (struct tsri_loader *ld, int64_t il,
                           struct tsri_layer *l);
/* ffn_norm, the router ffn_gate_inp and the experts
   ffn_{gate,up,down}_exps.  */
void tsri_want_moe (struct tsri_loader *ld, int64_t il,
                    struct tsri_layer *l);

/* Building: one layer's graph.  */
struct tsri_build
{
  const tsr_model *m;
  tsr_context *ctx;
  const struct tsri_graph_inputs *in;
  tsr_tensor *k_cache, *v_cache;        /* this layer's */
  int n_kv;
  tsr_graph *g;                 /* the graph the nodes go to: blocks may
                                   add nodes early, to order them
                                   (tsr_graph_add) */
};

/* The activations of a feed-forward's gate.  */
enum tsri_act { TSRI_SILU, TSRI_GELU };

/* rms_norm (X) * W.  */
tsr_tensor *tsri_norm (struct tsri_build *b, tsr_tensor *x, tsr_tensor *w);
/* Self-attention of layer L on the normed activations H: q, k, v (fused
   or not, with biases, per-head norms), rope at L's base and scale,
   the cache rows, the mask (the sliding window's when L->swa), the
   model's query scale, soft-capping of the scores when the model has
   it, the output projection (summed over tensor-parallel ranks).  */
tsr_tensor *tsri_attention (struct tsri_build *b, const struct tsri_layer *l,
                            tsr_tensor *h);
/* The gated feed-forward of L on H: down (act (gate h) * up h), or with
   a fused up (gate NULL) its two halves.  */
tsr_tensor *tsri_ffn (struct tsri_build *b, const struct tsri_layer *l,
                      tsr_tensor *h, enum tsri_act act);
/* The mixture of experts of L on H: the router's softmax, the top
   n_expert_used experts (their weights normalized when the model says
   so), each a SwiGLU feed-forward, summed with their weights; plus the
   shared expert, gated by sigmoid (gate_inp_shexp . h), when L has
   one.  Only the selected experts' rows are read.  */
tsr_tensor *tsri_moe (struct tsri_build *b, const struct tsri_layer *l,
                      tsr_tensor *h);
/* The usual pre-norm block: x + attention (norm x), then + ffn (norm x)
   with a SwiGLU feed-forward, or the experts when L has them.  */
tsr_tensor *tsri_block (struct tsri_build *b, const struct tsri_layer *l,
                        tsr_tensor *x);

/* Norms before and after each part (Gemma): x + norm (attention (norm
   x)) * attn_post_norm, then the same with the gated feed-forward of
   activation ACT and ffn_post_norm.  */
tsr_tensor *tsri_block_sandwich (struct tsri_build *b,
                                 const struct tsri_layer *l, tsr_tensor *x,
                                 enum tsri_act act);

/* An architecture.  */
struct tsri_arch
{
  const char *name;             /* general.architecture */
  enum tsr_rope_mode rope;
  float eps;                    /* when the file has no epsilon */
  /* Keys beyond the common ones, and the settings they give (the
     model's hyper-parameters, embd_scale, attn_scale, moe_norm, each
     layer's swa, rope_base, rope_scale).  NULL: none.  */
  void (*hparams) (struct tsri_loader *ld);
  /* Declare layer IL's tensors into L.  */
  void (*tensors) (struct tsri_loader *ld, int64_t il, struct tsri_layer *l);
  /* Layer L of the forward pass on X.  */
  tsr_tensor *(*layer) (struct tsri_build *b, const struct tsri_layer *l,
                        tsr_tensor *x);
  /* Layers cannot be cut over tensor-parallel ranks (fused matrices,
     experts): that split is refused.  */
  bool no_tensor_split;
};

/* The architecture named NAME, or NULL; the list of names, for
   messages ("llama, qwen2, ...").  */
const struct tsri_arch *tsri_arch_find (const char *name);
const char *tsri_arch_names (void);

#endif /* TESSERA_MODEL_ARCH_H */
