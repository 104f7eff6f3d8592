/* First use of the registry from many threads at once: one
   initialization, every thread sees the same registry.  */
#include <pthread.h>
#include <tessera.h>
#include "tsr-test.h"

#define N_THREADS 8

static pthread_barrier_t start;

static void *
worker (void *arg)
{
  size_t *out = arg;
  pthread_barrier_wait (&start);
  out[0] = tsr_device_count ();
  out[1] = (size_t) tsr_reg_by_name ("cpu");
  return NULL;
}

int
main (void)
{
  pthread_t th[N_THREADS];
  size_t res[N_THREADS][2];
  pthread_barrier_init (&start, NULL, N_THREADS);
  for (int i = 0; i < N_THREADS; i++)
    pthread_create (&th[i], NULL, worker, res[i]);
  for (int i = 0; i < N_THREADS; i++)
    pthread_join (th[i], NULL);
  pthread_barrier_destroy (&start);
  int same = 1;
  for (int i = 1; i < N_THREADS; i++)
    same &= res[i][0] == res[0][0] && res[i][1] == res[0][1];
  CHECK (res[0][0] >= 1 && res[0][1] != 0, "concurrent first use finds the "
         "cpu backend");
  CHECK (same, "all %d threads see the same registry", N_THREADS);
  CHECK (tsr_registry_module_count () == tsr_reg_count (),
         "no module registered twice");
  return TSR_TEST_EXIT ();
}
