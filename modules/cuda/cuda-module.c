/* cuda-module.c - the CUDA backend: module descriptor, score, device
 * enumeration, registration and devices.
 *
 * Each GPU the runtime lists becomes a Tessera device named "CUDA0",
 * "CUDA1"... in the runtime's order (CUDA_VISIBLE_DEVICES applies);
 * its description has the GPU's name, compute capability,
 * multiprocessors and PCI bus id.
 *
 * Loading the module must stay cheap where CUDA cannot run: it links
 * only the small runtime library (libcudart), which opens the driver
 * itself on first use, and cuBLAS is opened when a backend first
 * multiplies matrices (cuda-blas.c).  The score looks for the driver
 * library before asking the runtime anything, so that "no driver" is
 * said as such rather than as the runtime's "driver version is
 * insufficient".  */
#include <config.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-impl.h"

/* Every device found, in order.  */
static struct tsr_cuda_device *devices;
static size_t n_devices;
static pthread_once_t enumerate_once = PTHREAD_ONCE_INIT;
static int enumerate_status = TSR_OK;
static char enumerate_error[256];

int
tsr_cuda_error (const struct tsr_cuda_device *d, const char *what, cudaError_t err)
{
  return tsr_set_error (TSR_ERR_BACKEND, "cuda: %s: %s failed: %s (%s)",
                        d ? d->name : "runtime", what, cudaGetErrorName (err),
                        cudaGetErrorString (err));
}

/* Device interface.  */

static struct tsr_cuda_device *
tsr_cuda_dev (tsr_device *dev)
{
  return dev->context;
}

static const char *
tsr_cuda_dev_name (tsr_device *dev)
{
  return tsr_cuda_dev (dev)->name;
}

static const char *
tsr_cuda_dev_description (tsr_device *dev)
{
  return tsr_cuda_dev (dev)->description;
}

/* Free memory needs the device's context (made here if no buffer or
   backend made it before); the total is known from enumeration.  */
static void
tsr_cuda_dev_memory (tsr_device *dev, size_t *free_bytes, size_t *total)
{
  struct tsr_cuda_device *d = tsr_cuda_dev (dev);
  size_t f = 0, t = 0;

  *total = d->mem_total;
  *free_bytes = 0;
  if (cudaSetDevice (d->ordinal) == cudaSuccess
      && cudaMemGetInfo (&f, &t) == cudaSuccess)
    {
      *free_bytes = f;
      *total = t;
    }
}

static tsr_device_type
tsr_cuda_dev_type (tsr_device *dev)
{
  (void) dev;
  return TSR_DEVICE_GPU;
}

static void
tsr_cuda_dev_caps (tsr_device *dev, struct tsr_device_caps *caps)
{
  (void) dev;
  caps->async = true;           /* one stream per backend */
  caps->host_buffer = true;     /* tsr_cuda_dev_host_buffer_type */
  caps->events = true;          /* tsr_cuda_event_* */
}

static tsr_buffer_type *
tsr_cuda_dev_host_buffer_type (tsr_device *dev)
{
  return &tsr_cuda_dev (dev)->host_buft;
}

static tsr_buffer_type *
tsr_cuda_dev_buffer_type (tsr_device *dev)
{
  return &tsr_cuda_dev (dev)->buft;
}

static bool
tsr_cuda_dev_supports_op (tsr_device *dev, const tsr_tensor *op)
{
  return tsr_cuda_supports_op (tsr_cuda_dev (dev), op);
}

static bool
tsr_cuda_dev_supports_buft (tsr_device *dev, tsr_buffer_type *buft)
{
  return buft == &tsr_cuda_dev (dev)->buft;
}

static const struct tsr_device_iface tsr_cuda_device_iface = {
  .get_name = tsr_cuda_dev_name,
  .get_description = tsr_cuda_dev_description,
  .get_memory = tsr_cuda_dev_memory,
  .get_type = tsr_cuda_dev_type,
  .get_caps = tsr_cuda_dev_caps,
  .init_backend = tsr_cuda_backend_new,
  .get_buffer_type = tsr_cuda_dev_buffer_type,
  .supports_op = tsr_cuda_dev_supports_op,
  .supports_buft = tsr_cuda_dev_supports_buft,
  .get_host_buffer_type = tsr_cuda_dev_host_buffer_type,
  .event_new = tsr_cuda_event_new,
  .event_free = tsr_cuda_event_free,
  .event_synchronize = tsr_cuda_event_synchronize,
};

/* Enumeration.  */

static void
describe (struct tsr_cuda_device *d)
{
  struct cudaDeviceProp p;
  cudaError_t err = cudaGetDeviceProperties (&p, d->ordinal);

  snprintf (d->name, sizeof d->name, "CUDA%d", d->ordinal);
  if (err != cudaSuccess)
    {
      snprintf (d->description, sizeof d->description, "CUDA device %d "
                "(properties unknown: %s)", d->ordinal,
                cudaGetErrorString (err));
      return;
    }
  if (cudaDeviceGetPCIBusId (d->pci_bus_id, sizeof d->pci_bus_id,
                             d->ordinal) != cudaSuccess)
    snprintf (d->pci_bus_id, sizeof d->pci_bus_id, "unknown");
  d->cc_major = p.major;
  d->cc_minor = p.minor;
  d->mem_total = p.totalGlobalMem;
  p.name[sizeof p.name - 1] = '\0';
  snprintf (d->description, sizeof d->description,
            "%s (compute capability %d.%d, %d multiprocessors, PCI %s)",
            p.name, p.major, p.minor, p.multiProcessorCount, d->pci_bus_id);
}

static void
enumerate (void)
{
  int n = 0;
  cudaError_t err = cudaGetDeviceCount (&n);

  if (err != cudaSuccess || n <= 0)
    {
      enumerate_status = TSR_ERR_NOT_FOUND;
      snprintf (enumerate_error, sizeof enumerate_error,
                "cuda: no CUDA device (cudaGetDeviceCount: %s)",
                cudaGetErrorString (err));
      return;
    }
  devices = calloc ((size_t) n, sizeof *devices);
  if (!devices)
    {
      enumerate_status = TSR_ERR_NO_MEMORY;
      snprintf (enumerate_error, sizeof enumerate_error,
                "cuda: out of memory");
      return;
    }
  for (int i = 0; i < n; i++)
    {
      struct tsr_cuda_device *d = &devices[n_devices++];

      d->ordinal = i;
      describe (d);
      tsr_cuda_buft_init (d);
      tsr_cuda_host_buft_init (d);
      tsr_log (TSR_LOG_DEBUG, "cuda: %s: %s", d->name, d->description);
    }
}

/* Module entry points.  */

/* The driver's CUDA version from libcuda.so.1 itself, or 0 when the
   library is missing (*FOUND false) or does not say.  The library stays
   open: the runtime opens it again anyway.  */
static int
driver_version (bool *found)
{
  void *h = dlopen ("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  int (*get) (int *);
  int v = 0;

  *found = h != NULL;
  if (!h)
    return 0;
  *(void **) &get = dlsym (h, "cuDriverGetVersion");
  if (!get || get (&v) != 0)
    v = 0;
  return v;
}

/* 0 with the reason when CUDA cannot run here: no driver library, a
   driver older than the runtime, no device, or the runtime's own
   error.  */
static int
tsr_cuda_score (const char **reason)
{
  static char why[256];
  bool found;
  int drv = driver_version (&found), rt = 0, n = 0;
  cudaError_t err;

  if (!found)
    {
      *reason = "no CUDA driver (libcuda.so.1 not found)";
      return 0;
    }
  cudaRuntimeGetVersion (&rt);
  /* Within one major version the runtime runs on an older driver
     (CUDA's minor version compatibility); across major versions not.  */
  if (drv > 0 && rt > 0 && drv / 1000 < rt / 1000)
    {
      snprintf (why, sizeof why, "CUDA driver older than the runtime "
                "(the driver supports CUDA %d.%d, the runtime is %d.%d)",
                drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
      *reason = why;
      return 0;
    }
  err = cudaGetDeviceCount (&n);
  if (err == cudaErrorNoDevice || (err == cudaSuccess && n <= 0))
    {
      *reason = "no CUDA device";
      return 0;
    }
  if (err != cudaSuccess)
    {
      snprintf (why, sizeof why, "%scudaGetDeviceCount failed: %s (%s)",
                err == cudaErrorInsufficientDriver
                ? "CUDA driver older than the runtime: " : "",
                cudaGetErrorName (err), cudaGetErrorString (err));
      *reason = why;
      return 0;
    }
  return 100;
}

static tsr_reg *
tsr_cuda_init (void)
{
  pthread_once (&enumerate_once, enumerate);
  if (enumerate_status != TSR_OK)
    {
      tsr_set_error (enumerate_status, "%s", enumerate_error);
      return NULL;
    }
  void **contexts = calloc (n_devices, sizeof *contexts);
  if (!contexts)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "cuda: out of memory");
      return NULL;
    }
  for (size_t i = 0; i < n_devices; i++)
    contexts[i] = &devices[i];
  tsr_reg *reg = tsr_reg_new ("cuda", &tsr_cuda_device_iface, n_devices, contexts,
                              NULL);
  free (contexts);
  for (size_t i = 0; reg && i < n_devices; i++)
    {
      devices[i].dev = reg->iface.get_device (reg, i);
      devices[i].buft.device = devices[i].dev;
      devices[i].host_buft.device = devices[i].dev;
    }
  return reg;
}

/* Named entry points beyond the backend interface.  */
static void *
tsr_cuda_get_proc (const char *name)
{
  if (strcmp (name, TSR_BACKEND_COUNTERS_NAME) == 0)
    return (void *) tsr_cuda_counters;
  return NULL;
}

const struct tsr_module_descriptor_ext TSR_MODULE_DESCRIPTOR = {
  { TSR_MODULE_ABI_VERSION, "cuda", tsr_cuda_score, tsr_cuda_init, NULL,
    TSR_MODULE_FLAG_PROC },
  tsr_cuda_get_proc
};
