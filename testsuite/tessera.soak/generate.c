/* Area: soak (make check-soak): a long generation.
   Purpose: a two-layer q8_0 model generates 20,000 tokens one at a
   time, greedily, in a cache of 128 positions, shifting the context
   (tsr_session_shift: keep 4, drop half of the rest) whenever it is
   full, as tessera-run does with --ignore-eos: every decode and shift
   succeeds, every logit is finite, the session shifts as often as the
   arithmetic says, and the resident memory after 20,000 tokens is
   within 2% of what it was after 2,000 (nothing grows per token or per
   shift).
   Tolerances: 2% of resident memory.
   Limitations: random weights; the CPU backend alone; leaks are for a
   LeakSanitizer build (reload.c frees everything it made).  */
#include <math.h>
#include <stdlib.h>
#include "../tessera.model/model-test.h"
#include "soak-test.h"

#define N_TOKENS 20000
#define N_CTX 128
#define KEEP 4

int
main (void)
{
  tsr_backend *cpu = mt_cpu ();
  char path[4096];
  if (!cpu || !mt_synth ("--type=q8_0 --layers=2",
                         mt_path ("soak-generate", path, sizeof path)))
    return TSR_TEST_EXIT ();
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = tsr_model_load (path, &mp);
  CHECK (m != NULL, "load (%s)", m ? "ok" : tsr_last_error ());
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = N_CTX;
  sp.n_batch = 8;
  tsr_session *s = m ? tsr_session_new (m, &sp) : NULL;
  CHECK (s != NULL, "session (%s)", s ? "ok" : tsr_last_error ());
  if (!s)
    {
      tsr_model_free (m);
      tsr_backend_free (cpu);
      remove (path);
      return TSR_TEST_EXIT ();
    }
  int64_t v = tsr_model_get_hparams (m)->n_vocab;
  float *logits = malloc ((size_t) v * sizeof *logits);
  int32_t tok = 1;
  int st = TSR_OK, shifts = 0, nonfinite = 0, done = 0;
  long rss_early = -1;
  for (; done < N_TOKENS && st == TSR_OK; done++)
    {
      if (tsr_session_n_past (s) == N_CTX)
        {
          st = tsr_session_shift (s, KEEP, (N_CTX - KEEP) / 2);
          shifts++;
          if (st != TSR_OK)
            break;
        }
      st = tsr_session_decode (s, &tok, 1, logits, false);
      if (st != TSR_OK)
        break;
      int64_t best = 0;
      for (int64_t j = 0; j < v; j++)
        {
          nonfinite += !isfinite (logits[j]);
          if (logits[j] > logits[best])
            best = j;
        }
      tok = (int32_t) best;
      if (done + 1 == N_TOKENS / 10)
        rss_early = soak_rss ();
    }
  CHECK (st == TSR_OK && done == N_TOKENS, "%d of %d tokens generated "
         "(%s)", done, N_TOKENS, st == TSR_OK ? "ok" : tsr_last_error ());
  CHECK (nonfinite == 0, "every logit finite (%d not)", nonfinite);
  /* The first shift after N_CTX tokens, then one every (N_CTX - KEEP)
     / 2 tokens: the cache holds N_CTX - that after each.  */
  int step = (N_CTX - KEEP) / 2;
  int want = N_TOKENS <= N_CTX ? 0 : 1 + (N_TOKENS - N_CTX - 1) / step;
  CHECK (shifts == want, "%d context shifts (want %d)", shifts, want);
  soak_check_rss ("2,000 -> 20,000 tokens", rss_early, soak_rss ());
  free (logits);
  tsr_session_free (s);
  tsr_model_free (m);
  tsr_backend_free (cpu);
  remove (path);
  return TSR_TEST_EXIT ();
}
