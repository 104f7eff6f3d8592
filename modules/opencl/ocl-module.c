/* ocl-module.c - the OpenCL backend: module descriptor, score, device
 * enumeration, registration and devices.
 *
 * Every device of every OpenCL platform becomes a Tessera device named
 * "OpenCL0", "OpenCL1"... in the order the ICD loader lists platforms
 * and each platform its devices (stable from run to run on one
 * machine); the description carries the device and platform names.
 *
 * Device types: a GPU is TSR_DEVICE_GPU, or TSR_DEVICE_IGPU when it
 * shares host memory (CL_DEVICE_HOST_UNIFIED_MEMORY).  A CPU device
 * (PoCL, Intel's CPU runtime) is TSR_DEVICE_ACCEL, never
 * TSR_DEVICE_CPU: tsr_device_by_type (TSR_DEVICE_CPU) must keep giving
 * Tessera's own CPU backend, whose host memory every other backend can
 * read; an OpenCL CPU device has memory of its own.  Accelerators and
 * custom devices are TSR_DEVICE_ACCEL too.
 *
 * Nothing OpenCL is created here beyond the platform and device ids:
 * contexts, queues and the kernel program are made on first use
 * (ocl-device.c).  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl-impl.h"

#define OCL_MAX_PLATFORMS 16
#define OCL_MAX_DEVICES_PER_PLATFORM 64

const char *
tsr_opencl_error_string (cl_int err)
{
  switch (err)
    {
#define E(x) case x: return #x;
      E (CL_SUCCESS) E (CL_DEVICE_NOT_FOUND) E (CL_DEVICE_NOT_AVAILABLE)
      E (CL_COMPILER_NOT_AVAILABLE) E (CL_MEM_OBJECT_ALLOCATION_FAILURE)
      E (CL_OUT_OF_RESOURCES) E (CL_OUT_OF_HOST_MEMORY)
      E (CL_BUILD_PROGRAM_FAILURE) E (CL_INVALID_VALUE)
      E (CL_INVALID_DEVICE_TYPE) E (CL_INVALID_PLATFORM)
      E (CL_INVALID_DEVICE) E (CL_INVALID_CONTEXT)
      E (CL_INVALID_COMMAND_QUEUE) E (CL_INVALID_MEM_OBJECT)
      E (CL_INVALID_BUILD_OPTIONS) E (CL_INVALID_PROGRAM)
      E (CL_INVALID_PROGRAM_EXECUTABLE) E (CL_INVALID_KERNEL_NAME)
      E (CL_INVALID_KERNEL) E (CL_INVALID_ARG_INDEX) E (CL_INVALID_ARG_VALUE)
      E (CL_INVALID_ARG_SIZE) E (CL_INVALID_KERNEL_ARGS)
      E (CL_INVALID_WORK_DIMENSION) E (CL_INVALID_WORK_GROUP_SIZE)
      E (CL_INVALID_WORK_ITEM_SIZE) E (CL_INVALID_GLOBAL_OFFSET)
      E (CL_INVALID_BUFFER_SIZE) E (CL_INVALID_GLOBAL_WORK_SIZE)
      E (CL_INVALID_OPERATION) E (CL_INVALID_BINARY)
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "unknown OpenCL error";
    }
}

/* Every device found, in order.  */
static struct tsr_opencl_device *devices;
static size_t n_devices;
static pthread_once_t enumerate_once = PTHREAD_ONCE_INIT;
static int enumerate_status = TSR_OK;
static char enumerate_error[256];

/* Device interface.  */

static struct tsr_opencl_device *
tsr_opencl_dev (tsr_device *dev)
{
  return dev->context;
}

static const char *
tsr_opencl_dev_name (tsr_device *dev)
{
  return tsr_opencl_dev (dev)->name;
}

static const char *
tsr_opencl_dev_description (tsr_device *dev)
{
  return tsr_opencl_dev (dev)->description;
}

/* OpenCL has no portable query of free memory: the total is reported
   free, which is what an otherwise idle device has.  */
static void
tsr_opencl_dev_memory (tsr_device *dev, size_t *free_bytes, size_t *total)
{
  *total = tsr_opencl_dev (dev)->mem_total;
  *free_bytes = tsr_opencl_dev (dev)->mem_total;
}

static tsr_device_type
tsr_opencl_dev_type (tsr_device *dev)
{
  return tsr_opencl_dev (dev)->type;
}

static void
tsr_opencl_dev_caps (tsr_device *dev, struct tsr_device_caps *caps)
{
  (void) dev;
  caps->async = true;           /* in-order queue, synchronize = finish */
  caps->host_buffer = false;
  caps->events = true;          /* markers and barriers, ocl-backend.c */
}

static tsr_buffer_type *
tsr_opencl_dev_buffer_type (tsr_device *dev)
{
  return &tsr_opencl_dev (dev)->buft;
}

static bool
tsr_opencl_dev_supports_op (tsr_device *dev, const tsr_tensor *op)
{
  return tsr_opencl_supports_op (tsr_opencl_dev (dev), op);
}

static bool
tsr_opencl_dev_supports_buft (tsr_device *dev, tsr_buffer_type *buft)
{
  return buft == &tsr_opencl_dev (dev)->buft;
}

static const struct tsr_device_iface tsr_opencl_device_iface = {
  .get_name = tsr_opencl_dev_name,
  .get_description = tsr_opencl_dev_description,
  .get_memory = tsr_opencl_dev_memory,
  .get_type = tsr_opencl_dev_type,
  .get_caps = tsr_opencl_dev_caps,
  .init_backend = tsr_opencl_backend_new,
  .get_buffer_type = tsr_opencl_dev_buffer_type,
  .supports_op = tsr_opencl_dev_supports_op,
  .supports_buft = tsr_opencl_dev_supports_buft,
  .event_new = tsr_opencl_event_new,
  .event_free = tsr_opencl_event_free,
  .event_synchronize = tsr_opencl_event_synchronize,
};

/* Enumeration.  */

static void
info_string (cl_device_id id, cl_device_info what, char *buf, size_t n)
{
  if (clGetDeviceInfo (id, what, n, buf, NULL) != CL_SUCCESS)
    snprintf (buf, n, "unknown");
  buf[n - 1] = '\0';
}

static tsr_device_type
map_type (cl_device_id id)
{
  cl_device_type t = 0;
  cl_bool unified = CL_FALSE;

  clGetDeviceInfo (id, CL_DEVICE_TYPE, sizeof t, &t, NULL);
  if (!(t & CL_DEVICE_TYPE_GPU))
    return TSR_DEVICE_ACCEL;    /* CPU, accelerator, custom */
  if (clGetDeviceInfo (id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified,
                       &unified, NULL) == CL_SUCCESS && unified)
    return TSR_DEVICE_IGPU;
  return TSR_DEVICE_GPU;
}

static bool
has_fp64 (cl_device_id id)
{
  cl_device_fp_config cfg = 0;

  return clGetDeviceInfo (id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof cfg, &cfg,
                          NULL) == CL_SUCCESS && cfg != 0;
}

/* 1: cl_khr_subgroups, 2: cl_intel_subgroups, 0: neither (a device
   with both takes the Khronos one).  */
static int
subgroups (cl_device_id id)
{
  size_t len = 0;
  char *ext;
  int kind = 0;

  if (clGetDeviceInfo (id, CL_DEVICE_EXTENSIONS, 0, NULL, &len) != CL_SUCCESS
      || !len || !(ext = malloc (len + 1)))
    return 0;
  if (clGetDeviceInfo (id, CL_DEVICE_EXTENSIONS, len, ext, NULL)
      == CL_SUCCESS)
    {
      ext[len] = '\0';
      /* Names are separated by spaces; match whole ones.  */
      char *save = NULL;
      for (char *t = strtok_r (ext, " ", &save); t;
           t = strtok_r (NULL, " ", &save))
        if (!strcmp (t, "cl_khr_subgroups"))
          kind = 1;
        else if (!strcmp (t, "cl_intel_subgroups") && !kind)
          kind = 2;
    }
  free (ext);
  return kind;
}

static void
describe (struct tsr_opencl_device *d, const char *platform)
{
  char name[200], version[100];
  cl_uint units = 0;
  cl_ulong mem = 0, max_alloc = 0;

  info_string (d->id, CL_DEVICE_NAME, name, sizeof name);
  info_string (d->id, CL_DEVICE_VERSION, version, sizeof version);
  clGetDeviceInfo (d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units,
                   NULL);
  clGetDeviceInfo (d->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
  clGetDeviceInfo (d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc,
                   &max_alloc, NULL);
  if (clGetDeviceInfo (d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE,
                       sizeof d->max_wg, &d->max_wg, NULL) != CL_SUCCESS)
    d->max_wg = 1;
  cl_ulong local = 0;
  clGetDeviceInfo (d->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local,
                   NULL);
  d->local_mem = local;
  snprintf (d->name, sizeof d->name, "OpenCL%d", d->index);
  snprintf (d->description, sizeof d->description,
            "%s (%s), %s, %u compute units%s%s", name, platform, version,
            (unsigned) units, d->fp64 ? "" : ", no fp64",
            d->subgroups == 1 ? ", subgroups"
            : d->subgroups == 2 ? ", Intel subgroups" : "");
  d->mem_total = (size_t) mem;
  d->max_alloc = max_alloc ? (size_t) max_alloc : (size_t) mem;
}

static void
add_device (cl_platform_id p, cl_device_id id, const char *platform)
{
  struct tsr_opencl_device *d = &devices[n_devices];

  memset (d, 0, sizeof *d);
  d->index = (int) n_devices;
  d->platform = p;
  d->id = id;
  d->type = map_type (id);
  d->fp64 = has_fp64 (id);
  d->subgroups = subgroups (id);
  cl_device_type t = 0;
  clGetDeviceInfo (id, CL_DEVICE_TYPE, sizeof t, &t, NULL);
  d->cpu = (t & CL_DEVICE_TYPE_CPU) != 0;
  describe (d, platform);
  pthread_mutex_init (&d->lock, NULL);
  tsr_opencl_buft_init (d);
  n_devices++;
}

static void
enumerate (void)
{
  cl_platform_id platforms[OCL_MAX_PLATFORMS];
  cl_uint n_platforms = 0;
  cl_int err = clGetPlatformIDs (OCL_MAX_PLATFORMS, platforms, &n_platforms);

  if (err != CL_SUCCESS || n_platforms == 0)
    {
      enumerate_status = TSR_ERR_NOT_FOUND;
      snprintf (enumerate_error, sizeof enumerate_error,
                "opencl: no OpenCL platform (clGetPlatformIDs: %s)",
                tsr_opencl_error_string (err));
      return;
    }
  if (n_platforms > OCL_MAX_PLATFORMS)
    n_platforms = OCL_MAX_PLATFORMS;
  devices = calloc ((size_t) n_platforms * OCL_MAX_DEVICES_PER_PLATFORM,
                    sizeof *devices);
  if (!devices)
    {
      enumerate_status = TSR_ERR_NO_MEMORY;
      snprintf (enumerate_error, sizeof enumerate_error,
                "opencl: out of memory");
      return;
    }
  for (cl_uint p = 0; p < n_platforms; p++)
    {
      cl_device_id ids[OCL_MAX_DEVICES_PER_PLATFORM];
      cl_uint n = 0;
      char pname[128];

      if (clGetPlatformInfo (platforms[p], CL_PLATFORM_NAME, sizeof pname,
                             pname, NULL) != CL_SUCCESS)
        snprintf (pname, sizeof pname, "platform %u", (unsigned) p);
      pname[sizeof pname - 1] = '\0';
      err = clGetDeviceIDs (platforms[p], CL_DEVICE_TYPE_ALL,
                            OCL_MAX_DEVICES_PER_PLATFORM, ids, &n);
      if (err != CL_SUCCESS)
        {
          tsr_log (TSR_LOG_INFO, "opencl: platform '%s' lists no devices "
                   "(%s)", pname, tsr_opencl_error_string (err));
          continue;
        }
      if (n > OCL_MAX_DEVICES_PER_PLATFORM)
        n = OCL_MAX_DEVICES_PER_PLATFORM;
      for (cl_uint i = 0; i < n; i++)
        {
          add_device (platforms[p], ids[i], pname);
          tsr_log (TSR_LOG_DEBUG, "opencl: %s: %s, type %s",
                   devices[n_devices - 1].name,
                   devices[n_devices - 1].description,
                   tsr_device_type_name (devices[n_devices - 1].type));
        }
    }
  if (n_devices == 0)
    {
      enumerate_status = TSR_ERR_NOT_FOUND;
      snprintf (enumerate_error, sizeof enumerate_error,
                "opencl: no OpenCL device on %u platform%s",
                (unsigned) n_platforms, n_platforms == 1 ? "" : "s");
    }
}

/* Module entry points.  */

/* 0 with "no OpenCL platform" when the ICD loader lists none (no
   vendor ICD installed, or OCL_ICD_VENDORS pointing at an empty
   directory), 0 with the loader's error when it fails otherwise.  */
static int
tsr_opencl_score (const char **reason)
{
  static char why[200];
  cl_uint n = 0;
  cl_int err = clGetPlatformIDs (0, NULL, &n);

  if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */
      || (err == CL_SUCCESS && n == 0))
    {
      *reason = "no OpenCL platform";
      return 0;
    }
  if (err != CL_SUCCESS)
    {
      snprintf (why, sizeof why, "the OpenCL ICD loader failed: "
                "clGetPlatformIDs returned %s (%d)", tsr_opencl_error_string (err),
                (int) err);
      *reason = why;
      return 0;
    }
  return 10;
}

static tsr_reg *
tsr_opencl_init (void)
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
      tsr_set_error (TSR_ERR_NO_MEMORY, "opencl: out of memory");
      return NULL;
    }
  for (size_t i = 0; i < n_devices; i++)
    contexts[i] = &devices[i];
  tsr_reg *reg = tsr_reg_new ("opencl", &tsr_opencl_device_iface, n_devices,
                              contexts, NULL);
  free (contexts);
  for (size_t i = 0; reg && i < n_devices; i++)
    {
      devices[i].dev = reg->iface.get_device (reg, i);
      devices[i].buft.device = devices[i].dev;
    }
  return reg;
}

/* When the module is unloaded: release what the devices made.  */
#if defined(__GNUC__)
__attribute__ ((destructor))
#endif
static void
tsr_opencl_fini (void)
{
  for (size_t i = 0; i < n_devices; i++)
    {
      tsr_opencl_device_release (&devices[i]);
      pthread_mutex_destroy (&devices[i].lock);
    }
  free (devices);
  devices = NULL;
  n_devices = 0;
}

const struct tsr_module_descriptor TSR_MODULE_DESCRIPTOR = {
  TSR_MODULE_ABI_VERSION, "opencl", tsr_opencl_score, tsr_opencl_init, NULL, 0
};
