/* q8_0 and q4_0: quantize -> dequantize error bounds derived from the
   block formats in tessera/types.h, exact round trips, block bytes of
   hand-made inputs, the nibble layout, and bad arguments.

   q8_0: x = d * q, q an int8.  With d = amax / 127 and q = round (x / d)
   the error is at most d / 2; d is stored as fp16, off by at most
   max (d * 2^-11, 2^-25) (half an ulp, normal or subnormal), and that
   is multiplied by |q| <= 127.  Bound: d/2 + 127 |dh - d| + amax 1e-6.

   q4_0: x = d * (q - 8), q in 0..15, so a block spans -8 d .. 7 d: the
   scale needs |d| >= amax / 8 and the extreme of the other sign can be
   a whole step off (x / d = 8 clamps to 7).  Bound: amax / 8 plus
   8 |dh - d| plus amax 1e-6.  The extreme value itself is exact up to
   the fp16 rounding of d (amax 2^-10).  */
#include <stdint.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

#define QK 32
#define NBLOCKS 256
#define N (NBLOCKS * QK)

static double
fp16_err (double d)
{
  double rel = fabs (d) * ldexp (1.0, -11);
  double sub = ldexp (1.0, -25);
  return rel > sub ? rel : sub;
}

/* Decoders written from the format description.  */
static void
decode_q8_0 (const unsigned char *blk, double *out)
{
  tsr_fp16_t d;
  memcpy (&d, blk, 2);
  for (int j = 0; j < QK; j++)
    out[j] = (double) tsr_fp16_to_fp32 (d) * (int8_t) blk[2 + j];
}

static void
decode_q4_0 (const unsigned char *blk, double *out)
{
  tsr_fp16_t d;
  memcpy (&d, blk, 2);
  for (int j = 0; j < QK / 2; j++)
    {
      out[j] = (double) tsr_fp16_to_fp32 (d) * ((blk[2 + j] & 15) - 8);
      out[j + QK / 2] = (double) tsr_fp16_to_fp32 (d) * ((blk[2 + j] >> 4) - 8);
    }
}

static void
make_data (float *x)
{
  tsr_test_seed (2024);
  for (int b = 0; b < NBLOCKS; b++)
    {
      float a = powf (10.0f, (float) (b % 6) - 2.0f);   /* 0.01 .. 1000 */
      for (int j = 0; j < QK; j++)
        x[b * QK + j] = tsr_test_uniform (-a, a);
      if (b % 5 == 0)                                   /* an outlier */
        x[b * QK + b % QK] = (b & 1 ? -3 : 3) * a;
    }
}

static double
block_amax (const float *x)
{
  double m = 0;
  for (int j = 0; j < QK; j++)
    if (!(fabs (x[j]) <= m))    /* not fmax: see check_random */
      m = fabs (x[j]);
  return m;
}

static void
check_random (tsr_type type)
{
  const char *name = tsr_type_name (type);
  int q8 = type == TSR_TYPE_Q8_0;
  static float x[N], y[N];
  static unsigned char q[N / QK * 34];
  make_data (x);
  memset (y, 0, sizeof y);
  int rc1 = tsr_quantize_row (type, x, q, N);
  int rc2 = tsr_dequantize_row (type, q, y, N);
  CHECK (rc1 == TSR_OK && rc2 == TSR_OK, "%s quantize and dequantize %d values",
         name, N);

  long bad = 0, bad_layout = 0, bad_extreme = 0;
  int first = -1;
  double worst = 0, sum2 = 0;
  size_t bs = tsr_row_size (type, QK);
  for (int b = 0; b < NBLOCKS; b++)
    {
      const float *xb = x + b * QK, *yb = y + b * QK;
      double amax = block_amax (xb);
      double d = q8 ? amax / 127 : amax / 8;
      double bound = q8 ? d / 2 + 127 * fp16_err (d) + amax * 1e-6
                        : d + 8 * fp16_err (d) + amax * 1e-6;
      double dec[QK];
      if (q8)
        decode_q8_0 (q + b * bs, dec);
      else
        decode_q4_0 (q + b * bs, dec);
      for (int j = 0; j < QK; j++)
        {
          double e = fabs ((double) yb[j] - xb[j]);
          if (!(e <= bound) && !bad++)
            first = b * QK + j;
          /* Not fmax, whose reductions crash the vectorizer of
             Debian 12's aarch64 GCC 12.2; and a NaN must count.  */
          if (!(e / amax <= worst))
            worst = e / amax;
          sum2 += (e / amax) * (e / amax);
          if (dec[j] != yb[j])
            bad_layout++;
          if (fabs (xb[j]) == amax
              && !(fabs ((double) yb[j] - xb[j]) <= amax * ldexp (1.0, -10)))
            bad_extreme++;
        }
    }
  CHECK (bad == 0, "%s per-block error within the format bound (%ld "
         "elements over; the first, %d: x %.9g got %.9g)", name, bad,
         bad ? first : -1, bad ? (double) x[first] : 0.0,
         bad ? (double) y[first] : 0.0);
  double rms = sqrt (sum2 / N);
  /* Rounding to nearest with step s gives an rms error of s / sqrt 12
     for uniform data: amax / 440 (q8_0), amax / 28 (q4_0).  */
  CHECK (rms <= (q8 ? 1.0 / 300 : 1.0 / 20),
         "%s rms error relative to block amax is that of rounding to nearest"
         " (rms %.3g, worst %.3g)", name, rms, worst);
  CHECK (bad_layout == 0, "%s dequantize follows the documented block layout"
         " (%ld differ)", name, bad_layout);
  CHECK (bad_extreme == 0, "%s block extreme values survive within amax 2^-10"
         " (%ld over)", name, bad_extreme);
}

/* Values k / 4 with k from -127..127 (both ends present): d = 0.25.  */
static void
check_exact_q8_0 (void)
{
  float x[QK], y[QK];
  struct tsr_block_q8_0 blk;
  int k[QK];
  for (int j = 0; j < QK; j++)
    k[j] = j == 0 ? 127 : j == 1 ? -127 : (j * 53) % 253 - 126;
  for (int j = 0; j < QK; j++)
    x[j] = 0.25f * k[j];
  memset (&blk, 0xa5, sizeof blk);
  int ok = tsr_quantize_row (TSR_TYPE_Q8_0, x, &blk, QK) == TSR_OK;
  int bytes = ok && blk.d == 0x3400;   /* 0.25 in binary16 */
  for (int j = 0; j < QK; j++)
    bytes &= blk.qs[j] == k[j];
  CHECK (bytes, "q8_0 block of k/4 has scale 0x3400 and qs = k (scale 0x%04x)",
         blk.d);
  ok &= tsr_dequantize_row (TSR_TYPE_Q8_0, &blk, y, QK) == TSR_OK;
  for (int j = 0; j < QK; j++)
    ok &= y[j] == x[j];
  CHECK (ok, "q8_0 round trip is exact for values d * q with d = 0.25");
}

/* Values k / 4 with k in -8..7, -8 present: the GGUF reference
   quantizer takes d = (value of largest magnitude) / -8 = 0.25 and
   stores k + 8, element j in the low nibble of byte j, element j + 16
   in the high nibble.  */
static void
check_exact_q4_0 (void)
{
  float x[QK], y[QK];
  struct tsr_block_q4_0 blk;
  int k[QK];
  for (int j = 0; j < QK / 2; j++)
    {
      k[j] = j - 8;               /* -8 .. 7 */
      k[j + QK / 2] = 7 - j;      /* 7 .. -8 */
    }
  for (int j = 0; j < QK; j++)
    x[j] = 0.25f * k[j];
  x[QK / 2 + 15] = -1.75f;      /* keep -2 unique as the extreme: k = -7 */
  k[QK / 2 + 15] = -7;
  memset (&blk, 0xa5, sizeof blk);
  int ok = tsr_quantize_row (TSR_TYPE_Q4_0, x, &blk, QK) == TSR_OK;
  int bytes = ok && blk.d == 0x3400;
  for (int j = 0; j < QK / 2; j++)
    bytes &= blk.qs[j] == ((k[j] + 8) | ((k[j + QK / 2] + 8) << 4));
  CHECK (bytes, "q4_0 block of k/4 has scale 0x3400 and k+8 in nibbles j, j+16"
         " (scale 0x%04x, byte 0 0x%02x, byte 15 0x%02x)", blk.d, blk.qs[0],
         blk.qs[15]);
  ok &= tsr_dequantize_row (TSR_TYPE_Q4_0, &blk, y, QK) == TSR_OK;
  for (int j = 0; j < QK; j++)
    ok &= y[j] == x[j];
  CHECK (ok, "q4_0 round trip is exact for values d * k, k in -8..7, d = 0.25");
}

/* Blocks built by hand, dequantized.  */
static void
check_hand_blocks (void)
{
  struct tsr_block_q8_0 b8[2];
  struct tsr_block_q4_0 b4[2];
  float y[2 * QK];
  b8[0].d = 0xc000;                       /* -2 */
  b8[1].d = 0x3c00;                       /* 1 */
  for (int j = 0; j < QK; j++)
    {
      b8[0].qs[j] = (int8_t) (j - 16);
      b8[1].qs[j] = (int8_t) (j % 2 ? -128 + j : 127 - j);
    }
  int ok = tsr_dequantize_row (TSR_TYPE_Q8_0, b8, y, 2 * QK) == TSR_OK;
  for (int j = 0; j < QK; j++)
    ok &= y[j] == -2.0f * (j - 16) && y[QK + j] == (float) b8[1].qs[j];
  CHECK (ok, "q8_0 hand-made blocks dequantize to d * q");

  b4[0].d = 0x3800;                       /* 0.5 */
  b4[1].d = 0xbc00;                       /* -1 */
  for (int j = 0; j < QK / 2; j++)
    {
      b4[0].qs[j] = (uint8_t) (j | (15 - j) << 4);
      b4[1].qs[j] = (uint8_t) (((j * 7) & 15) | ((j * 3) & 15) << 4);
    }
  ok = tsr_dequantize_row (TSR_TYPE_Q4_0, b4, y, 2 * QK) == TSR_OK;
  for (int j = 0; j < QK / 2; j++)
    {
      ok &= y[j] == 0.5f * (j - 8) && y[j + 16] == 0.5f * (15 - j - 8);
      ok &= y[QK + j] == -1.0f * (((j * 7) & 15) - 8)
            && y[QK + j + 16] == -1.0f * (((j * 3) & 15) - 8);
    }
  CHECK (ok, "q4_0 hand-made blocks dequantize low nibbles to 0..15 and high"
         " nibbles to 16..31");
}

static void
check_special_blocks (tsr_type type)
{
  const char *name = tsr_type_name (type);
  float x[3 * QK], y[3 * QK];
  unsigned char q[3 * 34];
  for (int j = 0; j < QK; j++)
    {
      x[j] = 0.0f;
      x[QK + j] = 3.7f;
      x[2 * QK + j] = -0.3f;
    }
  int ok = tsr_quantize_row (type, x, q, 3 * QK) == TSR_OK
           && tsr_dequantize_row (type, q, y, 3 * QK) == TSR_OK;
  int zero = ok;
  for (int j = 0; j < QK; j++)
    zero &= y[j] == 0.0f;
  CHECK (zero, "%s all-zero block dequantizes to zeros (no NaN)", name);
  int same = ok;
  for (int b = 1; b < 3; b++)
    for (int j = 0; j < QK; j++)
      same &= y[b * QK + j] == y[b * QK]
              && fabs ((double) y[b * QK + j] - x[b * QK]) <= fabs (x[b * QK]) * ldexp (1.0, -10);
  CHECK (same, "%s blocks of identical values dequantize to one value within"
         " |x| 2^-10 (%.9g, %.9g)", name, (double) y[QK], (double) y[2 * QK]);
}

static void
check_bad_arguments (void)
{
  float x[64] = { 0 }, y[64];
  unsigned char q[2 * 34];
  CHECK (tsr_quantize_row (TSR_TYPE_Q8_0, x, q, 33) != TSR_OK,
         "q8_0 quantize of 33 values fails");
  CHECK (tsr_quantize_row (TSR_TYPE_Q4_0, x, q, 16) != TSR_OK,
         "q4_0 quantize of 16 values fails");
  CHECK (tsr_dequantize_row (TSR_TYPE_Q8_0, q, y, 40) != TSR_OK,
         "q8_0 dequantize of 40 values fails");
  CHECK (tsr_dequantize_row (TSR_TYPE_Q4_0, q, y, 31) != TSR_OK,
         "q4_0 dequantize of 31 values fails");
  CHECK (tsr_quantize_row (TSR_TYPE_Q8_0, x, q, -32) != TSR_OK,
         "q8_0 quantize of -32 values fails");
  CHECK (tsr_quantize_row (TSR_TYPE_COUNT, x, q, 32) != TSR_OK,
         "quantize to an invalid type fails");
  CHECK (tsr_dequantize_row ((tsr_type) 77, q, y, 32) != TSR_OK,
         "dequantize from an invalid type fails");
  tsr_clear_error ();
  int rc = tsr_quantize_row (TSR_TYPE_Q4_0, x, q, 48);
  CHECK (rc != TSR_OK && (int) tsr_last_status () == rc && tsr_last_error ()[0] != 0,
         "a failed quantize records its status and a message");
}

int
main (void)
{
  check_random (TSR_TYPE_Q8_0);
  check_random (TSR_TYPE_Q4_0);
  check_exact_q8_0 ();
  check_exact_q4_0 ();
  check_hand_blocks ();
  check_special_blocks (TSR_TYPE_Q8_0);
  check_special_blocks (TSR_TYPE_Q4_0);
  check_bad_arguments ();
  return TSR_TEST_EXIT ();
}
