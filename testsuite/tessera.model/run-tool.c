/* Area: tessera-run (tools/tessera-run.c).
   Purpose: the tool generates the tokens the library's greedy decoding
   gives (--print-ids), writes the prompt's logits as n_prompt x n_vocab
   little-endian f32 equal to the library's (--logits), takes a text
   prompt through the file's tokenizer (-p), samples reproducibly with a
   seed, reports its speeds, benchmarks (--bench, csv with a header and
   the pp/tg rows), and refuses bad usage (exit 2) and bad input (exit
   1, with a message).
   Limitations: speeds are printed, never checked.  */
#include <stdint.h>
#include <sys/stat.h>

#include <math.h>
#include "model-test.h"

enum { N_GEN = 8 };

static char model[4096], logits_path[4096];

static int
run_tool (const char *args)
{
  char cmd[8192];
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-run -m %s %s", mt_bld, model,
            args);
  return mt_shell (cmd);
}

/* The ids of the line of N_GEN numbers in mt_out.  */
static int
parse_ids (int32_t *ids)
{
  for (char *line = mt_out; line && *line; line = strchr (line, '\n'))
    {
      while (*line == '\n')
        line++;
      int n = 0, used;
      char *p = line;
      while (n < N_GEN && sscanf (p, "%d%n", &ids[n], &used) == 1)
        {
          n++;
          p += used;
        }
      if (n == N_GEN && (*p == '\n' || *p == '\0'))
        return n;
    }
  return 0;
}

/* Greedy continuation of PROMPT by the library; the prompt's logits in
   ALL.  */
static bool
library_greedy (const int32_t *prompt, int n, int32_t *ids, float *all)
{
  tsr_backend *cpu = tsr_backend_init_by_type (TSR_DEVICE_CPU, NULL);
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = cpu ? tsr_model_load (model, &mp) : NULL;
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 64;
  sp.n_threads = 2;
  tsr_session *s = m ? tsr_session_new (m, &sp) : NULL;
  int64_t v = m ? tsr_model_get_hparams (m)->n_vocab : 0;
  float *l = malloc (sizeof *l * (size_t) (v ? v : 1));
  struct tsr_sampler_params greedy = { 0 };
  tsr_sampler *smp = tsr_sampler_new (&greedy);
  bool ok = s && tsr_session_decode (s, prompt, n, all, true) == TSR_OK;
  if (ok)
    memcpy (l, all + (size_t) (n - 1) * v, sizeof *l * (size_t) v);
  for (int i = 0; ok && i < N_GEN; i++)
    {
      ids[i] = tsr_sampler_sample (smp, l, v);
      ok = i + 1 == N_GEN
           || tsr_session_decode (s, &ids[i], 1, l, false) == TSR_OK;
    }
  tsr_sampler_free (smp);
  free (l);
  tsr_session_free (s);
  tsr_model_free (m);
  tsr_backend_free (cpu);
  return ok;
}

static void
check_ids_and_logits (void)
{
  static const int32_t prompt[3] = { 1, 77, 300 };
  int32_t want[N_GEN], got[N_GEN];
  char args[4096];
  snprintf (args, sizeof args, "--tokens=1,77,300 -n %d --print-ids "
            "--ignore-eos --logits=%s -t 2", N_GEN, logits_path);
  int st = run_tool (args);
  CHECK (st == 0, "greedy run from token ids (exit %d: %s)", st, mt_out);
  CHECK (strstr (mt_out, "prompt: 3 tokens") && strstr (mt_out,
                                                        "generation: 8 tokens"),
         "the last line gives both speeds");
  float *all = malloc (sizeof *all * 3 * 512);
  if (!library_greedy (prompt, 3, want, all))
    CHECK (0, "library greedy decoding (%s)", tsr_last_error ());
  else
    {
      CHECK (parse_ids (got) == N_GEN && !memcmp (got, want, sizeof want),
             "--print-ids gives the library's greedy tokens");
      FILE *f = fopen (logits_path, "rb");
      unsigned char b[4 * 3 * 512 + 1];
      size_t n = f ? fread (b, 1, sizeof b, f) : 0;
      bool same = n == 4 * 3 * 512;
      for (size_t i = 0; same && i < 3 * 512; i++)
        {
          uint32_t u = (uint32_t) b[4 * i] | (uint32_t) b[4 * i + 1] << 8
                       | (uint32_t) b[4 * i + 2] << 16
                       | (uint32_t) b[4 * i + 3] << 24;
          float x;
          memcpy (&x, &u, 4);
          same = x == all[i];
        }
      CHECK (same, "--logits writes 3 x 512 little-endian floats equal to "
             "the library's (%zu bytes)", n);
      if (f)
        fclose (f);
    }
  free (all);
  unlink (logits_path);
}

static void
check_text_and_sampling (void)
{
  int st = run_tool ("-p 'Hello world' -n 6 -t 2");
  CHECK (st == 0 && strstr (mt_out, "prompt: ") && strstr (mt_out,
                                                           "tokens/s"),
         "a text prompt through the file's tokenizer (exit %d: %s)", st,
         mt_out);
  int32_t a[N_GEN], b[N_GEN];
  char args[256];
  snprintf (args, sizeof args, "--tokens=5,6,7 -n %d --temp=0.9 --seed=42 "
            "--print-ids --ignore-eos", N_GEN);
  bool ok = run_tool (args) == 0 && parse_ids (a) == N_GEN;
  ok = ok && run_tool (args) == 0 && parse_ids (b) == N_GEN;
  CHECK (ok && !memcmp (a, b, sizeof a), "sampling with a seed repeats");
}

static void
check_bench (void)
{
  int st = run_tool ("--bench --pp=16 --tg=4 -r 1 -f csv -t 2");
  CHECK (st == 0 && strstr (mt_out, "test,") && strstr (mt_out,
                                                      "tokens_per_s")
         && strstr (mt_out, ",pp16,") && strstr (mt_out, ",tg4,"),
         "--bench csv: header, pp16 and tg4 rows (exit %d: %s)", st, mt_out);
  st = run_tool ("--bench --pp=8 --tg=2 -r 1 -f json");
  CHECK (st == 0 && strstr (mt_out, "\"test\": \"pp8\""),
         "--bench json (exit %d)", st);
#ifdef __linux__
  /* The table says how much of the mapped file got 2 MiB pages (the
     tiny file: none, but its size is the file's, rounded to pages).  */
  st = run_tool ("--bench --pp=0 --tg=2 -r 1 -t 2");
  const char *at = strstr (mt_out, "CPU: the file's mapping, ");
  double mib = -1, pct = -1;
  if (at)
    sscanf (at, "CPU: the file's mapping, %lf MiB: %lf%% in 2 MiB pages",
            &mib, &pct);
  struct stat fst;
  double want = stat (model, &fst) == 0 ? fst.st_size / 1048576.0 : -10;
  CHECK (st == 0 && mib >= want - 1 && mib <= want + 1 && pct >= 0
         && pct <= 100, "--bench: the mapped file's share in 2 MiB pages "
         "(%.0f MiB, %.0f%%; the file %.1f MiB)", mib, pct, want);
  st = run_tool ("--bench --pp=0 --tg=2 -r 1 -t 2 --no-mmap");
  CHECK (st == 0 && !strstr (mt_out, "the file's mapping"),
         "--bench --no-mmap: no mapping to report");
#endif
}

/* The ids after "[sequence Q, seed S]" in mt_out into IDS (N_GEN).  */
static bool
parallel_ids (int q, int32_t *ids)
{
  char tag[64];
  snprintf (tag, sizeof tag, "[sequence %d, seed ", q);
  const char *p = strstr (mt_out, tag);
  p = p ? strchr (p, ']') : NULL;
  int n = 0, used;
  while (p && n < N_GEN && sscanf (p + 1, "%d%n", &ids[n], &used) == 1)
    {
      n++;
      p += used;
    }
  return n == N_GEN;
}

/* --parallel: continuations of one prompt decoded together, each as
   a run of its own with its seed would give it.  */
static void
check_parallel (void)
{
  static const int32_t prompt[3] = { 1, 77, 300 };
  int32_t want[N_GEN], got[N_GEN];
  float *all = malloc (sizeof *all * 3 * 512);
  char args[512];
  snprintf (args, sizeof args, "--tokens=1,77,300 -n %d --print-ids "
            "--ignore-eos --parallel=2 -t 2", N_GEN);
  int st = run_tool (args);
  bool ok = st == 0 && library_greedy (prompt, 3, want, all);
  for (int q = 0; q < 2 && ok; q++)
    ok = parallel_ids (q, got) && !memcmp (got, want, sizeof want);
  CHECK (ok, "--parallel=2, greedy: both continuations are the library's "
         "greedy tokens (exit %d: %s)", st, mt_out);
  free (all);
  snprintf (args, sizeof args, "--tokens=1,77,300 -n %d --print-ids "
            "--ignore-eos --parallel=3 --temp=0.9 --seed=42 -t 2", N_GEN);
  st = run_tool (args);
  int32_t par[3][N_GEN];
  ok = st == 0;
  for (int q = 0; q < 3 && ok; q++)
    ok = parallel_ids (q, par[q]);
  CHECK (ok && strstr (mt_out, "generation: 24 tokens"), "--parallel=3 "
         "--temp=0.9: three continuations, 24 tokens (exit %d: %s)", st,
         mt_out);
  for (int q = 0; q < 3 && ok; q++)
    {
      snprintf (args, sizeof args, "--tokens=1,77,300 -n %d --print-ids "
                "--ignore-eos --temp=0.9 --seed=%d -t 2", N_GEN, 42 + q);
      ok = run_tool (args) == 0 && parse_ids (got) == N_GEN;
      CHECK (ok && !memcmp (got, par[q], sizeof got), "--parallel: "
             "continuation %d is the run with --seed=%d alone", q, 42 + q);
    }
  CHECK (run_tool ("--tokens=1,2 -n -1 --parallel=2") == 2
         && strstr (mt_out, "--parallel goes without"),
         "--parallel with -n -1 is refused (%s)", mt_out);
  CHECK (run_tool ("--tokens=1,2 -n 4 --parallel=65") == 2,
         "--parallel=65 is refused (%s)", mt_out);
  CHECK (run_tool ("--tokens=1,2 -n 30 --parallel=4 --ctx=64") == 1
         && strstr (mt_out, "4 continuations of 30 do not fit"),
         "--parallel: continuations that do not fit --ctx are refused "
         "(%s)", mt_out);
}

/* --bench-batched: a row per sequence count, its columns consistent:
   the cells are the prompts plus every sequence's generated tokens,
   the prompt tokens and their time give the prompt's speed.  */
static void
check_bench_batched (void)
{
  int st = run_tool ("--bench-batched --pp=6 --tg=3 -r 1 -t 2 -f csv "
                     "--parallel-list=1,3,4");
  int rows = 0, bad = 0;
  const char *p = strstr (mt_out, "devices,pp,tg,pp_shared,n_parallel");
  for (p = p ? strchr (p, '\n') : NULL; p && *++p; p = strchr (p, '\n'))
    {
      char dev[64];
      int pp, tg, shared, npl, n_kv, n_pp;
      double pp_s, pp_tps, tg_s, tg_tps;
      if (sscanf (p, "%63[^,],%d,%d,%d,%d,%d,%d,%lf,%lf,%lf,%lf", dev, &pp,
                  &tg, &shared, &npl, &n_kv, &n_pp, &pp_s, &pp_tps, &tg_s,
                  &tg_tps) != 11)
        break;
      int want_npl = rows == 0 ? 1 : rows == 1 ? 3 : 4;
      bad += pp != 6 || tg != 3 || shared != 0 || npl != want_npl
             || n_kv != npl * (6 + 3) || n_pp != npl * 6 || !(pp_s > 0)
             /* The seconds are printed to the microsecond.  */
             || fabs (pp_tps - n_pp / pp_s) > 0.02 * pp_tps + 0.1
             || fabs (tg_tps - npl * 3 / tg_s) > 0.02 * tg_tps + 0.1;
      rows++;
    }
  CHECK (st == 0 && rows == 3 && bad == 0, "--bench-batched csv: 1, 3 and "
         "4 sequences, consistent columns (exit %d, %d rows, %d bad: %s)",
         st, rows, bad, mt_out);
  st = run_tool ("--bench-batched --pp=6 --tg=3 -r 1 -t 2 --pp-shared "
                 "--parallel-list=4 -f json");
  CHECK (st == 0 && strstr (mt_out, "\"pp_shared\": true")
         && strstr (mt_out, "\"n_parallel\": 4, \"n_kv\": 18, "
                            "\"pp_tokens\": 6,"),
         "--bench-batched --pp-shared json: one prompt of 6 and 4 x 3 "
         "generated in 18 cells (exit %d: %s)", st, mt_out);
  st = run_tool ("--bench-batched --pp=6 --tg=3 -r 1 --parallel-list=0");
  CHECK (st == 2 && strstr (mt_out, "sequence counts from 1 to 64"),
         "--parallel-list=0 is refused (exit %d: %s)", st, mt_out);
  st = run_tool ("--bench --parallel-list=2");
  CHECK (st == 2 && strstr (mt_out, "go with --bench-batched"),
         "--parallel-list without --bench-batched is refused (exit %d)", st);
}

static void
check_errors (void)
{
  static const struct
  {
    const char *args, *expect;
    int status;
  } bad[] = {
    { "--tokens=1,x", "token id", 2 },
    { "--tokens=1 -n -3", "-n", 2 },
    { "--tokens=1 --top-p=2", "top-p", 2 },
    { "--tokens=1 --device=", "device", 2 },
    { "--tokens=1 --device=NoSuchDevice0", "NoSuchDevice0", 1 },
    { "--tokens=1,512", "vocabulary", 1 },
    { "--tokens=1 -n 300 --ctx=64 --no-context-shift", "context", 1 },
    { "--tokens=1 -n 300 --ctx=64 --keep=40", "--keep", 1 },
    { "--tokens=1 -p hi", "both", 2 },
    { "--tokens=1 stray", "unexpected", 2 },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      int st = run_tool (bad[i].args);
      CHECK (st == bad[i].status && strstr (mt_out, bad[i].expect),
             "%s: exit %d with a message naming '%s' (exit %d: %s)",
             bad[i].args, bad[i].status, bad[i].expect, st, mt_out);
    }
  char cmd[4096];
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-run --tokens=1", mt_bld);
  CHECK (mt_shell (cmd) == 2 && strstr (mt_out, "-m"),
         "no model: usage error");
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-run -m %s.missing "
            "--tokens=1", mt_bld, model);
  CHECK (mt_shell (cmd) == 1 && strstr (mt_out, ".missing"),
         "a missing model file: exit 1 naming it");
}

int
main (void)
{
  if (!mt_init ())
    return TSR_TEST_EXIT ();
  if (!mt_synth ("--type=q8_0 --tokenizer=llama --ctx=512",
                 mt_path ("tool", model, sizeof model)))
    return TSR_TEST_EXIT ();
  mt_path ("tool-logits", logits_path, sizeof logits_path);
  check_ids_and_logits ();
  check_text_and_sampling ();
  check_bench ();
  check_bench_batched ();
  check_parallel ();
  check_errors ();
  unlink (model);
  return TSR_TEST_EXIT ();
}
