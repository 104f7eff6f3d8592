/* cuda-elementwise.cu - element-wise f32 kernels: add, sub, mul, div
 * with broadcast; scale, silu, gelu and the unary math functions; the
 * gated activations swiglu and geglu.  One thread per destination
 * element in a grid-stride loop.  The formulas are the CPU backend's,
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
  return v / (1.0f + expf (-v));
}

static __device__ inline float
gelu (float v)
{
  const float sqrt_2_over_pi = 0.79788456080286535588f;
  return 0.5f * v * (1.0f + tanh_sat (sqrt_2_over_pi
                                      * (v + 0.044715f * v * v * v)));
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
    case TSR_OP_CLAMP: return v < p0 ? p0 : v > p1 ? p1 : v;
    default: return v;
    }
}

static __global__ void
k_binary (int op, cu_tdesc d, cu_tdesc a, cu_tdesc b, int64_t n)
{
  CU_FOR_ITEMS (i, n)
    {
      int64_t i0, i1, i2, i3;
      cu_split (i, d, &i0, &i1, &i2, &i3);
      float x = cu_f32 (a, i0, i1, i2, i3);
      float y = cu_f32 (b, i0 % b.ne[0], i1 % b.ne[1], i2 % b.ne[2],
                        i3 % b.ne[3]);
      cu_f32 (d, i0, i1, i2, i3) = op == TSR_OP_ADD ? x + y
                                   : op == TSR_OP_SUB ? x - y
                                   : op == TSR_OP_MUL ? x * y : x / y;
    }
}

static __global__ void
k_unary (int op, float p0, float p1, cu_tdesc d, cu_tdesc a, int64_t n)
{
  CU_FOR_ITEMS (i, n)
    {
      int64_t i0, i1, i2, i3;
      cu_split (i, d, &i0, &i1, &i2, &i3);
      cu_f32 (d, i0, i1, i2, i3) = unary (op, cu_f32 (a, i0, i1, i2, i3),
                                          p0, p1);
    }
}

static __global__ void
k_glu (int op, cu_tdesc d, cu_tdesc a, cu_tdesc b, int split, int64_t n)
{
  CU_FOR_ITEMS (i, n)
    {
      int64_t i0, i1, i2, i3;
      cu_split (i, d, &i0, &i1, &i2, &i3);
      float x = cu_f32 (a, i0, i1, i2, i3);
      float g = split ? cu_f32 (a, i0 + d.ne[0], i1, i2, i3)
                      : cu_f32 (b, i0, i1, i2, i3);
      cu_f32 (d, i0, i1, i2, i3) = (op == TSR_OP_SWIGLU ? silu (x)
                                    : gelu (x)) * g;
    }
}

int
cu_binary (cudaStream_t s, int op, cu_tdesc d, cu_tdesc a, cu_tdesc b)
{
  int64_t n = host_nelements (d);
  k_binary<<<cu_blocks (n), CU_THREADS, 0, s>>> (op, d, a, b, n);
  return cu_launched ();
}

int
cu_unary (cudaStream_t s, int op, float p0, float p1, cu_tdesc d,
          cu_tdesc a)
{
  int64_t n = host_nelements (d);
  k_unary<<<cu_blocks (n), CU_THREADS, 0, s>>> (op, p0, p1, d, a, n);
  return cu_launched ();
}

int
cu_glu (cudaStream_t s, int op, cu_tdesc d, cu_tdesc a, cu_tdesc b,
        int split)
{
  int64_t n = host_nelements (d);
  k_glu<<<cu_blocks (n), CU_THREADS, 0, s>>> (op, d, a, b, split, n);
  return cu_launched ();
}
