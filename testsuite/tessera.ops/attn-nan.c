/* Area: flash_attn_ext with non-finite inputs, on every device that
   computes it (CPU kernels; OpenCL and CUDA where built in).
   Purpose: attention must not hide a NaN: a query row holding a NaN
   gives NaN outputs (before, the row's NaN sum became zeros, a
   plausible-looking result); a row whose keys are all masked still
   gives zeros, and the other rows stay finite.  */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

enum { D = 16, NKV = 12, NQ = 3 };

static void
check_device (tsr_device *dev)
{
  const char *name = tsr_device_name (dev);
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *q = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, D, NQ, 1);
  tsr_tensor *k = tsr_new_tensor_3d (ctx, TSR_TYPE_F16, D, NKV, 1);
  tsr_tensor *v = tsr_new_tensor_3d (ctx, TSR_TYPE_F16, D, NKV, 1);
  tsr_tensor *m = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, NKV, NQ);
  tsr_tensor *out = tsr_flash_attn_ext (ctx, q, k, v, m, 0.25f);
  if (!out || !tsr_device_supports_op (dev, out))
    {
      tsr_test_unsupported ("%s: no flash_attn_ext here", name);
      tsr_context_free (ctx);
      return;
    }
  tsr_backend *be = tsr_device_init (dev, NULL);
  tsr_graph *g = tsr_graph_new (ctx);
  tsr_graph_build (g, out);
  tsr_buffer *buf = be ? tsr_context_alloc_tensors
                           (ctx, tsr_backend_buffer_type (be)) : NULL;
  CHECK (buf != NULL, "%s: buffers (%s)", name, buf ? "" : tsr_last_error ());
  if (buf)
    {
      float qv[D * NQ], o[D * NQ];
      tsr_fp16_t kv[D * NKV], vv[D * NKV], mv[NKV * NQ];
      tsr_test_seed (3);
      for (int i = 0; i < D * NQ; i++)
        qv[i] = tsr_test_uniform (-1, 1);
      qv[D * 1 + 5] = NAN;                    /* row 1 holds a NaN */
      for (int i = 0; i < D * NKV; i++)
        {
          kv[i] = tsr_fp32_to_fp16 (tsr_test_uniform (-1, 1));
          vv[i] = tsr_fp32_to_fp16 (tsr_test_uniform (-1, 1));
        }
      for (int r = 0; r < NQ; r++)
        for (int j = 0; j < NKV; j++)
          mv[r * NKV + j] = tsr_fp32_to_fp16 (r == 2 ? -INFINITY : 0.0f);
      tsr_tensor_set (q, qv, 0, sizeof qv);
      tsr_tensor_set (k, kv, 0, sizeof kv);
      tsr_tensor_set (v, vv, 0, sizeof vv);
      tsr_tensor_set (m, mv, 0, sizeof mv);
      int st = tsr_backend_graph_compute (be, g);
      CHECK (st == TSR_OK, "%s: computes (%s)", name,
             st == TSR_OK ? "" : tsr_last_error ());
      if (st == TSR_OK)
        {
          tsr_tensor_get (out, o, 0, sizeof o);
          int finite0 = 0, nan1 = 0, zero2 = 0;
          for (int i = 0; i < D; i++)
            {
              finite0 += isfinite (o[i]) != 0;
              nan1 += isnan (o[D + i]) != 0;
              zero2 += o[2 * D + i] == 0.0f;
            }
          CHECK (nan1 == D, "%s: a query with a NaN gives NaN, not zeros "
                 "(%d of %d)", name, nan1, D);
          CHECK (zero2 == D, "%s: a row with every key masked gives zeros "
                 "(%d of %d)", name, zero2, D);
          CHECK (finite0 == D, "%s: the other rows stay finite", name);
        }
      tsr_buffer_free (buf);
    }
  tsr_backend_free (be);
  tsr_context_free (ctx);
}

int
main (void)
{
  size_t n = tsr_device_count ();
  CHECK (n > 0, "devices found (%zu)", n);
  for (size_t i = 0; i < n; i++)
    check_device (tsr_device_get (i));
  return TSR_TEST_EXIT ();
}
