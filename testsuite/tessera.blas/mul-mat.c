/* mul_mat on the BLAS backend for every weight type against a
   double-precision reference over the same (converted) weight values:
   plain and batched shapes with broadcasting, weights converted in
   several chunks (max_scratch), and b given through strided views
   (row stride larger than a row, transposed, overlapping rows).
   Tolerance: |got - want| <= 1e-6 * sum_l |a_il b_jl| (k = 64): about
   16 float roundings of the magnitudes summed.  */
#include "blas-test.h"

enum { K = 64 };
#define TOL 1e-6

static const tsr_type types[] = { TSR_TYPE_F32, TSR_TYPE_F16, TSR_TYPE_BF16,
                                  TSR_TYPE_Q8_0, TSR_TYPE_Q4_0 };

/* Weights of TYPE [K, m, a2, a3] from uniform floats.  */
static tsr_tensor *
weights (tsr_context *ctx, tsr_type type, int64_t m, int64_t a2, int64_t a3)
{
  tsr_tensor *a = tsr_new_tensor_4d (ctx, type, K, m, a2, a3);
  float row[K];

  for (int64_t r = 0; r < m * a2 * a3; r++)
    {
      blas_fill (row, K);
      tsr_type_traits (type)->from_float (row, (char *) a->data
                                          + (size_t) r * a->nb[1], K);
    }
  return a;
}

/* Compute DST alone on BE and compare it with the reference.  */
static void
run (tsr_backend *be, tsr_context *ctx, tsr_tensor *dst, const char *what)
{
  tsr_tensor *a = dst->src[0], *b = dst->src[1];
  tsr_graph *g = tsr_graph_new (ctx);
  float *av = blas_values (a);
  int st;

  tsr_graph_build (g, dst);
  st = tsr_backend_graph_compute (be, g);
  if (st != TSR_OK)
    CHECK (0, "%s: %s computes: %s", tsr_type_name (a->type), what,
           tsr_last_error ());
  else
    {
      double worst = blas_check (dst, av, a, b, TOL);
      CHECK (worst <= 1, "%s: %s within tolerance (worst %.3g of the "
             "bound)", tsr_type_name (a->type), what, worst);
    }
  free (av);
}

static tsr_tensor *
activations (tsr_context *ctx, int64_t n, int64_t b2, int64_t b3)
{
  tsr_tensor *b = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, K, n, b2, b3);
  blas_fill (b->data, K * n * b2 * b3);
  return b;
}

static void
shapes (tsr_backend *be, tsr_backend *chunked, tsr_type type)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a, *b, *big;

  a = weights (ctx, type, 37, 1, 1);
  b = activations (ctx, 19, 1, 1);
  run (be, ctx, tsr_mul_mat (ctx, a, b), "[64,37] x [64,19]");
  run (chunked, ctx, tsr_mul_mat (ctx, a, b),
       "[64,37] x [64,19], 5-row chunks");
  run (be, ctx, tsr_mul_mat (ctx, a, activations (ctx, 1, 1, 1)),
       "[64,37] x [64,1]");
  run (be, ctx, tsr_mul_mat (ctx, weights (ctx, type, 1, 1, 1), b),
       "[64,1] x [64,19]");

  /* Batches: b2 = 2 a2 (broadcast), b3 = a3.  */
  a = weights (ctx, type, 11, 2, 3);
  b = activations (ctx, 5, 4, 3);
  run (be, ctx, tsr_mul_mat (ctx, a, b), "[64,11,2,3] x [64,5,4,3]");
  run (chunked, ctx, tsr_mul_mat (ctx, a, b),
       "[64,11,2,3] x [64,5,4,3], 5-row chunks");
  /* One weight matrix for every batch.  */
  a = weights (ctx, type, 9, 1, 1);
  run (be, ctx, tsr_mul_mat (ctx, a, activations (ctx, 7, 3, 2)),
       "[64,9] x [64,7,3,2]");

  /* Strided b: rows 96 floats apart; the transpose of [n, K]; rows
     overlapping (each starts 32 floats after the last: repacked).  */
  a = weights (ctx, type, 13, 1, 1);
  big = activations (ctx, 6, 1, 1);
  tsr_tensor *wide = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 96, 6);
  blas_fill (wide->data, 96 * 6);
  run (be, ctx, tsr_mul_mat (ctx, a, tsr_view_2d (ctx, wide, K, 6,
                                                  96 * sizeof (float), 0)),
       "b rows 96 floats apart");
  tsr_tensor *bt = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 6, K);
  blas_fill (bt->data, 6 * K);
  run (be, ctx, tsr_mul_mat (ctx, a, tsr_transpose (ctx, bt)),
       "b transposed");
  run (be, ctx, tsr_mul_mat (ctx, a, tsr_view_2d (ctx, big, K, 4,
                                                  32 * sizeof (float), 0)),
       "b rows overlapping");
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_device *dev = blas_device ();
  char params[64];

  if (!dev)
    return TSR_TEST_EXIT ();
  tsr_test_seed (42);
  tsr_backend *be = tsr_backend_init_by_name ("blas", "threads=2");
  snprintf (params, sizeof params, "threads=2,max_scratch=%zu",
            5 * K * sizeof (float));
  tsr_backend *chunked = tsr_backend_init_by_name ("blas", params);
  CHECK (be && chunked, "backends: %s", be && chunked ? "ok"
                                                       : tsr_last_error ());
  if (!be || !chunked)
    return TSR_TEST_EXIT ();
  for (size_t i = 0; i < sizeof types / sizeof *types; i++)
    shapes (be, chunked, types[i]);
  tsr_backend_free (chunked);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
