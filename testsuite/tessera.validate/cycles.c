/* Hand-built graphs with a cycle (a node that depends on itself,
   directly or through others) are refused by tsr_graph_build, naming
   the nodes; before, the build accepted them and compute read results
   before they existed (issue 17, hand-built graphs).  Deep acyclic
   graphs and shared operands still build.  */
#include <stdio.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

int
main (void)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 4);
  tsr_set_name (a, "a");

  /* b = a + a; c = b + a; then b's second operand is made c.  */
  tsr_tensor *b = tsr_add (ctx, a, a), *c = tsr_add (ctx, b, a);
  tsr_set_name (b, "b");
  tsr_set_name (c, "c");
  b->src[1] = c;
  tsr_graph *g = tsr_graph_new (ctx);
  int st = tsr_graph_build (g, c);
  CHECK (st == TSR_ERR_INVALID_ARG && strstr (tsr_last_error (), "cycle")
         && strstr (tsr_last_error (), "'b'")
         && strstr (tsr_last_error (), "'c'"),
         "a two-node cycle is refused, naming both (%s)", tsr_last_error ());

  /* A node that reads itself.  */
  tsr_tensor *d = tsr_scale (ctx, a, 2.0f);
  tsr_set_name (d, "d");
  d->src[0] = d;
  g = tsr_graph_new (ctx);
  CHECK (tsr_graph_build (g, d) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "cycle"),
         "a node reading itself is refused (%s)", tsr_last_error ());

  /* Shared operands (a diamond) and a deep chain are fine.  */
  tsr_tensor *x = tsr_add (ctx, a, a), *y = tsr_mul (ctx, x, x);
  tsr_tensor *z = tsr_add (ctx, y, x);
  g = tsr_graph_new (ctx);
  st = tsr_graph_build (g, z);
  CHECK (st == TSR_OK && tsr_graph_n_nodes (g) == 3,
         "a diamond builds (%d nodes)", tsr_graph_n_nodes (g));
  tsr_tensor *t = a;
  for (int i = 0; i < 100000; i++)
    t = tsr_scale (ctx, t, 1.0f);
  g = tsr_graph_new (ctx);
  st = tsr_graph_build (g, t);
  CHECK (st == TSR_OK && tsr_graph_n_nodes (g) == 100000,
         "a chain of 100000 nodes builds (%d)", tsr_graph_n_nodes (g));
  tsr_context_free (ctx);
  return TSR_TEST_EXIT ();
}
