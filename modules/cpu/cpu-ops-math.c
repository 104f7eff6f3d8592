/* cpu-ops-math.c - element-wise math, reductions and shape ops: sqr,
 * sqrt, exp, log, neg, abs, sigmoid, tanh, relu, gelu_quick, clamp,
 * swiglu, geglu, sum, mean, argmax, repeat, concat, diag_mask_inf,
 * pad, arange, upscale, argsort, top_k (see tessera/ops.h for their
 * semantics and lib/ops/ops-math.c for their op_params).
 *
 * Plain scalar kernels over f32 tensors of any strides: sources are
 * read and destinations written through their nb[], so views,
 * permutes and hand-made layouts all work.  Work is split over
 * destination rows (arange: over elements; sum: one thread, as its one
 * result is a sum over everything).  Each supports function accepts
 * exactly the types and shapes its kernel handles.  */
#include <config.h>

#include <math.h>
#include <string.h>

#include <tessera/ops.h>           /* enum tsr_sort_order */

#include "cpu-impl.h"

static inline float
get_f32 (const tsr_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
  float v;
  memcpy (&v, tsr_cpu_at (t, i0, i1, i2, i3), sizeof v);
  return v;
}

static inline void
set_f32 (const tsr_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3,
         float v)
{
  memcpy (tsr_cpu_at (t, i0, i1, i2, i3), &v, sizeof v);
}

/* Element-wise functions, through the unary row loop of
   cpu-ops-elementwise.c.  */

#define MATH_ROW(name, expr)                                               \
  static void name##_row (int64_t n, float *y, const float *x,            \
                          const tsr_tensor *dst)                          \
  {                                                                       \
    (void) dst;                                                           \
    for (int64_t i = 0; i < n; i++)                                       \
      {                                                                   \
        const float v = x[i];                                             \
        y[i] = (expr);                                                    \
      }                                                                   \
  }

MATH_ROW (sqr, v * v)
MATH_ROW (sqrt, sqrtf (v))
MATH_ROW (exp, expf (v))
MATH_ROW (log, logf (v))
MATH_ROW (neg, -v)
MATH_ROW (abs, fabsf (v))
MATH_ROW (sigmoid, 1.0f / (1.0f + expf (-v)))
static void
tanh_row (int64_t n, float *y, const float *x, const tsr_tensor *dst)
{
  (void) dst;
  tsr_cpu_vec_tanh_f32 (n, y, x);
}

MATH_ROW (relu, v > 0.0f || isnan (v) ? v : 0.0f)
MATH_ROW (gelu_quick, v / (1.0f + expf (-1.702f * v)))
MATH_ROW (gelu_erf, 0.5f * v * (1.0f + erff (v * 0.70710678118654752f)))

/* min (max (x, lo), hi), NaN kept.  */
static void
clamp_row (int64_t n, float *y, const float *x, const tsr_tensor *dst)
{
  const float lo = tsr_get_op_param_f32 (dst, 0);
  const float hi = tsr_get_op_param_f32 (dst, 1);
  for (int64_t i = 0; i < n; i++)
    y[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];
}

static tsr_cpu_unary_row_fn
math_row_for (tsr_op op)
{
  switch (op)
    {
    case TSR_OP_SQR: return sqr_row;
    case TSR_OP_SQRT: return sqrt_row;
    case TSR_OP_EXP: return exp_row;
    case TSR_OP_LOG: return log_row;
    case TSR_OP_NEG: return neg_row;
    case TSR_OP_ABS: return abs_row;
    case TSR_OP_SIGMOID: return sigmoid_row;
    case TSR_OP_TANH: return tanh_row;
    case TSR_OP_RELU: return relu_row;
    case TSR_OP_GELU_QUICK: return gelu_quick_row;
    case TSR_OP_GELU_ERF: return gelu_erf_row;
    case TSR_OP_CLAMP: return clamp_row;
    default: return NULL;
    }
}

int
tsr_cpu_math_unary (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                    int nth)
{
  (void) c;
  return tsr_cpu_unary_map (dst, math_row_for (dst->op), ith, nth);
}

/* swiglu, geglu.  Rows are gathered into contiguous scratch (act,
   gate, result: three rows of the result's length), the activation
   and product computed by cpu-vec.c.  */

size_t
tsr_cpu_glu_scratch (const tsr_tensor *dst)
{
  return 3 * (size_t) dst->ne[0] * sizeof (float);
}

/* N f32 values at P with stride NB, contiguous: P itself when dense,
   else copied into BUF.  */
static const float *
gather (const char *p, size_t nb, int64_t n, float *buf)
{
  if (nb == sizeof (float))
    return (const float *) p;
  tsr_cpu_row_to_f32 (TSR_TYPE_F32, p, nb, buf, n);
  return buf;
}

int
tsr_cpu_glu (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
             int nth)
{
  const tsr_tensor *a = dst->src[0], *b = dst->src[1];
  const int64_t n = dst->ne[0];
  float *xbuf = c->scratch[ith], *gbuf = xbuf + n, *ybuf = gbuf + n;
  const bool dense = dst->nb[0] == sizeof (float);
  int64_t r0, r1;

  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      int64_t i[TSR_MAX_DIMS];
      tsr_cpu_row_index (dst, r, i);
      const char *pa = tsr_cpu_at (a, 0, i[1], i[2], i[3]);
      const char *pg = b ? tsr_cpu_at (b, 0, i[1], i[2], i[3])
                         : pa + n * (int64_t) a->nb[0];
      const float *x = gather (pa, a->nb[0], n, xbuf);
      const float *g = gather (pg, b ? b->nb[0] : a->nb[0], n, gbuf);
      char *pd = tsr_cpu_at (dst, 0, i[1], i[2], i[3]);
      float *y = dense ? (float *) pd : ybuf;

      if (dst->op == TSR_OP_SWIGLU)
        tsr_cpu_vec_silu_f32 (n, y, x);
      else
        tsr_cpu_vec_gelu_f32 (n, y, x);
      tsr_cpu_vec_mul_f32 (n, y, y, g);
      if (!dense)
        tsr_cpu_row_from_f32 (TSR_TYPE_F32, pd, dst->nb[0], y, n);
    }
  return TSR_OK;
}

/* Reductions.  */

/* Sum of row (I1, I2, I3) of f32 A, in double.  */
static double
row_sum (const tsr_tensor *a, int64_t i1, int64_t i2, int64_t i3)
{
  const char *p = tsr_cpu_at (a, 0, i1, i2, i3);
  double s = 0.0;

  if (a->nb[0] == sizeof (float))
    return tsr_cpu_vec_sum_f32 (a->ne[0], (const float *) p);
  for (int64_t i0 = 0; i0 < a->ne[0]; i0++)
    s += get_f32 (a, i0, i1, i2, i3);
  return s;
}

/* One result from every element: the first thread does it all.  */
int
tsr_cpu_sum (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
             int nth)
{
  const tsr_tensor *a = dst->src[0];
  double s = 0.0;

  (void) c;
  (void) nth;
  if (ith != 0)
    return TSR_OK;
  for (int64_t r = 0; r < tsr_cpu_nrows (a); r++)
    {
      int64_t i[TSR_MAX_DIMS];
      tsr_cpu_row_index (a, r, i);
      s += row_sum (a, i[1], i[2], i[3]);
    }
  set_f32 (dst, 0, 0, 0, 0, (float) s);
  return TSR_OK;
}

int
tsr_cpu_mean (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
              int nth)
{
  const tsr_tensor *a = dst->src[0];
  int64_t r0, r1;

  (void) c;
  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      int64_t i[TSR_MAX_DIMS];
      tsr_cpu_row_index (dst, r, i);
      double s = row_sum (a, i[1], i[2], i[3]);
      set_f32 (dst, 0, i[1], i[2], i[3], (float) (s / (double) a->ne[0]));
    }
  return TSR_OK;
}

/* Index of the largest non-NaN value of row (I1, I2, I3): the first on
   ties, 0 when all are NaN.  */
static int32_t
row_argmax (const tsr_tensor *a, int64_t i1, int64_t i2, int64_t i3)
{
  int64_t best = -1;
  float best_v = 0.0f;

  for (int64_t i0 = 0; i0 < a->ne[0]; i0++)
    {
      float v = get_f32 (a, i0, i1, i2, i3);
      if (!isnan (v) && (best < 0 || v > best_v))
        {
          best = i0;
          best_v = v;
        }
    }
  return best < 0 ? 0 : (int32_t) best;
}

int
tsr_cpu_argmax (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                int nth)
{
  const tsr_tensor *a = dst->src[0];
  int64_t r0, r1;

  (void) c;
  tsr_cpu_split (tsr_cpu_nrows (a), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      int64_t i[TSR_MAX_DIMS];
      tsr_cpu_row_index (a, r, i);
      int32_t idx = row_argmax (a, i[1], i[2], i[3]);
      memcpy (tsr_cpu_at (dst, i[1], i[2], i[3], 0), &idx, sizeof idx);
    }
  return TSR_OK;
}

/* Shape ops: each destination element from one source element (or a
   constant), addressed through both tensors' strides.  */

/* The value of element I of DST.  */
typedef float (*element_fn) (const tsr_tensor *dst,
                             const int64_t i[TSR_MAX_DIMS]);

/* Every element of part ITH of NTH of DST's rows from FN.  */
static int
map_elements (tsr_tensor *dst, element_fn fn, int ith, int nth)
{
  int64_t r0, r1;

  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      int64_t i[TSR_MAX_DIMS];
      tsr_cpu_row_index (dst, r, i);
      for (i[0] = 0; i[0] < dst->ne[0]; i[0]++)
        set_f32 (dst, i[0], i[1], i[2], i[3], fn (dst, i));
    }
  return TSR_OK;
}

static float
repeat_at (const tsr_tensor *dst, const int64_t i[TSR_MAX_DIMS])
{
  const tsr_tensor *a = dst->src[0];
  return get_f32 (a, i[0] % a->ne[0], i[1] % a->ne[1], i[2] % a->ne[2],
                  i[3] % a->ne[3]);
}

int
tsr_cpu_repeat (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                int nth)
{
  (void) c;
  return map_elements (dst, repeat_at, ith, nth);
}

static float
concat_at (const tsr_tensor *dst, const int64_t i[TSR_MAX_DIMS])
{
  const tsr_tensor *a = dst->src[0];
  const int dim = tsr_get_op_param_i32 (dst, 0);
  int64_t j[TSR_MAX_DIMS] = { i[0], i[1], i[2], i[3] };

  if (j[dim] < a->ne[dim])
    return get_f32 (a, j[0], j[1], j[2], j[3]);
  j[dim] -= a->ne[dim];
  return get_f32 (dst->src[1], j[0], j[1], j[2], j[3]);
}

int
tsr_cpu_concat (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                int nth)
{
  (void) c;
  return map_elements (dst, concat_at, ith, nth);
}

static float
diag_mask_inf_at (const tsr_tensor *dst, const int64_t i[TSR_MAX_DIMS])
{
  const int64_t n_past = tsr_get_op_param_i32 (dst, 0);
  return i[0] > n_past + i[1] ? -INFINITY
                              : get_f32 (dst->src[0], i[0], i[1], i[2], i[3]);
}

int
tsr_cpu_diag_mask_inf (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst,
                       int ith, int nth)
{
  (void) c;
  return map_elements (dst, diag_mask_inf_at, ith, nth);
}

static float
pad_at (const tsr_tensor *dst, const int64_t i[TSR_MAX_DIMS])
{
  const tsr_tensor *a = dst->src[0];
  for (int d = 0; d < TSR_MAX_DIMS; d++)
    if (i[d] >= a->ne[d])
      return 0.0f;
  return get_f32 (a, i[0], i[1], i[2], i[3]);
}

int
tsr_cpu_pad (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
             int nth)
{
  (void) c;
  return map_elements (dst, pad_at, ith, nth);
}

int
tsr_cpu_arange (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                int nth)
{
  const double start = tsr_get_op_param_f32 (dst, 0);
  const double step = tsr_get_op_param_f32 (dst, 2);
  int64_t i0, i1;

  (void) c;
  tsr_cpu_split (dst->ne[0], ith, nth, &i0, &i1);
  for (int64_t i = i0; i < i1; i++)
    set_f32 (dst, i, 0, 0, 0, (float) (start + (double) i * step));
  return TSR_OK;
}

static float
upscale_at (const tsr_tensor *dst, const int64_t i[TSR_MAX_DIMS])
{
  const int64_t f = tsr_get_op_param_i32 (dst, 0);
  return get_f32 (dst->src[0], i[0] / f, i[1] / f, i[2], i[3]);
}

int
tsr_cpu_upscale (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                 int nth)
{
  (void) c;
  return map_elements (dst, upscale_at, ith, nth);
}

/* argsort and top_k: a stable merge sort of each row's indices (no
   qsort: it is not stable, and qsort_r is not portable).  NaNs go
   last in both orders.  Scratch: the row's values, the indices and
   the merge buffer.  */

size_t
tsr_cpu_argsort_scratch (const tsr_tensor *dst)
{
  return (size_t) dst->src[0]->ne[0] * (sizeof (float) + 2 * sizeof (int32_t));
}

/* Whether value X goes strictly before Y.  */
static inline bool
goes_before (float x, float y, bool desc)
{
  if (isnan (x))
    return false;
  if (isnan (y))
    return true;
  return desc ? x > y : x < y;
}

/* Sort IDX[0..N) by V[IDX[i]], stable, bottom-up merges via TMP.  */
static void
sort_indices (const float *v, int32_t *idx, int32_t *tmp, int64_t n,
              bool desc)
{
  int32_t *from = idx, *to = tmp;

  for (int64_t w = 1; w < n; w *= 2)
    {
      for (int64_t lo = 0; lo < n; lo += 2 * w)
        {
          int64_t mid = lo + w < n ? lo + w : n;
          int64_t hi = lo + 2 * w < n ? lo + 2 * w : n;
          int64_t i = lo, j = mid, k = lo;
          while (i < mid && j < hi)
            to[k++] = goes_before (v[from[j]], v[from[i]], desc) ? from[j++]
                                                                 : from[i++];
          while (i < mid)
            to[k++] = from[i++];
          while (j < hi)
            to[k++] = from[j++];
        }
      int32_t *t = from;
      from = to;
      to = t;
    }
  if (from != idx)
    memcpy (idx, from, (size_t) n * sizeof *idx);
}

int
tsr_cpu_argsort (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                 int nth)
{
  const tsr_tensor *a = dst->src[0];
  const int64_t n = a->ne[0];
  const bool desc = dst->op == TSR_OP_TOP_K
                    || tsr_get_op_param_i32 (dst, 0) == TSR_SORT_DESC;
  float *vbuf = c->scratch[ith];
  int32_t *idx = (int32_t *) (vbuf + n), *tmp = idx + n;
  int64_t r0, r1;

  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      int64_t i[TSR_MAX_DIMS];
      tsr_cpu_row_index (dst, r, i);
      const float *v = gather (tsr_cpu_at (a, 0, i[1], i[2], i[3]), a->nb[0],
                               n, vbuf);
      for (int64_t k = 0; k < n; k++)
        idx[k] = (int32_t) k;
      sort_indices (v, idx, tmp, n, desc);
      for (int64_t k = 0; k < dst->ne[0]; k++)
        memcpy (tsr_cpu_at (dst, k, i[1], i[2], i[3]), &idx[k], sizeof *idx);
    }
  return TSR_OK;
}
