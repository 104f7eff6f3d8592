/* ocl-shape.cl - shape ops, reductions and sorting on f32 tensors:
 * repeat, concat, diag_mask_inf, pad, upscale, arange (one work item
 * per destination element, each from one source element or a
 * constant), sum, mean and argmax (one work item per row; sum one item
 * for the whole tensor, in acc_t as the CPU sums in double), argsort
 * (one work item per element: its rank in the row's order is where its
 * index goes), im2col and pool_2d (one work item per destination
 * element).  Definitions: tessera/ops.h; the CPU backend's kernels
 * (modules/cpu/cpu-ops-math.c, cpu-ops-nn.c) give the same bits.  */

#define F32_AT(p, t, i0, i1, i2, i3)                                      \
  (*(global const float *) AT (p, t, i0, i1, i2, i3))
#define F32_OUT(p, t, i0, i1, i2, i3)                                     \
  (*(global float *) AT (p, t, i0, i1, i2, i3))

/* P0..P3: the op's i32 parameters (concat: dim; diag_mask_inf: n_past;
   pad: p0..p3; upscale: factor).  B: concat's second operand.  */
kernel void
k_shape (int op, int p0, int p1, int p2, int p3, global char *d, tdesc td,
         global const char *a, tdesc ta, global const char *b, tdesc tb,
         long n)
{
  FOR_ITEMS (i, n)
    {
      SPLIT4 (i, td, i0, i1, i2, i3);
      float v = 0.0f;
      switch (op)
        {
        case TSR_OP_REPEAT:
          v = F32_AT (a, ta, i0 % ta.ne[0], i1 % ta.ne[1], i2 % ta.ne[2],
                      i3 % ta.ne[3]);
          break;
        case TSR_OP_CONCAT:
          {
            long j[4] = { i0, i1, i2, i3 };
            if (j[p0] < ta.ne[p0])
              v = F32_AT (a, ta, j[0], j[1], j[2], j[3]);
            else
              {
                j[p0] -= ta.ne[p0];
                v = F32_AT (b, tb, j[0], j[1], j[2], j[3]);
              }
          }
          break;
        case TSR_OP_DIAG_MASK_INF:
          v = i0 > (long) p0 + i1 ? -INFINITY
              : F32_AT (a, ta, i0, i1, i2, i3);
          break;
        case TSR_OP_PAD:
          v = i0 < ta.ne[0] && i1 < ta.ne[1] && i2 < ta.ne[2]
              && i3 < ta.ne[3] ? F32_AT (a, ta, i0, i1, i2, i3) : 0.0f;
          break;
        case TSR_OP_UPSCALE:
          v = F32_AT (a, ta, i0 / p0, i1 / p0, i2, i3);
          break;
        }
      F32_OUT (d, td, i0, i1, i2, i3) = v;
    }
}

/* arange: START + i * STEP, the product and sum in double where the
   device has it (as the CPU).  */
kernel void
k_arange (float start, float step, global char *d, tdesc td, long n)
{
  FOR_ITEMS (i, n)
    F32_OUT (d, td, i, 0, 0, 0) = (float) ((acc_t) start
                                           + (acc_t) i * (acc_t) step);
}

/* sum (every element, one work item), mean and argmax (per row).  */
kernel void
k_reduce (int op, global char *d, tdesc td, global const char *a, tdesc ta,
          long nrows)
{
  const long n = ta.ne[0];

  if (op == TSR_OP_SUM)
    {
      if (get_global_id (0) != 0)
        return;
      acc_t s = 0;
      for (long r = 0; r < nrows; r++)
        {
          SPLIT_ROW (r, ta, i1, i2, i3);
          for (long k = 0; k < n; k++)
            s += F32_AT (a, ta, k, i1, i2, i3);
        }
      F32_OUT (d, td, 0, 0, 0, 0) = (float) s;
      return;
    }
  FOR_ITEMS (r, nrows)
    {
      SPLIT_ROW (r, ta, i1, i2, i3);
      if (op == TSR_OP_MEAN)
        {
          acc_t s = 0;
          for (long k = 0; k < n; k++)
            s += F32_AT (a, ta, k, i1, i2, i3);
          F32_OUT (d, td, 0, i1, i2, i3) = (float) (s / (acc_t) n);
          continue;
        }
      /* argmax: the first largest non-NaN value, 0 when all are NaN.  */
      long best = -1;
      float bv = 0.0f;
      for (long k = 0; k < n; k++)
        {
          float v = F32_AT (a, ta, k, i1, i2, i3);
          if (!isnan (v) && (best < 0 || v > bv))
            {
              best = k;
              bv = v;
            }
        }
      *(global int *) AT (d, td, i1, i2, i3, 0) = best < 0 ? 0 : (int) best;
    }
}

/* argsort: X at I goes before Y at J in order DESC (or ascending):
   numbers before NaNs, then by value, then by index (stable).  */
static bool
as_before (float x, long i, float y, long j, int desc)
{
  if (isnan (x) != isnan (y))
    return !isnan (x);
  if (!isnan (x) && x != y)
    return desc ? x > y : x < y;
  return i < j;
}

kernel void
k_argsort (int desc, global char *d, tdesc td, global const char *a,
           tdesc ta, long n)
{
  const long len = ta.ne[0];

  FOR_ITEMS (i, n)
    {
      SPLIT4 (i, ta, i0, i1, i2, i3);
      float x = F32_AT (a, ta, i0, i1, i2, i3);
      long rank = 0;
      for (long j = 0; j < len; j++)
        rank += j != i0 && as_before (F32_AT (a, ta, j, i1, i2, i3), j, x,
                                      i0, desc);
      *(global int *) AT (d, td, rank, i1, i2, i3) = (int) i0;
    }
}

/* im2col: destination [KW * KH * C, OW, OH, N] (2-D) or [KW * C, OW,
   N] (1-D): element (c * KH + kh) * KW + kw of patch (ow, oh, n) is
   input[ow * s0 - p0 + kw * d0, oh * s1 - p1 + kh * d1, c, n], 0
   outside.  P: s0, s1, p0, p1, d0, d1, is_2d; KW, KH from the kernel;
   DTYPE f32 or f16.  */
kernel void
k_im2col (int s0, int s1, int p0, int p1, int d0, int d1, int is_2d,
          long kw_n, long kh_n, int dtype, global char *d, tdesc td,
          global const char *in, tdesc ti, long n)
{
  FOR_ITEMS (i, n)
    {
      SPLIT4 (i, td, e, ow, o2, o3);
      long kw = e % kw_n, kh = is_2d ? e / kw_n % kh_n : 0;
      long c = is_2d ? e / (kw_n * kh_n) : e / kw_n;
      long x = ow * s0 - p0 + kw * d0;
      float v = 0.0f;
      if (is_2d)
        {
          long y = o2 * s1 - p1 + kh * d1;
          if (x >= 0 && x < ti.ne[0] && y >= 0 && y < ti.ne[1])
            v = F32_AT (in, ti, x, y, c, o3);
        }
      else if (x >= 0 && x < ti.ne[0])
        v = F32_AT (in, ti, x, c, o2, 0);
      global char *p = AT (d, td, e, ow, o2, o3);
      if (dtype == TSR_TYPE_F16)
        *(global ushort *) p = f32_to_f16 (v);
      else
        *(global float *) p = v;
    }
}

/* pool_2d: the maximum or the average of the real cells of window
   (ow, oh); P: op, k0, k1, s0, s1, p0, p1.  */
kernel void
k_pool_2d (int op, int k0, int k1, int s0, int s1, int p0, int p1,
           global char *d, tdesc td, global const char *a, tdesc ta, long n)
{
  FOR_ITEMS (i, n)
    {
      SPLIT4 (i, td, ow, oh, c, b);
      acc_t s = 0;
      float m = -INFINITY;
      long cells = 0;
      for (long ky = 0; ky < k1; ky++)
        for (long kx = 0; kx < k0; kx++)
          {
            long x = ow * s0 - p0 + kx, y = oh * s1 - p1 + ky;
            if (x < 0 || x >= ta.ne[0] || y < 0 || y >= ta.ne[1])
              continue;
            float v = F32_AT (a, ta, x, y, c, b);
            s += v;
            if (isnan (v) || isnan (m))
              m = NAN;          /* NaN propagates, as in the sum */
            else if (v > m)
              m = v;
            cells++;
          }
      F32_OUT (d, td, ow, oh, c, b) = op == 0 ? m
                                      : (float) (s / (acc_t) cells);
    }
}
