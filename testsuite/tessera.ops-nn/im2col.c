/* im2col, 2-D and 1-D: strides, paddings and dilations that differ per
   axis, f32 and f16 results, batches, padded or strided inputs, and a
   size that needs several threads; against patches gathered directly
   from the formula in ops.h (exact: each value is copied, or rounded
   once to f16).  */
#include "nn-test.h"

struct conv
{
  int s0, s1, p0, p1, d0, d1;
};

static int64_t
out_len (int64_t in, int64_t k, int s, int p, int d)
{
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

static double
as_type (tsr_type type, double v)
{
  return type == TSR_TYPE_F16 ? tsr_fp16_to_fp32 (tsr_fp32_to_fp16 ((float) v))
                              : v;
}

static void
check_2d (tsr_backend *be, const int64_t *nei, int64_t kw, int64_t kh,
          struct conv c, tsr_type dt, enum nt_layout layout)
{
  char desc[240];
  snprintf (desc, sizeof desc, "im2col 2-D [%ld,%ld,%ld,%ld] (%s) kernel "
            "%ldx%ld s (%d,%d) p (%d,%d) d (%d,%d) to %s", (long) nei[0],
            (long) nei[1], (long) nei[2], (long) nei[3],
            nt_layout_name (layout), (long) kw, (long) kh, c.s0, c.s1, c.p0,
            c.p1, c.d0, c.d1, tsr_type_name (dt));
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *in = nt_tensor (ctx, TSR_TYPE_F32, nei, layout);
  tsr_tensor *kernel = tsr_new_tensor_4d (ctx, TSR_TYPE_F16, kw, kh, nei[2],
                                          3);
  ot_fill (in, -5.0f, 5.0f);
  tsr_tensor *r = tsr_im2col (ctx, kernel, in, c.s0, c.s1, c.p0, c.p1, c.d0,
                              c.d1, true, dt);
  if (ot_run (desc, be, ctx, r))
    {
      int64_t ow = out_len (nei[0], kw, c.s0, c.p0, c.d0);
      int64_t oh = out_len (nei[1], kh, c.s1, c.p1, c.d1);
      int64_t ne[4] = { kw * kh * nei[2], ow, oh, nei[3] };
      double *want = malloc (ot_count (ne) * sizeof *want);
      for (int64_t n = 0; n < nei[3]; n++)
        for (int64_t y = 0; y < oh; y++)
          for (int64_t x = 0; x < ow; x++)
            for (int64_t ch = 0; ch < nei[2]; ch++)
              for (int64_t j = 0; j < kh; j++)
                for (int64_t i = 0; i < kw; i++)
                  {
                    int64_t ix = x * c.s0 - c.p0 + i * c.d0;
                    int64_t iy = y * c.s1 - c.p1 + j * c.d1;
                    double v = ix >= 0 && ix < nei[0] && iy >= 0
                               && iy < nei[1] ? ot_get (in, ix, iy, ch, n)
                                              : 0.0;
                    want[ot_index (ne, (ch * kh + j) * kw + i, x, y, n)]
                      = as_type (dt, v);
                  }
      if (r->type != dt)
        tsr_test_result (0, "%s: result type %s", desc,
                         tsr_type_name (r->type));
      else
        ot_compare (desc, r, ne, want, 0, 0);
      free (want);
    }
  tsr_context_free (ctx);
}

static void
check_1d (tsr_backend *be, const int64_t *nei, int64_t kw, int s0, int p0,
          int d0, tsr_type dt, enum nt_layout layout)
{
  char desc[200];
  snprintf (desc, sizeof desc, "im2col 1-D [%ld,%ld,%ld] (%s) kernel %ld "
            "s %d p %d d %d to %s", (long) nei[0], (long) nei[1],
            (long) nei[2], nt_layout_name (layout), (long) kw, s0, p0, d0,
            tsr_type_name (dt));
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *in = nt_tensor (ctx, TSR_TYPE_F32, nei, layout);
  tsr_tensor *kernel = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, kw, nei[1], 2);
  ot_fill (in, -5.0f, 5.0f);
  /* s1, p1, d1 are ignored in 1-D: pass nonsense.  */
  tsr_tensor *r = tsr_im2col (ctx, kernel, in, s0, 0, p0, -4, d0, 0, false,
                              dt);
  if (ot_run (desc, be, ctx, r))
    {
      int64_t ow = out_len (nei[0], kw, s0, p0, d0);
      int64_t ne[4] = { kw * nei[1], ow, nei[2], 1 };
      double *want = malloc (ot_count (ne) * sizeof *want);
      for (int64_t n = 0; n < nei[2]; n++)
        for (int64_t x = 0; x < ow; x++)
          for (int64_t ch = 0; ch < nei[1]; ch++)
            for (int64_t i = 0; i < kw; i++)
              {
                int64_t ix = x * s0 - p0 + i * d0;
                double v = ix >= 0 && ix < nei[0] ? ot_get (in, ix, ch, n, 0)
                                                  : 0.0;
                want[ot_index (ne, ch * kw + i, x, n, 0)] = as_type (dt, v);
              }
      ot_compare (desc, r, ne, want, 0, 0);
      free (want);
    }
  tsr_context_free (ctx);
}

int
main (void)
{
  const tsr_type F32 = TSR_TYPE_F32, F16 = TSR_TYPE_F16;
  tsr_backend *be = nt_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (53);
  check_2d (be, (int64_t[]) { 7, 6, 3, 2 }, 3, 2,
            (struct conv) { 2, 1, 1, 2, 1, 2 }, F32, NT_DENSE);
  check_2d (be, (int64_t[]) { 7, 6, 3, 2 }, 3, 2,
            (struct conv) { 2, 1, 1, 2, 1, 2 }, F16, NT_PADDED);
  check_2d (be, (int64_t[]) { 9, 5, 2, 1 }, 3, 3,
            (struct conv) { 1, 2, 0, 1, 2, 1 }, F32, NT_STRIDED);
  check_2d (be, (int64_t[]) { 5, 4, 1, 3 }, 1, 1,
            (struct conv) { 1, 1, 0, 0, 1, 1 }, F32, NT_DENSE);
  check_2d (be, (int64_t[]) { 4, 4, 2, 1 }, 4, 4,
            (struct conv) { 3, 3, 3, 3, 1, 1 }, F16, NT_DENSE);
  check_2d (be, (int64_t[]) { 40, 30, 8, 2 }, 3, 3,
            (struct conv) { 1, 1, 1, 1, 1, 1 }, F32, NT_DENSE);
  check_1d (be, (int64_t[]) { 11, 2, 3, 1 }, 4, 2, 3, 2, F32, NT_DENSE);
  check_1d (be, (int64_t[]) { 11, 2, 3, 1 }, 4, 2, 3, 2, F16, NT_STRIDED);
  check_1d (be, (int64_t[]) { 16, 3, 2, 1 }, 5, 1, 0, 1, F32, NT_PADDED);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
