/* tessera/sched.h - one graph over several backends.
 *
 * The scheduler takes backends in priority order (first = preferred)
 * and places each node of a graph: on the backend named for it with
 * tsr_sched_set_backend, else on the first backend (by priority) that
 * supports it and whose memory type holds one of its weights, else on
 * the first backend that supports it.  A node that writes into another
 * tensor's memory (tsr_cpy, tsr_set_rows) runs on a backend that
 * reaches that memory.  Consecutive nodes on one backend form a split;
 * a split's inputs that live where its backend cannot read them are
 * copied to it before it runs (backends sharing a memory type read each
 * other's tensors in place).  Allocate once, compute many times.
 *
 * TESSERA_SCHED_DEBUG=1 prints the splits and copies to stderr when a
 * graph is allocated.  */
#ifndef TESSERA_SCHED_H
#define TESSERA_SCHED_H

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
/* Forget placements (including forced ones) and splits.  */
void tsr_sched_reset (tsr_sched *sched);

/* Of the last allocation: splits, tensors copied between backends, and
   nodes placed on BACKEND.  */
int tsr_sched_n_splits (const tsr_sched *sched);
int tsr_sched_n_copies (const tsr_sched *sched);
int tsr_sched_n_nodes_on (const tsr_sched *sched, tsr_backend *backend);
/* Print the splits to STREAM (a FILE *).  */
void tsr_sched_print (const tsr_sched *sched, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_SCHED_H */
