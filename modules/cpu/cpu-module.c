/* cpu-module.c - the CPU backend: module descriptor, registration,
 * device and backend.
 *
 * Owns what the library sees (the tsr_reg, tsr_device and tsr_backend
 * objects) and the graph walk: per node it checks that the tensors are
 * allocated in host memory and that a kernel supports the node, sizes
 * the per-thread and shared scratch memory, and hands the kernel (after
 * its prepare pass, if it has one) to the thread pool.  It computes
 * nothing itself: kernels are in cpu-ops-*.c, chosen through the table
 * in cpu-ops.c.
 *
 * Kernels run on worker threads, so they report failures with
 * tsr_cpu_fail; graph_compute re-raises the first one with
 * tsr_set_error on the caller's thread.  */
#include <config.h>
#include <tessera/module.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cpu-dispatch.h"
#include "cpu-impl.h"

/* Below this many multiply-adds (or elements) per thread, waking one
   more thread costs more than it saves.  */
#define MIN_WORK_PER_THREAD 32768

struct tsr_cpu_error
{
  pthread_mutex_t lock;
  int status;
  char message[512];
};

struct cpu_backend
{
  struct tsr_cpu_threadpool *pool;
  void **scratch;               /* per thread, 64-byte aligned */
  size_t *scratch_size;
  int scratch_slots;
  void *shared;                 /* for all threads, 64-byte aligned */
  size_t shared_size;
  struct tsr_cpu_error error;
};

int
tsr_cpu_fail (const struct tsr_cpu_op_ctx *c, int status, const char *fmt,
              ...)
{
  struct tsr_cpu_error *e = c->error;

  pthread_mutex_lock (&e->lock);
  if (e->status == TSR_OK)
    {
      va_list ap;
      e->status = status;
      va_start (ap, fmt);
      vsnprintf (e->message, sizeof e->message, fmt, ap);
      va_end (ap);
    }
  pthread_mutex_unlock (&e->lock);
  return status;
}

/* Thread counts.  */

static int
hardware_threads (void)
{
  long n = sysconf (_SC_NPROCESSORS_ONLN);

  if (n < 1)
    return 1;
  return n > TSR_CPU_MAX_THREADS ? TSR_CPU_MAX_THREADS : (int) n;
}

static int
default_threads (void)
{
  const char *env = getenv ("TESSERA_NUM_THREADS");
  int64_t n;

  if (env && *env)
    {
      if (tsr_param_int (env, 1, TSR_CPU_MAX_THREADS, &n))
        return (int) n;
      tsr_log (TSR_LOG_WARN, "cpu: ignoring TESSERA_NUM_THREADS=%s "
               "(not a thread count in [1, %d])", env, TSR_CPU_MAX_THREADS);
    }
  return hardware_threads ();
}

/* Graph computation.  */

/* Make scratch[0..NTH) exist and hold SIZE bytes each (slots stay
   NULL while no op has needed scratch).  */
static int
reserve_scratch (struct cpu_backend *be, int nth, size_t size,
                 const tsr_tensor *node)
{
  if (nth > be->scratch_slots)
    {
      void **s = realloc (be->scratch, (size_t) nth * sizeof *s);
      size_t *sz;
      if (!s)
        return tsr_set_error (TSR_ERR_NO_MEMORY, "cpu: out of memory");
      be->scratch = s;
      sz = realloc (be->scratch_size, (size_t) nth * sizeof *sz);
      if (!sz)
        return tsr_set_error (TSR_ERR_NO_MEMORY, "cpu: out of memory");
      be->scratch_size = sz;
      for (int i = be->scratch_slots; i < nth; i++)
        {
          be->scratch[i] = NULL;
          be->scratch_size[i] = 0;
        }
      be->scratch_slots = nth;
    }
  size = (size + 63) & ~(size_t) 63;
  for (int i = 0; i < nth && size > 0; i++)
    if (be->scratch_size[i] < size)
      {
        free (be->scratch[i]);
        be->scratch_size[i] = 0;
        be->scratch[i] = aligned_alloc (64, size);
        if (!be->scratch[i])
          return tsr_set_error (TSR_ERR_NO_MEMORY, "cpu: no memory for "
                                "%zu bytes of scratch space for %s '%s'",
                                size, tsr_op_name (node->op), tsr_tensor_label (node));
        be->scratch_size[i] = size;
      }
  return TSR_OK;
}

/* Make the shared scratch hold SIZE bytes.  */
static int
reserve_shared (struct cpu_backend *be, size_t size, const tsr_tensor *node)
{
  size = (size + 63) & ~(size_t) 63;
  if (size <= be->shared_size)
    return TSR_OK;
  free (be->shared);
  be->shared_size = 0;
  be->shared = aligned_alloc (64, size);
  if (!be->shared)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "cpu: no memory for %zu bytes "
                          "of shared scratch space for %s '%s'", size,
                          tsr_op_name (node->op), tsr_tensor_label (node));
  be->shared_size = size;
  return TSR_OK;
}

/* How many threads NODE deserves.  */
static int
threads_for (const struct cpu_backend *be, const tsr_tensor *node)
{
  int64_t work = tsr_nelements (node);
  int64_t nth;

  if (node->op == TSR_OP_MUL_MAT || node->op == TSR_OP_MUL_MAT_ID)
    work *= node->src[0]->ne[0];
  else if (node->op == TSR_OP_FLASH_ATTN_EXT)
    work *= node->src[1]->ne[1];  /* per output, a product per key */
  nth = work / MIN_WORK_PER_THREAD + 1;
  return nth < tsr_cpu_threadpool_n_threads (be->pool)
         ? (int) nth : tsr_cpu_threadpool_n_threads (be->pool);
}

/* The prepare passes (activations of a product quantized) split the
   rows of src[1]: with fewer rows than threads the others would only
   be woken to find nothing to do (at every product of a generated
   token).  */
static int
prepare_threads (const tsr_tensor *node, int nth)
{
  int64_t rows = tsr_cpu_nrows (node->src[1]);

  return rows < nth ? (int) rows : nth;
}

struct task
{
  tsr_cpu_kernel_fn fn;         /* the op's kernel, or its prepare pass */
  struct tsr_cpu_op_ctx ctx;
  tsr_tensor *node;
};

static void
run_task (void *arg, int ith, int nth)
{
  struct task *t = arg;
  int status = t->fn (&t->ctx, t->node, ith, nth);

  if (status != TSR_OK)         /* keeps a message the kernel gave */
    tsr_cpu_fail (&t->ctx, status, "cpu: %s '%s' failed",
                  tsr_op_name (t->node->op), tsr_tensor_label (t->node));
}

/* TASK on NTH threads; its first failure, raised here.  */
static int
run_parts (struct cpu_backend *be, struct task *task, int nth)
{
  int status;

  pthread_mutex_lock (&be->error.lock);
  be->error.status = TSR_OK;
  pthread_mutex_unlock (&be->error.lock);
  tsr_cpu_threadpool_run (be->pool, run_task, task, nth);
  pthread_mutex_lock (&be->error.lock);
  status = be->error.status;
  pthread_mutex_unlock (&be->error.lock);
  if (status != TSR_OK)
    return tsr_set_error (status, "%s", be->error.message);
  return TSR_OK;
}

static int
compute_node (struct cpu_backend *be, tsr_tensor *node)
{
  const struct tsr_cpu_op *op;
  struct task task;
  int status, nth;
  size_t scratch, shared;

  if (!tsr_cpu_supports_op (node))
    return tsr_no_kernel_error ("cpu", node);

  op = tsr_cpu_op_get (node->op);
  task.node = node;
  scratch = op->scratch ? op->scratch (node) : 0;
  shared = op->shared ? op->shared (node) : 0;
  nth = threads_for (be, node);
  status = reserve_scratch (be, nth, scratch, node);
  if (status == TSR_OK)
    status = reserve_shared (be, shared, node);
  if (status != TSR_OK)
    return status;
  task.ctx.scratch = be->scratch;
  task.ctx.scratch_size = scratch;
  task.ctx.shared = be->shared;
  task.ctx.shared_size = shared;
  task.ctx.error = &be->error;

  if (op->prepare)
    {
      task.fn = op->prepare;
      status = run_parts (be, &task, prepare_threads (node, nth));
    }
  if (status == TSR_OK)
    {
      task.fn = op->kernel;
      status = run_parts (be, &task, nth);
    }
  return status;
}

/* The core has checked every node (tsr_backend_graph_compute, the
   scheduler): valid, allocated, in host memory.  */
static int
cpu_graph_compute (tsr_backend *backend, tsr_graph *g)
{
  struct cpu_backend *be = backend->context;
  int n;

  if (!g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "cpu: no graph to compute");
  n = tsr_graph_n_nodes (g);
  for (int i = 0; i < n; i++)
    {
      tsr_tensor *node = tsr_graph_node (g, i);
      int status;

      if (tsr_op_get_kind (node->op) == TSR_OP_KIND_VIEW)
        continue;
      status = compute_node (be, node);
      if (status != TSR_OK)
        return status;
    }
  return TSR_OK;
}

/* Backend.  */

static const char *
cpu_backend_name (tsr_backend *backend)
{
  (void) backend;
  return "cpu";
}

static void
cpu_backend_free (tsr_backend *backend)
{
  struct cpu_backend *be;

  if (!backend)
    return;
  be = backend->context;
  tsr_cpu_threadpool_free (be->pool);
  for (int i = 0; i < be->scratch_slots; i++)
    free (be->scratch[i]);
  free (be->scratch);
  free (be->scratch_size);
  free (be->shared);
  pthread_mutex_destroy (&be->error.lock);
  free (be);
}

static int
cpu_set_n_threads (tsr_backend *backend, int n)
{
  struct cpu_backend *be = backend->context;

  if (n < 1 || n > TSR_CPU_MAX_THREADS)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "cpu: thread count %d is "
                          "not in [1, %d]", n, TSR_CPU_MAX_THREADS);
  return tsr_cpu_threadpool_set_n_threads (be->pool, n);
}

static const struct tsr_backend_iface cpu_backend_iface = {
  .get_name = cpu_backend_name,
  .free = cpu_backend_free,
  .set_tensor_async = NULL,     /* the host buffer functions do it */
  .get_tensor_async = NULL,
  .synchronize = NULL,          /* graph_compute returns when done */
  .graph_compute = cpu_graph_compute,
  .set_n_threads = cpu_set_n_threads,
};

static tsr_backend *
cpu_init_backend (tsr_device *dev, const char *params)
{
  int64_t n_threads = default_threads ();
  const struct tsr_param keys[] = {
    { "threads", 1, TSR_CPU_MAX_THREADS, &n_threads },
  };
  struct cpu_backend *be;
  tsr_backend *backend;

  if (tsr_params_parse ("cpu", params, keys, 1) != TSR_OK)
    return NULL;
  be = calloc (1, sizeof *be);
  if (!be)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "cpu: no memory for a backend");
      return NULL;
    }
  if (pthread_mutex_init (&be->error.lock, NULL) != 0)
    {
      free (be);
      tsr_set_error (TSR_ERR_BACKEND, "cpu: cannot create a mutex");
      return NULL;
    }
  be->pool = tsr_cpu_threadpool_new ((int) n_threads);
  backend = be->pool ? tsr_backend_new (dev, cpu_backend_iface, be) : NULL;
  if (!backend)
    {
      tsr_cpu_threadpool_free (be->pool);
      pthread_mutex_destroy (&be->error.lock);
      free (be);
      return NULL;
    }
  tsr_log (TSR_LOG_DEBUG, "cpu: backend with %d threads", (int) n_threads);
  return backend;
}

/* Device.  */

static char cpu_description[1024];

/* The CPU model from /proc/cpuinfo ("model name", or "Model" on some
   ARM systems) into BUF; false when there is none.  */
static bool
read_cpu_model (char *buf, size_t size)
{
  FILE *f = fopen ("/proc/cpuinfo", "r");
  char line[512];
  bool found = false;

  if (!f)
    return false;
  while (!found && fgets (line, sizeof line, f))
    {
      char *colon = strchr (line, ':'), *v, *end;
      if (!colon || (strncmp (line, "model name", 10) != 0
                     && strncmp (line, "Model\t", 6) != 0))
        continue;
      for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
        ;
      end = v + strlen (v);
      while (end > v && (end[-1] == '\n' || end[-1] == ' '
                         || end[-1] == '\t' || end[-1] == '\r'))
        *--end = '\0';
      if (*v)
        {
          snprintf (buf, size, "%s", v);
          found = true;
        }
    }
  fclose (f);
  return found;
}

static void
describe_cpu (void)
{
  char model[160];
  struct utsname u;

  if (!read_cpu_model (model, sizeof model))
    snprintf (model, sizeof model, "%s",
              uname (&u) == 0 ? u.machine : "unknown processor");
  snprintf (cpu_description, sizeof cpu_description, "CPU: %s, %d threads, "
            "ISA level %s (%s; CPU features: %s; built: %s; "
            "this CPU runs: %s)", model, hardware_threads (),
            tsr_cpu_level_name (), tsr_cpu_dispatch_kind (),
            tsr_cpu_features_seen (), tsr_cpu_levels_built (),
            tsr_cpu_levels_runnable ());
}

static const char *
cpu_dev_name (tsr_device *dev)
{
  (void) dev;
  return "CPU";
}

static const char *
cpu_dev_description (tsr_device *dev)
{
  (void) dev;
  return cpu_description;
}

static void
cpu_dev_memory (tsr_device *dev, size_t *free_bytes, size_t *total)
{
  (void) dev;
  tsr_host_memory (free_bytes, total);
}

static tsr_device_type
cpu_dev_type (tsr_device *dev)
{
  (void) dev;
  return TSR_DEVICE_CPU;
}

static void
cpu_dev_caps (tsr_device *dev, struct tsr_device_caps *caps)
{
  (void) dev;
  caps->async = false;
  caps->host_buffer = false;
  caps->events = false;
}

static tsr_buffer_type *
cpu_dev_buffer_type (tsr_device *dev)
{
  (void) dev;
  return tsr_host_buffer_type ();
}

static bool
cpu_dev_supports_op (tsr_device *dev, const tsr_tensor *op)
{
  (void) dev;
  return tsr_cpu_supports_op (op);
}

static bool
cpu_dev_supports_buft (tsr_device *dev, tsr_buffer_type *buft)
{
  (void) dev;
  return buft && (tsr_buffer_type_is_host (buft)
                  || tsr_cpu_is_repack_buft (buft));
}

/* CPU_REPACK where the level has vector code for it.  */
static size_t
cpu_extra_bufts (tsr_device *dev, tsr_buffer_type **bufts, size_t max)
{
  if (!tsr_cpu_repack_level ())
    return 0;
  if (max > 0 && bufts)
    bufts[0] = tsr_cpu_repack_buffer_type (dev);
  return 1;
}

static void *
cpu_get_proc (const char *name)
{
  if (strcmp (name, TSR_EXTRA_BUFTS_NAME) == 0)
    return (void *) cpu_extra_bufts;
  if (strcmp (name, TSR_BUFT_REPACKS_NAME) == 0)
    return (void *) tsr_cpu_repack_holds;
  return NULL;
}

/* Registration: one device.  */

static const struct tsr_device_iface cpu_device_iface = {
  .get_name = cpu_dev_name,
  .get_description = cpu_dev_description,
  .get_memory = cpu_dev_memory,
  .get_type = cpu_dev_type,
  .get_caps = cpu_dev_caps,
  .init_backend = cpu_init_backend,
  .get_buffer_type = cpu_dev_buffer_type,
  .supports_op = cpu_dev_supports_op,
  .supports_buft = cpu_dev_supports_buft,
};

/* Module entry points.  */

static int
cpu_score (const char **reason)
{
  static char why[160];
  tsr_cpu_dispatch_init ();
  if (!tsr_cpu_level_name ())
    {
      snprintf (why, sizeof why, "this CPU supports none of the ISA levels "
                "built (%s)", tsr_cpu_levels_built ());
      *reason = why;
      return 0;
    }
  return 1;                     /* a CPU is always there */
}

static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static tsr_reg *
cpu_init (void)
{
  tsr_cpu_dispatch_init ();
  if (tsr_cpu_level_note ())
    tsr_log (TSR_LOG_WARN, "cpu: %s", tsr_cpu_level_note ());
  pthread_once (&cpu_once, describe_cpu);
  return tsr_reg_new ("cpu", &cpu_device_iface, 1, NULL, NULL);
}

const struct tsr_module_descriptor_ext TSR_MODULE_DESCRIPTOR = {
  { TSR_MODULE_ABI_VERSION, "cpu", cpu_score, cpu_init, NULL,
    TSR_MODULE_FLAG_PROC },
  cpu_get_proc
};
