/* silu (x * sigmoid (x)) and gelu (tanh approximation, as in
   tessera/ops.h) against the formulas evaluated in double, on odd and
   large sizes, extreme inputs and non-contiguous views.

   Tolerance: |err| <= 1e-6 + 1e-5 |want|: float exp/tanh are good to a
   few ulp, and near gelu's zero for negative x, 1 + tanh cancels, an
   absolute error of about |x| 2^-24 remains.  */
#include "ops-test.h"

#define ATOL 1e-6
#define RTOL 1e-5

static double
silu_ref (double x)
{
  return x / (1 + exp (-x));
}

static double
gelu_ref (double x)
{
  return 0.5 * x * (1 + tanh (sqrt (2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

typedef tsr_tensor *(*unary_fn) (tsr_context *, tsr_tensor *);

struct unary
{
  const char *name;
  unary_fn build;
  double (*ref) (double);
};

static const struct unary unaries[] = {
  { "silu", tsr_silu, silu_ref },
  { "gelu", tsr_gelu, gelu_ref },
};

static void
check_shape (tsr_backend *be, const struct unary *u, int64_t ne0, int64_t ne1,
             float lo, float hi)
{
  char desc[160];
  snprintf (desc, sizeof desc, "%s [%ld,%ld] on [%g,%g) (|err| <= 1e-6 +"
            " 1e-5 |want|)", u->name, (long) ne0, (long) ne1, (double) lo,
            (double) hi);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, ne0, ne1);
  ot_fill (x, lo, hi);
  tsr_tensor *r = u->build (ctx, x);
  if (ot_run (desc, be, ctx, r))
    {
      double *want = malloc (ne0 * ne1 * sizeof *want);
      OT_FOR_EACH (x, i0, i1, i2, i3)
        want[i1 * ne0 + i0] = u->ref (ot_get (x, i0, i1, i2, i3));
      ot_compare (desc, r, x->ne, want, ATOL, RTOL);
      free (want);
    }
  tsr_context_free (ctx);
}

/* Exact and limiting values: 0, +-30, +-100, and small x.  */
static void
check_special (tsr_backend *be, const struct unary *u)
{
  static const float xs[] = { 0.0f, -0.0f, 30.0f, -30.0f, 100.0f, -100.0f,
                              1e-3f, -1e-3f, 1.0f, -1.0f };
  enum { N = sizeof xs / sizeof xs[0] };
  char desc[120];
  snprintf (desc, sizeof desc, "%s of 0, +-30, +-100, +-1e-3, +-1 is finite"
            " and matches", u->name);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, N);
  memcpy (x->data, xs, sizeof xs);
  tsr_tensor *r = u->build (ctx, x);
  if (ot_run (desc, be, ctx, r))
    {
      double want[N];
      for (int i = 0; i < N; i++)
        want[i] = u->ref (xs[i]);
      ot_compare (desc, r, x->ne, want, ATOL, RTOL);
    }
  tsr_context_free (ctx);
}

/* On a transposed view (strided elements) and on a 3d view with
   permuted dimensions 1 and 2 (strided rows).  */
static void
check_views (tsr_backend *be, const struct unary *u)
{
  char desc[120];
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 13, 6);
  ot_fill (x, -6.0f, 6.0f);
  snprintf (desc, sizeof desc, "%s of a transposed view (|err| <= 1e-6 +"
            " 1e-5 |want|)", u->name);
  tsr_tensor *r = u->build (ctx, tsr_transpose (ctx, x));
  if (ot_run (desc, be, ctx, r))
    {
      double want[78];
      for (int i1 = 0; i1 < 13; i1++)
        for (int i0 = 0; i0 < 6; i0++)
          want[i1 * 6 + i0] = u->ref (ot_get (x, i1, i0, 0, 0));
      ot_compare (desc, r, (int64_t[]) { 6, 13, 1, 1 }, want, ATOL, RTOL);
    }

  tsr_tensor *y = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 8, 3, 5);
  ot_fill (y, -6.0f, 6.0f);
  snprintf (desc, sizeof desc, "%s of a view with dimensions 1 and 2 swapped"
            " (|err| <= 1e-6 + 1e-5 |want|)", u->name);
  r = u->build (ctx, tsr_permute (ctx, y, 0, 2, 1, 3));
  if (ot_run (desc, be, ctx, r))
    {
      double want[120];
      for (int i2 = 0; i2 < 3; i2++)
        for (int i1 = 0; i1 < 5; i1++)
          for (int i0 = 0; i0 < 8; i0++)
            want[(i2 * 5 + i1) * 8 + i0] = u->ref (ot_get (y, i0, i2, i1, 0));
      ot_compare (desc, r, (int64_t[]) { 8, 5, 3, 1 }, want, ATOL, RTOL);
    }
  tsr_context_free (ctx);
}

/* gelu (silu (x)) in a no_alloc context through the graph allocator.  */
static void
check_allocated (tsr_backend *be)
{
  enum { N = 1000 };
  const char *desc = "gelu (silu (x)) through the graph allocator"
                     " (|err| <= 2e-6 + 2e-5 |want|)";
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, N);
  tsr_set_input (x);
  tsr_tensor *r = tsr_gelu (ctx, tsr_silu (ctx, x));
  tsr_graph *g;
  tsr_gallocr *ga;
  int rc = ot_allocate (be, ctx, r, &g, &ga);
  static float v[N], out[N];
  for (int i = 0; i < N; i++)
    v[i] = tsr_test_uniform (-5.0f, 5.0f);
  if (rc == TSR_OK)
    rc = ot_compute_io (be, g, 1, &x, (const void *[]) { v }, r, out);
  if (rc != TSR_OK)
    tsr_test_result (0, "%s: %s", desc, tsr_last_error ());
  else
    {
      long bad = 0;
      int first = 0;
      for (int i = 0; i < N; i++)
        {
          double w = gelu_ref (silu_ref (v[i]));
          if (!(fabs (out[i] - w) <= 2e-6 + 2e-5 * fabs (w)) && !bad++)
            first = i;
        }
      if (bad)
        tsr_test_result (0, "%s: %ld wrong, first x %.9g got %.9g want %.9g",
                         desc, bad, (double) v[first], (double) out[first],
                         gelu_ref (silu_ref (v[first])));
      else
        tsr_test_result (1, "%s", desc);
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
  tsr_test_seed (2);
  for (int k = 0; k < 2; k++)
    {
      const struct unary *u = &unaries[k];
      check_shape (be, u, 1, 1, -3.0f, 3.0f);
      check_shape (be, u, 17, 3, -8.0f, 8.0f);
      check_shape (be, u, 5003, 1, -10.0f, 10.0f);
      check_shape (be, u, 33, 9, -0.01f, 0.01f);
      check_special (be, u);
      check_views (be, u);
    }
  check_allocated (be);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
