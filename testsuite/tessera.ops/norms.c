/* sum_rows, norm ((x - mean) / sqrt (var + eps), var the mean squared
   deviation) and rms_norm (x / sqrt (mean (x^2) + eps)) per row, against
   double-precision references, on odd and long rows, with eps that
   matters, constant and zero rows, and non-contiguous inputs.

   Tolerances: sums 1e-6 n max |x| (float accumulation); normalized
   values are O(1): 1e-5 absolute (1e-4 for rows longer than 4096).  */
#include "ops-test.h"

enum { SUM_ROWS, NORM, RMS_NORM };
static const char *const names[] = { "sum_rows", "norm", "rms_norm" };

/* The reference for one row X of length N into Y.  */
static void
ref_row (int op, const double *x, int64_t n, float eps, double *y)
{
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < n; i++)
    s += x[i];
  if (op == SUM_ROWS)
    {
      y[0] = s;
      return;
    }
  double mean = op == NORM ? s / n : 0;
  for (int64_t i = 0; i < n; i++)
    s2 += (x[i] - mean) * (x[i] - mean);
  double inv = 1 / sqrt (s2 / n + eps);
  for (int64_t i = 0; i < n; i++)
    y[i] = (x[i] - mean) * inv;
}

static tsr_tensor *
build (tsr_context *ctx, int op, tsr_tensor *x, float eps)
{
  switch (op)
    {
    case SUM_ROWS:
      return tsr_sum_rows (ctx, x);
    case NORM:
      return tsr_norm (ctx, x, eps);
    default:
      return tsr_rms_norm (ctx, x, eps);
    }
}

/* Run OP on X (any f32 tensor with host data, maybe a view) and compare
   with the reference read through X's strides.  */
static void
check_op (tsr_backend *be, tsr_context *ctx, int op, tsr_tensor *x, float eps,
          const char *what)
{
  char desc[200];
  int64_t n = x->ne[0];
  double tol;
  double xmax = 0;
  OT_FOR_EACH (x, i0, i1, i2, i3)
    xmax = fmax (xmax, fabs (ot_get (x, i0, i1, i2, i3)));
  if (op == SUM_ROWS)
    tol = 1e-6 * n * xmax + 1e-30;
  else
    tol = n > 4096 ? 1e-4 : 1e-5;
  if (op == SUM_ROWS)
    snprintf (desc, sizeof desc, "sum_rows of %s (|err| <= 1e-6 n max|x|)",
              what);
  else
    snprintf (desc, sizeof desc, "%s eps %g of %s (|err| <= %g)", names[op],
              (double) eps, what, tol);
  tsr_tensor *r = build (ctx, op, x, eps);
  if (!ot_run (desc, be, ctx, r))
    return;
  int64_t ne[4] = { op == SUM_ROWS ? 1 : n, x->ne[1], x->ne[2], x->ne[3] };
  double *want = malloc (ot_count (ne) * sizeof *want);
  double *row = malloc (n * sizeof *row);
  for (int64_t i3 = 0; i3 < ne[3]; i3++)
    for (int64_t i2 = 0; i2 < ne[2]; i2++)
      for (int64_t i1 = 0; i1 < ne[1]; i1++)
        {
          for (int64_t i0 = 0; i0 < n; i0++)
            row[i0] = ot_get (x, i0, i1, i2, i3);
          ref_row (op, row, n, eps, want + ot_index (ne, 0, i1, i2, i3));
        }
  ot_compare (desc, r, ne, want, tol, 0);
  free (row);
  free (want);
}

static void
check_shapes (tsr_backend *be, int op)
{
  static const int64_t shapes[][4] = {
    { 1, 2, 1, 1 }, { 17, 3, 1, 1 }, { 33, 2, 3, 2 }, { 4099, 2, 1, 1 },
  };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    {
      char what[80];
      tsr_context *ctx = tsr_context_new (false);
      tsr_tensor *x = tsr_new_tensor (ctx, TSR_TYPE_F32, 4, shapes[s]);
      /* An offset keeps norm's mean away from zero.  */
      ot_fill (x, -2.0f, 3.0f);
      snprintf (what, sizeof what, "[%ld,%ld,%ld,%ld]", (long) shapes[s][0],
                (long) shapes[s][1], (long) shapes[s][2], (long) shapes[s][3]);
      check_op (be, ctx, op, x, 1e-5f, what);
      tsr_context_free (ctx);
    }
}

/* Rows where eps decides the result, and constant / zero rows.  */
static void
check_special (tsr_backend *be, int op)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 8, 4);
  ot_fill (x, -0.5f, 0.5f);
  check_op (be, ctx, op, x, 1.0f, "[8,4] small values");
  tsr_tensor *c = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 16, 2);
  for (int i = 0; i < 16; i++)
    {
      ((float *) c->data)[i] = 2.5f;   /* constant: norm gives 0 */
      ((float *) c->data)[16 + i] = 0.0f;
    }
  check_op (be, ctx, op, c, 1e-5f, "a constant row and a zero row");
  /* Mean far from zero compared with the spread: (x - mean) must not
     cancel badly.  */
  tsr_tensor *o = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 33, 3);
  ot_fill (o, 999.0f, 1001.0f);
  check_op (be, ctx, op, o, 1e-5f, "rows of 1000 +- 1");
  tsr_context_free (ctx);
}

/* A transposed view (strided elements) and a view with dimensions 1 and
   2 swapped (strided rows).  */
static void
check_views (tsr_backend *be, int op)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 6, 19);
  ot_fill (x, -1.0f, 2.0f);
  check_op (be, ctx, op, tsr_transpose (ctx, x), 1e-5f, "a transposed view");
  tsr_tensor *y = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 21, 3, 4);
  ot_fill (y, -1.0f, 2.0f);
  check_op (be, ctx, op, tsr_permute (ctx, y, 0, 2, 1, 3), 1e-5f,
            "a view with dimensions 1 and 2 swapped");
  tsr_context_free (ctx);
}

/* rms_norm (x) * w through the graph allocator, as in a transformer.  */
static void
check_allocated (tsr_backend *be)
{
  enum { N = 64, R = 5 };
  const char *desc = "rms_norm (x) * w through the graph allocator"
                     " (|err| <= 1e-5 max|w|)";
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, N, R);
  tsr_tensor *w = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, N);
  tsr_set_input (x);
  tsr_set_input (w);
  tsr_tensor *r = tsr_mul (ctx, tsr_rms_norm (ctx, x, 1e-6f), w);
  tsr_graph *g;
  tsr_gallocr *ga;
  int rc = ot_allocate (be, ctx, r, &g, &ga);
  float xv[N * R], wv[N], out[N * R];
  for (int i = 0; i < N * R; i++)
    xv[i] = tsr_test_uniform (-3.0f, 3.0f);
  for (int i = 0; i < N; i++)
    wv[i] = tsr_test_uniform (-2.0f, 2.0f);
  if (rc == TSR_OK)
    rc = ot_compute_io (be, g, 2, (tsr_tensor *[]) { x, w },
                        (const void *[]) { xv, wv }, r, out);
  if (rc != TSR_OK)
    tsr_test_result (0, "%s: %s", desc, tsr_last_error ());
  else
    {
      double worst = 0;
      for (int j = 0; j < R; j++)
        {
          double row[N], y[N];
          for (int i = 0; i < N; i++)
            row[i] = xv[j * N + i];
          ref_row (RMS_NORM, row, N, 1e-6f, y);
          for (int i = 0; i < N; i++)
            {
              double e = fabs (out[j * N + i] - y[i] * wv[i]);
              if (!(e <= worst))
                worst = e;
            }
        }
      CHECK (worst <= 2e-5, "%s (worst %.3g)", desc, worst);
    }
  tsr_gallocr_free (ga);
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (8);
  for (int op = SUM_ROWS; op <= RMS_NORM; op++)
    {
      check_shapes (be, op);
      check_special (be, op);
      check_views (be, op);
    }
  check_allocated (be);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
