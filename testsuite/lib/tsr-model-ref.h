/* tsr-model-ref.h - an independent double-precision forward pass of
 * GGUF language models, for tests: llama (with Mistral's sliding
 * window and Mixtral's experts), qwen2, qwen2moe, qwen3, qwen3moe,
 * gemma2, gemma3 and phi3.
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
 *   x = row tokens[t] of token_embd, times sqrt (embd) for gemma2/3
 *   per layer:
 *     h = rmsnorm (x) * attn_norm, rmsnorm (x) = x / sqrt (mean (x^2) + eps)
 *     q = Wq h + bq, k = Wk h + bk, v = Wv h + bv   (biases: qwen2 and
 *       qwen2moe, or llama files that have them); W of GGUF shape
 *       [in, out] gives out[j] = sum_i W[j * in + i] * h[i]; phi3 may
 *       fuse them in attn_qkv (rows: q, then k, then v)
 *     qwen3, qwen3moe, gemma3: each head of q (of k) = rmsnorm (head)
 *       * attn_q_norm (attn_k_norm)
 *     RoPE on q and k, each head of head_dim = key_length (default
 *       embd / heads): for i < n_rot / 2 (n_rot = rope.dimension_count,
 *       default head_dim), theta = pos * freq_scale * base^(-2i / n_rot)
 *       / ff[i], ff = rope_freqs.weight (llama) or 1, and the pair
 *       (2i, 2i + 1) for llama, (i, i + n_rot / 2) for the others turns
 *       as (a, b) -> (a cos - b sin, a sin + b cos); positions 0 .. n - 1;
 *       gemma3's sliding-window layers use base 10000 and freq_scale 1
 *     attention: softmax over the visible keys j of s_j = q.k_j / sqrt
 *       (head_dim) (sqrt (embd / heads) for gemma2 of 46 layers and
 *       gemma3 of 62), gemma2: s_j = c * tanh (s_j / c), c =
 *       attn_logit_softcapping; query head h reads kv head h / (heads /
 *       kv_heads); keys j <= t are visible, and in a sliding-window
 *       layer only those with t - j < n_swa (attention.sliding_window):
 *       every layer of llama and phi3 files with a window, gemma2's
 *       even layers, gemma3's layers il % 6 < 5
 *     a = Wo (the heads' outputs, concatenated); gemma2/3: a = rmsnorm
 *       (a) * post_attention_norm; x += a
 *     h = rmsnorm (x) * ffn_norm
 *     f = Wdown (act (Wgate h) * (Wup h)), act = silu, gelu_tanh for
 *       gemma2/3; phi3's ffn_up holds Wgate (first ff rows) and Wup
 *     or, with experts (llama files with expert_count > 0, qwen2moe,
 *       qwen3moe): p = softmax (ffn_gate_inp h) over the n_expert, the
 *       n_expert_used largest p_e (ties: lower e), f = sum of w_e *
 *       (expert e's Wdown (silu (Wgate h) * (Wup h))), w_e = p_e,
 *       divided by the sum of the selected p_e for llama and qwen3moe;
 *       qwen2moe adds the shared expert's SwiGLU times sigmoid
 *       (ffn_gate_inp_shexp . h)
 *     gemma2/3: f = rmsnorm (f) * post_ffw_norm; x += f
 *   logits = Wout (rmsnorm (x) * output_norm), Wout = output.weight, or
 *     token_embd.weight when the file has no output.weight; gemma2:
 *     logits = c * tanh (logits / c), c = final_logit_softcapping
 * gelu_tanh (g) = 0.5 g (1 + tanh (sqrt (2 / pi) (g + 0.044715 g^3))).
 * eps is attention.layer_norm_rms_epsilon (default 1e-6 for qwen2moe,
 * gemma2 and gemma3, required for the others); the softcaps default to
 * 50 and 30; expert_feed_forward_length defaults to ff / n_expert_used
 * (llama: ff), expert_shared_feed_forward_length to ff.
 * freq_scale is 1 / rope.scaling.factor (or the older rope.scale_linear)
 * when rope.scaling.type is "linear" or absent, 1 for "none"; other
 * scaling types (yarn, longrope) are refused, and so are phi3 files
 * with LongRoPE factors (rope_factors_long/short.weight).  A file with
 * a tensor the pass would not use is refused too, as llama.cpp refuses
 * it.  */
#ifndef TSR_MODEL_REF_H
#define TSR_MODEL_REF_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The architectures.  */
enum tsr_ref_arch
{
  TSR_REF_LLAMA, TSR_REF_QWEN2, TSR_REF_QWEN2MOE, TSR_REF_QWEN3,
  TSR_REF_QWEN3MOE, TSR_REF_GEMMA2, TSR_REF_GEMMA3, TSR_REF_PHI3
};

static const char *const tsr_ref_arch_names[] = {
  "llama", "qwen2", "qwen2moe", "qwen3", "qwen3moe", "gemma2", "gemma3",
  "phi3"
};

struct tsr_ref_layer
{
  double *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv;   /* b*: or NULL */
  double *q_norm, *k_norm;      /* [head_dim] (qwen3, gemma3), or NULL */
  double *post_attn_norm, *post_ffw_norm;       /* gemma2/3, or NULL */
  double *ffn_norm, *w_gate, *w_up, *w_down;    /* dense: or NULL */
  /* Experts: the router [embd, n_expert], then [embd, n_ff_exp,
     n_expert] twice and [n_ff_exp, embd, n_expert]; or NULL.  */
  double *gate_inp, *gate_exps, *up_exps, *down_exps;
  /* The shared expert (qwen2moe): its gate's vector [embd] and a
     SwiGLU of n_ff_shexp; or NULL.  */
  double *gate_inp_shexp, *gate_shexp, *up_shexp, *down_shexp;
  bool swa;                     /* sliding-window layer */
  double rope_base, freq_scale; /* this layer's RoPE */
};

/* Hyper-parameters and every weight as doubles.  */
struct tsr_ref_model
{
  enum tsr_ref_arch arch;
  bool neox;                    /* all but llama: RoPE on the two halves */
  bool gelu;                    /* gemma2/3: gelu_tanh, else silu */
  int n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff, head_dim, n_rot;
  int n_expert, n_expert_used, n_ff_exp, n_ff_shexp;   /* 0: no experts */
  bool moe_norm;                /* expert weights renormalized */
  int64_t n_swa;                /* window of the swa layers, or 0 */
  double eps, rope_base, freq_scale;    /* the file's RoPE */
  double embd_scale;            /* x = embedding row * embd_scale */
  double kq_div;                /* scores are q.k / kq_div */
  double attn_softcap, final_softcap;   /* 0: none */
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

/* Tensor NAME of shape [NE0, NE1, NE2] as doubles, NE1 * NE2 rows of
   NE0; NULL when absent (an error when REQUIRED) or on error.  */
static double *
tsr_ref_tensor3 (struct tsr_ref_loader *l, const char *name, int64_t ne0,
                 int64_t ne1, int64_t ne2, bool required)
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
  if (t.ne[0] != ne0 || t.ne[1] != ne1 || t.ne[2] != ne2 || t.ne[3] != 1)
    {
      char want[80];
      if (ne2 == 1)
        snprintf (want, sizeof want, "[%lld, %lld]", (long long) ne0,
                  (long long) ne1);
      else
        snprintf (want, sizeof want, "[%lld, %lld, %lld]", (long long) ne0,
                  (long long) ne1, (long long) ne2);
      tsr_ref_fail (l, "tensor %s has shape [%lld, %lld, %lld, %lld], "
                    "expected %s", name, (long long) t.ne[0],
                    (long long) t.ne[1], (long long) t.ne[2],
                    (long long) t.ne[3], want);
      return NULL;
    }
  const int64_t rows = ne1 * ne2;
  double *d = malloc ((size_t) (ne0 * rows) * sizeof *d);
  float *row = malloc ((size_t) ne0 * sizeof *row);
  const char *src = tsr_gguf_tensor_data (l->g, i);
  size_t row_size = tsr_row_size (t.type, ne0);
  for (int64_t r = 0; d && row && src && r < rows; r++)
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

/* Tensor NAME of shape [NE0, NE1] as doubles; NULL when absent (an
   error when REQUIRED) or on error.  */
static double *
tsr_ref_tensor (struct tsr_ref_loader *l, const char *name, int64_t ne0,
                int64_t ne1, bool required)
{
  return tsr_ref_tensor3 (l, name, ne0, ne1, 1, required);
}

/* A copy of rows FIRST .. FIRST + N - 1 of W, rows of IN doubles; NULL
   when W is NULL or out of memory (an error).  */
static double *
tsr_ref_rows (struct tsr_ref_loader *l, const double *w, int64_t in,
              int64_t first, int64_t n)
{
  if (!w)
    return NULL;
  double *d = malloc ((size_t) (in * n) * sizeof *d);
  if (!d)
    tsr_ref_fail (l, "out of memory");
  else
    memcpy (d, w + first * in, (size_t) (in * n) * sizeof *d);
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
                        y->bk, y->bv, y->q_norm, y->k_norm,
                        y->post_attn_norm, y->post_ffw_norm, y->ffn_norm,
                        y->w_gate, y->w_up, y->w_down, y->gate_inp,
                        y->gate_exps, y->up_exps, y->down_exps,
                        y->gate_inp_shexp, y->gate_shexp, y->up_shexp,
                        y->down_shexp };
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

/* The experts' keys of M (arch of L): ARCH.expert_count (required when
   REQUIRED; else absent or 0: no experts), expert_used_count,
   expert_feed_forward_length (default FF / expert_used_count; llama:
   always FF) and for qwen2moe expert_shared_feed_forward_length
   (default FF).  */
static void
tsr_ref_experts (struct tsr_ref_loader *l, struct tsr_ref_model *m,
                 bool required, int64_t ff)
{
  int64_t n, used = 0, ff_exp = ff, ff_sh = 0;
  tsr_ref_int (l, "expert_count", required, 0, &n);
  if (l->failed || (n == 0 && !required))
    return;
  tsr_ref_int (l, "expert_used_count", true, 0, &used);
  if (l->failed)
    return;
  if (n < 1 || n > 1 << 12 || used < 1 || used > n)
    {
      tsr_ref_fail (l, "bad hyper-parameters: %s.expert_count %lld, "
                    "%s.expert_used_count %lld (must be 1 .. expert_count)",
                    l->arch, (long long) n, l->arch, (long long) used);
      return;
    }
  if (m->arch != TSR_REF_LLAMA)
    tsr_ref_int (l, "expert_feed_forward_length", false, ff / used,
                 &ff_exp);
  if (m->arch == TSR_REF_QWEN2MOE)
    tsr_ref_int (l, "expert_shared_feed_forward_length", false, ff,
                 &ff_sh);
  if (l->failed)
    return;
  if (ff_exp < 1 || ff_exp > 1 << 24
      || (m->arch == TSR_REF_QWEN2MOE && (ff_sh < 1 || ff_sh > 1 << 24)))
    tsr_ref_fail (l, "bad hyper-parameters: expert feed-forward lengths "
                  "%lld, shared %lld", (long long) ff_exp,
                  (long long) ff_sh);
  m->n_expert = (int) n;
  m->n_expert_used = (int) used;
  m->n_ff_exp = (int) ff_exp;
  m->n_ff_shexp = (int) ff_sh;
  m->moe_norm = m->arch != TSR_REF_QWEN2MOE;
}

/* The hyper-parameters of M from the keys and token_embd's shape.  */
static void
tsr_ref_hparams (struct tsr_ref_loader *l, struct tsr_ref_model *m)
{
  const bool gemma = m->arch == TSR_REF_GEMMA2 || m->arch == TSR_REF_GEMMA3;
  const bool eps_default = gemma || m->arch == TSR_REF_QWEN2MOE;
  int64_t embd, layers, heads, kv, ff, hd, hd_v, rot, swa;
  tsr_ref_int (l, "embedding_length", true, 0, &embd);
  tsr_ref_int (l, "block_count", true, 0, &layers);
  tsr_ref_int (l, "feed_forward_length", true, 0, &ff);
  tsr_ref_int (l, "attention.head_count", true, 0, &heads);
  tsr_ref_int (l, "attention.head_count_kv", false, heads, &kv);
  tsr_ref_int (l, "attention.key_length", false,
               heads > 0 ? embd / heads : 0, &hd);
  tsr_ref_int (l, "attention.value_length", false, hd, &hd_v);
  tsr_ref_int (l, "rope.dimension_count", false, hd, &rot);
  tsr_ref_float (l, "attention.layer_norm_rms_epsilon", !eps_default, 1e-6,
                 &m->eps);
  tsr_ref_float (l, "rope.freq_base", false, 10000, &m->rope_base);
  tsr_ref_rope_scaling (l, m);
  swa = 0;
  if (gemma || m->arch == TSR_REF_LLAMA || m->arch == TSR_REF_PHI3)
    tsr_ref_int (l, "attention.sliding_window", gemma, 0, &swa);
  if (l->failed)
    return;
  if (hd_v != hd)
    tsr_ref_fail (l, "bad hyper-parameters: %s.attention.value_length "
                  "%lld differs from key_length %lld", l->arch,
                  (long long) hd_v, (long long) hd);
  if (embd < 1 || embd > 1 << 20 || layers < 0 || layers > 1 << 16
      || ff < 1 || ff > 1 << 24 || heads < 1 || heads > 1 << 16 || kv < 1
      || heads % kv || hd < 2 || hd > 1 << 16 || hd * heads > 1 << 24
      || hd_v != hd || rot < 2 || rot > hd || rot % 2)
    tsr_ref_fail (l, "bad hyper-parameters: embd %lld, layers %lld, ff %lld,"
                  " heads %lld/%lld, head_dim %lld/%lld, n_rot %lld",
                  (long long) embd, (long long) layers, (long long) ff,
                  (long long) heads, (long long) kv, (long long) hd,
                  (long long) hd_v, (long long) rot);
  if (swa < 0 || (gemma && swa < 1))
    tsr_ref_fail (l, "bad hyper-parameters: %s.attention.sliding_window "
                  "%lld", l->arch, (long long) swa);
  int64_t te = tsr_gguf_find_tensor (l->g, "token_embd.weight");
  struct tsr_gguf_tensor_info t = { 0 };
  if (te < 0 || tsr_gguf_get_tensor_info (l->g, te, &t) != TSR_OK
      || t.ne[1] < 1 || t.ne[1] > INT32_MAX)
    tsr_ref_fail (l, "missing tensor token_embd.weight");
  if (l->failed)
    return;
  m->n_embd = (int) embd;
  m->n_layer = (int) layers;
  m->n_ff = (int) ff;
  m->n_head = (int) heads;
  m->n_head_kv = (int) kv;
  m->head_dim = (int) hd;
  m->n_rot = (int) rot;
  m->n_vocab = (int) t.ne[1];
  m->n_swa = swa;
  m->gelu = gemma;
  m->embd_scale = gemma ? sqrt ((double) embd) : 1;
  m->kq_div = sqrt ((double) hd);
  if ((m->arch == TSR_REF_GEMMA2 && layers == 46)
      || (m->arch == TSR_REF_GEMMA3 && layers == 62))
    m->kq_div = sqrt ((double) (embd / heads));
  if (m->arch == TSR_REF_GEMMA2)
    {
      tsr_ref_float (l, "attn_logit_softcapping", false, 50,
                     &m->attn_softcap);
      tsr_ref_float (l, "final_logit_softcapping", false, 30,
                     &m->final_softcap);
      if (!l->failed && !(m->attn_softcap > 0 && isfinite (m->attn_softcap)
                          && m->final_softcap > 0
                          && isfinite (m->final_softcap)))
        tsr_ref_fail (l, "bad hyper-parameters: gemma2 soft-capping %g "
                      "(attention), %g (final)", m->attn_softcap,
                      m->final_softcap);
    }
  if (m->arch == TSR_REF_LLAMA || m->arch == TSR_REF_QWEN2MOE
      || m->arch == TSR_REF_QWEN3MOE)
    tsr_ref_experts (l, m, m->arch != TSR_REF_LLAMA, ff);
}

/* Layer IL's weights and settings.  */
static void
tsr_ref_layer_load (struct tsr_ref_loader *l, const struct tsr_ref_model *m,
                    int il, struct tsr_ref_layer *y)
{
  const int64_t e = m->n_embd, q = (int64_t) m->n_head * m->head_dim;
  const int64_t kv = (int64_t) m->n_head_kv * m->head_dim, ff = m->n_ff;
  const int64_t hd = m->head_dim, nx = m->n_expert, fx = m->n_ff_exp;
  const int64_t fs = m->n_ff_shexp;
  const enum tsr_ref_arch a = m->arch;
  const bool gemma = a == TSR_REF_GEMMA2 || a == TSR_REF_GEMMA3;
  const bool bias = a == TSR_REF_QWEN2 || a == TSR_REF_QWEN2MOE;
  char n[TSR_MAX_NAME];
#define TSR_REF_NAME(suffix) \
  (snprintf (n, sizeof n, "blk.%d.%s", il, suffix), n)
#define TSR_REF_T(field, suffix, ne0, ne1, req) \
  (y->field = tsr_ref_tensor (l, TSR_REF_NAME (suffix), ne0, ne1, req))
#define TSR_REF_X(field, suffix, ne0, ne1) \
  (y->field = tsr_ref_tensor3 (l, TSR_REF_NAME (suffix), ne0, ne1, nx, \
                               true))
  y->swa = m->n_swa > 0 && (a == TSR_REF_GEMMA2 ? il % 2 == 0
                            : a == TSR_REF_GEMMA3 ? il % 6 < 5 : true);
  y->rope_base = m->rope_base;
  y->freq_scale = m->freq_scale;
  if (a == TSR_REF_GEMMA3 && y->swa)
    {
      y->rope_base = 10000;
      y->freq_scale = 1;
    }
  TSR_REF_T (attn_norm, "attn_norm.weight", e, 1, true);
  if (a == TSR_REF_PHI3
      && tsr_gguf_find_tensor (l->g, TSR_REF_NAME ("attn_qkv.weight")) >= 0)
    {
      double *qkv = tsr_ref_tensor (l, n, e, q + 2 * kv, true);
      y->wq = tsr_ref_rows (l, qkv, e, 0, q);
      y->wk = tsr_ref_rows (l, qkv, e, q, kv);
      y->wv = tsr_ref_rows (l, qkv, e, q + kv, kv);
      free (qkv);
    }
  else
    {
      TSR_REF_T (wq, "attn_q.weight", e, q, true);
      TSR_REF_T (wk, "attn_k.weight", e, kv, true);
      TSR_REF_T (wv, "attn_v.weight", e, kv, true);
    }
  if (bias || a == TSR_REF_LLAMA)
    {
      TSR_REF_T (bq, "attn_q.bias", q, 1, bias);
      TSR_REF_T (bk, "attn_k.bias", kv, 1, bias);
      TSR_REF_T (bv, "attn_v.bias", kv, 1, bias);
    }
  if (a == TSR_REF_QWEN3 || a == TSR_REF_QWEN3MOE || a == TSR_REF_GEMMA3)
    {
      TSR_REF_T (q_norm, "attn_q_norm.weight", hd, 1, true);
      TSR_REF_T (k_norm, "attn_k_norm.weight", hd, 1, true);
    }
  TSR_REF_T (wo, "attn_output.weight", q, e, true);
  if (gemma)
    TSR_REF_T (post_attn_norm, "post_attention_norm.weight", e, 1, true);
  TSR_REF_T (ffn_norm, "ffn_norm.weight", e, 1, true);
  if (nx > 0)
    {
      TSR_REF_T (gate_inp, "ffn_gate_inp.weight", e, nx, true);
      TSR_REF_X (gate_exps, "ffn_gate_exps.weight", e, fx);
      TSR_REF_X (up_exps, "ffn_up_exps.weight", e, fx);
      TSR_REF_X (down_exps, "ffn_down_exps.weight", fx, e);
    }
  else if (a == TSR_REF_PHI3)
    {
      double *up = tsr_ref_tensor (l, TSR_REF_NAME ("ffn_up.weight"), e,
                                   2 * ff, true);
      y->w_gate = tsr_ref_rows (l, up, e, 0, ff);
      y->w_up = tsr_ref_rows (l, up, e, ff, ff);
      free (up);
    }
  else
    {
      TSR_REF_T (w_gate, "ffn_gate.weight", e, ff, true);
      TSR_REF_T (w_up, "ffn_up.weight", e, ff, true);
    }
  if (nx == 0)
    TSR_REF_T (w_down, "ffn_down.weight", ff, e, true);
  if (a == TSR_REF_QWEN2MOE)
    {
      TSR_REF_T (gate_inp_shexp, "ffn_gate_inp_shexp.weight", e, 1, true);
      TSR_REF_T (gate_shexp, "ffn_gate_shexp.weight", e, fs, true);
      TSR_REF_T (up_shexp, "ffn_up_shexp.weight", e, fs, true);
      TSR_REF_T (down_shexp, "ffn_down_shexp.weight", fs, e, true);
    }
  if (gemma)
    TSR_REF_T (post_ffw_norm, "post_ffw_norm.weight", e, 1, true);
#undef TSR_REF_X
#undef TSR_REF_T
#undef TSR_REF_NAME
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
  if (m->arch == TSR_REF_LLAMA)
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
  static const char *const longrope[] = { "rope_factors_long.weight",
                                          "rope_factors_short.weight" };
  const size_t n_arch = sizeof tsr_ref_arch_names
                        / sizeof tsr_ref_arch_names[0];
  struct tsr_ref_loader l = { .g = g, .err = err, .errlen = errlen };
  struct tsr_ref_model *m = calloc (1, sizeof *m);
  size_t a = n_arch;
  l.used = calloc ((size_t) tsr_gguf_n_tensors (g) + 1, sizeof *l.used);
  if (!m || !l.used)
    tsr_ref_fail (&l, "out of memory");
  else if (tsr_gguf_get_str (g, "general.architecture", &l.arch, NULL)
           != TSR_OK)
    tsr_ref_fail (&l, "missing key general.architecture");
  else
    for (a = 0; a < n_arch && strcmp (l.arch, tsr_ref_arch_names[a]); a++)
      ;
  if (!l.failed && a == n_arch)
    tsr_ref_fail (&l, "architecture %s is not llama, qwen2, qwen2moe, "
                  "qwen3, qwen3moe, gemma2, gemma3 or phi3", l.arch);
  for (int i = 0; i < 2 && !l.failed && a == TSR_REF_PHI3; i++)
    if (tsr_gguf_find_tensor (g, longrope[i]) >= 0)
      tsr_ref_fail (&l, "tensor %s: LongRoPE is not supported by the "
                    "reference", longrope[i]);
  if (!l.failed)
    {
      m->arch = (enum tsr_ref_arch) a;
      m->neox = m->arch != TSR_REF_LLAMA;
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

/* Y = rmsnorm (X) * WEIGHT, N elements (Y may be X).  */
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

/* Rotate the N_HEADS heads at V for position POS, with layer Y's base
   and scale.  */
static void
tsr_ref_rope (const struct tsr_ref_model *m, const struct tsr_ref_layer *y,
              double *v, int n_heads, int pos)
{
  int half = m->n_rot / 2;
  for (int i = 0; i < half; i++)
    {
      double theta = pos * y->freq_scale
                     * pow (y->rope_base, -2.0 * i / m->n_rot)
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

/* OUT (n_head * head_dim) = attention of query T over the keys it sees
   in layer Y (0 .. T, the last n_swa of them in a sliding-window
   layer); Q, K, V hold every position's rows; SCORES has room for
   T + 1.  */
static void
tsr_ref_attend (const struct tsr_ref_model *m, const struct tsr_ref_layer *y,
                const double *q, const double *k, const double *v, int t,
                double *scores, double *out)
{
  const int hd = m->head_dim, group = m->n_head / m->n_head_kv;
  const int64_t nq = (int64_t) m->n_head * hd;
  const int64_t nkv = (int64_t) m->n_head_kv * hd;
  const int u0 = y->swa && t - m->n_swa + 1 > 0 ? (int) (t - m->n_swa + 1)
                 : 0;
  for (int h = 0; h < m->n_head; h++)
    {
      const double *qh = q + t * nq + (int64_t) h * hd;
      const int64_t kvo = (int64_t) (h / group) * hd;
      double mx = -INFINITY, sum = 0;
      for (int u = u0; u <= t; u++)
        {
          double s = 0;
          for (int d = 0; d < hd; d++)
            s += qh[d] * k[u * nkv + kvo + d];
          scores[u] = s / m->kq_div;
          if (m->attn_softcap > 0)
            scores[u] = m->attn_softcap * tanh (scores[u] / m->attn_softcap);
          mx = scores[u] > mx ? scores[u] : mx;
        }
      for (int u = u0; u <= t; u++)
        sum += scores[u] = exp (scores[u] - mx);
      double *oh = out + (int64_t) h * hd;
      for (int d = 0; d < hd; d++)
        oh[d] = 0;
      for (int u = u0; u <= t; u++)
        for (int d = 0; d < hd; d++)
          oh[d] += scores[u] / sum * v[u * nkv + kvo + d];
    }
}

/* Scratch of the forward pass for N tokens.  */
struct tsr_ref_scratch
{
  double *x, *h, *q, *k, *v, *att, *o, *scores, *gate, *up, *eo, *probs;
  bool *chosen;
};

static void
tsr_ref_scratch_free (struct tsr_ref_scratch *s)
{
  double *all[] = { s->x, s->h, s->q, s->k, s->v, s->att, s->o, s->scores,
                    s->gate, s->up, s->eo, s->probs };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free (all[i]);
  free (s->chosen);
}

static bool
tsr_ref_scratch_alloc (const struct tsr_ref_model *m, int n,
                       struct tsr_ref_scratch *s)
{
  const size_t e = (size_t) m->n_embd, nq = (size_t) m->n_head * m->head_dim;
  const size_t nkv = (size_t) m->n_head_kv * m->head_dim;
  size_t ff = (size_t) m->n_ff;
  ff = (size_t) m->n_ff_exp > ff ? (size_t) m->n_ff_exp : ff;
  ff = (size_t) m->n_ff_shexp > ff ? (size_t) m->n_ff_shexp : ff;
  s->x = malloc ((size_t) n * e * sizeof (double));
  s->h = malloc (e * sizeof (double));
  s->q = malloc ((size_t) n * nq * sizeof (double));
  s->k = malloc ((size_t) n * nkv * sizeof (double));
  s->v = malloc ((size_t) n * nkv * sizeof (double));
  s->att = malloc (nq * sizeof (double));
  s->o = malloc (e * sizeof (double));
  s->scores = malloc ((size_t) n * sizeof (double));
  s->gate = malloc (ff * sizeof (double));
  s->up = malloc (ff * sizeof (double));
  s->eo = malloc (e * sizeof (double));
  s->probs = malloc (((size_t) m->n_expert + 1) * sizeof (double));
  s->chosen = malloc (((size_t) m->n_expert + 1) * sizeof (bool));
  return s->x && s->h && s->q && s->k && s->v && s->att && s->o
         && s->scores && s->gate && s->up && s->eo && s->probs && s->chosen;
}

/* The attention block of layer Y for every position: X += Wo attn
   (normed by post_attention_norm when Y has it).  */
static void
tsr_ref_attention (const struct tsr_ref_model *m,
                   const struct tsr_ref_layer *y, int n,
                   struct tsr_ref_scratch *s)
{
  const int64_t e = m->n_embd, nq = (int64_t) m->n_head * m->head_dim;
  const int64_t nkv = (int64_t) m->n_head_kv * m->head_dim;
  const int hd = m->head_dim;
  for (int t = 0; t < n; t++)
    {
      tsr_ref_rmsnorm (s->x + t * e, y->attn_norm, m->n_embd, m->eps, s->h);
      tsr_ref_matvec (y->wq, y->bq, s->h, e, nq, s->q + t * nq);
      tsr_ref_matvec (y->wk, y->bk, s->h, e, nkv, s->k + t * nkv);
      tsr_ref_matvec (y->wv, y->bv, s->h, e, nkv, s->v + t * nkv);
      for (int h = 0; y->q_norm && h < m->n_head; h++)
        tsr_ref_rmsnorm (s->q + t * nq + (int64_t) h * hd, y->q_norm, hd,
                         m->eps, s->q + t * nq + (int64_t) h * hd);
      for (int h = 0; y->k_norm && h < m->n_head_kv; h++)
        tsr_ref_rmsnorm (s->k + t * nkv + (int64_t) h * hd, y->k_norm, hd,
                         m->eps, s->k + t * nkv + (int64_t) h * hd);
      tsr_ref_rope (m, y, s->q + t * nq, m->n_head, t);
      tsr_ref_rope (m, y, s->k + t * nkv, m->n_head_kv, t);
    }
  for (int t = 0; t < n; t++)
    {
      tsr_ref_attend (m, y, s->q, s->k, s->v, t, s->scores, s->att);
      tsr_ref_matvec (y->wo, NULL, s->att, nq, e, s->o);
      if (y->post_attn_norm)
        tsr_ref_rmsnorm (s->o, y->post_attn_norm, m->n_embd, m->eps, s->o);
      for (int64_t i = 0; i < e; i++)
        s->x[t * e + i] += s->o[i];
    }
}

/* OUT = WDOWN (act (WGATE H) * (WUP H)), FF the inner length; act is
   gelu_tanh for gemma, else silu.  */
static void
tsr_ref_glu (const struct tsr_ref_model *m, const double *w_gate,
             const double *w_up, const double *w_down, int64_t ff,
             struct tsr_ref_scratch *s, double *out)
{
  const int64_t e = m->n_embd;
  const double c = 0.79788456080286535588;     /* sqrt (2 / pi) */
  tsr_ref_matvec (w_gate, NULL, s->h, e, ff, s->gate);
  tsr_ref_matvec (w_up, NULL, s->h, e, ff, s->up);
  for (int64_t i = 0; i < ff; i++)
    {
      double g = s->gate[i];
      if (m->gelu)
        s->gate[i] = 0.5 * g * (1 + tanh (c * (g + 0.044715 * g * g * g)))
                     * s->up[i];
      else
        s->gate[i] = g / (1 + exp (-g)) * s->up[i];
    }
  tsr_ref_matvec (w_down, NULL, s->gate, ff, e, out);
}

/* S->o = the mixture of experts of layer Y on S->h: the router's
   softmax, the top n_expert_used experts (ties: the lower index), their
   SwiGLUs weighted by their probabilities (normalized over the chosen
   when moe_norm); plus the shared expert times sigmoid
   (gate_inp_shexp . h) when Y has one.  */
static void
tsr_ref_moe (const struct tsr_ref_model *m, const struct tsr_ref_layer *y,
             struct tsr_ref_scratch *s)
{
  const int64_t e = m->n_embd, fx = m->n_ff_exp, nx = m->n_expert;
  double *p = s->probs, mx = -INFINITY, sum = 0, wsum = 0;
  tsr_ref_matvec (y->gate_inp, NULL, s->h, e, nx, p);
  for (int64_t i = 0; i < nx; i++)
    mx = p[i] > mx ? p[i] : mx;
  for (int64_t i = 0; i < nx; i++)
    sum += p[i] = exp (p[i] - mx);
  for (int64_t i = 0; i < nx; i++)
    {
      p[i] /= sum;
      s->chosen[i] = false;
    }
  for (int k = 0; k < m->n_expert_used; k++)
    {
      int64_t best = -1;
      for (int64_t i = 0; i < nx; i++)
        if (!s->chosen[i] && (best < 0 || p[i] > p[best]))
          best = i;
      s->chosen[best] = true;
      wsum += p[best];
    }
  for (int64_t i = 0; i < e; i++)
    s->o[i] = 0;
  for (int64_t x = 0; x < nx; x++)
    if (s->chosen[x])
      {
        double w = m->moe_norm ? p[x] / wsum : p[x];
        tsr_ref_glu (m, y->gate_exps + x * fx * e, y->up_exps + x * fx * e,
                     y->down_exps + x * e * fx, fx, s, s->eo);
        for (int64_t i = 0; i < e; i++)
          s->o[i] += w * s->eo[i];
      }
  if (y->gate_inp_shexp)
    {
      double g = 0;
      for (int64_t i = 0; i < e; i++)
        g += y->gate_inp_shexp[i] * s->h[i];
      g = 1 / (1 + exp (-g));
      tsr_ref_glu (m, y->gate_shexp, y->up_shexp, y->down_shexp,
                   m->n_ff_shexp, s, s->eo);
      for (int64_t i = 0; i < e; i++)
        s->o[i] += g * s->eo[i];
    }
}

/* The feed-forward block of layer Y for every position: X += the
   SwiGLU (GeGLU for gemma) or the experts of rmsnorm (x) * ffn_norm,
   normed by post_ffw_norm when Y has it.  */
static void
tsr_ref_ffn (const struct tsr_ref_model *m, const struct tsr_ref_layer *y,
             int n, struct tsr_ref_scratch *s)
{
  const int64_t e = m->n_embd;
  for (int t = 0; t < n; t++)
    {
      tsr_ref_rmsnorm (s->x + t * e, y->ffn_norm, m->n_embd, m->eps, s->h);
      if (y->gate_inp)
        tsr_ref_moe (m, y, s);
      else
        tsr_ref_glu (m, y->w_gate, y->w_up, y->w_down, m->n_ff, s, s->o);
      if (y->post_ffw_norm)
        tsr_ref_rmsnorm (s->o, y->post_ffw_norm, m->n_embd, m->eps, s->o);
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
    for (int64_t i = 0; i < e; i++)
      s.x[t * e + i] = m->tok_embd[tokens[t] * e + i] * m->embd_scale;
  for (int il = 0; il < m->n_layer; il++)
    {
      tsr_ref_attention (m, &m->layers[il], n_tokens, &s);
      tsr_ref_ffn (m, &m->layers[il], n_tokens, &s);
    }
  for (int t = 0; t < n_tokens; t++)
    {
      double *row = logits + (int64_t) t * m->n_vocab;
      tsr_ref_rmsnorm (s.x + t * e, m->output_norm, m->n_embd, m->eps, s.h);
      tsr_ref_matvec (m->output, NULL, s.h, e, m->n_vocab, row);
      for (int j = 0; m->final_softcap > 0 && j < m->n_vocab; j++)
        row[j] = m->final_softcap * tanh (row[j] / m->final_softcap);
    }
  tsr_ref_scratch_free (&s);
  return 0;
}

#endif /* TSR_MODEL_REF_H */
