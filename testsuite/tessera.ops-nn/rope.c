/* rope: both pair layouts, partial rotation (n_dims < head_dim: the
   rest passes through), batches, negative and large positions, a
   frequency scale, per-pair frequency factors (tsr_rope_ext), and
   inputs with padded or strided rows; against a double-precision
   reference of the formula in ops.h.  */
#include "nn-test.h"

static void
reference (const tsr_tensor *a, const int32_t *pos, int n_dims,
           enum tsr_rope_mode mode, float base, float fscale,
           const float *ff, double *want)
{
  const int64_t half = n_dims / 2;
  OT_FOR_EACH (a, i0, i1, i2, i3)
    want[ot_index (a->ne, i0, i1, i2, i3)] = ot_get (a, i0, i1, i2, i3);
  for (int64_t i3 = 0; i3 < a->ne[3]; i3++)
    for (int64_t i2 = 0; i2 < a->ne[2]; i2++)
      for (int64_t i1 = 0; i1 < a->ne[1]; i1++)
        for (int64_t i = 0; i < half; i++)
          {
            double theta = pos[i2] * (double) fscale
                           * pow ((double) base, -2.0 * i / n_dims)
                           / (ff ? ff[i] : 1.0);
            int64_t j0 = mode == TSR_ROPE_NEOX ? i : 2 * i;
            int64_t j1 = mode == TSR_ROPE_NEOX ? i + half : 2 * i + 1;
            double x0 = ot_get (a, j0, i1, i2, i3);
            double x1 = ot_get (a, j1, i1, i2, i3);
            want[ot_index (a->ne, j0, i1, i2, i3)]
              = x0 * cos (theta) - x1 * sin (theta);
            want[ot_index (a->ne, j1, i1, i2, i3)]
              = x0 * sin (theta) + x1 * cos (theta);
          }
}

static void
check_rope (tsr_backend *be, const int64_t *ne, int n_dims,
            enum tsr_rope_mode mode, float base, float fscale,
            enum nt_layout layout, bool factors)
{
  char desc[200];
  snprintf (desc, sizeof desc, "rope %s of [%ld,%ld,%ld,%ld] (%s), n_dims "
            "%d, base %g, scale %g%s",
            mode == TSR_ROPE_NEOX ? "neox" : "normal",
            (long) ne[0], (long) ne[1], (long) ne[2], (long) ne[3],
            nt_layout_name (layout), n_dims, (double) base, (double) fscale,
            factors ? ", frequency factors" : "");
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = nt_tensor (ctx, TSR_TYPE_F32, ne, layout);
  tsr_tensor *pos = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, ne[2]);
  int32_t *p = malloc (ne[2] * sizeof *p);
  for (int64_t t = 0; t < ne[2]; t++)
    p[t] = t == 0 ? 0 : t == 1 ? -3 : t == 2 ? 4099 : (int32_t) (t * 7 % 50);
  nt_set_i32 (pos, p);
  ot_fill (a, -1.0f, 1.0f);
  /* Factors as Llama 3 files have them: 1 for high frequencies, up to
     32 for low ones, smoothly in between.  */
  float ff[64];
  tsr_tensor *fft = NULL;
  if (factors)
    {
      for (int i = 0; i < n_dims / 2; i++)
        ff[i] = 1.0f + 31.0f * (float) i / (float) (n_dims / 2);
      fft = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, n_dims / 2);
      tsr_tensor_set (fft, ff, 0, sizeof (float) * (size_t) (n_dims / 2));
    }
  tsr_tensor *r = tsr_rope_ext (ctx, a, pos, fft, n_dims, mode, base,
                                fscale);
  if (ot_run (desc, be, ctx, r))
    {
      double *want = malloc (ot_count (ne) * sizeof *want);
      reference (a, p, n_dims, mode, base, fscale, factors ? ff : NULL,
                 want);
      if (!tsr_is_contiguous (r) || r->type != TSR_TYPE_F32)
        tsr_test_result (0, "%s: result is not contiguous f32", desc);
      else
        ot_compare (desc, r, ne, want, 2e-6, 2e-6);
      free (want);
    }
  free (p);
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_backend *be = nt_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (11);
  for (int m = 0; m < 2; m++)
    {
      enum tsr_rope_mode mode = m ? TSR_ROPE_NEOX : TSR_ROPE_NORMAL;
      check_rope (be, (int64_t[]) { 8, 3, 5, 2 }, 8, mode, 10000.0f, 1.0f,
                  NT_DENSE, false);
      check_rope (be, (int64_t[]) { 10, 3, 5, 2 }, 6, mode, 10000.0f, 0.25f,
                  NT_DENSE, false);
      check_rope (be, (int64_t[]) { 12, 2, 7, 3 }, 10, mode, 500.0f, 1.0f,
                  NT_PADDED, false);
      check_rope (be, (int64_t[]) { 6, 5, 4, 1 }, 2, mode, 10000.0f, 1.0f,
                  NT_STRIDED, false);
      /* Enough rows for several threads.  */
      check_rope (be, (int64_t[]) { 64, 8, 37, 2 }, 48, mode, 10000.0f,
                  1.0f, NT_DENSE, false);
      check_rope (be, (int64_t[]) { 64, 8, 37, 2 }, 64, mode, 500000.0f,
                  1.0f, NT_DENSE, true);
      check_rope (be, (int64_t[]) { 12, 2, 7, 3 }, 10, mode, 500.0f, 0.5f,
                  NT_PADDED, true);
    }
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
