/* single.c - a communicator without a launcher (argv[1]: "yes" where
 * configure built the mpi module, "no" where it did not).
 *
 * With the module, the program is a job of one rank: all_reduce and
 * all_gather give back the operand, and send/recv to itself are
 * refused.  Without it, tsr_comm_world fails with TSR_ERR_NOT_FOUND
 * and a message naming the module and how to get it, and the backend
 * scans never load it (tessera-comm-* are loaded on demand only).  */
#include <string.h>
#include <tessera.h>
#include <tessera/module.h>     /* tsr_host_buffer_type */
#include "tsr-test.h"

int
main (int argc, char **argv)
{
  bool have = argc > 1 && strcmp (argv[1], "yes") == 0;
  /* The registry's scans list no COMM device: the module is loaded on
     demand only.  */
  CHECK (tsr_device_by_type (TSR_DEVICE_COMM) == NULL,
         "the backend scans do not load the mpi module");
  tsr_comm *comm = tsr_comm_world ();
  if (!have)
    {
      CHECK (!comm && tsr_last_status () == TSR_ERR_NOT_FOUND
             && strstr (tsr_last_error (), "tessera-comm-mpi")
             && strstr (tsr_last_error (), "--with-mpi"),
             "without the mpi module, tsr_comm_world says so (%s)",
             tsr_last_error ());
      tsr_context *c0 = tsr_context_new (true);
      CHECK (!tsr_all_reduce (c0, NULL, NULL),
             "all_reduce without a communicator is refused");
      tsr_context_free (c0);
      return TSR_TEST_EXIT ();
    }
  CHECK (comm != NULL, "tsr_comm_world without a launcher (%s)",
         comm ? tsr_comm_describe (comm) : tsr_last_error ());
  if (!comm)
    return 1;
  CHECK (tsr_comm_rank (comm) == 0 && tsr_comm_size (comm) == 1,
         "a job of one rank");
  tsr_backend *best = tsr_backend_init_best ();
  CHECK (tsr_device_by_type (TSR_DEVICE_COMM) != NULL && best
         && tsr_device_get_type (tsr_backend_device (best))
            != TSR_DEVICE_COMM,
         "the MPI device is listed once opened, and never the best device");
  tsr_backend_free (best);
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 6, 4);
  tsr_set_input (x);
  tsr_tensor *y = tsr_all_reduce (ctx, comm, x);
  tsr_tensor *z = tsr_all_gather (ctx, comm, x);
  tsr_backend *be = tsr_comm_backend (comm);
  tsr_graph *g = tsr_graph_new (ctx);
  tsr_sched *s = tsr_sched_new (&be, 1);
  float xd[24], yd[24], zd[24];
  for (int i = 0; i < 24; i++)
    xd[i] = (float) i - 7.5f;
  int st = tsr_graph_build (g, y);
  if (st == TSR_OK)
    st = tsr_graph_build (g, z);
  if (st == TSR_OK)
    st = tsr_sched_alloc_graph (s, g);
  if (st == TSR_OK)
    st = tsr_tensor_set (x, xd, 0, sizeof xd);
  if (st == TSR_OK)
    st = tsr_sched_graph_compute (s, g);
  CHECK (st == TSR_OK && tsr_tensor_get (y, yd, 0, sizeof yd) == TSR_OK
         && tsr_tensor_get (z, zd, 0, sizeof zd) == TSR_OK
         && memcmp (xd, yd, sizeof xd) == 0 && memcmp (xd, zd, sizeof xd) == 0,
         "all_reduce and all_gather of one rank give the operand (%s)",
         st == TSR_OK ? "ok" : tsr_last_error ());
  CHECK (!tsr_send (ctx, comm, x, 0, 1) && !tsr_send (ctx, comm, x, 1, 1),
         "send to itself or to a rank out of range is refused");
  CHECK (tsr_device_init (tsr_backend_device (be), NULL) == NULL
         && strstr (tsr_last_error (), "tsr_comm_world"),
         "the MPI device makes backends only with communicators");
  /* The host memory of the communication ops.  */
  tsr_buffer_type *host = tsr_host_buffer_type ();
  CHECK (tsr_comm_set_host_buffer_type (comm, host) == TSR_OK
         && tsr_backend_buffer_type (be) == host
         && tsr_comm_set_host_buffer_type (comm, NULL) == TSR_OK
         && tsr_backend_buffer_type (be) == host
         && tsr_comm_set_host_buffer_type (NULL, host) == TSR_ERR_INVALID_ARG,
         "the communication ops' host memory can be chosen");
  tsr_sched_free (s);
  tsr_context_free (ctx);
  tsr_comm_free (comm);
  return TSR_TEST_EXIT ();
}
