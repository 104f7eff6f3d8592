/* A module whose work fails after it was queued, as a GPU kernel or
   copy does: graph_compute and the async set/get return TSR_OK, and the
   failure shows only in synchronize and event_synchronize, which
   return it.  It computes f32 add on host memory (the values are
   right; the failure is reported all the same).  Its finalize writes
   "finalized" into the file named by TSR_TEST_FINALIZE_FILE.
   TSR_TEST_BREAK, when it is loaded, makes it a bad module: "entry"
   (its device lacks supports_buft, which module ABI 3 requires),
   "name" (its device's name is NULL), "count" (its registration claims
   2^31 devices), "regname" (its registration's name is NULL),
   "noreason" (its score is 0 with no reason), "reenter" (its init calls
   tsr_registry_load_all and fails with what that returned).  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera/module.h>
#include <tessera/registry.h>

static int pending;             /* a failure queued work will report */

static const char *breakage = "";

static const char *
reg_name (tsr_reg *reg)
{
  return strcmp (breakage, "regname") == 0 ? NULL : "asyncfail";
}

static size_t
reg_count (tsr_reg *reg)
{
  return strcmp (breakage, "count") == 0 ? (size_t) 1 << 31 : 1;
}

static tsr_device async_device;

static tsr_device *
reg_device (tsr_reg *reg, size_t i)
{
  return i == 0 ? &async_device : NULL;
}

static tsr_reg async_reg = {
  TSR_MODULE_ABI_VERSION, { reg_name, reg_count, reg_device }, NULL
};

static const char *
dev_name (tsr_device *dev)
{
  return strcmp (breakage, "name") == 0 ? NULL : "AsyncFail0";
}

static const char *
dev_description (tsr_device *dev)
{
  return "a device whose queued work fails (test module)";
}

static tsr_device_type
dev_type (tsr_device *dev)
{
  return TSR_DEVICE_ACCEL;
}

static const char *
be_name (tsr_backend *be)
{
  return "asyncfail";
}

/* Queue the work: it is done here, and "fails" later.  */
static int
be_compute (tsr_backend *be, tsr_graph *g)
{
  for (int i = 0; i < tsr_graph_n_nodes (g); i++)
    {
      tsr_tensor *n = tsr_graph_node (g, i);
      if (n->op != TSR_OP_ADD)
        continue;
      for (int64_t j = 0; j < tsr_nelements (n); j++)
        tsr_set_f32_1d (n, j, tsr_get_f32_1d (n->src[0], j)
                              + tsr_get_f32_1d (n->src[1], j));
    }
  pending = 1;
  return TSR_OK;
}

static int
be_set_async (tsr_backend *be, tsr_tensor *t, const void *data,
              size_t offset, size_t size)
{
  memcpy ((char *) t->data + offset, data, size);
  pending = 2;
  return TSR_OK;
}

static int
be_get_async (tsr_backend *be, const tsr_tensor *t, void *data,
              size_t offset, size_t size)
{
  memcpy (data, (const char *) t->data + offset, size);
  pending = 2;
  return TSR_OK;
}

static int
report_pending (const char *who)
{
  int p = pending;

  pending = 0;
  if (p == 1)
    return tsr_set_error (TSR_ERR_BACKEND, "asyncfail: %s: a kernel failed "
                          "after it was queued", who);
  if (p == 2)
    return tsr_set_error (TSR_ERR_BACKEND, "asyncfail: %s: a copy failed "
                          "after it was queued", who);
  return TSR_OK;
}

static int
be_synchronize (tsr_backend *be)
{
  return report_pending ("synchronize");
}

static int
be_event_record (tsr_backend *be, tsr_event *ev)
{
  return TSR_OK;
}

static int
be_event_wait (tsr_backend *be, tsr_event *ev)
{
  return TSR_OK;
}

static int
dev_event_new (tsr_device *dev, tsr_event *ev)
{
  ev->context = NULL;
  return TSR_OK;
}

static void
dev_event_free (tsr_event *ev)
{
}

static int
dev_event_synchronize (tsr_event *ev)
{
  return report_pending ("event synchronize");
}

static tsr_backend *
dev_init (tsr_device *dev, const char *params)
{
  struct tsr_backend_iface iface = { 0 };

  iface.get_name = be_name;
  iface.set_tensor_async = be_set_async;
  iface.get_tensor_async = be_get_async;
  iface.synchronize = be_synchronize;
  iface.graph_compute = be_compute;
  iface.event_record = be_event_record;
  iface.event_wait = be_event_wait;
  return tsr_backend_new (dev, iface, NULL);
}

static tsr_buffer_type *
dev_buft (tsr_device *dev)
{
  return tsr_host_buffer_type ();
}

static bool
dev_supports_op (tsr_device *dev, const tsr_tensor *op)
{
  return op->op == TSR_OP_ADD
         || tsr_op_get_kind (op->op) == TSR_OP_KIND_VIEW;
}

static bool
dev_supports_buft (tsr_device *dev, tsr_buffer_type *buft)
{
  return tsr_buffer_type_is_host (buft);
}

static tsr_device async_device = {
  { .get_name = dev_name, .get_description = dev_description,
    .get_type = dev_type, .init_backend = dev_init,
    .get_buffer_type = dev_buft, .supports_op = dev_supports_op,
    .supports_buft = dev_supports_buft, .event_new = dev_event_new,
    .event_free = dev_event_free,
    .event_synchronize = dev_event_synchronize },
  &async_reg,
  NULL
};

static int
score (const char **reason)
{
  /* "noreason": unusable, without saying why.  */
  const char *b = getenv ("TSR_TEST_BREAK");
  return b && strcmp (b, "noreason") == 0 ? 0 : 1;
}

static tsr_reg *
init (void)
{
  const char *b = getenv ("TSR_TEST_BREAK");
  breakage = b ? b : "";
  async_device.iface.supports_buft = strcmp (breakage, "entry") == 0
                                     ? NULL : dev_supports_buft;
  if (strcmp (breakage, "reenter") == 0)
    {
      int st = tsr_registry_load_all ();
      char msg[256];
      snprintf (msg, sizeof msg, "%s", st != TSR_OK ? tsr_last_error ()
                                                    : "(ok)");
      tsr_set_error (TSR_ERR_MODULE, "asyncfail: re-entry returned %d: %s",
                     st, msg);
      return NULL;
    }
  return &async_reg;
}

static void
finalize (void)
{
  const char *path = getenv ("TSR_TEST_FINALIZE_FILE");
  FILE *f = path ? fopen (path, "a") : NULL;
  if (f)
    {
      fputs ("finalized\n", f);
      fclose (f);
    }
}

const struct tsr_module_descriptor TSR_MODULE_DESCRIPTOR = {
  TSR_MODULE_ABI_VERSION, "asyncfail", score, init, finalize, 0
};
