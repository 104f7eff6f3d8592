/* tessera-opcheck - check every operation on every device against a
 * reference, time them, or show which ones each device supports.
 *
 * Owns the command line, the choice of devices and of the reference,
 * the three modes and the checker's self-test.  Running a case lives in
 * opcheck-run.c, the cases in opcheck-cases*.c (see opcheck.h).
 *
 * The reference is the CPU backend with one thread: a kernel split
 * over threads is then checked against the same kernel unsplit, and
 * any other device against the CPU.  */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opcheck.h"

/* Parameters of the reference backend.  Hook for the CPU's ISA levels:
   the reference should run the scalar (baseline) kernels.
   TESSERA_CPU_LEVEL chooses the level for the whole process, the CPU
   device under test included; once the CPU backend takes a level per
   backend (a parameter such as "level=x86-64"), request the baseline
   here, so that the best level is checked against the plain one in a
   single run.  Until then, each level is checked by running the
   checker once per TESSERA_CPU_LEVEL value.  */
#define REFERENCE_PARAMS NULL

enum mode
{
  MODE_TEST,
  MODE_PERF,
  MODE_SUPPORT
};

struct options
{
  enum mode mode;
  bool list;
  bool self_test;
  bool op_filter;
  bool ops[TSR_OP_COUNT];
  const char *device;
  bool have_regex;
  regex_t regex;
  uint64_t seed;
  int repeat;
  int threads;
};

static const char *program = "tessera-opcheck";

static void
usage (FILE *f)
{
  fprintf (f,
           "Usage: %s [MODE] [OPTION]...\n"
           "Check Tessera's operations on every device against the CPU "
           "backend.\n\n"
           "Modes:\n"
           "  test       run every case on every device and compare with "
           "the reference\n"
           "             (the default)\n"
           "  perf       time every case on every device\n"
           "  support    count the cases each device supports, per op\n\n"
           "Options:\n"
           "  -o, --op=NAME[,NAME]...  only these operations (repeatable)\n"
           "  -d, --device=NAME        only this device\n"
           "  -c, --case=REGEX         only cases whose name matches REGEX\n"
           "                           (POSIX extended)\n"
           "  -s, --seed=N             seed of the random inputs "
           "(default 1)\n"
           "  -r, --repeat=N           perf: timed runs per case "
           "(default 20)\n"
           "  -t, --threads=N          threads of the devices under test\n"
           "                           (default: the backend's, at least 2 "
           "on CPUs)\n"
           "  -l, --list               list the cases and exit\n"
           "  -h, --help               display this help and exit\n"
           "  -V, --version            output version information and "
           "exit\n\n"
           "The reference is the CPU backend with one thread.  A case "
           "fails when the\n"
           "normalized mean squared error, sum((x-ref)^2)/sum(ref^2) "
           "(sum((x-ref)^2)\n"
           "when ref is all zeros), exceeds its threshold, when NaN or "
           "infinities\n"
           "differ, when an i32 result differs, or when a guard region "
           "around a tensor\n"
           "was overwritten.  Thresholds:\n", program);
  oc_print_thresholds (f);
  fprintf (f, "\nExit status: 0 if every case passed, 1 if one failed, "
           "2 for bad usage.\n\n"
           "Report bugs to: %s\n", PACKAGE_BUGREPORT);
}

static void
parse_options (int argc, char **argv, struct options *o)
{
  static const struct option opts[] = {
    { "op", required_argument, NULL, 'o' },
    { "device", required_argument, NULL, 'd' },
    { "case", required_argument, NULL, 'c' },
    { "seed", required_argument, NULL, 's' },
    { "repeat", required_argument, NULL, 'r' },
    { "threads", required_argument, NULL, 't' },
    { "list", no_argument, NULL, 'l' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { "self-test", no_argument, NULL, 'S' },   /* undocumented */
    { NULL, 0, NULL, 0 }
  };
  int c, err;
  memset (o, 0, sizeof *o);
  o->seed = 1;
  o->repeat = 20;
  while ((c = getopt_long (argc, argv, "o:d:c:s:r:t:lhV", opts, NULL)) != -1)
    switch (tt_check_optarg (program, opts, c, optarg, NULL), c)
      {
      case 'o':
        tt_parse_ops (program, optarg, o->ops);
        o->op_filter = true;
        break;
      case 'd':
        o->device = optarg;
        break;
      case 'c':
        if (o->have_regex)
          regfree (&o->regex);
        err = regcomp (&o->regex, optarg, REG_EXTENDED | REG_NOSUB);
        if (err != 0)
          {
            char msg[256];
            regerror (err, &o->regex, msg, sizeof msg);
            fprintf (stderr, "%s: bad --case regular expression '%s': %s\n",
                     program, optarg, msg);
            exit (2);
          }
        o->have_regex = true;
        break;
      case 's':
        o->seed = (uint64_t) tt_parse_number (program, optarg, "seed", 0, INT64_MAX);
        break;
      case 'r':
        o->repeat = (int) tt_parse_number (program, optarg, "repeat count", 1, 1000000);
        break;
      case 't':
        o->threads = (int) tt_parse_number (program, optarg, "thread count", 1, 1024);
        break;
      case 'l':
        o->list = true;
        break;
      case 'S':
        o->self_test = true;
        break;
      default:
        tt_common_option (program, c, usage);
      }
  if (optind < argc)
    {
      const char *m = argv[optind++];
      if (strcmp (m, "test") == 0)
        o->mode = MODE_TEST;
      else if (strcmp (m, "perf") == 0)
        o->mode = MODE_PERF;
      else if (strcmp (m, "support") == 0)
        o->mode = MODE_SUPPORT;
      else
        tt_usage_error (program, "unknown mode '%s' (test, perf or support)",
                        m);
    }
  if (optind < argc)
    tt_usage_error (program, "unexpected argument '%s'", argv[optind]);
}

static bool
selected (const struct options *o, const struct oc_case *c)
{
  if (o->op_filter && !o->ops[c->op])
    return false;
  return !o->have_regex || regexec (&o->regex, c->name, 0, NULL, 0) == 0;
}

/* Devices and backends.  */

struct device
{
  tsr_device *dev;
  const char *name;
  tsr_backend *be;
};

static int
threads_for (const struct options *o, tsr_device *dev)
{
  if (o->threads > 0)
    return o->threads;
  if (tsr_device_get_type (dev) != TSR_DEVICE_CPU
      || getenv ("TESSERA_NUM_THREADS"))
    return 0;
  /* Split kernels over threads even on one core.  */
  long n = sysconf (_SC_NPROCESSORS_ONLN);
  return n < 2 ? 2 : n > 64 ? 64 : (int) n;
}

/* The devices to check, each with a backend; exits 2 for an unknown
   --device.  */
static struct device *
open_devices (const struct options *o, size_t *n_out)
{
  size_t n = tsr_device_count (), k;
  struct device *d = calloc (n ? n : 1, sizeof *d);
  tsr_device **devs = calloc (n ? n : 1, sizeof *devs);
  if (!d || !devs)
    exit (1);
  k = tt_select_devices (program, o->device, devs);
  for (size_t i = 0; i < k; i++)
    {
      d[i].dev = devs[i];
      d[i].name = tsr_device_name (devs[i]);
    }
  free (devs);
  for (size_t i = 0; i < k && !o->list; i++)
    {
      d[i].be = tsr_device_init (d[i].dev, NULL);
      if (!d[i].be)
        {
          fprintf (stderr, "%s: cannot start a backend on %s: %s\n", program,
                   d[i].name, tsr_last_error ());
          exit (1);
        }
      int nth = threads_for (o, d[i].dev);
      if (nth > 0)
        tsr_backend_set_n_threads (d[i].be, nth);
    }
  *n_out = k;
  return d;
}

static tsr_backend *
open_reference (void)
{
  tsr_device *cpu = tsr_device_by_type (TSR_DEVICE_CPU);
  tsr_backend *be = cpu ? tsr_device_init (cpu, REFERENCE_PARAMS) : NULL;
  if (!be)
    {
      fprintf (stderr, "%s: no CPU backend for the reference: %s\n", program,
               cpu ? tsr_last_error () : "no CPU device (is the cpu module "
               "on TESSERA_BACKEND_PATH?)");
      exit (1);
    }
  if (tsr_backend_set_n_threads (be, 1) != TSR_OK)
    {
      fprintf (stderr, "%s: cannot make the reference single-threaded: %s\n",
               program, tsr_last_error ());
      exit (1);
    }
  return be;
}

static void
close_devices (struct device *d, size_t n)
{
  for (size_t i = 0; i < n; i++)
    tsr_backend_free (d[i].be);
  free (d);
}

/* Modes.  */

struct tally
{
  int passed, failed, unsupported;
};

/* Check case C on device D against the reference output REF (run on
   first need).  */
static void
test_case (const struct options *o, const struct oc_case *c,
           struct device *d, tsr_backend *ref_be, struct oc_output *ref,
           bool *have_ref, struct tally *t)
{
  struct oc_run_opts ro = { .seed = o->seed };
  struct oc_output out;
  char msg[600];

  oc_run (c, d->be, &ro, &out);
  if (out.status == OC_UNSUPPORTED)
    {
      printf ("UNSUPPORTED: %s %s: %s\n", d->name, c->name, out.msg);
      t->unsupported++;
      oc_output_free (&out);
      return;
    }
  if (!*have_ref)
    {
      struct oc_run_opts rr = { .seed = o->seed, .reference = true };
      oc_run (c, ref_be, &rr, ref);
      *have_ref = true;
    }
  if (out.status != OC_OK)
    {
      printf ("FAIL: %s %s: %s\n", d->name, c->name, out.msg);
      t->failed++;
    }
  else if (ref->status == OC_UNSUPPORTED)
    {
      printf ("UNSUPPORTED: %s %s: no reference (%s)\n", d->name, c->name,
              ref->msg);
      t->unsupported++;
    }
  else if (ref->status != OC_OK)
    {
      printf ("FAIL: %s %s: reference: %s\n", d->name, c->name, ref->msg);
      t->failed++;
    }
  else if (!oc_compare (ref, &out, oc_threshold (c), msg, sizeof msg))
    {
      printf ("FAIL: %s %s: %s\n", d->name, c->name, msg);
      t->failed++;
    }
  else
    {
      printf ("PASS: %s %s\n", d->name, c->name);
      t->passed++;
    }
  oc_output_free (&out);
}

static int
mode_test (const struct options *o, const struct oc_list *l,
           struct device *d, size_t n_dev)
{
  tsr_backend *ref_be = open_reference ();
  struct tally t = { 0 };
  size_t n_cases = 0;
  double t0 = tt_now_us ();

  for (size_t i = 0; i < l->n; i++)
    {
      const struct oc_case *c = &l->cases[i];
      struct oc_output ref = { 0 };
      bool have_ref = false;
      if (!selected (o, c))
        continue;
      n_cases++;
      for (size_t k = 0; k < n_dev; k++)
        test_case (o, c, &d[k], ref_be, &ref, &have_ref, &t);
      oc_output_free (&ref);
      fflush (stdout);
    }
  tsr_backend_free (ref_be);
  printf ("%zu case%s on %zu device%s: %d passed, %d failed, %d "
          "unsupported (%.1f s)\n", n_cases, n_cases == 1 ? "" : "s", n_dev,
          n_dev == 1 ? "" : "s", t.passed, t.failed, t.unsupported,
          (tt_now_us () - t0) / 1e6);
  if (n_cases == 0)
    fprintf (stderr, "%s: no case matches the filters\n", program);
  return t.failed ? 1 : 0;
}

static int
mode_perf (const struct options *o, const struct oc_list *l,
           struct device *d, size_t n_dev)
{
  int failed = 0;
  for (size_t i = 0; i < l->n; i++)
    {
      const struct oc_case *c = &l->cases[i];
      if (!selected (o, c))
        continue;
      for (size_t k = 0; k < n_dev; k++)
        {
          struct oc_run_opts ro = { .seed = o->seed, .repeat = o->repeat };
          struct oc_output out;
          oc_run (c, d[k].be, &ro, &out);
          if (out.status == OC_OK)
            printf ("%12.2f us/run  %s %s\n", out.us_per_run, d[k].name,
                    c->name);
          else
            {
              printf ("%12s         %s %s: %s\n",
                      out.status == OC_UNSUPPORTED ? "unsupported" : "error",
                      d[k].name, c->name, out.msg);
              failed += out.status == OC_ERROR;
            }
          oc_output_free (&out);
        }
      fflush (stdout);
    }
  return failed ? 1 : 0;
}

static int
mode_support (const struct options *o, const struct oc_list *l,
              struct device *d, size_t n_dev)
{
  int total[TSR_OP_COUNT] = { 0 };
  int *yes = calloc ((size_t) TSR_OP_COUNT * (n_dev ? n_dev : 1),
                     sizeof *yes);
  if (!yes)
    return 1;
  for (size_t i = 0; i < l->n; i++)
    {
      const struct oc_case *c = &l->cases[i];
      if (!selected (o, c))
        continue;
      total[c->op]++;
      for (size_t k = 0; k < n_dev; k++)
        {
          struct oc_run_opts ro = { .seed = o->seed, .support_only = true };
          struct oc_output out;
          oc_run (c, d[k].be, &ro, &out);
          yes[c->op * n_dev + k] += out.status == OC_OK;
          oc_output_free (&out);
        }
    }
  printf ("%-16s", "op");
  for (size_t k = 0; k < n_dev; k++)
    printf (" %12.12s", d[k].name);
  printf ("\n");
  for (int op = 0; op < TSR_OP_COUNT; op++)
    {
      if (total[op] == 0)
        continue;
      printf ("%-16s", tsr_op_name ((tsr_op) op));
      for (size_t k = 0; k < n_dev; k++)
        {
          char cell[32];
          snprintf (cell, sizeof cell, "%d/%d", yes[op * n_dev + k],
                    total[op]);
          printf (" %12s", cell);
        }
      printf ("\n");
    }
  free (yes);
  return 0;
}

static void
list_cases (const struct options *o, const struct oc_list *l)
{
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++)
    if (selected (o, &l->cases[i]))
      {
        printf ("%s\n", l->cases[i].name);
        n++;
      }
  fprintf (stderr, "%zu case%s\n", n, n == 1 ? "" : "s");
}

/* The self-test: the checker must be able to fail.  Deliberate errors
   are injected into the results of the CPU device (or of the device
   named with --device) and each must be reported.  */

static void
self_check (bool ok, struct tally *t, const char *fmt, const char *a,
            const char *b)
{
  printf ("%s: self-test ", ok ? "PASS" : "FAIL");
  printf (fmt, a, b);
  printf ("\n");
  if (ok)
    t->passed++;
  else
    t->failed++;
}

/* Run C on D with INJ and tell whether the outcome has WANT in its
   message (WANT NULL: the case must pass).  *UNSUPPORTED (if not NULL)
   tells whether the device does not support C.  */
static bool
injected_run (const struct options *o, const struct oc_case *c,
              struct device *d, const struct oc_output *ref,
              const struct oc_inject *inj, const char *want,
              bool *unsupported)
{
  struct oc_run_opts ro = { .seed = o->seed, .inject = inj };
  struct oc_output out;
  char msg[600] = "";
  bool same;

  oc_run (c, d->be, &ro, &out);
  if (unsupported)
    *unsupported = out.status == OC_UNSUPPORTED;
  if (out.status == OC_UNSUPPORTED)
    {
      oc_output_free (&out);
      return false;
    }
  if (out.status == OC_OK)
    same = oc_compare (ref, &out, oc_threshold (c), msg, sizeof msg);
  else
    {
      same = false;
      snprintf (msg, sizeof msg, "%s", out.msg);
    }
  oc_output_free (&out);
  if (msg[0])
    printf ("  (%s %s: %s)\n", d->name, c->name, msg);
  return want ? !same && strstr (msg, want) != NULL : same;
}

/* Comparisons of made-up outputs.  */
static void
self_test_compare (struct tally *t)
{
  float r[4] = { 0, 0, 0, 0 }, x[4] = { 0, 0, 0, 1e-3f };
  struct oc_output ref = { .n = 4, .ne = { 4, 1, 1, 1 }, .f = r };
  struct oc_output out = ref;
  char msg[256];

  out.f = x;
  self_check (!oc_compare (&ref, &out, 1e-7, msg, sizeof msg),
              t, "%s%s", "an all-zero reference uses the absolute error", "");
  r[0] = x[0] = NAN;
  r[1] = x[1] = -INFINITY;
  x[3] = 0;
  self_check (oc_compare (&ref, &out, 1e-7, msg, sizeof msg), t, "%s%s",
              "NaN and -inf in the same places agree", "");
  x[1] = INFINITY;
  self_check (!oc_compare (&ref, &out, 1e-7, msg, sizeof msg)
              && strstr (msg, "NaN/Inf"), t, "%s%s",
              "-inf against +inf is a mismatch", "");
  x[1] = -INFINITY;
  x[2] = NAN;
  self_check (!oc_compare (&ref, &out, 1e-7, msg, sizeof msg)
              && strstr (msg, "NaN/Inf"), t, "%s%s",
              "a NaN where the reference has a number is a mismatch", "");
}

static int
mode_self_test (const struct options *o, const struct oc_list *l,
                struct device *d, size_t n_dev)
{
  /* Cases with f32 and i32 results, an element-wise one and one with
     several tensors.  */
  static const char *const names[] = {
    "add f32[17,6,5,2] f32[17,1,5,2]",
    "mul_mat q4_0[64,17] f32[64,3]",
    "cpy f32[17,3,2] -> i32[17,3,2]",
  };
  tsr_backend *ref_be = open_reference ();
  struct tally t = { 0 };

  self_test_compare (&t);
  for (size_t s = 0; s < sizeof names / sizeof *names; s++)
    {
      const struct oc_case *c = NULL;
      for (size_t i = 0; i < l->n; i++)
        if (strcmp (l->cases[i].name, names[s]) == 0)
          c = &l->cases[i];
      if (!c)
        {
          self_check (false, &t, "case '%s' exists%s", names[s], "");
          continue;
        }
      struct oc_run_opts rr = { .seed = o->seed, .reference = true };
      struct oc_output ref;
      oc_run (c, ref_be, &rr, &ref);
      for (size_t k = 0; k < n_dev; k++)
        {
          const struct oc_inject none = { 0 };
          /* The checker is under test, not the devices: the CPU, or
             the device asked for.  */
          if (!o->device && tsr_device_get_type (d[k].dev) != TSR_DEVICE_CPU)
            continue;
          const struct oc_inject bad = { .corrupt_output = true };
          const struct oc_inject nan = { .nan_output = true };
          const struct oc_inject guard = { .guard_write = true };
          bool is_int = ref.status == OC_OK && ref.is_int;
          if (ref.status != OC_OK)
            {
              self_check (false, &t, "%s: reference run (%s)", c->name,
                          ref.msg);
              break;
            }
          bool clean, unsupported;
          clean = injected_run (o, c, &d[k], &ref, &none, NULL,
                                &unsupported);
          if (unsupported)
            {
              printf ("UNSUPPORTED: self-test %s %s: not supported by "
                      "device\n", d[k].name, c->name);
              continue;
            }
          self_check (clean, &t, "%s %s: an untouched result passes",
                      d[k].name, c->name);
          self_check (injected_run (o, c, &d[k], &ref, &bad,
                                    is_int ? "i32 values differ" : "nmse",
                                    NULL),
                      &t, "%s %s: a changed element fails", d[k].name,
                      c->name);
          if (!is_int)
            self_check (injected_run (o, c, &d[k], &ref, &nan, "NaN/Inf",
                                      NULL),
                        &t, "%s %s: a NaN element fails", d[k].name,
                        c->name);
          self_check (injected_run (o, c, &d[k], &ref, &guard,
                                    "out-of-bounds write", NULL), &t,
                      "%s %s: a changed guard byte fails", d[k].name,
                      c->name);
        }
      oc_output_free (&ref);
    }
  tsr_backend_free (ref_be);
  printf ("self-test: %d passed, %d failed\n", t.passed, t.failed);
  return t.failed ? 1 : 0;
}

int
main (int argc, char **argv)
{
  struct options o;
  struct oc_list l = { 0 };
  struct device *d;
  size_t n_dev;
  int status;

  argv[0] = (char *) program;   /* getopt's messages name it so */
  parse_options (argc, argv, &o);
  oc_cases_all (&l);
  if (o.list)
    {
      list_cases (&o, &l);
      oc_list_free (&l);
      return 0;
    }
  d = open_devices (&o, &n_dev);
  if (n_dev == 0)
    {
      fprintf (stderr, "%s: no devices (is TESSERA_BACKEND_PATH right? "
               "see tessera-info)\n", program);
      status = 1;
    }
  else if (o.self_test)
    status = mode_self_test (&o, &l, d, n_dev);
  else if (o.mode == MODE_PERF)
    status = mode_perf (&o, &l, d, n_dev);
  else if (o.mode == MODE_SUPPORT)
    status = mode_support (&o, &l, d, n_dev);
  else
    status = mode_test (&o, &l, d, n_dev);
  close_devices (d, n_dev);
  oc_list_free (&l);
  if (o.have_regex)
    regfree (&o.regex);
  return status;
}
