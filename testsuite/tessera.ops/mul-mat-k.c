/* mul_mat, mul_mat_id and get_rows with weights of the super-block
   types q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs (rows of 256 k).

   Reference: the weights through tsr_dequantize_row times b, summed in
   double.  A backend may round the rows of b to q8_K first (the CPU
   does for few rows of b): then the reference uses b's values rounded
   by tsr_quantize_row (TSR_TYPE_Q8_K).  Each result must be within
   1e-5 sum_l |w_l b_l| of one of the two references: the integer dots
   round only a few terms per super-block, the f32 GEMM's sums of k
   products stay far below that for k <= 2048.  get_rows must give the
   reference dequantization bit for bit.  n = 1, 3, 8, 9, 39, 48:
   integer dots in groups of up to 8 rows of b; 320: dequantization and
   the GEMM; n = 3 and 9 on rows of 20 super-blocks, which the CPU's
   plain dots read 8 super-blocks of a row at a time.  q6_K also with
   values and activations at their ends.  */
#include "ops-test.h"

static const tsr_type types[] = { TSR_TYPE_Q2_K, TSR_TYPE_Q3_K,
                                  TSR_TYPE_Q4_K, TSR_TYPE_Q5_K,
                                  TSR_TYPE_Q6_K, TSR_TYPE_IQ4_XS };
#define N_TYPES (int) (sizeof types / sizeof types[0])

/* Weights: uniform, wider in some groups; host data.  */
static void
fill_weights (tsr_tensor *a)
{
  int64_t n = tsr_nelements (a);
  float *v = malloc (n * sizeof *v);
  for (int64_t i = 0; i < n; i++)
    v[i] = tsr_test_uniform (-1.0f, 1.0f) * (float) (1 + i / 32 % 5);
  ot_quantize (a, v);
  free (v);
}

/* Row R (rows in order) of weights A, dequantized by the reference.  */
static void
weight_row (const tsr_tensor *a, int64_t r, float *row)
{
  tsr_dequantize_row (a->type, (const char *) a->data
                      + r * tsr_row_size (a->type, a->ne[0]), row, a->ne[0]);
}

/* K floats of a contiguous f32 row B, rounded to q8_K if Q8.  */
static void
act_row (const float *b, int64_t k, int q8, float *row)
{
  memcpy (row, b, k * sizeof *row);
  if (q8)
    {
      void *q = malloc (tsr_row_size (TSR_TYPE_Q8_K, k));
      tsr_quantize_row (TSR_TYPE_Q8_K, row, q, k);
      tsr_dequantize_row (TSR_TYPE_Q8_K, q, row, k);
      free (q);
    }
}

/* Whether GOT is within 1e-5 sum |w b| of the dot of W with B, as given
   or rounded to q8_K.  */
static int
dot_ok (double got, const float *w, const float *b, int64_t k, float *tmp)
{
  for (int q8 = 0; q8 < 2; q8++)
    {
      double s = 0, mag = 0;
      act_row (b, k, q8, tmp);
      for (int64_t l = 0; l < k; l++)
        {
          s += (double) w[l] * tmp[l];
          mag += fabs ((double) w[l] * tmp[l]);
        }
      if (fabs (got - s) <= 1e-5 * mag)
        return 1;
    }
  return 0;
}

/* Compute R = A B (A [k, m] of host weights, B [k, n] f32) on BE, check
   every result against the reference and free CTX.  */
static void
run_mm (tsr_backend *be, tsr_context *ctx, const tsr_tensor *a,
        const tsr_tensor *b, tsr_tensor *r, const char *desc)
{
  const int64_t k = a->ne[0], m = a->ne[1], n = b->ne[1];
  if (ot_run (desc, be, ctx, r))
    {
      float *w = malloc (k * sizeof *w), *tmp = malloc (k * sizeof *tmp);
      long bad = 0;
      for (int64_t i = 0; i < m; i++)
        {
          weight_row (a, i, w);
          for (int64_t j = 0; j < n; j++)
            bad += !dot_ok (ot_get (r, i, j, 0, 0), w,
                            (const float *) ot_at (b, 0, j, 0, 0), k, tmp);
        }
      CHECK (bad == 0, "%s (%ld wrong)", desc, bad);
      free (w);
      free (tmp);
    }
  tsr_context_free (ctx);
}

static void
check_mm (tsr_backend *be, tsr_type type, int64_t k, int64_t m, int64_t n)
{
  char desc[160];
  snprintf (desc, sizeof desc, "mul_mat %s [%ld,%ld] x f32 [%ld,%ld]",
            tsr_type_name (type), (long) k, (long) m, (long) k, (long) n);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, type, k, m);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, k, n);
  tsr_tensor *r = tsr_mul_mat (ctx, a, b);
  fill_weights (a);
  ot_fill (b, -1.0f, 1.0f);
  run_mm (be, ctx, a, b, r, desc);
}

/* q6_K at the edges of the integer sums: rows whose values are all -32
   or all 31 (stored 0 or 63, scales 127) by columns all -1 or all 1
   (-127 or 127 in q8_K).  Sums of 8 products reach 32 x 127 x 8 =
   32512, the most a kernel that packs them into int16 may see.  N = 64
   takes the CPU's 16-row tiles.  */
static void
check_mm_q6_edges (tsr_backend *be)
{
  const int64_t k = 512, m = 64, n = 64;
  char desc[160];
  snprintf (desc, sizeof desc, "mul_mat q6_K [%ld,%ld] x f32 [%ld,%ld], "
            "values and activations at their ends", (long) k, (long) m,
            (long) k, (long) n);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_Q6_K, k, m);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, k, n);
  tsr_tensor *r = tsr_mul_mat (ctx, a, b);
  struct tsr_block_q6_K *blk = a->data;
  for (int64_t i = 0; i < m * k / TSR_QK_K; i++)
    {
      int high = i / (k / TSR_QK_K) % 2;   /* rows alternate */
      memset (blk[i].ql, high ? 0xff : 0, sizeof blk[i].ql);
      memset (blk[i].qh, high ? 0xff : 0, sizeof blk[i].qh);
      memset (blk[i].scales, 127, sizeof blk[i].scales);
      blk[i].d = tsr_fp32_to_fp16 (1.0f / 1024);
    }
  for (int64_t j = 0; j < n; j++)
    for (int64_t l = 0; l < k; l++)
      *(float *) ot_at (b, l, j, 0, 0) = j % 2 ? 1.0f : -1.0f;
  run_mm (be, ctx, a, b, r, desc);
}

/* Experts [k, m, 4], b [k, 1, tokens], 2 experts per token.  */
static void
check_mm_id (tsr_backend *be, tsr_type type, int64_t k, int64_t m,
             int64_t tokens)
{
  char desc[160];
  snprintf (desc, sizeof desc, "mul_mat_id %s [%ld,%ld,4] x f32 [%ld,1,%ld]",
            tsr_type_name (type), (long) k, (long) m, (long) k,
            (long) tokens);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *as = tsr_new_tensor_3d (ctx, type, k, m, 4);
  tsr_tensor *b = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, k, 1, tokens);
  tsr_tensor *ids = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 2, tokens);
  tsr_tensor *r = tsr_mul_mat_id (ctx, as, b, ids);
  fill_weights (as);
  ot_fill (b, -1.0f, 1.0f);
  for (int64_t t = 0; t < tokens; t++)
    {
      int32_t e0 = (int32_t) (t % 4), e1 = (int32_t) ((t * 3 + 1) % 4);
      memcpy (ot_at (ids, 0, t, 0, 0), &e0, sizeof e0);
      memcpy (ot_at (ids, 1, t, 0, 0), &e1, sizeof e1);
    }
  if (ot_run (desc, be, ctx, r))
    {
      float *w = malloc (k * sizeof *w), *tmp = malloc (k * sizeof *tmp);
      long bad = 0;
      for (int64_t t = 0; t < tokens; t++)
        for (int64_t e = 0; e < 2; e++)
          {
            int32_t x;
            memcpy (&x, ot_at (ids, e, t, 0, 0), sizeof x);
            for (int64_t i = 0; i < m; i++)
              {
                weight_row (as, x * m + i, w);
                bad += !dot_ok (ot_get (r, i, e, t, 0), w,
                                (const float *) ot_at (b, 0, 0, t, 0), k,
                                tmp);
              }
          }
      CHECK (bad == 0, "%s (%ld wrong)", desc, bad);
      free (w);
      free (tmp);
    }
  tsr_context_free (ctx);
}

static void
check_get_rows (tsr_backend *be, tsr_type type, int64_t k)
{
  char desc[160];
  snprintf (desc, sizeof desc, "get_rows %s [%ld,6] equals "
            "tsr_dequantize_row", tsr_type_name (type), (long) k);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, type, k, 6);
  tsr_tensor *rows = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 4);
  static const int32_t idx[4] = { 5, 0, 3, 3 };
  tsr_tensor *r = tsr_get_rows (ctx, a, rows);
  fill_weights (a);
  memcpy (rows->data, idx, sizeof idx);
  if (ot_run (desc, be, ctx, r))
    {
      float *w = malloc (k * sizeof *w);
      long bad = 0;
      for (int i = 0; i < 4; i++)
        {
          weight_row (a, idx[i], w);
          bad += memcmp (ot_at (r, 0, i, 0, 0), w, k * sizeof *w) != 0;
        }
      CHECK (bad == 0, "%s (%ld rows differ)", desc, bad);
      free (w);
    }
  tsr_context_free (ctx);
}

int
main (void)
{
  static const int64_t ns[] = { 1, 3, 8, 9, 39, 48, 320 };
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (13);
  for (int t = 0; t < N_TYPES; t++)
    {
      for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        check_mm (be, types[t], 256, 17, ns[i]);
      check_mm (be, types[t], 2048, 5, 2);
      /* Rows of 20 super-blocks: the CPU's plain dots read them 8 at a
         time, row after row, and prefetch in that order; 37 rows end
         on a run of 5.  */
      check_mm (be, types[t], 20 * 256, 37, 3);
      check_mm (be, types[t], 20 * 256, 37, 9);
      check_mm (be, types[t], 1024, 33, 48);
      check_mm (be, types[t], 1024, 9, 320);
      check_mm_id (be, types[t], 512, 9, 5);
      check_get_rows (be, types[t], 512);
    }
  check_mm_q6_edges (be);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
