/* sqr, sqrt, exp, log (tsr_ln), neg, abs, sigmoid, tanh, relu,
   gelu_quick and clamp against their formulas evaluated in double, on
   sizes 1, 3, 17, 4097 and batched 4-d shapes, in five memory layouts,
   and on special values (zeros, infinities, NaN, huge and tiny).

   Tolerance: |err| <= 1e-6 + 1e-5 |want| (float libm functions are
   good to a few ulp).  Special values are compared with the reference
   rounded to float, so overflow to inf and underflow to 0 are
   expected, and NaN must match NaN.  */
#include "math-test.h"

#define ATOL 1e-6
#define RTOL 1e-5

static double sqr_ref (double x) { return x * x; }
static double neg_ref (double x) { return -x; }
static double sigmoid_ref (double x) { return 1 / (1 + exp (-x)); }
static double relu_ref (double x) { return isnan (x) ? x : x > 0 ? x : 0; }
static double gelu_quick_ref (double x) { return x / (1 + exp (-1.702 * x)); }
static double gelu_erf_ref (double x) { return 0.5 * x * (1 + erf (x / sqrt (2.0))); }
static double clamp_ref (double x) { return isnan (x) ? x : fmin (fmax (x, -0.5), 2.0); }

static tsr_tensor *
clamp_build (tsr_context *ctx, tsr_tensor *a)
{
  return tsr_clamp (ctx, a, -0.5f, 2.0f);
}

struct unary
{
  const char *name;
  tsr_tensor *(*build) (tsr_context *, tsr_tensor *);
  double (*ref) (double);
  float lo, hi;                 /* input range for random checks */
};

static const struct unary unaries[] = {
  { "sqr", tsr_sqr, sqr_ref, -8, 8 },
  { "sqrt", tsr_sqrt, sqrt, 0, 100 },
  { "exp", tsr_exp, exp, -20, 20 },
  { "log", tsr_ln, log, 1e-3f, 1e3f },
  { "neg", tsr_neg, neg_ref, -8, 8 },
  { "abs", tsr_abs, fabs, -8, 8 },
  { "sigmoid", tsr_sigmoid, sigmoid_ref, -20, 20 },
  { "tanh", tsr_tanh, tanh, -6, 6 },
  { "relu", tsr_relu, relu_ref, -8, 8 },
  { "gelu_quick", tsr_gelu_quick, gelu_quick_ref, -8, 8 },
  { "gelu_erf", tsr_gelu_erf, gelu_erf_ref, -8, 8 },
  { "clamp (-0.5, 2)", clamp_build, clamp_ref, -3, 3 },
};
enum { N_UNARY = sizeof unaries / sizeof unaries[0] };

static const int64_t shapes[][4] = {
  { 1, 1, 1, 1 }, { 3, 1, 1, 1 }, { 17, 3, 1, 1 }, { 4097, 1, 1, 1 },
  { 5, 3, 2, 2 }, { 4097, 17, 1, 1 },
};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

static void
check_random (tsr_backend *be, const struct unary *u, const int64_t *ne,
              enum mt_layout l)
{
  char desc[200];
  snprintf (desc, sizeof desc, "%s %s %s on [%g,%g)", u->name, mt_shape (ne),
            mt_layout_name[l], (double) u->lo, (double) u->hi);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = mt_rand (ctx, ne, l, u->lo, u->hi);
  tsr_tensor *r = u->build (ctx, x);
  double *want = mt_alloc (ne);
  OT_FOR_EACH (x, i0, i1, i2, i3)
    want[ot_index (ne, i0, i1, i2, i3)] = u->ref (ot_get (x, i0, i1, i2, i3));
  if (mt_check (be, ctx, desc, r, ne, want, ATOL, RTOL))
    CHECK (r->type == TSR_TYPE_F32 && tsr_is_contiguous (r),
           "%s: result is contiguous f32", desc);
  free (want);
  tsr_context_free (ctx);
}

static void
check_special (tsr_backend *be, const struct unary *u)
{
  static const float xs[] = { 0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY,
                              NAN, 1e-30f, -1e-30f, 88.0f, -88.0f, 100.0f,
                              -100.0f, 3e38f, -3e38f, 1e-45f };
  enum { N = sizeof xs / sizeof xs[0] };
  char desc[200];
  snprintf (desc, sizeof desc, "%s of 0, -0, +-1, +-inf, NaN, +-1e-30, +-88,"
            " +-100, +-3e38, 1e-45", u->name);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, N);
  memcpy (x->data, xs, sizeof xs);
  tsr_tensor *r = u->build (ctx, x);
  double want[N];
  for (int i = 0; i < N; i++)
    want[i] = (float) u->ref (xs[i]);
  mt_check (be, ctx, desc, r, x->ne, want, ATOL, RTOL);
  tsr_context_free (ctx);
}

/* Builders record the op and their operand.  */
static void
check_nodes (void)
{
  static const tsr_op ops[N_UNARY] = {
    TSR_OP_SQR, TSR_OP_SQRT, TSR_OP_EXP, TSR_OP_LOG, TSR_OP_NEG, TSR_OP_ABS,
    TSR_OP_SIGMOID, TSR_OP_TANH, TSR_OP_RELU, TSR_OP_GELU_QUICK,
    TSR_OP_GELU_ERF, TSR_OP_CLAMP
  };
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 4, 3, 2);
  int ok = 1;
  for (int k = 0; k < N_UNARY; k++)
    {
      tsr_tensor *r = unaries[k].build (ctx, a);
      ok &= r && r->op == ops[k] && r->src[0] == a && r->src[1] == NULL
            && tsr_same_shape (r, a)
            && tsr_op_get_kind (ops[k]) == (ops[k] == TSR_OP_CLAMP
                                            ? TSR_OP_KIND_OTHER
                                            : TSR_OP_KIND_UNARY);
    }
  CHECK (ok, "unary builders record op, operand and shape");
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (41);
  check_nodes ();
  for (int k = 0; k < N_UNARY; k++)
    {
      for (int s = 0; s < N_SHAPES; s++)
        for (int l = 0; l < MT_LAYOUTS; l++)
          check_random (be, &unaries[k], shapes[s], (enum mt_layout) l);
      check_special (be, &unaries[k]);
    }
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
