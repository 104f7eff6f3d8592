/* pool_2d max and average: windows that overlap or leave gaps,
   paddings (padding cells count neither for the maximum nor in the
   average), batches and channels, padded or strided inputs, and a
   size that needs several threads; against the windows computed
   directly in double.  */
#include "nn-test.h"

static void
check_pool (tsr_backend *be, enum tsr_pool_op op, const int64_t *ne, int k0,
            int k1, int s0, int s1, int p0, int p1, enum nt_layout layout)
{
  char desc[220];
  snprintf (desc, sizeof desc, "pool_2d %s of [%ld,%ld,%ld,%ld] (%s) "
            "kernel (%d,%d) s (%d,%d) p (%d,%d)",
            op == TSR_POOL_MAX ? "max" : "avg", (long) ne[0], (long) ne[1],
            (long) ne[2], (long) ne[3], nt_layout_name (layout), k0, k1, s0,
            s1, p0, p1);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = nt_tensor (ctx, TSR_TYPE_F32, ne, layout);
  ot_fill (a, -10.0f, 0.0f);   /* all negative: a padding 0 would win */
  tsr_tensor *r = tsr_pool_2d (ctx, a, op, k0, k1, s0, s1, p0, p1);
  if (ot_run (desc, be, ctx, r))
    {
      int64_t neo[4] = { (ne[0] + 2 * p0 - k0) / s0 + 1,
                         (ne[1] + 2 * p1 - k1) / s1 + 1, ne[2], ne[3] };
      double *want = malloc (ot_count (neo) * sizeof *want);
      for (int64_t n = 0; n < ne[3]; n++)
        for (int64_t ch = 0; ch < ne[2]; ch++)
          for (int64_t y = 0; y < neo[1]; y++)
            for (int64_t x = 0; x < neo[0]; x++)
              {
                double max = -INFINITY, sum = 0;
                int count = 0;
                for (int j = 0; j < k1; j++)
                  for (int i = 0; i < k0; i++)
                    {
                      int64_t ix = x * s0 - p0 + i, iy = y * s1 - p1 + j;
                      if (ix < 0 || ix >= ne[0] || iy < 0 || iy >= ne[1])
                        continue;
                      double v = ot_get (a, ix, iy, ch, n);
                      max = v > max ? v : max;
                      sum += v;
                      count++;
                    }
                want[ot_index (neo, x, y, ch, n)]
                  = op == TSR_POOL_MAX ? max : sum / count;
              }
      ot_compare (desc, r, neo, want, 0, op == TSR_POOL_MAX ? 0 : 1e-6);
      free (want);
    }
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_backend *be = nt_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (67);
  for (int o = 0; o < 2; o++)
    {
      enum tsr_pool_op op = o ? TSR_POOL_AVG : TSR_POOL_MAX;
      check_pool (be, op, (int64_t[]) { 9, 7, 3, 2 }, 3, 2, 2, 2, 1, 1,
                  NT_DENSE);
      check_pool (be, op, (int64_t[]) { 8, 6, 2, 1 }, 2, 2, 2, 2, 0, 0,
                  NT_PADDED);
      check_pool (be, op, (int64_t[]) { 10, 9, 2, 2 }, 3, 4, 1, 3, 2, 3,
                  NT_STRIDED);
      check_pool (be, op, (int64_t[]) { 5, 5, 1, 1 }, 2, 2, 3, 3, 0, 1,
                  NT_DENSE);
      check_pool (be, op, (int64_t[]) { 64, 64, 16, 2 }, 3, 3, 1, 1, 1, 1,
                  NT_DENSE);
    }
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
