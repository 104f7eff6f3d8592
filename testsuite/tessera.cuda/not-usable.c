/* Where CUDA cannot run (no driver, no device, a driver older than the
   runtime), the module still loads, scores 0 and says why, and
   tessera-info shows "cuda: not usable: <reason>", exits 0 and stays
   quick.  On a machine with a GPU this is UNSUPPORTED.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cuda-test.h"

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
known_reason (const char *r)
{
  return strcmp (r, "no CUDA driver (libcuda.so.1 not found)") == 0
         || strcmp (r, "no CUDA device") == 0
         || strncmp (r, "CUDA driver older than the runtime", 34) == 0
         || strncmp (r, "cudaGetDeviceCount failed: ", 27) == 0;
}

int
main (void)
{
  const char *builddir = getenv ("TSR_TEST_BUILDDIR");
  struct tsr_module_failure f;
  char cmd[4096], line[1024], want[600];
  int found = 0, registered = 0;
  tsr_reg *reg = tsr_reg_by_name ("cuda");

  if (reg && tsr_reg_device_count (reg) > 0)
    {
      tsr_test_unsupported ("cuda not usable: this machine has a CUDA "
                            "device (%zu)", tsr_reg_device_count (reg));
      return TSR_TEST_EXIT ();
    }
  if (!tsr_registry_failure_find ("cuda", &f))
    {
      tsr_test_unsupported ("cuda not usable: the CUDA backend was not "
                            "built (configure found no CUDA toolkit, or "
                            "--disable-cuda)");
      return TSR_TEST_EXIT ();
    }
  CHECK (f.error == TSR_MODULE_UNUSABLE, "the CUDA module loads and scores "
         "0 (%s: %s)", tsr_module_error_string (f.error), f.reason);
  CHECK (f.reason && known_reason (f.reason), "the reason is precise: %s",
         f.reason ? f.reason : "(none)");
  CHECK (reg == NULL, "no CUDA registration without a device");
  if (!builddir || !f.reason)
    {
      CHECK (0, "test setup (TSR_TEST_BUILDDIR)");
      return TSR_TEST_EXIT ();
    }
  snprintf (want, sizeof want, "  cuda: not usable: %s", f.reason);
  snprintf (cmd, sizeof cmd, "TESSERA_LOG=none '%s/tools/tessera-info' 2>&1",
            builddir);
  double t0 = now ();
  FILE *p = popen (cmd, "r");
  while (p && fgets (line, sizeof line, p))
    {
      line[strcspn (line, "\n")] = '\0';
      found |= strcmp (line, want) == 0;
      registered |= strncmp (line, "  cuda: ", 8) == 0
                    && strstr (line, "device") != NULL;
    }
  int status = p ? pclose (p) : -1;
  double secs = now () - t0;
  CHECK (status == 0, "tessera-info exits 0 (status %d)", status);
  CHECK (found, "tessera-info says: cuda: not usable: %s", f.reason);
  CHECK (!registered, "tessera-info lists no CUDA registration");
  /* Generous against a loaded machine; it takes milliseconds.  */
  CHECK (secs < 5.0, "tessera-info stays quick with the CUDA module "
         "(%.3f s)", secs);
  return TSR_TEST_EXIT ();
}
