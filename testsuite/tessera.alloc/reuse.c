/* The graph allocator reuses the memory of intermediate results whose
   last reader has run, keeps inputs and outputs, and the results stay
   right.  Sizes are checked against exact bounds derived from the
   graph's shape.  */
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

#define N 65536                  /* floats per tensor: 256 KiB */
#define CHAIN 12

int
main (void)
{
  tsr_backend *be = tsr_backend_init_by_name ("cpu", NULL);
  if (!be)
    {
      CHECK (0, "cpu backend: %s", tsr_last_error ());
      return TSR_TEST_EXIT ();
    }
  const size_t tbytes = N * sizeof (float);
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = tsr_set_name (tsr_new_tensor_1d (ctx, TSR_TYPE_F32, N),
                                "x");
  tsr_tensor *y = tsr_set_name (tsr_new_tensor_1d (ctx, TSR_TYPE_F32, N),
                                "y");
  tsr_set_input (x);
  tsr_set_input (y);
  /* t0 = x + y; t(i) = t(i-1) * y + x: each intermediate dies after the
     next op.  */
  tsr_tensor *t = tsr_add (ctx, x, y), *kept = NULL;
  for (int i = 1; i < CHAIN; i++)
    {
      t = tsr_add (ctx, tsr_mul (ctx, t, y), x);
      if (i == 3)
        {
          kept = t;
          tsr_set_output (kept);   /* read after compute: must survive */
        }
    }
  tsr_graph *g = tsr_graph_new (ctx);
  CHECK (tsr_graph_build (g, t) == TSR_OK, "chain graph builds");
  tsr_graph_build (g, kept);
  tsr_gallocr *ga = tsr_gallocr_new (tsr_backend_buffer_type (be));
  CHECK (tsr_gallocr_alloc_graph (ga, g) == TSR_OK, "chain allocates");
  size_t used = tsr_gallocr_buffer_size (ga);
  size_t unshared = tsr_gallocr_unshared_size (ga);
  /* 2 inputs + 2*CHAIN - 1 results without reuse.  */
  CHECK (unshared == (2 + 2 * CHAIN - 1) * tbytes, "unshared size is every "
         "tensor (%zu)", unshared);
  /* With reuse: inputs, the kept output, the final output, and at most
     two live intermediates at any time.  */
  CHECK (used <= 6 * tbytes, "buffer reuses memory: %zu bytes <= %zu",
         used, 6 * tbytes);
  CHECK (used >= 4 * tbytes, "buffer holds at least inputs and outputs");
  /* No two tensors that are alive together overlap: x, y, kept, t.  */
  const tsr_tensor *live[4] = { x, y, kept, t };
  int disjoint = 1;
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++)
      {
        const char *a = live[i]->data, *b = live[j]->data;
        disjoint &= a + tbytes <= b || b + tbytes <= a;
      }
  CHECK (disjoint, "inputs and outputs do not overlap");
  int inside = 1;
  for (int i = 0; i < tsr_graph_n_nodes (g); i++)
    {
      const tsr_tensor *n = tsr_graph_node (g, i);
      const char *base = tsr_buffer_base (n->buffer);
      inside &= (const char *) n->data >= base
                && (const char *) n->data + tsr_nbytes (n)
                   <= base + tsr_buffer_size (n->buffer);
    }
  CHECK (inside, "every node lies inside the buffer");

  static float xv[N], yv[N], out[N], kout[N];
  for (int i = 0; i < N; i++)
    {
      xv[i] = (float) (i % 7) - 3.0f;
      yv[i] = (i % 3) == 0 ? 0.5f : -0.5f;
    }
  tsr_backend_tensor_set (be, x, xv, 0, tbytes);
  tsr_backend_tensor_set (be, y, yv, 0, tbytes);
  CHECK (tsr_backend_graph_compute (be, g) == TSR_OK, "chain computes");
  tsr_backend_tensor_get (be, t, out, 0, tbytes);
  tsr_backend_tensor_get (be, kept, kout, 0, tbytes);
  int ok = 1, kok = 1;
  for (int i = 0; i < N; i++)
    {
      /* Exact in binary floating point: halves and small integers.  */
      double v = (double) xv[i] + yv[i], vk = 0;
      for (int k = 1; k < CHAIN; k++)
        {
          v = v * yv[i] + xv[i];
          if (k == 3)
            vk = v;
        }
      ok &= fabs (out[i] - v) <= 1e-6 * (1 + fabs (v));
      kok &= fabs (kout[i] - vk) <= 1e-6 * (1 + fabs (vk));
    }
  CHECK (ok, "final result right despite memory reuse");
  CHECK (kok, "intermediate marked as output kept its value");

  /* Same graph again: the buffer is reused, not grown.  */
  void *base = tsr_buffer_base (t->buffer);
  CHECK (tsr_gallocr_reserve (ga, g) == TSR_OK
         && tsr_gallocr_buffer_size (ga) == used,
         "reserve of the same graph keeps the buffer size");
  tsr_gallocr_free (ga);
  (void) base;
  tsr_context_free (ctx);

  /* Views of intermediates keep them alive until the view's readers. */
  ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 64, 32);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 32, 64);
  tsr_set_input (a);
  tsr_set_input (b);
  tsr_tensor *s = tsr_scale (ctx, a, 2.0f);           /* [64, 32] */
  tsr_tensor *tr = tsr_transpose (ctx, s);            /* view [32, 64] */
  tsr_tensor *u = tsr_scale (ctx, b, 3.0f);
  tsr_tensor *v = tsr_scale (ctx, u, 1.0f);
  tsr_tensor *w = tsr_add (ctx, tr, v);               /* reads s late */
  g = tsr_graph_new (ctx);
  tsr_graph_build (g, w);
  ga = tsr_gallocr_new (tsr_backend_buffer_type (be));
  CHECK (tsr_gallocr_alloc_graph (ga, g) == TSR_OK, "graph with a view "
         "allocates");
  CHECK (tr->data == s->data, "view points into its source");
  float av[64 * 32], bv[32 * 64], wv[32 * 64];
  for (int i = 0; i < 64 * 32; i++)
    {
      av[i] = (float) i;
      bv[i] = (float) (i % 13);
    }
  tsr_backend_tensor_set (be, a, av, 0, sizeof av);
  tsr_backend_tensor_set (be, b, bv, 0, sizeof bv);
  CHECK (tsr_backend_graph_compute (be, g) == TSR_OK, "view graph computes");
  tsr_backend_tensor_get (be, w, wv, 0, sizeof wv);
  ok = 1;
  for (int r = 0; r < 64; r++)
    for (int c = 0; c < 32; c++)
      ok &= wv[r * 32 + c] == 2.0f * av[c * 64 + r] + 3.0f * bv[r * 32 + c];
  CHECK (ok, "source of a view not reused while the view is still read");
  tsr_gallocr_free (ga);
  tsr_context_free (ctx);

  /* Bad input.  */
  CHECK (tsr_gallocr_new (NULL) == NULL
         && tsr_last_status () == TSR_ERR_INVALID_ARG,
         "allocator without a buffer type is refused");
  CHECK (tsr_gallocr_alloc_graph (NULL, NULL) == TSR_ERR_INVALID_ARG,
         "NULL graph refused");
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
