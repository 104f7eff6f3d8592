/* cuda-attn.cu - flash_attn_ext: fused attention with an online
 * softmax, K and V f32 or f16, an optional f32 or f16 mask, grouped
 * key/value heads, scores optionally soft-capped (c tanh (s / c)).
 *
 * One thread block per query row (q1, h, b), its ATTN_WARPS warps
 * taking every ATTN_WARPS-th chunk of 32 keys: with one warp walking
 * all the keys of a row, token generation (32 rows) kept 8
 * multiprocessors busy and took 65 us a layer on an H100; with a warp's
 * lanes splitting one key's dot product, a key at a time, each key
 * cost a chain of dependent loads (23 us for 256 keys on an H200).  Now
 * each lane scores its own key of the chunk, the chunk's maximum comes
 * from shuffles, and the values of 16 keys are loaded at a time; each
 * lane keeps the output accumulator of the elements i = lane, lane +
 * 32, ...  Each warp's softmax follows the CPU kernel's steps (in
 * float where it uses double), a chunk at a time: keys whose mask is
 * -inf, or whose score is -inf, count for nothing and their values are
 * never used; a larger maximum rescales the sum and the accumulator.  Then
 * the warps' partial results are rescaled to the largest maximum and
 * added; a row with no key left is zeros.  Each warp's query row and
 * accumulator live in shared memory, touched by its own lanes until
 * the block combines them.  */
#include "cuda-common.cuh"

#define ATTN_WARPS 8
/* Keys whose values a lane loads before it adds them (all of a chunk:
   one memory round trip per output element a lane keeps).  */
#define ATTN_VBATCH 16

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
  /* f16 keys read 8 at a time where rows are whole 16-byte words.  */
  const bool kvec = KT == TSR_TYPE_F16 && a.k.nb[0] == 2 && dk % 8 == 0
                    && a.k.nb[1] % 16 == 0 && a.k.nb[2] % 16 == 0
                    && a.k.nb[3] % 16 == 0 && (uintptr_t) a.k.data % 16 == 0;
  float *qs = attn_shared + w * (dk + dv), *acc = qs + dk;
  float *wmax = attn_shared + ATTN_WARPS * (dk + dv), *wsum = wmax + ATTN_WARPS;
  float *ps = wsum + ATTN_WARPS + 32 * w;        /* this warp's chunk */

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
      /* Warp W takes the chunks of 32 keys W, W + ATTN_WARPS, ...: lane
         L scores key 32 C + L (its own dot product, so that the loads
         of 32 keys are in flight at once), then the chunk's values are
         added, ATTN_VBATCH keys' rows loaded at a time.  */
      for (int64_t j0 = (int64_t) w * 32; j0 < n_kv; j0 += ATTN_WARPS * 32)
        {
          const int64_t j = j0 + lane;
          float x = -INFINITY;
          if (j < n_kv)
            {
              float mv = mrow ? tsr_cuda_load (mrow, j, a.m.nb[0], a.mtype)
                              : 0.0f;
              if (mv != -INFINITY)
                {
                  const char *krow = tsr_cuda_at (a.k, 0, j, hk, b);
                  float dot = 0.0f;
                  if (kvec)
                    for (int64_t i = 0; i < dk; i += 8)
                      {
                        uint4 u = __ldg ((const uint4 *) (krow + 2 * i));
                        uint32_t h[4] = { u.x, u.y, u.z, u.w };
#pragma unroll
                        for (int e = 0; e < 4; e++)
                          {
                            dot += qs[i + 2 * e]
                                   * tsr_cuda_f16_to_f32 ((uint16_t) h[e]);
                            dot += qs[i + 2 * e + 1]
                                   * tsr_cuda_f16_to_f32 ((uint16_t)
                                                          (h[e] >> 16));
                          }
                      }
                  else
#pragma unroll 8
                    for (int64_t i = 0; i < dk; i++)
                      dot += qs[i] * tsr_cuda_load (krow, i, a.k.nb[0], KT);
                  x = a.scale * dot;
                  if (a.softcap > 0.0f)
                    x = a.softcap * tanhf (x / a.softcap);
                  x += mv;
                }
            }
          float cm = x;
          for (int o = 16; o > 0; o /= 2)
            cm = fmaxf (cm, __shfl_xor_sync (0xffffffffu, cm, o));
          if (cm == -INFINITY)
            continue;           /* every key of the chunk skipped */
          if (cm > mx)
            {
              float f = expf (mx - cm);
              for (int64_t i = lane; i < dv; i += 32)
                acc[i] *= f;
              sum *= f;
              mx = cm;
            }
          float p = x == -INFINITY ? 0.0f : expf (x - mx);
          sum += tsr_cuda_warp_sum (p);
          ps[lane] = p;
          __syncwarp ();
          const int nk = n_kv - j0 < 32 ? (int) (n_kv - j0) : 32;
          for (int64_t i = lane; i < dv; i += 32)
            {
              float o = acc[i];
              for (int k0 = 0; k0 < nk; k0 += ATTN_VBATCH)
                {
                  float vv[ATTN_VBATCH], pk[ATTN_VBATCH];
#pragma unroll
                  for (int k = 0; k < ATTN_VBATCH; k++)
                    {
                      int kk = k0 + k < nk ? k0 + k : nk - 1;
                      pk[k] = k0 + k < nk ? ps[k0 + k] : 0.0f;
                      vv[k] = tsr_cuda_load (tsr_cuda_at (a.v, 0, j0 + kk,
                                                          hk, b),
                                             i, a.v.nb[0], VT);
                    }
                  /* A skipped key's row is never used: it may hold
                     anything (a position not written yet).  */
#pragma unroll
                  for (int k = 0; k < ATTN_VBATCH; k++)
                    if (pk[k] != 0.0f)
                      o += pk[k] * vv[k];
                }
              acc[i] = o;
            }
          __syncwarp ();        /* PS is rewritten by the next chunk */
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
          tsr_cuda_f32 (a.d, i, q1, h, b)
            = total > 0.0f ? o / total : isnan (total) ? NAN : 0.0f;
        }
      __syncthreads ();         /* the shared rows are rewritten next */
    }
}

size_t
tsr_cuda_flash_attn_shared (int64_t dk, int64_t dv)
{
  return ((size_t) ATTN_WARPS * (size_t) (dk + dv + 32) + 2 * ATTN_WARPS)
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
