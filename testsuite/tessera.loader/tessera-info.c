/* tessera-info pointed at bad modules through TESSERA_BACKEND_PATH
   prints each module's path and the reason it was not loaded, still
   lists the cpu device, and exits 0.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tsr-test.h"

static char out[65536];

static int
run (const char *cmd)
{
  FILE *p = popen (cmd, "r");
  size_t n = p ? fread (out, 1, sizeof out - 1, p) : 0;
  out[n] = '\0';
  return p ? pclose (p) : -1;
}

int
main (void)
{
  const char *bld = getenv ("TSR_TEST_BUILDDIR");
  const char *mod = getenv ("TSR_TEST_MODULE_DIR");
  const char *cpu = getenv ("TESSERA_BACKEND_PATH");
  char cmd[8192], bad[4096];
  if (!bld || !mod || !cpu)
    {
      CHECK (0, "test environment is set (TSR_TEST_BUILDDIR...)");
      return TSR_TEST_EXIT ();
    }
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-info --version", bld);
  int st = run (cmd);
  CHECK (st == 0 && strstr (out, "tessera-info (Tessera)"), "--version");
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-info --help", bld);
  st = run (cmd);
  CHECK (st == 0 && strstr (out, "TESSERA_BACKEND_PATH"), "--help mentions "
         "the search path variable");
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-info --bogus 2>/dev/null",
            bld);
  st = run (cmd);
  CHECK (WIFEXITED (st) && WEXITSTATUS (st) == 2, "unknown option: exit 2");

  /* Pointed at an empty directory only: with no registration at all
     (a shared build, nothing installed) it says where it looked and
     how to point it at a build tree; with one (backends compiled in,
     or installed) it says nothing of the kind.  */
  {
    char empty[] = "/tmp/tsr-info-XXXXXX";
    if (mkdtemp (empty))
      {
        snprintf (cmd, sizeof cmd, "TESSERA_LOG=none TESSERA_BACKEND_PATH=%s "
                  "%s/tools/tessera-info", empty, bld);
        st = run (cmd);
        int none = strstr (out, "Registrations: 0") != NULL;
        int hint = strstr (out, "No backend module was found") != NULL
                   && strstr (out, "(no tessera-*.la or tessera-*.so module "
                              "in it)") != NULL
                   && strstr (out, empty) != NULL
                   && strstr (out, "TESSERA_BACKEND_PATH=$builddir/modules/cpu")
                      != NULL;
        CHECK (WIFEXITED (st) && WEXITSTATUS (st) == 0 && hint == none,
               "%s: %s", none ? "no registration" : "registrations",
               none ? "says where it looked and how to point it at modules"
                    : "no not-found hint");
        rmdir (empty);
      }
    else
      CHECK (0, "mkdtemp for an empty module directory");
  }

  snprintf (bad, sizeof bad, "%s/tessera-badabi.la", mod);
  if (access (bad, R_OK) != 0)
    snprintf (bad, sizeof bad, "/nonexistent/tessera-missing.la");
  snprintf (cmd, sizeof cmd, "TESSERA_LOG=none TESSERA_BACKEND_PATH=%s:%s "
            "%s/tools/tessera-info", bad, cpu, bld);
  st = run (cmd);
  CHECK (WIFEXITED (st) && WEXITSTATUS (st) == 0, "bad module: exit status "
         "0");
  CHECK (strstr (out, bad) != NULL, "bad module's path is printed");
  CHECK (strstr (out, strstr (bad, "badabi") ? "ABI version"
                 : "no such file") != NULL,
         "bad module's reason is printed");
  CHECK (strstr (out, "device 0: CPU") != NULL, "cpu device still listed");
  CHECK (strstr (out, "type: CPU") != NULL, "device type printed");
  if (strstr (bad, "badabi"))
    {
      snprintf (cmd, sizeof cmd, "TESSERA_LOG=none TESSERA_BACKEND_PATH=%s:%s "
                "%s/tools/tessera-info", mod, cpu, bld);
      st = run (cmd);
      CHECK (st == 0 && strstr (out, "zeroscore: not usable: no zeroscore "
                                "hardware"),
             "a directory of modules: unusable one shown as 'not usable: "
             "<reason>'");
      CHECK (strstr (out, "tessera-notmodule") && strstr (out, "initnull")
             && strstr (out, "MockGPU0"),
             "every module of the directory is accounted for");
    }
  return TSR_TEST_EXIT ();
}
