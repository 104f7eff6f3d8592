/* ocl-elementwise.cl - element-wise f32 kernels: add, sub, mul, div
 * with broadcast, the unary functions (scale, silu, gelu, sqr ...
 * clamp) and the gated activations (swiglu, geglu).  One work item per
 * destination element.  The formulas are the CPU backend's
 * (modules/cpu/cpu-vec.c, cpu-ops-math.c), NaN and infinity
 * included.  */

/* d = a OP b, b broadcast: its element (i0 % ne0, i1 % ne1, ...).  */
kernel void
k_binary (int op, global char *d, tdesc td, global const char *a, tdesc ta,
          global const char *b, tdesc tb, long n)
{
  FOR_ITEMS (i, n)
    {
      SPLIT4 (i, td, i0, i1, i2, i3);
      float x = *(global const float *) AT (a, ta, i0, i1, i2, i3);
      float y = *(global const float *) AT (b, tb, i0 % tb.ne[0],
                                            i1 % tb.ne[1], i2 % tb.ne[2],
                                            i3 % tb.ne[3]);
      float z = op == TSR_OP_ADD ? x + y
                : op == TSR_OP_SUB ? x - y
                : op == TSR_OP_MUL ? x * y : x / y;
      *(global float *) AT (d, td, i0, i1, i2, i3) = z;
    }
}

/* tanh, exactly +-1 beyond |u| = 10 (where the correctly rounded
   result is +-1 anyway): some OpenCL libraries miss it at infinity,
   and gelu (-inf) must be NaN (-inf * 0), as on the CPU.  */
float
tanh_sat (float u)
{
  return u > 10.0f ? 1.0f : u < -10.0f ? -1.0f : tanh (u);
}

float
silu (float v)
{
  return v / (1.0f + exp (-v));
}

float
gelu (float v)
{
  const float sqrt_2_over_pi = 0.79788456080286535588f;
  return 0.5f * v * (1.0f + tanh_sat (sqrt_2_over_pi * (v + 0.044715f * v * v
                                                    * v)));
}

float
unary (int op, float v, float p0, float p1)
{
  switch (op)
    {
    case TSR_OP_SCALE: return v * p0;
    case TSR_OP_SILU: return silu (v);
    case TSR_OP_GELU: return gelu (v);
    case TSR_OP_SQR: return v * v;
    case TSR_OP_SQRT: return sqrt (v);
    case TSR_OP_EXP: return exp (v);
    case TSR_OP_LOG: return log (v);
    case TSR_OP_NEG: return -v;
    case TSR_OP_ABS: return fabs (v);
    case TSR_OP_SIGMOID: return 1.0f / (1.0f + exp (-v));
    case TSR_OP_TANH: return tanh_sat (v);
    case TSR_OP_RELU: return v > 0.0f || isnan (v) ? v : 0.0f;
    case TSR_OP_GELU_QUICK: return v / (1.0f + exp (-1.702f * v));
    case TSR_OP_GELU_ERF: return 0.5f * v * (1.0f + erf (v * 0.70710678118654752f));
    case TSR_OP_CLAMP: return v < p0 ? p0 : v > p1 ? p1 : v;
    default: return v;
    }
}

/* d = f (a), P0 and P1 the op's float parameters.  */
kernel void
k_unary (int op, float p0, float p1, global char *d, tdesc td,
         global const char *a, tdesc ta, long n)
{
  FOR_ITEMS (i, n)
    {
      SPLIT4 (i, td, i0, i1, i2, i3);
      float v = *(global const float *) AT (a, ta, i0, i1, i2, i3);
      *(global float *) AT (d, td, i0, i1, i2, i3) = unary (op, v, p0, p1);
    }
}

/* d = act (x) * g: x from a, g from b (HAS_B) or from the second half
   of a's row.  */
kernel void
k_glu (int op, global char *d, tdesc td, global const char *a, tdesc ta,
       global const char *b, tdesc tb, int has_b, long n)
{
  FOR_ITEMS (i, n)
    {
      SPLIT4 (i, td, i0, i1, i2, i3);
      float x = *(global const float *) AT (a, ta, i0, i1, i2, i3);
      float g = has_b ? *(global const float *) AT (b, tb, i0, i1, i2, i3)
                      : *(global const float *) AT (a, ta, i0 + td.ne[0], i1,
                                                    i2, i3);
      float y = op == TSR_OP_SWIGLU ? silu (x) : gelu (x);
      *(global float *) AT (d, td, i0, i1, i2, i3) = y * g;
    }
}
