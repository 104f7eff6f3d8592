/* ocl-rows.cl - kernels over whole rows of f32 tensors: sum_rows, norm,
 * rms_norm, soft_max, and rope (one element per work item).  One work
 * item per row: rows are read and written through their strides; sums
 * are in acc_t (double where the device has it).  */

#define ROW_F32(p, t, k, i1, i2, i3)                                      \
  (*(global const float *) AT (p, t, k, i1, i2, i3))
#define ROW_OUT(p, t, k, i1, i2, i3)                                      \
  (*(global float *) AT (p, t, k, i1, i2, i3))

kernel void
k_sum_rows (global char *d, tdesc td, global const char *a, tdesc ta,
            long nrows)
{
  FOR_ITEMS (r, nrows)
    {
      SPLIT_ROW (r, ta, i1, i2, i3);
      acc_t s = 0;
      for (long k = 0; k < ta.ne[0]; k++)
        s += ROW_F32 (a, ta, k, i1, i2, i3);
      ROW_OUT (d, td, 0, i1, i2, i3) = (float) s;
    }
}

/* norm: (x - mean) / sqrt (var + eps); rms_norm: x / sqrt (mean (x^2)
   + eps).  */
kernel void
k_norm (int op, float eps, global char *d, tdesc td, global const char *a,
        tdesc ta, long nrows)
{
  const long n = ta.ne[0];

  FOR_ITEMS (r, nrows)
    {
      SPLIT_ROW (r, ta, i1, i2, i3);
      acc_t mean = 0, ss = 0;
      if (op == TSR_OP_NORM)
        {
          for (long k = 0; k < n; k++)
            mean += ROW_F32 (a, ta, k, i1, i2, i3);
          mean /= (acc_t) n;
        }
      for (long k = 0; k < n; k++)
        {
          acc_t x = (acc_t) ROW_F32 (a, ta, k, i1, i2, i3) - mean;
          ss += x * x;
        }
      acc_t s = (acc_t) 1 / sqrt (ss / (acc_t) n + (acc_t) eps);
      if (op == TSR_OP_NORM)
        for (long k = 0; k < n; k++)
          ROW_OUT (d, td, k, i1, i2, i3)
            = (float) (((acc_t) ROW_F32 (a, ta, k, i1, i2, i3) - mean) * s);
      else
        {
          float fs = (float) s;
          for (long k = 0; k < n; k++)
            ROW_OUT (d, td, k, i1, i2, i3) = ROW_F32 (a, ta, k, i1, i2, i3)
                                             * fs;
        }
    }
}

/* softmax (x * scale + mask); MTYPE < 0: no mask.  A row that is -inf
   everywhere becomes zeros.  */
kernel void
k_soft_max (float scale, global char *d, tdesc td, global const char *a,
            tdesc ta, global const char *m, tdesc tm, int mtype, long nrows)
{
  const long n = ta.ne[0];

  FOR_ITEMS (r, nrows)
    {
      SPLIT_ROW (r, ta, i1, i2, i3);
      float mx = -INFINITY;
      for (long k = 0; k < n; k++)
        {
          float y = ROW_F32 (a, ta, k, i1, i2, i3) * scale;
          if (mtype >= 0)
            y += load_elem (AT (m, tm, 0, i1, i2 % tm.ne[2], i3 % tm.ne[3]),
                            k, tm.nb[0], mtype);
          ROW_OUT (d, td, k, i1, i2, i3) = y;
          mx = y > mx ? y : mx;
        }
      if (mx == -INFINITY)
        {
          for (long k = 0; k < n; k++)
            ROW_OUT (d, td, k, i1, i2, i3) = 0.0f;
          continue;
        }
      acc_t sum = 0;
      for (long k = 0; k < n; k++)
        {
          float e = exp (ROW_OUT (d, td, k, i1, i2, i3) - mx);
          ROW_OUT (d, td, k, i1, i2, i3) = e;
          sum += e;
        }
      float inv = (float) ((acc_t) 1 / sum);
      for (long k = 0; k < n; k++)
        ROW_OUT (d, td, k, i1, i2, i3) *= inv;
    }
}

/* Rotary embedding of f32 a [head_dim, n_head, n_tokens, batch] by the
   positions POS (i32 [n_tokens]): one destination element per item.  */
kernel void
k_rope (global char *d, tdesc td, global const char *a, tdesc ta,
        global const char *pos, tdesc tp, global const char *ff, tdesc tf,
        int has_ff, int n_dims, int neox, float freq_base, float freq_scale,
        long n)
{
  const long n_half = n_dims / 2;

  FOR_ITEMS (e, n)
    {
      SPLIT4 (e, td, i0, i1, i2, i3);
      if (i0 >= 2 * n_half)
        {
          ROW_OUT (d, td, i0, i1, i2, i3) = ROW_F32 (a, ta, i0, i1, i2, i3);
          continue;
        }
      long i = neox ? (i0 < n_half ? i0 : i0 - n_half) : i0 / 2;
      bool first = neox ? i0 < n_half : (i0 & 1) == 0;
      long j0 = neox ? i : 2 * i, j1 = neox ? i + n_half : 2 * i + 1;
      int p = *(global const int *) AT (pos, tp, i2, 0, 0, 0);
      acc_t theta = (acc_t) p * (acc_t) freq_scale
                    * pow ((acc_t) freq_base, -(acc_t) i / (acc_t) n_half);
      if (has_ff)
        theta /= ROW_F32 (ff, tf, i, 0, 0, 0);
      acc_t c = cos (theta), s = sin (theta);
      acc_t x0 = ROW_F32 (a, ta, j0, i1, i2, i3);
      acc_t x1 = ROW_F32 (a, ta, j1, i1, i2, i3);
      ROW_OUT (d, td, i0, i1, i2, i3)
        = (float) (first ? x0 * c - x1 * s : x0 * s + x1 * c);
    }
}

/* flash_attn_ext: for each query row (dst row: query I1 of head I2,
   batch I3) softmax (scale * q . k_j + mask_j) (the scaled dot
   soft-capped, c tanh (x / c), when SOFTCAP > 0) over the keys j of its
   key head (heads share a key head in groups), times the values.  One
   work item per row, an online softmax over the keys: the running
   maximum, the sum of the weights (acc_t) and the weighted values (f32,
   at most FA_MAX_DV of them) rescaled when the maximum grows.  Masked
   keys (-inf) are skipped; a row with every key masked is zeros.  K, V
   and the mask are f32 or f16.  */
#define FA_MAX_DV 256

kernel void
k_flash_attn (float scale, float softcap, global char *d, tdesc td,
              global const char *q,
              tdesc tq, global const char *k, tdesc tk, int ktype,
              global const char *v, tdesc tv, int vtype,
              global const char *m, tdesc tm, int mtype, long nrows)
{
  const long dk = tq.ne[0], dv = tv.ne[0], nkv = tk.ne[1];
  const long group = tq.ne[2] / tk.ne[2];

  FOR_ITEMS (r, nrows)
    {
      SPLIT_ROW (r, td, i1, i2, i3);
      const long hk = i2 / group;
      float acc[FA_MAX_DV];
      float mx = -INFINITY;
      acc_t sum = 0;

      for (long e = 0; e < dv; e++)
        acc[e] = 0.0f;
      for (long j = 0; j < nkv; j++)
        {
          float mv = 0.0f;
          if (mtype >= 0)
            mv = load_elem (AT (m, tm, 0, i1, i2 % tm.ne[2], i3 % tm.ne[3]),
                            j, tm.nb[0], mtype);
          if (mv == -INFINITY)
            continue;
          global const char *kr = AT (k, tk, 0, j, hk, i3);
          acc_t dot = 0;
          for (long e = 0; e < dk; e++)
            dot += (acc_t) ROW_F32 (q, tq, e, i1, i2, i3)
                   * (acc_t) load_elem (kr, e, tk.nb[0], ktype);
          float s = scale * (float) dot;
          if (softcap > 0.0f)
            s = softcap * tanh (s / softcap);
          s += mv;
          if (s == -INFINITY)
            continue;
          if (s > mx)
            {
              float f = exp (mx - s);
              for (long e = 0; e < dv; e++)
                acc[e] *= f;
              sum *= f;
              mx = s;
            }
          float w = exp (s - mx);
          global const char *vr = AT (v, tv, 0, j, hk, i3);
          sum += w;
          for (long e = 0; e < dv; e++)
            acc[e] += w * load_elem (vr, e, tv.nb[0], vtype);
        }
      for (long e = 0; e < dv; e++)
        ROW_OUT (d, td, e, i1, i2, i3) = sum > 0 ? (float) (acc[e] / sum)
                                                 : 0.0f;
    }
}

/* top_k: the indices of the K largest elements of each row of f32 a,
   largest first, equal values by lower index, NaNs after every number
   (among themselves by index): the order of a stable descending
   argsort.  One work item per row; pass t picks the first element, in
   that order, that comes after pass t - 1's choice.  */
static bool
tk_before (float x, long i, float y, long j)
{
  if (isnan (x) != isnan (y))
    return !isnan (x);
  if (!isnan (x) && x != y)
    return x > y;
  return i < j;
}

kernel void
k_top_k (global char *d, tdesc td, global const char *a, tdesc ta,
         long nrows)
{
  const long n = ta.ne[0], k = td.ne[0];

  FOR_ITEMS (r, nrows)
    {
      SPLIT_ROW (r, td, i1, i2, i3);
      long prev = -1;
      float pv = 0.0f;
      for (long t = 0; t < k; t++)
        {
          long best = -1;
          float bv = 0.0f;
          for (long j = 0; j < n; j++)
            {
              float v = ROW_F32 (a, ta, j, i1, i2, i3);
              if (prev >= 0 && !tk_before (pv, prev, v, j))
                continue;
              if (best < 0 || tk_before (v, j, bv, best))
                {
                  best = j;
                  bv = v;
                }
            }
          *(global int *) AT (d, td, t, i1, i2, i3) = (int) best;
          prev = best;
          pv = bv;
        }
    }
}
