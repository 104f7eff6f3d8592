/* Writes through indices and into block types on a GPU, checked byte
   for byte against the reference (the op checker compares values
   within a tolerance; these must be identical): set_rows into f16,
   q8_0 and q4_0 rows, where the last source row naming a row wins;
   cpy of f32 and f16 into q8_0 and q4_0, with blocks whose values
   fall on rounding ties; a bad set_rows index is an error that leaves
   the destinations untouched; a bad mul_mat_id expert id is an error.
   UNSUPPORTED without a CUDA device.  */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "cuda-test.h"

#define K 64                    /* row length: two blocks */
#define R 6                     /* destination rows */
#define N 5                     /* source rows */

static const tsr_type types[3] = { TSR_TYPE_F16, TSR_TYPE_Q8_0,
                                   TSR_TYPE_Q4_0 };

/* Row X of K floats as TYPE at DST, as the CPU writes it.  */
static void
to_type (tsr_type type, const float *x, unsigned char *dst)
{
  if (type == TSR_TYPE_F16)
    for (int i = 0; i < K; i++)
      {
        tsr_fp16_t h = tsr_fp32_to_fp16 (x[i]);
        memcpy (dst + 2 * i, &h, 2);
      }
  else
    tsr_quantize_row (type, x, dst, K);
}

/* Source rows with a q8_0 block of ties (amax 127: d = 1, so x.5
   rounds to even) and a q4_0 one (largest magnitude -8: d = 1).  */
static void
fill_source (float *src)
{
  for (int i = 0; i < N * K; i++)
    src[i] = tsr_test_uniform (-1, 1);
  for (int j = 0; j < 32; j++)
    {
      src[1 * K + j] = j == 0 ? 127.0f : (float) (j - 16) + 0.5f;
      src[3 * K + 32 + j] = j == 5 ? -8.0f : (float) (j % 15 - 7) + 0.5f;
    }
}

/* Whether GOT and WANT (N bytes of blocks of BS bytes) agree; if not,
   a line on the first block that differs (for the log).  */
static bool
same_blocks (const unsigned char *got, const unsigned char *want, size_t n,
             size_t bs)
{
  for (size_t b = 0; b < n / bs; b++)
    if (memcmp (got + b * bs, want + b * bs, bs) != 0)
      {
        printf ("block %zu of %zu differs; got:", b, n / bs);
        for (size_t i = 0; i < bs; i++)
          printf (" %02x", got[b * bs + i]);
        printf ("\nwant:");
        for (size_t i = 0; i < bs; i++)
          printf (" %02x", want[b * bs + i]);
        printf ("\n");
        return false;
      }
  return true;
}

struct setup
{
  tsr_context *ctx;
  tsr_buffer *buf;
  tsr_backend *be;
  tsr_tensor *src, *src16, *idx, *dst[3], *set[3], *q[3], *q16[3];
  tsr_graph *g;
};

static bool
setup (struct setup *s, tsr_device *dev)
{
  memset (s, 0, sizeof *s);
  s->ctx = tsr_context_new (true);
  s->src = tsr_new_tensor_2d (s->ctx, TSR_TYPE_F32, K, N);
  s->src16 = tsr_new_tensor_2d (s->ctx, TSR_TYPE_F16, K, N);
  s->idx = tsr_new_tensor_1d (s->ctx, TSR_TYPE_I32, N);
  s->g = tsr_graph_new (s->ctx);
  for (int t = 0; t < 3; t++)
    {
      s->dst[t] = tsr_new_tensor_2d (s->ctx, types[t], K, R);
      s->set[t] = tsr_set_rows (s->ctx, s->dst[t], s->src, s->idx);
      tsr_graph_build (s->g, s->set[t]);
      if (t == 0)
        continue;
      s->q[t] = tsr_cpy (s->ctx, s->src,
                         tsr_new_tensor_2d (s->ctx, types[t], K, N));
      s->q16[t] = tsr_cpy (s->ctx, s->src16,
                           tsr_new_tensor_2d (s->ctx, types[t], K, N));
      tsr_graph_build (s->g, s->q[t]);
      tsr_graph_build (s->g, s->q16[t]);
    }
  s->buf = tsr_context_alloc_tensors (s->ctx, tsr_device_buffer_type (dev));
  s->be = tsr_device_init (dev, NULL);
  CHECK (s->buf && s->be, "tensors in device memory and a backend: %s",
         s->buf && s->be ? "ok" : tsr_last_error ());
  return s->buf && s->be;
}

static void
teardown (struct setup *s)
{
  tsr_backend_free (s->be);
  tsr_buffer_free (s->buf);
  tsr_context_free (s->ctx);
}

static void
check_writes (tsr_device *dev)
{
  static const int32_t idx[N] = { 3, 0, 3, 5, 1 };   /* row 3 twice */
  static unsigned char init[3][R * K * 2], want[3][R * K * 2];
  static unsigned char got[R * K * 2], wq[N * K * 2];
  float src[N * K], src16f[N * K], row[K];
  tsr_fp16_t h[N * K];
  struct setup s;

  if (!setup (&s, dev))
    goto out;
  fill_source (src);
  for (int i = 0; i < N * K; i++)
    {
      h[i] = tsr_fp32_to_fp16 (src[i]);
      src16f[i] = tsr_fp16_to_fp32 (h[i]);
    }
  tsr_tensor_set (s.src, src, 0, sizeof src);
  tsr_tensor_set (s.src16, h, 0, sizeof h);
  tsr_tensor_set (s.idx, idx, 0, sizeof idx);
  for (int t = 0; t < 3; t++)
    {
      size_t rs = tsr_row_size (types[t], K);
      for (int r = 0; r < R; r++)
        {
          for (int i = 0; i < K; i++)
            row[i] = tsr_test_uniform (-2, 2);
          to_type (types[t], row, init[t] + r * rs);
        }
      memcpy (want[t], init[t], R * rs);
      for (int n = 0; n < N; n++)           /* in order: last wins */
        to_type (types[t], src + n * K, want[t] + idx[n] * rs);
      tsr_tensor_set (s.dst[t], init[t], 0, R * rs);
    }
  CHECK (tsr_backend_graph_compute (s.be, s.g) == TSR_OK, "graph computes: "
         "%s", tsr_last_error ());
  for (int t = 0; t < 3; t++)
    {
      size_t rs = tsr_row_size (types[t], K);
      tsr_tensor_get (s.set[t], got, 0, R * rs);
      CHECK (same_blocks (got, want[t], R * rs, rs / (K / 32)),
             "set_rows into %s rows: "
             "the reference's bytes, last writer wins",
             tsr_type_name (types[t]));
      if (t == 0)
        continue;
      tsr_quantize_row (types[t], src, wq, N * K);
      tsr_tensor_get (s.q[t], got, 0, N * rs);
      CHECK (same_blocks (got, wq, N * rs, rs / (K / 32)),
             "cpy f32 -> %s: the reference "
             "quantizer's bytes, ties included", tsr_type_name (types[t]));
      tsr_quantize_row (types[t], src16f, wq, N * K);
      tsr_tensor_get (s.q16[t], got, 0, N * rs);
      CHECK (same_blocks (got, wq, N * rs, rs / (K / 32)),
             "cpy f16 -> %s: the reference "
             "quantizer's bytes", tsr_type_name (types[t]));
    }

  /* A bad index: an error, and no destination row changes.  */
  static const int32_t bad[N] = { 3, 0, 3, R, 1 };
  tsr_tensor_set (s.idx, bad, 0, sizeof bad);
  for (int t = 0; t < 3; t++)
    tsr_tensor_set (s.dst[t], init[t], 0, R * tsr_row_size (types[t], K));
  CHECK (tsr_backend_graph_compute (s.be, s.g) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "set_rows"),
         "a bad set_rows index is an error: %s", tsr_last_error ());
  for (int t = 0; t < 3; t++)
    {
      size_t rs = tsr_row_size (types[t], K);
      tsr_tensor_get (s.dst[t], got, 0, R * rs);
      CHECK (memcmp (got, init[t], R * rs) == 0, "a bad index writes no "
             "%s row", tsr_type_name (types[t]));
    }
out:
  teardown (&s);
}

static void
check_bad_expert (tsr_device *dev)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *as = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, K, 3, 2);
  tsr_tensor *b = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, K, 1, 2);
  tsr_tensor *ids = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 1, 2);
  tsr_tensor *r = tsr_mul_mat_id (ctx, as, b, ids);
  tsr_graph *g = tsr_graph_new (ctx);
  tsr_buffer *buf;
  tsr_backend *be;
  static float zeros[K * 3 * 2];
  const int32_t id[2] = { 1, 2 };

  tsr_graph_build (g, r);
  buf = tsr_context_alloc_tensors (ctx, tsr_device_buffer_type (dev));
  be = tsr_device_init (dev, NULL);
  if (buf && be)
    {
      tsr_tensor_set (as, zeros, 0, sizeof zeros);
      tsr_tensor_set (b, zeros, 0, 2 * K * sizeof (float));
      tsr_tensor_set (ids, id, 0, sizeof id);
      CHECK (tsr_backend_graph_compute (be, g) == TSR_ERR_INVALID_ARG
             && strstr (tsr_last_error (), "mul_mat_id"),
             "a bad mul_mat_id expert id is an error: %s", tsr_last_error ());
    }
  tsr_backend_free (be);
  tsr_buffer_free (buf);
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_device *dev = cuda_test_device ();
  if (!dev)
    return TSR_TEST_EXIT ();
  check_writes (dev);
  check_bad_expert (dev);
  return TSR_TEST_EXIT ();
}
