/* bench-comm.c - tessera-bench -o all_reduce: the latency and bandwidth
 * of all_reduce per message size, between the ranks of an MPI job
 * (mpirun -np N tessera-bench -o all_reduce).
 *
 * Each size runs through the same path as a model's all_reduce: a
 * graph of one all_reduce node on host memory, computed by a scheduler
 * over the communicator's backend.  A timed run is a batch of
 * back-to-back all_reduces (enough for about 2 ms, at least one) after
 * a barrier; the figure is the median of the runs, per all_reduce.
 * Rank 0 prints: bytes, microseconds, the algorithm bandwidth
 * (bytes / time) and the bus bandwidth (that times 2 (N - 1) / N, the
 * bytes each rank's link carries in a ring: comparable across N).  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tool-util.h"

/* Median microseconds of one all_reduce of N floats; -1 on failure
   (message printed).  */
static double
time_size (tsr_comm *comm, int64_t n, int repeat, const char *program)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, n);
  tsr_set_input (x);
  tsr_tensor *y = tsr_all_reduce (ctx, comm, x);
  tsr_backend *be = tsr_comm_backend (comm);
  tsr_graph *g = tsr_graph_new (ctx);
  tsr_sched *s = tsr_sched_new (&be, 1);
  int st = s && y ? tsr_graph_build (g, y) : (int) tsr_last_status ();
  if (st == TSR_OK)
    st = tsr_sched_alloc_graph (s, g);
  if (st == TSR_OK)
    tsr_buffer_clear (x->buffer, 0);
  double *us = calloc ((size_t) repeat, sizeof *us);
  /* A batch of about 2 ms: the first all_reduce says how long one is
     (rank 0's count for every rank).  */
  double t0 = tt_now_us ();
  if (st == TSR_OK)
    st = tsr_sched_graph_compute (s, g);
  double one = tt_now_us () - t0;
  int batch = one > 0 ? (int) (2000 / one) : 1;
  batch = batch < 1 ? 1 : batch > 10000 ? 10000 : batch;
  if (st == TSR_OK)
    st = tsr_comm_broadcast (comm, &batch, sizeof batch, 0);
  for (int r = 0; r < repeat && st == TSR_OK && us; r++)
    {
      st = tsr_comm_barrier (comm);
      t0 = tt_now_us ();
      for (int k = 0; k < batch && st == TSR_OK; k++)
        st = tsr_sched_graph_compute (s, g);
      us[r] = (tt_now_us () - t0) / batch;
    }
  double med = -1;
  if (st == TSR_OK && us)
    {
      med = tt_median (us, repeat);
    }
  else
    fprintf (stderr, "%s: all_reduce of %lld bytes: %s\n", program,
             (long long) (4 * n), tsr_last_error ());
  free (us);
  tsr_sched_free (s);
  tsr_context_free (ctx);
  return med;
}

int
bench_comm (const int64_t *sizes, int n_sizes, int repeat,
            enum bench_format format, const char *program)
{
  static const int64_t defaults[] = { 1, 16, 256, 2048, 8192, 65536,
                                      1 << 20, 1 << 24 };
  tsr_comm *comm = tsr_comm_world ();
  if (!comm)
    {
      fprintf (stderr, "%s: all_reduce: %s\n", program, tsr_last_error ());
      return 1;
    }
  int rank = tsr_comm_rank (comm), size = tsr_comm_size (comm);
  if (n_sizes == 0)
    {
      sizes = defaults;
      n_sizes = (int) (sizeof defaults / sizeof defaults[0]);
    }
  repeat = repeat > 0 ? repeat : 9;
  FILE *out = rank == 0 ? stdout : NULL;
  if (out && format == BENCH_JSON)
    fprintf (out, "{\n  \"communicator\": \"%s\",\n  \"ranks\": %d,\n"
             "  \"all_reduce\": [", tsr_comm_describe (comm), size);
  else if (out && format == BENCH_CSV)
    fprintf (out, "ranks,bytes,us,algbw_gb_s,busbw_gb_s\n");
  else if (out)
    fprintf (out, "all_reduce (f32 sum) over %d ranks: %s\n%12s %12s %12s "
             "%12s\n", size, tsr_comm_describe (comm), "bytes", "us",
             "algbw GB/s", "busbw GB/s");
  int status = 0;
  for (int i = 0; i < n_sizes && status == 0; i++)
    {
      double us = time_size (comm, sizes[i], repeat, program);
      if (us < 0)
        {
          status = 1;
          break;
        }
      double bytes = 4.0 * (double) sizes[i];
      double alg = bytes / us / 1e3;
      double bus = size > 1 ? alg * 2.0 * (size - 1) / size : alg;
      if (!out)
        continue;
      if (format == BENCH_JSON)
        fprintf (out, "%s\n    { \"bytes\": %.0f, \"us\": %.2f, "
                 "\"algbw_gb_s\": %.4f, \"busbw_gb_s\": %.4f }",
                 i ? "," : "", bytes, us, alg, bus);
      else if (format == BENCH_CSV)
        fprintf (out, "%d,%.0f,%.2f,%.4f,%.4f\n", size, bytes, us, alg, bus);
      else
        fprintf (out, "%12.0f %12.2f %12.4f %12.4f\n", bytes, us, alg, bus);
    }
  if (out && format == BENCH_JSON)
    fprintf (out, "\n  ]\n}\n");
  if (status && size > 1)
    tsr_comm_abort (comm, 1, NULL);
  tsr_comm_free (comm);
  return status;
}
