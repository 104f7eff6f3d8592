/* ocl-test.h - what the OpenCL backend's tests share: finding the
   first OpenCL device, or saying why there is none.  */
#ifndef OCL_TEST_H
#define OCL_TEST_H

#include <tessera.h>
#include "tsr-test.h"

/* The first OpenCL device, or NULL after an UNSUPPORTED line (module
   not built, or no usable platform) or a FAIL (module built but it
   could not be loaded).  */
static tsr_device *
ocl_test_device (void)
{
  struct tsr_module_failure f;
  tsr_reg *reg = tsr_reg_by_name ("opencl");

  if (reg && tsr_reg_device_count (reg) > 0)
    return tsr_reg_device_get (reg, 0);
  if (!tsr_registry_failure_find ("opencl", &f))
    tsr_test_unsupported ("OpenCL backend: not built (configure found no "
                          "OpenCL, or --disable-opencl)");
  else if (f.error == TSR_MODULE_UNUSABLE)
    tsr_test_unsupported ("OpenCL backend: no usable device here: %s",
                          f.reason);
  else
    CHECK (0, "OpenCL module loads: %s: %s", f.path, f.reason);
  return NULL;
}

#endif /* OCL_TEST_H */
