/* types-quant.c - q4_1, q5_0 and q5_1: blocks of 32 with an fp16 scale
 * (and an fp16 minimum for the _1 types).
 *
 * Owns the reference row conversions of these three types.  to_float
 * performs the format's published dequantization operation for
 * operation (an int level converted to float, times d, plus m), so
 * the floats are the bits any other GGUF reader produces.  from_float
 * fits each block by a scale search (types-fit.c) and then picks the
 * levels against the fp16-rounded scale and minimum it stores.  */
#include <config.h>

#include <string.h>

#include "tessera-impl.h"
#include "types-impl.h"

#define QK 32
#define HALF (QK / 2)

/* q5_0 / q5_1: element j's fifth bit is bit j of qh (little-endian).  */
static uint32_t
load_qh (const uint8_t qh[4])
{
  return (uint32_t) qh[0] | (uint32_t) qh[1] << 8 | (uint32_t) qh[2] << 16
         | (uint32_t) qh[3] << 24;
}

static void
store_qh (uint8_t qh[4], uint32_t v)
{
  for (int i = 0; i < 4; i++)
    qh[i] = (uint8_t) (v >> (8 * i));
}

/* Element j of a block's 4-bit field: low nibble of byte j for j < 16,
   high nibble of byte j - 16 otherwise.  */
static void
pack_nibbles (const uint8_t *l, uint8_t *qs)
{
  for (int j = 0; j < HALF; j++)
    qs[j] = (uint8_t) ((l[j] & 15) | (l[j + HALF] & 15) << 4);
}

static uint32_t
fifth_bits (const uint8_t *l)
{
  uint32_t qh = 0;
  for (int j = 0; j < QK; j++)
    qh |= (uint32_t) (l[j] >> 4 & 1) << j;
  return qh;
}

/* Levels 0..NMAX for x ~ d * l + m with the stored D and M.  */
static void
affine_levels (const float *x, float d, float m, int nmax, uint8_t *l)
{
  float id = d != 0 ? 1 / d : 0;
  for (int j = 0; j < QK; j++)
    l[j] = (uint8_t) tsri_round_clamp ((x[j] - m) * id, 0, nmax);
}

/* q4_1 and q5_1 share everything but q5_1's fifth bits (QH, NULL for
   q4_1).  */

static void
with_min_to_float (tsr_fp16_t dh, tsr_fp16_t mh, const uint8_t *qs,
                   const uint8_t *qh, float *dst)
{
  const float d = tsr_fp16_to_fp32 (dh), m = tsr_fp16_to_fp32 (mh);
  const uint32_t h = qh ? load_qh (qh) : 0;
  for (int j = 0; j < HALF; j++)
    {
      const int lo = (int) ((qs[j] & 0x0f) | (h >> j & 1) << 4);
      const int hi = (int) ((qs[j] >> 4) | (h >> (j + HALF) & 1) << 4);
      dst[j] = lo * d + m;
      dst[j + HALF] = hi * d + m;
    }
}

static void
with_min_from_float (const float *x, int nmax, tsr_fp16_t *d, tsr_fp16_t *m,
                     uint8_t *qs, uint8_t *qh)
{
  uint8_t l[QK];
  float offset, scale = tsri_fit_affine (x, QK, nmax, false, l, &offset);
  *d = tsr_fp32_to_fp16 (scale);
  *m = tsr_fp32_to_fp16 (offset);
  affine_levels (x, tsr_fp16_to_fp32 (*d), tsr_fp16_to_fp32 (*m), nmax, l);
  pack_nibbles (l, qs);
  if (qh)
    store_qh (qh, fifth_bits (l));
}

void
tsri_q4_1_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_q4_1 *b = src;
  for (int64_t i = 0; i < n / QK; i++, dst += QK)
    with_min_to_float (b[i].d, b[i].m, b[i].qs, NULL, dst);
}

void
tsri_q4_1_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_q4_1 *b = dst;
  for (int64_t i = 0; i < n / QK; i++, src += QK)
    with_min_from_float (src, 15, &b[i].d, &b[i].m, b[i].qs, NULL);
}

void
tsri_q5_1_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_q5_1 *b = src;
  for (int64_t i = 0; i < n / QK; i++, dst += QK)
    with_min_to_float (b[i].d, b[i].m, b[i].qs, b[i].qh, dst);
}

void
tsri_q5_1_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_q5_1 *b = dst;
  for (int64_t i = 0; i < n / QK; i++, src += QK)
    with_min_from_float (src, 31, &b[i].d, &b[i].m, b[i].qs, b[i].qh);
}

/* q5_0.  */

void
tsri_q5_0_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_q5_0 *b = src;
  for (int64_t i = 0; i < n / QK; i++, dst += QK)
    {
      const float d = tsr_fp16_to_fp32 (b[i].d);
      const uint32_t qh = load_qh (b[i].qh);
      for (int j = 0; j < HALF; j++)
        {
          const int lo = (int) ((b[i].qs[j] & 0x0f) | (qh >> j & 1) << 4);
          const int hi = (int) ((b[i].qs[j] >> 4)
                                | (qh >> (j + HALF) & 1) << 4);
          dst[j] = (lo - 16) * d;
          dst[j + HALF] = (hi - 16) * d;
        }
    }
}

void
tsri_q5_0_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_q5_0 *b = dst;
  int8_t q[QK];
  uint8_t l[QK];
  for (int64_t i = 0; i < n / QK; i++, src += QK)
    {
      b[i].d = tsr_fp32_to_fp16 (tsri_fit_signed (src, QK, 16, q));
      float d = tsr_fp16_to_fp32 (b[i].d), id = d != 0 ? 1 / d : 0;
      for (int j = 0; j < QK; j++)
        l[j] = (uint8_t) (tsri_round_clamp (src[j] * id, -16, 15) + 16);
      pack_nibbles (l, b[i].qs);
      store_qh (b[i].qh, fifth_bits (l));
    }
}
