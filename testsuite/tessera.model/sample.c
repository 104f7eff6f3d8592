/* Area: the sampler (tsr_sampler_sample, tessera/model.h).
   Purpose: non-finite logits.  With a temperature, one +inf logit
   among finite ones is always chosen, two +inf ones are both chosen
   and nothing else (the limit of the softmax), with and without top-p
   and top-k (before, the weights were NaN: the top-p loop kept no
   candidate and read before its array, and without top-p the least
   likely token won); every candidate -inf: they are equally likely,
   top-k keeping the lowest ids; NaN is never chosen; all NaN gives -1;
   greedy picks +inf.  The first non-finite logit is reported once per
   sampler at TSR_LOG_WARN, a finite row not at all.  Finite rows: the
   draws follow the softmax (a chi-square-free check: each of four
   tokens within 4 standard deviations of its expected count over 4000
   draws).  */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <tessera.h>
#include <tessera/model.h>
#include "tsr-test.h"

#define N 8
#define DRAWS 4000

static int warnings;

static void
on_log (tsr_log_level level, const char *message, void *data)
{
  (void) data;
  if (level == TSR_LOG_WARN && strstr (message, "sampler:"))
    warnings++;
}

/* How often each id comes out of DRAWS draws of S on L.  */
static void
draw (tsr_sampler *s, const float *l, int counts[N + 1])
{
  memset (counts, 0, (N + 1) * sizeof *counts);
  for (int i = 0; i < DRAWS; i++)
    {
      int32_t id = tsr_sampler_sample (s, l, N);
      counts[id >= 0 && id < N ? id : N]++;
    }
}

static tsr_sampler *
sampler (float temp, int top_k, float top_p)
{
  struct tsr_sampler_params p = { temp, top_k, top_p, 42 };
  return tsr_sampler_new (&p);
}

int
main (void)
{
  int c[N + 1];
  const float inf = INFINITY;
  /* The testsuite sets TESSERA_LOG=none; warnings are what is checked.  */
  tsr_log_level level = tsr_log_get_level ();
  tsr_log_set_level (TSR_LOG_WARN);
  tsr_log_set_callback (on_log, NULL);

  float one[N] = { 1, 2, 3, inf, 0, -1, 2, 1 };
  for (int v = 0; v < 3; v++)
    {
      tsr_sampler *s = sampler (0.8f, v == 2 ? 3 : 0, v ? 0.9f : 1.0f);
      warnings = 0;
      draw (s, one, c);
      CHECK (c[3] == DRAWS, "one +inf logit (top-p %s, top-k %s) is always "
             "chosen (%d of %d)", v ? "0.9" : "off", v == 2 ? "3" : "off",
             c[3], DRAWS);
      CHECK (warnings == 1, "reported once (%d)", warnings);
      tsr_sampler_free (s);
    }

  float two[N] = { 1, inf, 3, inf, 0, -inf, 2, 1 };
  tsr_sampler *s = sampler (1.0f, 0, 0);
  draw (s, two, c);
  CHECK (c[1] + c[3] == DRAWS && c[1] > DRAWS / 3 && c[3] > DRAWS / 3,
         "two +inf logits share the choice (%d and %d of %d)", c[1], c[3],
         DRAWS);
  tsr_sampler_free (s);

  float neg[N];
  for (int i = 0; i < N; i++)
    neg[i] = -inf;
  s = sampler (1.0f, 0, 0.9f);
  draw (s, neg, c);
  int seen = 0;
  for (int i = 0; i < N; i++)
    seen += c[i] > 0;
  CHECK (c[N] == 0 && seen == N, "every logit -inf: any may be chosen "
         "(%d ids seen, %d refusals)", seen, c[N]);
  tsr_sampler_free (s);
  s = sampler (1.0f, 2, 0);
  draw (s, neg, c);
  CHECK (c[0] + c[1] == DRAWS && c[0] > 0 && c[1] > 0, "top-k 2 of "
         "all -inf: ids 0 and 1 (%d, %d)", c[0], c[1]);
  tsr_sampler_free (s);

  float nan[N] = { NAN, 0, NAN, -1, NAN, NAN, NAN, NAN };
  s = sampler (2.0f, 0, 0);
  draw (s, nan, c);
  CHECK (c[1] + c[3] == DRAWS, "NaN is never chosen (%d of %d on the two "
         "finite ids)", c[1] + c[3], DRAWS);
  for (int i = 0; i < N; i++)
    nan[i] = NAN;
  CHECK (tsr_sampler_sample (s, nan, N) == -1, "all NaN: -1");
  tsr_sampler_free (s);

  s = sampler (0, 0, 0);
  CHECK (tsr_sampler_sample (s, one, N) == 3, "greedy picks +inf");
  tsr_sampler_free (s);

  /* A finite row: the draws follow exp (l / t) / sum.  */
  float fin[N] = { 0, 1, -0.5f, 0.5f, -inf, -inf, -inf, -inf };
  s = sampler (1.0f, 0, 0);
  warnings = 0;
  float fin4[4] = { 0, 1, -0.5f, 0.5f };
  memset (c, 0, sizeof c);
  for (int i = 0; i < DRAWS; i++)
    {
      int32_t id = tsr_sampler_sample (s, fin4, 4);
      c[id >= 0 && id < 4 ? id : N]++;
    }
  double z = 0;
  for (int i = 0; i < 4; i++)
    z += exp (fin[i]);
  int ok = c[N] == 0;
  for (int i = 0; i < 4; i++)
    {
      double p = exp (fin[i]) / z, e = DRAWS * p;
      ok &= fabs (c[i] - e) < 4 * sqrt (DRAWS * p * (1 - p));
    }
  CHECK (ok && warnings == 0, "finite logits: counts %d %d %d %d follow "
         "the softmax, no warning (%d)", c[0], c[1], c[2], c[3], warnings);
  tsr_sampler_free (s);
  tsr_log_set_callback (NULL, NULL);
  tsr_log_set_level (level);
  return TSR_TEST_EXIT ();
}
