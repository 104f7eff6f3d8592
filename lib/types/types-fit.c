/* types-fit.c - the scale searches the quantizers share.
 *
 * Owns: fitting one group of floats with integer levels, affine
 * (scale * q + offset), signed (scale * q) or table-valued
 * (scale * table[q]), minimizing the squared error.  Each fit tries a
 * grid of candidate scales, takes the least-squares scale (and offset)
 * for the levels each candidate picks, keeps the best, then reassigns
 * the levels to that scale while the error still falls.  Packing into
 * blocks is the callers'.  Plain C: the reference every backend's
 * quantizer is compared with.  */
#include <config.h>

#include <math.h>
#include <string.h>

#include "types-impl.h"

/* Candidate scales: NMAX + k * FIT_STEP levels over the range for
   k = -FIT_STEPS .. FIT_STEPS.  */
#define FIT_STEPS 10
#define FIT_STEP 0.1f
#define FIT_REFINE 4

int
tsri_round_clamp (float x, int lo, int hi)
{
  if (!(x > (float) lo))        /* also NaN */
    return lo;
  if (x >= (float) hi)
    return hi;
  return (int) lrintf (x);
}

/* Affine fits.  */

struct affine
{
  float scale, offset, err;
};

static float
affine_error (const float *x, int n, const uint8_t *q, float s, float o)
{
  float e = 0;
  for (int i = 0; i < n; i++)
    {
      float d = s * q[i] + o - x[i];
      e += d * d;
    }
  return e;
}

/* The least-squares scale and offset for levels Q; false when Q is
   constant (no unique solution).  */
static bool
affine_solve (const float *x, int n, const uint8_t *q, bool nonpositive,
              struct affine *f)
{
  float sq = 0, sqq = 0, sx = 0, sqx = 0;
  for (int i = 0; i < n; i++)
    {
      sq += q[i];
      sqq += (float) q[i] * q[i];
      sx += x[i];
      sqx += q[i] * x[i];
    }
  float det = n * sqq - sq * sq;
  if (!(det > 0))
    return false;
  f->scale = (n * sqx - sq * sx) / det;
  f->offset = (sqq * sx - sq * sqx) / det;
  if (nonpositive && f->offset > 0)
    {
      f->offset = 0;
      f->scale = sqx / sqq;
    }
  if (f->scale < 0)
    return false;
  f->err = affine_error (x, n, q, f->scale, f->offset);
  return true;
}

static void
affine_levels (const float *x, int n, int nmax, float iscale, float lo,
               uint8_t *q)
{
  for (int i = 0; i < n; i++)
    q[i] = (uint8_t) tsri_round_clamp ((x[i] - lo) * iscale, 0, nmax);
}

float
tsri_fit_affine (const float *x, int n, int nmax, bool nonpositive,
                 uint8_t *q, float *offset)
{
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; i++)
    {
      lo = fminf (lo, x[i]);
      hi = fmaxf (hi, x[i]);
    }
  if (nonpositive && lo > 0)
    lo = 0;
  struct affine best = { 0, lo, INFINITY }, f;
  uint8_t cand[256];
  if (!(hi > lo) || n > 256)
    {
      for (int i = 0; i < n; i++)
        q[i] = 0;
      *offset = isfinite (lo) ? lo : 0;
      return 0;
    }
  for (int k = -FIT_STEPS; k <= FIT_STEPS; k++)
    {
      float iscale = (nmax + k * FIT_STEP) / (hi - lo);
      affine_levels (x, n, nmax, iscale, lo, cand);
      if (affine_solve (x, n, cand, nonpositive, &f) && f.err < best.err)
        {
          best = f;
          for (int i = 0; i < n; i++)
            q[i] = cand[i];
        }
    }
  for (int r = 0; r < FIT_REFINE && best.scale > 0; r++)
    {
      affine_levels (x, n, nmax, 1 / best.scale, best.offset, cand);
      if (!affine_solve (x, n, cand, nonpositive, &f) || !(f.err < best.err))
        break;
      best = f;
      for (int i = 0; i < n; i++)
        q[i] = cand[i];
    }
  if (!isfinite (best.err))     /* no candidate solved: min/max levels */
    {
      best.scale = (hi - lo) / nmax;
      affine_levels (x, n, nmax, 1 / best.scale, lo, q);
    }
  *offset = best.offset;
  return best.scale;
}

/* Signed and table fits: X ~ scale * v[i], the scale by least squares,
   judged by sum (v x)^2 / sum v^2 (larger is a smaller error).  */

struct proj
{
  float sqx, sqq;
};

static bool
proj_better (struct proj a, struct proj best)
{
  return a.sqq > 0
         && (best.sqq == 0 || a.sqx * a.sqx * best.sqq
                              > best.sqx * best.sqx * a.sqq);
}

static struct proj
signed_levels (const float *x, int n, int nmax, float iscale, int8_t *q)
{
  struct proj p = { 0, 0 };
  for (int i = 0; i < n; i++)
    {
      int l = tsri_round_clamp (x[i] * iscale, -nmax, nmax - 1);
      q[i] = (int8_t) l;
      p.sqx += l * x[i];
      p.sqq += (float) (l * l);
    }
  return p;
}

static float
signed_max (const float *x, int n)
{
  float max = 0;
  for (int i = 0; i < n; i++)
    if (fabsf (x[i]) > fabsf (max))
      max = x[i];
  return max;
}

/* How a projection fit picks levels: for the inverse scale ISCALE,
   writes the level of each element to Q and returns the sums.  */
struct picker
{
  struct proj (*levels) (const struct picker *p, const float *x, int n,
                         float iscale, uint8_t *q);
  int nmax;                     /* signed fits */
  const int8_t *table;          /* table fits */
  float top[2], step;           /* where the largest value may map */
};

/* The best of the candidates MAX maps to TOP[side] + k STEP, then
   reassignment while the error falls.  Returns the scale.  */
static float
proj_search (const struct picker *pk, const float *x, int n, float max,
             uint8_t *q)
{
  struct proj best = { 0, 0 }, p;
  uint8_t cand[256];
  for (int side = 0; side < 2; side++)
    for (int k = -FIT_STEPS; k <= FIT_STEPS; k++)
      {
        p = pk->levels (pk, x, n, (pk->top[side] + k * pk->step) / max, cand);
        if (proj_better (p, best))
          {
            best = p;
            memcpy (q, cand, (size_t) n);
          }
      }
  for (int r = 0; r < FIT_REFINE && best.sqq > 0 && best.sqx != 0; r++)
    {
      p = pk->levels (pk, x, n, best.sqq / best.sqx, cand);
      if (!proj_better (p, best))
        break;
      best = p;
      memcpy (q, cand, (size_t) n);
    }
  return best.sqq > 0 ? best.sqx / best.sqq : 0;
}

static struct proj
pick_signed (const struct picker *pk, const float *x, int n, float iscale,
             uint8_t *q)
{
  return signed_levels (x, n, pk->nmax, iscale, (int8_t *) q);
}

float
tsri_fit_signed (const float *x, int n, int nmax, int8_t *q)
{
  float max = signed_max (x, n);
  if (max == 0 || !isfinite (max) || n > 256)
    {
      memset (q, 0, (size_t) n);
      return 0;
    }
  /* The largest value at level nmax - 1, or at -nmax.  */
  struct picker pk = { pick_signed, nmax, NULL,
                       { nmax - 1.0f, -(float) nmax }, FIT_STEP };
  return proj_search (&pk, x, n, max, (uint8_t *) q);
}

int
tsri_table_index (const int8_t table[16], float x)
{
  int lo = 0, hi = 15;          /* table[lo] <= x < table[hi] */
  if (!(x > table[0]))
    return 0;
  if (x >= table[15])
    return 15;
  while (hi - lo > 1)
    {
      int mid = (lo + hi) / 2;
      if (x < table[mid])
        hi = mid;
      else
        lo = mid;
    }
  return x - table[lo] < table[hi] - x ? lo : hi;
}

static struct proj
table_levels (const float *x, int n, const int8_t table[16], float iscale,
              uint8_t *q)
{
  struct proj p = { 0, 0 };
  for (int i = 0; i < n; i++)
    {
      int l = tsri_table_index (table, x[i] * iscale);
      float v = table[l];
      q[i] = (uint8_t) l;
      p.sqx += v * x[i];
      p.sqq += v * v;
    }
  return p;
}

float
tsri_table_error (const float *x, int n, const int8_t table[16],
                  float scale, uint8_t *q)
{
  float iscale = scale != 0 ? 1 / scale : 0, e = 0;
  for (int i = 0; i < n; i++)
    {
      int l = tsri_table_index (table, x[i] * iscale);
      float d = scale * table[l] - x[i];
      e += d * d;
      if (q)
        q[i] = (uint8_t) l;
    }
  return e;
}

static struct proj
pick_table (const struct picker *pk, const float *x, int n, float iscale,
            uint8_t *q)
{
  return table_levels (x, n, pk->table, iscale, q);
}

float
tsri_fit_table (const float *x, int n, const int8_t table[16], uint8_t *q)
{
  float max = signed_max (x, n);
  if (max == 0 || !isfinite (max) || n > 256)
    {
      memset (q, tsri_table_index (table, 0), (size_t) n);
      return 0;
    }
  /* The largest value near either end of the table, give or take a few
     steps.  */
  struct picker pk = { pick_table, 0, table, { table[15], table[0] }, 1.0f };
  return proj_search (&pk, x, n, max, q);
}
