/* Quantization (tsr_quantize_row) of the block types q4_1 q5_0 q5_1
   q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs mxfp4 and the activation type
   q8_K.

   1. RMSE on 64 rows of 4096 Gaussian and Laplace (heavy-tailed)
      numbers, generated here, against a bound: the RMSE the format's
      reference quantizer (ggml's quantize_row_*_ref, and quantize_iq4_*
      for the iq4 types, run once outside this tree on exactly these
      numbers) reaches on them.  Tessera must be no worse.  A quantizer
      that ignores the scale search, packs a level into the wrong place
      or clamps badly is far above these bounds.
   2. q8_K: bsums are the sums of each 16 quants, d = amax / 127, every
      element within d / 2, the extreme at +-127.
   3. Rows of zeros dequantize to zeros; rows with a constant, huge,
      tiny, infinite or NaN values are quantized without a crash and the
      finite ones stay finite; a row that is not whole blocks is refused.

   Limitations: the reference RMSE figures are those of one libm; a
   different log/cos changes the data in the last bit only.  */
#include <stdint.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

#define NROW 64
#define NCOL 4096
#define TN (NROW * NCOL)

static void
gaussian (float *x, long n, unsigned long long seed)
{
  tsr_test_seed (seed);
  for (long i = 0; i < n; i += 2)
    {
      double u1 = 1.0 - tsr_test_uniform (0, 1), u2 = tsr_test_uniform (0, 1);
      double r = sqrt (-2 * log (u1));
      x[i] = (float) (r * cos (6.283185307179586 * u2));
      x[i + 1] = (float) (r * sin (6.283185307179586 * u2));
    }
}

static void
laplace (float *x, long n, unsigned long long seed)
{
  tsr_test_seed (seed);
  for (long i = 0; i < n; i++)
    {
      double u = tsr_test_uniform (-0.5f, 0.5f);
      x[i] = (float) (u < 0 ? log (1 + 2 * u) : -log (1 - 2 * u));
    }
}

/* The reference quantizers' RMSE on these rows (Gaussian seed 12,
   Laplace seed 13).  */
static const struct
{
  const char *name;
  double gauss, laplace;
} bounds[] = {
  { "q4_1", 0.078362, 0.129294 },   { "q5_0", 0.042855, 0.075801 },
  { "q5_1", 0.037921, 0.062729 },   { "q2_K", 0.297881, 0.485179 },
  { "q3_K", 0.151477, 0.248654 },   { "q4_K", 0.071547, 0.119388 },
  { "q5_K", 0.036202, 0.060401 },   { "q6_K", 0.017787, 0.030535 },
  { "iq4_nl", 0.076324, 0.124388 }, { "iq4_xs", 0.076919, 0.125411 },
  { "mxfp4", 0.114900, 0.179044 },
};

static double
rmse (tsr_type t, const float *x, void *q, float *y)
{
  if (tsr_quantize_row (t, x, q, TN) != TSR_OK
      || tsr_dequantize_row (t, q, y, TN) != TSR_OK)
    return INFINITY;
  double e = 0;
  for (long i = 0; i < TN; i++)
    e += ((double) x[i] - y[i]) * ((double) x[i] - y[i]);
  return sqrt (e / TN);
}

static void
check_rmse (float *xg, float *xl, void *q, float *y)
{
  for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++)
    {
      tsr_type t = tsr_type_from_name (bounds[i].name);
      double g = rmse (t, xg, q, y), l = rmse (t, xl, q, y);
      CHECK (g <= bounds[i].gauss, "%s: Gaussian RMSE %.6f <= the "
             "reference's %.6f", bounds[i].name, g, bounds[i].gauss);
      CHECK (l <= bounds[i].laplace, "%s: Laplace RMSE %.6f <= the "
             "reference's %.6f", bounds[i].name, l, bounds[i].laplace);
    }
}

static void
check_q8_K (const float *x)
{
  struct tsr_block_q8_K b[NCOL / TSR_QK_K];
  int ok = tsr_quantize_row (TSR_TYPE_Q8_K, x, b, NCOL) == TSR_OK;
  int sums = 1, near = 1, top = 1;
  for (int i = 0; ok && i < NCOL / TSR_QK_K; i++)
    {
      const float *xb = x + i * TSR_QK_K;
      float amax = 0;
      int qmax = 0;
      for (int j = 0; j < TSR_QK_K; j++)
        amax = fmaxf (amax, fabsf (xb[j]));
      for (int g = 0; g < TSR_QK_K / 16; g++)
        {
          int s = 0;
          for (int j = 16 * g; j < 16 * g + 16; j++)
            s += b[i].qs[j];
          sums &= b[i].bsums[g] == s;
        }
      for (int j = 0; j < TSR_QK_K; j++)
        {
          near &= fabs ((double) b[i].d * b[i].qs[j] - xb[j])
                  <= b[i].d * 0.5 * (1 + 1e-6);
          qmax = b[i].qs[j] > qmax ? b[i].qs[j]
                 : -b[i].qs[j] > qmax ? -b[i].qs[j] : qmax;
        }
      top &= qmax == 127 && fabsf (b[i].d - amax / 127) <= 1e-6f * amax;
    }
  CHECK (ok && sums, "q8_K: bsums are the sums of each 16 quants");
  CHECK (ok && near, "q8_K: every element within d / 2");
  CHECK (ok && top, "q8_K: d = amax / 127, the extreme at +-127");
}

/* Rows of 256 with special values: quantizing never crashes, zeros stay
   zeros, finite rows dequantize to finite values.  */
static void
check_special (tsr_type t)
{
  static float x[256], y[256];
  static unsigned char q[292];
  const char *name = tsr_type_name (t);
  memset (x, 0, sizeof x);
  int zeros = tsr_quantize_row (t, x, q, 256) == TSR_OK
              && tsr_dequantize_row (t, q, y, 256) == TSR_OK;
  for (int i = 0; i < 256; i++)
    zeros &= y[i] == 0;
  CHECK (zeros, "%s: a row of zeros stays zeros", name);
  static const float specials[] = { 0.75f, 3e38f, 1e-30f, -2.5f };
  int finite = 1;
  for (size_t s = 0; s < sizeof specials / sizeof specials[0]; s++)
    {
      for (int i = 0; i < 256; i++)
        x[i] = s == 3 && i % 7 ? 0.001f * i : specials[s];
      tsr_quantize_row (t, x, q, 256);
      tsr_dequantize_row (t, q, y, 256);
      /* The coarsest format here, q3_K, can be a quarter of the largest
         magnitude off (+amax clamps to level 3 of -4..3); values below
         the fp16 scales' range may come back as zeros.  */
      float amax = fabsf (specials[s]);
      float tol = amax < 1e-20f ? amax : 0.3f * amax;
      for (int i = 0; i < 256 && amax < 1e30f; i++)
        finite &= isfinite (y[i]) && fabsf (y[i] - x[i]) <= tol;
    }
  CHECK (finite, "%s: constant, tiny and outlier rows come back finite "
         "and close", name);
  x[3] = INFINITY;
  x[5] = NAN;
  x[9] = -INFINITY;
  CHECK (tsr_quantize_row (t, x, q, 256) == TSR_OK,
         "%s: a row with inf and NaN is quantized without a crash", name);
  int64_t bs = tsr_type_traits (t)->block_size;
  CHECK (tsr_quantize_row (t, x, q, bs + 16) == TSR_ERR_SHAPE,
         "%s: %lld elements (not whole blocks) refused", name,
         (long long) (bs + 16));
}

int
main (void)
{
  float *xg = malloc (TN * sizeof *xg), *xl = malloc (TN * sizeof *xl);
  float *y = malloc (TN * sizeof *y);
  void *q = malloc (TN * 2);
  if (!xg || !xl || !y || !q)
    return 1;
  gaussian (xg, TN, 12);
  laplace (xl, TN, 13);
  check_rmse (xg, xl, q, y);
  check_q8_K (xl);
  for (int t = TSR_TYPE_Q4_1; t < TSR_TYPE_COUNT; t++)
    check_special ((tsr_type) t);
  free (xg);
  free (xl);
  free (y);
  free (q);
  return TSR_TEST_EXIT ();
}
