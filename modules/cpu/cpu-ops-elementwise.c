/* cpu-ops-elementwise.c - add, sub, mul, div, scale, silu, gelu.
 *
 * Walks rows of f32 tensors of any strides and hands contiguous runs to
 * cpu-vec.c; owns the broadcast rule of binary ops: the element of b
 * used for (i0, i1, i2, i3) is (i0 % ne10, i1 % ne11, i2 % ne12,
 * i3 % ne13).  The destination may be its first source (same layout).  */
#include <config.h>

#include "cpu-impl.h"

typedef void (*binary_fn) (int64_t n, float *z, const float *x,
                           const float *y);

static binary_fn
binary_for (tsr_op op)
{
  switch (op)
    {
    case TSR_OP_ADD: return tsr_cpu_vec_add_f32;
    case TSR_OP_SUB: return tsr_cpu_vec_sub_f32;
    case TSR_OP_MUL: return tsr_cpu_vec_mul_f32;
    case TSR_OP_DIV: return tsr_cpu_vec_div_f32;
    default: return NULL;
    }
}

int
tsr_cpu_binary (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                int nth)
{
  const tsr_tensor *a = dst->src[0], *b = dst->src[1];
  binary_fn fn = binary_for (dst->op);
  const int64_t ne0 = dst->ne[0], nb_ne0 = b->ne[0];
  const bool dense = tsr_cpu_dense_rows (dst) && tsr_cpu_dense_rows (a)
                     && tsr_cpu_dense_rows (b);
  int64_t r0, r1;

  (void) c;
  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      int64_t i[TSR_MAX_DIMS];
      tsr_cpu_row_index (dst, r, i);
      float *z = (float *) tsr_cpu_at (dst, 0, i[1], i[2], i[3]);
      const float *x = (const float *) tsr_cpu_at (a, 0, i[1], i[2], i[3]);
      const char *y = tsr_cpu_at (b, 0, i[1] % b->ne[1], i[2] % b->ne[2],
                                  i[3] % b->ne[3]);

      if (dense)
        /* b's row repeats along the row of a (the builder makes ne0 a
           multiple of b's; the last piece is clipped all the same).  */
        for (int64_t i0 = 0; i0 < ne0; i0 += nb_ne0)
          fn (ne0 - i0 < nb_ne0 ? ne0 - i0 : nb_ne0, z + i0, x + i0,
              (const float *) y);
      else
        for (int64_t i0 = 0; i0 < ne0; i0++)
          fn (1, (float *) ((char *) z + i0 * dst->nb[0]),
              (const float *) ((const char *) x + i0 * a->nb[0]),
              (const float *) (y + (i0 % nb_ne0) * b->nb[0]));
    }
  return TSR_OK;
}

/* Unary ops: y = f (x), with the op's parameter where it has one.  */

static void
scale_row (int64_t n, float *y, const float *x, const tsr_tensor *dst)
{
  tsr_cpu_vec_scale_f32 (n, y, x, tsr_get_op_param_f32 (dst, 0));
}

static void
silu_row (int64_t n, float *y, const float *x, const tsr_tensor *dst)
{
  (void) dst;
  tsr_cpu_vec_silu_f32 (n, y, x);
}

static void
gelu_row (int64_t n, float *y, const float *x, const tsr_tensor *dst)
{
  (void) dst;
  tsr_cpu_vec_gelu_f32 (n, y, x);
}

static tsr_cpu_unary_row_fn
unary_for (tsr_op op)
{
  switch (op)
    {
    case TSR_OP_SCALE: return scale_row;
    case TSR_OP_SILU: return silu_row;
    case TSR_OP_GELU: return gelu_row;
    default: return NULL;
    }
}

int
tsr_cpu_unary (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
               int nth)
{
  (void) c;
  return tsr_cpu_unary_map (dst, unary_for (dst->op), ith, nth);
}

/* The row loop of every unary op (cpu-ops-math.c uses it too): FN on
   whole rows when both tensors' rows are dense, else one element at a
   time through the strides.  */
int
tsr_cpu_unary_map (tsr_tensor *dst, tsr_cpu_unary_row_fn fn, int ith, int nth)
{
  const tsr_tensor *a = dst->src[0];
  const bool dense = tsr_cpu_dense_rows (dst) && tsr_cpu_dense_rows (a);
  int64_t r0, r1;

  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      float *y = (float *) tsr_cpu_row (dst, r);
      const float *x = (const float *) tsr_cpu_row (a, r);

      if (dense)
        fn (dst->ne[0], y, x, dst);
      else
        for (int64_t i0 = 0; i0 < dst->ne[0]; i0++)
          fn (1, (float *) ((char *) y + i0 * dst->nb[0]),
              (const float *) ((const char *) x + i0 * a->nb[0]), dst);
    }
  return TSR_OK;
}
