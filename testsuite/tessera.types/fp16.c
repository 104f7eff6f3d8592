/* Half (IEEE 754 binary16) and bfloat16 scalar conversions: exact
   values, round to nearest even, overflow, NaN, and every bit pattern
   checked against decoders written here from the format definitions.  */
#include <float.h>
#include <stdint.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

static uint32_t
float_bits (float f)
{
  uint32_t u;
  memcpy (&u, &f, sizeof u);
  return u;
}

static float
bits_float (uint32_t u)
{
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

/* The value of binary16 bits H: sign, 5-bit exponent biased by 15,
   10-bit fraction; exponent 0 is subnormal (m * 2^-24).  */
static double
half_value (uint16_t h)
{
  int e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0)
    v = ldexp (m, -24);
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = ldexp (1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

static int
half_is_nan (uint16_t h)
{
  return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}

static int
bf16_is_nan (uint16_t h)
{
  return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0;
}

/* Same value and same sign of zero (NaN equals NaN).  */
static int
same_value (double a, double b)
{
  if (isnan (a) || isnan (b))
    return isnan (a) && isnan (b);
  return a == b && signbit (a) == signbit (b);
}

/* CONVERT (F) must give the bits WANT; TYPE and WHAT name the check.  */
static void
check_bits (const char *type, uint16_t (*convert) (float), float f,
            uint16_t want, const char *what)
{
  uint16_t got = convert (f);
  if (got == want)
    tsr_test_result (1, "%s from %s is 0x%04x", type, what, want);
  else
    tsr_test_result (0, "%s from %s is 0x%04x: got 0x%04x", type, what, want,
                     got);
}

#define check_to_half(f, want, what)                                       \
  check_bits ("fp16", tsr_fp32_to_fp16, f, want, what)
#define check_to_bf16(f, want, what)                                       \
  check_bits ("bf16", tsr_fp32_to_bf16, f, want, what)

static void
check_half_exact (void)
{
  check_to_half (0.0f, 0x0000, "+0");
  check_to_half (-0.0f, 0x8000, "-0");
  check_to_half (1.0f, 0x3c00, "1");
  check_to_half (-2.0f, 0xc000, "-2");
  check_to_half (0.5f, 0x3800, "0.5");
  check_to_half (1.0f / 3.0f, 0x3555, "1/3 (rounded down)");
  check_to_half (65504.0f, 0x7bff, "65504 (largest finite)");
  check_to_half (-65504.0f, 0xfbff, "-65504");
  check_to_half (ldexpf (1.0f, -14), 0x0400, "2^-14 (smallest normal)");
  check_to_half (ldexpf (1023.0f, -24), 0x03ff, "1023*2^-24 (largest subnormal)");
  check_to_half (ldexpf (1.0f, -24), 0x0001, "2^-24 (smallest subnormal)");
  check_to_half (INFINITY, 0x7c00, "+inf");
  check_to_half (-INFINITY, 0xfc00, "-inf");
  /* Ties: 1 + 2^-11 lies halfway between 1 (even) and 1 + 2^-10.  */
  check_to_half (1.0f + ldexpf (1.0f, -11), 0x3c00, "1+2^-11 (tie to even, down)");
  check_to_half (1.0f + 3 * ldexpf (1.0f, -11), 0x3c02, "1+3*2^-11 (tie to even, up)");
  check_to_half (1.0f + ldexpf (1.0f, -11) + ldexpf (1.0f, -20), 0x3c01,
                 "just above 1+2^-11");
  check_to_half (ldexpf (1.0f, -25), 0x0000, "2^-25 (subnormal tie to zero)");
  check_to_half (3 * ldexpf (1.0f, -25), 0x0002, "3*2^-25 (subnormal tie up)");
  check_to_half (-1e-10f, 0x8000, "-1e-10 (underflow keeps sign)");
  check_to_half (65519.0f, 0x7bff, "65519 (below the overflow midpoint)");
  check_to_half (65520.0f, 0x7c00, "65520 (overflow midpoint goes to inf)");
  check_to_half (1e6f, 0x7c00, "1e6 (overflow)");
  check_to_half (-FLT_MAX, 0xfc00, "-FLT_MAX (overflow)");

  tsr_fp16_t h = tsr_fp32_to_fp16 (NAN);
  CHECK (half_is_nan (h), "fp16 from NaN is NaN (0x%04x)", h);
  /* A NaN whose payload sits only in bits a shift would drop.  */
  h = tsr_fp32_to_fp16 (bits_float (0x7f800001u));
  CHECK (half_is_nan (h), "fp16 from NaN 0x7f800001 stays NaN (0x%04x)", h);
  h = tsr_fp32_to_fp16 (bits_float (0xffc00000u));
  CHECK (half_is_nan (h), "fp16 from negative quiet NaN is NaN (0x%04x)", h);
}

/* Every one of the 65536 patterns: to float matches half_value; back
   to half gives the same bits (NaNs: some NaN).  */
static void
check_half_patterns (void)
{
  long bad_value = 0, bad_trip = 0, bad_nan = 0;
  unsigned first_value = 0, first_trip = 0, first_nan = 0;
  for (unsigned i = 0; i < 65536; i++)
    {
      uint16_t h = (uint16_t) i;
      float f = tsr_fp16_to_fp32 (h);
      if (!same_value (f, half_value (h)) && !bad_value++)
        first_value = i;
      uint16_t back = tsr_fp32_to_fp16 (f);
      if (half_is_nan (h))
        {
          if (!half_is_nan (back) && !bad_nan++)
            first_nan = i;
        }
      else if (back != h && !bad_trip++)
        first_trip = i;
    }
  CHECK (bad_value == 0,
         "fp16 to float matches the binary16 definition for all 65536 patterns"
         " (%ld wrong, first 0x%04x)", bad_value, first_value);
  CHECK (bad_trip == 0, "fp16 -> float -> fp16 round trip of all non-NaN patterns"
         " (%ld wrong, first 0x%04x)", bad_trip, first_trip);
  CHECK (bad_nan == 0, "fp16 NaN patterns stay NaN through float"
         " (%ld wrong, first 0x%04x)", bad_nan, first_nan);
}

/* Every midpoint between consecutive finite halves (exact in float)
   rounds to the even neighbour; one float ulp either side rounds to
   the nearer one.  */
static void
check_half_midpoints (void)
{
  long bad_tie = 0, bad_near = 0;
  unsigned first_tie = 0, first_near = 0;
  for (unsigned h = 0; h < 0x7bff; h++)
    for (int s = 0; s < 2; s++)
      {
        uint16_t sign = s ? 0x8000 : 0;
        float mid = (float) ((half_value (h) + half_value (h + 1)) / 2);
        if (s)
          mid = -mid;
        uint16_t even = (h & 1) ? h + 1 : h;
        if (tsr_fp32_to_fp16 (mid) != (sign | even) && !bad_tie++)
          first_tie = h;
        uint32_t u = float_bits (mid);
        /* For the magnitude: u - 1 is nearer h, u + 1 nearer h + 1.  */
        if ((tsr_fp32_to_fp16 (bits_float (u - 1)) != (sign | h)
             || tsr_fp32_to_fp16 (bits_float (u + 1)) != (sign | (h + 1)))
            && !bad_near++)
          first_near = h;
      }
  CHECK (bad_tie == 0, "fp16 rounds every midpoint between finite halves to even"
         " (%ld wrong, first below 0x%04x)", bad_tie, first_tie);
  CHECK (bad_near == 0, "fp16 rounds one float ulp off each midpoint to nearest"
         " (%ld wrong, first below 0x%04x)", bad_near, first_near);
}

/* Random floats over the whole half range against a nearest-value
   search among the halves.  */
static uint16_t
nearest_half (float f)
{
  uint16_t sign = signbit (f) ? 0x8000 : 0;
  double a = fabs ((double) f);
  if (a >= 65520.0)
    return sign | 0x7c00;
  int lo = 0, hi = 0x7bff;
  while (lo < hi)
    {
      int mid = (lo + hi + 1) / 2;
      if (half_value (mid) <= a)
        lo = mid;
      else
        hi = mid - 1;
    }
  if (lo == 0x7bff)
    return sign | lo;
  double below = a - half_value (lo), above = half_value (lo + 1) - a;
  if (below < above || (below == above && !(lo & 1)))
    return sign | lo;
  return sign | (lo + 1);
}

static void
check_half_random (void)
{
  long bad = 0;
  float first = 0;
  tsr_test_seed (12345);
  for (int i = 0; i < 200000; i++)
    {
      float f = ldexpf (tsr_test_uniform (1.0f, 2.0f),
                        (int) tsr_test_uniform (-27.0f, 17.0f));
      if (i & 1)
        f = -f;
      if (tsr_fp32_to_fp16 (f) != nearest_half (f) && !bad++)
        first = f;
    }
  CHECK (bad == 0, "fp16 of 200000 random floats in [2^-27, 2^17) is the nearest"
         " half (%ld wrong, first %.9g)", bad, (double) first);
}

static void
check_bf16 (void)
{
  check_to_bf16 (0.0f, 0x0000, "+0");
  check_to_bf16 (-0.0f, 0x8000, "-0");
  check_to_bf16 (1.0f, 0x3f80, "1");
  check_to_bf16 (-2.0f, 0xc000, "-2");
  check_to_bf16 (3.0f, 0x4040, "3");
  check_to_bf16 (3.14159265358979f, 0x4049, "pi (rounded down)");
  check_to_bf16 (INFINITY, 0x7f80, "+inf");
  check_to_bf16 (-INFINITY, 0xff80, "-inf");
  check_to_bf16 (1.0f + ldexpf (1.0f, -8), 0x3f80, "1+2^-8 (tie to even, down)");
  check_to_bf16 (1.0f + 3 * ldexpf (1.0f, -8), 0x3f82, "1+3*2^-8 (tie to even, up)");
  check_to_bf16 (1.0f + ldexpf (1.0f, -8) + ldexpf (1.0f, -20), 0x3f81,
                 "just above 1+2^-8");
  check_to_bf16 (FLT_MAX, 0x7f80, "FLT_MAX (overflow to inf)");
  check_to_bf16 (ldexpf (1.0f, -133), 0x0001, "2^-133 (smallest subnormal)");

  tsr_bf16_t h = tsr_fp32_to_bf16 (NAN);
  CHECK (bf16_is_nan (h), "bf16 from NaN is NaN (0x%04x)", h);
  h = tsr_fp32_to_bf16 (bits_float (0x7f800001u));
  CHECK (bf16_is_nan (h), "bf16 from NaN 0x7f800001 stays NaN (0x%04x)", h);
  h = tsr_fp32_to_bf16 (bits_float (0xffffffffu));
  CHECK (bf16_is_nan (h), "bf16 from NaN 0xffffffff stays NaN (0x%04x)", h);

  /* bfloat16 is the top half of a binary32.  */
  long bad_value = 0, bad_trip = 0, bad_sub = 0;
  unsigned first_value = 0, first_trip = 0, first_sub = 0;
  for (unsigned i = 0; i < 65536; i++)
    {
      uint16_t b = (uint16_t) i;
      float f = tsr_bf16_to_fp32 (b);
      int ok = bf16_is_nan (b) ? isnan (f) : float_bits (f) == (uint32_t) i << 16;
      if (!ok && !bad_value++)
        first_value = i;
      if (bf16_is_nan (b))
        continue;
      int subnormal = (b & 0x7f80) == 0 && (b & 0x7f) != 0;
      if (tsr_fp32_to_bf16 (f) != b)
        {
          if (subnormal && !bad_sub++)
            first_sub = i;
          if (!subnormal && !bad_trip++)
            first_trip = i;
        }
    }
  CHECK (bad_value == 0, "bf16 to float is the pattern shifted left 16 for all 65536"
         " patterns (%ld wrong, first 0x%04x)", bad_value, first_value);
  CHECK (bad_trip == 0, "bf16 -> float -> bf16 round trip of normal, zero and inf"
         " patterns (%ld wrong, first 0x%04x)", bad_trip, first_trip);
  CHECK (bad_sub == 0, "bf16 -> float -> bf16 round trip of subnormal patterns"
         " (%ld wrong, first 0x%04x)", bad_sub, first_sub);

  /* Midpoints between consecutive finite bfloat16 values are the
     floats with low half 0x8000; ties go to even, one ulp off to the
     nearer; the midpoint above the largest finite goes to inf.  */
  long bad_tie = 0, bad_near = 0;
  unsigned first_tie = 0, first_near = 0;
  for (unsigned b = 0; b <= 0x7f7f; b++)
    for (int s = 0; s < 2; s++)
      {
        uint32_t sign = s ? 0x80000000u : 0;
        uint32_t mid = sign | (b << 16) | 0x8000u;
        uint16_t even = (b & 1) ? b + 1 : b;
        if (tsr_fp32_to_bf16 (bits_float (mid)) != ((sign >> 16) | even)
            && !bad_tie++)
          first_tie = b;
        if ((tsr_fp32_to_bf16 (bits_float (mid - 1)) != ((sign >> 16) | b)
             || tsr_fp32_to_bf16 (bits_float (mid + 1)) != ((sign >> 16) | (b + 1)))
            && !bad_near++)
          first_near = b;
      }
  CHECK (bad_tie == 0, "bf16 rounds every midpoint between finite values to even"
         " (%ld wrong, first above 0x%04x)", bad_tie, first_tie);
  CHECK (bad_near == 0, "bf16 rounds one float ulp off each midpoint to nearest"
         " (%ld wrong, first above 0x%04x)", bad_near, first_near);
}

int
main (void)
{
  check_to_half (2.0f, 0x4000, "2");
  CHECK (same_value (tsr_fp16_to_fp32 (0x3c00), 1.0), "fp16 0x3c00 is 1");
  CHECK (same_value (tsr_fp16_to_fp32 (0x8000), -0.0), "fp16 0x8000 is -0");
  CHECK (tsr_fp16_to_fp32 (0x0001) == ldexpf (1.0f, -24), "fp16 0x0001 is 2^-24");
  CHECK (tsr_fp16_to_fp32 (0x7bff) == 65504.0f, "fp16 0x7bff is 65504");
  CHECK (tsr_fp16_to_fp32 (0xfc00) == -INFINITY, "fp16 0xfc00 is -inf");
  CHECK (isnan (tsr_fp16_to_fp32 (0x7e00)), "fp16 0x7e00 is NaN");
  CHECK (isnan (tsr_fp16_to_fp32 (0x7c01)), "fp16 0x7c01 is NaN");
  check_half_exact ();
  check_half_patterns ();
  check_half_midpoints ();
  check_half_random ();
  check_bf16 ();
  return TSR_TEST_EXIT ();
}
