/* types-iq.c - iq4_nl, iq4_xs and mxfp4: 4-bit codes that index a table
 * of values instead of counting steps.
 *
 * Owns the reference row conversions of these types and their tables.
 * to_float performs the format's published dequantization operation for
 * operation:
 *
 *   iq4_nl  x = d * kvalues_iq4nl[q]
 *   iq4_xs  group j of 32: ls = 6 bits (4 in scales_l, 2 in scales_h),
 *           dl = d * (ls - 32); x = dl * kvalues_iq4nl[q]
 *   mxfp4   x = kvalues_mxfp4[q] * 2^(e - 128): the table holds twice
 *           the E2M1 values, so the E8M0 scale 2^(e - 127) is halved
 *           (as a float built from its bits, subnormal for e < 2)
 *
 * Element j of each 32 is the low nibble of byte j, element j + 16 the
 * high nibble.  from_float searches the scale of every block (and for
 * iq4_xs codes the group scales and tries their neighbours); mxfp4 tries
 * the exponents around the one that fits the block's largest value.  */
#include <config.h>

#include <math.h>
#include <string.h>

#include "tessera-impl.h"
#include "types-impl.h"

const int8_t tsri_kvalues_iq4nl[16] = {
  -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
};

const int8_t tsri_kvalues_mxfp4[16] = {
  0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12
};

static void
pack32 (const uint8_t *l, uint8_t *qs)
{
  for (int j = 0; j < 16; j++)
    qs[j] = (uint8_t) (l[j] | l[j + 16] << 4);
}

/* iq4_nl.  */

void
tsri_iq4_nl_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_iq4_nl *b = src;
  for (int64_t i = 0; i < n / TSR_QK4_NL; i++, dst += TSR_QK4_NL)
    {
      const float d = tsr_fp16_to_fp32 (b[i].d);
      for (int j = 0; j < 16; j++)
        {
          dst[j] = d * tsri_kvalues_iq4nl[b[i].qs[j] & 0xf];
          dst[j + 16] = d * tsri_kvalues_iq4nl[b[i].qs[j] >> 4];
        }
    }
}

void
tsri_iq4_nl_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_iq4_nl *b = dst;
  uint8_t l[TSR_QK4_NL];
  for (int64_t i = 0; i < n / TSR_QK4_NL; i++, src += TSR_QK4_NL)
    {
      float d = tsri_fit_table (src, TSR_QK4_NL, tsri_kvalues_iq4nl, l);
      b[i].d = tsr_fp32_to_fp16 (d);
      tsri_table_error (src, TSR_QK4_NL, tsri_kvalues_iq4nl,
                        tsr_fp16_to_fp32 (b[i].d), l);
      pack32 (l, b[i].qs);
    }
}

/* iq4_xs.  */

static int
iq4_xs_scale (const struct tsr_block_iq4_xs *b, int j)
{
  return (b->scales_l[j / 2] >> (4 * (j % 2)) & 0xf)
         | (b->scales_h >> (2 * j) & 3) << 4;
}

void
tsri_iq4_xs_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_iq4_xs *b = src;
  for (int64_t i = 0; i < n / TSR_QK_K; i++)
    {
      const float d = tsr_fp16_to_fp32 (b[i].d);
      for (int j = 0; j < TSR_QK_K / 32; j++, dst += 32)
        {
          const float dl = d * (iq4_xs_scale (&b[i], j) - 32);
          const uint8_t *qs = b[i].qs + 16 * j;
          for (int l = 0; l < 16; l++)
            {
              dst[l] = dl * tsri_kvalues_iq4nl[qs[l] & 0xf];
              dst[l + 16] = dl * tsri_kvalues_iq4nl[qs[l] >> 4];
            }
        }
    }
}

/* The code in -32..31 of a group fitted with SCALE, against the
   super-block scale D: rounding, then its neighbours.  */
static int
code_iq4_group (const float *x, float scale, float d, uint8_t *l)
{
  int c0 = d != 0 ? tsri_round_clamp (scale / d, -32, 31) : 0, c = c0;
  float best = INFINITY;
  uint8_t cand[32];
  for (int a = c0 - 1; a <= c0 + 1; a++)
    {
      if (a < -32 || a > 31)
        continue;
      float e = tsri_table_error (x, 32, tsri_kvalues_iq4nl, d * a, cand);
      if (e < best)
        {
          best = e;
          c = a;
          memcpy (l, cand, sizeof cand);
        }
    }
  if (!(best < INFINITY))
    tsri_table_error (x, 32, tsri_kvalues_iq4nl, d * c0, l);
  return c;
}

static void
iq4_xs_block (const float *x, struct tsr_block_iq4_xs *b)
{
  float scale[TSR_QK_K / 32], max = 0;
  uint8_t l[32];
  for (int j = 0; j < TSR_QK_K / 32; j++)
    {
      scale[j] = tsri_fit_table (x + 32 * j, 32, tsri_kvalues_iq4nl, l);
      if (fabsf (scale[j]) > fabsf (max))
        max = scale[j];
    }
  b->d = tsr_fp32_to_fp16 (max / -32);
  float d = tsr_fp16_to_fp32 (b->d);
  b->scales_h = 0;
  memset (b->scales_l, 0, sizeof b->scales_l);
  for (int j = 0; j < TSR_QK_K / 32; j++)
    {
      int u = code_iq4_group (x + 32 * j, scale[j], d, l) + 32;
      b->scales_l[j / 2] |= (uint8_t) ((u & 15) << (4 * (j % 2)));
      b->scales_h |= (uint16_t) ((u >> 4) << (2 * j));
      pack32 (l, b->qs + 16 * j);
    }
}

void
tsri_iq4_xs_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_iq4_xs *b = dst;
  for (int64_t i = 0; i < n / TSR_QK_K; i++, src += TSR_QK_K)
    iq4_xs_block (src, &b[i]);
}

/* mxfp4.  */

/* 2^(e - 128) from its bits: E8M0's scale times one half.  */
static float
e8m0_half (uint8_t e)
{
  uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t) (e - 1) << 23;
  float f;
  memcpy (&f, &bits, sizeof f);
  return f;
}

void
tsri_mxfp4_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_mxfp4 *b = src;
  for (int64_t i = 0; i < n / TSR_QK_MXFP4; i++, dst += TSR_QK_MXFP4)
    {
      const float d = e8m0_half (b[i].e);
      for (int j = 0; j < 16; j++)
        {
          dst[j] = tsri_kvalues_mxfp4[b[i].qs[j] & 0xf] * d;
          dst[j + 16] = tsri_kvalues_mxfp4[b[i].qs[j] >> 4] * d;
        }
    }
}

/* The nearest code of X / D in the (unsorted) mxfp4 table.  */
static int
mxfp4_code (float x, float d)
{
  int best = 0;
  float err = fabsf (x);        /* code 0 is zero */
  for (int k = 1; k < 16; k++)
    {
      float e = fabsf (tsri_kvalues_mxfp4[k] * d - x);
      if (e < err)
        {
          err = e;
          best = k;
        }
    }
  return best;
}

static float
mxfp4_error (const float *x, uint8_t e, uint8_t *l)
{
  float d = e8m0_half (e), err = 0;
  for (int j = 0; j < TSR_QK_MXFP4; j++)
    {
      l[j] = (uint8_t) mxfp4_code (x[j], d);
      float r = tsri_kvalues_mxfp4[l[j]] * d - x[j];
      err += r * r;
    }
  return err;
}

/* The exponent that puts the block's largest magnitude AMAX at 4..8
   times the half scale (the top codes 8 and 12 cover up to 1.5 of it),
   then its neighbours by error.  */
static void
mxfp4_block (const float *x, struct tsr_block_mxfp4 *b)
{
  float amax = 0;
  uint8_t l[TSR_QK_MXFP4], cand[TSR_QK_MXFP4];
  for (int j = 0; j < TSR_QK_MXFP4; j++)
    amax = fmaxf (amax, fabsf (x[j]));
  int e0 = amax > 0 && isfinite (amax) ? ilogbf (amax) - 2 + 127 : 0;
  e0 = e0 < 0 ? 0 : e0 > 254 ? 254 : e0;
  float best = INFINITY;
  b->e = (uint8_t) e0;
  for (int e = e0 - 1; e <= e0 + 1; e++)
    {
      if (e < 0 || e > 254)
        continue;
      float err = mxfp4_error (x, (uint8_t) e, cand);
      if (err < best)
        {
          best = err;
          b->e = (uint8_t) e;
          memcpy (l, cand, sizeof l);
        }
    }
  if (!(best < INFINITY))
    mxfp4_error (x, b->e, l);
  pack32 (l, b->qs);
}

void
tsri_mxfp4_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_mxfp4 *b = dst;
  for (int64_t i = 0; i < n / TSR_QK_MXFP4; i++, src += TSR_QK_MXFP4)
    mxfp4_block (src, &b[i]);
}
