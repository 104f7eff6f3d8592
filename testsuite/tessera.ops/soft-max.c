/* soft_max (a * scale + mask) per row: without a mask, with f32 and f16
   masks (more rows than a; dimensions 2 and 3 broadcast), -INFINITY
   entries giving exact zeros, huge inputs, rows of one, long rows and
   non-contiguous inputs, against exp (z - max z) / sum computed in
   double.  Tolerance: 1e-9 + 1e-5 |want| (1e-4 for rows over 4096: a
   float sum of n terms).  */
#include "ops-test.h"

/* The reference for A (host data, read through its strides) into a
   contiguous array; MASK may be NULL.  */
static double *
reference (const tsr_tensor *a, const tsr_tensor *mask, float scale)
{
  int64_t n = a->ne[0];
  double *want = malloc (tsr_nelements (a) * sizeof *want);
  double *z = malloc (n * sizeof *z);
  for (int64_t i3 = 0; i3 < a->ne[3]; i3++)
    for (int64_t i2 = 0; i2 < a->ne[2]; i2++)
      for (int64_t i1 = 0; i1 < a->ne[1]; i1++)
        {
          double m = -INFINITY, s = 0;
          for (int64_t i0 = 0; i0 < n; i0++)
            {
              z[i0] = ot_get (a, i0, i1, i2, i3) * (double) scale;
              if (mask)
                z[i0] += ot_get (mask, i0, i1, i2 % mask->ne[2],
                                 i3 % mask->ne[3]);
              m = fmax (m, z[i0]);
            }
          for (int64_t i0 = 0; i0 < n; i0++)
            s += exp (z[i0] - m);
          for (int64_t i0 = 0; i0 < n; i0++)
            want[ot_index (a->ne, i0, i1, i2, i3)] = exp (z[i0] - m) / s;
        }
  free (z);
  return want;
}

/* One check: soft_max of A (maybe a view) with MASK.  */
static void
check_sm (tsr_backend *be, tsr_context *ctx, tsr_tensor *a, tsr_tensor *mask,
          float scale, const char *what)
{
  char desc[200];
  double rtol = a->ne[0] > 4096 ? 1e-4 : 1e-5;
  snprintf (desc, sizeof desc, "soft_max of %s, scale %g (|err| <= 1e-9 + %g"
            " |want|)", what, (double) scale, rtol);
  tsr_tensor *r = tsr_soft_max (ctx, a, mask, scale);
  if (ot_run (desc, be, ctx, r))
    {
      double *want = reference (a, mask, scale);
      ot_compare (desc, r, a->ne, want, 1e-9, rtol);
      free (want);
    }
}

static tsr_tensor *
random_tensor (tsr_context *ctx, tsr_type type, int64_t n0, int64_t n1,
               int64_t n2, int64_t n3, float lo, float hi)
{
  tsr_tensor *t = tsr_new_tensor_4d (ctx, type, n0, n1, n2, n3);
  ot_fill (t, lo, hi);
  return t;
}

static void
check_plain (tsr_backend *be)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = random_tensor (ctx, TSR_TYPE_F32, 17, 5, 1, 1, -4, 4);
  check_sm (be, ctx, a, NULL, 1.0f, "[17,5]");
  a = random_tensor (ctx, TSR_TYPE_F32, 33, 4, 2, 1, -20, 20);
  check_sm (be, ctx, a, NULL, 0.125f, "[33,4,2]");
  a = random_tensor (ctx, TSR_TYPE_F32, 5000, 2, 1, 1, -10, 10);
  check_sm (be, ctx, a, NULL, 0.5f, "[5000,2]");

  const char *desc = "soft_max of rows of one element is exactly 1";
  a = random_tensor (ctx, TSR_TYPE_F32, 1, 3, 1, 1, -100, 100);
  tsr_tensor *r = tsr_soft_max (ctx, a, NULL, 1.0f);
  if (ot_run (desc, be, ctx, r))
    ot_compare (desc, r, a->ne, (double[]) { 1, 1, 1 }, 0, 0);

  /* exp (1000) overflows a float: the maximum must be taken out.  */
  a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 2);
  static const float big[] = { 1000, 1000, 999, -1000, -1e30f, 88.8f, 89.5f, 1e30f };
  memcpy (a->data, big, sizeof big);
  check_sm (be, ctx, a, NULL, 1.0f, "values up to 1e30 (no overflow)");
  tsr_context_free (ctx);
}

static void
check_masks (tsr_backend *be)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = random_tensor (ctx, TSR_TYPE_F32, 16, 4, 1, 1, -3, 3);
  tsr_tensor *m = random_tensor (ctx, TSR_TYPE_F32, 16, 4, 1, 1, -2, 2);
  check_sm (be, ctx, a, m, 1.0f, "[16,4] with an f32 mask");
  m = random_tensor (ctx, TSR_TYPE_F32, 16, 7, 1, 1, -2, 2);
  check_sm (be, ctx, a, m, 0.5f, "[16,4] with an f32 mask of 7 rows");
  a = random_tensor (ctx, TSR_TYPE_F32, 16, 4, 3, 2, -3, 3);
  m = random_tensor (ctx, TSR_TYPE_F32, 16, 4, 1, 1, -2, 2);
  check_sm (be, ctx, a, m, 1.0f, "[16,4,3,2] with a mask [16,4,1,1]");
  m = random_tensor (ctx, TSR_TYPE_F32, 16, 5, 1, 2, -2, 2);
  check_sm (be, ctx, a, m, 1.0f, "[16,4,3,2] with a mask [16,5,1,2]");
  m = random_tensor (ctx, TSR_TYPE_F32, 16, 4, 3, 1, -2, 2);
  check_sm (be, ctx, a, m, 1.0f, "[16,4,3,2] with a mask [16,4,3,1]");
  m = random_tensor (ctx, TSR_TYPE_F16, 16, 4, 1, 1, -2, 2);
  check_sm (be, ctx, a, m, 0.25f, "[16,4,3,2] with an f16 mask");

  /* Causal masks: entry (i0, i1) is -inf for i0 > i1.  */
  for (int k = 0; k < 2; k++)
    {
      tsr_type mt = k ? TSR_TYPE_F16 : TSR_TYPE_F32;
      char what[80], desc[120];
      a = random_tensor (ctx, TSR_TYPE_F32, 9, 9, 2, 1, -5, 5);
      m = tsr_new_tensor_2d (ctx, mt, 9, 9);
      OT_FOR_EACH (m, i0, i1, i2, i3)
        ot_set (m, i0, i1, i2, i3, i0 > i1 ? -INFINITY : 0.0);
      snprintf (what, sizeof what, "[9,9,2] with a causal %s mask",
                tsr_type_name (mt));
      check_sm (be, ctx, a, m, 1.0f, what);
      snprintf (desc, sizeof desc, "soft_max with a causal %s mask gives"
                " exact zeros under -inf", tsr_type_name (mt));
      tsr_tensor *r = tsr_soft_max (ctx, a, m, 1.0f);
      if (ot_run (desc, be, ctx, r))
        {
          long bad = 0;
          OT_FOR_EACH (r, i0, i1, i2, i3)
            if (i0 > i1 && ot_get (r, i0, i1, i2, i3) != 0.0)
              bad++;
          CHECK (bad == 0, "%s (%ld nonzero)", desc, bad);
        }
    }
  tsr_context_free (ctx);
}

/* Rows sum to one, whatever the reference says.  */
static void
check_sums (tsr_backend *be)
{
  const char *desc = "soft_max rows of [33,6] with a mask sum to 1 within 1e-5";
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = random_tensor (ctx, TSR_TYPE_F32, 33, 6, 1, 1, -30, 30);
  tsr_tensor *m = random_tensor (ctx, TSR_TYPE_F32, 33, 6, 1, 1, -30, 0);
  tsr_tensor *r = tsr_soft_max (ctx, a, m, 0.7f);
  if (ot_run (desc, be, ctx, r))
    {
      double worst = 0;
      int negative = 0;
      for (int64_t i1 = 0; i1 < 6; i1++)
        {
          double s = 0;
          for (int64_t i0 = 0; i0 < 33; i0++)
            {
              double v = ot_get (r, i0, i1, 0, 0);
              negative |= v < 0;
              s += v;
            }
          worst = fmax (worst, fabs (s - 1));
        }
      CHECK (worst <= 1e-5 && !negative, "%s (worst %.3g%s)", desc, worst,
             negative ? ", negative value" : "");
    }
  tsr_context_free (ctx);
}

static void
check_views (tsr_backend *be)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = random_tensor (ctx, TSR_TYPE_F32, 12, 3, 5, 1, -4, 4);
  tsr_tensor *m = random_tensor (ctx, TSR_TYPE_F32, 12, 5, 1, 1, -1, 1);
  check_sm (be, ctx, tsr_permute (ctx, x, 0, 2, 1, 3), m, 1.0f,
            "a view with dimensions 1 and 2 swapped, masked");
  tsr_tensor *y = random_tensor (ctx, TSR_TYPE_F32, 7, 11, 1, 1, -4, 4);
  check_sm (be, ctx, tsr_transpose (ctx, y), NULL, 2.0f, "a transposed view");
  tsr_context_free (ctx);
}

/* In a no_alloc context through the graph allocator.  */
static void
check_allocated (tsr_backend *be)
{
  enum { N = 20, R = 4 };
  const char *desc = "soft_max with an f16 mask through the graph allocator"
                     " (|err| <= 1e-9 + 1e-5 |want|)";
  tsr_context *ctx = tsr_context_new (true);
  tsr_context *host = tsr_context_new (false);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, N, R);
  tsr_tensor *m = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, N, R);
  tsr_tensor *ha = random_tensor (host, TSR_TYPE_F32, N, R, 1, 1, -5, 5);
  tsr_tensor *hm = random_tensor (host, TSR_TYPE_F16, N, R, 1, 1, -3, 0);
  tsr_tensor *hr = tsr_new_tensor_2d (host, TSR_TYPE_F32, N, R);
  tsr_set_input (a);
  tsr_set_input (m);
  tsr_tensor *r = tsr_soft_max (ctx, a, m, 0.3f);
  tsr_graph *g;
  tsr_gallocr *ga;
  int rc = ot_allocate (be, ctx, r, &g, &ga);
  if (rc == TSR_OK)
    rc = ot_compute_io (be, g, 2, (tsr_tensor *[]) { a, m },
                        (const void *[]) { ha->data, hm->data }, r, hr->data);
  if (rc != TSR_OK)
    tsr_test_result (0, "%s: %s", desc, tsr_last_error ());
  else
    {
      double *want = reference (ha, hm, 0.3f);
      ot_compare (desc, hr, ha->ne, want, 1e-9, 1e-5);
      free (want);
    }
  tsr_gallocr_free (ga);
  tsr_context_free (host);
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (9);
  check_plain (be);
  check_masks (be);
  check_sums (be);
  check_views (be);
  check_allocated (be);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
