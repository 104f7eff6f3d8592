/* Area: the OpenCL kernels that quantize (modules/opencl/ocl-copy.cl and
   ocl-fit.cl): cpy/cont and set_rows from f32 into q8_0, q4_0, q4_1,
   q5_0, q5_1, iq4_nl and mxfp4.
   Purpose: every block the device writes has the bytes the library's
   reference quantizer (tsr_quantize_row, an independent C
   implementation of the same searches) gives for the same 32 floats:
   random rows of several scales and signs, and the blocks that take
   the searches' other branches -- all zeros, a constant, one value, a
   value and its negative, steps of exactly half a level (rounding
   ties), subnormals, values near the float maximum, and a NaN; set_rows
   writes the rows its indices choose (the later of repeated indices),
   bytes as the reference's, and leaves the others.  Devices without
   cl_khr_fp64 refuse these copies (supports_op), which is checked
   instead.
   Limitations: the super-block types are quantized by the CPU (their
   copies are refused: tessera.opencl/ops.c).  */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ocl-test.h"

#define COLS 128                /* 4 blocks a row */
#define ROWS 24

static const tsr_type types[] = {
  TSR_TYPE_Q8_0, TSR_TYPE_Q4_0, TSR_TYPE_Q4_1, TSR_TYPE_Q5_0,
  TSR_TYPE_Q5_1, TSR_TYPE_IQ4_NL, TSR_TYPE_MXFP4,
};

/* Row R of the source: random rows, then the special blocks.  */
static void
fill_row (float *x, int r)
{
  for (int i = 0; i < COLS; i++)
    {
      float u = tsr_test_uniform (-1, 1);
      switch (r)
        {
        case 0: x[i] = 0.0f; break;
        case 1: x[i] = 0.375f; break;                       /* constant */
        case 2: x[i] = i % 32 == 7 ? -2.5f : 0.0f; break;   /* one value */
        case 3: x[i] = i % 2 ? 1.0f : -1.0f; break;
        case 4: x[i] = (float) (i % 32 - 16) * 0.5f; break; /* ties */
        case 5: x[i] = u * 1e-41f; break;                   /* subnormal */
        case 6: x[i] = u * 3e38f; break;                    /* near max */
        case 7: x[i] = i == 40 ? NAN : u; break;            /* a NaN */
        case 8: x[i] = u + 3.0f; break;                     /* one sign */
        case 9: x[i] = -u * u * 1e-3f; break;
        default:
          x[i] = u * powf (10.0f, (float) (r % 7 - 3));
          if (r % 3 == 0 && i % 32 == 5)
            x[i] *= 40.0f;                                  /* outlier */
        }
    }
}

/* Blocks of ROWS rows of TYPE whose bytes differ from REF's, and the
   first of them in *FIRST.  */
static int
blocks_differ (tsr_type type, const unsigned char *got,
               const unsigned char *ref, int rows, int *first)
{
  size_t bsize = tsr_row_size (type, 32);
  int bad = 0;
  *first = -1;
  for (int b = 0; b < rows * COLS / 32; b++)
    if (memcmp (got + b * bsize, ref + b * bsize, bsize) != 0)
      {
        if (*first < 0)
          *first = b;
        bad++;
      }
  return bad;
}

static void
check_type (tsr_backend *be, tsr_device *dev, tsr_type type, const float *src)
{
  const char *name = tsr_type_name (type);
  size_t rsize = tsr_row_size (type, COLS);
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, COLS, ROWS);
  tsr_tensor *q = tsr_cast (ctx, a, type);
  /* set_rows: 6 source rows into a table of ROWS rows, indices with a
     repeat (the later one wins).  */
  tsr_tensor *table = tsr_new_tensor_2d (ctx, type, COLS, ROWS);
  tsr_tensor *six = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, COLS, 6);
  tsr_tensor *idx = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 6);
  tsr_tensor *sr = tsr_set_rows (ctx, table, six, idx);

  if (!tsr_device_supports_op (dev, q))
    {
      tsr_test_unsupported ("%s: no cl_khr_fp64 on this device",
                            name);
      CHECK (!tsr_device_supports_op (dev, sr),
             "%s: set_rows refused with the copy", name);
      tsr_context_free (ctx);
      return;
    }
  CHECK (tsr_device_supports_op (dev, sr), "%s: set_rows supported", name);
  tsr_graph *g = tsr_graph_new (ctx);
  tsr_graph_build (g, q);
  tsr_graph_build (g, sr);
  tsr_buffer *buf = tsr_context_alloc_tensors (ctx,
                                               tsr_backend_buffer_type (be));
  unsigned char *ref = malloc (rsize * ROWS), *got = malloc (rsize * ROWS);
  unsigned char *tab0 = malloc (rsize * ROWS);
  static const int32_t rows[6] = { 3, 0, 17, 3, 9, 23 };
  float rowsrc[6 * COLS];
  for (int k = 0; k < 6; k++)
    memcpy (rowsrc + k * COLS, src + (5 * k + 2) % ROWS * COLS,
            COLS * sizeof (float));
  /* The table's first contents: the quantized rows in reverse.  */
  for (int r = 0; r < ROWS; r++)
    tsr_quantize_row (type, src + (ROWS - 1 - r) * COLS, tab0 + r * rsize,
                      COLS);
  bool ok = buf && tsr_tensor_set (a, src, 0, sizeof (float) * COLS * ROWS)
                   == TSR_OK
            && tsr_tensor_set (table, tab0, 0, rsize * ROWS) == TSR_OK
            && tsr_tensor_set (six, rowsrc, 0, sizeof rowsrc) == TSR_OK
            && tsr_tensor_set (idx, rows, 0, sizeof rows) == TSR_OK
            && tsr_backend_graph_compute (be, g) == TSR_OK;
  CHECK (ok, "%s: the copies compute: %s", name, ok ? "" : tsr_last_error ());
  if (ok)
    {
      int first, bad;
      tsr_quantize_row (type, src, ref, (int64_t) COLS * ROWS);
      tsr_tensor_get (q, got, 0, rsize * ROWS);
      bad = blocks_differ (type, got, ref, ROWS, &first);
      CHECK (bad == 0, "%s: cpy from f32: every block as the reference "
             "quantizer's (%d of %d differ, the first in row %d)", name,
             bad, ROWS * COLS / 32, first < 0 ? -1 : first / (COLS / 32));
      memcpy (ref, tab0, rsize * ROWS);
      for (int k = 0; k < 6; k++)
        tsr_quantize_row (type, rowsrc + k * COLS, ref + rows[k] * rsize,
                          COLS);
      tsr_tensor_get (table, got, 0, rsize * ROWS);
      bad = blocks_differ (type, got, ref, ROWS, &first);
      CHECK (bad == 0, "%s: set_rows: the rows chosen as the reference "
             "quantizes them, the later of a repeat, the others kept (%d "
             "blocks differ)", name, bad);
    }
  free (ref);
  free (got);
  free (tab0);
  tsr_buffer_free (buf);
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_device *dev = ocl_test_device ();
  if (!dev)
    return TSR_TEST_EXIT ();
  tsr_backend *be = tsr_device_init (dev, NULL);
  CHECK (be != NULL, "OpenCL backend: %s", be ? "" : tsr_last_error ());
  if (!be)
    return TSR_TEST_EXIT ();
  float *src = malloc (sizeof (float) * COLS * ROWS);
  tsr_test_seed (77);
  for (int r = 0; r < ROWS; r++)
    fill_row (src + r * COLS, r);
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    check_type (be, dev, types[t], src);
  free (src);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
