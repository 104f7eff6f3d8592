/* Every way a module can fail to load yields its own reason, recorded
   with the path, and the library keeps working.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tessera.h>
#include "tsr-test.h"

static const char *dir;
static char logged[4096];
static int n_logged;

static void
log_cb (tsr_log_level level, const char *msg, void *user)
{
  if (level == TSR_LOG_WARN && n_logged++ == 0)
    snprintf (logged, sizeof logged, "%s|%s", (const char *) user, msg);
}

static void
expect (const char *stem, tsr_module_error want, const char *phrase)
{
  char path[4096];
  struct tsr_module_failure f;
  snprintf (path, sizeof path, "%s/%s", dir, stem);
  int st = tsr_registry_load (path);
  CHECK (st != TSR_OK, "%s: load fails", stem);
  int found = tsr_registry_failure_find (path, &f);
  CHECK (found && strcmp (f.path, path) == 0, "%s: failure recorded with "
         "its path", stem);
  CHECK (found && f.error == want, "%s: kind is '%s' (got '%s')", stem,
         tsr_module_error_string (want),
         found ? tsr_module_error_string (f.error) : "nothing");
  CHECK (found && strstr (f.reason, phrase), "%s: reason says '%s' (%s)",
         stem, phrase, found ? f.reason : "");
  CHECK (strstr (tsr_last_error (), phrase) != NULL, "%s: last error says "
         "why too", stem);
}

int
main (void)
{
  char path[4096];
  struct tsr_module_failure f;
  size_t regs0 = tsr_reg_count ();
  tsr_log_set_level (TSR_LOG_WARN);
  tsr_log_set_callback (log_cb, "cookie");
  tsr_registry_load ("/nonexistent/tessera-logged");
  tsr_log_set_callback (NULL, NULL);
  tsr_log_set_level (TSR_LOG_NONE);
  CHECK (n_logged == 1 && strstr (logged, "cookie|")
         && strstr (logged, "/nonexistent/tessera-logged")
         && strstr (logged, "not found"),
         "failure logged once through the callback with path and reason "
         "(%s)", logged);

  /* Paths that are not modules at all work in every build.  */
  CHECK (tsr_registry_load ("/nonexistent/tessera-nothing") ==
         TSR_ERR_NOT_FOUND, "missing path: not found status");
  CHECK (tsr_registry_failure_find ("/nonexistent/tessera-nothing", &f)
         && f.error == TSR_MODULE_NOT_FOUND
         && strstr (f.reason, "no such file"),
         "missing path: reason says no such file");
  snprintf (path, sizeof path, "/tmp/tessera-garbage-%ld.so", (long) getpid ());
  FILE *g = fopen (path, "w");
  fputs ("this is not an ELF file\n", g);
  fclose (g);
  CHECK (tsr_registry_load (path) == TSR_ERR_MODULE, "garbage file refused");
  CHECK (tsr_registry_failure_find (path, &f)
         && f.error == TSR_MODULE_OPEN_FAILED
         && strstr (f.reason, "not a shared library"),
         "garbage file: the reason says it is not a shared library (%s)",
         f.reason);
  unlink (path);
  CHECK (tsr_registry_load ("") == TSR_ERR_INVALID_ARG, "empty path refused");

  dir = getenv ("TSR_TEST_MODULE_DIR");
  snprintf (path, sizeof path, "%s/tessera-badabi.la", dir ? dir : ".");
  if (!dir || access (path, R_OK) != 0)
    tsr_test_unsupported ("check-only modules not built (static build)");
  else
    {
      expect ("tessera-notmodule", TSR_MODULE_NOT_A_MODULE,
              "exports no 'tsr_module_descriptor'");
      expect ("tessera-badabi", TSR_MODULE_ABI_MISMATCH, "ABI version");
      expect ("tessera-zeroscore", TSR_MODULE_UNUSABLE,
              "no zeroscore hardware");
      expect ("tessera-initnull", TSR_MODULE_INIT_FAILED,
              "returned no registration");
      CHECK (tsr_registry_failure_find ("zeroscore", &f)
             && f.name && strcmp (f.name, "zeroscore") == 0,
             "failure found by module name once the name is known");
    }
  CHECK (tsr_reg_count () == regs0, "failed loads register nothing");

  /* The library still works.  */
  tsr_backend *be = tsr_backend_init_by_name ("cpu", NULL);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 3);
  for (int i = 0; i < 3; i++)
    ((float *) a->data)[i] = (float) i - 1;
  tsr_tensor *s = tsr_scale (ctx, a, 4.0f);
  tsr_graph *gr = tsr_graph_new (ctx);
  tsr_graph_build (gr, s);
  CHECK (be && tsr_backend_graph_compute (be, gr) == TSR_OK
         && ((float *) s->data)[0] == -4 && ((float *) s->data)[2] == 4,
         "cpu backend still computes after failed loads");
  tsr_context_free (ctx);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
