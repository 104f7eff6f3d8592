/* The scheduler over [blas, cpu]: in rms_norm -> mul_mat -> silu the
   matrix product goes to BLAS (its weights are in host memory, which
   both backends use, and BLAS comes first), the rest to the CPU; the
   weights are read where they are, never copied.  The result equals
   the CPU alone within float rounding of the product (2e-5 of
   1 + |value|).  With fewer columns than the threshold the product
   stays on the CPU.  */
#include <tessera/module.h>
#include "blas-test.h"

enum { K = 96, M = 48 };

struct net
{
  tsr_context *ctx;
  tsr_tensor *x, *norm, *prod, *out;
  tsr_graph *g;
};

static void
build (struct net *n, tsr_tensor *w, int64_t cols)
{
  n->ctx = tsr_context_new (true);
  n->x = tsr_set_name (tsr_new_tensor_2d (n->ctx, TSR_TYPE_F32, K, cols),
                       "x");
  tsr_set_input (n->x);
  n->norm = tsr_set_name (tsr_rms_norm (n->ctx, n->x, 1e-6f), "norm");
  n->prod = tsr_set_name (tsr_mul_mat (n->ctx, w, n->norm), "prod");
  n->out = tsr_set_name (tsr_silu (n->ctx, n->prod), "out");
  n->g = tsr_graph_new (n->ctx);
  tsr_graph_build (n->g, n->out);
}

static bool
run (tsr_sched *s, struct net *n, const float *x, float *out, int64_t cols)
{
  return tsr_sched_alloc_graph (s, n->g) == TSR_OK
         && tsr_tensor_set (n->x, x, 0, (size_t) (K * cols) * sizeof *x)
            == TSR_OK
         && tsr_sched_graph_compute (s, n->g) == TSR_OK
         && tsr_tensor_get (n->out, out, 0,
                            (size_t) (M * cols) * sizeof *out) == TSR_OK;
}

/* Run the net with COLS columns on [cpu] and on [blas, cpu]; check the
   results agree and where the product ran.  */
static void
compare (tsr_backend *blas, tsr_backend *cpu, tsr_tensor *w, int64_t cols,
         bool on_blas)
{
  float *x = malloc ((size_t) (K * cols) * sizeof *x);
  float *ref = malloc ((size_t) (M * cols) * sizeof *ref);
  float *got = malloc ((size_t) (M * cols) * sizeof *got);
  tsr_backend *both[2] = { blas, cpu };
  struct net n;

  blas_fill (x, K * cols);
  build (&n, w, cols);
  tsr_sched *s = tsr_sched_new (&cpu, 1);
  CHECK (run (s, &n, x, ref, cols), "n = %lld: cpu alone computes: %s",
         (long long) cols, tsr_last_error ());
  tsr_sched_free (s);
  tsr_context_free (n.ctx);

  build (&n, w, cols);
  s = tsr_sched_new (both, 2);
  if (!run (s, &n, x, got, cols))
    CHECK (0, "n = %lld: [blas, cpu] computes: %s", (long long) cols,
           tsr_last_error ());
  else
    {
      double worst = 0;
      for (int64_t i = 0; i < M * cols; i++)
        {
          double e = fabs ((double) got[i] - ref[i]) / (1 + fabs (ref[i]));
          if (!(e <= worst))
            worst = isnan (e) ? INFINITY : e;
        }
      CHECK (worst <= 2e-5, "n = %lld: [blas, cpu] equals cpu alone (worst "
             "relative difference %.3g)", (long long) cols, worst);
      CHECK (tsr_sched_get_backend (s, n.prod) == (on_blas ? blas : cpu),
             "n = %lld: mul_mat placed on %s", (long long) cols,
             on_blas ? "blas" : "cpu");
      CHECK (tsr_sched_get_backend (s, n.norm) == cpu
             && tsr_sched_get_backend (s, n.out) == cpu,
             "n = %lld: rms_norm and silu placed on cpu", (long long) cols);
      /* At most the activations cross over (the scheduler copies
         results of one backend read by another even when both use
         host memory); the weights never do.  */
      CHECK (tsr_sched_n_copies (s) <= (on_blas ? 2 : 0)
             && tsr_sched_n_splits (s) == (on_blas ? 3 : 1),
             "n = %lld: %d splits, %s copies (got %d, %d)",
             (long long) cols, on_blas ? 3 : 1,
             on_blas ? "at most 2" : "no", tsr_sched_n_splits (s),
             tsr_sched_n_copies (s));
    }
  tsr_sched_free (s);
  tsr_context_free (n.ctx);
  free (x);
  free (ref);
  free (got);
}

int
main (void)
{
  tsr_device *dev = blas_device ();

  if (!dev)
    return TSR_TEST_EXIT ();
  tsr_test_seed (3);
  /* A fixed threshold, whatever the default.  */
  tsr_backend *blas = tsr_backend_init_by_name ("blas", "threads=2,"
                                                "min_batch=16");
  tsr_backend *cpu = tsr_backend_init_by_name ("cpu", "threads=2");
  CHECK (blas && cpu, "blas and cpu backends: %s",
         blas && cpu ? "ok" : tsr_last_error ());
  if (!blas || !cpu)
    return TSR_TEST_EXIT ();

  /* Weights in host memory.  */
  tsr_context *wctx = tsr_context_new (true);
  tsr_tensor *w = tsr_set_name (tsr_new_tensor_2d (wctx, TSR_TYPE_F32, K, M),
                                "W");
  tsr_set_param (w);
  tsr_buffer *wbuf = tsr_context_alloc_tensors (wctx, tsr_host_buffer_type ());
  float *wv = malloc (K * M * sizeof *wv);
  blas_fill (wv, K * M);
  tsr_tensor_set (w, wv, 0, K * M * sizeof *wv);
  free (wv);

  compare (blas, cpu, w, 40, true);
  compare (blas, cpu, w, 16, true);
  compare (blas, cpu, w, 15, false);

  tsr_buffer_free (wbuf);
  tsr_context_free (wctx);
  tsr_backend_free (cpu);
  tsr_backend_free (blas);
  return TSR_TEST_EXIT ();
}
