/* The scheduler over the check-only "partial" backend (f32 add and
   mul, private memory) and the CPU: results equal the CPU alone, and
   the splits and copies are exactly those the placement implies.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tessera.h>
#include "tsr-test.h"

enum { K = 48, M = 40, N = 6 };

static float xv[K * N], yv[K * N], wv[K * M], bv[M * N];

struct net
{
  tsr_context *ctx;
  tsr_tensor *x, *y, *a, *b, *c, *d, *e;
  tsr_graph *g;
};

/* a = x + y; b = W a; c = b * b; d = silu (c); e = d + bias, where W
   and bias are weights in BUF_W's memory.  */
static void
build (struct net *n, tsr_tensor *w, tsr_tensor *bias)
{
  n->ctx = tsr_context_new (true);
  n->x = tsr_set_name (tsr_new_tensor_2d (n->ctx, TSR_TYPE_F32, K, N), "x");
  n->y = tsr_set_name (tsr_new_tensor_2d (n->ctx, TSR_TYPE_F32, K, N), "y");
  tsr_set_input (n->x);
  tsr_set_input (n->y);
  n->a = tsr_set_name (tsr_add (n->ctx, n->x, n->y), "a");
  n->b = tsr_set_name (tsr_mul_mat (n->ctx, w, n->a), "b");
  n->c = tsr_set_name (tsr_mul (n->ctx, n->b, n->b), "c");
  n->d = tsr_set_name (tsr_silu (n->ctx, n->c), "d");
  n->e = tsr_set_name (tsr_add (n->ctx, n->d, bias), "e");
  n->g = tsr_graph_new (n->ctx);
  tsr_graph_build (n->g, n->e);
}

/* Weights in the memory of BE's buffer type.  */
static tsr_buffer *
weights (tsr_backend *be, tsr_context **ctx, tsr_tensor **w, tsr_tensor **b)
{
  *ctx = tsr_context_new (true);
  *w = tsr_set_name (tsr_new_tensor_2d (*ctx, TSR_TYPE_F32, K, M), "W");
  *b = tsr_set_name (tsr_new_tensor_2d (*ctx, TSR_TYPE_F32, M, N), "bias");
  tsr_set_param (*w);
  tsr_set_param (*b);
  tsr_buffer *buf = tsr_context_alloc_tensors (*ctx,
                                               tsr_backend_buffer_type (be));
  tsr_tensor_set (*w, wv, 0, sizeof wv);
  tsr_tensor_set (*b, bv, 0, sizeof bv);
  return buf;
}

static int
run (tsr_sched *s, struct net *n, float *out)
{
  if (tsr_sched_alloc_graph (s, n->g) != TSR_OK)
    return 0;
  tsr_tensor_set (n->x, xv, 0, sizeof xv);
  tsr_tensor_set (n->y, yv, 0, sizeof yv);
  if (tsr_sched_graph_compute (s, n->g) != TSR_OK)
    return 0;
  return tsr_tensor_get (n->e, out, 0, M * N * sizeof (float)) == TSR_OK;
}

static int
same (const float *a, const float *b)
{
  for (int i = 0; i < M * N; i++)
    if (a[i] != b[i])
      return 0;
  return 1;
}

int
main (void)
{
  const char *dir = getenv ("TSR_TEST_MODULE_DIR");
  char path[4096];
  tsr_test_seed (7);
  for (int i = 0; i < K * N; i++)
    {
      xv[i] = tsr_test_uniform (-1, 1);
      yv[i] = tsr_test_uniform (-1, 1);
    }
  for (int i = 0; i < K * M; i++)
    wv[i] = tsr_test_uniform (-0.2f, 0.2f);
  for (int i = 0; i < M * N; i++)
    bv[i] = tsr_test_uniform (-1, 1);

  tsr_backend *cpu = tsr_backend_init_by_name ("cpu", NULL);
  float ref[M * N], out[M * N];
  tsr_context *wctx;
  tsr_tensor *w, *bias;
  struct net n;

  /* Reference: the CPU alone, through a one-backend scheduler.  */
  tsr_buffer *wbuf = weights (cpu, &wctx, &w, &bias);
  build (&n, w, bias);
  tsr_sched *s = tsr_sched_new (&cpu, 1);
  CHECK (run (s, &n, ref), "cpu-only schedule computes: %s",
         tsr_last_error ());
  CHECK (tsr_sched_n_splits (s) == 1 && tsr_sched_n_copies (s) == 0,
         "cpu only: 1 split, 0 copies (%d, %d)", tsr_sched_n_splits (s),
         tsr_sched_n_copies (s));
  /* Independent check of the reference itself.  */
  int ok = 1;
  for (int j = 0; j < N; j++)
    for (int i = 0; i < M; i++)
      {
        double acc = 0;
        for (int k = 0; k < K; k++)
          acc += (double) wv[i * K + k] * (xv[j * K + k] + yv[j * K + k]);
        double c = acc * acc, want = c / (1 + exp (-c)) + bv[j * M + i];
        ok &= fabs (ref[j * M + i] - want) <= 1e-5 * (1 + fabs (want));
      }
  CHECK (ok, "cpu result matches a double-precision reference");
  tsr_sched_free (s);
  tsr_context_free (n.ctx);

  snprintf (path, sizeof path, "%s/tessera-partial", dir ? dir : ".");
  if (!dir || tsr_registry_load (path) != TSR_OK)
    {
      tsr_test_unsupported ("partial backend not available (static build)");
      goto out;
    }
  tsr_backend *part = tsr_backend_init_by_name ("partial", NULL);
  tsr_backend *both[2] = { part, cpu };
  s = tsr_sched_new (both, 2);

  /* Priority partial > cpu.  a: partial (add); b: cpu (mul_mat, and W
     lives there); c: partial; d: cpu (silu); e: cpu (bias lives on the
     cpu, which supports add).  Splits: a | b | c | d e = 4.  Copies:
     a to cpu, b to partial, c to cpu = 3 (x and y live on partial,
     where they are first read).  */
  build (&n, w, bias);
  CHECK (run (s, &n, out), "two-backend schedule computes: %s",
         tsr_last_error ());
  CHECK (same (out, ref), "two backends give exactly the cpu result");
  CHECK (tsr_sched_n_splits (s) == 4, "4 splits (got %d)",
         tsr_sched_n_splits (s));
  CHECK (tsr_sched_n_copies (s) == 3, "3 copies (got %d)",
         tsr_sched_n_copies (s));
  CHECK (tsr_sched_get_backend (s, n.a) == part
         && tsr_sched_get_backend (s, n.c) == part,
         "add and mul placed on the higher-priority partial backend");
  CHECK (tsr_sched_get_backend (s, n.b) == cpu
         && tsr_sched_get_backend (s, n.d) == cpu,
         "mul_mat and silu fall back to the cpu");
  CHECK (tsr_sched_get_backend (s, n.e) == cpu,
         "add with a weight in cpu memory runs where the weight lives");
  CHECK (tsr_sched_get_backend (s, n.x) == part, "input x lives where it is "
         "first read");
  CHECK (tsr_sched_n_nodes_on (s, part) == 2
         && tsr_sched_n_nodes_on (s, cpu) == 3, "node counts per backend");
  /* Compute many times after one allocation, with new inputs.  */
  for (int i = 0; i < K * N; i++)
    xv[i] = -xv[i];
  tsr_tensor_set (n.x, xv, 0, sizeof xv);
  tsr_tensor_set (n.y, yv, 0, sizeof yv);
  CHECK (tsr_sched_graph_compute (s, n.g) == TSR_OK, "second compute");
  tsr_tensor_get (n.e, out, 0, sizeof out);
  float ref2[M * N];
  {
    tsr_sched *s1 = tsr_sched_new (&cpu, 1);
    struct net n1;
    build (&n1, w, bias);
    run (s1, &n1, ref2);
    tsr_sched_free (s1);
    tsr_context_free (n1.ctx);
  }
  CHECK (same (out, ref2), "second compute with new inputs equals the cpu");
  /* The user's graph is not rewritten: nodes read what they were built
     on, before and after compute (the copies are read through the
     scheduler's clones).  */
  CHECK (n.b->src[1] == n.a && n.c->src[0] == n.b && n.c->src[1] == n.b
         && n.d->src[0] == n.c && n.e->src[0] == n.d,
         "the graph's sources are the user's after computing");
  /* So another scheduler, placing the nodes differently, can compute
     the same graph, and then the first again.  */
  {
    tsr_backend *other[2] = { cpu, part };
    tsr_sched *s2 = tsr_sched_new (other, 2);
    float out2[M * N];
    CHECK (run (s2, &n, out2) && same (out2, ref2), "a second scheduler "
           "(cpu first) computes the same graph: %s", tsr_last_error ());
    CHECK (run (s, &n, out) && same (out, ref2), "then the first one "
           "again: %s", tsr_last_error ());
    tsr_sched_free (s2);
  }
  CHECK (n.b->src[1] == n.a, "user graph's sources restored after compute");

  /* Forced placement: a on the cpu.  Splits: a b | c | d e = 3; copies:
     b to partial, c to cpu = 2.  */
  CHECK (tsr_sched_set_backend (s, n.a, cpu) == TSR_OK, "force a onto cpu");
  CHECK (run (s, &n, out) && same (out, ref2), "forced placement computes "
         "the same result");
  CHECK (tsr_sched_n_splits (s) == 3 && tsr_sched_n_copies (s) == 2,
         "forced: 3 splits, 2 copies (got %d, %d)", tsr_sched_n_splits (s),
         tsr_sched_n_copies (s));
  CHECK (tsr_sched_set_backend (s, n.d, part) == TSR_OK
         && tsr_sched_alloc_graph (s, n.g) == TSR_ERR_UNSUPPORTED
         && strstr (tsr_last_error (), "silu"),
         "forcing silu onto partial is refused naming the op: %s",
         tsr_last_error ());
  tsr_sched_reset (s);
  CHECK (run (s, &n, out) && tsr_sched_n_splits (s) == 4,
         "reset forgets forced placements");

  /* An op no backend supports.  */
  {
    tsr_sched *sp = tsr_sched_new (&part, 1);
    CHECK (tsr_sched_alloc_graph (sp, n.g) == TSR_ERR_UNSUPPORTED
           && strstr (tsr_last_error (), "mul_mat"),
           "partial alone cannot run mul_mat: %s", tsr_last_error ());
    tsr_sched_free (sp);
  }
  CHECK (tsr_sched_set_backend (s, n.a, NULL) == TSR_ERR_INVALID_ARG,
         "forcing onto a foreign backend is refused");
  CHECK (tsr_sched_new (both, 0) == NULL, "no backends refused");
  tsr_sched_free (s);
  tsr_context_free (n.ctx);

  /* Weights in partial memory: mul_mat must run on the cpu, and W gets
     copied there.  */
  {
    tsr_context *wctx2;
    tsr_tensor *w2, *bias2;
    tsr_buffer *wbuf2 = weights (part, &wctx2, &w2, &bias2);
    s = tsr_sched_new (both, 2);
    build (&n, w2, bias2);
    CHECK (run (s, &n, out) && same (out, ref2), "weights in partial "
           "memory: same result");
    /* a: partial, b: cpu (copies of W and a), c: partial (copy b),
       d: cpu (copy c), e: partial (bias lives there: copy d) ->
       5 splits, 5 copies.  */
    CHECK (tsr_sched_n_splits (s) == 5 && tsr_sched_n_copies (s) == 5,
           "weights in partial memory: 5 splits, 5 copies (got %d, %d)",
           tsr_sched_n_splits (s), tsr_sched_n_copies (s));
    tsr_sched_free (s);
    tsr_context_free (n.ctx);
    tsr_buffer_free (wbuf2);
    tsr_context_free (wctx2);
  }
  tsr_backend_free (part);
out:
  tsr_buffer_free (wbuf);
  tsr_context_free (wctx);
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
