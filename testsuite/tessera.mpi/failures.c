/* failures.c - ranks that disagree or stop: every rank must end, with
 * a message, within a bounded time (run by mpi.exp under mpirun, which
 * also checks the time and the job's exit status).
 *
 *   failures timeout   rank 0 runs an all_reduce the others never
 *                      join: it fails with TSR_ERR_TIMEOUT after the
 *                      communicator's timeout (2 s), later ops fail
 *                      with TSR_ERR_STATE, and it stops the job with
 *                      tsr_comm_abort while the others wait.
 *   failures exit      the last rank exits with status 3 while the
 *                      others wait in an all_reduce: the launcher
 *                      stops them.
 *   failures open      (TESSERA_COMM_TIMEOUT=2) every rank but the last
 *                      opens a second communicator, whose duplicate
 *                      waits for all: the open fails with
 *                      TSR_ERR_TIMEOUT after 2 s (not the default
 *                      300), and rank 0 stops the job with status 6.  */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <tessera.h>
#include "tsr-test.h"

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* An all_reduce of 16 floats computed through a scheduler.  */
static int
all_reduce (tsr_comm *comm)
{
  tsr_backend *be = tsr_comm_backend (comm);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 16);
  memset (x->data, 0, tsr_nbytes (x));
  tsr_context *gctx = tsr_context_new (true);
  tsr_tensor *y = tsr_all_reduce (gctx, comm, x);
  tsr_graph *g = tsr_graph_new (gctx);
  tsr_sched *s = tsr_sched_new (&be, 1);
  int st = s ? tsr_graph_build (g, y) : tsr_last_status ();
  if (st == TSR_OK)
    st = tsr_sched_alloc_graph (s, g);
  if (st == TSR_OK)
    st = tsr_sched_graph_compute (s, g);
  tsr_sched_free (s);
  tsr_context_free (gctx);
  tsr_context_free (ctx);
  return st;
}

int
main (int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "";
  tsr_comm *comm = tsr_comm_world ();
  if (!comm)
    {
      printf ("FAIL: tsr_comm_world: %s\n", tsr_last_error ());
      return 1;
    }
  int rank = tsr_comm_rank (comm), size = tsr_comm_size (comm);
  CHECK (tsr_comm_barrier (comm) == TSR_OK, "rank %d: %s: barrier", rank,
         mode);
  if (strcmp (mode, "timeout") == 0)
    {
      if (rank != 0)
        {
          /* Busy elsewhere (no MPI call: a collective of another kind
             could match rank 0's) until rank 0's abort ends the job.  */
          for (int i = 0; i < 100; i++)
            sleep (1);
          printf ("FAIL: rank %d: still running after rank 0's abort\n",
                  rank);
          return 1;
        }
      tsr_comm_set_timeout (comm, 2);
      double t0 = now ();
      int st = all_reduce (comm);
      double t = now () - t0;
      CHECK (st == TSR_ERR_TIMEOUT && strstr (tsr_last_error (), "rank 0")
             && strstr (tsr_last_error (), "no answer"),
             "rank 0: an all_reduce the other ranks do not join times out "
             "(%s)", tsr_last_error ());
      CHECK (t >= 1.9 && t < 10, "rank 0: after the 2 s timeout (%.1f s)",
             t);
      st = tsr_comm_barrier (comm);
      CHECK (st == TSR_ERR_STATE && strstr (tsr_last_error (), "unusable"),
             "rank 0: the communicator is unusable after a timeout (%s)",
             tsr_last_error ());
      fflush (stdout);
      tsr_comm_abort (comm, 5, "stopping the job after a timeout");
    }
  else if (strcmp (mode, "open") == 0)
    {
      if (rank == size - 1)
        {
          for (int i = 0; i < 100; i++)
            sleep (1);
          printf ("FAIL: rank %d: still running after rank 0's abort\n",
                  rank);
          return 1;
        }
      double t0 = now ();
      tsr_comm *second = tsr_comm_world ();
      double t = now () - t0;
      CHECK (!second && tsr_last_status () == TSR_ERR_TIMEOUT
             && strstr (tsr_last_error (), "no answer"),
             "rank %d: opening a communicator the last rank does not open "
             "times out (%s)", rank, second ? "opened" : tsr_last_error ());
      CHECK (t >= 1.9 && t < 10, "rank %d: after TESSERA_COMM_TIMEOUT=2 "
             "(%.1f s)", rank, t);
      if (rank != 0)
        {
          for (int i = 0; i < 100; i++)
            sleep (1);
          return 1;
        }
      fflush (stdout);
      tsr_comm_abort (comm, 6, "stopping the job after a timed-out open");
    }
  else if (strcmp (mode, "exit") == 0)
    {
      if (rank == size - 1)
        {
          printf ("PASS: rank %d: exits with status 3\n", rank);
          fflush (stdout);
          exit (3);
        }
      all_reduce (comm);
      printf ("FAIL: rank %d: still running after rank %d exited\n", rank,
              size - 1);
      return 1;
    }
  printf ("FAIL: unknown mode '%s'\n", mode);
  return 1;
}
