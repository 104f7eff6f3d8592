/* types-kquant.c - the k-quants q2_K, q3_K, q4_K, q5_K, q6_K and the
 * activation type q8_K: super-blocks of 256 elements.
 *
 * Owns the reference row conversions of these types.  to_float
 * performs the format's published dequantization operation for
 * operation, so the floats are the bits any GGUF reader produces:
 *
 *   q2_K  group g of 16: dl = d * (scales[g] & 15), ml = dmin *
 *         (scales[g] >> 4); x = dl * q - ml, q two bits.
 *   q3_K  group g of 16: dl = d * (s_g - 32), s_g six bits unpacked
 *         from the 12 scale bytes; x = dl * (q - 4 * !hbit).
 *   q4_K  group j of 32: d1 = d * sc_j, m1 = dmin * m_j (six bits each,
 *         in 12 bytes); x = d1 * q - m1.
 *   q5_K  as q4_K with q + 16 * hbit.
 *   q6_K  group g of 16: x = d * scales[g] * (q - 32), left to right.
 *   q8_K  x = d * q.
 *
 * Bit positions: the 2-bit fields of q2_K/q3_K put element e in byte
 * 32 (e / 128) + e % 32 at bit 2 ((e % 128) / 32); q3_K's third bit is
 * bit e / 32 of hmask[e % 32].  q4_K/q5_K put element e of group
 * j = e / 32 in byte 32 (j / 2) + e % 32, low nibble for even j; q5_K's
 * fifth bit is bit j of qh[e % 32].  q6_K puts element e (half
 * h = e / 128, k = (e % 128) / 32, l = e % 32) in ql[64 h + 32 (k % 2) + l]
 * (high nibble for k >= 2) and bits 2k of qh[32 h + l].
 *
 * from_float fits every group by a scale search (types-fit.c), codes the
 * group scales against the super-block's fp16 scales, and tries the
 * neighbouring codes of every group, keeping the one whose re-chosen
 * levels give the smallest error.  */
#include <config.h>

#include <math.h>
#include <string.h>

#include "tessera-impl.h"
#include "types-impl.h"

#define QK TSR_QK_K

/* Shared coding of group scales.  */

/* The offset of the 2-bit field of element E (q2_K, q3_K).  */
static int
crumb_byte (int e)
{
  return 32 * (e / 128) + e % 32;
}

static int
crumb_shift (int e)
{
  return 2 * (e % 128 / 32);
}

/* Error of X[0..N) against dl * q - ml, q = 0..NMAX re-chosen (into L).  */
static float
affine_group_error (const float *x, int n, int nmax, float dl, float ml,
                    uint8_t *l)
{
  float id = dl != 0 ? 1 / dl : 0, e = 0;
  for (int i = 0; i < n; i++)
    {
      l[i] = (uint8_t) tsri_round_clamp ((x[i] + ml) * id, 0, nmax);
      float r = dl * l[i] - ml - x[i];
      e += r * r;
    }
  return e;
}

/* Chooses the codes *SC, *M in 0..CMAX of a group fitted with SCALE and
   MIN (x ~ scale * q - min) against super-block scales D and DMIN:
   rounding, then the neighbouring codes.  Writes the group's levels.  */
static void
code_affine_group (const float *x, int n, int nmax, float scale, float min,
                   float d, float dmin, int cmax, int *sc, int *m,
                   uint8_t *l)
{
  int s0 = d > 0 ? tsri_round_clamp (scale / d, 0, cmax) : 0;
  int m0 = dmin > 0 ? tsri_round_clamp (min / dmin, 0, cmax) : 0;
  uint8_t cand[32];
  float best = INFINITY;
  *sc = s0;
  *m = m0;
  for (int a = s0 - 1; a <= s0 + 1; a++)
    for (int b = m0 - 1; b <= m0 + 1; b++)
      {
        if (a < 0 || a > cmax || b < 0 || b > cmax)
          continue;
        float e = affine_group_error (x, n, nmax, d * a, dmin * b, cand);
        if (e < best)
          {
            best = e;
            *sc = a;
            *m = b;
            memcpy (l, cand, (size_t) n);
          }
      }
  if (!(best < INFINITY))       /* NaN input: keep the rounded codes */
    affine_group_error (x, n, nmax, d * s0, dmin * m0, l);
}

/* Error of X[0..N) against dl * q, q = -NMAX..NMAX-1 re-chosen.  */
static float
signed_group_error (const float *x, int n, int nmax, float dl, int8_t *l)
{
  float id = dl != 0 ? 1 / dl : 0, e = 0;
  for (int i = 0; i < n; i++)
    {
      l[i] = (int8_t) tsri_round_clamp (x[i] * id, -nmax, nmax - 1);
      float r = dl * l[i] - x[i];
      e += r * r;
    }
  return e;
}

/* Chooses the code in CLO..CHI of a group fitted with SCALE against the
   super-block scale D; writes the group's levels.  */
static int
code_signed_group (const float *x, int n, int nmax, float scale, float d,
                   int clo, int chi, int8_t *l)
{
  int c0 = d != 0 ? tsri_round_clamp (scale / d, clo, chi) : 0, c = c0;
  int8_t cand[16];
  float best = INFINITY;
  for (int a = c0 - 1; a <= c0 + 1; a++)
    {
      if (a < clo || a > chi)
        continue;
      float e = signed_group_error (x, n, nmax, d * a, cand);
      if (e < best)
        {
          best = e;
          c = a;
          memcpy (l, cand, (size_t) n);
        }
    }
  if (!(best < INFINITY))
    signed_group_error (x, n, nmax, d * c0, l);
  return c;
}

/* The group scale of largest magnitude, with its sign.  */
static float
extreme (const float *s, int n)
{
  float max = 0;
  for (int i = 0; i < n; i++)
    if (fabsf (s[i]) > fabsf (max))
      max = s[i];
  return max;
}

static float
largest (const float *s, int n)
{
  float max = 0;
  for (int i = 0; i < n; i++)
    max = fmaxf (max, s[i]);
  return max;
}

/* Affine super-blocks (q2_K, q4_K, q5_K): fits NG groups of GS elements
   to levels 0..NMAX, codes scales and mins in 0..CMAX against the fp16
   scales written to *D and *DMIN; writes codes SC, M and levels L.  */
static void
fit_affine_superblock (const float *x, int ng, int gs, int nmax, int cmax,
                       tsr_fp16_t *d, tsr_fp16_t *dmin, int *sc, int *m,
                       uint8_t *l)
{
  float scale[16], min[16];
  for (int g = 0; g < ng; g++)
    {
      float off;
      scale[g] = tsri_fit_affine (x + g * gs, gs, nmax, true, l + g * gs,
                                  &off);
      min[g] = -off;
    }
  *d = tsr_fp32_to_fp16 (largest (scale, ng) / cmax);
  *dmin = tsr_fp32_to_fp16 (largest (min, ng) / cmax);
  float dq = tsr_fp16_to_fp32 (*d), mq = tsr_fp16_to_fp32 (*dmin);
  for (int g = 0; g < ng; g++)
    code_affine_group (x + g * gs, gs, nmax, scale[g], min[g], dq, mq, cmax,
                       &sc[g], &m[g], l + g * gs);
}

/* Signed super-blocks (q3_K, q6_K): 16 groups of 16 elements with
   levels -NMAX..NMAX-1, codes CLO..CHI (CLO < 0 takes the extreme group
   scale) against the fp16 scale written to *D.  */
static void
fit_signed_superblock (const float *x, int nmax, int clo, int chi,
                       tsr_fp16_t *d, int *code, int8_t *l)
{
  float scale[16];
  for (int g = 0; g < 16; g++)
    scale[g] = tsri_fit_signed (x + 16 * g, 16, nmax, l + 16 * g);
  *d = tsr_fp32_to_fp16 (extreme (scale, 16) / clo);
  float dq = tsr_fp16_to_fp32 (*d);
  for (int g = 0; g < 16; g++)
    code[g] = code_signed_group (x + 16 * g, 16, nmax, scale[g], dq, clo,
                                 chi, l + 16 * g);
}

/* q2_K.  */

void
tsri_q2_K_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_q2_K *b = src;
  for (int64_t i = 0; i < n / QK; i++, dst += QK)
    {
      const float d = tsr_fp16_to_fp32 (b[i].d);
      const float dmin = tsr_fp16_to_fp32 (b[i].dmin);
      for (int g = 0; g < QK / 16; g++)
        {
          const float dl = d * (b[i].scales[g] & 0xf);
          const float ml = dmin * (b[i].scales[g] >> 4);
          const int e0 = 16 * g, shift = crumb_shift (e0);
          const uint8_t *q = b[i].qs + crumb_byte (e0);
          for (int l = 0; l < 16; l++)
            dst[e0 + l] = dl * (q[l] >> shift & 3) - ml;
        }
    }
}

void
tsri_q2_K_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_q2_K *b = dst;
  uint8_t l[QK];
  int sc[16], m[16];
  for (int64_t i = 0; i < n / QK; i++, src += QK)
    {
      fit_affine_superblock (src, 16, 16, 3, 15, &b[i].d, &b[i].dmin, sc, m,
                             l);
      for (int g = 0; g < 16; g++)
        b[i].scales[g] = (uint8_t) (sc[g] | m[g] << 4);
      memset (b[i].qs, 0, sizeof b[i].qs);
      for (int e = 0; e < QK; e++)
        b[i].qs[crumb_byte (e)] |= (uint8_t) (l[e] << crumb_shift (e));
    }
}

/* q3_K.  */

static int
q3_scale (const uint8_t *s, int g)
{
  int lo = g < 8 ? s[g] & 15 : s[g - 8] >> 4;
  int hi = s[8 + g % 4] >> (2 * (g / 4)) & 3;
  return lo | hi << 4;
}

void
tsri_q3_K_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_q3_K *b = src;
  for (int64_t i = 0; i < n / QK; i++, dst += QK)
    {
      const float d = tsr_fp16_to_fp32 (b[i].d);
      for (int g = 0; g < QK / 16; g++)
        {
          const float dl = d * (q3_scale (b[i].scales, g) - 32);
          const int e0 = 16 * g, shift = crumb_shift (e0);
          const uint8_t *q = b[i].qs + crumb_byte (e0);
          const uint8_t *hm = b[i].hmask + e0 % 32, bit = 1u << (e0 / 32);
          for (int l = 0; l < 16; l++)
            dst[e0 + l] = dl * ((q[l] >> shift & 3) - (hm[l] & bit ? 0 : 4));
        }
    }
}

void
tsri_q3_K_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_q3_K *b = dst;
  int8_t l[QK];
  int code[16];
  for (int64_t i = 0; i < n / QK; i++, src += QK)
    {
      fit_signed_superblock (src, 4, -32, 31, &b[i].d, code, l);
      memset (b[i].scales, 0, sizeof b[i].scales);
      for (int g = 0; g < 16; g++)
        {
          int u = code[g] + 32;
          b[i].scales[g % 8] |= (uint8_t) ((u & 15) << (g < 8 ? 0 : 4));
          b[i].scales[8 + g % 4] |= (uint8_t) ((u >> 4) << (2 * (g / 4)));
        }
      memset (b[i].qs, 0, sizeof b[i].qs);
      memset (b[i].hmask, 0, sizeof b[i].hmask);
      for (int e = 0; e < QK; e++)
        {
          int u = l[e] + 4;
          b[i].qs[crumb_byte (e)] |= (uint8_t) ((u & 3) << crumb_shift (e));
          b[i].hmask[e % 32] |= (uint8_t) ((u >> 2) << (e / 32));
        }
    }
}

/* q4_K and q5_K: the 12 bytes of 6-bit scales and mins.  */

static void
scale_min_k4 (const uint8_t *s, int j, int *sc, int *m)
{
  if (j < 4)
    {
      *sc = s[j] & 63;
      *m = s[j + 4] & 63;
    }
  else
    {
      *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
      *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

static void
pack_scale_min_k4 (const int *sc, const int *m, uint8_t *s)
{
  for (int j = 0; j < 4; j++)
    {
      s[j] = (uint8_t) ((sc[j] & 63) | (sc[j + 4] >> 4) << 6);
      s[j + 4] = (uint8_t) ((m[j] & 63) | (m[j + 4] >> 4) << 6);
      s[j + 8] = (uint8_t) ((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
    }
}

static int
nibble_byte (int e)
{
  return 32 * (e / 64) + e % 32;
}

static int
nibble_shift (int e)
{
  return 4 * (e / 32 % 2);
}

/* q4_K and q5_K share everything but q5_K's fifth bits (QH, NULL for
   q4_K).  */

static void
k4_to_float (tsr_fp16_t dh, tsr_fp16_t dminh, const uint8_t *scales,
             const uint8_t *qs, const uint8_t *qh, float *dst)
{
  const float d = tsr_fp16_to_fp32 (dh), dmin = tsr_fp16_to_fp32 (dminh);
  for (int j = 0; j < QK / 32; j++)
    {
      int sc, m;
      scale_min_k4 (scales, j, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      const int e0 = 32 * j, shift = nibble_shift (e0);
      const uint8_t *q = qs + nibble_byte (e0), bit = 1u << j;
      for (int l = 0; l < 32; l++)
        dst[e0 + l] = d1 * ((q[l] >> shift & 0xf)
                            + (qh && qh[l] & bit ? 16 : 0)) - m1;
    }
}

static void
k4_from_float (const float *src, int nmax, tsr_fp16_t *d, tsr_fp16_t *dmin,
               uint8_t *scales, uint8_t *qs, uint8_t *qh)
{
  uint8_t l[QK];
  int sc[8], m[8];
  fit_affine_superblock (src, 8, 32, nmax, 63, d, dmin, sc, m, l);
  pack_scale_min_k4 (sc, m, scales);
  memset (qs, 0, QK / 2);
  if (qh)
    memset (qh, 0, QK / 8);
  for (int e = 0; e < QK; e++)
    {
      qs[nibble_byte (e)] |= (uint8_t) ((l[e] & 15) << nibble_shift (e));
      if (qh)
        qh[e % 32] |= (uint8_t) ((l[e] >> 4) << (e / 32));
    }
}

void
tsri_q4_K_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_q4_K *b = src;
  for (int64_t i = 0; i < n / QK; i++, dst += QK)
    k4_to_float (b[i].d, b[i].dmin, b[i].scales, b[i].qs, NULL, dst);
}

void
tsri_q4_K_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_q4_K *b = dst;
  for (int64_t i = 0; i < n / QK; i++, src += QK)
    k4_from_float (src, 15, &b[i].d, &b[i].dmin, b[i].scales, b[i].qs, NULL);
}

void
tsri_q5_K_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_q5_K *b = src;
  for (int64_t i = 0; i < n / QK; i++, dst += QK)
    k4_to_float (b[i].d, b[i].dmin, b[i].scales, b[i].qs, b[i].qh, dst);
}

void
tsri_q5_K_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_q5_K *b = dst;
  for (int64_t i = 0; i < n / QK; i++, src += QK)
    k4_from_float (src, 31, &b[i].d, &b[i].dmin, b[i].scales, b[i].qs,
                   b[i].qh);
}

/* q6_K.  */

static int
q6_low_byte (int e)
{
  return 64 * (e / 128) + 32 * (e % 128 / 32 % 2) + e % 32;
}

static int
q6_low_shift (int e)
{
  return e % 128 / 64 * 4;
}

void
tsri_q6_K_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_q6_K *b = src;
  for (int64_t i = 0; i < n / QK; i++, dst += QK)
    {
      const float d = tsr_fp16_to_fp32 (b[i].d);
      for (int e = 0; e < QK; e++)
        {
          const int lo = b[i].ql[q6_low_byte (e)] >> q6_low_shift (e) & 0xf;
          const int hi = b[i].qh[32 * (e / 128) + e % 32]
                         >> (2 * (e % 128 / 32)) & 3;
          const int8_t q = (int8_t) ((lo | hi << 4) - 32);
          dst[e] = d * b[i].scales[e / 16] * q;
        }
    }
}

void
tsri_q6_K_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_q6_K *b = dst;
  int8_t l[QK];
  int code[16];
  for (int64_t i = 0; i < n / QK; i++, src += QK)
    {
      fit_signed_superblock (src, 32, -128, 127, &b[i].d, code, l);
      for (int g = 0; g < 16; g++)
        b[i].scales[g] = (int8_t) code[g];
      memset (b[i].ql, 0, sizeof b[i].ql);
      memset (b[i].qh, 0, sizeof b[i].qh);
      for (int e = 0; e < QK; e++)
        {
          int u = l[e] + 32;
          b[i].ql[q6_low_byte (e)] |= (uint8_t) ((u & 15) << q6_low_shift (e));
          b[i].qh[32 * (e / 128) + e % 32]
            |= (uint8_t) ((u >> 4) << (2 * (e % 128 / 32)));
        }
    }
}

/* q8_K: d = amax / 127, q = round (x / d), bsums the sums of 16.  */

void
tsri_q8_K_to_float (const void *src, float *dst, int64_t n)
{
  const struct tsr_block_q8_K *b = src;
  for (int64_t i = 0; i < n / QK; i++, dst += QK)
    for (int j = 0; j < QK; j++)
      dst[j] = b[i].d * b[i].qs[j];
}

void
tsri_q8_K_from_float (const float *src, void *dst, int64_t n)
{
  struct tsr_block_q8_K *b = dst;
  for (int64_t i = 0; i < n / QK; i++, src += QK)
    {
      float amax = 0;
      for (int j = 0; j < QK; j++)
        amax = fmaxf (amax, fabsf (src[j]));
      float id = amax > 0 && isfinite (amax) ? 127 / amax : 0;
      b[i].d = id > 0 ? amax / 127 : 0;
      for (int g = 0; g < QK / 16; g++)
        {
          int sum = 0;
          for (int j = 16 * g; j < 16 * g + 16; j++)
            {
              b[i].qs[j] = (int8_t) tsri_round_clamp (src[j] * id, -127, 127);
              sum += b[i].qs[j];
            }
          b[i].bsums[g] = (int16_t) sum;
        }
    }
}
