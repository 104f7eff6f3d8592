/* tsr-model-ref.h - an independent double-precision forward pass of
 * llama and qwen2 GGUF models, for tests.
 *
 * Header-only (static functions); include it after <tessera.h>.  It
 * reads a file opened with tsr_gguf_open through the public GGUF reader
 * and tsr_dequantize_row only, dequantizes every weight to double, and
 * computes the logits of every position of a token sequence with
 * straight loops: no Tessera graph and none of the model runner's code,
 * so that it checks the runner independently.  It holds 8 bytes per
 * parameter and does 2 flops per parameter and token: small models only.
 *
 * What it computes (as llama.cpp runs these architectures):
 *   x = row tokens[t] of token_embd
 *   per layer:
 *     h = rmsnorm (x) * attn_norm, rmsnorm (x) = x / sqrt (mean (x^2) + eps)
 *     q = Wq h + bq, k = Wk h + bk, v = Wv h + bv   (biases: qwen2, or
 *       llama files that have them); W of GGUF shape [in, out] gives
 *       out[j] = sum_i W[j * in + i] * h[i]
 *     RoPE on q and k, each head of head_dim = key_length (default
 *       embd / heads): for i < n_rot / 2 (n_rot = rope.dimension_count,
 *       default head_dim), theta = pos * freq_scale * base^(-2i / n_rot)
 *       / ff[i], ff = rope_freqs.weight (llama) or 1, and the pair
 *       (2i, 2i + 1) for llama, (i, i + n_rot / 2) for qwen2 turns as
 *       (a, b) -> (a cos - b sin, a sin + b cos); positions 0 .. n - 1
 *     causal attention: softmax over keys 0 .. t of q.k / sqrt (head_dim),
 *       query head h reading kv head h / (heads / kv_heads)
 *     x += Wo (the heads' outputs, concatenated)
 *     h = rmsnorm (x) * ffn_norm
 *     x += Wdown (silu (Wgate h) * (Wup h))
 *   logits = Wout (rmsnorm (x) * output_norm), Wout = output.weight, or
 *     token_embd.weight when the file has no output.weight
 * freq_scale is 1 / rope.scaling.factor (or the older rope.scale_linear)
 * when rope.scaling.type is "linear" or absent, 1 for "none"; other
 * scaling types (yarn, longrope) are refused.  A file with a tensor the
 * pass would not use is refused too, as llama.cpp refuses it.  */
#ifndef TSR_MODEL_REF_H
#define TSR_MODEL_REF_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tsr_ref_layer
{
  double *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv;   /* b*: or NULL */
  double *ffn_norm, *w_gate, *w_up, *w_down;
};

/* Hyper-parameters and every weight as doubles.  */
struct tsr_ref_model
{
  bool neox;                    /* qwen2: RoPE on the two halves */
  int n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff, head_dim, n_rot;
  double eps, rope_base, freq_scale;
  double *rope_ff;              /* n_rot / 2 divisors, or NULL */
  double *tok_embd, *output_norm, *output;   /* output: or tok_embd */
  struct tsr_ref_layer *layers;
};

/* Loading.  */

struct tsr_ref_loader
{
  const tsr_gguf *g;
  const char *arch;
  char *err;
  size_t errlen;
  bool failed;
  bool *used;                   /* per tensor of the file */
};

static void
tsr_ref_fail (struct tsr_ref_loader *l, const char *fmt, ...)
{
  if (l->failed)
    return;
  l->failed = true;
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (l->err, l->errlen, fmt, ap);
  va_end (ap);
}

/* ARCH.SUFFIX in BUF.  */
static const char *
tsr_ref_key (const struct tsr_ref_loader *l, const char *suffix, char *buf,
             size_t n)
{
  snprintf (buf, n, "%s.%s", l->arch, suffix);
  return buf;
}

/* The position of key ARCH.SUFFIX (spelled out in KEY, 160 bytes), or
   -1: an error when REQUIRED.  */
static int64_t
tsr_ref_find (struct tsr_ref_loader *l, const char *suffix, bool required,
              char *key)
{
  tsr_ref_key (l, suffix, key, 160);
  int64_t i = tsr_gguf_find_key (l->g, key);
  if (i < 0 && required)
    tsr_ref_fail (l, "missing key %s", key);
  return i;
}

/* The integer key ARCH.SUFFIX, of any integer type, in *V; DEF when
   absent.  */
static void
tsr_ref_int (struct tsr_ref_loader *l, const char *suffix, bool required,
             int64_t def, int64_t *v)
{
  char key[160];
  int64_t i = tsr_ref_find (l, suffix, required, key);
  union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32;
          int32_t i32; uint64_t u64; int64_t i64; } x;
  *v = def;
  switch (i < 0 ? TSR_GGUF_TYPE_COUNT : tsr_gguf_kv_type (l->g, i))
    {
    case TSR_GGUF_TYPE_COUNT: break;
    case TSR_GGUF_UINT8: tsr_gguf_get_u8 (l->g, key, &x.u8); *v = x.u8; break;
    case TSR_GGUF_INT8: tsr_gguf_get_i8 (l->g, key, &x.i8); *v = x.i8; break;
    case TSR_GGUF_UINT16: tsr_gguf_get_u16 (l->g, key, &x.u16); *v = x.u16;
      break;
    case TSR_GGUF_INT16: tsr_gguf_get_i16 (l->g, key, &x.i16); *v = x.i16;
      break;
    case TSR_GGUF_UINT32: tsr_gguf_get_u32 (l->g, key, &x.u32); *v = x.u32;
      break;
    case TSR_GGUF_INT32: tsr_gguf_get_i32 (l->g, key, &x.i32); *v = x.i32;
      break;
    case TSR_GGUF_UINT64: tsr_gguf_get_u64 (l->g, key, &x.u64);
      *v = x.u64 > INT64_MAX ? -1 : (int64_t) x.u64; break;
    case TSR_GGUF_INT64: tsr_gguf_get_i64 (l->g, key, &x.i64); *v = x.i64;
      break;
    default: tsr_ref_fail (l, "key %s is not an integer", key); break;
    }
}

/* The float key ARCH.SUFFIX (f32 or f64) in *V, DEF when absent.
   False when absent.  */
static bool
tsr_ref_float (struct tsr_ref_loader *l, const char *suffix, bool required,
               double def, double *v)
{
  char key[160];
  int64_t i = tsr_ref_find (l, suffix, required, key);
  tsr_gguf_type type = i < 0 ? TSR_GGUF_TYPE_COUNT
                      : tsr_gguf_kv_type (l->g, i);
  float f;
  *v = def;
  if (type == TSR_GGUF_FLOAT32)
    {
      tsr_gguf_get_f32 (l->g, key, &f);
      *v = f;
    }
  else if (type == TSR_GGUF_FLOAT64)
    tsr_gguf_get_f64 (l->g, key, v);
  else if (i >= 0)
    tsr_ref_fail (l, "key %s is not a float", key);
  return i >= 0;
}

/* Tensor NAME of shape [NE0, NE1] as doubles; NULL when absent (an
   error when REQUIRED) or on error.  */
static double *
tsr_ref_tensor (struct tsr_ref_loader *l, const char *name, int64_t ne0,
                int64_t ne1, bool required)
{
  int64_t i = l->failed ? -1 : tsr_gguf_find_tensor (l->g, name);
  struct tsr_gguf_tensor_info t;
  if (i < 0 || tsr_gguf_get_tensor_info (l->g, i, &t) != TSR_OK)
    {
      if (required)
        tsr_ref_fail (l, "missing tensor %s", name);
      return NULL;
    }
  l->used[i] = true;
  if (t.ne[0] != ne0 || t.ne[1] != ne1 || t.ne[2] != 1 || t.ne[3] != 1)
    {
      tsr_ref_fail (l, "tensor %s has shape [%lld, %lld, %lld, %lld], "
                    "expected [%lld, %lld]", name, (long long) t.ne[0],
                    (long long) t.ne[1], (long long) t.ne[2],
                    (long long) t.ne[3], (long long) ne0, (long long) ne1);
      return NULL;
    }
  double *d = malloc ((size_t) (ne0 * ne1) * sizeof *d);
  float *row = malloc ((size_t) ne0 * sizeof *row);
  const char *src = tsr_gguf_tensor_data (l->g, i);
  size_t row_size = tsr_row_size (t.type, ne0);
  for (int64_t r = 0; d && row && src && r < ne1; r++)
    {
      if (tsr_dequantize_row (t.type, src + r * row_size, row, ne0)
          != TSR_OK)
        {
          tsr_ref_fail (l, "tensor %s: %s", name, tsr_last_error ());
          break;
        }
      for (int64_t c = 0; c < ne0; c++)
        d[r * ne0 + c] = row[c];
    }
  if (!src)
    tsr_ref_fail (l, "tensor %s has no data", name);
  else if (!d || !row)
    tsr_ref_fail (l, "tensor %s: out of memory", name);
  free (row);
  if (l->failed)
    {
      free (d);
      return NULL;
    }
  return d;
}

static void
tsr_ref_model_free (struct tsr_ref_model *m)
{
  if (!m)
    return;
  for (int i = 0; m->layers && i < m->n_layer; i++)
    {
      struct tsr_ref_layer *y = &m->layers[i];
      double *all[] = { y->attn_norm, y->wq, y->wk, y->wv, y->wo, y->bq,
                        y->bk, y->bv, y->ffn_norm, y->w_gate, y->w_up,
                        y->w_down };
      for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        free (all[j]);
    }
  free (m->layers);
  if (m->output != m->tok_embd)
    free (m->output);
  free (m->tok_embd);
  free (m->output_norm);
  free (m->rope_ff);
  free (m);
}

/* RoPE scaling: freq_scale from the keys, as llama.cpp reads them.  */
static void
tsr_ref_rope_scaling (struct tsr_ref_loader *l, struct tsr_ref_model *m)
{
  char key[160];
  const char *type = "linear";
  tsr_ref_key (l, "rope.scaling.type", key, sizeof key);
  if (tsr_gguf_find_key (l->g, key) >= 0
      && tsr_gguf_get_str (l->g, key, &type, NULL) != TSR_OK)
    tsr_ref_fail (l, "key %s is not a string", key);
  double factor = 0;
  if (!tsr_ref_float (l, "rope.scaling.factor", false, 0, &factor))
    tsr_ref_float (l, "rope.scale_linear", false, 0, &factor);
  m->freq_scale = 1;
  if (strcmp (type, "linear") == 0 && factor != 0)
    m->freq_scale = 1 / factor;
  else if (strcmp (type, "linear") != 0 && strcmp (type, "none") != 0)
    tsr_ref_fail (l, "%s \"%s\" is not supported by the reference", key,
                  type);
}

/* The hyper-parameters of M from the keys and token_embd's shape.  */
static void
tsr_ref_hparams (struct tsr_ref_loader *l, struct tsr_ref_model *m)
{
  int64_t embd, layers, heads, kv, ff, hd, hd_v, rot;
  tsr_ref_int (l, "embedding_length", true, 0, &embd);
  tsr_ref_int (l, "block_count", true, 0, &layers);
  tsr_ref_int (l, "feed_forward_length", true, 0, &ff);
  tsr_ref_int (l, "attention.head_count", true, 0, &heads);
  tsr_ref_int (l, "attention.head_count_kv", false, heads, &kv);
  tsr_ref_int (l, "attention.key_length", false,
               heads > 0 ? embd / heads : 0, &hd);
  tsr_ref_int (l, "attention.value_length", false, hd, &hd_v);
  tsr_ref_int (l, "rope.dimension_count", false, hd, &rot);
  tsr_ref_float (l, "attention.layer_norm_rms_epsilon", true, 0, &m->eps);
  tsr_ref_float (l, "rope.freq_base", false, 10000, &m->rope_base);
  tsr_ref_rope_scaling (l, m);
  if (l->failed)
    return;
  if (embd < 1 || embd > 1 << 20 || layers < 0 || layers > 1 << 16
      || ff < 1 || ff > 1 << 24 || heads < 1 || heads > 1 << 16 || kv < 1
      || heads % kv || hd < 2 || hd > 1 << 16 || hd * heads > 1 << 24
      || hd_v != hd || rot < 2 || rot > hd || rot % 2)
    tsr_ref_fail (l, "bad hyper-parameters: embd %lld, layers %lld, ff %lld,"
                  " heads %lld/%lld, head_dim %lld/%lld, n_rot %lld",
                  (long long) embd, (long long) layers, (long long) ff,
                  (long long) heads, (long long) kv, (long long) hd,
                  (long long) hd_v, (long long) rot);
  int64_t te = tsr_gguf_find_tensor (l->g, "token_embd.weight");
  struct tsr_gguf_tensor_info t = { 0 };
  if (te < 0 || tsr_gguf_get_tensor_info (l->g, te, &t) != TSR_OK
      || t.ne[1] < 1 || t.ne[1] > INT32_MAX)
    tsr_ref_fail (l, "missing tensor token_embd.weight");
  m->n_embd = (int) embd;
  m->n_layer = (int) layers;
  m->n_ff = (int) ff;
  m->n_head = (int) heads;
  m->n_head_kv = (int) kv;
  m->head_dim = (int) hd;
  m->n_rot = (int) rot;
  m->n_vocab = (int) t.ne[1];
}

/* Layer IL's weights.  */
static void
tsr_ref_layer_load (struct tsr_ref_loader *l, const struct tsr_ref_model *m,
                    int il, struct tsr_ref_layer *y)
{
  const int64_t e = m->n_embd, q = (int64_t) m->n_head * m->head_dim;
  const int64_t kv = (int64_t) m->n_head_kv * m->head_dim, ff = m->n_ff;
  char n[TSR_MAX_NAME];
#define TSR_REF_T(field, suffix, ne0, ne1, req) \
  (snprintf (n, sizeof n, "blk.%d.%s", il, suffix), \
   y->field = tsr_ref_tensor (l, n, ne0, ne1, req))
  TSR_REF_T (attn_norm, "attn_norm.weight", e, 1, true);
  TSR_REF_T (wq, "attn_q.weight", e, q, true);
  TSR_REF_T (wk, "attn_k.weight", e, kv, true);
  TSR_REF_T (wv, "attn_v.weight", e, kv, true);
  TSR_REF_T (bq, "attn_q.bias", q, 1, m->neox);
  TSR_REF_T (bk, "attn_k.bias", kv, 1, m->neox);
  TSR_REF_T (bv, "attn_v.bias", kv, 1, m->neox);
  TSR_REF_T (wo, "attn_output.weight", q, e, true);
  TSR_REF_T (ffn_norm, "ffn_norm.weight", e, 1, true);
  TSR_REF_T (w_gate, "ffn_gate.weight", e, ff, true);
  TSR_REF_T (w_up, "ffn_up.weight", e, ff, true);
  TSR_REF_T (w_down, "ffn_down.weight", ff, e, true);
#undef TSR_REF_T
}

/* Every weight of M; then no tensor of the file may be left unused.  */
static void
tsr_ref_weights (struct tsr_ref_loader *l, struct tsr_ref_model *m)
{
  int64_t e = m->n_embd, v = m->n_vocab;
  m->tok_embd = tsr_ref_tensor (l, "token_embd.weight", e, v, true);
  m->output_norm = tsr_ref_tensor (l, "output_norm.weight", e, 1, true);
  m->output = tsr_ref_tensor (l, "output.weight", e, v, false);
  if (!m->output)
    m->output = m->tok_embd;
  if (!m->neox)
    m->rope_ff = tsr_ref_tensor (l, "rope_freqs.weight", m->n_rot / 2, 1,
                                 false);
  m->layers = calloc ((size_t) m->n_layer + 1, sizeof *m->layers);
  if (!m->layers)
    tsr_ref_fail (l, "out of memory");
  for (int il = 0; il < m->n_layer && !l->failed; il++)
    tsr_ref_layer_load (l, m, il, &m->layers[il]);
  for (int64_t i = 0; i < tsr_gguf_n_tensors (l->g) && !l->failed; i++)
    if (!l->used[i])
      {
        struct tsr_gguf_tensor_info t;
        tsr_gguf_get_tensor_info (l->g, i, &t);
        tsr_ref_fail (l, "tensor %s is not used by %s", t.name, l->arch);
      }
}

/* Load the model in G.  NULL with a message in ERR on failure.  */
static struct tsr_ref_model *
tsr_ref_model_load (const tsr_gguf *g, char *err, size_t errlen)
{
  struct tsr_ref_loader l = { .g = g, .err = err, .errlen = errlen };
  struct tsr_ref_model *m = calloc (1, sizeof *m);
  l.used = calloc ((size_t) tsr_gguf_n_tensors (g) + 1, sizeof *l.used);
  if (!m || !l.used)
    tsr_ref_fail (&l, "out of memory");
  else if (tsr_gguf_get_str (g, "general.architecture", &l.arch, NULL)
           != TSR_OK)
    tsr_ref_fail (&l, "missing key general.architecture");
  else if (strcmp (l.arch, "llama") != 0 && strcmp (l.arch, "qwen2") != 0)
    tsr_ref_fail (&l, "architecture %s is not llama or qwen2", l.arch);
  if (!l.failed)
    {
      m->neox = strcmp (l.arch, "qwen2") == 0;
      tsr_ref_hparams (&l, m);
    }
  if (!l.failed)
    tsr_ref_weights (&l, m);
  free (l.used);
  if (l.failed)
    {
      tsr_ref_model_free (m);
      return NULL;
    }
  return m;
}

static int
tsr_ref_model_n_vocab (const struct tsr_ref_model *m)
{
  return m->n_vocab;
}

/* The forward pass.  */

/* OUT[j] = sum_i W[j * IN + i] * X[i], plus B[j] when B.  */
static void
tsr_ref_matvec (const double *w, const double *b, const double *x,
                int64_t in, int64_t out, double *y)
{
  for (int64_t j = 0; j < out; j++)
    {
      double s = b ? b[j] : 0;
      for (int64_t i = 0; i < in; i++)
        s += w[j * in + i] * x[i];
      y[j] = s;
    }
}

/* Y = rmsnorm (X) * WEIGHT, N elements.  */
static void
tsr_ref_rmsnorm (const double *x, const double *weight, int n, double eps,
                 double *y)
{
  double ss = 0;
  for (int i = 0; i < n; i++)
    ss += x[i] * x[i];
  double scale = 1 / sqrt (ss / n + eps);
  for (int i = 0; i < n; i++)
    y[i] = x[i] * scale * weight[i];
}

/* Rotate the N_HEADS heads at V for position POS.  */
static void
tsr_ref_rope (const struct tsr_ref_model *m, double *v, int n_heads,
              int pos)
{
  int half = m->n_rot / 2;
  for (int i = 0; i < half; i++)
    {
      double theta = pos * m->freq_scale
                     * pow (m->rope_base, -2.0 * i / m->n_rot)
                     / (m->rope_ff ? m->rope_ff[i] : 1.0);
      double c = cos (theta), s = sin (theta);
      int i0 = m->neox ? i : 2 * i, i1 = m->neox ? i + half : 2 * i + 1;
      for (int h = 0; h < n_heads; h++)
        {
          double *p = v + (int64_t) h * m->head_dim;
          double a = p[i0], b = p[i1];
          p[i0] = a * c - b * s;
          p[i1] = a * s + b * c;
        }
    }
}

/* OUT (n_head * head_dim) = attention of query T over keys 0 .. T;
   Q, K, V hold every position's rows; SCORES has room for T + 1.  */
static void
tsr_ref_attend (const struct tsr_ref_model *m, const double *q,
                const double *k, const double *v, int t, double *scores,
                double *out)
{
  const int hd = m->head_dim, group = m->n_head / m->n_head_kv;
  const int64_t nq = (int64_t) m->n_head * hd;
  const int64_t nkv = (int64_t) m->n_head_kv * hd;
  for (int h = 0; h < m->n_head; h++)
    {
      const double *qh = q + t * nq + (int64_t) h * hd;
      const int64_t kvo = (int64_t) (h / group) * hd;
      double mx = -INFINITY, sum = 0;
      for (int u = 0; u <= t; u++)
        {
          double s = 0;
          for (int d = 0; d < hd; d++)
            s += qh[d] * k[u * nkv + kvo + d];
          scores[u] = s / sqrt ((double) hd);
          mx = scores[u] > mx ? scores[u] : mx;
        }
      for (int u = 0; u <= t; u++)
        sum += scores[u] = exp (scores[u] - mx);
      double *oh = out + (int64_t) h * hd;
      for (int d = 0; d < hd; d++)
        oh[d] = 0;
      for (int u = 0; u <= t; u++)
        for (int d = 0; d < hd; d++)
          oh[d] += scores[u] / sum * v[u * nkv + kvo + d];
    }
}

/* Scratch of the forward pass for N tokens.  */
struct tsr_ref_scratch
{
  double *x, *h, *q, *k, *v, *att, *o, *scores, *gate, *up;
};

static void
tsr_ref_scratch_free (struct tsr_ref_scratch *s)
{
  double *all[] = { s->x, s->h, s->q, s->k, s->v, s->att, s->o, s->scores,
                    s->gate, s->up };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free (all[i]);
}

static bool
tsr_ref_scratch_alloc (const struct tsr_ref_model *m, int n,
                       struct tsr_ref_scratch *s)
{
  const size_t e = (size_t) m->n_embd, nq = (size_t) m->n_head * m->head_dim;
  const size_t nkv = (size_t) m->n_head_kv * m->head_dim;
  s->x = malloc ((size_t) n * e * sizeof (double));
  s->h = malloc (e * sizeof (double));
  s->q = malloc ((size_t) n * nq * sizeof (double));
  s->k = malloc ((size_t) n * nkv * sizeof (double));
  s->v = malloc ((size_t) n * nkv * sizeof (double));
  s->att = malloc (nq * sizeof (double));
  s->o = malloc (e * sizeof (double));
  s->scores = malloc ((size_t) n * sizeof (double));
  s->gate = malloc ((size_t) m->n_ff * sizeof (double));
  s->up = malloc ((size_t) m->n_ff * sizeof (double));
  return s->x && s->h && s->q && s->k && s->v && s->att && s->o
         && s->scores && s->gate && s->up;
}

/* The attention block of layer Y for every position: X += Wo attn.  */
static void
tsr_ref_attention (const struct tsr_ref_model *m,
                   const struct tsr_ref_layer *y, int n,
                   struct tsr_ref_scratch *s)
{
  const int64_t e = m->n_embd, nq = (int64_t) m->n_head * m->head_dim;
  const int64_t nkv = (int64_t) m->n_head_kv * m->head_dim;
  for (int t = 0; t < n; t++)
    {
      tsr_ref_rmsnorm (s->x + t * e, y->attn_norm, m->n_embd, m->eps, s->h);
      tsr_ref_matvec (y->wq, y->bq, s->h, e, nq, s->q + t * nq);
      tsr_ref_matvec (y->wk, y->bk, s->h, e, nkv, s->k + t * nkv);
      tsr_ref_matvec (y->wv, y->bv, s->h, e, nkv, s->v + t * nkv);
      tsr_ref_rope (m, s->q + t * nq, m->n_head, t);
      tsr_ref_rope (m, s->k + t * nkv, m->n_head_kv, t);
    }
  for (int t = 0; t < n; t++)
    {
      tsr_ref_attend (m, s->q, s->k, s->v, t, s->scores, s->att);
      tsr_ref_matvec (y->wo, NULL, s->att, nq, e, s->o);
      for (int64_t i = 0; i < e; i++)
        s->x[t * e + i] += s->o[i];
    }
}

/* The feed-forward block of layer Y for every position.  */
static void
tsr_ref_ffn (const struct tsr_ref_model *m, const struct tsr_ref_layer *y,
             int n, struct tsr_ref_scratch *s)
{
  const int64_t e = m->n_embd, ff = m->n_ff;
  for (int t = 0; t < n; t++)
    {
      tsr_ref_rmsnorm (s->x + t * e, y->ffn_norm, m->n_embd, m->eps, s->h);
      tsr_ref_matvec (y->w_gate, NULL, s->h, e, ff, s->gate);
      tsr_ref_matvec (y->w_up, NULL, s->h, e, ff, s->up);
      for (int64_t i = 0; i < ff; i++)
        s->gate[i] = s->gate[i] / (1 + exp (-s->gate[i])) * s->up[i];
      tsr_ref_matvec (y->w_down, NULL, s->gate, ff, e, s->o);
      for (int64_t i = 0; i < e; i++)
        s->x[t * e + i] += s->o[i];
    }
}

/* The logits of every position of the N_TOKENS TOKENS, n_tokens x
   n_vocab row-major, into LOGITS.  0, or -1 (LOGITS untouched) for a
   token outside the vocabulary or when out of memory.  */
static int
tsr_ref_model_forward (const struct tsr_ref_model *m, const int32_t *tokens,
                       int n_tokens, double *logits)
{
  const int64_t e = m->n_embd;
  for (int t = 0; t < n_tokens; t++)
    if (tokens[t] < 0 || tokens[t] >= m->n_vocab)
      return -1;
  struct tsr_ref_scratch s = { 0 };
  if (n_tokens < 1 || !tsr_ref_scratch_alloc (m, n_tokens, &s))
    {
      tsr_ref_scratch_free (&s);
      return -1;
    }
  for (int t = 0; t < n_tokens; t++)
    memcpy (s.x + t * e, m->tok_embd + tokens[t] * e,
            (size_t) e * sizeof (double));
  for (int il = 0; il < m->n_layer; il++)
    {
      tsr_ref_attention (m, &m->layers[il], n_tokens, &s);
      tsr_ref_ffn (m, &m->layers[il], n_tokens, &s);
    }
  for (int t = 0; t < n_tokens; t++)
    {
      tsr_ref_rmsnorm (s.x + t * e, m->output_norm, m->n_embd, m->eps, s.h);
      tsr_ref_matvec (m->output, NULL, s.h, e, m->n_vocab,
                      logits + (int64_t) t * m->n_vocab);
    }
  tsr_ref_scratch_free (&s);
  return 0;
}

#endif /* TSR_MODEL_REF_H */
