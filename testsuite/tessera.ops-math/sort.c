/* argsort (ascending, descending) and top_k against a reference that
   ranks each element by counting (no sorting algorithm shared with the
   kernel): the rank of element i is the number of elements that go
   strictly before it plus the number of equal ones at lower indices
   (stability); NaNs go after every number, in index order.  Values
   come from a few integer levels, so ties are common.  Exact.  */
#include "math-test.h"

/* Whether X goes strictly before Y in ORDER (NaN last).  */
static int
before (double x, double y, int desc)
{
  if (isnan (x))
    return 0;
  if (isnan (y))
    return 1;
  return desc ? x > y : x < y;
}

static int
equal (double x, double y)
{
  return x == y || (isnan (x) && isnan (y));
}

/* OUT[rank] = index for row (I1, I2, I3) of X.  */
static void
rank_row (const tsr_tensor *x, int64_t i1, int64_t i2, int64_t i3, int desc,
          int64_t *out)
{
  const int64_t n = x->ne[0];
  double *v = malloc ((size_t) n * sizeof *v);
  for (int64_t i = 0; i < n; i++)
    v[i] = ot_get (x, i, i1, i2, i3);
  for (int64_t i = 0; i < n; i++)
    {
      int64_t rank = 0;
      for (int64_t j = 0; j < n; j++)
        rank += before (v[j], v[i], desc) || (j < i && equal (v[j], v[i]));
      out[rank] = i;
    }
  free (v);
}

static void
fill_levels (tsr_tensor *x, int special)
{
  OT_FOR_EACH (x, i0, i1, i2, i3)
    {
      double v = floor (tsr_test_uniform (-4, 4));
      if (special)
        {
          float u = tsr_test_uniform (0, 1);
          v = u < 0.1f ? NAN : u < 0.15f ? -INFINITY : u < 0.2f ? INFINITY
            : u < 0.25f ? -0.0 : v;
        }
      ot_set (x, i0, i1, i2, i3, v);
    }
}

/* K < 0: argsort in order -K - 1 (0 asc, 1 desc); else top_k K.  */
static void
check_sort (tsr_backend *be, const int64_t *ne, enum mt_layout l, int k,
            int special)
{
  char desc[240];
  const int desc_order = k < 0 ? -k - 1 : 1;
  const int64_t rne[4] = { k < 0 ? ne[0] : k, ne[1], ne[2], ne[3] };
  if (k < 0)
    snprintf (desc, sizeof desc, "argsort %s %s (%s)%s",
              desc_order ? "desc" : "asc", mt_shape (ne), mt_layout_name[l],
              special ? " with NaN, +-inf, -0" : "");
  else
    snprintf (desc, sizeof desc, "top_k %d of %s (%s)%s", k, mt_shape (ne),
              mt_layout_name[l], special ? " with NaN, +-inf, -0" : "");
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = mt_new (ctx, ne, l);
  fill_levels (x, special);
  tsr_tensor *r = k < 0 ? tsr_argsort (ctx, x, desc_order ? TSR_SORT_DESC
                                                          : TSR_SORT_ASC)
                        : tsr_top_k (ctx, x, k);
  double *want = mt_alloc (rne);
  int64_t *row = malloc ((size_t) ne[0] * sizeof *row);
  for (int64_t i3 = 0; i3 < ne[3]; i3++)
    for (int64_t i2 = 0; i2 < ne[2]; i2++)
      for (int64_t i1 = 0; i1 < ne[1]; i1++)
        {
          rank_row (x, i1, i2, i3, desc_order, row);
          for (int64_t i0 = 0; i0 < rne[0]; i0++)
            want[ot_index (rne, i0, i1, i2, i3)] = row[i0];
        }
  if (mt_check (be, ctx, desc, r, rne, want, 0, 0))
    CHECK (r->type == TSR_TYPE_I32, "%s: result is i32", desc);
  free (row);
  free (want);
  tsr_context_free (ctx);
}

/* A known row, checked by hand.  */
static void
check_known (tsr_backend *be)
{
  static const float v[] = { 3, 1, NAN, 3, -2, 1, 3 };
  static const double asc[] = { 4, 1, 5, 0, 3, 6, 2 };
  static const double dsc[] = { 0, 3, 6, 1, 5, 4, 2 };
  static const double top3[] = { 0, 3, 6 };
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 7);
  memcpy (x->data, v, sizeof v);
  mt_check (be, ctx, "argsort asc of {3,1,NaN,3,-2,1,3} is {4,1,5,0,3,6,2}",
            tsr_argsort (ctx, x, TSR_SORT_ASC), x->ne, asc, 0, 0);
  mt_check (be, ctx, "argsort desc of {3,1,NaN,3,-2,1,3} is {0,3,6,1,5,4,2}",
            tsr_argsort (ctx, x, TSR_SORT_DESC), x->ne, dsc, 0, 0);
  mt_check (be, ctx, "top_k 3 of {3,1,NaN,3,-2,1,3} is {0,3,6}",
            tsr_top_k (ctx, x, 3), (int64_t[]) { 3, 1, 1, 1 }, top3, 0, 0);
  tsr_context_free (ctx);
}

int
main (void)
{
  static const int64_t shapes[][4] = {
    { 1, 1, 1, 1 }, { 3, 1, 1, 1 }, { 17, 3, 1, 1 }, { 5, 3, 2, 2 },
    { 4097, 1, 1, 1 }, { 33, 65, 1, 1 },
  };
  enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (59);
  check_known (be);
  for (int s = 0; s < N_SHAPES; s++)
    for (int l = 0; l < MT_LAYOUTS; l++)
      {
        const int64_t *ne = shapes[s];
        int special = (s + l) % 2;
        /* The reference is quadratic: long rows in two layouts only.  */
        if (ne[0] > 1000 && l != MT_CONT && l != MT_ROTATED)
          continue;
        check_sort (be, ne, (enum mt_layout) l, -1, special);
        check_sort (be, ne, (enum mt_layout) l, -2, special);
        check_sort (be, ne, (enum mt_layout) l, 1, !special);
        if (ne[0] >= 3)
          check_sort (be, ne, (enum mt_layout) l, 3, special);
        check_sort (be, ne, (enum mt_layout) l, (int) ne[0], !special);
      }
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
