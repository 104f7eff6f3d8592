/* Area: graph allocator and buffers (tessera/alloc.h, lib/backend/buffer.c).
   Purpose: a tensor placed by a graph allocator that has since been
   freed points into freed memory; computing its graph, or handing the
   graph to a second allocator (which would take the tensors as placed),
   is refused with TSR_ERR_STATE and a message saying the buffer has
   been freed, instead of reading and writing freed memory.  A tensor
   in a live buffer is still computed (exact known values).
   Limitations: the check is on the tensor's buffer; a tensor whose
   memory was given by the user (no buffer) is not tracked.  */
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

static bool
says_freed (void)
{
  return strstr (tsr_last_error (), "freed") != NULL;
}

int
main (void)
{
  tsr_backend *be = tsr_backend_init_by_name ("cpu", NULL);
  if (!be)
    {
      CHECK (0, "cpu backend: %s", tsr_last_error ());
      return TSR_TEST_EXIT ();
    }
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_set_name (tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 4),
                                "a");
  tsr_tensor *b = tsr_set_name (tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 4),
                                "b");
  tsr_set_input (a);
  tsr_set_input (b);
  tsr_tensor *c = tsr_set_name (tsr_add (ctx, a, b), "c");
  tsr_graph *g = tsr_graph_new (ctx);
  CHECK (tsr_graph_build (g, c) == TSR_OK, "graph builds");

  tsr_gallocr *ga = tsr_gallocr_new (tsr_backend_buffer_type (be));
  CHECK (tsr_gallocr_alloc_graph (ga, g) == TSR_OK, "first allocator "
         "places the graph");
  const float av[4] = { 1, 2, 3, 4 }, bv[4] = { 10, 20, 30, 40 };
  float cv[4] = { 0 };
  tsr_tensor_set (a, av, 0, sizeof av);
  tsr_tensor_set (b, bv, 0, sizeof bv);
  int st = tsr_backend_graph_compute (be, g);
  tsr_tensor_get (c, cv, 0, sizeof cv);
  CHECK (st == TSR_OK && cv[0] == 11 && cv[3] == 44, "computed while its "
         "buffer lives (%s)", st == TSR_OK ? "" : tsr_last_error ());

  tsr_gallocr_free (ga);
  st = tsr_backend_graph_compute (be, g);
  CHECK (st == TSR_ERR_STATE && says_freed (), "compute after the "
         "allocator is freed: refused (%d: %s)", st, tsr_last_error ());

  tsr_gallocr *gb = tsr_gallocr_new (tsr_backend_buffer_type (be));
  st = tsr_gallocr_alloc_graph (gb, g);
  CHECK (st == TSR_ERR_STATE && says_freed (), "a second allocator does "
         "not take the tensors as placed (%d: %s)", st, tsr_last_error ());
  tsr_gallocr_free (gb);

  /* Tensors made anew in a new context are placed and computed.  */
  tsr_context_free (ctx);
  ctx = tsr_context_new (true);
  a = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 4);
  b = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 4);
  c = tsr_add (ctx, a, b);
  g = tsr_graph_new (ctx);
  tsr_graph_build (g, c);
  gb = tsr_gallocr_new (tsr_backend_buffer_type (be));
  st = tsr_gallocr_alloc_graph (gb, g);
  if (st == TSR_OK)
    {
      tsr_tensor_set (a, bv, 0, sizeof bv);
      tsr_tensor_set (b, bv, 0, sizeof bv);
      st = tsr_backend_graph_compute (be, g);
      tsr_tensor_get (c, cv, 0, sizeof cv);
    }
  CHECK (st == TSR_OK && cv[0] == 20 && cv[3] == 80, "a new graph in a new "
         "allocator computes (%s)", st == TSR_OK ? "" : tsr_last_error ());
  tsr_gallocr_free (gb);
  tsr_context_free (ctx);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
