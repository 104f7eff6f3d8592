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

/* Roofline efficiency.  */

/* The compute peak of case C in GOP/s (0: none), and its name.  */
static double
compute_peak (const struct bench_roofs *roofs, const struct bench_case *c,
              const char **name)
{
  if (c->kind->op == TSR_OP_MUL_MAT || c->kind->op == TSR_OP_MUL_MAT_ID)
    {
      const struct tsr_type_traits *tr = tsr_type_traits (c->type);
      if (tr && tr->is_quantized)
        {
          *name = "dot8";
          return roofs->peaks.dot8;
        }
    }
  *name = "fma";
  return roofs->peaks.fma;
}

double
bench_efficiency (const struct bench_roofs *roofs,
                  const struct bench_device *d, const struct bench_case *c,
                  const struct bench_result *r, const char **bound)
{
  *bound = NULL;
  if (!roofs || roofs->read <= 0 || r->status != BENCH_OK
      || r->us_median <= 0
      || tsr_device_get_type (d->dev) != TSR_DEVICE_CPU)
    return 0;
  const char *name;
  double peak = compute_peak (roofs, c, &name);
  /* Microseconds at each roof: GB/s and GOP/s are bytes and operations
     per nanosecond.  */
  double us_memory = r->cost.bytes / roofs->read / 1e3;
  double us_compute = r->cost.flops > 0 && peak > 0
                      ? r->cost.flops / peak / 1e3 : 0;
  *bound = us_compute > us_memory ? name : "memory";
  return (us_compute > us_memory ? us_compute : us_memory) / r->us_median;
}

double
bench_roof_gflops (const struct bench_roofs *roofs,
                   const struct bench_case *c, double n)
{
  const char *name;
  /* A product's operations and bytes are affine in N: from N = 1 and
     2, at any real N, so that the roofline is a smooth curve.  */
  struct bench_cost c1 = c->kind->cost (c->type, c->m, c->k, 1);
  struct bench_cost c2 = c->kind->cost (c->type, c->m, c->k, 2);
  double flops = c1.flops + (n - 1) * (c2.flops - c1.flops);
  double bytes = c1.bytes + (n - 1) * (c2.bytes - c1.bytes);
  double peak = compute_peak (roofs, c, &name);
  double memory = bytes > 0 ? flops / bytes * roofs->read : 0;
  return peak > 0 && peak < memory ? peak : memory;
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
table_result (FILE *f, const struct bench_device *d,
              const struct bench_case *c, const struct bench_result *r,
              const struct bench_roofs *roofs)
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
  if (roofs)
    {
      const char *bound;
      double e = bench_efficiency (roofs, d, c, r, &bound);
      if (e > 0)
        fprintf (f, " %5.1f %6s", 100 * e, bound);
      else
        fprintf (f, " %5s %6s", "-", "-");
    }
  fprintf (f, "\n");
}

static void
table_device (FILE *f, const struct bench_device *d,
              const struct bench_roofs *roofs)
{
  char threads[32] = "the backend's default";
  if (d->threads > 0)
    snprintf (threads, sizeof threads, "%d", d->threads);
  fprintf (f, "== %s (threads: %s): %s\n", tsr_device_name (d->dev), threads,
           tsr_device_description (d->dev));
  fprintf (f, "%-15s %-6s %6s %6s %6s %5s %5s %12s %9s %8s %8s", "op",
           "type", "m", "k", "n", "nodes", "runs", "us/run", "GFLOP/s",
           "GB/s", "wGB/s");
  if (roofs)
    fprintf (f, " %5s %6s", "roof%", "bound");
  fprintf (f, "\n");
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
            const struct bench_result *r, const struct bench_roofs *roofs)
{
  struct rates x = rates_of (r);
  const char *bound;
  double e = bench_efficiency (roofs, d, c, r, &bound);
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
  if (e > 0)
    fprintf (f, ",%.4f,%s", e, bound);
  else
    fprintf (f, ",,");
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
             const struct bench_case *c, const struct bench_result *r,
             const struct bench_roofs *roofs)
{
  struct rates x = rates_of (r);
  const char *bound;
  double e = bench_efficiency (roofs, d, c, r, &bound);
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
      fprintf (f, ", \"runs\": %d, \"weight_copies\": %d", r->runs,
               r->copies);
      json_number (f, "us_median", r->us_median);
      json_number (f, "us_min", r->us_min);
      json_number (f, "gflops", x.gflops);
      json_number (f, "gbps", x.gbps);
      json_number (f, "weight_gbps", x.weight_gbps);
      if (e > 0)
        fprintf (f, ", \"roofline_efficiency\": %.4f, \"bound\": \"%s\"",
                 e, bound);
      else
        fprintf (f, ", \"roofline_efficiency\": null, \"bound\": null");
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
             "us_min,gflops,gbps,weight_gbps,efficiency,bound,reason\n");
  else if (fmt == BENCH_JSON)
    json_begin (f, devs, n_devs);
  fflush (f);
}

void
bench_report_device (FILE *f, enum bench_format fmt,
                     const struct bench_device *d,
                     const struct bench_roofs *roofs)
{
  static bool first = true;
  if (fmt != BENCH_TABLE)
    return;
  if (!first)
    fputc ('\n', f);
  first = false;
  table_device (f, d, roofs);
  fflush (f);
}

void
bench_report_result (FILE *f, enum bench_format fmt,
                     const struct bench_device *d,
                     const struct bench_case *c,
                     const struct bench_result *r,
                     const struct bench_roofs *roofs)
{
  if (fmt == BENCH_TABLE)
    table_result (f, d, c, r, roofs);
  else if (fmt == BENCH_CSV)
    csv_result (f, d, c, r, roofs);
  else
    json_result (f, d, c, r, roofs);
  fflush (f);
}

/* A host,OP_TYPE row of a peak: VALUE in the gflops field, its
   instructions in reason.  */
static void
csv_peak (FILE *f, const char *op_type, int threads, double value,
          const char *unit, const char *level)
{
  char what[128];
  snprintf (what, sizeof what, "%s peak (ISA level %s)", unit, level);
  fprintf (f, "host,%s,0,0,0,0,%d,ok,3,,,%.1f,,,,,", op_type, threads,
           value);
  csv_string (f, what);
  fputc ('\n', f);
}

void
bench_report_end (FILE *f, enum bench_format fmt,
                  const struct bench_roofs *roofs)
{
  const struct bench_peaks *p = roofs ? &roofs->peaks : NULL;
  if (fmt == BENCH_JSON)
    {
      fprintf (f, "\n  ]");
      if (roofs)
        {
          fprintf (f, ",\n  \"roof_threads\": %d", roofs->threads);
          fprintf (f, ",\n  \"read_roof_gb_per_s\": %.2f", roofs->read);
          fprintf (f, ",\n  \"read_roof_after_gb_per_s\": %.2f",
                   roofs->read_after);
          fprintf (f, ",\n  \"isa_level\": ");
          json_string (f, p->level);
          fprintf (f, ",\n  \"fma_peak_gflops\": %.1f", p->fma);
          fprintf (f, ",\n  \"fma_unit\": ");
          json_string (f, p->fma_unit);
          if (p->dot8 > 0)
            {
              fprintf (f, ",\n  \"dot8_peak_gops\": %.1f", p->dot8);
              fprintf (f, ",\n  \"dot8_unit\": ");
              json_string (f, p->dot8_unit);
            }
          else
            fprintf (f, ",\n  \"dot8_peak_gops\": null,\n  "
                     "\"dot8_unit\": null");
        }
      fprintf (f, "\n}\n");
    }
  else if (fmt == BENCH_CSV)
    {
      if (roofs)
        {
          fprintf (f, "host,read,u64,0,0,0,0,%d,ok,5,,,,%.2f,,,,read "
                   "bandwidth before the cases (roof)\n", roofs->threads,
                   roofs->read);
          fprintf (f, "host,read,u64,0,0,0,0,%d,ok,5,,,,%.2f,,,,read "
                   "bandwidth after the cases\n", roofs->threads,
                   roofs->read_after);
          csv_peak (f, "fma,f32", roofs->threads, p->fma, p->fma_unit,
                    p->level);
          if (p->dot8 > 0)
            csv_peak (f, "dot8,i8", roofs->threads, p->dot8, p->dot8_unit,
                      p->level);
        }
    }
  else if (roofs)
    {
      fprintf (f, "\nhost read bandwidth (roof): %.1f GB/s before the "
               "cases, %.1f after (%d threads, 1 GiB read, best of 5 "
               "passes)\n", roofs->read, roofs->read_after, roofs->threads);
      fprintf (f, "host f32 FMA peak: %.1f GFLOP/s (%d threads, %s, ISA "
               "level %s, best of 3 passes)\n", p->fma, roofs->threads,
               p->fma_unit, p->level);
      if (p->dot8 > 0)
        fprintf (f, "host 8-bit dot-product peak: %.1f GOP/s (%d threads, "
                 "%s, ISA level %s, best of 3 passes)\n", p->dot8,
                 roofs->threads, p->dot8_unit, p->level);
      else
        fprintf (f, "host 8-bit dot-product peak: none (the kernels of "
                 "ISA level %s have no 8-bit dot-product instructions)\n",
                 p->level);
      fprintf (f, "roof%%: the time at the roof that bounds the case "
               "(bytes / read roof before the cases, or operations / "
               "peak) over the median time\n");
    }
  fflush (f);
}
