/* cuda-elementwise.cu - element-wise f32 kernels: add, sub, mul, div
 * with broadcast; scale, silu, gelu and the unary math functions; the
 * gated activations swiglu and geglu.  Rows of at least CU_ROW_MIN
 * elements go a row per thread block (the row's indices computed once
 * per block, the threads walking its elements); shorter rows one
 * thread per destination element in a grid-stride loop.  The formulas are the CPU backend's,
 * NaN and infinity included (tanh saturates to +-1 beyond |u| = 10, so
 * gelu (-inf) is NaN as on the CPU).  */
#include "cuda-common.cuh"

static __device__ inline float
tanh_sat (float u)
{
  return u > 10.0f ? 1.0f : u < -10.0f ? -1.0f : tanhf (u);
}

static __device__ inline float
silu (float v)
{
  return tsr_cuda_silu (v);
}

static __device__ inline float
gelu (float v)
{
  return tsr_cuda_gelu (v);
}

static __device__ inline float
unary (int op, float v, float p0, float p1)
{
  switch (op)
    {
    case TSR_OP_SCALE: return v * p0;
    case TSR_OP_SILU: return silu (v);
    case TSR_OP_GELU: return gelu (v);
    case TSR_OP_SQR: return v * v;
    case TSR_OP_SQRT: return sqrtf (v);
    case TSR_OP_EXP: return expf (v);
    case TSR_OP_LOG: return logf (v);
    case TSR_OP_NEG: return -v;
    case TSR_OP_ABS: return fabsf (v);
    case TSR_OP_SIGMOID: return 1.0f / (1.0f + expf (-v));
    case TSR_OP_TANH: return tanh_sat (v);
    case TSR_OP_RELU: return v > 0.0f || isnan (v) ? v : 0.0f;
    case TSR_OP_GELU_QUICK: return v / (1.0f + expf (-1.702f * v));
    case TSR_OP_GELU_ERF: return 0.5f * v * (1.0f + erff (v * 0.70710678118654752f));
    case TSR_OP_CLAMP: return v < p0 ? p0 : v > p1 ? p1 : v;
    default: return v;
    }
}

static __global__ void
k_binary (int op, tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc b, int64_t n)
{
  CU_FOR_ITEMS (i, n)
    {
      int64_t i0, i1, i2, i3;
      tsr_cuda_split (i, d, &i0, &i1, &i2, &i3);
      float x = tsr_cuda_f32 (a, i0, i1, i2, i3);
      float y = tsr_cuda_f32 (b, i0 % b.ne[0], i1 % b.ne[1], i2 % b.ne[2],
                        i3 % b.ne[3]);
      tsr_cuda_f32 (d, i0, i1, i2, i3) = op == TSR_OP_ADD ? x + y
                                   : op == TSR_OP_SUB ? x - y
                                   : op == TSR_OP_MUL ? x * y : x / y;
    }
}

static __global__ void
k_unary (int op, float p0, float p1, tsr_cuda_tdesc d, tsr_cuda_tdesc a, int64_t n)
{
  CU_FOR_ITEMS (i, n)
    {
      int64_t i0, i1, i2, i3;
      tsr_cuda_split (i, d, &i0, &i1, &i2, &i3);
      tsr_cuda_f32 (d, i0, i1, i2, i3) = unary (op, tsr_cuda_f32 (a, i0, i1, i2, i3),
                                          p0, p1);
    }
}

static __global__ void
k_glu (int op, tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc b, int split, int64_t n)
{
  CU_FOR_ITEMS (i, n)
    {
      int64_t i0, i1, i2, i3;
      tsr_cuda_split (i, d, &i0, &i1, &i2, &i3);
      float x = tsr_cuda_f32 (a, i0, i1, i2, i3);
      float g = split ? tsr_cuda_f32 (a, i0 + d.ne[0], i1, i2, i3)
                      : tsr_cuda_f32 (b, i0, i1, i2, i3);
      tsr_cuda_f32 (d, i0, i1, i2, i3) = (op == TSR_OP_SWIGLU ? silu (x)
                                    : gelu (x)) * g;
    }
}

/* The same three over a row-wise grid (tsr_cuda_row_grid): y walks the
   rows, x a row's elements, so that a single long row (token
   generation: one row of 2048 or 8192) is spread over many thread
   blocks instead of being walked by one (measured on an H100: a glu
   row of 8192 took 30 us a block, latency-bound).  */

static __device__ inline float
binary (int op, float x, float y)
{
  return op == TSR_OP_ADD ? x + y : op == TSR_OP_SUB ? x - y
         : op == TSR_OP_MUL ? x * y : x / y;
}

static __global__ void
k_binary_rows (int op, tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc b, int64_t rows)
{
  CU_FOR_GRID_ROWS (r, rows)
    {
      int64_t i1, i2, i3;
      tsr_cuda_split_row (r, d, &i1, &i2, &i3);
      char *dr = tsr_cuda_at (d, 0, i1, i2, i3);
      const char *ar = tsr_cuda_at (a, 0, i1, i2, i3);
      const char *br = tsr_cuda_at (b, 0, i1 % b.ne[1], i2 % b.ne[2],
                              i3 % b.ne[3]);
      if (b.ne[0] == d.ne[0])
        CU_FOR_ROW_ITEMS (i0, d.ne[0])
          *(float *) (dr + i0 * d.nb[0])
            = binary (op, *(const float *) (ar + i0 * a.nb[0]),
                      *(const float *) (br + i0 * b.nb[0]));
      else
        CU_FOR_ROW_ITEMS (i0, d.ne[0])
          *(float *) (dr + i0 * d.nb[0])
            = binary (op, *(const float *) (ar + i0 * a.nb[0]),
                      *(const float *) (br + (i0 % b.ne[0]) * b.nb[0]));
    }
}

static __global__ void
k_unary_rows (int op, float p0, float p1, tsr_cuda_tdesc d, tsr_cuda_tdesc a,
              int64_t rows)
{
  CU_FOR_GRID_ROWS (r, rows)
    {
      int64_t i1, i2, i3;
      tsr_cuda_split_row (r, d, &i1, &i2, &i3);
      char *dr = tsr_cuda_at (d, 0, i1, i2, i3);
      const char *ar = tsr_cuda_at (a, 0, i1, i2, i3);
      CU_FOR_ROW_ITEMS (i0, d.ne[0])
        *(float *) (dr + i0 * d.nb[0])
          = unary (op, *(const float *) (ar + i0 * a.nb[0]), p0, p1);
    }
}

static __global__ void
k_glu_rows (int op, tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc b, int split,
            int64_t rows)
{
  CU_FOR_GRID_ROWS (r, rows)
    {
      int64_t i1, i2, i3;
      tsr_cuda_split_row (r, d, &i1, &i2, &i3);
      char *dr = tsr_cuda_at (d, 0, i1, i2, i3);
      const char *ar = tsr_cuda_at (a, 0, i1, i2, i3);
      const char *gr = split ? ar + d.ne[0] * a.nb[0]
                             : tsr_cuda_at (b, 0, i1, i2, i3);
      int64_t gs = split ? a.nb[0] : b.nb[0];
      CU_FOR_ROW_ITEMS (i0, d.ne[0])
        {
          float x = *(const float *) (ar + i0 * a.nb[0]);
          float g = *(const float *) (gr + i0 * gs);
          *(float *) (dr + i0 * d.nb[0]) = (op == TSR_OP_SWIGLU ? silu (x)
                                            : gelu (x)) * g;
        }
    }
}

/* Rows this long or longer go a row per thread block.  */
#define CU_ROW_MIN 128

int
tsr_cuda_binary (cudaStream_t s, int op, tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc b)
{
  int64_t n = host_nelements (d);
  if (d.ne[0] >= CU_ROW_MIN)
    {
      dim3 grid, block;
      tsr_cuda_row_grid (d.ne[0], host_nrows (d), &grid, &block);
      k_binary_rows<<<grid, block, 0, s>>> (op, d, a, b, host_nrows (d));
    }
  else
    k_binary<<<tsr_cuda_blocks (n), CU_THREADS, 0, s>>> (op, d, a, b, n);
  return tsr_cuda_launched ();
}

int
tsr_cuda_unary (cudaStream_t s, int op, float p0, float p1, tsr_cuda_tdesc d,
          tsr_cuda_tdesc a)
{
  int64_t n = host_nelements (d);
  if (d.ne[0] >= CU_ROW_MIN)
    {
      dim3 grid, block;
      tsr_cuda_row_grid (d.ne[0], host_nrows (d), &grid, &block);
      k_unary_rows<<<grid, block, 0, s>>> (op, p0, p1, d, a, host_nrows (d));
    }
  else
    k_unary<<<tsr_cuda_blocks (n), CU_THREADS, 0, s>>> (op, p0, p1, d, a, n);
  return tsr_cuda_launched ();
}

int
tsr_cuda_glu (cudaStream_t s, int op, tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc b,
        int split)
{
  int64_t n = host_nelements (d);
  if (d.ne[0] >= CU_ROW_MIN)
    {
      dim3 grid, block;
      tsr_cuda_row_grid (d.ne[0], host_nrows (d), &grid, &block);
      k_glu_rows<<<grid, block, 0, s>>> (op, d, a, b, split,
                                         host_nrows (d));
    }
  else
    k_glu<<<tsr_cuda_blocks (n), CU_THREADS, 0, s>>> (op, d, a, b, split, n);
  return tsr_cuda_launched ();
}
