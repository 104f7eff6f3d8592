/* cuda-attn.cu - flash_attn_ext: fused attention with an online
 * softmax, K and V f32 or f16, an optional f32 or f16 mask, grouped
 * key/value heads, scores optionally soft-capped (c tanh (s / c)).
 *
 * One thread block per query row (q1, h, b), its ATTN_WARPS warps
 * taking every ATTN_WARPS-th key: with one warp walking all the keys
 * of a row, token generation (32 rows) kept 8 multiprocessors busy and
 * took 65 us a layer on an H100.  For each key j a warp's lanes split
 * the dot product q . k_j and sum it with tsr_cuda_warp_sum, so every
 * lane holds the same score and takes the same branches; each lane
 * keeps the output accumulator of the elements i = lane, lane + 32, ...
 * Each warp's softmax follows the CPU kernel's steps (in float where it
 * uses double): keys whose mask is -inf, or whose score is -inf, are
 * skipped; a larger score rescales the sum and the accumulator.  Then
 * the warps' partial results are rescaled to the largest maximum and
 * added; a row with no key left is zeros.  Each warp's query row and
 * accumulator live in shared memory, touched by its own lanes until
 * the block combines them.  */
#include "cuda-common.cuh"

#define ATTN_WARPS 8

struct attn_args
{
  tsr_cuda_tdesc d, q, k, v, m;
  int mtype;                    /* < 0: no mask */
  float scale, softcap;         /* softcap 0: none */
};

template <int KT, int VT>
static __global__ void
k_flash_attn (attn_args a, int64_t nrows)
{
  extern __shared__ float attn_shared[];
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const int64_t dk = a.q.ne[0], dv = a.v.ne[0], n_kv = a.k.ne[1];
  const int64_t group = a.q.ne[2] / a.k.ne[2];
  float *qs = attn_shared + w * (dk + dv), *acc = qs + dk;
  float *wmax = attn_shared + ATTN_WARPS * (dk + dv), *wsum = wmax + ATTN_WARPS;

  for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x)
    {
      int64_t q1, h, b;
      tsr_cuda_split_row (r, a.d, &q1, &h, &b);
      const int64_t hk = h / group;
      const char *mrow = a.mtype >= 0
                         ? tsr_cuda_at (a.m, 0, q1, h % a.m.ne[2], b % a.m.ne[3])
                         : NULL;
      float mx = -INFINITY, sum = 0.0f;

      for (int64_t i = lane; i < dk; i += 32)
        qs[i] = tsr_cuda_f32 (a.q, i, q1, h, b);
      for (int64_t i = lane; i < dv; i += 32)
        acc[i] = 0.0f;
      /* Warp W takes keys W, W + ATTN_WARPS, ...  */
      for (int64_t j = w; j < n_kv; j += ATTN_WARPS)
        {
          float mv = 0.0f;
          if (mrow)
            {
              mv = tsr_cuda_load (mrow, j, a.m.nb[0], a.mtype);
              if (mv == -INFINITY)
                continue;
            }
          const char *krow = tsr_cuda_at (a.k, 0, j, hk, b);
          float dot = 0.0f;
          for (int64_t i = lane; i < dk; i += 32)
            dot += qs[i] * tsr_cuda_load (krow, i, a.k.nb[0], KT);
          float x = a.scale * tsr_cuda_warp_sum (dot);
          if (a.softcap > 0.0f)
            x = a.softcap * tanhf (x / a.softcap);
          x += mv;
          if (x == -INFINITY)
            continue;
          if (x > mx)
            {
              float f = expf (mx - x);
              for (int64_t i = lane; i < dv; i += 32)
                acc[i] *= f;
              sum *= f;
              mx = x;
            }
          float p = expf (x - mx);
          const char *vrow = tsr_cuda_at (a.v, 0, j, hk, b);
          sum += p;
          for (int64_t i = lane; i < dv; i += 32)
            acc[i] += p * tsr_cuda_load (vrow, i, a.v.nb[0], VT);
        }
      if (lane == 0)
        {
          wmax[w] = mx;
          wsum[w] = sum;
        }
      __syncthreads ();
      /* The warps' partial softmaxes, rescaled to the largest maximum:
         a warp that kept no key (maximum -inf) adds nothing.  */
      float m = -INFINITY, total = 0.0f;
      for (int k = 0; k < ATTN_WARPS; k++)
        m = fmaxf (m, wmax[k]);
      for (int k = 0; k < ATTN_WARPS; k++)
        if (wmax[k] != -INFINITY)
          total += wsum[k] * expf (wmax[k] - m);
      for (int64_t i = threadIdx.x; i < dv; i += blockDim.x)
        {
          float o = 0.0f;
          for (int k = 0; k < ATTN_WARPS; k++)
            if (wmax[k] != -INFINITY)
              o += attn_shared[k * (dk + dv) + dk + i] * expf (wmax[k] - m);
          tsr_cuda_f32 (a.d, i, q1, h, b) = total > 0.0f ? o / total : 0.0f;
        }
      __syncthreads ();         /* the shared rows are rewritten next */
    }
}

size_t
tsr_cuda_flash_attn_shared (int64_t dk, int64_t dv)
{
  return ((size_t) ATTN_WARPS * (size_t) (dk + dv) + 2 * ATTN_WARPS)
         * sizeof (float);
}

int
tsr_cuda_flash_attn (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc q, tsr_cuda_tdesc k,
               int ktype, tsr_cuda_tdesc v, int vtype, tsr_cuda_tdesc mask, int mtype,
               float scale, float softcap)
{
  attn_args a = { d, q, k, v, mask, mtype, scale, softcap };
  int64_t nrows = host_nrows (d);
  unsigned grid = (unsigned) (nrows > CU_MAX_BLOCKS ? CU_MAX_BLOCKS : nrows);
  size_t shared = tsr_cuda_flash_attn_shared (q.ne[0], v.ne[0]);
  const unsigned threads = 32 * ATTN_WARPS;
  bool k16 = ktype == TSR_TYPE_F16, v16 = vtype == TSR_TYPE_F16;

  if (k16 && v16)
    k_flash_attn<TSR_TYPE_F16, TSR_TYPE_F16><<<grid, threads, shared, st>>>
      (a, nrows);
  else if (k16)
    k_flash_attn<TSR_TYPE_F16, TSR_TYPE_F32><<<grid, threads, shared, st>>>
      (a, nrows);
  else if (v16)
    k_flash_attn<TSR_TYPE_F32, TSR_TYPE_F16><<<grid, threads, shared, st>>>
      (a, nrows);
  else
    k_flash_attn<TSR_TYPE_F32, TSR_TYPE_F32><<<grid, threads, shared, st>>>
      (a, nrows);
  return tsr_cuda_launched ();
}
