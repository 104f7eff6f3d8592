/* examples/tessera-transformer runs a two-layer decoder through the
   scheduler on every device combination and compares each with the
   CPU.  With the check-only partial backend on the path, the mixed
   combination really splits the graph.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tsr-test.h"

static char out[16384];

int
main (void)
{
  const char *bld = getenv ("TSR_TEST_BUILDDIR");
  const char *mod = getenv ("TSR_TEST_MODULE_DIR");
  const char *cpu = getenv ("TESSERA_BACKEND_PATH");
  char cmd[8192], partial[4096];
  snprintf (partial, sizeof partial, "%s/tessera-partial.la", mod ? mod : ".");
  int have_partial = mod && access (partial, R_OK) == 0;
  snprintf (cmd, sizeof cmd, "TESSERA_BACKEND_PATH='%s%s%s' "
            "%s/examples/tessera-transformer 2>&1", cpu ? cpu : "",
            have_partial ? ":" : "", have_partial ? partial : "",
            bld ? bld : ".");
  FILE *p = popen (cmd, "r");
  size_t n = p ? fread (out, 1, sizeof out - 1, p) : 0;
  out[n] = '\0';
  int st = p ? pclose (p) : -1;
  fputs (out, stderr);
  CHECK (st == 0, "transformer example exits 0");
  CHECK (strstr (out, "cpu reference: logits checksum") != NULL,
         "reference checksum printed");
  const char *c = strstr (out, "\nCPU ");
  CHECK (c && strstr (c, " ok\n"), "CPU run agrees with the reference");
  if (!have_partial)
    tsr_test_unsupported ("mixed-backend run: no partial module (static "
                          "build)");
  else
    {
      const char *m = strstr (out, "Partial0+CPU");
      CHECK (m && strstr (m, " ok\n") && strstr (m, "ok\n") < strchr (m, '\n')
             + 1, "Partial0+CPU agrees with the CPU (NMSE within 1e-3)");
      int splits = 0;
      const char *sp = m ? strstr (m, " splits") : NULL;
      if (sp)
        {
          const char *q = sp;
          while (q > m && q[-1] >= '0' && q[-1] <= '9')
            q--;
          splits = atoi (q);
        }
      CHECK (splits > 1, "the mixed run is split across backends (%d "
             "splits)", splits);
      CHECK (strstr (out, "Partial0                 not runnable") != NULL,
             "a combination that cannot run says why");
    }
  CHECK (strstr (out, "MISMATCH") == NULL, "no combination mismatches");
  return TSR_TEST_EXIT ();
}
