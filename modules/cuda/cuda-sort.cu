/* cuda-sort.cu - argsort and top_k of f32 rows: a stable merge sort
 * of each row's (value, index) pairs, NaNs last in both orders.
 *
 * The CPU sorts stably by a strict weak order (goes_before below), so
 * its result is the one stable order of the row; any stable sort by
 * the same order gives the same indices.  Here one block sorts one row
 * at a time, bottom-up: in the pass that merges runs of width w, the
 * element at p of a left run moves to lo + (p - lo) + the number of
 * elements of the right run that go strictly before it, and an element
 * of a right run to lo + (p - mid) + the number of elements of the
 * left run it does not go before (ties: left first, hence stable).
 * Both counts are prefix lengths of sorted runs, found by binary
 * search, so every thread places its elements independently.  The
 * pairs ping-pong between two buffers of the caller's scratch memory,
 * 2 * n (value, index) pairs per block.  top_k writes the first k.  */
#include "cuda-common.cuh"

/* Whether X goes strictly before Y (the CPU's goes_before).  */
static __device__ inline bool
goes_before (float x, float y, bool desc)
{
  if (isnan (x))
    return false;
  if (isnan (y))
    return true;
  return desc ? x > y : x < y;
}

/* The length of the prefix of sorted V[LO, HI) whose elements satisfy
   goes_before (v, KEY) when STRICT, else !goes_before (KEY, v).  */
static __device__ inline int64_t
prefix (const float *v, int64_t lo, int64_t hi, float key, bool strict,
        bool desc)
{
  int64_t a = lo, b = hi;

  while (a < b)
    {
      int64_t c = a + (b - a) / 2;
      bool in = strict ? goes_before (v[c], key, desc)
                       : !goes_before (key, v[c], desc);
      if (in)
        a = c + 1;
      else
        b = c;
    }
  return a - lo;
}

static __global__ void
k_argsort (tsr_cuda_tdesc d, tsr_cuda_tdesc a, int desc, float *vals, int32_t *idx)
{
  const int64_t n = a.ne[0];
  float *v0 = vals + (int64_t) blockIdx.x * 2 * n, *v1 = v0 + n;
  int32_t *x0 = idx + (int64_t) blockIdx.x * 2 * n, *x1 = x0 + n;

  CU_FOR_ROWS (r, tsr_cuda_nrows (a))
    {
      int64_t i1, i2, i3;
      float *vf = v0, *vt = v1;
      int32_t *xf = x0, *xt = x1;

      tsr_cuda_split_row (r, a, &i1, &i2, &i3);
      const char *row = tsr_cuda_at (a, 0, i1, i2, i3);
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        {
          vf[i] = *(const float *) (row + i * a.nb[0]);
          xf[i] = (int32_t) i;
        }
      __syncthreads ();
      for (int64_t w = 1; w < n; w *= 2)
        {
          for (int64_t p = threadIdx.x; p < n; p += blockDim.x)
            {
              int64_t lo = p & ~(2 * w - 1);
              int64_t mid = lo + w < n ? lo + w : n;
              int64_t hi = lo + 2 * w < n ? lo + 2 * w : n;
              float key = vf[p];
              int64_t to = p < mid
                           ? p + prefix (vf, mid, hi, key, true, desc)
                           : lo + (p - mid)
                             + prefix (vf, lo, mid, key, false, desc);
              vt[to] = key;
              xt[to] = xf[p];
            }
          __syncthreads ();
          float *tv = vf;
          vf = vt;
          vt = tv;
          int32_t *tx = xf;
          xf = xt;
          xt = tx;
        }
      char *dr = tsr_cuda_at (d, 0, i1, i2, i3);
      for (int64_t i = threadIdx.x; i < d.ne[0]; i += blockDim.x)
        *(int32_t *) (dr + i * d.nb[0]) = xf[i];
      __syncthreads ();         /* the buffers free for the next row */
    }
}

static unsigned
argsort_blocks (int64_t n, int64_t nrows)
{
  /* At most CU_SORT_SCRATCH bytes of pairs, at least one block.  */
  int64_t per_block = 2 * n * (int64_t) (sizeof (float) + sizeof (int32_t));
  int64_t blocks = CU_SORT_SCRATCH / per_block;

  if (blocks > nrows)
    blocks = nrows;
  if (blocks > CU_MAX_BLOCKS)
    blocks = CU_MAX_BLOCKS;
  return (unsigned) (blocks < 1 ? 1 : blocks);
}

size_t
tsr_cuda_argsort_scratch (int64_t n, int64_t nrows)
{
  return (size_t) argsort_blocks (n, nrows) * 2 * (size_t) n
         * (sizeof (float) + sizeof (int32_t));
}

int
tsr_cuda_argsort (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc a, int desc, void *scratch)
{
  unsigned blocks = argsort_blocks (a.ne[0], host_nrows (a));
  float *vals = (float *) scratch;
  int32_t *idx = (int32_t *) (vals + (size_t) blocks * 2 * a.ne[0]);

  k_argsort<<<blocks, CU_THREADS, 0, st>>> (d, a, desc, vals, idx);
  return tsr_cuda_launched ();
}
