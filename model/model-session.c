/* model-session.c - key/value caches and running batches of tokens.
 *
 * Owns tsr_session: its own backends (tsr_backend_clone of the
 * model's: the same devices and memory, so it reads the model's
 * weights in place, but streams, thread pools and device graphs of its
 * own, which lets sessions on several threads share one model), one
 * cache tensor pair per layer, placed on the backend of that layer's
 * weights, and the pipeline slots that run batches: each a scheduler
 * over the session's backends and the graph of its last batch shape.  The graph of a batch shape is built and
 * allocated once and reused while the shape stays the same: the number
 * of cache positions attended to is rounded up to KV_STEP (unused
 * positions are masked), so generating token after token rebuilds the
 * graph only every KV_STEP tokens.
 *
 * A batch larger than n_ubatch is cut into micro-batches.  When the
 * model's layers are on several backends, micro-batches go round the
 * slots and are queued without waiting (tsr_sched_graph_compute_async):
 * while a device computes one micro-batch's layers, the CPU computes
 * the next one's.  A slot is waited for before it takes the next
 * micro-batch, and every slot before decode returns.
 *
 * The cache is a table of cells, one position's keys and values each,
 * with the position and the set of sequences that see it (a bit per
 * sequence: a fork shares cells).  A batch's row takes the lowest free
 * cell above its sequence's others (the lowest free one when none is
 * left above), so one sequence decoded alone fills cells 0, 1, 2... in
 * the order of its positions, as a linear cache would, and every
 * sequence's cells stay in that order; the mask lets a row
 * see the cells of its sequence at positions up to its own.  The
 * positions attended to are the cells up to the highest used one,
 * rounded up to KV_STEP.  */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model-lib.h"
#include "model-impl.h"

enum { KV_STEP = 256, DEFAULT_CTX = 4096, DEFAULT_BATCH = 512,
       MAX_SLOTS = 8, DEFAULT_SLOTS = 2 };

/* A pipeline slot: a scheduler, the graph of its last batch shape, and
   the micro-batch it runs.  */
struct slot
{
  tsr_sched *sched;
  tsr_context *gctx;
  tsr_graph *graph;
  struct tsri_graph_inputs in;
  int g_tokens, g_kv, g_out;
  bool busy;                    /* a micro-batch queued, not waited for */
  int first;                    /* its first row in the decode's batch */
  float *dst;                   /* where its logits go, or NULL */
  int n_out;
};

/* A cache cell: free when SEQS is 0.  */
struct cell
{
  int32_t pos;
  uint64_t seqs;                /* bit S: sequence S sees it */
};

struct tsr_session
{
  tsr_model *m;
  /* Its own backends, clones of the model's (same devices, memory and
     parameters): sessions on several threads never share a backend.  */
  tsr_backend *be[TSRI_MODEL_MAX_BACKENDS];
  int n_ctx, n_batch, n_ubatch;
  struct cell *cells;           /* n_ctx */
  int seq_pos[TSR_SEQ_MAX];     /* each sequence's last position, or -1 */
  int seq_hi[TSR_SEQ_MAX];      /* and its highest cell, or -1 */
  int used_hi;                  /* the highest used cell + 1 */
  int free_lo;                  /* no free cell below it */
  /* The batch being decoded: each row's sequence, position and cell
     (n_batch each), whether its logits are wanted; FAIL_ROW, the first
     row of a failed micro-batch (n_batch: none).  */
  int32_t *bseq, *bpos, *bcell;
  bool *bflags;
  int fail_row;
  int n_taken;                  /* rows whose cells are taken */
  tsr_context *cache_ctx[TSRI_MODEL_MAX_BACKENDS];
  tsr_buffer *cache_buf[TSRI_MODEL_MAX_BACKENDS];
  tsr_tensor **k, **v;          /* per layer */
  tsr_buffer_type *staging;     /* set for the communicator, or NULL */
  struct slot slots[MAX_SLOTS];
  int n_slots, next;            /* NEXT: the slot of the next batch */
  /* Host staging of the inputs (the mask grows to the largest batch
     shape used, not n_batch x n_ctx).  */
  int32_t *ibuf;
  float *mask;
  size_t mask_cap;
};

static void recount (tsr_session *s);

/* Can backend B write (set_rows) a cache of TYPE and attend over it
   (flash_attn_ext)?  Asked with nodes of the real shapes.  */
static bool
cache_ok (const tsr_session *s, int b, tsr_type type)
{
  const struct tsr_model_hparams *hp = &s->m->hp;
  const struct tsri_split *sp = &s->m->split;
  tsr_backend *be = s->be[b];
  tsr_context *c = tsr_context_new (true);
  tsr_tensor *cache = tsr_new_tensor_3d (c, type, hp->head_dim, s->n_ctx,
                                         sp->n_head_kv);
  tsr_tensor *rows = tsr_new_tensor_3d (c, TSR_TYPE_F32, hp->head_dim, 1,
                                        sp->n_head_kv);
  tsr_tensor *idx = tsr_new_tensor_2d (c, TSR_TYPE_I32, 1, sp->n_head_kv);
  tsr_tensor *q = tsr_new_tensor_3d (c, TSR_TYPE_F32, hp->head_dim, 1,
                                     sp->n_head);
  tsr_tensor *mask = tsr_new_tensor_2d (c, TSR_TYPE_F32, s->n_ctx, 1);
  tsr_tensor *w = tsr_set_rows (c, cache, rows, idx);
  tsr_tensor *a = tsr_flash_attn_ext (c, q, cache, cache, mask, 1.0f);
  bool ok = w && a && tsr_backend_supports_op (be, w)
            && tsr_backend_supports_op (be, a);
  tsr_context_free (c);
  return ok;
}

/* Where a layer whose weights are on backend B keeps its cache: there
   when B can use it, else on the first backend that can (-1: none).  */
static int
cache_backend (const tsr_session *s, int b, tsr_type type)
{
  if (cache_ok (s, b, type))
    return b;
  for (int i = 0; i < s->m->n_backends; i++)
    if (i != b && cache_ok (s, i, type))
      return i;
  return -1;
}

static int
make_caches (tsr_session *s, tsr_type type)
{
  const tsr_model *m = s->m;
  const struct tsr_model_hparams *hp = &m->hp;
  s->k = calloc ((size_t) hp->n_layer, sizeof *s->k);
  s->v = calloc ((size_t) hp->n_layer, sizeof *s->v);
  if (!s->k || !s->v)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "session: out of memory");
  /* The layers this rank holds, with its key/value heads.  */
  for (int64_t il = m->split.layer0; il < m->split.layer1; il++)
    {
      int b = cache_backend (s, m->layers[il].backend, type);
      if (b < 0)
        return tsr_set_error (TSR_ERR_UNSUPPORTED, "session: no backend "
                              "can write and read a %s key/value cache",
                              tsr_type_name (type));
      if (!s->cache_ctx[b] && !(s->cache_ctx[b] = tsr_context_new (true)))
        return tsr_set_error (TSR_ERR_NO_MEMORY, "session: out of memory");
      s->k[il] = tsr_new_tensor_3d (s->cache_ctx[b], type, hp->head_dim,
                                    s->n_ctx, m->split.n_head_kv);
      s->v[il] = tsr_new_tensor_3d (s->cache_ctx[b], type, hp->head_dim,
                                    s->n_ctx, m->split.n_head_kv);
      if (!s->k[il] || !s->v[il])
        return tsr_last_status ();
      tsr_set_name (s->k[il], "cache_k");
      tsr_set_name (s->v[il], "cache_v");
    }
  for (int b = 0; b < m->n_backends; b++)
    if (s->cache_ctx[b])
      {
        s->cache_buf[b] = tsr_context_alloc_tensors
          (s->cache_ctx[b], tsr_backend_buffer_type (s->be[b]));
        if (!s->cache_buf[b])
          return tsr_last_status ();
        /* Masked positions are still multiplied: keep them finite.  */
        tsr_buffer_clear (s->cache_buf[b], 0);
      }
  return TSR_OK;
}

static int
session_init (tsr_session *s, const struct tsr_session_params *p)
{
  const struct tsr_model_hparams *hp = &s->m->hp;
  s->n_ctx = p && p->n_ctx > 0 ? p->n_ctx : DEFAULT_CTX;
  if (s->n_ctx > hp->n_ctx_train)
    s->n_ctx = (int) hp->n_ctx_train;
  s->n_batch = p && p->n_batch > 0 ? p->n_batch : DEFAULT_BATCH;
  if (s->n_batch > s->n_ctx)
    s->n_batch = s->n_ctx;
  if (p && (p->n_ubatch < 0 || p->n_pipeline < 0
            || p->n_pipeline > MAX_SLOTS))
    return tsr_set_error (TSR_ERR_INVALID_ARG, "session: n_ubatch %d, "
                          "n_pipeline %d (0 to %d)", p->n_ubatch,
                          p->n_pipeline, MAX_SLOTS);
  tsr_type kv = p ? p->kv_type : TSR_TYPE_F16;
  if (kv != TSR_TYPE_F16 && kv != TSR_TYPE_F32)
    return tsr_set_error (TSR_ERR_TYPE, "session: cache type %s is not "
                          "supported (f16 and f32 are)", tsr_type_name (kv));
  for (int b = 0; b < s->m->n_backends; b++)
    if (!(s->be[b] = tsr_backend_clone (s->m->backends[b])))
      return tsr_last_status ();
  if (p && p->n_threads > 0)
    for (int b = 0; b < s->m->n_backends; b++)
      if (tsr_device_get_type (tsr_backend_device (s->be[b]))
          == TSR_DEVICE_CPU)
        tsr_backend_set_n_threads (s->be[b], p->n_threads);
  s->ibuf = malloc ((size_t) s->n_batch * (size_t) (hp->n_head_kv + 3)
                    * sizeof *s->ibuf);
  s->cells = calloc ((size_t) s->n_ctx, sizeof *s->cells);
  s->bseq = malloc ((size_t) s->n_batch * 3 * sizeof *s->bseq);
  s->bflags = malloc ((size_t) s->n_batch * sizeof *s->bflags);
  if (!s->ibuf || !s->cells || !s->bseq || !s->bflags)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "session: out of memory");
  s->bpos = s->bseq + s->n_batch;
  s->bcell = s->bpos + s->n_batch;
  recount (s);                  /* every cell free */
  int st = make_caches (s, kv);
  /* Over several processes, the communicator's backend runs the
     communication ops.  */
  tsr_backend *be[TSRI_MODEL_MAX_BACKENDS + 1];
  int n_be = s->m->n_backends;
  memcpy (be, s->be, sizeof *be * (size_t) n_be);
  if (s->m->split.comm && s->m->split.size > 1)
    {
      /* Device tensors go to the other ranks through the first GPU's
         pinned host memory.  */
      for (int b = 0; b < n_be && !s->staging; b++)
        {
          tsr_device *dev = tsr_backend_device (be[b]);
          if (tsr_device_get_type (dev) != TSR_DEVICE_CPU)
            s->staging = tsr_device_host_buffer_type (dev);
        }
      if (s->staging && st == TSR_OK)
        st = tsr_comm_set_host_buffer_type (s->m->split.comm, s->staging);
      be[n_be++] = tsr_comm_backend (s->m->split.comm);
    }
  if (st == TSR_OK && n_be > TSR_SCHED_MAX_BACKENDS)
    st = tsr_set_error (TSR_ERR_INVALID_ARG, "session: %d backends and "
                        "the communicator's, at most %d in all",
                        s->m->n_backends, TSR_SCHED_MAX_BACKENDS);
  /* Micro-batches and the slots they go round: several only when the
     work spans several backends (layers or caches) in this process; a
     pipeline of ranks keeps its own micro-batches (one per rank).  */
  bool spans = false;
  for (int64_t il = s->m->split.layer0; il < s->m->split.layer1; il++)
    spans |= s->m->layers[il].backend != s->m->layers[s->m->split.layer0]
                                         .backend;
  for (int b = 1; b < s->m->n_backends; b++)
    spans |= s->cache_ctx[b] && s->cache_ctx[0];
  bool ranks = s->m->split.comm && s->m->split.size > 1;
  s->n_ubatch = p && p->n_ubatch > 0 ? p->n_ubatch : s->n_batch;
  if (s->n_ubatch > s->n_batch)
    s->n_ubatch = s->n_batch;
  s->n_slots = ranks || !spans ? 1
               : p && p->n_pipeline > 0 ? p->n_pipeline : DEFAULT_SLOTS;
  for (int i = 0; i < s->n_slots && st == TSR_OK; i++)
    if (!(s->slots[i].sched = tsr_sched_new (be, n_be)))
      st = tsr_last_status ();
  return st;
}

tsr_backend *
tsr_session_backend (const tsr_session *s, int i)
{
  return s && i >= 0 && i < s->m->n_backends ? s->be[i] : NULL;
}

struct tsr_session_params
tsr_session_params_default (void)
{
  return (struct tsr_session_params) { .n_ctx = DEFAULT_CTX,
                                       .n_batch = DEFAULT_BATCH,
                                       .kv_type = TSR_TYPE_F16 };
}

tsr_session *
tsr_session_new (tsr_model *model, const struct tsr_session_params *params)
{
  if (!model)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "session: NULL model");
      return NULL;
    }
  tsr_session *s = calloc (1, sizeof *s);
  if (!s)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "session: out of memory");
      return NULL;
    }
  s->m = model;
  if (session_init (s, params) != TSR_OK)
    {
      char msg[512];
      tsr_status st = tsr_last_status ();
      snprintf (msg, sizeof msg, "%s", tsr_last_error ());
      tsr_session_free (s);
      tsr_set_error (st, "%s", msg);
      return NULL;
    }
  return s;
}

static void
drop_graph (struct slot *sl)
{
  tsr_context_free (sl->gctx);
  sl->gctx = NULL;
  sl->graph = NULL;
  sl->g_tokens = 0;
}

void
tsr_session_free (tsr_session *s)
{
  if (!s)
    return;
  for (int i = 0; i < MAX_SLOTS; i++)
    {
      tsr_sched_free (s->slots[i].sched);   /* waits for its work */
      drop_graph (&s->slots[i]);
    }
  if (s->staging)
    tsr_comm_set_host_buffer_type (s->m->split.comm, NULL);
  for (int b = 0; b < TSRI_MODEL_MAX_BACKENDS; b++)
    {
      tsr_buffer_free (s->cache_buf[b]);
      tsr_context_free (s->cache_ctx[b]);
      tsr_backend_free (s->be[b]);
    }
  free (s->k);
  free (s->v);
  free (s->ibuf);
  free (s->mask);
  free (s->cells);
  free (s->bseq);
  free (s->bflags);
  free (s);
}

/* SL's graph for N tokens over N_KV positions with N_OUT logits rows,
   built and allocated unless the last one had that shape (SL is idle).  */
static int
prepare_graph (tsr_session *s, struct slot *sl, int n, int n_kv, int n_out)
{
  if (sl->graph && sl->g_tokens == n && sl->g_kv == n_kv
      && sl->g_out == n_out)
    return TSR_OK;
  drop_graph (sl);
  tsr_sched_reset (sl->sched);
  if (!(sl->gctx = tsr_context_new (true)))
    return tsr_set_error (TSR_ERR_NO_MEMORY, "session: out of memory");
  int st = (sl->graph = tsr_graph_new (sl->gctx)) ? TSR_OK
                                                   : tsr_last_status ();
  if (st == TSR_OK)
    st = tsri_model_build (s->m, sl->gctx, s->k, s->v, n, n_kv, n_out,
                           &sl->in, sl->graph);
  if (st == TSR_OK)
    st = tsr_graph_build (sl->graph, sl->in.result);
  if (st == TSR_OK)
    st = tsr_sched_alloc_graph (sl->sched, sl->graph);
  if (st != TSR_OK)
    {
      drop_graph (sl);
      return st;
    }
  sl->g_tokens = n;
  sl->g_kv = n_kv;
  sl->g_out = n_out;
  return TSR_OK;
}

/* SL's inputs for rows [OFF, OFF + N) of the batch being decoded,
   whose cells are taken: positions, cells, masks (a row sees the cells
   of its sequence at positions up to its own; with a sliding window,
   the N_SWA positions up to its own), and the rows whose logits are
   wanted (N_OUT of them).  */
static int
set_inputs (tsr_session *s, const struct slot *sl, const int32_t *tokens,
            int off, int n, int n_kv, int n_out)
{
  const int64_t n_head_kv = s->m->split.n_head_kv;
  int32_t *pos = s->ibuf, *rows = pos + n, *out = rows + n * n_head_kv;
  const int64_t n_swa = s->m->hp.n_swa;
  const bool swa = sl->in.mask_swa != NULL;
  size_t need = (size_t) n * (size_t) n_kv * (swa ? 2 : 1);
  if (need > s->mask_cap)
    {
      float *p = realloc (s->mask, need * sizeof *p);
      if (!p)
        return tsr_set_error (TSR_ERR_NO_MEMORY, "session: out of memory");
      s->mask = p;
      s->mask_cap = need;
    }
  int k = 0;
  for (int i = 0; i < n; i++)
    {
      const int32_t p = s->bpos[off + i];
      const uint64_t bit = (uint64_t) 1 << s->bseq[off + i];
      pos[i] = p;
      for (int64_t h = 0; h < n_head_kv; h++)
        rows[h * n + i] = s->bcell[off + i];
      float *f = s->mask + (size_t) i * n_kv;
      float *w = s->mask + (size_t) n * n_kv + (size_t) i * n_kv;
      for (int j = 0; j < n_kv; j++)
        {
          const struct cell *c = &s->cells[j];
          bool see = (c->seqs & bit) && c->pos <= p;
          f[j] = see ? 0.0f : -INFINITY;
          /* The sliding window: the N_SWA positions up to the row's.  */
          if (swa)
            w[j] = see && (int64_t) p - c->pos < n_swa ? 0.0f : -INFINITY;
        }
      if (s->bflags[off + i] && k < n_out)
        out[k++] = i;
    }
  if (k == 0)
    out[0] = n - 1;             /* none wanted: the last row's */
  const struct tsri_graph_inputs *in = &sl->in;
  int st = in->tokens ? tsr_tensor_set (in->tokens, tokens, 0,
                                        sizeof *tokens * n) : TSR_OK;
  if (st == TSR_OK)
    st = tsr_tensor_set (in->pos, pos, 0, sizeof *pos * n);
  if (st == TSR_OK)
    st = tsr_tensor_set (in->kv_idx, rows, 0, sizeof *rows * n * n_head_kv);
  if (st == TSR_OK && in->mask)
    st = tsr_tensor_set (in->mask, s->mask, 0,
                         sizeof *s->mask * (size_t) n * n_kv);
  if (st == TSR_OK && swa)
    st = tsr_tensor_set (in->mask_swa, s->mask + (size_t) n * n_kv, 0,
                         sizeof *s->mask * (size_t) n * n_kv);
  if (st == TSR_OK && in->out_idx)
    st = tsr_tensor_set (in->out_idx, out, 0, sizeof *out * n_out);
  return st;
}

/* Recount what the cells say: each sequence's last position, the
   highest used cell, the lowest free one.  */
static void
recount (tsr_session *s)
{
  for (int q = 0; q < TSR_SEQ_MAX; q++)
    s->seq_pos[q] = s->seq_hi[q] = -1;
  s->used_hi = 0;
  s->free_lo = s->n_ctx;
  for (int j = 0; j < s->n_ctx; j++)
    {
      const struct cell *c = &s->cells[j];
      if (!c->seqs)
        {
          if (s->free_lo == s->n_ctx)
            s->free_lo = j;
          continue;
        }
      s->used_hi = j + 1;
      for (int q = 0; q < TSR_SEQ_MAX; q++)
        if (c->seqs >> q & 1)
          {
            if (c->pos > s->seq_pos[q])
              s->seq_pos[q] = c->pos;
            s->seq_hi[q] = j;
          }
    }
}

/* Free cells, at most: stops counting at LIMIT.  */
static int
free_cells (const tsr_session *s, int limit)
{
  int n = 0;
  for (int j = s->free_lo; j < s->n_ctx && n < limit; j++)
    n += !s->cells[j].seqs;
  return n;
}

/* Check batch B and fill the session's row arrays: sequences,
   positions (derived where B has none), logits flags.  */
static int
check_batch (tsr_session *s, const struct tsr_batch *b)
{
  const int n = b ? b->n_tokens : 0;
  if (!b)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "session: NULL batch");
  if (!b->tokens || n < 1 || n > s->n_batch)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "session: %d tokens in a "
                          "batch, 1 to %d allowed", n, s->n_batch);
  int next[TSR_SEQ_MAX];
  for (int q = 0; q < TSR_SEQ_MAX; q++)
    next[q] = s->seq_pos[q] + 1;
  for (int i = 0; i < n; i++)
    {
      if (b->tokens[i] < 0 || b->tokens[i] >= s->m->hp.n_vocab)
        return tsr_set_error (TSR_ERR_INVALID_ARG, "session: token %d (at "
                              "%d) is outside the vocabulary [0, %lld)",
                              b->tokens[i], i, (long long) s->m->hp.n_vocab);
      int q = b->seq ? b->seq[i] : 0;
      if (q < 0 || q >= TSR_SEQ_MAX)
        return tsr_set_error (TSR_ERR_INVALID_ARG, "session: sequence %d "
                              "(at %d) is not one of 0 to %d", q, i,
                              TSR_SEQ_MAX - 1);
      int p = b->pos ? b->pos[i] : next[q];
      if (p < next[q] || p == INT32_MAX)
        return tsr_set_error (TSR_ERR_INVALID_ARG, "session: position %d of "
                              "sequence %d (at %d) does not follow its last "
                              "one, %d", p, q, i, next[q] - 1);
      next[q] = p + 1;
      s->bseq[i] = q;
      s->bpos[i] = p;
      s->bflags[i] = b->logits ? b->logits[i] : i == n - 1;
    }
  int avail = free_cells (s, n);
  if (avail < n)
    return tsr_set_error (TSR_ERR_STATE, "session: the cache is full (%d "
                          "of %d cells free, %d more asked)", avail,
                          s->n_ctx, n);
  return TSR_OK;
}

/* N_OUT rows of SL's logits into DST, on every rank: a pipeline's last
   rank has them and broadcasts them.  */
static int
fetch_logits (tsr_session *s, const struct slot *sl, float *dst, int n_out)
{
  const struct tsri_split *sp = &s->m->split;
  size_t bytes = sizeof *dst * (size_t) n_out * (size_t) s->m->hp.n_vocab;
  int st = sl->in.logits ? tsr_tensor_get (sl->in.logits, dst, 0, bytes)
                         : TSR_OK;
  if (st == TSR_OK && sp->mode == TSR_SPLIT_PIPELINE && sp->size > 1)
    st = tsr_comm_broadcast (sp->comm, dst, bytes, sp->size - 1);
  return st;
}

/* Wait for SL's micro-batch, if any, and fetch its logits.  On a
   failure the cache holds nothing from its first position on.  */
static int
finish (tsr_session *s, struct slot *sl)
{
  if (!sl->busy)
    return TSR_OK;
  sl->busy = false;
  int st = tsr_sched_synchronize (sl->sched);
  if (st == TSR_OK && sl->dst)
    st = fetch_logits (s, sl, sl->dst, sl->n_out);
  if (st != TSR_OK && s->fail_row > sl->first)
    s->fail_row = sl->first;
  return st;
}

/* Queue rows [OFF, OFF + N) of the batch being decoded (tokens
   TOKENS), with N_OUT rows of logits for DST (may be NULL), in the next
   slot, after waiting for that slot's last micro-batch: each row takes
   the lowest free cell.  */
static int
queue_batch (tsr_session *s, const int32_t *tokens, int off, int n,
             int n_out, float *dst)
{
  struct slot *sl = &s->slots[s->next];
  int st = finish (s, sl);
  if (st != TSR_OK)
    return st;
  for (int i = 0; i < n; i++)
    {
      /* The lowest free cell above the sequence's others, so that its
         cells stay in the order of its positions (what a row's
         attention walks: the CPU's results are then those of the
         sequence alone); else, the cache being full above, the lowest
         free one.  */
      const int q = s->bseq[off + i];
      int j = s->seq_hi[q] + 1 > s->free_lo ? s->seq_hi[q] + 1 : s->free_lo;
      while (j < s->n_ctx && s->cells[j].seqs)
        j++;
      if (j == s->n_ctx)
        for (j = s->free_lo; s->cells[j].seqs; j++)
          ;                     /* check_batch counted enough free */
      s->cells[j].pos = s->bpos[off + i];
      s->cells[j].seqs = (uint64_t) 1 << q;
      s->bcell[off + i] = j;
      s->n_taken = off + i + 1;
      if (j == s->free_lo)
        s->free_lo = j + 1;
      if (j + 1 > s->used_hi)
        s->used_hi = j + 1;
      if (j > s->seq_hi[q])
        s->seq_hi[q] = j;
      if (s->bpos[off + i] > s->seq_pos[q])
        s->seq_pos[q] = s->bpos[off + i];
    }
  int n_kv = (s->used_hi + KV_STEP - 1) / KV_STEP * KV_STEP;
  if (n_kv > s->n_ctx)
    n_kv = s->n_ctx;
  st = prepare_graph (s, sl, n, n_kv, n_out);
  if (st == TSR_OK)
    st = set_inputs (s, sl, tokens, off, n, n_kv, n_out);
  if (st == TSR_OK)
    st = tsr_sched_graph_compute_async (sl->sched, sl->graph);
  if (st != TSR_OK)
    {
      if (s->fail_row > off)
        s->fail_row = off;
      return st;
    }
  sl->busy = true;
  sl->first = off;
  sl->dst = dst;
  sl->n_out = n_out;
  s->next = (s->next + 1) % s->n_slots;
  return TSR_OK;
}

int
tsr_session_decode_batch (tsr_session *s, const struct tsr_batch *b,
                          float *logits)
{
  if (!s)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "session: NULL session");
  int st = check_batch (s, b);
  if (st != TSR_OK)
    return st;
  const int n = b->n_tokens;
  /* A pipeline of ranks cuts a batch into one micro-batch per rank: the
     first rank computes the second while the next computes the first.
     In one process, micro-batches of n_ubatch tokens.  */
  const struct tsri_split *sp = &s->m->split;
  const size_t n_vocab = (size_t) s->m->hp.n_vocab;
  int chunk = n > s->n_ubatch ? s->n_ubatch : n;
  s->next = 0;          /* every slot is idle: a batch of one micro-batch
                           always uses the first, and its graph */
  s->fail_row = n;
  s->n_taken = 0;
  if (sp->mode == TSR_SPLIT_PIPELINE && sp->size > 1)
    chunk = (n + sp->size - 1) / sp->size;
  int outs = 0;
  for (int off = 0; off < n && st == TSR_OK; off += chunk)
    {
      int k = n - off < chunk ? n - off : chunk, n_out = 0;
      for (int i = off; i < off + k; i++)
        n_out += s->bflags[i];
      float *dst = logits && n_out ? logits + (size_t) outs * n_vocab : NULL;
      /* A micro-batch without wanted logits still computes its last
         row's (a graph needs a result; they are not fetched).  */
      st = queue_batch (s, b->tokens + off, off, k, n_out ? n_out : 1, dst);
      outs += n_out;
    }
  /* Every slot, oldest first; the first failure is the one returned
     (the cache then holds nothing from the failed micro-batch on).  */
  char msg[1024] = "";
  int first = st;
  if (st != TSR_OK)
    snprintf (msg, sizeof msg, "%s", tsr_last_error ());
  for (int i = 0; i < s->n_slots; i++)
    {
      int r = finish (s, &s->slots[(s->next + i) % s->n_slots]);
      if (r != TSR_OK && first == TSR_OK)
        {
          first = r;
          snprintf (msg, sizeof msg, "%s", tsr_last_error ());
        }
    }
  if (first != TSR_OK)
    {
      /* The rows from the failed micro-batch on that took cells (a
         micro-batch's all at once, before its graph ran): free them.  */
      for (int r = s->fail_row; r < s->n_taken; r++)
        s->cells[s->bcell[r]].seqs = 0;
      recount (s);
      /* The other ranks wait for this one's part of the batch: they end
         with its message (nothing when theirs ended this one).  */
      if (sp->comm && sp->size > 1)
        tsr_comm_fail (sp->comm, msg);
      tsr_set_error (first, "%s", msg);
    }
  return first;
}

int
tsr_session_decode (tsr_session *s, const int32_t *tokens, int n,
                    float *logits, bool all_logits)
{
  if (!s)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "session: NULL session");
  if (n < 1 || n > s->n_batch)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "session: %d tokens in a "
                          "batch, 1 to %d allowed", n, s->n_batch);
  /* Every row's logits: flags from the session's own array (check_batch
     copies them in place).  */
  for (int i = 0; i < n; i++)
    s->bflags[i] = all_logits || i == n - 1;
  struct tsr_batch b = { .n_tokens = n, .tokens = tokens,
                         .logits = s->bflags };
  return tsr_session_decode_batch (s, &b, logits);
}

int
tsr_session_seq_pos_max (const tsr_session *s, int seq)
{
  return s && seq >= 0 && seq < TSR_SEQ_MAX ? s->seq_pos[seq] : -1;
}

int
tsr_session_seq_remove (tsr_session *s, int seq, int p0, int p1)
{
  if (!s || seq < -1 || seq >= TSR_SEQ_MAX || p0 < 0
      || (p1 >= 0 && p1 < p0))
    return tsr_set_error (TSR_ERR_INVALID_ARG, "session: remove positions "
                          "[%d, %d) of sequence %d: a sequence is -1 (all) "
                          "to %d, positions 0 <= p0 <= p1 (p1 < 0: to the "
                          "end)", p0, p1, seq, TSR_SEQ_MAX - 1);
  const uint64_t bits = seq < 0 ? ~(uint64_t) 0 : (uint64_t) 1 << seq;
  for (int j = 0; j < s->n_ctx; j++)
    {
      struct cell *c = &s->cells[j];
      if ((c->seqs & bits) && c->pos >= p0 && (p1 < 0 || c->pos < p1))
        c->seqs &= ~bits;
    }
  recount (s);
  return TSR_OK;
}

int
tsr_session_seq_fork (tsr_session *s, int src, int dst)
{
  if (!s || src < 0 || src >= TSR_SEQ_MAX || dst < 0 || dst >= TSR_SEQ_MAX
      || src == dst)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "session: fork sequence %d "
                          "into %d: two different sequences of 0 to %d",
                          src, dst, TSR_SEQ_MAX - 1);
  const uint64_t from = (uint64_t) 1 << src, to = (uint64_t) 1 << dst;
  for (int j = 0; j < s->n_ctx; j++)
    {
      struct cell *c = &s->cells[j];
      c->seqs &= ~to;
      if (c->seqs & from)
        c->seqs |= to;
    }
  recount (s);
  return TSR_OK;
}

int
tsr_session_n_past (const tsr_session *s)
{
  return s ? s->seq_pos[0] + 1 : 0;
}

int
tsr_session_n_ctx (const tsr_session *s)
{
  return s ? s->n_ctx : 0;
}

tsr_sched *
tsr_session_sched (tsr_session *s)
{
  return s ? s->slots[0].sched : NULL;
}

int
tsr_session_n_pipeline (const tsr_session *s)
{
  return s ? s->n_slots : 0;
}

int
tsr_session_n_ubatch (const tsr_session *s)
{
  return s ? s->n_ubatch : 0;
}

int
tsr_session_shift (tsr_session *s, int keep, int n_discard)
{
  if (!s)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "session: NULL session");
  const int n_past = s->seq_pos[0] + 1;
  /* The rows move in the cache: only a cache that holds sequence 0
     alone, position P in cell P.  */
  for (int j = 0; j < s->used_hi; j++)
    if (j < n_past ? s->cells[j].seqs != 1 || s->cells[j].pos != j
                   : s->cells[j].seqs != 0)
      return tsr_set_error (TSR_ERR_STATE, "session: a context shift needs "
                            "a cache of sequence 0 alone, decoded in order "
                            "(cell %d holds another sequence's position, or "
                            "a position out of order)", j);
  if (keep < 0 || n_discard < 1 || n_discard > n_past - keep)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "session: a shift that keeps "
                          "%d positions and drops %d does not fit the %d "
                          "in the cache", keep, n_discard, n_past);
  const int src = keep + n_discard, n_move = n_past - src;
  const int64_t n_head_kv = s->m->split.n_head_kv;
  if (n_move == 0)
    {
      tsr_session_seq_remove (s, 0, keep, -1);
      return TSR_OK;
    }
  /* The slots' schedulers keep their decode graphs: this one has its
     own, over the same backends.  */
  tsr_context *ctx = tsr_context_new (true);
  tsr_graph *g = ctx ? tsr_graph_new (ctx) : NULL;
  tsr_sched *sched = NULL;
  struct tsri_shift_inputs in;
  int32_t *buf = malloc (sizeof *buf * (size_t) n_move
                         * (size_t) (n_head_kv + 1));
  int st = g && buf ? TSR_OK : tsr_set_error (TSR_ERR_NO_MEMORY, "session: "
                                              "out of memory");
  if (st == TSR_OK)
    st = tsri_model_build_shift (s->m, ctx, g, s->k, s->v, src, n_move, &in);
  if (st == TSR_OK)
    {
      tsr_backend *be[TSRI_MODEL_MAX_BACKENDS];
      memcpy (be, s->be, sizeof *be * (size_t) s->m->n_backends);
      if (!(sched = tsr_sched_new (be, s->m->n_backends)))
        st = tsr_last_status ();
    }
  if (st == TSR_OK)
    st = tsr_sched_alloc_graph (sched, g);
  if (st == TSR_OK)
    {
      int32_t *pos = buf, *rows = buf + n_move;
      for (int i = 0; i < n_move; i++)
        {
          pos[i] = -n_discard;
          for (int64_t h = 0; h < n_head_kv; h++)
            rows[h * n_move + i] = keep + i;
        }
      st = tsr_tensor_set (in.pos, pos, 0, sizeof *pos * (size_t) n_move);
      if (st == TSR_OK)
        st = tsr_tensor_set (in.rows, rows, 0, sizeof *rows * (size_t) n_move
                                               * (size_t) n_head_kv);
    }
  if (st == TSR_OK)
    st = tsr_sched_graph_compute (sched, g);
  /* On failure the moved rows may be half written: the cache keeps the
     positions before the shift only.  */
  if (st == TSR_OK)
    {
      /* Cells [KEEP, KEEP + N_MOVE) now hold the moved positions.  */
      for (int i = 0; i < n_move; i++)
        s->cells[keep + i].pos = keep + i;
      for (int j = keep + n_move; j < n_past; j++)
        s->cells[j].seqs = 0;
      recount (s);
    }
  else
    tsr_session_seq_remove (s, 0, keep, -1);
  tsr_sched_free (sched);
  tsr_context_free (ctx);
  free (buf);
  return st;
}

void
tsr_session_reset (tsr_session *s)
{
  if (!s)
    return;
  memset (s->cells, 0, sizeof *s->cells * (size_t) s->n_ctx);
  recount (s);
}
