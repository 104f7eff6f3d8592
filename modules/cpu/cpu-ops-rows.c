/* cpu-ops-rows.c - operations on whole rows: sum_rows, norm, rms_norm,
 * soft_max, get_rows.
 *
 * Each row is computed from a contiguous f32 copy when the tensor's
 * rows are strided (the thread's scratch row), otherwise in place; the
 * arithmetic itself is in cpu-vec.c.  Sums are accumulated in double.
 * Work is split over destination rows.  */
#include <config.h>

#include <math.h>

#include "cpu-impl.h"

size_t
tsr_cpu_rows_scratch (const tsr_tensor *dst)
{
  return (size_t) dst->src[0]->ne[0] * sizeof (float);
}

static bool
is_f32_dense (const tsr_tensor *t)
{
  return t->type == TSR_TYPE_F32 && t->nb[0] == sizeof (float);
}

/* Row R of f32 tensor A as contiguous floats: A's memory when its rows
   are dense, else a copy in BUF.  */
static const float *
f32_row (const tsr_tensor *a, int64_t r, float *buf)
{
  const char *s = tsr_cpu_row (a, r);

  if (is_f32_dense (a))
    return (const float *) s;
  tsr_cpu_row_to_f32 (TSR_TYPE_F32, s, a->nb[0], buf, a->ne[0]);
  return buf;
}

/* Where to compute destination row R: in place when dense, else BUF
   (then written back with put_row).  */
static float *
out_row (const tsr_tensor *dst, int64_t r, float *buf)
{
  return is_f32_dense (dst) ? (float *) tsr_cpu_row (dst, r) : buf;
}

static void
put_row (const tsr_tensor *dst, int64_t r, const float *y)
{
  if (!is_f32_dense (dst))
    tsr_cpu_row_from_f32 (TSR_TYPE_F32, tsr_cpu_row (dst, r), dst->nb[0], y,
                          dst->ne[0]);
}

/* sum_rows */

int
tsr_cpu_sum_rows (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                  int nth)
{
  const tsr_tensor *a = dst->src[0];
  float *buf = c->scratch[ith];
  int64_t r0, r1;

  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      float sum = (float) tsr_cpu_vec_sum_f32 (a->ne[0], f32_row (a, r, buf));
      *(float *) tsr_cpu_row (dst, r) = sum;
    }
  return TSR_OK;
}

/* norm, rms_norm */

int
tsr_cpu_norm (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
              int nth)
{
  const tsr_tensor *a = dst->src[0];
  const int64_t n = a->ne[0];
  const double eps = tsr_get_op_param_f32 (dst, 0);
  float *buf = c->scratch[ith];
  int64_t r0, r1;

  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      const float *x = f32_row (a, r, buf);
      float *y = out_row (dst, r, buf);

      if (dst->op == TSR_OP_NORM)
        {
          double mean = tsr_cpu_vec_sum_f32 (n, x) / (double) n;
          double var = tsr_cpu_vec_sumsq_f32 (n, x, mean) / (double) n;
          double s = 1.0 / sqrt (var + eps);
          tsr_cpu_vec_center_scale_f32 (n, y, x, mean, s);
        }
      else
        {
          double ms = tsr_cpu_vec_sumsq_f32 (n, x, 0.0) / (double) n;
          tsr_cpu_vec_scale_f32 (n, y, x, (float) (1.0 / sqrt (ms + eps)));
        }
      put_row (dst, r, y);
    }
  return TSR_OK;
}

/* soft_max */

/* y += the mask row of destination row (I1, I2, I3).  */
static void
add_mask (const tsr_tensor *mask, int64_t i1, int64_t i2, int64_t i3,
          float *y, int64_t n)
{
  const char *m = tsr_cpu_at (mask, 0, i1, i2 % mask->ne[2],
                              i3 % mask->ne[3]);

  if (is_f32_dense (mask))
    tsr_cpu_vec_add_f32 (n, y, y, (const float *) m);
  else if (mask->type == TSR_TYPE_F32)
    for (int64_t i = 0; i < n; i++)
      y[i] += *(const float *) (m + i * mask->nb[0]);
  else
    for (int64_t i = 0; i < n; i++)
      y[i] += tsr_fp16_to_fp32 (*(const tsr_fp16_t *) (m + i * mask->nb[0]));
}

/* softmax (x * scale + mask) of each row, with the row maximum
   subtracted before exp.  A row whose values are all -inf (fully
   masked) has no meaningful softmax; it becomes all zeros rather than
   NaN, so a masked-out query contributes nothing downstream.  */
int
tsr_cpu_soft_max (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                  int nth)
{
  const tsr_tensor *a = dst->src[0], *mask = dst->src[1];
  const int64_t n = a->ne[0];
  const float scale = tsr_get_op_param_f32 (dst, 0);
  float *buf = c->scratch[ith];
  int64_t r0, r1;

  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      const float *x = f32_row (a, r, buf);
      float *y = out_row (dst, r, buf);
      int64_t i[TSR_MAX_DIMS];
      float max;

      tsr_cpu_vec_scale_f32 (n, y, x, scale);
      if (mask)
        {
          tsr_cpu_row_index (dst, r, i);
          add_mask (mask, i[1], i[2], i[3], y, n);
        }
      max = tsr_cpu_vec_max_f32 (n, y);
      if (max == -INFINITY)
        tsr_cpu_vec_set_f32 (n, y, 0.0f);       /* all -inf: zeros */
      else
        {
          double sum = tsr_cpu_vec_exp_sub_f32 (n, y, y, max);
          tsr_cpu_vec_scale_f32 (n, y, y, (float) (1.0 / sum));
        }
      put_row (dst, r, y);
    }
  return TSR_OK;
}

/* get_rows */

bool
tsr_cpu_get_rows_supports (const tsr_tensor *dst)
{
  const tsr_tensor *a = dst->src[0];

  return tsr_cpu_is_plain_float (a->type)
         || (tsr_cpu_is_quant (a->type) && tsr_cpu_dense_rows (a));
}

/* dst[:, i, j, l] = a[:, rows[i, j, l], j % a2, l % a3].  */
int
tsr_cpu_get_rows (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                  int nth)
{
  const tsr_tensor *a = dst->src[0], *rows = dst->src[1];
  const int64_t n = a->ne[0];
  float *buf = c->scratch[ith];
  /* Repacked weights (CPU_REPACK): rows in interleaved groups.  */
  const bool packed = tsr_cpu_repacked (a);
  int64_t r0, r1;

  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      int64_t ix[TSR_MAX_DIMS];
      tsr_cpu_row_index (dst, r, ix);
      int64_t i = ix[1], j = ix[2], l = ix[3];
      int32_t idx = *(const int32_t *) tsr_cpu_at (rows, i, j, l, 0);
      float *y = out_row (dst, r, buf);

      if (idx < 0 || idx >= a->ne[1])
        return tsr_cpu_fail (c, TSR_ERR_INVALID_ARG,
                             "cpu: get_rows '%s': index %ld at (%lld, %lld, "
                             "%lld) of '%s' is outside [0, %lld) of '%s'",
                             dst->name, (long) idx, (long long) i,
                             (long long) j, (long long) l, rows->name,
                             (long long) a->ne[1], a->name);
      if (packed)
        {
          /* The group that holds row IDX, in the bytes its rows take.  */
          const int in_group = (int) (idx % TSR_CPU_REPACK_ROWS);
          tsr_cpu_repack_row_to_f32 (a, tsr_cpu_at (a, 0, idx - in_group,
                                                    j % a->ne[2],
                                                    l % a->ne[3]),
                                     in_group, y);
        }
      else
        tsr_cpu_row_to_f32 (a->type, tsr_cpu_at (a, 0, idx, j % a->ne[2],
                                                 l % a->ne[3]),
                            a->nb[0], y, n);
      put_row (dst, r, y);
    }
  return TSR_OK;
}
