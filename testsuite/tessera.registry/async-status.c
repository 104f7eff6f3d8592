/* Module ABI 3: a failure that happens after the work was queued (the
   check-only asyncfail module: its graph_compute and async set/get
   return TSR_OK, its synchronize and event_synchronize return the
   failure) reaches the caller of tsr_backend_graph_compute,
   tsr_sched_graph_compute, tsr_backend_tensor_set/get and
   tsr_event_synchronize, with its message; a later success is
   success again.  The descriptor's finalize runs before the module is
   unloaded; a module lacking an entry ABI 3 requires is refused with a
   reason naming it; one whose descriptor sets an unknown flag is
   refused as an ABI mismatch.  Static builds have no check-only
   modules.  */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tessera.h>
#include "tsr-test.h"

static int
says (const char *word)
{
  return strstr (tsr_last_error (), word) != NULL;
}

int
main (void)
{
  const char *dir = getenv ("TSR_TEST_MODULE_DIR");
  const char *bdir = getenv ("TSR_TEST_BUILDDIR");
  char path[4096], flags_path[4096], fin[4096];
  struct tsr_module_failure f;

  snprintf (path, sizeof path, "%s/tessera-asyncfail.la", dir ? dir : ".");
  snprintf (flags_path, sizeof flags_path, "%s/tessera-badflags.la",
            dir ? dir : ".");
  if (access (path, R_OK) != 0)
    {
      tsr_test_unsupported ("async status: check-only modules not built "
                            "(static build)");
      return TSR_TEST_EXIT ();
    }
  snprintf (fin, sizeof fin, "%s/testsuite/async-status-finalized.txt",
            bdir ? bdir : ".");
  remove (fin);
  setenv ("TSR_TEST_FINALIZE_FILE", fin, 1);

  CHECK (tsr_registry_load (path) == TSR_OK, "asyncfail loads: %s",
         tsr_last_error ());
  tsr_device *dev = tsr_device_by_name ("AsyncFail0");
  tsr_backend *be = dev ? tsr_device_init (dev, NULL) : NULL;
  CHECK (be != NULL, "its backend initializes: %s", tsr_last_error ());
  if (!be)
    return TSR_TEST_EXIT ();

  /* graph_compute returned TSR_OK; the failure came at synchronize.  */
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 4);
  tsr_tensor *b = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 4);
  for (int i = 0; i < 4; i++)
    {
      tsr_set_f32_1d (a, i, (float) i);
      tsr_set_f32_1d (b, i, 10.0f);
    }
  tsr_tensor *sum = tsr_add (ctx, a, b);
  tsr_graph *g = tsr_graph_new (ctx);
  CHECK (g && tsr_graph_build (g, sum) == TSR_OK, "graph built");
  tsr_clear_error ();
  int st = tsr_backend_graph_compute (be, g);
  CHECK (st == TSR_ERR_BACKEND && says ("kernel failed after it was queued"),
         "graph compute returns the failure synchronize found (status %d: "
         "%s)", st, tsr_last_error ());
  CHECK (tsr_get_f32_1d (sum, 3) == 13.0f, "(the work itself was done)");
  CHECK (tsr_backend_synchronize (be) == TSR_OK, "reported once: the next "
         "synchronize is clean");

  /* Copies through the backend.  */
  float x[4] = { 1, 2, 3, 4 }, y[4];
  tsr_clear_error ();
  st = tsr_backend_tensor_set (be, a, x, 0, sizeof x);
  CHECK (st == TSR_ERR_BACKEND && says ("copy failed"), "tensor set returns "
         "the failure of its copy (status %d: %s)", st, tsr_last_error ());
  tsr_clear_error ();
  st = tsr_backend_tensor_get (be, a, y, 0, sizeof y);
  CHECK (st == TSR_ERR_BACKEND && says ("copy failed"), "tensor get returns "
         "the failure of its copy (status %d: %s)", st, tsr_last_error ());
  CHECK (tsr_backend_tensor_set_async (be, a, x, 0, sizeof x) == TSR_OK,
         "the async set itself is queued fine");
  CHECK (tsr_backend_synchronize (be) == TSR_ERR_BACKEND
         && says ("synchronize"), "and synchronize returns its failure: %s",
         tsr_last_error ());

  /* Events.  */
  tsr_event *ev = tsr_event_new (dev);
  CHECK (ev != NULL, "an event: %s", tsr_last_error ());
  if (ev)
    {
      CHECK (tsr_backend_tensor_set_async (be, a, x, 0, sizeof x) == TSR_OK
             && tsr_event_record (ev, be) == TSR_OK, "copy queued, event "
             "recorded");
      st = tsr_event_synchronize (ev);
      CHECK (st == TSR_ERR_BACKEND && says ("event synchronize"),
             "event synchronize returns the failure (status %d: %s)", st,
             tsr_last_error ());
      CHECK (tsr_event_synchronize (ev) == TSR_OK, "then nothing is "
             "pending");
      tsr_event_free (ev);
    }

  /* The scheduler hands the failure on too.  */
  tsr_sched *s = tsr_sched_new (&be, 1);
  tsr_context *c2 = tsr_context_new (true);
  tsr_tensor *p = tsr_new_tensor_1d (c2, TSR_TYPE_F32, 8);
  tsr_tensor *q = tsr_add (c2, p, p);
  tsr_graph *g2 = tsr_graph_new (c2);
  CHECK (s && g2 && tsr_graph_build (g2, q) == TSR_OK
         && tsr_sched_alloc_graph (s, g2) == TSR_OK, "scheduled on the "
         "asyncfail backend: %s", tsr_last_error ());
  tsr_clear_error ();
  st = tsr_sched_graph_compute (s, g2);
  CHECK (st == TSR_ERR_BACKEND && says ("kernel failed"), "the scheduler "
         "returns the failure (status %d: %s)", st, tsr_last_error ());
  tsr_sched_free (s);
  tsr_context_free (c2);

  /* Over [asyncfail, cpu]: the cpu's split reads asyncfail's result in
     place (host memory), so the scheduler waits for it on the host
     between the splits: that wait meets the failure, and the compute
     returns it (not a later split's success).  */
  tsr_backend *cpu = tsr_backend_init_by_type (TSR_DEVICE_CPU, NULL);
  if (cpu)
    {
      tsr_backend *two[2] = { be, cpu };
      tsr_context *c3 = tsr_context_new (true);
      tsr_tensor *u = tsr_new_tensor_1d (c3, TSR_TYPE_F32, 8);
      tsr_tensor *sum = tsr_add (c3, u, u);
      tsr_tensor *out = tsr_silu (c3, sum);
      tsr_graph *g3 = tsr_graph_new (c3);
      struct tsr_sched_stats sst;
      s = tsr_sched_new (two, 2);
      CHECK (s && tsr_graph_build (g3, out) == TSR_OK
             && tsr_sched_alloc_graph (s, g3) == TSR_OK
             && tsr_sched_get_backend (s, sum) == be
             && tsr_sched_get_backend (s, out) == cpu,
             "add on asyncfail, silu on the cpu: %s", tsr_last_error ());
      tsr_sched_get_stats (s, &sst);
      CHECK (sst.n_host_waits == 1, "one host wait between the splits "
             "(%d)", sst.n_host_waits);
      tsr_clear_error ();
      st = tsr_sched_graph_compute (s, g3);
      CHECK (st == TSR_ERR_BACKEND && says ("kernel failed"),
             "a failure met by a wait between splits reaches the caller "
             "(status %d: %s)", st, tsr_last_error ());
      CHECK (tsr_sched_graph_compute (s, g3) == TSR_ERR_BACKEND,
             "and again on the next compute");
      tsr_sched_free (s);
      tsr_context_free (c3);
      tsr_backend_free (cpu);
    }
  tsr_backend_free (be);
  tsr_context_free (ctx);

  /* finalize runs before unloading.  */
  CHECK (tsr_registry_unload ("asyncfail") == TSR_OK, "unloads: %s",
         tsr_last_error ());
  FILE *fp = fopen (fin, "r");
  char line[64] = "";
  if (fp)
    {
      if (!fgets (line, sizeof line, fp))
        line[0] = '\0';
      fclose (fp);
    }
  CHECK (strcmp (line, "finalized\n") == 0, "finalize ran before unload "
         "(file says \"%s\")", line);
  remove (fin);
  unsetenv ("TSR_TEST_FINALIZE_FILE");      /* leave no file behind */

  /* Bad modules: refused at registration with the reason recorded,
     never walked, called or trusted.  */
  static const struct
  {
    const char *breakage, *word, *what;
  } bad[] = {
    { "entry", "supports_buft", "a device lacking supports_buft" },
    { "name", "has no name", "a device whose name is NULL" },
    { "count", "claims 2147483648 devices", "a registration claiming 2^31 "
      "devices" },
    { "reenter", "called from a module's", "an init that calls "
      "tsr_registry_load_all" },
    { "regname", "registration has no name", "a registration whose name "
      "is NULL" },
  };
  bool found = false;
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    {
      setenv ("TSR_TEST_BREAK", bad[k].breakage, 1);
      st = tsr_registry_load (path);
      found = tsr_registry_failure_find ("asyncfail", &f);
      CHECK (st == TSR_ERR_MODULE && found
             && f.error == TSR_MODULE_INIT_FAILED
             && strstr (f.reason, bad[k].word)
             && !tsr_device_by_name ("AsyncFail0"), "%s is refused, "
             "recorded as an init failure saying '%s': %s", bad[k].what,
             bad[k].word, found ? f.reason : "(none)");
    }
  /* A score of 0 without a reason: a reason of the registry's own.  */
  setenv ("TSR_TEST_BREAK", "noreason", 1);
  st = tsr_registry_load (path);
  found = tsr_registry_failure_find ("asyncfail", &f);
  CHECK (st == TSR_ERR_MODULE && found && f.error == TSR_MODULE_UNUSABLE
         && f.reason && strstr (f.reason, "gave no reason"), "a score of 0 "
         "with no reason is recorded with one: %s", found ? f.reason
                                                          : "(none)");
  unsetenv ("TSR_TEST_BREAK");

  /* Unknown descriptor flags.  */
  st = tsr_registry_load (flags_path);
  found = tsr_registry_failure_find (flags_path, &f);
  CHECK (st != TSR_OK && found && f.error == TSR_MODULE_ABI_MISMATCH
         && strstr (f.reason, "flags"), "a descriptor with unknown flags is "
         "an ABI mismatch: %s", tsr_last_error ());
  return TSR_TEST_EXIT ();
}
