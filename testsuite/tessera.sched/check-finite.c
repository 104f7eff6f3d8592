/* Area: TESSERA_CHECK_FINITE in the scheduler (lib/backend/sched.c).
   Purpose: with the variable set, a compute stops at the first node
   whose f32 or f16 result holds NaN or an infinity, with
   TSR_ERR_NUMERIC and a message naming the node, its op, its inputs,
   the backend and the element; later nodes that inherit the NaN are
   not blamed.  An f16 copy that overflows is caught too.  A finite
   graph computes to the same results as without the check; without the
   variable the NaN goes through silently (what the check is for).  */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

struct net
{
  tsr_context *ctx;
  tsr_tensor *x, *root, *out;
  tsr_graph *g;
  tsr_buffer *buf;
  tsr_sched *s;
};

/* x (8 values) -> root = sqrt (x) -> twice = 2 root -> out = twice +
   twice; with HALF, out is also copied to f16 after scaling by SCALE.  */
static bool
build (struct net *n, tsr_backend *cpu, bool half, float scale)
{
  n->ctx = tsr_context_new (true);
  n->x = tsr_set_name (tsr_new_tensor_1d (n->ctx, TSR_TYPE_F32, 8), "x");
  tsr_set_input (n->x);
  n->root = tsr_set_name (tsr_sqrt (n->ctx, n->x), "root");
  tsr_tensor *twice = tsr_set_name (tsr_scale (n->ctx, n->root, 2.0f),
                                    "twice");
  n->out = tsr_set_name (tsr_add (n->ctx, twice, twice), "sum");
  if (half)
    n->out = tsr_set_name (tsr_cast (n->ctx, tsr_scale (n->ctx, n->out,
                                                         scale),
                                     TSR_TYPE_F16), "as_f16");
  tsr_set_output (n->out);
  n->g = tsr_graph_new (n->ctx);
  tsr_graph_build (n->g, n->out);
  n->s = tsr_sched_new (&cpu, 1);
  return n->s && tsr_sched_alloc_graph (n->s, n->g) == TSR_OK;
}

static void
drop (struct net *n)
{
  tsr_sched_free (n->s);
  tsr_context_free (n->ctx);
}

static int
run (struct net *n, const float *xv, float *out)
{
  tsr_tensor_set (n->x, xv, 0, 8 * sizeof *xv);
  int st = tsr_sched_graph_compute (n->s, n->g);
  if (st == TSR_OK && out && n->out->type == TSR_TYPE_F32)
    tsr_tensor_get (n->out, out, 0, 8 * sizeof *out);
  return st;
}

int
main (void)
{
  tsr_backend *cpu = tsr_backend_init_by_type (TSR_DEVICE_CPU, NULL);
  CHECK (cpu != NULL, "CPU backend");
  if (!cpu)
    return TSR_TEST_EXIT ();
  static const float good[8] = { 1, 4, 9, 16, 25, 36, 49, 64 };
  static const float bad[8] = { 1, 4, -1, 16, 25, 36, 49, 64 };
  float plain[8], checked[8];
  struct net n;

  unsetenv ("TESSERA_CHECK_FINITE");
  bool ok = build (&n, cpu, false, 1);
  CHECK (ok && run (&n, good, plain) == TSR_OK
         && run (&n, bad, checked) == TSR_OK && isnan (checked[2]),
         "without the variable a NaN goes through silently");
  drop (&n);

  setenv ("TESSERA_CHECK_FINITE", "1", 1);
  ok = build (&n, cpu, false, 1);
  CHECK (ok && run (&n, good, checked) == TSR_OK
         && memcmp (plain, checked, sizeof plain) == 0,
         "checked, a finite graph computes to the same results");
  int st = ok ? run (&n, bad, NULL) : -1;
  const char *e = tsr_last_error ();
  CHECK (st == TSR_ERR_NUMERIC && strstr (e, "'root'") && strstr (e, "sqrt")
         && strstr (e, "'x'") && strstr (e, "NaN") && strstr (e, "element 2")
         && !strstr (e, "'sum'"),
         "checked, the first node with a NaN is named with its op, input "
         "and element (%s)", e);
  drop (&n);

  static const float big[8] = { 1, 4, 9, 16, 25, 36, 49, 1e10f };
  ok = build (&n, cpu, true, 1e3f);
  st = ok ? run (&n, big, NULL) : -1;
  e = tsr_last_error ();
  CHECK (st == TSR_ERR_NUMERIC && strstr (e, "'as_f16'")
         && strstr (e, "infinity") && strstr (e, "element 7"),
         "checked, an f16 result that overflows is named (%s)", e);
  drop (&n);
  unsetenv ("TESSERA_CHECK_FINITE");
  CHECK (strcmp (tsr_status_string (TSR_ERR_NUMERIC), "non-finite result")
         == 0, "TSR_ERR_NUMERIC has its description");
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
