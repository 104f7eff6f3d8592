/* What fuzz/graph-fuzz.c found (issue 17), kept as tests:
   - a reshape, view or permute of an empty tensor was built although
     tsr_node_validate refuses it (builder and validator disagreed);
   - a block-quantized tensor could have more elements than int64_t
     holds (its bytes fit), so tsr_nelements overflowed, and a row's
     byte count could wrap (a cast of a huge q8_0 row to f32 was built
     with strides the validator refused);
   - reshape's element count and im2col's output length overflowed
     (undefined behaviour) on huge sizes.
   Each now gives an error, and every node a builder returns passes
   tsr_node_validate.  */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

static void
refused (tsr_tensor *r, const char *what)
{
  CHECK (r == NULL && tsr_last_status () != TSR_OK && tsr_last_error ()[0],
         "%s is refused (\"%s\")", what, tsr_last_error ());
  tsr_clear_error ();
}

int
main (void)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *empty = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 0, 4);
  CHECK (empty != NULL, "an empty tensor exists");
  refused (tsr_reshape_2d (ctx, empty, 4, 0), "reshape of an empty tensor");
  refused (tsr_transpose (ctx, empty), "transpose of an empty tensor");
  refused (tsr_permute (ctx, empty, 1, 0, 2, 3), "permute of an empty "
           "tensor");
  refused (tsr_view_1d (ctx, empty, 0, 0), "an empty view");

  /* Views a builder makes are ones the validator accepts.  */
  tsr_tensor *a = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 8, 6, 2);
  tsr_tensor *v[] = {
    tsr_reshape_2d (ctx, a, 16, 6), tsr_transpose (ctx, a),
    tsr_permute (ctx, a, 2, 0, 1, 3),
    tsr_view_2d (ctx, a, 4, 3, a->nb[1], a->nb[1]),
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    CHECK (v[i] && tsr_node_validate (v[i]) == TSR_OK,
           "view %zu built and valid (%s)", i, tsr_last_error ());

  /* q4_0: 2^60 x 16 elements are 2^64 (too many for int64_t) in
     "only" 2^59 x 18 bytes.  */
  refused (tsr_new_tensor_2d (ctx, TSR_TYPE_Q4_0, INT64_C (1) << 60, 16),
           "a q4_0 tensor of 2^64 elements");
  tsr_tensor *big = tsr_new_tensor_2d (ctx, TSR_TYPE_Q4_0, INT64_C (1) << 50,
                                       16);
  CHECK (big && tsr_nelements (big) == INT64_C (1) << 54, "2^54 q4_0 "
         "elements are fine (no data: a no-alloc context)");

  /* A row whose bytes alone overflow (found as a cast of a q8_0 row of
     5.3e18 elements, which fits, to f32, which does not).  */
  refused (tsr_new_tensor_1d (ctx, TSR_TYPE_F32, INT64_C (5301724281778423840)),
           "an f32 row of 5.3e18 elements");
  tsr_tensor *q8 = tsr_new_tensor_1d (ctx, TSR_TYPE_Q8_0,
                                      INT64_C (5301724281778423840));
  CHECK (q8 != NULL, "the same row in q8_0 fits (%s)", tsr_last_error ());
  if (q8)
    refused (tsr_cast (ctx, q8, TSR_TYPE_F32), "casting it to f32");

  /* reshape's element count.  */
  tsr_tensor *b = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 64);
  refused (tsr_reshape_4d (ctx, b, INT64_C (1) << 40, INT64_C (1) << 40,
                           INT64_C (1) << 40, 0),
           "a reshape whose element count overflows");

  /* im2col with a huge kernel and dilation.  */
  tsr_tensor *kernel = tsr_new_tensor_4d (ctx, TSR_TYPE_F32,
                                          INT64_C (1) << 40, 3, 2, 4);
  tsr_tensor *input = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 32, 32, 2, 1);
  refused (tsr_im2col (ctx, kernel, input, 1, 1, 0, 0, 1 << 30, 1, true,
                       TSR_TYPE_F32), "im2col whose window overflows");
  tsr_tensor *k2 = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 3, 3, 2, 4);
  tsr_tensor *ok = tsr_im2col (ctx, k2, input, 1, 1, 1, 1, 1, 1, true,
                               TSR_TYPE_F32);
  CHECK (ok && ok->ne[0] == 18 && ok->ne[1] == 32 && ok->ne[2] == 32
         && tsr_node_validate (ok) == TSR_OK, "an ordinary im2col still "
         "builds (%s)", tsr_last_error ());
  /* An out-of-range parameter index is an error, not an abort.  */
  tsr_clear_error ();
  int32_t w = tsr_get_op_param_i32 (ok ? ok : a, 16);
  CHECK (w == 0 && tsr_last_status () == TSR_ERR_INVALID_ARG,
         "op parameter 16: 0 and an error (%s)", tsr_last_error ());
  tsr_clear_error ();
  float fw = tsr_get_op_param_f32 (a, -1);
  CHECK (fw == 0.0f && tsr_last_status () == TSR_ERR_INVALID_ARG,
         "op parameter -1: 0 and an error");
  tsr_context_free (ctx);
  return TSR_TEST_EXIT ();
}
