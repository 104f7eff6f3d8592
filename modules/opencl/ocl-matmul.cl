/* ocl-matmul.cl - mul_mat: d[i, j, i2, i3] = dot (a row i of batch
 * (i2 / r2, i3 / r3), b row j of batch (i2, i3)).  a (the weights) is
 * f32, f16, bf16, q8_0 or q4_0 (block types with dense rows), b and d
 * f32.  One work item per destination element; partial sums of up to
 * 256 products are float, their total acc_t, as on the CPU.  */

#define DOT_BLOCK 256

/* Dot of a block-type row with a strided f32 row, K elements.  */
float
dot_quant (global const uchar *ar, int atype, long k,
           global const char *br, long bnb)
{
  const long bsize = atype == TSR_TYPE_Q8_0 ? 2 + QK : 2 + QK / 2;
  acc_t total = 0;

  for (long blk = 0; blk < k / QK; blk++)
    {
      global const uchar *b = ar + blk * bsize;
      global const char *y = br + blk * QK * bnb;
      float acc = 0.0f;
      if (atype == TSR_TYPE_Q8_0)
        for (int j = 0; j < QK; j++)
          acc += (float) ((global const char *) (b + 2))[j]
                 * *(global const float *) (y + j * bnb);
      else
        for (int j = 0; j < QK / 2; j++)
          {
            uchar q = b[2 + j];
            acc += (float) ((q & 15) - 8) * *(global const float *) (y + j
                                                                     * bnb);
            acc += (float) ((q >> 4) - 8)
                   * *(global const float *) (y + (j + QK / 2) * bnb);
          }
      total += (acc_t) (block_scale (b) * acc);
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

kernel void
k_mul_mat (global char *d, tdesc td, global const char *a, tdesc ta,
           int atype, global const char *b, tdesc tb, long n)
{
  const long r2 = tb.ne[2] / ta.ne[2], r3 = tb.ne[3] / ta.ne[3];
  const long k = ta.ne[0];
  const bool quant = atype == TSR_TYPE_Q8_0 || atype == TSR_TYPE_Q4_0;

  FOR_ITEMS (e, n)
    {
      SPLIT4 (e, td, i, j, i2, i3);
      global const char *ar = AT (a, ta, 0, i, i2 / r2, i3 / r3);
      global const char *br = AT (b, tb, 0, j, i2, i3);
      *(global float *) AT (d, td, i, j, i2, i3)
        = quant ? dot_quant ((global const uchar *) ar, atype, k, br,
                             tb.nb[0])
                : dot_plain (ar, ta.nb[0], atype, k, br, tb.nb[0]);
    }
}
