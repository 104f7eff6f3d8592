/* Area: tsr_session (tessera/model.h).
   Purpose: decoding with the key/value cache gives the logits of
   recomputing the whole sequence: one batch, token by token, and
   uneven batches agree; a reset starts over at position 0; a sequence
   crossing the 256-position step of the attended cache length (the
   graph is rebuilt) still agrees; logits of the last token only equal
   the last row of all logits; the cache refuses to overflow.
   Tolerance: NMSE 1e-8 between schedules for f32 weights (only the
   order of float sums changes); 1e-3 for q8_0 and q4_0 weights, whose
   products the CPU computes two ways: with activations rounded to q8_0
   for a few tokens, with the weights dequantized for many (seen:
   about 1e-4 apart; batches of the same kind agree exactly).
   Limitations: CPU only (devices.c covers the others).  */
#include "model-test.h"

struct model_case
{
  const char *name, *args;
  double max_nmse;
};

static const struct model_case cases[] = {
  { "llama-q8_0", "--type=q8_0 --untied --ctx=512", 1e-3 },
  { "llama-q4_0-gqa", "--type=q4_0 --heads=8 --kv-heads=2 --rope-freqs --ctx=512",
    1e-3 },
  { "qwen2-f32", "--arch=qwen2 --type=f32 --ctx=512", 1e-8 },
};

enum { N = 300 };               /* crosses the 256-position step */

static void
compare_schedules (tsr_session *s, const struct model_case *c, int64_t v,
                   const int32_t *t, const float *whole, float *part)
{
  static const int batches[] = { 1, 3, 64, 255 };
  for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++)
    {
      tsr_session_reset (s);
      int st = mt_decode (s, t, N, batches[b], part, v);
      double e = st == TSR_OK ? mt_nmse_f (part, whole, (size_t) N * v) : 1;
      CHECK (st == TSR_OK && e <= c->max_nmse, "%s: batches of %d tokens "
             "give the one-batch logits (nmse %.2e, at most %.0e) %s",
             c->name, batches[b], e, c->max_nmse,
             st == TSR_OK ? "" : tsr_last_error ());
    }
}

static void
check_last_only (tsr_session *s, const struct model_case *c, int64_t v,
                 const int32_t *t, const float *whole, float *part)
{
  tsr_session_reset (s);
  int st = tsr_session_decode (s, t, 40, part, false);
  CHECK (st == TSR_OK && tsr_session_n_past (s) == 40
         && mt_nmse_f (part, whole + 39 * v, (size_t) v) <= c->max_nmse,
         "%s: logits of the last token only", c->name);
}

static void
check_full (tsr_session *s, const struct model_case *c, const int32_t *t)
{
  tsr_session_reset (s);
  int st = mt_decode (s, t, N, 100, NULL, 0);
  int n_ctx = tsr_session_n_ctx (s);
  st = st == TSR_OK ? mt_decode (s, t, n_ctx - N, 64, NULL, 0) : st;
  CHECK (st == TSR_OK && tsr_session_n_past (s) == n_ctx,
         "%s: the cache fills to its %d positions", c->name, n_ctx);
  st = tsr_session_decode (s, t, 1, NULL, false);
  CHECK (st == TSR_ERR_STATE && strstr (tsr_last_error (), "full"),
         "%s: a full cache refuses more tokens (%s)", c->name,
         tsr_last_error ());
}

static void
run_case (tsr_backend *cpu, const struct model_case *c)
{
  char path[4096];
  if (!mt_synth (c->args, mt_path (c->name, path, sizeof path)))
    return;
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = tsr_model_load (path, &mp);
  CHECK (m != NULL, "%s: load (%s)", c->name, m ? "" : tsr_last_error ());
  if (m)
    {
      int64_t v = tsr_model_get_hparams (m)->n_vocab;
      int32_t t[N];
      float *whole = malloc (sizeof *whole * N * (size_t) v);
      float *part = malloc (sizeof *part * N * (size_t) v);
      struct tsr_session_params sp = tsr_session_params_default ();
      sp.n_ctx = 320;
      sp.n_batch = N;
      tsr_session *s = tsr_session_new (m, &sp);
      mt_tokens (t, N, v, 3);
      int st = s ? mt_decode (s, t, N, N, whole, v) : tsr_last_status ();
      CHECK (st == TSR_OK && tsr_session_n_past (s) == N,
             "%s: %d tokens in one batch (%s)", c->name, N,
             st == TSR_OK ? "" : tsr_last_error ());
      if (st == TSR_OK)
        {
          compare_schedules (s, c, v, t, whole, part);
          check_last_only (s, c, v, t, whole, part);
          check_full (s, c, t);
        }
      tsr_session_free (s);
      free (whole);
      free (part);
    }
  tsr_model_free (m);
  unlink (path);
}

int
main (void)
{
  tsr_backend *cpu = mt_cpu ();
  if (!cpu)
    return TSR_TEST_EXIT ();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    run_case (cpu, &cases[i]);
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
