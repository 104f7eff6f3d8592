/* cuda-backend.c - the CUDA backend: an execution stream on one GPU.
 *
 * Owns the backend object: its stream (a blocking one, so it stays
 * ordered with the buffers' synchronous copies on the default stream),
 * asynchronous tensor set/get on that stream (the caller keeps the
 * host memory until synchronize; from pinned host memory, see
 * cuda-buffer.c, the copies overlap with the host's work), events,
 * synchronize, the scratch memory that mul_mat converts operands
 * into, and the graph walk, which finds each node's kernel and queues
 * it (the core has checked the nodes: valid, allocated, in this GPU's
 * memory).  graph_compute returns once the kernels are queued, unless
 * the graph reads indices (get_rows, set_rows, mul_mat_id): then it
 * waits and reads the status word, so a bad index is reported by
 * graph_compute, as on the CPU.
 *
 * PARAMS: none are accepted yet (NULL or "").  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "cuda-impl.h"
#include "../op-checks.h"

static struct tsr_cuda_backend *
be_of (tsr_backend *backend)
{
  return backend->context;
}

static const char *
tsr_cuda_be_name (tsr_backend *backend)
{
  return be_of (backend)->d->name;
}

static void
tsr_cuda_be_free (tsr_backend *backend)
{
  struct tsr_cuda_backend *be;

  if (!backend)
    return;
  be = be_of (backend);
  cudaSetDevice (be->d->ordinal);
  cudaStreamSynchronize (be->stream);
  tsr_cuda_blas_release (be);
  cudaFree (be->scratch);
  cudaFree (be->status);
  cudaStreamDestroy (be->stream);
  free (be);
}

void *
tsr_cuda_scratch (struct tsr_cuda_backend *be, size_t size)
{
  cudaError_t err;

  if (size <= be->scratch_size)
    return be->scratch;
  /* Work queued before may still read the old block.  */
  err = cudaStreamSynchronize (be->stream);
  cudaFree (be->scratch);
  be->scratch = NULL;
  be->scratch_size = 0;
  if (err == cudaSuccess)
    err = cudaMalloc (&be->scratch, size);
  if (err != cudaSuccess)
    {
      tsr_cuda_error (be->d, "cudaMalloc (scratch)", err);
      cudaGetLastError ();
      be->scratch = NULL;
      return NULL;
    }
  be->scratch_size = size;
  return be->scratch;
}

/* Whether T's bytes [OFFSET, OFFSET + SIZE) lie in this GPU's memory;
   records an error if not.  */
static bool
locate (struct tsr_cuda_backend *be, const tsr_tensor *t, size_t offset,
        size_t size)
{
  size_t at;

  if (tsr_cuda_tensor_on (be->d, t))
    {
      at = (size_t) ((const char *) t->data
                     - (const char *) tsr_buffer_base (t->buffer));
      if (size <= t->buffer->size && at + offset <= t->buffer->size - size)
        return true;
    }
  tsr_set_error (TSR_ERR_INVALID_ARG, "cuda: %s: tensor '%s' is not in "
                 "this device's memory, or the range is outside it",
                 be->d->name, tsr_tensor_label (t));
  return false;
}

static int
transfer (tsr_backend *backend, const tsr_tensor *t, bool to_device,
          void *data, size_t offset, size_t size)
{
  struct tsr_cuda_backend *be = be_of (backend);
  char *dev;
  cudaError_t err;

  if (size == 0)
    return TSR_OK;
  if (!locate (be, t, offset, size))
    return TSR_ERR_INVALID_ARG;
  dev = (char *) t->data + offset;
  err = cudaSetDevice (be->d->ordinal);
  if (err == cudaSuccess)
    err = to_device
          ? cudaMemcpyAsync (dev, data, size, cudaMemcpyHostToDevice,
                             be->stream)
          : cudaMemcpyAsync (data, dev, size, cudaMemcpyDeviceToHost,
                             be->stream);
  if (err != cudaSuccess)
    return tsr_cuda_error (be->d, to_device ? "cudaMemcpyAsync (to the device)"
                     : "cudaMemcpyAsync (from the device)", err);
  return TSR_OK;
}

static int
tsr_cuda_be_set_async (tsr_backend *backend, tsr_tensor *t, const void *data,
                 size_t offset, size_t size)
{
  /* The copy only reads DATA when going to the device.  */
  return transfer (backend, t, true, (void *) data, offset, size);
}

static int
tsr_cuda_be_get_async (tsr_backend *backend, const tsr_tensor *t, void *data,
                 size_t offset, size_t size)
{
  return transfer (backend, t, false, data, offset, size);
}

static int
tsr_cuda_be_synchronize (tsr_backend *backend)
{
  struct tsr_cuda_backend *be = be_of (backend);
  cudaError_t err = cudaStreamSynchronize (be->stream);

  /* A kernel or copy that failed after it was queued shows here: that
     is the status the caller gets.  */
  if (err != cudaSuccess)
    return tsr_cuda_error (be->d, "queued work (cudaStreamSynchronize)", err);
  return TSR_OK;
}

/* Graph computation.  */

static int
compute_node (struct tsr_cuda_backend *be, tsr_tensor *node)
{
  if (!tsr_cuda_supports_op (be->d, node))
    {
      char who[160];
      snprintf (who, sizeof who, "cuda: %s", be->d->name);
      return tsr_no_kernel_error (who, node);
    }
  return tsr_cuda_launch_op (be, node);
}

/* Wait for the graph and report a bad index it found, naming the node
   whose kernel found it (the status word's tag).  */
static int
status_check (struct tsr_cuda_backend *be, tsr_graph *g)
{
  struct tsr_cuda_status s;
  char who[160];
  cudaError_t err = cudaMemcpyAsync (&s, be->status, sizeof s,
                                     cudaMemcpyDeviceToHost, be->stream);

  if (err == cudaSuccess)
    err = cudaStreamSynchronize (be->stream);
  if (err != cudaSuccess)
    return tsr_cuda_error (be->d, "reading the status word", err);
  struct tsr_index_status w = { s.status, s.value };
  snprintf (who, sizeof who, "cuda: %s", be->d->name);
  return tsr_index_error (who, g, &w);
}

/* The core has checked every node (tsr_backend_graph_compute, the
   scheduler): valid, allocated, in this GPU's memory.  */
static int
tsr_cuda_be_graph_compute (tsr_backend *backend, tsr_graph *g)
{
  struct tsr_cuda_backend *be = be_of (backend);
  cudaError_t err;
  int st = TSR_OK;

  if (!g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "cuda: no graph to "
                          "compute");
  err = cudaSetDevice (be->d->ordinal);
  if (err == cudaSuccess)
    err = cudaMemsetAsync (be->status, 0, sizeof *be->status, be->stream);
  if (err != cudaSuccess)
    return tsr_cuda_error (be->d, "cudaMemsetAsync (status word)", err);
  be->uses_status = false;
  for (int i = 0; i < tsr_graph_n_nodes (g) && st == TSR_OK; i++)
    {
      tsr_tensor *node = tsr_graph_node (g, i);

      be->tag = i + 1;
      if (tsr_op_get_kind (node->op) != TSR_OP_KIND_VIEW)
        st = compute_node (be, node);
    }
  if (st == TSR_OK && be->uses_status)
    return status_check (be, g);
  return st;
}

/* Events: a cudaEvent_t without timing (cheapest to record and wait
   for).  Recording queues it on the backend's stream; waiting makes
   the stream wait for it, on the GPU, also for an event of another
   GPU.  */

int
tsr_cuda_event_new (tsr_device *dev, tsr_event *ev)
{
  struct tsr_cuda_device *d = dev->context;
  cudaEvent_t e;
  cudaError_t err = cudaSetDevice (d->ordinal);

  if (err == cudaSuccess)
    err = cudaEventCreateWithFlags (&e, cudaEventDisableTiming);
  if (err != cudaSuccess)
    return tsr_cuda_error (d, "cudaEventCreate", err);
  ev->context = e;
  return TSR_OK;
}

void
tsr_cuda_event_free (tsr_event *ev)
{
  cudaEventDestroy ((cudaEvent_t) ev->context);
}

int
tsr_cuda_event_synchronize (tsr_event *ev)
{
  cudaError_t err = cudaEventSynchronize ((cudaEvent_t) ev->context);

  if (err != cudaSuccess)
    return tsr_cuda_error (ev->device->context, "the work an event waited for "
                     "(cudaEventSynchronize)", err);
  return TSR_OK;
}

static int
tsr_cuda_be_event_record (tsr_backend *backend, tsr_event *ev)
{
  struct tsr_cuda_backend *be = be_of (backend);
  cudaError_t err = cudaSetDevice (be->d->ordinal);

  if (err == cudaSuccess)
    err = cudaEventRecord ((cudaEvent_t) ev->context, be->stream);
  return err == cudaSuccess ? TSR_OK
         : tsr_cuda_error (be->d, "cudaEventRecord", err);
}

static int
tsr_cuda_be_event_wait (tsr_backend *backend, tsr_event *ev)
{
  struct tsr_cuda_backend *be = be_of (backend);
  cudaError_t err = cudaSetDevice (be->d->ordinal);

  if (err == cudaSuccess)
    err = cudaStreamWaitEvent (be->stream, (cudaEvent_t) ev->context, 0);
  return err == cudaSuccess ? TSR_OK
         : tsr_cuda_error (be->d, "cudaStreamWaitEvent", err);
}

static const struct tsr_backend_iface tsr_cuda_backend_iface = {
  .get_name = tsr_cuda_be_name,
  .free = tsr_cuda_be_free,
  .set_tensor_async = tsr_cuda_be_set_async,
  .get_tensor_async = tsr_cuda_be_get_async,
  .synchronize = tsr_cuda_be_synchronize,
  .graph_compute = tsr_cuda_be_graph_compute,
  .set_n_threads = NULL,
  .event_record = tsr_cuda_be_event_record,
  .event_wait = tsr_cuda_be_event_wait,
};

tsr_backend *
tsr_cuda_backend_new (tsr_device *dev, const char *params)
{
  struct tsr_cuda_device *d = dev->context;
  struct tsr_cuda_backend *be;
  tsr_backend *backend;
  cudaError_t err;

  if (tsr_params_parse ("cuda", params, NULL, 0) != TSR_OK)
    return NULL;
  be = calloc (1, sizeof *be);
  if (!be)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "cuda: no memory for a backend");
      return NULL;
    }
  be->d = d;
  err = cudaSetDevice (d->ordinal);
  if (err == cudaSuccess)
    err = cudaStreamCreate (&be->stream);
  if (err == cudaSuccess)
    err = cudaMalloc ((void **) &be->status, sizeof *be->status);
  if (err != cudaSuccess)
    {
      tsr_cuda_error (d, "creating a stream", err);
      if (be->stream)
        cudaStreamDestroy (be->stream);
      free (be);
      return NULL;
    }
  backend = tsr_backend_new (dev, tsr_cuda_backend_iface, be);
  if (!backend)
    {
      cudaFree (be->status);
      cudaStreamDestroy (be->stream);
      free (be);
    }
  return backend;
}
