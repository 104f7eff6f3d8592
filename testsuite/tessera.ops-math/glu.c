/* swiglu and geglu, with a gate operand (silu (a) * b, gelu (a) * b)
   and with the gate taken from the second half of each row of a,
   against the formulas in double, over odd sizes, batches and memory
   layouts of both operands.

   Tolerance: |err| <= 1e-5 + 1e-5 |want|: the activation is good to
   about 1e-6 + 1e-5 relative (see tessera.ops/unary.c) and the gate,
   up to 3 in size, scales that.  */
#include "math-test.h"

#define ATOL 1e-5
#define RTOL 1e-5

static double
silu_ref (double x)
{
  return x / (1 + exp (-x));
}

static double
gelu_ref (double x)
{
  return 0.5 * x * (1 + tanh (sqrt (2 / 3.14159265358979323846)
                              * (x + 0.044715 * x * x * x)));
}

struct glu
{
  const char *name;
  tsr_tensor *(*build) (tsr_context *, tsr_tensor *, tsr_tensor *);
  double (*act) (double);
  tsr_op op;
};

static const struct glu glus[] = {
  { "swiglu", tsr_swiglu, silu_ref, TSR_OP_SWIGLU },
  { "geglu", tsr_geglu, gelu_ref, TSR_OP_GEGLU },
};

static const int64_t shapes[][4] = {
  { 1, 1, 1, 1 }, { 3, 1, 1, 1 }, { 17, 3, 1, 1 }, { 4097, 1, 1, 1 },
  { 5, 3, 2, 2 }, { 4097, 17, 1, 1 },
};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

static void
check_gated (tsr_backend *be, const struct glu *g, const int64_t *ne,
             enum mt_layout la, enum mt_layout lb)
{
  char desc[240];
  snprintf (desc, sizeof desc, "%s %s, a %s, b %s", g->name, mt_shape (ne),
            mt_layout_name[la], mt_layout_name[lb]);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = mt_rand (ctx, ne, la, -6, 6);
  tsr_tensor *b = mt_rand (ctx, ne, lb, -3, 3);
  tsr_tensor *r = g->build (ctx, a, b);
  double *want = mt_alloc (ne);
  OT_FOR_EACH (a, i0, i1, i2, i3)
    want[ot_index (ne, i0, i1, i2, i3)]
      = g->act (ot_get (a, i0, i1, i2, i3)) * ot_get (b, i0, i1, i2, i3);
  mt_check (be, ctx, desc, r, ne, want, ATOL, RTOL);
  free (want);
  tsr_context_free (ctx);
}

/* Without b: a has rows of 2 n, the result rows of n.  */
static void
check_split (tsr_backend *be, const struct glu *g, const int64_t *half,
             enum mt_layout la)
{
  char desc[240];
  const int64_t ne[4] = { 2 * half[0], half[1], half[2], half[3] };
  snprintf (desc, sizeof desc, "%s of halves of %s (%s)", g->name,
            mt_shape (ne), mt_layout_name[la]);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = mt_rand (ctx, ne, la, -6, 6);
  tsr_tensor *r = g->build (ctx, a, NULL);
  double *want = mt_alloc (half);
  for (int64_t i3 = 0; i3 < ne[3]; i3++)
    for (int64_t i2 = 0; i2 < ne[2]; i2++)
      for (int64_t i1 = 0; i1 < ne[1]; i1++)
        for (int64_t i0 = 0; i0 < half[0]; i0++)
          want[ot_index (half, i0, i1, i2, i3)]
            = g->act (ot_get (a, i0, i1, i2, i3))
              * ot_get (a, half[0] + i0, i1, i2, i3);
  mt_check (be, ctx, desc, r, half, want, ATOL, RTOL);
  free (want);
  tsr_context_free (ctx);
}

static void
check_nodes (const struct glu *g)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 6, 3, 2);
  tsr_tensor *b = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 6, 3, 2);
  tsr_tensor *r = g->build (ctx, a, b), *h = g->build (ctx, a, NULL);
  CHECK (r && r->op == g->op && r->src[0] == a && r->src[1] == b
         && tsr_same_shape (r, a) && h && h->op == g->op && h->src[0] == a
         && h->src[1] == NULL && h->ne[0] == 3 && h->ne[1] == 3
         && h->ne[2] == 2 && h->ne[3] == 1,
         "%s builder: [6,3,2] with gate -> [6,3,2], alone -> [3,3,2]",
         g->name);
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (43);
  for (int k = 0; k < 2; k++)
    {
      const struct glu *g = &glus[k];
      check_nodes (g);
      for (int s = 0; s < N_SHAPES; s++)
        for (int l = 0; l < MT_LAYOUTS; l++)
          {
            check_gated (be, g, shapes[s], (enum mt_layout) l,
                         (enum mt_layout) ((l + 2) % MT_LAYOUTS));
            check_split (be, g, shapes[s], (enum mt_layout) l);
          }
    }
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
