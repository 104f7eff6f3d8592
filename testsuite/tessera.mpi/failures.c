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
 *                      300), and rank 0 stops the job with status 6.
 *   failures fail      the last rank says it failed (tsr_comm_fail)
 *                      while the others wait in an all_reduce: their
 *                      waits end within 5 s (not the 300 s timeout)
 *                      with TSR_ERR_PEER and its message, later ops
 *                      fail alike, and rank 0 stops the job with 7.
 *   failures load      every rank loads a model split over the ranks,
 *                      the last one from a file that is not there:
 *                      the others' loads (waiting in the check that
 *                      every rank has the same file) fail within 5 s
 *                      with TSR_ERR_PEER and the last rank's message,
 *                      with no call of the program in between; rank 0
 *                      stops the job with 8.
 *   failures decode    a model split over the ranks (tensor parallel)
 *                      with a NaN in token 5's embedding; the last rank
 *                      alone checks for non-finite results
 *                      (TESSERA_CHECK_FINITE): its decode fails at the
 *                      embedding, and the others' decodes (waiting in
 *                      their first all_reduce) fail within 5 s with its
 *                      message; rank 0 stops the job with 9.  */
#include "../tessera.model/model-test.h"   /* first: _POSIX_C_SOURCE */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <tessera.h>

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* Wait, without an MPI call (a collective of another kind could match
   another rank's), until rank 0's abort ends the job; a FAIL line and
   status 1 if it does not.  */
static int
await_abort (int rank)
{
  fflush (stdout);
  for (int i = 0; i < 100; i++)
    sleep (1);
  printf ("FAIL: rank %d: still running after rank 0's abort\n", rank);
  return 1;
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
        return await_abort (rank);
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
          return await_abort (rank);
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
          return await_abort (rank);
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
  else if (strcmp (mode, "fail") == 0)
    {
      if (rank == size - 1)
        {
          tsr_comm_fail (comm, "the last rank cannot go on (a test)");
          CHECK (tsr_comm_barrier (comm) == TSR_ERR_STATE
                 && strstr (tsr_last_error (), "this rank failed"),
                 "rank %d: its communicator is unusable after its failure "
                 "(%s)", rank, tsr_last_error ());
          /* Still running: the others must not wait for its exit.  */
          return await_abort (rank);
        }
      double t0 = now ();
      int st = all_reduce (comm);
      double t = now () - t0;
      char want[64];
      snprintf (want, sizeof want, "rank %d failed: the last rank cannot go "
                "on", size - 1);
      CHECK (st == TSR_ERR_PEER && strstr (tsr_last_error (), want),
             "rank %d: the all_reduce ends with the failing rank's message "
             "(%s)", rank, tsr_last_error ());
      CHECK (t < 5, "rank %d: within 5 s (%.2f s)", rank, t);
      st = tsr_comm_barrier (comm);
      CHECK (st == TSR_ERR_PEER && strstr (tsr_last_error (), want),
             "rank %d: later ops fail alike (%s)", rank, tsr_last_error ());
      fflush (stdout);
      if (rank == 0)
        tsr_comm_abort (comm, 7, "stopping the job after rank's failure");
      return await_abort (rank);
    }
  else if (strcmp (mode, "load") == 0)
    {
      char path[1024], missing[1100];
      int ok = mt_init ();
      if (rank == 0 && ok)
        {
          mt_path ("fail-load", path, sizeof path);
          ok = mt_synth ("--like=tiny --type=f32 --layers=2", path);
        }
      tsr_comm_broadcast (comm, path, sizeof path, 0);
      tsr_comm_broadcast (comm, &ok, sizeof ok, 0);
      CHECK (ok, "rank %d: the model file is written", rank);
      snprintf (missing, sizeof missing, "%s.missing", path);
      tsr_backend *cpu = tsr_backend_init_by_name ("CPU", NULL);
      struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1,
                                     .comm = comm,
                                     .split = TSR_SPLIT_TENSOR };
      double t0 = now ();
      tsr_model *m = tsr_model_load (rank == size - 1 ? missing : path, &mp);
      double t = now () - t0;
      if (rank == size - 1)
        {
          CHECK (!m && tsr_last_status () == TSR_ERR_NOT_FOUND,
                 "rank %d: the missing file is not loaded (%s)", rank,
                 tsr_last_error ());
          return await_abort (rank);
        }
      char want[64];
      snprintf (want, sizeof want, "rank %d failed: ", size - 1);
      CHECK (!m && tsr_last_status () == TSR_ERR_PEER
             && strstr (tsr_last_error (), want)
             && strstr (tsr_last_error (), ".missing"),
             "rank %d: the load ends with the last rank's message (%s)",
             rank, m ? "loaded" : tsr_last_error ());
      CHECK (t < 5, "rank %d: within 5 s (%.2f s)", rank, t);
      tsr_model_free (m);
      fflush (stdout);
      if (rank == 0)
        {
          /* The other ranks' loads end within 5 s (checked there).  */
          sleep (5);
          remove (path);
          tsr_comm_abort (comm, 8, "stopping the job after a failed load");
        }
      return await_abort (rank);
    }
  else if (strcmp (mode, "decode") == 0)
    {
      char path[1024];
      int ok = mt_init ();
      if (rank == 0 && ok)
        {
          mt_path ("fail-decode", path, sizeof path);
          ok = mt_synth ("--type=f32 --layers=2", path)
               && mt_nan_in_row (path, "token_embd.weight", 5);
        }
      tsr_comm_broadcast (comm, path, sizeof path, 0);
      tsr_comm_broadcast (comm, &ok, sizeof ok, 0);
      CHECK (ok, "rank %d: the model file is written, with a NaN", rank);
      if (rank == size - 1)
        setenv ("TESSERA_CHECK_FINITE", "1", 1);
      tsr_backend *cpu = tsr_backend_init_by_name ("CPU", NULL);
      struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1,
                                     .comm = comm,
                                     .split = TSR_SPLIT_TENSOR };
      tsr_model *m = tsr_model_load (path, &mp);
      tsr_session *s = m ? tsr_session_new (m, NULL) : NULL;
      CHECK (s != NULL, "rank %d: the split model and a session (%s)", rank,
             s ? "" : tsr_last_error ());
      int32_t tok[3] = { 1, 2, 5 };
      double t0 = now ();
      int st = s ? tsr_session_decode (s, tok, 3, NULL, false)
                 : tsr_last_status ();
      double t = now () - t0;
      if (rank == size - 1)
        {
          CHECK (st == TSR_ERR_NUMERIC, "rank %d: its decode finds the NaN "
                 "(%s)", rank, tsr_last_error ());
          return await_abort (rank);
        }
      char want[64];
      snprintf (want, sizeof want, "rank %d failed: ", size - 1);
      CHECK (st == TSR_ERR_PEER && strstr (tsr_last_error (), want)
             && strstr (tsr_last_error (), "check-finite"),
             "rank %d: the decode ends with the last rank's message (%s)",
             rank, tsr_last_error ());
      CHECK (t < 5, "rank %d: within 5 s (%.2f s)", rank, t);
      fflush (stdout);
      if (rank == 0)
        {
          sleep (2);
          remove (path);
          tsr_comm_abort (comm, 9, "stopping the job after a failed decode");
        }
      return await_abort (rank);
    }
  printf ("FAIL: unknown mode '%s'\n", mode);
  return 1;
}
