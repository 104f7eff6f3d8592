/* nn-test.h - helpers of the tessera.ops-nn tests on top of
   ../tessera.ops/ops-test.h: a CPU backend with several threads (so
   kernels split their work even on small machines), non-contiguous
   operands, and reading any float or quantized tensor as doubles.  */
#ifndef NN_TEST_H
#define NN_TEST_H

#include "../tessera.ops/ops-test.h"

/* The CPU backend with 4 threads.  */
static tsr_backend *
nt_backend (void)
{
  tsr_backend *be = tsr_backend_init_by_name ("cpu", "threads=4");
  ot_report (be != NULL, "cpu backend with 4 threads initializes",
             tsr_last_error ());
  return be;
}

/* How an operand is laid out in memory.  */
enum nt_layout
{
  NT_DENSE,     /* contiguous */
  NT_PADDED,    /* rows farther apart than their length (view) */
  NT_STRIDED    /* elements of a row not adjacent (transposed parent) */
};

/* A tensor of TYPE and shape NE in CTX (host memory), laid out as
   LAYOUT.  NT_STRIDED is for plain types only.  */
static tsr_tensor *
nt_tensor (tsr_context *ctx, tsr_type type, const int64_t *ne,
           enum nt_layout layout)
{
  if (layout == NT_DENSE)
    return tsr_new_tensor (ctx, type, 4, ne);
  if (layout == NT_STRIDED)
    {
      tsr_tensor *p = tsr_new_tensor_4d (ctx, type, ne[1], ne[0], ne[2],
                                         ne[3]);
      return tsr_transpose (ctx, p);
    }
  int64_t bs = tsr_type_traits (type)->block_size;
  int64_t padded = ne[0] + (bs > 1 ? bs : 3);
  tsr_tensor *p = tsr_new_tensor_4d (ctx, type, padded, ne[1], ne[2], ne[3]);
  /* Fill the padding with a marker, so reads of it show up.  */
  memset (p->data, 0x7f, tsr_nbytes (p));
  return tsr_view_4d (ctx, p, ne[0], ne[1], ne[2], ne[3], p->nb[1], p->nb[2],
                      p->nb[3], tsr_row_size (type, bs > 1 ? bs : 1));
}

static const char *
nt_layout_name (enum nt_layout layout)
{
  return layout == NT_DENSE ? "dense" : layout == NT_PADDED ? "padded rows"
                                                            : "strided rows";
}

/* Row (I1, I2, I3) of T (any type, host data) as doubles in OUT.  */
static void
nt_row (const tsr_tensor *t, int64_t i1, int64_t i2, int64_t i3, double *out)
{
  if (tsr_type_traits (t->type)->is_quantized)
    {
      float *f = malloc (t->ne[0] * sizeof *f);
      tsr_dequantize_row (t->type, ot_at (t, 0, i1, i2, i3), f, t->ne[0]);
      for (int64_t i = 0; i < t->ne[0]; i++)
        out[i] = f[i];
      free (f);
    }
  else
    for (int64_t i = 0; i < t->ne[0]; i++)
      out[i] = ot_get (t, i, i1, i2, i3);
}

/* Fill T (any float or quantized type, host data, dense rows for the
   quantized types) with uniform values in [LO, HI).  */
static void
nt_fill (tsr_tensor *t, float lo, float hi)
{
  if (!tsr_type_traits (t->type)->is_quantized)
    {
      ot_fill (t, lo, hi);
      return;
    }
  float *f = malloc (t->ne[0] * sizeof *f);
  for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
    for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
      for (int64_t i1 = 0; i1 < t->ne[1]; i1++)
        {
          for (int64_t i = 0; i < t->ne[0]; i++)
            f[i] = tsr_test_uniform (lo, hi);
          tsr_quantize_row (t->type, f, ot_at (t, 0, i1, i2, i3), t->ne[0]);
        }
  free (f);
}

/* Set i32 tensor T's elements from VALUES, in row-major order.  */
static void
nt_set_i32 (tsr_tensor *t, const int32_t *values)
{
  int64_t k = 0;
  OT_FOR_EACH (t, i0, i1, i2, i3)
    ot_set (t, i0, i1, i2, i3, values[k++]);
}

/* The whole of T as doubles, contiguous in T's shape (caller frees).  */
static double *
nt_values (const tsr_tensor *t)
{
  double *v = malloc (ot_count (t->ne) * sizeof *v);
  for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
    for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
      for (int64_t i1 = 0; i1 < t->ne[1]; i1++)
        nt_row (t, i1, i2, i3, v + ot_index (t->ne, 0, i1, i2, i3));
  return v;
}

/* Run RESULT and expect a compute-time failure with a message.  */
static void
nt_expect_compute_error (tsr_backend *be, tsr_context *ctx,
                         tsr_tensor *result, const char *desc)
{
  if (!result)
    {
      tsr_test_result (0, "%s: builder returned NULL: %s", desc,
                       tsr_last_error ());
      return;
    }
  tsr_clear_error ();
  int rc = ot_compute (be, ctx, result);
  CHECK (rc != TSR_OK && tsr_last_error ()[0] != 0,
         "%s (status %d, message \"%s\")", desc, rc, tsr_last_error ());
}

#endif /* NN_TEST_H */
