/* reshape, view, permute and transpose: shapes and byte strides as the
   definitions give them (a contiguous f32 [n0, n1, ...] has nb0 = 4,
   nb[i] = nb[i-1] ne[i-1]), shared memory, element access through the
   strides, and views used as operands of computations; views at
   misaligned offsets or strides refused.  */
#include "ops-test.h"

static int
same4 (const int64_t *got, int64_t a, int64_t b, int64_t c, int64_t d)
{
  return got[0] == a && got[1] == b && got[2] == c && got[3] == d;
}

static int
strides4 (const size_t *got, size_t a, size_t b, size_t c, size_t d)
{
  return got[0] == a && got[1] == b && got[2] == c && got[3] == d;
}

#define CHECK_META(t, desc, n0, n1, n2, n3, s0, s1, s2, s3)                 \
  CHECK ((t) && same4 ((t)->ne, n0, n1, n2, n3)                            \
         && strides4 ((t)->nb, s0, s1, s2, s3),                            \
         "%s has ne [%d,%d,%d,%d] nb [%d,%d,%d,%d]", desc, n0, n1, n2, n3,  \
         s0, s1, s2, s3)

static void
check_reshape (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 24);
  for (int i = 0; i < 24; i++)
    ((float *) a->data)[i] = (float) i;
  CHECK_META (a, "f32 [24]", 24, 1, 1, 1, 4, 96, 96, 96);
  tsr_tensor *r2 = tsr_reshape_2d (ctx, a, 6, 4);
  CHECK_META (r2, "reshape_2d (6, 4)", 6, 4, 1, 1, 4, 24, 96, 96);
  tsr_tensor *r3 = tsr_reshape_3d (ctx, a, 2, 3, 4);
  CHECK_META (r3, "reshape_3d (2, 3, 4)", 2, 3, 4, 1, 4, 8, 24, 96);
  tsr_tensor *r4 = tsr_reshape_4d (ctx, r2, 2, 2, 3, 2);
  CHECK_META (r4, "reshape_4d (2, 2, 3, 2) of a reshape", 2, 2, 3, 2, 4, 8, 16, 48);
  tsr_tensor *r1 = tsr_reshape_1d (ctx, r3, 24);
  CHECK_META (r1, "reshape_1d (24) of a reshape", 24, 1, 1, 1, 4, 96, 96, 96);
  CHECK (r2 && r2->data == a->data && tsr_is_view (r2) && r2->view_src == a
         && r2->view_offs == 0, "reshape shares its source's memory");
  CHECK (r4 && r4->data == a->data && tsr_is_view (r4),
         "reshape of a reshape shares the first source's memory");
  CHECK (r3 && ot_get (r3, 1, 2, 3, 0) == 1 + 2 * 2 + 3 * 6,
         "reshape_3d element (1,2,3) is flat element 23");
  CHECK (r2 && r2->op == TSR_OP_RESHAPE && r2->src[0] == a,
         "reshape records its op and source");
  CHECK (r4 && tsr_nelements (r4) == 24 && tsr_nrows (r4) == 12
         && tsr_n_dims (r4) == 4 && tsr_n_dims (r1) == 1,
         "reshape_4d counts 24 elements in 12 rows, 4 dims");
  tsr_tensor *q = tsr_new_tensor_2d (ctx, TSR_TYPE_Q8_0, 64, 3);
  tsr_tensor *rq = tsr_reshape_2d (ctx, q, 32, 6);
  CHECK_META (rq, "reshape_2d (32, 6) of q8_0 [64,3]", 32, 6, 1, 1, 34, 34,
              204, 204);
}

static void
check_views (tsr_context *ctx)
{
  /* a: f32 [8,5,3], value 100 i2 + 10 i1 + i0.  */
  tsr_tensor *a = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 8, 5, 3);
  OT_FOR_EACH (a, i0, i1, i2, i3)
    ot_set (a, i0, i1, i2, i3, 100 * i2 + 10 * i1 + i0);
  tsr_tensor *v1 = tsr_view_1d (ctx, a, 5, 12);
  CHECK (v1 && v1->data == (char *) a->data + 12 && v1->ne[0] == 5
         && v1->nb[0] == 4 && ot_get (v1, 0, 0, 0, 0) == 3
         && ot_get (v1, 4, 0, 0, 0) == 7,
         "view_1d of 5 at byte 12 starts at element 3");
  /* Every other column of rows 1..3: nb1 = 2 rows.  */
  tsr_tensor *v2 = tsr_view_2d (ctx, a, 4, 2, 2 * a->nb[1], a->nb[1] + 8);
  CHECK (v2 && v2->ne[0] == 4 && v2->ne[1] == 2 && v2->nb[0] == 4
         && v2->nb[1] == 64 && ot_get (v2, 3, 1, 0, 0) == 10 * 3 + 2 + 3,
         "view_2d with row stride 2 rows sees rows 1 and 3 from column 2");
  CHECK (v2 && !tsr_is_contiguous (v2) && tsr_is_rows_contiguous (v2)
         && tsr_is_view (v2), "a strided view_2d has contiguous rows only");
  CHECK (v2 && tsr_nbytes (v2) == 3 * 4 + 64 + 4,
         "nbytes of a view_2d spans first to last element");
  tsr_tensor *v3 = tsr_view_3d (ctx, a, 2, 2, 2, a->nb[1], a->nb[2], 4);
  CHECK (v3 && ot_get (v3, 1, 1, 1, 0) == 100 + 10 + 2,
         "view_3d element (1,1,1) at byte 4 is a (2,1,1)");
  tsr_tensor *v4 = tsr_view_4d (ctx, a, 3, 1, 1, 2, a->nb[1], a->nb[2],
                                2 * a->nb[2], a->nb[1] * 4);
  CHECK (v4 && v4->ne[3] == 2 && v4->nb[3] == 2 * a->nb[2]
         && ot_get (v4, 2, 0, 0, 1) == 200 + 40 + 2,
         "view_4d with dimension 3 stepping two planes");
  tsr_tensor *vv = tsr_view_1d (ctx, v1, 2, 8);
  CHECK (vv && vv->data == (char *) a->data + 20 && ot_get (vv, 1, 0, 0, 0) == 6,
         "a view of a view adds the offsets");
  CHECK (tsr_view_1d (ctx, a, 121, 0) == NULL,
         "view_1d past the end of its source is refused");
  CHECK (tsr_view_2d (ctx, a, 8, 2, a->nb[2], 2 * a->nb[2]) == NULL,
         "view_2d whose last row passes the end is refused");
}

static void
check_permute (tsr_context *ctx)
{
  tsr_tensor *a = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 2, 3, 4, 5);
  OT_FOR_EACH (a, i0, i1, i2, i3)
    ot_set (a, i0, i1, i2, i3, 1000 * i3 + 100 * i2 + 10 * i1 + i0);
  tsr_tensor *t = tsr_transpose (ctx, a);
  CHECK_META (t, "transpose of f32 [2,3,4,5]", 3, 2, 4, 5, 8, 4, 24, 96);
  CHECK (t && !tsr_is_contiguous (t) && t->data == a->data
         && ot_get (t, 2, 1, 3, 4) == 4321, "transposed element (2,1,3,4) is"
         " a (1,2,3,4)");
  tsr_tensor *tt = tsr_transpose (ctx, t);
  CHECK (tt && tsr_is_contiguous (tt) && tsr_same_shape (tt, a),
         "transposing twice gives a contiguous tensor of the first shape");
  /* Dimension i goes to axis_i: (1,2,3,0) makes [5,2,3,4].  */
  tsr_tensor *p = tsr_permute (ctx, a, 1, 2, 3, 0);
  CHECK_META (p, "permute (1,2,3,0) of f32 [2,3,4,5]", 5, 2, 3, 4, 96, 4, 8, 24);
  CHECK (p && ot_get (p, 4, 1, 2, 3) == 4321,
         "permuted element (4,1,2,3) is a (1,2,3,4)");
  tsr_tensor *p2 = tsr_permute (ctx, a, 0, 2, 1, 3);
  CHECK (p2 && !tsr_is_contiguous (p2) && tsr_is_rows_contiguous (p2)
         && p2->op == TSR_OP_PERMUTE,
         "swapping dimensions 1 and 2 keeps rows contiguous");
  tsr_tensor *id = tsr_permute (ctx, a, 0, 1, 2, 3);
  CHECK (id && tsr_is_contiguous (id) && tsr_same_shape (id, a),
         "the identity permutation is contiguous");
  CHECK (tsr_permute (ctx, a, 0, 0, 1, 2) == NULL,
         "permute with a repeated axis is refused");
  CHECK (tsr_permute (ctx, a, 0, 1, 2, 4) == NULL,
         "permute with axis 4 is refused");

  /* Element access by flat index follows the strides.  */
  tsr_tensor *m = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 3);
  for (int i = 0; i < 12; i++)
    ((float *) m->data)[i] = (float) i;
  tsr_tensor *mt = tsr_transpose (ctx, m);
  int ok = mt != NULL;
  for (int j = 0; ok && j < 12; j++)   /* mt (j % 3, j / 3) = m (j / 3, j % 3) */
    ok = tsr_get_f32_1d (mt, j) == (float) ((j % 3) * 4 + j / 3);
  CHECK (ok, "tsr_get_f32_1d on a transposed view follows its strides");
  if (mt)
    tsr_set_f32_1d (mt, 1, -5.0f);   /* mt (1, 0) = m (0, 1) = flat 4 */
  CHECK (((float *) m->data)[4] == -5.0f,
         "tsr_set_f32_1d on a transposed view writes its source");
}

/* Views as operands of computations.  */
static void
check_views_in_ops (tsr_backend *be)
{
  const char *desc;
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 12, 10);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 12, 10);
  ot_fill (a, -1.0f, 1.0f);
  ot_fill (b, -1.0f, 1.0f);
  double want[120];

  /* 5x4 blocks: a at (3, 2), b at (0, 6).  */
  desc = "add of two 2d views at different offsets (rel err <= 1e-6)";
  tsr_tensor *va = tsr_view_2d (ctx, a, 5, 4, a->nb[1], 2 * a->nb[1] + 3 * 4);
  tsr_tensor *vb = tsr_view_2d (ctx, b, 5, 4, b->nb[1], 6 * b->nb[1]);
  tsr_tensor *r = tsr_add (ctx, va, vb);
  if (ot_run (desc, be, ctx, r))
    {
      for (int i1 = 0; i1 < 4; i1++)
        for (int i0 = 0; i0 < 5; i0++)
          want[i1 * 5 + i0] = ot_get (a, 3 + i0, 2 + i1, 0, 0)
                              + ot_get (b, i0, 6 + i1, 0, 0);
      ot_compare (desc, r, (int64_t[]) { 5, 4, 1, 1 }, want, 0, 1e-6);
    }

  /* Rows of a reshaped [12,10] -> [30,4] summed.  */
  desc = "sum_rows of a reshaped tensor (|err| <= 1e-5)";
  r = tsr_sum_rows (ctx, tsr_reshape_2d (ctx, a, 30, 4));
  if (ot_run (desc, be, ctx, r))
    {
      for (int j = 0; j < 4; j++)
        {
          want[j] = 0;
          for (int i = 0; i < 30; i++)
            want[j] += ((float *) a->data)[j * 30 + i];
        }
      ot_compare (desc, r, (int64_t[]) { 1, 4, 1, 1 }, want, 1e-5, 0);
    }

  /* mul of a reshaped-then-permuted view by a transposed view.  */
  desc = "mul of a permuted reshape by a transposed view (rel err <= 1e-6)";
  tsr_tensor *p = tsr_permute (ctx, tsr_reshape_3d (ctx, a, 10, 3, 4), 1, 0, 2, 3);
  tsr_tensor *c = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 10, 3, 4);
  ot_fill (c, -1.0f, 1.0f);
  tsr_tensor *ct = tsr_permute (ctx, c, 1, 0, 2, 3);
  r = tsr_mul (ctx, p, ct);
  if (ot_run (desc, be, ctx, r))
    {
      /* p (j0, j1, j2) = a flat (j2 * 30 + j0 * 10 + j1).  */
      for (int j2 = 0; j2 < 4; j2++)
        for (int j1 = 0; j1 < 10; j1++)
          for (int j0 = 0; j0 < 3; j0++)
            want[(j2 * 10 + j1) * 3 + j0]
              = (double) ((float *) a->data)[j2 * 30 + j0 * 10 + j1]
                * ot_get (c, j1, j0, j2, 0);
      ot_compare (desc, r, (int64_t[]) { 3, 10, 4, 1 }, want, 0, 1e-6);
    }

  /* A result of a computation, viewed and computed on.  */
  desc = "scale of a view of a computed tensor (rel err <= 2e-6)";
  tsr_tensor *s = tsr_add (ctx, a, b);
  r = tsr_scale (ctx, tsr_view_2d (ctx, s, 6, 3, s->nb[1], s->nb[1] * 7 + 24), 3.0f);
  if (ot_run (desc, be, ctx, r))
    {
      for (int i1 = 0; i1 < 3; i1++)
        for (int i0 = 0; i0 < 6; i0++)
          want[i1 * 6 + i0] = 3.0 * (ot_get (a, 6 + i0, 7 + i1, 0, 0)
                                     + ot_get (b, 6 + i0, 7 + i1, 0, 0));
      ot_compare (desc, r, (int64_t[]) { 6, 3, 1, 1 }, want, 0, 2e-6);
    }
  tsr_context_free (ctx);
}

/* Views whose elements would start at a misaligned address are refused
   (the kernels load elements as their type: a misaligned float load is
   undefined, and UBSan's first finding in this area); aligned ones of
   every kind of type are taken.  */
static void
check_alignment (tsr_context *ctx)
{
  tsr_tensor *f = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 16, 4);
  tsr_tensor *h = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, 16, 4);
  tsr_tensor *q = tsr_new_tensor_2d (ctx, TSR_TYPE_Q8_0, 64, 4);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_MXFP4, 64, 4);
  CHECK (!tsr_view_1d (ctx, f, 8, 1)
         && tsr_last_status () == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "alignment")
         && strstr (tsr_last_error (), "f32"),
         "an f32 view at byte 1 is refused (%s)", tsr_last_error ());
  CHECK (!tsr_view_2d (ctx, f, 8, 2, 62, 0)
         && strstr (tsr_last_error (), "62"),
         "an f32 view with a row stride of 62 bytes is refused");
  CHECK (tsr_view_1d (ctx, f, 8, 4) != NULL
         && tsr_view_2d (ctx, f, 8, 2, 64, 32) != NULL,
         "f32 views at multiples of 4 bytes are taken");
  CHECK (!tsr_view_1d (ctx, h, 8, 3) && tsr_view_1d (ctx, h, 8, 2) != NULL,
         "f16: byte 3 refused, byte 2 taken");
  /* A q8_0 row is 2 blocks of 34 bytes; an mxfp4 block 17 bytes.  */
  CHECK (tsr_view_1d (ctx, q, 32, 34) != NULL && !tsr_view_1d (ctx, q, 32, 17)
         && tsr_view_1d (ctx, x, 32, 17) != NULL,
         "blocks: q8_0 at its second block taken, at byte 17 refused; "
         "mxfp4 (bytes only) at byte 17 taken");
}

int
main (void)
{
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (4);
  tsr_context *ctx = tsr_context_new (false);
  check_reshape (ctx);
  check_views (ctx);
  check_permute (ctx);
  check_alignment (ctx);
  tsr_context_free (ctx);
  check_views_in_ops (be);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
