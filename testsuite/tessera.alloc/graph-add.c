/* tsr_graph_add: a node and what it reads join the graph in that
   order, without being marked as an output (a later tsr_graph_build
   marks its own result only); a node already added is not added
   again; NULL arguments are refused, a NULL tensor keeping the error
   its builder recorded.  */
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

static int
position (tsr_graph *g, const tsr_tensor *t)
{
  for (int i = 0; i < tsr_graph_n_nodes (g); i++)
    if (tsr_graph_node (g, i) == t)
      return i;
  return -1;
}

int
main (void)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 8);
  tsr_tensor *b = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 8);
  tsr_tensor *c = tsr_add (ctx, a, b);
  tsr_tensor *d = tsr_mul (ctx, a, b);
  tsr_tensor *e = tsr_sub (ctx, c, d);
  tsr_graph *g = tsr_graph_new (ctx);

  /* Alone, building E visits C before D (its first source first).  */
  CHECK (tsr_graph_add (g, d) == TSR_OK, "tsr_graph_add (d): %s",
         tsr_last_error ());
  CHECK (tsr_graph_build (g, e) == TSR_OK, "tsr_graph_build (e): %s",
         tsr_last_error ());
  CHECK (tsr_graph_n_nodes (g) == 3, "three nodes (%d): D is not added "
         "twice", tsr_graph_n_nodes (g));
  CHECK (position (g, d) == 0 && position (g, c) == 1
         && position (g, e) == 2, "order D, C, E (%d, %d, %d)",
         position (g, d), position (g, c), position (g, e));
  CHECK (!(d->flags & TSR_FLAG_OUTPUT) && (e->flags & TSR_FLAG_OUTPUT),
         "D is not an output, E is (flags %d, %d)", d->flags, e->flags);
  CHECK (tsr_graph_add (NULL, d) == TSR_ERR_INVALID_ARG, "a NULL graph is "
         "refused: %s", tsr_last_error ());
  tsr_clear_error ();
  CHECK (tsr_graph_add (g, NULL) == TSR_ERR_INVALID_ARG, "a NULL tensor is "
         "refused: %s", tsr_last_error ());
  /* A builder's failure is what tsr_graph_add returns for its NULL.  */
  tsr_tensor *bad = tsr_add (ctx, a, tsr_new_tensor_1d (ctx, TSR_TYPE_F32,
                                                        3));
  CHECK (bad == NULL && tsr_graph_add (g, bad) == TSR_ERR_SHAPE,
         "a failed builder's status is kept: %s", tsr_last_error ());
  tsr_context_free (ctx);
  return TSR_TEST_EXIT ();
}
