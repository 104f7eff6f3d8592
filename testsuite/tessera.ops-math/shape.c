/* repeat, concat, pad, upscale, diag_mask_inf and arange against
   references built element by element from their definitions in
   tessera/ops.h, on odd sizes, batches and memory layouts.  All moves
   of values are exact; arange is checked to float rounding.  */
#include "math-test.h"

static void
check_repeat (tsr_backend *be, const int64_t *ane, const int64_t *bne,
              enum mt_layout l, tsr_type btype)
{
  char desc[200];
  snprintf (desc, sizeof desc, "repeat %s (%s) to %s %s", mt_shape (ane),
            mt_layout_name[l], mt_shape (bne), tsr_type_name (btype));
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = mt_rand (ctx, ane, l, -5, 5);
  tsr_tensor *b = tsr_new_tensor_4d (ctx, btype, bne[0], bne[1], bne[2],
                                     bne[3]);
  tsr_tensor *r = tsr_repeat (ctx, a, b);
  double *want = mt_alloc (bne);
  OT_FOR_EACH (b, i0, i1, i2, i3)
    want[ot_index (bne, i0, i1, i2, i3)]
      = ot_get (a, i0 % ane[0], i1 % ane[1], i2 % ane[2], i3 % ane[3]);
  mt_check (be, ctx, desc, r, bne, want, 0, 0);
  free (want);
  tsr_context_free (ctx);
}

static void
check_concat (tsr_backend *be, const int64_t *ane, int64_t bn, int dim,
              enum mt_layout la, enum mt_layout lb)
{
  char desc[240];
  int64_t bne[4], rne[4];
  memcpy (bne, ane, sizeof bne);
  bne[dim] = bn;
  memcpy (rne, ane, sizeof rne);
  rne[dim] += bn;
  snprintf (desc, sizeof desc, "concat %s (%s) and %s (%s) along %d",
            mt_shape (ane), mt_layout_name[la], mt_shape (bne),
            mt_layout_name[lb], dim);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = mt_rand (ctx, ane, la, -5, 5);
  tsr_tensor *b = mt_rand (ctx, bne, lb, 10, 20);
  tsr_tensor *r = tsr_concat (ctx, a, b, dim);
  double *want = mt_alloc (rne);
  OT_FOR_EACH (a, i0, i1, i2, i3)
    want[ot_index (rne, i0, i1, i2, i3)] = ot_get (a, i0, i1, i2, i3);
  OT_FOR_EACH (b, i0, i1, i2, i3)
    {
      int64_t j[4] = { i0, i1, i2, i3 };
      j[dim] += ane[dim];
      want[ot_index (rne, j[0], j[1], j[2], j[3])] = ot_get (b, i0, i1, i2, i3);
    }
  mt_check (be, ctx, desc, r, rne, want, 0, 0);
  free (want);
  tsr_context_free (ctx);
}

static void
check_pad (tsr_backend *be, const int64_t *ane, const int *p,
           enum mt_layout l)
{
  char desc[200];
  const int64_t rne[4] = { ane[0] + p[0], ane[1] + p[1], ane[2] + p[2],
                           ane[3] + p[3] };
  snprintf (desc, sizeof desc, "pad %s (%s) by (%d,%d,%d,%d)", mt_shape (ane),
            mt_layout_name[l], p[0], p[1], p[2], p[3]);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = mt_rand (ctx, ane, l, 1, 5);
  tsr_tensor *r = tsr_pad (ctx, a, p[0], p[1], p[2], p[3]);
  double *want = mt_alloc (rne);
  for (int64_t k = 0; k < ot_count (rne); k++)
    want[k] = 0;
  OT_FOR_EACH (a, i0, i1, i2, i3)
    want[ot_index (rne, i0, i1, i2, i3)] = ot_get (a, i0, i1, i2, i3);
  mt_check (be, ctx, desc, r, rne, want, 0, 0);
  free (want);
  tsr_context_free (ctx);
}

static void
check_upscale (tsr_backend *be, const int64_t *ane, int f, enum mt_layout l)
{
  char desc[200];
  const int64_t rne[4] = { ane[0] * f, ane[1] * f, ane[2], ane[3] };
  snprintf (desc, sizeof desc, "upscale %s (%s) by %d", mt_shape (ane),
            mt_layout_name[l], f);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = mt_rand (ctx, ane, l, -5, 5);
  tsr_tensor *r = tsr_upscale (ctx, a, f);
  double *want = mt_alloc (rne);
  /* Each source element fills its f x f block.  */
  OT_FOR_EACH (a, i0, i1, i2, i3)
    for (int d1 = 0; d1 < f; d1++)
      for (int d0 = 0; d0 < f; d0++)
        want[ot_index (rne, i0 * f + d0, i1 * f + d1, i2, i3)]
          = ot_get (a, i0, i1, i2, i3);
  mt_check (be, ctx, desc, r, rne, want, 0, 0);
  free (want);
  tsr_context_free (ctx);
}

static void
check_diag_mask (tsr_backend *be, const int64_t *ne, int n_past,
                 enum mt_layout l)
{
  char desc[200];
  snprintf (desc, sizeof desc, "diag_mask_inf %s (%s) n_past %d",
            mt_shape (ne), mt_layout_name[l], n_past);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = mt_rand (ctx, ne, l, -5, 5);
  tsr_tensor *r = tsr_diag_mask_inf (ctx, a, n_past);
  double *want = mt_alloc (ne);
  OT_FOR_EACH (a, i0, i1, i2, i3)
    {
      int keep = i0 <= (int64_t) n_past + i1;
      want[ot_index (ne, i0, i1, i2, i3)] = keep ? ot_get (a, i0, i1, i2, i3)
                                                 : -INFINITY;
    }
  mt_check (be, ctx, desc, r, ne, want, 0, 0);
  free (want);
  tsr_context_free (ctx);
}

static void
check_arange (tsr_backend *be, float start, float stop, float step,
              int64_t n)
{
  char desc[200];
  snprintf (desc, sizeof desc, "arange (%g, %g, %g) has %ld elements "
            "start + i step", (double) start, (double) stop, (double) step,
            (long) n);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *r = tsr_arange (ctx, start, stop, step);
  double *want = malloc ((size_t) n * sizeof *want);
  for (int64_t i = 0; i < n; i++)
    want[i] = (double) start + (double) i * step;
  /* Computed in double and rounded once: half an ulp.  */
  mt_check (be, ctx, desc, r, (int64_t[]) { n, 1, 1, 1 }, want, 0, 6e-8);
  free (want);
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (53);

  static const int64_t rep[][2][4] = {
    { { 1, 1, 1, 1 }, { 3, 1, 1, 1 } },
    { { 3, 2, 1, 1 }, { 9, 4, 2, 1 } },
    { { 17, 3, 2, 1 }, { 17, 6, 2, 3 } },
    { { 1, 1, 1, 1 }, { 4097, 1, 1, 1 } },
    { { 5, 3, 2, 2 }, { 10, 3, 4, 2 } },
    { { 4097, 1, 1, 1 }, { 4097, 17, 1, 1 } },
  };
  for (size_t k = 0; k < sizeof rep / sizeof rep[0]; k++)
    for (int l = 0; l < MT_LAYOUTS; l++)
      check_repeat (be, rep[k][0], rep[k][1], (enum mt_layout) l,
                    l == MT_SWAPPED ? TSR_TYPE_I32 : TSR_TYPE_F32);

  static const int64_t cat[][4] = {
    { 1, 1, 1, 1 }, { 3, 2, 2, 1 }, { 17, 3, 1, 2 }, { 5, 3, 2, 2 },
    { 4097, 1, 1, 1 },
  };
  static const int64_t cat_b[] = { 1, 3, 17, 2, 4097 };
  for (size_t k = 0; k < sizeof cat / sizeof cat[0]; k++)
    for (int dim = 0; dim < 4; dim++)
      for (int l = 0; l < MT_LAYOUTS; l++)
        check_concat (be, cat[k], cat_b[(k + dim) % 5], dim, (enum mt_layout) l,
                      (enum mt_layout) ((l + 3) % MT_LAYOUTS));

  static const struct { int64_t ne[4]; int p[4]; } pads[] = {
    { { 3, 2, 1, 1 }, { 2, 1, 0, 1 } },
    { { 17, 3, 2, 1 }, { 0, 0, 0, 0 } },
    { { 1, 1, 1, 1 }, { 4096, 0, 0, 0 } },
    { { 5, 3, 2, 2 }, { 1, 2, 3, 1 } },
    { { 4097, 2, 1, 1 }, { 1, 15, 0, 0 } },
  };
  for (size_t k = 0; k < sizeof pads / sizeof pads[0]; k++)
    for (int l = 0; l < MT_LAYOUTS; l++)
      check_pad (be, pads[k].ne, pads[k].p, (enum mt_layout) l);

  static const int64_t ups[][4] = {
    { 1, 1, 1, 1 }, { 3, 2, 1, 1 }, { 17, 3, 2, 2 }, { 4097, 1, 1, 1 },
  };
  for (size_t k = 0; k < sizeof ups / sizeof ups[0]; k++)
    for (int f = 1; f <= 3; f++)
      for (int l = 0; l < MT_LAYOUTS; l++)
        check_upscale (be, ups[k], f, (enum mt_layout) l);

  static const struct { int64_t ne[4]; int n_past; } masks[] = {
    { { 5, 5, 2, 1 }, 0 }, { { 17, 3, 2, 2 }, 2 }, { { 1, 1, 1, 1 }, 0 },
    { { 3, 4, 1, 1 }, -1 }, { { 4097, 3, 1, 1 }, 4000 },
    { { 4097, 17, 1, 1 }, 4080 },
  };
  for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++)
    for (int l = 0; l < MT_LAYOUTS; l++)
      check_diag_mask (be, masks[k].ne, masks[k].n_past, (enum mt_layout) l);

  check_arange (be, 0, 5, 1, 5);
  check_arange (be, 0, 1, 0.1f, 10);
  check_arange (be, 5, -1, -2, 3);
  check_arange (be, 1, 1.5f, 1, 1);
  check_arange (be, 0.5f, 4097.5f, 1, 4097);
  check_arange (be, -3, 70000, 1, 70003);
  check_arange (be, 2, 2.75f, 0.25f, 3);
  check_arange (be, 2, 2.8125f, 0.25f, 4);

  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
