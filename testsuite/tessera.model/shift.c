/* Area: context shift (tsr_session_shift, tessera/model.h) and
   tessera-run's use of it.
   Purpose: in one-layer models, after 20 tokens, dropping positions
   [4, 10) and decoding 5 more gives the logits of a fresh session that
   decodes the 14 kept tokens and then those 5: the kept keys, rotated
   to their new positions in the cache, equal keys computed there.  For
   llama (rope on pairs, Llama 3 frequency factors), qwen2 (halves,
   biases), qwen3 (keys normed before rope) and gemma3 (a sliding-window
   layer, whose rope base is its own, and a window shorter than the
   sequence).  Tolerances (NMSE): 1e-9
   with an f32 cache (seen 1e-14 to 2e-14: a rotated key differs from a
   computed one in its last bits), 1e-5 with an f16 one (the rotated
   key is rounded to f16 again; seen 4e-9 to 1e-8).  n_past shrinks by
   the discarded count; a shift dropping everything after KEEP leaves
   KEEP; bad arguments are refused and leave the cache as it was.
   tessera-run generates past a full --ctx with --keep, and -n -1 stops
   at the end-of-generation token or after ctx-shifted generation as
   long as asked.
   Limitations: greedy decoding of random weights; real models' long
   generations are the user's to judge.  */
#include "model-test.h"

#define N_FIRST 20
#define KEEP 4
#define DROP 6
#define N_NEXT 5

/* One layer: its keys and values depend on their own token and
   position only, so a cache shifted and one filled afresh with the
   kept tokens must agree.  (In deeper models a kept token's keys in
   later layers carry what it attended to, the dropped tokens
   included: the shift keeps them, as it should, and recomputing would
   not.)  */
static const struct shift_case
{
  const char *name, *args;
} cases[] = {
  { "llama", "--type=f32 --rope-freqs --untied --layers=1" },
  { "qwen2", "--arch=qwen2 --type=f32 --layers=1" },
  { "qwen3", "--arch=qwen3 --type=f32 --head-dim=32 --heads=4 --kv-heads=2 "
    "--layers=1" },
  /* A sliding-window layer: rope base 10000, not the file's 1e6.  */
  { "gemma3", "--arch=gemma3 --type=f32 --swa=6 --layers=1" },
};

static tsr_session *
session (tsr_model *m, bool f32)
{
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 64;
  sp.n_batch = 32;
  sp.kv_type = f32 ? TSR_TYPE_F32 : TSR_TYPE_F16;
  return tsr_session_new (m, &sp);
}

static void
run_case (tsr_backend *cpu, const struct shift_case *c)
{
  char path[4096];
  if (!mt_synth (c->args, mt_path (c->name, path, sizeof path)))
    return;
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = tsr_model_load (path, &mp);
  CHECK (m != NULL, "%s: load (%s)", c->name, m ? "" : tsr_last_error ());
  if (!m)
    return;
  int64_t v = tsr_model_get_hparams (m)->n_vocab;
  int32_t t[N_FIRST + N_NEXT], kept[N_FIRST - DROP];
  mt_tokens (t, N_FIRST + N_NEXT, v, 13);
  memcpy (kept, t, KEEP * sizeof *t);
  memcpy (kept + KEEP, t + KEEP + DROP, (N_FIRST - KEEP - DROP) * sizeof *t);
  size_t n = (size_t) N_NEXT * (size_t) v;
  float *shifted = malloc (n * sizeof *shifted);
  float *fresh = malloc (n * sizeof *fresh);
  for (int f32 = 1; f32 >= 0; f32--)
    {
      const char *cache = f32 ? "f32 cache" : "f16 cache";
      double tol = f32 ? 1e-9 : 1e-5;
      tsr_session *a = session (m, f32), *b = session (m, f32);
      int st = a && b ? tsr_session_decode (a, t, N_FIRST, NULL, false)
                      : tsr_last_status ();
      if (st == TSR_OK)
        st = tsr_session_shift (a, KEEP, DROP);
      CHECK (st == TSR_OK && tsr_session_n_past (a) == N_FIRST - DROP,
             "%s, %s: shift (%s; n_past %d)", c->name, cache,
             st == TSR_OK ? "" : tsr_last_error (), tsr_session_n_past (a));
      if (st == TSR_OK)
        st = tsr_session_decode (a, t + N_FIRST, N_NEXT, shifted, true);
      if (st == TSR_OK)
        st = tsr_session_decode (b, kept, N_FIRST - DROP, NULL, false);
      if (st == TSR_OK)
        st = tsr_session_decode (b, t + N_FIRST, N_NEXT, fresh, true);
      CHECK (st == TSR_OK, "%s, %s: decode (%s)", c->name, cache,
             st == TSR_OK ? "" : tsr_last_error ());
      if (st == TSR_OK)
        {
          double e = mt_nmse_f (shifted, fresh, n);
          CHECK (e <= tol, "%s, %s: logits after the shift are those of "
                 "the kept tokens decoded afresh: NMSE %.2e (at most %.0e)",
                 c->name, cache, e, tol);
        }
      if (f32 && st == TSR_OK)
        {
          int past = tsr_session_n_past (a);
          CHECK (tsr_session_shift (a, past - 2, 3) == TSR_ERR_INVALID_ARG
                 && tsr_session_shift (a, -1, 1) == TSR_ERR_INVALID_ARG
                 && tsr_session_shift (a, 0, 0) == TSR_ERR_INVALID_ARG
                 && tsr_session_shift (NULL, 0, 1) == TSR_ERR_INVALID_ARG
                 && tsr_session_n_past (a) == past,
                 "%s: shifts that do not fit are refused, the cache kept",
                 c->name);
          CHECK (tsr_session_shift (a, 3, past - 3) == TSR_OK
                 && tsr_session_n_past (a) == 3,
                 "%s: dropping everything after KEEP leaves KEEP", c->name);
        }
      tsr_session_free (a);
      tsr_session_free (b);
    }
  free (shifted);
  free (fresh);
  tsr_model_free (m);
  unlink (path);
}

/* tessera-run past a full context.  */
static void
check_tool (void)
{
  char path[4096], cmd[8192];
  if (!mt_synth ("--type=q8_0 --layers=2", mt_path ("tool", path,
                                                     sizeof path)))
    return;
  snprintf (cmd, sizeof cmd, "'%s/tools/tessera-run' -m '%s' --tokens=1,2,3 "
            "-n 100 --ctx=32 --keep=2 --ignore-eos --print-ids -t 1",
            mt_bld, path);
  int st = mt_shell (cmd);
  const char *gen = strstr (mt_out, "generation: 100 tokens");
  CHECK (st == 0 && gen, "tessera-run --ctx=32 -n 100 --keep=2 generates "
         "100 tokens through context shifts (%s)", st == 0 ? "" : mt_out);
  snprintf (cmd, sizeof cmd, "'%s/tools/tessera-run' -m '%s' --tokens=1,2,3 "
            "-n 100 --ctx=32 --no-context-shift -t 1", mt_bld, path);
  st = mt_shell (cmd);
  CHECK (st != 0 && strstr (mt_out, "--ctx"), "with --no-context-shift, "
         "too long a generation is refused naming --ctx (%s)", mt_out);
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
  check_tool ();
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
