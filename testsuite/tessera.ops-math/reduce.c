/* sum (all elements), mean (per row) and argmax (per row) against
   references in double, on odd sizes, batches and memory layouts;
   argmax on ties, NaNs, infinities and all-NaN rows.

   Tolerance for sum and mean: |err| <= 1e-7 sum |x| + 1e-30 (the
   kernel accumulates in double; only the final rounding to float and
   the double sum's own error remain).  argmax is exact.  */
#include "math-test.h"

static const int64_t shapes[][4] = {
  { 1, 1, 1, 1 }, { 3, 1, 1, 1 }, { 17, 3, 1, 1 }, { 4097, 1, 1, 1 },
  { 5, 3, 2, 2 }, { 4097, 17, 1, 1 }, { 1, 7, 3, 2 },
};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

static void
check_sum (tsr_backend *be, const int64_t *ne, enum mt_layout l)
{
  char desc[200];
  snprintf (desc, sizeof desc, "sum of %s (%s)", mt_shape (ne),
            mt_layout_name[l]);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = mt_rand (ctx, ne, l, -1, 2);
  tsr_tensor *r = tsr_sum (ctx, x);
  double want = 0, mag = 0;
  OT_FOR_EACH (x, i0, i1, i2, i3)
    {
      want += ot_get (x, i0, i1, i2, i3);
      mag += fabs (ot_get (x, i0, i1, i2, i3));
    }
  mt_check (be, ctx, desc, r, (int64_t[]) { 1, 1, 1, 1 }, &want,
            1e-7 * mag + 1e-30, 0);
  tsr_context_free (ctx);
}

static void
check_mean (tsr_backend *be, const int64_t *ne, enum mt_layout l)
{
  char desc[200];
  const int64_t rne[4] = { 1, ne[1], ne[2], ne[3] };
  snprintf (desc, sizeof desc, "mean of the rows of %s (%s)", mt_shape (ne),
            mt_layout_name[l]);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = mt_rand (ctx, ne, l, -1, 2);
  tsr_tensor *r = tsr_mean (ctx, x);
  double *want = mt_alloc (rne);
  double worst = 0;
  for (int64_t i3 = 0; i3 < ne[3]; i3++)
    for (int64_t i2 = 0; i2 < ne[2]; i2++)
      for (int64_t i1 = 0; i1 < ne[1]; i1++)
        {
          double s = 0, mag = 0;
          for (int64_t i0 = 0; i0 < ne[0]; i0++)
            {
              s += ot_get (x, i0, i1, i2, i3);
              mag += fabs (ot_get (x, i0, i1, i2, i3));
            }
          want[ot_index (rne, 0, i1, i2, i3)] = s / ne[0];
          worst = fmax (worst, mag / ne[0]);
        }
  mt_check (be, ctx, desc, r, rne, want, 1e-7 * worst + 1e-30, 0);
  free (want);
  tsr_context_free (ctx);
}

/* The first index of the largest non-NaN value (0 for all NaN):
   found as the maximum first, then its first position.  */
static int64_t
argmax_ref (const tsr_tensor *x, int64_t i1, int64_t i2, int64_t i3)
{
  double m = NAN;
  for (int64_t i0 = 0; i0 < x->ne[0]; i0++)
    m = fmax (m, ot_get (x, i0, i1, i2, i3));   /* fmax skips NaN */
  if (isnan (m))
    return 0;
  for (int64_t i0 = 0;; i0++)
    if (ot_get (x, i0, i1, i2, i3) == m)
      return i0;
}

/* Values in a few integer levels (many ties), with some NaNs and
   infinities sprinkled in when SPECIAL.  */
static void
check_argmax (tsr_backend *be, const int64_t *ne, enum mt_layout l,
              int special)
{
  char desc[200];
  const int64_t rne[4] = { ne[1], ne[2], ne[3], 1 };
  snprintf (desc, sizeof desc, "argmax of the rows of %s (%s)%s",
            mt_shape (ne), mt_layout_name[l],
            special ? " with ties, NaN and +-inf" : " with ties");
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = mt_new (ctx, ne, l);
  OT_FOR_EACH (x, i0, i1, i2, i3)
    {
      double v = floor (tsr_test_uniform (-3, 3));
      if (special)
        {
          float u = tsr_test_uniform (0, 1);
          v = u < 0.2f ? NAN : u < 0.25f ? -INFINITY : u < 0.27f ? INFINITY : v;
        }
      ot_set (x, i0, i1, i2, i3, v);
    }
  tsr_tensor *r = tsr_argmax (ctx, x);
  double *want = mt_alloc (rne);
  for (int64_t i3 = 0; i3 < ne[3]; i3++)
    for (int64_t i2 = 0; i2 < ne[2]; i2++)
      for (int64_t i1 = 0; i1 < ne[1]; i1++)
        want[ot_index (rne, i1, i2, i3, 0)] = argmax_ref (x, i1, i2, i3);
  if (mt_check (be, ctx, desc, r, rne, want, 0, 0))
    CHECK (r->type == TSR_TYPE_I32, "%s: result is i32", desc);
  free (want);
  tsr_context_free (ctx);
}

/* Rows: all NaN -> 0; NaN first then values; -inf and NaN only;
   equal maxima -> first; a single element.  */
static void
check_argmax_rows (tsr_backend *be)
{
  static const float rows[][5] = {
    { NAN, NAN, NAN, NAN, NAN },
    { NAN, 1, 7, 7, NAN },
    { NAN, -INFINITY, NAN, -INFINITY, NAN },
    { 2, 2, 2, 2, 2 },
    { -1, -3, -1, -2, -5 },
    { 0, -0.0f, 0, 0, 1e-45f },
  };
  static const double want[] = { 0, 2, 1, 0, 0, 4 };
  enum { R = sizeof rows / sizeof rows[0] };
  const char *desc = "argmax of rows: all NaN -> 0, NaN skipped, -inf with "
                     "NaN -> the -inf, ties -> first, denormal beats 0";
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 5, R);
  memcpy (x->data, rows, sizeof rows);
  mt_check (be, ctx, desc, tsr_argmax (ctx, x), (int64_t[]) { R, 1, 1, 1 },
            want, 0, 0);
  tsr_context_free (ctx);
}

/* sum and mean of a sliced 1-element tensor and of large values
   (1e7 + small: float accumulation would lose the small part).  */
static void
check_precision (tsr_backend *be)
{
  enum { N = 10000 };
  const char *desc = "sum of 1e4 values 1e4 + 0.25 .. is exact to float "
                     "rounding (double accumulation)";
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, N / 4, 4);
  double want = 0;
  for (int i = 0; i < N; i++)
    {
      float v = 1e4f + 0.25f * (i % 4);
      ((float *) x->data)[i] = v;
      want += v;
    }
  mt_check (be, ctx, desc, tsr_sum (ctx, x), (int64_t[]) { 1, 1, 1, 1 },
            &want, 0, 6e-8);
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (47);
  for (int s = 0; s < N_SHAPES; s++)
    for (int l = 0; l < MT_LAYOUTS; l++)
      {
        check_sum (be, shapes[s], (enum mt_layout) l);
        check_mean (be, shapes[s], (enum mt_layout) l);
        check_argmax (be, shapes[s], (enum mt_layout) l, 0);
        check_argmax (be, shapes[s], (enum mt_layout) l, 1);
      }
  check_argmax_rows (be);
  check_precision (be);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
