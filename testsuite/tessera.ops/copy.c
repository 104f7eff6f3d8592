/* cast, cpy, dup and cont: every conversion between f32, f16 and bf16
   (exact: the scalar round-to-nearest-even conversions checked in
   tessera.types), f32 to the block types (q8_0, q4_0, q4_1, q5_0,
   q5_1, iq4_nl, mxfp4) and back against the reference row
   (de)quantizers, i32 <-> f32, copies into views and between
   shapes, and contiguous copies of permuted tensors.  */
#include "ops-test.h"

/* The value V takes when stored as TYPE.  */
static double
stored (tsr_type type, double v)
{
  switch (type)
    {
    case TSR_TYPE_F16:
      return tsr_fp16_to_fp32 (tsr_fp32_to_fp16 ((float) v));
    case TSR_TYPE_BF16:
      return tsr_bf16_to_fp32 (tsr_fp32_to_bf16 ((float) v));
    default:
      return (float) v;
    }
}

/* Random values, and at the front some that overflow, underflow or
   are exact in the smaller types.  */
static void
fill_values (tsr_tensor *t)
{
  static const float special[] = { 0.0f, -0.0f, 65504.0f, 1e5f, -7e4f,
                                   5.9604645e-8f, 1e-30f, 1.0f, -2.5f,
                                   3.3895314e38f, 1.00048828125f };
  int64_t k = 0;
  OT_FOR_EACH (t, i0, i1, i2, i3)
    {
      double v = k < (int64_t) (sizeof special / sizeof special[0])
                 ? special[k] : tsr_test_uniform (-100.0f, 100.0f);
      ot_set (t, i0, i1, i2, i3, v);
      k++;
    }
}

static void
check_float_cast (tsr_backend *be, tsr_type from, tsr_type to)
{
  char desc[120];
  snprintf (desc, sizeof desc, "cast %s [37,3] to %s is exact round to"
            " nearest even", tsr_type_name (from), tsr_type_name (to));
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, from, 37, 3);
  fill_values (x);
  tsr_tensor *r = tsr_cast (ctx, x, to);
  if (ot_run (desc, be, ctx, r))
    {
      double want[37 * 3];
      OT_FOR_EACH (x, i0, i1, i2, i3)
        want[i1 * 37 + i0] = stored (to, ot_get (x, i0, i1, i2, i3));
      if (r->type != to)
        tsr_test_result (0, "%s: result type %d", desc, r->type);
      else
        ot_compare (desc, r, x->ne, want, 0, 0);
    }
  tsr_context_free (ctx);
}

/* Blocks from the backend against the reference quantizer: for q8_0
   and q4_0 the same scale bits, quants off by at most one (a rounding
   tie decided differently); the other types (whose quantizers search)
   bit for bit.  */
static int
same_blocks (tsr_type type, const unsigned char *got,
             const unsigned char *ref, int nblocks, char *why, size_t len)
{
  size_t bs = tsr_row_size (type, 32);
  for (int b = 0; b < nblocks; b++)
    {
      const unsigned char *g = got + b * bs, *r = ref + b * bs;
      if (type != TSR_TYPE_Q8_0 && type != TSR_TYPE_Q4_0)
        {
          if (memcmp (g, r, bs) == 0)
            continue;
          snprintf (why, len, "block %d differs from tsr_quantize_row's", b);
          return 0;
        }
      if (memcmp (g, r, 2) != 0)
        {
          snprintf (why, len, "block %d scale 0x%02x%02x want 0x%02x%02x", b,
                    g[1], g[0], r[1], r[0]);
          return 0;
        }
      for (int j = 0; j < 32; j++)
        {
          int qg, qr;
          if (type == TSR_TYPE_Q8_0)
            qg = (int8_t) g[2 + j], qr = (int8_t) r[2 + j];
          else
            qg = (g[2 + j % 16] >> (j / 16 * 4)) & 15,
            qr = (r[2 + j % 16] >> (j / 16 * 4)) & 15;
          if (abs (qg - qr) > 1)
            {
              snprintf (why, len, "block %d element %d quant %d want %d", b, j,
                        qg, qr);
              return 0;
            }
        }
    }
  return 1;
}

static void
check_quant_cast (tsr_backend *be, tsr_type qt)
{
  enum { K = 64, R = 3 };
  char d1[120], d2[120], why[200];
  const char *name = tsr_type_name (qt);
  snprintf (d1, sizeof d1, "cast f32 [64,3] to %s matches tsr_quantize_row",
            name);
  snprintf (d2, sizeof d2, "cast %s [64,3] to f32 equals tsr_dequantize_row",
            name);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, K, R);
  ot_fill (x, -3.0f, 3.0f);
  tsr_tensor *q = tsr_cast (ctx, x, qt);
  tsr_tensor *back = tsr_cast (ctx, q, TSR_TYPE_F32);
  if (!ot_run (d1, be, ctx, back))
    tsr_test_result (0, "%s: not computed", d2);
  else
    {
      unsigned char ref[R * K / 32 * 34];
      float deq[K * R];
      double want[K * R];
      size_t rs = tsr_row_size (qt, K);
      for (int r = 0; r < R; r++)
        tsr_quantize_row (qt, (float *) x->data + r * K, ref + r * rs, K);
      int ok = q->type == qt && same_blocks (qt, q->data, ref, R * K / 32, why,
                                             sizeof why);
      if (q->type != qt)
        snprintf (why, sizeof why, "type %d", q->type);
      ot_report (ok, d1, why);
      tsr_dequantize_row (qt, q->data, deq, K * R);
      for (int i = 0; i < K * R; i++)
        want[i] = deq[i];
      ot_compare (d2, back, x->ne, want, 0, 0);
    }
  tsr_context_free (ctx);
}

static void
check_i32 (tsr_backend *be)
{
  enum { N = 33 };
  const char *d1 = "cast f32 integers to i32 is exact";
  const char *d2 = "cast i32 to f32 is exact for |v| <= 2^24";
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, N);
  tsr_tensor *y = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, N);
  double want[N], wy[N];
  for (int i = 0; i < N; i++)
    {
      want[i] = i == 0 ? 16777216 : i == 1 ? -16777216 : i == 2 ? 0
                : floor (tsr_test_uniform (-1000.0f, 1000.0f));
      ot_set (x, i, 0, 0, 0, want[i]);
      wy[i] = i == 0 ? -2147483520.0 : i == 1 ? 16777215
              : floor (tsr_test_uniform (-1e6f, 1e6f));
      ot_set (y, i, 0, 0, 0, wy[i]);
    }
  tsr_tensor *r = tsr_cast (ctx, x, TSR_TYPE_I32);
  if (ot_run (d1, be, ctx, r))
    {
      if (r->type != TSR_TYPE_I32)
        tsr_test_result (0, "%s: result type %d", d1, r->type);
      else
        ot_compare (d1, r, x->ne, want, 0, 0);
    }
  r = tsr_cast (ctx, y, TSR_TYPE_F32);
  if (ot_run (d2, be, ctx, r))
    ot_compare (d2, r, y->ne, wy, 0, 0);
  tsr_context_free (ctx);
}

static void
check_cpy (tsr_backend *be)
{
  const char *desc;
  tsr_context *ctx = tsr_context_new (false);

  desc = "cpy f32 [6,4] into f32 [8,3] keeps element order";
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 6, 4);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 8, 3);
  ot_fill (a, -9.0f, 9.0f);
  ot_fill (b, 50.0f, 60.0f);
  if (ot_run (desc, be, ctx, tsr_cpy (ctx, a, b)))
    {
      double want[24];
      for (int i = 0; i < 24; i++)
        want[i] = ((float *) a->data)[i];
      ot_compare (desc, b, b->ne, want, 0, 0);
    }

  desc = "cpy f32 [5,3] into a view of f32 [9,6] leaves the rest alone";
  tsr_tensor *big = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 9, 6);
  tsr_tensor *s = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 5, 3);
  ot_fill (big, 100.0f, 200.0f);
  ot_fill (s, -1.0f, 1.0f);
  double wbig[54];
  OT_FOR_EACH (big, i0, i1, i2, i3)
    {
      int in = i0 >= 3 && i0 < 8 && i1 >= 2 && i1 < 5;
      wbig[i1 * 9 + i0] = in ? ot_get (s, i0 - 3, i1 - 2, 0, 0)
                             : ot_get (big, i0, i1, i2, i3);
    }
  tsr_tensor *v = tsr_view_2d (ctx, big, 5, 3, big->nb[1],
                               2 * big->nb[1] + 3 * sizeof (float));
  if (ot_run (desc, be, ctx, tsr_cpy (ctx, s, v)))
    ot_compare (desc, big, big->ne, wbig, 0, 0);

  desc = "cpy f32 [16,2] into f16 [32] converts each element";
  tsr_tensor *c = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 16, 2);
  tsr_tensor *h = tsr_new_tensor_1d (ctx, TSR_TYPE_F16, 32);
  ot_fill (c, -1000.0f, 1000.0f);
  if (ot_run (desc, be, ctx, tsr_cpy (ctx, c, h)))
    {
      double want[32];
      for (int i = 0; i < 32; i++)
        want[i] = stored (TSR_TYPE_F16, ((float *) c->data)[i]);
      ot_compare (desc, h, h->ne, want, 0, 0);
    }

  desc = "cpy of a transposed view into f32 [8,5]";
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 5, 8);
  tsr_tensor *y = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 8, 5);
  ot_fill (x, -1.0f, 1.0f);
  if (ot_run (desc, be, ctx, tsr_cpy (ctx, tsr_transpose (ctx, x), y)))
    {
      double want[40];
      OT_FOR_EACH (y, i0, i1, i2, i3)
        want[i1 * 8 + i0] = ot_get (x, i1, i0, i2, i3);
      ot_compare (desc, y, y->ne, want, 0, 0);
    }

  /* f32 [4,3] into rows 1..3, columns 2..5 of f16 [10,4]: a strided
     destination of another type.  */
  desc = "cpy f32 [4,3] into a strided f16 view converts in place";
  tsr_tensor *hb = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, 10, 4);
  tsr_tensor *src = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 3);
  ot_fill (hb, 10.0f, 20.0f);
  ot_fill (src, -3.0f, 3.0f);
  double wh[40];
  OT_FOR_EACH (hb, i0, i1, i2, i3)
    {
      int in = i0 >= 2 && i0 < 6 && i1 >= 1;
      wh[i1 * 10 + i0] = in ? stored (TSR_TYPE_F16, ot_get (src, i0 - 2, i1 - 1, 0, 0))
                            : ot_get (hb, i0, i1, i2, i3);
    }
  v = tsr_view_2d (ctx, hb, 4, 3, hb->nb[1], hb->nb[1] + 2 * hb->nb[0]);
  if (ot_run (desc, be, ctx, tsr_cpy (ctx, src, v)))
    ot_compare (desc, hb, hb->ne, wh, 0, 0);

  desc = "cpy f32 [64,2] into q8_0 [64,2] matches tsr_quantize_row";
  tsr_tensor *qs = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 64, 2);
  tsr_tensor *qd = tsr_new_tensor_2d (ctx, TSR_TYPE_Q8_0, 64, 2);
  ot_fill (qs, -50.0f, 50.0f);
  if (ot_run (desc, be, ctx, tsr_cpy (ctx, qs, qd)))
    {
      unsigned char ref[4 * 34];
      char why[200] = "";
      tsr_quantize_row (TSR_TYPE_Q8_0, qs->data, ref, 128);
      ot_report (same_blocks (TSR_TYPE_Q8_0, qd->data, ref, 4, why, sizeof why),
                 desc, why);
    }
  tsr_context_free (ctx);
}

static void
check_dup_cont (tsr_backend *be)
{
  const char *desc;
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x3 = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 6, 4, 3);
  ot_fill (x3, -1.0f, 1.0f);
  double want[2 * 3 * 4 * 5];

  desc = "dup of a permuted [6,3,4] view is a contiguous copy";
  tsr_tensor *r = tsr_dup (ctx, tsr_permute (ctx, x3, 0, 2, 1, 3));
  if (ot_run (desc, be, ctx, r))
    {
      for (int i2 = 0; i2 < 4; i2++)
        for (int i1 = 0; i1 < 3; i1++)
          for (int i0 = 0; i0 < 6; i0++)
            want[(i2 * 3 + i1) * 6 + i0] = ot_get (x3, i0, i2, i1, 0);
      if (!tsr_is_contiguous (r))
        tsr_test_result (0, "%s: result not contiguous", desc);
      else
        ot_compare (desc, r, (int64_t[]) { 6, 3, 4, 1 }, want, 0, 0);
    }

  desc = "dup of an f16 tensor copies its values";
  tsr_tensor *h = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, 17, 3);
  ot_fill (h, -70000.0f, 70000.0f);
  r = tsr_dup (ctx, h);
  if (ot_run (desc, be, ctx, r))
    {
      OT_FOR_EACH (h, i0, i1, i2, i3)
        want[i1 * 17 + i0] = ot_get (h, i0, i1, i2, i3);
      if (r->type != TSR_TYPE_F16)
        tsr_test_result (0, "%s: result type %d", desc, r->type);
      else
        ot_compare (desc, r, h->ne, want, 0, 0);
    }

  desc = "cont of a transposed [6,4] view";
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 6);
  ot_fill (x, -1.0f, 1.0f);
  r = tsr_cont (ctx, tsr_transpose (ctx, x));
  if (ot_run (desc, be, ctx, r))
    {
      for (int i1 = 0; i1 < 4; i1++)
        for (int i0 = 0; i0 < 6; i0++)
          want[i1 * 6 + i0] = ot_get (x, i1, i0, 0, 0);
      if (!tsr_is_contiguous (r))
        tsr_test_result (0, "%s: result not contiguous", desc);
      else
        ot_compare (desc, r, (int64_t[]) { 6, 4, 1, 1 }, want, 0, 0);
    }

  /* a [3,4,5,2] permuted (2,0,1,3) is [4,5,3,2] with
     r (j0, j1, j2, j3) = a (j2, j0, j1, j3).  */
  desc = "cont of a 4d permuted view (2,0,1,3)";
  tsr_tensor *a = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 3, 4, 5, 2);
  ot_fill (a, -1.0f, 1.0f);
  r = tsr_cont (ctx, tsr_permute (ctx, a, 2, 0, 1, 3));
  if (ot_run (desc, be, ctx, r))
    {
      int64_t ne[4] = { 4, 5, 3, 2 };
      for (int j3 = 0; j3 < 2; j3++)
        for (int j2 = 0; j2 < 3; j2++)
          for (int j1 = 0; j1 < 5; j1++)
            for (int j0 = 0; j0 < 4; j0++)
              want[ot_index (ne, j0, j1, j2, j3)] = ot_get (a, j2, j0, j1, j3);
      if (!tsr_is_contiguous (r))
        tsr_test_result (0, "%s: result not contiguous", desc);
      else
        ot_compare (desc, r, ne, want, 0, 0);
    }

  desc = "cont of a contiguous tensor keeps its values";
  r = tsr_cont (ctx, x);
  if (ot_run (desc, be, ctx, r))
    {
      OT_FOR_EACH (x, i0, i1, i2, i3)
        want[i1 * 4 + i0] = ot_get (x, i0, i1, i2, i3);
      ot_compare (desc, r, x->ne, want, 0, 0);
    }
  tsr_context_free (ctx);
}

/* x -> f16 -> bf16 -> f32 in a no_alloc context through the graph
   allocator.  */
static void
check_allocated (tsr_backend *be)
{
  enum { N = 100 };
  const char *desc = "cast chain f32 -> f16 -> bf16 -> f32 through the graph"
                     " allocator";
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, N);
  tsr_set_input (x);
  tsr_tensor *r = tsr_cast (ctx, tsr_cast (ctx, tsr_cast (ctx, x, TSR_TYPE_F16),
                                           TSR_TYPE_BF16), TSR_TYPE_F32);
  tsr_graph *g;
  tsr_gallocr *ga;
  int rc = ot_allocate (be, ctx, r, &g, &ga);
  float v[N], out[N];
  for (int i = 0; i < N; i++)
    v[i] = tsr_test_uniform (-300.0f, 300.0f);
  if (rc == TSR_OK)
    rc = ot_compute_io (be, g, 1, &x, (const void *[]) { v }, r, out);
  if (rc != TSR_OK)
    tsr_test_result (0, "%s: %s", desc, tsr_last_error ());
  else
    {
      int bad = -1;
      for (int i = N - 1; i >= 0; i--)
        if (out[i] != stored (TSR_TYPE_BF16, stored (TSR_TYPE_F16, v[i])))
          bad = i;
      if (bad >= 0)
        tsr_test_result (0, "%s: element %d of %.9g is %.9g", desc, bad,
                         (double) v[bad], (double) out[bad]);
      else
        tsr_test_result (1, "%s", desc);
    }
  tsr_gallocr_free (ga);
  tsr_context_free (ctx);
}

int
main (void)
{
  static const tsr_type ft[] = { TSR_TYPE_F32, TSR_TYPE_F16, TSR_TYPE_BF16 };
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (3);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      if (i != j)
        check_float_cast (be, ft[i], ft[j]);
  check_quant_cast (be, TSR_TYPE_Q8_0);
  check_quant_cast (be, TSR_TYPE_Q4_0);
  check_quant_cast (be, TSR_TYPE_Q4_1);
  check_quant_cast (be, TSR_TYPE_Q5_0);
  check_quant_cast (be, TSR_TYPE_Q5_1);
  check_quant_cast (be, TSR_TYPE_IQ4_NL);
  check_quant_cast (be, TSR_TYPE_MXFP4);
  check_i32 (be);
  check_cpy (be);
  check_dup_cont (be);
  check_allocated (be);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
