/* ocl-backend.c - the OpenCL backend: an execution stream on one device.
 *
 * Owns the backend object: asynchronous tensor set/get (non-blocking
 * transfers on the device's in-order queue; the caller keeps the host
 * memory until synchronize), events (markers), synchronize (clFinish),
 * and the graph walk, which finds each node's kernel and enqueues it
 * (the core has checked the nodes: valid, allocated, in this device's
 * memory).  graph_compute returns once the kernels are queued, unless
 * the graph reads indices (get_rows, set_rows, mul_mat_id): then it
 * waits and reads the status word, so a bad index is reported by
 * graph_compute, as on the CPU.
 *
 * With TESSERA_OPENCL_PROFILE=1 each backend keeps the kernel times of
 * its computes (ocl-profile.c), and a compute waits for its kernels.
 *
 * PARAMS: none are accepted yet (NULL or "").  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "ocl-impl.h"
#include "../op-checks.h"

struct tsr_opencl_backend
{
  struct tsr_opencl_device *d;
  struct tsr_opencl_profile *prof;      /* TESSERA_OPENCL_PROFILE */
  /* Where the kernels that read indices report a bad one: one struct
     tsr_index_status per backend, so that backends of one device on
     several threads never clear or read each other's.  */
  cl_mem status;
};

static struct tsr_opencl_device *
be_dev (tsr_backend *backend)
{
  return ((struct tsr_opencl_backend *) backend->context)->d;
}

static const char *
tsr_opencl_be_name (tsr_backend *backend)
{
  return be_dev (backend)->name;
}

static void
tsr_opencl_be_free (tsr_backend *backend)
{
  if (!backend)
    return;
  struct tsr_opencl_backend *be = backend->context;
  clFinish (be->d->queue);
  tsr_opencl_profile_free (be->prof, be->d);
  if (be->status)
    clReleaseMemObject (be->status);
  free (be);
}

/* Where T's bytes [OFFSET, OFFSET + SIZE) are, or false with an error
   recorded.  */
static bool
locate (struct tsr_opencl_device *d, const tsr_tensor *t, size_t offset, size_t size,
        cl_mem *mem, size_t *at)
{
  if (!tsr_opencl_tensor_mem (d, t, mem, at)
      || size > t->buffer->size || *at + offset > t->buffer->size - size)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "opencl: %s: tensor '%s' is not "
                     "in this device's memory, or the range is outside it",
                     d->name, tsr_tensor_label (t));
      return false;
    }
  *at += offset;
  return true;
}

/* A non-blocking write (DATA to T) or read (T to DATA) of SIZE bytes at
   OFFSET of T.  */
static int
transfer (tsr_backend *backend, const tsr_tensor *t, bool write, void *data,
          size_t offset, size_t size)
{
  struct tsr_opencl_device *d = be_dev (backend);
  cl_mem mem;
  size_t at;
  cl_int err;

  if (size == 0)
    return TSR_OK;
  if (!locate (d, t, offset, size, &mem, &at))
    return TSR_ERR_INVALID_ARG;
  err = write ? clEnqueueWriteBuffer (d->queue, mem, CL_FALSE, at, size,
                                      data, 0, NULL, NULL)
              : clEnqueueReadBuffer (d->queue, mem, CL_FALSE, at, size, data,
                                     0, NULL, NULL);
  if (err != CL_SUCCESS)
    return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: %s '%s': %s",
                          d->name, write ? "writing" : "reading", tsr_tensor_label (t),
                          tsr_opencl_error_string (err));
  return TSR_OK;
}

static int
tsr_opencl_be_set_async (tsr_backend *backend, tsr_tensor *t, const void *data,
                  size_t offset, size_t size)
{
  /* The queue only reads DATA for a write.  */
  return transfer (backend, t, true, (void *) data, offset, size);
}

static int
tsr_opencl_be_get_async (tsr_backend *backend, const tsr_tensor *t, void *data,
                  size_t offset, size_t size)
{
  return transfer (backend, t, false, data, offset, size);
}

/* clFinish reports a command that failed after it was queued (a
   kernel, a copy): that is the status the caller gets.  */
static int
tsr_opencl_be_synchronize (tsr_backend *backend)
{
  struct tsr_opencl_device *d = be_dev (backend);
  cl_int err = clFinish (d->queue);

  if (err != CL_SUCCESS)
    return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: queued work "
                          "failed (clFinish: %s)", d->name,
                          tsr_opencl_error_string (err));
  return TSR_OK;
}

/* Graph computation.  */

static int
compute_node (struct tsr_opencl_launch *l, tsr_tensor *node)
{
  int st;

  if (!tsr_opencl_supports_op (l->d, node))
    {
      char who[160];
      snprintf (who, sizeof who, "opencl: %s", l->d->name);
      return tsr_no_kernel_error (who, node);
    }
  pthread_mutex_lock (&l->d->lock);
  st = tsr_opencl_enqueue_op (l, node);
  pthread_mutex_unlock (&l->d->lock);
  return st;
}

/* Clear the status word STATUS before a graph that reads indices.  */
static int
status_reset (struct tsr_opencl_device *d, cl_mem status)
{
  static const struct tsr_index_status zero = { 0, 0 };
  cl_int err = clEnqueueWriteBuffer (d->queue, status, CL_FALSE, 0,
                                     sizeof zero, &zero, 0, NULL, NULL);

  if (err != CL_SUCCESS)
    return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: clearing the status "
                          "word: %s", d->name, tsr_opencl_error_string (err));
  return TSR_OK;
}

/* Wait for the graph and report a bad index it found, naming the node
   whose kernel found it (the status word's tag).  */
static int
status_check (struct tsr_opencl_device *d, cl_mem status, tsr_graph *g)
{
  struct tsr_index_status w;
  char who[64];
  cl_int err = clEnqueueReadBuffer (d->queue, status, CL_TRUE, 0,
                                    sizeof w, &w, 0, NULL, NULL);

  if (err != CL_SUCCESS)
    return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: reading the status "
                          "word: %s", d->name, tsr_opencl_error_string (err));
  snprintf (who, sizeof who, "opencl: %s", d->name);
  return tsr_index_error (who, g, &w);
}

static bool
graph_uses_status (tsr_graph *g)
{
  for (int i = 0; i < tsr_graph_n_nodes (g); i++)
    if (tsr_opencl_op_uses_status (tsr_graph_node (g, i)))
      return true;
  return false;
}

/* The core has checked every node (tsr_backend_graph_compute, the
   scheduler): valid, allocated, in this device's memory.  */
static int
tsr_opencl_be_graph_compute (tsr_backend *backend, tsr_graph *g)
{
  struct tsr_opencl_backend *be = backend->context;
  struct tsr_opencl_launch l = { be->d, false, 0, be->prof, NULL };
  int n, st;

  if (!g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "opencl: no graph to "
                          "compute");
  st = tsr_opencl_program_ready (l.d);
  if (st == TSR_OK && !be->status)
    {
      cl_int err;
      be->status = clCreateBuffer (l.d->context, CL_MEM_READ_WRITE,
                                   sizeof (struct tsr_index_status), NULL,
                                   &err);
      if (!be->status)
        st = tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: the status word: "
                            "%s", l.d->name, tsr_opencl_error_string (err));
    }
  l.status = be->status;
  if (st == TSR_OK && graph_uses_status (g))
    st = status_reset (l.d, l.status);
  n = tsr_graph_n_nodes (g);
  for (int i = 0; i < n && st == TSR_OK; i++)
    {
      tsr_tensor *node = tsr_graph_node (g, i);

      l.tag = i + 1;
      if (tsr_op_get_kind (node->op) != TSR_OP_KIND_VIEW)
        st = compute_node (&l, node);
    }
  if (l.prof)
    {
      /* Every kernel queued has an event, even after a failure.  */
      int pst = tsr_opencl_profile_end (l.prof, l.d);
      st = st == TSR_OK ? pst : st;
    }
  if (st == TSR_OK && l.uses_status)
    return status_check (l.d, l.status, g);
  clFlush (l.d->queue);
  return st;
}

/* Events: a marker enqueued on the device's queue (OpenCL 1.2), the
   cl_event of the last recording kept in a struct tsr_opencl_event.  A
   backend of the same device (same context) waits with a barrier on
   its queue; one of another OpenCL device, whose context cannot see
   the event, waits on the host, which orders its later work as well.  */

struct tsr_opencl_event
{
  cl_event ev;                  /* NULL until recorded */
};

int
tsr_opencl_event_new (tsr_device *dev, tsr_event *ev)
{
  struct tsr_opencl_device *d = dev->context;
  struct tsr_opencl_event *e;

  if (tsr_opencl_device_ready (d) != TSR_OK)
    return tsr_last_status ();
  e = calloc (1, sizeof *e);
  if (!e)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "opencl: out of memory");
  ev->context = e;
  return TSR_OK;
}

void
tsr_opencl_event_free (tsr_event *ev)
{
  struct tsr_opencl_event *e = ev->context;

  if (e->ev)
    clReleaseEvent (e->ev);
  free (e);
}

int
tsr_opencl_event_synchronize (tsr_event *ev)
{
  struct tsr_opencl_event *e = ev->context;
  cl_int err;

  if (!e->ev)
    return TSR_OK;
  err = clWaitForEvents (1, &e->ev);
  if (err != CL_SUCCESS)
    return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: the work an event "
                          "waited for failed (clWaitForEvents: %s)",
                          ((struct tsr_opencl_device *) ev->device->context)->name,
                          tsr_opencl_error_string (err));
  return TSR_OK;
}

static int
tsr_opencl_be_event_record (tsr_backend *backend, tsr_event *ev)
{
  struct tsr_opencl_device *d = be_dev (backend);
  struct tsr_opencl_event *e = ev->context;
  cl_event mark;
  cl_int err;

  pthread_mutex_lock (&d->lock);
  err = clEnqueueMarkerWithWaitList (d->queue, 0, NULL, &mark);
  pthread_mutex_unlock (&d->lock);
  if (err != CL_SUCCESS)
    return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: "
                          "clEnqueueMarkerWithWaitList: %s", d->name,
                          tsr_opencl_error_string (err));
  if (e->ev)
    clReleaseEvent (e->ev);
  e->ev = mark;
  clFlush (d->queue);           /* so that a host wait can end */
  return TSR_OK;
}

static int
tsr_opencl_be_event_wait (tsr_backend *backend, tsr_event *ev)
{
  struct tsr_opencl_device *d = be_dev (backend);
  struct tsr_opencl_device *from = ev->device->context;
  struct tsr_opencl_event *e = ev->context;
  cl_int err;

  if (!e->ev)
    return TSR_OK;              /* never recorded: nothing to wait for */
  if (from->context != d->context)
    err = clWaitForEvents (1, &e->ev);
  else
    {
      pthread_mutex_lock (&d->lock);
      err = clEnqueueBarrierWithWaitList (d->queue, 1, &e->ev, NULL);
      pthread_mutex_unlock (&d->lock);
    }
  if (err != CL_SUCCESS)
    return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: waiting for an "
                          "event of %s: %s", d->name, from->name,
                          tsr_opencl_error_string (err));
  return TSR_OK;
}

static const struct tsr_backend_iface tsr_opencl_backend_iface = {
  .get_name = tsr_opencl_be_name,
  .free = tsr_opencl_be_free,
  .set_tensor_async = tsr_opencl_be_set_async,
  .get_tensor_async = tsr_opencl_be_get_async,
  .synchronize = tsr_opencl_be_synchronize,
  .graph_compute = tsr_opencl_be_graph_compute,
  .set_n_threads = NULL,
  .event_record = tsr_opencl_be_event_record,
  .event_wait = tsr_opencl_be_event_wait,
};

tsr_backend *
tsr_opencl_backend_new (tsr_device *dev, const char *params)
{
  struct tsr_opencl_device *d = dev->context;
  struct tsr_opencl_backend *be;
  tsr_backend *backend;

  if (tsr_params_parse ("opencl", params, NULL, 0) != TSR_OK
      || tsr_opencl_device_ready (d) != TSR_OK)
    return NULL;
  be = calloc (1, sizeof *be);
  backend = be ? tsr_backend_new (dev, tsr_opencl_backend_iface, be) : NULL;
  if (!backend)
    {
      free (be);
      tsr_set_error (TSR_ERR_NO_MEMORY, "opencl: no memory for a backend");
      return NULL;
    }
  be->d = d;
  if (d->profile && !(be->prof = tsr_opencl_profile_new ()))
    {
      tsr_backend_free (backend);
      tsr_set_error (TSR_ERR_NO_MEMORY, "opencl: no memory for a profile");
      return NULL;
    }
  return backend;
}
