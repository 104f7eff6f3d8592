/* sample.c - choosing the next token from a row of logits.
 *
 * Owns tsr_sampler: greedy (the largest logit, lowest id on ties), or
 * temperature sampling restricted to the TOP_K largest logits and then
 * to the smallest set of them whose probabilities reach TOP_P.  The
 * random numbers come from a seeded xorshift generator, so a seed
 * gives the same tokens on every machine.  NaN logits never win.  With
 * temperature, an infinite logit is the limit of a large one: +inf
 * logits share all the probability (equally), -inf ones get none; when
 * every candidate is -inf, they are equally likely.  A sampler warns
 * (TSR_LOG_WARN) the first time it meets a non-finite logit.  */
#include <config.h>

#include <math.h>
#include <stdlib.h>

#include "model-lib.h"

struct tsr_sampler
{
  struct tsr_sampler_params p;
  uint64_t state;
  /* Candidates of the last call: ids and their weights.  */
  int32_t *id;
  double *w;
  int64_t cap;
  bool warned;                  /* a non-finite logit was reported */
};

tsr_sampler *
tsr_sampler_new (const struct tsr_sampler_params *params)
{
  tsr_sampler *s = calloc (1, sizeof *s);
  if (!s)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "sampler: out of memory");
      return NULL;
    }
  if (params)
    s->p = *params;
  s->state = s->p.seed ^ UINT64_C (0x9e3779b97f4a7c15);
  if (!s->state)
    s->state = 1;
  return s;
}

void
tsr_sampler_free (tsr_sampler *s)
{
  if (!s)
    return;
  free (s->id);
  free (s->w);
  free (s);
}

/* Uniform in [0, 1).  */
static double
next_uniform (tsr_sampler *s)
{
  s->state ^= s->state >> 12;
  s->state ^= s->state << 25;
  s->state ^= s->state >> 27;
  uint64_t r = s->state * UINT64_C (2685821657736338717);
  return (double) (r >> 11) * (1.0 / 9007199254740992.0);
}

/* Does logit A at id IA rank before B at IB?  */
static bool
before (float a, int32_t ia, float b, int32_t ib)
{
  return a > b || (a == b && ia < ib);
}

static int32_t
greedy (const float *logits, int64_t n)
{
  int32_t best = -1;
  for (int64_t i = 0; i < n; i++)
    if (!isnan (logits[i]) && (best < 0 || logits[i] > logits[best]))
      best = (int32_t) i;
  return best;
}

/* Sift the min-heap ID[0..K) (by rank, worst at the root) down from I.  */
static void
sift_down (int32_t *id, int64_t k, int64_t i, const float *l)
{
  for (;;)
    {
      int64_t c = 2 * i + 1, w = i;
      if (c < k && before (l[id[w]], id[w], l[id[c]], id[c]))
        w = c;
      if (c + 1 < k && before (l[id[w]], id[w], l[id[c + 1]], id[c + 1]))
        w = c + 1;
      if (w == i)
        return;
      int32_t t = id[i];
      id[i] = id[w];
      id[w] = t;
      i = w;
    }
}

/* The K best ids (non-NaN), best first, into S->id; their count.  */
static int64_t
top_candidates (tsr_sampler *s, const float *l, int64_t n, int64_t k)
{
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++)
    {
      if (isnan (l[i]))
        continue;
      if (m < k)
        {
          s->id[m++] = (int32_t) i;
          if (m == k)
            for (int64_t j = k / 2; j-- > 0;)
              sift_down (s->id, k, j, l);
        }
      else if (before (l[i], (int32_t) i, l[s->id[0]], s->id[0]))
        {
          s->id[0] = (int32_t) i;
          sift_down (s->id, k, 0, l);
        }
    }
  if (m < k)
    for (int64_t j = m / 2; j-- > 0;)
      sift_down (s->id, m, j, l);
  /* Heap sort: the worst goes to the end, leaving the best first (no
     qsort: its comparison could not see L without a global).  */
  for (int64_t end = m - 1; end > 0; end--)
    {
      int32_t t = s->id[0];
      s->id[0] = s->id[end];
      s->id[end] = t;
      sift_down (s->id, end, 0, l);
    }
  return m;
}

/* Say once per sampler that LOGITS hold NaN or infinite values.  */
static void
check_finite (tsr_sampler *s, const float *logits, int64_t n)
{
  int64_t nan = 0, pinf = 0, ninf = 0;
  if (s->warned)
    return;
  for (int64_t i = 0; i < n; i++)
    if (!isfinite (logits[i]))
      {
        nan += isnan (logits[i]);
        pinf += logits[i] > 0;
        ninf += logits[i] < 0;
      }
  if (nan + pinf + ninf == 0)
    return;
  s->warned = true;
  tsr_log (TSR_LOG_WARN, "sampler: logits with %lld NaN (never chosen), "
           "%lld +inf (they share the choice) and %lld -inf (never chosen "
           "while another is larger) of %lld; reported once",
           (long long) nan, (long long) pinf, (long long) ninf,
           (long long) n);
}

int32_t
tsr_sampler_sample (tsr_sampler *s, const float *logits, int64_t n)
{
  if (!s || !logits || n < 1 || n > INT32_MAX)
    return -1;
  check_finite (s, logits, n);
  if (s->p.temp <= 0)
    return greedy (logits, n);
  int64_t k = s->p.top_k > 0 && s->p.top_k < n ? s->p.top_k : n;
  if (k > s->cap)
    {
      free (s->id);
      free (s->w);
      s->id = malloc ((size_t) k * sizeof *s->id);
      s->w = malloc ((size_t) k * sizeof *s->w);
      s->cap = s->id && s->w ? k : 0;
      if (!s->cap)
        return greedy (logits, n);
    }
  int64_t m = top_candidates (s, logits, n, k);
  if (m == 0)
    return -1;
  /* Softmax of logit / temp over the candidates, best first.  An
     infinite best leaves the candidates equal to it (the limit), each
     of weight 1; the others weigh nothing.  */
  double sum = 0, top = logits[s->id[0]];
  for (int64_t i = 0; i < m; i++)
    sum += s->w[i] = isinf (top) ? (logits[s->id[i]] == top ? 1.0 : 0.0)
                                 : exp (((double) logits[s->id[i]] - top)
                                        / s->p.temp);
  if (s->p.top_p > 0 && s->p.top_p < 1)
    {
      double acc = 0;
      int64_t keep = 0;
      while (keep < m && (keep == 0 || acc < s->p.top_p * sum))
        acc += s->w[keep++];
      m = keep;
      sum = acc;
    }
  double r = next_uniform (s) * sum;
  for (int64_t i = 0; i < m; i++)
    if ((r -= s->w[i]) < 0)
      return s->id[i];
  return s->id[m - 1];
}
