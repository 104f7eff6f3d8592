/* get_rows: rows of f32, f16, bf16 and block-type (q8_0, q4_0, q4_1,
   q5_0, q5_1, iq4_nl, mxfp4) tensors picked by i32
   indices, batched, long rows, and out-of-range indices (an error from
   the compute, not a crash).  The expected row is the source row
   converted to float by the reference conversions (exact: each source
   element has exactly one float value).  */
#include "ops-test.h"

/* Row R of batch (I2, I3) of A as floats.  */
static void
source_row (const tsr_tensor *a, int64_t r, int64_t i2, int64_t i3, float *out)
{
  const char *p = (const char *) a->data + r * a->nb[1] + i2 * a->nb[2]
                  + i3 * a->nb[3];
  if (tsr_type_traits (a->type)->is_quantized)
    tsr_dequantize_row (a->type, p, out, a->ne[0]);
  else
    for (int64_t i = 0; i < a->ne[0]; i++)
      out[i] = (float) ot_get (a, i, r, i2, i3);
}

/* Fill A (any type, host data) from uniform values in [-4, 4).  */
static void
fill_source (tsr_tensor *a)
{
  if (tsr_type_traits (a->type)->is_quantized)
    {
      int64_t n = tsr_nelements (a);
      float *v = malloc (n * sizeof *v);
      for (int64_t i = 0; i < n; i++)
        v[i] = tsr_test_uniform (-4.0f, 4.0f);
      ot_quantize (a, v);
      free (v);
    }
  else
    ot_fill (a, -4.0f, 4.0f);
}

static void
check_rows (tsr_backend *be, tsr_type type, const int64_t *nea, int64_t n,
            const int32_t *idx)
{
  char desc[160];
  snprintf (desc, sizeof desc, "get_rows of %ld rows from %s [%ld,%ld,%ld,%ld]",
            (long) n, tsr_type_name (type), (long) nea[0], (long) nea[1],
            (long) nea[2], (long) nea[3]);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = tsr_new_tensor (ctx, type, 4, nea);
  tsr_tensor *rows = tsr_new_tensor_3d (ctx, TSR_TYPE_I32, n, nea[2], nea[3]);
  fill_source (a);
  memcpy (rows->data, idx, n * nea[2] * nea[3] * sizeof *idx);
  tsr_tensor *r = tsr_get_rows (ctx, a, rows);
  if (ot_run (desc, be, ctx, r))
    {
      int64_t ne[4] = { nea[0], n, nea[2], nea[3] };
      double *want = malloc (ot_count (ne) * sizeof *want);
      float *row = malloc (nea[0] * sizeof *row);
      for (int64_t i3 = 0; i3 < ne[3]; i3++)
        for (int64_t i2 = 0; i2 < ne[2]; i2++)
          for (int64_t j = 0; j < n; j++)
            {
              source_row (a, idx[(i3 * ne[2] + i2) * n + j], i2, i3, row);
              for (int64_t i0 = 0; i0 < ne[0]; i0++)
                want[ot_index (ne, i0, j, i2, i3)] = row[i0];
            }
      if (r->type != TSR_TYPE_F32)
        tsr_test_result (0, "%s: result type %d", desc, r->type);
      else
        ot_compare (desc, r, ne, want, 0, 0);
      free (row);
      free (want);
    }
  tsr_context_free (ctx);
}

static void
check_out_of_range (tsr_backend *be, int32_t bad)
{
  char desc[120];
  snprintf (desc, sizeof desc, "get_rows with index %d of 6 rows fails at"
            " compute time", (int) bad);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 6);
  tsr_tensor *rows = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 3);
  ot_fill (a, -1.0f, 1.0f);
  int32_t idx[3] = { 0, bad, 5 };
  memcpy (rows->data, idx, sizeof idx);
  tsr_tensor *r = tsr_get_rows (ctx, a, rows);
  if (!r)
    tsr_test_result (0, "%s: builder returned NULL: %s", desc, tsr_last_error ());
  else
    {
      tsr_clear_error ();
      int rc = ot_compute (be, ctx, r);
      CHECK (rc != TSR_OK && tsr_last_error ()[0] != 0,
             "%s (status %d, message \"%s\")", desc, rc, tsr_last_error ());
    }
  tsr_context_free (ctx);
}

/* f16 source in a no_alloc context through the graph allocator.  */
static void
check_allocated (tsr_backend *be)
{
  enum { K = 40, R = 9, N = 5 };
  const char *desc = "get_rows of f16 rows through the graph allocator";
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, K, R);
  tsr_tensor *rows = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, N);
  tsr_set_input (a);
  tsr_set_input (rows);
  tsr_tensor *r = tsr_get_rows (ctx, a, rows);
  tsr_graph *g;
  tsr_gallocr *ga;
  int rc = ot_allocate (be, ctx, r, &g, &ga);
  uint16_t h[K * R];
  int32_t idx[N] = { 8, 0, 3, 3, 7 };
  float out[K * N];
  for (int i = 0; i < K * R; i++)
    h[i] = tsr_fp32_to_fp16 (tsr_test_uniform (-10.0f, 10.0f));
  if (rc == TSR_OK)
    rc = ot_compute_io (be, g, 2, (tsr_tensor *[]) { a, rows },
                        (const void *[]) { h, idx }, r, out);
  if (rc != TSR_OK)
    tsr_test_result (0, "%s: %s", desc, tsr_last_error ());
  else
    {
      int ok = 1;
      for (int j = 0; j < N; j++)
        for (int i = 0; i < K; i++)
          ok &= out[j * K + i] == tsr_fp16_to_fp32 (h[idx[j] * K + i]);
      CHECK (ok, "%s", desc);
    }
  tsr_gallocr_free (ga);
  tsr_context_free (ctx);
}

int
main (void)
{
  static const int32_t idx7[] = { 19, 0, 7, 7, 3, 18, 1 };
  static const int32_t one[] = { 2 };
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (5);
  check_rows (be, TSR_TYPE_F32, (int64_t[]) { 9, 20, 1, 1 }, 7, idx7);
  check_rows (be, TSR_TYPE_F16, (int64_t[]) { 9, 20, 1, 1 }, 7, idx7);
  check_rows (be, TSR_TYPE_BF16, (int64_t[]) { 17, 20, 1, 1 }, 7, idx7);
  check_rows (be, TSR_TYPE_Q8_0, (int64_t[]) { 64, 20, 1, 1 }, 7, idx7);
  check_rows (be, TSR_TYPE_Q4_0, (int64_t[]) { 96, 20, 1, 1 }, 7, idx7);
  check_rows (be, TSR_TYPE_Q4_1, (int64_t[]) { 96, 20, 1, 1 }, 7, idx7);
  check_rows (be, TSR_TYPE_Q5_0, (int64_t[]) { 64, 20, 1, 1 }, 7, idx7);
  check_rows (be, TSR_TYPE_Q5_1, (int64_t[]) { 32, 20, 1, 1 }, 7, idx7);
  check_rows (be, TSR_TYPE_IQ4_NL, (int64_t[]) { 160, 20, 1, 1 }, 7, idx7);
  check_rows (be, TSR_TYPE_MXFP4, (int64_t[]) { 64, 20, 1, 1 }, 7, idx7);
  check_rows (be, TSR_TYPE_F32, (int64_t[]) { 1, 3, 1, 1 }, 1, one);
  check_rows (be, TSR_TYPE_F32, (int64_t[]) { 4100, 3, 1, 1 }, 1, one);
  /* Batched: a [5,6,3,2], rows [4,3,2]; batch (i2, i3) picks its own
     rows from its own batch of a.  */
  int32_t bidx[4 * 3 * 2];
  for (int i = 0; i < 24; i++)
    bidx[i] = (i * 5 + i / 4) % 6;
  check_rows (be, TSR_TYPE_F32, (int64_t[]) { 5, 6, 3, 2 }, 4, bidx);
  check_rows (be, TSR_TYPE_Q8_0, (int64_t[]) { 32, 6, 3, 2 }, 4, bidx);
  check_rows (be, TSR_TYPE_Q5_1, (int64_t[]) { 32, 6, 3, 2 }, 4, bidx);
  check_rows (be, TSR_TYPE_F16, (int64_t[]) { 7, 6, 3, 2 }, 4, bidx);
  check_out_of_range (be, 6);
  check_out_of_range (be, -1);
  check_allocated (be);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
