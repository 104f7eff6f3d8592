/* The builders of rope, set_rows, flash_attn_ext, mul_mat_id, im2col
   and pool_2d refuse bad operands and parameters with NULL, the status
   ops.h promises (TSR_ERR_SHAPE, TSR_ERR_TYPE, TSR_ERR_INVALID_ARG) and
   a message naming the op; NULL operands propagate keeping the first
   error; good operands give the documented result shapes and types.
   No backend needed.  */
#include "nn-test.h"

static void
expect_error (tsr_tensor *r, tsr_status status, const char *word,
              const char *desc)
{
  char msg[500];
  const char *err = tsr_last_error ();
  int ok = r == NULL && tsr_last_status () == status && err
           && strstr (err, word) != NULL;
  snprintf (msg, sizeof msg, "status %d (want %d), message \"%s\"",
            (int) tsr_last_status (), (int) status, err ? err : "(null)");
  ot_report (ok, desc, msg);
  tsr_clear_error ();
}

static void
expect_shape (tsr_tensor *r, tsr_type type, int64_t n0, int64_t n1,
              int64_t n2, int64_t n3, const char *desc)
{
  char msg[300];
  snprintf (msg, sizeof msg, "%s", r ? "wrong shape or type"
                                     : tsr_last_error ());
  ot_report (r && r->type == type && r->ne[0] == n0 && r->ne[1] == n1
             && r->ne[2] == n2 && r->ne[3] == n3, desc, msg);
  tsr_clear_error ();
}

/* A NULL operand gives NULL and keeps the earlier error.  */
static void
expect_kept (tsr_tensor *r, const char *desc)
{
  ot_report (r == NULL && tsr_last_status () == TSR_ERR_NO_MEMORY
             && strcmp (tsr_last_error (), "earlier") == 0, desc,
             tsr_last_error ());
  tsr_clear_error ();
}

static void
check_rope (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 8, 2, 5, 1);
  tsr_tensor *pos = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 5);
  expect_shape (tsr_rope (ctx, a, pos, 6, TSR_ROPE_NEOX, 1e4f, 1), TSR_TYPE_F32,
                8, 2, 5, 1, "rope [8,2,5] gives f32 [8,2,5]");
  expect_error (tsr_rope (ctx, a, tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 4), 8,
                          TSR_ROPE_NORMAL, 1e4f, 1), TSR_ERR_SHAPE, "rope",
                "rope with 4 positions for 5 tokens is a shape error");
  expect_error (tsr_rope (ctx, a, pos, 7, TSR_ROPE_NORMAL, 1e4f, 1),
                TSR_ERR_SHAPE, "rope", "rope with odd n_dims is a shape error");
  expect_error (tsr_rope (ctx, a, pos, 10, TSR_ROPE_NORMAL, 1e4f, 1),
                TSR_ERR_SHAPE, "rope",
                "rope with n_dims > head_dim is a shape error");
  expect_error (tsr_rope (ctx, a, tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 5), 8,
                          TSR_ROPE_NORMAL, 1e4f, 1), TSR_ERR_TYPE, "rope",
                "rope with f32 positions is a type error");
  expect_error (tsr_rope (ctx, tsr_new_tensor_4d (ctx, TSR_TYPE_F16, 8, 2, 5,
                                                  1), pos, 8,
                          TSR_ROPE_NORMAL, 1e4f, 1), TSR_ERR_TYPE, "rope",
                "rope of f16 is a type error");
  expect_error (tsr_rope (ctx, a, pos, 8, (enum tsr_rope_mode) 5, 1e4f, 1),
                TSR_ERR_INVALID_ARG, "rope", "rope with mode 5 is refused");
  expect_error (tsr_rope (ctx, a, pos, 8, TSR_ROPE_NORMAL, 0, 1),
                TSR_ERR_INVALID_ARG, "rope", "rope with freq_base 0 is refused");
  tsr_set_error (TSR_ERR_NO_MEMORY, "earlier");
  expect_kept (tsr_rope (ctx, a, NULL, 8, TSR_ROPE_NORMAL, 1e4f, 1),
               "rope of a NULL position tensor keeps the first error");
}

static void
check_set_rows (tsr_context *ctx)
{
  tsr_tensor *dst = tsr_new_tensor_3d (ctx, TSR_TYPE_F16, 6, 10, 2);
  tsr_tensor *src = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 6, 3, 4);
  tsr_tensor *idx = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 3, 4);
  tsr_tensor *r = tsr_set_rows (ctx, dst, src, idx);
  expect_shape (r, TSR_TYPE_F16, 6, 10, 2, 1,
                "set_rows gives a tensor shaped like dst");
  CHECK (r && tsr_is_view (r) && r->data == dst->data && r->src[0] == dst,
         "set_rows result is a view of dst");
  expect_error (tsr_set_rows (ctx, dst, tsr_new_tensor_3d (ctx, TSR_TYPE_F32,
                                                           5, 3, 4), idx),
                TSR_ERR_SHAPE, "set_rows",
                "set_rows with rows of another length is a shape error");
  expect_error (tsr_set_rows (ctx, dst, src,
                              tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 2, 4)),
                TSR_ERR_SHAPE, "set_rows",
                "set_rows with too few indices is a shape error");
  expect_error (tsr_set_rows (ctx, dst, tsr_new_tensor_3d (ctx, TSR_TYPE_F32,
                                                           6, 3, 3),
                              tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 3, 3)),
                TSR_ERR_SHAPE, "set_rows",
                "set_rows of 3 batches into 2 is a shape error");
  expect_error (tsr_set_rows (ctx, tsr_new_tensor_2d (ctx, TSR_TYPE_Q8_0, 64,
                                                      4),
                              tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 64, 2),
                              tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 2)),
                TSR_ERR_TYPE, "set_rows",
                "set_rows with f32 indices is a type error");
  expect_error (tsr_set_rows (ctx, dst, tsr_new_tensor_3d (ctx, TSR_TYPE_F16,
                                                           6, 3, 4), idx),
                TSR_ERR_TYPE, "set_rows",
                "set_rows of f16 rows is a type error");
  expect_error (tsr_set_rows (ctx, tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 6,
                                                      4), src, idx),
                TSR_ERR_TYPE, "set_rows",
                "set_rows into i32 is a type error");
  tsr_set_error (TSR_ERR_NO_MEMORY, "earlier");
  expect_kept (tsr_set_rows (ctx, NULL, src, idx),
               "set_rows into a NULL dst keeps the first error");
}

static void
check_attn (tsr_context *ctx)
{
  tsr_tensor *q = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 16, 5, 4, 2);
  tsr_tensor *k = tsr_new_tensor_4d (ctx, TSR_TYPE_F16, 16, 9, 2, 2);
  tsr_tensor *v = tsr_new_tensor_4d (ctx, TSR_TYPE_F16, 12, 9, 2, 2);
  tsr_tensor *m = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, 9, 8);
  expect_shape (tsr_flash_attn_ext (ctx, q, k, v, m, 0.25f), TSR_TYPE_F32, 12,
                5, 4, 2, "flash_attn_ext gives f32 [d_v, n_q, n_head, b]");
  expect_shape (tsr_flash_attn_ext (ctx, q, k, v, NULL, 0.25f), TSR_TYPE_F32,
                12, 5, 4, 2, "flash_attn_ext without a mask");
  expect_error (tsr_flash_attn_ext (ctx, q, tsr_new_tensor_4d (ctx,
                                                               TSR_TYPE_F16,
                                                               16, 9, 3, 2),
                                    tsr_new_tensor_4d (ctx, TSR_TYPE_F16, 12,
                                                       9, 3, 2), NULL, 1),
                TSR_ERR_SHAPE, "flash_attn_ext",
                "flash_attn_ext with 4 heads over 3 kv heads is a shape "
                "error");
  expect_error (tsr_flash_attn_ext (ctx, q, k,
                                    tsr_new_tensor_4d (ctx, TSR_TYPE_F16, 12,
                                                       8, 2, 2), NULL, 1),
                TSR_ERR_SHAPE, "flash_attn_ext",
                "flash_attn_ext with fewer values than keys is a shape error");
  expect_error (tsr_flash_attn_ext (ctx, q, tsr_new_tensor_4d (ctx,
                                                               TSR_TYPE_F16,
                                                               8, 9, 2, 2),
                                    v, NULL, 1),
                TSR_ERR_SHAPE, "flash_attn_ext",
                "flash_attn_ext with keys of another size is a shape error");
  expect_error (tsr_flash_attn_ext (ctx, q, k, v,
                                    tsr_new_tensor_2d (ctx, TSR_TYPE_F16, 9,
                                                       4), 1),
                TSR_ERR_SHAPE, "flash_attn_ext",
                "flash_attn_ext with a mask of too few rows is a shape error");
  expect_error (tsr_flash_attn_ext (ctx, q, k, v,
                                    tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 9,
                                                       5, 3), 1),
                TSR_ERR_SHAPE, "flash_attn_ext",
                "flash_attn_ext with a mask of 3 heads is a shape error");
  expect_error (tsr_flash_attn_ext (ctx, tsr_new_tensor_4d (ctx, TSR_TYPE_F16,
                                                            16, 5, 4, 2),
                                    k, v, NULL, 1),
                TSR_ERR_TYPE, "flash_attn_ext",
                "flash_attn_ext with f16 q is a type error");
  expect_error (tsr_flash_attn_ext (ctx, q, tsr_new_tensor_4d (ctx,
                                                               TSR_TYPE_Q8_0,
                                                               32, 9, 2, 2),
                                    v, NULL, 1),
                TSR_ERR_TYPE, "flash_attn_ext",
                "flash_attn_ext with q8_0 keys is a type error");
  tsr_set_error (TSR_ERR_NO_MEMORY, "earlier");
  expect_kept (tsr_flash_attn_ext (ctx, q, k, NULL, m, 1),
               "flash_attn_ext of a NULL v keeps the first error");
}

static void
check_mmid (tsr_context *ctx)
{
  tsr_tensor *as = tsr_new_tensor_3d (ctx, TSR_TYPE_Q4_0, 64, 7, 5);
  tsr_tensor *b = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 64, 1, 6);
  tsr_tensor *ids = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 2, 6);
  expect_shape (tsr_mul_mat_id (ctx, as, b, ids), TSR_TYPE_F32, 7, 2, 6, 1,
                "mul_mat_id gives f32 [m, n_used, n_tokens]");
  expect_shape (tsr_mul_mat_id (ctx, as, tsr_new_tensor_3d (ctx, TSR_TYPE_F32,
                                                            64, 2, 6), ids),
                TSR_TYPE_F32, 7, 2, 6, 1, "mul_mat_id with one b row per slot");
  expect_error (tsr_mul_mat_id (ctx, as, tsr_new_tensor_3d (ctx, TSR_TYPE_F32,
                                                            64, 3, 6), ids),
                TSR_ERR_SHAPE, "mul_mat_id",
                "mul_mat_id with 3 b rows for 2 slots is a shape error");
  expect_error (tsr_mul_mat_id (ctx, as, tsr_new_tensor_3d (ctx, TSR_TYPE_F32,
                                                            32, 1, 6), ids),
                TSR_ERR_SHAPE, "mul_mat_id",
                "mul_mat_id with other inner sizes is a shape error");
  expect_error (tsr_mul_mat_id (ctx, as, b,
                                tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 2, 5)),
                TSR_ERR_SHAPE, "mul_mat_id",
                "mul_mat_id with ids for 5 of 6 tokens is a shape error");
  expect_error (tsr_mul_mat_id (ctx, as, b,
                                tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 2, 6)),
                TSR_ERR_TYPE, "mul_mat_id",
                "mul_mat_id with f32 ids is a type error");
  expect_error (tsr_mul_mat_id (ctx, tsr_new_tensor_3d (ctx, TSR_TYPE_I32, 64,
                                                        7, 5), b, ids),
                TSR_ERR_TYPE, "mul_mat_id",
                "mul_mat_id with i32 weights is a type error");
  tsr_set_error (TSR_ERR_NO_MEMORY, "earlier");
  expect_kept (tsr_mul_mat_id (ctx, as, b, NULL),
               "mul_mat_id of NULL ids keeps the first error");
}

static void
check_im2col (tsr_context *ctx)
{
  tsr_tensor *in = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 10, 8, 3, 2);
  tsr_tensor *k = tsr_new_tensor_4d (ctx, TSR_TYPE_F16, 3, 3, 3, 5);
  /* OW = (10 + 2 - 2 * 2 - 1) / 2 + 1 = 4, OH = (8 + 0 - 2 - 1) / 1 + 1.  */
  expect_shape (tsr_im2col (ctx, k, in, 2, 1, 1, 0, 2, 1, true, TSR_TYPE_F16),
                TSR_TYPE_F16, 27, 4, 6, 2, "im2col 2-D output shape");
  tsr_tensor *in1 = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 10, 3, 2);
  tsr_tensor *k1 = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 4, 3, 5);
  expect_shape (tsr_im2col (ctx, k1, in1, 3, 0, 0, 0, 1, 0, false,
                            TSR_TYPE_F32), TSR_TYPE_F32, 12, 3, 2, 1,
                "im2col 1-D output shape");
  expect_error (tsr_im2col (ctx, tsr_new_tensor_4d (ctx, TSR_TYPE_F16, 3, 3,
                                                    2, 5), in, 1, 1, 0, 0, 1,
                            1, true, TSR_TYPE_F32),
                TSR_ERR_SHAPE, "im2col",
                "im2col with other channel counts is a shape error");
  expect_error (tsr_im2col (ctx, tsr_new_tensor_4d (ctx, TSR_TYPE_F16, 11, 3,
                                                    3, 5), in, 1, 1, 0, 0, 1,
                            1, true, TSR_TYPE_F32),
                TSR_ERR_SHAPE, "im2col",
                "im2col with a kernel wider than the input is a shape error");
  expect_error (tsr_im2col (ctx, k, in, 0, 1, 0, 0, 1, 1, true, TSR_TYPE_F32),
                TSR_ERR_INVALID_ARG, "im2col", "im2col with stride 0 is refused");
  expect_error (tsr_im2col (ctx, k, in, 1, 1, 0, 0, 1, 1, true,
                            TSR_TYPE_Q8_0),
                TSR_ERR_TYPE, "im2col", "im2col to q8_0 is a type error");
  expect_error (tsr_im2col (ctx, k, tsr_new_tensor_4d (ctx, TSR_TYPE_F16, 10,
                                                       8, 3, 2), 1, 1, 0, 0,
                            1, 1, true, TSR_TYPE_F32),
                TSR_ERR_TYPE, "im2col", "im2col of an f16 input is a type error");
  tsr_set_error (TSR_ERR_NO_MEMORY, "earlier");
  expect_kept (tsr_im2col (ctx, NULL, in, 1, 1, 0, 0, 1, 1, true,
                           TSR_TYPE_F32),
               "im2col of a NULL kernel keeps the first error");
}

static void
check_pool (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 9, 7, 3, 2);
  expect_shape (tsr_pool_2d (ctx, a, TSR_POOL_AVG, 3, 2, 2, 2, 1, 1),
                TSR_TYPE_F32, 5, 4, 3, 2, "pool_2d output shape");
  expect_error (tsr_pool_2d (ctx, a, TSR_POOL_MAX, 10, 2, 1, 1, 0, 0),
                TSR_ERR_SHAPE, "pool_2d",
                "pool_2d with a window wider than the input is a shape error");
  expect_error (tsr_pool_2d (ctx, a, TSR_POOL_MAX, 2, 2, 1, 1, 2, 0),
                TSR_ERR_INVALID_ARG, "pool_2d",
                "pool_2d with padding >= kernel size is refused");
  expect_error (tsr_pool_2d (ctx, a, (enum tsr_pool_op) 7, 2, 2, 1, 1, 0, 0),
                TSR_ERR_INVALID_ARG, "pool_2d",
                "pool_2d with an unknown op is refused");
  expect_error (tsr_pool_2d (ctx, tsr_new_tensor_2d (ctx, TSR_TYPE_F16, 4, 4),
                             TSR_POOL_MAX, 2, 2, 1, 1, 0, 0),
                TSR_ERR_TYPE, "pool_2d", "pool_2d of f16 is a type error");
  tsr_set_error (TSR_ERR_NO_MEMORY, "earlier");
  expect_kept (tsr_pool_2d (ctx, NULL, TSR_POOL_MAX, 2, 2, 1, 1, 0, 0),
               "pool_2d of NULL keeps the first error");
}

int
main (void)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_clear_error ();
  check_rope (ctx);
  check_set_rows (ctx);
  check_attn (ctx);
  check_mmid (ctx);
  check_im2col (ctx);
  check_pool (ctx);
  tsr_context_free (ctx);
  return TSR_TEST_EXIT ();
}
