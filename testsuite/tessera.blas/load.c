/* The BLAS module loads and shows one ACCEL device "BLAS" on host
   memory, described by its BLIS; its backend takes and refuses
   parameters as documented.  */
#include <string.h>
#include <tessera/module.h>
#include "blas-test.h"

int
main (void)
{
  tsr_device *dev = blas_device ();
  struct tsr_module_info info;
  bool listed = false;

  if (!dev)
    return TSR_TEST_EXIT ();
  CHECK (strcmp (tsr_device_name (dev), "BLAS") == 0, "device named BLAS");
  CHECK (tsr_device_get_type (dev) == TSR_DEVICE_ACCEL, "device type ACCEL");
  CHECK (strstr (tsr_device_description (dev), "BLIS") != NULL,
         "description names BLIS: %s", tsr_device_description (dev));
  CHECK (tsr_reg_by_name ("blas") == tsr_device_reg (dev)
         && tsr_reg_device_count (tsr_device_reg (dev)) == 1,
         "registration blas with one device");
  for (size_t i = 0; i < tsr_registry_module_count (); i++)
    if (tsr_registry_module_get (i, &info) && strcmp (info.name, "blas") == 0)
      listed = info.score == 1 && info.reg == tsr_device_reg (dev);
  CHECK (listed, "module blas listed with score 1");
  CHECK (tsr_device_buffer_type (dev) == tsr_host_buffer_type ()
         && tsr_device_supports_buffer_type (dev, tsr_host_buffer_type ()),
         "buffers are host memory");
  /* BLAS runs matrix products only: never the backend for a whole
     graph when there is a CPU.  */
  tsr_backend *best = tsr_backend_init_best ();
  CHECK (best && tsr_backend_device (best) != dev
         && tsr_device_by_type (TSR_DEVICE_CPU) != NULL,
         "init_best prefers the CPU to BLAS");
  tsr_backend_free (best);

  tsr_backend *be = tsr_backend_init_by_name ("blas", "threads=2");
  CHECK (be && strcmp (tsr_backend_name (be), "blas") == 0
         && tsr_backend_device (be) == dev, "backend with threads=2: %s",
         be ? "ok" : tsr_last_error ());
  CHECK (be && tsr_backend_set_n_threads (be, 3) == TSR_OK,
         "set_n_threads 3");
  CHECK (be && tsr_backend_set_n_threads (be, 0) == TSR_ERR_INVALID_ARG,
         "set_n_threads 0 refused");
  tsr_backend_free (be);
  be = tsr_backend_init_by_name ("blas", "threads=1,max_scratch=4096");
  CHECK (be != NULL, "backend with threads=1,max_scratch=4096");
  tsr_backend_free (be);

  static const char *const bad[] = { "threads=0", "threads=x",
                                     "min_batch=0", "max_scratch=-1",
                                     "bogus=1" };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    {
      be = tsr_backend_init_by_name ("blas", bad[i]);
      CHECK (!be && strstr (tsr_last_error (), bad[i]) != NULL,
             "parameter '%s' refused, naming it: %s", bad[i],
             be ? "accepted" : tsr_last_error ());
      tsr_backend_free (be);
    }
  return TSR_TEST_EXIT ();
}
