/* Builders refuse bad operands: NULL, the status the headers give
   (TSR_ERR_SHAPE for shapes, TSR_ERR_TYPE for types) and a message that
   names the operation; a NULL operand keeps the first error; graphs of
   NULL results fail to build.  No backend needed.  */
#include "ops-test.h"

/* R must be NULL with STATUS recorded and a message containing WORD.  */
static void
expect_error (tsr_tensor *r, tsr_status status, const char *word,
              const char *desc)
{
  char msg[400];
  const char *err = tsr_last_error ();
  int ok = r == NULL && tsr_last_status () == status && err
           && strstr (err, word) != NULL;
  snprintf (msg, sizeof msg, "result %p, status %d (want %d), message \"%s\""
            " (want it to mention \"%s\")", (void *) r, (int) tsr_last_status (),
            (int) status, err ? err : "(null)", word);
  ot_report (ok, desc, msg);
}

/* R must be NULL with some error recorded.  */
static void
expect_null (tsr_tensor *r, const char *desc)
{
  char msg[300];
  snprintf (msg, sizeof msg, "result %p, status %d, message \"%s\"",
            (void *) r, (int) tsr_last_status (), tsr_last_error ());
  ot_report (r == NULL && tsr_last_status () != TSR_OK
             && tsr_last_error ()[0] != 0, desc, msg);
}

static void
check_binary (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 3);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 3, 3);
  tsr_tensor *big = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 6);
  tsr_tensor *i = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 4, 3);
  tsr_clear_error ();
  expect_error (tsr_add (ctx, a, b), TSR_ERR_SHAPE, "add",
                "add [4,3] + [3,3] is a shape error naming add");
  expect_error (tsr_sub (ctx, a, big), TSR_ERR_SHAPE, "sub",
                "sub [4,3] - [4,6] (b larger) is a shape error naming sub");
  expect_error (tsr_mul (ctx, a, tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 4, 3, 2)),
                TSR_ERR_SHAPE, "mul",
                "mul [4,3] * [4,3,2] is a shape error naming mul");
  expect_error (tsr_div (ctx, a, tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 3)),
                TSR_ERR_SHAPE, "div",
                "div [4,3] / [3] is a shape error naming div");
  expect_error (tsr_add (ctx, i, i), TSR_ERR_TYPE, "add",
                "add of i32 tensors is a type error naming add");
  CHECK (tsr_add (ctx, a, tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 2, 1)) != NULL,
         "add [4,3] + [2,1] broadcasts");
}

static void
check_mul_mat (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 64, 8);
  tsr_clear_error ();
  expect_error (tsr_mul_mat (ctx, a, tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 32, 3)),
                TSR_ERR_SHAPE, "mul_mat",
                "mul_mat with k 64 against 32 is a shape error naming mul_mat");
  tsr_tensor *a3 = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 64, 8, 4);
  expect_error (tsr_mul_mat (ctx, a3, tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 64, 3, 6)),
                TSR_ERR_SHAPE, "mul_mat",
                "mul_mat with a2 4 and b2 6 is a shape error naming mul_mat");
  tsr_tensor *a4 = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 64, 8, 1, 3);
  expect_null (tsr_mul_mat (ctx, a4, tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 64, 3, 1, 2)),
               "mul_mat with a3 3 and b3 2 is refused");
  expect_null (tsr_mul_mat (ctx, a, tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 64, 3)),
               "mul_mat with i32 activations is refused");
  tsr_tensor *r = tsr_mul_mat (ctx, tsr_new_tensor_4d (ctx, TSR_TYPE_Q4_0, 64, 8, 2, 1),
                               tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 64, 5, 6, 3));
  CHECK (r && r->type == TSR_TYPE_F32 && r->ne[0] == 8 && r->ne[1] == 5
         && r->ne[2] == 6 && r->ne[3] == 3 && r->op == TSR_OP_MUL_MAT,
         "mul_mat q4_0 [64,8,2,1] x [64,5,6,3] is f32 [8,5,6,3]");
}

static void
check_views (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 6, 4);
  tsr_clear_error ();
  expect_error (tsr_reshape_2d (ctx, a, 5, 5), TSR_ERR_SHAPE, "reshape",
                "reshape of 24 elements to [5,5] is a shape error naming reshape");
  expect_null (tsr_reshape_1d (ctx, a, 23), "reshape of 24 elements to [23] is refused");
  expect_null (tsr_reshape_2d (ctx, tsr_transpose (ctx, a), 4, 6),
               "reshape of a transposed (non-contiguous) view is refused");
  expect_null (tsr_view_2d (ctx, a, 6, 5, a->nb[1], 0),
               "view_2d of 5 rows of a 4-row tensor is refused");
  expect_null (tsr_view_1d (ctx, a, 4, 22 * sizeof (float)),
               "view_1d ending past its source is refused");
  expect_null (tsr_permute (ctx, a, 1, 1, 2, 3), "permute (1,1,2,3) is refused");
  tsr_tensor *q = tsr_new_tensor_2d (ctx, TSR_TYPE_Q8_0, 64, 2);
  expect_null (tsr_reshape_2d (ctx, q, 16, 8),
               "reshape of q8_0 to rows of 16 (not whole blocks) is refused");
}

static void
check_other_ops (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 8, 5);
  tsr_tensor *i = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 8, 5);
  tsr_clear_error ();
  expect_error (tsr_get_rows (ctx, a, tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 3)),
                TSR_ERR_TYPE, "get_rows",
                "get_rows with f32 indices is a type error naming get_rows");
  expect_null (tsr_get_rows (ctx, tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 8, 5, 2),
                             tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 3, 3)),
               "get_rows with 3 index batches for 2 source batches is refused");
  expect_error (tsr_soft_max (ctx, a, tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 7, 5), 1.0f),
                TSR_ERR_SHAPE, "soft_max",
                "soft_max with a mask row of 7 for rows of 8 is a shape error");
  expect_null (tsr_soft_max (ctx, a, tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 8, 4), 1.0f),
               "soft_max with a mask of 4 rows for 5 rows is refused");
  expect_null (tsr_soft_max (ctx, a, tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 8, 5), 1.0f),
               "soft_max with an i32 mask is refused");
  expect_null (tsr_cpy (ctx, a, tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 8, 4)),
               "cpy of 40 elements into 32 is refused");
  expect_null (tsr_cast (ctx, a, TSR_TYPE_COUNT), "cast to an invalid type is refused");
  expect_null (tsr_rms_norm (ctx, i, 1e-5f), "rms_norm of i32 is refused");
  expect_null (tsr_silu (ctx, i), "silu of i32 is refused");
  expect_null (tsr_cast (ctx, tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 33, 2),
                         TSR_TYPE_Q8_0),
               "cast of rows of 33 to q8_0 (not whole blocks) is refused");
}

static void
check_new_tensor (tsr_context *ctx)
{
  int64_t ne[5] = { 2, 2, 2, 2, 2 };
  tsr_clear_error ();
  expect_null (tsr_new_tensor (ctx, TSR_TYPE_F32, 0, ne), "a tensor of 0 dims is refused");
  expect_null (tsr_new_tensor (ctx, TSR_TYPE_F32, 5, ne), "a tensor of 5 dims is refused");
  expect_null (tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, -1),
               "a tensor with ne1 -1 is refused");
  expect_null (tsr_new_tensor_1d (ctx, TSR_TYPE_COUNT, 4),
               "a tensor of an invalid type is refused");
  expect_null (tsr_new_tensor_1d (ctx, TSR_TYPE_Q4_0, 48),
               "a q4_0 tensor with rows of 48 is refused");
}

/* A NULL operand gives NULL and keeps the first error.  */
static void
check_propagation (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 3);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 3, 3);
  tsr_clear_error ();
  CHECK (tsr_last_status () == TSR_OK && tsr_last_error ()[0] == 0,
         "tsr_clear_error leaves no error");
  tsr_tensor *x = tsr_add (ctx, a, b);
  char first[300];
  snprintf (first, sizeof first, "%s", tsr_last_error ());
  tsr_tensor *y = tsr_silu (ctx, x);
  tsr_tensor *z = tsr_mul_mat (ctx, a, tsr_scale (ctx, y, 2.0f));
  tsr_tensor *w = tsr_soft_max (ctx, tsr_rms_norm (ctx, tsr_cont (ctx, z), 1e-5f),
                                NULL, 1.0f);
  CHECK (x == NULL && y == NULL && z == NULL && w == NULL,
         "a chain of builders after a failure gives NULL");
  CHECK (tsr_last_status () == TSR_ERR_SHAPE && strcmp (first, tsr_last_error ()) == 0,
         "a chain of builders keeps the first error (\"%s\", now \"%s\")",
         first, tsr_last_error ());
  tsr_graph *g = tsr_graph_new (ctx);
  int rc = tsr_graph_build (g, w);
  CHECK (rc != TSR_OK && tsr_graph_n_nodes (g) == 0,
         "building a graph of a NULL result fails (status %d)", rc);
  CHECK (strcmp (first, tsr_last_error ()) == 0,
         "building a graph of a NULL result keeps the first error");
  expect_null (tsr_get_rows (ctx, NULL, NULL), "get_rows of NULL operands gives NULL");
}

/* Successful builders record what the graph needs.  */
static void
check_graph (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 3);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 1);
  tsr_tensor *s = tsr_add (ctx, a, b);
  tsr_tensor *r = tsr_gelu (ctx, tsr_scale (ctx, s, 0.5f));
  CHECK (s && s->op == TSR_OP_ADD && s->src[0] == a && s->src[1] == b
         && tsr_same_shape (s, a) && s->type == TSR_TYPE_F32,
         "add records op, sources and a's shape");
  CHECK (r && r->op == TSR_OP_GELU && strcmp (tsr_op_name (r->op), "gelu") == 0
         && tsr_op_get_kind (TSR_OP_GELU) == TSR_OP_KIND_UNARY
         && tsr_op_get_kind (TSR_OP_ADD) == TSR_OP_KIND_BINARY,
         "gelu is a unary op named gelu, add binary");
  tsr_graph *g = tsr_graph_new (ctx);
  int rc = tsr_graph_build (g, r);
  CHECK (rc == TSR_OK && tsr_graph_n_nodes (g) == 3 && tsr_graph_n_leafs (g) == 2
         && tsr_graph_node (g, -1) == r && tsr_graph_node (g, 0) == s,
         "graph of gelu (scale (a + b)) has 3 nodes in order and 2 leafs");
  CHECK (r && (r->flags & TSR_FLAG_OUTPUT), "a graph result is marked as output");
}

int
main (void)
{
  tsr_context *ctx = tsr_context_new (true);
  check_binary (ctx);
  check_mul_mat (ctx);
  check_views (ctx);
  check_other_ops (ctx);
  check_new_tensor (ctx);
  check_propagation (ctx);
  check_graph (ctx);
  tsr_context_free (ctx);
  tsr_clear_error ();
  tsr_backend *be = tsr_backend_init_by_name ("no-such-backend", NULL);
  CHECK (be == NULL && tsr_last_error ()[0] != 0,
         "a backend of an unknown name is NULL with a message");
  if (be)
    tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
