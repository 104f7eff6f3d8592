/* tessera/comm.h - several processes computing one model: communicators
 * and the communication ops.
 *
 * A communicator joins the processes ("ranks") of an MPI job; its
 * traffic goes through the job's MPI library (the launcher, fabric and
 * scheduler the cluster already runs), loaded from the communication
 * module tessera-comm-mpi only when a program opens a communicator:
 * libtessera itself never links MPI.
 *
 * The communication ops are graph ops like any other: a scheduler that
 * has the communicator's backend (tsr_comm_backend) among its backends
 * places them there, after the ops they read, and copies device
 * tensors to host memory for them and back.  Every rank must run the
 * same communication ops in the same order (a rank that runs a
 * different graph makes the others wait): each wait for another rank
 * is bounded (tsr_comm_set_timeout), and a timed-out communicator
 * fails every later op with TSR_ERR_STATE.  A rank that fails tells
 * the others (tsr_comm_fail), whose waits then end at once with its
 * message (TSR_ERR_PEER).  A program that sees a failure on one rank
 * should stop the job with tsr_comm_abort.
 *
 * Threads: a communicator, its backend and its calls are one thread's
 * at a time (MPI runs at thread level "serialized"); different threads
 * may use different communicators.  */
#ifndef TESSERA_COMM_H
#define TESSERA_COMM_H

#include <stddef.h>
#include <stdint.h>
#include <tessera/backend.h>
#include <tessera/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_comm tsr_comm;

/* A communicator over every process of the job (MPI_COMM_WORLD),
   initializing MPI when the program has not (then finalized when the
   last communicator is freed).  NULL with an error when the mpi module
   is not installed or MPI fails to start.  A program not started by
   an MPI launcher is a job of one rank.  */
tsr_comm *tsr_comm_world (void);
/* A communicator over the processes of the program's own
   communicator: MPI_COMM points at an MPI_Comm (MPI initialized by the
   program), which Tessera duplicates, so that its traffic never
   mixes with the program's.  */
tsr_comm *tsr_comm_from_mpi (const void *mpi_comm);
void tsr_comm_free (tsr_comm *comm);

/* This process's rank, from 0, and the number of ranks.  */
int tsr_comm_rank (const tsr_comm *comm);
int tsr_comm_size (const tsr_comm *comm);
/* "Open MPI v4.1.4, rank 0 of 2, ..." */
const char *tsr_comm_describe (const tsr_comm *comm);
/* The backend that computes COMM's communication ops: give it to the
   scheduler (any priority: it runs nothing else).  Owned by COMM.  */
tsr_backend *tsr_comm_backend (tsr_comm *comm);
/* The host memory the communication ops work in, BUFT (a host buffer
   type; NULL: plain host memory): a GPU's pinned host memory
   (tsr_device_host_buffer_type) makes the scheduler's copies of device
   tensors to and from it faster.  For every communicator of the
   process; it takes effect in schedulers made afterwards, and BUFT's
   device must outlive them.  Sessions of a split model set it to their
   GPU's pinned memory, and back when freed.  */
int tsr_comm_set_host_buffer_type (tsr_comm *comm, tsr_buffer_type *buft);
/* Seconds any wait for other ranks may last before the op fails with
   TSR_ERR_TIMEOUT (default: TESSERA_COMM_TIMEOUT from the environment,
   else 300).  */
int tsr_comm_set_timeout (tsr_comm *comm, double seconds);

/* What COMM did since it was opened: communication operations (graph
   ops and the calls below), the bytes this rank passed to them (an
   all_reduce's operand, its part of an all_gather, what it sent or
   broadcast from the root), and the seconds it spent in them.  */
struct tsr_comm_stats
{
  uint64_t ops;
  uint64_t bytes;
  double seconds;
};
int tsr_comm_get_stats (const tsr_comm *comm, struct tsr_comm_stats *stats);

/* Host memory, outside graphs.  */
/* SIZE bytes of DATA from rank ROOT to every rank.  */
int tsr_comm_broadcast (tsr_comm *comm, void *data, size_t size, int root);
/* TSR_OK when every rank passed the same SIZE bytes of DATA; else
   TSR_ERR_STATE on every rank, with a message naming WHAT and the
   ranks that differ from rank 0.  */
int tsr_comm_check_same (tsr_comm *comm, const void *data, size_t size,
                         const char *what);
int tsr_comm_barrier (tsr_comm *comm);
/* Print MESSAGE (when not NULL) to stderr, prefixed with the rank, and
   stop every process of the job with exit status CODE.  Does not
   return.  */
void tsr_comm_abort (tsr_comm *comm, int code, const char *message);
/* This rank failed with MESSAGE (NULL: the thread's last error): every
   other rank's wait on COMM, and its later ops, fail with
   TSR_ERR_PEER and "rank R failed: MESSAGE" within a few seconds,
   instead of waiting out the timeout for this rank.  COMM is unusable
   here and there after it: stop the job.  Does nothing once another
   rank's failure has reached this one (so failures do not echo).  A
   model split over ranks (tsr_model_params.comm) calls it itself when
   its load or a decode fails.  */
void tsr_comm_fail (tsr_comm *comm, const char *message);

/* Communication ops.  Their sources must be contiguous.
   params: word 0 the communicator's id, word 1 its size; send and
   recv: word 2 the peer rank, word 3 the tag.  */
/* The element-wise sum over the ranks of A (f32), on every rank.  */
tsr_tensor *tsr_all_reduce (tsr_context *ctx, tsr_comm *comm, tsr_tensor *a);
/* Every rank's A (at most three dimensions), on every rank: [ne0,
   ne1, ne2, size], rank r's A at index r of the last dimension.  */
tsr_tensor *tsr_all_gather (tsr_context *ctx, tsr_comm *comm, tsr_tensor *a);
/* Send A to rank PEER with TAG (0 <= tag < 32768); the result, an i32
   [1], holds PEER once A is sent.  Put it in the graph (as an output)
   so that the send runs.  */
tsr_tensor *tsr_send (tsr_context *ctx, tsr_comm *comm, tsr_tensor *a,
                      int peer, int tag);
/* A tensor of TYPE and N_DIMS dimensions NE received from rank PEER,
   sent there with the same TAG and the same shape.  */
tsr_tensor *tsr_recv (tsr_context *ctx, tsr_comm *comm, tsr_type type,
                      int n_dims, const int64_t *ne, int peer, int tag);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_COMM_H */
