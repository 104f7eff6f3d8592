/* Area: tessera-gguf synth and the reference forward pass
   (testsuite/lib/tsr-model-ref.h).
   Purpose: synth writes the keys, tensors (names, shapes, types) and
   tokenizer it is asked for, the same bytes for the same seed, and
   clear errors; the reference runs its models to finite, causal logits
   whose argmax follows the input, agrees with a direct computation on
   a model whose layers are zero, and refuses files it cannot run.
   Limitations: properties only; comparing a runner with the reference
   is the runner's test.  */
#define _POSIX_C_SOURCE 200809L   /* popen */
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include <tessera.h>
#include "tsr-test.h"
#include "tsr-model-ref.h"

#define N_TOK 6

static const char *bld;
static char out[8192];

/* What a synth command line asks for.  */
struct expect
{
  const char *name, *args, *arch;
  int64_t vocab, embd, layers, heads, kv, ff, ctx;
  tsr_type type, embd_type;
  bool tied, rope_freqs;
  double rope_base, linear;
  const char *tokenizer;        /* "llama", "gpt2" or NULL */
};

static const struct expect models[] = {
  { "llama-f32", "--type=f32 --untied --seed=3", "llama",
    512, 64, 2, 4, 2, 128, 256, TSR_TYPE_F32, TSR_TYPE_F32, false, false,
    10000, 0, "llama" },
  { "llama-q8_0", "--type=q8_0 --tied --rope-freqs --heads=2 --kv-heads=1",
    "llama", 512, 64, 2, 2, 1, 128, 256, TSR_TYPE_Q8_0, TSR_TYPE_Q8_0, true,
    true, 10000, 0, "llama" },
  { "llama-q4_0", "--type=q4_0 --embd-type=q8_0 --rope-linear=4 "
    "--tokenizer=gpt2 --ff=96 --layers=3 --rope-base=5e5", "llama",
    512, 64, 3, 4, 2, 96, 256, TSR_TYPE_Q4_0, TSR_TYPE_Q8_0, false, false,
    500000, 4, "gpt2" },
  { "llama-f16", "--type=f16 --vocab=300 --tokenizer=none --heads=8 "
    "--kv-heads=8 --ctx=64", "llama",
    300, 64, 2, 8, 8, 128, 64, TSR_TYPE_F16, TSR_TYPE_F16, false, false,
    10000, 0, NULL },
  { "qwen2-f32", "--arch=qwen2 --type=f32 --tied", "qwen2",
    512, 64, 2, 4, 2, 128, 256, TSR_TYPE_F32, TSR_TYPE_F32, true, false,
    1e6, 0, "gpt2" },
  { "qwen2-q4_0", "--arch=qwen2 --type=q4_0 --untied --embd=128 --heads=8 "
    "--kv-heads=2 --layers=1 --embd-type=bf16", "qwen2",
    512, 128, 1, 8, 2, 128, 256, TSR_TYPE_Q4_0, TSR_TYPE_BF16, false,
    false, 1e6, 0, "gpt2" },
  { "llama-3.2-1b-small", "--like=llama-3.2-1b --layers=1 --vocab=1000 "
    "--embd=256 --heads=8 --kv-heads=2 --ff=256 --type=q8_0", "llama",
    1000, 256, 1, 8, 2, 256, 131072, TSR_TYPE_Q8_0, TSR_TYPE_Q8_0, true,
    true, 500000, 0, "gpt2" },
  { "qwen2-0.5b-small", "--like=qwen2-0.5b --layers=1 --vocab=2000 "
    "--ff=64 --type=q8_0", "qwen2",
    2000, 896, 1, 14, 2, 64, 32768, TSR_TYPE_Q8_0, TSR_TYPE_Q8_0, true,
    false, 1e6, 0, "gpt2" },
};
#define N_MODELS (sizeof models / sizeof models[0])

static const char *
path_of (const char *name, char *buf, size_t n)
{
  snprintf (buf, n, "%s/testsuite/bin/model-synth-%s-%ld.gguf", bld, name,
            (long) getpid ());
  return buf;
}

/* Run tessera-gguf synth ARGS OUT; its output in OUT; exit status.  */
static int
synth (const char *args, const char *path)
{
  char cmd[8192];
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-gguf synth %s %s 2>&1", bld,
            args, path);
  FILE *p = popen (cmd, "r");
  size_t n = p ? fread (out, 1, sizeof out - 1, p) : 0;
  out[n] = '\0';
  int st = p ? pclose (p) : -1;
  return WIFEXITED (st) ? WEXITSTATUS (st) : -1;
}

/* Keys.  */

static int64_t
get_u32 (const tsr_gguf *g, const char *arch, const char *suffix)
{
  char key[128];
  uint32_t v;
  snprintf (key, sizeof key, "%s%s%s", arch ? arch : "", arch ? "." : "",
            suffix);
  return tsr_gguf_get_u32 (g, key, &v) == TSR_OK ? (int64_t) v : -1;
}

static double
get_f32 (const tsr_gguf *g, const char *arch, const char *suffix)
{
  char key[128];
  float v;
  snprintf (key, sizeof key, "%s.%s", arch, suffix);
  return tsr_gguf_get_f32 (g, key, &v) == TSR_OK ? v : NAN;
}

static uint32_t
file_type_of (tsr_type t)
{
  return t == TSR_TYPE_F16 ? 1 : t == TSR_TYPE_Q4_0 ? 2
         : t == TSR_TYPE_Q8_0 ? 7 : t == TSR_TYPE_BF16 ? 32 : 0;
}

static void
check_keys (const tsr_gguf *g, const struct expect *e)
{
  const char *arch = "", *a = e->arch, *stype = NULL;
  tsr_gguf_get_str (g, "general.architecture", &arch, NULL);
  char key[128];
  snprintf (key, sizeof key, "%s.rope.scaling.type", a);
  bool has_scaling = tsr_gguf_get_str (g, key, &stype, NULL) == TSR_OK;
  double eps = strcmp (a, "qwen2") == 0 ? 1e-6 : 1e-5;
  CHECK (strcmp (arch, a) == 0
         && get_u32 (g, a, "block_count") == e->layers
         && get_u32 (g, a, "context_length") == e->ctx
         && get_u32 (g, a, "embedding_length") == e->embd
         && get_u32 (g, a, "feed_forward_length") == e->ff
         && get_u32 (g, a, "attention.head_count") == e->heads
         && get_u32 (g, a, "attention.head_count_kv") == e->kv
         && get_u32 (g, a, "vocab_size") == e->vocab
         && get_u32 (g, a, "rope.dimension_count") == e->embd / e->heads
         && get_f32 (g, a, "attention.layer_norm_rms_epsilon") == (float) eps
         && get_f32 (g, a, "rope.freq_base") == (float) e->rope_base
         && get_u32 (g, NULL, "general.file_type") == file_type_of (e->type),
         "%s: hyper-parameter keys", e->name);
  CHECK (e->linear ? has_scaling && strcmp (stype, "linear") == 0
                     && get_f32 (g, a, "rope.scaling.factor") == e->linear
                   : !has_scaling,
         "%s: rope scaling keys", e->name);
}

/* Tensors.  */

struct want
{
  char name[64];
  int64_t ne0, ne1;
  tsr_type type;
};

static int
want_add (struct want *w, int n, const char *name, int64_t ne0, int64_t ne1,
          tsr_type type)
{
  snprintf (w[n].name, sizeof w[n].name, "%s", name);
  w[n].ne0 = ne0;
  w[n].ne1 = ne1;
  w[n].type = type;
  return n + 1;
}

/* The tensors E asks for, in no particular order.  */
static int
want_list (const struct expect *e, struct want *w)
{
  const int64_t hd = e->embd / e->heads, q = e->heads * hd, kv = e->kv * hd;
  const tsr_type f = TSR_TYPE_F32, t = e->type;
  int n = want_add (w, 0, "token_embd.weight", e->embd, e->vocab,
                    e->embd_type);
  n = want_add (w, n, "output_norm.weight", e->embd, 1, f);
  if (!e->tied)
    n = want_add (w, n, "output.weight", e->embd, e->vocab, t);
  if (e->rope_freqs)
    n = want_add (w, n, "rope_freqs.weight", hd / 2, 1, f);
  for (int il = 0; il < e->layers; il++)
    {
      char s[64];
#define W(suffix, ne0, ne1, type) \
      (snprintf (s, sizeof s, "blk.%d.%s", il, suffix), \
       n = want_add (w, n, s, ne0, ne1, type))
      W ("attn_norm.weight", e->embd, 1, f);
      W ("attn_q.weight", e->embd, q, t);
      W ("attn_k.weight", e->embd, kv, t);
      W ("attn_v.weight", e->embd, kv, t);
      W ("attn_output.weight", q, e->embd, t);
      W ("ffn_norm.weight", e->embd, 1, f);
      W ("ffn_gate.weight", e->embd, e->ff, t);
      W ("ffn_up.weight", e->embd, e->ff, t);
      W ("ffn_down.weight", e->ff, e->embd, t);
      if (strcmp (e->arch, "qwen2") == 0)
        {
          W ("attn_q.bias", q, 1, f);
          W ("attn_k.bias", kv, 1, f);
          W ("attn_v.bias", kv, 1, f);
        }
#undef W
    }
  return n;
}

static void
check_tensors (const tsr_gguf *g, const struct expect *e)
{
  struct want *w = calloc ((size_t) (4 + 12 * e->layers), sizeof *w);
  int n = w ? want_list (e, w) : 0, bad = -1;
  for (int i = 0; w && i < n && bad < 0; i++)
    {
      struct tsr_gguf_tensor_info t;
      int64_t k = tsr_gguf_find_tensor (g, w[i].name);
      if (k < 0 || tsr_gguf_get_tensor_info (g, k, &t) != TSR_OK
          || t.ne[0] != w[i].ne0 || t.ne[1] != w[i].ne1 || t.ne[2] != 1
          || t.type != w[i].type || t.n_dims != (w[i].ne1 > 1 ? 2 : 1))
        bad = i;
    }
  CHECK (w && bad < 0 && tsr_gguf_n_tensors (g) == n,
         "%s: tensor names, shapes and types (%s; %lld in the file, %d "
         "expected)", e->name, bad >= 0 ? w[bad].name : "all match",
         (long long) tsr_gguf_n_tensors (g), n);
  free (w);
}

/* Tokenizer.  */

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

static bool
is_token (const char **sorted, uint64_t n, const char *s)
{
  return bsearch (&s, sorted, n, sizeof *sorted, cmp_str) != NULL;
}

/* Every merge "a b" of G has tokens a, b and ab.  */
static bool
merges_valid (const tsr_gguf *g, const char **sorted, uint64_t n)
{
  tsr_gguf_type et;
  uint64_t n_merges = 0;
  if (tsr_gguf_get_array_info (g, "tokenizer.ggml.merges", &et, &n_merges)
      != TSR_OK || n_merges == 0)
    return false;
  for (uint64_t i = 0; i < n_merges; i++)
    {
      const char *m;
      char a[256], b[256], ab[512];
      tsr_gguf_get_array_str (g, "tokenizer.ggml.merges", i, &m, NULL);
      const char *sp = strchr (m, ' ');
      if (!sp || sp == m || strlen (m) > 250)
        return false;
      snprintf (a, sizeof a, "%.*s", (int) (sp - m), m);
      snprintf (b, sizeof b, "%s", sp + 1);
      snprintf (ab, sizeof ab, "%s%s", a, b);
      if (!is_token (sorted, n, a) || !is_token (sorted, n, b)
          || !is_token (sorted, n, ab))
        return false;
    }
  return true;
}

static void
check_vocab (const tsr_gguf *g, const struct expect *e)
{
  const char *model = NULL;
  bool has = tsr_gguf_get_str (g, "tokenizer.ggml.model", &model, NULL)
             == TSR_OK;
  if (!e->tokenizer)
    {
      CHECK (!has && tsr_gguf_find_key (g, "tokenizer.ggml.tokens") < 0,
             "%s: no tokenizer keys", e->name);
      return;
    }
  tsr_gguf_type et;
  uint64_t n = 0;
  tsr_gguf_get_array_info (g, "tokenizer.ggml.tokens", &et, &n);
  const char **tok = calloc (n + 1, sizeof *tok);
  int32_t *type = calloc (n + 1, sizeof *type);
  bool types_ok = type && tsr_gguf_get_array_data
    (g, "tokenizer.ggml.token_type", TSR_GGUF_INT32, 0, n, type) == TSR_OK;
  for (uint64_t i = 0; tok && i < n; i++)
    {
      tsr_gguf_get_array_str (g, "tokenizer.ggml.tokens", i, &tok[i], NULL);
      types_ok = types_ok && (type[i] == 1 || type[i] == 2 || type[i] == 3
                              || type[i] == 6);
    }
  bool unique = tok != NULL;
  if (tok)
    qsort (tok, n, sizeof *tok, cmp_str);
  for (uint64_t i = 1; unique && i < n; i++)
    unique = strcmp (tok[i - 1], tok[i]) != 0;
  bool gpt2 = strcmp (e->tokenizer, "gpt2") == 0;
  int64_t bos = get_u32 (g, NULL, "tokenizer.ggml.bos_token_id");
  int64_t eos = get_u32 (g, NULL, "tokenizer.ggml.eos_token_id");
  CHECK (has && strcmp (model, e->tokenizer) == 0 && (int64_t) n == e->vocab
         && unique && types_ok && bos >= 0 && bos < e->vocab && eos >= 0
         && eos < e->vocab && (!gpt2 || merges_valid (g, tok, n))
         && (gpt2 || (bos == 1 && eos == 2)),
         "%s: %s vocabulary of %lld unique tokens, valid types%s", e->name,
         e->tokenizer, (long long) n, gpt2 ? " and merges" : "");
  free (tok);
  free (type);
}

/* The reference.  */

static bool
all_finite (const double *v, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    if (!isfinite (v[i]))
      return false;
  return true;
}

static int64_t
argmax (const double *v, int64_t n)
{
  int64_t best = 0;
  for (int64_t i = 1; i < n; i++)
    best = v[i] > v[best] ? i : best;
  return best;
}

static void
check_reference (const tsr_gguf *g, const struct expect *e)
{
  char err[256] = "";
  struct tsr_ref_model *m = tsr_ref_model_load (g, err, sizeof err);
  CHECK (m && tsr_ref_model_n_vocab (m) == e->vocab, "%s: reference loads%s%s",
         e->name, *err ? ": " : "", err);
  if (!m)
    return;
  int64_t nv = e->vocab;
  int32_t tok[N_TOK] = { 1, 17, 42, 99, 5, 200 }, later[N_TOK];
  double *a = malloc (N_TOK * nv * sizeof *a);
  double *b = malloc (N_TOK * nv * sizeof *b);
  memcpy (later, tok, sizeof tok);
  later[4] = 7;
  later[5] = 123;
  int st = a && b ? tsr_ref_model_forward (m, tok, N_TOK, a) : -1;
  if (st == 0)
    st = tsr_ref_model_forward (m, later, N_TOK, b);
  CHECK (st == 0 && all_finite (a, N_TOK * nv), "%s: logits are finite",
         e->name);
  CHECK (st == 0 && memcmp (a, b, 4 * nv * sizeof *a) == 0
         && memcmp (a + 4 * nv, b + 4 * nv, 2 * nv * sizeof *a) != 0,
         "%s: causal: later tokens change only their own logits", e->name);
  int distinct = 0;
  double ss = 0;
  for (int t = 0; st == 0 && t < N_TOK; t++)
    {
      bool seen = false;
      for (int u = 0; u < t; u++)
        seen |= argmax (a + t * nv, nv) == argmax (a + u * nv, nv);
      distinct += !seen;
      for (int64_t j = 0; j < nv; j++)
        ss += a[t * nv + j] * a[t * nv + j];
    }
  double rms = sqrt (ss / (N_TOK * nv));
  CHECK (distinct >= 3 && rms > 0.5 && rms < 20,
         "%s: logits are O(1) (rms %.2f) and their argmax follows the "
         "input (%d distinct of %d)", e->name, rms, distinct, N_TOK);
  free (a);
  free (b);
  tsr_ref_model_free (m);
}

/* Determinism.  */

static bool
same_bytes (const char *p, const char *q)
{
  FILE *f = fopen (p, "rb"), *h = fopen (q, "rb");
  bool same = f && h;
  for (int c = 0; same && c != EOF;)
    {
      c = getc (f);
      same = c == getc (h);
    }
  if (f)
    fclose (f);
  if (h)
    fclose (h);
  return same;
}

static void
check_determinism (void)
{
  char p1[4096], p2[4096], p3[4096];
  const char *args = "--type=q4_0 --arch=qwen2 --seed=11";
  int s1 = synth (args, path_of ("det1", p1, sizeof p1));
  int s2 = synth (args, path_of ("det2", p2, sizeof p2));
  int s3 = synth ("--type=q4_0 --arch=qwen2 --seed=12",
                  path_of ("det3", p3, sizeof p3));
  CHECK (s1 == 0 && s2 == 0 && same_bytes (p1, p2),
         "the same seed writes the same bytes");
  CHECK (s3 == 0 && !same_bytes (p1, p3), "another seed writes other bytes");
  remove (p1);
  remove (p2);
  remove (p3);
}

/* Rewritten models.  */

/* True for the attention and FFN matrices of a layer.  */
static bool
layer_matrix (const char *name)
{
  size_t n = strlen (name);
  return strncmp (name, "blk.", 4) == 0 && n > 7
         && strcmp (name + n - 7, ".weight") == 0 && !strstr (name, "_norm");
}

/* Copy SRC to DST with every layer matrix zero (ZERO) and, when EXTRA,
   one more tensor of that name.  */
static bool
rewrite (const char *src, const char *dst, bool zero, const char *extra)
{
  tsr_gguf *g = tsr_gguf_open (src, NULL);
  tsr_context *ctx = tsr_context_new (false);
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  bool ok = g && ctx && w && tsr_gguf_writer_copy_kv (w, g) == TSR_OK;
  for (int64_t i = 0; ok && i < tsr_gguf_n_tensors (g); i++)
    {
      struct tsr_gguf_tensor_info info;
      tsr_gguf_get_tensor_info (g, i, &info);
      tsr_tensor *t = tsr_new_tensor (ctx, info.type, info.n_dims, info.ne);
      ok = t != NULL;
      if (ok && !(zero && layer_matrix (info.name)))
        memcpy (t->data, tsr_gguf_tensor_data (g, i), info.size);
      ok = ok && tsr_gguf_writer_add_tensor (w, tsr_set_name (t, info.name))
                 == TSR_OK;
    }
  if (ok && extra)
    ok = tsr_gguf_writer_add_tensor (w, tsr_set_name
      (tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 64), extra)) == TSR_OK;
  ok = ok && tsr_gguf_writer_write_file (w, dst) == TSR_OK;
  tsr_gguf_writer_free (w);
  tsr_context_free (ctx);
  tsr_gguf_close (g);
  return ok;
}

/* The f32 tensor NAME of G, or NULL.  */
static const float *
f32_data (const tsr_gguf *g, const char *name)
{
  struct tsr_gguf_tensor_info t;
  int64_t i = tsr_gguf_find_tensor (g, name);
  if (i < 0 || tsr_gguf_get_tensor_info (g, i, &t) != TSR_OK
      || t.type != TSR_TYPE_F32)
    return NULL;
  return tsr_gguf_tensor_data (g, i);
}

/* Largest |reference - direct| over the logits of TOK, relative to the
   largest logit: with zero layers, x stays the embedding and
   logits = Wout (rmsnorm (embedding) * output_norm).  */
static double
zero_layers_error (const tsr_gguf *g, const struct tsr_ref_model *m,
                   int64_t embd, int64_t nv, double eps)
{
  const float *emb = f32_data (g, "token_embd.weight");
  const float *wout = f32_data (g, "output.weight");
  const float *norm = f32_data (g, "output_norm.weight");
  int32_t tok[3] = { 3, 300, 77 };
  double *ref = malloc (3 * nv * sizeof *ref);
  double *h = malloc (embd * sizeof *h);
  double worst = INFINITY, top = 0;
  wout = wout ? wout : emb;
  if (emb && norm && ref && h && tsr_ref_model_forward (m, tok, 3, ref) == 0)
    worst = 0;
  for (int t = 0; worst == 0 && t < 3; t++)
    {
      const float *e = emb + tok[t] * embd;
      double ss = 0;
      for (int64_t i = 0; i < embd; i++)
        ss += (double) e[i] * e[i];
      for (int64_t i = 0; i < embd; i++)
        h[i] = e[i] / sqrt (ss / embd + eps) * norm[i];
      for (int64_t j = 0; j < nv; j++)
        {
          double s = 0;
          for (int64_t i = 0; i < embd; i++)
            s += (double) wout[j * embd + i] * h[i];
          double d = fabs (s - ref[t * nv + j]);
          worst = d > worst ? d : worst;
          top = fabs (s) > top ? fabs (s) : top;
        }
    }
  free (ref);
  free (h);
  return worst / (top > 0 ? top : 1);
}

static void
check_zero_layers (const char *arch, const char *args)
{
  char p[4096], z[4096], a[256], err[256] = "";
  snprintf (a, sizeof a, "--arch=%s --type=f32 --layers=1 %s", arch, args);
  bool ok = synth (a, path_of ("zero-src", p, sizeof p)) == 0
            && rewrite (p, path_of ("zero", z, sizeof z), true, NULL);
  tsr_gguf *g = ok ? tsr_gguf_open (z, NULL) : NULL;
  struct tsr_ref_model *m = g ? tsr_ref_model_load (g, err, sizeof err)
                              : NULL;
  double e = m ? zero_layers_error (g, m, m->n_embd, m->n_vocab, m->eps)
               : INFINITY;
  CHECK (e < 1e-12, "%s %s: zero layers give Wout (rmsnorm (embedding) * "
         "norm) (relative error %.3g)%s%s", arch, args, e, *err ? ": " : "",
         err);
  tsr_ref_model_free (m);
  tsr_gguf_close (g);
  remove (p);
  remove (z);
}

/* The reference refuses what it cannot run, with a message.  */
static void
check_refusals (void)
{
  char p[4096], x[4096], err[256] = "";
  bool ok = synth ("--type=f32", path_of ("refuse", p, sizeof p)) == 0
            && rewrite (p, path_of ("extra", x, sizeof x), false,
                        "blk.0.attn_output.bias");
  tsr_gguf *g = ok ? tsr_gguf_open (x, NULL) : NULL;
  struct tsr_ref_model *m = g ? tsr_ref_model_load (g, err, sizeof err)
                              : NULL;
  CHECK (g && !m && strstr (err, "blk.0.attn_output.bias"),
         "reference refuses a tensor it would not use (%s)", err);
  tsr_gguf_close (g);

  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_gguf_set_str (w, "general.architecture", "gpt2");
  ok = tsr_gguf_writer_write_file (w, x) == TSR_OK;
  tsr_gguf_writer_free (w);
  g = ok ? tsr_gguf_open (x, NULL) : NULL;
  *err = '\0';
  m = g ? tsr_ref_model_load (g, err, sizeof err) : NULL;
  CHECK (g && !m && strstr (err, "gpt2"),
         "reference refuses another architecture (%s)", err);
  tsr_gguf_close (g);
  remove (p);
  remove (x);
}

/* The tool's errors: exit status 1 and a message.  */
static void
check_errors (void)
{
  static const struct { const char *args, *says; } bad[] = {
    { "--like=llama-9b", "--like=llama-9b" },
    { "--embd=100 --heads=3", "not divisible by --heads" },
    { "--heads=4 --kv-heads=3", "not divisible by --kv-heads" },
    { "--type=q4_0 --ff=100", "block size 32" },
    { "--type=q8_0 --embd=48 --heads=2 --kv-heads=1", "block size 32" },
    { "--type=q9_0", "--type=q9_0" },
    { "--vocab=200 --tokenizer=llama", "too small" },
    { "--arch=qwen2 --rope-freqs", "rope_freqs" },
    { "--embd=36 --heads=4", "odd" },
  };
  char p[4096];
  path_of ("bad", p, sizeof p);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      int st = synth (bad[i].args, p);
      CHECK (st == 1 && strstr (out, bad[i].says) && access (p, F_OK) != 0,
             "synth %s: exit 1 saying '%s'", bad[i].args, bad[i].says);
      remove (p);
    }
  CHECK (synth ("--bogus", p) == 2, "synth with an unknown option: exit 2");
  CHECK (synth ("--help", "") == 0 && strstr (out, "llama-3.2-1b")
         && strstr (out, "--rope-linear"), "synth --help");
}

int
main (void)
{
  bld = getenv ("TSR_TEST_BUILDDIR");
  if (!bld)
    {
      CHECK (0, "test environment is set (TSR_TEST_BUILDDIR)");
      return TSR_TEST_EXIT ();
    }
  for (size_t i = 0; i < N_MODELS; i++)
    {
      const struct expect *e = &models[i];
      char p[4096];
      int st = synth (e->args, path_of (e->name, p, sizeof p));
      tsr_gguf *g = st == 0 ? tsr_gguf_open (p, NULL) : NULL;
      CHECK (g != NULL, "%s: synth %s writes a valid file (exit %d)%s%s",
             e->name, e->args, st, st ? ": " : "", st ? out : "");
      if (g)
        {
          check_keys (g, e);
          check_tensors (g, e);
          check_vocab (g, e);
          check_reference (g, e);
        }
      tsr_gguf_close (g);
      remove (p);
    }
  check_determinism ();
  check_zero_layers ("llama", "--untied");
  check_zero_layers ("qwen2", "--tied");
  check_refusals ();
  check_errors ();
  return TSR_TEST_EXIT ();
}
