/* Against the format description, both ways: a file written byte by
   byte here (not with Tessera's writer) is read back exactly, as GGUF
   version 3 and version 2; and Tessera's writer produces exactly the
   bytes the description gives for a known model.  */
#include "gguf-test.h"

static const char *const tokens[] = { "<s>", "</s>", "hello", "" };

/* Tensor data: bytes B at DATA + offset, a recognizable pattern.  */
static void
put_data (struct gt_buf *b, size_t n, int seed)
{
  for (size_t i = 0; i < n; i++)
    gt_u8 (b, (i * 31 + seed) & 0xff);
}

struct expected_tensor
{
  const char *name;
  uint32_t n_dims;
  uint64_t ne[4];
  uint32_t file_type;
  tsr_type type;
  uint64_t offset, size;
};

static const struct expected_tensor tensors[] = {
  { "token_embd.weight", 2, { 8, 4 }, GT_TYPE_F16, TSR_TYPE_F16, 0, 64 },
  { "output_norm.weight", 1, { 8 }, GT_TYPE_F32, TSR_TYPE_F32, 64, 32 },
  { "blk.0.attn_q.weight", 2, { 32, 2 }, GT_TYPE_Q8_0, TSR_TYPE_Q8_0, 96,
    68 },
  { "blk.0.ffn.weight", 3, { 32, 1, 1 }, GT_TYPE_Q4_0, TSR_TYPE_Q4_0, 176,
    18 },
  { "pos", 1, { 3 }, GT_TYPE_I32, TSR_TYPE_I32, 208, 12 },
  { "scale", 1, { 2 }, GT_TYPE_BF16, TSR_TYPE_BF16, 224, 4 },
};
#define N_TENSORS 6

static size_t
build_file (struct gt_buf *b, uint32_t version)
{
  memset (b, 0, sizeof *b);
  gt_header (b, version, N_TENSORS, 7);
  gt_key (b, "general.architecture", GT_STRING);
  gt_str (b, "tiny");
  gt_key (b, "tiny.context_length", GT_U32);
  gt_u32 (b, 128);
  gt_key (b, "tiny.rope.freq_base", GT_F32);
  gt_f32 (b, 10000.0f);
  gt_key (b, "general.alignment", GT_U32);
  gt_u32 (b, 16);
  gt_key (b, "tokenizer.ggml.tokens", GT_ARRAY);
  gt_u32 (b, GT_STRING);
  gt_u64 (b, 4);
  for (int i = 0; i < 4; i++)
    gt_str (b, tokens[i]);
  gt_key (b, "tokenizer.ggml.scores", GT_ARRAY);
  gt_u32 (b, GT_F32);
  gt_u64 (b, 3);
  gt_f32 (b, -1.5f);
  gt_f32 (b, 0.0f);
  gt_f32 (b, 2.5f);
  gt_key (b, "tiny.eps", GT_F64);
  gt_f64 (b, 1e-6);
  for (int i = 0; i < N_TENSORS; i++)
    gt_tensor_info (b, tensors[i].name, tensors[i].n_dims, tensors[i].ne,
                    tensors[i].file_type, tensors[i].offset);
  gt_pad (b, 16);
  size_t data = b->n;
  for (int i = 0; i < N_TENSORS; i++)
    {
      while (b->n < data + tensors[i].offset)
        gt_u8 (b, 0);
      put_data (b, tensors[i].size, i);
    }
  return data;
}

static void
read_back (uint32_t version)
{
  struct gt_buf b;
  size_t data = build_file (&b, version);
  struct tsr_gguf_error err;
  tsr_gguf *g = tsr_gguf_from_memory (b.p, b.n, &err);
  CHECK (g != NULL, "v%u: independent file parses: %s", version,
         g ? "" : err.message);
  if (!g)
    {
      gt_free (&b);
      return;
    }
  CHECK (tsr_gguf_version (g) == version && tsr_gguf_alignment (g) == 16
         && tsr_gguf_data_offset (g) == data && tsr_gguf_size (g) == b.n,
         "v%u: version, alignment 16, data offset %zu", version, data);
  const char *s;
  uint32_t u32;
  float f32;
  double f64;
  CHECK (tsr_gguf_n_kv (g) == 7
         && tsr_gguf_get_str (g, "general.architecture", &s, NULL) == TSR_OK
         && strcmp (s, "tiny") == 0
         && tsr_gguf_get_u32 (g, "tiny.context_length", &u32) == TSR_OK
         && u32 == 128
         && tsr_gguf_get_f32 (g, "tiny.rope.freq_base", &f32) == TSR_OK
         && f32 == 10000.0f
         && tsr_gguf_get_f64 (g, "tiny.eps", &f64) == TSR_OK && f64 == 1e-6,
         "v%u: scalar values", version);
  uint64_t n;
  tsr_gguf_type et;
  int ok = tsr_gguf_get_array_info (g, "tokenizer.ggml.tokens", &et, &n)
           == TSR_OK && et == TSR_GGUF_STRING && n == 4;
  for (uint64_t i = 0; ok && i < n; i++)
    ok = tsr_gguf_get_array_str (g, "tokenizer.ggml.tokens", i, &s, NULL)
         == TSR_OK && strcmp (s, tokens[i]) == 0;
  CHECK (ok, "v%u: array of strings", version);
  float scores[3];
  CHECK (tsr_gguf_get_array_data (g, "tokenizer.ggml.scores",
                                  TSR_GGUF_FLOAT32, 0, 3, scores) == TSR_OK
         && scores[0] == -1.5f && scores[1] == 0.0f && scores[2] == 2.5f,
         "v%u: array of f32", version);
  for (int i = 0; i < N_TENSORS; i++)
    {
      const struct expected_tensor *e = &tensors[i];
      struct tsr_gguf_tensor_info info;
      int64_t k = tsr_gguf_find_tensor (g, e->name);
      ok = k == i && tsr_gguf_get_tensor_info (g, k, &info) == TSR_OK
           && info.type == e->type && info.file_type == e->file_type
           && info.n_dims == (int) e->n_dims && info.offset == e->offset
           && info.size == e->size;
      for (uint32_t d = 0; d < 4; d++)
        ok = ok && info.ne[d] == (int64_t) (d < e->n_dims ? e->ne[d] : 1);
      ok = ok && memcmp (tsr_gguf_tensor_data (g, k), b.p + data + e->offset,
                         e->size) == 0;
      CHECK (ok, "v%u: tensor '%s' (%s, offset %llu)", version, e->name,
             tsr_type_name (e->type), (unsigned long long) e->offset);
    }
  tsr_gguf_close (g);
  gt_free (&b);
}

/* What the format description says Tessera's writer must produce for
   the model built in writer_exact.  */
static void
expected_bytes (struct gt_buf *b, const unsigned char *wdata,
                const unsigned char *qdata)
{
  memset (b, 0, sizeof *b);
  gt_header (b, 3, 2, 4);
  gt_key (b, "general.architecture", GT_STRING);
  gt_str (b, "tiny");
  gt_key (b, "tiny.block_count", GT_U32);
  gt_u32 (b, 1);
  gt_key (b, "tiny.ids", GT_ARRAY);
  gt_u32 (b, GT_I16);
  gt_u64 (b, 3);
  gt_u16 (b, -2);
  gt_u16 (b, 0);
  gt_u16 (b, 300);
  gt_key (b, "tiny.names", GT_ARRAY);
  gt_u32 (b, GT_STRING);
  gt_u64 (b, 2);
  gt_str (b, "x");
  gt_str (b, "yz");
  uint64_t wne[2] = { 3, 2 }, qne[1] = { 32 };
  gt_tensor_info (b, "w", 2, wne, GT_TYPE_F32, 0);
  gt_tensor_info (b, "q", 1, qne, GT_TYPE_Q8_0, 32);
  gt_pad (b, 32);
  gt_bytes (b, wdata, 24);
  gt_pad (b, 32);
  gt_bytes (b, qdata, 34);
  gt_pad (b, 32);
}

static void
writer_exact (void)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *w = tsr_set_name (tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 3, 2),
                                "w");
  tsr_tensor *q = tsr_set_name (tsr_new_tensor_1d (ctx, TSR_TYPE_Q8_0, 32),
                                "q");
  for (int i = 0; i < 6; i++)
    tsr_set_f32_1d (w, i, (float) i - 2.5f);
  for (int i = 0; i < 34; i++)
    ((unsigned char *) q->data)[i] = (unsigned char) (i * 7);
  tsr_gguf_writer *wr = tsr_gguf_writer_new ();
  int16_t ids[] = { -2, 0, 300 };
  const char *names[] = { "x", "yz" };
  tsr_gguf_set_str (wr, "general.architecture", "tiny");
  tsr_gguf_set_u32 (wr, "tiny.block_count", 1);
  tsr_gguf_set_array (wr, "tiny.ids", TSR_GGUF_INT16, ids, 3);
  tsr_gguf_set_array_str (wr, "tiny.names", names, 2);
  tsr_gguf_writer_add_tensor (wr, w);
  tsr_gguf_writer_add_tensor (wr, q);
  void *got;
  size_t size;
  int st = tsr_gguf_writer_write_memory (wr, &got, &size);
  struct gt_buf want;
  expected_bytes (&want, w->data, q->data);
  size_t diff = 0;
  while (st == TSR_OK && diff < size && diff < want.n
         && ((unsigned char *) got)[diff] == want.p[diff])
    diff++;
  CHECK (st == TSR_OK && size == want.n && diff == size,
         "writer output is byte-exact (%zu bytes; first difference at %zu)",
         want.n, diff);
  if (st == TSR_OK)
    free (got);
  /* Streaming to a FILE gives the same bytes.  */
  FILE *f = tmpfile ();
  unsigned char *back = malloc (want.n + 1);
  st = f ? tsr_gguf_writer_write_stream (wr, f) : TSR_ERR_INVALID_ARG;
  if (f)
    rewind (f);
  CHECK (st == TSR_OK && fread (back, 1, want.n + 1, f) == want.n
         && memcmp (back, want.p, want.n) == 0,
         "stream output is byte-exact");
  if (f)
    fclose (f);
  free (back);
  gt_free (&want);
  tsr_gguf_writer_free (wr);
  tsr_context_free (ctx);
}

int
main (void)
{
  read_back (3);
  read_back (2);
  writer_exact ();
  return TSR_TEST_EXIT ();
}
