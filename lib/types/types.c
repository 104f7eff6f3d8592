/* types.c - element type traits and scalar reference conversions.
 *
 * These are the reference definitions every backend is compared with:
 * plain C, no intrinsics.  Fast versions belong in the backends.  Owns
 * the traits table, the fp16/bf16 conversions and q8_0/q4_0; the other
 * block types' conversions live in types-quant.c, types-kquant.c and
 * types-iq.c (declared in types-impl.h).  */
#include <config.h>

#include <math.h>
#include <string.h>
#include <strings.h>

#include "tessera-impl.h"
#include "types-impl.h"

static uint32_t
f32_bits (float f)
{
  uint32_t u;
  memcpy (&u, &f, sizeof u);
  return u;
}

static float
bits_f32 (uint32_t u)
{
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

tsr_fp16_t
tsr_fp32_to_fp16 (float f)
{
  uint32_t x = f32_bits (f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;

  if (exp == 0xff)              /* inf or NaN (keep NaN quiet) */
    return (tsr_fp16_t) (sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
  int e = (int) exp - 127 + 15;
  if (e >= 0x1f)                /* overflow */
    return (tsr_fp16_t) (sign | 0x7c00u);
  if (e <= 0)
    {
      /* Subnormal half (or zero): shift the full significand.  */
      if (e < -10)
        return (tsr_fp16_t) sign;
      uint32_t m = mant | 0x800000u;
      int shift = 14 - e;
      uint32_t half = m >> shift;
      uint32_t rem = m & ((1u << shift) - 1);
      uint32_t mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (half & 1)))
        half++;
      return (tsr_fp16_t) (sign | half);
    }
  uint32_t h = ((uint32_t) e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
    h++;                        /* may carry into the exponent: correct */
  return (tsr_fp16_t) (sign | h);
}

float
tsr_fp16_to_fp32 (tsr_fp16_t h)
{
  uint32_t sign = ((uint32_t) h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f)
    return bits_f32 (sign | 0x7f800000u | (mant << 13));
  if (exp == 0)
    {
      float v = ldexpf ((float) mant, -24);
      return sign ? -v : v;
    }
  return bits_f32 (sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

tsr_bf16_t
tsr_fp32_to_bf16 (float f)
{
  uint32_t x = f32_bits (f);
  if ((x & 0x7fffffffu) > 0x7f800000u)   /* NaN: keep it a quiet NaN */
    return (tsr_bf16_t) ((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);       /* round to nearest even */
  return (tsr_bf16_t) (x >> 16);
}

float
tsr_bf16_to_fp32 (tsr_bf16_t h)
{
  return bits_f32 ((uint32_t) h << 16);
}

/* Row conversions.  */

static void
f32_to_float (const void *src, float *dst, int64_t n)
{
  memcpy (dst, src, (size_t) n * sizeof (float));
}

static void
f32_from_float (const float *src, void *dst, int64_t n)
{
  memcpy (dst, src, (size_t) n * sizeof (float));
}

static void
f16_to_float (const void *src, float *dst, int64_t n)
{
  const tsr_fp16_t *s = src;
  for (int64_t i = 0; i < n; i++)
    dst[i] = tsr_fp16_to_fp32 (s[i]);
}

static void
f16_from_float (const float *src, void *dst, int64_t n)
{
  tsr_fp16_t *d = dst;
  for (int64_t i = 0; i < n; i++)
    d[i] = tsr_fp32_to_fp16 (src[i]);
}

static void
bf16_to_float (const void *src, float *dst, int64_t n)
{
  const tsr_bf16_t *s = src;
  for (int64_t i = 0; i < n; i++)
    dst[i] = tsr_bf16_to_fp32 (s[i]);
}

static void
bf16_from_float (const float *src, void *dst, int64_t n)
{
  tsr_bf16_t *d = dst;
  for (int64_t i = 0; i < n; i++)
    d[i] = tsr_fp32_to_bf16 (src[i]);
}

/* q8_0: d = amax / 127, q = round (x / d).  */
static void
q8_0_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_q8_0 *b = dst;
  for (int64_t i = 0; i < n / TSR_QK8_0; i++, src += TSR_QK8_0)
    {
      float amax = 0;
      for (int j = 0; j < TSR_QK8_0; j++)
        amax = fmaxf (amax, fabsf (src[j]));
      float d = amax / 127.0f;
      float id = d > 0 ? 1.0f / d : 0.0f;
      b[i].d = tsr_fp32_to_fp16 (d);
      for (int j = 0; j < TSR_QK8_0; j++)
        b[i].qs[j] = (int8_t) lrintf (src[j] * id);
    }
}

static void
q8_0_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_q8_0 *b = src;
  for (int64_t i = 0; i < n / TSR_QK8_0; i++, dst += TSR_QK8_0)
    {
      float d = tsr_fp16_to_fp32 (b[i].d);
      for (int j = 0; j < TSR_QK8_0; j++)
        dst[j] = d * (float) b[i].qs[j];
    }
}

/* q4_0: the element of largest magnitude, m, maps to -8: d = m / -8,
   q = clamp (round (x / d) + 8, 0, 15), which uses the full [-8, 7]
   range on the side of m.  */
static void
q4_0_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_q4_0 *b = dst;
  const int half = TSR_QK4_0 / 2;
  for (int64_t i = 0; i < n / TSR_QK4_0; i++, src += TSR_QK4_0)
    {
      float m = 0;
      for (int j = 0; j < TSR_QK4_0; j++)
        if (fabsf (src[j]) > fabsf (m))
          m = src[j];
      float d = m / -8.0f;
      float id = d != 0 ? 1.0f / d : 0.0f;
      b[i].d = tsr_fp32_to_fp16 (d);
      for (int j = 0; j < half; j++)
        {
          long lo = lrintf (src[j] * id) + 8;
          long hi = lrintf (src[j + half] * id) + 8;
          lo = lo < 0 ? 0 : lo > 15 ? 15 : lo;
          hi = hi < 0 ? 0 : hi > 15 ? 15 : hi;
          b[i].qs[j] = (uint8_t) (lo | (hi << 4));
        }
    }
}

static void
q4_0_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_q4_0 *b = src;
  const int half = TSR_QK4_0 / 2;
  for (int64_t i = 0; i < n / TSR_QK4_0; i++, dst += TSR_QK4_0)
    {
      float d = tsr_fp16_to_fp32 (b[i].d);
      for (int j = 0; j < half; j++)
        {
          dst[j] = d * (float) ((b[i].qs[j] & 0x0f) - 8);
          dst[j + half] = d * (float) ((b[i].qs[j] >> 4) - 8);
        }
    }
}

static const struct tsr_type_traits traits[TSR_TYPE_COUNT] = {
  [TSR_TYPE_F32] = { "f32", 1, sizeof (float), false, true,
                     f32_to_float, f32_from_float },
  [TSR_TYPE_F16] = { "f16", 1, sizeof (tsr_fp16_t), false, true,
                     f16_to_float, f16_from_float },
  [TSR_TYPE_BF16] = { "bf16", 1, sizeof (tsr_bf16_t), false, true,
                      bf16_to_float, bf16_from_float },
  [TSR_TYPE_I32] = { "i32", 1, sizeof (int32_t), false, false, NULL, NULL },
  [TSR_TYPE_Q8_0] = { "q8_0", TSR_QK8_0, sizeof (struct tsr_block_q8_0),
                      true, true, q8_0_to_float, q8_0_from_float },
  [TSR_TYPE_Q4_0] = { "q4_0", TSR_QK4_0, sizeof (struct tsr_block_q4_0),
                      true, true, q4_0_to_float, q4_0_from_float },
#define BLOCK_TYPE(T, t, qk)                                              \
  [TSR_TYPE_##T] = { #t, qk, sizeof (struct tsr_block_##t), true, true,   \
                     tsri_##t##_to_float, tsri_##t##_from_float }
  BLOCK_TYPE (Q4_1, q4_1, TSR_QK4_1),
  BLOCK_TYPE (Q5_0, q5_0, TSR_QK5_0),
  BLOCK_TYPE (Q5_1, q5_1, TSR_QK5_1),
  BLOCK_TYPE (Q2_K, q2_K, TSR_QK_K),
  BLOCK_TYPE (Q3_K, q3_K, TSR_QK_K),
  BLOCK_TYPE (Q4_K, q4_K, TSR_QK_K),
  BLOCK_TYPE (Q5_K, q5_K, TSR_QK_K),
  BLOCK_TYPE (Q6_K, q6_K, TSR_QK_K),
  BLOCK_TYPE (Q8_K, q8_K, TSR_QK_K),
  BLOCK_TYPE (IQ4_NL, iq4_nl, TSR_QK4_NL),
  BLOCK_TYPE (IQ4_XS, iq4_xs, TSR_QK_K),
  BLOCK_TYPE (MXFP4, mxfp4, TSR_QK_MXFP4),
#undef BLOCK_TYPE
};

_Static_assert (sizeof (struct tsr_block_q8_0) == 34, "q8_0 block size");
_Static_assert (sizeof (struct tsr_block_q4_0) == 18, "q4_0 block size");
/* The published block sizes: a struct the compiler padded would not
   read files.  */
_Static_assert (sizeof (struct tsr_block_q4_1) == 20, "q4_1 block size");
_Static_assert (sizeof (struct tsr_block_q5_0) == 22, "q5_0 block size");
_Static_assert (sizeof (struct tsr_block_q5_1) == 24, "q5_1 block size");
_Static_assert (sizeof (struct tsr_block_q2_K) == 84, "q2_K block size");
_Static_assert (sizeof (struct tsr_block_q3_K) == 110, "q3_K block size");
_Static_assert (sizeof (struct tsr_block_q4_K) == 144, "q4_K block size");
_Static_assert (sizeof (struct tsr_block_q5_K) == 176, "q5_K block size");
_Static_assert (sizeof (struct tsr_block_q6_K) == 210, "q6_K block size");
_Static_assert (sizeof (struct tsr_block_q8_K) == 292, "q8_K block size");
_Static_assert (sizeof (struct tsr_block_iq4_nl) == 18, "iq4_nl block size");
_Static_assert (sizeof (struct tsr_block_iq4_xs) == 136, "iq4_xs block size");
_Static_assert (sizeof (struct tsr_block_mxfp4) == 17, "mxfp4 block size");
_Static_assert (TSR_TYPE_MXFP4 + 1 == TSR_TYPE_COUNT, "a type without traits");

bool
tsr_type_valid (tsr_type type)
{
  return (unsigned) type < TSR_TYPE_COUNT;
}

const struct tsr_type_traits *
tsr_type_traits (tsr_type type)
{
  return tsr_type_valid (type) ? &traits[type] : NULL;
}

const char *
tsr_type_name (tsr_type type)
{
  return tsr_type_valid (type) ? traits[type].name : "(invalid type)";
}

tsr_type
tsr_type_from_name (const char *name)
{
  for (int t = 0; name && t < TSR_TYPE_COUNT; t++)
    if (strcasecmp (name, traits[t].name) == 0)
      return (tsr_type) t;
  return TSR_TYPE_COUNT;
}

size_t
tsr_row_size (tsr_type type, int64_t n)
{
  if (!tsr_type_valid (type) || n < 0)
    return 0;
  return traits[type].type_size * (size_t) (n / traits[type].block_size);
}

static int
check_row (const char *what, tsr_type type, int64_t n)
{
  if (!tsr_type_valid (type) || !traits[type].is_float)
    return tsr_set_error (TSR_ERR_TYPE, "%s: type %s has no float "
                          "conversion", what, tsr_type_name (type));
  if (n < 0 || n % traits[type].block_size != 0)
    return tsr_set_error (TSR_ERR_SHAPE, "%s: %lld elements is not a "
                          "multiple of the %s block size %lld", what,
                          (long long) n, traits[type].name,
                          (long long) traits[type].block_size);
  return TSR_OK;
}

int
tsr_quantize_row (tsr_type type, const float *src, void *dst, int64_t n)
{
  int st = check_row ("quantize", type, n);
  if (st == TSR_OK)
    traits[type].from_float (src, dst, n);
  return st;
}

int
tsr_dequantize_row (tsr_type type, const void *src, float *dst, int64_t n)
{
  int st = check_row ("dequantize", type, n);
  if (st == TSR_OK)
    traits[type].to_float (src, dst, n);
  return st;
}
