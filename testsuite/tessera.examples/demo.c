/* examples/tessera-demo computes its feed-forward block on the best
   device and agrees with its own scalar reference (it checks itself and
   exits nonzero on disagreement); here we check it ran to the end and
   reported a sane result.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tsr-test.h"

int
main (void)
{
  const char *bld = getenv ("TSR_TEST_BUILDDIR");
  char cmd[4096], out[8192];
  snprintf (cmd, sizeof cmd, "%s/examples/tessera-demo 2>&1",
            bld ? bld : ".");
  FILE *p = popen (cmd, "r");
  size_t n = p ? fread (out, 1, sizeof out - 1, p) : 0;
  out[n] = '\0';
  int st = p ? pclose (p) : -1;
  CHECK (st == 0, "demo exits 0");
  const char *s = strstr (out, "sum ");
  double sum = s ? atof (s + 4) : 0;
  CHECK (s && fabs (sum - 8.0) < 1e-3, "soft_max rows of 8 tokens sum to 8 "
         "(%.5f)", sum);
  const char *d = strstr (out, "reference: ");
  CHECK (d && atof (d + 11) <= 1e-4, "demo within 1e-4 of its reference");
  CHECK (strstr (out, "\nok\n") != NULL, "demo says ok");
  return TSR_TEST_EXIT ();
}
