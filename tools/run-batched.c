/* run-batched.c - tessera-run --bench-batched: many sequences at once.
 *
 * Owns the batched benchmark: for each count B of parallel sequences
 * (--parallel-list, default 1,2,4,8,16,32), one session runs B
 * sequences of --pp prompt tokens each, all in batches of the rows of
 * every sequence (or, with --pp-shared, one prompt forked into the B
 * sequences, its cells shared), then --tg steps of one row a sequence:
 * B tokens a step through one graph.  Reported, as the median of
 * --repetitions runs (each from an empty cache): the prompt tokens
 * processed per second, the aggregate generated tokens per second (B
 * rows a step), the time of a step, and the aggregate's gain over one
 * sequence's -- the figures users compare with the field's batched
 * benchmarks.  Table, csv or json (--format).  */
#include <config.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "tool-util.h"

static const char *program = "tessera-run";

#define MAX_LIST 16

struct row
{
  int npl;                      /* parallel sequences */
  int n_pp;                     /* prompt tokens processed (shared: PP) */
  int n_kv;                     /* cells at the end */
  double pp_s, tg_s;            /* medians */
};

static int32_t
token (int i, int q, int64_t n_vocab)
{
  return (int32_t) (((int64_t) i * 7919 + (int64_t) q * 104729 + 13)
                    % n_vocab);
}

/* One run of NPL sequences: the prompt phase's and the steps' seconds
   into *PP_S and *TG_S.  TOK, SEQ, WANT: buffers of N_BATCH rows;
   LOGITS: of NPL rows (the rows whose logits are wanted: a prompt's
   last, one a sequence a step).  */
static int
run_once (tsr_session *s, const struct run_options *o, int npl,
          int64_t n_vocab, int n_batch, int32_t *tok, int32_t *seq,
          bool *want, float *logits, double *pp_s, double *tg_s)
{
  tsr_session_reset (s);
  double t0 = tt_now_us ();
  int st = TSR_OK;
  if (o->pp_shared || npl == 1)
    {
      /* One prompt, in batches of N_BATCH, then shared.  */
      for (int off = 0; off < o->pp && st == TSR_OK; off += n_batch)
        {
          int k = o->pp - off < n_batch ? o->pp - off : n_batch;
          for (int i = 0; i < k; i++)
            {
              tok[i] = token (off + i, 0, n_vocab);
              seq[i] = 0;
              want[i] = off + i == o->pp - 1;
            }
          struct tsr_batch b = { .n_tokens = k, .tokens = tok, .seq = seq,
                                 .logits = want };
          st = tsr_session_decode_batch (s, &b, logits);
        }
      for (int q = 1; q < npl && st == TSR_OK; q++)
        st = tsr_session_seq_fork (s, 0, q);
    }
  else
    {
      /* Every sequence's prompt: the rows of all, sequence after
         sequence, in batches of N_BATCH.  */
      const int total = npl * o->pp;
      for (int off = 0; off < total && st == TSR_OK; off += n_batch)
        {
          int k = total - off < n_batch ? total - off : n_batch;
          for (int i = 0; i < k; i++)
            {
              int r = off + i, q = r / o->pp, p = r % o->pp;
              tok[i] = token (p, q, n_vocab);
              seq[i] = q;
              want[i] = p == o->pp - 1;
            }
          struct tsr_batch b = { .n_tokens = k, .tokens = tok, .seq = seq,
                                 .logits = want };
          st = tsr_session_decode_batch (s, &b, logits);
        }
    }
  double t1 = tt_now_us ();
  for (int g = 0; g < o->tg && st == TSR_OK; g++)
    {
      for (int q = 0; q < npl; q++)
        {
          tok[q] = token (o->pp + g, q, n_vocab);
          seq[q] = q;
          want[q] = true;
        }
      struct tsr_batch b = { .n_tokens = npl, .tokens = tok, .seq = seq,
                             .logits = want };
      st = tsr_session_decode_batch (s, &b, logits);
    }
  double t2 = tt_now_us ();
  *pp_s = (t1 - t0) / 1e6;
  *tg_s = (t2 - t1) / 1e6;
  return st;
}

static int
bench_npl (tsr_model *m, const struct run_options *o, int npl,
           struct row *r)
{
  const int64_t n_vocab = tsr_model_get_hparams (m)->n_vocab;
  const bool shared = o->pp_shared || npl == 1;
  int64_t cells = (shared ? (int64_t) o->pp : (int64_t) npl * o->pp)
                  + (int64_t) npl * o->tg;
  if (cells > INT_MAX - 1)
    {
      fprintf (stderr, "%s: %d sequences of %d + %d tokens: too many "
               "positions\n", program, npl, o->pp, o->tg);
      return -1;
    }
  int n_batch = o->n_batch > 0 ? o->n_batch : 512;
  if (n_batch < npl)
    n_batch = npl;
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = (int) cells > 0 ? (int) cells : 1;
  sp.n_batch = n_batch;
  sp.n_threads = o->n_threads;
  sp.kv_type = o->kv_f32 ? TSR_TYPE_F32 : TSR_TYPE_F16;
  sp.n_ubatch = o->n_ubatch;
  sp.n_pipeline = o->n_pipeline;
  tsr_session *s = tsr_session_new (m, &sp);
  if (!s)
    {
      fprintf (stderr, "%s: %d sequences: %s\n", program, npl,
               tsr_last_error ());
      return -1;
    }
  if (tsr_session_n_ctx (s) < sp.n_ctx)
    {
      fprintf (stderr, "%s: %d sequences need %d cache positions; the "
               "model's context has %d\n", program, npl, sp.n_ctx,
               tsr_session_n_ctx (s));
      tsr_session_free (s);
      return -1;
    }
  int32_t *tok = malloc ((size_t) n_batch * 2 * sizeof *tok);
  bool *want = malloc ((size_t) n_batch * sizeof *want);
  float *logits = malloc ((size_t) npl * (size_t) n_vocab
                          * sizeof *logits);
  double *pp = calloc ((size_t) o->repetitions, sizeof *pp);
  double *tg = calloc ((size_t) o->repetitions, sizeof *tg);
  int st = TSR_OK;
  if (!tok || !want || !logits || !pp || !tg)
    {
      fprintf (stderr, "%s: %d sequences: out of memory\n", program, npl);
      st = -1;
    }
  for (int k = 0; k < o->repetitions && st == TSR_OK; k++)
    st = run_once (s, o, npl, n_vocab, n_batch, tok, tok + n_batch, want,
                   logits, &pp[k], &tg[k]);
  if (st == TSR_OK)
    {
      r->npl = npl;
      r->n_pp = shared ? o->pp : npl * o->pp;
      r->n_kv = (int) cells;
      r->pp_s = tt_median (pp, o->repetitions);
      r->tg_s = tt_median (tg, o->repetitions);
    }
  else if (st != -1)
    fprintf (stderr, "%s: %d sequences: %s\n", program, npl,
             tsr_last_error ());
  free (tok);
  free (want);
  free (logits);
  free (pp);
  free (tg);
  tsr_session_free (s);
  return st == TSR_OK ? 0 : -1;
}

/* The sequence counts of LIST ("1,2,4"): their number, or -1 after a
   message.  */
static int
parse_list (const char *list, int *npl)
{
  int n = 0;
  const char *p = list;
  while (*p)
    {
      char *end;
      long v = strtol (p, &end, 10);
      if (end == p || v < 1 || v > TSR_SEQ_MAX || (*end && *end != ',')
          || n == MAX_LIST)
        {
          fprintf (stderr, "%s: --parallel-list=%s: sequence counts from 1 "
                   "to %d, comma-separated, at most %d of them\n", program,
                   list, TSR_SEQ_MAX, MAX_LIST);
          return -1;
        }
      npl[n++] = (int) v;
      p = *end ? end + 1 : end;
    }
  if (n == 0)
    fprintf (stderr, "%s: --parallel-list is empty\n", program);
  return n ? n : -1;
}

static void
report (const struct run_options *o, const char *model_desc,
        const char *devices, const struct row *rows, int n)
{
  bool csv = strcmp (o->format, "csv") == 0;
  bool json = strcmp (o->format, "json") == 0;
  double tg1 = 0;
  for (int i = 0; i < n; i++)
    if (rows[i].npl == 1 && rows[i].tg_s > 0)
      tg1 = o->tg / rows[i].tg_s;
  if (csv)
    puts ("devices,pp,tg,pp_shared,n_parallel,n_kv,pp_tokens,pp_s,"
          "pp_tokens_per_s,tg_s,tg_tokens_per_s,step_ms,tg_gain");
  else if (json)
    {
      fputs ("{\n  \"model\": ", stdout);
      tt_print_json_string (o->model, strlen (o->model), stdout);
      fputs (",\n  \"devices\": ", stdout);
      tt_print_json_string (devices, strlen (devices), stdout);
      printf (",\n  \"pp\": %d, \"tg\": %d, \"pp_shared\": %s, \"runs\": %d,"
              "\n  \"results\": [", o->pp, o->tg,
              o->pp_shared ? "true" : "false", o->repetitions);
    }
  else
    printf ("model: %s\ndevices: %s; each sequence: a prompt of %d tokens "
            "(%s), then %d generated, one row a step; median of %d\n\n"
            "%5s %7s %9s %11s %9s %12s %9s %8s\n", model_desc, devices, o->pp,
            o->pp_shared ? "one, shared" : "its own", o->tg, o->repetitions,
            "seqs", "cells", "pp s", "pp tok/s", "tg s", "tg tok/s",
            "step ms", "gain");
  for (int i = 0; i < n; i++)
    {
      const struct row *r = &rows[i];
      double pps = r->pp_s > 0 ? r->n_pp / r->pp_s : 0;
      double tgs = r->tg_s > 0 ? (double) r->npl * o->tg / r->tg_s : 0;
      double step = o->tg > 0 ? 1e3 * r->tg_s / o->tg : 0;
      double gain = tg1 > 0 ? tgs / tg1 : 0;
      if (csv)
        printf ("%s,%d,%d,%d,%d,%d,%d,%.6f,%.2f,%.6f,%.2f,%.3f,%.2f\n",
                devices, o->pp, o->tg, o->pp_shared, r->npl, r->n_kv, r->n_pp,
                r->pp_s, pps, r->tg_s, tgs, step, gain);
      else if (json)
        printf ("%s\n    { \"n_parallel\": %d, \"n_kv\": %d, "
                "\"pp_tokens\": %d, \"pp_s\": %.6f, \"pp_tokens_per_s\": "
                "%.2f, \"tg_s\": %.6f, \"tg_tokens_per_s\": %.2f, "
                "\"step_ms\": %.3f, \"tg_gain\": %.2f }", i ? "," : "",
                r->npl, r->n_kv, r->n_pp, r->pp_s, pps, r->tg_s, tgs, step,
                gain);
      else
        {
          char g[16] = "";
          if (gain > 0)
            snprintf (g, sizeof g, "%.2fx", gain);
          printf ("%5d %7d %9.3f %11.2f %9.3f %12.2f %9.2f %8s\n", r->npl,
                  r->n_kv, r->pp_s, pps, r->tg_s, tgs, step, g);
        }
    }
  if (json)
    puts ("\n  ]\n}");
}

int
run_bench_batched (const struct run_options *o)
{
  int npl[MAX_LIST];
  int n = parse_list (o->parallel_list ? o->parallel_list
                                       : "1,2,4,8,16,32", npl);
  if (n < 0)
    return 2;
  if (o->n_sets > 1)
    {
      fprintf (stderr, "%s: --bench-batched takes one device set\n",
               program);
      return 2;
    }
  if (o->comm)
    {
      fprintf (stderr, "%s: --bench-batched runs in one process\n",
               program);
      return 2;
    }
  tsr_backend *be[TSR_SCHED_MAX_BACKENDS];
  int n_be = run_open_backends (o->n_sets ? o->devices[0] : NULL,
                                o->gpu_layers, be, TSR_SCHED_MAX_BACKENDS);
  if (n_be < 0)
    return 1;
  struct tsr_model_params mp = { .backends = n_be ? be : NULL,
                                 .n_backends = n_be,
                                 .gpu_layers = o->gpu_layers,
                                 .no_mmap = o->no_mmap,
                                 .no_repack = o->no_repack };
  tsr_model *m = tsr_model_load (o->model, &mp);
  int failed = 0;
  if (!m)
    {
      fprintf (stderr, "%s: %s\n", program, tsr_last_error ());
      failed = 1;
    }
  struct row rows[MAX_LIST];
  int done = 0;
  char devices[256] = "";
  if (m)
    run_device_names (m, devices, sizeof devices);
  for (int i = 0; m && i < n; i++)
    if (bench_npl (m, o, npl[i], &rows[done]) == 0)
      done++;
    else
      failed = 1;
  if (m)
    report (o, tsr_model_describe (m), devices, rows, done);
  tsr_model_free (m);
  for (int i = 0; i < n_be; i++)
    tsr_backend_free (be[i]);
  return failed;
}
