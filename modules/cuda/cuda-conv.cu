/* cuda-conv.cu - convolution helpers: im2col (patches into rows, f32
 * or f16 result) and pool_2d (max or average over windows, padding
 * cells excluded), both on f32 inputs of any layout.
 *
 * Row-wise launches (tsr_cuda_row_grid) over the destination: im2col's rows
 * are output positions, their elements the patch (c, kh, kw) (32-bit
 * index arithmetic: the checks keep patches below 2^31 elements);
 * pool_2d's rows are (oh, c, n), their elements ow.  */
#include <tessera/ops.h>          /* enum tsr_pool_op */

#include "cuda-common.cuh"

struct im2col_geom
{
  int64_t kw, kh, c;            /* kernel extent and channels */
  int64_t w, h;                 /* input extent (h = 1 for 1-D) */
  int64_t s0, s1, p0, p1, d0, d1;
  int is_2d;
};

static __global__ void
k_im2col (tsr_cuda_tdesc d, int dtype, tsr_cuda_tdesc in, im2col_geom g)
{
  CU_FOR_GRID_ROWS (r, tsr_cuda_nrows (d))
    {
      int64_t i1, i2, i3;
      tsr_cuda_split_row (r, d, &i1, &i2, &i3);
      /* 2-D rows are (ow, oh, n); 1-D rows (ow, n).  */
      const int64_t ow = i1, oh = g.is_2d ? i2 : 0, n = g.is_2d ? i3 : i2;
      char *dr = tsr_cuda_at (d, 0, i1, i2, i3);
      CU_FOR_ROW_ITEMS (k, d.ne[0])
        {
          /* k = (ch * kh + y) * kw + x.  */
          const uint32_t kk = (uint32_t) k, kw = (uint32_t) g.kw;
          const uint32_t khw = (uint32_t) (g.kw * g.kh);
          const int64_t ch = kk / khw, ky = kk % khw / kw, kx = kk % kw;
          const int64_t x = ow * g.s0 - g.p0 + kx * g.d0;
          const int64_t y = oh * g.s1 - g.p1 + ky * g.d1;
          float v = 0.0f;
          if (x >= 0 && x < g.w && y >= 0 && y < g.h)
            v = g.is_2d ? tsr_cuda_f32 (in, x, y, ch, n) : tsr_cuda_f32 (in, x, ch, n, 0);
          tsr_cuda_store (dr + k * d.nb[0], dtype, v);
        }
    }
}

int
tsr_cuda_im2col (cudaStream_t st, tsr_cuda_tdesc d, int dtype, tsr_cuda_tdesc in,
           const int64_t kernel_ne[4], const int32_t params[7])
{
  im2col_geom g;
  dim3 grid, block;

  g.s0 = params[0], g.s1 = params[1], g.p0 = params[2], g.p1 = params[3];
  g.d0 = params[4], g.d1 = params[5], g.is_2d = params[6] != 0;
  g.kw = kernel_ne[0];
  g.w = in.ne[0];
  if (g.is_2d)
    g.kh = kernel_ne[1], g.c = kernel_ne[2], g.h = in.ne[1];
  else
    {
      g.kh = 1, g.c = kernel_ne[1], g.h = 1;
      g.s1 = 1, g.p1 = 0, g.d1 = 1;
    }
  tsr_cuda_row_grid (d.ne[0], host_nrows (d), &grid, &block);
  k_im2col<<<grid, block, 0, st>>> (d, dtype, in, g);
  return tsr_cuda_launched ();
}

struct pool_geom
{
  int is_max;
  int64_t k0, k1, s0, s1, p0, p1;
};

static __global__ void
k_pool_2d (tsr_cuda_tdesc d, tsr_cuda_tdesc a, pool_geom g)
{
  CU_FOR_GRID_ROWS (r, tsr_cuda_nrows (d))
    {
      int64_t oh, i2, i3;
      tsr_cuda_split_row (r, d, &oh, &i2, &i3);
      char *dr = tsr_cuda_at (d, 0, oh, i2, i3);
      int64_t y0 = oh * g.s1 - g.p1, y1 = y0 + g.k1;
      y0 = y0 < 0 ? 0 : y0;
      y1 = y1 > a.ne[1] ? a.ne[1] : y1;
      CU_FOR_ROW_ITEMS (ow, d.ne[0])
        {
          /* The window clipped to the input, as the CPU's pool_cell.  */
          int64_t x0 = ow * g.s0 - g.p0, x1 = x0 + g.k0;
          double sum = 0.0;
          float max = -INFINITY;
          x0 = x0 < 0 ? 0 : x0;
          x1 = x1 > a.ne[0] ? a.ne[0] : x1;
          for (int64_t y = y0; y < y1; y++)
            for (int64_t x = x0; x < x1; x++)
              {
                float v = tsr_cuda_f32 (a, x, y, i2, i3);
                sum += v;
                if (isnan (v) || isnan (max))
                  max = NAN;
                else if (v > max)
                  max = v;
              }
          *(float *) (dr + ow * d.nb[0])
            = g.is_max ? max
                       : (float) (sum / (double) ((x1 - x0) * (y1 - y0)));
        }
    }
}

int
tsr_cuda_pool_2d (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc a, const int32_t params[7])
{
  pool_geom g = { params[0] == TSR_POOL_MAX, params[1], params[2], params[3], params[4],
                  params[5], params[6] };
  dim3 grid, block;

  tsr_cuda_row_grid (d.ne[0], host_nrows (d), &grid, &block);
  k_pool_2d<<<grid, block, 0, st>>> (d, a, g);
  return tsr_cuda_launched ();
}
