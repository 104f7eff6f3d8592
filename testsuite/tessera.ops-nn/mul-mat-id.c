/* mul_mat_id: expert weights of every type mul_mat takes (f32, f16,
   bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4), more rows than one weight tile, one input row
   per token shared by every slot or one per slot, padded or strided
   inputs, experts used several times or not at all, and ids out of
   range (a compute-time error); the expert never chosen holds NaN
   (float types), which no result may show; against double dot products of the
   dequantized weights.  With block-type weights a backend may round
   b's rows to q8_0 (as mul_mat may): the reference that the result is
   closer to, b as given or b through tsr_quantize_row, is used.  */
#include "nn-test.h"

/* The reference, b's rows rounded to q8_0 if Q8.  */
static void
reference (const tsr_tensor *as, const tsr_tensor *b, const tsr_tensor *ids,
           const int64_t *ne, int q8, double *want)
{
  const int64_t k = as->ne[0];
  double *w = malloc (k * sizeof *w);
  float *row = malloc (k * sizeof *row);
  struct tsr_block_q8_0 *q = malloc (tsr_row_size (TSR_TYPE_Q8_0, k));
  for (int64_t t = 0; t < ids->ne[1]; t++)
    for (int64_t e = 0; e < ids->ne[0]; e++)
      {
        int64_t x = (int64_t) ot_get (ids, e, t, 0, 0);
        for (int64_t j = 0; j < k; j++)
          row[j] = (float) ot_get (b, j, e % b->ne[1], t, 0);
        if (q8)
          {
            tsr_quantize_row (TSR_TYPE_Q8_0, row, q, k);
            tsr_dequantize_row (TSR_TYPE_Q8_0, q, row, k);
          }
        for (int64_t i = 0; i < as->ne[1]; i++)
          {
            double dot = 0;
            nt_row (as, i, x, 0, w);
            for (int64_t j = 0; j < k; j++)
              dot += w[j] * row[j];
            want[ot_index (ne, i, e, t, 0)] = dot;
          }
      }
  free (q);
  free (row);
  free (w);
}

/* The reference R is closer to: b as given or, for quantized weights,
   b rounded to q8_0.  */
static double *
closer_reference (const tsr_tensor *r, const tsr_tensor *as,
                  const tsr_tensor *b, const tsr_tensor *ids,
                  const int64_t *ne)
{
  double *want = malloc (ot_count (ne) * sizeof *want);
  reference (as, b, ids, ne, 0, want);
  if (!tsr_type_traits (as->type)->is_quantized)
    return want;
  double *wq = malloc (ot_count (ne) * sizeof *wq), e = 0, eq = 0;
  reference (as, b, ids, ne, 1, wq);
  OT_FOR_EACH (r, i0, i1, i2, i3)
    {
      double g = ot_get (r, i0, i1, i2, i3);
      e = fmax (e, fabs (g - want[ot_index (ne, i0, i1, i2, i3)]));
      eq = fmax (eq, fabs (g - wq[ot_index (ne, i0, i1, i2, i3)]));
    }
  free (eq < e ? want : wq);
  return eq < e ? wq : want;
}

static void
check_mmid (tsr_backend *be, tsr_type type, int64_t k, int64_t m,
            int64_t n_expert, int64_t n_used, int64_t n_tokens, int shared_b,
            enum nt_layout bl)
{
  char desc[200];
  snprintf (desc, sizeof desc, "mul_mat_id %s [%ld,%ld,%ld], %ld of them "
            "per token, %ld tokens, b %s (%s)", tsr_type_name (type),
            (long) k, (long) m, (long) n_expert, (long) n_used,
            (long) n_tokens, shared_b ? "shared by slots" : "per slot",
            nt_layout_name (bl));
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *as = tsr_new_tensor_3d (ctx, type, k, m, n_expert);
  tsr_tensor *b = nt_tensor (ctx, TSR_TYPE_F32,
                             (int64_t[]) { k, shared_b ? 1 : n_used,
                                           n_tokens, 1 }, bl);
  tsr_tensor *ids = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, n_used, n_tokens);
  nt_fill (as, -1.0f, 1.0f);
  ot_fill (b, -1.0f, 1.0f);
  /* Expert n_expert - 1 is never chosen; others repeat.  Its weights
     are NaN where the type holds them (float types): a product that
     read them would be NaN (a mixture of experts reads only the
     experts it routes to).  */
  OT_FOR_EACH (ids, e, t, i2, i3)
    ot_set (ids, e, t, i2, i3,
            (double) ((e * 3 + t * 2 + e * t) % (n_expert > 1 ? n_expert - 1
                                                               : 1)));
  if (n_expert > 1 && !tsr_type_traits (type)->is_quantized)
    for (int64_t j = 0; j < m; j++)
      for (int64_t i = 0; i < k; i++)
        ot_set (as, i, j, n_expert - 1, 0, NAN);
  tsr_tensor *r = tsr_mul_mat_id (ctx, as, b, ids);
  if (ot_run (desc, be, ctx, r))
    {
      int64_t ne[4] = { m, n_used, n_tokens, 1 };
      int64_t nan = 0;
      OT_FOR_EACH (r, i0, i1, i2, i3)
        nan += isnan (ot_get (r, i0, i1, i2, i3));
      CHECK (nan == 0, "%s: no result reads the expert never chosen (%lld "
             "NaN)", desc, (long long) nan);
      double *want = closer_reference (r, as, b, ids, ne);
      ot_compare (desc, r, ne, want, 1e-5 * k, 1e-5);
      free (want);
    }
  tsr_context_free (ctx);
}

static void
check_bad_id (tsr_backend *be, int32_t bad)
{
  char desc[120];
  snprintf (desc, sizeof desc, "mul_mat_id with expert id %d of 4 fails at "
            "compute time", (int) bad);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *as = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 8, 3, 4);
  tsr_tensor *b = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 8, 1, 2);
  tsr_tensor *ids = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 2, 2);
  ot_fill (as, -1.0f, 1.0f);
  ot_fill (b, -1.0f, 1.0f);
  nt_set_i32 (ids, (int32_t[]) { 0, 3, 1, bad });
  nt_expect_compute_error (be, ctx, tsr_mul_mat_id (ctx, as, b, ids), desc);
  tsr_context_free (ctx);
}

int
main (void)
{
  static const tsr_type types[] = { TSR_TYPE_F32, TSR_TYPE_F16,
                                    TSR_TYPE_BF16, TSR_TYPE_Q8_0,
                                    TSR_TYPE_Q4_0, TSR_TYPE_Q4_1,
                                    TSR_TYPE_Q5_0, TSR_TYPE_Q5_1,
                                    TSR_TYPE_IQ4_NL, TSR_TYPE_MXFP4 };
  const int n_types = (int) (sizeof types / sizeof types[0]);
  tsr_backend *be = nt_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (41);
  for (int t = 0; t < n_types; t++)
    {
      int q = tsr_type_traits (types[t])->is_quantized;
      int64_t k = q ? 64 : 37;
      check_mmid (be, types[t], k, 19, 5, 3, 7, 0, NT_DENSE);
      check_mmid (be, types[t], k, 19, 5, 3, 7, 1, NT_PADDED);
    }
  check_mmid (be, TSR_TYPE_F32, 13, 4, 3, 2, 5, 0, NT_STRIDED);
  check_mmid (be, TSR_TYPE_F16, 5, 1, 1, 1, 1, 1, NT_DENSE);
  check_mmid (be, TSR_TYPE_Q8_0, 256, 50, 8, 4, 3, 0, NT_PADDED);
  /* Many units of work for several threads.  */
  check_mmid (be, TSR_TYPE_Q4_0, 128, 200, 9, 4, 50, 0, NT_DENSE);
  check_mmid (be, TSR_TYPE_Q5_1, 96, 70, 6, 3, 20, 0, NT_DENSE);
  /* Block types with enough tokens an expert (here 12) that its plain
     rows are packed for the repacked dots (AVX2 and AVX-512 levels), a
     partial last group of rows (21).  */
  for (int t = 3; t < n_types; t++)
    check_mmid (be, types[t], 96, 21, 4, 2, 24, 0, NT_DENSE);
  check_bad_id (be, 4);
  check_bad_id (be, -2);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
