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

#define LABEL 112

struct entry
{
  char label[LABEL];
  uint64_t calls;
  double ms;
};

struct tsr_opencl_profile
{
  cl_event *ev;                 /* this compute's kernels */
  char (*label)[LABEL];
  int n, cap;
  struct entry *e;              /* the sums */
  int n_e, cap_e;
  uint64_t computes;
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

static struct entry *
entry_of (struct tsr_opencl_profile *p, const char *label)
{
  for (int i = 0; i < p->n_e; i++)
    if (strcmp (p->e[i].label, label) == 0)
      return &p->e[i];
  if (p->n_e == p->cap_e)
    {
      int cap = p->cap_e ? 2 * p->cap_e : 32;
      struct entry *e = realloc (p->e, (size_t) cap * sizeof *e);
      if (!e)
        return NULL;
      p->e = e;
      p->cap_e = cap;
    }
  struct entry *e = &p->e[p->n_e++];
  memset (e, 0, sizeof *e);
  snprintf (e->label, sizeof e->label, "%s", label);
  return e;
}

int
tsr_opencl_profile_end (struct tsr_opencl_profile *p,
                        const struct tsr_opencl_device *d)
{
  cl_int err = p->n ? clWaitForEvents ((cl_uint) p->n, p->ev) : CL_SUCCESS;

  for (int i = 0; i < p->n; i++)
    {
      cl_ulong t0 = 0, t1 = 0;
      struct entry *e;
      if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo (p->ev[i], CL_PROFILING_COMMAND_START,
                                       sizeof t0, &t0, NULL);
      if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo (p->ev[i], CL_PROFILING_COMMAND_END,
                                       sizeof t1, &t1, NULL);
      if (err == CL_SUCCESS && (e = entry_of (p, p->label[i])))
        {
          e->calls++;
          e->ms += t1 > t0 ? 1e-6 * (double) (t1 - t0) : 0.0;
        }
      clReleaseEvent (p->ev[i]);
    }
  p->n = 0;
  p->computes++;
  if (err != CL_SUCCESS)
    return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: reading the "
                          "profile's events: %s", d->name,
                          tsr_opencl_error_string (err));
  return TSR_OK;
}

static int
by_time (const void *a, const void *b)
{
  double x = ((const struct entry *) a)->ms;
  double y = ((const struct entry *) b)->ms;
  return x < y ? 1 : x > y ? -1 : 0;
}

void
tsr_opencl_profile_free (struct tsr_opencl_profile *p,
                         const struct tsr_opencl_device *d)
{
  double total = 0;

  if (!p)
    return;
  for (int i = 0; i < p->n; i++)        /* a compute that failed */
    clReleaseEvent (p->ev[i]);
  qsort (p->e, (size_t) p->n_e, sizeof *p->e, by_time);
  for (int i = 0; i < p->n_e; i++)
    total += p->e[i].ms;
  fprintf (stderr, "opencl: %s: profile of %llu computes, %.3f ms on the "
           "device (%.1f us a compute)\n%-64s %8s %10s %9s %6s\n", d->name,
           (unsigned long long) p->computes, total,
           p->computes ? 1e3 * total / (double) p->computes : 0.0,
           "kernel", "calls", "total ms", "us/call", "share");
  for (int i = 0; i < p->n_e; i++)
    fprintf (stderr, "%-64s %8llu %10.3f %9.2f %5.1f%%\n", p->e[i].label,
             (unsigned long long) p->e[i].calls, p->e[i].ms,
             1e3 * p->e[i].ms / (double) p->e[i].calls,
             total > 0 ? 100 * p->e[i].ms / total : 0.0);
  free (p->ev);
  free (p->label);
  free (p->e);
  free (p);
}
