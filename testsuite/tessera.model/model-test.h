/* model-test.h - helpers of the tessera.model tests: model files
 * written by tessera-gguf synth, token sequences, and comparing
 * logits.  */
#ifndef MODEL_TEST_H
#define MODEL_TEST_H

#define _POSIX_C_SOURCE 200809L   /* popen */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <tessera-model.h>
#include "tsr-test.h"

static const char *mt_bld;
static char mt_out[8192];

/* False (after a FAIL line) when the test environment is missing.  */
static bool
mt_init (void)
{
  mt_bld = getenv ("TSR_TEST_BUILDDIR");
  if (!mt_bld)
    CHECK (0, "test environment is set (TSR_TEST_BUILDDIR)");
  return mt_bld != NULL;
}

/* The CPU backend, or NULL after a FAIL line (also when mt_init
   fails).  */
static tsr_backend *
mt_cpu (void)
{
  if (!mt_init ())
    return NULL;
  tsr_backend *cpu = tsr_backend_init_by_type (TSR_DEVICE_CPU, NULL);
  CHECK (cpu != NULL, "cpu backend (%s)", cpu ? "" : tsr_last_error ());
  return cpu;
}

/* The path of this test's model NAME (in testsuite/bin, unique per
   process).  */
static const char *
mt_path (const char *name, char *buf, size_t n)
{
  snprintf (buf, n, "%s/testsuite/bin/model-%s-%ld.gguf", mt_bld, name,
            (long) getpid ());
  return buf;
}

/* Run the shell command CMD; its output (both streams, NUL bytes as
   '?') in mt_out; its exit status (-1 when it did not exit).  */
static int
mt_shell (const char *cmd)
{
  char full[8192];
  snprintf (full, sizeof full, "%s 2>&1", cmd);
  FILE *p = popen (full, "r");
  size_t n = p ? fread (mt_out, 1, sizeof mt_out - 1, p) : 0;
  /* Generated text may hold NUL bytes (a byte token): keep the rest
     searchable.  */
  for (size_t i = 0; i < n; i++)
    if (mt_out[i] == '\0')
      mt_out[i] = '?';
  mt_out[n] = '\0';
  int st = p ? pclose (p) : -1;
  return st != -1 && WIFEXITED (st) ? WEXITSTATUS (st) : -1;
}

/* tessera-gguf synth ARGS PATH; true on success (else a FAIL line).  */
static bool
mt_synth (const char *args, const char *path)
{
  char cmd[4096];
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-gguf synth %s %s", mt_bld,
            args, path);
  int st = mt_shell (cmd);
  if (st != 0)
    CHECK (0, "synth %s: %s", args, mt_out);
  return st == 0;
}

/* A backend of the check-only partial module's device NAME ("partial"
   for its first), loaded from the testsuite's modules; NULL when there
   are none (static builds).  */
static inline tsr_backend *
mt_partial (const char *name)
{
  const char *dir = getenv ("TSR_TEST_MODULE_DIR");
  char path[4096];
  snprintf (path, sizeof path, "%s/tessera-partial", dir ? dir : ".");
  if (!dir || tsr_registry_load (path) != TSR_OK)
    return NULL;
  return tsr_backend_init_by_name (name, NULL);
}

/* Normalized mean squared error of GOT against WANT (double, or float
   when WANT_F is given instead).  */
static double
mt_nmse2 (const float *got, const double *want, const float *want_f,
          size_t n)
{
  double err = 0, norm = 0;
  for (size_t i = 0; i < n; i++)
    {
      double w = want ? want[i] : (double) want_f[i];
      double d = (double) got[i] - w;
      err += d * d;
      norm += w * w;
    }
  return norm > 0 ? err / norm : err;
}

#define mt_nmse(got, want, n) mt_nmse2 (got, want, NULL, n)
#define mt_nmse_f(got, want, n) mt_nmse2 (got, NULL, want, n)

/* Of N rows of V logits, those whose argmax differs where the
   reference's top two logits are more than 1% of the row's spread
   apart.  */
static inline int
mt_argmax_mismatches (const float *got, const double *want, int n,
                      int64_t v)
{
  int bad = 0;
  for (int i = 0; i < n; i++)
    {
      const float *g = got + (size_t) i * v;
      const double *w = want + (size_t) i * v;
      int64_t bg = 0, bw = 0, second = -1;
      double lo = w[0], hi = w[0];
      for (int64_t j = 1; j < v; j++)
        {
          if (g[j] > g[bg])
            bg = j;
          if (w[j] > w[bw])
            bw = j;
          lo = w[j] < lo ? w[j] : lo;
          hi = w[j] > hi ? w[j] : hi;
        }
      for (int64_t j = 0; j < v; j++)
        if (j != bw && (second < 0 || w[j] > w[second]))
          second = j;
      if (bg != bw && w[bw] - w[second] > 0.01 * (hi - lo))
        bad++;
    }
  return bad;
}

/* A deterministic prompt of N ids below VOCAB.  */
static void
mt_tokens (int32_t *t, int n, int64_t vocab, unsigned seed)
{
  for (int i = 0; i < n; i++)
    t[i] = (int32_t) (((uint64_t) (i + 1) * 2654435761u + seed * 40503u)
                      % (uint64_t) vocab);
}

/* Write a NaN into element 0 of row ROW of the f32 tensor NAME of the
   model file PATH (a result TESSERA_CHECK_FINITE finds).  */
static bool
mt_nan_in_row (const char *path, const char *name, int64_t row)
{
  struct tsr_gguf_error err;
  tsr_gguf *g = tsr_gguf_open (path, &err);
  struct tsr_gguf_tensor_info info;
  int64_t t = g ? tsr_gguf_find_tensor (g, name) : -1;
  bool ok = t >= 0 && tsr_gguf_get_tensor_info (g, t, &info) == TSR_OK
            && info.type == TSR_TYPE_F32;
  long at = ok ? (long) (tsr_gguf_data_offset (g) + info.offset
                         + (uint64_t) row * (uint64_t) info.ne[0] * 4) : 0;
  tsr_gguf_close (g);
  FILE *f = ok ? fopen (path, "r+b") : NULL;
  float nan = NAN;
  ok = f && fseek (f, at, SEEK_SET) == 0 && fwrite (&nan, 4, 1, f) == 1;
  if (f)
    fclose (f);
  return ok;
}

/* Decode T[0..N) in batches of BATCH tokens (all logits) into LOGITS
   (n x vocab).  TSR_OK or the failing status.  */
static int
mt_decode (tsr_session *s, const int32_t *t, int n, int batch, float *logits,
           int64_t vocab)
{
  for (int i = 0; i < n; i += batch)
    {
      int k = n - i < batch ? n - i : batch;
      int st = tsr_session_decode (s, t + i, k, logits + (size_t) i * vocab,
                                   true);
      if (st != TSR_OK)
        return st;
    }
  return TSR_OK;
}

#endif /* MODEL_TEST_H */
