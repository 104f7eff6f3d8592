/* cpu-threadpool.h - the CPU backend's pool of worker threads.
 *
 * A pool owns N - 1 persistent workers; the thread calling
 * tsr_cpu_threadpool_run is the Nth.  A pool is driven by one thread
 * at a time (the backend's owner): run, set_n_threads and free must not
 * be called concurrently on the same pool.  Idle workers spin briefly
 * (so the next operation of a graph starts without a system call) and
 * then sleep on a condition variable.  */
#ifndef TSR_CPU_THREADPOOL_H
#define TSR_CPU_THREADPOOL_H

#include <tessera/module.h> /* TSR_MODULE_HIDDEN */

/* The most threads a pool accepts (a sanity bound on user input).  */
#define TSR_CPU_MAX_THREADS 1024

struct tsr_cpu_threadpool;

/* A task: part ITH of NTH.  */
typedef void (*tsr_cpu_task_fn) (void *arg, int ith, int nth);

/* A pool running tasks on N_THREADS threads (caller included).  NULL
   with an error recorded (tsr_set_error) on failure.  */
TSR_MODULE_HIDDEN struct tsr_cpu_threadpool *
tsr_cpu_threadpool_new (int n_threads);

/* Stop and join every worker, then release POOL (NULL is fine).  */
TSR_MODULE_HIDDEN void tsr_cpu_threadpool_free (struct tsr_cpu_threadpool *pool);

/* Use N_THREADS threads from now on.  TSR_OK, or an error (then the
   pool keeps as many threads as it could start, at least the caller).  */
TSR_MODULE_HIDDEN int tsr_cpu_threadpool_set_n_threads
  (struct tsr_cpu_threadpool *pool, int n_threads);

TSR_MODULE_HIDDEN int tsr_cpu_threadpool_n_threads
  (const struct tsr_cpu_threadpool *pool);

/* Call FN (ARG, ith, nth) for every ith in [0, nth), where nth is the
   smaller of N_TASKS and the pool's thread count (at least 1); part 0
   runs on the calling thread.  Returns when every part has returned.  */
TSR_MODULE_HIDDEN void tsr_cpu_threadpool_run (struct tsr_cpu_threadpool *pool,
                                            tsr_cpu_task_fn fn, void *arg,
                                            int n_tasks);

#endif /* TSR_CPU_THREADPOOL_H */
