/* run-bench.c - tessera-run --bench: a model's speed per device set.
 *
 * Owns the model benchmark: for each device set, pp (tokens per second
 * processing a prompt of --pp tokens in one batch from an empty cache)
 * and tg (tokens per second generating --tg tokens one at a time from
 * an empty cache), the median of --repetitions timed runs after one
 * untimed warm-up, and what they imply: GFLOP/s-equivalent for pp
 * (2 x parameters x tokens / time) and, for tg, the weight bytes read
 * per second against the read bandwidth of the memory the weights are
 * in, measured in the same run (the memory roof: tokens/s can be at
 * most bandwidth / bytes per token): the host's when the set's first
 * device is the CPU, else that device's own (its backend sums a 1 GiB
 * tensor in its memory).  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "tool-util.h"

static const char *program = "tessera-run";

struct result
{
  const char *test;             /* "pp" or "tg" */
  int n;                        /* tokens per run */
  double median_us, min_us, max_us;
};

struct set_report
{
  char devices[256];
  char model[256];
  uint64_t bytes_per_token, n_params;
  double roof;                  /* device sets: its memory's GB/s */
  bool mapped;                  /* the file's mapping was seen: */
  uint64_t map_kb, pmd_kb;      /* its size, in 2 MiB pages */
  struct result r[2];
  int n_results;
  /* Over several processes: communication per generated token (this
     rank's), measured over the tg runs.  */
  double comm_ops, comm_bytes, comm_us;
  /* The scheduler per generated token (the tg runs): its plan's splits
     and copies, and the time it spent planning (amortized: a session
     plans again every 256 positions) and in its own bookkeeping, with
     the token's time.  */
  bool have_sched;
  struct tsr_sched_stats sched;
  double sched_plan_us, sched_overhead_us, token_us;
  /* The counters of the backends that keep them, per pp batch and per
     generated token (the warm-up run and the timed ones).  */
  int n_counted;
  struct counted
  {
    char name[32];
    struct tsr_backend_counters c[2];   /* pp, tg */
    double per[2];                       /* batches, tokens */
  } counted[TSR_SCHED_MAX_BACKENDS];
};

static int32_t
bench_token (int i, int64_t n_vocab)
{
  return (int32_t) (((int64_t) i * 7919 + 13) % n_vocab);
}

/* One pp run: N tokens in one batch from an empty cache.  */
static int
run_pp (tsr_session *s, int n, int64_t n_vocab, int32_t *ids, float *logits)
{
  for (int i = 0; i < n; i++)
    ids[i] = bench_token (i, n_vocab);
  tsr_session_reset (s);
  return tsr_session_decode (s, ids, n, logits, false);
}

/* One tg run: N tokens one at a time from an empty cache.  */
static int
run_tg (tsr_session *s, int n, int64_t n_vocab, int32_t *ids, float *logits)
{
  (void) ids;
  tsr_session_reset (s);
  for (int i = 0; i < n; i++)
    {
      int32_t id = bench_token (i, n_vocab);
      int st = tsr_session_decode (s, &id, 1, logits, false);
      if (st != TSR_OK)
        return st;
    }
  return TSR_OK;
}

typedef int (*run_fn) (tsr_session *, int, int64_t, int32_t *, float *);

static int
time_test (tsr_session *s, const struct run_options *o, run_fn fn, int n,
           int64_t n_vocab, struct result *r)
{
  double *us = calloc ((size_t) o->repetitions, sizeof *us);
  int32_t *ids = malloc ((size_t) (n ? n : 1) * sizeof *ids);
  float *logits = malloc ((size_t) n_vocab * sizeof *logits);
  int st = us && ids && logits ? TSR_OK : TSR_ERR_NO_MEMORY;
  if (st == TSR_OK)
    st = fn (s, n, n_vocab, ids, logits);          /* warm-up */
  for (int k = 0; k < o->repetitions && st == TSR_OK; k++)
    {
      double t0 = tt_now_us ();
      st = fn (s, n, n_vocab, ids, logits);
      us[k] = tt_now_us () - t0;
    }
  if (st == TSR_OK)
    {
      r->n = n;
      r->median_us = tt_median (us, o->repetitions);
      r->min_us = us[0];
      r->max_us = us[o->repetitions - 1];
    }
  free (us);
  free (ids);
  free (logits);
  return st;
}

/* Zero the counters of the backends S computes on (TEST < 0), or keep
   them for TEST (0 pp, 1 tg) over RUNS runs.  */
static void
count (tsr_model *m, tsr_session *s, struct set_report *rep, int test,
       double runs)
{
  int k = 0;
  for (int i = 0; i < tsr_model_n_backends (m)
                  && k < TSR_SCHED_MAX_BACKENDS; i++)
    {
      struct tsr_backend_counters c;
      tsr_backend *be = tsr_session_backend (s, i);
      if (tsr_backend_get_counters (be, &c, true) != TSR_OK)
        {
          tsr_clear_error ();
          continue;
        }
      if (test >= 0)
        {
          struct counted *e = &rep->counted[k];
          snprintf (e->name, sizeof e->name, "%s", tsr_backend_name (be));
          e->c[test] = c;
          e->per[test] = runs;
        }
      k++;
    }
  if (test >= 0)
    rep->n_counted = k;
}

static int
bench_session (tsr_model *m, const struct run_options *o,
               struct set_report *rep)
{
  const struct tsr_model_hparams *hp = tsr_model_get_hparams (m);
  int need = (o->pp > o->tg ? o->pp : o->tg) + 1;
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = need;
  sp.n_batch = o->pp > 0 ? o->pp : 1;
  sp.n_threads = o->n_threads;
  sp.kv_type = o->kv_f32 ? TSR_TYPE_F32 : TSR_TYPE_F16;
  sp.n_ubatch = o->n_ubatch;
  sp.n_pipeline = o->n_pipeline;
  tsr_session *s = tsr_session_new (m, &sp);
  int st = s ? TSR_OK : tsr_last_status ();
  if (st == TSR_OK && tsr_session_n_ctx (s) < need)
    {
      fprintf (stderr, "%s: the model's context (%d) is shorter than the "
               "test (%d)\n", program, tsr_session_n_ctx (s), need);
      tsr_session_free (s);
      return -1;
    }
  if (st == TSR_OK && o->pp > 0)
    {
      rep->r[rep->n_results].test = "pp";
      count (m, s, rep, -1, 0);
      st = time_test (s, o, run_pp, o->pp, hp->n_vocab,
                      &rep->r[rep->n_results]);
      count (m, s, rep, 0, o->repetitions + 1);
      rep->n_results += st == TSR_OK;
    }
  if (st == TSR_OK && o->tg > 0)
    {
      struct tsr_comm_stats c0 = { 0 }, c1 = { 0 };
      if (o->comm)
        tsr_comm_get_stats (o->comm, &c0);
      rep->r[rep->n_results].test = "tg";
      tsr_sched_clear_stats (tsr_session_sched (s));
      count (m, s, rep, -1, 0);
      st = time_test (s, o, run_tg, o->tg, hp->n_vocab,
                      &rep->r[rep->n_results]);
      count (m, s, rep, 1, (double) o->tg * (o->repetitions + 1));
      if (st == TSR_OK)
        {
          struct tsr_sched_stats *ss = &rep->sched;
          tsr_sched_get_stats (tsr_session_sched (s), ss);
          double n = ss->n_computes ? (double) ss->n_computes : 1;
          rep->have_sched = true;
          rep->sched_plan_us = ss->plan_seconds * 1e6 / n;
          rep->sched_overhead_us = ss->overhead_seconds * 1e6 / n;
          rep->token_us = rep->r[rep->n_results].median_us / o->tg;
        }
      rep->n_results += st == TSR_OK;
      if (o->comm && st == TSR_OK)
        {
          /* The warm-up run and the timed ones.  */
          double tokens = (double) o->tg * (o->repetitions + 1);
          tsr_comm_get_stats (o->comm, &c1);
          rep->comm_ops = (double) (c1.ops - c0.ops) / tokens;
          rep->comm_bytes = (double) (c1.bytes - c0.bytes) / tokens;
          rep->comm_us = (c1.seconds - c0.seconds) * 1e6 / tokens;
        }
    }
  tsr_session_free (s);
  return st;
}

void
run_device_names (tsr_model *m, char *buf, size_t size)
{
  buf[0] = 0;
  for (int i = 0; i < tsr_model_n_backends (m); i++)
    {
      size_t len = strlen (buf);
      snprintf (buf + len, size - len, "%s%s", i ? "+" : "",
                tsr_device_name (tsr_backend_device (tsr_model_backend (m,
                                                                        i))));
    }
}

/* Load the model on the device set LIST (NULL: the default) and time
   it.  */
static int
bench_set (const struct run_options *o, const char *list,
           struct set_report *rep)
{
  tsr_backend *be[TSR_SCHED_MAX_BACKENDS];
  int n_be = run_open_backends (list, o->gpu_layers, be,
                                TSR_SCHED_MAX_BACKENDS);
  if (n_be < 0)
    return -1;
  struct tsr_model_params mp = { .backends = n_be ? be : NULL,
                                 .n_backends = n_be,
                                 .gpu_layers = o->gpu_layers,
                                 .no_mmap = o->no_mmap,
                                 .no_repack = o->no_repack,
                                 .comm = o->comm, .split = o->split };
  tsr_model *m = tsr_model_load (o->model, &mp);
  int st = m ? TSR_OK : tsr_last_status ();
  if (m)
    {
      run_device_names (m, rep->devices, sizeof rep->devices);
      snprintf (rep->model, sizeof rep->model, "%s", tsr_model_describe (m));
      rep->bytes_per_token = tsr_model_bytes_per_token (m);
      rep->n_params = tsr_model_n_params (m);
      st = bench_session (m, o, rep);
      /* Weights read in place from the file: whether the page cache let
         the kernel map them with 2 MiB pages changes tg by a quarter
         (see the manual).  */
      if (!o->no_mmap)
        rep->mapped = tt_mapped_pages (o->model, &rep->map_kb,
                                       &rep->pmd_kb);
      tsr_backend *first = tsr_model_backend (m, 0);
      if (st == TSR_OK && first
          && tsr_device_get_type (tsr_backend_device (first))
             != TSR_DEVICE_CPU)
        {
          tsr_clear_error ();
          rep->roof = tt_device_bandwidth (first);
          if (rep->roof <= 0)
            fprintf (stderr, "%s: %s: cannot measure the device's read "
                     "bandwidth (%s); its roof is the host's\n", program,
                     rep->devices, *tsr_last_error () ? tsr_last_error ()
                     : "sum not supported");
        }
    }
  if (st != TSR_OK && st != -1)
    fprintf (stderr, "%s: %s: %s\n", program, list ? list : "default devices",
             tsr_last_error ());
  tsr_model_free (m);
  for (int i = 0; i < n_be; i++)
    tsr_backend_free (be[i]);
  return st == TSR_OK ? 0 : -1;
}

/* Report.  */

struct figures
{
  double tps, gflops, gbps, roof_pct;
};

static struct figures
figures_of (const struct set_report *rep, const struct result *r,
            double roof)
{
  struct figures f = { 0 };
  f.tps = r->median_us > 0 ? r->n * 1e6 / r->median_us : 0;
  f.gflops = 2.0 * (double) rep->n_params * f.tps / 1e9;
  if (strcmp (r->test, "tg") == 0)
    {
      f.gbps = f.tps * (double) rep->bytes_per_token / 1e9;
      f.roof_pct = roof > 0 ? 100 * f.gbps / roof : 0;
    }
  return f;
}

static void
report (const struct run_options *o, const struct set_report *reps, int n,
        double host_roof)
{
  bool csv = strcmp (o->format, "csv") == 0;
  bool json = strcmp (o->format, "json") == 0;
  if (csv)
    puts ("devices,test,n_tokens,runs,tokens_per_s,min_tokens_per_s,"
          "max_tokens_per_s,gflops,bytes_per_token,gb_per_s,read_roof_gb_per_s,"
          "roof_pct");
  else if (json)
    {
      /* Names from the command line and the devices: escaped, and
         valid UTF-8 whatever the bytes of a path.  */
      fputs ("{\n  \"model\": ", stdout);
      tt_print_json_string (o->model, strlen (o->model), stdout);
      printf (",\n  \"read_roof_gb_per_s\": %.2f,\n  \"results\": [",
              host_roof);
    }
  else
    {
      printf ("model: %s\nhost read bandwidth (roof): %.1f GB/s\n",
              n ? reps[0].model : "", host_roof);
      for (int i = 0; i < n; i++)
        if (reps[i].mapped && reps[i].roof <= 0)
          printf ("%s: the file's mapping, %.0f MiB: %.0f%% in 2 MiB "
                  "pages\n", reps[i].devices, reps[i].map_kb / 1024.0,
                  reps[i].map_kb ? 100.0 * (double) reps[i].pmd_kb
                                   / (double) reps[i].map_kb : 0.0);
      for (int i = 0; i < n; i++)
        if (reps[i].roof > 0)
          printf ("%s: read bandwidth of its first device (roof): %.1f "
                  "GB/s\n", reps[i].devices, reps[i].roof);
      printf ("\n%-20s %-6s %10s %14s %10s %10s %8s\n", "devices", "test",
              "tokens/s", "(min-max)", "GFLOP/s", "wGB/s", "roof");
    }
  const char *sep = "";
  for (int i = 0; i < n; i++)
    for (int k = 0; k < reps[i].n_results; k++)
      {
        const struct result *r = &reps[i].r[k];
        double roof = reps[i].roof > 0 ? reps[i].roof : host_roof;
        struct figures f = figures_of (&reps[i], r, roof);
        double lo = r->n * 1e6 / r->max_us, hi = r->n * 1e6 / r->min_us;
        if (csv)
          printf ("%s,%s%d,%d,%d,%.3f,%.3f,%.3f,%.2f,%llu,%.2f,%.2f,%.1f\n",
                  reps[i].devices, r->test, r->n, r->n, o->repetitions,
                  f.tps, lo, hi, f.gflops,
                  (unsigned long long) reps[i].bytes_per_token, f.gbps, roof,
                  f.roof_pct);
        else if (json)
          {
            printf ("%s\n    { \"devices\": ", sep);
            tt_print_json_string (reps[i].devices, strlen (reps[i].devices),
                                  stdout);
            printf (", \"test\": \"%s%d\", "
                    "\"n_tokens\": %d, \"runs\": %d, \"tokens_per_s\": %.3f, "
                    "\"gflops\": %.2f, \"bytes_per_token\": %llu, "
                    "\"gb_per_s\": %.2f, \"read_roof_gb_per_s\": %.2f, "
                    "\"roof_pct\": %.1f }",
                    r->test, r->n, r->n, o->repetitions,
                    f.tps, f.gflops,
                    (unsigned long long) reps[i].bytes_per_token, f.gbps,
                    roof, f.roof_pct);
            sep = ",";
          }
        else
          {
            char test[16], range[32], bw[16] = "", pct[16] = "";
            snprintf (test, sizeof test, "%s%d", r->test, r->n);
            snprintf (range, sizeof range, "%.1f-%.1f", lo, hi);
            if (f.gbps > 0)
              {
                snprintf (bw, sizeof bw, "%.1f", f.gbps);
                snprintf (pct, sizeof pct, "%.0f%%", f.roof_pct);
              }
            printf ("%-20s %-6s %10.2f %14s %10.1f %10s %8s\n",
                    reps[i].devices, test, f.tps, range, f.gflops, bw, pct);
          }
      }
  if (json)
    puts ("\n  ]\n}");
  for (int i = 0; i < n && !csv && !json; i++)
    if (reps[i].have_sched)
      {
        const struct set_report *r = &reps[i];
        const struct tsr_sched_stats *ss = &r->sched;
        double pct = r->token_us > 0 ? 100 * (r->sched_plan_us
                                              + r->sched_overhead_us)
                                         / r->token_us : 0;
        printf ("%s: scheduler per generated token: %d split%s, %d "
                "cop%s (weights %llu B, cache %llu B, activations %llu B), "
                "%d exception%s; plan %.1f us, bookkeeping %.1f us: %.2f%% "
                "of the token's %.0f us\n", r->devices, ss->n_splits,
                ss->n_splits == 1 ? "" : "s", ss->n_copies,
                ss->n_copies == 1 ? "y" : "ies",
                (unsigned long long) ss->bytes[TSR_SCHED_COPY_WEIGHT],
                (unsigned long long) ss->bytes[TSR_SCHED_COPY_CACHE],
                (unsigned long long) ss->bytes[TSR_SCHED_COPY_ACTIVATION],
                ss->n_exceptions, ss->n_exceptions == 1 ? "" : "s",
                r->sched_plan_us, r->sched_overhead_us, pct, r->token_us);
      }
  for (int i = 0; i < n && !csv && !json; i++)
    for (int k = 0; k < reps[i].n_counted; k++)
      for (int t = 0; t < 2; t++)
        {
          const struct counted *e = &reps[i].counted[k];
          const struct tsr_backend_counters *c = &e->c[t];
          double per = e->per[t];
          if (per <= 0 || c->computes == 0)
            continue;
          printf ("%s: %s per %s: %.1f kernels, %.1f nodes (%.1f fused), "
                  "%llu graph capture%s, %llu replay%s of %llu computes\n",
                  reps[i].devices, e->name, t ? "generated token" : "pp batch",
                  (double) c->launches / per, (double) c->nodes / per,
                  (double) c->fused / per,
                  (unsigned long long) c->graph_captures,
                  c->graph_captures == 1 ? "" : "s",
                  (unsigned long long) c->graph_replays,
                  c->graph_replays == 1 ? "" : "s",
                  (unsigned long long) c->computes);
        }
  for (int i = 0; i < n && o->comm && !csv && !json; i++)
    if (reps[i].comm_ops > 0)
      printf ("%s: communication per generated token (rank 0): %.1f "
              "operations, %.0f bytes, %.1f us in them\n", reps[i].devices,
              reps[i].comm_ops, reps[i].comm_bytes, reps[i].comm_us);
}

int
run_bench (const struct run_options *o)
{
  int n_sets = o->n_sets ? o->n_sets : 1;
  struct set_report *reps = calloc ((size_t) n_sets, sizeof *reps);
  int failed = 0, n = 0;
  if (!reps)
    return 1;
  int threads = o->n_threads > 0 ? o->n_threads : 2;
  double roof_before = tt_read_bandwidth (threads);
  for (int i = 0; i < n_sets; i++)
    if (bench_set (o, o->n_sets ? o->devices[i] : NULL, &reps[n]) == 0)
      n++;
    else
      failed = 1;
  /* The machine may be shared: the roof is the better of two
     measurements, one on each side of the tests.  */
  double roof_after = tt_read_bandwidth (threads);
  report (o, reps, n, roof_after > roof_before ? roof_after : roof_before);
  free (reps);
  return failed;
}
