/* cpu-ops-copy.c - cpy and cont: copies with type conversion.
 *
 * Owns the element conversions between the types (f32, f16, bf16, i32,
 * and the block types of tsr_cpu_is_quant) and the rule that a copy keeps the row-major logical
 * order of elements when source and destination shapes differ.  Work is
 * split over destination rows.
 *
 * i32 <- f32 truncates toward zero like a C cast; NaN becomes 0 and
 * values outside the i32 range saturate (a C cast would be undefined).
 * Same-type copies move bits unchanged (NaN payloads, large i32).  */
#include <config.h>

#include <string.h>

#include "cpu-impl.h"

static float
load_f32 (const char *p, tsr_type type)
{
  switch (type)
    {
    case TSR_TYPE_F32:
      {
        float v;
        memcpy (&v, p, sizeof v);
        return v;
      }
    case TSR_TYPE_F16:
      {
        tsr_fp16_t h;
        memcpy (&h, p, sizeof h);
        return tsr_fp16_to_fp32 (h);
      }
    case TSR_TYPE_BF16:
      {
        tsr_bf16_t h;
        memcpy (&h, p, sizeof h);
        return tsr_bf16_to_fp32 (h);
      }
    case TSR_TYPE_I32:
      {
        int32_t v;
        memcpy (&v, p, sizeof v);
        return (float) v;
      }
    default:
      return 0;   /* block types never reach here (supports checks) */
    }
}

static int32_t
f32_to_i32 (float v)
{
  if (v != v)
    return 0;
  if (v >= 2147483648.0f)
    return INT32_MAX;
  if (v < -2147483648.0f)
    return INT32_MIN;
  return (int32_t) v;
}

static void
store_f32 (char *p, tsr_type type, float v)
{
  switch (type)
    {
    case TSR_TYPE_F32:
      memcpy (p, &v, sizeof v);
      break;
    case TSR_TYPE_F16:
      {
        tsr_fp16_t h = tsr_fp32_to_fp16 (v);
        memcpy (p, &h, sizeof h);
        break;
      }
    case TSR_TYPE_BF16:
      {
        tsr_bf16_t h = tsr_fp32_to_bf16 (v);
        memcpy (p, &h, sizeof h);
        break;
      }
    case TSR_TYPE_I32:
      {
        int32_t i = f32_to_i32 (v);
        memcpy (p, &i, sizeof i);
        break;
      }
    default:
      break;
    }
}

void
tsr_cpu_row_to_f32 (tsr_type src_type, const char *src, size_t src_stride,
                    float *dst, int64_t n)
{
  const struct tsr_type_traits *tr = tsr_type_traits (src_type);

  switch (src_type)               /* block types: dense rows only */
    {
    case TSR_TYPE_Q8_0: tsr_cpu_row_q8_0_to_f32 (n, dst, src); return;
    case TSR_TYPE_Q4_0: tsr_cpu_row_q4_0_to_f32 (n, dst, src); return;
    case TSR_TYPE_Q4_1: tsr_cpu_row_q4_1_to_f32 (n, dst, src); return;
    case TSR_TYPE_Q5_0: tsr_cpu_row_q5_0_to_f32 (n, dst, src); return;
    case TSR_TYPE_Q5_1: tsr_cpu_row_q5_1_to_f32 (n, dst, src); return;
    case TSR_TYPE_IQ4_NL: tsr_cpu_row_iq4_nl_to_f32 (n, dst, src); return;
    case TSR_TYPE_MXFP4: tsr_cpu_row_mxfp4_to_f32 (n, dst, src); return;
    case TSR_TYPE_Q2_K: tsr_cpu_row_q2_K_to_f32 (n, dst, src); return;
    case TSR_TYPE_Q3_K: tsr_cpu_row_q3_K_to_f32 (n, dst, src); return;
    case TSR_TYPE_Q4_K: tsr_cpu_row_q4_K_to_f32 (n, dst, src); return;
    case TSR_TYPE_Q5_K: tsr_cpu_row_q5_K_to_f32 (n, dst, src); return;
    case TSR_TYPE_Q6_K: tsr_cpu_row_q6_K_to_f32 (n, dst, src); return;
    case TSR_TYPE_IQ4_XS: tsr_cpu_row_iq4_xs_to_f32 (n, dst, src); return;
    default: break;
    }
  if (tr->is_quantized)
    tr->to_float (src, dst, n);
  else if (src_stride != tr->type_size || src_type == TSR_TYPE_I32)
    for (int64_t i = 0; i < n; i++)
      dst[i] = load_f32 (src + i * src_stride, src_type);
  else if (src_type == TSR_TYPE_F32)
    memmove (dst, src, (size_t) n * sizeof (float));
  else if (src_type == TSR_TYPE_F16)
    tsr_cpu_row_f16_to_f32 (n, dst, (const tsr_fp16_t *) src);
  else
    tsr_cpu_row_bf16_to_f32 (n, dst, (const tsr_bf16_t *) src);
}

void
tsr_cpu_row_from_f32 (tsr_type dst_type, char *dst, size_t dst_stride,
                      const float *src, int64_t n)
{
  const struct tsr_type_traits *tr = tsr_type_traits (dst_type);

  if (tr->is_quantized)          /* dense rows only */
    tr->from_float (src, dst, n);
  else if (dst_stride != tr->type_size || dst_type == TSR_TYPE_I32)
    for (int64_t i = 0; i < n; i++)
      store_f32 (dst + i * dst_stride, dst_type, src[i]);
  else if (dst_type == TSR_TYPE_F32)
    memmove (dst, src, (size_t) n * sizeof (float));
  else if (dst_type == TSR_TYPE_F16)
    tsr_cpu_row_f32_to_f16 (n, (tsr_fp16_t *) dst, src);
  else
    tsr_cpu_row_f32_to_bf16 (n, (tsr_bf16_t *) dst, src);
}

/* Walks a tensor's elements in row-major logical order.  */
struct walk
{
  const tsr_tensor *t;
  int64_t i[TSR_MAX_DIMS];
};

static void
walk_start (struct walk *w, const tsr_tensor *t, int64_t linear)
{
  w->t = t;
  for (int d = 0; d < TSR_MAX_DIMS; d++)
    {
      w->i[d] = linear % t->ne[d];
      linear /= t->ne[d];
    }
}

static char *
walk_ptr (const struct walk *w)
{
  return tsr_cpu_at (w->t, w->i[0], w->i[1], w->i[2], w->i[3]);
}

static void
walk_next (struct walk *w)
{
  for (int d = 0; d < TSR_MAX_DIMS - 1; d++)
    {
      if (++w->i[d] < w->t->ne[d])
        return;
      w->i[d] = 0;
    }
  w->i[TSR_MAX_DIMS - 1]++;
}

bool
tsr_cpu_copy_supports (const tsr_tensor *dst)
{
  const tsr_tensor *a = dst->src[0];
  tsr_type st = a->type, dt = dst->type;

  if (st == dt)                 /* block types: only those with kernels */
    return tsr_cpu_is_quant (st)
           ? tsr_same_shape (a, dst) && tsr_cpu_dense_rows (a)
             && tsr_cpu_dense_rows (dst)
           : !tsr_type_traits (st)->is_quantized;
  if (tsr_cpu_is_quant (st))
    return tsr_cpu_is_plain_float (dt) && tsr_same_shape (a, dst)
           && tsr_cpu_dense_rows (a);
  if (tsr_cpu_is_quant (dt))
    return tsr_cpu_is_plain_float (st) && tsr_cpu_dense_rows (dst);
  if (tsr_cpu_is_plain_float (st) && tsr_cpu_is_plain_float (dt))
    return true;
  return (st == TSR_TYPE_I32 && dt == TSR_TYPE_F32)
         || (st == TSR_TYPE_F32 && dt == TSR_TYPE_I32);
}

size_t
tsr_cpu_copy_scratch (const tsr_tensor *dst)
{
  if (tsr_cpu_is_quant (dst->type) || tsr_cpu_is_quant (dst->src[0]->type))
    return (size_t) dst->ne[0] * sizeof (float);
  return 0;
}

/* One destination row D (N elements, stride DNB) from source row S
   (stride SNB): plain types, same or different.  */
static void
copy_row_plain (char *d, size_t dnb, tsr_type dt, const char *s, size_t snb,
                tsr_type st, int64_t n)
{
  size_t es = tsr_cpu_elem_size (st);

  if (st == dt && snb == es && dnb == es)
    memmove (d, s, (size_t) n * es);
  else if (st == dt)
    for (int64_t i = 0; i < n; i++)
      memmove (d + i * dnb, s + i * snb, es);
  else if (dt == TSR_TYPE_F32 && dnb == sizeof (float))
    tsr_cpu_row_to_f32 (st, s, snb, (float *) d, n);
  else if (st == TSR_TYPE_F32 && snb == sizeof (float))
    tsr_cpu_row_from_f32 (dt, d, dnb, (const float *) s, n);
  else
    for (int64_t i = 0; i < n; i++)
      store_f32 (d + i * dnb, dt, load_f32 (s + i * snb, st));
}

/* Destination row R when the shapes differ in dimension 0: element by
   element, following both logical orders.  */
static void
copy_row_reshaped (tsr_tensor *dst, const tsr_tensor *a, int64_t r)
{
  struct walk w;
  char *d = tsr_cpu_row (dst, r);
  size_t es = tsr_cpu_elem_size (a->type);

  walk_start (&w, a, r * dst->ne[0]);
  for (int64_t i = 0; i < dst->ne[0]; i++, walk_next (&w))
    {
      char *p = d + i * dst->nb[0];
      if (a->type == dst->type)
        memmove (p, walk_ptr (&w), es);
      else
        store_f32 (p, dst->type, load_f32 (walk_ptr (&w), a->type));
    }
}

/* Destination row R of a float type into floats (scratch or in
   place), in a's logical order.  */
static const float *
gather_row_f32 (const tsr_tensor *dst, const tsr_tensor *a, int64_t r,
                float *buf)
{
  int64_t n = dst->ne[0];

  if (a->ne[0] == n)
    {
      const char *s = tsr_cpu_row (a, r);
      if (a->type == TSR_TYPE_F32 && a->nb[0] == sizeof (float))
        return (const float *) s;
      tsr_cpu_row_to_f32 (a->type, s, a->nb[0], buf, n);
    }
  else
    {
      struct walk w;
      walk_start (&w, a, r * n);
      for (int64_t i = 0; i < n; i++, walk_next (&w))
        buf[i] = load_f32 (walk_ptr (&w), a->type);
    }
  return buf;
}

int
tsr_cpu_copy (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
              int nth)
{
  const tsr_tensor *a = dst->src[0];
  const int64_t n = dst->ne[0];
  float *buf = c->scratch[ith];
  int64_t r0, r1;

  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      char *d = tsr_cpu_row (dst, r);

      if (tsr_cpu_is_quant (dst->type) && a->type == dst->type)
        memmove (d, tsr_cpu_row (a, r), tsr_row_size (dst->type, n));
      else if (tsr_cpu_is_quant (dst->type))
        tsr_cpu_row_from_f32 (dst->type, d, dst->nb[0],
                              gather_row_f32 (dst, a, r, buf), n);
      else if (tsr_cpu_is_quant (a->type))
        {
          const char *s = tsr_cpu_row (a, r);
          if (dst->type == TSR_TYPE_F32 && dst->nb[0] == sizeof (float))
            tsr_cpu_row_to_f32 (a->type, s, a->nb[0], (float *) d, n);
          else
            {
              tsr_cpu_row_to_f32 (a->type, s, a->nb[0], buf, n);
              tsr_cpu_row_from_f32 (dst->type, d, dst->nb[0], buf, n);
            }
        }
      else if (a->ne[0] == n)
        copy_row_plain (d, dst->nb[0], dst->type, tsr_cpu_row (a, r),
                        a->nb[0], a->type, n);
      else
        copy_row_reshaped (dst, a, r);
    }
  return TSR_OK;
}
