/* transformer.c - a small decoder-only transformer on Tessera.
 *
 * Two layers, random weights from a fixed seed: token embedding
 * (get_rows), RMS norms, attention with grouped key/value heads, RoPE,
 * an f16 key/value cache written with set_rows and read by
 * flash_attn_ext under a causal mask, a SwiGLU feed-forward block with
 * q8_0 and q4_0 weights, and output logits.  The prompt runs through
 * the scheduler on every combination of the devices Tessera finds; each
 * run's logits are compared with the CPU alone.  Each weight and cache
 * is put in the memory of the first device of the combination that
 * computes with it (asked with tsr_backend_supports_op), so the
 * scheduler runs every node where its memory is and copies only
 * activations.
 *
 * Output: one line per device combination with the logits' checksum,
 * the largest difference from the CPU, the normalized mean squared
 * error and tokens per second.  Exit status 1 when a combination fails
 * or its logits' NMSE from the CPU's is above MAX_NMSE.  (Not a tight
 * bound: a device may round the activations of the products with
 * quantized weights to 8 bits, as the CPU does for a few tokens, and
 * another not; that alone gives an NMSE about 1e-4 here.)  */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tessera.h>

enum
{
  VOCAB = 96, D = 64, N_HEAD = 4, N_KV = 2, HD = D / N_HEAD, FF = 128,
  LAYERS = 2, T = 12, N_CTX = 32, MAX_DEV = 8
};
#define MAX_NMSE 1e-3

struct layer
{
  tsr_tensor *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *gate, *up, *down;
  tsr_tensor *k_cache, *v_cache;
};

struct model
{
  /* Each tensor lives in the memory of the first backend (by priority)
     that computes with it; one context and buffer per backend.  */
  tsr_backend **be;
  int n_be;
  tsr_context *ctx[MAX_DEV];
  tsr_buffer *buf[MAX_DEV];
  tsr_tensor *embed, *out_norm, *out;
  struct layer l[LAYERS];
};

static unsigned rng = 12345;
static char why[512];                   /* why a run failed */

static float
rnd (void)
{
  rng = rng * 1103515245u + 12345u;
  return (float) ((rng >> 9) & 0x3fff) / 8192.0f - 1.0f;
}

/* How the forward pass uses a tensor, and so what to ask the backends
   before choosing its memory.  */
enum use { MATRIX, ROWS, SCALE, CACHE };

/* The first of M's backends that can compute USE of a tensor of TYPE,
   K x ROWS (a cache: HD x N_CTX x N_KV), asked with nodes of the
   forward pass's shapes; -1 when none can.  */
static int
home (const struct model *m, enum use use, tsr_type type, int64_t k,
      int64_t rows)
{
  tsr_context *c = tsr_context_new (true);
  tsr_tensor *w = use == CACHE
                  ? tsr_new_tensor_3d (c, type, HD, N_CTX, N_KV)
                  : tsr_new_tensor_2d (c, type, k, rows);
  tsr_tensor *x = tsr_new_tensor_2d (c, TSR_TYPE_F32, k, T);
  tsr_tensor *probe[2] = { NULL, NULL };
  switch (use)
    {
    case MATRIX:
      probe[0] = tsr_mul_mat (c, w, x);
      break;
    case ROWS:
      probe[0] = tsr_get_rows (c, w, tsr_new_tensor_1d (c, TSR_TYPE_I32, T));
      break;
    case SCALE:
      probe[0] = tsr_mul (c, x, w);
      break;
    case CACHE:
      probe[0] = tsr_set_rows (c, w, tsr_new_tensor_3d (c, TSR_TYPE_F32, HD,
                                                        T, N_KV),
                               tsr_new_tensor_2d (c, TSR_TYPE_I32, T, N_KV));
      probe[1] = tsr_flash_attn_ext (c, tsr_new_tensor_3d (c, TSR_TYPE_F32,
                                                           HD, T, N_HEAD),
                                     w, w, tsr_new_tensor_2d
                                     (c, TSR_TYPE_F32, N_CTX, T), 1.0f);
      break;
    }
  int found = -1;
  for (int b = 0; b < m->n_be && found < 0; b++)
    if (probe[0] && tsr_backend_supports_op (m->be[b], probe[0])
        && (!probe[1] || tsr_backend_supports_op (m->be[b], probe[1])))
      found = b;
  tsr_context_free (c);
  return found;
}

/* A tensor of TYPE, K x ROWS, declared in the context of the backend
   that will compute with it; NULL (and WHY set) when none can.  */
static tsr_tensor *
weight (struct model *m, enum use use, tsr_type type, int64_t k,
        int64_t rows, const char *name, int layer)
{
  char full[64];
  snprintf (full, sizeof full, layer < 0 ? "%s" : "blk%2$d.%1$s", name,
            layer);
  int b = home (m, use, type, k, rows);
  if (b < 0)
    {
      snprintf (why, sizeof why, "no device of this combination computes "
                "with %s (%s)", full, tsr_type_name (type));
      return NULL;
    }
  if (!m->ctx[b])
    m->ctx[b] = tsr_context_new (true);
  tsr_tensor *t = use == CACHE
                  ? tsr_new_tensor_3d (m->ctx[b], type, HD, N_CTX, N_KV)
                  : tsr_new_tensor_2d (m->ctx[b], type, k, rows);
  tsr_set_name (t, full);
  if (use != CACHE)
    tsr_set_param (t);
  return t;
}

/* Random values, scaled for a stable forward pass, in T's type.  */
static void
fill (tsr_tensor *t, float scale, float offset)
{
  int64_t n = tsr_nelements (t);
  float *f = malloc ((size_t) n * sizeof *f);
  void *q = malloc (tsr_nbytes (t));
  for (int64_t i = 0; i < n; i++)
    f[i] = offset + scale * rnd ();
  tsr_quantize_row (t->type, f, q, n);
  tsr_tensor_set (t, q, 0, tsr_nbytes (t));
  free (f);
  free (q);
}

static void
model_free (struct model *m)
{
  for (int b = 0; b < MAX_DEV; b++)
    {
      tsr_buffer_free (m->buf[b]);
      tsr_context_free (m->ctx[b]);
    }
}

/* Weights and caches, each in the memory of the first of BE[0..N) that
   computes with it.  */
static int
model_init (struct model *m, tsr_backend **be, int n)
{
  memset (m, 0, sizeof *m);
  m->be = be;
  m->n_be = n;
  rng = 12345;
  bool ok = (m->embed = weight (m, ROWS, TSR_TYPE_F32, D, VOCAB, "embed",
                                -1)) != NULL;
  for (int i = 0; i < LAYERS && ok; i++)
    {
      struct layer *l = &m->l[i];
      ok = (l->attn_norm = weight (m, SCALE, TSR_TYPE_F32, D, 1,
                                   "attn_norm", i))
           && (l->wq = weight (m, MATRIX, TSR_TYPE_F16, D, D, "wq", i))
           && (l->wk = weight (m, MATRIX, TSR_TYPE_F16, D, N_KV * HD, "wk",
                               i))
           && (l->wv = weight (m, MATRIX, TSR_TYPE_BF16, D, N_KV * HD, "wv",
                               i))
           && (l->wo = weight (m, MATRIX, TSR_TYPE_F32, D, D, "wo", i))
           && (l->ffn_norm = weight (m, SCALE, TSR_TYPE_F32, D, 1,
                                     "ffn_norm", i))
           && (l->gate = weight (m, MATRIX, TSR_TYPE_Q8_0, D, FF, "gate", i))
           && (l->up = weight (m, MATRIX, TSR_TYPE_Q8_0, D, FF, "up", i))
           && (l->down = weight (m, MATRIX, TSR_TYPE_Q4_0, FF, D, "down", i))
           && (l->k_cache = weight (m, CACHE, TSR_TYPE_F16, 0, 0, "k_cache",
                                    i))
           && (l->v_cache = weight (m, CACHE, TSR_TYPE_F16, 0, 0, "v_cache",
                                    i));
    }
  ok = ok
       && (m->out_norm = weight (m, SCALE, TSR_TYPE_F32, D, 1, "out_norm",
                                 -1))
       && (m->out = weight (m, MATRIX, TSR_TYPE_F16, D, VOCAB, "output", -1));
  for (int b = 0; b < n && ok; b++)
    if (m->ctx[b])
      {
        m->buf[b] = tsr_context_alloc_tensors
          (m->ctx[b], tsr_backend_buffer_type (be[b]));
        if (!m->buf[b])
          {
            snprintf (why, sizeof why, "%s", tsr_last_error ());
            ok = false;
          }
        else
          tsr_buffer_clear (m->buf[b], 0);      /* the caches */
      }
  if (!ok)
    return -1;
  fill (m->embed, 1.0f, 0);
  for (int i = 0; i < LAYERS; i++)
    {
      struct layer *l = &m->l[i];
      fill (l->attn_norm, 0.1f, 1.0f);
      fill (l->wq, 0.25f, 0);
      fill (l->wk, 0.25f, 0);
      fill (l->wv, 0.25f, 0);
      fill (l->wo, 0.15f, 0);
      fill (l->ffn_norm, 0.1f, 1.0f);
      fill (l->gate, 0.25f, 0);
      fill (l->up, 0.25f, 0);
      fill (l->down, 0.15f, 0);
    }
  fill (m->out_norm, 0.1f, 1.0f);
  fill (m->out, 0.25f, 0);
  return 0;
}

struct inputs
{
  tsr_tensor *tokens, *pos, *kv_idx, *mask;
};

static tsr_tensor *
norm (tsr_context *ctx, tsr_tensor *x, tsr_tensor *w)
{
  return tsr_mul (ctx, tsr_rms_norm (ctx, x, 1e-5f), w);
}

static tsr_tensor *
attention (tsr_context *ctx, struct layer *l, tsr_tensor *h,
           const struct inputs *in)
{
  tsr_tensor *q = tsr_reshape_3d (ctx, tsr_mul_mat (ctx, l->wq, h), HD,
                                  N_HEAD, T);
  tsr_tensor *k = tsr_reshape_3d (ctx, tsr_mul_mat (ctx, l->wk, h), HD,
                                  N_KV, T);
  tsr_tensor *v = tsr_reshape_3d (ctx, tsr_mul_mat (ctx, l->wv, h), HD,
                                  N_KV, T);
  q = tsr_rope (ctx, q, in->pos, HD, TSR_ROPE_NEOX, 10000.0f, 1.0f);
  k = tsr_rope (ctx, k, in->pos, HD, TSR_ROPE_NEOX, 10000.0f, 1.0f);
  /* [HD, heads, T] -> [HD, T, heads]: rows of one head together.  */
  q = tsr_permute (ctx, q, 0, 2, 1, 3);
  k = tsr_permute (ctx, k, 0, 2, 1, 3);
  v = tsr_permute (ctx, v, 0, 2, 1, 3);
  /* Write this prompt's keys and values into the caches at their
     positions, then attend over the first T cache rows.  */
  tsr_tensor *kc = tsr_set_rows (ctx, l->k_cache, k, in->kv_idx);
  tsr_tensor *vc = tsr_set_rows (ctx, l->v_cache, v, in->kv_idx);
  kc = tsr_view_3d (ctx, kc, HD, T, N_KV, kc->nb[1], kc->nb[2], 0);
  vc = tsr_view_3d (ctx, vc, HD, T, N_KV, vc->nb[1], vc->nb[2], 0);
  tsr_tensor *o = tsr_flash_attn_ext (ctx, q, kc, vc, in->mask,
                                      1.0f / sqrtf ((float) HD));
  /* [HD, T, heads] -> [HD, heads, T] -> [D, T].  */
  o = tsr_cont (ctx, tsr_permute (ctx, o, 0, 2, 1, 3));
  return tsr_mul_mat (ctx, l->wo, tsr_reshape_2d (ctx, o, D, T));
}

static tsr_tensor *
forward (tsr_context *ctx, struct model *m, struct inputs *in)
{
  in->tokens = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, T);
  in->pos = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, T);
  in->kv_idx = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, T, N_KV);
  in->mask = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, T, T);
  tsr_set_input (in->tokens);
  tsr_set_input (in->pos);
  tsr_set_input (in->kv_idx);
  tsr_set_input (in->mask);
  tsr_tensor *x = tsr_get_rows (ctx, m->embed, in->tokens);
  for (int i = 0; i < LAYERS; i++)
    {
      struct layer *l = &m->l[i];
      x = tsr_add (ctx, x, attention (ctx, l, norm (ctx, x, l->attn_norm),
                                      in));
      tsr_tensor *h = norm (ctx, x, l->ffn_norm);
      tsr_tensor *f = tsr_swiglu (ctx, tsr_mul_mat (ctx, l->gate, h),
                                  tsr_mul_mat (ctx, l->up, h));
      x = tsr_add (ctx, x, tsr_mul_mat (ctx, l->down, f));
    }
  return tsr_set_name (tsr_mul_mat (ctx, m->out,
                                    norm (ctx, x, m->out_norm)), "logits");
}

static void
set_inputs (const struct inputs *in)
{
  int32_t tok[T], pos[T], idx[T * N_KV];
  float mask[T * T];
  for (int i = 0; i < T; i++)
    {
      tok[i] = (i * 37 + 11) % VOCAB;
      pos[i] = i;
      for (int h = 0; h < N_KV; h++)
        idx[h * T + i] = i;
      for (int j = 0; j < T; j++)
        mask[i * T + j] = j <= i ? 0.0f : -INFINITY;
    }
  tsr_tensor_set (in->tokens, tok, 0, sizeof tok);
  tsr_tensor_set (in->pos, pos, 0, sizeof pos);
  tsr_tensor_set (in->kv_idx, idx, 0, sizeof idx);
  tsr_tensor_set (in->mask, mask, 0, sizeof mask);
}

/* Run on backends BE[0..N-1] (priority order); logits into OUT.
   Returns seconds per prompt, or a negative value on failure.  */
static double
run (tsr_backend **be, int n, float *out, int *splits)
{
  struct model m;
  if (model_init (&m, be, n) != 0)
    {
      model_free (&m);
      return -1;
    }
  tsr_context *ctx = tsr_context_new (true);
  struct inputs in;
  tsr_tensor *logits = forward (ctx, &m, &in);
  tsr_graph *g = tsr_graph_new (ctx);
  tsr_sched *s = tsr_sched_new (be, n);
  double sec = -1;
  if (tsr_graph_build (g, logits) == TSR_OK && s
      && tsr_sched_alloc_graph (s, g) == TSR_OK)
    {
      const int reps = 5;
      struct timespec t0, t1;
      int st = TSR_OK;
      set_inputs (&in);
      clock_gettime (CLOCK_MONOTONIC, &t0);
      for (int r = 0; r < reps && st == TSR_OK; r++)
        st = tsr_sched_graph_compute (s, g);
      clock_gettime (CLOCK_MONOTONIC, &t1);
      if (st == TSR_OK
          && tsr_tensor_get (logits, out, 0, sizeof (float) * VOCAB * T)
             == TSR_OK)
        sec = ((double) (t1.tv_sec - t0.tv_sec)
               + 1e-9 * (double) (t1.tv_nsec - t0.tv_nsec)) / reps;
      *splits = tsr_sched_n_splits (s);
    }
  if (sec < 0)
    snprintf (why, sizeof why, "%s", tsr_last_error ());
  tsr_sched_free (s);
  tsr_context_free (ctx);
  model_free (&m);
  return sec;
}

int
main (void)
{
  static float ref[VOCAB * T], out[VOCAB * T];
  tsr_device *devs[MAX_DEV];
  tsr_backend *bes[MAX_DEV];
  int n_dev = 0, failed = 0, splits = 0;

  for (size_t i = 0; i < tsr_device_count () && n_dev < MAX_DEV; i++)
    {
      tsr_backend *be = tsr_device_init (tsr_device_get (i), NULL);
      if (be)
        {
          devs[n_dev] = tsr_device_get (i);
          bes[n_dev++] = be;
        }
    }
  tsr_backend *cpu = tsr_backend_init_by_type (TSR_DEVICE_CPU, NULL);
  if (!cpu || run (&cpu, 1, ref, &splits) < 0)
    {
      fprintf (stderr, "transformer: cpu reference failed: %s\n",
               cpu ? why : tsr_last_error ());
      return 1;
    }
  double sum = 0;
  int argmax = 0;
  for (int i = 0; i < VOCAB * T; i++)
    sum += ref[i];
  for (int i = 1; i < VOCAB; i++)
    if (ref[(T - 1) * VOCAB + i] > ref[(T - 1) * VOCAB + argmax])
      argmax = i;
  printf ("model: %d layers, d=%d, %d heads (%d kv), ff=%d, vocab=%d, "
          "%d tokens\n", LAYERS, D, N_HEAD, N_KV, FF, VOCAB, T);
  printf ("cpu reference: logits checksum %.6f, next token %d\n", sum,
          argmax);

  /* Devices in the order init_best prefers them: GPU, IGPU, ACCEL,
     CPU; every non-empty subset of them in that priority order.  */
  static const int rank[] = { 3, 0, 1, 2 };     /* by tsr_device_type */
  for (int i = 1; i < n_dev; i++)
    for (int j = i; j > 0 && rank[tsr_device_get_type (devs[j])]
                             < rank[tsr_device_get_type (devs[j - 1])]; j--)
      {
        tsr_device *d = devs[j];
        tsr_backend *b = bes[j];
        devs[j] = devs[j - 1];
        bes[j] = bes[j - 1];
        devs[j - 1] = d;
        bes[j - 1] = b;
      }
  for (unsigned mask = 1; mask < (1u << n_dev); mask++)
    {
      tsr_backend *use[MAX_DEV];
      char names[256] = "";
      int n = 0;
      for (int i = 0; i < n_dev; i++)
        if (mask & (1u << i))
          {
            use[n++] = bes[i];
            snprintf (names + strlen (names), sizeof names - strlen (names),
                      "%s%s", n > 1 ? "+" : "", tsr_device_name (devs[i]));
          }
      double sec = run (use, n, out, &splits);
      if (sec < 0)
        {
          printf ("%-24s not runnable: %s\n", names, why);
          continue;
        }
      double diff = 0, s = 0, err = 0, norm = 0;
      for (int i = 0; i < VOCAB * T; i++)
        {
          double d = (double) out[i] - ref[i];
          diff = fmax (diff, fabs (d));
          s += out[i];
          err += d * d;
          norm += (double) ref[i] * ref[i];
        }
      double nmse = norm > 0 ? err / norm : err;
      int ok = nmse <= MAX_NMSE;
      failed |= !ok;
      printf ("%-24s checksum %.6f  max |diff| %.2e  nmse %.1e  %d splits  "
              "%.0f tokens/s  %s\n", names, s, diff, nmse, splits, T / sec,
              ok ? "ok" : "MISMATCH");
    }
  for (int i = 0; i < n_dev; i++)
    tsr_backend_free (bes[i]);
  tsr_backend_free (cpu);
  return failed;
}
