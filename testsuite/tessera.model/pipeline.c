/* Area: micro-batches pipelined across devices in one process
   (tessera/model.h: n_ubatch, n_pipeline; the scheduler's asynchronous
   compute).
   Purpose: a 48-token prompt cut into micro-batches of 8 tokens runs
   through a model whose last layer is on another device (each device
   besides the CPU that Tessera finds: PoCL's OpenCL, asynchronous, and
   the check-only Partial1 with memory of its own), with 1, 2 and 3
   micro-batches in flight.  The logits of every token are identical
   (bit for bit) whatever the number in flight, and within the model
   tests' bound of the CPU alone; tokens generated after the prompt
   too.  Where the work ran: the session has the slots asked for, each
   slot's scheduler computed its share of the micro-batches (the first
   of 3 slots: micro-batches 1 and 4 of 6), and no weight crossed.
   A model on one backend keeps one slot.
   Tolerance: NMSE against the CPU 1e-4 (f32 weights; a device may sum
   in another order).  */
#include "model-test.h"

enum { N_PROMPT = 48, UBATCH = 8, N_GEN = 3, VOCAB = 512 };

/* Logits of the prompt (every token) and of N_GEN generated tokens
   into OUT, on BE[0..N) with the last layer on BE[0] (N > 1), with
   N_PIPE micro-batches in flight; the session's slots and the first
   slot's computes in *SLOTS and *COMPUTES.  Status.  */
static int
run (const char *path, tsr_backend **be, int n, int n_pipe, float *out,
     int *slots, uint64_t *computes, uint64_t *weight_bytes)
{
  struct tsr_model_params mp = { .backends = be, .n_backends = n,
                                 .gpu_layers = n > 1 ? 1 : -1 };
  tsr_model *m = tsr_model_load (path, &mp);
  if (!m)
    return tsr_last_status ();
  int32_t t[N_PROMPT + N_GEN];
  mt_tokens (t, N_PROMPT + N_GEN, VOCAB, 11);
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 64;
  sp.n_batch = N_PROMPT;
  sp.n_ubatch = UBATCH;
  sp.n_pipeline = n_pipe;
  tsr_session *s = tsr_session_new (m, &sp);
  int st = s ? tsr_session_decode (s, t, N_PROMPT, out, true)
             : tsr_last_status ();
  if (st == TSR_OK)
    {
      struct tsr_sched_stats ss;
      tsr_sched_get_stats (tsr_session_sched (s), &ss);
      *slots = tsr_session_n_pipeline (s);
      *computes = ss.n_computes;
      *weight_bytes = ss.bytes[TSR_SCHED_COPY_WEIGHT];
    }
  for (int i = 0; i < N_GEN && st == TSR_OK; i++)
    st = tsr_session_decode (s, &t[N_PROMPT + i], 1,
                             out + (size_t) (N_PROMPT + i) * VOCAB, false);
  if (st == TSR_OK && tsr_session_n_past (s) != N_PROMPT + N_GEN)
    st = tsr_set_error (TSR_ERR_STATE, "the cache holds %d positions, not "
                        "%d", tsr_session_n_past (s), N_PROMPT + N_GEN);
  tsr_session_free (s);
  tsr_model_free (m);
  return st;
}

int
main (void)
{
  tsr_backend *cpu = mt_cpu ();
  char path[4096];
  if (!cpu || !mt_synth ("--type=f32 --untied --layers=3",
                         mt_path ("pipe", path, sizeof path)))
    return TSR_TEST_EXIT ();
  size_t n = (size_t) (N_PROMPT + N_GEN) * VOCAB;
  float *want = malloc (n * sizeof *want), *got = malloc (n * sizeof *got);
  float *first = malloc (n * sizeof *first);
  int slots;
  uint64_t computes, wbytes;
  int st = run (path, &cpu, 1, 2, want, &slots, &computes, &wbytes);
  CHECK (st == TSR_OK && slots == 1 && computes == N_PROMPT / UBATCH,
         "CPU alone: one slot, %d micro-batches through it (%d slots, "
         "%llu computes) %s", N_PROMPT / UBATCH, slots,
         (unsigned long long) computes, st == TSR_OK ? "" : tsr_last_error ());

  /* Out of range: refused, naming the fields.  */
  {
    struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
    tsr_model *m = tsr_model_load (path, &mp);
    struct tsr_session_params bad[2] = { tsr_session_params_default (),
                                         tsr_session_params_default () };
    bad[0].n_pipeline = 9;
    bad[1].n_ubatch = -1;
    for (int i = 0; i < 2 && m; i++)
      {
        tsr_session *s = tsr_session_new (m, &bad[i]);
        CHECK (!s && tsr_last_status () == TSR_ERR_INVALID_ARG
               && strstr (tsr_last_error (), "n_pipeline"),
               "n_pipeline %d, n_ubatch %d refused: %s", bad[i].n_pipeline,
               bad[i].n_ubatch, tsr_last_error ());
        tsr_session_free (s);
      }
    tsr_model_free (m);
  }
  tsr_backend *devs[8];
  int n_dev = 0;
  for (size_t i = 0; i < tsr_device_count () && n_dev < 7; i++)
    {
      tsr_device *d = tsr_device_get (i);
      if (tsr_device_get_type (d) != TSR_DEVICE_CPU
          && strncmp (tsr_device_name (d), "Partial", 7) != 0
          && (devs[n_dev] = tsr_device_init (d, NULL)))
        n_dev++;
    }
  tsr_backend *mm = mt_partial ("Partial1");
  if (mm)
    devs[n_dev++] = mm;
  else
    tsr_test_unsupported ("Partial1 not available (static build)");
  for (int d = 0; d < n_dev && st == TSR_OK; d++)
    {
      const char *name = tsr_backend_name (devs[d]);
      tsr_backend *both[2] = { devs[d], cpu };
      for (int pipe = 1; pipe <= 3; pipe++)
        {
          float *out = pipe == 1 ? first : got;
          int r = run (path, both, 2, pipe, out, &slots, &computes,
                       &wbytes);
          /* Micro-batches 0, PIPE, 2 PIPE... go through the first
             slot.  */
          uint64_t share = (N_PROMPT / UBATCH + pipe - 1) / pipe;
          CHECK (r == TSR_OK && slots == pipe && computes == share
                 && wbytes == 0,
                 "%s+CPU, %d in flight: %d slots, the first computed %llu "
                 "of %d micro-batches (%llu expected), %llu weight bytes "
                 "copied %s", name, pipe, slots,
                 (unsigned long long) computes, N_PROMPT / UBATCH,
                 (unsigned long long) share, (unsigned long long) wbytes,
                 r == TSR_OK ? "" : tsr_last_error ());
          if (r != TSR_OK)
            continue;
          if (pipe == 1)
            {
              double e = mt_nmse_f (first, want, n);
              CHECK (e <= 1e-4, "%s+CPU: the CPU's logits (nmse %.2e, at "
                     "most 1e-4)", name, e);
            }
          else
            CHECK (memcmp (got, first, n * sizeof *got) == 0,
                   "%s+CPU, %d in flight: the logits of one at a time, "
                   "bit for bit", name, pipe);
        }
    }
  for (int d = 0; d < n_dev; d++)
    tsr_backend_free (devs[d]);
  tsr_backend_free (cpu);
  free (want);
  free (got);
  free (first);
  unlink (path);
  return TSR_TEST_EXIT ();
}
