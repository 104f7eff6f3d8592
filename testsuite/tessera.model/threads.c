/* Area: sessions on several threads sharing one model (tessera/model.h,
   "Threads"; model-session.c).
   Purpose: 8 threads, each with its own session on one loaded model,
   decode 8 different prompts and generate 12 tokens greedily at the
   same time; every thread's tokens and final logits must be those of
   the same prompt run alone before (logits bit for bit: the CPU's
   results do not depend on what else runs).  Each session computes on
   a backend of its own (tsr_session_backend), not the model's, and the
   clone keeps the backend's parameters; the model stays usable after
   the sessions are freed.  Run under TSan by the sanitizer job.
   Limitations: CPU only; a model split over processes runs one session
   at a time by design.  */
#include <pthread.h>
#include "model-test.h"

enum { THREADS = 8, GEN = 12 };

struct job
{
  tsr_model *m;
  int id;
  int64_t vocab;
  int32_t out[GEN];
  float *logits;                /* the last step's */
  tsr_backend *be;              /* the session's backend 0 */
  bool keep;                    /* leave the session for main to free, so
                                   that no backend address is reused
                                   while they are compared */
  tsr_session *session;
  int st;
};

static void *
run_job (void *arg)
{
  struct job *j = arg;
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 128;
  sp.n_batch = 64;
  sp.n_threads = 1;
  tsr_session *s = tsr_session_new (j->m, &sp);
  int32_t t[64];
  int n = 10 + 3 * j->id;
  mt_tokens (t, n, j->vocab, (unsigned) (11 + j->id));
  j->st = s ? tsr_session_decode (s, t, n, j->logits, false)
            : tsr_last_status ();
  j->be = s ? tsr_session_backend (s, 0) : NULL;
  for (int g = 0; g < GEN && j->st == TSR_OK; g++)
    {
      int32_t best = 0;
      for (int64_t k = 1; k < j->vocab; k++)
        if (j->logits[k] > j->logits[best])
          best = (int32_t) k;
      j->out[g] = best;
      j->st = tsr_session_decode (s, &best, 1, j->logits, false);
    }
  if (j->keep)
    j->session = s;
  else
    tsr_session_free (s);
  return NULL;
}

int
main (void)
{
  tsr_backend *cpu = mt_cpu ();
  char path[4096];
  if (!cpu || !mt_synth ("--type=q4_0 --layers=2 --ctx=256",
                         mt_path ("threads", path, sizeof path)))
    {
      tsr_backend_free (cpu);
      return TSR_TEST_EXIT ();
    }
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = tsr_model_load (path, &mp);
  CHECK (m != NULL, "load (%s)", m ? "" : tsr_last_error ());
  if (!m)
    {
      tsr_backend_free (cpu);
      return TSR_TEST_EXIT ();
    }
  int64_t v = tsr_model_get_hparams (m)->n_vocab;
  static struct job alone[THREADS], together[THREADS];
  for (int i = 0; i < THREADS; i++)
    {
      alone[i] = (struct job) { m, i, v, { 0 },
                                malloc (sizeof (float) * (size_t) v), NULL,
                                false, NULL, 0 };
      together[i] = alone[i];
      together[i].logits = malloc (sizeof (float) * (size_t) v);
      together[i].keep = true;
      run_job (&alone[i]);
    }
  pthread_t th[THREADS];
  int started = 0;
  for (int i = 0; i < THREADS; i++)
    started += pthread_create (&th[i], NULL, run_job, &together[i]) == 0;
  CHECK (started == THREADS, "%d threads started", started);
  for (int i = 0; i < started; i++)
    pthread_join (th[i], NULL);
  int ok = 0, same_tokens = 0, same_logits = 0, own = 0;
  for (int i = 0; i < started; i++)
    {
      ok += alone[i].st == TSR_OK && together[i].st == TSR_OK;
      same_tokens += memcmp (alone[i].out, together[i].out,
                             sizeof alone[i].out) == 0;
      same_logits += memcmp (alone[i].logits, together[i].logits,
                             sizeof (float) * (size_t) v) == 0;
      bool distinct = together[i].be && together[i].be != cpu;
      for (int k = 0; k < i; k++)
        distinct = distinct && together[k].be != together[i].be;
      own += distinct;
    }
  CHECK (ok == THREADS, "every session decoded (%d of %d)", ok, THREADS);
  CHECK (same_tokens == THREADS, "8 concurrent sessions generate the tokens "
         "of the sequential runs (%d of %d)", same_tokens, THREADS);
  CHECK (same_logits == THREADS, "and their last logits bit for bit (%d "
         "of %d)", same_logits, THREADS);
  CHECK (own == THREADS, "each session computed on a backend of its own, "
         "not the model's (%d of %d)", own, THREADS);
  for (int i = 0; i < started; i++)
    tsr_session_free (together[i].session);

  /* A clone keeps the parameters and the thread count.  */
  tsr_backend_set_n_threads (cpu, 1);
  tsr_backend *c = tsr_backend_clone (cpu);
  CHECK (c && tsr_backend_device (c) == tsr_backend_device (cpu)
         && c != cpu, "tsr_backend_clone: a new backend on the same device");
  tsr_backend_free (c);
  CHECK (!tsr_backend_clone (NULL) && tsr_last_status () == TSR_ERR_INVALID_ARG,
         "tsr_backend_clone (NULL) is an error");

  /* The model is unchanged: a new session gives the same tokens.  */
  struct job again = alone[3];
  again.logits = malloc (sizeof (float) * (size_t) v);
  run_job (&again);
  CHECK (again.st == TSR_OK && memcmp (again.out, alone[3].out,
                                       sizeof again.out) == 0,
         "after the threads, a new session gives the same tokens");
  free (again.logits);
  for (int i = 0; i < THREADS; i++)
    {
      free (alone[i].logits);
      free (together[i].logits);
    }
  tsr_model_free (m);
  tsr_backend_free (cpu);
  unlink (path);
  return TSR_TEST_EXIT ();
}
