/* mul_mat: weights a [k, m, a2, a3] of type f32, f16, bf16, q8_0,
   q4_0, q4_1, q5_0, q5_1, iq4_nl or mxfp4 times f32 activations b [k, n, b2, b3] gives f32 [m, n, b2, b3]
   with result (i, j, i2, i3) = dot (row i of a batch (i2 / (b2 / a2),
   i3 / (b3 / a3)), row j of b batch (i2, i3)), as tessera/ops.h says.

   Reference: the weights as their stored values (quantized rows through
   tsr_dequantize_row, f16 / bf16 elements through the scalar
   conversions) times b, summed in double.  With block-type weights
   a backend may quantize the rows of b to q8_0 too (as the CPU does for
   a few rows of b, see doc/tessera.texi, "The op checker"): then the
   reference uses b's values rounded by tsr_quantize_row, and the
   result must match the one reference or the other in every element.
   Tolerance: 1e-4 sqrt (k) max |a| max |b| (float accumulation of k
   products), far below the effect of rounding b to 8 bits.  */
#include "ops-test.h"

enum { B_CONTIGUOUS, B_CONT_TRANSPOSED, B_PERMUTED_BATCHES, B_ALLOCATED };
static const char *const b_modes[] = { "", ", b from cont (transpose)",
                                       ", b with permuted batches",
                                       ", graph allocator" };

static int
is_quantized (tsr_type t)
{
  return tsr_type_traits (t)->is_quantized;
}

/* Weights: uniform [-1, 1) stored as TYPE; host data.  */
static void
fill_weights (tsr_tensor *a)
{
  if (is_quantized (a->type))
    {
      int64_t n = tsr_nelements (a);
      float *v = malloc (n * sizeof *v);
      for (int64_t i = 0; i < n; i++)
        v[i] = tsr_test_uniform (-1.0f, 1.0f);
      ot_quantize (a, v);
      free (v);
    }
  else
    ot_fill (a, -1.0f, 1.0f);
}

/* The stored values of A's rows, [k, m, a2, a3] contiguous doubles.  */
static double *
weights_values (const tsr_tensor *a)
{
  int64_t k = a->ne[0], n = tsr_nelements (a);
  double *w = malloc (n * sizeof *w);
  float *row = malloc (k * sizeof *row);
  int64_t r = 0;
  for (int64_t i3 = 0; i3 < a->ne[3]; i3++)
    for (int64_t i2 = 0; i2 < a->ne[2]; i2++)
      for (int64_t i1 = 0; i1 < a->ne[1]; i1++, r++)
        {
          if (is_quantized (a->type))
            tsr_dequantize_row (a->type, ot_at (a, 0, i1, i2, i3), row, k);
          else
            for (int64_t i0 = 0; i0 < k; i0++)
              row[i0] = (float) ot_get (a, i0, i1, i2, i3);
          for (int64_t i0 = 0; i0 < k; i0++)
            w[r * k + i0] = row[i0];
        }
  free (row);
  return w;
}

/* Row (J, I2, I3) of B (read through its strides) into ROW, rounded to
   q8_0 by the reference quantizer if Q8.  */
static void
b_row (const tsr_tensor *b, int64_t j, int64_t i2, int64_t i3, int q8,
       float *row)
{
  int64_t k = b->ne[0];
  for (int64_t l = 0; l < k; l++)
    row[l] = (float) ot_get (b, l, j, i2, i3);
  if (q8)
    {
      struct tsr_block_q8_0 *q = malloc (tsr_row_size (TSR_TYPE_Q8_0, k));
      tsr_quantize_row (TSR_TYPE_Q8_0, row, q, k);
      tsr_dequantize_row (TSR_TYPE_Q8_0, q, row, k);
      free (q);
    }
}

/* The reference product, with b's rows rounded to q8_0 if Q8 (host
   data).  */
static double *
reference (const tsr_tensor *a, const double *w, const tsr_tensor *b,
           const int64_t *ne, int q8, double *amax, double *bmax)
{
  int64_t k = a->ne[0];
  double *want = malloc (ot_count (ne) * sizeof *want);
  float *row = malloc (k * sizeof *row);
  *amax = *bmax = 0;
  for (int64_t i = 0; i < tsr_nelements (a); i++)
    *amax = fmax (*amax, fabs (w[i]));
  for (int64_t i3 = 0; i3 < ne[3]; i3++)
    for (int64_t i2 = 0; i2 < ne[2]; i2++)
      for (int64_t j = 0; j < ne[1]; j++)
        {
          b_row (b, j, i2, i3, q8, row);
          for (int64_t l = 0; l < k; l++)
            *bmax = fmax (*bmax, fabs (ot_get (b, l, j, i2, i3)));
          for (int64_t i = 0; i < ne[0]; i++)
            {
              int64_t a2 = i2 / (ne[2] / a->ne[2]);
              int64_t a3 = i3 / (ne[3] / a->ne[3]);
              const double *wr = w + ((a3 * a->ne[2] + a2) * a->ne[1] + i)
                                     * k;
              double s = 0;
              for (int64_t l = 0; l < k; l++)
                s += wr[l] * row[l];
              want[ot_index (ne, i, j, i2, i3)] = s;
            }
        }
  free (row);
  return want;
}

/* Compare R (host data) with the reference for A, B: with quantized
   weights, the one of the two references (b as given, b rounded to
   q8_0) that R is closer to.  */
static void
compare (const char *desc, const tsr_tensor *r, const tsr_tensor *a,
         const tsr_tensor *b, const int64_t *ne)
{
  double amax, bmax, *w = weights_values (a);
  double *want = reference (a, w, b, ne, 0, &amax, &bmax);
  if (is_quantized (a->type))
    {
      double *wq = reference (a, w, b, ne, 1, &amax, &bmax);
      double e = 0, eq = 0;
      OT_FOR_EACH (r, i0, i1, i2, i3)
        {
          double g = ot_get (r, i0, i1, i2, i3);
          e = fmax (e, fabs (g - want[ot_index (ne, i0, i1, i2, i3)]));
          eq = fmax (eq, fabs (g - wq[ot_index (ne, i0, i1, i2, i3)]));
        }
      if (eq < e)
        {
          free (want);
          want = wq;
        }
      else
        free (wq);
    }
  ot_compare (desc, r, ne, want, 1e-4 * sqrt (a->ne[0]) * amax * bmax, 0);
  free (want);
  free (w);
}

/* B as an operand of the wanted kind, filled (but for the allocated
   mode, whose data are copied in later).  */
static tsr_tensor *
make_b (tsr_context *ctx, int mode, int64_t k, int64_t n, int64_t b2,
        int64_t b3)
{
  tsr_tensor *s;
  switch (mode)
    {
    case B_CONT_TRANSPOSED:
      s = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, n, k, b2, b3);
      ot_fill (s, -1.0f, 1.0f);
      return tsr_cont (ctx, tsr_transpose (ctx, s));
    case B_PERMUTED_BATCHES:
      s = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, k, b2, n, b3);
      ot_fill (s, -1.0f, 1.0f);
      return tsr_permute (ctx, s, 0, 2, 1, 3);
    default:
      s = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, k, n, b2, b3);
      if (mode == B_ALLOCATED)
        tsr_set_input (s);
      else
        ot_fill (s, -1.0f, 1.0f);
      return s;
    }
}

static void
check_mm (tsr_backend *be, tsr_type type, int64_t k, int64_t m, int64_t n,
          int64_t a2, int64_t a3, int64_t b2, int64_t b3, int mode)
{
  char desc[200];
  snprintf (desc, sizeof desc, "mul_mat %s [%ld,%ld,%ld,%ld] x f32"
            " [%ld,%ld,%ld,%ld]%s", tsr_type_name (type), (long) k, (long) m,
            (long) a2, (long) a3, (long) k, (long) n, (long) b2, (long) b3,
            b_modes[mode]);
  tsr_context *ctx = tsr_context_new (mode == B_ALLOCATED);
  tsr_tensor *a = tsr_new_tensor_4d (ctx, type, k, m, a2, a3);
  tsr_tensor *b = make_b (ctx, mode, k, n, b2, b3);
  tsr_tensor *r = tsr_mul_mat (ctx, a, b);
  int64_t ne[4] = { m, n, b2, b3 };
  if (mode == B_ALLOCATED)
    {
      /* Data live in the allocator's buffer: fill host tensors of a
         second context and copy them in.  */
      tsr_context *host = tsr_context_new (false);
      tsr_tensor *ha = tsr_new_tensor_4d (host, type, k, m, a2, a3);
      tsr_tensor *hb = tsr_new_tensor_4d (host, TSR_TYPE_F32, k, n, b2, b3);
      tsr_tensor *hr = tsr_new_tensor_4d (host, TSR_TYPE_F32, m, n, b2, b3);
      fill_weights (ha);
      ot_fill (hb, -1.0f, 1.0f);
      tsr_set_input (a);
      tsr_graph *g;
      tsr_gallocr *ga;
      int rc = ot_allocate (be, ctx, r, &g, &ga);
      if (rc == TSR_OK)
        rc = ot_compute_io (be, g, 2, (tsr_tensor *[]) { a, b },
                            (const void *[]) { ha->data, hb->data }, r, hr->data);
      if (rc != TSR_OK)
        tsr_test_result (0, "%s: %s", desc, tsr_last_error ());
      else
        compare (desc, hr, ha, hb, ne);
      tsr_gallocr_free (ga);
      tsr_context_free (host);
    }
  else
    {
      fill_weights (a);
      /* A cont (transpose) operand has been computed by then.  */
      if (ot_run (desc, be, ctx, r))
        compare (desc, r, a, b, ne);
    }
  tsr_context_free (ctx);
}

int
main (void)
{
  static const tsr_type types[] = { TSR_TYPE_F32, TSR_TYPE_F16, TSR_TYPE_BF16,
                                    TSR_TYPE_Q8_0, TSR_TYPE_Q4_0,
                                    TSR_TYPE_Q4_1, TSR_TYPE_Q5_0,
                                    TSR_TYPE_Q5_1, TSR_TYPE_IQ4_NL,
                                    TSR_TYPE_MXFP4 };
  const int n_types = (int) (sizeof types / sizeof types[0]);
  /* n = 1, 7, 33: dot products (integer ones for quantized weights,
     in groups of up to 8 rows of b); 48: the GEMM for float weights,
     integer dots for quantized ones; 80: the GEMM for every type.  */
  static const int64_t ns[] = { 1, 7, 33, 48, 80 };
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (6);
  for (int t = 0; t < n_types; t++)
    for (int i = 0; i < 5; i++)
      check_mm (be, types[t], 64, 16, ns[i], 1, 1, 1, 1, B_CONTIGUOUS);
  /* Block types: long rows (every partial vector group), batches.  */
  for (int t = 5; t < n_types; t++)
    {
      check_mm (be, types[t], 4128, 3, 2, 1, 1, 1, 1, B_CONTIGUOUS);
      check_mm (be, types[t], 96, 5, 3, 2, 1, 6, 1, B_CONTIGUOUS);
      check_mm (be, types[t], 64, 4, 2, 1, 1, 3, 1, B_PERMUTED_BATCHES);
    }
  /* Plain weights of the block types packed in groups of 8 rows as
     they are used (n >= 4, AVX2 and AVX-512 levels): a partial last
     group (13 rows, 21 with batches), a tile of 16 and more.  */
  for (int t = 3; t < n_types; t++)
    {
      check_mm (be, types[t], 96, 13, 4, 1, 1, 1, 1, B_CONTIGUOUS);
      check_mm (be, types[t], 160, 21, 9, 2, 1, 4, 1, B_CONTIGUOUS);
    }
  /* Row lengths that are no multiple of a vector width.  */
  for (int t = 0; t < 3; t++)
    {
      check_mm (be, types[t], 17, 3, 5, 1, 1, 1, 1, B_CONTIGUOUS);
      check_mm (be, types[t], 1, 1, 1, 1, 1, 1, 1, B_CONTIGUOUS);
    }
  /* Register tiles of float weights: column groups of even size (13 =
     5 + 4 + 4, 24 = 4 x 6), a partial row group, chunks along k and a
     tail of no whole vector.  */
  for (int t = 0; t < 3; t++)
    {
      check_mm (be, types[t], 2100, 37, 13, 1, 1, 1, 1, B_CONTIGUOUS);
      check_mm (be, types[t], 1030, 18, 24, 1, 1, 1, 1, B_CONTIGUOUS);
    }
  /* Long rows (k > 4096).  */
  check_mm (be, TSR_TYPE_F32, 4128, 3, 2, 1, 1, 1, 1, B_CONTIGUOUS);
  check_mm (be, TSR_TYPE_F16, 4128, 3, 2, 1, 1, 1, 1, B_CONTIGUOUS);
  check_mm (be, TSR_TYPE_Q8_0, 4128, 3, 2, 1, 1, 1, 1, B_CONTIGUOUS);
  check_mm (be, TSR_TYPE_Q4_0, 4128, 3, 2, 1, 1, 1, 1, B_CONTIGUOUS);
  /* Batches: b batch i2 uses a batch i2 / (b2 / a2); the same in 3.  */
  check_mm (be, TSR_TYPE_F32, 64, 5, 3, 2, 1, 6, 1, B_CONTIGUOUS);
  check_mm (be, TSR_TYPE_F16, 64, 5, 3, 2, 1, 6, 1, B_CONTIGUOUS);
  check_mm (be, TSR_TYPE_Q8_0, 64, 5, 3, 2, 1, 6, 1, B_CONTIGUOUS);
  check_mm (be, TSR_TYPE_Q4_0, 32, 4, 3, 1, 2, 2, 4, B_CONTIGUOUS);
  check_mm (be, TSR_TYPE_F32, 32, 4, 3, 2, 2, 6, 4, B_CONTIGUOUS);
  /* Activations that are not a plain contiguous tensor.  */
  check_mm (be, TSR_TYPE_F32, 48, 6, 5, 1, 1, 1, 1, B_CONT_TRANSPOSED);
  check_mm (be, TSR_TYPE_Q8_0, 64, 6, 5, 1, 1, 3, 1, B_CONT_TRANSPOSED);
  check_mm (be, TSR_TYPE_F32, 32, 4, 7, 1, 1, 3, 1, B_PERMUTED_BATCHES);
  check_mm (be, TSR_TYPE_F16, 64, 4, 2, 2, 1, 4, 1, B_PERMUTED_BATCHES);
  check_mm (be, TSR_TYPE_Q4_0, 64, 4, 2, 1, 1, 3, 1, B_PERMUTED_BATCHES);
  /* In a no_alloc context through the graph allocator.  */
  check_mm (be, TSR_TYPE_F32, 64, 16, 7, 1, 1, 1, 1, B_ALLOCATED);
  check_mm (be, TSR_TYPE_Q8_0, 64, 8, 3, 1, 1, 2, 1, B_ALLOCATED);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
