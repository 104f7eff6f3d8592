/* tsr-gpu-quant.h - the checks of a GPU backend's kernels for the block
 * types of model files (q4_1, q5_0, q5_1, q2_K..q6_K, iq4_nl, iq4_xs,
 * mxfp4), shared by tessera.opencl/ and tessera.cuda/.
 *
 * The reference is computed here from tsr_dequantize_row (the library's
 * scalar reference), in double, not from the CPU backend, so that these
 * checks do not depend on the CPU's kernels for the types:
 *   get_rows    bit for bit equal to tsr_dequantize_row;
 *   mul_mat     n = 1, 3, 8 (the matrix-vector kernels) and 64 (the
 *               GEMM path), weights broadcast over batches; each element
 *               within TOL.vec or TOL.gemm times sum |w x| of its dot
 *               product of the double reference (a misplaced field
 *               changes a dot by about sum |w x| / 32 or more);
 *   mul_mat_id  likewise (TOL.vec), and a bad expert id is an error;
 *   supports_op exactly the weight types with kernels: f32, f16, bf16
 *               and every block type but q8_K.
 * Limitations: one row length (512), one shape per op.  */
#ifndef TSR_GPU_QUANT_H
#define TSR_GPU_QUANT_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

#define GQ_K 512                /* row length: two super-blocks */

static const tsr_type gq_types[] = {
  TSR_TYPE_Q4_1, TSR_TYPE_Q5_0, TSR_TYPE_Q5_1, TSR_TYPE_Q2_K,
  TSR_TYPE_Q3_K, TSR_TYPE_Q4_K, TSR_TYPE_Q5_K, TSR_TYPE_Q6_K,
  TSR_TYPE_IQ4_NL, TSR_TYPE_IQ4_XS, TSR_TYPE_MXFP4,
};
#define GQ_NTYPES ((int) (sizeof gq_types / sizeof gq_types[0]))

/* Allowed error, relative to sum |w x| of a dot product.  */
struct gq_tol
{
  double vec;                   /* matrix-vector kernels, mul_mat_id */
  double gemm;                  /* mul_mat with more than 8 columns */
};

/* Weights: ROWS rows of GQ_K of TYPE, quantized from uniform values
   with a scale per row (2^-2 .. 2^2) and an outlier every 37 elements;
   RAW the blocks, DEQ their reference dequantization.  */
static void
gq_weights (tsr_type type, int64_t rows, unsigned long long seed,
            unsigned char **raw, float **deq)
{
  size_t row_bytes = tsr_row_size (type, GQ_K);
  float *x = malloc (sizeof *x * GQ_K);

  *raw = malloc (row_bytes * (size_t) rows);
  *deq = malloc (sizeof **deq * GQ_K * (size_t) rows);
  tsr_test_seed (seed);
  for (int64_t r = 0; r < rows; r++)
    {
      float s = ldexpf (1.0f, (int) (r % 5) - 2);
      for (int i = 0; i < GQ_K; i++)
        x[i] = tsr_test_uniform (-s, s) * (i % 37 == 5 ? 6.0f : 1.0f);
      tsr_quantize_row (type, x, *raw + row_bytes * (size_t) r, GQ_K);
      tsr_dequantize_row (type, *raw + row_bytes * (size_t) r,
                          *deq + GQ_K * r, GQ_K);
    }
  free (x);
}

static void
gq_uniform (float *x, int64_t n, unsigned long long seed)
{
  tsr_test_seed (seed);
  for (int64_t i = 0; i < n; i++)
    x[i] = tsr_test_uniform (-1, 1);
}

/* A graph of OUT in CTX, allocated on BE, or NULL (with a FAIL naming
   WHAT) when BE refuses a node or the allocation fails.  */
static tsr_buffer *
gq_alloc (tsr_backend *be, tsr_context *ctx, tsr_tensor *out,
          tsr_graph **g, const char *what)
{
  tsr_buffer *buf;
  int claimed = 1;

  if (!out)
    {
      CHECK (0, "%s: builds: %s", what, tsr_last_error ());
      return NULL;
    }
  *g = tsr_graph_new (ctx);
  tsr_graph_build (*g, out);
  for (int i = 0; i < tsr_graph_n_nodes (*g); i++)
    claimed &= tsr_backend_supports_op (be, tsr_graph_node (*g, i));
  if (!claimed)
    {
      CHECK (0, "%s: supported by %s", what, tsr_backend_name (be));
      return NULL;
    }
  buf = tsr_context_alloc_tensors (ctx, tsr_backend_buffer_type (be));
  if (!buf)
    CHECK (0, "%s: allocates: %s", what, tsr_last_error ());
  return buf;
}

static int
gq_compute (tsr_backend *be, tsr_graph *g, const char *what)
{
  int st = tsr_backend_graph_compute (be, g);
  if (st != TSR_OK)
    CHECK (0, "%s: computes: %s", what, tsr_last_error ());
  return st;
}

/* get_rows of a [GQ_K, 9, 2] table by [5, 2] indices.  */
static void
gq_get_rows (tsr_backend *be, tsr_type type)
{
  enum { R = 9, B = 2, N = 5 };
  char what[64];
  unsigned char *raw;
  float *deq, got[GQ_K * N * B];
  int32_t idx[N * B];
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_3d (ctx, type, GQ_K, R, B);
  tsr_tensor *rows = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, N, B);
  tsr_graph *g;
  tsr_buffer *buf;

  snprintf (what, sizeof what, "get_rows %s", tsr_type_name (type));
  buf = gq_alloc (be, ctx, tsr_get_rows (ctx, a, rows), &g, what);
  gq_weights (type, R * B, 11 + type, &raw, &deq);
  for (int i = 0; i < N * B; i++)
    idx[i] = (7 * i + 3) % R;
  if (buf)
    {
      tsr_tensor *out = tsr_graph_node (g, tsr_graph_n_nodes (g) - 1);
      tsr_tensor_set (a, raw, 0, tsr_nbytes (a));
      tsr_tensor_set (rows, idx, 0, sizeof idx);
      if (gq_compute (be, g, what) == TSR_OK)
        {
          int same = 1;
          tsr_tensor_get (out, got, 0, sizeof got);
          for (int j = 0; j < B; j++)
            for (int i = 0; i < N; i++)
              same &= memcmp (got + GQ_K * (i + N * j),
                              deq + GQ_K * (idx[i + N * j] + R * j),
                              sizeof (float) * GQ_K) == 0;
          CHECK (same, "%s: the bits of tsr_dequantize_row", what);
        }
      tsr_buffer_free (buf);
    }
  free (raw);
  free (deq);
  tsr_context_free (ctx);
}

/* Largest error of D [M, n, nb] against the double product of the
   dequantized weights W ([GQ_K, M, nw] with nb / nw broadcast) and X
   ([GQ_K, n, nb]), relative to sum |w x|; the error is NaN-safe.  */
static double
gq_mul_mat_error (const float *d, const float *w, const float *x, int64_t m,
                  int64_t n, int64_t nb, int64_t nw)
{
  double worst = 0;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++)
        {
          const float *wr = w + GQ_K * (i + m * (b / (nb / nw)));
          const float *xr = x + GQ_K * (j + n * b);
          double s = 0, mag = 0;
          for (int k = 0; k < GQ_K; k++)
            {
              s += (double) wr[k] * xr[k];
              mag += fabs ((double) wr[k] * xr[k]);
            }
          double e = fabs (d[i + m * (j + n * b)] - s) / (mag > 0 ? mag : 1);
          if (!(e <= worst))
            worst = isnan (e) ? INFINITY : e;
        }
  return worst;
}

/* mul_mat of [GQ_K, 19, 2] weights by [GQ_K, N, 4] activations.  */
static void
gq_mul_mat (tsr_backend *be, tsr_type type, int64_t n, double tol)
{
  enum { M = 19, AB = 2, BB = 4 };
  char what[64];
  unsigned char *raw;
  float *deq, *x = malloc (sizeof *x * GQ_K * n * BB);
  float *got = malloc (sizeof *got * M * n * BB);
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_3d (ctx, type, GQ_K, M, AB);
  tsr_tensor *b = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, GQ_K, n, BB);
  tsr_graph *g;
  tsr_buffer *buf;

  snprintf (what, sizeof what, "mul_mat %s n=%lld", tsr_type_name (type),
            (long long) n);
  buf = gq_alloc (be, ctx, tsr_mul_mat (ctx, a, b), &g, what);
  gq_weights (type, M * AB, 23 + type, &raw, &deq);
  gq_uniform (x, GQ_K * n * BB, 31 + n);
  if (buf)
    {
      tsr_tensor *out = tsr_graph_node (g, tsr_graph_n_nodes (g) - 1);
      tsr_tensor_set (a, raw, 0, tsr_nbytes (a));
      tsr_tensor_set (b, x, 0, tsr_nbytes (b));
      if (gq_compute (be, g, what) == TSR_OK)
        {
          tsr_tensor_get (out, got, 0, tsr_nbytes (out));
          double e = gq_mul_mat_error (got, deq, x, M, n, BB, AB);
          CHECK (e <= tol, "%s: within %.1g of the double reference "
                 "(error %.3g)", what, tol, e);
        }
      tsr_buffer_free (buf);
    }
  free (raw);
  free (deq);
  free (x);
  free (got);
  tsr_context_free (ctx);
}

/* mul_mat_id: 4 experts [GQ_K, 7], 2 used by each of 3 tokens.  With
   BAD_ID an id is out of range, which must be an error.  */
static void
gq_mul_mat_id (tsr_backend *be, tsr_type type, double tol, int bad_id)
{
  enum { M = 7, E = 4, U = 2, T = 3 };
  char what[80];
  unsigned char *raw;
  float *deq, x[GQ_K * U * T], got[M * U * T];
  int32_t ids[U * T];
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *as = tsr_new_tensor_3d (ctx, type, GQ_K, M, E);
  tsr_tensor *b = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, GQ_K, U, T);
  tsr_tensor *id = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, U, T);
  tsr_graph *g;
  tsr_buffer *buf;

  snprintf (what, sizeof what, "mul_mat_id %s%s", tsr_type_name (type),
            bad_id ? " bad expert id" : "");
  buf = gq_alloc (be, ctx, tsr_mul_mat_id (ctx, as, b, id), &g, what);
  gq_weights (type, M * E, 41 + type, &raw, &deq);
  gq_uniform (x, GQ_K * U * T, 43);
  for (int i = 0; i < U * T; i++)
    ids[i] = (3 * i + 1) % E;
  if (bad_id)
    ids[U * T - 1] = E;
  if (buf)
    {
      tsr_tensor *out = tsr_graph_node (g, tsr_graph_n_nodes (g) - 1);
      tsr_tensor_set (as, raw, 0, tsr_nbytes (as));
      tsr_tensor_set (b, x, 0, sizeof x);
      tsr_tensor_set (id, ids, 0, sizeof ids);
      int st = tsr_backend_graph_compute (be, g);
      if (bad_id)
        CHECK (st == TSR_ERR_INVALID_ARG, "%s: is an error: %s", what,
               st == TSR_OK ? "computed" : tsr_last_error ());
      else if (st != TSR_OK)
        CHECK (0, "%s: computes: %s", what, tsr_last_error ());
      else
        {
          double worst = 0;
          tsr_tensor_get (out, got, 0, sizeof got);
          /* Each (e, t) is a mul_mat of expert ids[e, t] by one row.  */
          for (int et = 0; et < U * T; et++)
            {
              double e = gq_mul_mat_error (got + M * et,
                                           deq + GQ_K * M * ids[et],
                                           x + GQ_K * et, M, 1, 1, 1);
              worst = e > worst || isnan (e) ? e : worst;
            }
          CHECK (worst <= tol, "%s: within %.1g of the double reference "
                 "(error %.3g)", what, tol, worst);
        }
      tsr_buffer_free (buf);
    }
  free (raw);
  free (deq);
  tsr_context_free (ctx);
}

/* Whether weights of TYPE have kernels (see the header comment).  */
static int
gq_has_kernel (tsr_type t)
{
  if (t == TSR_TYPE_F32 || t == TSR_TYPE_F16 || t == TSR_TYPE_BF16
      || t == TSR_TYPE_Q8_0 || t == TSR_TYPE_Q4_0)
    return 1;
  for (int i = 0; i < GQ_NTYPES; i++)
    if (gq_types[i] == t)
      return 1;
  return 0;
}

/* supports_op of get_rows, mul_mat and mul_mat_id for every type.  */
static void
gq_support (tsr_device *dev)
{
  for (int t = 0; t < TSR_TYPE_COUNT; t++)
    {
      tsr_context *ctx = tsr_context_new (true);
      tsr_tensor *a = tsr_new_tensor_3d (ctx, (tsr_type) t, GQ_K, 4, 2);
      tsr_tensor *b = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, GQ_K, 2, 3);
      tsr_tensor *rows = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 3);
      tsr_tensor *ids = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 2, 3);
      tsr_tensor *ops[3] = { tsr_get_rows (ctx, a, rows),
                             tsr_mul_mat (ctx, a, b),
                             tsr_mul_mat_id (ctx, a, b, ids) };
      int want = gq_has_kernel ((tsr_type) t), ok = 1;
      for (int i = 0; i < 3; i++)
        if (ops[i])             /* the builders refuse i32 weights */
          ok &= tsr_device_supports_op (dev, ops[i]) == want;
      CHECK (ok, "%s weights: get_rows, mul_mat, mul_mat_id %s",
             tsr_type_name ((tsr_type) t), want ? "supported" : "refused");
      tsr_context_free (ctx);
    }
}

/* Every check on DEV; the test's exit status.  */
static int
gq_run (tsr_device *dev, struct gq_tol tol)
{
  static const int64_t cols[] = { 1, 3, 8, 64 };
  tsr_backend *be = tsr_device_init (dev, NULL);

  CHECK (be != NULL, "backend of %s: %s", tsr_device_name (dev),
         be ? "ok" : tsr_last_error ());
  if (!be)
    return TSR_TEST_EXIT ();
  gq_support (dev);
  for (int i = 0; i < GQ_NTYPES; i++)
    {
      gq_get_rows (be, gq_types[i]);
      for (int c = 0; c < 4; c++)
        gq_mul_mat (be, gq_types[i], cols[c],
                    cols[c] <= 8 ? tol.vec : tol.gemm);
      gq_mul_mat_id (be, gq_types[i], tol.vec, 0);
    }
  gq_mul_mat_id (be, TSR_TYPE_Q4_K, tol.vec, 1);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}

#endif /* TSR_GPU_QUANT_H */
