/* The scheduler over the check-only "partial" backend (f32 add and
   mul, private memory) and the CPU: results equal the CPU alone, and
   the splits and copies are exactly those the placement implies.  */
#include <math.h>
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

/* Weights made by weight (): their contexts and buffers.  */
struct held
{
  tsr_context *ctx[8];
  tsr_buffer *buf[8];
  int n;
};

static void
release (struct held *h)
{
  for (int i = 0; i < h->n; i++)
    {
      tsr_buffer_free (h->buf[i]);
      tsr_context_free (h->ctx[i]);
    }
  h->n = 0;
}

/* An NE0 x NE1 f32 weight named NAME in BE's memory, uniform in
   [-1, 1], held by H.  */
static tsr_tensor *
weight (struct held *h, tsr_backend *be, const char *name, int64_t ne0,
        int64_t ne1)
{
  tsr_context *c = h->ctx[h->n] = tsr_context_new (true);
  tsr_tensor *t = tsr_set_name (tsr_new_tensor_2d (c, TSR_TYPE_F32, ne0,
                                                   ne1), name);
  tsr_set_param (t);
  h->buf[h->n++] = tsr_context_alloc_tensors (c,
                                              tsr_backend_buffer_type (be));
  float *v = malloc ((size_t) (ne0 * ne1) * sizeof *v);
  for (int64_t i = 0; i < ne0 * ne1; i++)
    v[i] = tsr_test_uniform (-1, 1);
  tsr_tensor_set (t, v, 0, (size_t) (ne0 * ne1) * sizeof *v);
  free (v);
  return t;
}

/* Compute G's result OUT (COUNT floats) with a scheduler over BE[0..N)
   after setting input X to XV; 1 on success.  */
static int
compute (tsr_backend **be, int n, tsr_graph *g, tsr_tensor *x,
         const float *xv_, tsr_tensor *outt, float *res, size_t count,
         struct tsr_sched_stats *st, tsr_sched **keep)
{
  tsr_sched *s = tsr_sched_new (be, n);
  int ok = s && tsr_sched_alloc_graph (s, g) == TSR_OK
           && tsr_tensor_set (x, xv_, 0, tsr_nbytes (x)) == TSR_OK
           && tsr_sched_graph_compute (s, g) == TSR_OK
           && tsr_tensor_get (outt, res, 0, count * sizeof *res) == TSR_OK;
  if (st)
    tsr_sched_get_stats (s, st);
  if (keep)
    *keep = s;
  else
    tsr_sched_free (s);
  return ok;
}

/* A layer boundary as a model has it, over [cpu, partial]: t = Wc x on
   the cpu; n = t * t (a norm, no weight); m = n * G, q = m * H (G, H in
   partial memory); o = q + t (the residual add, no weight); p = o * P
   (partial); out = W p (cpu).  n and o have no weights: they go where
   the fewest bytes move, which is partial (t is carried there once for
   both), even though the cpu comes first.  3 splits, 2 copies, no
   weight bytes.  */
static void
boundary (tsr_backend *cpu, tsr_backend *part)
{
  tsr_context *c = tsr_context_new (true);
  struct held held = { .n = 0 };
  tsr_tensor *wc = weight (&held, cpu, "Wc", K, K);
  tsr_tensor *wm = weight (&held, cpu, "W", K, M);
  tsr_tensor *g = weight (&held, part, "G", K, N);
  tsr_tensor *h = weight (&held, part, "H", K, N);
  tsr_tensor *pw = weight (&held, part, "P", K, N);
  tsr_tensor *x = tsr_new_tensor_2d (c, TSR_TYPE_F32, K, N);
  tsr_set_input (x);
  tsr_tensor *t = tsr_mul_mat (c, wc, x);
  tsr_tensor *nn = tsr_mul (c, t, t);
  tsr_tensor *m = tsr_mul (c, nn, g);
  tsr_tensor *q = tsr_mul (c, m, h);
  tsr_tensor *o = tsr_add (c, q, t);
  tsr_tensor *p = tsr_mul (c, o, pw);
  tsr_tensor *outt = tsr_mul_mat (c, wm, p);
  tsr_graph *gr = tsr_graph_new (c);
  tsr_graph_build (gr, outt);

  /* The reference: the same weights' values on the cpu alone (partial
     memory is plain host memory read by copies).  */
  float want[M * N], got[M * N];
  struct tsr_sched_stats st;
  tsr_sched *s;
  tsr_backend *order[2] = { cpu, part };
  CHECK (compute (order, 2, gr, x, xv, outt, got, M * N, &st, &s),
         "boundary: computes: %s", tsr_last_error ());
  /* Independent reference in double precision.  */
  {
    float gv[K * N], hv[K * N], pv[K * N], wcv[K * K], wmv[K * M];
    tsr_tensor_get (g, gv, 0, sizeof gv);
    tsr_tensor_get (h, hv, 0, sizeof hv);
    tsr_tensor_get (pw, pv, 0, sizeof pv);
    tsr_tensor_get (wc, wcv, 0, sizeof wcv);
    tsr_tensor_get (wm, wmv, 0, sizeof wmv);
    int ok = 1;
    for (int j = 0; j < N; j++)
      {
        double pc[K];
        for (int i = 0; i < K; i++)
          {
            double tt = 0;
            for (int k = 0; k < K; k++)
              tt += (double) wcv[i * K + k] * xv[j * K + k];
            pc[i] = ((tt * tt * gv[j * K + i] * hv[j * K + i]) + tt)
                    * pv[j * K + i];
          }
        for (int i = 0; i < M; i++)
          {
            double acc = 0;
            for (int k = 0; k < K; k++)
              acc += (double) wmv[i * K + k] * pc[k];
            want[j * M + i] = (float) acc;
            ok &= fabs (got[j * M + i] - acc) <= 1e-4 * (1 + fabs (acc));
          }
      }
    CHECK (ok, "boundary: the result matches a double-precision reference "
           "(1e-4 of 1 + |value|)");
  }
  CHECK (tsr_sched_get_backend (s, nn) == part
         && tsr_sched_get_backend (s, o) == part,
         "boundary: the norm and the residual add go with partial's "
         "weights (norm on %s, add on %s)",
         tsr_backend_name (tsr_sched_get_backend (s, nn)),
         tsr_backend_name (tsr_sched_get_backend (s, o)));
  CHECK (st.n_splits == 3 && st.n_copies == 2
         && st.bytes[TSR_SCHED_COPY_WEIGHT] == 0 && st.n_exceptions == 0
         && st.bytes[TSR_SCHED_COPY_ACTIVATION] == 2 * K * N * sizeof (float),
         "boundary: 3 splits, 2 activation copies, 0 weight bytes (got %d "
         "splits, %d copies, %llu weight bytes, %llu activation bytes)",
         st.n_splits, st.n_copies,
         (unsigned long long) st.bytes[TSR_SCHED_COPY_WEIGHT],
         (unsigned long long) st.bytes[TSR_SCHED_COPY_ACTIVATION]);
  (void) want;
  tsr_sched_free (s);
  release (&held);
  tsr_context_free (c);
}

/* Two branches whose nodes alternate between the devices in the
   graph's order (a1 partial, b1 cpu, s1, a2 partial, b2 cpu, s2, out):
   the scheduler orders them so that partial's two products run
   together, then the cpu's nodes: 2 splits, where the graph's order
   would cut 5.  Copies: a1 and a2 to the cpu, and the input x, which
   both read.  */
static void
grouping (tsr_backend *cpu, tsr_backend *part)
{
  tsr_context *c = tsr_context_new (true);
  struct held held = { .n = 0 };
  tsr_tensor *g = weight (&held, part, "G", K, N);
  tsr_tensor *h = weight (&held, part, "H", K, N);
  tsr_tensor *wc = weight (&held, cpu, "Wc", K, K);
  tsr_tensor *x = tsr_new_tensor_2d (c, TSR_TYPE_F32, K, N);
  tsr_set_input (x);
  tsr_tensor *a1 = tsr_mul (c, x, g);
  tsr_tensor *b1 = tsr_mul_mat (c, wc, x);
  tsr_tensor *s1 = tsr_add (c, a1, b1);
  tsr_tensor *a2 = tsr_mul (c, a1, h);
  tsr_tensor *b2 = tsr_silu (c, b1);
  tsr_tensor *s2 = tsr_add (c, a2, b2);
  tsr_tensor *outt = tsr_add (c, s1, s2);
  tsr_graph *gr = tsr_graph_new (c);
  tsr_graph_build (gr, outt);
  float want[K * N], got[K * N];
  struct tsr_sched_stats st;
  tsr_backend *order[2] = { cpu, part };
  /* The reference: g and h's values copied into cpu memory.  */
  {
    tsr_context *c2 = tsr_context_new (true);
    tsr_tensor *g2 = weight (&held, cpu, "G2", K, N);
    tsr_tensor *h2 = weight (&held, cpu, "H2", K, N);
    tsr_tensor *x2 = tsr_new_tensor_2d (c2, TSR_TYPE_F32, K, N);
    tsr_set_input (x2);
    float v[K * N];
    tsr_tensor_get (g, v, 0, sizeof v);
    tsr_tensor_set (g2, v, 0, sizeof v);
    tsr_tensor_get (h, v, 0, sizeof v);
    tsr_tensor_set (h2, v, 0, sizeof v);
    tsr_tensor *ra1 = tsr_mul (c2, x2, g2);
    tsr_tensor *rb1 = tsr_mul_mat (c2, wc, x2);
    tsr_tensor *rout = tsr_add (c2, tsr_add (c2, ra1, rb1),
                                tsr_add (c2, tsr_mul (c2, ra1, h2),
                                         tsr_silu (c2, rb1)));
    tsr_graph *rg = tsr_graph_new (c2);
    tsr_graph_build (rg, rout);
    CHECK (compute (&cpu, 1, rg, x2, xv, rout, want, K * N, NULL, NULL),
           "grouping: cpu reference computes");
    tsr_context_free (c2);
  }
  CHECK (compute (order, 2, gr, x, xv, outt, got, K * N, &st, NULL)
         && memcmp (got, want, sizeof got) == 0,
         "grouping: equals the cpu alone exactly");
  CHECK (st.n_splits == 2 && st.n_copies == 3,
         "grouping: partial's nodes run together: 2 splits, 3 copies (got "
         "%d, %d)", st.n_splits, st.n_copies);
  release (&held);
  tsr_context_free (c);
}

/* Memory written in place keeps its order of reads and writes: r reads
   the cache C (cpu memory) through a sum with a result of partial's, w
   copies b into C.  In the graph's order r comes first; w is ready
   first (it waits only for the cpu's b), and the scheduler's order must
   not run it before r.  r must see C's old values.  */
static void
in_place (tsr_backend *cpu, tsr_backend *part)
{
  tsr_context *c = tsr_context_new (true);
  struct held held = { .n = 0 };
  tsr_tensor *wc = weight (&held, cpu, "Wc", K, K);
  tsr_tensor *g = weight (&held, part, "G", K, N);
  tsr_tensor *cache = weight (&held, cpu, "C", K, N);
  cache->flags &= ~TSR_FLAG_PARAM;      /* a cache, not a weight */
  tsr_tensor *x = tsr_new_tensor_2d (c, TSR_TYPE_F32, K, N);
  tsr_set_input (x);
  tsr_tensor *b = tsr_mul_mat (c, wc, x);
  tsr_tensor *a = tsr_mul (c, x, g);
  tsr_tensor *r = tsr_add (c, cache, a);
  tsr_tensor *r2 = tsr_add (c, b, r);
  tsr_tensor *w = tsr_cpy (c, b, cache);
  tsr_tensor *outt = tsr_add (c, r2, w);
  tsr_graph *gr = tsr_graph_new (c);
  tsr_graph_build (gr, outt);
  float c0[K * N], gv[K * N], wcv[K * K], got[K * N];
  tsr_tensor_get (cache, c0, 0, sizeof c0);
  tsr_tensor_get (g, gv, 0, sizeof gv);
  tsr_tensor_get (wc, wcv, 0, sizeof wcv);
  struct tsr_sched_stats st;
  tsr_backend *order[2] = { cpu, part };
  int ok = compute (order, 2, gr, x, xv, outt, got, K * N, &st, NULL);
  /* out = (b + (C_old + x * G)) + b.  */
  for (int j = 0; j < N && ok; j++)
    for (int i = 0; i < K; i++)
      {
        double bb = 0;
        for (int k = 0; k < K; k++)
          bb += (double) wcv[i * K + k] * xv[j * K + k];
        double want = bb + (c0[j * K + i] + (double) xv[j * K + i]
                            * gv[j * K + i]) + bb;
        ok &= fabs (got[j * K + i] - want) <= 1e-4 * (1 + fabs (want));
      }
  CHECK (ok, "in place: the read of the cache sees its old values, the "
         "write comes after it (%d splits)", st.n_splits);
  release (&held);
  tsr_context_free (c);
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

  /* Priority partial > cpu, every weight in cpu memory.  b (mul_mat)
     and e (add with the bias) run where their weights are; a, c (add
     and mul, which partial supports and would come first by priority)
     have no weights: they follow the memory around them instead of
     being carried to partial and back.  One split, no copies (before
     placement followed memory: 4 splits, 3 copies).  */
  build (&n, w, bias);
  CHECK (run (s, &n, out), "two-backend schedule computes: %s",
         tsr_last_error ());
  CHECK (same (out, ref), "two backends give exactly the cpu result");
  CHECK (tsr_sched_n_splits (s) == 1 && tsr_sched_n_copies (s) == 0,
         "weights on the cpu: 1 split, 0 copies (got %d, %d)",
         tsr_sched_n_splits (s), tsr_sched_n_copies (s));
  CHECK (tsr_sched_get_backend (s, n.a) == cpu
         && tsr_sched_get_backend (s, n.c) == cpu,
         "add and mul without weights stay with the cpu's products, not "
         "on the higher-priority partial backend");
  CHECK (tsr_sched_get_backend (s, n.b) == cpu
         && tsr_sched_get_backend (s, n.e) == cpu,
         "mul_mat and the bias add run where their weights live");
  CHECK (tsr_sched_get_backend (s, n.x) == cpu, "input x lives where it is "
         "first read");
  CHECK (tsr_sched_n_nodes_on (s, part) == 0
         && tsr_sched_n_nodes_on (s, cpu) == 5, "node counts per backend");
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

  /* Forced placement: c on partial.  Splits: a b | c | d e = 3; copies:
     b to partial, c to cpu = 2, both activations.  */
  CHECK (tsr_sched_set_backend (s, n.c, part) == TSR_OK,
         "force c onto partial");
  CHECK (run (s, &n, out) && same (out, ref2), "forced placement computes "
         "the same result");
  struct tsr_sched_stats st;
  tsr_sched_get_stats (s, &st);
  CHECK (st.n_splits == 3 && st.n_copies == 2
         && st.copies[TSR_SCHED_COPY_ACTIVATION] == 2
         && st.bytes[TSR_SCHED_COPY_ACTIVATION] == 2 * M * N * sizeof (float)
         && st.bytes[TSR_SCHED_COPY_WEIGHT] == 0,
         "forced: 3 splits, 2 activation copies of %zu bytes (got %d, %d, "
         "%llu bytes)", 2 * M * N * sizeof (float), st.n_splits, st.n_copies,
         (unsigned long long) st.bytes[TSR_SCHED_COPY_ACTIVATION]);
  /* The user's graph is not rewritten: nodes read what they were built
     on, before and after compute (the copies are read through the
     scheduler's clones).  */
  CHECK (n.c->src[0] == n.b && n.c->src[1] == n.b && n.d->src[0] == n.c
         && n.e->src[0] == n.d,
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
  CHECK (tsr_sched_set_backend (s, n.d, part) == TSR_OK
         && tsr_sched_alloc_graph (s, n.g) == TSR_ERR_UNSUPPORTED
         && strstr (tsr_last_error (), "silu"),
         "forcing silu onto partial is refused naming the op: %s",
         tsr_last_error ());
  tsr_sched_reset (s);
  CHECK (run (s, &n, out) && tsr_sched_n_splits (s) == 1,
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

  /* Weights in partial memory: mul_mat cannot run there, so it runs on
     the cpu and W is copied to it on every compute (an exception,
     counted as weight bytes); the bias add runs on partial, where the
     bias is.  a, c, d: cpu.  Splits: a b c d | e = 2; copies: W
     (weight) and d (activation).  Before: 5 splits, 5 copies.  */
  {
    tsr_context *wctx2;
    tsr_tensor *w2, *bias2;
    tsr_buffer *wbuf2 = weights (part, &wctx2, &w2, &bias2);
    s = tsr_sched_new (both, 2);
    build (&n, w2, bias2);
    CHECK (run (s, &n, out) && same (out, ref2), "weights in partial "
           "memory: same result");
    tsr_sched_get_stats (s, &st);
    CHECK (st.n_splits == 2 && st.n_copies == 2 && st.n_exceptions == 1
           && st.bytes[TSR_SCHED_COPY_WEIGHT] == K * M * sizeof (float)
           && st.copies[TSR_SCHED_COPY_ACTIVATION] == 1,
           "weights in partial memory: 2 splits, W copied as one "
           "exception of %zu weight bytes (got %d splits, %d copies, %d "
           "exceptions, %llu weight bytes)", K * M * sizeof (float),
           st.n_splits, st.n_copies, st.n_exceptions,
           (unsigned long long) st.bytes[TSR_SCHED_COPY_WEIGHT]);
    CHECK (tsr_sched_get_backend (s, n.e) == part
           && tsr_sched_get_backend (s, n.b) == cpu,
           "the bias add on partial where the bias is, mul_mat on the cpu");
    /* The cumulative counters.  */
    tsr_sched_clear_stats (s);
    for (int k = 0; k < 3; k++)
      tsr_sched_graph_compute (s, n.g);
    tsr_sched_get_stats (s, &st);
    CHECK (st.n_computes == 3 && st.n_plans == 0
           && st.total_bytes[TSR_SCHED_COPY_WEIGHT]
              == 3 * K * M * sizeof (float)
           && st.total_bytes[TSR_SCHED_COPY_ACTIVATION]
              == 3 * M * N * sizeof (float)
           && st.compute_seconds > 0 && st.overhead_seconds >= 0
           && st.overhead_seconds <= st.compute_seconds,
           "three computes counted: %llu, weight bytes %llu, activation "
           "bytes %llu, %.3g s (%.3g s overhead)",
           (unsigned long long) st.n_computes,
           (unsigned long long) st.total_bytes[TSR_SCHED_COPY_WEIGHT],
           (unsigned long long) st.total_bytes[TSR_SCHED_COPY_ACTIVATION],
           st.compute_seconds, st.overhead_seconds);
    CHECK (tsr_sched_alloc_graph (s, n.g) == TSR_OK
           && (tsr_sched_get_stats (s, &st), st.n_plans == 1
               && st.plan_seconds > 0), "a plan counted, with its time");
    tsr_sched_free (s);
    tsr_context_free (n.ctx);
    tsr_buffer_free (wbuf2);
    tsr_context_free (wctx2);
  }
  tsr_sched_get_stats (NULL, &st);
  CHECK (st.n_splits == 0 && st.n_computes == 0, "no scheduler: zeros");
  boundary (cpu, part);
  grouping (cpu, part);
  in_place (cpu, part);
  tsr_backend_free (part);
out:
  tsr_buffer_free (wbuf);
  tsr_context_free (wctx);
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
