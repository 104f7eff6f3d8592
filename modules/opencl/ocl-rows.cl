/* ocl-rows.cl - kernels over whole rows of f32 tensors: sum_rows, norm,
 * rms_norm, soft_max and flash_attn_ext take a work-group per row (its
 * items stride over the row, their partial sums meet in wg_sum and
 * wg_max of ocl-common.cl, in float); rope takes one element per work
 * item, top_k one row per work item.  Rows are read and written
 * through their strides.  */

#define ROW_F32(p, t, k, i1, i2, i3)                                      \
  (*(global const float *) AT (p, t, k, i1, i2, i3))
#define ROW_OUT(p, t, k, i1, i2, i3)                                      \
  (*(global float *) AT (p, t, k, i1, i2, i3))

/* The items of a work-group over elements 0 .. N - 1 of a row: item
   L takes L, L + size, ...  */
#define FOR_ROW(k, n)                                                     \
  for (long k = get_local_id (0); k < (n); k += get_local_size (0))

kernel void
k_sum_rows (global char *d, tdesc td, global const char *a, tdesc ta,
            long nrows)
{
  local float s[OCL_WG];

  FOR_GROUPS (r, nrows)
    {
      SPLIT_ROW (r, ta, i1, i2, i3);
      float p = 0.0f;
      FOR_ROW (k, ta.ne[0])
        p += ROW_F32 (a, ta, k, i1, i2, i3);
      p = wg_sum (p, s);
      if (get_local_id (0) == 0)
        ROW_OUT (d, td, 0, i1, i2, i3) = p;
    }
}

/* norm: (x - mean) / sqrt (var + eps); rms_norm: x / sqrt (mean (x^2)
   + eps).  */
kernel void
k_norm (int op, float eps, global char *d, tdesc td, global const char *a,
        tdesc ta, long nrows)
{
  local float s[OCL_WG];
  const long n = ta.ne[0];

  FOR_GROUPS (r, nrows)
    {
      SPLIT_ROW (r, ta, i1, i2, i3);
      float mean = 0.0f, p = 0.0f;
      if (op == TSR_OP_NORM)
        {
          FOR_ROW (k, n)
            p += ROW_F32 (a, ta, k, i1, i2, i3);
          mean = wg_sum (p, s) / (float) n;
          p = 0.0f;
        }
      FOR_ROW (k, n)
        {
          float x = ROW_F32 (a, ta, k, i1, i2, i3) - mean;
          p += x * x;
        }
      const float sc = 1.0f / sqrt (wg_sum (p, s) / (float) n + eps);
      FOR_ROW (k, n)
        ROW_OUT (d, td, k, i1, i2, i3)
          = (ROW_F32 (a, ta, k, i1, i2, i3) - mean) * sc;
    }
}

/* softmax (x * scale + mask); MTYPE < 0: no mask.  A row that is -inf
   everywhere becomes zeros.  Each item reads back only the elements it
   wrote, so D may be A.  */
kernel void
k_soft_max (float scale, global char *d, tdesc td, global const char *a,
            tdesc ta, global const char *m, tdesc tm, int mtype, long nrows)
{
  local float s[OCL_WG];
  const long n = ta.ne[0];

  FOR_GROUPS (r, nrows)
    {
      SPLIT_ROW (r, ta, i1, i2, i3);
      float mx = -INFINITY;
      FOR_ROW (k, n)
        {
          float y = ROW_F32 (a, ta, k, i1, i2, i3) * scale;
          if (mtype >= 0)
            y += load_elem (AT (m, tm, 0, i1, i2 % tm.ne[2], i3 % tm.ne[3]),
                            k, tm.nb[0], mtype);
          ROW_OUT (d, td, k, i1, i2, i3) = y;
          mx = y > mx ? y : mx;
        }
      mx = wg_max (mx, s);
      /* Every item calls wg_sum, whatever the row holds.  */
      float p = 0.0f;
      FOR_ROW (k, n)
        {
          float e = mx == -INFINITY
                    ? 0.0f : exp (ROW_OUT (d, td, k, i1, i2, i3) - mx);
          ROW_OUT (d, td, k, i1, i2, i3) = e;
          p += e;
        }
      p = wg_sum (p, s);
      const float inv = mx == -INFINITY ? 0.0f : 1.0f / p;
      FOR_ROW (k, n)
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
   key head (heads share a key head in groups), times the values.

   A work-group per row, the keys in chunks of its size L: item t
   scores key j0 + t (a whole dot product), the chunk's maximum and
   sum of weights come from wg_max and wg_sum, the weights go through
   local memory, and item t accumulates the value elements t, t + L,
   ... (at most FA_MAX_DV / FA_MIN_WG of them) over the chunk's keys,
   so that neighbouring items read neighbouring values.  An online
   softmax joins the chunks: the running maximum, the sum of the
   weights, and the weighted values rescaled when the maximum grows.
   Masked keys (-inf) weigh nothing; a row with every key masked is
   zeros, a row with a NaN score NaN.  K, V and the mask are f32 or
   f16.  */
#define FA_MAX_DV 256           /* OCL_FA_MAX_DV of ocl-ops.c */
#define FA_MIN_WG 16            /* OCL_MIN_WG of ocl-device.c */
#define FA_PER_ITEM (FA_MAX_DV / FA_MIN_WG)

kernel void
k_flash_attn (float scale, float softcap, global char *d, tdesc td,
              global const char *q,
              tdesc tq, global const char *k, tdesc tk, int ktype,
              global const char *v, tdesc tv, int vtype,
              global const char *m, tdesc tm, int mtype, long nrows)
{
  local float s[OCL_WG], w[OCL_WG];
  const long dk = tq.ne[0], dv = tv.ne[0], nkv = tk.ne[1];
  const long group = tq.ne[2] / tk.ne[2];
  const int lid = get_local_id (0), L = get_local_size (0);

  FOR_GROUPS (r, nrows)
    {
      SPLIT_ROW (r, td, i1, i2, i3);
      const long hk = i2 / group;
      float acc[FA_PER_ITEM];
      float mx = -INFINITY, sum = 0.0f;

      for (int u = 0; u < FA_PER_ITEM; u++)
        acc[u] = 0.0f;
      for (long j0 = 0; j0 < nkv; j0 += L)
        {
          const long j = j0 + lid;
          float sc = -INFINITY;
          if (j < nkv)
            {
              float mv = 0.0f;
              if (mtype >= 0)
                mv = load_elem (AT (m, tm, 0, i1, i2 % tm.ne[2],
                                    i3 % tm.ne[3]), j, tm.nb[0], mtype);
              if (mv != -INFINITY)
                {
                  global const char *kr = AT (k, tk, 0, j, hk, i3);
                  float dot = 0.0f;
                  for (long e = 0; e < dk; e++)
                    dot += ROW_F32 (q, tq, e, i1, i2, i3)
                           * load_elem (kr, e, tk.nb[0], ktype);
                  sc = scale * dot;
                  if (softcap > 0.0f)
                    sc = softcap * tanh (sc / softcap);
                  sc += mv;
                }
            }
          /* No early exit for a chunk wholly masked: every item must
             meet every barrier (and PoCL's work-group compiler wants
             them outside branches).  */
          const float cmx = wg_max (sc, s);
          const float nmx = cmx > mx ? cmx : mx;
          const float f = nmx == -INFINITY ? 1.0f : exp (mx - nmx);
          const float wt = sc == -INFINITY ? 0.0f : exp (sc - nmx);
          w[lid] = wt;
          sum = sum * f + wg_sum (wt, s);       /* its barriers publish w */
          mx = nmx;
          const long nj = nkv - j0 < L ? nkv - j0 : L;
          for (int u = 0; u < FA_PER_ITEM; u++)
            {
              const long e = lid + (long) u * L;
              if (e >= dv)
                break;
              float a = acc[u] * f;
              for (long t = 0; t < nj; t++)
                if (w[t] != 0.0f)
                  a += w[t] * load_elem (AT (v, tv, 0, j0 + t, hk, i3), e,
                                         tv.nb[0], vtype);
              acc[u] = a;
            }
          barrier (CLK_LOCAL_MEM_FENCE);        /* w read by all */
        }
      for (int u = 0; u < FA_PER_ITEM; u++)
        {
          const long e = lid + (long) u * L;
          if (e < dv)
            ROW_OUT (d, td, e, i1, i2, i3)
              = sum > 0 ? acc[u] / sum : isnan (sum) ? NAN : 0.0f;
        }
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
