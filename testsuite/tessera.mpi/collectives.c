/* collectives.c - the communication ops across the ranks of an MPI job
 * (run by mpi.exp under mpirun with 2 and 3 ranks; argv[1] is the
 * number of ranks expected).
 *
 * Every value is exact in f32 (small multiples of 1/4), so the sums
 * the ranks compute are compared for equality with the ones this
 * program computes itself for every rank.  */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

#define R 7
#define C 5

static int rank, size;

/* Rank Q's operand.  */
static float
value (int q, int i)
{
  return (float) q * 1000.0f + (float) i * 0.25f + 1.0f;
}

static tsr_tensor *
input_2d (tsr_context *ctx, int64_t ne0, int64_t ne1, const char *name)
{
  tsr_tensor *t = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, ne0, ne1);
  tsr_set_input (tsr_set_name (t, name));
  return t;
}

static void
fill (float *x, int q, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    x[i] = value (q, (int) (i % 4093));
}

/* Build, place, allocate and compute the graph of OUTS on CPU + the
   communicator's backend; ST the status.  */
static tsr_sched *
run (tsr_backend *cpu, tsr_comm *comm, tsr_context *ctx, tsr_tensor **outs,
     int n_outs, tsr_tensor *x, const float *xd, int *st)
{
  tsr_backend *be[2] = { cpu, tsr_comm_backend (comm) };
  tsr_graph *g = tsr_graph_new (ctx);
  tsr_sched *s = tsr_sched_new (be, 2);
  *st = s ? TSR_OK : tsr_last_status ();
  for (int i = 0; i < n_outs && *st == TSR_OK; i++)
    *st = tsr_graph_build (g, outs[i]);
  if (*st == TSR_OK)
    *st = tsr_sched_alloc_graph (s, g);
  if (*st == TSR_OK && x)
    *st = tsr_tensor_set (x, xd, 0, tsr_nbytes (x));
  if (*st == TSR_OK)
    *st = tsr_sched_graph_compute (s, g);
  return s;
}

static void
test_all_reduce (tsr_backend *cpu, tsr_comm *comm)
{
  float xd[R * C], got[R * C];
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = input_2d (ctx, R, C, "x");
  tsr_tensor *y = tsr_all_reduce (ctx, comm, tsr_add (ctx, x, x));
  tsr_tensor *z = tsr_add (ctx, y, y);
  int st;
  struct tsr_comm_stats s0, s1;
  fill (xd, rank, R * C);
  tsr_comm_get_stats (comm, &s0);
  tsr_sched *s = run (cpu, comm, ctx, &z, 1, x, xd, &st);
  tsr_comm_get_stats (comm, &s1);
  CHECK (st == TSR_OK, "rank %d: all_reduce graph computes (%s)", rank,
         st == TSR_OK ? "ok" : tsr_last_error ());
  CHECK (s1.ops - s0.ops == 1 && s1.bytes - s0.bytes == sizeof xd
         && s1.seconds >= s0.seconds, "rank %d: the statistics count one "
         "operation of %zu bytes (%llu, %llu)", rank, sizeof xd,
         (unsigned long long) (s1.ops - s0.ops),
         (unsigned long long) (s1.bytes - s0.bytes));
  CHECK (tsr_sched_get_backend (s, y) == tsr_comm_backend (comm)
         && tsr_sched_get_backend (s, z) == cpu,
         "rank %d: all_reduce placed on the communicator's backend, the "
         "adds on the CPU", rank);
  int bad = 0;
  if (st == TSR_OK && tsr_tensor_get (z, got, 0, sizeof got) == TSR_OK)
    for (int i = 0; i < R * C; i++)
      {
        float want = 0;
        for (int q = 0; q < size; q++)
          want += 2 * value (q, i);
        bad += got[i] != 2 * want;
      }
  else
    bad = 1;
  CHECK (bad == 0, "rank %d: all_reduce of %d ranks: every sum exact (%d "
         "wrong)", rank, size, bad);
  tsr_sched_free (s);
  tsr_context_free (ctx);
}

static void
test_all_gather (tsr_backend *cpu, tsr_comm *comm)
{
  float xd[R * C];
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = input_2d (ctx, R, C, "x");
  tsr_tensor *y = tsr_all_gather (ctx, comm, x);
  int st;
  fill (xd, rank, R * C);
  tsr_sched *s = run (cpu, comm, ctx, &y, 1, x, xd, &st);
  CHECK (st == TSR_OK && y->ne[0] == R && y->ne[1] == C && y->ne[3] == size,
         "rank %d: all_gather computes [%d, %d, 1, %d] (%s)", rank, R, C,
         size, st == TSR_OK ? "ok" : tsr_last_error ());
  float *got = malloc (sizeof (float) * R * C * (size_t) size);
  int bad = 0;
  if (st == TSR_OK && got
      && tsr_tensor_get (y, got, 0, tsr_nbytes (y)) == TSR_OK)
    for (int q = 0; q < size; q++)
      for (int i = 0; i < R * C; i++)
        bad += got[q * R * C + i] != value (q, i);
  else
    bad = 1;
  CHECK (bad == 0, "rank %d: all_gather: every rank's part in its place "
         "(%d wrong)", rank, bad);
  free (got);
  tsr_sched_free (s);
  tsr_context_free (ctx);
}

/* A ring in one graph: each rank sends to the next and receives from
   the previous one; NE0 x NE1 large enough to need a rendezvous in
   MPI, which must not deadlock.  */
static void
test_ring (tsr_backend *cpu, tsr_comm *comm, int64_t ne0, int64_t ne1)
{
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  size_t n = (size_t) (ne0 * ne1);
  float *xd = malloc (n * sizeof *xd), *got = malloc (n * sizeof *got);
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = input_2d (ctx, ne0, ne1, "x");
  int64_t ne[2] = { ne0, ne1 };
  tsr_tensor *outs[2];
  outs[0] = tsr_send (ctx, comm, tsr_add (ctx, x, x), next, 7);
  tsr_tensor *r = tsr_recv (ctx, comm, TSR_TYPE_F32, 2, ne, prev, 7);
  outs[1] = tsr_add (ctx, r, r);
  int st, bad = 0;
  fill (xd, rank, (int64_t) n);
  tsr_sched *s = run (cpu, comm, ctx, outs, 2, x, xd, &st);
  CHECK (st == TSR_OK, "rank %d: ring of send and recv, %zu bytes, in one "
         "graph (%s)", rank, n * 4, st == TSR_OK ? "ok" : tsr_last_error ());
  if (st == TSR_OK && tsr_tensor_get (outs[1], got, 0, n * 4) == TSR_OK)
    for (size_t i = 0; i < n; i++)
      bad += got[i] != 4 * value (prev, (int) (i % 4093));
  else
    bad = 1;
  int32_t sent = -1;
  if (st == TSR_OK)
    tsr_tensor_get (outs[0], &sent, 0, sizeof sent);
  CHECK (bad == 0 && sent == next, "rank %d: ring of %zu bytes: rank %d's "
         "data received, send's result names rank %d (%d wrong)", rank,
         n * 4, prev, next, bad);
  tsr_sched_free (s);
  tsr_context_free (ctx);
  free (xd);
  free (got);
}

/* A recv whose shape disagrees with what the peer sends.  */
static void
test_shape_mismatch (tsr_backend *cpu, tsr_comm *comm)
{
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  float xd[R * C];
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = input_2d (ctx, R, C, "x");
  int64_t ne[1] = { R * C + 4 };        /* more than is sent */
  tsr_tensor *outs[2] = {
    tsr_send (ctx, comm, x, next, 9),
    tsr_recv (ctx, comm, TSR_TYPE_F32, 1, ne, prev, 9) };
  int st;
  fill (xd, rank, R * C);
  tsr_sched *s = run (cpu, comm, ctx, outs, 2, x, xd, &st);
  CHECK (st == TSR_ERR_SHAPE && strstr (tsr_last_error (), "sent"),
         "rank %d: a recv of another shape than sent is refused (%s)", rank,
         tsr_last_error ());
  tsr_sched_free (s);
  tsr_context_free (ctx);
}

static void
test_check_same (tsr_comm *comm)
{
  char same[64] = "the same model file", other[64];
  CHECK (tsr_comm_check_same (comm, same, sizeof same, "the model")
         == TSR_OK, "rank %d: check_same passes on equal data", rank);
  memcpy (other, same, sizeof other);   /* every byte: all are hashed */
  if (rank == size - 1)
    other[0] = 'T';
  int st = tsr_comm_check_same (comm, other, sizeof other, "the model");
  char want[64];
  snprintf (want, sizeof want, "rank %d", size - 1);
  CHECK (st == TSR_ERR_STATE && strstr (tsr_last_error (), "the model")
         && strstr (tsr_last_error (), want),
         "rank %d: check_same fails on every rank, naming rank %d (%s)",
         rank, size - 1, tsr_last_error ());
  int v = rank == 0 ? 4242 : -1;
  CHECK (tsr_comm_broadcast (comm, &v, sizeof v, 0) == TSR_OK && v == 4242,
         "rank %d: broadcast from rank 0", rank);
  CHECK (tsr_comm_broadcast (comm, &v, sizeof v, size) == TSR_ERR_INVALID_ARG,
         "rank %d: broadcast from rank %d is refused", rank, size);
}

/* A node of one communicator computed by another's backend.  */
static void
test_other_comm (tsr_backend *cpu, tsr_comm *comm)
{
  tsr_comm *other = tsr_comm_world ();
  CHECK (other != NULL, "rank %d: a second communicator opens", rank);
  if (!other)
    return;
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = input_2d (ctx, R, C, "x");
  tsr_tensor *y = tsr_all_reduce (ctx, other, x);
  float xd[R * C];
  int st;
  fill (xd, rank, R * C);
  tsr_sched *s = run (cpu, comm, ctx, &y, 1, x, xd, &st);
  CHECK (st == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "belongs to communicator"),
         "rank %d: an op of another communicator is refused (%s)", rank,
         tsr_last_error ());
  tsr_sched_free (s);
  tsr_context_free (ctx);
  tsr_comm_free (other);
}

/* Two threads, each with its own communicator, all_reduce at once
   (the module serializes the MPI calls).  */
struct thread_job
{
  tsr_comm *comm;
  int bad, st;
};

static void *
thread_main (void *arg)
{
  struct thread_job *j = arg;
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 1000);
  tsr_set_input (x);
  tsr_tensor *y = tsr_all_reduce (ctx, j->comm, x);
  tsr_backend *be = tsr_comm_backend (j->comm);
  tsr_graph *g = tsr_graph_new (ctx);
  tsr_sched *s = tsr_sched_new (&be, 1);
  float xd[1000], yd[1000];
  j->st = tsr_graph_build (g, y);
  if (j->st == TSR_OK)
    j->st = tsr_sched_alloc_graph (s, g);
  for (int it = 0; it < 50 && j->st == TSR_OK; it++)
    {
      for (int i = 0; i < 1000; i++)
        xd[i] = (float) (rank + it + i % 7);
      j->st = tsr_tensor_set (x, xd, 0, sizeof xd);
      if (j->st == TSR_OK)
        j->st = tsr_sched_graph_compute (s, g);
      if (j->st == TSR_OK)
        j->st = tsr_tensor_get (y, yd, 0, sizeof yd);
      for (int i = 0; i < 1000 && j->st == TSR_OK; i++)
        j->bad += yd[i] != (float) (size * (it + i % 7)
                                    + size * (size - 1) / 2);
    }
  tsr_sched_free (s);
  tsr_context_free (ctx);
  return NULL;
}

static void
test_threads (void)
{
  struct thread_job jobs[2] = { { tsr_comm_world (), 0, 0 },
                                { tsr_comm_world (), 0, 0 } };
  pthread_t t[2];
  bool ok = jobs[0].comm && jobs[1].comm;
  for (int k = 0; k < 2 && ok; k++)
    ok = pthread_create (&t[k], NULL, thread_main, &jobs[k]) == 0;
  for (int k = 0; k < 2 && ok; k++)
    pthread_join (t[k], NULL);
  CHECK (ok && jobs[0].st == TSR_OK && jobs[1].st == TSR_OK
         && jobs[0].bad + jobs[1].bad == 0,
         "rank %d: two threads all_reduce at once on two communicators "
         "(%d, %d wrong)", rank, jobs[0].bad, jobs[1].bad);
  tsr_comm_free (jobs[0].comm);
  tsr_comm_free (jobs[1].comm);
}

static void
test_builders (tsr_comm *comm)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = input_2d (ctx, R, C, "x");
  tsr_tensor *h = tsr_new_tensor_2d (ctx, TSR_TYPE_F16, R + 1, C);
  int64_t ne[2] = { R, C };
  CHECK (!tsr_all_reduce (ctx, comm, h)
         && tsr_last_status () == TSR_ERR_TYPE,
         "rank %d: all_reduce of f16 is refused", rank);
  CHECK (!tsr_all_reduce (ctx, comm, tsr_transpose (ctx, x))
         && tsr_last_status () == TSR_ERR_SHAPE,
         "rank %d: all_reduce of a transposed view is refused", rank);
  CHECK (!tsr_send (ctx, comm, x, size, 0)
         && tsr_last_status () == TSR_ERR_INVALID_ARG
         && !tsr_send (ctx, comm, x, rank, 0)
         && !tsr_send (ctx, comm, x, (rank + 1) % size, 40000)
         && !tsr_recv (ctx, comm, TSR_TYPE_F32, 5, ne, (rank + 1) % size, 0)
         && !tsr_recv (ctx, comm, TSR_TYPE_F32, 2, ne, -1, 0),
         "rank %d: send/recv to a rank out of range, to itself, with a "
         "tag out of range or 5 dimensions are refused", rank);
  tsr_tensor *g = tsr_all_gather (ctx, comm, x);
  CHECK (g && tsr_node_validate (g) == TSR_OK,
         "rank %d: a built all_gather validates", rank);
  if (g)
    {
      g->op_params[1] = size + 1;
      CHECK (tsr_node_validate (g) == TSR_ERR_SHAPE,
             "rank %d: an all_gather whose result disagrees with its rank "
             "count is refused", rank);
    }
  tsr_context_free (ctx);
}

int
main (int argc, char **argv)
{
  tsr_comm *comm = tsr_comm_world ();
  if (!comm)
    {
      printf ("FAIL: tsr_comm_world: %s\n", tsr_last_error ());
      return 1;
    }
  rank = tsr_comm_rank (comm);
  size = tsr_comm_size (comm);
  int want = argc > 1 ? atoi (argv[1]) : 0;
  CHECK (size == want && rank >= 0 && rank < size, "rank %d: %d ranks, %d "
         "expected (%s)", rank, size, want, tsr_comm_describe (comm));
  tsr_backend *cpu = tsr_backend_init_by_type (TSR_DEVICE_CPU, "threads=1");
  if (!cpu || size < 2)
    {
      printf ("FAIL: rank %d: %s\n", rank,
              cpu ? "needs 2 ranks" : tsr_last_error ());
      return 1;
    }
  CHECK (tsr_device_get_type (tsr_backend_device (tsr_comm_backend (comm)))
         == TSR_DEVICE_COMM, "rank %d: the communicator's backend is on a "
         "COMM device", rank);
  test_builders (comm);
  test_all_reduce (cpu, comm);
  test_all_gather (cpu, comm);
  test_ring (cpu, comm, R, C);
  test_ring (cpu, comm, 1024, 300);
  test_shape_mismatch (cpu, comm);
  test_check_same (comm);
  test_other_comm (cpu, comm);
  test_threads ();
  tsr_backend_free (cpu);
  tsr_comm_free (comm);
  return TSR_TEST_EXIT ();
}
