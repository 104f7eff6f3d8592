/* cuda-mmvq.cu - matrix-vector products of q8_0 and q4_0 weights on
 * 8-bit activations, in integer dot products (dp4a).
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
 * then each lane of a warp takes whole weight blocks of its row and
 * multiplies four weights by four activations per dp4a instruction:
 *
 *   q8_0:  sum_i w_i x_i = d_w d_x sum_i q_i p_i
 *   q4_0:  sum_i (q_i - 8) d_w x_i = d_w (d_x sum_i q_i p_i - 8 s_x),
 *          s_x = d_x sum_i p_i
 *
 * The sums of a lane's blocks are f32, then the warp's.  One kernel
 * computes a set of products of the same activations (cuda-fuse.c) and
 * the gated unit of a pair, as the kernels of cuda-quant.cu do.  Weight
 * blocks are 2-byte aligned (18 and 34 bytes), so they are read as
 * 16-bit words, a warp reading 32 consecutive blocks at each step.  */
#include "cuda-common.cuh"

#define MMVQ_WARPS 4            /* rows (warps) per thread block */

/* Rounding, a warp per block of 32 activations: Q the integers, DS the
   scale and the scaled sum (f32 pairs), column after column.  */
static __global__ void
k_quantize_q8 (const char *x, int64_t nb1, int64_t k, int ncols,
               signed char *q, float2 *ds)
{
  const int lane = threadIdx.x % 32;
  const int64_t nblocks = k / CU_QK;
  const int64_t total = nblocks * ncols;

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

/* The dot product of weight block W (TYPE) with activation block Q
   (32 integers, 16-byte aligned) with scales DS, as a float.  */
template <int TYPE>
static __device__ inline float
block_dot (const uint16_t *w, const int4 *q, float2 ds)
{
  const float dw = tsr_cuda_f16_to_f32 (__ldg (w));
  const int4 a = __ldg (q), b = __ldg (q + 1);
  const int x[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
  int dot = 0;

  if (TYPE == TSR_TYPE_Q8_0)
    {
#pragma unroll
      for (int k = 0; k < 8; k++)
        dot = __dp4a (int_at (w + 1 + 2 * k), x[k], dot);
    }
  else
    {
      /* q4_0: byte j holds element j (low nibble) and j + 16 (high).  */
#pragma unroll
      for (int k = 0; k < 4; k++)
        {
          int v = int_at (w + 1 + 2 * k);
          dot = __dp4a (v & 0x0F0F0F0F, x[k], dot);
          dot = __dp4a ((v >> 4) & 0x0F0F0F0F, x[k + 4], dot);
        }
    }
  return TYPE == TSR_TYPE_Q8_0 ? dw * ds.x * (float) dot
                               : dw * (ds.x * (float) dot - 8.0f * ds.y);
}

/* A warp per row of every product of SET, NC activation columns.  */
template <int TYPE, int NC>
static __global__ void
k_mmvq (tsr_cuda_mmv_set set, const signed char *q, const float2 *ds,
        int64_t nblocks)
{
  const int bytes = TYPE == TSR_TYPE_Q8_0 ? CU_Q8_BYTES : CU_Q4_BYTES;
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t) blockIdx.x * MMVQ_WARPS + threadIdx.x / 32;
  float first[NC];

#pragma unroll
  for (int m = 0; m < CU_MMV_MAX_SET; m++)
    {
      if (m >= set.n)
        break;
      const tsr_cuda_tdesc &a = set.a[m];
      if (row >= a.ne[1])
        continue;
      const uint16_t *w = (const uint16_t *) (a.data + row * a.nb[1]);
      float acc[NC];
#pragma unroll
      for (int c = 0; c < NC; c++)
        acc[c] = 0.0f;
#pragma unroll 2
      for (int64_t i = lane; i < nblocks; i += 32)
#pragma unroll
        for (int c = 0; c < NC; c++)
          acc[c] += block_dot<TYPE> (w + i * bytes / 2,
                                     (const int4 *) (q + (c * nblocks + i)
                                                     * CU_QK),
                                     ds[c * nblocks + i]);
      tsr_cuda_mmv_store_row<NC> (set, m, row, acc, first);
    }
}

/* q4_K and q5_K: a unit is a pair of 32-element sub-blocks of a
   256-element block (4 units a block), so that rows of 2048 elements
   still give every lane of a warp one.  A sub-block's values are
   d sc q - dmin m (6-bit sc and m from the 12 scale bytes):
     sum_i (d sc q_i - dmin m) x_i = d sc d_x sum_i q_i p_i - dmin m s_x
   with s_x = d_x sum_i p_i.  Blocks are 144 (q4_K) and 176 (q5_K)
   bytes, so their words are 16-byte aligned in rows of whole blocks.  */
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
  const int4 a0 = __ldg (q), a1 = __ldg (q + 1);
  const int4 b0 = __ldg (q + 2), b1 = __ldg (q + 3);
  const int x0[8] = { a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w };
  const int x1[8] = { b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w };
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

/* A warp per row of every product of SET (q4_K or q5_K), NC columns.  */
template <int TYPE, int NC>
static __global__ void
k_mmvq_kquant (tsr_cuda_mmv_set set, const signed char *q, const float2 *ds,
               int64_t nsub)
{
  const int bytes = tsr_cuda_block_bytes (TYPE);
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t) blockIdx.x * MMVQ_WARPS + threadIdx.x / 32;
  const int64_t nunits = nsub / 2;
  float first[NC];

#pragma unroll
  for (int m = 0; m < CU_MMV_MAX_SET; m++)
    {
      if (m >= set.n)
        break;
      const tsr_cuda_tdesc &a = set.a[m];
      if (row >= a.ne[1])
        continue;
      const char *w = a.data + row * a.nb[1];
      float acc[NC];
#pragma unroll
      for (int c = 0; c < NC; c++)
        acc[c] = 0.0f;
#pragma unroll 2
      for (int64_t u = lane; u < nunits; u += 32)
        {
          const int64_t i = u / 4;
          const int p = (int) (u % 4);
#pragma unroll
          for (int c = 0; c < NC; c++)
            acc[c] += kquant_unit<TYPE> (w + i * bytes, p,
                                         (const int4 *) (q + (c * nsub
                                                              + 2 * u)
                                                         * CU_QK),
                                         ds + c * nsub + 2 * u);
        }
      tsr_cuda_mmv_store_row<NC> (set, m, row, acc, first);
    }
}

/* q6_K: a unit is one 32-element sub-block j (8 a block) of 256
   elements, 210 bytes (rows of whole blocks are only 2-byte aligned,
   so words are read as 16-bit pairs).  Element 32 j + l, with
   h = j / 4 and t = j % 4, has its low four bits in ql[64 h + 32 (t % 2)
   + l] (low nibble for t < 2, high else), its high two in qh[32 h + l]
   at bit 2 t, and the scale scales[2 j + l / 16]; its value is
   d sc (q - 32).  The bytes q - 32 fit in int8, so
     sum_l d sc_l (q_l - 32) x_l = d d_x (sc_0 sum_{l<16} (q_l - 32) p_l
                                         + sc_1 sum_{l>=16} ...).  */
static __device__ inline float
q6k_unit (const uint16_t *blk, int j, const int4 *q, float2 ds)
{
  const int h = j / 4, t = j % 4;
  const uint16_t *ql = blk + (64 * h + 32 * (t % 2)) / 2;
  const uint16_t *qh = blk + (128 + 32 * h) / 2;
  const int lshift = 4 * (t / 2), hshift = 2 * t;
  const uint16_t sw = __ldg (blk + (192 + 2 * j) / 2);
  const int sc0 = (int) (signed char) (sw & 0xff);
  const int sc1 = (int) (signed char) (sw >> 8);
  const float d = tsr_cuda_f16_to_f32 (__ldg (blk + 208 / 2));
  const int4 a = __ldg (q), b = __ldg (q + 1);
  const int x[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
  int dot0 = 0, dot1 = 0;
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
  return d * ds.x * ((float) sc0 * (float) dot0 + (float) sc1 * (float) dot1);
}

/* A warp per row of every product of SET (q6_K), NC columns.  */
template <int NC>
static __global__ void
k_mmvq_q6k (tsr_cuda_mmv_set set, const signed char *q, const float2 *ds,
            int64_t nsub)
{
  const int bytes = tsr_cuda_block_bytes (TSR_TYPE_Q6_K);
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t) blockIdx.x * MMVQ_WARPS + threadIdx.x / 32;
  float first[NC];

#pragma unroll
  for (int m = 0; m < CU_MMV_MAX_SET; m++)
    {
      if (m >= set.n)
        break;
      const tsr_cuda_tdesc &a = set.a[m];
      if (row >= a.ne[1])
        continue;
      const char *w = a.data + row * a.nb[1];
      float acc[NC];
#pragma unroll
      for (int c = 0; c < NC; c++)
        acc[c] = 0.0f;
#pragma unroll 2
      for (int64_t u = lane; u < nsub; u += 32)
        {
          const uint16_t *blk = (const uint16_t *) (w + u / 8 * bytes);
#pragma unroll
          for (int c = 0; c < NC; c++)
            acc[c] += q6k_unit (blk, (int) (u % 8),
                                (const int4 *) (q + (c * nsub + u) * CU_QK),
                                ds[c * nsub + u]);
        }
      tsr_cuda_mmv_store_row<NC> (set, m, row, acc, first);
    }
}

int
tsr_cuda_quantize_q8 (cudaStream_t st, struct tsr_cuda_tdesc b,
                      signed char *q, void *ds)
{
  int64_t total = b.ne[0] / CU_QK * b.ne[1];
  int64_t blocks = (total + 7) / 8;

  k_quantize_q8<<<(unsigned) (blocks < CU_MAX_BLOCKS ? blocks
                                                     : CU_MAX_BLOCKS),
                  256, 0, st>>> (b.data, b.nb[1], b.ne[0], (int) b.ne[1],
                                 q, (float2 *) ds);
  return tsr_cuda_launched ();
}

template <int TYPE>
static void
mmvq (cudaStream_t st, dim3 grid, const tsr_cuda_mmv_set &set,
      const signed char *q, const float2 *ds, int64_t nblocks, int ncols)
{
  switch (ncols)
    {
#define CASE(n)                                                           \
    case n:                                                               \
      if (TYPE == TSR_TYPE_Q6_K)                                          \
        k_mmvq_q6k<n><<<grid, MMVQ_WARPS * 32, 0, st>>> (set, q, ds,      \
                                                         nblocks);        \
      else if (TYPE == TSR_TYPE_Q4_K || TYPE == TSR_TYPE_Q5_K)            \
        k_mmvq_kquant<TYPE, n><<<grid, MMVQ_WARPS * 32, 0, st>>> (        \
          set, q, ds, nblocks);                                           \
      else                                                                \
        k_mmvq<TYPE, n><<<grid, MMVQ_WARPS * 32, 0, st>>> (set, q, ds,    \
                                                           nblocks);      \
      break;
    CASE (1) CASE (2) CASE (3) CASE (4) CASE (5) CASE (6) CASE (7) CASE (8)
#undef CASE
    }
}

int
tsr_cuda_mmvq (cudaStream_t st, const struct tsr_cuda_mmv_set *set,
               int atype, const signed char *q, const void *ds, int64_t k,
               int ncols)
{
  int64_t rows = 0;

  if (set->n < 1 || set->n > CU_MMV_MAX_SET || (set->glu && set->n != 2)
      || ncols < 1 || ncols > CU_MMV_MAX_COLS || k % CU_QK != 0)
    return (int) cudaErrorInvalidValue;
  for (int m = 0; m < set->n; m++)
    rows = set->a[m].ne[1] > rows ? set->a[m].ne[1] : rows;
  dim3 grid ((unsigned) ((rows + MMVQ_WARPS - 1) / MMVQ_WARPS));
  if (atype == TSR_TYPE_Q8_0)
    mmvq<TSR_TYPE_Q8_0> (st, grid, *set, q, (const float2 *) ds, k / CU_QK,
                         ncols);
  else if (atype == TSR_TYPE_Q4_0)
    mmvq<TSR_TYPE_Q4_0> (st, grid, *set, q, (const float2 *) ds, k / CU_QK,
                         ncols);
  else if (atype == TSR_TYPE_Q4_K && k % 256 == 0)
    mmvq<TSR_TYPE_Q4_K> (st, grid, *set, q, (const float2 *) ds, k / CU_QK,
                         ncols);
  else if (atype == TSR_TYPE_Q5_K && k % 256 == 0)
    mmvq<TSR_TYPE_Q5_K> (st, grid, *set, q, (const float2 *) ds, k / CU_QK,
                         ncols);
  else if (atype == TSR_TYPE_Q6_K && k % 256 == 0)
    mmvq<TSR_TYPE_Q6_K> (st, grid, *set, q, (const float2 *) ds, k / CU_QK,
                         ncols);
  else
    return (int) cudaErrorInvalidValue;
  return tsr_cuda_launched ();
}
