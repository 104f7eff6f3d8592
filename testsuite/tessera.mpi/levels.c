/* levels.c LEVEL - a program that starts MPI itself at thread level
 * LEVEL (single, funneled, serialized or multiple), then gives its
 * communicator to Tessera (tsr_comm_from_mpi).  Tessera computes
 * communication ops in whatever thread runs a graph, one thread at a
 * time, so it needs "serialized" or "multiple": below that the open is
 * refused with TSR_ERR_STATE and a message naming the level and the
 * call to make; at or above, it opens.  Built with MPI's flags; run as
 * a job of one rank, without a launcher.  */
#include <mpi.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

int
main (int argc, char **argv)
{
  static const struct
  {
    const char *name;
    int level;
  } levels[] = {
    { "single", MPI_THREAD_SINGLE }, { "funneled", MPI_THREAD_FUNNELED },
    { "serialized", MPI_THREAD_SERIALIZED },
    { "multiple", MPI_THREAD_MULTIPLE },
  };
  int want = -1, got = -1;
  for (size_t i = 0; argc > 1 && i < sizeof levels / sizeof *levels; i++)
    if (strcmp (argv[1], levels[i].name) == 0)
      want = levels[i].level;
  if (want < 0)
    {
      printf ("FAIL: usage: levels single|funneled|serialized|multiple\n");
      return 1;
    }
  if (MPI_Init_thread (&argc, &argv, want, &got) != MPI_SUCCESS)
    {
      printf ("FAIL: MPI_Init_thread (%s)\n", argv[1]);
      return 1;
    }
  MPI_Comm world = MPI_COMM_WORLD;
  tsr_comm *comm = tsr_comm_from_mpi (&world);
  if (got < MPI_THREAD_SERIALIZED)
    CHECK (!comm && tsr_last_status () == TSR_ERR_STATE
           && strstr (tsr_last_error (), "serialized")
           && strstr (tsr_last_error (), "MPI_Init_thread"),
           "%s (MPI gave %d): refused (%s)", argv[1], got,
           comm ? "opened" : tsr_last_error ());
  else
    CHECK (comm && tsr_comm_size (comm) == 1, "%s (MPI gave %d): opens "
           "(%s)", argv[1], got, comm ? tsr_comm_describe (comm)
                                      : tsr_last_error ());
  tsr_comm_free (comm);
  MPI_Finalize ();
  return TSR_TEST_EXIT ();
}
