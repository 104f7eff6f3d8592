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
 * Graphs of a shape seen before are not walked again: the backend
 * keeps the last few shapes (CU_SHAPES), each with its signature (what
 * the kernels are given of every node: op, parameters, types, shapes,
 * strides and device addresses), its fusion plan (cuda-fuse.c) and a
 * CUDA graph captured from its first walk.  A compute whose signature
 * matches one replays that graph with one launch; whatever changes
 * between computes of one shape (positions, the cache rows written,
 * the mask) is data in device memory, copied before the compute, that
 * the kernels read.  A model session keeps its graph until the
 * attended length grows past a step of 256 positions: then the shape
 * changes and a new graph is captured (said at TESSERA_LOG=debug).
 * Graphs that call cuBLAS are walked, not captured.  A capture that
 * fails (scratch memory had to grow; the replays would use freed
 * memory) is dropped and the graph walked; when scratch memory moves,
 * the graphs that used the old block are dropped.
 *
 * TESSERA_CUDA_GRAPHS=0 walks every graph (no capture);
 * TESSERA_CUDA_FUSION=0 computes every node by its own kernel.  Both
 * give bit-identical results to the default: the kernels and their
 * order are the same.  TESSERA_CUDA_PROFILE=1 walks every graph with
 * each kernel timed (cuda-profile.c).  TESSERA_CUDA_PDL=0 launches
 * every kernel after the one before it has ended (by default, on
 * sm_90 and newer, the kernels of a token's step are launched with
 * programmatic dependent launch, so that each one's launch overlaps
 * the previous one's run).  TESSERA_CUDA_MMVQ_SPLIT=1, 2 or 4 caps the
 * warps that share a row of an integer matrix-vector product (for
 * measurements; by default up to 4, q8_0 rows never: cuda-mmvq.cu).  All of
 * these give bit-identical results.
 *
 * PARAMS: none are accepted yet (NULL or "").  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Graph shapes kept, each with its plan and captured graph.  */
#define CU_SHAPES 4
/* Failed captures of one shape before it is only walked.  */
#define CU_CAPTURE_TRIES 2

/* One node as its kernel sees it, and one of its sources.  Zeroed
   before filling, so that padding compares equal.  */
struct cu_sig_src
{
  const void *tensor, *data;
  int64_t ne[4];
  size_t nb[4];
  int32_t type, pad;
};
struct cu_sig
{
  const void *tensor, *data;
  int64_t ne[4];
  size_t nb[4];
  int32_t op, type, flags, pad;
  int32_t params[TSR_MAX_OP_PARAMS];
  struct cu_sig_src src[TSR_MAX_SRC];
};

struct tsr_cuda_shape
{
  struct cu_sig *sig;           /* NULL: unused */
  int n;                        /* nodes */
  struct tsr_cuda_step *steps;
  int fused;                    /* nodes computed in another's kernel */
  int computing;                /* nodes that are not views */
  cudaGraphExec_t exec;         /* NULL: not captured */
  uint64_t kernels;             /* kernel and memset nodes of EXEC */
  bool uses_status;             /* EXEC's kernels write the status word */
  int fails;                    /* captures that failed */
  uint64_t used;                /* the backend's clock at the last use */
};

static void
shape_drop (struct tsr_cuda_shape *sh)
{
  if (sh->exec)
    cudaGraphExecDestroy (sh->exec);
  free (sh->sig);
  free (sh->steps);
  memset (sh, 0, sizeof *sh);
}

/* Drop the captured graphs (their scratch addresses are stale).  */
static void
drop_captures (struct tsr_cuda_backend *be)
{
  for (int i = 0; be->shapes && i < CU_SHAPES; i++)
    if (be->shapes[i].exec)
      {
        cudaGraphExecDestroy (be->shapes[i].exec);
        be->shapes[i].exec = NULL;
      }
}

/* Kernels queued by this thread (tsr_cuda_count).  */
static _Thread_local uint64_t queued;

void
tsr_cuda_count (int n)
{
  queued += (uint64_t) n;
}

uint64_t
tsr_cuda_counted (void)
{
  return queued;
}

/* This thread's launch settings (tsr_cuda_set_tuning).  */
static _Thread_local struct tsr_cuda_tuning tuning;

void
tsr_cuda_set_tuning (const struct tsr_cuda_tuning *t)
{
  static const struct tsr_cuda_tuning plain;
  tuning = t ? *t : plain;
}

struct tsr_cuda_tuning
tsr_cuda_get_tuning (void)
{
  return tuning;
}

int
tsr_cuda_counters (tsr_backend *backend, struct tsr_backend_counters *c,
                   bool clear)
{
  struct tsr_cuda_backend *be = be_of (backend);

  *c = be->counters;
  if (clear)
    memset (&be->counters, 0, sizeof be->counters);
  return TSR_OK;
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
  tsr_cuda_profile_free (be);
  for (int i = 0; be->shapes && i < CU_SHAPES; i++)
    shape_drop (&be->shapes[i]);
  free (be->shapes);
  free (be->sig);
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
  if (be->capturing)
    {
      /* Not while capturing: the capture fails and the graph is walked
         (cuda-backend.c's compute), which grows the block.  */
      tsr_set_error (TSR_ERR_BACKEND, "cuda: %s: scratch memory grows "
                     "during a graph capture", be->d->name);
      return NULL;
    }
  /* Captured graphs use the old block.  */
  drop_captures (be);
  be->scratch_moved = true;
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

/* Queue the status word's reset and G's kernels, by the plan STEPS
   (NULL: every node its own kernel).  */
static int
walk (struct tsr_cuda_backend *be, tsr_graph *g,
      const struct tsr_cuda_step *steps)
{
  cudaError_t err = cudaMemsetAsync (be->status, 0, sizeof *be->status,
                                     be->stream);
  int st = TSR_OK;

  if (err != cudaSuccess)
    return tsr_cuda_error (be->d, "cudaMemsetAsync (status word)", err);
  tsr_cuda_count (1);
  tsr_cuda_set_tuning (&be->tuning);
  be->uses_status = false;
  for (int i = 0; i < tsr_graph_n_nodes (g) && st == TSR_OK; i++)
    {
      tsr_tensor *node = tsr_graph_node (g, i);
      int kind = steps ? steps[i].kind : TSR_CUDA_STEP_RUN;

      be->tag = i + 1;
      be->q8_in = steps && steps[i].q8 == TSR_CUDA_Q8_IN;
      be->q8_out = steps && steps[i].q8 == TSR_CUDA_Q8_OUT;
      if (tsr_op_get_kind (node->op) == TSR_OP_KIND_VIEW
          || kind == TSR_CUDA_STEP_SKIP)
        continue;
      st = kind == TSR_CUDA_STEP_RUN ? compute_node (be, node)
           : tsr_cuda_fuse_launch (be, g, &steps[i]);
      if (st == TSR_OK && be->profiling)
        st = tsr_cuda_profile_step (be, node, steps ? &steps[i] : NULL);
    }
  be->q8_in = be->q8_out = false;
  tsr_cuda_set_tuning (NULL);
  return st;
}

/* G's signature into be->sig; its size in bytes.  */
static size_t
signature (struct tsr_cuda_backend *be, tsr_graph *g)
{
  size_t n = (size_t) tsr_graph_n_nodes (g), bytes = n * sizeof (struct cu_sig);

  if (bytes > be->sig_cap)
    {
      void *p = realloc (be->sig, bytes);
      if (!p)
        return 0;
      be->sig = p;
      be->sig_cap = bytes;
    }
  memset (be->sig, 0, bytes);
  for (size_t i = 0; i < n; i++)
    {
      const tsr_tensor *t = tsr_graph_node (g, (int) i);
      struct cu_sig *e = (struct cu_sig *) be->sig + i;
      e->tensor = t;
      e->data = t->data;
      e->op = t->op;
      e->type = t->type;
      e->flags = t->flags;
      memcpy (e->ne, t->ne, sizeof e->ne);
      memcpy (e->nb, t->nb, sizeof e->nb);
      memcpy (e->params, t->op_params, sizeof e->params);
      for (int j = 0; j < TSR_MAX_SRC; j++)
        if (t->src[j])
          {
            e->src[j].tensor = t->src[j];
            e->src[j].data = t->src[j]->data;
            e->src[j].type = t->src[j]->type;
            memcpy (e->src[j].ne, t->src[j]->ne, sizeof e->src[j].ne);
            memcpy (e->src[j].nb, t->src[j]->nb, sizeof e->src[j].nb);
          }
    }
  return bytes;
}

/* The nodes of G that compute (not views).  */
static int
computing_nodes (tsr_graph *g)
{
  int n = 0;
  for (int i = 0; i < tsr_graph_n_nodes (g); i++)
    n += tsr_op_get_kind (tsr_graph_node (g, i)->op) != TSR_OP_KIND_VIEW;
  return n;
}

/* The kept shape G has (its plan made when new), or NULL when memory
   ran out (the graph is then walked without one).  */
static struct tsr_cuda_shape *
find_shape (struct tsr_cuda_backend *be, tsr_graph *g)
{
  int n = tsr_graph_n_nodes (g);
  size_t bytes;
  struct tsr_cuda_shape *sh = NULL;

  if (!be->shapes && !(be->shapes = calloc (CU_SHAPES, sizeof *be->shapes)))
    return NULL;
  if (n == 0 || !(bytes = signature (be, g)))
    return NULL;
  for (int i = 0; i < CU_SHAPES; i++)
    if (be->shapes[i].sig && be->shapes[i].n == n
        && memcmp (be->shapes[i].sig, be->sig, bytes) == 0)
      {
        be->shapes[i].used = ++be->clock;
        return &be->shapes[i];
      }
  for (int i = 0; i < CU_SHAPES; i++)
    if (!sh || be->shapes[i].used < sh->used)
      sh = &be->shapes[i];
  shape_drop (sh);
  sh->sig = malloc (bytes);
  sh->steps = malloc ((size_t) n * sizeof *sh->steps);
  if (!sh->sig || !sh->steps)
    {
      shape_drop (sh);
      return NULL;
    }
  memcpy (sh->sig, be->sig, bytes);
  sh->n = n;
  sh->computing = computing_nodes (g);
  sh->used = ++be->clock;
  if (be->fusion)
    sh->fused = tsr_cuda_fuse_plan (g, sh->steps);
  else
    for (int i = 0; i < n; i++)
      sh->steps[i] = (struct tsr_cuda_step) { TSR_CUDA_STEP_RUN, 1, 0,
                                              { i, -1, -1, -1 } };
  tsr_log (TSR_LOG_DEBUG, "cuda: %s: a graph of a new shape: %d nodes, %d "
           "of them computed in fused kernels", be->d->name, n, sh->fused);
  return sh;
}

/* Whether G may be captured: no node goes to cuBLAS.  */
static bool
capturable (tsr_graph *g)
{
  for (int i = 0; i < tsr_graph_n_nodes (g); i++)
    {
      const tsr_tensor *t = tsr_graph_node (g, i);
      if (t->op == TSR_OP_MUL_MAT && !tsr_cuda_mmv_ready (t))
        return false;
    }
  return true;
}

/* Capture SH's walk of G into SH->exec; false when that failed (then
   nothing was queued).  */
static bool
capture (struct tsr_cuda_backend *be, tsr_graph *g, struct tsr_cuda_shape *sh)
{
  cudaGraph_t graph = NULL;
  size_t nodes = 0;
  cudaError_t err = cudaStreamBeginCapture (be->stream,
                                            cudaStreamCaptureModeThreadLocal);
  int st;

  if (err != cudaSuccess)
    {
      cudaGetLastError ();
      return false;
    }
  be->capturing = true;
  st = walk (be, g, sh->steps);
  be->capturing = false;
  err = cudaStreamEndCapture (be->stream, &graph);
  if (st == TSR_OK && err == cudaSuccess && graph)
    err = cudaGraphInstantiate (&sh->exec, graph, 0);
  if (st == TSR_OK && err == cudaSuccess)
    err = cudaGraphGetNodes (graph, NULL, &nodes);
  if (graph)
    cudaGraphDestroy (graph);
  if (st != TSR_OK || err != cudaSuccess)
    {
      cudaGetLastError ();
      if (sh->exec)
        cudaGraphExecDestroy (sh->exec);
      sh->exec = NULL;
      sh->fails++;
      tsr_log (TSR_LOG_DEBUG, "cuda: %s: capturing a graph failed (%s); "
               "it is walked", be->d->name, st != TSR_OK ? tsr_last_error ()
               : cudaGetErrorString (err));
      return false;
    }
  sh->kernels = nodes;
  sh->uses_status = be->uses_status;
  be->counters.graph_captures++;
  tsr_log (TSR_LOG_DEBUG, "cuda: %s: captured a CUDA graph of %zu kernels "
           "for %d nodes", be->d->name, nodes, sh->n);
  return true;
}

/* The core has checked every node (tsr_backend_graph_compute, the
   scheduler): valid, allocated, in this GPU's memory.  */
static int
tsr_cuda_be_graph_compute (tsr_backend *backend, tsr_graph *g)
{
  struct tsr_cuda_backend *be = be_of (backend);
  struct tsr_cuda_shape *sh;
  cudaError_t err;
  int st = TSR_OK;

  if (!g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "cuda: no graph to "
                          "compute");
  err = cudaSetDevice (be->d->ordinal);
  if (err != cudaSuccess)
    return tsr_cuda_error (be->d, "cudaSetDevice", err);
  sh = find_shape (be, g);
  if (sh && be->graphs && !be->profiling && !sh->exec
      && sh->fails < CU_CAPTURE_TRIES && capturable (g))
    capture (be, g, sh);
  if (be->profiling)
    {
      /* Walked, each kernel timed (cuda-profile.c).  */
      uint64_t q0 = tsr_cuda_counted ();
      st = tsr_cuda_profile_begin (be, tsr_graph_n_nodes (g));
      if (st == TSR_OK)
        st = walk (be, g, sh ? sh->steps : NULL);
      if (st == TSR_OK)
        st = tsr_cuda_profile_end (be);
      be->counters.launches += tsr_cuda_counted () - q0;
    }
  else if (sh && sh->exec)
    {
      err = cudaGraphLaunch (sh->exec, be->stream);
      if (err != cudaSuccess)
        return tsr_cuda_error (be->d, "cudaGraphLaunch", err);
      be->counters.launches += sh->kernels;
      be->counters.graph_replays++;
      be->uses_status = sh->uses_status;
    }
  else
    {
      uint64_t q0 = tsr_cuda_counted ();
      be->scratch_moved = false;
      st = walk (be, g, sh ? sh->steps : NULL);
      be->counters.launches += tsr_cuda_counted () - q0;
      /* A shape whose capture failed as scratch memory grew is tried
         again, now that the memory is there.  */
      if (sh && be->scratch_moved && sh->fails < CU_CAPTURE_TRIES)
        sh->fails = 0;
    }
  if (st == TSR_OK && be->uses_status)
    st = status_check (be, g);
  if (st == TSR_OK)
    {
      be->counters.computes++;
      be->counters.nodes += (uint64_t) (sh ? sh->computing
                                           : computing_nodes (g));
      be->counters.fused += sh ? (uint64_t) sh->fused : 0;
    }
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

/* The switch NAME of the environment: unset or empty, DEFLT; 0, no,
   off, false or 1, yes, on, true; anything else is said and DEFLT.  */
static bool
env_flag (const char *name, bool deflt)
{
  static const char *const off[] = { "0", "no", "off", "false" };
  static const char *const on[] = { "1", "yes", "on", "true" };
  const char *v = getenv (name);

  if (!v || !*v)
    return deflt;
  for (size_t i = 0; i < sizeof off / sizeof *off; i++)
    {
      if (strcmp (v, off[i]) == 0)
        return false;
      if (strcmp (v, on[i]) == 0)
        return true;
    }
  tsr_log (TSR_LOG_WARN, "cuda: %s=%s is neither 0 nor 1; taken as %d",
           name, v, (int) deflt);
  return deflt;
}

/* TESSERA_CUDA_MMVQ_SPLIT: 1, 2 or 4; unset or empty, 0 (the
   default); anything else is said.  */
static int
env_split (const char *name)
{
  const char *v = getenv (name);

  if (!v || !*v)
    return 0;
  if (strcmp (v, "1") == 0 || strcmp (v, "2") == 0 || strcmp (v, "4") == 0)
    return atoi (v);
  tsr_log (TSR_LOG_WARN, "cuda: %s=%s is not 1, 2 or 4; ignored", name, v);
  return 0;
}

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
  be->graphs = env_flag ("TESSERA_CUDA_GRAPHS", true);
  be->fusion = env_flag ("TESSERA_CUDA_FUSION", true);
  be->profiling = env_flag ("TESSERA_CUDA_PROFILE", false);
  be->tuning.pdl = d->cc_major >= 9 && env_flag ("TESSERA_CUDA_PDL", true);
  be->tuning.mmvq_split = env_split ("TESSERA_CUDA_MMVQ_SPLIT");
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
