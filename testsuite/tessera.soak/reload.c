/* Area: soak (make check-soak): loading and freeing a model many times
   in one process.
   Purpose: 1,000 cycles of tsr_model_load, tsr_session_new, a decode
   of 4 tokens and the frees succeed, give the same logits every time
   (bit for bit: the same file, backend and tokens), and leave the
   resident memory after the last cycle within 2% of what it was after
   cycle 100 (nothing is kept per model or session; in a
   LeakSanitizer build, nothing leaks at exit either).
   Tolerances: 2% of resident memory; logits exact.
   Limitations: the CPU backend alone; a small f16 model (the file is
   read through the page cache every time).  */
#include <stdlib.h>
#include <string.h>
#include "../tessera.model/model-test.h"
#include "soak-test.h"

#define CYCLES 1000

int
main (void)
{
  tsr_backend *cpu = mt_cpu ();
  char path[4096];
  if (!cpu || !mt_synth ("--type=f16 --layers=2",
                         mt_path ("soak-reload", path, sizeof path)))
    return TSR_TEST_EXIT ();
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 32;
  sp.n_batch = 4;
  float *first = NULL, *logits = NULL;
  int64_t v = 0;
  int cycle = 0, differ = 0;
  long rss_early = -1;
  const char *err = NULL;
  for (; cycle < CYCLES && !err; cycle++)
    {
      tsr_model *m = tsr_model_load (path, &mp);
      tsr_session *s = m ? tsr_session_new (m, &sp) : NULL;
      if (s && !logits)
        {
          v = tsr_model_get_hparams (m)->n_vocab;
          first = malloc ((size_t) v * sizeof *first);
          logits = malloc ((size_t) v * sizeof *logits);
        }
      int32_t t[4];
      mt_tokens (t, 4, v ? v : 1, 7);
      if (!s || !logits
          || tsr_session_decode (s, t, 4, logits, false) != TSR_OK)
        err = tsr_last_error ();
      else if (cycle == 0)
        memcpy (first, logits, (size_t) v * sizeof *first);
      else
        differ += memcmp (first, logits, (size_t) v * sizeof *first) != 0;
      tsr_session_free (s);
      tsr_model_free (m);
      if (cycle + 1 == CYCLES / 10)
        rss_early = soak_rss ();
    }
  CHECK (!err && cycle == CYCLES, "%d of %d load, decode, free cycles "
         "(%s)", err ? cycle - 1 : cycle, CYCLES, err ? err : "ok");
  CHECK (differ == 0, "the same logits every cycle (%d cycles differ)",
         differ);
  soak_check_rss ("cycle 100 -> 1,000", rss_early, soak_rss ());
  free (first);
  free (logits);
  tsr_backend_free (cpu);
  remove (path);
  return TSR_TEST_EXIT ();
}
