/* Area: sessions on several threads sharing one model on an OpenCL
   device (model-session.c, ocl-backend.c).
   Purpose: 4 threads, each with its own session (its own clone of the
   OpenCL backend, one command queue of the device between them),
   decode different prompts and generate greedily at the same time; the
   tokens and last logits must be those of the same prompts run one
   after another.  Then two backends of the device on two threads, one
   computing get_rows (40 nodes a graph) with an index out of range 200 times, the other
   with good indices: each must get its own outcome every time (the
   status word the kernels report bad indices through is per backend).
   */
#include <pthread.h>
#include "../tessera.model/model-test.h"
#include "ocl-test.h"

enum { THREADS = 4, GEN = 8 };

struct job
{
  tsr_model *m;
  int id;
  int64_t vocab;
  int32_t out[GEN];
  float *logits;
  int st;
};

static void *
run_job (void *arg)
{
  struct job *j = arg;
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 64;
  sp.n_batch = 32;
  tsr_session *s = tsr_session_new (j->m, &sp);
  int32_t t[32];
  int n = 6 + 2 * j->id;
  mt_tokens (t, n, j->vocab, (unsigned) (5 + j->id));
  j->st = s ? tsr_session_decode (s, t, n, j->logits, false)
            : tsr_last_status ();
  for (int g = 0; g < GEN && j->st == TSR_OK; g++)
    {
      int32_t best = 0;
      for (int64_t k = 1; k < j->vocab; k++)
        if (j->logits[k] > j->logits[best])
          best = (int32_t) k;
      j->out[g] = best;
      j->st = tsr_session_decode (s, &best, 1, j->logits, false);
    }
  tsr_session_free (s);
  return NULL;
}

/* get_rows on its own backend, ROUNDS times: how many computes had
   the outcome BAD asks for (an index error, or none).  */
struct rows_job
{
  tsr_device *dev;
  bool bad;
  int right;
};

enum { ROUNDS = 200 };

static void *
run_rows (void *arg)
{
  struct rows_job *j = arg;
  tsr_backend *be = tsr_device_init (j->dev, NULL);
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 16, 4);
  tsr_tensor *idx = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 2);
  tsr_graph *g = tsr_graph_new (ctx);
  /* Many nodes, so that the two threads' kernels interleave on the
     device's queue.  */
  for (int k = 0; k < 40; k++)
    tsr_graph_build (g, tsr_get_rows (ctx, a, idx));
  tsr_buffer *buf = be ? tsr_context_alloc_tensors
                           (ctx, tsr_backend_buffer_type (be)) : NULL;
  float av[64] = { 0 };
  int32_t iv[2] = { 1, j->bad ? 9 : 2 };
  if (buf)
    {
      tsr_tensor_set (a, av, 0, sizeof av);
      tsr_tensor_set (idx, iv, 0, sizeof iv);
      for (int r = 0; r < ROUNDS; r++)
        {
          int st = tsr_backend_graph_compute (be, g);
          j->right += j->bad ? st == TSR_ERR_INVALID_ARG : st == TSR_OK;
        }
    }
  tsr_buffer_free (buf);
  tsr_context_free (ctx);
  tsr_backend_free (be);
  return NULL;
}

int
main (void)
{
  tsr_device *dev = mt_init () ? ocl_test_device () : NULL;
  if (!dev)
    return TSR_TEST_EXIT ();
  tsr_backend *be = tsr_device_init (dev, NULL);
  char path[4096];
  if (!be || !mt_synth ("--type=q8_0 --layers=2 --ctx=128",
                        mt_path ("ocl-threads", path, sizeof path)))
    {
      CHECK (be != NULL, "OpenCL backend: %s", be ? "" : tsr_last_error ());
      tsr_backend_free (be);
      return TSR_TEST_EXIT ();
    }
  struct tsr_model_params mp = { .backends = &be, .n_backends = 1 };
  tsr_model *m = tsr_model_load (path, &mp);
  CHECK (m != NULL, "load on OpenCL0 (%s)", m ? "" : tsr_last_error ());
  if (m)
    {
      int64_t v = tsr_model_get_hparams (m)->n_vocab;
      struct job alone[THREADS], together[THREADS];
      for (int i = 0; i < THREADS; i++)
        {
          alone[i] = (struct job) { m, i, v, { 0 },
                                    malloc (sizeof (float) * (size_t) v), 0 };
          run_job (&alone[i]);
          together[i] = alone[i];
          together[i].logits = malloc (sizeof (float) * (size_t) v);
        }
      pthread_t th[THREADS];
      for (int i = 0; i < THREADS; i++)
        pthread_create (&th[i], NULL, run_job, &together[i]);
      for (int i = 0; i < THREADS; i++)
        pthread_join (th[i], NULL);
      int same = 0;
      for (int i = 0; i < THREADS; i++)
        same += alone[i].st == TSR_OK && together[i].st == TSR_OK
                && memcmp (alone[i].out, together[i].out,
                           sizeof alone[i].out) == 0
                && memcmp (alone[i].logits, together[i].logits,
                           sizeof (float) * (size_t) v) == 0;
      CHECK (same == THREADS, "%d concurrent sessions give the "
             "sequential runs' tokens and logits (%d)", THREADS, same);
      for (int i = 0; i < THREADS; i++)
        {
          free (alone[i].logits);
          free (together[i].logits);
        }
    }
  tsr_model_free (m);

  struct rows_job bad = { dev, true, 0 }, good = { dev, false, 0 };
  pthread_t tb, tg;
  pthread_create (&tb, NULL, run_rows, &bad);
  pthread_create (&tg, NULL, run_rows, &good);
  pthread_join (tb, NULL);
  pthread_join (tg, NULL);
  CHECK (bad.right == ROUNDS && good.right == ROUNDS, "two backends on two "
         "threads: each gets its own index errors (%d and %d of %d)",
         bad.right, good.right, ROUNDS);
  tsr_backend_free (be);
  unlink (path);
  return TSR_TEST_EXIT ();
}
