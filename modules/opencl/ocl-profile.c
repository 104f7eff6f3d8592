/* ocl-profile.c - where a graph's time goes on an OpenCL device, per
 * kernel, without a vendor profiler: TESSERA_OPENCL_PROFILE=1.
 *
 * The device's queue is then made with CL_QUEUE_PROFILING_ENABLE, each
 * kernel of a backend's computes is enqueued with an event, and the
 * compute waits for its kernels before it returns (a profiled run is
 * synchronous).  Each event's start and end times are summed under a
 * label (the kernel, its op and, for products and row gathers, the
 * weight type and shape) and printed to standard error when the
 * backend is freed, largest first, with the computes they came from.
 * The label names the kernel that ran, so the table also shows which
 * of an op's kernels the backend chose (ocl-ops.c).  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl-impl.h"
#include "../kernel-times.h"

#define LABEL TSR_KTIMES_LABEL

struct tsr_opencl_profile
{
  cl_event *ev;                 /* this compute's kernels */
  char (*label)[LABEL];
  int n, cap;
  struct tsr_ktimes sums;
};

bool
tsr_opencl_profile_wanted (void)
{
  const char *v = getenv ("TESSERA_OPENCL_PROFILE");
  return v && *v && strcmp (v, "0") != 0;
}

struct tsr_opencl_profile *
tsr_opencl_profile_new (void)
{
  return calloc (1, sizeof (struct tsr_opencl_profile));
}

void
tsr_opencl_profile_add (struct tsr_opencl_profile *p, const char *kernel,
                        const tsr_tensor *t, cl_event ev)
{
  const tsr_tensor *w = t->src[0];

  if (p->n == p->cap)
    {
      int cap = p->cap ? 2 * p->cap : 64;
      cl_event *e = realloc (p->ev, (size_t) cap * sizeof *e);
      char (*l)[LABEL] = e ? realloc (p->label, (size_t) cap * sizeof *l)
                           : NULL;
      if (e)
        p->ev = e;
      if (!l)
        {
          clReleaseEvent (ev);  /* this kernel goes uncounted */
          return;
        }
      p->label = l;
      p->cap = cap;
    }
  char *label = p->label[p->n];
  int len = snprintf (label, LABEL, "%s %s", kernel, tsr_op_name (t->op));
  if ((t->op == TSR_OP_MUL_MAT || t->op == TSR_OP_MUL_MAT_ID
       || t->op == TSR_OP_GET_ROWS) && w && len > 0 && len < LABEL)
    snprintf (label + len, LABEL - (size_t) len, " %s %lldx%lld n=%lld",
              tsr_type_name (w->type), (long long) w->ne[0],
              (long long) w->ne[1], (long long) t->src[1]->ne[1]);
  p->ev[p->n++] = ev;
}

int
tsr_opencl_profile_end (struct tsr_opencl_profile *p,
                        const struct tsr_opencl_device *d)
{
  cl_int err = p->n ? clWaitForEvents ((cl_uint) p->n, p->ev) : CL_SUCCESS;

  for (int i = 0; i < p->n; i++)
    {
      cl_ulong t0 = 0, t1 = 0;
      if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo (p->ev[i], CL_PROFILING_COMMAND_START,
                                       sizeof t0, &t0, NULL);
      if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo (p->ev[i], CL_PROFILING_COMMAND_END,
                                       sizeof t1, &t1, NULL);
      if (err == CL_SUCCESS)
        tsr_ktimes_add (&p->sums, p->label[i],
                        t1 > t0 ? 1e-6 * (double) (t1 - t0) : 0.0);
      clReleaseEvent (p->ev[i]);
    }
  p->n = 0;
  p->sums.computes++;
  if (err != CL_SUCCESS)
    return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: reading the "
                          "profile's events: %s", d->name,
                          tsr_opencl_error_string (err));
  return TSR_OK;
}

void
tsr_opencl_profile_free (struct tsr_opencl_profile *p,
                         const struct tsr_opencl_device *d)
{
  char who[64];

  if (!p)
    return;
  for (int i = 0; i < p->n; i++)        /* a compute that failed */
    clReleaseEvent (p->ev[i]);
  snprintf (who, sizeof who, "opencl: %s", d->name);
  tsr_ktimes_print_free (&p->sums, who, "device", 64);
  free (p->ev);
  free (p->label);
  free (p);
}
