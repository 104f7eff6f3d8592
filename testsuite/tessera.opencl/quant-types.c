/* Area: the OpenCL backend's kernels for the block types of model
   files (q4_1, q5_0, q5_1, q2_K..q6_K, iq4_nl, iq4_xs, mxfp4).
   Purpose: get_rows bit for bit as tsr_dequantize_row, mul_mat through
   the matrix-vector kernel (n <= 8) and the per-element one (n = 64),
   mul_mat_id, a bad expert id, and supports_op exact for every type;
   against a double reference of the library's dequantization (see
   testsuite/lib/tsr-gpu-quant.h).  Both paths sum in float per block
   and in double across blocks: 2e-5 of sum |w x| covers float sums of
   256 products.
   Limitations: UNSUPPORTED without an OpenCL device.  */
#include "ocl-test.h"
#include "tsr-gpu-quant.h"

int
main (void)
{
  tsr_device *dev = ocl_test_device ();
  if (!dev)
    return TSR_TEST_EXIT ();
  return gq_run (dev, (struct gq_tol) { 2e-5, 2e-5 });
}
