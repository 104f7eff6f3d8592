/* blas-module.c - the BLAS backend: module descriptor, registration,
 * device and backend.
 *
 * One ACCEL device, "BLAS", that computes matrix products (mul_mat)
 * with BLIS on host memory and leaves every other op to the backends
 * after it in a scheduler's list (the CPU).  Its buffers are the host
 * buffer type, so tensors move between it and the CPU backend without
 * copies.
 *
 * A matrix product goes to BLIS only when b has at least min_batch
 * columns (n = src1->ne[1]): below that, packing the operands costs
 * more than BLIS gains over the CPU backend's kernels.  min_batch is
 * the device's: TESSERA_BLAS_MIN_BATCH sets it when the module starts,
 * the backend parameter "min_batch=N" changes it afterwards.  Threads
 * follow the backend's setting ("threads=N", tsr_backend_set_n_threads;
 * default: TESSERA_NUM_THREADS, else the online cores) and are passed
 * to BLIS per call, so two backends may use different counts.
 * "max_scratch=BYTES" bounds the memory for converted weights.  */
#include <config.h>
#include <tessera/module.h>

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "blas-impl.h"

/* Where BLIS pays off against the CPU backend.  Measured for f32
   mul_mat with 2 threads on the 2-core x86-64 development machine
   (BLIS 0.9.0 haswell kernels, OpenMP; CPU backend at ISA level v4),
   best of 5-20 runs, CPU / BLIS in ms:
     m = k = 4096: n = 1  8.3 / 9.7,  n = 3  19.7 / 11.8,
                   n = 4  17.6 / 9.0, n = 16 67.9 / 20.0,
                   n = 32 133 / 27.2
     m = k = 1024: n = 2  0.13 / 0.05, n = 32 3.8 / 0.48,
                   n = 128 22.4 / 1.9
   BLIS wins from n = 2 to 4 when its threads get the cores, but that
   machine was shared (load average 5 to 10) and on average BLIS's
   OpenMP threads made small products slower than the CPU backend up
   to n = 16 at m = k = 1024.  32 keeps a clear margin.  */
#define DEFAULT_MIN_BATCH 32

#define MAX_THREADS 1024

struct blas_backend
{
  int n_threads;
  struct tsr_blas_scratch scratch;
};

static atomic_int min_batch = DEFAULT_MIN_BATCH;

static int
default_threads (void)
{
  const char *env = getenv ("TESSERA_NUM_THREADS");
  long cores = sysconf (_SC_NPROCESSORS_ONLN);
  int64_t n;

  if (env && *env)
    {
      if (tsr_param_int (env, 1, MAX_THREADS, &n))
        return (int) n;
      tsr_log (TSR_LOG_WARN, "blas: ignoring TESSERA_NUM_THREADS=%s (not "
               "a thread count in [1, %d])", env, MAX_THREADS);
    }
  if (cores < 1)
    return 1;
  return cores > MAX_THREADS ? MAX_THREADS : (int) cores;
}

/* Graph computation.  */

static int
compute_node (struct blas_backend *be, tsr_tensor *node)
{
  if (node->op != TSR_OP_MUL_MAT)
    return tsr_set_error (TSR_ERR_UNSUPPORTED, "blas: %s '%s' is not an "
                          "operation of this backend (only mul_mat is)",
                          tsr_op_name (node->op), tsr_tensor_label (node));
  return tsr_blas_mul_mat (node, be->n_threads, &be->scratch);
}

/* The core has checked every node (tsr_backend_graph_compute, the
   scheduler): valid, allocated, in host memory.  */
static int
blas_graph_compute (tsr_backend *backend, tsr_graph *g)
{
  struct blas_backend *be = backend->context;
  int n;

  if (!g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "blas: no graph to compute");
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
blas_backend_name (tsr_backend *backend)
{
  (void) backend;
  return "blas";
}

static void
blas_backend_free (tsr_backend *backend)
{
  struct blas_backend *be;

  if (!backend)
    return;
  be = backend->context;
  tsr_blas_scratch_free (&be->scratch);
  free (be);
}

static int
blas_set_n_threads (tsr_backend *backend, int n)
{
  struct blas_backend *be = backend->context;

  if (n < 1 || n > MAX_THREADS)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "blas: thread count %d is "
                          "not in [1, %d]", n, MAX_THREADS);
  be->n_threads = n;
  return TSR_OK;
}

static const struct tsr_backend_iface blas_backend_iface = {
  .get_name = blas_backend_name,
  .free = blas_backend_free,
  .set_tensor_async = NULL,     /* the host buffer functions do it */
  .get_tensor_async = NULL,
  .synchronize = NULL,          /* graph_compute returns when done */
  .graph_compute = blas_graph_compute,
  .set_n_threads = blas_set_n_threads,
};

static tsr_backend *
blas_init_backend (tsr_device *dev, const char *params)
{
  int64_t n_threads = default_threads ();
  int64_t max_scratch = TSR_BLAS_SCRATCH_MAX;
  int64_t new_min_batch = 0;
  const struct tsr_param keys[] = {
    { "threads", 1, MAX_THREADS, &n_threads },
    { "min_batch", 1, INT_MAX, &new_min_batch },
    { "max_scratch", 1, INT64_MAX, &max_scratch },
  };
  struct blas_backend *be;
  tsr_backend *backend;

  if (tsr_params_parse ("blas", params, keys, 3) != TSR_OK)
    return NULL;
  be = calloc (1, sizeof *be);
  backend = be ? tsr_backend_new (dev, blas_backend_iface, be) : NULL;
  if (!backend)
    {
      free (be);
      tsr_set_error (TSR_ERR_NO_MEMORY, "blas: no memory for a backend");
      return NULL;
    }
  be->n_threads = (int) n_threads;
  be->scratch.limit = (size_t) max_scratch;
  if (new_min_batch > 0)
    atomic_store (&min_batch, (int) new_min_batch);
  tsr_log (TSR_LOG_DEBUG, "blas: backend with %d threads, min_batch %d",
           be->n_threads, atomic_load (&min_batch));
  return backend;
}

/* Device.  */

static char blas_description[256];

static const char *
blas_dev_name (tsr_device *dev)
{
  (void) dev;
  return "BLAS";
}

static const char *
blas_dev_description (tsr_device *dev)
{
  (void) dev;
  return blas_description;
}

static void
blas_dev_memory (tsr_device *dev, size_t *free_bytes, size_t *total)
{
  (void) dev;
  tsr_host_memory (free_bytes, total);
}

static tsr_device_type
blas_dev_type (tsr_device *dev)
{
  (void) dev;
  return TSR_DEVICE_ACCEL;
}

static void
blas_dev_caps (tsr_device *dev, struct tsr_device_caps *caps)
{
  (void) dev;
  caps->async = false;
  caps->host_buffer = false;
  caps->events = false;
}

static tsr_buffer_type *
blas_dev_buffer_type (tsr_device *dev)
{
  (void) dev;
  return tsr_host_buffer_type ();
}

static bool
blas_dev_supports_op (tsr_device *dev, const tsr_tensor *op)
{
  (void) dev;
  return op->op == TSR_OP_MUL_MAT && op->src[1]
         && op->src[1]->ne[1] >= atomic_load (&min_batch)
         && tsr_blas_mul_mat_ok (op);
}

static bool
blas_dev_supports_buft (tsr_device *dev, tsr_buffer_type *buft)
{
  (void) dev;
  return buft && tsr_buffer_type_is_host (buft);
}

/* Registration: one device.  */

static const struct tsr_device_iface blas_device_iface = {
  .get_name = blas_dev_name,
  .get_description = blas_dev_description,
  .get_memory = blas_dev_memory,
  .get_type = blas_dev_type,
  .get_caps = blas_dev_caps,
  .init_backend = blas_init_backend,
  .get_buffer_type = blas_dev_buffer_type,
  .supports_op = blas_dev_supports_op,
  .supports_buft = blas_dev_supports_buft,
};

/* Module entry points.  */

static void
blas_start (void)
{
  const char *env = getenv ("TESSERA_BLAS_MIN_BATCH");
  int64_t v;

  if (env && *env)
    {
      if (tsr_param_int (env, 1, INT_MAX, &v))
        atomic_store (&min_batch, (int) v);
      else
        tsr_log (TSR_LOG_WARN, "blas: ignoring TESSERA_BLAS_MIN_BATCH=%s "
                 "(not a positive integer)", env);
    }
  tsr_blas_describe (blas_description, sizeof blas_description);
}

static int
blas_score (const char **reason)
{
  (void) reason;
  return 1;                     /* BLIS runs on any CPU it was built for */
}

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static tsr_reg *
blas_init (void)
{
  pthread_once (&blas_once, blas_start);
  return tsr_reg_new ("blas", &blas_device_iface, 1, NULL, NULL);
}

const struct tsr_module_descriptor TSR_MODULE_DESCRIPTOR = {
  TSR_MODULE_ABI_VERSION, "blas", blas_score, blas_init, NULL, 0
};
