/* tessera-gguf: dump (text and JSON), check (exit status and the
   offset message) and convert / requantize between f32, f16, bf16,
   q8_0 and q4_0, run from the build tree.  The other block types and
   the presets: requantize.c.  */
#include "gguf-test.h"

static char out[65536];
static const char *bld;

#define run(...) gt_run_tool (bld, out, sizeof out, __VA_ARGS__)

/* A model: w [64, 4] f32, norm [64] f32, ids [3] i32, odd [48, 2] f16.  */
static void
write_model (const char *path)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_gguf_set_str (w, "general.architecture", "tool\"test");
  tsr_gguf_set_u32 (w, "tool.count", 42);
  const char *toks[] = { "a", "b\n" };
  tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens", toks, 2);
  tsr_tensor *t = tsr_set_name (tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 64, 4),
                                "w");
  for (int i = 0; i < 256; i++)
    tsr_set_f32_1d (t, i, (float) ((i * 37) % 101) / 50.0f - 1.0f);
  tsr_gguf_writer_add_tensor (w, t);
  t = tsr_set_name (tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 64), "norm");
  for (int i = 0; i < 64; i++)
    tsr_set_f32_1d (t, i, 1.0f + i / 64.0f);
  tsr_gguf_writer_add_tensor (w, t);
  t = tsr_set_name (tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 3), "ids");
  for (int i = 0; i < 3; i++)
    tsr_set_f32_1d (t, i, (float) i);
  tsr_gguf_writer_add_tensor (w, t);
  t = tsr_set_name (tsr_new_tensor_2d (ctx, TSR_TYPE_F16, 48, 2), "odd");
  for (int i = 0; i < 96; i++)
    tsr_set_f32_1d (t, i, i / 8.0f);
  tsr_gguf_writer_add_tensor (w, t);
  tsr_gguf_writer_write_file (w, path);
  tsr_gguf_writer_free (w);
  tsr_context_free (ctx);
}

static tsr_type
type_of (const char *path, const char *name)
{
  tsr_gguf *g = tsr_gguf_open (path, NULL);
  struct tsr_gguf_tensor_info info;
  tsr_type t = TSR_TYPE_COUNT;
  if (g && tsr_gguf_get_tensor_info (g, tsr_gguf_find_tensor (g, name),
                                     &info) == TSR_OK)
    t = info.type;
  tsr_gguf_close (g);
  return t;
}

/* Largest difference between tensor "w" of two files, as floats.  */
static double
w_diff (const char *a, const char *b)
{
  tsr_gguf *ga = tsr_gguf_open (a, NULL), *gb = tsr_gguf_open (b, NULL);
  double m = INFINITY;
  if (ga && gb)
    {
      struct tsr_gguf_tensor_info ia, ib;
      tsr_gguf_get_tensor_info (ga, tsr_gguf_find_tensor (ga, "w"), &ia);
      tsr_gguf_get_tensor_info (gb, tsr_gguf_find_tensor (gb, "w"), &ib);
      float fa[256], fb[256];
      tsr_type_traits (ia.type)->to_float
        (tsr_gguf_tensor_data (ga, tsr_gguf_find_tensor (ga, "w")), fa, 256);
      tsr_type_traits (ib.type)->to_float
        (tsr_gguf_tensor_data (gb, tsr_gguf_find_tensor (gb, "w")), fb, 256);
      m = 0;
      for (int i = 0; i < 256; i++)
        m = fmax (m, fabs ((double) fa[i] - fb[i]));
    }
  tsr_gguf_close (ga);
  tsr_gguf_close (gb);
  return m;
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
  char model[4096], conv[4096], bad[4096];
  snprintf (model, sizeof model, "%s", gt_path ("tool-model"));
  snprintf (conv, sizeof conv, "%s", gt_path ("tool-conv"));
  snprintf (bad, sizeof bad, "%s", gt_path ("tool-bad"));
  write_model (model);

  CHECK (run ("--version") == 0 && strstr (out, "tessera-gguf (Tessera)"),
         "--version");
  CHECK (run ("--help") == 0 && strstr (out, "requantize"), "--help");
  CHECK (run ("frobnicate x") == 2, "unknown command: exit 2");
  CHECK (run ("dump") == 2, "dump without a file: exit 2");
  CHECK (run ("convert --type=q4_2 %s %s", model, conv) == 2,
         "convert to an unknown type: exit 2");

  int st = run ("dump %s", model);
  CHECK (st == 0 && strstr (out, "GGUF version 3") && strstr (out, "tool.count")
         && strstr (out, "42") && strstr (out, "\"tool\\\"test\"")
         && strstr (out, "string[2]") && strstr (out, "[64, 4]")
         && strstr (out, "tensors: 4"), "dump: metadata and tensor table");
  st = run ("dump --json %s", model);
  CHECK (st == 0 && strstr (out, "\"key\": \"tool.count\", \"type\": \"u32\", "
                            "\"value\": 42")
         && strstr (out, "\"value\": [\"a\", \"b\\n\"]")
         && strstr (out, "{\"name\": \"w\", \"type\": \"f32\", \"file_type\": "
                    "0, \"shape\": [64, 4], \"offset\": 0, \"size\": 1024}"),
         "dump --json: keys, escaped strings, tensors");

  CHECK (run ("check %s", model) == 0 && strstr (out, ": OK: GGUF version 3, "
                                               "3 keys, 4 tensors"),
         "check a valid file: exit 0");
  FILE *f = fopen (bad, "wb");
  struct gt_buf b = { 0 };
  gt_header (&b, 3, 1ULL << 32, 0);
  gt_bytes (&b, "0123456789", 10);
  if (f)
    {
      fwrite (b.p, 1, b.n, f);
      fclose (f);
    }
  gt_free (&b);
  st = run ("check %s %s", model, bad);
  CHECK (st == 1 && strstr (out, "offset 8: n_tensors 4294967296 exceeds "
                            "what a 34-byte file can hold"),
         "check a malformed file: exit 1 and the offset");
  CHECK (run ("dump %s", bad) == 1 && strstr (out, "offset 8:"),
         "dump a malformed file: exit 1");

  static const char *const types[] = { "f16", "bf16", "q8_0", "q4_0",
                                       "f32" };
  static const double tol[] = { 1e-3, 1e-2, 2e-2, 0.15, 1e-6 };
  for (int i = 0; i < 5; i++)
    {
      st = run ("convert --type=%s %s %s", types[i], model, conv);
      tsr_type want = tsr_type_from_name (types[i]);
      int quant = tsr_type_traits (want)->is_quantized;
      double d = w_diff (model, conv);
      CHECK (st == 0 && type_of (conv, "w") == want
             && type_of (conv, "ids") == TSR_TYPE_I32
             && type_of (conv, "norm") == TSR_TYPE_F32
             && type_of (conv, "odd") == (quant ? TSR_TYPE_F16 : want)
             && d <= tol[i],
             "convert to %s (w error %g; i32 and the 1-D norm kept%s)",
             types[i], d, quant ? ", 48-wide tensors kept" : "");
    }
  /* Requantize in place: q8_0 file to q4_0, OUT the same as IN.  */
  run ("convert -t q8_0 %s %s", model, conv);
  st = run ("requantize --type=q4_0 %s %s", conv, conv);
  CHECK (st == 0 && type_of (conv, "w") == TSR_TYPE_Q4_0
         && w_diff (model, conv) < 0.2, "requantize q8_0 to q4_0 in place");
  tsr_gguf *g = tsr_gguf_open (conv, NULL);
  uint32_t count = 0, ftype = 0, qver = 0;
  CHECK (g && tsr_gguf_get_u32 (g, "tool.count", &count) == TSR_OK
         && count == 42 && tsr_gguf_n_kv (g) == 5
         && tsr_gguf_get_u32 (g, "general.file_type", &ftype) == TSR_OK
         && ftype == 2
         && tsr_gguf_get_u32 (g, "general.quantization_version", &qver)
            == TSR_OK && qver == 2,
         "requantize copies the metadata and records the file type");
  tsr_gguf_close (g);
  run ("convert -t f16 %s %s", model, conv);
  g = tsr_gguf_open (conv, NULL);
  CHECK (g && tsr_gguf_get_u32 (g, "tool.count", &count) == TSR_OK
         && count == 42 && tsr_gguf_n_kv (g) == 3,
         "convert copies the metadata unchanged");
  tsr_gguf_close (g);
  /* What convert writes, the model runner reads (issue 36: f16 norms
     were written, and refused).  */
  static const char *const runnable[] = { "f16", "bf16", "q8_0" };
  run ("synth --layers=1 %s", model);
  for (int i = 0; i < 3; i++)
    {
      run ("convert --type=%s %s %s", runnable[i], model, conv);
      char cmd[12000];
      snprintf (cmd, sizeof cmd, "TESSERA_BACKEND_PATH='%s/modules/cpu' "
                "'%s/tools/tessera-run' -m '%s' --tokens=1,2 -n 1 -d CPU "
                "2>&1", bld, bld, conv);
      FILE *p = popen (cmd, "r");
      size_t n = p ? fread (out, 1, sizeof out - 1, p) : 0;
      out[n] = '\0';
      int rs = p ? pclose (p) : -1;
      CHECK (rs == 0, "tessera-run reads convert --type=%s's file: %s",
             runnable[i], out);
    }
  remove (model);
  remove (conv);
  remove (bad);
  return TSR_TEST_EXIT ();
}
