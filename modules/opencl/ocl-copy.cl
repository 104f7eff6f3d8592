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
      long nr = ts.ne[1] * ts.ne[2] * ts.ne[3];
      bool later = false;
      for (long q = r + 1; q < nr && !later; q++)
        {
          SPLIT_ROW (q, ts, qi, qj, ql);
          later = qj % td.ne[2] == dj && ql % td.ne[3] == dl
                  && *(global const int *) AT (idx, ti, qi, qj, ql, 0) == v;
        }
      if (!later)
        store_elem (AT (d, td, i0, v, dj, dl), dtype,
                    *(global const float *) AT (s, ts, i0, i, j, l));
    }
}
