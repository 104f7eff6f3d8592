/* A directory holding both tessera-x.la and tessera-x.so offers one
   module: it is loaded once, and nothing is reported as failed.  (Run
   under valgrind, this also checks the directory scan's memory use.)  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tessera.h>
#include "tsr-test.h"

int
main (void)
{
  const char *mod = getenv ("TSR_TEST_MODULE_DIR");
  char dir[] = "/tmp/tsr-scan-XXXXXX", src[4096], dst[4096];
  snprintf (src, sizeof src, "%s/.libs/tessera-mockgpu.so", mod ? mod : ".");
  if (!mod || access (src, R_OK) != 0)
    {
      tsr_test_unsupported ("scan: check-only modules not built (static "
                            "build)");
      return 0;
    }
  if (!mkdtemp (dir))
    {
      CHECK (0, "temporary directory");
      return TSR_TEST_EXIT ();
    }
  snprintf (dst, sizeof dst, "%s/tessera-mockgpu.so", dir);
  int ok = symlink (src, dst) == 0;
  snprintf (src, sizeof src, "%s/tessera-mockgpu.la", mod);
  snprintf (dst, sizeof dst, "%s/tessera-mockgpu.la", dir);
  ok &= symlink (src, dst) == 0;
  CHECK (ok, "directory with tessera-mockgpu.la and tessera-mockgpu.so");
  size_t mods = tsr_registry_module_count ();
  size_t fails = tsr_registry_failure_count ();
  CHECK (tsr_registry_add_search_dir (dir) == TSR_OK, "scan it");
  CHECK (tsr_registry_module_count () == mods + 1, "one module loaded "
         "(%zu new)", tsr_registry_module_count () - mods);
  CHECK (tsr_registry_failure_count () == fails, "no failure recorded "
         "(%zu new)", tsr_registry_failure_count () - fails);
  CHECK (tsr_device_by_name ("MockGPU0") != NULL, "its device is there");
  tsr_registry_unload ("mockgpu");
  unlink (dst);
  snprintf (dst, sizeof dst, "%s/tessera-mockgpu.so", dir);
  unlink (dst);
  rmdir (dir);
  return TSR_TEST_EXIT ();
}
