/* tessera/model.h - running language models stored as GGUF files.
 *
 * Three layers an embedder can use separately:
 *
 *   tsr_model     a model file's hyper-parameters and weights, placed
 *                 on one or more backends (loading: model-load.c);
 *   tsr_session   a key/value cache and the graphs that run batches of
 *                 tokens through the model (model-graph.c,
 *                 model-session.c);
 *   tsr_sampler   choosing the next token from logits (sample.c).
 *
 * Architectures (general.architecture), one file each in model/:
 * "llama" (Llama 2 and 3, TinyLlama, SmolLM...: rope on adjacent
 * pairs, grouped key/value heads, linear rope scaling and Llama 3
 * frequency factors where the file has them; Mistral's sliding window;
 * Mixtral's experts), "qwen2" (biases on q, k and v, rope on split
 * halves), "qwen2moe" (experts and a gated shared expert), "qwen3"
 * (per-head norms of q and k), "qwen3moe", "gemma2" (scaled
 * embeddings, GeGLU, norms after attention and feed-forward,
 * soft-capping, sliding window on alternate layers), "gemma3" (q/k
 * norms, local and global rope bases, five sliding-window layers in
 * six) and "phi3" (fused qkv and gate/up matrices).  Every one has an
 * optional output.weight, tied to token_embd.weight when absent.  Keys
 * and tensor names are those of the files this field ships:
 * ARCH.embedding_length, ARCH.attention.head_count_kv,
 * blk.N.attn_q.weight, output_norm.weight...  The manual's chapter
 * "Running a model" lists each architecture's keys and tensors;
 * tessera-model(3) summarizes them.
 *
 * Weights are mapped from the file once: a host backend computes on
 * the mapping in place, any other backend gets one copy.
 *
 * Threads.  A loaded model is read-only: any number of sessions, on
 * any threads, may run on one model at once.  Each session computes on
 * backends of its own (tsr_session_backend: clones of the model's, the
 * same devices and parameters, reading the model's weights in place),
 * so sessions never share a stream, a thread pool or a device graph.
 * A session and a sampler are one thread's at a time (use a session
 * from several threads only with your own lock).  Free every session
 * before the model.  A model split over several processes
 * (tsr_model_params.comm) runs one session at a time: the ranks decode
 * in step.  The vocabulary (tessera/vocab.h) may be shared as well.  */
#ifndef TESSERA_MODEL_H
#define TESSERA_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <tessera/backend.h>
#include <tessera/comm.h>
#include <tessera/gguf.h>
#include <tessera/ops.h>
#include <tessera/sched.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a model file says about its shape.  */
struct tsr_model_hparams
{
  char arch[32];               /* general.architecture */
  int64_t n_vocab;             /* rows of token_embd.weight */
  int64_t n_ctx_train;         /* ARCH.context_length */
  int64_t n_embd;              /* ARCH.embedding_length */
  int64_t n_layer;             /* ARCH.block_count */
  int64_t n_head;              /* ARCH.attention.head_count */
  int64_t n_head_kv;           /* ARCH.attention.head_count_kv */
  int64_t n_ff;                /* ARCH.feed_forward_length */
  int64_t head_dim;            /* ARCH.attention.key_length, or
                                  n_embd / n_head */
  int64_t n_rot;               /* ARCH.rope.dimension_count, or head_dim */
  float norm_eps;              /* ARCH.attention.layer_norm_rms_epsilon */
  float rope_freq_base;        /* ARCH.rope.freq_base (10000) */
  float rope_freq_scale;       /* 1 / ARCH.rope.scaling.factor for
                                  linear scaling, else 1 */
  enum tsr_rope_mode rope_mode;
  bool rope_freqs;             /* rope_freqs.weight present */
  bool tied_output;            /* no output.weight: token_embd reused */
  bool qkv_bias;               /* blk.N.attn_{q,k,v}.bias present */
  /* Mixture of experts (0 without): ARCH.expert_count,
     ARCH.expert_used_count, the rows of each expert's feed-forward
     (ARCH.expert_feed_forward_length, or n_ff) and of the shared
     expert's (qwen2moe; 0: none).  */
  int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
  /* ARCH.attention.sliding_window: the positions a sliding-window
     layer attends to, its own included (0: no such layer).  */
  int64_t n_swa;
  /* gemma2's soft-capping, c tanh (x / c), of the attention scores and
     of the logits (0: none).  */
  float attn_softcap, final_softcap;
};

typedef struct tsr_model tsr_model;

/* How the processes of a communicator share a model.  */
enum tsr_model_split
{
  TSR_SPLIT_NONE = 0,   /* every process runs the whole model */
  /* Tensor parallel: each rank holds 1/N of the attention heads (with
     their key/value heads: N must divide the KV heads) and of the
     feed-forward rows; q, k, v, gate and up are split by rows, the
     attention output and down by columns, each followed by one
     all_reduce; the output matrix by rows with an all_gather of the
     logits (when N divides the vocabulary; else every rank computes
     them whole).  */
  TSR_SPLIT_TENSOR,
  /* Pipeline parallel: each rank holds a contiguous 1/N of the layers
     (the first the embedding, the last the output); activations go
     from rank to rank with send/recv, a batch of several tokens in N
     micro-batches so that the ranks work at once.  */
  TSR_SPLIT_PIPELINE
};

/* How to load a model.  A zero-filled struct (or NULL) means: the best
   device of the machine, with the CPU behind it.  */
/* tsr_model_params.gpu_layers: every layer on the first backend.  */
#define TSR_GPU_LAYERS_ALL (-1)

struct tsr_model_params
{
  /* Backends in priority order (the caller keeps them alive until the
     model and its sessions are freed); NULL to let the model open the
     best device and, when that is no CPU, the CPU after it.  */
  tsr_backend *const *backends;
  int n_backends;
  /* With two or more backends: the last GPU_LAYERS layers (and the
     output, when there is at least one) go to backends[0], the others to
     backends[1].  TSR_GPU_LAYERS_ALL (any negative number; the default
     of tsr_model_params_default) or at least the layer count: every
     layer on backends[0]; 0: none (every layer on backends[1]), as
     tessera-run's --gpu-layers=0.  With one backend, every layer is on
     it.  */
  int gpu_layers;
  /* Copy host weights out of the mapping instead of computing on it.  */
  bool no_mmap;
  /* Several processes: with a communicator (tessera/comm.h, kept alive
     by the caller until the model and its sessions are freed) and a
     split other than NONE, every rank of COMM loads the same file with
     the same split and holds only its share of the weights (read from
     the file by offset, never whole); sessions then decode together:
     every rank must call tsr_session_decode with the same tokens, and
     every rank receives the logits.  Errors, the same on every rank: a
     shape the split cannot cut, ranks with different files or
     splits.  */
  tsr_comm *comm;
  enum tsr_model_split split;
  /* Keep weight matrices out of the devices' extra buffer types
     (tsr_device_extra_buffer_types).  By default the matrices placed
     on a CPU that CPU_REPACK repacks (tsr_buffer_type_repacks: q4_0,
     q8_0 with VNNI, q4_K with AVX-512) are copied there (rows interleaved for its
     integer dots: faster prompts and batches, the same products up to
     f32 rounding); the rest stay mapped.  */
  bool no_repack;
};

/* Load the model file PATH.  NULL on failure with tsr_last_error()
   naming the key or tensor at fault: an architecture other than the
   supported ones, a missing hyper-parameter or tensor, a tensor of the
   wrong shape, weights larger than a device's free memory (said with
   the numbers before anything is copied).  */
tsr_model *tsr_model_load (const char *path,
                           const struct tsr_model_params *params);
/* The parameters a NULL PARAMS stands for: the best device and the
   CPU, every layer on the first (TSR_GPU_LAYERS_ALL), mapped weights,
   repacking, one process.  Start from these and change what you need:
   a zero-initialized struct means gpu_layers 0 (no layer on the first
   backend).  */
struct tsr_model_params tsr_model_params_default (void);
void tsr_model_free (tsr_model *model);

const struct tsr_model_hparams *tsr_model_get_hparams (const tsr_model *m);
/* The open file (keys, the tokenizer), valid while the model lives.  */
const tsr_gguf *tsr_model_gguf (const tsr_model *m);
/* Backends the model uses (its own when it opened them): where its
   weights were loaded.  Sessions compute on clones of them
   (tsr_session_backend).  */
int tsr_model_n_backends (const tsr_model *m);
tsr_backend *tsr_model_backend (const tsr_model *m, int i);
/* Which backend (index) holds layer IL's weights; the output's with
   IL == n_layer.  -1 for a bad IL.  */
int tsr_model_layer_backend (const tsr_model *m, int64_t il);
/* Bytes of weights one generated token reads: every weight matrix and
   vector once, plus one row of the token embedding (of a split model,
   what this rank holds).  */
uint64_t tsr_model_bytes_per_token (const tsr_model *m);
/* Parameters (elements of every weight tensor).  */
uint64_t tsr_model_n_params (const tsr_model *m);
/* A one-line description: "llama, 16 layers, n_embd 2048, ... q4_0".  */
const char *tsr_model_describe (const tsr_model *m);

/* Sessions: a key/value cache of N_CTX positions and the graphs that
   feed tokens through the model.  */

typedef struct tsr_session tsr_session;

struct tsr_session_params
{
  int n_ctx;              /* positions in the cache (0: 4096, at most
                             the training context) */
  int n_batch;            /* most tokens per tsr_session_decode (0: 512) */
  int n_threads;          /* CPU threads (0: the backend's default) */
  tsr_type kv_type;       /* cache elements: TSR_TYPE_F16 (the default
                             of tsr_session_params_default) or
                             TSR_TYPE_F32 (twice the memory, no rounding
                             of keys and values); another type is
                             refused (TSR_ERR_TYPE) */
  int n_ubatch;           /* most tokens one graph computes: a larger
                             batch is cut into micro-batches (0:
                             n_batch) */
  int n_pipeline;         /* micro-batches in flight when the model's
                             layers or caches are on several backends
                             of this process (0: 2; 1: one at a time;
                             at most 8), each with its own graph and
                             activations */
};

tsr_session *tsr_session_new (tsr_model *model,
                              const struct tsr_session_params *params);
/* The parameters a NULL PARAMS stands for: 4096 positions, batches of
   512, an f16 cache.  A zero-initialized struct asks for an f32 cache
   (kv_type 0 is TSR_TYPE_F32): start from these.  */
struct tsr_session_params tsr_session_params_default (void);
void tsr_session_free (tsr_session *s);

/* Run N_TOKENS tokens (1 <= n <= n_batch) of sequence 0 at the
   positions after its last one in the cache, and store their keys and
   values.  When LOGITS is not NULL it receives n_vocab floats: for
   every one of the tokens when ALL_LOGITS, else for the last only.
   Errors: an id outside the vocabulary, a full cache (TSR_ERR_STATE),
   a backend failure.  */
int tsr_session_decode (tsr_session *s, const int32_t *tokens, int n_tokens,
                        float *logits, bool all_logits);
/* Sequence 0's positions: its last one plus 1 (0 when it has none).  */
int tsr_session_n_past (const tsr_session *s);

/* Several sequences (users, continuations of one prompt) in one
   session and one cache: each cache cell holds one position's keys and
   values and the set of sequences that see it, so a token attends to
   the cells of its own sequence only, at positions up to its own.  A
   batch may mix the rows of several sequences: their products are
   computed together (one weight read for all), their attention apart.
   Sequences are numbered 0 to TSR_SEQ_MAX - 1.  */
#define TSR_SEQ_MAX 64

/* One batch of tsr_session_decode_batch: N_TOKENS rows, row I the
   token TOKENS[I] of sequence SEQ[I] (NULL: all of sequence 0) at
   position POS[I] (NULL: after the sequence's last position, in row
   order); its logits are wanted where LOGITS[I] is true (NULL: the last
   row only).  A sequence's rows in a batch have increasing positions,
   all after its last one in the cache.  */
struct tsr_batch
{
  int n_tokens;
  const int32_t *tokens;
  const int32_t *seq;
  const int32_t *pos;
  const bool *logits;
};
/* Run BATCH (1 <= n_tokens <= n_batch): store each row's keys and
   values in a free cell (the lowest above its sequence's others) and,
   when LOGITS is not NULL, write n_vocab floats for each row whose
   logits are wanted, in row order.  On the CPU each row's logits are
   those of its sequence decoded alone, bit for bit, for quantized
   files in micro-batches of at most 64 rows (the manual says when).
   Errors
   as tsr_session_decode's, and TSR_ERR_INVALID_ARG for a sequence out
   of range or positions that do not follow.  */
int tsr_session_decode_batch (tsr_session *s, const struct tsr_batch *batch,
                              float *logits);
/* Sequence SEQ's last position, -1 when it has none.  */
int tsr_session_seq_pos_max (const tsr_session *s, int seq);
/* Forget positions [P0, P1) of sequence SEQ (P1 < 0: to its end; SEQ
   -1: of every sequence); a cell no sequence sees any more is free.  */
int tsr_session_seq_remove (tsr_session *s, int seq, int p0, int p1);
/* Make sequence DST see exactly the cells of sequence SRC (its prompt,
   say), without computing anything: DST's own cells are forgotten
   first.  Both go on from there apart, as different users would.  */
int tsr_session_seq_fork (tsr_session *s, int src, int dst);
/* Context shift: drop cache positions [KEEP, KEEP + N_DISCARD) and move
   the later ones down by N_DISCARD, so that generation can go on in a
   full cache.  Keys are rotated to their new positions with each
   layer's rope (not recomputed: the logits that follow are those of
   the kept tokens at the new positions, up to the rounding of the
   cache's type), values moved; n_past shrinks by N_DISCARD.  Over
   several processes every rank calls it with the same arguments.
   Only while the cache holds sequence 0 alone, in the order its
   positions were decoded (TSR_ERR_STATE otherwise).  Errors: KEEP < 0,
   N_DISCARD < 1 or KEEP + N_DISCARD > n_past (TSR_ERR_INVALID_ARG); a
   failure of the devices, after which the cache holds the first KEEP
   positions only.  */
int tsr_session_shift (tsr_session *s, int keep, int n_discard);
int tsr_session_n_ctx (const tsr_session *s);
/* Forget the cache's contents, every sequence's (keep its memory and
   graphs).  */
void tsr_session_reset (tsr_session *s);
/* The scheduler that runs the session's graphs, owned by the session:
   where the last batch shape's nodes run (tsr_sched_get_backend), its
   splits, copies and timings (tsr_sched_get_stats, tsr_sched_print).
   Its plan is the last batch shape's.  */
tsr_sched *tsr_session_sched (tsr_session *s);
/* The session's backend I (0 <= I < tsr_model_n_backends): the clone of
   the model's backend I it computes on (counters, threads), owned by
   the session; NULL for a bad I.  */
tsr_backend *tsr_session_backend (const tsr_session *s, int i);
/* Micro-batches in flight (1 when the model's work is on one backend)
   and the most tokens one graph computes.  The scheduler above is the
   first slot's; each slot has its own.  */
int tsr_session_n_pipeline (const tsr_session *s);
int tsr_session_n_ubatch (const tsr_session *s);

/* Sampling.  */

struct tsr_sampler_params
{
  float temp;             /* <= 0: greedy (the largest logit) */
  int top_k;              /* <= 0: all tokens */
  float top_p;            /* >= 1 or <= 0: no nucleus cut */
  uint64_t seed;
};

typedef struct tsr_sampler tsr_sampler;

tsr_sampler *tsr_sampler_new (const struct tsr_sampler_params *params);
void tsr_sampler_free (tsr_sampler *s);
/* The next token from N_VOCAB logits.  Ties go to the lower id;
   NaN logits are never chosen (-1 when all are NaN).  With a
   temperature, +inf logits share all the probability equally and -inf
   ones get none (unless every candidate is -inf: then they share it);
   the first non-finite logit a sampler meets is reported with
   tsr_log (TSR_LOG_WARN).  */
int32_t tsr_sampler_sample (tsr_sampler *s, const float *logits,
                            int64_t n_vocab);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_MODEL_H */
