/* cpu-vec.c - the CPU backend's hot loops, compiled once per ISA level.
 *
 * The build compiles this file once for every level configure chose,
 * with that level's -march flags and -DTSR_CPU_SUFFIX=<level>, so each
 * function below exists as tsr_cpu_<name>_<level>; cpu-dispatch.c picks
 * one per process.  The plain C here is also the reference: it uses
 * nothing but the arrays it is given (no tensors, no threads, no
 * errors).  Loops are
 * written so that a compiler can vectorize them without -ffast-math
 * (independent accumulators instead of one serial sum).  */
#include <config.h>

#include <math.h>
#include <string.h>

#include "cpu-vec.h"
#include "cpu-level.h"

/* Inline versions of libtessera's exact conversions (same results bit
   for bit: these conversions are exact, or round to nearest even),
   so the row loops need no call per element.  f32 -> f16 rounding is
   intricate enough to stay with the library's reference.  */
static inline float
bits_to_f32 (uint32_t u)
{
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

static inline float
fp16_to_f32 (tsr_fp16_t h)
{
  uint32_t sign = ((uint32_t) h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;

  if (exp == 0x1f)
    return bits_to_f32 (sign | 0x7f800000u | (mant << 13));
  if (exp == 0)
    {
      float v = (float) mant * 0x1p-24f;
      return sign ? -v : v;
    }
  return bits_to_f32 (sign | ((exp + 112u) << 23) | (mant << 13));
}

static inline tsr_bf16_t
f32_to_bf16 (float f)
{
  uint32_t x;

  memcpy (&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u)  /* NaN stays a quiet NaN */
    return (tsr_bf16_t) ((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (tsr_bf16_t) (x >> 16);
}

/* Elements summed in float before the partial sum moves to double.  */
#define DOT_BLOCK 256
#define LANES 8

float
TSR_CPU_LEVEL_FN (vec_dot_f32) (int64_t n, const float *x, const float *y)
{
  double total = 0;
  int64_t i = 0;

  while (i < n)
    {
      int64_t end = n - i > DOT_BLOCK ? i + DOT_BLOCK : n;
      float acc[LANES] = { 0 };

      for (; i + LANES <= end; i += LANES)
        for (int l = 0; l < LANES; l++)
          acc[l] += x[i + l] * y[i + l];
      for (; i < end; i++)
        acc[0] += x[i] * y[i];
      total += (double) ((acc[0] + acc[4]) + (acc[1] + acc[5]))
               + (double) ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    }
  return (float) total;
}

double
TSR_CPU_LEVEL_FN (vec_sum_f32) (int64_t n, const float *x)
{
  double acc[4] = { 0 };
  int64_t i = 0;

  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; l++)
      acc[l] += x[i + l];
  for (; i < n; i++)
    acc[0] += x[i];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

double
TSR_CPU_LEVEL_FN (vec_sumsq_f32) (int64_t n, const float *x, double c)
{
  double acc[4] = { 0 };
  int64_t i = 0;

  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; l++)
      {
        double d = x[i + l] - c;
        acc[l] += d * d;
      }
  for (; i < n; i++)
    {
      double d = x[i] - c;
      acc[0] += d * d;
    }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

void
TSR_CPU_LEVEL_FN (vec_add_f32) (int64_t n, float *z, const float *x, const float *y)
{
  for (int64_t i = 0; i < n; i++)
    z[i] = x[i] + y[i];
}

void
TSR_CPU_LEVEL_FN (vec_sub_f32) (int64_t n, float *z, const float *x, const float *y)
{
  for (int64_t i = 0; i < n; i++)
    z[i] = x[i] - y[i];
}

void
TSR_CPU_LEVEL_FN (vec_mul_f32) (int64_t n, float *z, const float *x, const float *y)
{
  for (int64_t i = 0; i < n; i++)
    z[i] = x[i] * y[i];
}

void
TSR_CPU_LEVEL_FN (vec_div_f32) (int64_t n, float *z, const float *x, const float *y)
{
  for (int64_t i = 0; i < n; i++)
    z[i] = x[i] / y[i];
}

void
TSR_CPU_LEVEL_FN (vec_set_f32) (int64_t n, float *y, float v)
{
  for (int64_t i = 0; i < n; i++)
    y[i] = v;
}

void
TSR_CPU_LEVEL_FN (vec_scale_f32) (int64_t n, float *y, const float *x, float s)
{
  for (int64_t i = 0; i < n; i++)
    y[i] = x[i] * s;
}

void
TSR_CPU_LEVEL_FN (vec_center_scale_f32) (int64_t n, float *y, const float *x, double c,
                              double s)
{
  for (int64_t i = 0; i < n; i++)
    y[i] = (float) (((double) x[i] - c) * s);
}

void
TSR_CPU_LEVEL_FN (vec_silu_f32) (int64_t n, float *y, const float *x)
{
  for (int64_t i = 0; i < n; i++)
    y[i] = x[i] / (1.0f + expf (-x[i]));
}

void
TSR_CPU_LEVEL_FN (vec_gelu_f32) (int64_t n, float *y, const float *x)
{
  const float sqrt_2_over_pi = 0.79788456080286535588f;
  const float coef = 0.044715f;

  for (int64_t i = 0; i < n; i++)
    {
      float v = x[i];
      y[i] = 0.5f * v * (1.0f + tanhf (sqrt_2_over_pi
                                       * (v + coef * v * v * v)));
    }
}

double
TSR_CPU_LEVEL_FN (vec_exp_sub_f32) (int64_t n, float *y, const float *x, float m)
{
  double sum = 0;

  for (int64_t i = 0; i < n; i++)
    {
      y[i] = expf (x[i] - m);
      sum += y[i];
    }
  return sum;
}

float
TSR_CPU_LEVEL_FN (vec_max_f32) (int64_t n, const float *x)
{
  float m = -INFINITY;

  for (int64_t i = 0; i < n; i++)
    m = x[i] > m ? x[i] : m;
  return m;
}

void
TSR_CPU_LEVEL_FN (row_f16_to_f32) (int64_t n, float *y, const tsr_fp16_t *x)
{
  for (int64_t i = 0; i < n; i++)
    y[i] = fp16_to_f32 (x[i]);
}

void
TSR_CPU_LEVEL_FN (row_f32_to_f16) (int64_t n, tsr_fp16_t *y, const float *x)
{
  for (int64_t i = 0; i < n; i++)
    y[i] = tsr_fp32_to_fp16 (x[i]);
}

void
TSR_CPU_LEVEL_FN (row_bf16_to_f32) (int64_t n, float *y, const tsr_bf16_t *x)
{
  for (int64_t i = 0; i < n; i++)
    y[i] = bits_to_f32 ((uint32_t) x[i] << 16);
}

void
TSR_CPU_LEVEL_FN (row_f32_to_bf16) (int64_t n, tsr_bf16_t *y, const float *x)
{
  for (int64_t i = 0; i < n; i++)
    y[i] = f32_to_bf16 (x[i]);
}
