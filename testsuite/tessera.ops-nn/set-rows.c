/* set_rows: rows of f32 written into f32, f16, bf16 and block-type
   (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4) destinations (converted
   exactly as the reference conversions and row quantizer do; block
   caches through the graph allocator are compared bit for bit), batches mapped cyclically, repeated indices (the
   last in source order wins), padded or strided operands, rows left
   alone keep their bits, the result aliases the destination, a bad
   index fails at compute time without writing, and a run through the
   graph allocator.  */
#include "nn-test.h"

/* Source row as stored in TYPE and read back, into OUT.  */
static void
stored_row (tsr_type type, const float *x, int64_t k, double *out)
{
  float *f = malloc (k * sizeof *f);
  if (tsr_type_traits (type)->is_quantized)
    {
      void *q = malloc (tsr_row_size (type, k));
      tsr_quantize_row (type, x, q, k);
      tsr_dequantize_row (type, q, f, k);
      free (q);
    }
  else
    for (int64_t i = 0; i < k; i++)
      f[i] = type == TSR_TYPE_F16 ? tsr_fp16_to_fp32 (tsr_fp32_to_fp16 (x[i]))
             : type == TSR_TYPE_BF16
               ? tsr_bf16_to_fp32 (tsr_fp32_to_bf16 (x[i])) : x[i];
  for (int64_t i = 0; i < k; i++)
    out[i] = f[i];
  free (f);
}

/* WANT (dst's values before) after the writes the op documents.  */
static void
reference (const tsr_tensor *dst, const tsr_tensor *src,
           const tsr_tensor *idx, double *want)
{
  const int64_t k = dst->ne[0];
  float *x = malloc (k * sizeof *x);
  for (int64_t l = 0; l < src->ne[3]; l++)
    for (int64_t j = 0; j < src->ne[2]; j++)
      for (int64_t i = 0; i < src->ne[1]; i++)
        {
          int64_t v = (int64_t) ot_get (idx, i, j, l, 0);
          for (int64_t e = 0; e < k; e++)
            x[e] = (float) ot_get (src, e, i, j, l);
          stored_row (dst->type, x, k,
                      want + ot_index (dst->ne, 0, v, j % dst->ne[2],
                                       l % dst->ne[3]));
        }
  free (x);
}

/* Bytes of a padded view's parent outside the view still 0x7f.  */
static int
padding_intact (const tsr_tensor *view)
{
  const tsr_tensor *p = view->view_src;
  const unsigned char *b = p->data;
  size_t lo = view->view_offs, row = tsr_row_size (view->type, view->ne[0]);
  for (int64_t r = 0; r < tsr_nrows (p); r++)
    for (size_t i = 0; i < p->nb[1]; i++)
      if ((i < lo || i >= lo + row) && b[r * p->nb[1] + i] != 0x7f)
        return 0;
  return 1;
}

static void
check_set_rows (tsr_backend *be, tsr_type type, const int64_t *ned,
                const int64_t *nes, const int32_t *ids, enum nt_layout dl,
                enum nt_layout sl)
{
  char desc[240];
  snprintf (desc, sizeof desc, "set_rows of f32 [%ld,%ld,%ld,%ld] (%s) "
            "into %s [%ld,%ld,%ld,%ld] (%s)", (long) nes[0], (long) nes[1],
            (long) nes[2], (long) nes[3], nt_layout_name (sl),
            tsr_type_name (type), (long) ned[0], (long) ned[1],
            (long) ned[2], (long) ned[3], nt_layout_name (dl));
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *dst = nt_tensor (ctx, type, ned, dl);
  tsr_tensor *src = nt_tensor (ctx, TSR_TYPE_F32, nes, sl);
  tsr_tensor *idx = tsr_new_tensor_3d (ctx, TSR_TYPE_I32, nes[1], nes[2],
                                       nes[3]);
  nt_fill (dst, -2.0f, 2.0f);
  ot_fill (src, -3.0f, 3.0f);
  nt_set_i32 (idx, ids);
  double *want = nt_values (dst);
  reference (dst, src, idx, want);
  tsr_tensor *r = tsr_set_rows (ctx, dst, src, idx);
  if (ot_run (desc, be, ctx, r))
    {
      double *got = nt_values (r);
      long bad = 0;
      for (int64_t i = 0; i < ot_count (ned); i++)
        bad += !(got[i] == want[i]);
      CHECK (bad == 0 && r->data == dst->data && r->type == type,
             "%s%s%s", desc, bad ? ": wrong values" : "",
             r->data != dst->data ? ": result does not alias dst" : "");
      if (dl == NT_PADDED)
        CHECK (padding_intact (dst), "%s: bytes beside the rows untouched",
               desc);
      free (got);
    }
  free (want);
  tsr_context_free (ctx);
}

static void
check_out_of_range (tsr_backend *be, int32_t bad)
{
  char desc[120];
  snprintf (desc, sizeof desc, "set_rows with index %d of 5 rows fails at "
            "compute time", (int) bad);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *dst = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, 40, 5);
  tsr_tensor *src = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 40, 3);
  tsr_tensor *idx = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 3);
  ot_fill (dst, -1.0f, 1.0f);
  ot_fill (src, -1.0f, 1.0f);
  nt_set_i32 (idx, (int32_t[]) { 1, bad, 4 });
  size_t n = tsr_nbytes (dst);
  void *before = malloc (n);
  memcpy (before, dst->data, n);
  nt_expect_compute_error (be, ctx, tsr_set_rows (ctx, dst, src, idx), desc);
  CHECK (memcmp (before, dst->data, n) == 0,
         "%s: destination unchanged", desc);
  free (before);
  tsr_context_free (ctx);
}

/* A cache of TYPE in a backend buffer placed by the graph allocator:
   the same bytes as tsr_quantize_row's.  */
static void
check_allocated (tsr_backend *be, tsr_type type)
{
  enum { K = 64, R = 6, N = 3 };
  char desc[80];
  snprintf (desc, sizeof desc, "set_rows into %s through the graph "
            "allocator, bit for bit", tsr_type_name (type));
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *dst = tsr_new_tensor_2d (ctx, type, K, R);
  tsr_tensor *src = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, K, N);
  tsr_tensor *idx = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, N);
  tsr_set_input (dst);
  tsr_set_input (src);
  tsr_set_input (idx);
  tsr_tensor *r = tsr_set_rows (ctx, dst, src, idx);
  tsr_set_output (r);
  tsr_graph *g;
  tsr_gallocr *ga;
  int rc = ot_allocate (be, ctx, r, &g, &ga);
  const size_t rs = tsr_row_size (type, K);
  float cache[K * R], x[K * N];
  unsigned char q[sizeof (struct tsr_block_q8_0) * K / 32 * R];
  unsigned char out[sizeof q];
  int32_t ids[N] = { 5, 0, 2 };
  for (int i = 0; i < K * R; i++)
    cache[i] = tsr_test_uniform (-1.0f, 1.0f);
  for (int i = 0; i < K * N; i++)
    x[i] = tsr_test_uniform (-1.0f, 1.0f);
  for (int r0 = 0; r0 < R; r0++)
    tsr_quantize_row (type, cache + r0 * K, q + r0 * rs, K);
  if (rc == TSR_OK)
    rc = ot_compute_io (be, g, 3, (tsr_tensor *[]) { dst, src, idx },
                        (const void *[]) { q, x, ids }, r, out);
  if (rc != TSR_OK)
    tsr_test_result (0, "%s: %s", desc, tsr_last_error ());
  else
    {
      for (int j = 0; j < N; j++)
        tsr_quantize_row (type, x + j * K, q + ids[j] * rs, K);
      CHECK (memcmp (q, out, rs * R) == 0, "%s", desc);
    }
  tsr_gallocr_free (ga);
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
  static const int32_t ids7[] = { 9, 0, 4, 11, 3, 7, 1 };
  tsr_backend *be = nt_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (23);
  for (int t = 0; t < n_types; t++)
    {
      int q = tsr_type_traits (types[t])->is_quantized;
      int64_t k = q ? 96 : 13;
      check_set_rows (be, types[t], (int64_t[]) { k, 12, 1, 1 },
                      (int64_t[]) { k, 7, 1, 1 }, ids7, NT_DENSE, NT_DENSE);
      check_set_rows (be, types[t], (int64_t[]) { k, 12, 1, 1 },
                      (int64_t[]) { k, 7, 1, 1 }, ids7, NT_PADDED,
                      q ? NT_PADDED : NT_STRIDED);
    }
  /* Batches: dst [k, 5, 2, 1], src [k, 3, 4, 2]: source batch (j, l)
     writes destination batch (j % 2, l % 1).  */
  int32_t bids[3 * 4 * 2];
  for (int i = 0; i < 24; i++)
    bids[i] = (i * 3 + i / 5) % 5;
  check_set_rows (be, TSR_TYPE_F32, (int64_t[]) { 7, 5, 2, 1 },
                  (int64_t[]) { 7, 3, 4, 2 }, bids, NT_DENSE, NT_PADDED);
  check_set_rows (be, TSR_TYPE_Q4_0, (int64_t[]) { 32, 5, 2, 1 },
                  (int64_t[]) { 32, 3, 4, 2 }, bids, NT_DENSE, NT_DENSE);
  check_set_rows (be, TSR_TYPE_F16, (int64_t[]) { 9, 5, 2, 2 },
                  (int64_t[]) { 9, 3, 2, 2 }, bids, NT_STRIDED, NT_DENSE);
  /* Repeated indices: the last source row naming a row wins.  */
  static const int32_t rep[] = { 2, 2, 0, 2, 0, 1 };
  check_set_rows (be, TSR_TYPE_F32, (int64_t[]) { 4100, 3, 1, 1 },
                  (int64_t[]) { 4100, 6, 1, 1 }, rep, NT_DENSE, NT_DENSE);
  check_set_rows (be, TSR_TYPE_Q8_0, (int64_t[]) { 2048, 3, 1, 1 },
                  (int64_t[]) { 2048, 6, 1, 1 }, rep, NT_DENSE, NT_DENSE);
  /* A cache large enough for several threads.  */
  int32_t many[40];
  for (int i = 0; i < 40; i++)
    many[i] = (i * 17) % 600;
  check_set_rows (be, TSR_TYPE_F16, (int64_t[]) { 128, 600, 1, 1 },
                  (int64_t[]) { 128, 40, 1, 1 }, many, NT_DENSE, NT_DENSE);
  check_set_rows (be, TSR_TYPE_Q4_0, (int64_t[]) { 128, 600, 1, 1 },
                  (int64_t[]) { 128, 40, 1, 1 }, many, NT_DENSE, NT_PADDED);
  check_set_rows (be, TSR_TYPE_Q5_1, (int64_t[]) { 128, 600, 1, 1 },
                  (int64_t[]) { 128, 40, 1, 1 }, many, NT_DENSE, NT_DENSE);
  check_out_of_range (be, 5);
  check_out_of_range (be, -1);
  for (int t = 3; t < n_types; t++)
    check_allocated (be, types[t]);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
