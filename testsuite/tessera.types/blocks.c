/* Dequantization of the block types q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K
   q6_K q8_K iq4_nl iq4_xs mxfp4.

   1. Known answers: a row of 256 elements of each type made of the
      byte pattern (73 i + 41) mod 256 with power-of-two scales written
      over the scale fields.  Every value is then exact, and three sums
      of the row (plain, of squares, weighted by position, all exact in
      double) must equal those of the format's reference dequantization
      (ggml's dequantize_row_*, run once outside this tree to get them).
      A wrong bit position changes the weighted sum.
   2. A decoder per type written here, element by element, from the
      block layouts of the format description (not from the library's
      loops), must give the library's floats bit for bit on random
      blocks with random fp16 scales.  The products are rounded one at
      a time (volatile), as the format's reference rounds them.

   Limitations: NaN and infinite scales are not tried here (see
   quantize.c for what the quantizers do with them).  */
#include <stdint.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

#define N 256

/* Products rounded to float one at a time: never fused.  */
static float
mul (float a, float b)
{
  volatile float r = a * b;
  return r;
}

static float
half (const uint8_t *p)
{
  return tsr_fp16_to_fp32 ((tsr_fp16_t) (p[0] | p[1] << 8));
}

/* The 4-bit field of element J of a 32-element group at QS: low
   nibbles hold elements 0..15, high nibbles 16..31.  */
static int
nib32 (const uint8_t *qs, int j)
{
  return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
}

static const int8_t iq4nl[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
                                  1, 13, 25, 38, 53, 69, 89, 113 };

/* Twice the E2M1 value of code C (sign, 2-bit exponent, 1-bit mantissa,
   exponent bias 1, subnormal at exponent 0).  The format's table holds
   integers, so the negative zero (code 8) is +0.  */
static float
e2m1_twice (int c)
{
  int e = c >> 1 & 3, m = c & 1;
  float v = e == 0 ? m * 0.5f : ldexpf (1.0f + m * 0.5f, e - 1);
  return v == 0 ? 0.0f : (c & 8 ? -2 : 2) * v;
}

/* 32-element types: P is one block, J the element.  */
static float
dec_q4_1 (const uint8_t *p, int j)
{
  return mul ((float) nib32 (p + 4, j), half (p)) + half (p + 2);
}

static int
fifth_bit (const uint8_t *qh, int j)
{
  uint32_t w = qh[0] | qh[1] << 8 | qh[2] << 16 | (uint32_t) qh[3] << 24;
  return w >> j & 1;
}

static float
dec_q5_0 (const uint8_t *p, int j)
{
  int q = nib32 (p + 6, j) | fifth_bit (p + 2, j) << 4;
  return mul ((float) (q - 16), half (p));
}

static float
dec_q5_1 (const uint8_t *p, int j)
{
  int q = nib32 (p + 8, j) | fifth_bit (p + 4, j) << 4;
  return mul ((float) q, half (p)) + half (p + 2);
}

static float
dec_iq4_nl (const uint8_t *p, int j)
{
  return mul (half (p), iq4nl[nib32 (p + 2, j)]);
}

static float
dec_mxfp4 (const uint8_t *p, int j)
{
  /* E8M0 scale 2^(e - 127), halved for the doubled E2M1 values.  */
  return mul (e2m1_twice (nib32 (p + 1, j)), ldexpf (1.0f, p[0] - 128));
}

/* 256-element types.  The 2-bit field of element E: byte 32 (E / 128)
   + E % 32 of qs, bits 2 ((E % 128) / 32).  */
static int
crumb (const uint8_t *qs, int e)
{
  return qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32)) & 3;
}

static float
dec_q2_K (const uint8_t *p, int e)
{
  int sc = p[e / 16];                             /* scales[16] at 0 */
  float dl = mul (half (p + 80), (float) (sc & 15));
  float ml = mul (half (p + 82), (float) (sc >> 4));
  return mul (dl, (float) crumb (p + 16, e)) - ml;
}

static float
dec_q3_K (const uint8_t *p, int e)
{
  const uint8_t *hmask = p, *qs = p + 32, *sc = p + 96;
  int g = e / 16;
  /* Bytes 0..7: low nibble scale j, high nibble scale j + 8; byte 8 + k,
     bits 2i, 2i + 1: the top bits of scale 4i + k.  */
  int low = g < 8 ? sc[g] & 15 : sc[g - 8] >> 4;
  int s = (low | (sc[8 + g % 4] >> (2 * (g / 4)) & 3) << 4) - 32;
  int q = crumb (qs, e) + 4 * (hmask[e % 32] >> (e / 32) & 1) - 4;
  return mul (mul (half (p + 108), (float) s), (float) q);
}

/* 6-bit scale and min of group J of q4_K / q5_K from the 12 bytes S:
   groups 0..3 in the low 6 bits of bytes 0..3 (scales) and 4..7
   (mins); groups 4..7 in the nibbles of bytes 8..11 (scale low, min
   high) with their top 2 bits in the top of bytes 0..3 / 4..7.  */
static void
k4_scale (const uint8_t *s, int j, int *sc, int *m)
{
  if (j < 4)
    {
      *sc = s[j] & 63;
      *m = s[4 + j] & 63;
      return;
    }
  *sc = (s[8 + j - 4] & 15) | (s[j - 4] >> 6) << 4;
  *m = (s[8 + j - 4] >> 4) | (s[4 + j - 4] >> 6) << 4;
}

static float
dec_q4_K (const uint8_t *p, int e)
{
  int sc, m;
  k4_scale (p + 4, e / 32, &sc, &m);
  int q = p[16 + 32 * (e / 64) + e % 32] >> (4 * (e / 32 % 2)) & 15;
  return mul (mul (half (p), (float) sc), (float) q)
         - mul (half (p + 2), (float) m);
}

static float
dec_q5_K (const uint8_t *p, int e)
{
  int sc, m;
  k4_scale (p + 4, e / 32, &sc, &m);
  int q = (p[48 + 32 * (e / 64) + e % 32] >> (4 * (e / 32 % 2)) & 15)
          | (p[16 + e % 32] >> (e / 32) & 1) << 4;
  return mul (mul (half (p), (float) sc), (float) q)
         - mul (half (p + 2), (float) m);
}

static float
dec_q6_K (const uint8_t *p, int e)
{
  const uint8_t *ql = p, *qh = p + 128;
  int h = e / 128, k = e % 128 / 32, l = e % 32;
  int lo = ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2)) & 15;
  int hi = qh[32 * h + l] >> (2 * k) & 3;
  return mul (mul (half (p + 208), (float) (int8_t) p[192 + e / 16]),
              (float) ((lo | hi << 4) - 32));
}

static float
dec_q8_K (const uint8_t *p, int e)
{
  float d;
  memcpy (&d, p, 4);
  return mul (d, (float) (int8_t) p[4 + e]);
}

static float
dec_iq4_xs (const uint8_t *p, int e)
{
  int j = e / 32;
  int scales_h = p[2] | p[3] << 8;
  int ls = (p[4 + j / 2] >> (4 * (j % 2)) & 15)
           | (scales_h >> (2 * j) & 3) << 4;
  return mul (mul (half (p), (float) (ls - 32)),
              iq4nl[nib32 (p + 8 + 16 * j, e % 32)]);
}

struct type
{
  const char *name;
  int qk, bytes;
  float (*decode) (const uint8_t *block, int j);
  int scale[2];           /* offsets of fp16 scale fields, -1 none */
  uint16_t kat_scale[2];  /* their values in the known-answer rows */
  double sum, sum2, wsum; /* the reference's sums of those rows */
};

static const struct type types[] = {
  { "q4_1", 32, 20, dec_q4_1, { 0, 2 }, { 0x3800, 0xbc00 },
    0x1.66p+9, 0x1.a32p+11, 0x1.6b5cp+16 },
  { "q5_0", 32, 22, dec_q5_0, { 0, -1 }, { 0x3400, 0 },
    -0x1.2p+5, 0x1.4aap+10, -0x1.954p+10 },
  { "q5_1", 32, 24, dec_q5_1, { 0, 2 }, { 0x3400, 0xc000 },
    0x1.03p+9, 0x1.2ccp+11, 0x1.03p+16 },
  { "q2_K", 256, 84, dec_q2_K, { 80, 82 }, { 0x3800, 0x3400 },
    0x1.fecp+9, 0x1.85ccp+13, 0x1.ea37p+16 },
  { "q3_K", 256, 110, dec_q3_K, { 108, -1 }, { 0x3400, 0 },
    0x1.d4p+5, 0x1.91028p+14, 0x1.0f74p+13 },
  { "q4_K", 256, 144, dec_q4_K, { 0, 2 }, { 0x2c00, 0x2800 },
    0x1.a0dp+11, 0x1.505c04p+16, 0x1.c1ca6p+18 },
  { "q5_K", 256, 176, dec_q5_K, { 0, 2 }, { 0x2c00, 0x2800 },
    0x1.adf8p+12, 0x1.639b89p+18, 0x1.c6d97p+19 },
  { "q6_K", 256, 210, dec_q6_K, { 208, -1 }, { 0x2400, 0 },
    -0x1.cfep+7, 0x1.d991c14p+16, -0x1.8d7ep+14 },
  { "q8_K", 256, 292, dec_q8_K, { -1, -1 }, { 0, 0 },
    -0x1p+4, 0x1.5558p+14, 0x1.018p+13 },
  { "iq4_nl", 32, 18, dec_iq4_nl, { 0, -1 }, { 0x2400, 0 },
    -0x1.e78p+3, 0x1.1b9adp+8, -0x1.4274p+9 },
  { "iq4_xs", 256, 136, dec_iq4_xs, { 0, -1 }, { 0x2000, 0 },
    -0x1.932p+5, 0x1.b0c00bep+14, 0x1.af2d6p+12 },
  { "mxfp4", 32, 17, dec_mxfp4, { -1, -1 }, { 0, 0 },
    -0x1.cd2p+3, 0x1.66a085p+8, -0x1.7b43cp+11 },
};

static void
put_half (uint8_t *p, uint16_t h)
{
  p[0] = (uint8_t) h;
  p[1] = (uint8_t) (h >> 8);
}

/* The known-answer row of T: the pattern, then the scale fields.  */
static void
kat_row (const struct type *t, uint8_t *row)
{
  int nb = N / t->qk;
  for (int i = 0; i < nb * t->bytes; i++)
    row[i] = (uint8_t) ((i * 73 + 41) & 0xff);
  for (int b = 0; b < nb; b++)
    {
      uint8_t *p = row + b * t->bytes;
      for (int f = 0; f < 2; f++)
        if (t->scale[f] >= 0)
          put_half (p + t->scale[f], t->kat_scale[f]);
      if (strcmp (t->name, "q8_K") == 0)
        {
          float d = 0.125f;
          memcpy (p, &d, 4);
        }
      if (strcmp (t->name, "mxfp4") == 0)
        p[0] = (uint8_t) (120 + b);
    }
}

static void
check_known_answers (const struct type *t)
{
  uint8_t row[N / 32 * 24 + 292];
  float y[N];
  kat_row (t, row);
  int st = tsr_dequantize_row (tsr_type_from_name (t->name), row, y, N);
  double s = 0, s2 = 0, sw = 0;
  for (int e = 0; e < N; e++)
    {
      s += y[e];
      s2 += (double) y[e] * y[e];
      sw += (e + 1.0) * y[e];
    }
  CHECK (st == TSR_OK && s == t->sum && s2 == t->sum2 && sw == t->wsum,
         "%s: the reference's known answers (sums %a %a %a, want %a %a %a)",
         t->name, s, s2, sw, t->sum, t->sum2, t->wsum);
}

static void
random_row (const struct type *t, uint8_t *row)
{
  int nb = N / t->qk;
  for (int i = 0; i < nb * t->bytes; i++)
    row[i] = (uint8_t) tsr_test_uniform (0, 256);
  for (int b = 0; b < nb; b++)
    {
      uint8_t *p = row + b * t->bytes;
      for (int f = 0; f < 2; f++)
        if (t->scale[f] >= 0)
          put_half (p + t->scale[f],
                    tsr_fp32_to_fp16 (tsr_test_uniform (-3, 3)));
      if (strcmp (t->name, "q8_K") == 0)
        {
          float d = tsr_test_uniform (-3, 3);
          memcpy (p, &d, 4);
        }
      if (strcmp (t->name, "mxfp4") == 0 && b % 2)
        p[0] = (uint8_t) tsr_test_uniform (0, 4);  /* subnormal scales */
    }
}

static void
check_decoder (const struct type *t)
{
  uint8_t row[N / 32 * 24 + 292];
  float y[N];
  long bad = 0, first = -1;
  tsr_test_seed (99);
  for (int r = 0; r < 200; r++)
    {
      random_row (t, row);
      tsr_dequantize_row (tsr_type_from_name (t->name), row, y, N);
      for (int e = 0; e < N; e++)
        {
          float want = t->decode (row + e / t->qk * t->bytes, e % t->qk);
          if (memcmp (&want, &y[e], sizeof want) != 0 && bad++ == 0)
            first = r * N + e;
        }
    }
  CHECK (bad == 0, "%s: 200 random rows decode bit for bit as the format "
         "describes (%ld differ, first at %ld)", t->name, bad, first);
}

int
main (void)
{
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    {
      check_known_answers (&types[i]);
      check_decoder (&types[i]);
    }
  return TSR_TEST_EXIT ();
}
