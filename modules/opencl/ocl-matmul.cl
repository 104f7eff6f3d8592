/* ocl-matmul.cl - mul_mat: d[i, j, i2, i3] = dot (a row i of batch
 * (i2 / r2, i3 / r3), b row j of batch (i2, i3)); and mul_mat_id,
 * d[i, e, t] = dot (as row i of expert ids[e, t], b row e % b1 of t).
 * a (the weights) is f32, f16, bf16 or a block type with dense rows
 * (ocl-quant.cl), b and d f32.
 *
 * Three kernels, chosen by ocl-ops.c:
 *   k_mul_mat_vec    few columns (token generation, at most
 *                    MMV_MAX_COLS): a work-group per weight row, its
 *                    items striding over the row (16-element chunks of
 *                    block weights, decoded once for every column;
 *                    four elements at a time by vector loads for dense
 *                    plain rows), the partial sums met by wg_sum.
 *   k_mul_mat_tiled  more columns (prompts): a work-group of 256 items
 *                    computes a 64 x 64 tile of d, 4 x 4 per item; at
 *                    each step of 32 along the rows it decodes 64 weight
 *                    rows and loads 64 columns into local memory once.
 *   k_mul_mat        one destination element per work item: devices
 *                    whose work-groups cannot hold 256 items.
 * k_mul_mat_id gives each destination element a work-group.  Sums are
 * float, except k_mul_mat's (per 256 products float, their total acc_t,
 * as on the CPU).  */

#define DOT_BLOCK 256
#define MMV_MAX_COLS 8          /* OCL_MMV_MAX_COLS of ocl-ops.c */

/* The dot of chunk V (16 decoded weights) with the f32 values at Y,
   BNB bytes apart, added to ACC.  */
float
chunk_dot (const float v[16], global const char *y, long bnb, float acc)
{
  for (int l = 0; l < 16; l++)
    acc += v[l] * *(global const float *) (y + l * bnb);
  return acc;
}

/* Dot of a block-type row (blocks ABYTES apart) with a strided f32 row,
   K elements.  */
float
dot_blocks (global const uchar *ar, long abytes, int atype, long k,
            global const char *br, long bnb)
{
  const int per = block_elems (atype);
  acc_t total = 0;

  for (long blk = 0; blk < k / per; blk++)
    {
      global const uchar *b = ar + blk * abytes;
      float acc = 0.0f, v[16];
      for (int c = 0; c < per / 16; c++)
        {
          block_chunk (b, atype, c, v);
          acc = chunk_dot (v, br + (blk * per + 16 * c) * bnb, bnb, acc);
        }
      total += acc;
    }
  return (float) total;
}

float
dot_plain (global const char *ar, long anb, int atype, long k,
           global const char *br, long bnb)
{
  acc_t total = 0;

  for (long k0 = 0; k0 < k; k0 += DOT_BLOCK)
    {
      long end = k - k0 > DOT_BLOCK ? k0 + DOT_BLOCK : k;
      float acc = 0.0f;
      if (atype == TSR_TYPE_F32)
        for (long x = k0; x < end; x++)
          acc += *(global const float *) (ar + x * anb)
                 * *(global const float *) (br + x * bnb);
      else
        for (long x = k0; x < end; x++)
          acc += load_elem (ar, x, anb, atype)
                 * *(global const float *) (br + x * bnb);
      total += acc;
    }
  return (float) total;
}

/* Dot of a row of any weight type with a strided f32 row.  */
float
dot_row (global const char *ar, long anb, int atype, long k,
         global const char *br, long bnb)
{
  if (atype == TSR_TYPE_F32 || atype == TSR_TYPE_F16
      || atype == TSR_TYPE_BF16)
    return dot_plain (ar, anb, atype, k, br, bnb);
  return dot_blocks ((global const uchar *) ar, anb, atype, k, br, bnb);
}

kernel void
k_mul_mat (global char *d, tdesc td, global const char *a, tdesc ta,
           int atype, global const char *b, tdesc tb, long n)
{
  const long r2 = tb.ne[2] / ta.ne[2], r3 = tb.ne[3] / ta.ne[3];

  FOR_ITEMS (e, n)
    {
      SPLIT4 (e, td, i, j, i2, i3);
      *(global float *) AT (d, td, i, j, i2, i3)
        = dot_row (AT (a, ta, 0, i, i2 / r2, i3 / r3), ta.nb[0], atype,
                   ta.ne[0], AT (b, tb, 0, j, i2, i3), tb.nb[0]);
    }
}

/* Few columns: a work-group per row i of batch (i2, i3) of d, N = d's
   rows of all batches.  */
kernel void
k_mul_mat_vec (global char *d, tdesc td, global const char *a, tdesc ta,
               int atype, global const char *b, tdesc tb, long n)
{
  local float s[OCL_WG];
  const long r2 = tb.ne[2] / ta.ne[2], r3 = tb.ne[3] / ta.ne[3];
  const int ncols = (int) tb.ne[1];
  const long k = ta.ne[0], bnb = tb.nb[0];
  const int lid = get_local_id (0), L = get_local_size (0);
  const bool plain = atype == TSR_TYPE_F32 || atype == TSR_TYPE_F16
                     || atype == TSR_TYPE_BF16;
  const long esize = atype == TSR_TYPE_F32 ? 4 : 2;
  /* Dense plain rows and dense f32 columns: vector loads.  */
  const bool vec = plain && ta.nb[0] == esize && bnb == 4;

  FOR_GROUPS (r, n)
    {
      long i = r % td.ne[0], i2 = r / td.ne[0] % td.ne[2];
      long i3 = r / (td.ne[0] * td.ne[2]);
      global const char *ar = AT (a, ta, 0, i, i2 / r2, i3 / r3);
      float acc[MMV_MAX_COLS];
      for (int j = 0; j < MMV_MAX_COLS; j++)
        acc[j] = 0.0f;

      if (!plain)
        {
          const int cpb = block_elems (atype) / 16;     /* chunks a block */
          float v[16];
          for (long c = lid; c < k / 16; c += L)
            {
              block_chunk ((global const uchar *) ar + c / cpb * ta.nb[0],
                           atype, (int) (c % cpb), v);
              for (int j = 0; j < ncols; j++)
                acc[j] = chunk_dot (v, AT (b, tb, 16 * c, j, i2, i3), bnb,
                                    acc[j]);
            }
        }
      else if (vec)
        {
          for (long x = 4 * (long) lid; x + 4 <= k; x += 4 * (long) L)
            {
              float4 wv;
              if (atype == TSR_TYPE_F32)
                wv = vload4 (0, (global const float *) (ar + 4 * x));
              else if (atype == TSR_TYPE_F16)
                wv = vload_half4 (0, (global const half *) (ar + 2 * x));
              else
                {
                  uint4 h = convert_uint4 (vload4 (0, (global const ushort *)
                                                      (ar + 2 * x)));
                  wv = as_float4 (h << 16);
                }
              for (int j = 0; j < ncols; j++)
                acc[j] += dot (wv, vload4 (0, (global const float *)
                                              AT (b, tb, x, j, i2, i3)));
            }
          for (long x = (k & ~3L) + lid; x < k; x += L)
            {
              float wx = load_elem (ar, x, esize, atype);
              for (int j = 0; j < ncols; j++)
                acc[j] += wx * *(global const float *) AT (b, tb, x, j, i2,
                                                           i3);
            }
        }
      else
        for (long x = lid; x < k; x += L)
          {
            float wx = load_elem (ar, x, ta.nb[0], atype);
            for (int j = 0; j < ncols; j++)
              acc[j] += wx * *(global const float *) AT (b, tb, x, j, i2, i3);
          }

      for (int j = 0; j < ncols; j++)
        {
          float t = wg_sum (acc[j], s);
          if (lid == 0)
            *(global float *) AT (d, td, i, j, i2, i3) = t;
        }
    }
}

/* Many columns: tiles of TILE x TILE of d, N the tiles of all batches,
   256 items a group (TILE / 4 by TILE / 4, each 4 x 4 elements: rows
   ty + 16 u, columns tx + 16 w, so that neighbouring items read
   neighbouring words of local memory).  Along the rows, steps of
   TILE_K: 2 TILE chunks of 16 weights decoded by the first half of the
   items (block types, whose rows are whole 32-element steps), or
   TILE * TILE_K elements loaded, TILE_K-contiguous runs per item group
   (plain types, zeros past the row's end); the columns likewise.
   Local arrays are padded by a word against bank conflicts.  */
#define TILE 64
#define TILE_K 32
#define TILE_ITEMS 256          /* OCL_TILED_WG of ocl-ops.c */

kernel void
k_mul_mat_tiled (global char *d, tdesc td, global const char *a, tdesc ta,
                 int atype, global const char *b, tdesc tb, long n)
{
  local float as[TILE_K][TILE + 1], bs[TILE_K][TILE + 1];
  const long r2 = tb.ne[2] / ta.ne[2], r3 = tb.ne[3] / ta.ne[3];
  const long m = td.ne[0], nc = td.ne[1], k = ta.ne[0];
  const long tiles_m = (m + TILE - 1) / TILE, tiles_n = (nc + TILE - 1) / TILE;
  const int lid = get_local_id (0), tx = lid % 16, ty = lid / 16;
  const bool plain = atype == TSR_TYPE_F32 || atype == TSR_TYPE_F16
                     || atype == TSR_TYPE_BF16;
  const int cpb = plain ? 1 : block_elems (atype) / 16;

  FOR_GROUPS (g, n)
    {
      const long i0 = g % tiles_m * TILE, j0 = g / tiles_m % tiles_n * TILE;
      const long bz = g / (tiles_m * tiles_n);
      const long i2 = bz % td.ne[2], i3 = bz / td.ne[2];
      float c[4][4];
      for (int u = 0; u < 4; u++)
        for (int w = 0; w < 4; w++)
          c[u][w] = 0.0f;

      for (long k0 = 0; k0 < k; k0 += TILE_K)
        {
          if (!plain)
            {
              if (lid < 2 * TILE)
                {
                  const int row = lid / 2, hf = lid % 2;
                  const long i = i0 + row, kc = k0 / 16 + hf;
                  float v[16];
                  if (i < m)
                    block_chunk ((global const uchar *)
                                 AT (a, ta, 0, i, i2 / r2, i3 / r3)
                                 + kc / cpb * ta.nb[0], atype,
                                 (int) (kc % cpb), v);
                  else
                    for (int l = 0; l < 16; l++)
                      v[l] = 0.0f;
                  for (int l = 0; l < 16; l++)
                    as[16 * hf + l][row] = v[l];
                }
            }
          else
            for (int t = lid; t < TILE * TILE_K; t += TILE_ITEMS)
              {
                const int kk = t % TILE_K, row = t / TILE_K;
                const long i = i0 + row, x = k0 + kk;
                as[kk][row] = i < m && x < k
                              ? load_elem (AT (a, ta, 0, i, i2 / r2, i3 / r3),
                                           x, ta.nb[0], atype)
                              : 0.0f;
              }
          for (int t = lid; t < TILE * TILE_K; t += TILE_ITEMS)
            {
              const int kk = t % TILE_K, col = t / TILE_K;
              const long j = j0 + col, x = k0 + kk;
              bs[kk][col] = j < nc && x < k
                            ? *(global const float *) AT (b, tb, x, j, i2, i3)
                            : 0.0f;
            }
          barrier (CLK_LOCAL_MEM_FENCE);
          for (int kk = 0; kk < TILE_K; kk++)
            {
              float av[4], bv[4];
              for (int u = 0; u < 4; u++)
                {
                  av[u] = as[kk][ty + 16 * u];
                  bv[u] = bs[kk][tx + 16 * u];
                }
              for (int u = 0; u < 4; u++)
                for (int w = 0; w < 4; w++)
                  c[u][w] = fma (av[u], bv[w], c[u][w]);
            }
          barrier (CLK_LOCAL_MEM_FENCE);
        }

      for (int u = 0; u < 4; u++)
        for (int w = 0; w < 4; w++)
          {
            const long i = i0 + ty + 16 * u, j = j0 + tx + 16 * w;
            if (i < m && j < nc)
              *(global float *) AT (d, td, i, j, i2, i3) = c[u][w];
          }
    }
}

/* mul_mat_id: a work-group per destination element (i, e, t), its items
   striding over the row as k_mul_mat_vec's do for one column.  An
   expert id outside [0, ta.ne[2]) goes to STATUS (the node then fails)
   and its results are zeros.  */
kernel void
k_mul_mat_id (global char *d, tdesc td, global const char *as, tdesc ta,
              int atype, global const char *b, tdesc tb,
              global const char *ids, tdesc ti, volatile global int *status,
              int tag, long n)
{
  local float s[OCL_WG];
  const long k = ta.ne[0], bnb = tb.nb[0];
  const int lid = get_local_id (0), L = get_local_size (0);
  const bool plain = atype == TSR_TYPE_F32 || atype == TSR_TYPE_F16
                     || atype == TSR_TYPE_BF16;

  FOR_GROUPS (o, n)
    {
      SPLIT4 (o, td, i, e, t, unused);
      int x = *(global const int *) AT (ids, ti, e, t, 0, 0);
      const bool ok = x >= 0 && x < ta.ne[2];
      float p = 0.0f;
      if (!ok)
        {
          if (lid == 0)
            report_index (status, tag, x);
        }
      else
        {
          global const char *ar = AT (as, ta, 0, i, x, 0);
          global const char *br = AT (b, tb, 0, e % tb.ne[1], t, 0);
          if (plain)
            for (long c = lid; c < k; c += L)
              p += load_elem (ar, c, ta.nb[0], atype)
                   * *(global const float *) (br + c * bnb);
          else
            {
              const int cpb = block_elems (atype) / 16;
              float v[16];
              for (long c = lid; c < k / 16; c += L)
                {
                  block_chunk ((global const uchar *) ar + c / cpb * ta.nb[0],
                               atype, (int) (c % cpb), v);
                  p = chunk_dot (v, br + 16 * c * bnb, bnb, p);
                }
            }
        }
      p = wg_sum (p, s);
      if (lid == 0)
        *(global float *) AT (d, td, i, e, t, 0) = ok ? p : 0.0f;
    }
}
