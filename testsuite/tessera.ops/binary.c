/* add, sub, mul and div with the second operand broadcast in every
   dimension, scale, non-contiguous operands, and a chain placed by the
   graph allocator, against references computed in double.

   One float operation on float inputs is correctly rounded (relative
   error <= 2^-24); the checks allow 1e-6 relative per operation, which
   also admits a division done as a multiplication by the reciprocal.  */
#include "ops-test.h"

enum { ADD, SUB, MUL, DIV };
static const char *const op_names[] = { "add", "sub", "mul", "div" };

static tsr_tensor *
build (tsr_context *ctx, int op, tsr_tensor *a, tsr_tensor *b)
{
  switch (op)
    {
    case ADD:
      return tsr_add (ctx, a, b);
    case SUB:
      return tsr_sub (ctx, a, b);
    case MUL:
      return tsr_mul (ctx, a, b);
    default:
      return tsr_div (ctx, a, b);
    }
}

static double
apply (int op, double x, double y)
{
  switch (op)
    {
    case ADD:
      return x + y;
    case SUB:
      return x - y;
    case MUL:
      return x * y;
    default:
      return x / y;
    }
}

/* Values in [-3, -0.25] and [0.25, 3]: safe divisors.  */
static void
fill_nonzero (tsr_tensor *t)
{
  OT_FOR_EACH (t, i0, i1, i2, i3)
    {
      float v = tsr_test_uniform (-2.75f, 2.75f);
      ot_set (t, i0, i1, i2, i3, v < 0 ? v - 0.25f : v + 0.25f);
    }
}

static void
check_broadcast (tsr_backend *be, int op, const int64_t *nea,
                 const int64_t *neb)
{
  char desc[200];
  snprintf (desc, sizeof desc, "%s [%ld,%ld,%ld,%ld] by [%ld,%ld,%ld,%ld]"
            " (rel err <= 1e-6)", op_names[op], (long) nea[0], (long) nea[1],
            (long) nea[2], (long) nea[3], (long) neb[0], (long) neb[1],
            (long) neb[2], (long) neb[3]);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = tsr_new_tensor (ctx, TSR_TYPE_F32, 4, nea);
  tsr_tensor *b = tsr_new_tensor (ctx, TSR_TYPE_F32, 4, neb);
  ot_fill (a, -4.0f, 4.0f);
  fill_nonzero (b);
  tsr_tensor *r = build (ctx, op, a, b);
  if (ot_run (desc, be, ctx, r))
    {
      double *want = malloc (ot_count (nea) * sizeof *want);
      OT_FOR_EACH (a, i0, i1, i2, i3)
        want[ot_index (nea, i0, i1, i2, i3)]
          = apply (op, ot_get (a, i0, i1, i2, i3),
                   ot_get (b, i0 % neb[0], i1 % neb[1], i2 % neb[2],
                           i3 % neb[3]));
      ot_compare (desc, r, nea, want, 0, 1e-6);
      free (want);
    }
  tsr_context_free (ctx);
}

static void
check_all_broadcasts (tsr_backend *be)
{
  static const int64_t nea[4] = { 17, 3, 5, 2 };
  static const int64_t nebs[][4] = {
    { 17, 3, 5, 2 }, { 17, 1, 1, 1 }, { 1, 3, 1, 1 }, { 17, 1, 5, 1 },
    { 1, 1, 1, 1 }, { 1, 1, 1, 2 }, { 1, 3, 5, 1 },
  };
  for (int op = ADD; op <= DIV; op++)
    for (size_t i = 0; i < sizeof nebs / sizeof nebs[0]; i++)
      check_broadcast (be, op, nea, nebs[i]);
  /* Odd and large sizes.  */
  check_broadcast (be, ADD, (int64_t[]) { 1, 1, 1, 1 }, (int64_t[]) { 1, 1, 1, 1 });
  check_broadcast (be, MUL, (int64_t[]) { 5003, 1, 1, 1 }, (int64_t[]) { 5003, 1, 1, 1 });
  check_broadcast (be, DIV, (int64_t[]) { 4099, 2, 1, 1 }, (int64_t[]) { 1, 2, 1, 1 });
  check_broadcast (be, SUB, (int64_t[]) { 33, 17, 1, 1 }, (int64_t[]) { 33, 1, 1, 1 });
  check_broadcast (be, ADD, (int64_t[]) { 3, 1, 1, 7 }, (int64_t[]) { 3, 1, 1, 7 });
}

/* Operands that are views with strided elements or rows.  */
static void
check_non_contiguous (tsr_backend *be)
{
  const char *desc;
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 7, 9);
  tsr_tensor *y = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 9, 7);
  ot_fill (x, -2.0f, 2.0f);
  ot_fill (y, -2.0f, 2.0f);
  int64_t ne[4] = { 9, 7, 1, 1 };
  double want[63];

  desc = "add of a transposed view and a tensor (rel err <= 1e-6)";
  tsr_tensor *r = tsr_add (ctx, tsr_transpose (ctx, x), y);
  if (ot_run (desc, be, ctx, r))
    {
      for (int i1 = 0; i1 < 7; i1++)
        for (int i0 = 0; i0 < 9; i0++)
          want[i1 * 9 + i0] = ot_get (x, i1, i0, 0, 0) + ot_get (y, i0, i1, 0, 0);
      ot_compare (desc, r, ne, want, 0, 1e-6);
    }

  desc = "mul of a tensor and a transposed view (rel err <= 1e-6)";
  r = tsr_mul (ctx, y, tsr_transpose (ctx, x));
  if (ot_run (desc, be, ctx, r))
    {
      for (int i1 = 0; i1 < 7; i1++)
        for (int i0 = 0; i0 < 9; i0++)
          want[i1 * 9 + i0] = ot_get (x, i1, i0, 0, 0) * ot_get (y, i0, i1, 0, 0);
      ot_compare (desc, r, ne, want, 0, 1e-6);
    }

  desc = "add of a tensor to itself (rel err <= 1e-6)";
  r = tsr_add (ctx, x, x);
  if (ot_run (desc, be, ctx, r))
    {
      for (int i1 = 0; i1 < 9; i1++)
        for (int i0 = 0; i0 < 7; i0++)
          want[i1 * 7 + i0] = 2 * ot_get (x, i0, i1, 0, 0);
      ot_compare (desc, r, (int64_t[]) { 7, 9, 1, 1 }, want, 0, 1e-6);
    }

  /* x3 [5,4,3] permuted to [5,3,4]: rows strided; b [5,1,4].  */
  desc = "sub of a permuted view by a broadcast tensor (rel err <= 1e-6)";
  tsr_tensor *x3 = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 5, 4, 3);
  tsr_tensor *b3 = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 5, 1, 4);
  ot_fill (x3, -2.0f, 2.0f);
  ot_fill (b3, -2.0f, 2.0f);
  r = tsr_sub (ctx, tsr_permute (ctx, x3, 0, 2, 1, 3), b3);
  if (ot_run (desc, be, ctx, r))
    {
      double w3[60];
      for (int i2 = 0; i2 < 4; i2++)
        for (int i1 = 0; i1 < 3; i1++)
          for (int i0 = 0; i0 < 5; i0++)
            w3[(i2 * 3 + i1) * 5 + i0] = ot_get (x3, i0, i2, i1, 0)
                                         - ot_get (b3, i0, 0, i2, 0);
      ot_compare (desc, r, (int64_t[]) { 5, 3, 4, 1 }, w3, 0, 1e-6);
    }

  /* A 4x3 block at column 5, row 2 of a 10x6 tensor, divided by a
     [4,1] row.  */
  desc = "div of a 2d view at an offset by a broadcast row (rel err <= 1e-6)";
  tsr_tensor *big = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 10, 6);
  tsr_tensor *row = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 1);
  ot_fill (big, -2.0f, 2.0f);
  fill_nonzero (row);
  tsr_tensor *blk = tsr_view_2d (ctx, big, 4, 3, big->nb[1],
                                 2 * big->nb[1] + 5 * sizeof (float));
  r = tsr_div (ctx, blk, row);
  if (ot_run (desc, be, ctx, r))
    {
      double w2[12];
      for (int i1 = 0; i1 < 3; i1++)
        for (int i0 = 0; i0 < 4; i0++)
          w2[i1 * 4 + i0] = ot_get (big, 5 + i0, 2 + i1, 0, 0)
                            / ot_get (row, i0, 0, 0, 0);
      ot_compare (desc, r, (int64_t[]) { 4, 3, 1, 1 }, w2, 0, 1e-6);
    }
  tsr_context_free (ctx);
}

static void
check_scale (tsr_backend *be)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 33, 7);
  ot_fill (x, -5.0f, 5.0f);
  double want[33 * 7];
  static const float factors[] = { -1.5f, 0.0f, 1e-3f };
  for (int k = 0; k < 3; k++)
    {
      char desc[100];
      snprintf (desc, sizeof desc, "scale [33,7] by %g (rel err <= 1e-6)",
                (double) factors[k]);
      tsr_tensor *r = tsr_scale (ctx, x, factors[k]);
      if (ot_run (desc, be, ctx, r))
        {
          OT_FOR_EACH (x, i0, i1, i2, i3)
            want[i1 * 33 + i0] = ot_get (x, i0, i1, i2, i3) * (double) factors[k];
          ot_compare (desc, r, x->ne, want, 0, 1e-6);
        }
    }
  const char *desc = "scale of a 1d view at an offset (rel err <= 1e-6)";
  tsr_tensor *r = tsr_scale (ctx, tsr_view_1d (ctx, x, 20, 3 * sizeof (float)),
                             2.5f);
  if (ot_run (desc, be, ctx, r))
    {
      for (int i = 0; i < 20; i++)
        want[i] = 2.5 * ot_get (x, 3 + i, 0, 0, 0);
      ot_compare (desc, r, (int64_t[]) { 20, 1, 1, 1 }, want, 0, 1e-6);
    }
  tsr_context_free (ctx);
}

/* ((a + b) * c - d) / e in a no_alloc context placed by the graph
   allocator, inputs set and results read with tsr_tensor_set/get,
   computed twice with new inputs.  */
static void
check_allocated_chain (tsr_backend *be)
{
  enum { N0 = 33, N1 = 5, N = N0 * N1 };
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *in[5];
  for (int i = 0; i < 5; i++)
    {
      in[i] = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, N0, i == 3 ? 1 : N1);
      tsr_set_input (in[i]);
    }
  tsr_tensor *r = tsr_div (ctx, tsr_sub (ctx, tsr_mul (ctx, tsr_add (ctx, in[0], in[1]),
                                                       in[2]), in[3]), in[4]);
  tsr_graph *g;
  tsr_gallocr *ga;
  int rc = ot_allocate (be, ctx, r, &g, &ga);
  for (int round = 0; round < 2; round++)
    {
      char desc[120];
      snprintf (desc, sizeof desc, "((a+b)*c-d)/e through the graph allocator,"
                " round %d (rel err <= 1e-5)", round + 1);
      if (rc != TSR_OK)
        {
          tsr_test_result (0, "%s: build/alloc failed: %s", desc, tsr_last_error ());
          continue;
        }
      static float v[5][N];
      float out[N];
      double want[N];
      for (int i = 0; i < 5; i++)
        for (int j = 0; j < N; j++)
          {
            float u = tsr_test_uniform (-2.0f, 2.0f);
            v[i][j] = i == 4 ? (u < 0 ? u - 0.5f : u + 0.5f) : u;
          }
      const void *data[5] = { v[0], v[1], v[2], v[3], v[4] };
      if (ot_compute_io (be, g, 5, in, data, r, out) != TSR_OK)
        {
          tsr_test_result (0, "%s: compute failed: %s", desc, tsr_last_error ());
          continue;
        }
      for (int j = 0; j < N; j++)
        want[j] = (((double) v[0][j] + v[1][j]) * v[2][j] - v[3][j % N0]) / v[4][j];
      /* Four roundings, and the subtraction may cancel: relative to
         the size of its operands.  */
      long bad = 0;
      int first = 0;
      for (int j = 0; j < N; j++)
        {
          double mag = (fabs ((double) v[0][j] + v[1][j]) * fabs (v[2][j])
                        + fabs (v[3][j % N0])) / fabs (v[4][j]);
          if (!(fabs (out[j] - want[j]) <= 1e-5 * mag) && !bad++)
            first = j;
        }
      if (bad)
        tsr_test_result (0, "%s: %ld wrong, first %d got %.9g want %.9g", desc,
                         bad, first, (double) out[first], want[first]);
      else
        tsr_test_result (1, "%s", desc);
    }
  tsr_gallocr_free (ga);
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (1);
  check_all_broadcasts (be);
  check_non_contiguous (be);
  check_scale (be);
  check_allocated_chain (be);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
