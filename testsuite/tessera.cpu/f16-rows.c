/* The attention kernels of the CPU backend that take several rows at
   once (cpu-vec.c: vec_dot_f16_rows, vec_mad_f16_rows), called directly
   at every ISA level this machine runs.  They promise the bits of the
   single-row kernels (vec_dot_f16, vec_mad_f16) row by row, so that
   flash attention computes the same whichever it calls: checked bit
   for bit, for 1..4 rows and lengths around the vector widths and the
   double-precision block of the dot (2048 elements), with infinities
   and NaN among the values.  The kernels over a list of key rows
   (vec_dot_f16_keys, vec_mad_f16_keys: rows picked by index, in a
   shuffled order, some twice, at a stride) give the bits of the
   _rows kernels called key after key, zero weights skipped (an
   infinite value with a zero weight leaves the sum finite).  The
   conversion of rows to f16 (the key and value cache's writes) gives
   tsr_fp32_to_fp16's bits for every exponent, with rounding ties,
   subnormals, overflow, infinities and NaN.  The single-row dot is
   also checked against a double-precision sum (|err| <= 1e-6 sum
   |x y|).  */
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
typedef void (*dot_keys_fn) (int64_t, const char *, size_t, const int32_t *,
                             int, int, const float *const *, float *const *);
typedef void (*to_f16_fn) (int64_t, tsr_fp16_t *, const float *);
typedef void (*mad_keys_fn) (int64_t, float *const *, int, const char *,
                             size_t, const int32_t *, int,
                             const float *const *);

struct level
{
  const char *name;
  dot_fn dot;
  dot_rows_fn dot_rows;
  mad_fn mad;
  mad_rows_fn mad_rows;
  dot_keys_fn dot_keys;
  mad_keys_fn mad_keys;
  to_f16_fn to_f16;
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
  void tsr_cpu_vec_dot_f16_keys_##s (int64_t, const char *, size_t,     \
                                     const int32_t *, int, int,         \
                                     const float *const *,              \
                                     float *const *);                   \
  void tsr_cpu_vec_mad_f16_keys_##s (int64_t, float *const *, int,      \
                                     const char *, size_t,              \
                                     const int32_t *, int,              \
                                     const float *const *);             \
  void tsr_cpu_row_f32_to_f16_##s (int64_t, tsr_fp16_t *,               \
                                   const float *);                      \
  static const struct level level_##s = {                              \
    level_name, tsr_cpu_vec_dot_f16_##s, tsr_cpu_vec_dot_f16_rows_##s,  \
    tsr_cpu_vec_mad_f16_##s, tsr_cpu_vec_mad_f16_rows_##s,              \
    tsr_cpu_vec_dot_f16_keys_##s, tsr_cpu_vec_mad_f16_keys_##s,         \
    tsr_cpu_row_f32_to_f16_##s };
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

/* Rows of floats to f16 against tsr_fp32_to_fp16, bit for bit: every
   exponent with random significands, values at and around rounding
   ties, the subnormal range, overflow, infinities and NaN (signalling
   and quiet), in rows of 61 (vector bodies and a tail).  */
static void
check_to_f16 (const struct level *lv)
{
  enum { LEN = 61, ROUNDS = 600 };
  float v[LEN];
  tsr_fp16_t got[LEN];
  int diff = 0;

  for (int t = 0; t < ROUNDS; t++)
    {
      for (int i = 0; i < LEN; i++)
        {
          uint32_t u = (uint32_t) rand () << 16 ^ (uint32_t) rand ();
          int kind = (t + i) % 4;
          if (kind == 1)        /* a half's tie: 13 low bits 0x1000 */
            u = (u & ~0x1fffu) | 0x1000u;
          else if (kind == 2)   /* the subnormal and underflow range */
            u = (u & 0x807fffffu) | (uint32_t) (96 + rand () % 18) << 23;
          else if (kind == 3)   /* near the top, infinities and NaN */
            u = (u & 0x807fffffu) | (uint32_t) (140 + rand () % 116) << 23;
          memcpy (&v[i], &u, sizeof u);
        }
      lv->to_f16 (LEN, got, v);
      for (int i = 0; i < LEN; i++)
        diff += got[i] != tsr_fp32_to_fp16 (v[i]);
    }
  CHECK (diff == 0, "level %s: row_f32_to_f16 gives tsr_fp32_to_fp16's bits "
         "(%d of %d differ)", lv->name, diff, ROUNDS * LEN);
}

/* The key-list kernels against the _rows ones key after key.  */
enum { KEYS = 40, PICKS = 23, KEY_LEN = 136 };
static tsr_fp16_t keys[KEYS][KEY_LEN];
static float kw[ROWS][PICKS], kout[ROWS][PICKS];

static void
check_keys (const struct level *lv)
{
  static const int klens[] = { 1, 16, 33, 48, 64, 100, 128 };
  int dot_diff = 0, mad_diff = 0, nonfinite = 0;

  for (size_t t = 0; t < sizeof klens / sizeof *klens; t++)
    {
      const int n = klens[t];
      int32_t idx[PICKS];
      for (int j = 0; j < KEYS; j++)
        for (int i = 0; i < n; i++)
          keys[j][i] = tsr_fp32_to_fp16 ((float) tsr_test_uniform (-2, 2));
      keys[5][n - 1] = tsr_fp32_to_fp16 (INFINITY);
      for (int j = 0; j < PICKS; j++)
        idx[j] = (int32_t) ((j * 17 + 3) % KEYS);   /* 5 is picked */
      idx[PICKS - 1] = idx[0];
      for (int r = 0; r < ROWS; r++)
        for (int i = 0; i < n; i++)
          {
            y[r][i] = (float) tsr_test_uniform (-2, 2);
            acc[r][i] = acc1[r][i] = (float) tsr_test_uniform (-1, 1);
          }
      for (int nr = 1; nr <= ROWS; nr++)
        {
          const float *ys[ROWS], *ws[ROWS];
          float *accs[ROWS], *outs[ROWS];
          for (int r = 0; r < nr; r++)
            {
              ys[r] = y[r];
              ws[r] = kw[r];
              accs[r] = acc[r];
              outs[r] = kout[r];
              for (int j = 0; j < PICKS; j++)
                /* Key 5 (an infinite value) weighs 0 for all rows.  */
                kw[r][j] = idx[j] == 5 || (j + r) % 5 == 0
                           ? 0 : (float) tsr_test_uniform (-1, 1);
            }
          lv->dot_keys (n, (const char *) keys, sizeof keys[0], idx, PICKS,
                        nr, ys, outs);
          lv->mad_keys (n, accs, nr, (const char *) keys, sizeof keys[0],
                        idx, PICKS, ws);
          for (int j = 0; j < PICKS; j++)
            {
              float one[ROWS], wj[ROWS];
              float *a1[ROWS];
              int na = 0;
              lv->dot_rows (n, keys[idx[j]], nr, ys, one);
              for (int r = 0; r < nr; r++)
                dot_diff += memcmp (&one[r], &kout[r][j], sizeof one[r])
                            != 0;
              for (int r = 0; r < nr; r++)
                if (kw[r][j] != 0)
                  {
                    a1[na] = acc1[r];
                    wj[na++] = kw[r][j];
                  }
              if (na > 0)
                lv->mad_rows (n, a1, na, keys[idx[j]], wj);
            }
          for (int r = 0; r < nr; r++)
            {
              mad_diff += memcmp (acc[r], acc1[r], n * sizeof **acc) != 0;
              for (int i = 0; i < n; i++)
                nonfinite += !isfinite (acc[r][i]);
            }
        }
    }
  CHECK (dot_diff == 0, "level %s: vec_dot_f16_keys gives vec_dot_f16_rows' "
         "bits key after key (%d differences)", lv->name, dot_diff);
  CHECK (mad_diff == 0 && nonfinite == 0, "level %s: vec_mad_f16_keys gives "
         "vec_mad_f16_rows' bits key after key, zero weights skipped (%d "
         "differences, %d non-finite sums)", lv->name, mad_diff, nonfinite);
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
      check_keys (lv);
      check_to_f16 (lv);
      tested++;
    }
  CHECK (tested > 0, "some level was tested (%d)", tested);
  return TSR_TEST_EXIT ();
}
