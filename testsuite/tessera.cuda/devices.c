/* The GPUs as Tessera devices: names, descriptions (compute capability,
   PCI bus id), memory; device buffers (set/get at offsets, clear, not
   host memory); a backend's asynchronous transfers; a small graph
   (mul_mat with f32, f16 and q4_0 weights, rms_norm, get_rows) against
   values computed here; a bad get_rows index reported by
   graph_compute.  UNSUPPORTED without a CUDA device.  */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cuda-test.h"

#define K 64
#define M 5
#define N 3

static void
check_device (tsr_device *dev, size_t i)
{
  struct tsr_device_props p;
  char want[32];

  tsr_device_get_props (dev, &p);
  snprintf (want, sizeof want, "CUDA%zu", i);
  CHECK (strcmp (p.name, want) == 0, "device %zu is named %s (%s)", i, want,
         p.name);
  CHECK (strstr (p.description, "compute capability")
         && strstr (p.description, "PCI"), "device %zu describes itself: %s",
         i, p.description);
  CHECK (p.type == TSR_DEVICE_GPU, "device %zu is a GPU", i);
  CHECK (p.memory_total > 0 && p.memory_free > 0
         && p.memory_free <= p.memory_total, "device %zu reports its memory "
         "(%zu free of %zu)", i, p.memory_free, p.memory_total);
  CHECK (p.caps.async, "device %zu is asynchronous", i);
}

/* d = a^T b for a [K, M] weights as floats, b [K, N].  */
static void
reference (const float *a, const float *b, double *d)
{
  for (int j = 0; j < N; j++)
    for (int i = 0; i < M; i++)
      {
        double s = 0;
        for (int k = 0; k < K; k++)
          s += (double) a[i * K + k] * b[j * K + k];
        d[j * M + i] = s;
      }
}

static void
check_graph (tsr_device *dev)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *w32 = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, K, M);
  tsr_tensor *w16 = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, K, M);
  tsr_tensor *wq = tsr_new_tensor_2d (ctx, TSR_TYPE_Q4_0, K, M);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, K, N);
  tsr_tensor *rows = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 2);
  tsr_tensor *r32 = tsr_mul_mat (ctx, w32, x);
  tsr_tensor *r16 = tsr_mul_mat (ctx, w16, x);
  tsr_tensor *rq = tsr_mul_mat (ctx, wq, x);
  tsr_tensor *nrm = tsr_rms_norm (ctx, x, 1e-6f);
  tsr_tensor *got = tsr_get_rows (ctx, w32, rows);
  tsr_graph *g = tsr_graph_new (ctx);
  float a[K * M], a16[K * M], aq[K * M], b[K * N], out[K * N];
  unsigned short h[K * M];
  unsigned char q[(K / 32) * 18 * M];
  double want[M * N];
  int32_t idx[2] = { 4, 1 };

  tsr_graph_build (g, r32);
  tsr_graph_build (g, r16);
  tsr_graph_build (g, rq);
  tsr_graph_build (g, nrm);
  tsr_graph_build (g, got);
  for (int i = 0; i < K * M; i++)
    {
      a[i] = tsr_test_uniform (-1, 1);
      h[i] = tsr_fp32_to_fp16 (a[i]);
      a16[i] = tsr_fp16_to_fp32 (h[i]);
    }
  for (int i = 0; i < K * N; i++)
    b[i] = tsr_test_uniform (-1, 1);
  tsr_quantize_row (TSR_TYPE_Q4_0, a, q, K * M);
  tsr_dequantize_row (TSR_TYPE_Q4_0, q, aq, K * M);

  tsr_buffer *buf = tsr_context_alloc_tensors (ctx,
                                               tsr_device_buffer_type (dev));
  tsr_backend *be = tsr_device_init (dev, NULL);
  CHECK (buf && be, "tensors in device memory and a backend: %s",
         buf && be ? "ok" : tsr_last_error ());
  if (!buf || !be)
    goto out;
  CHECK (!tsr_buffer_is_host (buf), "device buffers are not host memory");
  tsr_tensor_set (w32, a, 0, sizeof a);
  tsr_tensor_set (w16, h, 0, sizeof h);
  tsr_tensor_set (wq, q, 0, sizeof q);
  tsr_backend_tensor_set (be, x, b, 0, sizeof b);
  tsr_backend_tensor_set (be, rows, idx, 0, sizeof idx);
  tsr_backend_synchronize (be);
  CHECK (tsr_backend_graph_compute (be, g) == TSR_OK, "graph computes: %s",
         tsr_last_error ());

  static const char *const names[3] = { "f32", "f16", "q4_0" };
  const float *ws[3] = { a, a16, aq };
  tsr_tensor *rs[3] = { r32, r16, rq };
  for (int t = 0; t < 3; t++)
    {
      reference (ws[t], b, want);
      tsr_tensor_get (rs[t], out, 0, sizeof (float) * M * N);
      /* f16 weights multiply b rounded to f16 on tensor cores; q4_0
         weights (at most 8 columns) b rounded to 8 bits a block of 32
         at a time, as on the CPU: each value of b off by at most 1/254,
         a sum of K = 64 of them has a standard deviation of about 0.01
         (the largest of these 15 errors on an H200: 0.025).  */
      CHECK (tsr_test_max_abs_diff (out, want, M * N)
             < (t == 2 ? 8e-2 : t ? 2e-2 : 1e-4),
             "mul_mat with %s weights (max error %g)", names[t],
             tsr_test_max_abs_diff (out, want, M * N));
    }
  tsr_tensor_get (nrm, out, 0, sizeof b);
  double err = 0;
  for (int j = 0; j < N; j++)
    {
      double ss = 0;
      for (int k = 0; k < K; k++)
        ss += (double) b[j * K + k] * b[j * K + k];
      double s = 1 / sqrt (ss / K + 1e-6);
      for (int k = 0; k < K; k++)
        err = fmax (err, fabs (out[j * K + k] - b[j * K + k] * s));
    }
  CHECK (err < 1e-5, "rms_norm (max error %g)", err);
  tsr_tensor_get (got, out, 0, 2 * K * sizeof (float));
  CHECK (memcmp (out, a + 4 * K, K * sizeof (float)) == 0
         && memcmp (out + K, a + K, K * sizeof (float)) == 0,
         "get_rows copies the rows asked for");
  idx[1] = M;
  tsr_tensor_set (rows, idx, 0, sizeof idx);
  CHECK (tsr_backend_graph_compute (be, g) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "index"),
         "a bad get_rows index is an error: %s", tsr_last_error ());
out:
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

  tsr_reg *reg = tsr_reg_by_name ("CUDA");
  for (size_t i = 0; reg && i < tsr_reg_device_count (reg); i++)
    check_device (tsr_reg_device_get (reg, i), i);
  CHECK (tsr_device_init (dev, "bogus=1") == NULL
         && strstr (tsr_last_error (), "bogus"),
         "unknown backend parameters are refused: %s", tsr_last_error ());
  check_graph (dev);
  return TSR_TEST_EXIT ();
}
