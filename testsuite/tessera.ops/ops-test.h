/* ops-test.h - helpers shared by the tessera.ops test programs: the CPU
   backend, running a graph, reading and writing tensor elements
   through their strides, and comparing results with references the
   tests compute in double precision.  Every helper that reports prints
   exactly one check line.  */
#ifndef OPS_TEST_H
#define OPS_TEST_H

#include <stdint.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

/* One check line: DESC, and on failure ": DETAIL".  */
static void
ot_report (int ok, const char *desc, const char *detail)
{
  if (ok)
    tsr_test_result (1, "%s", desc);
  else
    tsr_test_result (0, "%s: %s", desc, detail ? detail : "");
}

static tsr_backend *
ot_backend (void)
{
  tsr_backend *be = tsr_backend_init_by_name ("cpu", NULL);
  ot_report (be != NULL, "cpu backend initializes", tsr_last_error ());
  return be;
}

/* Build the graph of RESULT in CTX and compute it on BE.  */
static int
ot_compute (tsr_backend *be, tsr_context *ctx, tsr_tensor *result)
{
  tsr_graph *g = tsr_graph_new (ctx);
  if (!g)
    return TSR_ERR_NO_MEMORY;
  int rc = tsr_graph_build (g, result);
  if (rc != TSR_OK)
    return rc;
  return tsr_backend_graph_compute (be, g);
}

/* Compute RESULT; on failure print DESC as a FAIL and return 0.  */
static int
ot_run (const char *desc, tsr_backend *be, tsr_context *ctx,
        tsr_tensor *result)
{
  if (!result)
    {
      char msg[512];
      snprintf (msg, sizeof msg, "builder returned NULL: %s",
                tsr_last_error ());
      ot_report (0, desc, msg);
      return 0;
    }
  int rc = ot_compute (be, ctx, result);
  if (rc != TSR_OK)
    {
      char msg[512];
      snprintf (msg, sizeof msg, "compute failed (%d): %s", rc,
                tsr_last_error ());
      ot_report (0, desc, msg);
      return 0;
    }
  return 1;
}

/* Place the graph of RESULT (in the no_alloc context CTX) in a buffer
   of BE's type with a graph allocator.  The caller frees *GA.  */
static int
ot_allocate (tsr_backend *be, tsr_context *ctx, tsr_tensor *result,
             tsr_graph **g, tsr_gallocr **ga)
{
  *g = tsr_graph_new (ctx);
  *ga = tsr_gallocr_new (tsr_backend_buffer_type (be));
  if (!*g || !*ga)
    return TSR_ERR_NO_MEMORY;
  int rc = tsr_graph_build (*g, result);
  return rc != TSR_OK ? rc : tsr_gallocr_alloc_graph (*ga, *g);
}

/* Copy the N tensors IN[i] in from DATA[i] (whole tensors), compute G
   and copy OUT out to BUF.  */
static int
ot_compute_io (tsr_backend *be, tsr_graph *g, int n, tsr_tensor *const *in,
               const void *const *data, tsr_tensor *out, void *buf)
{
  int rc = TSR_OK;
  for (int i = 0; rc == TSR_OK && i < n; i++)
    rc = tsr_tensor_set (in[i], data[i], 0, tsr_nbytes (in[i]));
  if (rc == TSR_OK)
    rc = tsr_backend_graph_compute (be, g);
  if (rc == TSR_OK)
    rc = tsr_tensor_get (out, buf, 0, tsr_nbytes (out));
  return rc;
}

static void *
ot_at (const tsr_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
  return (char *) t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2]
         + i3 * t->nb[3];
}

/* Element (i0, i1, i2, i3) of an f32, f16, bf16 or i32 tensor with
   host data.  */
static double
ot_get (const tsr_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
  const void *p = ot_at (t, i0, i1, i2, i3);
  float f;
  uint16_t h;
  int32_t i;
  switch (t->type)
    {
    case TSR_TYPE_F32:
      memcpy (&f, p, 4);
      return f;
    case TSR_TYPE_F16:
      memcpy (&h, p, 2);
      return tsr_fp16_to_fp32 (h);
    case TSR_TYPE_BF16:
      memcpy (&h, p, 2);
      return tsr_bf16_to_fp32 (h);
    case TSR_TYPE_I32:
      memcpy (&i, p, 4);
      return i;
    default:
      return NAN;
    }
}

static void
ot_set (tsr_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3,
        double v)
{
  void *p = ot_at (t, i0, i1, i2, i3);
  float f = (float) v;
  uint16_t h;
  int32_t i = (int32_t) v;
  switch (t->type)
    {
    case TSR_TYPE_F32:
      memcpy (p, &f, 4);
      break;
    case TSR_TYPE_F16:
      h = tsr_fp32_to_fp16 (f);
      memcpy (p, &h, 2);
      break;
    case TSR_TYPE_BF16:
      h = tsr_fp32_to_bf16 (f);
      memcpy (p, &h, 2);
      break;
    case TSR_TYPE_I32:
      memcpy (p, &i, 4);
      break;
    default:
      break;
    }
}

#define OT_FOR_EACH(t, i0, i1, i2, i3)                                     \
  for (int64_t i3 = 0; i3 < (t)->ne[3]; i3++)                              \
    for (int64_t i2 = 0; i2 < (t)->ne[2]; i2++)                            \
      for (int64_t i1 = 0; i1 < (t)->ne[1]; i1++)                          \
        for (int64_t i0 = 0; i0 < (t)->ne[0]; i0++)

/* Fill a float tensor with host data with uniform values in [LO, HI).  */
static void
ot_fill (tsr_tensor *t, float lo, float hi)
{
  OT_FOR_EACH (t, i0, i1, i2, i3)
    ot_set (t, i0, i1, i2, i3, tsr_test_uniform (lo, hi));
}

/* Flat index of (i0..i3) in a contiguous array of shape NE.  */
static int64_t
ot_index (const int64_t *ne, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
  return ((i3 * ne[2] + i2) * ne[1] + i1) * ne[0] + i0;
}

static int64_t
ot_count (const int64_t *ne)
{
  return ne[0] * ne[1] * ne[2] * ne[3];
}

/* Check that T has shape NE and |T - WANT| <= ATOL + RTOL |WANT| for
   every element (WANT contiguous in shape NE).  One check line.  */
static int
ot_compare (const char *desc, const tsr_tensor *t, const int64_t *ne,
            const double *want, double atol, double rtol)
{
  char msg[512];
  if (!t)
    {
      snprintf (msg, sizeof msg, "no result: %s", tsr_last_error ());
      ot_report (0, desc, msg);
      return 0;
    }
  for (int d = 0; d < 4; d++)
    if (t->ne[d] != ne[d])
      {
        snprintf (msg, sizeof msg, "shape [%ld,%ld,%ld,%ld], want"
                  " [%ld,%ld,%ld,%ld]", (long) t->ne[0], (long) t->ne[1],
                  (long) t->ne[2], (long) t->ne[3], (long) ne[0],
                  (long) ne[1], (long) ne[2], (long) ne[3]);
        ot_report (0, desc, msg);
        return 0;
      }
  long bad = 0;
  double worst = 0;
  OT_FOR_EACH (t, i0, i1, i2, i3)
    {
      double w = want[ot_index (ne, i0, i1, i2, i3)];
      double g = ot_get (t, i0, i1, i2, i3);
      if (g == w || (isnan (w) && isnan (g)))
        continue;
      double err = fabs (g - w);
      if (!(err <= atol + rtol * fabs (w)) || isinf (w))
        {
          if (!bad++)
            snprintf (msg, sizeof msg, "at [%ld,%ld,%ld,%ld] got %.9g want"
                      " %.9g", (long) i0, (long) i1, (long) i2, (long) i3,
                      g, w);
          if (!(err <= worst))
            worst = err;
        }
    }
  if (bad)
    {
      size_t len = strlen (msg);
      snprintf (msg + len, sizeof msg - len, " (%ld wrong, worst |err| %.3g)",
                bad, worst);
    }
  ot_report (bad == 0, desc, msg);
  return bad == 0;
}

/* Quantize rows: T (q8_0 or q4_0, host data, contiguous) gets SRC
   (ne[0] floats per row, rows in order) through the reference.  */
static void
ot_quantize (tsr_tensor *t, const float *src)
{
  int64_t rows = tsr_nrows (t);
  size_t rs = tsr_row_size (t->type, t->ne[0]);
  for (int64_t r = 0; r < rows; r++)
    tsr_quantize_row (t->type, src + r * t->ne[0], (char *) t->data + r * rs,
                      t->ne[0]);
}

#endif /* OPS_TEST_H */
