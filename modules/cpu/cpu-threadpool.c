/* cpu-threadpool.c - persistent worker threads for the CPU backend.
 *
 * Owns the workers' lifetime and the hand-off of one task at a time.
 * It knows nothing about tensors.
 *
 * Protocol.  Each worker has a sequence number SEQ that only the
 * driving thread changes (under LOCK); a change means "there is
 * something for you": a task, or STOP.  The driver publishes FN, ARG
 * and NTH, sets PENDING to the number of workers it wakes, then bumps
 * their SEQ (release) and signals them.  A worker sees the bump
 * (acquire), reads the task, runs it and decrements PENDING (acq_rel);
 * the worker that brings PENDING to zero signals DONE under LOCK.  The
 * driver does not touch FN/ARG/NTH again before it has seen PENDING at
 * zero (acquire), so no field is ever written while a worker may read
 * it.  Both sides spin a little before sleeping: between the nodes of
 * a graph the workers are usually still spinning and start at once.  */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <tessera/module.h>

#include "cpu-threadpool.h"

/* Polls of a flag before going to sleep; with the pause instruction
   this is a few tens of microseconds.  */
#define SPIN_ROUNDS 4096

struct worker
{
  _Alignas (64) atomic_uint seq;   /* bumped by the driver */
  unsigned seen;                   /* last SEQ acted upon (worker only) */
  int ith;
  pthread_cond_t wake;
  pthread_t thread;
  struct tsr_cpu_threadpool *pool;
};

struct tsr_cpu_threadpool
{
  pthread_mutex_t lock;
  pthread_cond_t done;             /* the driver waits for PENDING == 0 */
  atomic_bool stop;
  _Alignas (64) atomic_int pending;
  /* The current task; see the protocol above.  */
  tsr_cpu_task_fn fn;
  void *arg;
  int nth;
  int n_threads;                   /* workers + the driver */
  struct worker *workers;          /* n_threads - 1 of them */
};

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#elif defined(__aarch64__)
  __asm__ __volatile__ ("yield" ::: "memory");
#endif
}

/* Wait until W's SEQ moves; false when the pool is stopping.  */
static bool
wait_for_work (struct worker *w)
{
  struct tsr_cpu_threadpool *pool = w->pool;
  bool ready = false;

  for (int i = 0; i < SPIN_ROUNDS && !ready; i++)
    {
      ready = atomic_load_explicit (&w->seq, memory_order_acquire) != w->seen;
      if (!ready)
        cpu_relax ();
    }
  if (!ready)
    {
      pthread_mutex_lock (&pool->lock);
      while (atomic_load_explicit (&w->seq, memory_order_acquire) == w->seen)
        pthread_cond_wait (&w->wake, &pool->lock);
      pthread_mutex_unlock (&pool->lock);
    }
  /* The driver bumps SEQ once per hand-off and waits for the task to
     finish before the next one, so it moved by exactly one.  */
  w->seen++;
  return !atomic_load_explicit (&pool->stop, memory_order_acquire);
}

static void *
worker_main (void *arg)
{
  struct worker *w = arg;
  struct tsr_cpu_threadpool *pool = w->pool;

  while (wait_for_work (w))
    {
      tsr_cpu_task_fn fn = pool->fn;
      void *task_arg = pool->arg;
      int nth = pool->nth;

      fn (task_arg, w->ith, nth);
      if (atomic_fetch_sub_explicit (&pool->pending, 1,
                                     memory_order_acq_rel) == 1)
        {
          pthread_mutex_lock (&pool->lock);
          pthread_cond_signal (&pool->done);
          pthread_mutex_unlock (&pool->lock);
        }
    }
  return NULL;
}

/* Give the first N workers their next hand-off.  */
static void
wake_workers (struct tsr_cpu_threadpool *pool, int n)
{
  pthread_mutex_lock (&pool->lock);
  for (int i = 0; i < n; i++)
    {
      atomic_fetch_add_explicit (&pool->workers[i].seq, 1u,
                                 memory_order_release);
      pthread_cond_signal (&pool->workers[i].wake);
    }
  pthread_mutex_unlock (&pool->lock);
}

static void
stop_workers (struct tsr_cpu_threadpool *pool)
{
  int n = pool->n_threads - 1;

  if (n > 0)
    {
      atomic_store_explicit (&pool->stop, true, memory_order_relaxed);
      wake_workers (pool, n);   /* its release publishes STOP */
      for (int i = 0; i < n; i++)
        {
          pthread_join (pool->workers[i].thread, NULL);
          pthread_cond_destroy (&pool->workers[i].wake);
        }
    }
  free (pool->workers);
  pool->workers = NULL;
  pool->n_threads = 1;
}

/* Start N_THREADS - 1 workers.  On failure keep those that started.  */
static int
start_workers (struct tsr_cpu_threadpool *pool, int n_threads)
{
  int n = n_threads - 1;
  sigset_t all, old;
  int status = TSR_OK;

  atomic_store_explicit (&pool->stop, false, memory_order_relaxed);
  pool->n_threads = 1;
  if (n == 0)
    return TSR_OK;
  pool->workers = aligned_alloc (_Alignof (struct worker),
                                 (size_t) n * sizeof (struct worker));
  if (!pool->workers)
    return tsr_set_error (TSR_ERR_NO_MEMORY,
                          "cpu: no memory for %d worker threads", n);

  /* Workers block every signal: signals belong to the application's
     own threads.  */
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &old);
  for (int i = 0; i < n; i++)
    {
      struct worker *w = &pool->workers[i];
      int rc;

      atomic_init (&w->seq, 0u);
      w->seen = 0;
      w->ith = i + 1;
      w->pool = pool;
      rc = pthread_cond_init (&w->wake, NULL);
      if (rc == 0)
        {
          rc = pthread_create (&w->thread, NULL, worker_main, w);
          if (rc != 0)
            pthread_cond_destroy (&w->wake);
        }
      if (rc != 0)
        {
          status = tsr_set_error (TSR_ERR_BACKEND,
                                  "cpu: cannot start worker thread %d "
                                  "of %d: %s", i + 1, n, strerror (rc));
          break;
        }
      pool->n_threads = i + 2;
    }
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  return status;
}

static int
check_n_threads (int n_threads)
{
  if (n_threads < 1 || n_threads > TSR_CPU_MAX_THREADS)
    return tsr_set_error (TSR_ERR_INVALID_ARG,
                          "cpu: thread count %d is not in [1, %d]",
                          n_threads, TSR_CPU_MAX_THREADS);
  return TSR_OK;
}

struct tsr_cpu_threadpool *
tsr_cpu_threadpool_new (int n_threads)
{
  struct tsr_cpu_threadpool *pool;

  if (check_n_threads (n_threads) != TSR_OK)
    return NULL;
  pool = calloc (1, sizeof *pool);
  if (!pool)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "cpu: no memory for a thread pool");
      return NULL;
    }
  if (pthread_mutex_init (&pool->lock, NULL) != 0)
    {
      free (pool);
      tsr_set_error (TSR_ERR_BACKEND, "cpu: cannot create a mutex");
      return NULL;
    }
  if (pthread_cond_init (&pool->done, NULL) != 0)
    {
      pthread_mutex_destroy (&pool->lock);
      free (pool);
      tsr_set_error (TSR_ERR_BACKEND, "cpu: cannot create a condition");
      return NULL;
    }
  atomic_init (&pool->stop, false);
  atomic_init (&pool->pending, 0);
  if (start_workers (pool, n_threads) != TSR_OK)
    {
      tsr_cpu_threadpool_free (pool);
      return NULL;
    }
  return pool;
}

void
tsr_cpu_threadpool_free (struct tsr_cpu_threadpool *pool)
{
  if (!pool)
    return;
  stop_workers (pool);
  pthread_cond_destroy (&pool->done);
  pthread_mutex_destroy (&pool->lock);
  free (pool);
}

int
tsr_cpu_threadpool_set_n_threads (struct tsr_cpu_threadpool *pool,
                                  int n_threads)
{
  int status = check_n_threads (n_threads);

  if (status != TSR_OK || n_threads == pool->n_threads)
    return status;
  stop_workers (pool);
  return start_workers (pool, n_threads);
}

int
tsr_cpu_threadpool_n_threads (const struct tsr_cpu_threadpool *pool)
{
  return pool->n_threads;
}

void
tsr_cpu_threadpool_run (struct tsr_cpu_threadpool *pool, tsr_cpu_task_fn fn,
                        void *arg, int n_tasks)
{
  int nth = n_tasks < pool->n_threads ? n_tasks : pool->n_threads;
  bool finished = false;

  if (nth <= 1)
    {
      fn (arg, 0, 1);
      return;
    }
  pool->fn = fn;
  pool->arg = arg;
  pool->nth = nth;
  atomic_store_explicit (&pool->pending, nth - 1, memory_order_relaxed);
  wake_workers (pool, nth - 1);

  fn (arg, 0, nth);

  for (int i = 0; i < SPIN_ROUNDS && !finished; i++)
    {
      finished = atomic_load_explicit (&pool->pending,
                                       memory_order_acquire) == 0;
      if (!finished)
        cpu_relax ();
    }
  if (!finished)
    {
      pthread_mutex_lock (&pool->lock);
      while (atomic_load_explicit (&pool->pending, memory_order_acquire) != 0)
        pthread_cond_wait (&pool->done, &pool->lock);
      pthread_mutex_unlock (&pool->lock);
    }
}
