/* cuda-mul-mat-id.cu - mul_mat_id, the mixture-of-experts product:
 * result[i, e, t] = dot (as[:, i, ids[e, t]], b[:, e % n_b, t]) with
 * weights of any type mul_mat takes (f32, f16, bf16, and block types
 * with dense rows).
 *
 * One warp per result element: the lanes split the dot product (f32
 * sums, tsr_cuda_warp_sum), the weight row read as it is stored, so nothing
 * is converted beforehand: element by element (tsr_cuda_load) for plain
 * types, a 16-element chunk a lane for block types (cuda-blocks.cuh).
 * The warps of a block take consecutive rows i of one (e, t), which
 * share the b row.  An
 * expert id outside [0, n_expert) goes to the status word (the node
 * then fails, as on the CPU) and its results are left as zeros.  */
#include "cuda-common.cuh"

#define MMID_WARPS 8

struct mmid_args
{
  tsr_cuda_tdesc d, as, b, ids;
  tsr_cuda_status *status;
  int tag;
};

/* Lane LANE's share of the dot of a row of block type AT (dense, K
   elements) with a strided f32 row: every 32nd 16-element chunk,
   decoded once.  */
template <int AT>
static __device__ inline float
chunk_dots (const char *arow, int64_t k, const char *brow, int64_t bnb,
            int lane)
{
  const int per = tsr_cuda_block_elems (AT) / 16, bytes = tsr_cuda_block_bytes (AT);
  float sum = 0.0f;
  for (int64_t c = lane; c < k / 16; c += 32)
    {
      float v[16];
      tsr_cuda_block_chunk (arow + (c / per) * bytes, AT, (int) (c % per), v);
#pragma unroll
      for (int l = 0; l < 16; l++)
        sum += v[l] * *(const float *) (brow + (16 * c + l) * bnb);
    }
  return sum;
}

template <int AT>
static __global__ void
k_mul_mat_id (mmid_args a, int64_t n)
{
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const int64_t m = a.d.ne[0], n_used = a.d.ne[1], k = a.as.ne[0];

  for (int64_t o = (int64_t) blockIdx.x * MMID_WARPS + w; o < n;
       o += (int64_t) gridDim.x * MMID_WARPS)
    {
      const int64_t i = o % m, et = o / m, e = et % n_used, t = et / n_used;
      const int x = *(const int32_t *) tsr_cuda_at (a.ids, e, t, 0, 0);
      float sum = 0.0f;

      if (x < 0 || x >= a.as.ne[2])
        {
          if (lane == 0)
            tsr_cuda_bad_index (a.status, a.tag, x);
        }
      else
        {
          const char *arow = tsr_cuda_at (a.as, 0, i, x, 0);
          const char *brow = tsr_cuda_at (a.b, 0, e % a.b.ne[1], t, 0);
          if (tsr_cuda_is_block (AT))
            sum = chunk_dots<AT> (arow, k, brow, a.b.nb[0], lane);
          else
            for (int64_t c = lane; c < k; c += 32)
              sum += tsr_cuda_load (arow, c, a.as.nb[0], AT)
                     * *(const float *) (brow + c * a.b.nb[0]);
          sum = tsr_cuda_warp_sum (sum);
        }
      if (lane == 0)
        tsr_cuda_f32 (a.d, i, e, t, 0) = sum;
    }
}

int
tsr_cuda_mul_mat_id (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc as, int atype,
               tsr_cuda_tdesc b, tsr_cuda_tdesc ids, tsr_cuda_status *status, int tag)
{
  mmid_args a = { d, as, b, ids, status, tag };
  int64_t n = host_nelements (d);
  int64_t blocks = (n + MMID_WARPS - 1) / MMID_WARPS;
  unsigned grid = (unsigned) (blocks > CU_MAX_BLOCKS ? CU_MAX_BLOCKS : blocks);
  const unsigned threads = 32 * MMID_WARPS;

  switch (atype)
    {
#define CASE(T)                                                         \
    case TSR_TYPE_##T:                                                  \
      k_mul_mat_id<TSR_TYPE_##T><<<grid, threads, 0, st>>> (a, n);      \
      break;
    CASE (F32) CASE (F16) CASE (BF16) CASE (Q8_0) CASE (Q4_0) CASE (Q4_1)
    CASE (Q5_0) CASE (Q5_1) CASE (Q2_K) CASE (Q3_K) CASE (Q4_K) CASE (Q5_K)
    CASE (Q6_K) CASE (IQ4_NL) CASE (IQ4_XS) CASE (MXFP4)
#undef CASE
    default:
      return (int) cudaErrorInvalidValue;
    }
  return tsr_cuda_launched ();
}
