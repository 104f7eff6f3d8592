/* Area: the CUDA backend's kernels for the block types of model files
   (q4_1, q5_0, q5_1, q2_K..q6_K, iq4_nl, iq4_xs, mxfp4).
   Purpose: get_rows bit for bit as tsr_dequantize_row, mul_mat through
   the matrix-vector kernel (n <= 8) and through dequantization and
   cuBLAS (n = 64), mul_mat_id, a bad expert id, and supports_op exact
   for every type; against a double reference of the library's
   dequantization (see testsuite/lib/tsr-gpu-quant.h).  The
   matrix-vector and mul_mat_id kernels sum in f32: 2e-5 of sum |w x|.
   The GEMM path rounds weights and activations to f16 (2^-11 each,
   relative) and accumulates in f32: 2e-3.
   Limitations: UNSUPPORTED without a CUDA device.  */
#include "cuda-test.h"
#include "tsr-gpu-quant.h"

int
main (void)
{
  tsr_device *dev = cuda_test_device ();
  if (!dev)
    return TSR_TEST_EXIT ();
  return gq_run (dev, (struct gq_tol) { 2e-5, 2e-3 });
}
