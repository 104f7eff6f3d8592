/* cuda-shape.cu - f32 shape ops, each destination element taken from
 * one source element or a constant: diag_mask_inf, repeat, concat,
 * pad, upscale, and arange (no source).
 *
 * Row-wise launches (tsr_cuda_row_grid): a thread splits its row's index
 * once per row, so per element it only indexes dimension 0 (with
 * 32-bit divisions where repeat and upscale need one).  Sources and
 * destinations are read and written through their strides.  */
#include "cuda-common.cuh"

static __global__ void
k_diag_mask_inf (tsr_cuda_tdesc d, tsr_cuda_tdesc a, int64_t n_past)
{
  CU_FOR_GRID_ROWS (r, tsr_cuda_nrows (d))
    {
      int64_t i1, i2, i3;
      tsr_cuda_split_row (r, d, &i1, &i2, &i3);
      const char *ar = tsr_cuda_at (a, 0, i1, i2, i3);
      char *dr = tsr_cuda_at (d, 0, i1, i2, i3);
      CU_FOR_ROW_ITEMS (i0, d.ne[0])
        *(float *) (dr + i0 * d.nb[0])
          = i0 > n_past + i1 ? -INFINITY
                             : *(const float *) (ar + i0 * a.nb[0]);
    }
}

static __global__ void
k_repeat (tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  CU_FOR_GRID_ROWS (r, tsr_cuda_nrows (d))
    {
      int64_t i1, i2, i3;
      tsr_cuda_split_row (r, d, &i1, &i2, &i3);
      const char *ar = tsr_cuda_at (a, 0, i1 % a.ne[1], i2 % a.ne[2],
                              i3 % a.ne[3]);
      char *dr = tsr_cuda_at (d, 0, i1, i2, i3);
      CU_FOR_ROW_ITEMS (i0, d.ne[0])
        *(float *) (dr + i0 * d.nb[0])
          = *(const float *) (ar + tsr_cuda_mod (i0, a.ne[0]) * a.nb[0]);
    }
}

static __global__ void
k_concat (tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc b, int dim)
{
  CU_FOR_GRID_ROWS (r, tsr_cuda_nrows (d))
    {
      int64_t i1, i2, i3;
      tsr_cuda_split_row (r, d, &i1, &i2, &i3);
      char *dr = tsr_cuda_at (d, 0, i1, i2, i3);
      if (dim == 0)
        {
          const char *ar = tsr_cuda_at (a, 0, i1, i2, i3);
          const char *br = tsr_cuda_at (b, 0, i1, i2, i3);
          CU_FOR_ROW_ITEMS (i0, d.ne[0])
            *(float *) (dr + i0 * d.nb[0])
              = i0 < a.ne[0] ? *(const float *) (ar + i0 * a.nb[0])
                             : *(const float *) (br + (i0 - a.ne[0])
                                                      * b.nb[0]);
          continue;
        }
      /* The whole row comes from a, or from b at the index less a's
         extent in DIM.  */
      const int64_t id = dim == 1 ? i1 : dim == 2 ? i2 : i3;
      const int64_t an = dim == 1 ? a.ne[1] : dim == 2 ? a.ne[2] : a.ne[3];
      const bool from_a = id < an;
      const int64_t off = from_a ? 0 : an;
      const int64_t j1 = i1 - (dim == 1 ? off : 0);
      const int64_t j2 = i2 - (dim == 2 ? off : 0);
      const int64_t j3 = i3 - (dim == 3 ? off : 0);
      const char *sr = from_a ? tsr_cuda_at (a, 0, j1, j2, j3)
                              : tsr_cuda_at (b, 0, j1, j2, j3);
      const int64_t snb0 = from_a ? a.nb[0] : b.nb[0];
      CU_FOR_ROW_ITEMS (i0, d.ne[0])
        *(float *) (dr + i0 * d.nb[0]) = *(const float *) (sr + i0 * snb0);
    }
}

static __global__ void
k_pad (tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  CU_FOR_GRID_ROWS (r, tsr_cuda_nrows (d))
    {
      int64_t i1, i2, i3;
      tsr_cuda_split_row (r, d, &i1, &i2, &i3);
      char *dr = tsr_cuda_at (d, 0, i1, i2, i3);
      /* A row past a's rows is all zeros: its n0 is then 0.  */
      bool inside = i1 < a.ne[1] && i2 < a.ne[2] && i3 < a.ne[3];
      const int64_t n0 = inside ? a.ne[0] : 0;
      const char *ar = inside ? tsr_cuda_at (a, 0, i1, i2, i3) : NULL;
      CU_FOR_ROW_ITEMS (i0, d.ne[0])
        *(float *) (dr + i0 * d.nb[0])
          = i0 < n0 ? *(const float *) (ar + i0 * a.nb[0]) : 0.0f;
    }
}

static __global__ void
k_upscale (tsr_cuda_tdesc d, tsr_cuda_tdesc a, int64_t f)
{
  CU_FOR_GRID_ROWS (r, tsr_cuda_nrows (d))
    {
      int64_t i1, i2, i3;
      tsr_cuda_split_row (r, d, &i1, &i2, &i3);
      const char *ar = tsr_cuda_at (a, 0, i1 / f, i2, i3);
      char *dr = tsr_cuda_at (d, 0, i1, i2, i3);
      CU_FOR_ROW_ITEMS (i0, d.ne[0])
        *(float *) (dr + i0 * d.nb[0])
          = *(const float *) (ar + tsr_cuda_div (i0, f) * a.nb[0]);
    }
}

/* start + i * step in double, rounded once to float, as on the CPU
   (explicit roundings: no fused multiply-add).  */
static __global__ void
k_arange (tsr_cuda_tdesc d, double start, double step)
{
  CU_FOR_ITEMS (i, d.ne[0])
    *(float *) (d.data + i * d.nb[0])
      = (float) __dadd_rn (start, __dmul_rn ((double) i, step));
}

/* The row-wise launches.  */
#define ROW_LAUNCH(kernel, st, d, ...)                                    \
  do                                                                      \
    {                                                                     \
      dim3 grid_, block_;                                                 \
      tsr_cuda_row_grid ((d).ne[0], host_nrows (d), &grid_, &block_);           \
      kernel<<<grid_, block_, 0, st>>> (d, __VA_ARGS__);                  \
    }                                                                     \
  while (0)

int
tsr_cuda_diag_mask_inf (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc a, int n_past)
{
  ROW_LAUNCH (k_diag_mask_inf, st, d, a, (int64_t) n_past);
  return tsr_cuda_launched ();
}

int
tsr_cuda_repeat (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  ROW_LAUNCH (k_repeat, st, d, a);
  return tsr_cuda_launched ();
}

int
tsr_cuda_concat (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc a, tsr_cuda_tdesc b, int dim)
{
  ROW_LAUNCH (k_concat, st, d, a, b, dim);
  return tsr_cuda_launched ();
}

int
tsr_cuda_pad (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc a)
{
  ROW_LAUNCH (k_pad, st, d, a);
  return tsr_cuda_launched ();
}

int
tsr_cuda_upscale (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc a, int factor)
{
  ROW_LAUNCH (k_upscale, st, d, a, (int64_t) factor);
  return tsr_cuda_launched ();
}

int
tsr_cuda_arange (cudaStream_t st, tsr_cuda_tdesc d, float start, float step)
{
  k_arange<<<tsr_cuda_blocks (d.ne[0]), CU_THREADS, 0, st>>> (d, (double) start,
                                                       (double) step);
  return tsr_cuda_launched ();
}
