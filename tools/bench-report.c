/* bench-report.c - tessera-bench's output formats.
 *
 * Owns how results are written: a table per device for people, CSV
 * (one header line, one line per case and device) and JSON (one object
 * with the devices and a "results" array, one result per line) for
 * programs.  Rates are derived here from a result's median time and
 * its cost; a rate that does not apply is "-" in the table, an empty
 * CSV field and null in JSON.  */
#include <config.h>

#include <inttypes.h>
#include <string.h>

#include "bench.h"

static const char *
status_name (enum bench_status s)
{
  return s == BENCH_OK ? "ok" : s == BENCH_UNSUPPORTED ? "unsupported"
                                                       : "error";
}

/* Rates of R, 0 where one does not apply.  */
struct rates
{
  double gflops, gbps, weight_gbps;
};

static struct rates
rates_of (const struct bench_result *r)
{
  struct rates x = { 0 };
  if (r->status != BENCH_OK)
    return x;
  /* Per microsecond, 1e3 per nanosecond: GFLOP/s and GB/s.  */
  x.gflops = r->cost.flops / r->us_median / 1e3;
  x.gbps = r->cost.bytes / r->us_median / 1e3;
  x.weight_gbps = r->cost.weight_bytes / r->us_median / 1e3;
  return x;
}

/* V with at least two decimals and three significant digits, so that
   a small positive number never reads as 0; "-" for 0.  */
static const char *
number (char *buf, size_t n, double v)
{
  if (v <= 0)
    snprintf (buf, n, "-");
  else if (v >= 1)
    snprintf (buf, n, "%.2f", v);
  else
    snprintf (buf, n, "%.3g", v);
  return buf;
}

/* Table.  */

static void
table_rate (FILE *f, int width, double v)
{
  char buf[32];
  fprintf (f, " %*s", width, number (buf, sizeof buf, v));
}

static void
table_result (FILE *f, const struct bench_case *c,
              const struct bench_result *r)
{
  struct rates x = rates_of (r);
  char k[24] = "-";
  if (c->kind->uses_k)
    snprintf (k, sizeof k, "%" PRId64, c->k);
  fprintf (f, "%-15s %-6s %6" PRId64 " %6s %6" PRId64 " %5d", c->kind->name,
           tsr_type_name (c->type), c->m, k, c->n, c->kind->nodes);
  if (r->status != BENCH_OK)
    {
      fprintf (f, "  %s: %s\n", status_name (r->status), r->msg);
      return;
    }
  fprintf (f, " %5d", r->runs);
  table_rate (f, 12, r->us_median);
  table_rate (f, 9, x.gflops);
  table_rate (f, 8, x.gbps);
  table_rate (f, 8, x.weight_gbps);
  fprintf (f, "\n");
}

static void
table_device (FILE *f, const struct bench_device *d)
{
  char threads[32] = "the backend's default";
  if (d->threads > 0)
    snprintf (threads, sizeof threads, "%d", d->threads);
  fprintf (f, "== %s (threads: %s): %s\n", tsr_device_name (d->dev), threads,
           tsr_device_description (d->dev));
  fprintf (f, "%-15s %-6s %6s %6s %6s %5s %5s %12s %9s %8s %8s\n", "op",
           "type", "m", "k", "n", "nodes", "runs", "us/run", "GFLOP/s",
           "GB/s", "wGB/s");
}

/* CSV (RFC 4180).  */

static void
csv_string (FILE *f, const char *s)
{
  if (!strpbrk (s, ",\"\r\n"))
    {
      fputs (s, f);
      return;
    }
  fputc ('"', f);
  for (; *s; s++)
    {
      if (*s == '"')
        fputc ('"', f);
      fputc (*s, f);
    }
  fputc ('"', f);
}

static void
csv_number (FILE *f, double v)
{
  char buf[32];
  fprintf (f, ",%s", v > 0 ? number (buf, sizeof buf, v) : "");
}

static void
csv_result (FILE *f, const struct bench_device *d, const struct bench_case *c,
            const struct bench_result *r)
{
  struct rates x = rates_of (r);
  csv_string (f, tsr_device_name (d->dev));
  fprintf (f, ",%s,%s,%" PRId64 ",", c->kind->name, tsr_type_name (c->type),
           c->m);
  if (c->kind->uses_k)
    fprintf (f, "%" PRId64, c->k);
  fprintf (f, ",%" PRId64 ",%d,", c->n, c->kind->nodes);
  if (d->threads > 0)
    fprintf (f, "%d", d->threads);
  fprintf (f, ",%s,", status_name (r->status));
  if (r->status == BENCH_OK)
    fprintf (f, "%d", r->runs);
  csv_number (f, r->status == BENCH_OK ? r->us_median : 0);
  csv_number (f, r->status == BENCH_OK ? r->us_min : 0);
  csv_number (f, x.gflops);
  csv_number (f, x.gbps);
  csv_number (f, x.weight_gbps);
  fputc (',', f);
  csv_string (f, r->msg);
  fputc ('\n', f);
}

/* JSON.  */

static bool json_first;

static void
json_string (FILE *f, const char *s)
{
  tt_print_json_string (s, strlen (s), f);
}

static void
json_number (FILE *f, const char *key, double v)
{
  char buf[32];
  fprintf (f, ", \"%s\": %s", key,
           v > 0 ? number (buf, sizeof buf, v) : "null");
}

static void
json_begin (FILE *f, const struct bench_device *devs, size_t n_devs)
{
  fprintf (f, "{\n  \"tool\": \"tessera-bench\",\n  \"version\": ");
  json_string (f, tsr_version ());
  fprintf (f, ",\n  \"devices\": [");
  for (size_t i = 0; i < n_devs; i++)
    {
      fprintf (f, "%s\n    { \"name\": ", i ? "," : "");
      json_string (f, tsr_device_name (devs[i].dev));
      fprintf (f, ", \"type\": ");
      json_string (f, tsr_device_type_name (tsr_device_get_type
                                            (devs[i].dev)));
      fprintf (f, ", \"description\": ");
      json_string (f, tsr_device_description (devs[i].dev));
      if (devs[i].threads > 0)
        fprintf (f, ", \"threads\": %d }", devs[i].threads);
      else
        fprintf (f, ", \"threads\": null }");
    }
  fprintf (f, "\n  ],\n  \"results\": [");
  json_first = true;
}

static void
json_result (FILE *f, const struct bench_device *d,
             const struct bench_case *c, const struct bench_result *r)
{
  struct rates x = rates_of (r);
  fprintf (f, "%s\n    { \"device\": ", json_first ? "" : ",");
  json_first = false;
  json_string (f, tsr_device_name (d->dev));
  fprintf (f, ", \"op\": \"%s\", \"type\": \"%s\", \"m\": %" PRId64,
           c->kind->name, tsr_type_name (c->type), c->m);
  if (c->kind->uses_k)
    fprintf (f, ", \"k\": %" PRId64, c->k);
  else
    fprintf (f, ", \"k\": null");
  fprintf (f, ", \"n\": %" PRId64 ", \"nodes\": %d, \"status\": \"%s\"",
           c->n, c->kind->nodes, status_name (r->status));
  if (r->status == BENCH_OK)
    {
      fprintf (f, ", \"runs\": %d", r->runs);
      json_number (f, "us_median", r->us_median);
      json_number (f, "us_min", r->us_min);
      json_number (f, "gflops", x.gflops);
      json_number (f, "gbps", x.gbps);
      json_number (f, "weight_gbps", x.weight_gbps);
    }
  else
    {
      fprintf (f, ", \"reason\": ");
      json_string (f, r->msg);
    }
  fprintf (f, " }");
}

/* The entry points.  */

void
bench_report_begin (FILE *f, enum bench_format fmt,
                    const struct bench_device *devs, size_t n_devs)
{
  if (fmt == BENCH_CSV)
    fprintf (f, "device,op,type,m,k,n,nodes,threads,status,runs,us_median,"
             "us_min,gflops,gbps,weight_gbps,reason\n");
  else if (fmt == BENCH_JSON)
    json_begin (f, devs, n_devs);
  fflush (f);
}

void
bench_report_device (FILE *f, enum bench_format fmt,
                     const struct bench_device *d)
{
  static bool first = true;
  if (fmt != BENCH_TABLE)
    return;
  if (!first)
    fputc ('\n', f);
  first = false;
  table_device (f, d);
  fflush (f);
}

void
bench_report_result (FILE *f, enum bench_format fmt,
                     const struct bench_device *d,
                     const struct bench_case *c,
                     const struct bench_result *r)
{
  if (fmt == BENCH_TABLE)
    table_result (f, c, r);
  else if (fmt == BENCH_CSV)
    csv_result (f, d, c, r);
  else
    json_result (f, d, c, r);
  fflush (f);
}

void
bench_report_end (FILE *f, enum bench_format fmt, double roof, int threads,
                  double peak, const char *peak_unit)
{
  if (fmt == BENCH_JSON)
    {
      fprintf (f, "\n  ]");
      if (roof > 0)
        fprintf (f, ",\n  \"read_roof_gb_per_s\": %.2f", roof);
      if (peak > 0)
        fprintf (f, ",\n  \"fma_peak_gflops\": %.1f", peak);
      fprintf (f, "\n}\n");
    }
  else if (fmt == BENCH_CSV)
    {
      if (roof > 0)
        fprintf (f, "host,read,u64,0,0,0,0,%d,ok,5,,,,%.2f,,read bandwidth "
                 "(roof)\n", threads, roof);
      if (peak > 0)
        fprintf (f, "host,fma,f32,0,0,0,0,%d,ok,3,,,%.1f,,,f32 FMA peak "
                 "(%s)\n", threads, peak, peak_unit);
    }
  else
    {
      if (roof > 0)
        fprintf (f, "\nhost read bandwidth (roof): %.1f GB/s (%d threads, 1 "
                 "GiB read, best of 5 passes, better of before and after)\n",
                 roof, threads);
      if (peak > 0)
        fprintf (f, "%shost f32 FMA peak: %.1f GFLOP/s (%d threads, %s, "
                 "best of 3 passes)\n", roof > 0 ? "" : "\n", peak,
                 threads, peak_unit);
    }
  fflush (f);
}
