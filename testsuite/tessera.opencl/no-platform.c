/* With no OpenCL platform (OCL_ICD_VENDORS naming an empty directory,
   so the ICD loader finds no vendor), the module is not used and says
   why: tessera-info lists "opencl: not usable: no OpenCL platform".  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ocl-test.h"

int
main (void)
{
  const char *builddir = getenv ("TSR_TEST_BUILDDIR");
  char dir[] = "/tmp/tsr-ocl-empty-XXXXXX", cmd[4096], line[1024];
  int found = 0, loaded = 0;

  if (!ocl_test_device ())
    return TSR_TEST_EXIT ();
  if (!builddir || !mkdtemp (dir))
    {
      CHECK (0, "test setup (TSR_TEST_BUILDDIR, a temporary directory)");
      return TSR_TEST_EXIT ();
    }
  snprintf (cmd, sizeof cmd, "OCL_ICD_VENDORS='%s' TESSERA_LOG=none "
            "'%s/tools/tessera-info' 2>&1", dir, builddir);
  FILE *p = popen (cmd, "r");
  while (p && fgets (line, sizeof line, p))
    {
      found |= strstr (line, "opencl: not usable: no OpenCL platform") != NULL;
      loaded |= strncmp (line, "  opencl: ", 10) == 0
                && strstr (line, "device") != NULL;
    }
  int status = p ? pclose (p) : -1;
  rmdir (dir);
  CHECK (status == 0, "tessera-info runs with an empty ICD directory");
  CHECK (found, "tessera-info says: opencl: not usable: no OpenCL platform");
  CHECK (!loaded, "no OpenCL registration without a platform");
  return TSR_TEST_EXIT ();
}
