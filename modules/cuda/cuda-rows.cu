/* cuda-rows.cu - kernels over whole rows of f32 tensors: sum_rows,
 * norm, rms_norm and soft_max (one thread block per row, sums in
 * double as on the CPU), and rope (one thread per element).  Rows are
 * read and written through their strides.  */
#include "cuda-common.cuh"

/* The largest V over the block.  */
static __device__ float
block_max (float v, float *shared)
{
  __syncthreads ();
  shared[threadIdx.x] = v;
  __syncthreads ();
  for (unsigned w = CU_THREADS / 2; w > 0; w /= 2)
    {
      if (threadIdx.x < w)
        shared[threadIdx.x] = fmaxf (shared[threadIdx.x],
                                     shared[threadIdx.x + w]);
      __syncthreads ();
    }
  return shared[0];
}

#define FOR_ROW(k, n) for (int64_t k = threadIdx.x; k < (n); k += CU_THREADS)

static __global__ void
k_sum_rows (tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  __shared__ double shared[CU_THREADS];
  CU_FOR_ROWS (r, tsr_cuda_nrows (a))
    {
      int64_t i1, i2, i3;
      double s = 0;
      tsr_cuda_split_row (r, a, &i1, &i2, &i3);
      FOR_ROW (k, a.ne[0])
        s += tsr_cuda_f32 (a, k, i1, i2, i3);
      s = tsr_cuda_block_sum (s, shared);
      if (threadIdx.x == 0)
        tsr_cuda_f32 (d, 0, i1, i2, i3) = (float) s;
    }
}

static __global__ void
k_norm (int rms, float eps, tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  __shared__ double shared[CU_THREADS];
  const int64_t n = a.ne[0];
  CU_FOR_ROWS (r, tsr_cuda_nrows (a))
    {
      int64_t i1, i2, i3;
      double mean = 0, ss = 0;
      tsr_cuda_split_row (r, a, &i1, &i2, &i3);
      if (!rms)
        {
          FOR_ROW (k, n)
            mean += tsr_cuda_f32 (a, k, i1, i2, i3);
          mean = tsr_cuda_block_sum (mean, shared) / (double) n;
        }
      FOR_ROW (k, n)
        {
          double x = (double) tsr_cuda_f32 (a, k, i1, i2, i3) - mean;
          ss += x * x;
        }
      ss = tsr_cuda_block_sum (ss, shared);
      double scale = 1.0 / sqrt (ss / (double) n + (double) eps);
      FOR_ROW (k, n)
        {
          float x = tsr_cuda_f32 (a, k, i1, i2, i3);
          tsr_cuda_f32 (d, k, i1, i2, i3) = rms ? x * (float) scale
                                      : (float) (((double) x - mean) * scale);
        }
    }
}

/* rms_norm (x) * w with x = a, or x = a + b stored in S as well (the
   nodes add, rms_norm, mul fused: the add's result is read again
   later, the norm's is not).  Each thread reads and writes only its
   own elements, and all of a row is read before any of d is written,
   so S may be A or B itself and D may be A or B (not S).  Rounded and
   summed as the three kernels do: x * scale in f32, then times the
   weight; the squares summed in the order of k_norm.  W is broadcast
   over the rows (its dimensions divide x's).  Both passes load
   CU_NORM_U elements of a thread before they store any (a store between
   two loads that may alias makes each load wait for the one before:
   with a load and a store an element, the second pass took 8 memory
   round trips for a 2048-element row); an array of a row's values
   indexed at run time would live in local memory (measured: 20 us a
   2048-element row on an H200), so the arrays here are indexed by
   unrolled constants only.  */
#define CU_NORM_U 8
static __global__ void
k_rms_norm_mul (float eps, tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc b,
                tsr_cuda_tdesc s, int add, tsr_cuda_tdesc w,
                signed char *q8, float2 *ds8)
{
  __shared__ double shared[CU_THREADS];
  const int64_t n = a.ne[0];
  /* A weight row as long as x's, the same for every row.  */
  const bool wrow = w.ne[0] == n && w.ne[1] * w.ne[2] * w.ne[3] == 1;
  tsr_cuda_pdl_begin ();
  CU_FOR_ROWS (r, tsr_cuda_nrows (a))
    {
      int64_t i1, i2, i3;
      double ss = 0;
      tsr_cuda_split_row (r, a, &i1, &i2, &i3);
      for (int64_t k0 = threadIdx.x; k0 < n; k0 += CU_NORM_U * CU_THREADS)
        {
          float x[CU_NORM_U];
#pragma unroll
          for (int u = 0; u < CU_NORM_U; u++)
            {
              int64_t k = k0 + u * CU_THREADS;
              x[u] = 0.0f;
              if (k < n)
                x[u] = add ? tsr_cuda_f32 (a, k, i1, i2, i3)
                             + tsr_cuda_f32 (b, k, i1, i2, i3)
                           : tsr_cuda_f32 (a, k, i1, i2, i3);
            }
#pragma unroll
          for (int u = 0; u < CU_NORM_U; u++)
            {
              int64_t k = k0 + u * CU_THREADS;
              if (k < n)
                {
                  if (add)
                    tsr_cuda_f32 (s, k, i1, i2, i3) = x[u];
                  ss += (double) x[u] * x[u];
                }
            }
        }
      ss = tsr_cuda_block_sum (ss, shared);
      float scale = (float) (1.0 / sqrt (ss / (double) n + (double) eps));
      for (int64_t k0 = threadIdx.x; k0 < n; k0 += CU_NORM_U * CU_THREADS)
        {
          float x[CU_NORM_U], wk[CU_NORM_U];
#pragma unroll
          for (int u = 0; u < CU_NORM_U; u++)
            {
              int64_t k = k0 + u * CU_THREADS;
              x[u] = wk[u] = 0.0f;
              if (k < n)
                {
                  x[u] = add ? tsr_cuda_f32 (s, k, i1, i2, i3)
                             : tsr_cuda_f32 (a, k, i1, i2, i3);
                  wk[u] = wrow ? *(const float *) (w.data + k * w.nb[0])
                               : tsr_cuda_f32 (w, k % w.ne[0], i1 % w.ne[1],
                                               i2 % w.ne[2], i3 % w.ne[3]);
                }
            }
#pragma unroll
          for (int u = 0; u < CU_NORM_U; u++)
            {
              int64_t k = k0 + u * CU_THREADS;
              if (k >= n)
                continue;
              float v = x[u] * scale * wk[u];
              tsr_cuda_f32 (d, k, i1, i2, i3) = v;
              /* Column R of the next product's activations (n is a
                 multiple of 32: the warp's 32 values are a block).  */
              if (q8)
                tsr_cuda_warp_q8 (v, q8, ds8, r * (n / CU_QK) + k / CU_QK);
            }
        }
    }
}

/* softmax (x * scale + mask) per row; a row that is -inf everywhere
   becomes zeros.  The row's values are staged in d.  */
static __global__ void
k_soft_max (float scale, tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc m, int mtype)
{
  __shared__ double shared[CU_THREADS];
  const int64_t n = a.ne[0];
  CU_FOR_ROWS (r, tsr_cuda_nrows (a))
    {
      int64_t i1, i2, i3;
      float mx = -INFINITY;
      tsr_cuda_split_row (r, a, &i1, &i2, &i3);
      FOR_ROW (k, n)
        {
          float y = tsr_cuda_f32 (a, k, i1, i2, i3) * scale;
          if (mtype >= 0)
            y += tsr_cuda_load (tsr_cuda_at (m, 0, i1, i2 % m.ne[2], i3 % m.ne[3]), k,
                          m.nb[0], mtype);
          tsr_cuda_f32 (d, k, i1, i2, i3) = y;
          mx = fmaxf (mx, y);
        }
      mx = block_max (mx, (float *) shared);
      if (mx == -INFINITY)
        {
          FOR_ROW (k, n)
            tsr_cuda_f32 (d, k, i1, i2, i3) = 0.0f;
          continue;
        }
      double sum = 0;
      FOR_ROW (k, n)
        {
          float e = expf (tsr_cuda_f32 (d, k, i1, i2, i3) - mx);
          tsr_cuda_f32 (d, k, i1, i2, i3) = e;
          sum += e;
        }
      float inv = (float) (1.0 / tsr_cuda_block_sum (sum, shared));
      FOR_ROW (k, n)
        tsr_cuda_f32 (d, k, i1, i2, i3) *= inv;
    }
}

static __global__ void
k_rope (tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc pos, tsr_cuda_tdesc ff, int has_ff,
        int n_dims, int neox, float freq_base, float freq_scale, int64_t n)
{
  CU_FOR_ITEMS (e, n)
    tsr_cuda_rope_item (d, a, pos, ff, has_ff, n_dims, neox, freq_base,
                        freq_scale, e, NULL);
}

int
tsr_cuda_sum_rows (cudaStream_t s, tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  k_sum_rows<<<tsr_cuda_row_blocks (host_nrows (a)), CU_THREADS, 0, s>>> (d, a);
  return tsr_cuda_launched ();
}

int
tsr_cuda_norm (cudaStream_t s, int rms, float eps, tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  k_norm<<<tsr_cuda_row_blocks (host_nrows (a)), CU_THREADS, 0, s>>> (rms, eps, d,
                                                                 a);
  return tsr_cuda_launched ();
}

int
tsr_cuda_rms_norm_mul (cudaStream_t s, float eps, tsr_cuda_tdesc d, tsr_cuda_tdesc a,
                       tsr_cuda_tdesc b, tsr_cuda_tdesc sum, int add,
                       tsr_cuda_tdesc w, signed char *q8, void *ds8)
{
  if (q8 && (a.ne[0] % CU_QK != 0 || a.ne[2] * a.ne[3] != 1))
    return (int) cudaErrorInvalidValue;
  return tsr_cuda_launch (k_rms_norm_mul, dim3 (tsr_cuda_row_blocks
                                                (host_nrows (a))),
                          dim3 (CU_THREADS), 0, s, eps, d, a, b, sum, add, w,
                          q8, (float2 *) ds8);
}

int
tsr_cuda_soft_max (cudaStream_t s, float scale, tsr_cuda_tdesc d, tsr_cuda_tdesc a,
             tsr_cuda_tdesc mask, int mtype)
{
  k_soft_max<<<tsr_cuda_row_blocks (host_nrows (a)), CU_THREADS, 0, s>>>
    (scale, d, a, mask, mtype);
  return tsr_cuda_launched ();
}

int
tsr_cuda_rope (cudaStream_t s, tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc pos, tsr_cuda_tdesc ff,
         int has_ff, int n_dims, int neox, float freq_base, float freq_scale)
{
  int64_t n = d.ne[0] * host_nrows (d);
  k_rope<<<tsr_cuda_blocks (n), CU_THREADS, 0, s>>> (d, a, pos, ff, has_ff, n_dims,
                                              neox, freq_base, freq_scale, n);
  return tsr_cuda_launched ();
}
