/* Explicit load and unload of a module, and the registry's view of it:
   enumeration, lookups, init_best's preference for a GPU over the CPU,
   duplicates, and unloading.  Uses the check-only mockgpu module.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

int
main (void)
{
  const char *dir = getenv ("TSR_TEST_MODULE_DIR");
  char path[4096], path_la[4096];
  FILE *f;
  snprintf (path, sizeof path, "%s/tessera-mockgpu", dir ? dir : ".");
  snprintf (path_la, sizeof path_la, "%s.la", path);
  if (!dir || !(f = fopen (path_la, "r")))
    {
      tsr_test_unsupported ("load/unload: check-only modules not built "
                            "(static build)");
      return 0;
    }
  fclose (f);

  size_t regs0 = tsr_reg_count (), devs0 = tsr_device_count ();
  size_t mods0 = tsr_registry_module_count ();
  CHECK (tsr_device_by_name ("mockgpu0") == NULL, "mock device absent before "
         "load");
  CHECK (tsr_registry_load (path) == TSR_OK, "explicit load of a module by "
         "name without extension: %s", tsr_last_error ());
  CHECK (tsr_reg_count () == regs0 + 1, "one more registration after load");
  CHECK (tsr_device_count () == devs0 + 1, "one more device after load");
  CHECK (tsr_registry_module_count () == mods0 + 1, "one more module");
  tsr_device *dev = tsr_device_by_name ("MOCKGPU0");
  CHECK (dev != NULL, "loaded device found by name in another case");
  CHECK (tsr_device_by_type (TSR_DEVICE_GPU) == dev, "found by type GPU");
  CHECK (tsr_reg_by_name ("mockgpu") == tsr_device_reg (dev),
         "device's registration found by name");
  CHECK (tsr_registry_load (path) == TSR_OK && tsr_reg_count () == regs0 + 1,
         "loading the same path again is a no-op");
  CHECK (tsr_registry_load (path_la) == TSR_ERR_MODULE,
         "same module from another path is refused");
  struct tsr_module_failure fl;
  CHECK (tsr_registry_failure_find (path_la, &fl)
         && fl.error == TSR_MODULE_DUPLICATE && strstr (fl.reason, "already"),
         "duplicate recorded with its reason");
  CHECK (tsr_reg_count () == regs0 + 1, "duplicate did not register twice");

  tsr_backend *be = tsr_backend_init_best ();
  CHECK (be && tsr_backend_device (be) == dev, "init_best prefers the GPU");
  CHECK (be && !tsr_backend_supports_op (be, NULL), "supports_op (NULL) is "
         "false");
  /* Not while its backend lives (the later free would call into an
     unmapped module).  */
  CHECK (tsr_registry_unload ("mockgpu") == TSR_ERR_STATE
         && strstr (tsr_last_error (), "in use")
         && tsr_device_by_name ("mockgpu0") == dev,
         "unload refused while a backend of the module lives: %s",
         tsr_last_error ());
  tsr_backend_free (be);

  CHECK (tsr_registry_unload ("MockGPU") == TSR_OK, "unload by name");
  CHECK (tsr_reg_count () == regs0 && tsr_device_count () == devs0,
         "registration and device gone after unload");
  CHECK (tsr_device_by_name ("mockgpu0") == NULL, "device lookup fails after "
         "unload");
  CHECK (tsr_registry_unload ("mockgpu") == TSR_ERR_NOT_FOUND,
         "second unload: not found");
  be = tsr_backend_init_best ();
  CHECK (be && tsr_device_get_type (tsr_backend_device (be))
         == TSR_DEVICE_CPU, "init_best falls back to the CPU");
  tsr_backend_free (be);
  CHECK (tsr_registry_load (path_la) == TSR_OK, "reload after unload, "
         "through the .la file");
  CHECK (!tsr_registry_failure_find (path_la, &fl), "success clears the old "
         "failure of that path");
  CHECK (tsr_device_by_name ("mockgpu0") != NULL, "device back after reload");
  CHECK (tsr_registry_unload ("mockgpu") == TSR_OK, "unload again");

  /* A directory added after initialization is searched at once.  */
  size_t fails0 = tsr_registry_failure_count ();
  CHECK (tsr_registry_add_search_dir (dir) == TSR_OK, "add a search dir");
  CHECK (tsr_device_by_name ("mockgpu0") != NULL, "module in the added "
         "directory loaded at once");
  CHECK (tsr_registry_failure_count () >= fails0 + 4, "its failing modules "
         "are recorded (%zu new)", tsr_registry_failure_count () - fails0);
  const char *sp = tsr_registry_search_path ();
  CHECK (strstr (sp, dir) != NULL
         && strstr (sp, tsr_registry_backend_dir ()) > strstr (sp, dir),
         "search path lists the added dir before the backend dir (%s)", sp);
  CHECK (tsr_registry_add_search_dir ("") == TSR_ERR_INVALID_ARG,
         "empty search dir refused");
  return TSR_TEST_EXIT ();
}
