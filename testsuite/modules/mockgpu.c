/* A working module with one device that claims to be a GPU.  It
   supports no operation and uses host memory; it exists so registry
   tests can check enumeration, lookups, init_best's preference and
   unloading without real hardware.  It offers a "pinned" host buffer
   type (the plain host one) and events whose context is an int the
   tests read: bit 1 recorded, bit 2 waited for by a backend, bit 4
   synchronized on the host.  Its backends keep counters
   (tsr_backend_get_counters): COMPUTES counts the computes asked of
   it, which all fail.  */
#include <stdlib.h>
#include <string.h>
#include <tessera/module.h>

static const char *
dev_name (tsr_device *dev)
{
  return "MockGPU0";
}

static const char *
dev_description (tsr_device *dev)
{
  return "mock GPU for the testsuite";
}

static void
dev_memory (tsr_device *dev, size_t *free_bytes, size_t *total)
{
  *free_bytes = 1u << 20;
  *total = 2u << 20;
}

static tsr_device_type
dev_type (tsr_device *dev)
{
  return TSR_DEVICE_GPU;
}

static const char *
be_name (tsr_backend *be)
{
  return "mockgpu";
}

static int
be_compute (tsr_backend *be, tsr_graph *g)
{
  ((struct tsr_backend_counters *) be->context)->computes++;
  return tsr_set_error (TSR_ERR_UNSUPPORTED, "mockgpu computes nothing");
}

static void
be_free (tsr_backend *be)
{
  free (be->context);
}

static int
be_counters (tsr_backend *be, struct tsr_backend_counters *c, bool clear)
{
  *c = *(struct tsr_backend_counters *) be->context;
  if (clear)
    memset (be->context, 0, sizeof *c);
  return TSR_OK;
}

static int
be_event_record (tsr_backend *be, tsr_event *ev)
{
  *(int *) ev->context |= 1;
  return TSR_OK;
}

static int
be_event_wait (tsr_backend *be, tsr_event *ev)
{
  *(int *) ev->context |= 2;
  return TSR_OK;
}

static int
dev_event_new (tsr_device *dev, tsr_event *ev)
{
  ev->context = calloc (1, sizeof (int));
  return ev->context ? TSR_OK : tsr_set_error (TSR_ERR_NO_MEMORY, "mock");
}

static void
dev_event_free (tsr_event *ev)
{
  free (ev->context);
}

static int
dev_event_synchronize (tsr_event *ev)
{
  *(int *) ev->context |= 4;
  return TSR_OK;
}

static tsr_buffer_type *
dev_host_buft (tsr_device *dev)
{
  return tsr_host_buffer_type ();
}

static tsr_backend *
dev_init (tsr_device *dev, const char *params)
{
  struct tsr_backend_iface iface = { 0 };
  struct tsr_backend_counters *c = calloc (1, sizeof *c);

  if (!c)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "mockgpu: no memory");
      return NULL;
    }
  iface.get_name = be_name;
  iface.free = be_free;
  iface.graph_compute = be_compute;
  iface.event_record = be_event_record;
  iface.event_wait = be_event_wait;
  tsr_backend *be = tsr_backend_new (dev, iface, c);
  if (!be)
    free (c);
  return be;
}

static tsr_buffer_type *
dev_buft (tsr_device *dev)
{
  return tsr_host_buffer_type ();
}

static bool
dev_supports_op (tsr_device *dev, const tsr_tensor *op)
{
  return false;
}

static bool
dev_supports_buft (tsr_device *dev, tsr_buffer_type *buft)
{
  return false;
}

static const struct tsr_device_iface mock_device_iface = {
  .get_name = dev_name, .get_description = dev_description,
  .get_memory = dev_memory, .get_type = dev_type, .init_backend = dev_init,
  .get_buffer_type = dev_buft, .supports_op = dev_supports_op,
  .supports_buft = dev_supports_buft, .get_host_buffer_type = dev_host_buft,
  .event_new = dev_event_new, .event_free = dev_event_free,
  .event_synchronize = dev_event_synchronize,
};

static int
score (const char **reason)
{
  return 5;
}

/* The registration is the core's (tsr_reg_new): freed at unload.  */
static tsr_reg *
init (void)
{
  return tsr_reg_new ("mockgpu", &mock_device_iface, 1, NULL, NULL);
}

static void *
get_proc (const char *name)
{
  return strcmp (name, TSR_BACKEND_COUNTERS_NAME) == 0 ? (void *) be_counters
                                                     : NULL;
}

const struct tsr_module_descriptor_ext TSR_MODULE_DESCRIPTOR = {
  { TSR_MODULE_ABI_VERSION, "mockgpu", score, init, NULL,
    TSR_MODULE_FLAG_PROC },
  get_proc
};
