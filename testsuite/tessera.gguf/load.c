/* Loading a GGUF file's tensors into backend buffers and computing with
   them: weights of type f32, f16, bf16, q8_0 and q4_0 are written to a
   file, loaded on the CPU backend (pointing into the mapping, and
   copied), and mul_mat (weights, x) is checked against a reference
   computed from the stored values in double (for quantized weights,
   with x as it is or rounded to q8_0, whichever is closer).  A non-host buffer type
   made here checks that device buffers get each tensor by one
   tsr_tensor_set.  */
#include "gguf-test.h"
#include <tessera/module.h>

#define K 64
#define M 8
#define N 3

static const tsr_type wtypes[] = { TSR_TYPE_F32, TSR_TYPE_F16, TSR_TYPE_BF16,
                                   TSR_TYPE_Q8_0, TSR_TYPE_Q4_0 };
#define N_WTYPES 5

/* Write the model: w.<type> [K, M] for each type, x [K, N] f32.  */
static int
write_model (const char *path)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  float *v = malloc (K * M * sizeof *v);
  tsr_gguf_set_str (w, "general.architecture", "test");
  for (int i = 0; i < N_WTYPES; i++)
    {
      tsr_tensor *t = tsr_new_tensor_2d (ctx, wtypes[i], K, M);
      char name[32];
      snprintf (name, sizeof name, "w.%s", tsr_type_name (wtypes[i]));
      tsr_set_name (t, name);
      for (int j = 0; j < K * M; j++)
        v[j] = tsr_test_uniform (-1.0f, 1.0f);
      tsr_type_traits (wtypes[i])->from_float (v, t->data, K * M);
      tsr_gguf_writer_add_tensor (w, t);
    }
  tsr_tensor *x = tsr_set_name (tsr_new_tensor_2d (ctx, TSR_TYPE_F32, K, N),
                                "x");
  for (int j = 0; j < K * N; j++)
    tsr_set_f32_1d (x, j, tsr_test_uniform (-1.0f, 1.0f));
  tsr_gguf_writer_add_tensor (w, x);
  int st = tsr_gguf_writer_write_file (w, path);
  free (v);
  tsr_gguf_writer_free (w);
  tsr_context_free (ctx);
  return st;
}

/* mul_mat (W, X) from the file's stored values, in double; with Q8,
   X's rows rounded to q8_0 (what a backend may multiply quantized
   weights with, see tessera/ops.h).  */
static void
reference (const tsr_gguf *g, int64_t wi, int q8, double *out)
{
  struct tsr_gguf_tensor_info info;
  tsr_gguf_get_tensor_info (g, wi, &info);
  float *w = malloc (K * M * sizeof *w), x[K * N];
  struct tsr_block_q8_0 xq[K / 32];
  tsr_type_traits (info.type)->to_float (tsr_gguf_tensor_data (g, wi), w,
                                         K * M);
  memcpy (x, tsr_gguf_tensor_data (g, tsr_gguf_find_tensor (g, "x")),
          sizeof x);
  for (int j = 0; q8 && j < N; j++)
    {
      tsr_quantize_row (TSR_TYPE_Q8_0, x + j * K, xq, K);
      tsr_dequantize_row (TSR_TYPE_Q8_0, xq, x + j * K, K);
    }
  for (int j = 0; j < N; j++)
    for (int i = 0; i < M; i++)
      {
        double s = 0;
        for (int k = 0; k < K; k++)
          s += (double) w[i * K + k] * x[j * K + k];
        out[j * M + i] = s;
      }
  free (w);
}

/* Compute mul_mat (w.<type>, x) for each weight type of CTX on BE.  */
static void
compute_all (const char *how, tsr_backend *be, tsr_context *ctx,
             const tsr_gguf *g)
{
  tsr_tensor *x = tsr_context_get_tensor (ctx, "x");
  for (int i = 0; i < N_WTYPES; i++)
    {
      char name[32];
      snprintf (name, sizeof name, "w.%s", tsr_type_name (wtypes[i]));
      tsr_tensor *w = tsr_context_get_tensor (ctx, name);
      tsr_tensor *y = tsr_mul_mat (ctx, w, x);
      tsr_graph *gr = tsr_graph_new (ctx);
      tsr_gallocr *ga = tsr_gallocr_new (tsr_backend_buffer_type (be));
      float got[M * N];
      double want[M * N], want_q8[M * N];
      int st = tsr_graph_build (gr, y);
      if (st == TSR_OK)
        st = tsr_gallocr_alloc_graph (ga, gr);
      if (st == TSR_OK)
        st = tsr_backend_graph_compute (be, gr);
      if (st == TSR_OK)
        st = tsr_tensor_get (y, got, 0, sizeof got);
      reference (g, tsr_gguf_find_tensor (g, name), 0, want);
      reference (g, tsr_gguf_find_tensor (g, name), 1, want_q8);
      double err = st == TSR_OK ? tsr_test_max_abs_diff (got, want, M * N)
                                : INFINITY;
      if (st == TSR_OK && tsr_type_traits (wtypes[i])->is_quantized)
        err = fmin (err, tsr_test_max_abs_diff (got, want_q8, M * N));
      CHECK (err < 1e-3, "%s: mul_mat of loaded %s weights (max error %g%s"
             "%s)", how, tsr_type_name (wtypes[i]), err,
             st == TSR_OK ? "" : ": ", st == TSR_OK ? "" : tsr_last_error ());
      tsr_gallocr_free (ga);
    }
}

static void
load_and_compute (const char *path, tsr_backend *be, unsigned flags)
{
  const char *how = flags & TSR_GGUF_LOAD_COPY ? "copied" : "mapped";
  struct tsr_gguf_error err;
  tsr_gguf *g = tsr_gguf_open (path, &err);
  tsr_context *ctx = tsr_context_new (true);
  CHECK (g && tsr_gguf_new_tensors (g, ctx) == TSR_OK,
         "%s: open and create tensors: %s", how, g ? tsr_last_error ()
         : err.message);
  if (!g)
    {
      tsr_context_free (ctx);
      return;
    }
  tsr_buffer *buf = tsr_gguf_load_tensors (g, ctx,
                                           tsr_backend_buffer_type (be),
                                           flags);
  CHECK (buf != NULL, "%s: load into the cpu backend's buffer type: %s",
         how, buf ? "" : tsr_last_error ());
  int in_map = 1, outside = 1;
  for (int64_t i = 0; buf && i < tsr_gguf_n_tensors (g); i++)
    {
      struct tsr_gguf_tensor_info info;
      tsr_gguf_get_tensor_info (g, i, &info);
      tsr_tensor *t = tsr_context_get_tensor (ctx, info.name);
      int same = t && t->data == tsr_gguf_tensor_data (g, i);
      in_map &= same && t->buffer == buf;
      outside &= !same && t->buffer == buf
                 && memcmp (t->data, tsr_gguf_tensor_data (g, i), info.size)
                      == 0;
    }
  if (flags & TSR_GGUF_LOAD_COPY)
    CHECK (buf && outside, "copied: tensors hold a copy of the file data");
  else
    CHECK (buf && in_map, "mapped: tensors point into the mapping");
  /* The buffer keeps the mapping: close the file before computing.  */
  tsr_gguf *keep = tsr_gguf_open (path, NULL);
  tsr_gguf_close (g);
  if (buf && keep)
    compute_all (how, be, ctx, keep);
  tsr_gguf_close (keep);
  tsr_buffer_free (buf);
  tsr_context_free (ctx);
}

/* A device buffer type: is_host false, memory of its own, counting
   set_tensor calls.  */
static int set_calls;
static void *dev_base (tsr_buffer *b) { return b->context; }
static void dev_free (tsr_buffer *b) { free (b->context); }
static int
dev_set (tsr_buffer *b, tsr_tensor *t, const void *d, size_t o, size_t n)
{
  set_calls++;
  memcpy ((char *) t->data + o, d, n);
  return TSR_OK;
}
static int
dev_get (tsr_buffer *b, const tsr_tensor *t, void *d, size_t o, size_t n)
{
  memcpy (d, (const char *) t->data + o, n);
  return TSR_OK;
}
static void dev_clear (tsr_buffer *b, uint8_t v) { memset (b->context, v, b->size); }
static const char *dev_name (tsr_buffer_type *bt) { return "testdev"; }
static size_t dev_align (tsr_buffer_type *bt) { return 128; }
static tsr_buffer *
dev_alloc (tsr_buffer_type *bt, size_t size)
{
  struct tsr_buffer_iface iface = { dev_free, dev_base, NULL, dev_set,
                                    dev_get, dev_clear };
  return tsr_buffer_new (bt, iface, calloc (1, size + 1), size);
}
static struct tsr_buffer_type dev_buft = {
  { dev_name, dev_alloc, dev_align, NULL, NULL, NULL }, NULL, NULL
};

static void
load_device (const char *path)
{
  tsr_gguf *g = tsr_gguf_open (path, NULL);
  tsr_context *ctx = tsr_context_new (true);
  /* Only some tensors: x is not wanted here.  */
  tsr_set_name (tsr_new_tensor_2d (ctx, TSR_TYPE_Q8_0, K, M), "w.q8_0");
  tsr_set_name (tsr_new_tensor_2d (ctx, TSR_TYPE_F16, K, M), "w.f16");
  tsr_set_name (tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 5), "not.in.file");
  set_calls = 0;
  tsr_buffer *buf = g ? tsr_gguf_load_tensors (g, ctx, &dev_buft, 0) : NULL;
  CHECK (buf && set_calls == 2 && !tsr_buffer_is_host (buf),
         "device buffer: one set per tensor (%d)", set_calls);
  int ok = buf != NULL;
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); ok && t;
       t = tsr_context_next_tensor (ctx, t))
    {
      int64_t i = tsr_gguf_find_tensor (g, t->name);
      if (i < 0)
        {
          ok = t->data == NULL;
          continue;
        }
      size_t n = tsr_nbytes (t);
      unsigned char *back = malloc (n);
      ok = tsr_tensor_get (t, back, 0, n) == TSR_OK
           && memcmp (back, tsr_gguf_tensor_data (g, i), n) == 0
           && (size_t) ((char *) t->data - (char *) tsr_buffer_base (buf))
                % 128 == 0;
      free (back);
    }
  CHECK (ok, "device buffer: data read back equals the file, aligned to "
         "the buffer type, tensors not in the file left alone");

  /* Save from the device: the writer reads through the buffer.  */
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_gguf_writer_add_tensor (w, tsr_context_get_tensor (ctx, "w.f16"));
  void *mem = NULL;
  size_t size;
  tsr_gguf *h = NULL;
  if (buf && tsr_gguf_writer_write_memory (w, &mem, &size) == TSR_OK)
    h = tsr_gguf_from_memory (mem, size, NULL);
  CHECK (h && memcmp (tsr_gguf_tensor_data (h, 0),
                      tsr_gguf_tensor_data (g, tsr_gguf_find_tensor
                                              (g, "w.f16")),
                      K * M * 2) == 0,
         "a tensor in a device buffer is saved with its data");
  tsr_gguf_close (h);
  free (mem);
  tsr_gguf_writer_free (w);
  tsr_buffer_free (buf);
  tsr_context_free (ctx);

  /* A context tensor shaped unlike the file's is refused.  */
  ctx = tsr_context_new (true);
  tsr_set_name (tsr_new_tensor_2d (ctx, TSR_TYPE_F32, K, M + 1), "x");
  buf = tsr_gguf_load_tensors (g, ctx, NULL, 0);
  CHECK (!buf && tsr_last_status () == TSR_ERR_SHAPE
         && strstr (tsr_last_error (), "tensor 'x' is f32 [64, 9, 1, 1] in "
                    "the context but f32 [64, 3, 1, 1] in the file"),
         "shape mismatch refused: %s", tsr_last_error ());
  CHECK (tsr_gguf_new_tensors (g, ctx) == TSR_ERR_SHAPE,
         "new_tensors refuses a mismatching existing tensor");
  tsr_context_free (ctx);
  ctx = tsr_context_new (true);
  tsr_set_name (tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 5), "not.in.file");
  CHECK (tsr_gguf_load_tensors (g, ctx, NULL, 0) == NULL
         && strstr (tsr_last_error (), "no tensor of the context"),
         "nothing to load: refused");
  tsr_context_free (ctx);
  tsr_gguf_close (g);
}

/* Writes to a mapped tensor stay private; an allocating context gets
   the data in tsr_gguf_new_tensors.  */
static void
private_mapping (const char *path)
{
  tsr_gguf *g = tsr_gguf_open (path, NULL);
  tsr_context *ctx = tsr_context_new (true);
  tsr_gguf_new_tensors (g, ctx);
  tsr_buffer *buf = tsr_gguf_load_tensors (g, ctx, NULL, 0);
  tsr_tensor *x = tsr_context_get_tensor (ctx, "x");
  float before = x && buf ? tsr_get_f32_1d (x, 0) : 0, v = 12345.0f;
  if (x && buf)
    tsr_tensor_set (x, &v, 0, sizeof v);
  tsr_buffer_free (buf);
  tsr_context_free (ctx);
  tsr_gguf_close (g);
  g = tsr_gguf_open (path, NULL);
  ctx = tsr_context_new (false);
  CHECK (g && tsr_gguf_new_tensors (g, ctx) == TSR_OK
         && (x = tsr_context_get_tensor (ctx, "x"))
         && tsr_get_f32_1d (x, 0) == before && before != v,
         "writes to mapped tensors never reach the file");
  tsr_context_free (ctx);
  tsr_gguf_close (g);
}

int
main (void)
{
  const char *path = gt_path ("load");
  char file[4096];
  snprintf (file, sizeof file, "%s", path);
  CHECK (write_model (file) == TSR_OK, "write the model: %s",
         tsr_last_error ());
  tsr_backend *be = tsr_backend_init_by_name ("cpu", NULL);
  CHECK (be != NULL, "cpu backend initializes: %s", be ? ""
         : tsr_last_error ());
  if (be)
    {
      load_and_compute (file, be, 0);
      load_and_compute (file, be, TSR_GGUF_LOAD_COPY);
      tsr_backend_free (be);
    }
  load_device (file);
  private_mapping (file);
  remove (file);
  return TSR_TEST_EXIT ();
}
