/* The CPU's extra buffer type CPU_REPACK (q4_0, with VNNI q8_0, with
   AVX-512 q4_K and q6_K matrices with rows interleaved in groups of 8,
   modules/cpu/cpu-repack.c), through the public API, at the ISA level
   the CPU backend runs:
   - it is offered where the level has vector code for it (AVX2,
     AVX-512) and nowhere else (UNSUPPORTED then);
   - tsr_tensor_set / tsr_tensor_get see the plain layout: whole
     tensors, and random byte ranges against a shadow copy;
     tsr_buffer_clear likewise;
   - the stored bytes follow the published layout (decoded here from
     its description, independently of the packing code): scales first,
     then vectors of 16 lanes of 4 bytes, lane 2r + h for row r: q4_0's
     two, whose nibbles are elements 4h + b, 8 + 4h + b (first vector),
     16 + 4h + b, 24 + 4h + b (second); q8_0's four, vector s holding
     element 8s + 4h + b plus 128; q4_K's d, dmin, scale bytes by rows,
     then per group of 32 two vectors like q4_0's; q6_K's d, its int8
     scales in pairs by rows, then per group of 32 three vectors, two of
     low nibbles like q4_0's and one of the high 2-bit pairs of elements
     4h + b, + 8, + 16, + 24; tensors it does not repack
     (tsr_buffer_type_repacks false: rows not a multiple of 8, other
     types) are stored plain;
   - mul_mat of repacked weights (q4_0, q8_0, q4_K, q6_K) equals
     mul_mat of the same weights in plain memory within the f32 summation bound of two orders of the
     same block sums, (nb + 8) 2^-23 sum |w_i| |x_i| (1 + 2^-7) per
     result (the activations are quantized alike by both; their q8_0
     values are within |x| (1 + 2^-7)), for n = 1 to 64 rows of
     activations (the integer dots at every n), batched weights too;
     where plain weights take the f32 GEMM (from n = 80, 320 for q4_K
     and q6_K:
     not among the n here), plus the rounding of the activations to
     q8_0, |w_i| d_y / 2 per element;
   - get_rows of repacked weights (a tied embedding that is also the
     output matrix) gives every row, at each of the 8 places in its
     group, in each batch of weights, as the reference dequantizes the
     plain row (tsr_dequantize_row), bit for bit, and computes on the
     CPU backend (which supports it);
   - other ops reading repacked weights (cast), get_rows and mul_mat of
     a view of them, and writes through a view are refused with an
     error, never computed on the repacked bytes.  */
#include "ops-test.h"

static tsr_buffer_type *
repack_buft (tsr_backend *be)
{
  tsr_buffer_type *b = NULL;
  return tsr_device_extra_buffer_types (tsr_backend_device (be), &b, 1)
         ? b : NULL;
}

/* Random rows of TYPE: N elements of uniform values in [-1, 1).  */
static unsigned char *
random_rows (tsr_type type, int64_t n)
{
  float *f = malloc ((size_t) n * sizeof *f);
  unsigned char *q = malloc (tsr_row_size (type, n));
  for (int64_t i = 0; i < n; i++)
    f[i] = tsr_test_uniform (-1.0f, 1.0f);
  tsr_quantize_row (type, f, q, n);
  free (f);
  return q;
}

/* A tensor of TYPE [K, M, B] alone in a new buffer of BUFT.  */
static tsr_tensor *
placed (tsr_context *ctx, tsr_buffer_type *buft, tsr_type type, int64_t k,
        int64_t m, int64_t b, tsr_buffer **buf)
{
  tsr_tensor *t = tsr_new_tensor_3d (ctx, type, k, m, b);
  *buf = tsr_buffer_type_alloc (buft, tsr_buffer_type_alloc_size (buft, t));
  if (!*buf || tsr_buffer_place_tensor (*buf, t, 0) != TSR_OK)
    return NULL;
  return t;
}

/* The stored nibble of element E of a plain q4_0 block.  */
static int
plain_nibble (const unsigned char *blk, int e)
{
  return e < 16 ? blk[2 + e] & 15 : blk[2 + e - 16] >> 4;
}

/* q4_K: the stored nibble of element E of a plain super-block.  */
static int
plain_nibble_k (const unsigned char *blk, int e)
{
  int byte = blk[16 + 32 * (e / 64) + e % 32];
  return e / 32 % 2 ? byte >> 4 : byte & 15;
}

/* q6_K: the stored 6-bit value (element + 32) of element E of a plain
   super-block: ql[128], qh[64], scales[16], d.  */
static int
plain_q6 (const unsigned char *blk, int e)
{
  int half = e / 128, l = e % 32, quarter = e % 128 / 32;
  int ql = blk[64 * half + l + (quarter % 2 ? 32 : 0)];
  int lo = quarter < 2 ? ql & 15 : ql >> 4;
  int hi = blk[128 + 32 * half + l] >> (2 * quarter) & 3;
  return lo | hi << 4;
}

static bool
layout_ok_q6_K (const unsigned char *raw, const unsigned char *plain,
                int64_t k, int64_t m)
{
  int64_t nb = k / 256;
  size_t row = (size_t) nb * 210;
  for (int64_t g = 0; g < m / 8; g++)
    for (int64_t i = 0; i < nb; i++)
      {
        const unsigned char *o = raw + g * 8 * row + i * 8 * 210;
        for (int r = 0; r < 8; r++)
          {
            const unsigned char *blk = plain + (g * 8 + r) * row + i * 210;
            if (memcmp (o + 2 * r, blk + 208, 2) != 0)
              return false;
            for (int sc = 0; sc < 16; sc++)
              {
                int h = sc / 8, s = sc % 8 / 2;
                if (o[16 + 32 * s + 2 * (2 * r + h) + sc % 2] != blk[192 + sc])
                  return false;
              }
            for (int j = 0; j < 8; j++)
              for (int h = 0; h < 2; h++)
                for (int b = 0; b < 4; b++)
                  {
                    int lane = 2 * r + h, e = 32 * j + 4 * h + b;
                    const unsigned char *v = o + 144 + 192 * j + 4 * lane + b;
                    for (int q = 0; q < 4; q++)
                      {
                        int u = plain_q6 (blk, e + 8 * q);
                        int lo = q < 2 ? v[0] >> (4 * q) & 15
                                       : v[64] >> (4 * (q - 2)) & 15;
                        int hi = v[128] >> (2 * q) & 3;
                        if ((lo | hi << 4) != u)
                          return false;
                      }
                  }
          }
      }
  return true;
}

/* q4_K, q5_K: row R's d, dmin and 12 scale bytes (the first 16 of its
   plain block BLK) in the group's first 128 bytes at O: the d at 2R,
   the dmin at 16 + 2R, bytes 4w .. 4w + 3 of the scales at 32 + 32w +
   4R.  */
static bool
k4_head_ok (const unsigned char *o, const unsigned char *blk, int r)
{
  if (memcmp (o + 2 * r, blk, 2) != 0
      || memcmp (o + 16 + 2 * r, blk + 2, 2) != 0)
    return false;
  for (int w = 0; w < 3; w++)
    if (memcmp (o + 32 + 32 * w + 4 * r, blk + 4 + 4 * w, 4) != 0)
      return false;
  return true;
}

/* q5_K: the stored 5-bit value of element E of a plain super-block:
   d, dmin, scales[12], qh[32], qs[128].  */
static int
plain_q5 (const unsigned char *blk, int e)
{
  int byte = blk[48 + 32 * (e / 64) + e % 32];
  int lo = e / 32 % 2 ? byte >> 4 : byte & 15;
  return lo | (blk[16 + e % 32] >> (e / 32) & 1) << 4;
}

static bool
layout_ok_q5_K (const unsigned char *raw, const unsigned char *plain,
                int64_t k, int64_t m)
{
  int64_t nb = k / 256;
  size_t row = (size_t) nb * 176;
  for (int64_t g = 0; g < m / 8; g++)
    for (int64_t i = 0; i < nb; i++)
      {
        const unsigned char *o = raw + g * 8 * row + i * 8 * 176;
        for (int r = 0; r < 8; r++)
          {
            const unsigned char *blk = plain + (g * 8 + r) * row + i * 176;
            if (!k4_head_ok (o, blk, r))
              return false;
            for (int j = 0; j < 8; j++)
              for (int h = 0; h < 2; h++)
                for (int b = 0; b < 4; b++)
                  {
                    int lane = 2 * r + h, e = 32 * j + 4 * h + b;
                    const unsigned char *pair = o + 128 + 320 * (j / 2);
                    int v0 = pair[128 * (j % 2) + 4 * lane + b];
                    int v1 = pair[128 * (j % 2) + 64 + 4 * lane + b];
                    int hb = pair[256 + 4 * lane + b] >> (4 * (j % 2));
                    int got[4] = { v0 & 15, v0 >> 4, v1 & 15, v1 >> 4 };
                    for (int q = 0; q < 4; q++)
                      if ((got[q] | (hb >> q & 1) << 4)
                          != plain_q5 (blk, e + 8 * q))
                        return false;
                  }
          }
      }
  return true;
}

/* iq4_xs: the 4-bit index of element E of a plain super-block: d,
   scales_h[2], scales_l[4], qs[128] (group j's 16 bytes at 8 + 16j,
   element l < 16 of the group in the low nibble of byte l, 16 + l in
   its high one).  */
static int
plain_xs (const unsigned char *blk, int e)
{
  int byte = blk[8 + 16 * (e / 32) + e % 16];
  return e % 32 < 16 ? byte & 15 : byte >> 4;
}

static bool
layout_ok_iq4_xs (const unsigned char *raw, const unsigned char *plain,
                  int64_t k, int64_t m)
{
  int64_t nb = k / 256;
  size_t row = (size_t) nb * 136;
  for (int64_t g = 0; g < m / 8; g++)
    for (int64_t i = 0; i < nb; i++)
      {
        const unsigned char *o = raw + g * 8 * row + i * 8 * 136;
        for (int r = 0; r < 8; r++)
          {
            const unsigned char *blk = plain + (g * 8 + r) * row + i * 136;
            if (memcmp (o + 2 * r, blk, 2) != 0
                || memcmp (o + 16 + 4 * r, blk + 4, 4) != 0
                || memcmp (o + 48 + 2 * r, blk + 2, 2) != 0)
              return false;
            for (int j = 0; j < 8; j++)
              for (int h = 0; h < 2; h++)
                for (int b = 0; b < 4; b++)
                  {
                    int lane = 2 * r + h, e = 32 * j + 4 * h + b;
                    int v0 = o[64 + 128 * j + 4 * lane + b];
                    int v1 = o[128 + 128 * j + 4 * lane + b];
                    if ((v0 & 15) != plain_xs (blk, e)
                        || v0 >> 4 != plain_xs (blk, e + 8)
                        || (v1 & 15) != plain_xs (blk, e + 16)
                        || v1 >> 4 != plain_xs (blk, e + 24))
                      return false;
                  }
          }
      }
  return true;
}

static bool
layout_ok_q4_K (const unsigned char *raw, const unsigned char *plain,
                int64_t k, int64_t m)
{
  int64_t nb = k / 256;
  size_t row = (size_t) nb * 144;
  for (int64_t g = 0; g < m / 8; g++)
    for (int64_t i = 0; i < nb; i++)
      {
        const unsigned char *o = raw + g * 8 * row + i * 8 * 144;
        for (int r = 0; r < 8; r++)
          {
            const unsigned char *blk = plain + (g * 8 + r) * row + i * 144;
            if (!k4_head_ok (o, blk, r))
              return false;
            for (int j = 0; j < 8; j++)
              for (int h = 0; h < 2; h++)
                for (int b = 0; b < 4; b++)
                  {
                    int lane = 2 * r + h, e = 32 * j + 4 * h + b;
                    int v0 = o[128 + 128 * j + 4 * lane + b];
                    int v1 = o[192 + 128 * j + 4 * lane + b];
                    if ((v0 & 15) != plain_nibble_k (blk, e)
                        || v0 >> 4 != plain_nibble_k (blk, e + 8)
                        || (v1 & 15) != plain_nibble_k (blk, e + 16)
                        || v1 >> 4 != plain_nibble_k (blk, e + 24))
                      return false;
                  }
          }
      }
  return true;
}

/* Whether the stored bytes RAW of K x M weights of TYPE are PLAIN in
   the documented layout.  */
static bool
layout_ok (tsr_type type, const unsigned char *raw,
           const unsigned char *plain, int64_t k, int64_t m)
{
  if (type == TSR_TYPE_Q4_K)
    return layout_ok_q4_K (raw, plain, k, m);
  if (type == TSR_TYPE_Q5_K)
    return layout_ok_q5_K (raw, plain, k, m);
  if (type == TSR_TYPE_IQ4_XS)
    return layout_ok_iq4_xs (raw, plain, k, m);
  if (type == TSR_TYPE_Q6_K)
    return layout_ok_q6_K (raw, plain, k, m);
  const bool q8 = type == TSR_TYPE_Q8_0;
  /* q4_1: the minimums after the scales, the vectors 16 bytes on, the
     nibbles 2 bytes on in a plain block.  */
  const bool mins = type == TSR_TYPE_Q4_1 || type == TSR_TYPE_Q5_1;
  /* q5_0, q5_1: 4 bytes of fifth bits (qh) before the nibbles in a
     plain block, 4 masks of 8 bytes (bit 8r + 4h + b of mask s for
     element 8s + 4h + b of row r) before the vectors.  */
  const bool five = type == TSR_TYPE_Q5_0 || type == TSR_TYPE_Q5_1;
  /* mxfp4: one E8M0 byte a block, 8 a group's block, then the vectors;
     iq4_nl as q4_0.  */
  const bool e8 = type == TSR_TYPE_MXFP4;
  const size_t bb = q8 ? 34 : e8 ? 17 : 18 + (mins ? 2 : 0) + (five ? 4 : 0);
  const int mo = mins ? 32 : e8 ? 8 : 16, vo = mo - 16 + (five ? 32 : 0);
  const int qh = mins ? 4 : e8 ? 1 : 2;
  int64_t nb = k / 32;
  size_t row = (size_t) nb * bb;
  for (int64_t g = 0; g < m / 8; g++)
    for (int64_t j = 0; j < nb; j++)
      {
        const unsigned char *o = raw + g * 8 * row + j * 8 * bb;
        for (int r = 0; r < 8; r++)
          {
            const unsigned char *blk = plain + (g * 8 + r) * row + j * bb;
            if (e8 ? o[r] != blk[0] : memcmp (o + 2 * r, blk, 2) != 0)
              return false;
            if (mins && memcmp (o + 16 + 2 * r, blk + 2, 2) != 0)
              return false;
            for (int h = 0; h < 2; h++)
              for (int b = 0; b < 4; b++)
                {
                  int lane = 2 * r + h, e = 4 * h + b;
                  if (q8)
                    {
                      for (int v = 0; v < 4; v++)
                        if (o[16 + 64 * v + 4 * lane + b]
                            != (int8_t) blk[2 + 8 * v + e] + 128)
                          return false;
                      continue;
                    }
                  int v0 = o[vo + 16 + 4 * lane + b];
                  int v1 = o[vo + 80 + 4 * lane + b];
                  const unsigned char *nib = blk + qh - 2 + (five ? 4 : 0);
                  if ((v0 & 15) != plain_nibble (nib, e)
                      || v0 >> 4 != plain_nibble (nib, 8 + e)
                      || (v1 & 15) != plain_nibble (nib, 16 + e)
                      || v1 >> 4 != plain_nibble (nib, 24 + e))
                    return false;
                  for (int v = 0; five && v < 4; v++)
                    {
                      int x = 8 * v + e, at = 4 * lane + b;
                      if ((o[mo + 8 * v + at / 8] >> at % 8 & 1)
                          != (blk[qh + x / 8] >> x % 8 & 1))
                        return false;
                    }
                }
          }
      }
  return true;
}

static void
check_storage (tsr_buffer_type *buft, tsr_type type, int64_t k, int64_t m)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_buffer *buf = NULL;
  tsr_tensor *t = placed (ctx, buft, type, k, m, 1, &buf);
  char what[96];
  snprintf (what, sizeof what, "%s [%ld, %ld]", tsr_type_name (type),
            (long) k, (long) m);
  CHECK (t != NULL, "%s: placed in CPU_REPACK%s%s", what, t ? "" : ": ",
         t ? "" : tsr_last_error ());
  if (!t)
    {
      tsr_context_free (ctx);
      return;
    }
  size_t size = tsr_nbytes (t);
  unsigned char *plain = random_rows (type, k * m);
  unsigned char *shadow = malloc (size), *got = malloc (size);
  memcpy (shadow, plain, size);

  int st = tsr_tensor_set (t, plain, 0, size);
  st = st == TSR_OK ? tsr_tensor_get (t, got, 0, size) : st;
  CHECK (st == TSR_OK && memcmp (got, plain, size) == 0,
         "%s: the whole tensor reads back as written", what);
  bool packed = tsr_buffer_type_repacks (buft, type, k, m);
  const unsigned char *raw = tsr_buffer_base (buf);
  if (packed)
    CHECK (layout_ok (type, raw, plain, k, m), "%s: stored in the "
           "documented repacked layout", what);
  else
    CHECK (memcmp (raw, plain, size) == 0, "%s: stored plain", what);

  /* Random ranges: writes of random bytes, reads compared.  */
  bool ok = true;
  for (int i = 0; i < 300 && ok; i++)
    {
      size_t off = (size_t) rand () % size;
      size_t len = 1 + (size_t) rand () % (i % 3 == 0 ? size - off
                                           : (size - off < 300
                                              ? size - off : 300));
      if (i % 2 == 0)
        {
          for (size_t q = 0; q < len; q++)
            got[q] = (unsigned char) (rand () & 255);
          memcpy (shadow + off, got, len);
          ok = tsr_tensor_set (t, got, off, len) == TSR_OK;
        }
      else
        ok = tsr_tensor_get (t, got, off, len) == TSR_OK
             && memcmp (got, shadow + off, len) == 0;
    }
  ok = ok && tsr_tensor_get (t, got, 0, size) == TSR_OK
       && memcmp (got, shadow, size) == 0;
  CHECK (ok, "%s: 300 random partial writes and reads match a plain copy",
         what);

  static const unsigned char values[] = { 0x00, 0x5a, 0xf3 };
  for (int v = 0; v < 3; v++)
    {
      tsr_buffer_clear (buf, values[v]);
      memset (shadow, values[v], size);
      CHECK (tsr_tensor_get (t, got, 0, size) == TSR_OK
             && memcmp (got, shadow, size) == 0,
             "%s: cleared to 0x%02x, reads back 0x%02x everywhere", what,
             values[v], values[v]);
    }
  free (plain);
  free (shadow);
  free (got);
  tsr_buffer_free (buf);
  tsr_context_free (ctx);
}

/* mul_mat of K x M (x B) q4_0 weights by N activation rows, repacked
   against plain.  */
static void
check_mul_mat (tsr_backend *be, tsr_buffer_type *buft, tsr_type type,
               int64_t k, int64_t m, int64_t n, int64_t batch)
{
  char what[96];
  snprintf (what, sizeof what, "mul_mat %s [%ld, %ld, %ld] x %ld rows",
            tsr_type_name (type), (long) k, (long) m, (long) batch,
            (long) n);
  size_t wsize = tsr_row_size (type, k) * (size_t) (m * batch);
  unsigned char *w = random_rows (type, k * m * batch);
  float *x = malloc ((size_t) (k * n * batch) * sizeof *x);
  float *res[2];
  for (int64_t i = 0; i < k * n * batch; i++)
    x[i] = tsr_test_uniform (-1.0f, 1.0f);
  bool ok = true;

  for (int pass = 0; pass < 2; pass++)
    {
      tsr_context *ctx = tsr_context_new (true);
      tsr_buffer *wbuf = NULL;
      tsr_tensor *a = pass == 0
                      ? placed (ctx, buft, type, k, m, batch, &wbuf)
                      : tsr_new_tensor_3d (ctx, type, k, m, batch);
      tsr_tensor *b = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, k, n, batch);
      tsr_tensor *r = a && b ? tsr_mul_mat (ctx, a, b) : NULL;
      tsr_graph *g = NULL;
      tsr_gallocr *ga = NULL;
      res[pass] = malloc ((size_t) (m * n * batch) * sizeof (float));
      int st = r ? ot_allocate (be, ctx, r, &g, &ga) : TSR_ERR_INVALID_ARG;
      if (st == TSR_OK)
        st = tsr_tensor_set (a, w, 0, wsize);
      if (st == TSR_OK)
        st = tsr_tensor_set (b, x, 0, tsr_nbytes (b));
      if (st == TSR_OK)
        st = tsr_backend_graph_compute (be, g);
      if (st == TSR_OK)
        st = tsr_tensor_get (r, res[pass], 0, tsr_nbytes (r));
      if (st != TSR_OK)
        {
          CHECK (0, "%s (%s): computes: %s", what,
                 pass ? "plain" : "repacked", tsr_last_error ());
          ok = false;
        }
      tsr_gallocr_free (ga);
      if (wbuf)
        tsr_buffer_free (wbuf);
      tsr_context_free (ctx);
    }
  if (ok)
    {
      double worst = 0;
      float *wf = malloc ((size_t) k * sizeof *wf);
      size_t row = tsr_row_size (type, k);
      int64_t nb = k / 32;
      for (int64_t bi = 0; bi < batch && ok; bi++)
        for (int64_t i = 0; i < m; i++)
          {
            tsr_dequantize_row (type, w + (bi * m + i) * row, wf, k);
            for (int64_t j = 0; j < n; j++)
              {
                const float *xr = x + (bi * n + j) * k;
                double mag = 0, qerr = 0;
                for (int64_t e = 0; e < k; e++)
                  mag += fabs ((double) wf[e] * xr[e]);
                /* From n = gemm_n the plain weights go through the f32
                   GEMM, which does not quantize the activations: add
                   what q8_0 (q8_K) rounding moves, |w_i| d_y / 2 per
                   element, d_y = (the largest |x| of the block of 32,
                   or 256) / 127.  */
                const bool kq = type == TSR_TYPE_Q4_K
                                || type == TSR_TYPE_Q5_K
                                || type == TSR_TYPE_Q6_K
                                || type == TSR_TYPE_IQ4_XS;
                const int64_t qb = kq ? 256 : 32;
                const int64_t gemm_n = kq ? 320 : 80;
                for (int64_t e0 = 0; n >= gemm_n && e0 < k; e0 += qb)
                  {
                    double amax = 0, wsum = 0;
                    for (int64_t e = e0; e < e0 + qb; e++)
                      {
                        amax = fmax (amax, fabs (xr[e]));
                        wsum += fabs (wf[e]);
                      }
                    qerr += wsum * amax / 254 * (1 + 0x1p-7);
                  }
                double tol = (nb + 8) * 0x1p-23 * mag * (1 + 0x1p-7) + qerr
                             + 1e-30;
                size_t at = (size_t) ((bi * n + j) * m + i);
                double d = fabs ((double) res[0][at] - res[1][at]) / tol;
                if (!(d <= 1))
                  {
                    CHECK (0, "%s: row %ld column %ld: %.9g repacked, "
                           "%.9g plain", what, (long) i, (long) j,
                           res[0][at], res[1][at]);
                    ok = false;
                    break;
                  }
                worst = d > worst ? d : worst;
              }
            if (!ok)
              break;
          }
      free (wf);
      CHECK (ok, "%s: repacked equals plain within the bound (worst %.2f "
             "of it)", what, worst);
    }
  free (res[0]);
  free (res[1]);
  free (w);
  free (x);
}

/* get_rows of K x M (x B) weights of TYPE in BUFT: each batch's rows
   in a shuffled order, some twice, against the reference's
   dequantization of the plain rows.  */
static void
check_get_rows (tsr_backend *be, tsr_buffer_type *buft, tsr_type type,
                int64_t k, int64_t m, int64_t batch)
{
  char what[96];
  snprintf (what, sizeof what, "get_rows %s [%ld, %ld, %ld]",
            tsr_type_name (type), (long) k, (long) m, (long) batch);
  const int64_t n = m + 3;
  const size_t row = tsr_row_size (type, k);
  unsigned char *w = random_rows (type, k * m * batch);
  int32_t *idv = malloc ((size_t) (n * batch) * sizeof *idv);
  float *got = malloc ((size_t) (k * n * batch) * sizeof *got);
  float *want = malloc ((size_t) k * sizeof *want);
  for (int64_t bi = 0; bi < batch; bi++)
    {
      int32_t *ix = idv + bi * n;
      for (int64_t i = 0; i < m; i++)
        ix[i] = (int32_t) i;
      for (int64_t i = m - 1; i > 0; i--)
        {
          int64_t j = rand () % (i + 1);
          int32_t t = ix[i];
          ix[i] = ix[j];
          ix[j] = t;
        }
      for (int64_t i = m; i < n; i++)
        ix[i] = (int32_t) (rand () % m);
    }
  tsr_context *ctx = tsr_context_new (true);
  tsr_buffer *buf = NULL;
  tsr_tensor *a = placed (ctx, buft, type, k, m, batch, &buf);
  tsr_tensor *ids = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, n, batch);
  tsr_tensor *r = a && ids ? tsr_get_rows (ctx, a, ids) : NULL;
  tsr_graph *g = NULL;
  tsr_gallocr *ga = NULL;
  CHECK (r && tsr_backend_supports_op (be, r),
         "%s: repacked weights, supported by the CPU backend", what);
  int st = r ? ot_allocate (be, ctx, r, &g, &ga) : TSR_ERR_INVALID_ARG;
  if (st == TSR_OK)
    st = tsr_tensor_set (a, w, 0, row * (size_t) (m * batch));
  if (st == TSR_OK)
    st = tsr_tensor_set (ids, idv, 0, tsr_nbytes (ids));
  if (st == TSR_OK)
    st = tsr_backend_graph_compute (be, g);
  if (st == TSR_OK)
    st = tsr_tensor_get (r, got, 0, tsr_nbytes (r));
  CHECK (st == TSR_OK, "%s: computes (%s)", what,
         st == TSR_OK ? "ok" : tsr_last_error ());
  int64_t bad = -1;
  for (int64_t bi = 0; st == TSR_OK && bad < 0 && bi < batch; bi++)
    for (int64_t i = 0; bad < 0 && i < n; i++)
      {
        tsr_dequantize_row (type, w + (size_t) (bi * m + idv[bi * n + i])
                                      * row, want, k);
        if (memcmp (want, got + (bi * n + i) * k, (size_t) k * sizeof *want))
          bad = bi * n + i;
      }
  CHECK (st == TSR_OK && bad < 0, "%s: every row (%ld picks) as the "
         "reference dequantizes it, bit for bit%s", what,
         (long) (n * batch), bad < 0 ? "" : " (a pick differs)");
  tsr_gallocr_free (ga);
  if (buf)
    tsr_buffer_free (buf);
  tsr_context_free (ctx);
  free (want);
  free (got);
  free (idv);
  free (w);
}

/* Ops that cannot read the repacked bytes are refused.  */
static void
check_refusals (tsr_backend *be, tsr_buffer_type *buft)
{
  const int64_t k = 64, m = 16;
  tsr_context *ctx = tsr_context_new (true);
  tsr_buffer *buf = NULL;
  tsr_tensor *a = placed (ctx, buft, TSR_TYPE_Q4_0, k, m, 1, &buf);
  tsr_tensor *sq = a ? tsr_cast (ctx, a, TSR_TYPE_F32) : NULL;
  CHECK (sq && !tsr_backend_supports_op (be, sq),
         "cast of repacked weights: not supported by the CPU backend");
  tsr_tensor *v = a ? tsr_view_2d (ctx, a, k, 8, a->nb[1], 0) : NULL;
  tsr_tensor *ids = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 2);
  tsr_tensor *rows = v ? tsr_get_rows (ctx, v, ids) : NULL;
  CHECK (rows && !tsr_backend_supports_op (be, rows),
         "get_rows of a view of repacked weights: not supported");
  if (rows)
    {
      tsr_graph *g = NULL;
      tsr_gallocr *ga = NULL;
      int st = ot_allocate (be, ctx, rows, &g, &ga);
      int32_t idv[2] = { 0, 3 };
      if (st == TSR_OK)
        st = tsr_tensor_set (ids, idv, 0, sizeof idv);
      if (st == TSR_OK)
        st = tsr_backend_graph_compute (be, g);
      CHECK (st != TSR_OK && *tsr_last_error (),
             "get_rows of a view of repacked weights: compute refuses (%s)",
             tsr_last_error ());
      tsr_gallocr_free (ga);
    }
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, k, 1);
  tsr_tensor *mm = v ? tsr_mul_mat (ctx, v, x) : NULL;
  CHECK (mm && !tsr_backend_supports_op (be, mm),
         "mul_mat of a view of repacked weights: not supported");
  tsr_gallocr *ga = NULL;
  if (v && !v->data)
    {
      /* A view gets its memory when its graph is allocated.  */
      tsr_graph *g = tsr_graph_new (ctx);
      ga = tsr_gallocr_new (tsr_backend_buffer_type (be));
      if (g && ga && tsr_graph_build (g, mm) == TSR_OK)
        tsr_gallocr_alloc_graph (ga, g);
    }
  unsigned char bytes[36] = { 0 };
  CHECK (v && v->data && tsr_tensor_set (v, bytes, 0, sizeof bytes)
                         == TSR_ERR_UNSUPPORTED,
         "a write through a view of repacked weights is refused (%s)",
         tsr_last_error ());
  tsr_gallocr_free (ga);
  if (buf)
    tsr_buffer_free (buf);
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_test_seed (20261126);
  srand (20261126);
  tsr_backend *be = ot_backend ();
  if (!be)
    return 1;
  tsr_buffer_type *buft = repack_buft (be);
  if (!buft)
    {
      tsr_test_unsupported ("CPU_REPACK: the CPU's level (%s) has no "
                            "vector code for it",
                            tsr_device_description (tsr_backend_device
                                                    (be)));
      tsr_backend_free (be);
      return 0;
    }
  CHECK (strcmp (tsr_buffer_type_name (buft), "CPU_REPACK") == 0
         && !tsr_buffer_type_is_host (buft)
         && tsr_device_supports_buffer_type (tsr_backend_device (be), buft),
         "the CPU offers CPU_REPACK (not host memory, supported by it)");

  CHECK (tsr_buffer_type_repacks (buft, TSR_TYPE_Q4_0, 4096, 16)
         && !tsr_buffer_type_repacks (buft, TSR_TYPE_Q4_0, 4096, 12)
         && !tsr_buffer_type_repacks (buft, TSR_TYPE_Q3_K, 4096, 16)
         && !tsr_buffer_type_repacks (buft, TSR_TYPE_F16, 4096, 16)
         && !tsr_buffer_type_repacks (tsr_backend_buffer_type (be),
                                      TSR_TYPE_Q4_0, 4096, 16),
         "CPU_REPACK repacks q4_0 with rows in multiples of 8, not other "
         "shapes, q3_K, f16, nor does the host buffer type");
  check_storage (buft, TSR_TYPE_Q4_0, 64, 16);
  check_storage (buft, TSR_TYPE_Q4_0, 1056, 24);
  check_storage (buft, TSR_TYPE_Q4_0, 96, 12);   /* not a multiple of 8 */
  check_storage (buft, TSR_TYPE_Q8_0, 64, 16);
  check_storage (buft, TSR_TYPE_Q8_0, 1056, 24);
  check_storage (buft, TSR_TYPE_Q8_0, 64, 20);
  check_storage (buft, TSR_TYPE_Q4_K, 256, 16);
  check_storage (buft, TSR_TYPE_Q4_K, 768, 24);
  check_storage (buft, TSR_TYPE_Q5_K, 256, 16);
  check_storage (buft, TSR_TYPE_Q5_K, 768, 24);
  check_storage (buft, TSR_TYPE_Q5_K, 512, 12);  /* not a multiple of 8 */
  check_storage (buft, TSR_TYPE_IQ4_XS, 256, 16);
  check_storage (buft, TSR_TYPE_IQ4_XS, 768, 24);
  check_storage (buft, TSR_TYPE_Q6_K, 256, 16);
  check_storage (buft, TSR_TYPE_Q6_K, 768, 24);
  check_storage (buft, TSR_TYPE_Q6_K, 512, 20);  /* not a multiple of 8 */
  check_storage (buft, TSR_TYPE_Q4_1, 64, 16);
  check_storage (buft, TSR_TYPE_Q4_1, 1056, 24);
  check_storage (buft, TSR_TYPE_Q5_0, 64, 16);
  check_storage (buft, TSR_TYPE_Q5_0, 1056, 24);
  check_storage (buft, TSR_TYPE_Q5_1, 64, 16);
  check_storage (buft, TSR_TYPE_Q5_1, 1056, 24);
  check_storage (buft, TSR_TYPE_IQ4_NL, 64, 16);
  check_storage (buft, TSR_TYPE_IQ4_NL, 1056, 24);
  check_storage (buft, TSR_TYPE_MXFP4, 64, 16);
  check_storage (buft, TSR_TYPE_MXFP4, 1056, 24);
  check_storage (buft, TSR_TYPE_Q3_K, 256, 16);  /* other types: plain */

  static const tsr_type mtypes[] = { TSR_TYPE_Q4_0, TSR_TYPE_Q4_1,
                                      TSR_TYPE_Q5_0, TSR_TYPE_Q5_1,
                                      TSR_TYPE_Q8_0, TSR_TYPE_IQ4_NL,
                                      TSR_TYPE_MXFP4, TSR_TYPE_Q4_K,
                                      TSR_TYPE_Q5_K, TSR_TYPE_Q6_K,
                                      TSR_TYPE_IQ4_XS };
  static const int64_t ns[] = { 1, 2, 3, 5, 8, 9, 16, 17, 33, 40, 64 };
  for (int t = 0; t < 11; t++)
    {
      for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        check_mul_mat (be, buft, mtypes[t], 256, 24, ns[i], 1);
      const bool kq = mtypes[t] == TSR_TYPE_Q4_K || mtypes[t] == TSR_TYPE_Q5_K
                      || mtypes[t] == TSR_TYPE_Q6_K
                      || mtypes[t] == TSR_TYPE_IQ4_XS;
      int64_t k0 = kq ? 256 : 32;
      if (kq)
        check_mul_mat (be, buft, mtypes[t], 5 * k0, 24, 9, 1);
      check_mul_mat (be, buft, mtypes[t], k0, 8, 4, 1);
      check_mul_mat (be, buft, mtypes[t], 2 * k0, 32, 13, 1);
      check_mul_mat (be, buft, mtypes[t], 4 * k0, 64, 13, 1);
      check_mul_mat (be, buft, mtypes[t], 33 * k0 / 32 * 32, 40, 7, 1);
      check_mul_mat (be, buft, mtypes[t], 4096, 64, 12, 1);
      check_mul_mat (be, buft, mtypes[t], 4 * k0, 16, 5, 3);  /* batched */
      if (tsr_buffer_type_repacks (buft, mtypes[t], 2 * k0, 24))
        {
          check_get_rows (be, buft, mtypes[t], 2 * k0, 24, 1);
          check_get_rows (be, buft, mtypes[t], k0, 16, 3);  /* batched */
        }
    }
  check_refusals (be, buft);

  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
