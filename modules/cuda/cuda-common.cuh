/* cuda-common.cuh - what every .cu file of the CUDA backend shares:
 * element addressing through strides, grid-stride and row-wise loops,
 * element loads and stores for every Tessera type, block quantization,
 * warp and block sums and the index status word.  Not installed.
 *
 * Conversions match libtessera's reference ones: f16 through the CUDA
 * intrinsics (round to nearest even), bf16 by the same bit arithmetic
 * as lib/types/types.c (round to nearest even, NaN kept quiet), f32 to i32
 * toward zero with saturation and NaN to 0, as the CPU backend does.  */
#ifndef TSR_CUDA_COMMON_CUH
#define TSR_CUDA_COMMON_CUH

#include <stdint.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <tessera/tensor.h>       /* TSR_OP_*, TSR_TYPE_* */

#include "cuda-kernels.h"

#define CU_THREADS 256
/* Blocks of a grid-stride launch at most: enough to fill any GPU.  */
#define CU_MAX_BLOCKS 65535
#define CU_QK 32                 /* elements per q8_0 / q4_0 block */
#define CU_Q8_BYTES 34           /* a q8_0 block: f16 scale, 32 int8 */
#define CU_Q4_BYTES 18           /* a q4_0 block: f16 scale, 16 bytes */

/* Blocks for N items of CU_THREADS each, at least 1.  */
static inline unsigned
tsr_cuda_blocks (int64_t n)
{
  int64_t b = (n + CU_THREADS - 1) / CU_THREADS;
  return (unsigned) (b < 1 ? 1 : b > CU_MAX_BLOCKS ? CU_MAX_BLOCKS : b);
}

/* Rows of a row-per-block launch at most per grid dimension x.  */
static inline unsigned
tsr_cuda_row_blocks (int64_t rows)
{
  return (unsigned) (rows < 1 ? 1 : rows > CU_MAX_BLOCKS ? CU_MAX_BLOCKS
                                                       : rows);
}

/* Elements and rows of T, for the launchers (host side).  */
static inline int64_t
host_nelements (const tsr_cuda_tdesc &t)
{
  return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
}

static inline int64_t
host_nrows (const tsr_cuda_tdesc &t)
{
  return t.ne[1] * t.ne[2] * t.ne[3];
}

/* A row-wise launch: grid dimension y walks the rows, x the elements
   (or blocks) of a row, so that a kernel splits a row's index once per
   row rather than once per element.  Threads per block: NE0 rounded up
   to a warp, at most CU_THREADS.  */
static inline void
tsr_cuda_row_grid (int64_t ne0, int64_t nrows, dim3 *grid, dim3 *block)
{
  int64_t threads = ne0 >= CU_THREADS ? CU_THREADS : (ne0 + 31) / 32 * 32;
  int64_t bx = (ne0 + threads - 1) / threads;

  *block = dim3 ((unsigned) (threads < 32 ? 32 : threads));
  *grid = dim3 ((unsigned) (bx < 1 ? 1 : bx > CU_MAX_BLOCKS ? CU_MAX_BLOCKS
                                                            : bx),
                tsr_cuda_row_blocks (nrows));
}

/* The loops of a tsr_cuda_row_grid launch.  */
#define CU_FOR_GRID_ROWS(r, n)                                            \
  for (int64_t r = blockIdx.y; r < (n); r += gridDim.y)
#define CU_FOR_ROW_ITEMS(i0, n)                                           \
  for (int64_t i0 = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;     \
       i0 < (n); i0 += (int64_t) gridDim.x * blockDim.x)

#define CU_FOR_ITEMS(i, n)                                                \
  for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;       \
       i < (n); i += (int64_t) gridDim.x * blockDim.x)

#define CU_FOR_ROWS(r, n)                                                 \
  for (int64_t r = blockIdx.x; r < (n); r += gridDim.x)

static __device__ inline int64_t
tsr_cuda_nelements (const tsr_cuda_tdesc &t)
{
  return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
}

static __device__ inline int64_t
tsr_cuda_nrows (const tsr_cuda_tdesc &t)
{
  return t.ne[1] * t.ne[2] * t.ne[3];
}

/* Indices of element I of T in row-major order.  */
static __device__ inline void
tsr_cuda_split (int64_t i, const tsr_cuda_tdesc &t, int64_t *i0, int64_t *i1,
          int64_t *i2, int64_t *i3)
{
  *i0 = i % t.ne[0];
  i /= t.ne[0];
  *i1 = i % t.ne[1];
  i /= t.ne[1];
  *i2 = i % t.ne[2];
  *i3 = i / t.ne[2];
}

/* Indices of row R of T (dimensions 1..3).  */
static __device__ inline void
tsr_cuda_split_row (int64_t r, const tsr_cuda_tdesc &t, int64_t *i1, int64_t *i2,
              int64_t *i3)
{
  *i1 = r % t.ne[1];
  r /= t.ne[1];
  *i2 = r % t.ne[2];
  *i3 = r / t.ne[2];
}

static __device__ inline char *
tsr_cuda_at (const tsr_cuda_tdesc &t, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
  return t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

static __device__ inline float &
tsr_cuda_f32 (const tsr_cuda_tdesc &t, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
  return *(float *) tsr_cuda_at (t, i0, i1, i2, i3);
}

static __device__ inline float
tsr_cuda_f16_to_f32 (uint16_t h)
{
  return __half2float (__ushort_as_half (h));
}

static __device__ inline uint16_t
tsr_cuda_f32_to_f16 (float f)
{
  return __half_as_ushort (__float2half_rn (f));
}

static __device__ inline uint16_t
tsr_cuda_f32_to_bf16 (float f)
{
  uint32_t x = __float_as_uint (f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t) ((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t) (x >> 16);
}

static __device__ inline float
tsr_cuda_bf16_to_f32 (uint16_t h)
{
  return __uint_as_float ((uint32_t) h << 16);
}

#include "cuda-blocks.cuh"

/* Element I0 of a row of TYPE at ROW, elements (for block types:
   blocks) NB0 bytes apart.  */
static __device__ inline float
tsr_cuda_load (const char *row, int64_t i0, int64_t nb0, int type)
{
  switch (type)
    {
    case TSR_TYPE_F32: return *(const float *) (row + i0 * nb0);
    case TSR_TYPE_F16:
      return tsr_cuda_f16_to_f32 (*(const uint16_t *) (row + i0 * nb0));
    case TSR_TYPE_BF16:
      return tsr_cuda_bf16_to_f32 (*(const uint16_t *) (row + i0 * nb0));
    case TSR_TYPE_I32: return (float) *(const int32_t *) (row + i0 * nb0);
    default: break;
    }
  int per = tsr_cuda_block_elems (type);
  return tsr_cuda_block_value (row + (i0 / per) * nb0, type, (int) (i0 % per));
}

static __device__ inline void
tsr_cuda_store (char *p, int type, float v)
{
  switch (type)
    {
    case TSR_TYPE_F32: *(float *) p = v; break;
    case TSR_TYPE_F16: *(uint16_t *) p = tsr_cuda_f32_to_f16 (v); break;
    case TSR_TYPE_BF16: *(uint16_t *) p = tsr_cuda_f32_to_bf16 (v); break;
    case TSR_TYPE_I32: *(int32_t *) p = __float2int_rz (v); break;
    default: break;
    }
}

/* I mod N for 0 <= I and 1 <= N, in 32-bit arithmetic when both fit
   (a 64-bit division is a long software sequence on the GPU).  */
static __device__ inline int64_t
tsr_cuda_mod (int64_t i, int64_t n)
{
  if (((uint64_t) i | (uint64_t) n) <= UINT32_MAX)
    return (int64_t) ((uint32_t) i % (uint32_t) n);
  return i % n;
}

/* I / N likewise.  */
static __device__ inline int64_t
tsr_cuda_div (int64_t i, int64_t n)
{
  if (((uint64_t) i | (uint64_t) n) <= UINT32_MAX)
    return (int64_t) ((uint32_t) i / (uint32_t) n);
  return i / n;
}

/* The sum of V over the warp, the same in every lane: each step adds
   the same two values in every lane of a pair (addition commutes
   exactly), so the lanes never disagree.  */
static __device__ inline float
tsr_cuda_warp_sum (float v)
{
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_xor_sync (0xffffffffu, v, o);
  return v;
}

/* The sum of V over the block of CU_THREADS threads (every thread gets
   it), in a fixed order: each warp's by shuffles (lane 0's sum), then
   the warps' in order.  Uses SHARED (CU_THREADS / 32 doubles at
   least); callable repeatedly (it syncs before reuse).  */
static __device__ inline double
tsr_cuda_block_sum (double v, double *shared)
{
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_xor_sync (0xffffffffu, v, o);
  __syncthreads ();
  if (threadIdx.x % 32 == 0)
    shared[threadIdx.x / 32] = v;
  __syncthreads ();
  double s = 0;
  for (int w = 0; w < CU_THREADS / 32; w++)
    s += shared[w];
  return s;
}

/* Record bad index IDX in the status word, unless an earlier one is
   there: TAG (nonzero) tells the backend which node it was.  */
static __device__ inline void
tsr_cuda_bad_index (tsr_cuda_status *status, int tag, int idx)
{
  if (atomicCAS (&status->status, 0, tag) == 0)
    status->value = idx;
}

/* F as binary16 bits, by lib/types/types.c's integer algorithm (round to
   nearest even, NaN kept quiet with its top payload bits), in 32-bit
   integer registers.  Block scales go through this rather than
   tsr_cuda_f32_to_f16: storing the low byte of __float2half_rn's 16-bit
   result with a byte store was seen to write 0 on an H100 (sm_90,
   CUDA 13.0), while the same bits from integer arithmetic store
   correctly; it also gives NaN the CPU's bits.  */
static __device__ inline uint32_t
tsr_cuda_f32_to_f16_bits (float f)
{
  uint32_t x = __float_as_uint (f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;

  if (exp == 0xffu)
    return sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u);
  int e = (int) exp - 127 + 15;
  if (e >= 0x1f)
    return sign | 0x7c00u;
  if (e <= 0)
    {
      if (e < -10)
        return sign;
      uint32_t m = mant | 0x800000u;
      int shift = 14 - e;
      uint32_t h = m >> shift;
      uint32_t rem = m & ((1u << shift) - 1u);
      uint32_t mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (h & 1u)))
        h++;
      return sign | h;
    }
  uint32_t h = ((uint32_t) e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    h++;
  return sign | h;
}

/* The 32 floats X as one block of TYPE (q8_0 or q4_0) at P, bit for
   bit as the reference quantizers of lib/types/types.c: the same float
   operations in the same order, explicitly rounded (no contraction,
   whatever the flags), lrintf's round-to-nearest-even through
   __float2ll_rn, which also gives lrintf's x86-64 result for NaN
   (INT64_MIN, so a q8_0 NaN stores 0 and a q4_0 one clamps to 0).  */
static __device__ inline void
tsr_cuda_quantize_block (const float *x, char *p, int type)
{
  unsigned char *b = (unsigned char *) p;
  float d, id;

  if (type == TSR_TYPE_Q8_0)
    {
      float amax = 0.0f;
      for (int j = 0; j < CU_QK; j++)
        amax = fmaxf (amax, fabsf (x[j]));
      d = __fdiv_rn (amax, 127.0f);
      id = d > 0.0f ? __fdiv_rn (1.0f, d) : 0.0f;
      for (int j = 0; j < CU_QK; j++)
        b[2 + j] = (unsigned char) (signed char)
                   __float2ll_rn (__fmul_rn (x[j], id));
    }
  else
    {
      /* The first element of the largest magnitude maps to -8.  */
      float m = 0.0f;
      for (int j = 0; j < CU_QK; j++)
        if (fabsf (x[j]) > fabsf (m))
          m = x[j];
      d = __fdiv_rn (m, -8.0f);
      id = d != 0.0f ? __fdiv_rn (1.0f, d) : 0.0f;
      for (int j = 0; j < CU_QK / 2; j++)
        {
          long long lo = __float2ll_rn (__fmul_rn (x[j], id)) + 8;
          long long hi = __float2ll_rn (__fmul_rn (x[j + CU_QK / 2], id)) + 8;
          lo = lo < 0 ? 0 : lo > 15 ? 15 : lo;
          hi = hi < 0 ? 0 : hi > 15 ? 15 : hi;
          b[2 + j] = (unsigned char) (lo | (hi << 4));
        }
    }
  uint32_t h = tsr_cuda_f32_to_f16_bits (d);
  b[0] = (unsigned char) (h & 0xffu);
  b[1] = (unsigned char) (h >> 8);
}

/* The activations of the gated units (glu and the fused
   matrix-vector products share them, so both round alike).  */
static __device__ inline float
tsr_cuda_silu (float v)
{
  return v / (1.0f + expf (-v));
}

static __device__ inline float
tsr_cuda_gelu (float v)
{
  const float sqrt_2_over_pi = 0.79788456080286535588f;
  float u = sqrt_2_over_pi * (v + 0.044715f * v * v * v);
  float t = u > 10.0f ? 1.0f : u < -10.0f ? -1.0f : tanhf (u);
  return 0.5f * v * (1.0f + t);
}

/* The sums S[c] of a warp for row ROW of product M of SET: into
   d[M], or, for a gated pair, kept in FIRST (M == 0) until the second
   product's sums complete act (first) * s in d[0].  Lane 0 writes.  */
template <int NC>
static __device__ inline void
tsr_cuda_mmv_store_row (const tsr_cuda_mmv_set &set, int m, int64_t row,
                    float acc[NC], float first[NC])
{
  const tsr_cuda_tdesc &d = set.d[set.glu ? 0 : m];
  int64_t i2 = blockIdx.y % d.ne[2], i3 = blockIdx.y / d.ne[2];
  bool lead = threadIdx.x % 32 == 0;

#pragma unroll
  for (int c = 0; c < NC; c++)
    {
      float s = tsr_cuda_warp_sum (acc[c]);
      if (set.glu && m == 0)
        first[c] = s;
      else if (lead)
        {
          if (set.glu)
            s = (set.glu == TSR_OP_SWIGLU ? tsr_cuda_silu (first[c])
                 : tsr_cuda_gelu (first[c])) * s;
          *(float *) (d.data + row * 4 + c * d.nb[1] + i2 * d.nb[2]
                      + i3 * d.nb[3]) = s;
        }
    }
}

/* The warp's 32 values V (lane L holding element L of block BLK)
   rounded to 8-bit integers, as the matrix-vector products of
   cuda-mmvq.cu take their activations (q = round (v / d), d = amax /
   127): Q[BLK * 32 + L], and DS[BLK] = (d, d times the integers' sum).
   k_quantize_q8 and the kernels that write a product's activations
   before it (norms, attention) all round here, so their bits agree.
   Every lane of the warp calls it.  */
static __device__ inline void
tsr_cuda_warp_q8 (float v, signed char *q, float2 *ds, int64_t blk)
{
  const int lane = threadIdx.x % 32;
  float amax = fabsf (v);
  for (int o = 16; o > 0; o /= 2)
    amax = fmaxf (amax, __shfl_xor_sync (0xffffffffu, amax, o));
  float d = __fdiv_rn (amax, 127.0f);
  float id = d > 0.0f ? __fdiv_rn (1.0f, d) : 0.0f;
  int p = __float2int_rn (__fmul_rn (v, id));
  int sum = p;
  for (int o = 16; o > 0; o /= 2)
    sum += __shfl_xor_sync (0xffffffffu, sum, o);
  q[blk * CU_QK + lane] = (signed char) p;
  if (lane == 0)
    ds[blk] = make_float2 (d, d * (float) sum);
}

/* The angle of rope's pair I at position index I2: positions POS
   (i32), frequency factors FF when HAS_FF, N_HALF pairs rotated.  */
static __device__ inline double
tsr_cuda_rope_theta (const tsr_cuda_tdesc &pos, const tsr_cuda_tdesc &ff,
                     int has_ff, int64_t n_half, float freq_base,
                     float freq_scale, int64_t i2, int64_t i)
{
  int p = *(const int32_t *) tsr_cuda_at (pos, i2, 0, 0, 0);
  double theta = (double) p * (double) freq_scale
                 * exp2 (-(double) i / (double) n_half
                         * log2 ((double) freq_base));
  if (has_ff)
    theta /= tsr_cuda_f32 (ff, i, 0, 0, 0);
  return theta;
}

/* Element E (row-major) of rope's result D from A: positions POS
   (i32, one per element of A's dimension 2), frequency factors FF when
   HAS_FF, the first N_DIMS elements of a row rotated (as adjacent pairs,
   or as halves when NEOX), the rest copied.  CS, when not NULL, holds
   the cosine and sine of every angle, pair I at position index I2 at
   CS[I2 * N_DIMS / 2 + I] (the same values this computes).  k_rope and
   the phases of cuda-set-rows.cu compute every element here.  */
static __device__ inline void
tsr_cuda_rope_item (const tsr_cuda_tdesc &d, const tsr_cuda_tdesc &a,
                    const tsr_cuda_tdesc &pos, const tsr_cuda_tdesc &ff,
                    int has_ff, int n_dims, int neox, float freq_base,
                    float freq_scale, int64_t e, const double2 *cs)
{
  const int64_t n_half = n_dims / 2;
  int64_t i0, i1, i2, i3;
  tsr_cuda_split (e, d, &i0, &i1, &i2, &i3);
  if (i0 >= 2 * n_half)
    {
      tsr_cuda_f32 (d, i0, i1, i2, i3) = tsr_cuda_f32 (a, i0, i1, i2, i3);
      return;
    }
  int64_t i = neox ? (i0 < n_half ? i0 : i0 - n_half) : i0 / 2;
  bool first = neox ? i0 < n_half : (i0 & 1) == 0;
  int64_t j0 = neox ? i : 2 * i, j1 = neox ? i + n_half : 2 * i + 1;
  double c, s;
  if (cs)
    {
      double2 t = cs[i2 * n_half + i];
      c = t.x;
      s = t.y;
    }
  else
    sincos (tsr_cuda_rope_theta (pos, ff, has_ff, n_half, freq_base,
                                 freq_scale, i2, i), &s, &c);
  double x0 = tsr_cuda_f32 (a, j0, i1, i2, i3);
  double x1 = tsr_cuda_f32 (a, j1, i1, i2, i3);
  tsr_cuda_f32 (d, i0, i1, i2, i3) = (float) (first ? x0 * c - x1 * s
                                              : x0 * s + x1 * c);
}

/* Launch status as the launchers return it; counts one kernel queued
   (a launcher of several counts the others with tsr_cuda_count).  */
static inline int
tsr_cuda_launched (void)
{
  tsr_cuda_count (1);
  return (int) cudaGetLastError ();
}

/* Programmatic dependent launch (sm_90 and newer).  A kernel launched
   by tsr_cuda_launch while this thread's tuning has pdl set may start
   before the kernel queued before it has ended: so it calls
   tsr_cuda_pdl_begin before it touches global memory, which waits
   until that kernel has ended and its writes are seen (and, as that
   one waited for its own predecessor, every earlier one too).  Then it
   lets the next kernel be launched at once: the next one's launch and
   start overlap this one's run.  Elsewhere (older cards, a plain
   launch) both instructions do nothing.  Every kernel that
   tsr_cuda_launch may launch calls it first, or the chain of waits
   breaks.  */
static __device__ __forceinline__ void
tsr_cuda_pdl_begin (void)
{
#if defined (__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile ("griddepcontrol.wait;" : : : "memory");
  asm volatile ("griddepcontrol.launch_dependents;" : : : "memory");
#endif
}

/* K <<<GRID, BLOCK, SHARED, ST>>> (ARGS), with programmatic dependent
   launch where this thread's tuning asks for it (K calls
   tsr_cuda_pdl_begin first); returns as tsr_cuda_launched.  */
template <typename... P, typename... A>
static inline int
tsr_cuda_launch (void (*k) (P...), dim3 grid, dim3 block, size_t shared,
                 cudaStream_t st, A... args)
{
#if CUDART_VERSION >= 11080     /* cudaLaunchKernelEx and the attribute */
  cudaLaunchAttribute attr[1];
  cudaLaunchConfig_t cfg = {};

  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = shared;
  cfg.stream = st;
  cfg.attrs = attr;
  cfg.numAttrs = tsr_cuda_get_tuning ().pdl ? 1 : 0;
  cudaError_t err = cudaLaunchKernelEx (&cfg, k, args...);
  tsr_cuda_count (1);
  cudaError_t last = cudaGetLastError ();
  return (int) (err != cudaSuccess ? err : last);
#else
  k<<<grid, block, shared, st>>> (args...);
  return tsr_cuda_launched ();
#endif
}

#endif /* TSR_CUDA_COMMON_CUH */
