/* demo.c - embedding Tessera: build a graph, allocate it on the best
 * device, compute it, check the answer.
 *
 * The graph is one feed-forward block of a transformer:
 *     y = softmax (W2 · silu (W1 · rms_norm (x)))
 * with W1 stored as q8_0 and W2 as f16, for a batch of tokens.  The
 * result is compared with a plain C computation of the same formula.
 *
 * Build against an installed Tessera with
 *     cc demo.c $(pkg-config --cflags --libs tessera) -lm  */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tessera.h>

enum { D = 256, H = 512, T = 8 };   /* model width, hidden width, tokens */

static float
rnd (unsigned *s)
{
  *s = *s * 1664525u + 1013904223u;
  return (float) ((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* The same computation, one scalar step at a time, from the weights as
   the library stored them (dequantized).  With Q8, the activations of
   the q8_0 product are rounded to q8_0 first, as a backend may do
   (the CPU backend does for a few tokens; see "The CPU backend" in the
   manual).  */
static void
reference (const float *x, const float *w1, const float *w2, int q8,
           float *y)
{
  float *xn = malloc (D * sizeof *xn), *h = malloc (H * sizeof *h);
  void *xq = malloc (tsr_row_size (TSR_TYPE_Q8_0, D));
  for (int t = 0; t < T; t++)
    {
      double ss = 0;
      for (int i = 0; i < D; i++)
        ss += (double) x[t * D + i] * x[t * D + i];
      double inv = 1.0 / sqrt (ss / D + 1e-5);
      for (int i = 0; i < D; i++)
        xn[i] = (float) (x[t * D + i] * inv);
      if (q8)
        {
          tsr_quantize_row (TSR_TYPE_Q8_0, xn, xq, D);
          tsr_dequantize_row (TSR_TYPE_Q8_0, xq, xn, D);
        }
      for (int j = 0; j < H; j++)
        {
          double s = 0;
          for (int i = 0; i < D; i++)
            s += (double) w1[j * D + i] * xn[i];
          h[j] = (float) (s / (1 + exp (-s)));
        }
      double mx = -INFINITY, sum = 0;
      double *o = calloc (D, sizeof *o);
      for (int j = 0; j < D; j++)
        {
          for (int i = 0; i < H; i++)
            o[j] += (double) w2[j * H + i] * h[i];
          mx = fmax (mx, o[j]);
        }
      for (int j = 0; j < D; j++)
        sum += exp (o[j] - mx);
      for (int j = 0; j < D; j++)
        y[t * D + j] = (float) (exp (o[j] - mx) / sum);
      free (o);
    }
  free (xq);
  free (xn);
  free (h);
}

/* The largest difference between Y and the reference (Q8 as there).  */
static double
max_difference (const float *x, const float *w1, const float *w2, int q8,
                const float *y)
{
  static float want[T * D];
  double maxdiff = 0;

  reference (x, w1, w2, q8, want);
  for (int i = 0; i < T * D; i++)
    {
      /* Not fmax: a NaN must count as a difference.  (An fmax reduction
         also crashed the aarch64 GCC 12.2 vectorizer.)  */
      double d = fabs ((double) y[i] - want[i]);
      if (!(d <= maxdiff))
        maxdiff = d;
    }
  return maxdiff;
}

static int
fail (const char *what)
{
  fprintf (stderr, "tessera-demo: %s: %s\n", what, tsr_last_error ());
  return 1;
}

int
main (void)
{
  unsigned seed = 42;
  static float x[T * D], w1[H * D], w2[D * H], y[T * D];
  for (int i = 0; i < T * D; i++)
    x[i] = rnd (&seed);
  for (int i = 0; i < H * D; i++)
    w1[i] = rnd (&seed) * 0.1f;
  for (int i = 0; i < D * H; i++)
    w2[i] = rnd (&seed) * 0.1f;

  tsr_backend *be = tsr_backend_init_best ();
  if (!be)
    return fail ("no backend");
  printf ("device: %s (%s)\n", tsr_device_name (tsr_backend_device (be)),
          tsr_device_description (tsr_backend_device (be)));

  /* Weights: a context of their own, allocated once on the device.  */
  tsr_context *wctx = tsr_context_new (true);
  tsr_tensor *W1 = tsr_new_tensor_2d (wctx, TSR_TYPE_Q8_0, D, H);
  tsr_tensor *W2 = tsr_new_tensor_2d (wctx, TSR_TYPE_F16, H, D);
  tsr_buffer *wbuf = tsr_context_alloc_tensors (wctx,
                                                tsr_backend_buffer_type (be));
  if (!wbuf)
    return fail ("allocating weights");
  void *q = malloc (tsr_nbytes (W1) > tsr_nbytes (W2) ? tsr_nbytes (W1)
                    : tsr_nbytes (W2));
  tsr_quantize_row (TSR_TYPE_Q8_0, w1, q, H * D);
  int st = tsr_backend_tensor_set (be, W1, q, 0, tsr_nbytes (W1));
  tsr_dequantize_row (TSR_TYPE_Q8_0, q, w1, H * D);   /* what is stored */
  tsr_quantize_row (TSR_TYPE_F16, w2, q, D * H);
  if (st == TSR_OK)
    st = tsr_backend_tensor_set (be, W2, q, 0, tsr_nbytes (W2));
  tsr_dequantize_row (TSR_TYPE_F16, q, w2, D * H);
  free (q);
  if (st != TSR_OK)
    return fail ("uploading weights");

  /* The computation.  */
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *in = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, D, T);
  tsr_set_input (in);
  tsr_tensor *h = tsr_silu (ctx, tsr_mul_mat (ctx, W1,
                                               tsr_rms_norm (ctx, in, 1e-5f)));
  tsr_tensor *out = tsr_soft_max (ctx, tsr_mul_mat (ctx, W2, h), NULL, 1.0f);
  tsr_graph *g = tsr_graph_new (ctx);
  if (tsr_graph_build (g, out) != TSR_OK)
    return fail ("building the graph");
  tsr_gallocr *ga = tsr_gallocr_new (tsr_backend_buffer_type (be));
  if (tsr_gallocr_alloc_graph (ga, g) != TSR_OK)
    return fail ("allocating the graph");
  if (tsr_backend_tensor_set (be, in, x, 0, sizeof x) != TSR_OK)
    return fail ("uploading the input");

  struct timespec t0, t1;
  const int runs = 20;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  for (int r = 0; r < runs; r++)
    if (tsr_backend_graph_compute (be, g) != TSR_OK)
      return fail ("computing");
  clock_gettime (CLOCK_MONOTONIC, &t1);
  if (tsr_backend_tensor_get (be, out, y, 0, sizeof y) != TSR_OK)
    return fail ("reading the result");

  /* The reference the device is closer to: activations as they are, or
     rounded to q8_0 for W1.  */
  double maxdiff = fmin (max_difference (x, w1, w2, 0, y),
                         max_difference (x, w1, w2, 1, y)), sum = 0;
  for (int i = 0; i < T * D; i++)
    sum += y[i];
  double sec = ((double) (t1.tv_sec - t0.tv_sec)
                + 1e-9 * (double) (t1.tv_nsec - t0.tv_nsec)) / runs;
  double flops = 2.0 * T * (2.0 * D * H);
  printf ("graph: %d nodes, %zu bytes of activations (%zu without reuse)\n",
          tsr_graph_n_nodes (g), tsr_gallocr_buffer_size (ga),
          tsr_gallocr_unshared_size (ga));
  printf ("result: %d tokens x %d probabilities, sum %.4f (expect %d)\n", T,
          D, sum, T);
  printf ("max |difference| from the scalar reference: %.3g\n", maxdiff);
  printf ("time: %.1f us per run, %.2f GFLOP/s\n", sec * 1e6,
          flops / sec * 1e-9);

  tsr_gallocr_free (ga);
  tsr_context_free (ctx);
  tsr_buffer_free (wbuf);
  tsr_context_free (wctx);
  tsr_backend_free (be);
  if (maxdiff > 1e-4)
    {
      fprintf (stderr, "tessera-demo: result differs from the reference\n");
      return 1;
    }
  printf ("ok\n");
  return 0;
}
