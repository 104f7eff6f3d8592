/* ocl-fit.cl - the scale searches of the quantizers into q4_1, q5_0,
 * q5_1, iq4_nl and mxfp4, for the quantizing copies and set_rows
 * (ocl-copy.cl): the searches of lib/types/types-fit.c and types-iq.c
 * step for step, so that a block comes out with the bits the library's
 * reference quantizer gives.  That takes the same float operations in
 * the same order, none contracted into fused multiply-adds, and
 * correctly rounded quotients: through double (QDIV), which is why the
 * host keeps these copies off devices without cl_khr_fp64.  Blocks of
 * 32 only.  */

#pragma OPENCL FP_CONTRACT OFF

#ifdef cl_khr_fp64
#define QDIV(a, b) ((float) ((double) (a) / (double) (b)))
#else
#define QDIV(a, b) ((a) / (b))
#endif

#define FIT_N 32
#define FIT_STEPS 10
#define FIT_STEP 0.1f
#define FIT_REFINE 4

/* lrintf of X within [LO, HI]; NaN gives LO.  */
int
round_clamp (float x, int lo, int hi)
{
  if (!(x > (float) lo))
    return lo;
  if (x >= (float) hi)
    return hi;
  return (int) rint (x);
}

/* Affine fits: x ~ scale * q + offset, q in 0..NMAX.  */

void
affine_levels (const float *x, int nmax, float iscale, float lo, uchar *q)
{
  for (int i = 0; i < FIT_N; i++)
    q[i] = (uchar) round_clamp ((x[i] - lo) * iscale, 0, nmax);
}

/* The least-squares scale and offset of levels Q, and their error;
   false when Q is constant or the scale negative.  */
bool
affine_solve (const float *x, const uchar *q, float *scale, float *offset,
              float *err)
{
  float sq = 0, sqq = 0, sx = 0, sqx = 0;
  for (int i = 0; i < FIT_N; i++)
    {
      sq += q[i];
      sqq += (float) q[i] * q[i];
      sx += x[i];
      sqx += q[i] * x[i];
    }
  float det = FIT_N * sqq - sq * sq;
  if (!(det > 0))
    return false;
  float s = QDIV (FIT_N * sqx - sq * sx, det);
  float o = QDIV (sqq * sx - sq * sqx, det);
  if (s < 0)
    return false;
  float e = 0;
  for (int i = 0; i < FIT_N; i++)
    {
      float d = s * q[i] + o - x[i];
      e += d * d;
    }
  *scale = s;
  *offset = o;
  *err = e;
  return true;
}

float
fit_affine (const float *x, int nmax, uchar *q, float *offset)
{
  float lo = x[0], hi = x[0];
  for (int i = 1; i < FIT_N; i++)
    {
      lo = fmin (lo, x[i]);
      hi = fmax (hi, x[i]);
    }
  float bs = 0, bo = lo, be = INFINITY, s, o, e;
  uchar cand[FIT_N];
  if (!(hi > lo))
    {
      for (int i = 0; i < FIT_N; i++)
        q[i] = 0;
      *offset = isfinite (lo) ? lo : 0;
      return 0;
    }
  for (int k = -FIT_STEPS; k <= FIT_STEPS; k++)
    {
      float iscale = QDIV (nmax + k * FIT_STEP, hi - lo);
      affine_levels (x, nmax, iscale, lo, cand);
      if (affine_solve (x, cand, &s, &o, &e) && e < be)
        {
          bs = s;
          bo = o;
          be = e;
          for (int i = 0; i < FIT_N; i++)
            q[i] = cand[i];
        }
    }
  for (int r = 0; r < FIT_REFINE && bs > 0; r++)
    {
      affine_levels (x, nmax, QDIV (1.0f, bs), bo, cand);
      if (!affine_solve (x, cand, &s, &o, &e) || !(e < be))
        break;
      bs = s;
      bo = o;
      be = e;
      for (int i = 0; i < FIT_N; i++)
        q[i] = cand[i];
    }
  if (!isfinite (be))
    {
      bs = QDIV (hi - lo, (float) nmax);
      affine_levels (x, nmax, QDIV (1.0f, bs), lo, q);
    }
  *offset = bo;
  return bs;
}

/* Projection fits, x ~ scale * v[i], judged by sum (v x)^2 / sum v^2:
   signed levels -NMAX .. NMAX - 1, or (TABLE) the values of
   kvalues_iq4nl.  */

/* The entry of the sorted TABLE nearest X (the lower of a tie).  */
int
table_index (constant char *table, float x)
{
  int lo = 0, hi = 15;
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

/* Levels of X for the inverse scale ISCALE into Q; the sums (sum v x,
   sum v^2).  */
float2
proj_levels (const float *x, int nmax, bool table, float iscale, uchar *q)
{
  float sqx = 0, sqq = 0;
  for (int i = 0; i < FIT_N; i++)
    if (table)
      {
        int l = table_index (kvalues_iq4nl, x[i] * iscale);
        float v = kvalues_iq4nl[l];
        q[i] = (uchar) l;
        sqx += v * x[i];
        sqq += v * v;
      }
    else
      {
        int l = round_clamp (x[i] * iscale, -nmax, nmax - 1);
        q[i] = (uchar) (char) l;
        sqx += l * x[i];
        sqq += (float) (l * l);
      }
  return (float2) (sqx, sqq);
}

bool
proj_better (float2 a, float2 best)
{
  return a.y > 0
         && (best.y == 0 || a.x * a.x * best.y > best.x * best.x * a.y);
}

/* The element of X largest in magnitude (the first of equals).  */
float
signed_max (const float *x)
{
  float max = 0;
  for (int i = 0; i < FIT_N; i++)
    if (fabs (x[i]) > fabs (max))
      max = x[i];
  return max;
}

float
proj_search (const float *x, int nmax, bool table, float top0, float top1,
             float step, float max, uchar *q)
{
  float2 best = (float2) (0, 0), p;
  uchar cand[FIT_N];
  for (int side = 0; side < 2; side++)
    for (int k = -FIT_STEPS; k <= FIT_STEPS; k++)
      {
        p = proj_levels (x, nmax, table,
                         QDIV ((side ? top1 : top0) + k * step, max), cand);
        if (proj_better (p, best))
          {
            best = p;
            for (int i = 0; i < FIT_N; i++)
              q[i] = cand[i];
          }
      }
  for (int r = 0; r < FIT_REFINE && best.y > 0 && best.x != 0; r++)
    {
      p = proj_levels (x, nmax, table, QDIV (best.y, best.x), cand);
      if (!proj_better (p, best))
        break;
      best = p;
      for (int i = 0; i < FIT_N; i++)
        q[i] = cand[i];
    }
  return best.y > 0 ? QDIV (best.x, best.y) : 0;
}

/* Signed levels in Q (as bytes); the scale.  */
float
fit_signed (const float *x, int nmax, uchar *q)
{
  float max = signed_max (x);
  if (max == 0 || !isfinite (max))
    {
      for (int i = 0; i < FIT_N; i++)
        q[i] = 0;
      return 0;
    }
  return proj_search (x, nmax, false, nmax - 1.0f, -(float) nmax, FIT_STEP,
                      max, q);
}

/* Levels of kvalues_iq4nl in Q; the scale.  */
float
fit_table (const float *x, uchar *q)
{
  float max = signed_max (x);
  if (max == 0 || !isfinite (max))
    {
      for (int i = 0; i < FIT_N; i++)
        q[i] = (uchar) table_index (kvalues_iq4nl, 0);
      return 0;
    }
  return proj_search (x, 0, true, kvalues_iq4nl[15], kvalues_iq4nl[0], 1.0f,
                      max, q);
}

/* mxfp4: the nearest code of X / D in the (unsorted) table.  */
int
mxfp4_code (float x, float d)
{
  int best = 0;
  float err = fabs (x);
  for (int k = 1; k < 16; k++)
    {
      float e = fabs (kvalues_mxfp4[k] * d - x);
      if (e < err)
        {
          err = e;
          best = k;
        }
    }
  return best;
}

float
mxfp4_error (const float *x, uchar e, uchar *l)
{
  float d = e8m0_half (e), err = 0;
  for (int j = 0; j < FIT_N; j++)
    {
      l[j] = (uchar) mxfp4_code (x[j], d);
      float r = kvalues_mxfp4[l[j]] * d - x[j];
      err += r * r;
    }
  return err;
}

/* The exponent of the block X (returned) and its codes in L.  */
uchar
fit_mxfp4 (const float *x, uchar *l)
{
  float amax = 0;
  uchar cand[FIT_N];
  for (int j = 0; j < FIT_N; j++)
    amax = fmax (amax, fabs (x[j]));
  int e0 = amax > 0 && isfinite (amax) ? ilogb (amax) - 2 + 127 : 0;
  e0 = e0 < 0 ? 0 : e0 > 254 ? 254 : e0;
  float best = INFINITY;
  uchar be = (uchar) e0;
  for (int e = e0 - 1; e <= e0 + 1; e++)
    {
      if (e < 0 || e > 254)
        continue;
      float err = mxfp4_error (x, (uchar) e, cand);
      if (err < best)
        {
          best = err;
          be = (uchar) e;
          for (int j = 0; j < FIT_N; j++)
            l[j] = cand[j];
        }
    }
  if (!(best < INFINITY))
    mxfp4_error (x, be, l);
  return be;
}

#pragma OPENCL FP_CONTRACT ON
