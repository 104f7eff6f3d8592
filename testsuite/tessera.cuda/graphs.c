/* CUDA graphs and fused kernels: the graph of a decode step's
   patterns (add + rms_norm + mul, three products of one activation,
   rms_norm + mul, gate and up products with swiglu, k rotated by rope
   and written into a cache row by set_rows, v into another cache by a
   second set_rows) computed three times with new inputs, by a
   backend with graphs and fusion (the default), one with graphs off,
   one with both off, and one with the default but no programmatic
   dependent launch (TESSERA_CUDA_PDL=0).  Every compute is checked against values
   computed here in double precision from the dequantized weights; the
   four backends' results must be bit-identical; and the counters say
   where the work went: one capture then replays, the fused nodes of
   each pattern, and the kernels a compute takes (the activations of
   products after a norm rounded to 8 bits by the norm's kernel).  Tolerance (NMSE): 1e-12 for
   the residual sum; 5e-4 for the products, whose q4_0 and q8_0 weights
   multiply activations rounded to 8 bits a block of 32 at a time (as
   on the CPU: about 5e-5 for these values), and for k read back from
   the f16 cache; 1e-3 for the feed-forward after two such roundings.
   An error of the kernels' arithmetic is of order 1.  UNSUPPORTED
   without a CUDA device.  */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda-test.h"

#define E 256                   /* embedding */
#define KV 128                  /* key / value rows */
#define F 512                   /* feed-forward */
#define ROWS 4                  /* cache rows */
#define HD 32                   /* head size: KV / HD heads of k */
#define BASE 10000.0f           /* rope's frequency base */
#define RUNS 3
#define EPS 1e-5f

/* Weights as the graph holds them and as floats.  */
struct weights
{
  tsr_type type;
  int rows, cols;
  void *q;
  float *f;
};

static void
make_weights (struct weights *w, tsr_type type, int cols, int rows)
{
  size_t n = (size_t) rows * cols;
  w->type = type;
  w->rows = rows;
  w->cols = cols;
  w->f = malloc (n * sizeof *w->f);
  w->q = malloc (tsr_row_size (type, (int64_t) n));
  for (size_t i = 0; i < n; i++)
    w->f[i] = tsr_test_uniform (-1, 1);
  tsr_quantize_row (type, w->f, w->q, (int64_t) n);
  tsr_dequantize_row (type, w->q, w->f, (int64_t) n);
}

/* y = W x in double.  */
static void
product (const struct weights *w, const double *x, double *y)
{
  for (int r = 0; r < w->rows; r++)
    {
      double s = 0;
      for (int k = 0; k < w->cols; k++)
        s += (double) w->f[(size_t) r * w->cols + k] * x[k];
      y[r] = s;
    }
}

static void
rms_norm_mul (const double *x, const float *wn, int n, double *y)
{
  double ss = 0;
  for (int i = 0; i < n; i++)
    ss += x[i] * x[i];
  double s = 1 / sqrt (ss / n + EPS);
  for (int i = 0; i < n; i++)
    y[i] = x[i] * s * wn[i];
}

static double
nmse (const float *got, const double *want, int n)
{
  double e = 0, norm = 0;
  for (int i = 0; i < n; i++)
    {
      e += (got[i] - want[i]) * (got[i] - want[i]);
      norm += want[i] * want[i];
    }
  return norm > 0 ? e / norm : e;
}

struct net
{
  tsr_context *ctx;
  tsr_buffer *buf;
  tsr_graph *g;
  tsr_tensor *x, *r, *idx, *pos, *wn, *wn2, *cache, *vcache;
  tsr_tensor *w[6];             /* q, k, v, gate, up, down */
  tsr_tensor *s, *q, *k, *v, *out;
};

enum { WQ, WK, WV, WG, WU, WD };

static int
build (struct net *n, tsr_device *dev, struct weights *ws, const float *wn,
       const float *wn2)
{
  tsr_context *ctx = n->ctx = tsr_context_new (true);
  n->x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, E, 1);
  n->r = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, E, 1);
  n->idx = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 1);
  n->pos = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 1);
  n->wn = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, E);
  n->wn2 = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, E);
  n->cache = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, KV, ROWS);
  n->vcache = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, KV, ROWS);
  for (int i = 0; i < 6; i++)
    n->w[i] = tsr_new_tensor_2d (ctx, ws[i].type, ws[i].cols, ws[i].rows);
  n->s = tsr_add (ctx, n->r, n->x);
  tsr_tensor *h = tsr_mul (ctx, tsr_rms_norm (ctx, n->s, EPS), n->wn);
  n->q = tsr_mul_mat (ctx, n->w[WQ], h);
  n->k = tsr_mul_mat (ctx, n->w[WK], h);
  n->v = tsr_mul_mat (ctx, n->w[WV], h);
  tsr_tensor *kr = tsr_rope_ext (ctx, tsr_reshape_3d (ctx, n->k, HD, KV / HD,
                                                      1),
                                 n->pos, NULL, HD, TSR_ROPE_NORMAL, BASE,
                                 1.0f);
  tsr_tensor *c = tsr_set_rows (ctx, n->cache, tsr_reshape_2d (ctx, kr, KV,
                                                               1), n->idx);
  tsr_tensor *cv = tsr_set_rows (ctx, n->vcache, n->v, n->idx);
  tsr_tensor *h2 = tsr_mul (ctx, tsr_rms_norm (ctx, n->q, EPS), n->wn2);
  tsr_tensor *f = tsr_swiglu (ctx, tsr_mul_mat (ctx, n->w[WG], h2),
                              tsr_mul_mat (ctx, n->w[WU], h2));
  n->out = tsr_mul_mat (ctx, n->w[WD], f);
  n->g = tsr_graph_new (ctx);
  tsr_tensor *outs[] = { n->s, n->q, n->v, c, cv, n->out };
  for (size_t i = 0; i < sizeof outs / sizeof *outs; i++)
    {
      tsr_set_output (outs[i]);
      if (tsr_graph_build (n->g, outs[i]) != TSR_OK)
        return TSR_ERR_INVALID_ARG;
    }
  n->buf = tsr_context_alloc_tensors (ctx, tsr_device_buffer_type (dev));
  if (!n->buf)
    return tsr_last_status ();
  tsr_buffer_clear (n->buf, 0);         /* the cache: zeros */
  for (int i = 0; i < 6; i++)
    tsr_tensor_set (n->w[i], ws[i].q, 0, tsr_nbytes (n->w[i]));
  tsr_tensor_set (n->wn, wn, 0, E * sizeof *wn);
  tsr_tensor_set (n->wn2, wn2, 0, E * sizeof *wn2);
  return TSR_OK;
}

/* What one compute gives: s, q, v, out, and the caches after it.  */
struct result
{
  float s[E], q[E], v[KV], out[E];
  uint16_t cache[KV * ROWS], vcache[KV * ROWS];
};

#define CONFIGS 4
static const char *const config_name[CONFIGS] = {
  "graphs and fusion", "fusion, no graphs", "neither",
  "graphs and fusion, TESSERA_CUDA_PDL=0"
};

int
main (void)
{
  tsr_device *dev = cuda_test_device ();
  if (!dev)
    return TSR_TEST_EXIT ();

  struct weights ws[6];
  make_weights (&ws[WQ], TSR_TYPE_Q4_0, E, E);
  make_weights (&ws[WK], TSR_TYPE_Q4_0, E, KV);
  make_weights (&ws[WV], TSR_TYPE_Q4_0, E, KV);
  make_weights (&ws[WG], TSR_TYPE_Q4_K, E, F);
  make_weights (&ws[WU], TSR_TYPE_Q4_K, E, F);
  make_weights (&ws[WD], TSR_TYPE_Q8_0, F, E);
  float wn[E], wn2[E], xs[RUNS][E], rs[RUNS][E];
  for (int i = 0; i < E; i++)
    {
      wn[i] = tsr_test_uniform (0.5f, 1.5f);
      wn2[i] = tsr_test_uniform (0.5f, 1.5f);
    }
  for (int t = 0; t < RUNS; t++)
    for (int i = 0; i < E; i++)
      {
        xs[t][i] = tsr_test_uniform (-1, 1);
        rs[t][i] = tsr_test_uniform (-1, 1);
      }

  static struct result res[CONFIGS][RUNS];
  struct tsr_backend_counters cnt[CONFIGS];
  for (int cfg = 0; cfg < CONFIGS; cfg++)
    {
      struct net n = { 0 };
      setenv ("TESSERA_CUDA_GRAPHS", cfg == 0 || cfg == 3 ? "1" : "0", 1);
      setenv ("TESSERA_CUDA_FUSION", cfg != 2 ? "1" : "0", 1);
      setenv ("TESSERA_CUDA_PDL", cfg != 3 ? "1" : "0", 1);
      tsr_backend *be = tsr_device_init (dev, NULL);
      int st = be ? build (&n, dev, ws, wn, wn2) : tsr_last_status ();
      CHECK (st == TSR_OK, "%s: backend and tensors: %s", config_name[cfg],
             st == TSR_OK ? "ok" : tsr_last_error ());
      if (st != TSR_OK)
        {
          tsr_backend_free (be);
          tsr_buffer_free (n.buf);
          tsr_context_free (n.ctx);
          return TSR_TEST_EXIT ();
        }
      tsr_backend_get_counters (be, &cnt[cfg], true);
      for (int t = 0; t < RUNS; t++)
        {
          int32_t row = t + 1, p = 5 + 7 * t;
          tsr_tensor_set (n.x, xs[t], 0, sizeof xs[t]);
          tsr_tensor_set (n.r, rs[t], 0, sizeof rs[t]);
          tsr_tensor_set (n.idx, &row, 0, sizeof row);
          tsr_tensor_set (n.pos, &p, 0, sizeof p);
          st = tsr_backend_graph_compute (be, n.g);
          CHECK (st == TSR_OK, "%s: compute %d: %s", config_name[cfg], t,
                 st == TSR_OK ? "ok" : tsr_last_error ());
          struct result *o = &res[cfg][t];
          tsr_tensor_get (n.s, o->s, 0, sizeof o->s);
          tsr_tensor_get (n.q, o->q, 0, sizeof o->q);
          tsr_tensor_get (n.v, o->v, 0, sizeof o->v);
          tsr_tensor_get (n.out, o->out, 0, sizeof o->out);
          tsr_tensor_get (n.cache, o->cache, 0, sizeof o->cache);
          tsr_tensor_get (n.vcache, o->vcache, 0, sizeof o->vcache);
        }
      CHECK (tsr_backend_get_counters (be, &cnt[cfg], false) == TSR_OK,
             "%s: the backend keeps counters", config_name[cfg]);
      tsr_backend_free (be);
      tsr_buffer_free (n.buf);
      tsr_context_free (n.ctx);
    }
  unsetenv ("TESSERA_CUDA_GRAPHS");
  unsetenv ("TESSERA_CUDA_FUSION");
  unsetenv ("TESSERA_CUDA_PDL");

  /* Each compute against double precision.  */
  for (int t = 0; t < RUNS; t++)
    {
      double s[E], h[E], q[E], k[KV], v[KV], h2[E], g[F], u[F], f[F], out[E];
      for (int i = 0; i < E; i++)
        s[i] = (double) rs[t][i] + xs[t][i];
      rms_norm_mul (s, wn, E, h);
      product (&ws[WQ], h, q);
      product (&ws[WK], h, k);
      product (&ws[WV], h, v);
      /* k rotated: pairs (2i, 2i + 1) of each head by p base^(-2i/HD).  */
      double kr[KV];
      for (int hh = 0; hh < KV / HD; hh++)
        for (int i = 0; i < HD / 2; i++)
          {
            double th = (5 + 7 * t) * pow (BASE, -2.0 * i / HD);
            double x0 = k[hh * HD + 2 * i], x1 = k[hh * HD + 2 * i + 1];
            kr[hh * HD + 2 * i] = x0 * cos (th) - x1 * sin (th);
            kr[hh * HD + 2 * i + 1] = x0 * sin (th) + x1 * cos (th);
          }
      rms_norm_mul (q, wn2, E, h2);
      product (&ws[WG], h2, g);
      product (&ws[WU], h2, u);
      for (int i = 0; i < F; i++)
        f[i] = g[i] / (1 + exp (-g[i])) * u[i];
      product (&ws[WD], f, out);
      const struct result *o = &res[0][t];
      float row[KV], vrow[KV];
      for (int i = 0; i < KV; i++)
        {
          row[i] = tsr_fp16_to_fp32 (o->cache[(t + 1) * KV + i]);
          vrow[i] = tsr_fp16_to_fp32 (o->vcache[(t + 1) * KV + i]);
        }
      CHECK (nmse (o->s, s, E) < 1e-12, "compute %d: the residual sum "
             "(nmse %.2e)", t, nmse (o->s, s, E));
      CHECK (nmse (o->q, q, E) < 5e-4 && nmse (o->v, v, KV) < 5e-4,
             "compute %d: the fused products q and v (nmse %.2e, %.2e)", t,
             nmse (o->q, q, E), nmse (o->v, v, KV));
      CHECK (nmse (row, kr, KV) < 5e-4, "compute %d: k rotated in cache "
             "row %d (nmse %.2e, f16)", t, t + 1, nmse (row, kr, KV));
      CHECK (nmse (vrow, v, KV) < 5e-4, "compute %d: v in cache row %d "
             "(nmse %.2e, f16)", t, t + 1, nmse (vrow, v, KV));
      CHECK (nmse (o->out, out, E) < 1e-3, "compute %d: the gated "
             "feed-forward (nmse %.2e)", t, nmse (o->out, out, E));
    }
  for (int cfg = 1; cfg < CONFIGS; cfg++)
    CHECK (memcmp (res[cfg], res[0], sizeof res[0]) == 0, "%s gives the "
           "bits of graphs and fusion", config_name[cfg]);

  /* Where the work went.  Fused per compute: add + rms_norm + mul
     (2), the q, k, v products (2), rms_norm + mul (1), gate, up and
     swiglu (2), rope and the two set_rows as phases of one kernel (2).
     Kernels a compute with fusion: the status word's reset, the two
     norms (each rounding the activations of the products after it),
     the q, k, v products, the phases, gate and up, and the down
     product with its activations' rounding: 8.  */
  const struct tsr_backend_counters *c = cnt;
  CHECK (c[0].computes == RUNS && c[0].graph_captures == 1
         && c[0].graph_replays == RUNS - 1, "graphs: one capture, then "
         "replays (%llu captures, %llu replays of %llu computes)",
         (unsigned long long) c[0].graph_captures,
         (unsigned long long) c[0].graph_replays,
         (unsigned long long) c[0].computes);
  CHECK (c[1].graph_captures == 0 && c[1].graph_replays == 0
         && c[2].graph_captures == 0, "TESSERA_CUDA_GRAPHS=0 captures "
         "nothing");
  CHECK (c[3].graph_captures == 1 && c[3].fused == c[0].fused
         && c[3].launches == c[0].launches, "TESSERA_CUDA_PDL=0: the same "
         "capture, fused nodes and kernels (%llu, %llu, %llu)",
         (unsigned long long) c[3].graph_captures,
         (unsigned long long) c[3].fused,
         (unsigned long long) c[3].launches);
  CHECK (c[0].fused == 9 * RUNS && c[1].fused == 9 * RUNS
         && c[2].fused == 0, "9 nodes fused a compute, none with "
         "TESSERA_CUDA_FUSION=0 (%llu, %llu, %llu)",
         (unsigned long long) c[0].fused, (unsigned long long) c[1].fused,
         (unsigned long long) c[2].fused);
  CHECK (c[0].launches == 8 * RUNS && c[1].launches == 8 * RUNS
         && c[1].launches + 9 * RUNS <= c[2].launches, "8 kernels a "
         "compute with fusion, more without "
         "(%llu, %llu, %llu kernels for %llu nodes)",
         (unsigned long long) c[0].launches,
         (unsigned long long) c[1].launches,
         (unsigned long long) c[2].launches,
         (unsigned long long) c[0].nodes);
  for (int i = 0; i < 6; i++)
    {
      free (ws[i].q);
      free (ws[i].f);
    }
  return TSR_TEST_EXIT ();
}
