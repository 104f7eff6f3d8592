/* cuda-test.h - what the CUDA backend's tests share: finding the first
   CUDA device, or saying why there is none.  */
#ifndef CUDA_TEST_H
#define CUDA_TEST_H

#include <tessera.h>
#include "tsr-test.h"

/* The first CUDA device, or NULL after an UNSUPPORTED line (module not
   built, or no usable device) or a FAIL (module built but it could not
   be loaded).  */
static tsr_device *
cuda_test_device (void)
{
  struct tsr_module_failure f;
  tsr_reg *reg = tsr_reg_by_name ("cuda");

  if (reg && tsr_reg_device_count (reg) > 0)
    return tsr_reg_device_get (reg, 0);
  if (!tsr_registry_failure_find ("cuda", &f))
    tsr_test_unsupported ("CUDA backend: not built (configure found no "
                          "CUDA toolkit, or --disable-cuda)");
  else if (f.error == TSR_MODULE_UNUSABLE)
    tsr_test_unsupported ("CUDA backend: no usable device here: %s",
                          f.reason);
  else
    CHECK (0, "CUDA module loads: %s: %s", f.path, f.reason);
  return NULL;
}

#endif /* CUDA_TEST_H */
