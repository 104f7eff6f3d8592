/* tessera-bench - time operations on every device: microseconds per
 * run, GFLOP/s of matrix products and GB/s of memory traffic.
 *
 * Owns the command line, the case list (the default shapes, the tiny
 * --quick ones, the --op and --type filters and --shape), opening the
 * devices and the main loop.  The benchmarks and the timing live in
 * bench-run.c, the output formats in bench-report.c (see bench.h).  */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define MAX_SHAPES 16
/* Automatic timing: timed runs take at least this long (microseconds),
   and one second per case is enough for a stable median.  */
#define MIN_US 1e6
#define QUICK_REPEAT 3
#define QUICK_WARMUP 1

static const char *program = "tessera-bench";

struct shape
{
  int64_t m, k, n;
};

struct options
{
  bool ops[TSR_OP_COUNT];
  bool op_filter;
  unsigned types;               /* bit 1 << tsr_type; 0: no filter */
  const char *device;
  int threads;
  struct shape shapes[MAX_SHAPES];
  int n_shapes;
  int repeat, warmup;           /* -1: automatic */
  enum bench_format format;
  bool quick;
  bool sweep_n;                 /* --sweep-n: mul_mat over SWEEP_N */
  bool roof;                    /* --roof: measure the roofs */
  const char *plot;             /* --plot=FILE: roofline chart (SVG) */
  bool repack;                  /* --repack: weights in the extra buft */
  bool hot_weights;             /* --hot-weights: one copy of them */
};

/* The default cases: the shapes that matter for transformer inference
   (a 4096-wide model with a 14336-wide feed-forward layer), prompt
   (n = 512) and generation (n = 1) alike.  TYPES is a mask.  */
struct default_case
{
  const char *op;
  int nodes;
  unsigned types;
  struct shape shape;
};

#define T(x) (1u << TSR_TYPE_##x)
#define MAT_TYPES (T (F32) | T (F16) | T (Q8_0) | T (Q4_0))
/* Block types of 32 besides q8_0 / q4_0: --quick and -T only.  */
#define BLOCK32_TYPES (T (Q4_1)                                         \
                       | T (Q5_0)                                       \
                       | T (Q5_1)                                       \
                       | T (IQ4_NL)                                     \
                       | T (MXFP4))

static const struct default_case defaults[] = {
  { "mul_mat", 1, T (F32), { 4096, 4096, 512 } },
  { "mul_mat", 1, MAT_TYPES, { 4096, 14336, 512 } },
  { "mul_mat", 1, MAT_TYPES, { 4096, 14336, 1 } },
  { "mul_mat", 1, T (F32), { 4096, 4096, 1 } },
  { "mul_mat_id", 1, T (Q4_0), { 4096, 4096, 1 } },
  { "mul_mat_id", 1, T (Q4_0), { 4096, 4096, 64 } },
  { "flash_attn_ext", 1, T (F16), { 4096, 128, 1 } },
  { "flash_attn_ext", 1, T (F16), { 4096, 128, 32 } },
  { "soft_max", 1, T (F32), { 4096, 0, 512 } },
  { "rms_norm", 1, T (F32), { 4096, 0, 512 } },
  { "add", 1, T (F32), { 4096, 0, 512 } },
  { "add", BENCH_CHAIN, T (F32), { 4096, 0, 1 } },
};

/* --quick: every benchmark on tiny shapes, for tests.  */
static const struct default_case quick[] = {
  { "mul_mat", 1, MAT_TYPES | T (BF16), { 64, 128, 16 } },
  { "mul_mat", 1, MAT_TYPES | T (BF16), { 64, 128, 1 } },
  { "mul_mat", 1, BLOCK32_TYPES, { 64, 128, 16 } },
  { "mul_mat", 1, BLOCK32_TYPES, { 64, 128, 1 } },
  { "mul_mat_id", 1, T (F32) | T (Q4_0), { 64, 128, 4 } },
  { "mul_mat_id", 1, BLOCK32_TYPES, { 64, 128, 4 } },
  { "flash_attn_ext", 1, T (F32) | T (F16), { 64, 64, 4 } },
  { "soft_max", 1, T (F32), { 256, 0, 16 } },
  { "rms_norm", 1, T (F32), { 256, 0, 16 } },
  { "add", 1, T (F32), { 256, 0, 16 } },
  { "add", BENCH_CHAIN, T (F32), { 256, 0, 1 } },
};

#undef T
#undef MAT_TYPES
#undef BLOCK32_TYPES

static void
usage (FILE *f)
{
  fprintf (f,
           "Usage: %s [OPTION]...\n"
           "Time Tessera's operations on every device.\n\n"
           "Options:\n"
           "  -o, --op=NAME[,NAME]...    only these operations "
           "(repeatable)\n"
           "  -T, --type=TYPE[,TYPE]...  only these weight or element "
           "types (repeatable)\n"
           "  -d, --device=NAME          only this device\n"
           "  -t, --threads=N            threads of each backend "
           "(default: its own)\n"
           "  -s, --shape=M,K,N          this shape instead of the "
           "defaults (repeatable)\n"
           "  -r, --repeat=N             timed runs per case (default: "
           "at least %d,\n"
           "                             and for at least %.0f s)\n"
           "  -w, --warmup=N             untimed runs first (default: at "
           "least 1,\n"
           "                             and for a tenth of the timed "
           "runs' time)\n"
           "  -f, --format=FORMAT        table (default), csv or json\n"
           "  -q, --quick                tiny shapes, %d runs (for "
           "tests)\n"
           "      --sweep-n              mul_mat at N = 1, 2, 4, 8, 16, 24, "
           "32, 48, 64\n"
           "                             (M and K of --shape, default "
           "4096, 14336;\n"
           "                             implies --roof)\n"
           "      --repack               mul_mat weights in the device's "
           "extra buffer\n"
           "                             type (CPU_REPACK: rows "
           "interleaved)\n"
           "      --hot-weights          one copy of a product's weights, "
           "which may\n"
           "                             stay in the caches between runs "
           "(default:\n"
           "                             copies of %d MiB in all, one "
           "after the\n"
           "                             other, so that every product "
           "reads them from\n"
           "                             memory)\n"
           "      --roof                 also measure the host's roofs: "
           "its read\n"
           "                             bandwidth (a 1 GiB buffer), "
           "f32 FMA and 8-bit\n"
           "                             dot-product peaks; the CPU's "
           "cases get their\n"
           "                             roofline efficiency (roof%%)\n"
           "      --plot=FILE.svg        draw the mul_mat results as a "
           "roofline chart\n"
           "                             (GFLOP/s against N; implies "
           "--roof)\n"
           "  -h, --help                 display this help and exit\n"
           "  -V, --version              output version information and "
           "exit\n\n", program, BENCH_MIN_RUNS, MIN_US / 1e6,
           QUICK_REPEAT, BENCH_COLD_MIB);
  fprintf (f,
           "Operations and shapes (M, K, N):\n"
           "  mul_mat         weights [K, M] times f32 [K, N]: 2*M*K*N "
           "flops\n"
           "  mul_mat_id      %d experts [K, M], N tokens using %d each: "
           "2*M*K*%d*N\n"
           "  get_rows        N rows of weights [K, M] to f32\n"
           "  flash_attn_ext  M keys and values of head size K (%d kv "
           "heads),\n"
           "                  N queries (%d heads), no mask: "
           "4*%d*N*M*K\n"
           "  soft_max, rms_norm, add   f32 [M, N]\n"
           "  add (%d nodes)  a chain of %d adds of f32 [M, N]: the cost "
           "per node\n"
           "  all_reduce      M floats summed over the ranks of an MPI job "
           "(run under\n"
           "                  mpirun; K and N unused): microseconds and "
           "bandwidth per\n"
           "                  size, 4 B to 64 MiB by default\n\n",
           BENCH_EXPERTS, BENCH_EXPERTS_USED, BENCH_EXPERTS_USED,
           BENCH_KV_HEADS, BENCH_HEADS, BENCH_HEADS, BENCH_CHAIN,
           BENCH_CHAIN);
  fprintf (f,
           "Times are the median of the timed runs, in microseconds.  "
           "GB/s counts the\n"
           "bytes read and written, weights once; wGB/s the weight bytes "
           "alone, for\n"
           "products with N <= 8.  A case a device does not support is "
           "reported as\n"
           "unsupported.  roof%% (with --roof) is the time at the roof "
           "that bounds\n"
           "a CPU case, max (bytes / read roof, operations / peak), over "
           "its median\n"
           "time; the peak is the 8-bit dot-product one for quantized "
           "weights.\n\n"
           "Exit status: 0 if every case ran or was unsupported, 1 if one "
           "failed,\n"
           "2 for bad usage.\n\n"
           "Report bugs to: %s\n", PACKAGE_BUGREPORT);
}

static bool
has_kind (tsr_op op)
{
  for (size_t i = 0; i < bench_n_kinds; i++)
    if (bench_kinds[i].op == op)
      return true;
  return false;
}

static void
parse_ops (struct options *o, const char *arg)
{
  tt_parse_ops (program, arg, o->ops);
  for (int op = 0; op < TSR_OP_COUNT; op++)
    if (o->ops[op] && !has_kind ((tsr_op) op) && op != TSR_OP_ALL_REDUCE)
      tt_usage_error (program, "no benchmark for '%s' (mul_mat, "
                      "mul_mat_id, get_rows, flash_attn_ext, soft_max, "
                      "rms_norm, add, all_reduce)", tsr_op_name ((tsr_op) op));
  o->op_filter = true;
}

static void
add_type (const char *name, void *data)
{
  struct options *o = data;
  tsr_type type = tsr_type_from_name (name);
  if (type == TSR_TYPE_COUNT)
    tt_usage_error (program, "unknown type '%s'", name);
  o->types |= 1u << type;
}

struct shape_parse
{
  int64_t v[3];
  int n;
};

static void
add_size (const char *text, void *data)
{
  struct shape_parse *s = data;
  int64_t v = tt_parse_number (program, text, "shape size", 1,
                               INT64_C (1) << 32);
  if (s->n < 3)
    s->v[s->n] = v;
  s->n++;
}

static void
parse_shape (struct options *o, const char *arg)
{
  struct shape_parse s = { .n = 0 };
  if (o->n_shapes == MAX_SHAPES)
    tt_usage_error (program, "too many shapes (at most 16): '%s'", arg);
  tt_for_each_name (arg, add_size, &s);
  if (s.n != 3)
    tt_usage_error (program, "bad shape '%s' (want M,K,N)", arg);
  o->shapes[o->n_shapes++] = (struct shape) { s.v[0], s.v[1], s.v[2] };
}

enum { OPT_SWEEP_N = 256, OPT_REPACK, OPT_PLOT, OPT_HOT_WEIGHTS };

static void
parse_options (int argc, char **argv, struct options *o)
{
  static const struct option opts[] = {
    { "op", required_argument, NULL, 'o' },
    { "type", required_argument, NULL, 'T' },
    { "device", required_argument, NULL, 'd' },
    { "threads", required_argument, NULL, 't' },
    { "shape", required_argument, NULL, 's' },
    { "repeat", required_argument, NULL, 'r' },
    { "warmup", required_argument, NULL, 'w' },
    { "format", required_argument, NULL, 'f' },
    { "quick", no_argument, NULL, 'q' },
    { "sweep-n", no_argument, NULL, OPT_SWEEP_N },
    { "repack", no_argument, NULL, OPT_REPACK },
    { "hot-weights", no_argument, NULL, OPT_HOT_WEIGHTS },
    { "roof", no_argument, NULL, 'R' },
    { "plot", required_argument, NULL, OPT_PLOT },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
  };
  int c;
  memset (o, 0, sizeof *o);
  o->repeat = o->warmup = -1;
  while ((c = getopt_long (argc, argv, "o:T:d:t:s:r:w:f:qhV", opts, NULL))
         != -1)
    switch (tt_check_optarg (program, opts, c, optarg, NULL), c)
      {
      case 'o':
        parse_ops (o, optarg);
        break;
      case 'R':
        o->roof = true;
        break;
      case 'T':
        tt_for_each_name (optarg, add_type, o);
        break;
      case 'd':
        o->device = optarg;
        break;
      case 't':
        o->threads = (int) tt_parse_number (program, optarg, "thread count",
                                            1, 1024);
        break;
      case 's':
        parse_shape (o, optarg);
        break;
      case 'r':
        o->repeat = (int) tt_parse_number (program, optarg, "repeat count",
                                           1, 1000000);
        break;
      case 'w':
        o->warmup = (int) tt_parse_number (program, optarg, "warm-up count",
                                           0, 1000000);
        break;
      case 'f':
        if (strcmp (optarg, "table") == 0)
          o->format = BENCH_TABLE;
        else if (strcmp (optarg, "csv") == 0)
          o->format = BENCH_CSV;
        else if (strcmp (optarg, "json") == 0)
          o->format = BENCH_JSON;
        else
          tt_usage_error (program, "unknown format '%s' (table, csv or "
                          "json)", optarg);
        break;
      case 'q':
        o->quick = true;
        break;
      case OPT_SWEEP_N:
        o->sweep_n = true;
        o->roof = true;
        break;
      case OPT_REPACK:
        o->repack = true;
        break;
      case OPT_HOT_WEIGHTS:
        o->hot_weights = true;
        break;
      case OPT_PLOT:
        if (!*optarg)
          tt_usage_error (program, "%s", "--plot needs a file name");
        o->plot = optarg;
        o->roof = true;
        break;
      default:
        tt_common_option (program, c, usage);
      }
  if (optind < argc)
    tt_usage_error (program, "unexpected argument '%s'", argv[optind]);
}

/* The case list.  */

struct case_list
{
  struct bench_case *cases;
  size_t n, cap;
};

static void
add_cases (struct case_list *l, const struct bench_kind *kind,
           unsigned types, struct shape s)
{
  for (int t = 0; t < TSR_TYPE_COUNT; t++)
    {
      if (!(types & kind->types & (1u << t)))
        continue;
      if (l->n == l->cap)
        {
          l->cap = l->cap ? 2 * l->cap : 32;
          l->cases = realloc (l->cases, l->cap * sizeof *l->cases);
          if (!l->cases)
            exit (1);
        }
      l->cases[l->n++] = (struct bench_case) {
        .kind = kind, .type = (tsr_type) t, .m = s.m,
        .k = kind->uses_k ? s.k : 0, .n = s.n
      };
    }
}

static bool
is_kind (const struct bench_kind *kind, const struct default_case *d)
{
  return strcmp (kind->name, d->op) == 0 && kind->nodes == d->nodes;
}

/* Every selected case: per benchmark, its default (or quick) shapes,
   or the --shape ones, in its default types or the --type ones.  */
static void
make_cases (const struct options *o, struct case_list *l)
{
  const struct default_case *table = o->quick ? quick : defaults;
  size_t n_table = o->quick ? sizeof quick / sizeof *quick
                            : sizeof defaults / sizeof *defaults;

  if (o->sweep_n)
    {
      /* The batch sizes batched and speculative decoding live on.  */
      static const int64_t sweep[] = { 1, 2, 4, 8, 16, 24, 32, 48, 64 };
      const struct bench_kind *mm = NULL;
      for (size_t i = 0; i < bench_n_kinds; i++)
        if (bench_kinds[i].op == TSR_OP_MUL_MAT && bench_kinds[i].nodes == 1)
          mm = &bench_kinds[i];
      unsigned types = o->types ? o->types
                       : (1u << TSR_TYPE_F32) | (1u << TSR_TYPE_F16)
                         | (1u << TSR_TYPE_Q8_0) | (1u << TSR_TYPE_Q4_0);
      int n_shapes = o->n_shapes ? o->n_shapes : 1;
      for (int s = 0; s < n_shapes && mm; s++)
        for (int t = 0; t < TSR_TYPE_COUNT; t++)
          for (size_t j = 0; (types & (1u << t))
                             && j < sizeof sweep / sizeof *sweep; j++)
            {
              struct shape sh = o->n_shapes ? o->shapes[s]
                                : (struct shape) { 4096, 14336, 1 };
              sh.n = sweep[j];
              add_cases (l, mm, 1u << t, sh);
            }
      return;
    }

  for (size_t i = 0; i < bench_n_kinds; i++)
    {
      const struct bench_kind *kind = &bench_kinds[i];
      unsigned all_types = 0;
      if (o->op_filter && !o->ops[kind->op])
        continue;
      for (size_t j = 0; j < n_table; j++)
        if (is_kind (kind, &table[j]))
          {
            all_types |= table[j].types;
            if (o->n_shapes == 0)
              add_cases (l, kind, o->types ? o->types : table[j].types,
                         table[j].shape);
          }
      for (int s = 0; s < o->n_shapes; s++)
        add_cases (l, kind, o->types ? o->types : all_types, o->shapes[s]);
    }
}

/* Devices.  */

static struct bench_device *
open_devices (const struct options *o, size_t *n_out, int *status)
{
  size_t n = tsr_device_count (), k;
  tsr_device **devs = calloc (n ? n : 1, sizeof *devs);
  struct bench_device *d = calloc (n ? n : 1, sizeof *d);
  if (!devs || !d)
    exit (1);
  k = tt_select_devices (program, o->device, devs);
  *n_out = 0;
  for (size_t i = 0; i < k; i++)
    {
      struct bench_device *x = &d[*n_out];
      x->dev = devs[i];
      x->be = tsr_device_init (devs[i], NULL);
      if (!x->be)
        {
          fprintf (stderr, "%s: cannot start a backend on %s: %s\n", program,
                   tsr_device_name (devs[i]), tsr_last_error ());
          *status = 1;
          continue;
        }
      if (o->threads > 0)
        {
          int st = tsr_backend_set_n_threads (x->be, o->threads);
          if (st == TSR_OK)
            x->threads = o->threads;
          else if (st != TSR_ERR_UNSUPPORTED)
            {
              fprintf (stderr, "%s: cannot use %d threads on %s: %s\n",
                       program, o->threads, tsr_device_name (devs[i]),
                       tsr_last_error ());
              *status = 1;
            }
        }
      (*n_out)++;
    }
  free (devs);
  return d;
}

/* The host's roofs for the cases: on as many threads as the CPU device
   runs (--threads, else the count its description states), for the
   instructions of its ISA level (which its description names too:
   "CPU: <model>, 2 threads, ISA level v4-vnni (...)").  */
static void
measure_roofs (const struct options *o, const struct bench_device *d,
               size_t n_dev, struct bench_roofs *roofs)
{
  char level[32] = "";
  int threads = o->threads;
  for (size_t k = 0; k < n_dev; k++)
    {
      const char *desc = tsr_device_description (d[k].dev), *p;
      if (tsr_device_get_type (d[k].dev) != TSR_DEVICE_CPU || !desc)
        continue;
      if ((p = strstr (desc, "ISA level ")))
        sscanf (p + strlen ("ISA level "), "%31[^ (,;]", level);
      for (p = desc; threads <= 0 && (p = strchr (p, ',')); p++)
        {
          int n;
          char word[8];
          if (sscanf (p + 1, " %d %7s", &n, word) == 2
              && strncmp (word, "thread", 6) == 0 && n > 0)
            threads = n;
        }
      break;
    }
  if (threads <= 0)
    {
      long n = sysconf (_SC_NPROCESSORS_ONLN);
      threads = n > 0 && n <= 256 ? (int) n : 1;
    }
  roofs->threads = threads > 256 ? 256 : threads;
  roofs->read_after = 0;
  bench_peaks_measure (level[0] ? level : NULL, roofs->threads,
                       &roofs->peaks);
  roofs->read = tt_read_bandwidth (roofs->threads);
}

int
main (int argc, char **argv)
{
  struct options o;
  struct case_list l = { 0 };
  struct bench_device *d;
  size_t n_dev;
  int status = 0;

  argv[0] = (char *) program;   /* getopt's messages name it so */
  parse_options (argc, argv, &o);
  if (o.ops[TSR_OP_ALL_REDUCE])
    {
      /* Between processes: a benchmark of its own (bench-comm.c).  */
      int64_t sizes[MAX_SHAPES];
      for (int i = 0; i < TSR_OP_COUNT; i++)
        if (o.ops[i] && i != TSR_OP_ALL_REDUCE)
          tt_usage_error (program, "all_reduce is timed on its own (not "
                          "with %s)", tsr_op_name ((tsr_op) i));
      for (int i = 0; i < o.n_shapes; i++)
        sizes[i] = o.shapes[i].m;
      return bench_comm (sizes, o.n_shapes, o.repeat, o.format, program);
    }
  make_cases (&o, &l);
  if (l.n == 0)
    tt_usage_error (program, "%s", "no case matches --op and --type");
  d = open_devices (&o, &n_dev, &status);
  if (n_dev == 0)
    {
      if (status == 0)
        fprintf (stderr, "%s: no devices (is TESSERA_BACKEND_PATH right? "
                 "see tessera-info)\n", program);
      free (d);
      free (l.cases);
      return 1;
    }

  struct bench_timing timing = {
    .warmup = o.warmup >= 0 ? o.warmup : o.quick ? QUICK_WARMUP : -1,
    .repeat = o.repeat > 0 ? o.repeat : o.quick ? QUICK_REPEAT : 0,
    .min_us = MIN_US,
    .seed = 1,
    .repack = o.repack,
    .hot_weights = o.hot_weights
  };
  /* The roofs, before the cases, so that each case's efficiency comes
     with it; the read bandwidth again after them, which shows whether
     the machine was as quiet at the end.  */
  struct bench_roofs roofs_store, *roofs = NULL;
  if (o.roof)
    {
      roofs = &roofs_store;
      measure_roofs (&o, d, n_dev, roofs);
    }
  struct bench_point *pts = NULL;
  size_t n_pts = 0;
  if (o.plot && !(pts = calloc (n_dev * l.n, sizeof *pts)))
    exit (1);
  bench_report_begin (stdout, o.format, d, n_dev);
  int copies = 1;
  for (size_t k = 0; k < n_dev; k++)
    {
      bench_report_device (stdout, o.format, &d[k], roofs);
      for (size_t i = 0; i < l.n; i++)
        {
          struct bench_result r;
          bench_run (&l.cases[i], d[k].be, &timing, &r);
          if (r.copies > copies)
            copies = r.copies;
          bench_report_result (stdout, o.format, &d[k], &l.cases[i], &r,
                               roofs);
          if (r.status == BENCH_ERROR)
            status = 1;
          if (pts)
            pts[n_pts++] = (struct bench_point) { &d[k], l.cases[i], r };
        }
    }
  if (roofs)
    roofs->read_after = tt_read_bandwidth (roofs->threads);
  bench_report_end (stdout, o.format, roofs);
  if (o.format == BENCH_TABLE && copies > 1)
    printf ("%sus/run of mul_mat, mul_mat_id: one product's.  A run computes "
            "the product once\non each of several copies of its weights "
            "and inputs (%d MiB of weights,\nat most %d copies), so that "
            "the weights come from memory, not from the caches;\nits time "
            "over the copies is one product's (--hot-weights: one copy)\n",
            roofs ? "" : "\n", BENCH_COLD_MIB, BENCH_MAX_COPIES);
  if (o.plot && bench_plot_svg (o.plot, program, pts, n_pts, roofs) != 0)
    status = 1;
  free (pts);

  for (size_t k = 0; k < n_dev; k++)
    tsr_backend_free (d[k].be);
  free (d);
  free (l.cases);
  return status;
}
