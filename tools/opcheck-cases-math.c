/* opcheck-cases-math.c - cases of the element-wise math, reduction and
 * shape ops (include/tessera/ops.h, "Element-wise math, reductions and
 * shape ops"): sqr ... gelu_quick, swiglu, geglu, sum, mean, argmax,
 * repeat, concat, clamp, diag_mask_inf, pad, arange, upscale, argsort,
 * top_k.  */
#include <config.h>

#include <math.h>
#include <string.h>

#include "opcheck.h"

#define F32 TSR_TYPE_F32

static const enum oc_layout nc_layouts[] = { OC_TRANSPOSED, OC_PERMUTED,
                                             OC_STRIDED };
static const int64_t shapes[][TSR_MAX_DIMS] = {
  { 1, 1, 1, 1 }, { 17, 3, 2, 1 }, { 16, 5, 4, 3 }, { 4097, 9, 1, 1 },
};
#define N_SHAPES (OC_N (shapes))
static const int64_t nc_shape[TSR_MAX_DIMS] = { 17, 6, 5, 2 };

/* Cases of OP, built by BUILD with parameters P, on one f32 operand:
   every shape of SHAPES, contiguous, then NC_SHAPE in each
   non-contiguous layout.  EXTRA ends the names.  */
static void
each_operand (struct oc_list *l, tsr_op op, oc_build_fn build,
              const char *extra, struct oc_params p)
{
  char sa[64];
  for (size_t s = 0; s < N_SHAPES + 3; s++)
    {
      bool nc = s >= N_SHAPES;
      memcpy (p.ne[0], nc ? nc_shape : shapes[s], sizeof p.ne[0]);
      p.type[0] = F32;
      p.layout[0] = nc ? nc_layouts[s - N_SHAPES] : OC_CONT;
      oc_add (l, op, build, &p, "%s %s%s", tsr_op_name (op),
              oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]),
              extra);
    }
}

/* Element-wise functions.  */

static struct oc_fill
unary_fill (tsr_op op, bool special)
{
  struct oc_fill f = OC_UNIFORM (-4, 4);
  if (op == TSR_OP_SQRT || op == TSR_OP_LOG)
    f = OC_UNIFORM (0.01, 10);       /* the domain */
  if (op == TSR_OP_EXP)
    f = OC_UNIFORM (-10, 10);
  if (special)
    {
      /* NaN, infinities, zeros and, for sqrt and log, negatives.  */
      f.lo = op == TSR_OP_SQRT || op == TSR_OP_LOG ? -1 : f.lo;
      f.p_special = 0.25;
    }
  return f;
}

static tsr_tensor *
build_unary (struct oc_build *b, const struct oc_case *c)
{
  tsr_tensor *x = oc_operand (b, &c->p, 0, unary_fill (c->op, c->p.iv[0]));
  tsr_context *ctx = b->ctx;
  switch (c->op)
    {
    case TSR_OP_SQR: return tsr_sqr (ctx, x);
    case TSR_OP_SQRT: return tsr_sqrt (ctx, x);
    case TSR_OP_EXP: return tsr_exp (ctx, x);
    case TSR_OP_LOG: return tsr_ln (ctx, x);
    case TSR_OP_NEG: return tsr_neg (ctx, x);
    case TSR_OP_ABS: return tsr_abs (ctx, x);
    case TSR_OP_SIGMOID: return tsr_sigmoid (ctx, x);
    case TSR_OP_TANH: return tsr_tanh (ctx, x);
    case TSR_OP_RELU: return tsr_relu (ctx, x);
    case TSR_OP_GELU_ERF: return tsr_gelu_erf (ctx, x);
    default: return tsr_gelu_quick (ctx, x);
    }
}

static void
cases_unary (struct oc_list *l)
{
  static const tsr_op ops[] = {
    TSR_OP_SQR, TSR_OP_SQRT, TSR_OP_EXP, TSR_OP_LOG, TSR_OP_NEG,
    TSR_OP_ABS, TSR_OP_SIGMOID, TSR_OP_TANH, TSR_OP_RELU, TSR_OP_GELU_QUICK,
    TSR_OP_GELU_ERF,
  };
  char sa[64];
  for (size_t o = 0; o < OC_N (ops); o++)
    each_operand (l, ops[o], build_unary, "", (struct oc_params) { 0 });
  /* NaN, infinities and zeros in: IEEE semantics (ops.h).  silu and
     gelu do not document theirs: gelu (-inf) is NaN on the CPU (-inf
     times 0) and -inf elsewhere, so they have no such cases yet.  */
  for (size_t o = 0; o < OC_N (ops); o++)
    {
      struct oc_params p = { .type = { F32 }, .iv = { 1 } };
      oc_ne (p.ne[0], 67, 5, 1, 1);
      oc_add (l, ops[o], build_unary, &p, "%s %s specials",
              tsr_op_name (ops[o]),
              oc_shape_str (sa, sizeof sa, F32, p.ne[0], OC_CONT));
    }
}

/* Gated activations, with a second operand or splitting the first.  */

static tsr_tensor *
build_glu (struct oc_build *b, const struct oc_case *c)
{
  struct oc_fill f = OC_UNIFORM (-4, 4);
  tsr_tensor *x = oc_operand (b, &c->p, 0, f);
  tsr_tensor *y = c->p.iv[0] ? oc_operand (b, &c->p, 1, f) : NULL;
  if (c->p.iv[0] && !y)
    return NULL;
  return c->op == TSR_OP_SWIGLU ? tsr_swiglu (b->ctx, x, y)
                                : tsr_geglu (b->ctx, x, y);
}

static void
cases_glu (struct oc_list *l)
{
  static const tsr_op ops[] = { TSR_OP_SWIGLU, TSR_OP_GEGLU };
  static const int64_t gshapes[][TSR_MAX_DIMS] = {
    { 2, 1, 1, 1 }, { 34, 3, 2, 1 }, { 16, 5, 4, 3 }, { 8194, 9, 1, 1 },
    { 18, 6, 5, 2 },
  };
  char sa[64], sb[64];
  for (size_t o = 0; o < 2; o++)
    for (size_t s = 0; s < OC_N (gshapes); s++)
      for (int split = 0; split < 2; split++)
        {
          struct oc_params p = { .type = { F32, F32 }, .iv = { !split } };
          memcpy (p.ne[0], gshapes[s], sizeof p.ne[0]);
          memcpy (p.ne[1], gshapes[s], sizeof p.ne[1]);
          if (s == OC_N (gshapes) - 1)     /* views */
            {
              p.layout[0] = split ? OC_STRIDED : OC_TRANSPOSED;
              p.layout[1] = OC_PERMUTED;
            }
          if (split)
            oc_add (l, ops[o], build_glu, &p, "%s %s split",
                    tsr_op_name (ops[o]),
                    oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]));
          else
            oc_add (l, ops[o], build_glu, &p, "%s %s %s",
                    tsr_op_name (ops[o]),
                    oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]),
                    oc_shape_str (sb, sizeof sb, F32, p.ne[1], p.layout[1]));
        }
}

/* Reductions: sum, mean, argmax.  */

static tsr_tensor *
build_reduce (struct oc_build *b, const struct oc_case *c)
{
  struct oc_fill f = OC_UNIFORM (-2, 3);
  f.p_special = c->p.iv[0] ? 0.05 : 0;
  tsr_tensor *x = oc_operand (b, &c->p, 0, f);
  switch (c->op)
    {
    case TSR_OP_SUM: return tsr_sum (b->ctx, x);
    case TSR_OP_MEAN: return tsr_mean (b->ctx, x);
    default: return tsr_argmax (b->ctx, x);
    }
}

static void
cases_reduce (struct oc_list *l)
{
  static const tsr_op ops[] = { TSR_OP_SUM, TSR_OP_MEAN, TSR_OP_ARGMAX };
  char sa[64];
  for (size_t o = 0; o < 3; o++)
    {
      each_operand (l, ops[o], build_reduce, "", (struct oc_params) { 0 });
      if (ops[o] == TSR_OP_ARGMAX)
        {
          /* NaNs are skipped.  */
          struct oc_params p = { .type = { F32 }, .iv = { 1 } };
          oc_ne (p.ne[0], 33, 20, 1, 1);
          oc_add (l, ops[o], build_reduce, &p, "argmax %s specials",
                  oc_shape_str (sa, sizeof sa, F32, p.ne[0], OC_CONT));
        }
    }
}

/* Shape ops.  */

static tsr_tensor *
build_shape (struct oc_build *b, const struct oc_case *c)
{
  const struct oc_params *p = &c->p;
  const int *v = p->iv;
  struct oc_fill f = OC_UNIFORM (-3, 3);
  tsr_tensor *x = NULL, *y;
  /* top_k: NaNs, infinities and zeros (ties) among the values, whose
     order the op defines.  */
  if (c->op == TSR_OP_TOP_K)
    f.p_special = 0.15;
  if (c->op != TSR_OP_ARANGE)
    x = oc_operand (b, p, 0, f);
  switch (c->op)
    {
    case TSR_OP_REPEAT:
      /* The shape tensor: its data is not read, but it is a source.  */
      y = oc_input (b, F32, p->ne[1], f, OC_CONT);
      return tsr_repeat (b->ctx, x, y);
    case TSR_OP_CONCAT:
      return tsr_concat (b->ctx, x, oc_operand (b, p, 1, f), v[0]);
    case TSR_OP_CLAMP:
      return tsr_clamp (b->ctx, x, p->fv[0], p->fv[1]);
    case TSR_OP_DIAG_MASK_INF:
      return tsr_diag_mask_inf (b->ctx, x, v[0]);
    case TSR_OP_PAD:
      return tsr_pad (b->ctx, x, v[0], v[1], v[2], v[3]);
    case TSR_OP_ARANGE:
      return tsr_arange (b->ctx, p->fv[0], p->fv[1], p->fv[2]);
    case TSR_OP_UPSCALE:
      return tsr_upscale (b->ctx, x, v[0]);
    case TSR_OP_ARGSORT:
      return tsr_argsort (b->ctx, x, (enum tsr_sort_order) v[0]);
    default:
      return tsr_top_k (b->ctx, x, v[0]);
    }
}

static void
cases_repeat_concat (struct oc_list *l)
{
  static const int64_t rep[][2][TSR_MAX_DIMS] = {
    { { 1, 1, 1, 1 }, { 5, 3, 2, 1 } }, { { 3, 1, 2, 1 }, { 6, 4, 2, 3 } },
    { { 17, 3, 1, 1 }, { 17, 6, 4, 1 } }, { { 4, 5, 3, 2 }, { 8, 5, 6, 2 } },
    { { 1, 7, 1, 1 }, { 4097, 7, 1, 1 } },
  };
  char sa[64], sb[64];
  for (size_t s = 0; s < OC_N (rep) + 1; s++)
    {
      struct oc_params p = { .type = { F32, F32 } };
      size_t r = s < OC_N (rep) ? s : 3;
      memcpy (p.ne[0], rep[r][0], sizeof p.ne[0]);
      memcpy (p.ne[1], rep[r][1], sizeof p.ne[1]);
      if (r != s)
        p.layout[0] = OC_TRANSPOSED;
      oc_add (l, TSR_OP_REPEAT, build_shape, &p, "repeat %s -> %s",
              oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]),
              oc_shape_str (sb, sizeof sb, F32, p.ne[1], OC_CONT));
    }
  /* Concatenation along each dimension, contiguous and not.  */
  for (int dim = 0; dim < 4; dim++)
    for (int k = 0; k < 3; k++)
      {
        struct oc_params p = { .type = { F32, F32 }, .iv = { dim } };
        oc_ne (p.ne[0], 17, 6, 5, 2);
        memcpy (p.ne[1], p.ne[0], sizeof p.ne[1]);
        p.ne[1][dim] = k == 2 ? 1 : 3;
        if (k == 1)
          {
            p.layout[0] = OC_PERMUTED;
            p.layout[1] = OC_TRANSPOSED;
          }
        if (k == 2)
          p.layout[0] = OC_STRIDED;
        oc_add (l, TSR_OP_CONCAT, build_shape, &p, "concat %s %s dim=%d",
                oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]),
                oc_shape_str (sb, sizeof sb, F32, p.ne[1], p.layout[1]), dim);
      }
}

/* Cases of OP with parameters P, EXTRA naming them: on every shape and
   layout when ALL, else on one 4-D shape.  */
static void
param_case (struct oc_list *l, tsr_op op, const char *extra,
            struct oc_params p, bool all)
{
  char sa[64];
  if (all)
    {
      each_operand (l, op, build_shape, extra, p);
      return;
    }
  p.type[0] = F32;
  memcpy (p.ne[0], nc_shape, sizeof p.ne[0]);
  oc_add (l, op, build_shape, &p, "%s %s%s", tsr_op_name (op),
          oc_shape_str (sa, sizeof sa, F32, p.ne[0], OC_CONT), extra);
}

static void
cases_misc (struct oc_list *l)
{
  char extra[64];
  static const float bounds[][2] = { { -0.5f, 0.5f }, { 0, 6 }, { 1, 1 } };
  for (size_t i = 0; i < OC_N (bounds); i++)
    {
      struct oc_params p = { .fv = { bounds[i][0], bounds[i][1] } };
      snprintf (extra, sizeof extra, " min=%g max=%g", bounds[i][0],
                bounds[i][1]);
      param_case (l, TSR_OP_CLAMP, extra, p, i == 0);
    }
  static const int n_past[] = { 0, 2, -1, 20 };
  for (size_t i = 0; i < OC_N (n_past); i++)
    {
      struct oc_params p = { .iv = { n_past[i] } };
      snprintf (extra, sizeof extra, " n_past=%d", n_past[i]);
      param_case (l, TSR_OP_DIAG_MASK_INF, extra, p, i == 0);
    }
  static const int pads[][4] = {
    { 0, 0, 0, 0 }, { 3, 0, 0, 0 }, { 1, 2, 3, 1 }, { 0, 5, 0, 0 },
  };
  for (size_t i = 0; i < OC_N (pads); i++)
    {
      struct oc_params p = { 0 };
      memcpy (p.iv, pads[i], sizeof pads[i]);
      snprintf (extra, sizeof extra, " pad=%d,%d,%d,%d", pads[i][0],
                pads[i][1], pads[i][2], pads[i][3]);
      param_case (l, TSR_OP_PAD, extra, p, i == 2);
    }
  static const float ranges[][3] = {
    { 0, 1, 1 }, { 0, 17, 1 }, { -3, 5, 0.25f }, { 10, -7, -1.5f },
    { 0, 5000, 1 },
  };
  for (size_t i = 0; i < OC_N (ranges); i++)
    {
      struct oc_params p = { .fv = { ranges[i][0], ranges[i][1],
                                     ranges[i][2] } };
      oc_add (l, TSR_OP_ARANGE, build_shape, &p, "arange start=%g stop=%g "
              "step=%g", p.fv[0], p.fv[1], p.fv[2]);
    }
  for (int factor = 1; factor <= 3; factor++)
    {
      struct oc_params p = { .iv = { factor } };
      snprintf (extra, sizeof extra, " factor=%d", factor);
      param_case (l, TSR_OP_UPSCALE, extra, p, factor == 2);
    }
}

static void
cases_sort (struct oc_list *l)
{
  char extra[64], sa[64];
  for (int order = 0; order < 2; order++)
    {
      struct oc_params p = { .iv = { order } };
      snprintf (extra, sizeof extra, " %s", order ? "desc" : "asc");
      each_operand (l, TSR_OP_ARGSORT, build_shape, extra, p);
    }
  static const int ks[] = { 1, 3, 17 };
  for (size_t i = 0; i < OC_N (ks); i++)
    {
      struct oc_params p = { .iv = { ks[i] } };
      snprintf (extra, sizeof extra, " k=%d", ks[i]);
      param_case (l, TSR_OP_TOP_K, extra, p, i == 0);
      if (i == 0)
        continue;
      /* Long rows, read across memory.  */
      p.type[0] = F32;
      p.layout[0] = OC_TRANSPOSED;
      oc_ne (p.ne[0], 4097, 3, 1, 1);
      oc_add (l, TSR_OP_TOP_K, build_shape, &p, "top_k %s%s",
              oc_shape_str (sa, sizeof sa, F32, p.ne[0], OC_TRANSPOSED),
              extra);
    }
}

void
oc_cases_math (struct oc_list *l)
{
  cases_unary (l);
  cases_glu (l);
  cases_reduce (l);
  cases_repeat_concat (l);
  cases_misc (l);
  cases_sort (l);
}
