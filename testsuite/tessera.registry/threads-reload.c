/* The registry under concurrent use (issue 17, class 8): threads load
 * and reload modules that fail and one that works, add search
 * directories, look failures up and read their strings, ask for the
 * search path, init backends by name and change the log level, all at
 * once.  Every string the registry returned must stay readable while
 * other threads replace the record it came from (they are interned);
 * run under ASan or TSan (make check-sanitize) this catches a
 * use-after-free or a data race; here it checks the strings' contents
 * after the storm and that nothing was lost.  */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tessera.h>
#include "tsr-test.h"

#define N_THREADS 6
#define ROUNDS 200

static const char *mods;
static pthread_barrier_t start;
static int bad_strings;
static pthread_mutex_t bad_lock = PTHREAD_MUTEX_INITIALIZER;

static void
note_bad (void)
{
  pthread_mutex_lock (&bad_lock);
  bad_strings++;
  pthread_mutex_unlock (&bad_lock);
}

static void *
worker (void *arg)
{
  int id = (int) (intptr_t) arg;
  char path[4200], dir[4200];
  struct tsr_module_failure keep[ROUNDS];
  int n_keep = 0;
  pthread_barrier_wait (&start);
  for (int r = 0; r < ROUNDS; r++)
    {
      switch ((id + r) % 6)
        {
        case 0:
          snprintf (path, sizeof path, "%s/tessera-zeroscore", mods);
          tsr_registry_load (path);          /* fails: recorded again */
          break;
        case 1:
          snprintf (path, sizeof path, "/nonexistent/tessera-t%d-%d", id,
                    r % 5);
          tsr_registry_load (path);
          break;
        case 2:
          snprintf (dir, sizeof dir, "/nonexistent/dir-%d-%d", id, r);
          tsr_registry_add_search_dir (dir);
          break;
        case 3:
          {
            tsr_backend *be = tsr_backend_init_by_name ("zeroscore", NULL);
            const char *e = tsr_last_error ();
            if (be || !strstr (e, "zeroscore"))
              note_bad ();
            tsr_backend_free (be);
          }
          break;
        case 4:
          tsr_log_set_level (r % 2 ? TSR_LOG_NONE : TSR_LOG_ERROR);
          if (strlen (tsr_registry_search_path ()) == 0)
            note_bad ();
          break;
        default:
          snprintf (path, sizeof path, "%s/tessera-zeroscore", mods);
          if (n_keep < ROUNDS
              && tsr_registry_failure_find (path, &keep[n_keep]))
            n_keep++;
          break;
        }
    }
  /* What we were handed is still what it was.  */
  for (int i = 0; i < n_keep; i++)
    if (!strstr (keep[i].path, "tessera-zeroscore")
        || !strstr (keep[i].reason, "no zeroscore hardware"))
      note_bad ();
  return NULL;
}

int
main (void)
{
  mods = getenv ("TSR_TEST_MODULE_DIR");
  char probe[4200];
  snprintf (probe, sizeof probe, "%s/tessera-zeroscore.la",
            mods ? mods : ".");
  if (!mods || access (probe, R_OK) != 0)
    {
      tsr_test_unsupported ("threads: check-only modules not built (static "
                            "build)");
      return 0;
    }
  tsr_log_set_level (TSR_LOG_NONE);
  pthread_t th[N_THREADS];
  pthread_barrier_init (&start, NULL, N_THREADS);
  tsr_test_deadline (120, "concurrent registry use");
  for (int i = 0; i < N_THREADS; i++)
    pthread_create (&th[i], NULL, worker, (void *) (intptr_t) i);
  for (int i = 0; i < N_THREADS; i++)
    pthread_join (th[i], NULL);
  alarm (0);
  pthread_barrier_destroy (&start);
  CHECK (bad_strings == 0, "every string handed out stayed intact (%d "
         "bad)", bad_strings);
  struct tsr_module_failure f;
  CHECK (tsr_registry_failure_find ("zeroscore", &f)
         && f.error == TSR_MODULE_UNUSABLE, "the zeroscore failure is "
         "recorded once more after the storm");
  CHECK (tsr_reg_by_name ("cpu") != NULL, "the cpu backend is still there");
  size_t n = tsr_registry_failure_count (), dups = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      {
        struct tsr_module_failure a, b;
        if (tsr_registry_failure_get (i, &a) && tsr_registry_failure_get (j, &b)
            && strcmp (a.path, b.path) == 0)
          dups++;
      }
  CHECK (dups == 0, "one record per path (%zu duplicates among %zu)", dups,
         n);
  return TSR_TEST_EXIT ();
}
