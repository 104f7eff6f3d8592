/* cuda-mmvq.cu - matrix-vector products on 8-bit activations, in
 * integer dot products (dp4a), for every weight type but q2_K and
 * q3_K (and the float ones).
 *
 * Token generation reads every weight once per token; what limits a
 * kernel that converts each weight to a float and multiplies it with
 * an f32 activation is the work per element (measured on an H200: the
 * staged kernel of cuda-quant.cu ran 1.5 T elements/s whether the
 * weights were q8_0 or q4_0, 0.9 to 1.5 TB/s of the card's 4).  Here
 * the activations are first rounded, 32 at a time, to 8-bit integers
 * with an f32 scale, as the CPU backend rounds them for these weights
 * (q = round (x / d), d = amax / 127; the scale is kept in f32 rather
 * than f16), together with the scaled sum of each block's integers;
 * then each lane of a warp takes whole units of its row (a weight
 * block, or a group of 32 or 64 elements of a super-block: struct
 * unit below, one per type) and multiplies four weights by four
 * activations per dp4a instruction, e.g.
 *
 *   q8_0:  sum_i w_i x_i = d_w d_x sum_i q_i p_i
 *   q4_0:  sum_i (q_i - 8) d_w x_i = d_w (d_x sum_i q_i p_i - 8 s_x),
 *          s_x = d_x sum_i p_i
 *
 * Table types (iq4_nl, iq4_xs, mxfp4) turn their 4-bit codes into
 * signed bytes with two byte permutations before the dot product.
 * The sums of a lane's units are f32, then the warp's; a long row is
 * shared by up to 4 warps, their sums added in a fixed order.  One
 * kernel computes a set of products of the same activations
 * (cuda-fuse.c) and the gated unit of a pair, as the kernels of
 * cuda-quant.cu do.  The measured speed of every type is in the
 * manual's CUDA section (NEWS has the figures).  */
#include "cuda-common.cuh"

#define MMVQ_WARPS 4            /* warps per thread block */

/* Rounding, a warp per block of 32 activations: Q the integers, DS the
   scale and the scaled sum (f32 pairs), column after column.  */
static __global__ void
k_quantize_q8 (const char *x, int64_t nb1, int64_t k, int ncols,
               signed char *q, float2 *ds)
{
  const int lane = threadIdx.x % 32;
  const int64_t nblocks = k / CU_QK;
  const int64_t total = nblocks * ncols;

  tsr_cuda_pdl_begin ();
  for (int64_t blk = (int64_t) blockIdx.x * (blockDim.x / 32)
                     + threadIdx.x / 32;
       blk < total; blk += (int64_t) gridDim.x * (blockDim.x / 32))
    {
      int64_t c = blk / nblocks, i = blk % nblocks;
      tsr_cuda_warp_q8 (((const float *) (x + c * nb1))[i * CU_QK + lane],
                        q, ds, blk);
    }
}

/* The four bytes of the 2-byte aligned weight bytes at P (as 16-bit
   words) as one int.  */
static __device__ inline int
int_at (const uint16_t *p)
{
  return (int) ((uint32_t) __ldg (p) | ((uint32_t) __ldg (p + 1) << 16));
}

/* The 32 activations of a block (16-byte aligned) as 8 ints.  */
static __device__ inline void
load_x (const int4 *q, int x[8])
{
  const int4 a = __ldg (q), b = __ldg (q + 1);
  x[0] = a.x; x[1] = a.y; x[2] = a.z; x[3] = a.w;
  x[4] = b.x; x[5] = b.y; x[6] = b.z; x[7] = b.w;
}

/* Bit I (I < 4) of H at bit 4 of byte I: the fifth bits of q5_0 and
   q5_1 for four consecutive elements.  */
static __device__ inline int
fifth_bits (uint32_t h)
{
  return (int) (((h & 1) << 4) | ((h & 2) << 11) | ((h & 4) << 18)
                | ((h & 8) << 25));
}

/* Four bytes as an int, byte A lowest (for the tables below).  */
static __host__ __device__ constexpr int
pack4 (int a, int b, int c, int d)
{
  return (int) ((uint32_t) (a & 0xff) | (uint32_t) (b & 0xff) << 8
                | (uint32_t) (c & 0xff) << 16 | (uint32_t) (d & 0xff) << 24);
}

/* The bytes T[V_0], T[V_1], T[V_2], T[V_3] of a 16-byte table T (four
   ints), V_i the indices (0-15) in V's bytes: two byte permutations
   pick from either half by the low three bits of each index, the
   fourth bit chooses between them.  */
static __device__ inline int
lookup16 (int v, const int t[4])
{
  const int s = v & 0x07070707;
  const int sel = (s & 7) | ((s >> 4) & 0x70) | ((s >> 8) & 0x700)
                  | ((s >> 12) & 0x7000);
  const int lo = (int) __byte_perm (t[0], t[1], sel);
  const int hi = (int) __byte_perm (t[2], t[3], sel);
  const int m = ((v >> 3) & 0x01010101) * 0xff;
  return (lo & ~m) | (hi & m);
}

/* The tables of lib/types/types-iq.c: iq4_nl's (and iq4_xs's) values,
   and twice mxfp4's E2M1 values.  */
#define IQ4NL_TABLE                                                       \
  { pack4 (-127, -104, -83, -65), pack4 (-49, -35, -22, -10),             \
    pack4 (1, 13, 25, 38), pack4 (53, 69, 89, 113) }
#define MXFP4_TABLE                                                       \
  { pack4 (0, 1, 2, 3), pack4 (4, 6, 8, 12), pack4 (0, -1, -2, -3),       \
    pack4 (-4, -6, -8, -12) }

/* The dot product of 32 weights with the integers X of an activation
   block whose low and high halves are nibbles of W (W[K] holding
   elements 4 K .. 4 K + 3 in its low nibbles and 16 + 4 K .. in its
   high ones), through the table T when given.  */
static __device__ inline int
nibble_dot (const int w[4], const int x[8], const int *t)
{
  int dot = 0;
#pragma unroll
  for (int k = 0; k < 4; k++)
    {
      int lo = w[k] & 0x0F0F0F0F, hi = (w[k] >> 4) & 0x0F0F0F0F;
      if (t)
        {
          lo = lookup16 (lo, t);
          hi = lookup16 (hi, t);
        }
      dot = __dp4a (lo, x[k], dot);
      dot = __dp4a (hi, x[k + 4], dot);
    }
  return dot;
}

/* A unit of a weight row: the part one lane multiplies at a time, SUBS
   activation blocks of 32 (1 or 2).  unit<TYPE>::dot (ROW, U, Q, DS) is
   sum_i w_i x_i over unit U of the row at ROW, Q the unit's first
   activation block's integers, DS its first scale pair (d_x, s_x =
   d_x sum_i p_i):
     q8_0    d_w d_x sum_i q_i p_i
     q4_0    d_w (d_x sum_i q_i p_i - 8 s_x)
     q4_1    d_w d_x sum_i q_i p_i + m s_x
     q5_0    d_w (d_x sum_i q_i p_i - 16 s_x)
     q5_1    d_w d_x sum_i q_i p_i + m s_x
     iq4_nl  d_w d_x sum_i T[q_i] p_i            (T the table above)
     mxfp4   e d_x sum_i T'[q_i] p_i             (e the E8M0 scale / 2)
     iq4_xs  dl d_x sum_i T[q_i] p_i, one 32-element group a unit
     q4_K, q5_K, q6_K: below.
   Blocks of 18, 22 and 34 bytes are read as 16-bit words, of 20 and 24
   as 32-bit words, mxfp4's 17 bytewise.  */
template <int TYPE> struct unit;

template <> struct unit<TSR_TYPE_Q8_0>
{
  enum { SUBS = 1 };
  static __device__ inline float
  dot (const char *row, int64_t u, const int4 *q, const float2 *ds)
  {
    const uint16_t *w = (const uint16_t *) (row + u * CU_Q8_BYTES);
    int x[8], dot = 0;
    load_x (q, x);
#pragma unroll
    for (int k = 0; k < 8; k++)
      dot = __dp4a (int_at (w + 1 + 2 * k), x[k], dot);
    return tsr_cuda_f16_to_f32 (__ldg (w)) * ds->x * (float) dot;
  }
};

template <> struct unit<TSR_TYPE_Q4_0>
{
  enum { SUBS = 1 };
  static __device__ inline float
  dot (const char *row, int64_t u, const int4 *q, const float2 *ds)
  {
    const uint16_t *w = (const uint16_t *) (row + u * CU_Q4_BYTES);
    int x[8], wq[4];
    load_x (q, x);
#pragma unroll
    for (int k = 0; k < 4; k++)
      wq[k] = int_at (w + 1 + 2 * k);
    const float2 e = *ds;
    return tsr_cuda_f16_to_f32 (__ldg (w))
           * (e.x * (float) nibble_dot (wq, x, NULL) - 8.0f * e.y);
  }
};

template <> struct unit<TSR_TYPE_Q4_1>
{
  enum { SUBS = 1 };
  static __device__ inline float
  dot (const char *row, int64_t u, const int4 *q, const float2 *ds)
  {
    const int bytes = tsr_cuda_block_bytes (TSR_TYPE_Q4_1);
    const int *w = (const int *) (row + u * bytes);
    int x[8], wq[4];
    load_x (q, x);
    const uint32_t dm = (uint32_t) __ldg (w);
#pragma unroll
    for (int k = 0; k < 4; k++)
      wq[k] = __ldg (w + 1 + k);
    const float2 e = *ds;
    return tsr_cuda_f16_to_f32 ((uint16_t) dm) * e.x
           * (float) nibble_dot (wq, x, NULL)
           + tsr_cuda_f16_to_f32 ((uint16_t) (dm >> 16)) * e.y;
  }
};

/* q5_0 and q5_1: the nibbles with their fifth bits (QH) as bytes 0-31,
   times X.  */
static __device__ inline int
q5_dot (const int w[4], uint32_t qh, const int x[8])
{
  int dot = 0;
#pragma unroll
  for (int k = 0; k < 4; k++)
    {
      int lo = (w[k] & 0x0F0F0F0F) | fifth_bits (qh >> (4 * k));
      int hi = ((w[k] >> 4) & 0x0F0F0F0F) | fifth_bits (qh >> (16 + 4 * k));
      dot = __dp4a (lo, x[k], dot);
      dot = __dp4a (hi, x[k + 4], dot);
    }
  return dot;
}

template <> struct unit<TSR_TYPE_Q5_0>
{
  enum { SUBS = 1 };
  static __device__ inline float
  dot (const char *row, int64_t u, const int4 *q, const float2 *ds)
  {
    const int bytes = tsr_cuda_block_bytes (TSR_TYPE_Q5_0);
    const uint16_t *w = (const uint16_t *) (row + u * bytes);
    int x[8], wq[4];
    load_x (q, x);
    const uint32_t qh = (uint32_t) int_at (w + 1);
#pragma unroll
    for (int k = 0; k < 4; k++)
      wq[k] = int_at (w + 3 + 2 * k);
    const float2 e = *ds;
    return tsr_cuda_f16_to_f32 (__ldg (w))
           * (e.x * (float) q5_dot (wq, qh, x) - 16.0f * e.y);
  }
};

template <> struct unit<TSR_TYPE_Q5_1>
{
  enum { SUBS = 1 };
  static __device__ inline float
  dot (const char *row, int64_t u, const int4 *q, const float2 *ds)
  {
    const int bytes = tsr_cuda_block_bytes (TSR_TYPE_Q5_1);
    const int *w = (const int *) (row + u * bytes);
    int x[8], wq[4];
    load_x (q, x);
    const uint32_t dm = (uint32_t) __ldg (w), qh = (uint32_t) __ldg (w + 1);
#pragma unroll
    for (int k = 0; k < 4; k++)
      wq[k] = __ldg (w + 2 + k);
    const float2 e = *ds;
    return tsr_cuda_f16_to_f32 ((uint16_t) dm) * e.x
           * (float) q5_dot (wq, qh, x)
           + tsr_cuda_f16_to_f32 ((uint16_t) (dm >> 16)) * e.y;
  }
};

template <> struct unit<TSR_TYPE_IQ4_NL>
{
  enum { SUBS = 1 };
  static __device__ inline float
  dot (const char *row, int64_t u, const int4 *q, const float2 *ds)
  {
    const int t[4] = IQ4NL_TABLE;
    const uint16_t *w = (const uint16_t *) (row + u * CU_Q4_BYTES);
    int x[8], wq[4];
    load_x (q, x);
#pragma unroll
    for (int k = 0; k < 4; k++)
      wq[k] = int_at (w + 1 + 2 * k);
    return tsr_cuda_f16_to_f32 (__ldg (w)) * ds->x
           * (float) nibble_dot (wq, x, t);
  }
};

template <> struct unit<TSR_TYPE_MXFP4>
{
  enum { SUBS = 1 };
  static __device__ inline float
  dot (const char *row, int64_t u, const int4 *q, const float2 *ds)
  {
    const int t[4] = MXFP4_TABLE;
    const int bytes = tsr_cuda_block_bytes (TSR_TYPE_MXFP4);
    const uint8_t *w = (const uint8_t *) (row + u * bytes);
    int x[8], wq[4];
    load_x (q, x);
#pragma unroll
    for (int k = 0; k < 4; k++)
      wq[k] = pack4 (__ldg (w + 1 + 4 * k), __ldg (w + 2 + 4 * k),
                     __ldg (w + 3 + 4 * k), __ldg (w + 4 + 4 * k));
    return tsr_cuda_e8m0_half (__ldg (w)) * ds->x
           * (float) nibble_dot (wq, x, t);
  }
};

/* iq4_xs: group J of 32 (8 a 136-byte block): scale bits in scales_l
   (4) and scales_h (2), dl = d (ls - 32), nibbles at 8 + 16 J (8-byte
   aligned in rows of whole blocks).  */
template <> struct unit<TSR_TYPE_IQ4_XS>
{
  enum { SUBS = 1 };
  static __device__ inline float
  dot (const char *row, int64_t u, const int4 *q, const float2 *ds)
  {
    const int t[4] = IQ4NL_TABLE;
    const char *blk = row + u / 8 * tsr_cuda_block_bytes (TSR_TYPE_IQ4_XS);
    const int j = (int) (u % 8);
    const uint32_t head = (uint32_t) __ldg ((const int *) blk);
    const uint8_t sl = __ldg ((const uint8_t *) blk + 4 + j / 2);
    const int ls = ((sl >> (4 * (j % 2))) & 0xf)
                   | (int) ((head >> (16 + 2 * j)) & 3) << 4;
    const int2 *qs = (const int2 *) (blk + 8 + 16 * j);
    const int2 a = __ldg (qs), b = __ldg (qs + 1);
    const int wq[4] = { a.x, a.y, b.x, b.y };
    int x[8];
    load_x (q, x);
    return tsr_cuda_f16_to_f32 ((uint16_t) head) * (float) (ls - 32)
           * ds->x * (float) nibble_dot (wq, x, t);
  }
};

/* q4_K and q5_K: a unit is a pair of 32-element sub-blocks of a
   256-element block (4 units a block), so that rows of 2048 elements
   still give every lane of a warp one.  A sub-block's values are
   d sc q - dmin m (6-bit sc and m from the 12 scale bytes):
     sum_i (d sc q_i - dmin m) x_i = d sc d_x sum_i q_i p_i - dmin m s_x
   Blocks are 144 (q4_K) and 176 (q5_K) bytes, so their words are
   16-byte aligned in rows of whole blocks.  */
template <int TYPE>
static __device__ inline float
kquant_unit (const char *blk, int p, const int4 *q, const float2 *ds)
{
  const uint32_t dd = *(const uint32_t *) blk;
  const float d = tsr_cuda_f16_to_f32 ((uint16_t) dd);
  const float dmin = tsr_cuda_f16_to_f32 ((uint16_t) (dd >> 16));
  const uint8_t *s = (const uint8_t *) blk + 4;
  int sc[2], m[2];
#pragma unroll
  for (int h = 0; h < 2; h++)
    {
      int j = 2 * p + h;
      if (j < 4)
        {
          sc[h] = s[j] & 63;
          m[h] = s[j + 4] & 63;
        }
      else
        {
          sc[h] = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
          m[h] = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
        }
    }
  const int qs_off = TYPE == TSR_TYPE_Q5_K ? 48 : 16;
  const int4 *qs = (const int4 *) (blk + qs_off + 32 * p);
  const int4 w0 = __ldg (qs), w1 = __ldg (qs + 1);
  const int w[8] = { w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w };
  int hb[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
  if (TYPE == TSR_TYPE_Q5_K)
    {
      const int4 *qh = (const int4 *) (blk + 16);
      const int4 h0 = __ldg (qh), h1 = __ldg (qh + 1);
      const int hv[8] = { h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w };
#pragma unroll
      for (int k = 0; k < 8; k++)
        hb[k] = hv[k];
    }
  int x0[8], x1[8];
  load_x (q, x0);
  load_x (q + 2, x1);
  int dot0 = 0, dot1 = 0;
#pragma unroll
  for (int k = 0; k < 8; k++)
    {
      int lo = w[k] & 0x0F0F0F0F, hi = (w[k] >> 4) & 0x0F0F0F0F;
      if (TYPE == TSR_TYPE_Q5_K)
        {
          lo |= ((hb[k] >> (2 * p)) & 0x01010101) << 4;
          hi |= ((hb[k] >> (2 * p + 1)) & 0x01010101) << 4;
        }
      dot0 = __dp4a (lo, x0[k], dot0);
      dot1 = __dp4a (hi, x1[k], dot1);
    }
  const float2 e0 = ds[0], e1 = ds[1];
  return d * ((float) sc[0] * e0.x * (float) dot0
              + (float) sc[1] * e1.x * (float) dot1)
         - dmin * ((float) m[0] * e0.y + (float) m[1] * e1.y);
}

/* The unit of q4_K and q5_K: sub-block pair U % 4 of block U / 4.  */
template <int TYPE> struct kquant_pair
{
  enum { SUBS = 2 };
  static __device__ inline float
  dot (const char *row, int64_t u, const int4 *q, const float2 *ds)
  {
    return kquant_unit<TYPE> (row + u / 4 * tsr_cuda_block_bytes (TYPE),
                              (int) (u % 4), q, ds);
  }
};

template <> struct unit<TSR_TYPE_Q4_K> : kquant_pair<TSR_TYPE_Q4_K> {};
template <> struct unit<TSR_TYPE_Q5_K> : kquant_pair<TSR_TYPE_Q5_K> {};

/* q6_K: a unit is one 32-element sub-block j (8 a block) of 256
   elements, 210 bytes (rows of whole blocks are only 2-byte aligned,
   so words are read as 16-bit pairs).  Element 32 j + l, with
   h = j / 4 and t = j % 4, has its low four bits in ql[64 h + 32 (t % 2)
   + l] (low nibble for t < 2, high else), its high two in qh[32 h + l]
   at bit 2 t, and the scale scales[2 j + l / 16]; its value is
   d sc (q - 32).  The bytes q - 32 fit in int8, so
     sum_l d sc_l (q_l - 32) x_l = d d_x (sc_0 sum_{l<16} (q_l - 32) p_l
                                         + sc_1 sum_{l>=16} ...).  */
template <> struct unit<TSR_TYPE_Q6_K>
{
  enum { SUBS = 1 };
  static __device__ inline float
  dot (const char *row, int64_t u, const int4 *q, const float2 *ds)
  {
    const int bytes = tsr_cuda_block_bytes (TSR_TYPE_Q6_K);
    const uint16_t *blk = (const uint16_t *) (row + u / 8 * bytes);
    const int j = (int) (u % 8), h = j / 4, t = j % 4;
    const uint16_t *ql = blk + (64 * h + 32 * (t % 2)) / 2;
    const uint16_t *qh = blk + (128 + 32 * h) / 2;
    const int lshift = 4 * (t / 2), hshift = 2 * t;
    const uint16_t sw = __ldg (blk + (192 + 2 * j) / 2);
    const int sc0 = (int) (signed char) (sw & 0xff);
    const int sc1 = (int) (signed char) (sw >> 8);
    const float d = tsr_cuda_f16_to_f32 (__ldg (blk + 208 / 2));
    int x[8], dot0 = 0, dot1 = 0;
    load_x (q, x);
#pragma unroll
    for (int k = 0; k < 8; k++)
      {
        int lo = (int_at (ql + 2 * k) >> lshift) & 0x0F0F0F0F;
        int hi = ((int_at (qh + 2 * k) >> hshift) & 0x03030303) << 4;
        int v = __vsubss4 (lo | hi, 0x20202020);
        if (k < 4)
          dot0 = __dp4a (v, x[k], dot0);
        else
          dot1 = __dp4a (v, x[k], dot1);
      }
    return d * ds->x * ((float) sc0 * (float) dot0
                        + (float) sc1 * (float) dot1);
  }
};

/* Every product of SET, NC activation columns: SPLIT warps (1, 2 or 4)
   per row, each taking every SPLIT-th run of 32 units of the row (so
   that long rows still have few units a lane, and more rows' loads are
   in flight), their sums added in shared memory in the order of the
   warps.  Units of a lane: strided by 32 SPLIT; the warps' partial sums
   are reduced by shuffles, then (SPLIT > 1) warp 0 of the row adds the
   others'.  Every warp reaches the barriers: a row past a matrix's end
   computes nothing and stores nothing.  */
template <int TYPE, int NC>
static __global__ void __launch_bounds__ (MMVQ_WARPS * 32)
k_mmvq (tsr_cuda_mmv_set set, const signed char *q, const float2 *ds,
        int64_t nsub, int split)
{
  typedef unit<TYPE> U;
  __shared__ float part_sum[MMVQ_WARPS][NC];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int part = warp % split;
  const int64_t row = (int64_t) blockIdx.x * (MMVQ_WARPS / split)
                      + warp / split;
  const int64_t nunits = nsub / U::SUBS;
  float first[NC];

  tsr_cuda_pdl_begin ();
#pragma unroll
  for (int m = 0; m < CU_MMV_MAX_SET; m++)
    {
      if (m >= set.n)
        break;
      const tsr_cuda_tdesc &a = set.a[m];
      const bool live = row < a.ne[1];
      float acc[NC];
#pragma unroll
      for (int c = 0; c < NC; c++)
        acc[c] = 0.0f;
      if (live)
        {
          const char *w = a.data + row * a.nb[1];
#pragma unroll 2
          for (int64_t u = lane + 32 * part; u < nunits; u += 32 * split)
#pragma unroll
            for (int c = 0; c < NC; c++)
              acc[c] += U::dot (w, u,
                                (const int4 *) (q + (c * nsub + U::SUBS * u)
                                                * CU_QK),
                                ds + c * nsub + U::SUBS * u);
        }
      if (split > 1)
        {
#pragma unroll
          for (int c = 0; c < NC; c++)
            {
              float s = tsr_cuda_warp_sum (acc[c]);
              if (lane == 0)
                part_sum[warp][c] = s;
            }
          __syncthreads ();
#pragma unroll
          for (int c = 0; c < NC; c++)
            {
              float s = part_sum[warp - part][c];
              for (int p = 1; p < split; p++)
                s += part_sum[warp - part + p][c];
              acc[c] = lane == 0 ? s : 0.0f;
            }
          __syncthreads ();
        }
      if (live && part == 0)
        tsr_cuda_mmv_store_row<NC> (set, m, row, acc, first);
    }
}

int
tsr_cuda_quantize_q8 (cudaStream_t st, struct tsr_cuda_tdesc b,
                      signed char *q, void *ds)
{
  int64_t total = b.ne[0] / CU_QK * b.ne[1];
  int64_t blocks = (total + 7) / 8;

  return tsr_cuda_launch (k_quantize_q8,
                          dim3 ((unsigned) (blocks < CU_MAX_BLOCKS
                                            ? blocks : CU_MAX_BLOCKS)),
                          dim3 (256), 0, st, (const char *) b.data, b.nb[1],
                          b.ne[0], (int) b.ne[1], q, (float2 *) ds);
}

/* Warps per row for ROWS rows of NUNITS units of TYPE: one, unless
   the rows alone leave the card short of warps (fewer than
   MMVQ_SPLIT_WARPS in all): then as many (up to 4, and up to the
   tuning's cap) as keep it at most that many, each lane at least two
   units.  q8_0 rows are not split.  Measured on an H200 (weight GB/s,
   one warp a row -> split): 2048 x 8192 q4_0 572 -> 629 (4 warps),
   q4_K 594 -> 659 (2), q8_0 1021 -> 963 (4); 14336 x 4096 (rows
   enough) q4_0 1409 -> 1313 (2), q8_0 1959 -> 1811 (2).  */
#define MMVQ_SPLIT_WARPS 8192
static int
split_for (int type, int64_t nunits, int64_t rows)
{
  int cap = type == TSR_TYPE_Q8_0 ? 1 : tsr_cuda_get_tuning ().mmvq_split;
  int split = 1;

  if (cap < 1 || cap > MMVQ_WARPS)
    cap = MMVQ_WARPS;
  while (split * 2 <= cap && nunits >= 64 * split * 2
         && rows * split * 2 <= MMVQ_SPLIT_WARPS)
    split *= 2;
  return split;
}

template <int TYPE>
static int
mmvq (cudaStream_t st, int64_t rows, const tsr_cuda_mmv_set &set,
      const signed char *q, const float2 *ds, int64_t nsub, int ncols)
{
  /* Sets of several (fused products, gated units) keep a warp a row:
     their split rows have not been checked against the CPU on a GPU
     yet (.ci/gpu-check.sh's 4096-wide models are for that).  */
  const int split = set.n == 1 ? split_for (TYPE, nsub / unit<TYPE>::SUBS,
                                           rows)
                               : 1;
  const int per_block = MMVQ_WARPS / split;
  const dim3 grid ((unsigned) ((rows + per_block - 1) / per_block));

  switch (ncols)
    {
#define CASE(n)                                                           \
    case n:                                                               \
      return tsr_cuda_launch (k_mmvq<TYPE, n>, grid, dim3 (MMVQ_WARPS * 32), \
                              0, st, set, q, ds, nsub, split);
    CASE (1) CASE (2) CASE (3) CASE (4) CASE (5) CASE (6) CASE (7) CASE (8)
#undef CASE
    }
  return (int) cudaErrorInvalidValue;
}

int
tsr_cuda_mmvq (cudaStream_t st, const struct tsr_cuda_mmv_set *set,
               int atype, const signed char *q, const void *ds, int64_t k,
               int ncols)
{
  int64_t rows = 0;
  const float2 *d2 = (const float2 *) ds;
  const int64_t nsub = k / CU_QK;

  if (set->n < 1 || set->n > CU_MMV_MAX_SET || (set->glu && set->n != 2)
      || ncols < 1 || ncols > CU_MMV_MAX_COLS || k % CU_QK != 0
      || (tsr_cuda_block_elems (atype) == 256 && k % 256 != 0))
    return (int) cudaErrorInvalidValue;
  for (int m = 0; m < set->n; m++)
    rows = set->a[m].ne[1] > rows ? set->a[m].ne[1] : rows;
  switch (atype)
    {
#define TYPE(T)                                                           \
    case TSR_TYPE_##T:                                                    \
      return mmvq<TSR_TYPE_##T> (st, rows, *set, q, d2, nsub, ncols);
    TYPE (Q8_0) TYPE (Q4_0) TYPE (Q4_1) TYPE (Q5_0) TYPE (Q5_1)
    TYPE (IQ4_NL) TYPE (MXFP4) TYPE (Q4_K) TYPE (Q5_K) TYPE (Q6_K)
    TYPE (IQ4_XS)
#undef TYPE
    default:
      return (int) cudaErrorInvalidValue;
    }
}
