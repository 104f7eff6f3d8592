/* Pinned host buffer types and events through the public API, with the
   check-only mockgpu module (whose events record what was done to them
   in an int) and the CPU device (which has neither): capabilities
   follow the interface, calls reach the module, and misuse (an event
   recorded on another device's backend, waited for by a backend of
   another registration, a device without events) is an error.  Static
   builds have no check-only modules: there only the CPU's part runs.  */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <tessera.h>
#include <tessera/module.h>       /* struct tsr_event, to read the mock's */
#include "tsr-test.h"

int
main (void)
{
  const char *dir = getenv ("TSR_TEST_MODULE_DIR");
  char path[4096];
  struct tsr_device_props p;

  tsr_device *cpu = tsr_device_by_name ("CPU");
  CHECK (cpu != NULL, "CPU device found");
  if (!cpu)
    return TSR_TEST_EXIT ();

  /* The CPU has neither (this much runs in static builds too).  */
  tsr_device_get_props (cpu, &p);
  CHECK (!p.caps.host_buffer && !p.caps.events, "CPU has neither (caps %d "
         "%d)", p.caps.host_buffer, p.caps.events);
  CHECK (tsr_device_host_buffer_type (cpu) == NULL, "CPU host buffer type "
         "is NULL");
  CHECK (tsr_device_host_buffer_type (NULL) == NULL, "NULL device: NULL");
  tsr_event *none = tsr_event_new (cpu);
  CHECK (none == NULL && tsr_last_status () == TSR_ERR_UNSUPPORTED,
         "no events on the CPU: %s", tsr_last_error ());
  CHECK (tsr_event_new (NULL) == NULL
         && tsr_last_status () == TSR_ERR_INVALID_ARG, "NULL device refused");

  /* The rest needs the check-only module, which static builds lack.  */
  snprintf (path, sizeof path, "%s/tessera-mockgpu.la", dir ? dir : ".");
  if (access (path, R_OK) != 0)
    {
      tsr_test_unsupported ("events: check-only modules not built (static "
                            "build)");
      return TSR_TEST_EXIT ();
    }
  CHECK (tsr_registry_load (path) == TSR_OK, "mockgpu loads: %s",
         tsr_last_error ());
  tsr_device *gpu = tsr_device_by_name ("MockGPU0");
  if (!gpu)
    {
      CHECK (0, "MockGPU0 device found");
      return TSR_TEST_EXIT ();
    }

  /* Host buffer types.  */
  tsr_device_get_props (gpu, &p);
  CHECK (p.caps.host_buffer && p.caps.events, "mock device has a host "
         "buffer type and events (caps %d %d)", p.caps.host_buffer,
         p.caps.events);
  tsr_buffer_type *hb = tsr_device_host_buffer_type (gpu);
  CHECK (hb && tsr_buffer_type_is_host (hb), "its host buffer type is host "
         "memory");
  CHECK (hb && tsr_device_supports_buffer_type (cpu, hb), "the CPU computes "
         "on it");

  /* Events.  */
  tsr_event *ev = tsr_event_new (gpu);
  tsr_backend *gbe = tsr_device_init (gpu, NULL);
  tsr_backend *cbe = tsr_device_init (cpu, NULL);
  CHECK (ev && gbe && cbe, "an event and two backends");
  if (!ev || !gbe || !cbe)
    return TSR_TEST_EXIT ();
  int *state = ev->context;
  CHECK (tsr_event_device (ev) == gpu, "the event knows its device");
  CHECK (tsr_event_record (ev, gbe) == TSR_OK && *state == 1,
         "record reaches the module");
  CHECK (tsr_backend_event_wait (gbe, ev) == TSR_OK && *state == 3,
         "wait reaches the module");
  tsr_event_synchronize (ev);
  CHECK (*state == 7, "synchronize reaches the module");
  *state = 0;
  CHECK (tsr_event_record (ev, cbe) == TSR_ERR_INVALID_ARG && *state == 0,
         "recording on another device's backend is refused: %s",
         tsr_last_error ());
  CHECK (tsr_backend_event_wait (cbe, ev) == TSR_ERR_INVALID_ARG
         && *state == 0, "a backend of another registration cannot wait: "
         "%s", tsr_last_error ());
  CHECK (tsr_event_record (NULL, gbe) == TSR_ERR_INVALID_ARG
         && tsr_backend_event_wait (gbe, NULL) == TSR_ERR_INVALID_ARG,
         "NULL arguments refused");
  tsr_event_synchronize (NULL);
  tsr_event_free (NULL);
  tsr_event_free (ev);
  tsr_backend_free (gbe);
  tsr_backend_free (cbe);
  return TSR_TEST_EXIT ();
}
