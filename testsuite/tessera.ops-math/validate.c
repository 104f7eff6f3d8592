/* The math builders refuse bad operands and arguments at build time:
   NULL, the status tessera/ops.h gives (TSR_ERR_SHAPE for shapes,
   TSR_ERR_TYPE for types, TSR_ERR_INVALID_ARG for arguments) and a
   message naming the op; NULL operands give NULL and keep the first
   error; good calls record shape, type and parameters.  The CPU
   backend supports exactly what the builders make.  */
#include "math-test.h"

static void
expect_error (tsr_tensor *r, tsr_status status, const char *word,
              const char *desc)
{
  char msg[400];
  const char *err = tsr_last_error ();
  int ok = r == NULL && tsr_last_status () == status && err
           && strstr (err, word) != NULL;
  snprintf (msg, sizeof msg, "result %p, status %d (want %d), message \"%s\""
            " (want it to mention \"%s\")", (void *) r,
            (int) tsr_last_status (), (int) status, err ? err : "(null)",
            word);
  ot_report (ok, desc, msg);
  tsr_clear_error ();
}

static int
shape_is (const tsr_tensor *t, tsr_type type, int64_t n0, int64_t n1,
          int64_t n2, int64_t n3)
{
  return t && t->type == type && t->ne[0] == n0 && t->ne[1] == n1
         && t->ne[2] == n2 && t->ne[3] == n3;
}

static void
check_types (tsr_context *ctx)
{
  tsr_tensor *i = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 4, 3);
  tsr_tensor *h = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, 4, 3);
  tsr_tensor *f = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 3);
  tsr_clear_error ();
  expect_error (tsr_sqr (ctx, i), TSR_ERR_TYPE, "sqr", "sqr of i32 is a type error naming sqr");
  expect_error (tsr_sqrt (ctx, h), TSR_ERR_TYPE, "sqrt", "sqrt of f16 is a type error naming sqrt");
  expect_error (tsr_exp (ctx, i), TSR_ERR_TYPE, "exp", "exp of i32 is a type error");
  expect_error (tsr_ln (ctx, i), TSR_ERR_TYPE, "log", "log of i32 is a type error naming log");
  expect_error (tsr_neg (ctx, i), TSR_ERR_TYPE, "neg", "neg of i32 is a type error");
  expect_error (tsr_abs (ctx, i), TSR_ERR_TYPE, "abs", "abs of i32 is a type error");
  expect_error (tsr_sigmoid (ctx, i), TSR_ERR_TYPE, "sigmoid", "sigmoid of i32 is a type error");
  expect_error (tsr_tanh (ctx, i), TSR_ERR_TYPE, "tanh", "tanh of i32 is a type error");
  expect_error (tsr_relu (ctx, i), TSR_ERR_TYPE, "relu", "relu of i32 is a type error");
  expect_error (tsr_gelu_quick (ctx, h), TSR_ERR_TYPE, "gelu_quick", "gelu_quick of f16 is a type error");
  expect_error (tsr_swiglu (ctx, f, i), TSR_ERR_TYPE, "swiglu", "swiglu with an i32 gate is a type error");
  expect_error (tsr_geglu (ctx, i, NULL), TSR_ERR_TYPE, "geglu", "geglu of i32 is a type error");
  expect_error (tsr_sum (ctx, i), TSR_ERR_TYPE, "sum", "sum of i32 is a type error");
  expect_error (tsr_mean (ctx, h), TSR_ERR_TYPE, "mean", "mean of f16 is a type error");
  expect_error (tsr_argmax (ctx, i), TSR_ERR_TYPE, "argmax", "argmax of i32 is a type error");
  expect_error (tsr_repeat (ctx, i, f), TSR_ERR_TYPE, "repeat", "repeat of i32 is a type error");
  expect_error (tsr_concat (ctx, f, h, 0), TSR_ERR_TYPE, "concat", "concat of f32 and f16 is a type error");
  expect_error (tsr_clamp (ctx, i, 0, 1), TSR_ERR_TYPE, "clamp", "clamp of i32 is a type error");
  expect_error (tsr_diag_mask_inf (ctx, h, 0), TSR_ERR_TYPE, "diag_mask_inf", "diag_mask_inf of f16 is a type error");
  expect_error (tsr_pad (ctx, i, 1, 0, 0, 0), TSR_ERR_TYPE, "pad", "pad of i32 is a type error");
  expect_error (tsr_upscale (ctx, i, 2), TSR_ERR_TYPE, "upscale", "upscale of i32 is a type error");
  expect_error (tsr_argsort (ctx, i, TSR_SORT_ASC), TSR_ERR_TYPE, "argsort", "argsort of i32 is a type error");
  expect_error (tsr_top_k (ctx, h, 1), TSR_ERR_TYPE, "top_k", "top_k of f16 is a type error");
}

static void
check_shapes_and_args (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 5, 3, 2);
  tsr_tensor *even = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 6, 3, 2);
  tsr_clear_error ();
  expect_error (tsr_swiglu (ctx, a, even), TSR_ERR_SHAPE, "swiglu",
                "swiglu of [5,3,2] with a [6,3,2] gate is a shape error naming swiglu");
  expect_error (tsr_geglu (ctx, a, NULL), TSR_ERR_SHAPE, "geglu",
                "geglu of rows of 5 without a gate (odd) is a shape error naming geglu");
  expect_error (tsr_repeat (ctx, even, tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 9, 3, 2)),
                TSR_ERR_SHAPE, "repeat", "repeat [6,3,2] to [9,3,2] is a shape error naming repeat");
  expect_error (tsr_repeat (ctx, even, tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 6, 3)),
                TSR_ERR_SHAPE, "repeat", "repeat [6,3,2] to the smaller [6,3] is a shape error");
  expect_error (tsr_concat (ctx, a, even, 1), TSR_ERR_SHAPE, "concat",
                "concat [5,3,2] and [6,3,2] along 1 is a shape error naming concat");
  expect_error (tsr_concat (ctx, a, a, 4), TSR_ERR_INVALID_ARG, "concat",
                "concat along dimension 4 is an argument error naming concat");
  expect_error (tsr_concat (ctx, a, a, -1), TSR_ERR_INVALID_ARG, "concat",
                "concat along dimension -1 is an argument error");
  expect_error (tsr_clamp (ctx, a, 2, 1), TSR_ERR_INVALID_ARG, "clamp",
                "clamp with min 2 > max 1 is an argument error naming clamp");
  expect_error (tsr_clamp (ctx, a, NAN, 1), TSR_ERR_INVALID_ARG, "clamp",
                "clamp with a NaN min is an argument error");
  expect_error (tsr_pad (ctx, a, 0, -1, 0, 0), TSR_ERR_INVALID_ARG, "pad",
                "pad by -1 is an argument error naming pad");
  expect_error (tsr_arange (ctx, 0, 5, 0), TSR_ERR_INVALID_ARG, "arange",
                "arange with step 0 is an argument error naming arange");
  expect_error (tsr_arange (ctx, 5, 0, 1), TSR_ERR_INVALID_ARG, "arange",
                "arange from 5 up to 0 (no elements) is an argument error");
  expect_error (tsr_arange (ctx, 0, 5, -1), TSR_ERR_INVALID_ARG, "arange",
                "arange from 0 down to 5 is an argument error");
  expect_error (tsr_arange (ctx, 1, 1, 1), TSR_ERR_INVALID_ARG, "arange",
                "arange from 1 to 1 (empty) is an argument error");
  expect_error (tsr_arange (ctx, 0, INFINITY, 1), TSR_ERR_INVALID_ARG, "arange",
                "arange to infinity is an argument error");
  expect_error (tsr_arange (ctx, 0, 1e30f, 1e-10f), TSR_ERR_INVALID_ARG, "arange",
                "arange of 1e40 elements is an argument error");
  expect_error (tsr_arange (NULL, 0, 5, 1), TSR_ERR_INVALID_ARG, "arange",
                "arange with a NULL context is an argument error");
  expect_error (tsr_upscale (ctx, a, 0), TSR_ERR_INVALID_ARG, "upscale",
                "upscale by 0 is an argument error naming upscale");
  expect_error (tsr_argsort (ctx, a, (enum tsr_sort_order) 7), TSR_ERR_INVALID_ARG,
                "argsort", "argsort in order 7 is an argument error naming argsort");
  expect_error (tsr_top_k (ctx, a, 0), TSR_ERR_INVALID_ARG, "top_k",
                "top_k 0 is an argument error naming top_k");
  expect_error (tsr_top_k (ctx, a, 6), TSR_ERR_INVALID_ARG, "top_k",
                "top_k 6 of rows of 5 is an argument error");
}

/* A NULL operand gives NULL and keeps the first error.  */
static void
check_propagation (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 5, 3);
  tsr_clear_error ();
  tsr_tensor *x = tsr_concat (ctx, a, a, 9);
  char first[300];
  snprintf (first, sizeof first, "%s", tsr_last_error ());
  tsr_tensor *chain[] = {
    tsr_sqr (ctx, x), tsr_sqrt (ctx, x), tsr_exp (ctx, x), tsr_ln (ctx, x),
    tsr_neg (ctx, x), tsr_abs (ctx, x), tsr_sigmoid (ctx, x),
    tsr_tanh (ctx, x), tsr_relu (ctx, x), tsr_gelu_quick (ctx, x),
    tsr_swiglu (ctx, x, a), tsr_geglu (ctx, x, NULL), tsr_sum (ctx, x),
    tsr_mean (ctx, x), tsr_argmax (ctx, x), tsr_repeat (ctx, x, a),
    tsr_repeat (ctx, a, x), tsr_concat (ctx, a, x, 0),
    tsr_concat (ctx, x, a, 0), tsr_clamp (ctx, x, 0, 1),
    tsr_diag_mask_inf (ctx, x, 0), tsr_pad (ctx, x, 1, 1, 1, 1),
    tsr_upscale (ctx, x, 2), tsr_argsort (ctx, x, TSR_SORT_DESC),
    tsr_top_k (ctx, x, 1),
  };
  int all_null = x == NULL;
  for (size_t k = 0; k < sizeof chain / sizeof chain[0]; k++)
    all_null &= chain[k] == NULL;
  CHECK (all_null, "every math builder given a NULL operand returns NULL");
  CHECK (tsr_last_status () == TSR_ERR_INVALID_ARG
         && strcmp (first, tsr_last_error ()) == 0,
         "math builders given a NULL operand keep the first error (\"%s\", "
         "now \"%s\")", first, tsr_last_error ());
  tsr_clear_error ();
  CHECK (tsr_sum (NULL, a) == NULL && strstr (tsr_last_error (), "sum"),
         "sum with a NULL context is refused naming sum");
}

/* Good calls: shapes, types, parameters, and CPU support.  */
static void
check_nodes (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 5, 3, 2);
  tsr_tensor *t;
  tsr_clear_error ();
  t = tsr_sum (ctx, a);
  CHECK (shape_is (t, TSR_TYPE_F32, 1, 1, 1, 1) && t->op == TSR_OP_SUM,
         "sum of [5,3,2] is f32 [1,1,1,1]");
  t = tsr_mean (ctx, a);
  CHECK (shape_is (t, TSR_TYPE_F32, 1, 3, 2, 1) && t->op == TSR_OP_MEAN,
         "mean of [5,3,2] is f32 [1,3,2,1]");
  t = tsr_argmax (ctx, a);
  CHECK (shape_is (t, TSR_TYPE_I32, 3, 2, 1, 1) && t->op == TSR_OP_ARGMAX,
         "argmax of [5,3,2] is i32 [3,2,1,1]");
  t = tsr_repeat (ctx, a, tsr_new_tensor_4d (ctx, TSR_TYPE_I32, 10, 3, 4, 2));
  CHECK (shape_is (t, TSR_TYPE_F32, 10, 3, 4, 2) && t->op == TSR_OP_REPEAT,
         "repeat of [5,3,2] to an i32 [10,3,4,2] is f32 [10,3,4,2]");
  for (int d = 0; d < 4; d++)
    {
      int64_t ne[4] = { 5, 3, 2, 1 };
      ne[d] = 7;
      t = tsr_concat (ctx, a, tsr_new_tensor_4d (ctx, TSR_TYPE_F32, ne[0], ne[1],
                                                 ne[2], ne[3]), d);
      ne[d] = (int64_t[]) { 5, 3, 2, 1 }[d] + 7;
      CHECK (shape_is (t, TSR_TYPE_F32, ne[0], ne[1], ne[2], ne[3])
             && tsr_get_op_param_i32 (t, 0) == d,
             "concat along %d adds the sizes there", d);
    }
  t = tsr_clamp (ctx, a, -1.5f, -1.5f);
  CHECK (t && tsr_get_op_param_f32 (t, 0) == -1.5f
         && tsr_get_op_param_f32 (t, 1) == -1.5f,
         "clamp with min == max is accepted and records both");
  t = tsr_pad (ctx, a, 1, 2, 3, 4);
  CHECK (shape_is (t, TSR_TYPE_F32, 6, 5, 5, 5), "pad [5,3,2] by (1,2,3,4) is [6,5,5,5]");
  t = tsr_arange (ctx, 0, 1, 0.1f);
  CHECK (shape_is (t, TSR_TYPE_F32, 10, 1, 1, 1) && t->src[0] == NULL
         && t->op == TSR_OP_ARANGE, "arange (0, 1, 0.1) is f32 [10] without sources");
  t = tsr_upscale (ctx, a, 3);
  CHECK (shape_is (t, TSR_TYPE_F32, 15, 9, 2, 1), "upscale [5,3,2] by 3 is [15,9,2]");
  t = tsr_argsort (ctx, a, TSR_SORT_DESC);
  CHECK (shape_is (t, TSR_TYPE_I32, 5, 3, 2, 1)
         && tsr_get_op_param_i32 (t, 0) == TSR_SORT_DESC,
         "argsort of [5,3,2] is i32 [5,3,2] recording the order");
  t = tsr_top_k (ctx, a, 5);
  CHECK (shape_is (t, TSR_TYPE_I32, 5, 3, 2, 1), "top_k 5 of [5,3,2] is i32 [5,3,2]");
  t = tsr_diag_mask_inf (ctx, a, -3);
  CHECK (shape_is (t, TSR_TYPE_F32, 5, 3, 2, 1) && tsr_get_op_param_i32 (t, 0) == -3,
         "diag_mask_inf accepts n_past -3");
  CHECK (tsr_last_status () == TSR_OK, "good math builders record no error");
}

/* The CPU backend says it supports what the builders make, and refuses
   a node whose shape was tampered with.  */
static void
check_supports (void)
{
  tsr_backend *dev = ot_backend ();
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 6, 3, 2);
  tsr_tensor *nodes[] = {
    tsr_sqr (ctx, a), tsr_ln (ctx, a), tsr_gelu_quick (ctx, a),
    tsr_clamp (ctx, a, 0, 1), tsr_swiglu (ctx, a, a), tsr_geglu (ctx, a, NULL),
    tsr_sum (ctx, a), tsr_mean (ctx, a), tsr_argmax (ctx, a),
    tsr_repeat (ctx, a, tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 12, 3, 4)),
    tsr_concat (ctx, a, a, 2), tsr_diag_mask_inf (ctx, a, 1),
    tsr_pad (ctx, a, 1, 0, 1, 0), tsr_arange (ctx, 0, 9, 2),
    tsr_upscale (ctx, a, 2), tsr_argsort (ctx, a, TSR_SORT_ASC),
    tsr_top_k (ctx, a, 2),
  };
  enum { N = sizeof nodes / sizeof nodes[0] };
  int all = dev != NULL;
  for (int k = 0; k < N && dev; k++)
    if (!nodes[k] || !tsr_backend_supports_op (dev, nodes[k]))
      {
        all = 0;
        printf ("note: node %d (%s) not supported\n", k,
                nodes[k] ? tsr_op_name (nodes[k]->op) : "NULL");
      }
  CHECK (all, "the cpu device supports every math op the builders make");
  int refused = dev != NULL;
  for (int k = 0; k < N && dev; k++)
    if (nodes[k] && nodes[k]->op != TSR_OP_ARANGE)
      {
        nodes[k]->ne[0] += 1;   /* no kernel handles the result now */
        if (tsr_backend_supports_op (dev, nodes[k]))
          {
            refused = 0;
            printf ("note: %s with a wrong shape is supported\n",
                    tsr_op_name (nodes[k]->op));
          }
        nodes[k]->ne[0] -= 1;
      }
  CHECK (refused, "the cpu device refuses math nodes of a wrong shape");
  tsr_context_free (ctx);
  if (dev)
    tsr_backend_free (dev);
}

int
main (void)
{
  tsr_context *ctx = tsr_context_new (true);
  check_types (ctx);
  check_shapes_and_args (ctx);
  check_propagation (ctx);
  check_nodes (ctx);
  tsr_context_free (ctx);
  check_supports ();
  return TSR_TEST_EXIT ();
}
