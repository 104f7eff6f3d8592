/* The attention kernels of the CPU backend that take several rows at
   once (cpu-vec.c: vec_dot_f16_rows, vec_mad_f16_rows), called directly
   at every ISA level this machine runs.  They promise the bits of the
   single-row kernels (vec_dot_f16, vec_mad_f16) row by row, so that
   flash attention computes the same whichever it calls: checked bit
   for bit, for 1..4 rows and lengths around the vector widths and the
   double-precision block of the dot (2048 elements), with infinities
   and NaN among the values.  The single-row dot is also checked
   against a double-precision sum (|err| <= 1e-6 sum |x y|).  */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"
#include "cpu-vec.h"
#include "cpu-levels.h"

typedef float (*dot_fn) (int64_t, const tsr_fp16_t *, const float *);
typedef void (*dot_rows_fn) (int64_t, const tsr_fp16_t *, int,
                             const float *const *, float *);
typedef void (*mad_fn) (int64_t, float *, const tsr_fp16_t *, float);
typedef void (*mad_rows_fn) (int64_t, float *const *, int,
                             const tsr_fp16_t *, const float *);

struct level
{
  const char *name;
  dot_fn dot;
  dot_rows_fn dot_rows;
  mad_fn mad;
  mad_rows_fn mad_rows;
};

#define LEVEL(s, level_name)                                            \
  float tsr_cpu_vec_dot_f16_##s (int64_t, const tsr_fp16_t *,           \
                                 const float *);                        \
  void tsr_cpu_vec_dot_f16_rows_##s (int64_t, const tsr_fp16_t *, int,  \
                                     const float *const *, float *);    \
  void tsr_cpu_vec_mad_f16_##s (int64_t, float *, const tsr_fp16_t *,   \
                                float);                                 \
  void tsr_cpu_vec_mad_f16_rows_##s (int64_t, float *const *, int,      \
                                     const tsr_fp16_t *, const float *); \
  static const struct level level_##s = {                              \
    level_name, tsr_cpu_vec_dot_f16_##s, tsr_cpu_vec_dot_f16_rows_##s,  \
    tsr_cpu_vec_mad_f16_##s, tsr_cpu_vec_mad_f16_rows_##s };
TSR_TEST_EACH_LEVEL (LEVEL)
#define LEVEL_ENTRY(s, level_name) &level_##s,
static const struct level *const levels[] = {
  TSR_TEST_EACH_LEVEL (LEVEL_ENTRY) NULL
};

enum { ROWS = 4, MAX_N = 4500 };
static const int lengths[] = { 1, 7, 15, 16, 17, 31, 32, 33, 64, 100, 128,
                               2047, 2048, 2049, 4500 };
#define N_LENGTHS (int) (sizeof lengths / sizeof lengths[0])

static tsr_fp16_t x[MAX_N];
static float y[ROWS][MAX_N], acc[ROWS][MAX_N], acc1[ROWS][MAX_N];

static void
check_level (const struct level *lv)
{
  int dot_diff = 0, mad_diff = 0, ref_bad = 0;

  for (int t = 0; t < N_LENGTHS; t++)
    {
      int n = lengths[t];
      for (int special = 0; special < 2; special++)
        {
          for (int i = 0; i < n; i++)
            x[i] = tsr_fp32_to_fp16 ((float) tsr_test_uniform (-2, 2));
          for (int r = 0; r < ROWS; r++)
            for (int i = 0; i < n; i++)
              {
                y[r][i] = (float) tsr_test_uniform (-2, 2);
                acc[r][i] = acc1[r][i] = (float) tsr_test_uniform (-1, 1);
              }
          if (special)          /* an infinite value, a NaN query */
            {
              x[n / 2] = tsr_fp32_to_fp16 (INFINITY);
              y[ROWS - 1][n - 1] = NAN;
            }
          for (int nr = 1; nr <= ROWS; nr++)
            {
              const float *ys[ROWS];
              float *accs[ROWS], out[ROWS], w[ROWS];
              for (int r = 0; r < nr; r++)
                {
                  ys[r] = y[r];
                  accs[r] = acc[r];
                  w[r] = (float) tsr_test_uniform (-1, 1);
                }
              lv->dot_rows (n, x, nr, ys, out);
              for (int r = 0; r < nr; r++)
                {
                  float one = lv->dot (n, x, y[r]);
                  dot_diff += memcmp (&one, &out[r], sizeof one) != 0;
                  if (!special)
                    {
                      double want = 0, mag = 0;
                      for (int i = 0; i < n; i++)
                        {
                          double p = (double) tsr_fp16_to_fp32 (x[i])
                                     * y[r][i];
                          want += p;
                          mag += fabs (p);
                        }
                      ref_bad += !(fabs (one - want) <= 1e-6 * mag);
                    }
                }
              lv->mad_rows (n, accs, nr, x, w);
              for (int r = 0; r < nr; r++)
                {
                  lv->mad (n, acc1[r], x, w[r]);
                  mad_diff += memcmp (acc[r], acc1[r], n * sizeof **acc)
                              != 0;
                }
            }
        }
    }
  CHECK (dot_diff == 0, "level %s: vec_dot_f16_rows gives vec_dot_f16's "
         "bits for 1..%d rows (%d differences)", lv->name, ROWS, dot_diff);
  CHECK (mad_diff == 0, "level %s: vec_mad_f16_rows gives vec_mad_f16's "
         "bits for 1..%d rows (%d differences)", lv->name, ROWS, mad_diff);
  CHECK (ref_bad == 0, "level %s: vec_dot_f16 within 1e-6 sum |x y| of a "
         "double sum (%d outside)", lv->name, ref_bad);
}

int
main (void)
{
  int tested = 0;

  for (int l = 0; levels[l]; l++)
    {
      const struct level *lv = levels[l];
      if (!tsr_test_level_begin (lv->name))
        continue;
      tsr_test_seed (5);
      check_level (lv);
      tested++;
    }
  CHECK (tested > 0, "some level was tested (%d)", tested);
  return TSR_TEST_EXIT ();
}
