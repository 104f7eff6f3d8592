/* ocl-device.c - per-device OpenCL state, made on first use and kept.
 *
 * The context and its one in-order command queue are made by the first
 * buffer allocation or backend; the kernel program is built by the
 * first graph computed on the device, once per process (from the
 * binary cache of ocl-cache.c when it has the program, else from
 * source, and then stored there), and its kernels kept.  A failure is remembered, so later callers get the
 * same message (with the compiler's build log) instead of a rebuild.
 * All of it runs under the device's lock.  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ocl-impl.h"

#include "ocl-kernels.h"        /* tsr_ocl_kernel_source, generated */

static const char *const kernel_names[OCL_K_COUNT] = {
#define OCL_KERNEL_NAME(name) "k_" #name,
  OCL_KERNELS (OCL_KERNEL_NAME)
#undef OCL_KERNEL_NAME
};

static int
fail (struct tsr_opencl_device *d, bool *failed, const char *fmt, const char *what,
      cl_int err)
{
  snprintf (d->failure, sizeof d->failure, fmt, d->name, what,
            tsr_opencl_error_string (err), (int) err);
  *failed = true;
  tsr_log (TSR_LOG_ERROR, "%s", d->failure);
  return tsr_set_error (TSR_ERR_BACKEND, "%s", d->failure);
}

const char *
tsr_opencl_kernel_name (enum tsr_opencl_kernel_id k)
{
  return kernel_names[k];
}

static int
make_queue (struct tsr_opencl_device *d)
{
  cl_context_properties props[] = {
    CL_CONTEXT_PLATFORM, (cl_context_properties) d->platform, 0
  };
  cl_int err;

  d->context = clCreateContext (props, 1, &d->id, NULL, NULL, &err);
  if (!d->context)
    return fail (d, &d->queue_failed, "opencl: %s: %s failed: %s (%d)",
                 "clCreateContext", err);
  d->profile = tsr_opencl_profile_wanted ();
  d->queue = clCreateCommandQueue (d->context, d->id,
                                   d->profile ? CL_QUEUE_PROFILING_ENABLE
                                              : 0, &err);
  if (!d->queue)
    {
      clReleaseContext (d->context);
      d->context = NULL;
      return fail (d, &d->queue_failed, "opencl: %s: %s failed: %s (%d)",
                   "clCreateCommandQueue", err);
    }
  d->have_queue = true;
  tsr_log (TSR_LOG_DEBUG, "opencl: %s: context and queue ready", d->name);
  return TSR_OK;
}

int
tsr_opencl_device_ready (struct tsr_opencl_device *d)
{
  int st = TSR_OK;

  pthread_mutex_lock (&d->lock);
  if (d->queue_failed)
    st = tsr_set_error (TSR_ERR_BACKEND, "%s", d->failure);
  else if (!d->have_queue)
    st = make_queue (d);
  pthread_mutex_unlock (&d->lock);
  return st;
}

/* The compiler's log for D (malloc'd; NULL when there is none).  */
static char *
build_log (struct tsr_opencl_device *d)
{
  size_t len = 0;
  char *log;

  if (clGetProgramBuildInfo (d->program, d->id, CL_PROGRAM_BUILD_LOG, 0,
                             NULL, &len) != CL_SUCCESS || len < 2)
    return NULL;
  log = malloc (len + 1);
  if (log && clGetProgramBuildInfo (d->program, d->id, CL_PROGRAM_BUILD_LOG,
                                    len, log, NULL) != CL_SUCCESS)
    {
      free (log);
      return NULL;
    }
  if (log)
    log[len] = '\0';
  return log;
}

/* The kernels' TSR_OP_* and TSR_TYPE_* as -D options, from the
   library's own lists.  */
static const struct
{
  const char *name;
  int value;
} constants[] = {
#define TSR_OP(id, name, kind) { "TSR_OP_" #id, TSR_OP_##id },
#include <tessera/ops.def>
#undef TSR_OP
  { "TSR_TYPE_F32", TSR_TYPE_F32 }, { "TSR_TYPE_F16", TSR_TYPE_F16 },
  { "TSR_TYPE_BF16", TSR_TYPE_BF16 }, { "TSR_TYPE_I32", TSR_TYPE_I32 },
#define TYPE(t) { "TSR_TYPE_" #t, TSR_TYPE_##t }
  TYPE (Q8_0), TYPE (Q4_0), TYPE (Q4_1), TYPE (Q5_0), TYPE (Q5_1),
  TYPE (Q2_K), TYPE (Q3_K), TYPE (Q4_K), TYPE (Q5_K), TYPE (Q6_K),
  TYPE (IQ4_NL), TYPE (IQ4_XS), TYPE (MXFP4),
#undef TYPE
};

/* The largest power of two at most N (N >= 1).  */
static size_t
pow2_floor (size_t n)
{
  size_t p = 1;
  while (p <= n / 2)
    p *= 2;
  return p;
}

/* TESSERA_OPENCL_WG: the work-group bound asked for (a power of two
   from OCL_MIN_WG to OCL_MAX_WG); 0 when unset, -1 when not such a
   number.  */
static long
wg_wanted (void)
{
  const char *v = getenv ("TESSERA_OPENCL_WG");
  char *end;
  long n;

  if (!v || !*v)
    return 0;
  n = strtol (v, &end, 10);
  if (*end || n < OCL_MIN_WG || n > OCL_MAX_WG || (n & (n - 1)))
    return -1;
  return n;
}

/* OCL_WG of D's kernels (OCL_MAX_WG or the device's maximum, if lower;
   OCL_MIN_WG on a CPU device; 0 when the device cannot take
   OCL_MIN_WG).  */
static size_t
build_wg (const struct tsr_opencl_device *d)
{
  size_t bound = d->cpu ? OCL_MIN_WG : OCL_MAX_WG;
  long want = wg_wanted ();
  if (want > 0)
    bound = (size_t) want;
  size_t wg = pow2_floor (d->max_wg < bound ? d->max_wg : bound);
  return wg >= OCL_MIN_WG ? wg : 0;
}

/* The build options of D's program: the constants, the work-group
   bound and whether the kernels use subgroups.  */
static char *
build_options (const struct tsr_opencl_device *d)
{
  size_t n = sizeof constants / sizeof constants[0], size = 64, len = 0;
  char *opts;

  for (size_t i = 0; i < n; i++)
    size += strlen (constants[i].name) + 16;
  opts = malloc (size);
  if (!opts)
    return NULL;
  opts[0] = '\0';
  for (size_t i = 0; i < n; i++)
    len += (size_t) snprintf (opts + len, size - len, "%s-D%s=%d",
                              i ? " " : "", constants[i].name,
                              constants[i].value);
  snprintf (opts + len, size - len, " -DOCL_WG=%zu -DOCL_SUBGROUPS=%d",
            build_wg (d), d->subgroups);
  return opts;
}

/* The local sizes of D's work-group kernels, within what each kernel
   can take on the device; false (an error set) when one of them cannot
   take OCL_MIN_WG items.  */
static bool
set_local_sizes (struct tsr_opencl_device *d)
{
  static const enum tsr_opencl_kernel_id groups[] = {
    OCL_K_sum_rows, OCL_K_norm, OCL_K_soft_max, OCL_K_flash_attn,
    OCL_K_mul_mat_vec, OCL_K_mul_mat_id
  };
  size_t wg = build_wg (d), kwg = 0;
  cl_ulong lmem = 0;

  memset (d->local, 0, sizeof d->local);
  for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
    {
      enum tsr_opencl_kernel_id k = groups[i];
      if (clGetKernelWorkGroupInfo (d->kernels[k], d->id,
                                    CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg,
                                    &kwg, NULL) != CL_SUCCESS)
        kwg = 0;
      size_t n = pow2_floor (kwg ? (kwg < wg ? kwg : wg) : 1);
      if (k == OCL_K_flash_attn && n > OCL_FA_WG)
        n = OCL_FA_WG;
      if (n < OCL_MIN_WG)
        {
          snprintf (d->failure, sizeof d->failure, "opencl: %s: kernel k_%s "
                    "runs at most %zu items a work-group, and needs %d",
                    d->name, kernel_names[k], kwg, OCL_MIN_WG);
          d->program_failed = true;
          tsr_set_error (TSR_ERR_BACKEND, "%s", d->failure);
          return false;
        }
      d->local[k] = n;
    }
  /* The tiled product wants exactly its 256 items and 16.6 KiB of local
     memory; without them the prompt products take k_mul_mat.  */
  kwg = 0;
  clGetKernelWorkGroupInfo (d->kernels[OCL_K_mul_mat_tiled], d->id,
                            CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg,
                            NULL);
  clGetKernelWorkGroupInfo (d->kernels[OCL_K_mul_mat_tiled], d->id,
                            CL_KERNEL_LOCAL_MEM_SIZE, sizeof lmem, &lmem,
                            NULL);
  d->tiled = kwg >= OCL_TILED_WG && lmem && lmem <= d->local_mem;
  d->local[OCL_K_mul_mat_tiled] = d->tiled ? OCL_TILED_WG : 0;
  tsr_log (TSR_LOG_DEBUG, "opencl: %s: work-groups of %zu items (row "
           "kernels), %zu (attention); subgroups %s; tiled products %s",
           d->name, d->local[OCL_K_norm], d->local[OCL_K_flash_attn],
           d->subgroups ? "yes" : "no",
           d->tiled ? "yes" : "no (k_mul_mat instead)");
  return true;
}

/* The kernels of D's program; false (none kept) when one is missing.  */
static bool
make_kernels (struct tsr_opencl_device *d, cl_int *err, int *which)
{
  for (int k = 0; k < OCL_K_COUNT; k++)
    if (!(d->kernels[k] = clCreateKernel (d->program, kernel_names[k], err)))
      {
        *which = k;
        for (int j = 0; j < k; j++)
          clReleaseKernel (d->kernels[j]);
        memset (d->kernels, 0, sizeof d->kernels);
        return false;
      }
  return true;
}

static double
seconds (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* D's program and kernels from the cache entry PATH (ocl-cache.c), or
   false (nothing kept) when there is none or the driver refuses it.  */
static bool
load_cached (struct tsr_opencl_device *d, const char *path, const char *opts)
{
  size_t size;
  unsigned char *bin = tsr_opencl_cache_read (path, &size);
  const unsigned char *bins[1] = { bin };
  cl_int st = CL_SUCCESS, err = CL_SUCCESS;
  int which = 0;
  if (!bin)
    return false;
  d->program = clCreateProgramWithBinary (d->context, 1, &d->id, &size, bins,
                                          &st, &err);
  free (bin);
  if (d->program && err == CL_SUCCESS && st == CL_SUCCESS
      && clBuildProgram (d->program, 1, &d->id, opts, NULL, NULL)
         == CL_SUCCESS
      && make_kernels (d, &err, &which))
    return true;
  tsr_log (TSR_LOG_DEBUG, "opencl: %s: the cached kernels %s are unusable "
           "(%s): building from source", d->name, path,
           tsr_opencl_error_string (err != CL_SUCCESS ? err : st));
  if (d->program)
    clReleaseProgram (d->program);
  d->program = NULL;
  return false;
}

/* Store D's built program at PATH.  */
static void
save_binary (struct tsr_opencl_device *d, const char *path)
{
  size_t size = 0;
  unsigned char *bin = NULL;
  bool ok = clGetProgramInfo (d->program, CL_PROGRAM_BINARY_SIZES,
                              sizeof size, &size, NULL) == CL_SUCCESS
            && size > 0 && (bin = malloc (size));
  unsigned char *bins[1] = { bin };
  ok = ok && clGetProgramInfo (d->program, CL_PROGRAM_BINARIES, sizeof bins,
                               bins, NULL) == CL_SUCCESS
       && tsr_opencl_cache_write (path, bin, size);
  tsr_log (TSR_LOG_DEBUG, "opencl: %s: %s %s", d->name,
           ok ? "kernels cached in" : "could not cache the kernels in",
           path);
  free (bin);
}

static int
build_program (struct tsr_opencl_device *d)
{
  const char *src = tsr_ocl_kernel_source;
  char *opts = build_options (d);
  char path[4200];
  cl_int err;
  int which = 0;
  double t0 = seconds ();

  if (!opts)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "opencl: out of memory");
  if (wg_wanted () < 0)
    {
      free (opts);
      snprintf (d->failure, sizeof d->failure, "opencl: %s: "
                "TESSERA_OPENCL_WG='%s' is not a power of two from %d to %d",
                d->name, getenv ("TESSERA_OPENCL_WG"), OCL_MIN_WG,
                OCL_MAX_WG);
      d->program_failed = true;
      return tsr_set_error (TSR_ERR_BACKEND, "%s", d->failure);
    }
  if (!build_wg (d))
    {
      free (opts);
      snprintf (d->failure, sizeof d->failure, "opencl: %s: work-groups of "
                "at most %zu items; the kernels need %d", d->name, d->max_wg,
                OCL_MIN_WG);
      d->program_failed = true;
      return tsr_set_error (TSR_ERR_BACKEND, "%s", d->failure);
    }
  bool cache = tsr_opencl_cache_path (d, src, opts, path, sizeof path);
  if (cache && load_cached (d, path, opts))
    {
      free (opts);
      tsr_log (TSR_LOG_DEBUG, "opencl: %s: kernels loaded from %s in %.3f s",
               d->name, path, seconds () - t0);
      goto kernels_made;
    }
  d->program = clCreateProgramWithSource (d->context, 1, &src, NULL, &err);
  if (!d->program)
    {
      free (opts);
      return fail (d, &d->program_failed, "opencl: %s: %s failed: %s (%d)",
                   "clCreateProgramWithSource", err);
    }
  err = clBuildProgram (d->program, 1, &d->id, opts, NULL, NULL);
  free (opts);
  if (err != CL_SUCCESS)
    {
      /* The whole log goes to the log; the error keeps its start.  */
      char *log = build_log (d);
      snprintf (d->failure, sizeof d->failure, "opencl: %s: building the "
                "kernels failed (%s); build log:\n%s", d->name,
                tsr_opencl_error_string (err), log ? log : "(none)");
      tsr_log (TSR_LOG_ERROR, "opencl: %s: building the kernels failed "
               "(%s); build log:\n%s", d->name, tsr_opencl_error_string (err),
               log ? log : "(none)");
      free (log);
      d->program_failed = true;
      return tsr_set_error (TSR_ERR_BACKEND, "%s", d->failure);
    }
  if (!make_kernels (d, &err, &which))
    return fail (d, &d->program_failed, "opencl: %s: kernel %s: %s (%d)",
                 kernel_names[which], err);
  tsr_log (TSR_LOG_DEBUG, "opencl: %s: kernels built from source in %.3f s",
           d->name, seconds () - t0);
  if (cache)
    save_binary (d, path);
kernels_made:
  if (!set_local_sizes (d))
    return TSR_ERR_BACKEND;
  d->have_program = true;
  tsr_log (TSR_LOG_DEBUG, "opencl: %s: %d kernels ready", d->name,
           OCL_K_COUNT);
  return TSR_OK;
}

int
tsr_opencl_program_ready (struct tsr_opencl_device *d)
{
  int st = TSR_OK;

  pthread_mutex_lock (&d->lock);
  if (d->program_failed || d->queue_failed)
    st = tsr_set_error (TSR_ERR_BACKEND, "%s", d->failure);
  else if (!d->have_queue)
    st = make_queue (d);
  if (st == TSR_OK && !d->have_program)
    st = build_program (d);
  pthread_mutex_unlock (&d->lock);
  return st;
}

void
tsr_opencl_device_release (struct tsr_opencl_device *d)
{
  if (d->queue)
    clFinish (d->queue);
  for (int k = 0; k < OCL_K_COUNT; k++)
    if (d->kernels[k])
      clReleaseKernel (d->kernels[k]);
  if (d->program)
    clReleaseProgram (d->program);
  if (d->queue)
    clReleaseCommandQueue (d->queue);
  if (d->context)
    clReleaseContext (d->context);
  memset (d->kernels, 0, sizeof d->kernels);
  d->program = NULL;
  d->queue = NULL;
  d->context = NULL;
  d->have_queue = d->have_program = false;
}
