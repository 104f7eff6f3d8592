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
  signed char *q8;              /* not NULL: d rounded to 8 bits too */
  float2 *ds8;
};

/* With A.q8: output element V at D's I (dense, a multiple of 32 long
   rows), held by a lane of a warp whose 32 lanes hold 32 consecutive
   elements, also rounded as k_quantize_q8 (cuda-mmvq.cu) rounds the
   activations of a product of D's memory, bit for bit.  */
static __device__ inline void
attn_q8 (const attn_args &a, const float *at, float v)
{
  tsr_cuda_warp_q8 (v, a.q8, a.ds8, (at - (const float *) a.d.data) / CU_QK);
}

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

  tsr_cuda_pdl_begin ();
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
          float r = total > 0.0f ? o / total : isnan (total) ? NAN : 0.0f;
          float *at = &tsr_cuda_f32 (a.d, i, q1, h, b);
          *at = r;
          if (a.q8)
            attn_q8 (a, at, r);
        }
      __syncthreads ();         /* the shared rows are rewritten next */
    }
}

/* Batches of queries (prompts): a thread block takes a tile of
   ATTN_TILE_ROWS query rows of one head, ATTN_TILE_RW rows a warp, and
   walks the keys 32 at a time.  Unless no row of the tile keeps any key
   of a chunk (by the mask: most chunks of a causal prompt's first
   tiles), the chunk's keys and values are loaded once into shared
   memory as floats and used by every row of the tile; the kernel above
   reads them again for every row and head.  Lane L scores key L of the
   chunk for the warp's rows at once (each four elements of its key read
   once, as a float4, for all the rows); each row's softmax follows the
   steps of the kernel above (one warp takes all the chunks of a row, so
   no partial results are combined); lane L keeps the output elements L,
   L + 32, ... (head sizes up to ATTN_TILE_DMAX, multiples of 4), each
   value read once for all the rows, the chunk's probabilities read four
   at a time from shared memory.  Shared memory bandwidth is what bounds
   this kernel: a first version that read q and the key element by
   element per row was slower than the kernel above.  Key rows are
   padded by 4 floats so that the lanes' float4 reads of 32 rows fall
   in distinct banks.  */
#define ATTN_TILE_RW 4
#define ATTN_TILE_ROWS (ATTN_WARPS * ATTN_TILE_RW)
#define ATTN_TILE_DMAX 128
/* Query rows from which a batch takes the tiles.  */
#define ATTN_TILE_MIN_ROWS 16

static __host__ __device__ inline size_t
tile_shared_floats (int64_t dk, int64_t dv)
{
  return (size_t) (32 * (dk + 4) + 32 * dv + ATTN_TILE_ROWS * dk
                   + ATTN_TILE_ROWS * 32);
}

/* Whether T (of TYPE, rows of N elements) is f16 in rows of whole
   16-byte words.  */
static __device__ inline bool
f16_words (const tsr_cuda_tdesc &t, int type, int n)
{
  return type == TSR_TYPE_F16 && t.nb[0] == 2 && n % 8 == 0
         && t.nb[1] % 16 == 0 && t.nb[2] % 16 == 0 && t.nb[3] % 16 == 0
         && (uintptr_t) t.data % 16 == 0;
}

/* Eight f16 values U as floats at TO (two float4).  */
static __device__ inline void
half8_to (uint4 u, float4 *to)
{
  const uint32_t w[4] = { u.x, u.y, u.z, u.w };
  float f[8];
#pragma unroll
  for (int e = 0; e < 4; e++)
    {
      f[2 * e] = tsr_cuda_f16_to_f32 ((uint16_t) w[e]);
      f[2 * e + 1] = tsr_cuda_f16_to_f32 ((uint16_t) (w[e] >> 16));
    }
  to[0] = make_float4 (f[0], f[1], f[2], f[3]);
  to[1] = make_float4 (f[4], f[5], f[6], f[7]);
}

/* Rows J0 .. J0 + 31 of T (of TYPE, N elements a row; head HK, batch
   B) as floats at TO, rows STRIDE floats apart (16-byte aligned),
   zeros for rows past N_KV; by all the block's threads.  VEC: f16 rows
   of whole 16-byte words (f16_words), read 8 elements a load.  */
template <int TYPE>
static __device__ inline void
chunk_rows (const tsr_cuda_tdesc &t, bool vec, int n, int64_t j0,
            int64_t n_kv, int64_t hk, int64_t b, float *to, int stride)
{
  if (vec)
    for (int x = threadIdx.x; x < 32 * n / 8; x += blockDim.x)
      {
        int key = x / (n / 8), i = x % (n / 8) * 8;
        float4 *row = (float4 *) (to + key * stride + i);
        if (j0 + key < n_kv)
          half8_to (__ldg ((const uint4 *) (tsr_cuda_at (t, 0, j0 + key, hk,
                                                         b) + 2 * i)), row);
        else
          row[0] = row[1] = make_float4 (0.0f, 0.0f, 0.0f, 0.0f);
      }
  else
    for (int x = threadIdx.x; x < 32 * n; x += blockDim.x)
      {
        int key = x / n, i = x % n;
        to[key * stride + i]
          = j0 + key < n_kv
            ? tsr_cuda_load (tsr_cuda_at (t, 0, j0 + key, hk, b), i,
                             t.nb[0], TYPE)
            : 0.0f;
      }
}

template <int KT, int VT>
static __global__ void __launch_bounds__ (32 * ATTN_WARPS, 2)
k_flash_attn_tile (attn_args a, int64_t ntiles)
{
  extern __shared__ float4 attn_shared4[];
  float *const sh = (float *) attn_shared4;
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const int dk = (int) a.q.ne[0], dv = (int) a.v.ne[0];
  const int64_t n_kv = a.k.ne[1], nq = a.q.ne[1];
  const int64_t group = a.q.ne[2] / a.k.ne[2];
  float *ks = sh;                               /* 32 x (dk + 4) */
  float *vs = ks + 32 * (dk + 4);               /* 32 x dv */
  float *qs = vs + 32 * dv + w * ATTN_TILE_RW * dk;   /* the warp's rows */
  float *ps = sh + 32 * (dk + 4) + 32 * dv + ATTN_TILE_ROWS * dk
              + w * ATTN_TILE_RW * 32;          /* the warp's p, by row */
  const bool kvec = f16_words (a.k, KT, dk), vvec = f16_words (a.v, VT, dv);

  for (int64_t blk = blockIdx.x; blk < ntiles; blk += gridDim.x)
    {
      /* Tile T of head H of batch B.  */
      const int64_t tiles_q = (nq + ATTN_TILE_ROWS - 1) / ATTN_TILE_ROWS;
      const int64_t t = blk % tiles_q, h = blk / tiles_q % a.q.ne[2];
      const int64_t b = blk / tiles_q / a.q.ne[2];
      const int64_t hk = h / group;
      const int64_t row0 = t * ATTN_TILE_ROWS + w * ATTN_TILE_RW;
      float mx[ATTN_TILE_RW], sum[ATTN_TILE_RW];
      float acc[ATTN_TILE_RW][ATTN_TILE_DMAX / 32];

#pragma unroll
      for (int rr = 0; rr < ATTN_TILE_RW; rr++)
        {
          const int64_t q1 = row0 + rr;
          mx[rr] = -INFINITY;
          sum[rr] = 0.0f;
#pragma unroll
          for (int e = 0; e < ATTN_TILE_DMAX / 32; e++)
            acc[rr][e] = 0.0f;
          for (int i = lane; i < dk; i += 32)
            qs[rr * dk + i] = q1 < nq ? tsr_cuda_f32 (a.q, i, q1, h, b)
                                      : 0.0f;
        }
      for (int64_t j0 = 0; j0 < n_kv; j0 += 32)
        {
          const int64_t j = j0 + lane;
          /* The mask of each row's key first: a chunk no row of the
             tile keeps is skipped whole.  The barrier also waits for
             the chunk before to be used up.  */
          float mv[ATTN_TILE_RW];
          bool any = false;
#pragma unroll
          for (int rr = 0; rr < ATTN_TILE_RW; rr++)
            {
              mv[rr] = -INFINITY;
              if (row0 + rr < nq && j < n_kv)
                mv[rr] = a.mtype >= 0
                         ? tsr_cuda_load (tsr_cuda_at (a.m, 0, row0 + rr,
                                                       h % a.m.ne[2],
                                                       b % a.m.ne[3]),
                                          j, a.m.nb[0], a.mtype)
                         : 0.0f;
              any = any || mv[rr] != -INFINITY;
            }
          if (!__syncthreads_or (any))
            continue;
          /* Keys and values of the chunk together (one round trip).  */
          chunk_rows<KT> (a.k, kvec, dk, j0, n_kv, hk, b, ks, dk + 4);
          chunk_rows<VT> (a.v, vvec, dv, j0, n_kv, hk, b, vs, dv);
          __syncthreads ();
          /* Lane L's key against every row of the warp.  */
          float dot[ATTN_TILE_RW];
#pragma unroll
          for (int rr = 0; rr < ATTN_TILE_RW; rr++)
            dot[rr] = 0.0f;
          const float4 *kr = (const float4 *) (ks + lane * (dk + 4));
          for (int i4 = 0; i4 < dk / 4; i4++)
            {
              const float4 kv = kr[i4];
#pragma unroll
              for (int rr = 0; rr < ATTN_TILE_RW; rr++)
                {
                  const float4 qv = ((const float4 *) (qs + rr * dk))[i4];
                  dot[rr] += qv.x * kv.x;
                  dot[rr] += qv.y * kv.y;
                  dot[rr] += qv.z * kv.z;
                  dot[rr] += qv.w * kv.w;
                }
            }
#pragma unroll
          for (int rr = 0; rr < ATTN_TILE_RW; rr++)
            {
              float x = -INFINITY, p = 0.0f;
              if (mv[rr] != -INFINITY)
                {
                  x = a.scale * dot[rr];
                  if (a.softcap > 0.0f)
                    x = a.softcap * tanhf (x / a.softcap);
                  x += mv[rr];
                }
              float cm = x;
              for (int o = 16; o > 0; o /= 2)
                cm = fmaxf (cm, __shfl_xor_sync (0xffffffffu, cm, o));
              if (cm != -INFINITY)
                {
                  if (cm > mx[rr])
                    {
                      float f = expf (mx[rr] - cm);
#pragma unroll
                      for (int e = 0; e < ATTN_TILE_DMAX / 32; e++)
                        acc[rr][e] *= f;
                      sum[rr] *= f;
                      mx[rr] = cm;
                    }
                  p = x == -INFINITY ? 0.0f : expf (x - mx[rr]);
                  sum[rr] += tsr_cuda_warp_sum (p);
                }
              ps[rr * 32 + lane] = p;
            }
          __syncwarp ();
          /* The values: each read once for the warp's rows; a key a
             row skips (p 0) adds nothing to it, whatever its row holds
             (a position not written yet may hold anything).  */
          const int nk = n_kv - j0 < 32 ? (int) (n_kv - j0) : 32;
          for (int k0 = 0; k0 < nk; k0 += 4)
            {
              float4 p4[ATTN_TILE_RW];
#pragma unroll
              for (int rr = 0; rr < ATTN_TILE_RW; rr++)
                p4[rr] = ((const float4 *) (ps + rr * 32))[k0 / 4];
#pragma unroll
              for (int kk = 0; kk < 4; kk++)
                {
                  if (k0 + kk >= nk)
                    break;
                  float vv[ATTN_TILE_DMAX / 32];
#pragma unroll
                  for (int e = 0; e < ATTN_TILE_DMAX / 32; e++)
                    vv[e] = lane + 32 * e < dv
                            ? vs[(k0 + kk) * dv + lane + 32 * e] : 0.0f;
#pragma unroll
                  for (int rr = 0; rr < ATTN_TILE_RW; rr++)
                    {
                      const float pk = kk == 0 ? p4[rr].x : kk == 1 ? p4[rr].y
                                       : kk == 2 ? p4[rr].z : p4[rr].w;
#pragma unroll
                      for (int e = 0; e < ATTN_TILE_DMAX / 32; e++)
                        acc[rr][e] += pk != 0.0f ? pk * vv[e] : 0.0f;
                    }
                }
            }
          __syncwarp ();        /* PS is rewritten by the next chunk */
        }
#pragma unroll
      for (int rr = 0; rr < ATTN_TILE_RW; rr++)
        {
          const int64_t q1 = row0 + rr;
          if (q1 >= nq)
            continue;
          const float total = sum[rr];
#pragma unroll
          for (int e = 0; e < ATTN_TILE_DMAX / 32; e++)
            if (lane + 32 * e < dv)
              {
                float r = total > 0.0f ? acc[rr][e] / total
                          : isnan (total) ? NAN : 0.0f;
                float *at = &tsr_cuda_f32 (a.d, lane + 32 * e, q1, h, b);
                *at = r;
                if (a.q8)
                  attn_q8 (a, at, r);
              }
        }
      __syncthreads ();         /* the shared rows are rewritten next */
    }
}

template <int KT, int VT>
static void
launch_tile (cudaStream_t st, const attn_args &a, int64_t ntiles,
             size_t shared)
{
  if (shared > 48 * 1024)
    cudaFuncSetAttribute (k_flash_attn_tile<KT, VT>,
                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                          (int) shared);
  unsigned grid = (unsigned) (ntiles > CU_MAX_BLOCKS ? CU_MAX_BLOCKS : ntiles);
  k_flash_attn_tile<KT, VT><<<grid, 32 * ATTN_WARPS, shared, st>>> (a,
                                                                   ntiles);
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
               float scale, float softcap, signed char *q8, void *ds8)
{
  attn_args a = { d, q, k, v, mask, mtype, scale, softcap, q8,
                  (float2 *) ds8 };

  /* The rounding needs warps of 32 consecutive elements of a dense d.  */
  if (q8 && (d.ne[0] % CU_QK != 0 || d.nb[0] != 4 || d.nb[1] != 4 * d.ne[0]
             || d.nb[2] != d.nb[1] * d.ne[1]
             || d.nb[3] != d.nb[2] * d.ne[2]))
    return (int) cudaErrorInvalidValue;
  int64_t nrows = host_nrows (d);
  unsigned grid = (unsigned) (nrows > CU_MAX_BLOCKS ? CU_MAX_BLOCKS : nrows);
  size_t shared = tsr_cuda_flash_attn_shared (q.ne[0], v.ne[0]);
  const unsigned threads = 32 * ATTN_WARPS;
  bool k16 = ktype == TSR_TYPE_F16, v16 = vtype == TSR_TYPE_F16;

  /* Prompts: tiles of query rows sharing each chunk of keys.  */
  if (q.ne[1] >= ATTN_TILE_MIN_ROWS && q.ne[0] <= ATTN_TILE_DMAX
      && v.ne[0] <= ATTN_TILE_DMAX && q.ne[0] % 4 == 0)
    {
      int64_t ntiles = (q.ne[1] + ATTN_TILE_ROWS - 1) / ATTN_TILE_ROWS
                       * q.ne[2] * q.ne[3];
      size_t tshared = tile_shared_floats (q.ne[0], v.ne[0]) * sizeof (float);
      if (k16 && v16)
        launch_tile<TSR_TYPE_F16, TSR_TYPE_F16> (st, a, ntiles, tshared);
      else if (k16)
        launch_tile<TSR_TYPE_F16, TSR_TYPE_F32> (st, a, ntiles, tshared);
      else if (v16)
        launch_tile<TSR_TYPE_F32, TSR_TYPE_F16> (st, a, ntiles, tshared);
      else
        launch_tile<TSR_TYPE_F32, TSR_TYPE_F32> (st, a, ntiles, tshared);
      return tsr_cuda_launched ();
    }
  void (*kern) (attn_args, int64_t)
    = k16 && v16 ? k_flash_attn<TSR_TYPE_F16, TSR_TYPE_F16>
      : k16 ? k_flash_attn<TSR_TYPE_F16, TSR_TYPE_F32>
      : v16 ? k_flash_attn<TSR_TYPE_F32, TSR_TYPE_F16>
      : k_flash_attn<TSR_TYPE_F32, TSR_TYPE_F32>;
  return tsr_cuda_launch (kern, dim3 (grid), dim3 (threads), shared, st, a,
                          nrows);
}
