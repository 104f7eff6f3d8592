/* ocl-matmul.cl - mul_mat: d[i, j, i2, i3] = dot (a row i of batch
 * (i2 / r2, i3 / r3), b row j of batch (i2, i3)); and mul_mat_id,
 * d[i, e, t] = dot (as row i of expert ids[e, t], b row e % b1 of t).
 * a (the weights) is f32, f16, bf16 or a block type with dense rows
 * (ocl-quant.cl), b and d f32.
 *
 * k_mul_mat takes one destination element per work item, decoding the
 * weights as it goes.  k_mul_mat_vec is the path of block weights with
 * few columns (token generation, host: at most OCL_MMV_MAX_COLS): one
 * work item per weight row decodes each 16-element chunk once and
 * multiplies it with every column.  Partial sums of up to 256 products
 * (a block at most) are float, their total acc_t, as on the CPU.  */

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

/* Block weights, tb.ne[1] <= MMV_MAX_COLS columns: one work item per
   row i of batch (i2, i3) of d, N = d's rows of all batches.  */
kernel void
k_mul_mat_vec (global char *d, tdesc td, global const char *a, tdesc ta,
               int atype, global const char *b, tdesc tb, long n)
{
  const long r2 = tb.ne[2] / ta.ne[2], r3 = tb.ne[3] / ta.ne[3];
  const int per = block_elems (atype), ncols = (int) tb.ne[1];
  const long bnb = tb.nb[0];

  FOR_ITEMS (r, n)
    {
      long i = r % td.ne[0], i2 = r / td.ne[0] % td.ne[2];
      long i3 = r / (td.ne[0] * td.ne[2]);
      global const uchar *ar = (global const uchar *) AT (a, ta, 0, i,
                                                         i2 / r2, i3 / r3);
      acc_t total[MMV_MAX_COLS];
      for (int j = 0; j < ncols; j++)
        total[j] = 0;
      for (long blk = 0; blk < ta.ne[0] / per; blk++)
        {
          global const uchar *w = ar + blk * ta.nb[0];
          float acc[MMV_MAX_COLS], v[16];
          for (int j = 0; j < ncols; j++)
            acc[j] = 0.0f;
          for (int c = 0; c < per / 16; c++)
            {
              block_chunk (w, atype, c, v);
              long x = blk * per + 16 * c;
              for (int j = 0; j < ncols; j++)
                acc[j] = chunk_dot (v, AT (b, tb, x, j, i2, i3), bnb,
                                    acc[j]);
            }
          for (int j = 0; j < ncols; j++)
            total[j] += acc[j];
        }
      for (int j = 0; j < ncols; j++)
        *(global float *) AT (d, td, i, j, i2, i3) = (float) total[j];
    }
}

/* mul_mat_id, one destination element per work item.  An expert id
   outside [0, ta.ne[2]) goes to STATUS (the node then fails) and its
   results are zeros.  */
kernel void
k_mul_mat_id (global char *d, tdesc td, global const char *as, tdesc ta,
              int atype, global const char *b, tdesc tb,
              global const char *ids, tdesc ti, volatile global int *status,
              int tag, long n)
{
  FOR_ITEMS (o, n)
    {
      SPLIT4 (o, td, i, e, t, unused);
      int x = *(global const int *) AT (ids, ti, e, t, 0, 0);
      float v = 0.0f;
      if (x < 0 || x >= ta.ne[2])
        report_index (status, tag, x);
      else
        v = dot_row (AT (as, ta, 0, i, x, 0), ta.nb[0], atype, ta.ne[0],
                     AT (b, tb, 0, e % tb.ne[1], t, 0), tb.nb[0]);
      *(global float *) AT (d, td, i, e, t, 0) = v;
    }
}
