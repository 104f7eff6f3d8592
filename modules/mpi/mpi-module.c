/* mpi-module.c - the communication module over MPI (tessera-comm-mpi).
 *
 * Owns every MPI call Tessera makes: starting and stopping MPI when
 * the program did not, the communicators (a duplicate of the job's or
 * of the program's, with errors returned rather than fatal), and the
 * data path of the communication ops, computed by one backend per
 * communicator on host memory (the scheduler stages device tensors
 * through host memory; a CUDA-aware MPI would skip that here, in
 * one place).
 *
 * Every wait for other ranks is a non-blocking call polled against a
 * deadline: a rank that stopped, or ranks that run different graphs,
 * give TSR_ERR_TIMEOUT after the communicator's timeout instead of a
 * hang.  A collective that timed out cannot be cancelled in MPI, so
 * the communicator is unusable after it (TSR_ERR_STATE) and the
 * program should stop the job (tsr_comm_abort).
 *
 * Failure agreement: each communicator has a twin (a second duplicate)
 * on which every rank keeps a receive posted, from any rank, for a
 * failure message.  A rank that fails (tsr_comm_fail: the model layer
 * calls it when a load or decode fails) sends its message to every
 * other rank there; every wait tests that receive as it polls, so the
 * others' waits end within a poll (at most a millisecond's sleep) with
 * TSR_ERR_PEER and the failing rank's message, rather than after the
 * timeout.  */
#include <config.h>

#include <limits.h>
#include <mpi.h>
#ifdef HAVE_DLFCN_H
#include <dlfcn.h>
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tessera/module.h>
#include <tessera/registry.h>

/* The longest failure message passed between ranks.  */
#define FAIL_MAX 1024

struct mpi_comm
{
  MPI_Comm comm;
  int32_t id;
  int rank, size;
  double timeout;
  bool broken;                  /* a wait timed out */
  /* Sends of the graph being computed, waited for at its end (so that
     a ring of sends and receives in one graph cannot deadlock).  */
  MPI_Request *sends;
  const tsr_tensor **send_srcs;
  int n_sends, cap_sends;
  /* tsr_comm_get_stats.  */
  uint64_t ops, bytes;
  double seconds;
  tsr_backend *backend;
  char describe[256];
  /* Failure agreement (comm_fail).  */
  MPI_Comm fail_comm;           /* the twin */
  MPI_Request fail_req;         /* the receive posted on it */
  bool fail_posted;             /* FAIL_REQ is pending */
  int failed_rank;              /* whose failure ended the waits, or -1 */
  char fail_in[FAIL_MAX + 1];   /* FAIL_REQ's buffer */
  char fail_msg[FAIL_MAX + 1];  /* the failure's message */
};

/* The process's MPI: started by us or by the program.  */
static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
/* RC = CALL, an MPI call, under MPI_LOCK: MPI runs at thread level
   "serialized", so that no two threads may be in it at once, whichever
   communicators they use.  (MPI_Wtime and MPI_Error_string, local
   lookups, are called without it.)  */
#define LOCKED(rc, call)                                                  \
  do                                                                      \
    {                                                                     \
      pthread_mutex_lock (&mpi_lock);                                     \
      (rc) = (call);                                                      \
      pthread_mutex_unlock (&mpi_lock);                                   \
    }                                                                     \
  while (0)
static int n_open;
static bool we_initialized;
/* A wait of some communicator timed out: its operation is still
   pending, and MPI_Finalize would wait for it.  */
static atomic_bool any_broken;
static int thread_level = -1;
static tsr_device *mpi_device;
/* tsr_comm_set_host_buffer_type: a GPU's pinned memory, or NULL.  */
static _Atomic (tsr_buffer_type *) staging;
static char library[128];

/* Once MPI has started, this module (and with it the MPI library) stays
   loaded until the process ends: MPI cannot start again once finalized,
   and its libraries keep state and handlers to the end, which must not
   point into unmapped code.  */
static void
stay_resident (void)
{
#if defined(HAVE_DLADDR) && defined(RTLD_NODELETE) && defined(RTLD_NOLOAD)
  static bool done;
  Dl_info info;
  if (done || !dladdr ((void *) stay_resident, &info) || !info.dli_fname)
    return;
  void *self = dlopen (info.dli_fname, RTLD_NOW | RTLD_NOLOAD
                                       | RTLD_NODELETE);
  if (self)
    {
      /* NODELETE stays with the object; the reference is not needed.  */
      dlclose (self);
      done = true;
    }
#endif
}

static const char *
level_name (int level)
{
  if (level == MPI_THREAD_SINGLE)
    return "single";
  if (level == MPI_THREAD_FUNNELED)
    return "funneled";
  if (level == MPI_THREAD_SERIALIZED)
    return "serialized";
  if (level == MPI_THREAD_MULTIPLE)
    return "multiple";
  return "unknown";
}

static int
mpi_error (const struct mpi_comm *c, int rc, const char *what)
{
  char msg[MPI_MAX_ERROR_STRING + 1];
  int len = 0;
  if (MPI_Error_string (rc, msg, &len) != MPI_SUCCESS)
    snprintf (msg, sizeof msg, "MPI error %d", rc);
  else
    msg[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING] = '\0';
  if (c)
    return tsr_set_error (TSR_ERR_BACKEND, "mpi: %s on rank %d of %d: %s",
                          what, c->rank, c->size, msg);
  return tsr_set_error (TSR_ERR_BACKEND, "mpi: %s: %s", what, msg);
}

static int
check_usable (const struct mpi_comm *c, const char *what)
{
  if (!c->broken)
    return TSR_OK;
  if (c->failed_rank == c->rank)
    return tsr_set_error (TSR_ERR_STATE, "mpi: %s on rank %d of %d: this "
                          "rank failed (%s); the communicator is unusable "
                          "(stop the job)", what, c->rank, c->size,
                          c->fail_msg);
  if (c->failed_rank >= 0)
    return tsr_set_error (TSR_ERR_PEER, "mpi: %s on rank %d of %d: rank %d "
                          "failed: %s", what, c->rank, c->size,
                          c->failed_rank, c->fail_msg);
  return tsr_set_error (TSR_ERR_STATE, "mpi: %s on rank %d of %d: an "
                        "earlier wait for the other ranks timed out; the "
                        "communicator is unusable (stop the job)", what,
                        c->rank, c->size);
}

/* One operation of BYTES for the statistics.  */
static void
count (struct mpi_comm *c, size_t bytes)
{
  c->ops++;
  c->bytes += bytes;
}

static int wait_poll (struct mpi_comm *c, MPI_Request *req,
                      MPI_Status *status, const char *what);

/* Wait for REQ, polling, at most the communicator's timeout.  WHAT
   names the operation for messages.  */
static int
wait_for (struct mpi_comm *c, MPI_Request *req, MPI_Status *status,
          const char *what)
{
  double start = MPI_Wtime ();
  int st = wait_poll (c, req, status, what);
  c->seconds += MPI_Wtime () - start;
  return st;
}

/* The wait for REQ, which the non-blocking call that returned RC
   started: that call's failure, or the wait's result.  */
static int
wait_started (struct mpi_comm *c, int rc, MPI_Request *req,
              MPI_Status *status, const char *what)
{
  return rc != MPI_SUCCESS ? mpi_error (c, rc, what)
                           : wait_for (c, req, status, what);
}

static int
wait_poll (struct mpi_comm *c, MPI_Request *req, MPI_Status *status,
           const char *what)
{
  double start = MPI_Wtime ();
  long polls = 0;
  for (;;)
    {
      int done = 0;
      int rc;
      LOCKED (rc, MPI_Test (req, &done, status ? status : MPI_STATUS_IGNORE));
      if (rc != MPI_SUCCESS)
        return mpi_error (c, rc, what);
      if (done)
        return TSR_OK;
      if (c->fail_posted)
        {
          /* Another rank's failure: this wait will not end.  */
          MPI_Status fs;
          int got = 0;
          LOCKED (rc, MPI_Test (&c->fail_req, &got, &fs));
          if (rc == MPI_SUCCESS && got)
            {
              int n = 0;
              LOCKED (rc, MPI_Get_count (&fs, MPI_CHAR, &n));
              n = rc == MPI_SUCCESS && n > 0 && n <= FAIL_MAX ? n : 0;
              c->fail_in[n] = '\0';
              memcpy (c->fail_msg, c->fail_in, (size_t) n + 1);
              c->fail_posted = false;
              c->failed_rank = fs.MPI_SOURCE;
              c->broken = true;
              /* The failing rank may have finished this operation
                 before it failed (a barrier it left): then REQ
                 completes within moments, and it succeeded here too.  */
              double t0 = MPI_Wtime ();
              do
                {
                  LOCKED (rc, MPI_Test (req, &done,
                                        status ? status : MPI_STATUS_IGNORE));
                  if (rc == MPI_SUCCESS && done)
                    return TSR_OK;
                  struct timespec ts = { 0, 1000000 };
                  nanosleep (&ts, NULL);
                }
              while (MPI_Wtime () - t0 < 0.2);
              /* REQ stays pending: finalizing would wait for it.  */
              atomic_store (&any_broken, true);
              return check_usable (c, what);
            }
        }
      double waited = MPI_Wtime () - start;
      if (waited > c->timeout)
        {
          c->broken = true;
          atomic_store (&any_broken, true);
          return tsr_set_error (TSR_ERR_TIMEOUT, "mpi: %s on rank %d of %d: "
                                "no answer from the other ranks after %.0f s "
                                "(a rank stopped, or the ranks run different "
                                "graphs); the communicator is unusable: stop "
                                "the job", what, c->rank, c->size, waited);
        }
      /* Spin first (a collective of the next layer answers within
         microseconds), then sleep longer and longer, leaving the CPU
         to the ranks still computing.  */
      if (++polls > 2000)
        {
          struct timespec ts = { 0, waited < 0.01 ? 20000
                                    : waited < 1 ? 200000 : 1000000 };
          nanosleep (&ts, NULL);
        }
      else if (polls > 200)
        sched_yield ();
    }
}

/* The ops.  */

static int
all_reduce (struct mpi_comm *c, tsr_tensor *node, const char *what)
{
  const float *src = node->src[0]->data;
  float *dst = node->data;
  int64_t n = tsr_nelements (node);
  count (c, tsr_nbytes (node));
  /* Counts are ints: chunks of at most 2^30 elements.  */
  for (int64_t off = 0; off < n; off += INT64_C (1) << 30)
    {
      int64_t k = n - off < (INT64_C (1) << 30) ? n - off
                                                 : INT64_C (1) << 30;
      MPI_Request req;
      int rc;
      LOCKED (rc, MPI_Iallreduce (src + off, dst + off, (int) k, MPI_FLOAT,
                                  MPI_SUM, c->comm, &req));
      int st = wait_started (c, rc, &req, NULL, what);
      if (st != TSR_OK)
        return st;
    }
  return TSR_OK;
}

static int
all_gather (struct mpi_comm *c, tsr_tensor *node, const char *what)
{
  size_t bytes = tsr_nbytes (node->src[0]);
  if (bytes > INT_MAX)
    return tsr_set_error (TSR_ERR_SHAPE, "mpi: %s: %zu bytes per rank, at "
                          "most %d", what, bytes, INT_MAX);
  MPI_Request req;
  count (c, bytes);
  int rc;
  LOCKED (rc, MPI_Iallgather (node->src[0]->data, (int) bytes, MPI_BYTE,
                              node->data, (int) bytes, MPI_BYTE, c->comm,
                              &req));
  return wait_started (c, rc, &req, NULL, what);
}

/* Wait for the sends posted so far.  */
static int
finish_sends (struct mpi_comm *c)
{
  int st = TSR_OK;
  if (c->broken)
    {
      /* Nothing more is waited for on a communicator that timed out.  */
      c->n_sends = 0;
      return check_usable (c, "send");
    }
  for (int i = 0; i < c->n_sends; i++)
    {
      char what[TSR_MAX_NAME + 64];
      snprintf (what, sizeof what, "send of '%s'",
                tsr_tensor_label (c->send_srcs[i]));
      int s = st == TSR_OK ? wait_for (c, &c->sends[i], NULL, what) : st;
      if (st == TSR_OK)
        st = s;
    }
  c->n_sends = 0;
  return st;
}

/* Whether the memory of a pending send's source overlaps [P, P + N).  */
static bool
overlaps_send (const struct mpi_comm *c, const void *p, size_t n)
{
  const char *a = p;
  for (int i = 0; i < c->n_sends; i++)
    {
      const char *b = c->send_srcs[i]->data;
      if (a < b + tsr_nbytes (c->send_srcs[i]) && b < a + n)
        return true;
    }
  return false;
}

static int
send_recv (struct mpi_comm *c, tsr_tensor *node, const char *what)
{
  int peer = tsr_get_op_param_i32 (node, 2);
  int tag = tsr_get_op_param_i32 (node, 3);
  bool send = node->op == TSR_OP_SEND;
  size_t bytes = tsr_nbytes (send ? node->src[0] : node);
  if (bytes > INT_MAX)
    return tsr_set_error (TSR_ERR_SHAPE, "mpi: %s: %zu bytes, at most %d",
                          what, bytes, INT_MAX);
  if (peer == c->rank)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "mpi: %s: peer %d is this "
                          "rank", what, peer);
  int rc;
  if (send)
    {
      if (c->n_sends == c->cap_sends)
        {
          int cap = c->cap_sends ? 2 * c->cap_sends : 8;
          MPI_Request *r = realloc (c->sends, (size_t) cap * sizeof *r);
          if (r)
            c->sends = r;
          const tsr_tensor **t = r ? realloc (c->send_srcs,
                                              (size_t) cap * sizeof *t)
                                   : NULL;
          if (!t)
            return tsr_set_error (TSR_ERR_NO_MEMORY, "mpi: out of memory");
          c->send_srcs = t;
          c->cap_sends = cap;
        }
      count (c, bytes);
      LOCKED (rc, MPI_Isend (node->src[0]->data, (int) bytes, MPI_BYTE,
                             peer, tag, c->comm, &c->sends[c->n_sends]));
      if (rc != MPI_SUCCESS)
        return mpi_error (c, rc, what);
      c->send_srcs[c->n_sends++] = node->src[0];
      *(int32_t *) node->data = peer;
      return TSR_OK;
    }
  /* A receive into memory still being sent waits for the sends.  */
  int st = overlaps_send (c, node->data, bytes) ? finish_sends (c) : TSR_OK;
  if (st != TSR_OK)
    return st;
  MPI_Request req;
  MPI_Status status;
  count (c, 0);
  LOCKED (rc, MPI_Irecv (node->data, (int) bytes, MPI_BYTE, peer, tag,
                         c->comm, &req));
  if ((st = wait_started (c, rc, &req, &status, what)) != TSR_OK)
    return st;
  int got = 0;
  LOCKED (rc, MPI_Get_count (&status, MPI_BYTE, &got));
  if ((size_t) got != bytes)
    return tsr_set_error (TSR_ERR_SHAPE, "mpi: %s: rank %d sent %d bytes, "
                          "%zu expected (the ranks' shapes differ)", what,
                          peer, got, bytes);
  return TSR_OK;
}

static int
compute_node (struct mpi_comm *c, tsr_tensor *node)
{
  char what[TSR_MAX_NAME + 64];
  snprintf (what, sizeof what, "%s '%s'", tsr_op_name (node->op),
            tsr_tensor_label (node));
  if (tsr_get_op_param_i32 (node, 0) != c->id)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "mpi: %s belongs to "
                          "communicator #%d, this backend is #%d's", what,
                          tsr_get_op_param_i32 (node, 0), c->id);
  if (tsr_get_op_param_i32 (node, 1) != c->size)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "mpi: %s was built for %d "
                          "ranks, the communicator has %d", what,
                          tsr_get_op_param_i32 (node, 1), c->size);
  int st = check_usable (c, what);
  if (st != TSR_OK)
    return st;
  switch (node->op)
    {
    case TSR_OP_ALL_REDUCE: return all_reduce (c, node, what);
    case TSR_OP_ALL_GATHER: return all_gather (c, node, what);
    case TSR_OP_SEND:
    case TSR_OP_RECV: return send_recv (c, node, what);
    default: return tsr_no_kernel_error ("mpi", node);
    }
}

/* Backend: one per communicator.  */

static const char *
mpi_backend_name (tsr_backend *backend)
{
  (void) backend;
  return "MPI";
}

static int
mpi_graph_compute (tsr_backend *backend, tsr_graph *g)
{
  struct mpi_comm *c = backend->context;
  if (!g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "mpi: no graph to compute");
  int st = TSR_OK;
  for (int i = 0, n = tsr_graph_n_nodes (g); i < n && st == TSR_OK; i++)
    {
      tsr_tensor *node = tsr_graph_node (g, i);
      if (tsr_op_get_kind (node->op) == TSR_OP_KIND_VIEW)
        continue;
      /* Collectives write where a send may still read.  */
      if (node->op != TSR_OP_SEND && node->op != TSR_OP_RECV
          && overlaps_send (c, node->data, tsr_nbytes (node)))
        st = finish_sends (c);
      if (st == TSR_OK)
        st = compute_node (c, node);
    }
  /* The sources of the sends are the scheduler's to reuse once this
     returns: wait for them even after a failure, whose message is the
     one kept.  */
  if (st == TSR_OK)
    return finish_sends (c);
  if (c->n_sends)
    {
      char msg[512];
      snprintf (msg, sizeof msg, "%s", tsr_last_error ());
      if (c->broken)
        c->n_sends = 0;
      else
        finish_sends (c);
      tsr_set_error (st, "%s", msg);
    }
  return st;
}

static const struct tsr_backend_iface mpi_backend_iface = {
  .get_name = mpi_backend_name,
  .graph_compute = mpi_graph_compute,
};

/* The communication interface.  */

/* C's receive of failure messages and its communicators, freed (under
   MPI_LOCK).  */
static void
drop_comms (struct mpi_comm *c)
{
  if (c->fail_posted)
    {
      /* A receive is cancelled locally (or has its message already).  */
      MPI_Cancel (&c->fail_req);
      MPI_Wait (&c->fail_req, MPI_STATUS_IGNORE);
      c->fail_posted = false;
    }
  if (c->fail_comm != MPI_COMM_NULL)
    MPI_Comm_free (&c->fail_comm);
  if (c->comm != MPI_COMM_NULL)
    MPI_Comm_free (&c->comm);
}

static int
comm_open (const void *mpi_comm, int32_t id, double timeout, void **out,
           int *rank, int *size, tsr_backend **backend)
{
  int flag = 0, rc;
  pthread_mutex_lock (&mpi_lock);
  MPI_Initialized (&flag);
  if (!flag)
    {
      int finalized = 0;
      MPI_Finalized (&finalized);
      if (finalized)
        {
          pthread_mutex_unlock (&mpi_lock);
          return tsr_set_error (TSR_ERR_STATE, "mpi: MPI was finalized in "
                                "this process and cannot start again");
        }
      if (mpi_comm)
        {
          pthread_mutex_unlock (&mpi_lock);
          return tsr_set_error (TSR_ERR_STATE, "mpi: a program's "
                                "communicator, but MPI is not initialized");
        }
      rc = MPI_Init_thread (NULL, NULL, MPI_THREAD_SERIALIZED,
                            &thread_level);
      if (rc != MPI_SUCCESS)
        {
          pthread_mutex_unlock (&mpi_lock);
          return mpi_error (NULL, rc, "MPI_Init_thread");
        }
      we_initialized = true;
    }
  else
    MPI_Query_thread (&thread_level);
  /* The ops run in whatever thread computes a graph (sessions on
     several threads): MPI must take calls from any thread, one at a
     time (MPI_LOCK).  */
  if (thread_level < MPI_THREAD_SERIALIZED)
    {
      pthread_mutex_unlock (&mpi_lock);
      if (we_initialized)
        return tsr_set_error (TSR_ERR_STATE, "mpi: this MPI gives thread "
                              "level %s where Tessera needs serialized "
                              "(or multiple)", level_name (thread_level));
      return tsr_set_error (TSR_ERR_STATE, "mpi: the program started MPI "
                            "at thread level %s; Tessera calls MPI from the "
                            "threads that compute, one at a time, so it "
                            "needs serialized or multiple: start MPI with "
                            "MPI_Init_thread (..., MPI_THREAD_SERIALIZED, "
                            "...)", level_name (thread_level));
    }
  stay_resident ();
  if (!library[0])
    {
      char v[MPI_MAX_LIBRARY_VERSION_STRING];
      int len = 0;
      MPI_Get_library_version (v, &len);
      v[len > 0 && len < (int) sizeof v ? len : 0] = '\0';
      /* The first line, up to a comma: "Open MPI v4.1.4".  */
      v[strcspn (v, ",\n")] = '\0';
      snprintf (library, sizeof library, "%.100s", v[0] ? v : "MPI");
    }
  struct mpi_comm *c = calloc (1, sizeof *c);
  if (!c)
    {
      pthread_mutex_unlock (&mpi_lock);
      return tsr_set_error (TSR_ERR_NO_MEMORY, "mpi: out of memory");
    }
  /* n_open counts C from here: MPI stays up while it is being made.  */
  n_open++;
  pthread_mutex_unlock (&mpi_lock);
  MPI_Comm base = mpi_comm ? *(const MPI_Comm *) mpi_comm : MPI_COMM_WORLD;
  MPI_Request req;
  c->timeout = timeout > 0 ? timeout : 300;
  c->comm = c->fail_comm = MPI_COMM_NULL;
  c->failed_rank = -1;
  LOCKED (rc, MPI_Comm_rank (base, &c->rank));
  LOCKED (rc, MPI_Comm_size (base, &c->size));
  /* Collective: every rank must open its communicator, within the
     timeout.  */
  LOCKED (rc, MPI_Comm_idup (base, &c->comm, &req));
  int st = rc != MPI_SUCCESS ? mpi_error (NULL, rc, "MPI_Comm_idup")
                             : wait_for (c, &req, NULL, "opening a "
                                         "communicator (MPI_Comm_idup)");
  /* Its twin for failure messages, and the receive for them.  */
  if (st == TSR_OK)
    {
      LOCKED (rc, MPI_Comm_idup (c->comm, &c->fail_comm, &req));
      st = rc != MPI_SUCCESS ? mpi_error (NULL, rc, "MPI_Comm_idup")
                             : wait_for (c, &req, NULL, "opening a "
                                         "communicator (its twin)");
    }
  if (st == TSR_OK)
    {
      LOCKED (rc, MPI_Irecv (c->fail_in, FAIL_MAX, MPI_CHAR, MPI_ANY_SOURCE,
                             0, c->fail_comm, &c->fail_req));
      if (rc != MPI_SUCCESS)
        st = mpi_error (NULL, rc, "MPI_Irecv (failure messages)");
      c->fail_posted = rc == MPI_SUCCESS;
    }
  pthread_mutex_lock (&mpi_lock);
  if (st == TSR_OK)
    {
      MPI_Comm_set_errhandler (c->comm, MPI_ERRORS_RETURN);
      MPI_Comm_rank (c->comm, &c->rank);
      MPI_Comm_size (c->comm, &c->size);
      c->id = id;
      c->backend = tsr_backend_new (mpi_device, mpi_backend_iface, c);
      if (!c->backend)
        st = TSR_ERR_NO_MEMORY;
    }
  if (st != TSR_OK)
    {
      /* A timed-out duplicate stays pending and may still write into
         C: C stays allocated, and MPI up.  */
      if (!c->broken)
        {
          drop_comms (c);
          n_open--;
          free (c);
        }
      pthread_mutex_unlock (&mpi_lock);
      return st;
    }
  snprintf (c->describe, sizeof c->describe, "%s, rank %d of %d, thread "
            "level %s%s", library, c->rank, c->size,
            level_name (thread_level),
            we_initialized ? "" : ", started by the program");
  pthread_mutex_unlock (&mpi_lock);
  *out = c;
  *rank = c->rank;
  *size = c->size;
  *backend = c->backend;
  return TSR_OK;
}

static void
comm_close (void *comm)
{
  struct mpi_comm *c = comm;
  if (!c)
    return;
  pthread_mutex_lock (&mpi_lock);
  tsr_backend_free (c->backend);
  drop_comms (c);
  free (c->sends);
  free (c->send_srcs);
  free (c);
  /* After a timeout (of any communicator) an operation is still
     pending: finalizing would wait for it.  */
  if (--n_open == 0 && we_initialized && !atomic_load (&any_broken))
    MPI_Finalize ();
  pthread_mutex_unlock (&mpi_lock);
}

static void
comm_set_timeout (void *comm, double seconds)
{
  ((struct mpi_comm *) comm)->timeout = seconds;
}

static int
comm_broadcast (void *comm, void *data, size_t size, int root)
{
  struct mpi_comm *c = comm;
  int st = check_usable (c, "broadcast");
  if (st == TSR_OK)
    count (c, c->rank == root ? size : 0);
  /* Counts are ints: chunks of at most 2^30 bytes.  */
  for (size_t off = 0; st == TSR_OK && off < size; off += (size_t) 1 << 30)
    {
      size_t k = size - off < ((size_t) 1 << 30) ? size - off
                                                 : (size_t) 1 << 30;
      MPI_Request req;
      int rc;
      LOCKED (rc, MPI_Ibcast ((char *) data + off, (int) k, MPI_BYTE, root,
                              c->comm, &req));
      st = wait_started (c, rc, &req, NULL, "broadcast");
    }
  return st;
}

static int
comm_max_u64 (void *comm, uint64_t *values, int n)
{
  struct mpi_comm *c = comm;
  int st = check_usable (c, "all_reduce (max)");
  if (st != TSR_OK)
    return st;
  count (c, sizeof *values * (size_t) n);
  MPI_Request req;
  int rc;
  LOCKED (rc, MPI_Iallreduce (MPI_IN_PLACE, values, n, MPI_UINT64_T,
                              MPI_MAX, c->comm, &req));
  return wait_started (c, rc, &req, NULL, "all_reduce (max)");
}

static int
comm_barrier (void *comm)
{
  struct mpi_comm *c = comm;
  int st = check_usable (c, "barrier");
  if (st != TSR_OK)
    return st;
  count (c, 0);
  MPI_Request req;
  int rc;
  LOCKED (rc, MPI_Ibarrier (c->comm, &req));
  return wait_started (c, rc, &req, NULL, "barrier");
}

static void
comm_abort (void *comm, int code)
{
  struct mpi_comm *c = comm;
  MPI_Abort (c ? c->comm : MPI_COMM_WORLD, code);
  exit (code);
}

static void
comm_fail (void *comm, const char *message)
{
  struct mpi_comm *c = comm;
  int rc;

  if (!c || c->failed_rank >= 0 || c->fail_comm == MPI_COMM_NULL)
    return;
  c->failed_rank = c->rank;
  /* At most FAIL_MAX bytes with its NUL: what the receives take.  */
  snprintf (c->fail_msg, FAIL_MAX, "%s", message ? message : "");
  c->broken = true;
  /* Pending sends (this rank's and the others') would hold up
     MPI_Finalize.  */
  atomic_store (&any_broken, true);
  /* The message goes from memory that outlives C when a send is not
     done in time (then it is never freed).  */
  size_t len = strlen (c->fail_msg) + 1;
  char *msg = malloc (len);
  MPI_Request *reqs = calloc ((size_t) c->size, sizeof *reqs);
  if (!msg || !reqs)
    {
      free (msg);
      free (reqs);
      return;
    }
  memcpy (msg, c->fail_msg, len);
  int n = 0;
  for (int r = 0; r < c->size; r++)
    if (r != c->rank)
      {
        LOCKED (rc, MPI_Isend (msg, (int) len, MPI_CHAR, r, 0, c->fail_comm,
                               &reqs[n]));
        n += rc == MPI_SUCCESS;
      }
  /* Small messages leave at once; a rank that is gone may not take
     its own: wait 2 s at most, then let MPI finish them.  */
  double start = MPI_Wtime ();
  int all = 0;
  while (!all)
    {
      LOCKED (rc, MPI_Testall (n, reqs, &all, MPI_STATUSES_IGNORE));
      if (rc != MPI_SUCCESS || all || MPI_Wtime () - start > 2.0)
        break;
      struct timespec ts = { 0, 1000000 };
      nanosleep (&ts, NULL);
    }
  if (all)
    free (msg);
  else
    for (int i = 0; i < n; i++)
      if (reqs[i] != MPI_REQUEST_NULL)
        LOCKED (rc, MPI_Request_free (&reqs[i]));
  free (reqs);
}

static const char *
comm_describe (void *comm)
{
  return ((struct mpi_comm *) comm)->describe;
}

static void
comm_stats (void *comm, uint64_t *ops, uint64_t *bytes, double *seconds)
{
  struct mpi_comm *c = comm;
  *ops = c->ops;
  *bytes = c->bytes;
  *seconds = c->seconds;
}

static void
comm_set_host_buffer_type (tsr_buffer_type *buft)
{
  atomic_store (&staging, buft);
}

static const struct tsr_comm_iface comm_iface = {
  .open = comm_open,
  .close = comm_close,
  .set_timeout = comm_set_timeout,
  .broadcast = comm_broadcast,
  .max_u64 = comm_max_u64,
  .barrier = comm_barrier,
  .abort = comm_abort,
  .describe = comm_describe,
  .stats = comm_stats,
  .set_host_buffer_type = comm_set_host_buffer_type,
  .fail = comm_fail,
};

/* Device.  */

static const char *
mpi_dev_name (tsr_device *dev)
{
  (void) dev;
  return "MPI";
}

static const char *
mpi_dev_description (tsr_device *dev)
{
  (void) dev;
  return "communication with the other processes of an MPI job";
}

static tsr_device_type
mpi_dev_type (tsr_device *dev)
{
  (void) dev;
  return TSR_DEVICE_COMM;
}

static tsr_backend *
mpi_init_backend (tsr_device *dev, const char *params)
{
  (void) dev;
  (void) params;
  tsr_set_error (TSR_ERR_INVALID_ARG, "mpi: the MPI device's backends come "
                 "with communicators (tsr_comm_world, tsr_comm_backend)");
  return NULL;
}

static tsr_buffer_type *
mpi_dev_buffer_type (tsr_device *dev)
{
  (void) dev;
  tsr_buffer_type *buft = atomic_load (&staging);
  return buft ? buft : tsr_host_buffer_type ();
}

static bool
mpi_dev_supports_op (tsr_device *dev, const tsr_tensor *op)
{
  (void) dev;
  return op->op == TSR_OP_ALL_REDUCE || op->op == TSR_OP_ALL_GATHER
         || op->op == TSR_OP_SEND || op->op == TSR_OP_RECV;
}

static bool
mpi_dev_supports_buft (tsr_device *dev, tsr_buffer_type *buft)
{
  (void) dev;
  return buft && tsr_buffer_type_is_host (buft);
}

static const struct tsr_device_iface mpi_device_iface = {
  .get_name = mpi_dev_name,
  .get_description = mpi_dev_description,
  .get_type = mpi_dev_type,
  .init_backend = mpi_init_backend,
  .get_buffer_type = mpi_dev_buffer_type,
  .supports_op = mpi_dev_supports_op,
  .supports_buft = mpi_dev_supports_buft,
};

/* Module entry points.  */

static int
mpi_score (const char **reason)
{
  (void) reason;
  return 1;
}

static tsr_reg *
mpi_init (void)
{
  tsr_reg *reg = tsr_reg_new ("mpi", &mpi_device_iface, 1, NULL, NULL);
  mpi_device = reg ? tsr_reg_device_get (reg, 0) : NULL;
  return reg;
}

static void *
mpi_get_proc (const char *name)
{
  return strcmp (name, TSR_COMM_IFACE_NAME) == 0 ? (void *) &comm_iface
                                                 : NULL;
}

const struct tsr_module_descriptor_ext TSR_MODULE_DESCRIPTOR = {
  { TSR_MODULE_ABI_VERSION, "mpi", mpi_score, mpi_init, NULL,
    TSR_MODULE_FLAG_PROC },
  mpi_get_proc
};
