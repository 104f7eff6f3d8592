/* cuda-quant.cu - the fast paths of dense data: conversions between
 * dense tensors without per-element index arithmetic, dequantization
 * of q8_0 / q4_0 a block per thread, and matrix-vector products that
 * read quantized weights as they are.
 *
 * tsr_cuda_convert (cuda-copy.cu) follows any strides, at the price of four
 * 64-bit divisions per element; mul_mat converts whole weight matrices
 * and activations, which are dense, so the dense case gets its own
 * kernels here (tsr_cuda_convert_dense).
 *
 * The other block types (cuda-blocks.cuh) are dequantized 16 elements
 * a thread (k_dequant_chunks) for cuBLAS, and have a matrix-vector
 * kernel of their own (k_mul_mat_vec_chunks), a warp per weight row
 * and a 16-element chunk per lane, decoded with the reference's float
 * operations and multiplied with every column.
 *
 * tsr_cuda_mul_mat_vec_set computes d = a^T b for sets of weights a
 * [k, m] and at most CU_MMV_MAX_COLS activation columns b [k, n]; for
 * q8_0 / q4_0 weights (token
 * generation's batched, three- and four-dimensional products; the
 * two-dimensional ones go to cuda-mmvq.cu, on 8-bit activations):
 * converting the weights to f16 for cuBLAS would write
 * and read them again at four times their size, so here one warp
 * takes one weight row, eight lanes to a block (CU_MMV_LANES), each
 * block read once and multiplied with every column.  Each lane applies
 * the block's scale to its partial sum, in f32; the activations stay
 * f32 (no rounding beyond the CPU reference's).  */
#include "cuda-common.cuh"

#define CU_WARP 32
#define CU_MMV_WARPS 8           /* rows per thread block */

/* Dense conversions.  */

/* f32, f16, bf16 to f32, f16, bf16: element sizes DSIZE, SSIZE.  */
static __global__ void
k_convert_flat (char *d, int dtype, int dsize, const char *s, int stype,
                int ssize, int64_t n)
{
  CU_FOR_ITEMS (i, n)
    tsr_cuda_store (d + i * dsize, dtype, tsr_cuda_load (s, i, ssize, stype));
}

/* f32 to f16 four elements a thread (the activations of an f16
   product): 16-byte loads, 8-byte stores.  */
static __global__ void
k_f32_to_f16_x4 (uint2 *d, const float4 *s, int64_t n4)
{
  CU_FOR_ITEMS (i, n4)
    {
      float4 v = s[i];
      d[i] = make_uint2 ((uint32_t) tsr_cuda_f32_to_f16 (v.x)
                         | ((uint32_t) tsr_cuda_f32_to_f16 (v.y) << 16),
                         (uint32_t) tsr_cuda_f32_to_f16 (v.z)
                         | ((uint32_t) tsr_cuda_f32_to_f16 (v.w) << 16));
    }
}

/* Block I of a q8_0 / q4_0 array at S: its scale, and its 32 values
   times the scale into V.  */
static __device__ inline void
tsr_cuda_block_values (const unsigned char *s, int64_t i, int type, float v[32])
{
  if (type == TSR_TYPE_Q8_0)
    {
      const unsigned char *b = s + i * CU_Q8_BYTES;
      float d = tsr_cuda_f16_to_f32 ((uint16_t) (b[0] | (b[1] << 8)));
#pragma unroll
      for (int j = 0; j < 32; j++)
        v[j] = d * (float) (signed char) b[2 + j];
    }
  else
    {
      const unsigned char *b = s + i * CU_Q4_BYTES;
      float d = tsr_cuda_f16_to_f32 ((uint16_t) (b[0] | (b[1] << 8)));
#pragma unroll
      for (int j = 0; j < 16; j++)
        {
          unsigned q = b[2 + j];
          v[j] = d * (float) ((int) (q & 15u) - 8);
          v[j + 16] = d * (float) ((int) (q >> 4) - 8);
        }
    }
}

/* The N values V (a multiple of 8) as elements N I .. N I + N - 1 of
   the dense f32 or f16 (DTYPE) array D, in 16-byte stores: D is
   aligned to 4 N bytes (f32) or 2 N bytes (f16) there.  */
template <int N>
static __device__ inline void
tsr_cuda_store_values (void *d, int dtype, int64_t i, const float v[N])
{
  if (dtype == TSR_TYPE_F32)
    {
      float4 *o = (float4 *) ((float *) d + i * N);
#pragma unroll
      for (int j = 0; j < N / 4; j++)
        o[j] = make_float4 (v[4 * j], v[4 * j + 1], v[4 * j + 2],
                            v[4 * j + 3]);
    }
  else
    {
      uint4 *o = (uint4 *) ((uint16_t *) d + i * N);
#pragma unroll
      for (int j = 0; j < N / 8; j++)
        {
          uint32_t w[4];
#pragma unroll
          for (int h = 0; h < 4; h++)
            w[h] = (uint32_t) tsr_cuda_f32_to_f16 (v[8 * j + 2 * h])
                   | ((uint32_t) tsr_cuda_f32_to_f16 (v[8 * j + 2 * h + 1]) << 16);
          o[j] = make_uint4 (w[0], w[1], w[2], w[3]);
        }
    }
}

/* A q8_0 / q4_0 block a thread.  */
static __global__ void
k_dequant_flat (void *d, int dtype, const unsigned char *s, int stype,
                int64_t nblocks)
{
  CU_FOR_ITEMS (i, nblocks)
    {
      float v[32];
      tsr_cuda_block_values (s, i, stype, v);
      tsr_cuda_store_values<32> (d, dtype, i, v);
    }
}

/* The other block types (cuda-blocks.cuh), a 16-element chunk a
   thread.  */
template <int T>
static __global__ void
k_dequant_chunks (void *d, int dtype, const char *s, int64_t nchunks)
{
  const int per = tsr_cuda_block_elems (T) / 16, bytes = tsr_cuda_block_bytes (T);
  CU_FOR_ITEMS (i, nchunks)
    {
      float v[16];
      tsr_cuda_block_chunk (s + tsr_cuda_div (i, per) * bytes, T, (int) tsr_cuda_mod (i, per),
                      v);
      tsr_cuda_store_values<16> (d, dtype, i, v);
    }
}

/* CU_BLOCK_TYPES (X): X (T) for every block type but q8_0 and q4_0,
   which have kernels of their own.  */
#define CU_BLOCK_TYPES(X)                                                 \
  X (TSR_TYPE_Q4_1) X (TSR_TYPE_Q5_0) X (TSR_TYPE_Q5_1) X (TSR_TYPE_Q2_K)  \
  X (TSR_TYPE_Q3_K) X (TSR_TYPE_Q4_K) X (TSR_TYPE_Q5_K) X (TSR_TYPE_Q6_K)  \
  X (TSR_TYPE_IQ4_NL) X (TSR_TYPE_IQ4_XS) X (TSR_TYPE_MXFP4)

static int
dequant_chunks (cudaStream_t st, void *d, int dtype, const void *s,
                int stype, int64_t n)
{
  int64_t nc = n / 16;
  switch (stype)
    {
#define CASE(T)                                                           \
    case T:                                                               \
      k_dequant_chunks<T><<<tsr_cuda_blocks (nc), CU_THREADS, 0, st>>> (        \
        d, dtype, (const char *) s, nc);                                  \
      break;
    CU_BLOCK_TYPES (CASE)
#undef CASE
    default:
      return (int) cudaErrorInvalidValue;
    }
  return tsr_cuda_launched ();
}

int
tsr_cuda_convert_dense (cudaStream_t st, void *d, int dtype, const void *s,
                  int stype, int64_t n)
{
  if (stype == TSR_TYPE_Q8_0 || stype == TSR_TYPE_Q4_0)
    {
      int64_t nb = n / CU_QK;
      k_dequant_flat<<<tsr_cuda_blocks (nb), CU_THREADS, 0, st>>> (
        d, dtype, (const unsigned char *) s, stype, nb);
    }
  else if (tsr_cuda_is_block (stype))
    return dequant_chunks (st, d, dtype, s, stype, n);
  else if (stype == TSR_TYPE_F32 && dtype == TSR_TYPE_F16 && n % 4 == 0)
    k_f32_to_f16_x4<<<tsr_cuda_blocks (n / 4), CU_THREADS, 0, st>>> (
      (uint2 *) d, (const float4 *) s, n / 4);
  else
    k_convert_flat<<<tsr_cuda_blocks (n), CU_THREADS, 0, st>>> (
      (char *) d, dtype, dtype == TSR_TYPE_F32 ? 4 : 2, (const char *) s,
      stype, stype == TSR_TYPE_F32 ? 4 : 2, n);
  return tsr_cuda_launched ();
}

/* Matrix-vector products with quantized weights.  */

/* Lanes per weight block, and elements per lane.  Eight lanes take
   the 32 elements of one block, four each, so that a warp's loads of
   activations are 128 contiguous bytes a block (a lane per block would
   make every 16-byte load touch 32 cache lines: L1-bound, measured).  */
#define CU_MMV_LANES 8
#define CU_MMV_BLOCKS (CU_WARP / CU_MMV_LANES)   /* blocks a warp step */

/* Lane T's four weights of the block at BLK (TYPE): elements
   4T..4T+3 of the block into Q; returns the block's scale.  Weight
   bytes are read as 16-bit words: blocks are 2-byte aligned.  */
static __device__ inline float
tsr_cuda_block_quad (const unsigned char *blk, int type, int t, float q[4])
{
  const uint16_t *b = (const uint16_t *) blk;

  /* A weight becomes a float with its bits placed under the exponent
     of 2^23 (a byte permute and a subtraction, exact) rather than an
     integer conversion, which runs at a quarter of the rate.  */
  uint32_t w;
  float off;
  if (type == TSR_TYPE_Q8_0)
    {
      /* Elements 4t..4t+3 are bytes 2+4t..5+4t; signed, + 128.  */
      w = (b[1 + 2 * t] | ((uint32_t) b[2 + 2 * t] << 16)) ^ 0x80808080u;
      off = 8388608.0f + 128.0f;
    }
  else
    {
      /* Byte j holds element j (low nibble) and j + 16 (high): lanes
         0-3 the low nibbles of bytes 4t..4t+3, lanes 4-7 the high.  */
      int u = t & 3, shift = (t >> 2) * 4;
      w = ((b[1 + 2 * u] | ((uint32_t) b[2 + 2 * u] << 16)) >> shift)
          & 0x0F0F0F0Fu;
      off = 8388608.0f + 8.0f;
    }
#pragma unroll
  for (int e = 0; e < 4; e++)
    q[e] = __int_as_float ((int) __byte_perm (w, 0x4B000000u, 0x7440 + e))
           - off;
  return tsr_cuda_f16_to_f32 (b[0]);
}

/* D times the dot product of Q with the four activations V, added to
   ACC.  */
static __device__ inline float
tsr_cuda_quad_dot (float d, const float q[4], float4 v, float acc)
{
  float s = q[0] * v.x;
  s = fmaf (q[1], v.y, s);
  s = fmaf (q[2], v.z, s);
  s = fmaf (q[3], v.w, s);
  return fmaf (d, s, acc);
}

/* Lane T's share of the dot products of the weight block at BLK (TYPE)
   with the activations at X[c] + OFF (elements 4T..4T+3 of the block,
   16-byte aligned) of the NC columns, scaled and added to ACC[c].  */
template <int NC>
static __device__ inline void
tsr_cuda_block_dot (const unsigned char *blk, int type, int t,
              const float *const x[NC], int64_t off, float acc[NC])
{
  float q[4];
  float d = tsr_cuda_block_quad (blk, type, t, q);
#pragma unroll
  for (int c = 0; c < NC; c++)
    acc[c] = tsr_cuda_quad_dot (d, q, __ldg ((const float4 *) (x[c] + off)),
                                acc[c]);
}

/* What both matrix-vector kernels start with: the row of this warp
   (false when past the end), its weights, its columns' activations
   and zeroed sums.  blockIdx.y is the batch (i2, i3) of d.  */
template <int NC>
static __device__ inline bool
tsr_cuda_mmv_setup (const tsr_cuda_tdesc &d, const tsr_cuda_tdesc &a, const tsr_cuda_tdesc &b,
              int64_t r2, int64_t r3, const unsigned char **w,
              const float *x[NC], float acc[NC], int64_t *row)
{
  int64_t i2 = blockIdx.y % d.ne[2], i3 = blockIdx.y / d.ne[2];

  *row = (int64_t) blockIdx.x * CU_MMV_WARPS + threadIdx.x / CU_WARP;
  if (*row >= d.ne[0])
    return false;
  *w = (const unsigned char *) a.data + *row * a.nb[1]
       + (i2 / r2) * a.nb[2] + (i3 / r3) * a.nb[3];
#pragma unroll
  for (int c = 0; c < NC; c++)
    {
      x[c] = (const float *) (b.data + c * b.nb[1] + i2 * b.nb[2]
                              + i3 * b.nb[3]);
      acc[c] = 0.0f;
    }
  return true;
}

/* The warp's sums into d[row, c].  */
template <int NC>
static __device__ inline void
tsr_cuda_mmv_finish (const tsr_cuda_tdesc &d, int64_t row, float acc[NC])
{
  int64_t i2 = blockIdx.y % d.ne[2], i3 = blockIdx.y / d.ne[2];
  int lane = threadIdx.x % CU_WARP;

#pragma unroll
  for (int c = 0; c < NC; c++)
    {
      float s = tsr_cuda_warp_sum (acc[c]);
      if (lane == 0)
        *(float *) (d.data + row * 4 + c * d.nb[1] + i2 * d.nb[2]
                    + i3 * d.nb[3]) = s;
    }
}

/* Any row layout with 2-byte aligned blocks: one warp per weight row,
   CU_MMV_LANES lanes to a block, CU_MMV_BLOCKS blocks at a time.  */
template <int NC>
static __global__ void
k_mul_mat_vec_q (tsr_cuda_tdesc d, tsr_cuda_tdesc a, int atype, tsr_cuda_tdesc b,
                 int64_t r2, int64_t r3)
{
  const unsigned char *w;
  const float *x[NC];
  float acc[NC];
  int64_t row;
  int lane = threadIdx.x % CU_WARP;
  int bytes = atype == TSR_TYPE_Q8_0 ? CU_Q8_BYTES : CU_Q4_BYTES;

  if (!tsr_cuda_mmv_setup<NC> (d, a, b, r2, r3, &w, x, acc, &row))
    return;
  int t = lane % CU_MMV_LANES;
  int64_t nblocks = a.ne[0] / CU_QK;
#pragma unroll 4
  for (int64_t i = lane / CU_MMV_LANES; i < nblocks; i += CU_MMV_BLOCKS)
    tsr_cuda_block_dot<NC> (w + i * bytes, atype, t, x, i * CU_QK + 4 * t, acc);
  tsr_cuda_mmv_finish<NC> (d, row, acc);
}

/* Blocks of a row a stage holds, and the 16-byte words they take at
   most (q8_0).  */
#define CU_MMV_STAGE 32
#define CU_MMV_STAGE_WORDS (CU_MMV_STAGE * CU_Q8_BYTES / 16)
#define CU_MMV_STAGE_REGS ((CU_MMV_STAGE_WORDS + CU_WARP - 1) / CU_WARP)

/* Rows of whole 16-byte words (16-byte aligned, a multiple of 256
   elements long), in stages of CU_MMV_STAGE blocks (1024 elements).
   Each warp copies its row's stage into shared memory and the thread
   block copies the stage's activations, all with 16-byte loads; the
   loads of the next stage are issued into registers before the
   current one is multiplied, so that every warp keeps memory busy
   while it computes.  The activations are read once per thread block
   instead of once per row.  (Measured on an H100 before this design: a
   warp reading its weights a stage at a time and its activations a
   block at a time read 312 GB/s of q4_0 at 4096 x 14336, latency-bound
   on the activation loads.)  The products of SET run one after the
   other in each thread block, on the same activations (L2-resident
   after the first).  */
template <int NC>
static __global__ void
k_mul_mat_vec_q_staged (tsr_cuda_mmv_set set, int atype, tsr_cuda_tdesc b,
                        int64_t r2, int64_t r3)
{
  __shared__ uint4 ws[CU_MMV_WARPS][CU_MMV_STAGE_WORDS];
  __shared__ float4 xs[NC][CU_MMV_STAGE * CU_QK / 4];
  const int lane = threadIdx.x % CU_WARP, warp = threadIdx.x / CU_WARP;
  const int64_t i2 = blockIdx.y % set.d[0].ne[2];
  const int64_t i3 = blockIdx.y / set.d[0].ne[2];
  const int64_t row = (int64_t) blockIdx.x * CU_MMV_WARPS + warp;
  const int bytes = atype == TSR_TYPE_Q8_0 ? CU_Q8_BYTES : CU_Q4_BYTES;
  const int64_t nblocks = set.a[0].ne[0] / CU_QK;
  const float4 *x[NC];
  float first[NC];

#pragma unroll
  for (int c = 0; c < NC; c++)
    x[c] = (const float4 *) (b.data + c * b.nb[1] + i2 * b.nb[2]
                             + i3 * b.nb[3]);

#pragma unroll
  for (int m = 0; m < CU_MMV_MAX_SET; m++)
    {
      if (m >= set.n)
        break;
      const tsr_cuda_tdesc &a = set.a[m];
      /* The same for every thread of the block: it may skip a product
         whose rows end before its own.  */
      if ((int64_t) blockIdx.x * CU_MMV_WARPS >= a.ne[1])
        continue;
      const bool live = row < a.ne[1];
      const uint4 *src = (const uint4 *) ((const char *) a.data
                                          + (live ? row : 0) * a.nb[1]
                                          + (i2 / r2) * a.nb[2]
                                          + (i3 / r3) * a.nb[3]);
      float acc[NC];
      uint4 wr[CU_MMV_STAGE_REGS];
      float4 xr[NC];

#pragma unroll
      for (int c = 0; c < NC; c++)
        acc[c] = 0.0f;

  /* The loads of the stage starting at block I0 into WR and XR.  */
#define CU_MMV_FETCH(i0)                                                \
  do                                                                    \
    {                                                                   \
      int n_ = nblocks - (i0) < CU_MMV_STAGE ? (int) (nblocks - (i0))   \
                                             : CU_MMV_STAGE;            \
      int words_ = n_ * bytes / 16;                                     \
      const uint4 *from_ = src + (i0) * bytes / 16;                     \
      _Pragma ("unroll")                                                \
      for (int k_ = 0; k_ < CU_MMV_STAGE_REGS; k_++)                    \
        if (live && lane + k_ * CU_WARP < words_)                       \
          wr[k_] = __ldg (from_ + lane + k_ * CU_WARP);                 \
      _Pragma ("unroll")                                                \
      for (int c_ = 0; c_ < NC; c_++)                                   \
        if ((int) threadIdx.x < n_ * CU_QK / 4)                         \
          xr[c_] = __ldg (x[c_] + (i0) * CU_QK / 4 + threadIdx.x);      \
    }                                                                   \
  while (0)

      CU_MMV_FETCH (0);
      for (int64_t i0 = 0; i0 < nblocks; i0 += CU_MMV_STAGE)
        {
          int n = nblocks - i0 < CU_MMV_STAGE ? (int) (nblocks - i0)
                                              : CU_MMV_STAGE;
          int words = n * bytes / 16;   /* whole: n is a multiple of 8 */
          __syncthreads ();             /* the last stage is consumed */
#pragma unroll
          for (int k = 0; k < CU_MMV_STAGE_REGS; k++)
            if (lane + k * CU_WARP < words)
              ws[warp][lane + k * CU_WARP] = wr[k];
#pragma unroll
          for (int c = 0; c < NC; c++)
            if ((int) threadIdx.x < n * CU_QK / 4)
              xs[c][threadIdx.x] = xr[c];
          if (i0 + CU_MMV_STAGE < nblocks)
            CU_MMV_FETCH (i0 + CU_MMV_STAGE);
          __syncthreads ();
          if (!live)
            continue;
          const unsigned char *blocks = (const unsigned char *) ws[warp];
          int t = lane % CU_MMV_LANES;
#pragma unroll 4
          for (int j = lane / CU_MMV_LANES; j < n; j += CU_MMV_BLOCKS)
            {
              float q[4];
              float dq = tsr_cuda_block_quad (blocks + j * bytes, atype, t,
                                              q);
#pragma unroll
              for (int c = 0; c < NC; c++)
                acc[c] = tsr_cuda_quad_dot (dq, q, xs[c][j * CU_QK / 4 + t],
                                            acc[c]);
            }
        }
#undef CU_MMV_FETCH
      if (live)
        tsr_cuda_mmv_store_row<NC> (set, m, row, acc, first);
    }
}

/* Whether q8_0 / q4_0 weights A take the staged kernel (rows of whole
   16-byte words, a multiple of 256 elements long).  */
static bool
tsr_cuda_mmv_staged (const tsr_cuda_tdesc &a)
{
  return a.ne[0] % (8 * CU_QK) == 0 && (uintptr_t) a.data % 16 == 0
         && a.nb[1] % 16 == 0 && a.nb[2] % 16 == 0 && a.nb[3] % 16 == 0;
}

/* The grid of a product: a thread block per CU_MMV_WARPS rows of the
   longest matrix of SET, by the batches of d.  */
static dim3
mmv_grid (const tsr_cuda_mmv_set &set)
{
  int64_t rows = 0;
  for (int m = 0; m < set.n; m++)
    rows = set.a[m].ne[1] > rows ? set.a[m].ne[1] : rows;
  return dim3 ((unsigned) ((rows + CU_MMV_WARPS - 1) / CU_MMV_WARPS),
               (unsigned) (set.d[0].ne[2] * set.d[0].ne[3]));
}

static int
mmv_q_set (cudaStream_t st, const tsr_cuda_mmv_set &set, int atype,
           const tsr_cuda_tdesc &b)
{

  dim3 grid = mmv_grid (set);
  int64_t r2 = b.ne[2] / set.a[0].ne[2], r3 = b.ne[3] / set.a[0].ne[3];
  unsigned threads = CU_MMV_WARPS * CU_WARP;
  bool staged = true;

  for (int m = 0; m < set.n; m++)
    staged = staged && tsr_cuda_mmv_staged (set.a[m]);
  if (!staged && set.n != 1)
    return (int) cudaErrorInvalidValue;
  switch (b.ne[1])
    {
#define CASE(n)                                                         \
    case n:                                                             \
      if (staged)                                                       \
        k_mul_mat_vec_q_staged<n><<<grid, threads, 0, st>>> (           \
          set, atype, b, r2, r3);                                       \
      else                                                              \
        k_mul_mat_vec_q<n><<<grid, threads, 0, st>>> (set.d[0],         \
          set.a[0], atype, b, r2, r3);                                  \
      break;
    CASE (1) CASE (2) CASE (3) CASE (4) CASE (5) CASE (6) CASE (7) CASE (8)
#undef CASE
    default:
      return (int) cudaErrorInvalidValue;
    }
  return tsr_cuda_launched ();
}

/* The other block types: one warp per weight row, a 16-element chunk a
   lane at a time (chunks of a warp step are 512 consecutive elements),
   decoded once and multiplied with every column; the activations are
   read as four 16-byte loads a chunk and column.  f32 sums per lane,
   then the warp's.  */
template <int T, int NC>
static __global__ void
k_mul_mat_vec_chunks (tsr_cuda_mmv_set set, tsr_cuda_tdesc b, int64_t r2,
                      int64_t r3)
{
  const int per = tsr_cuda_block_elems (T) / 16, bytes = tsr_cuda_block_bytes (T);
  const int lane = threadIdx.x % CU_WARP;
  const int64_t row = (int64_t) blockIdx.x * CU_MMV_WARPS + threadIdx.x / CU_WARP;
  float first[NC];

#pragma unroll
  for (int m = 0; m < CU_MMV_MAX_SET; m++)
    {
      if (m >= set.n)
        break;
      const unsigned char *w;
      const float *x[NC];
      float acc[NC];
      int64_t r;
      if (!tsr_cuda_mmv_setup<NC> (set.d[m], set.a[m], b, r2, r3, &w, x, acc,
                                   &r))
        continue;
      int64_t nchunks = set.a[m].ne[0] / 16;
      for (int64_t c = lane; c < nchunks; c += CU_WARP)
        {
          float v[16];
          tsr_cuda_block_chunk (w + (c / per) * bytes, T, (int) (c % per), v);
#pragma unroll
          for (int j = 0; j < NC; j++)
            {
              const float4 *xp = (const float4 *) (x[j] + 16 * c);
              float s = 0.0f;
#pragma unroll
              for (int q = 0; q < 4; q++)
                {
                  float4 u = __ldg (xp + q);
                  s = fmaf (v[4 * q], u.x, s);
                  s = fmaf (v[4 * q + 1], u.y, s);
                  s = fmaf (v[4 * q + 2], u.z, s);
                  s = fmaf (v[4 * q + 3], u.w, s);
                }
              acc[j] += s;
            }
        }
      tsr_cuda_mmv_store_row<NC> (set, m, row, acc, first);
    }
}

template <int T>
static void
mul_mat_vec_chunks (cudaStream_t st, dim3 grid, const tsr_cuda_mmv_set &set,
                    const tsr_cuda_tdesc &b, int64_t r2, int64_t r3)
{
  unsigned threads = CU_MMV_WARPS * CU_WARP;
  switch (b.ne[1])
    {
#define CASE(n)                                                         \
    case n:                                                             \
      k_mul_mat_vec_chunks<T, n><<<grid, threads, 0, st>>> (set, b, r2, r3); \
      break;
    CASE (1) CASE (2) CASE (3) CASE (4) CASE (5) CASE (6) CASE (7) CASE (8)
#undef CASE
    }
}

static int
mmv_blocks_set (cudaStream_t st, const tsr_cuda_mmv_set &set, int atype,
                const tsr_cuda_tdesc &b)
{
  dim3 grid = mmv_grid (set);
  int64_t r2 = b.ne[2] / set.a[0].ne[2], r3 = b.ne[3] / set.a[0].ne[3];

  if (b.ne[1] < 1 || b.ne[1] > CU_MMV_MAX_COLS)
    return (int) cudaErrorInvalidValue;
  switch (atype)
    {
#define CASE(T)                                                         \
    case T:                                                             \
      mul_mat_vec_chunks<T> (st, grid, set, b, r2, r3);                 \
      break;
    CU_BLOCK_TYPES (CASE)
#undef CASE
    default:
      return (int) cudaErrorInvalidValue;
    }
  return tsr_cuda_launched ();
}

int
tsr_cuda_mul_mat_vec_set (cudaStream_t st, const struct tsr_cuda_mmv_set *set,
                          int atype, struct tsr_cuda_tdesc b)
{
  if (set->n < 1 || set->n > CU_MMV_MAX_SET || (set->glu && set->n != 2))
    return (int) cudaErrorInvalidValue;
  return atype == TSR_TYPE_Q8_0 || atype == TSR_TYPE_Q4_0
         ? mmv_q_set (st, *set, atype, b) : mmv_blocks_set (st, *set, atype, b);
}
