/* What the BLAS device accepts: mul_mat for every weight type once b
   has min_batch columns or more, nothing below, no other op; the
   backend parameter min_batch moves the threshold.  */
#include "blas-test.h"

static const tsr_type types[] = { TSR_TYPE_F32, TSR_TYPE_F16, TSR_TYPE_BF16,
                                  TSR_TYPE_Q8_0, TSR_TYPE_Q4_0 };

static bool
supports_n (tsr_device *dev, tsr_context *ctx, tsr_type type, int64_t n)
{
  tsr_tensor *a = tsr_new_tensor_2d (ctx, type, 64, 8);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 64, n);
  return tsr_device_supports_op (dev, tsr_mul_mat (ctx, a, b));
}

/* The smallest n the device takes f32 mul_mat for (0 if none up to
   4096), checking that it takes every n above and none below.  */
static int64_t
threshold (tsr_device *dev, tsr_context *ctx, bool *monotone)
{
  int64_t first = 0;

  *monotone = true;
  for (int64_t n = 1; n <= 4096; n = n < 64 ? n + 1 : n * 2)
    {
      bool s = supports_n (dev, ctx, TSR_TYPE_F32, n);
      if (s && !first)
        first = n;
      if (!s && first)
        *monotone = false;
    }
  return first;
}

int
main (void)
{
  tsr_device *dev = blas_device ();
  bool monotone;

  if (!dev)
    return TSR_TEST_EXIT ();
  tsr_context *ctx = tsr_context_new (true);
  int64_t t = threshold (dev, ctx, &monotone);
  CHECK (t > 1 && t <= 4096 && monotone, "mul_mat taken from n = %lld on, "
         "never below", (long long) t);
  for (size_t i = 0; t && i < sizeof types / sizeof *types; i++)
    CHECK (supports_n (dev, ctx, types[i], t)
           && !supports_n (dev, ctx, types[i], t - 1),
           "%s weights: n = %lld taken, n = %lld not",
           tsr_type_name (types[i]), (long long) t, (long long) t - 1);

  /* Other ops, even at a large n.  */
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 64, 256);
  tsr_tensor *w = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 64, 64);
  CHECK (!tsr_device_supports_op (dev, tsr_add (ctx, x, x)), "add refused");
  CHECK (!tsr_device_supports_op (dev, tsr_silu (ctx, x)), "silu refused");
  CHECK (!tsr_device_supports_op (dev, tsr_rms_norm (ctx, x, 1e-5f)),
         "rms_norm refused");
  CHECK (!tsr_device_supports_op (dev, tsr_cont (ctx, tsr_transpose (ctx,
                                                                     x))),
         "cont refused");
  CHECK (tsr_device_supports_op (dev, tsr_mul_mat (ctx, w, x)),
         "mul_mat [64,64] x [64,256] taken");

  /* min_batch=N sets the device's threshold.  */
  tsr_backend *be = tsr_backend_init_by_name ("blas", "min_batch=3");
  CHECK (be != NULL, "backend with min_batch=3");
  CHECK (threshold (dev, ctx, &monotone) == 3 && monotone,
         "min_batch=3: mul_mat taken from n = 3 on");
  tsr_backend_free (be);
  be = tsr_backend_init_by_name ("blas", "min_batch=100");
  CHECK (threshold (dev, ctx, &monotone) == 128 && monotone
         && supports_n (dev, ctx, TSR_TYPE_Q4_0, 100)
         && !supports_n (dev, ctx, TSR_TYPE_Q4_0, 99),
         "min_batch=100: n = 99 refused, n = 100 taken");
  tsr_backend_free (be);
  tsr_context_free (ctx);
  return TSR_TEST_EXIT ();
}
