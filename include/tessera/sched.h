/* tessera/sched.h - one graph over several backends.
 *
 * The scheduler takes backends in priority order (first = preferred)
 * and places each node of a graph where the memory it works on lives:
 *   - on the backend named for it with tsr_sched_set_backend;
 *   - a node that writes into existing memory (tsr_set_rows into a
 *     cache, tsr_cpy) on the device that memory belongs to, else on a
 *     backend that reaches it;
 *   - a node that reads existing memory (a weight, a cache) on a
 *     backend at that memory (tsr_buffer_type_memory_device: the
 *     device it belongs to; for host memory, any backend that computes
 *     on host memory in place, the CPU or BLAS), the first by priority
 *     that supports it.  When none does, the node runs on the first
 *     backend that does and the memory is copied to it on every
 *     compute: an exception, counted (n_exceptions) and listed at
 *     TESSERA_LOG=info;
 *   - every other node (norms, rope, adds, activations...) where the
 *     fewest bytes must be copied for it and its readers, so that a
 *     chain of such ops stays with the weights around it.
 * The nodes are then ordered so that each backend's work stays
 * together as far as the dependencies allow, and cut into splits where
 * the backend changes.  A split's inputs that live where its backend
 * cannot read them are copied to it before it runs (backends sharing a
 * memory type read each other's tensors in place).  Allocate once,
 * compute many times: the plan is kept until the next allocation.
 *
 * TESSERA_SCHED_DEBUG=1 prints the splits, the copies and the counters
 * to stderr when a graph is allocated.  */
#ifndef TESSERA_SCHED_H
#define TESSERA_SCHED_H

#include <stdint.h>
#include <tessera/backend.h>
#include <tessera/graph.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSR_SCHED_MAX_BACKENDS 16

typedef struct tsr_sched tsr_sched;

/* A scheduler over N_BACKENDS backends in priority order.  The
   backends stay owned by the caller and must outlive the scheduler.  */
tsr_sched *tsr_sched_new (tsr_backend *const *backends, int n_backends);
void tsr_sched_free (tsr_sched *sched);

/* Run node T on BACKEND (one of the scheduler's).  Kept across
   graphs until tsr_sched_reset.  */
int tsr_sched_set_backend (tsr_sched *sched, tsr_tensor *t,
                           tsr_backend *backend);
/* Where T was placed by the last allocation (NULL if nowhere).  */
tsr_backend *tsr_sched_get_backend (tsr_sched *sched, const tsr_tensor *t);

/* Place, split and allocate G.  Errors: an op no backend supports
   (TSR_ERR_UNSUPPORTED, naming the op), a forced backend that does not
   support its node, allocation failure.  */
int tsr_sched_alloc_graph (tsr_sched *sched, tsr_graph *g);
/* Compute G, allocated before with tsr_sched_alloc_graph, and wait.  */
int tsr_sched_graph_compute (tsr_sched *sched, tsr_graph *g);
/* Queue a compute of G and return without waiting for the asynchronous
   backends (the synchronous ones, such as the CPU, run their splits
   before it returns).  The failures met while queueing (and by waits
   between splits) are returned, with nothing left in flight; the others
   by tsr_sched_synchronize, which waits for this compute only (work
   queued later on the same backends, by another scheduler, is not
   waited for where the backends have events).  One compute is in
   flight per scheduler: a new compute, an allocation, a reset or
   freeing the scheduler waits for it first.  Several schedulers over
   the same backends, each with its own graph, pipeline work: a
   session's micro-batches, for instance.  */
int tsr_sched_graph_compute_async (tsr_sched *sched, tsr_graph *g);
int tsr_sched_synchronize (tsr_sched *sched);
/* Forget placements (including forced ones) and splits.  */
void tsr_sched_reset (tsr_sched *sched);

/* Of the last allocation: splits, tensors copied between backends, and
   nodes placed on BACKEND.  */
int tsr_sched_n_splits (const tsr_sched *sched);
int tsr_sched_n_copies (const tsr_sched *sched);
int tsr_sched_n_nodes_on (const tsr_sched *sched, tsr_backend *backend);
/* What a copy between backends carries: a weight (a tensor flagged
   with tsr_set_param), other memory of the caller's that the graph
   reads (a key/value cache), or an activation (a result of the graph or
   one of its inputs).  */
enum tsr_sched_copy_kind {
  TSR_SCHED_COPY_WEIGHT = 0,
  TSR_SCHED_COPY_CACHE,
  TSR_SCHED_COPY_ACTIVATION,
  TSR_SCHED_COPY_KINDS
};

struct tsr_sched_stats {
  /* The graph allocated last: what each of its computes does.  */
  int n_splits;
  int n_copies;                           /* tensors copied */
  int n_exceptions;       /* nodes not run where the memory they read is */
  int copies[TSR_SCHED_COPY_KINDS];       /* tensors copied, by kind */
  uint64_t bytes[TSR_SCHED_COPY_KINDS];   /* bytes copied, by kind */
  /* Waits between splits: on the host (for a split of another backend
     whose results a split reads), and queued in the waiting backend
     for another backend's event (no host synchronization).  The final
     wait for every backend, before a compute returns, is not
     counted.  */
  int n_host_waits;
  int n_device_waits;
  /* Since the scheduler was made or tsr_sched_clear_stats.  */
  uint64_t n_plans;             /* graphs placed, ordered and allocated */
  uint64_t n_computes;          /* successful ones */
  uint64_t total_bytes[TSR_SCHED_COPY_KINDS];   /* copied in them */
  double plan_seconds;          /* spent in tsr_sched_alloc_graph */
  double compute_seconds;       /* spent in tsr_sched_graph_compute */
  /* Of compute_seconds, the time outside the backends' compute, copy
     and synchronize calls: the scheduler's own bookkeeping.  */
  double overhead_seconds;
};

/* The counters of SCHED into *STATS (zeros for a NULL scheduler).  */
void tsr_sched_get_stats (const tsr_sched *sched,
                          struct tsr_sched_stats *stats);
/* Zero the cumulative counters.  */
void tsr_sched_clear_stats (tsr_sched *sched);

/* Print the splits, copies and counters to STREAM (a FILE *).  */
void tsr_sched_print (const tsr_sched *sched, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_SCHED_H */
