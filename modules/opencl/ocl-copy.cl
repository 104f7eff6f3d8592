/* ocl-copy.cl - moving and converting elements: cpy / cont (k_copy),
 * get_rows, set_rows.  One work item per destination element (per
 * source element for set_rows).  */

/* Element I of the row-major order of s into element I of d.  With
   ESIZE > 0 the types are equal and ESIZE bytes are moved unchanged
   (for block types the host counts blocks as elements); otherwise the
   value is converted from STYPE to DTYPE.  */
kernel void
k_copy (global char *d, tdesc td, int dtype, global const char *s,
        tdesc ts, int stype, int esize, long n)
{
  FOR_ITEMS (i, n)
    {
      SPLIT4 (i, td, d0, d1, d2, d3);
      SPLIT4 (i, ts, s0, s1, s2, s3);
      global char *dp = AT (d, td, d0, d1, d2, d3);
      if (esize == 4)
        *(global uint *) dp = *(global const uint *) AT (s, ts, s0, s1, s2,
                                                         s3);
      else if (esize == 2)
        *(global ushort *) dp = *(global const ushort *) AT (s, ts, s0, s1,
                                                             s2, s3);
      else if (esize > 0)
        {
          global const char *sp = AT (s, ts, s0, s1, s2, s3);
          for (int k = 0; k < esize; k++)
            dp[k] = sp[k];
        }
      else
        /* Block sources have the destination's shape: index in row.  */
        store_elem (dp, dtype, load_elem (AT (s, ts, 0, s1, s2, s3), s0,
                                          ts.nb[0], stype));
    }
}

/* d[:, i, j, l] = a[:, rows[i, j, l], j % a2, l % a3] as f32.  */
kernel void
k_get_rows (global char *d, tdesc td, global const char *a, tdesc ta,
            int atype, global const char *rows, tdesc tr,
            volatile global int *status, int tag, long n)
{
  FOR_ITEMS (e, n)
    {
      SPLIT4 (e, td, i0, i, j, l);
      int idx = *(global const int *) AT (rows, tr, i, j, l, 0);
      float v = 0.0f;
      if (idx < 0 || idx >= ta.ne[1])
        report_index (status, tag, idx);
      else
        v = load_elem (AT (a, ta, 0, idx, j % ta.ne[2], l % ta.ne[3]), i0,
                       ta.nb[0], atype);
      *(global float *) AT (d, td, i0, i, j, l) = v;
    }
}

/* Every index of IDX in [0, NROWS), before set_rows writes anything.  */
kernel void
k_set_rows_check (global const char *idx, tdesc ti, long nrows,
                  volatile global int *status, int tag, long n)
{
  FOR_ITEMS (e, n)
    {
      SPLIT4 (e, ti, i0, i1, i2, i3);
      int v = *(global const int *) AT (idx, ti, i0, i1, i2, 0);
      if (v < 0 || v >= nrows)
        report_index (status, tag, v);
    }
}

/* Whether a source row after R (row-major) names destination row V of
   the same destination batch (DJ, DL): R's write is then skipped.  */
bool
later_writer (global const char *idx, tdesc ti, tdesc ts, tdesc td, long r,
              int v, long dj, long dl)
{
  long nr = ts.ne[1] * ts.ne[2] * ts.ne[3];
  for (long q = r + 1; q < nr; q++)
    {
      SPLIT_ROW (q, ts, qi, qj, ql);
      if (qj % td.ne[2] == dj && ql % td.ne[3] == dl
          && *(global const int *) AT (idx, ti, qi, qj, ql, 0) == v)
        return true;
    }
  return false;
}

/* d[:, idx[i, j, l], j % d2, l % d3] = s[:, i, j, l], nothing if an
   index was bad.  A source row is skipped when a later one (row-major:
   i, then j, then l) names the same destination row, so the last one
   wins whatever order the work items run in.  */
kernel void
k_set_rows (global char *d, tdesc td, int dtype, global const char *s,
            tdesc ts, global const char *idx, tdesc ti,
            volatile global int *status, int tag, long n)
{
  if (status[0] != 0)
    return;
  FOR_ITEMS (e, n)
    {
      SPLIT4 (e, ts, i0, i, j, l);
      int v = *(global const int *) AT (idx, ti, i, j, l, 0);
      long dj = j % td.ne[2], dl = l % td.ne[3];
      long r = i + ts.ne[1] * (j + ts.ne[2] * l);
      if (!later_writer (idx, ti, ts, td, r, v, dj, dl))
        store_elem (AT (d, td, i0, v, dj, dl), dtype,
                    *(global const float *) AT (s, ts, i0, i, j, l));
    }
}

/* Quantizing: 32 floats into a block of q8_0, q4_0, q4_1, q5_0, q5_1,
   iq4_nl or mxfp4, as libtessera's reference quantizers (lib/types/)
   do, to the bit: q8_0 and q4_0 from the block's maximum, the others by
   the scale searches of ocl-fit.cl; quotients correctly rounded through
   double (QDIV: the host keeps these copies off devices without
   cl_khr_fp64, whose float division may be off by ulps), products and
   rint (round half even) as lrintf.  */

int
block_bytes (int type)
{
  switch (type)
    {
    case TSR_TYPE_Q8_0: return 34;
    case TSR_TYPE_Q4_1: return 20;
    case TSR_TYPE_Q5_0: return 22;
    case TSR_TYPE_Q5_1: return 24;
    case TSR_TYPE_MXFP4: return 17;
    default: return 18;                 /* q4_0, iq4_nl */
    }
}

/* Element j of L in the low nibble of byte j (j < 16), j + 16 in the
   high one.  */
void
pack_nibbles (global uchar *qs, const uchar *l)
{
  for (int j = 0; j < 16; j++)
    qs[j] = (uchar) ((l[j] & 15) | (l[j + 16] & 15) << 4);
}

/* The fifth bits of the levels L, little-endian at QH.  */
void
pack_fifth_bits (global uchar *qh, const uchar *l)
{
  uint h = 0;
  for (int j = 0; j < 32; j++)
    h |= (uint) (l[j] >> 4 & 1) << j;
  for (int i = 0; i < 4; i++)
    qh[i] = (uchar) (h >> (8 * i));
}

void
store_half (global uchar *p, ushort h)
{
  p[0] = (uchar) h;
  p[1] = (uchar) (h >> 8);
}

void
quantize_block (global uchar *p, int type, const float *v)
{
  uchar l[32];

  if (type == TSR_TYPE_Q8_0)
    {
      float amax = 0.0f;
      for (int j = 0; j < 32; j++)
        amax = fmax (amax, fabs (v[j]));
      float d = QDIV (amax, 127.0f);
      float id = d > 0.0f ? QDIV (1.0f, d) : 0.0f;
      store_half (p, f32_to_f16 (d));
      for (int j = 0; j < 32; j++)
        ((global char *) p)[2 + j] = (char) (int) rint (v[j] * id);
      return;
    }
  if (type == TSR_TYPE_Q4_0)
    {
      float m = 0.0f;
      for (int j = 0; j < 32; j++)
        if (fabs (v[j]) > fabs (m))
          m = v[j];
      float d = m * -0.125f;
      float id = d != 0.0f ? QDIV (1.0f, d) : 0.0f;
      store_half (p, f32_to_f16 (d));
      for (int j = 0; j < 16; j++)
        {
          int lo = (int) rint (v[j] * id) + 8;
          int hi = (int) rint (v[j + 16] * id) + 8;
          lo = lo < 0 ? 0 : lo > 15 ? 15 : lo;
          hi = hi < 0 ? 0 : hi > 15 ? 15 : hi;
          p[2 + j] = (uchar) (lo | (hi << 4));
        }
      return;
    }
  if (type == TSR_TYPE_Q4_1 || type == TSR_TYPE_Q5_1)
    {
      const int nmax = type == TSR_TYPE_Q4_1 ? 15 : 31;
      float off, sc = fit_affine (v, nmax, l, &off);
      ushort dh = f32_to_f16 (sc), mh = f32_to_f16 (off);
      store_half (p, dh);
      store_half (p + 2, mh);
      float d = f16_to_f32 (dh), m = f16_to_f32 (mh);
      float id = d != 0 ? QDIV (1.0f, d) : 0;
      for (int j = 0; j < 32; j++)
        l[j] = (uchar) round_clamp ((v[j] - m) * id, 0, nmax);
      if (type == TSR_TYPE_Q5_1)
        pack_fifth_bits (p + 4, l);
      pack_nibbles (p + (type == TSR_TYPE_Q5_1 ? 8 : 4), l);
      return;
    }
  if (type == TSR_TYPE_Q5_0)
    {
      ushort dh = f32_to_f16 (fit_signed (v, 16, l));
      store_half (p, dh);
      float d = f16_to_f32 (dh), id = d != 0 ? QDIV (1.0f, d) : 0;
      for (int j = 0; j < 32; j++)
        l[j] = (uchar) (round_clamp (v[j] * id, -16, 15) + 16);
      pack_fifth_bits (p + 2, l);
      pack_nibbles (p + 6, l);
      return;
    }
  if (type == TSR_TYPE_IQ4_NL)
    {
      ushort dh = f32_to_f16 (fit_table (v, l));
      store_half (p, dh);
      float d = f16_to_f32 (dh), id = d != 0 ? QDIV (1.0f, d) : 0;
      for (int j = 0; j < 32; j++)
        l[j] = (uchar) table_index (kvalues_iq4nl, v[j] * id);
      pack_nibbles (p + 2, l);
      return;
    }
  /* mxfp4 */
  p[0] = fit_mxfp4 (v, l);
  pack_nibbles (p + 1, l);
}

/* cpy / cont into a quantized type (dense rows): destination block I takes
   the 32 source elements at its row-major positions, of type STYPE.  */
kernel void
k_quantize (global char *d, tdesc td, int dtype, global const char *s,
            tdesc ts, int stype, long n)
{
  const long nb = td.ne[0] / 32;

  FOR_ITEMS (i, n)
    {
      long b = i % nb, row = i / nb;
      SPLIT_ROW (row, td, d1, d2, d3);
      float v[32];
      for (int k = 0; k < 32; k++)
        {
          long e = row * td.ne[0] + b * 32 + k;
          SPLIT4 (e, ts, s0, s1, s2, s3);
          v[k] = load_elem (AT (s, ts, 0, s1, s2, s3), s0, ts.nb[0], stype);
        }
      quantize_block ((global uchar *) AT (d, td, 0, d1, d2, d3)
                      + b * block_bytes (dtype), dtype, v);
    }
}

/* set_rows into a quantized type: as k_set_rows, a work item per block of
   a source row.  */
kernel void
k_set_rows_q (global char *d, tdesc td, int dtype, global const char *s,
              tdesc ts, global const char *idx, tdesc ti,
              volatile global int *status, int tag, long n)
{
  const long nb = ts.ne[0] / 32;

  if (status[0] != 0)
    return;
  FOR_ITEMS (e, n)
    {
      long b = e % nb, r = e / nb;
      SPLIT_ROW (r, ts, i, j, l);
      int v = *(global const int *) AT (idx, ti, i, j, l, 0);
      long dj = j % td.ne[2], dl = l % td.ne[3];
      if (later_writer (idx, ti, ts, td, r, v, dj, dl))
        continue;
      float x[32];
      for (int k = 0; k < 32; k++)
        x[k] = *(global const float *) AT (s, ts, b * 32 + k, i, j, l);
      quantize_block ((global uchar *) AT (d, td, 0, v, dj, dl)
                      + b * block_bytes (dtype), dtype, x);
    }
}
