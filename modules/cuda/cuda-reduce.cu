/* cuda-reduce.cu - reductions of f32 tensors of any layout: sum (of
 * everything), mean (of each row), argmax (of each row).
 *
 * Sums are accumulated in double, as on the CPU, and in a fixed order
 * (no atomics), so a result does not change from run to run.  sum
 * takes two kernels: each block sums its rows into a double in the
 * caller's scratch, then one block sums those.  mean and argmax take
 * one block per row.  argmax skips NaNs and keeps the lowest index
 * among equal maxima, which any order of comparison gives, so it
 * matches the CPU's first-found maximum exactly.  */
#include "cuda-common.cuh"

/* This thread's part of the sum of row (I1, I2, I3) of A.  */
static __device__ double
thread_row_sum (const tsr_cuda_tdesc &a, int64_t i1, int64_t i2, int64_t i3)
{
  const char *row = tsr_cuda_at (a, 0, i1, i2, i3);
  double s = 0.0;

  for (int64_t i0 = threadIdx.x; i0 < a.ne[0]; i0 += CU_THREADS)
    s += *(const float *) (row + i0 * a.nb[0]);
  return s;
}

/* The sum of the rows R = blockIdx.x, + gridDim.x, ... of A into
   PARTIAL[blockIdx.x].  */
static __global__ void
k_sum_partial (tsr_cuda_tdesc a, double *partial)
{
  __shared__ double shared[CU_THREADS];
  double s = 0.0;

  CU_FOR_ROWS (r, tsr_cuda_nrows (a))
    {
      int64_t i1, i2, i3;
      tsr_cuda_split_row (r, a, &i1, &i2, &i3);
      s += thread_row_sum (a, i1, i2, i3);
    }
  s = tsr_cuda_block_sum (s, shared);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = s;
}

static __global__ void
k_sum_final (tsr_cuda_tdesc d, const double *partial, unsigned n)
{
  __shared__ double shared[CU_THREADS];
  double s = 0.0;

  for (unsigned i = threadIdx.x; i < n; i += CU_THREADS)
    s += partial[i];
  s = tsr_cuda_block_sum (s, shared);
  if (threadIdx.x == 0)
    tsr_cuda_f32 (d, 0, 0, 0, 0) = (float) s;
}

/* Blocks of k_sum_partial, at most CU_SUM_BLOCKS (the partial sums the
   caller's scratch holds).  */
static unsigned
sum_blocks (tsr_cuda_tdesc a)
{
  int64_t rows = host_nrows (a);
  return (unsigned) (rows < CU_SUM_BLOCKS ? rows : CU_SUM_BLOCKS);
}

int
tsr_cuda_sum (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc a, double *partial)
{
  unsigned blocks = sum_blocks (a);

  k_sum_partial<<<blocks, CU_THREADS, 0, st>>> (a, partial);
  k_sum_final<<<1, CU_THREADS, 0, st>>> (d, partial, blocks);
  tsr_cuda_count (1);           /* the partial sums */
  return tsr_cuda_launched ();
}

static __global__ void
k_mean (tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  __shared__ double shared[CU_THREADS];

  CU_FOR_ROWS (r, tsr_cuda_nrows (a))
    {
      int64_t i1, i2, i3;
      tsr_cuda_split_row (r, a, &i1, &i2, &i3);
      double s = tsr_cuda_block_sum (thread_row_sum (a, i1, i2, i3), shared);
      if (threadIdx.x == 0)
        tsr_cuda_f32 (d, 0, i1, i2, i3) = (float) (s / (double) a.ne[0]);
    }
}

int
tsr_cuda_mean (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  k_mean<<<tsr_cuda_row_blocks (host_nrows (a)), CU_THREADS, 0, st>>> (d, a);
  return tsr_cuda_launched ();
}

/* Whether candidate (V, I) beats (BV, BI); I < 0 is "none" (and NaNs
   never become candidates).  */
static __device__ inline bool
better (float v, int64_t i, float bv, int64_t bi)
{
  return i >= 0 && (bi < 0 || v > bv || (v == bv && i < bi));
}

static __global__ void
k_argmax (tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  __shared__ float sv[CU_THREADS];
  __shared__ int64_t si[CU_THREADS];

  CU_FOR_ROWS (r, tsr_cuda_nrows (a))
    {
      int64_t i1, i2, i3, bi = -1;
      float bv = 0.0f;
      tsr_cuda_split_row (r, a, &i1, &i2, &i3);
      const char *row = tsr_cuda_at (a, 0, i1, i2, i3);
      for (int64_t i0 = threadIdx.x; i0 < a.ne[0]; i0 += CU_THREADS)
        {
          float v = *(const float *) (row + i0 * a.nb[0]);
          if (!isnan (v) && better (v, i0, bv, bi))
            {
              bv = v;
              bi = i0;
            }
        }
      sv[threadIdx.x] = bv;
      si[threadIdx.x] = bi;
      __syncthreads ();
      for (unsigned w = CU_THREADS / 2; w > 0; w /= 2)
        {
          if (threadIdx.x < w
              && better (sv[threadIdx.x + w], si[threadIdx.x + w],
                         sv[threadIdx.x], si[threadIdx.x]))
            {
              sv[threadIdx.x] = sv[threadIdx.x + w];
              si[threadIdx.x] = si[threadIdx.x + w];
            }
          __syncthreads ();
        }
      if (threadIdx.x == 0)
        *(int32_t *) tsr_cuda_at (d, i1, i2, i3, 0) = (int32_t) (si[0] < 0 ? 0
                                                           : si[0]);
      __syncthreads ();         /* sv, si free for the next row */
    }
}

int
tsr_cuda_argmax (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  k_argmax<<<tsr_cuda_row_blocks (host_nrows (a)), CU_THREADS, 0, st>>> (d, a);
  return tsr_cuda_launched ();
}

/* Wait until the GPU's nanosecond timer passes NS from the start.  */
static __global__ void
k_hold (unsigned long long ns)
{
  unsigned long long t0, t;
  asm volatile ("mov.u64 %0, %%globaltimer;" : "=l" (t0));
  do
    asm volatile ("mov.u64 %0, %%globaltimer;" : "=l" (t));
  while (t - t0 < ns);
}

int
tsr_cuda_hold (cudaStream_t st, double us)
{
  k_hold<<<1, 1, 0, st>>> ((unsigned long long) (us * 1e3));
  return (int) cudaGetLastError ();
}
