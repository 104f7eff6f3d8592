/* tsr-test.h - helpers for Tessera's self-checking test programs.
 *
 * A test program prints one line per check:
 *     PASS: <description>
 *     FAIL: <description>: <details>
 *     UNSUPPORTED: <description>: <why>
 * testsuite/lib/tessera.exp turns each line into a DejaGnu result, and
 * counts a nonzero exit status or a crash as a failure of the program.
 * Descriptions must be unique within a program.  */
#ifndef TSR_TEST_H
#define TSR_TEST_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tsr_test_failures;

static void
tsr_test_result (int ok, const char *fmt, ...)
{
  va_list ap;
  fputs (ok ? "PASS: " : "FAIL: ", stdout);
  va_start (ap, fmt);
  vprintf (fmt, ap);
  va_end (ap);
  fputc ('\n', stdout);
  fflush (stdout);
  if (!ok)
    tsr_test_failures++;
}

static inline void
tsr_test_unsupported (const char *fmt, ...)
{
  va_list ap;
  fputs ("UNSUPPORTED: ", stdout);
  va_start (ap, fmt);
  vprintf (fmt, ap);
  va_end (ap);
  fputc ('\n', stdout);
  fflush (stdout);
}

/* CHECK (cond, "description %d", ...): one result line.  */
#define CHECK(cond, ...) tsr_test_result ((cond) ? 1 : 0, __VA_ARGS__)

/* Exit status for main.  */
#define TSR_TEST_EXIT() (tsr_test_failures ? 1 : 0)

/* Deterministic pseudo-random numbers (xorshift64*), independent of
   the C library, so expected values are reproducible everywhere.  */
static unsigned long long tsr_test_rng_state = 0x9e3779b97f4a7c15ULL;
static inline void
tsr_test_seed (unsigned long long s)
{
  tsr_test_rng_state = s ? s : 0x9e3779b97f4a7c15ULL;
}
/* Uniform in [lo, hi).  */
static inline float
tsr_test_uniform (float lo, float hi)
{
  unsigned long long x = tsr_test_rng_state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  tsr_test_rng_state = x;
  x *= 0x2545f4914f6cdd1dULL;
  return lo + (hi - lo) * (float) ((x >> 40) * (1.0 / 16777216.0));
}

/* Largest absolute difference between N floats and N doubles.  */
static inline double
tsr_test_max_abs_diff (const float *got, const double *want, long n)
{
  double m = 0;
  for (long i = 0; i < n; i++)
    {
      double d = fabs ((double) got[i] - want[i]);
      if (!(d <= m))   /* catches NaN */
        m = isnan (d) ? INFINITY : d;
    }
  return m;
}

/* A bound on a program's run for tests of unbounded work (quadratic
   parsing, hangs): after SECONDS (ten times that under
   TESSERA_TEST_WRAPPER, e.g. valgrind) it prints a FAIL naming WHAT and
   exits, instead of hanging the testsuite.  The bound is generous: it
   catches work that grows without limit, not a slow machine.  */
#include <signal.h>
#include <unistd.h>
static const char *tsr_test_deadline_what = "";
static void
tsr_test_deadline_hit (int sig)
{
  static const char a[] = "FAIL: ", b[] = ": still running at the "
                                           "deadline (unbounded work)\n";
  (void) sig;
  if (write (1, a, sizeof a - 1) < 0
      || write (1, tsr_test_deadline_what,
                strlen (tsr_test_deadline_what)) < 0
      || write (1, b, sizeof b - 1) < 0)
    _exit (2);
  _exit (1);
}
static inline void
tsr_test_deadline (unsigned seconds, const char *what)
{
  const char *w = getenv ("TESSERA_TEST_WRAPPER");
  tsr_test_deadline_what = what;
  fflush (stdout);
  signal (SIGALRM, tsr_test_deadline_hit);
  alarm (w && *w ? seconds * 10 : seconds);
}

#endif /* TSR_TEST_H */
