/* Backend counters (tsr_backend_get_counters): the core asks the
   backend's module for them by name; a backend that keeps none (the
   CPU) is TSR_ERR_UNSUPPORTED with the counters zeroed; NULL arguments
   are refused; CLEAR zeroes them after the read.  The check-only
   mockgpu module counts the computes asked of it (all fail: it computes
   nothing).  Static builds have no check-only modules: there only the
   CPU's part runs.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tessera.h>
#include "tsr-test.h"

int
main (void)
{
  const char *dir = getenv ("TSR_TEST_MODULE_DIR");
  char path[4096];
  struct tsr_backend_counters c;

  tsr_backend *cpu = tsr_device_init (tsr_device_by_name ("CPU"), NULL);
  CHECK (cpu != NULL, "a CPU backend");
  if (!cpu)
    return TSR_TEST_EXIT ();
  memset (&c, 0xff, sizeof c);
  CHECK (tsr_backend_get_counters (cpu, &c, false) == TSR_ERR_UNSUPPORTED
         && c.computes == 0 && c.launches == 0,
         "the CPU keeps none: zeros and %s", tsr_last_error ());
  CHECK (tsr_backend_get_counters (NULL, &c, false) == TSR_ERR_INVALID_ARG,
         "a NULL backend is refused: %s", tsr_last_error ());
  CHECK (tsr_backend_get_counters (cpu, NULL, false) == TSR_ERR_INVALID_ARG,
         "a NULL destination is refused: %s", tsr_last_error ());
  tsr_backend_free (cpu);

  snprintf (path, sizeof path, "%s/tessera-mockgpu.la", dir ? dir : ".");
  if (access (path, R_OK) != 0)
    {
      tsr_test_unsupported ("counters: check-only modules not built "
                            "(static build)");
      return TSR_TEST_EXIT ();
    }
  CHECK (tsr_registry_load (path) == TSR_OK, "mockgpu loads: %s",
         tsr_last_error ());
  tsr_device *gpu = tsr_device_by_name ("MockGPU0");
  tsr_backend *be = gpu ? tsr_device_init (gpu, NULL) : NULL;
  CHECK (be != NULL, "a mockgpu backend");
  if (!be)
    return TSR_TEST_EXIT ();
  /* An empty graph reaches the module (the mock's memory holds no
     tensor it could compute).  */
  tsr_context *ctx = tsr_context_new (true);
  tsr_graph *g = tsr_graph_new (ctx);
  CHECK (tsr_backend_get_counters (be, &c, false) == TSR_OK
         && c.computes == 0, "a new backend's counters are zero (%llu)",
         (unsigned long long) c.computes);
  tsr_backend_graph_compute (be, g);
  tsr_backend_graph_compute (be, g);
  CHECK (tsr_backend_get_counters (be, &c, true) == TSR_OK
         && c.computes == 2, "two computes counted by the module (%llu)",
         (unsigned long long) c.computes);
  CHECK (tsr_backend_get_counters (be, &c, false) == TSR_OK
         && c.computes == 0, "cleared by the read before (%llu)",
         (unsigned long long) c.computes);
  tsr_context_free (ctx);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
