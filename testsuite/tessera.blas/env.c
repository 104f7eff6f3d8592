/* TESSERA_BLAS_MIN_BATCH sets the BLAS device's threshold when the
   module starts.  */
#include "blas-test.h"

int
main (void)
{
  setenv ("TESSERA_BLAS_MIN_BATCH", "5", 1);
  tsr_device *dev = blas_device ();

  if (!dev)
    return TSR_TEST_EXIT ();
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_Q8_0, 64, 8);
  tsr_tensor *b4 = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 64, 4);
  tsr_tensor *b5 = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 64, 5);
  CHECK (!tsr_device_supports_op (dev, tsr_mul_mat (ctx, a, b4))
         && tsr_device_supports_op (dev, tsr_mul_mat (ctx, a, b5)),
         "TESSERA_BLAS_MIN_BATCH=5: n = 4 refused, n = 5 taken");
  tsr_context_free (ctx);
  return TSR_TEST_EXIT ();
}
