/* tessera-gguf requantize with the presets: the type each tensor of a
   small llama-shaped model gets (the rules of the published presets,
   worked out by hand below), the fallback for rows a block does not
   divide and its message, the tied-embedding and grouped-query rules,
   general.file_type; then convert --type=f32 of the result, which must
   hold exactly the reference dequantization of every tensor, and the
   per-type totals of dump and check.

   The model: 16 blocks; in each, attn_norm [256] and attn_q, attn_v,
   attn_output, ffn_down [256, 4]; blk.0.ffn_up [288, 4] (288 = 9 * 32,
   not a multiple of 256); blk.0.odd [48, 2] (not a multiple of 32);
   token_embd and output [256, 8], output_norm [256].

   "More bits" layers of 16 (first eighth, last eighth, every third in
   between): 0, 1, 4, 7, 10, 13, 14, 15.  */
#include "gguf-test.h"

#define N_LAYER 16

static char out[1 << 18];
static const char *bld;

#define run(...) gt_run_tool (bld, out, sizeof out, __VA_ARGS__)

static void
add (tsr_gguf_writer *w, tsr_context *ctx, const char *name, int64_t ne0,
     int64_t ne1)
{
  tsr_tensor *t = ne1 ? tsr_new_tensor_2d (ctx, TSR_TYPE_F32, ne0, ne1)
                      : tsr_new_tensor_1d (ctx, TSR_TYPE_F32, ne0);
  tsr_set_name (t, name);
  for (int64_t i = 0; i < tsr_nelements (t); i++)
    tsr_set_f32_1d (t, (int) i, tsr_test_uniform (-1, 1));
  tsr_gguf_writer_add_tensor (w, t);
}

/* TIED: no output.weight; KV_HEADS: llama.attention.head_count_kv.  */
static void
write_model (const char *path, bool tied, uint32_t kv_heads)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  char name[64];
  tsr_test_seed (7);
  tsr_gguf_set_str (w, "general.architecture", "llama");
  tsr_gguf_set_u32 (w, "llama.block_count", N_LAYER);
  tsr_gguf_set_u32 (w, "llama.attention.head_count", 8);
  tsr_gguf_set_u32 (w, "llama.attention.head_count_kv", kv_heads);
  add (w, ctx, "token_embd.weight", 256, 8);
  for (int l = 0; l < N_LAYER; l++)
    {
      static const char *const mats[] = { "attn_q", "attn_v", "attn_output",
                                          "ffn_down" };
      snprintf (name, sizeof name, "blk.%d.attn_norm.weight", l);
      add (w, ctx, name, 256, 0);
      for (int m = 0; m < 4; m++)
        {
          snprintf (name, sizeof name, "blk.%d.%s.weight", l, mats[m]);
          add (w, ctx, name, 256, 4);
        }
    }
  add (w, ctx, "blk.0.ffn_up.weight", 288, 4);
  add (w, ctx, "blk.0.odd.weight", 48, 2);
  add (w, ctx, "output_norm.weight", 256, 0);
  if (!tied)
    add (w, ctx, "output.weight", 256, 8);
  tsr_gguf_writer_write_file (w, path);
  tsr_gguf_writer_free (w);
  tsr_context_free (ctx);
}

static tsr_type
type_in (tsr_gguf *g, const char *name)
{
  struct tsr_gguf_tensor_info info;
  int64_t i = g ? tsr_gguf_find_tensor (g, name) : -1;
  return i >= 0 && tsr_gguf_get_tensor_info (g, i, &info) == TSR_OK
         ? info.type : TSR_TYPE_COUNT;
}

static bool
more_bits (int l)
{
  return l == 0 || l == 1 || l == 4 || l == 7 || l == 10 || l == 13
         || l == 14 || l == 15;
}

/* What a preset gives the tensors of the untied model with n_gqa 1.  */
struct expect
{
  const char *preset;
  int file_type;
  tsr_type base, output, up_fallback;
  tsr_type (*attn_v) (int layer);
  tsr_type (*ffn_down) (int layer);
  tsr_type attn_output;
};

#define T(x) TSR_TYPE_##x
static tsr_type q4km_more (int l) { return more_bits (l) ? T (Q6_K) : T (Q4_K); }
static tsr_type q5km_more (int l) { return more_bits (l) ? T (Q6_K) : T (Q5_K); }
static tsr_type q4ks_v (int l) { return l < 4 ? T (Q5_K) : T (Q4_K); }
static tsr_type q4ks_down (int l) { return l < 2 ? T (Q5_K) : T (Q4_K); }
static tsr_type q3km_v (int l) { return l < 2 ? T (Q5_K) : T (Q4_K); }
static tsr_type q3km_down (int l) { return l < 1 ? T (Q5_K) : T (Q4_K); }
static tsr_type q3k (int l) { (void) l; return T (Q3_K); }
static tsr_type iq4xs_v (int l) { (void) l; return T (IQ4_XS); }
static tsr_type iq4xs_down (int l) { return l < 2 ? T (Q5_K) : T (IQ4_XS); }
static tsr_type q6k (int l) { (void) l; return T (Q6_K); }
static tsr_type q80 (int l) { (void) l; return T (Q8_0); }
static tsr_type q40 (int l) { (void) l; return T (Q4_0); }

static const struct expect presets[] = {
  { "Q4_K_M", 15, T (Q4_K), T (Q6_K), T (Q5_0), q4km_more, q4km_more, T (Q4_K) },
  { "q4_k_s", 14, T (Q4_K), T (Q6_K), T (Q5_0), q4ks_v, q4ks_down, T (Q4_K) },
  { "Q5_K_M", 17, T (Q5_K), T (Q6_K), T (Q5_1), q5km_more, q5km_more, T (Q5_K) },
  { "Q6_K", 18, T (Q6_K), T (Q6_K), T (Q8_0), q6k, q6k, T (Q6_K) },
  { "Q8_0", 7, T (Q8_0), T (Q8_0), T (Q8_0), q80, q80, T (Q8_0) },
  { "Q4_0", 2, T (Q4_0), T (Q6_K), T (Q4_0), q40, q40, T (Q4_0) },
  { "iq4_xs", 30, T (IQ4_XS), T (Q6_K), T (IQ4_NL), iq4xs_v, iq4xs_down,
    T (IQ4_XS) },
  { "Q3_K_M", 12, T (Q3_K), T (Q6_K), T (Q4_0), q3km_v, q3km_down, T (Q4_K) },
  { "Q2_K", 10, T (Q2_K), T (Q6_K), T (Q4_0), q3k, q3k, T (Q3_K) },
};

static void
check_preset (const struct expect *e, const char *model, const char *qf)
{
  int st = run ("requantize --type=%s %s %s", e->preset, model, qf);
  tsr_gguf *g = tsr_gguf_open (qf, NULL);
  char name[64], why[160] = "";
  uint32_t ftype = 0;
  bool ok = st == 0 && g
            && tsr_gguf_get_u32 (g, "general.file_type", &ftype) == TSR_OK
            && (int) ftype == e->file_type;
  if (!ok)
    snprintf (why, sizeof why, "exit %d, file type %u", st, ftype);
  struct { const char *name; tsr_type want; } fixed[] = {
    { "token_embd.weight", e->base }, { "output.weight", e->output },
    { "output_norm.weight", T (F32) }, { "blk.0.ffn_up.weight", e->up_fallback },
    { "blk.0.odd.weight", T (F16) },
  };
  for (size_t i = 0; ok && i < sizeof fixed / sizeof fixed[0]; i++)
    if (type_in (g, fixed[i].name) != fixed[i].want)
      {
        ok = false;
        snprintf (why, sizeof why, "%s is %s, not %s", fixed[i].name,
                  tsr_type_name (type_in (g, fixed[i].name)),
                  tsr_type_name (fixed[i].want));
      }
  for (int l = 0; ok && l < N_LAYER; l++)
    {
      struct { const char *m; tsr_type want; } mats[] = {
        { "attn_norm", T (F32) }, { "attn_q", e->base },
        { "attn_v", e->attn_v (l) }, { "attn_output", e->attn_output },
        { "ffn_down", e->ffn_down (l) },
      };
      for (size_t m = 0; ok && m < sizeof mats / sizeof mats[0]; m++)
        {
          snprintf (name, sizeof name, "blk.%d.%s.weight", l, mats[m].m);
          if (type_in (g, name) != mats[m].want)
            {
              ok = false;
              snprintf (why, sizeof why, "%s is %s, not %s", name,
                        tsr_type_name (type_in (g, name)),
                        tsr_type_name (mats[m].want));
            }
        }
    }
  CHECK (ok, "requantize %s: the type of every tensor%s%s", e->preset,
         why[0] ? ": " : "", why);
  tsr_gguf_close (g);
}

/* convert --type=f32 of QF holds the reference dequantization of every
   tensor of QF, bit for bit.  */
static void
check_to_f32 (const char *qf, const char *ff, const char *what)
{
  int st = run ("convert --type=f32 %s %s", qf, ff);
  tsr_gguf *q = tsr_gguf_open (qf, NULL), *f = tsr_gguf_open (ff, NULL);
  bool ok = st == 0 && q && f && tsr_gguf_n_tensors (q) == tsr_gguf_n_tensors (f);
  int64_t n_quant = 0;
  for (int64_t i = 0; ok && i < tsr_gguf_n_tensors (q); i++)
    {
      struct tsr_gguf_tensor_info qi, fi;
      tsr_gguf_get_tensor_info (q, i, &qi);
      tsr_gguf_get_tensor_info (f, i, &fi);
      int64_t n = qi.ne[0] * qi.ne[1] * qi.ne[2] * qi.ne[3];
      float *want = malloc ((size_t) n * sizeof *want);
      ok = want && fi.type == T (F32) && strcmp (qi.name, fi.name) == 0
           && tsr_dequantize_row (qi.type, tsr_gguf_tensor_data (q, i), want,
                                  n) == TSR_OK
           && memcmp (want, tsr_gguf_tensor_data (f, i), (size_t) n * 4) == 0;
      n_quant += tsr_type_traits (qi.type)->is_quantized;
      free (want);
    }
  CHECK (ok && n_quant > 0, "convert --type=f32 of the %s file: every tensor "
         "is its exact dequantization (%lld quantized)", what,
         (long long) n_quant);
  tsr_gguf_close (q);
  tsr_gguf_close (f);
}

static void
check_tied_gqa (const char *model, const char *qf)
{
  write_model (model, true, 2);         /* tied, 4 heads per KV head */
  int st = run ("requantize --type=Q2_K %s %s", model, qf);
  tsr_gguf *g = tsr_gguf_open (qf, NULL);
  CHECK (st == 0 && type_in (g, "token_embd.weight") == T (Q6_K)
         && type_in (g, "blk.3.attn_v.weight") == T (Q4_K)
         && type_in (g, "blk.3.attn_q.weight") == T (Q2_K),
         "Q2_K: a tied token_embd gets the output's q6_K, grouped-query "
         "attn_v q4_K");
  tsr_gguf_close (g);
  st = run ("requantize --type=IQ4_XS %s %s", model, qf);
  g = tsr_gguf_open (qf, NULL);
  CHECK (st == 0 && type_in (g, "blk.3.attn_v.weight") == T (Q5_K),
         "IQ4_XS: grouped-query attn_v q5_K");
  tsr_gguf_close (g);
}

static void
check_tool_output (const char *model, const char *qf)
{
  int st = run ("requantize --type=Q4_K_M %s %s", model, qf);
  CHECK (st == 0 && strstr (out, "blk.0.ffn_up.weight: rows of 288 are not "
                            "a multiple of the q4_K block size 256: q5_0 "
                            "instead")
         && strstr (out, "blk.0.odd.weight: rows of 48 are not a multiple "
                    "of the q4_K block size 256: f16 instead")
         && strstr (out, "tensors requantized to Q4_K_M (f32 17, f16 1, "
                    "q5_0 1, q4_K 49, q6_K 17)"),
         "requantize says which tensors fell back and the types written");
  st = run ("dump %s", qf);
  CHECK (st == 0 && strstr (out, "types:") && strstr (out, "  q6_K       17 "
                                                      "tensors"),
         "dump: tensor count per type");
  st = run ("dump --json %s", qf);
  CHECK (st == 0 && strstr (out, "{\"type\": \"q5_0\", \"tensors\": 1, "
                            "\"bytes\": 792}"),
         "dump --json: count and bytes per type");
  st = run ("check %s", qf);
  CHECK (st == 0 && strstr (out, ": OK: ") && strstr (out, "q4_K 49, q6_K 17)"),
         "check a requantized file: OK, with its types");
  CHECK (run ("requantize --type=Q4_K_X %s %s", model, qf) == 2
         && strstr (out, "or a preset"), "an unknown preset: exit 2");
  CHECK (run ("convert --type=Q4_K_M %s %s", model, qf) == 2
         && strstr (out, "is a preset: use requantize"),
         "convert does not take presets");
}

/* The contents of file PATH into a malloc'ed buffer, its size to *N.  */
static char *
slurp (const char *path, size_t *n)
{
  FILE *f = fopen (path, "rb");
  char *buf = NULL;
  *n = 0;
  if (f && fseek (f, 0, SEEK_END) == 0)
    {
      long len = ftell (f);
      rewind (f);
      buf = len > 0 ? malloc ((size_t) len) : NULL;
      if (buf && fread (buf, 1, (size_t) len, f) == (size_t) len)
        *n = (size_t) len;
    }
  if (f)
    fclose (f);
  return buf;
}

/* --threads: the rows of one tensor (100 of them, so that up to 6
   threads share them) are converted in parts; the file must not depend
   on how many.  */
static void
check_threads (const char *model, const char *qf)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_test_seed (11);
  tsr_gguf_set_str (w, "general.architecture", "llama");
  tsr_gguf_set_u32 (w, "llama.block_count", 1);
  add (w, ctx, "blk.0.ffn_down.weight", 512, 100);
  CHECK (tsr_gguf_writer_write_file (w, model) == TSR_OK,
         "threads: model written");
  tsr_gguf_writer_free (w);
  tsr_context_free (ctx);

  char one[4096];
  size_t n1 = 0, n3 = 0;
  snprintf (one, sizeof one, "%s-1", qf);
  static const char *const types[] = { "q4_K", "q6_K", "iq4_xs", "q5_0" };
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    {
      int s1 = run ("requantize --threads=1 --type=%s %s %s", types[i],
                    model, one);
      int s3 = run ("requantize -T 3 --type=%s %s %s", types[i], model, qf);
      char *a = slurp (one, &n1), *b = slurp (qf, &n3);
      CHECK (s1 == 0 && s3 == 0 && a && b && n1 == n3 && n1 > 512 * 100 / 4
             && memcmp (a, b, n1) == 0,
             "requantize --type=%s: 1 and 3 threads write the same bytes "
             "(%zu, %zu)", types[i], n1, n3);
      free (a);
      free (b);
    }
  remove (one);
  CHECK (run ("requantize --threads=0 --type=q4_K %s %s", model, qf) == 2
         && strstr (out, "--threads=0: not a number from 1 to 256"),
         "--threads=0 is refused: exit 2");
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
  char model[4096], qf[4096], ff[4096];
  snprintf (model, sizeof model, "%s", gt_path ("rq-model"));
  snprintf (qf, sizeof qf, "%s", gt_path ("rq-quant"));
  snprintf (ff, sizeof ff, "%s", gt_path ("rq-f32"));
  write_model (model, false, 8);
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    {
      check_preset (&presets[i], model, qf);
      if (i == 0 || i == 6 || i == 8)
        check_to_f32 (qf, ff, presets[i].preset);
    }
  check_tool_output (model, qf);
  check_threads (gt_path ("rq-threads"), qf);
  static const char *const plain[] = { "q4_1", "q5_0", "q5_1", "q3_K",
                                       "q5_K", "iq4_nl", "mxfp4", "Q8_K" };
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
    {
      int st = run ("requantize --type=%s %s %s", plain[i], model, qf);
      tsr_gguf *g = tsr_gguf_open (qf, NULL);
      tsr_type want = tsr_type_from_name (plain[i]);
      CHECK (st == 0 && type_in (g, "blk.5.attn_v.weight") == want
             && type_in (g, "output.weight") == want
             && type_in (g, "output_norm.weight") == T (F32),
             "requantize --type=%s: every weight %s, norms f32", plain[i],
             plain[i]);
      tsr_gguf_close (g);
      check_to_f32 (qf, ff, plain[i]);
    }
  check_tied_gqa (model, qf);
  remove (model);
  remove (qf);
  remove (ff);
  return TSR_TEST_EXIT ();
}
