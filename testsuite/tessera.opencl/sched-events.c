/* The scheduler between two backends with events: two backends of one
   OpenCL device, nodes forced to alternate between them, share the
   device's memory, so nothing is copied, and each split waits for the
   one before it with an event in its own queue: no host
   synchronization between splits (the counters say 0 host waits, 3 in
   a queue).  With the CPU behind them, a split that reads OpenCL's
   result waits on the host, once.  Results equal the CPU alone exactly
   for f32 add and mul; with a silu at the end, within 1e-6 of 1 +
   |value| (the devices' exp may round differently).  UNSUPPORTED
   without an OpenCL device.  */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "ocl-test.h"

enum { N = 4096 };

static float xv[N], yv[N];

struct net
{
  tsr_context *ctx;
  tsr_tensor *x, *y, *a, *b, *c, *d, *e;
  tsr_graph *g;
};

/* a = x + y; b = a * a; c = b + x; d = c * y; e = silu (d).  */
static void
build (struct net *n, bool with_silu)
{
  tsr_context *c = n->ctx = tsr_context_new (true);
  n->x = tsr_new_tensor_1d (c, TSR_TYPE_F32, N);
  n->y = tsr_new_tensor_1d (c, TSR_TYPE_F32, N);
  tsr_set_input (n->x);
  tsr_set_input (n->y);
  n->a = tsr_add (c, n->x, n->y);
  n->b = tsr_mul (c, n->a, n->a);
  n->c = tsr_add (c, n->b, n->x);
  n->d = tsr_mul (c, n->c, n->y);
  n->e = with_silu ? tsr_silu (c, n->d) : n->d;
  n->g = tsr_graph_new (c);
  tsr_graph_build (n->g, n->e);
}

/* GOT equals WANT: exactly, or within 1e-6 of 1 + |value| (LOOSE).  */
static int
agree (const float *got, const float *want, bool loose)
{
  for (int i = 0; i < N; i++)
    if (loose ? !(fabsf (got[i] - want[i]) <= 1e-6f * (1 + fabsf (want[i])))
              : got[i] != want[i])
      return 0;
  return 1;
}

static int
run (tsr_sched *s, struct net *n, float *out)
{
  return tsr_sched_alloc_graph (s, n->g) == TSR_OK
         && tsr_tensor_set (n->x, xv, 0, sizeof xv) == TSR_OK
         && tsr_tensor_set (n->y, yv, 0, sizeof yv) == TSR_OK
         && tsr_sched_graph_compute (s, n->g) == TSR_OK
         && tsr_tensor_get (n->e, out, 0, sizeof xv) == TSR_OK;
}

int
main (void)
{
  tsr_device *dev = ocl_test_device ();
  if (!dev)
    return TSR_TEST_EXIT ();
  tsr_test_seed (5);
  for (int i = 0; i < N; i++)
    {
      xv[i] = tsr_test_uniform (-1, 1);
      yv[i] = tsr_test_uniform (-1, 1);
    }
  tsr_backend *q1 = tsr_device_init (dev, NULL);
  tsr_backend *q2 = tsr_device_init (dev, NULL);
  tsr_backend *cpu = tsr_backend_init_by_type (TSR_DEVICE_CPU, NULL);
  static float want[N], got[N];
  struct tsr_sched_stats st;
  struct net n;
  CHECK (q1 && q2 && cpu, "two OpenCL backends and the cpu: %s",
         tsr_last_error ());
  if (!q1 || !q2 || !cpu)
    return TSR_TEST_EXIT ();

  for (int with_silu = 0; with_silu < 2; with_silu++)
    {
      const char *what = with_silu ? "with silu" : "add and mul";
      /* The reference, on a graph of its own (a graph's memory goes
         with the scheduler that allocated it).  */
      struct net r;
      build (&r, with_silu);
      tsr_sched *ref = tsr_sched_new (&cpu, 1);
      CHECK (run (ref, &r, want), "cpu alone: %s", tsr_last_error ());

      build (&n, with_silu);
      tsr_backend *three[3] = { q1, q2, cpu };
      tsr_sched *s = tsr_sched_new (three, 3);
      tsr_sched_set_backend (s, n.a, q1);
      tsr_sched_set_backend (s, n.b, q2);
      tsr_sched_set_backend (s, n.c, q1);
      tsr_sched_set_backend (s, n.d, q2);
      int ok = run (s, &n, got);
      tsr_sched_get_stats (s, &st);
      CHECK (ok && agree (got, want, with_silu), "%s: alternating "
             "between two queues equals the cpu: %s", what,
             tsr_last_error ());
      CHECK (st.n_copies == 0, "%s: one device's memory: no copies (%d)",
             what, st.n_copies);
      /* silu: OpenCL runs it, so it follows d onto q2 (no copy that
         way); nothing runs on the cpu.  */
      CHECK (st.n_splits == 4 && st.n_host_waits == 0
             && st.n_device_waits == 3
             && (!with_silu || tsr_sched_get_backend (s, n.e) == q2),
             "%s: 4 splits, each waiting for the one before in its own "
             "queue: %d host waits, %d queued waits (%d splits)", what,
             st.n_host_waits, st.n_device_waits, st.n_splits);
      /* Again with new inputs: the events are recorded anew.  */
      for (int i = 0; i < N; i++)
        xv[i] = -xv[i];
      ok = run (s, &n, got) && run (ref, &r, want);
      CHECK (ok && agree (got, want, with_silu), "%s: a second "
             "compute with new inputs equals the cpu", what);
      tsr_sched_free (s);
      tsr_context_free (n.ctx);

      /* [OpenCL, cpu] with d forced onto the cpu: the cpu's split reads
         c, computed by OpenCL: one host wait, before it.  */
      build (&n, with_silu);
      tsr_backend *two[2] = { q1, cpu };
      s = tsr_sched_new (two, 2);
      tsr_sched_set_backend (s, n.d, cpu);
      ok = run (s, &n, got);
      tsr_sched_get_stats (s, &st);
      CHECK (ok && agree (got, want, with_silu)
             && st.n_host_waits == 1 && st.n_device_waits == 0,
             "%s: OpenCL then the cpu: one host wait (%d, %d queued, %d "
             "splits)", what, st.n_host_waits, st.n_device_waits,
             st.n_splits);
      tsr_sched_free (s);
      tsr_context_free (n.ctx);
      tsr_sched_free (ref);
      tsr_context_free (r.ctx);
    }
  tsr_backend_free (q1);
  tsr_backend_free (q2);
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
