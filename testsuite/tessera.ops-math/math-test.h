/* math-test.h - helpers for the tessera.ops-math tests: f32 operands
   of a given shape in several memory layouts (so kernels are checked
   on strided elements and rows, not just contiguous data), and a
   run-and-compare step.  Builds on tessera.ops/ops-test.h.  */
#ifndef MATH_TEST_H
#define MATH_TEST_H

#include "../tessera.ops/ops-test.h"

enum mt_layout
{
  MT_CONT,              /* a plain tensor */
  MT_TRANSPOSED,        /* transposed view: strided elements */
  MT_SWAPPED,           /* dims 1 and 2 swapped: strided rows */
  MT_SLICED,            /* a window of a larger tensor: gaps */
  MT_ROTATED,           /* every dimension permuted */
  MT_LAYOUTS
};

static const char *const mt_layout_name[MT_LAYOUTS] = {
  "contiguous", "transposed view", "dims 1,2 swapped view", "sliced view",
  "4-d permuted view"
};

/* An f32 tensor of shape NE laid out as L (uninitialized).  */
static tsr_tensor *
mt_new (tsr_context *ctx, const int64_t *ne, enum mt_layout l)
{
  tsr_tensor *base;
  switch (l)
    {
    case MT_TRANSPOSED:
      base = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, ne[1], ne[0], ne[2], ne[3]);
      return tsr_transpose (ctx, base);
    case MT_SWAPPED:
      base = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, ne[0], ne[2], ne[1], ne[3]);
      return tsr_permute (ctx, base, 0, 2, 1, 3);
    case MT_SLICED:
      base = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, ne[0] + 5, ne[1] + 1,
                                ne[2] + 1, ne[3]);
      return tsr_view_4d (ctx, base, ne[0], ne[1], ne[2], ne[3], base->nb[1],
                          base->nb[2], base->nb[3], 2 * base->nb[0]
                          + base->nb[1]);
    case MT_ROTATED:
      /* base dim 0 -> result dim 3, 1 -> 0, 2 -> 1, 3 -> 2.  */
      base = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, ne[3], ne[0], ne[1], ne[2]);
      return tsr_permute (ctx, base, 3, 0, 1, 2);
    default:
      return tsr_new_tensor_4d (ctx, TSR_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
    }
}

/* mt_new filled with uniform values in [LO, HI).  */
static tsr_tensor *
mt_rand (tsr_context *ctx, const int64_t *ne, enum mt_layout l, float lo,
         float hi)
{
  tsr_tensor *t = mt_new (ctx, ne, l);
  if (t)
    ot_fill (t, lo, hi);
  return t;
}

/* "[a,b,c,d]" of NE, in a static buffer of 4 (enough for one line).  */
static const char *
mt_shape (const int64_t *ne)
{
  static char buf[4][64];
  static int next;
  char *s = buf[next++ % 4];
  snprintf (s, 64, "[%ld,%ld,%ld,%ld]", (long) ne[0], (long) ne[1],
            (long) ne[2], (long) ne[3]);
  return s;
}

/* Compute R (built in CTX, host data) on BE and compare it with WANT,
   contiguous of shape NE.  One check line.  */
static int
mt_check (tsr_backend *be, tsr_context *ctx, const char *desc, tsr_tensor *r,
          const int64_t *ne, const double *want, double atol, double rtol)
{
  if (!ot_run (desc, be, ctx, r))
    return 0;
  return ot_compare (desc, r, ne, want, atol, rtol);
}

/* A double array of COUNT (ne) elements.  */
static double *
mt_alloc (const int64_t *ne)
{
  double *p = malloc ((size_t) ot_count (ne) * sizeof *p);
  if (!p)
    {
      fprintf (stderr, "out of memory\n");
      exit (2);
    }
  return p;
}

#endif /* MATH_TEST_H */
