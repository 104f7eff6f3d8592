/* The CPU backend's ISA level: chosen automatically as the best the
   CPU runs, forced lower with TESSERA_CPU_LEVEL, never higher (refused
   with a message), and every level this CPU runs computes the kernels
   right.  TESSERA_CPU_LEVEL_CAP pretends the CPU supports at most that
   level, so refusals are tested on any machine.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tessera.h>
#include "tsr-test.h"

static char desc[1024], built[256], runs[256];

/* This program's path: /proc/self/exe as the program sees it (under
   qemu-user that is the emulated program, not the emulator).  */
static const char *
self_path (void)
{
  static char path[4096];
  if (!path[0])
    {
      ssize_t n = readlink ("/proc/self/exe", path, sizeof path - 1);
      path[n > 0 ? n : 0] = '\0';
    }
  return path;
}

/* Run this program's checks in a child with ENV set; the child's
   description line and log go to OUT.  The child runs under
   TESSERA_TEST_WRAPPER too (qemu-user for a cross build, valgrind).  */
static int
child (const char *env, char *out, size_t size)
{
  char cmd[8192];
  const char *wrap = getenv ("TESSERA_TEST_WRAPPER");
  snprintf (cmd, sizeof cmd, "%s TESSERA_LOG=warn %s '%s' --child 2>&1",
            env, wrap ? wrap : "", self_path ());
  FILE *p = popen (cmd, "r");
  size_t n = p ? fread (out, 1, size - 1, p) : 0;
  out[n] = '\0';
  return p ? pclose (p) : -1;
}

static int
field (const char *d, const char *key, char *buf, size_t size)
{
  const char *p = strstr (d, key);
  if (!p)
    return 0;
  p += strlen (key);
  size_t n = strcspn (p, ";)");
  snprintf (buf, size, "%.*s", (int) n, p);
  return 1;
}

/* Kernels through ops at the current level vs double references.  */
static int
compute_checks (void)
{
  tsr_backend *be = tsr_backend_init_by_name ("cpu", NULL);
  tsr_context *ctx = tsr_context_new (false);
  enum { N = 1000, M = 7 };
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, N, M);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, N, M);
  float *av = a->data, *bv = b->data;
  tsr_test_seed (3);
  for (int i = 0; i < N * M; i++)
    {
      av[i] = tsr_test_uniform (-2, 2);
      bv[i] = tsr_test_uniform (-2, 2);
    }
  tsr_tensor *r[6];
  r[0] = tsr_add (ctx, a, b);
  r[1] = tsr_silu (ctx, a);
  r[2] = tsr_soft_max (ctx, a, NULL, 0.5f);
  r[3] = tsr_rms_norm (ctx, a, 1e-6f);
  r[4] = tsr_mul_mat (ctx, a, b);
  r[5] = tsr_cast (ctx, tsr_cast (ctx, a, TSR_TYPE_F16), TSR_TYPE_F32);
  tsr_graph *g = tsr_graph_new (ctx);
  for (int i = 0; i < 6; i++)
    tsr_graph_build (g, r[i]);
  int ok = be && tsr_backend_graph_compute (be, g) == TSR_OK;
  double e[6] = { 0 };
  for (int j = 0; ok && j < M; j++)
    {
      const float *x = av + j * N, *y = bv + j * N;
      double mx = -1e30, sum = 0, ss = 0;
      for (int i = 0; i < N; i++)
        {
          mx = fmax (mx, 0.5 * x[i]);
          ss += (double) x[i] * x[i];
        }
      for (int i = 0; i < N; i++)
        sum += exp (0.5 * x[i] - mx);
      for (int i = 0; i < N; i++)
        {
          double want[4] = { (double) x[i] + y[i], x[i] / (1 + exp (-x[i])),
                             exp (0.5 * x[i] - mx) / sum,
                             x[i] / sqrt (ss / N + 1e-6) };
          for (int k = 0; k < 4; k++)
            e[k] = fmax (e[k], fabs (((float *) r[k]->data)[j * N + i]
                                     - want[k]));
          e[5] = fmax (e[5], fabs (((float *) r[5]->data)[j * N + i]
                                   - tsr_fp16_to_fp32 (tsr_fp32_to_fp16 (x[i]))));
        }
      for (int i = 0; i < M; i++)
        {
          double d = 0;
          for (int k = 0; k < N; k++)
            d += (double) av[i * N + k] * bv[j * N + k];
          e[4] = fmax (e[4], fabs (((float *) r[4]->data)[j * M + i] - d));
        }
    }
  /* Tolerances: float rounding of each formula (dot: 1000 terms).  */
  static const double tol[6] = { 1e-6, 1e-6, 1e-8, 1e-5, 1e-3, 0 };
  static const char *const what[6] = { "add", "silu", "soft_max",
                                        "rms_norm", "mul_mat", "f16 cast" };
  for (int k = 0; k < 6; k++)
    CHECK (ok && e[k] <= tol[k], "%s within %g (%.3g)", what[k], tol[k],
           e[k]);
  tsr_context_free (ctx);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}

int
main (int argc, char **argv)
{
  tsr_device *cpu = tsr_device_by_name ("cpu");
  snprintf (desc, sizeof desc, "%s", cpu ? tsr_device_description (cpu) : "");
  if (argc > 1 && strcmp (argv[1], "--child") == 0)
    {
      printf ("DESC %s\n", desc);
      return compute_checks ();
    }
  CHECK (field (desc, "built: ", built, sizeof built)
         && field (desc, "this CPU runs: ", runs, sizeof runs),
         "device description lists levels built and runnable (%s)", desc);
  /* Why: the CPU features the levels test, as seen.  */
  char feats[512] = "";
  CHECK (field (desc, "CPU features: ", feats, sizeof feats) && feats[0],
         "device description lists the CPU features seen (%s)", feats);
  if (strstr (runs, "v3"))
    CHECK (strstr (feats, "avx2") && strstr (feats, "fma"),
           "a CPU running v3 is seen with avx2 and fma (%s)", feats);
  if (strstr (runs, "armv8.2-a"))
    CHECK (strstr (feats, "asimddp") && strstr (feats, "asimdhp"),
           "a CPU running armv8.2-a is seen with asimddp and asimdhp (%s)",
           feats);
  char best[64] = "", cur[64] = "";
  /* The best runnable level is the last word of RUNS.  */
  const char *sp = strrchr (runs, ' ');
  snprintf (best, sizeof best, "%s", sp ? sp + 1 : runs);
  field (desc, "ISA level ", cur, sizeof cur);
  cur[strcspn (cur, " ")] = '\0';
  CHECK (strcmp (cur, best) == 0, "default level is the best runnable "
         "(%s, best %s)", cur, best);

  static char out[65536];
  char env[256], word[64];
  const char *p = built;
  while (sscanf (p, "%63s", word) == 1)
    {
      p = strstr (p, word) + strlen (word);
      int runnable = strstr (runs, word) != NULL;
      if (!runnable)
        {
          tsr_test_unsupported ("level %s: this CPU cannot run it", word);
          continue;
        }
      snprintf (env, sizeof env, "TESSERA_CPU_LEVEL=%s", word);
      int st = child (env, out, sizeof out);
      char expect[96];
      snprintf (expect, sizeof expect, "ISA level %s ", word);
      CHECK (strstr (out, expect) != NULL, "level %s is forced", word);
      CHECK (st == 0 && !strstr (out, "FAIL"), "level %s computes add, "
             "silu, soft_max, rms_norm, mul_mat, f16 casts right", word);
      if (st != 0 || strstr (out, "FAIL"))
        fputs (out, stderr);
    }
  /* Refusals.  */
  child ("TESSERA_CPU_LEVEL=bogus", out, sizeof out);
  CHECK (strstr (out, "TESSERA_CPU_LEVEL=bogus is not a CPU level")
         && strstr (out, best), "unknown level named in a warning, best "
         "level used");
  /* Refusal of a level above what the CPU supports, on any family:
     the CPU capped at the next-best level it runs (CAP), the best (TOP)
     asked for.  */
  char cap[64] = "", top[64] = "", upto[256] = "";
  {
    const char *q = runs;
    int n = 0;
    while (sscanf (q, "%63s", word) == 1)
      {
        q = strstr (q, word) + strlen (word);
        snprintf (cap, sizeof cap, "%s", top);
        snprintf (top, sizeof top, "%s", word);
        n++;
      }
    if (n >= 2)
      snprintf (upto, sizeof upto, "%.*s)",
                (int) (strstr (runs, top) - runs - 1), runs);
  }
  if (cap[0])
    {
      snprintf (env, sizeof env, "TESSERA_CPU_LEVEL_CAP=%s "
                "TESSERA_CPU_LEVEL=%s", cap, top);
      child (env, out, sizeof out);
      char refused[96], level[96];
      snprintf (refused, sizeof refused, "TESSERA_CPU_LEVEL=%s refused", top);
      snprintf (level, sizeof level, "ISA level %s ", cap);
      CHECK (strstr (out, refused) && strstr (out, level),
             "a level above what the CPU supports (%s above %s) is refused; "
             "the best supported one runs", top, cap);
      snprintf (env, sizeof env, "TESSERA_CPU_LEVEL_CAP=%s", cap);
      child (env, out, sizeof out);
      CHECK (strstr (out, level) && strstr (out, upto),
             "a CPU of level %s gets %s and runs nothing above (%s)", cap,
             cap, upto);
    }
  else
    tsr_test_unsupported ("refusal of a higher level: this CPU runs only "
                          "one level built");
  child ("TESSERA_CPU_LEVEL=baseline", out, sizeof out);
  char lowest[64] = "";
  sscanf (runs, "%63s", lowest);
  snprintf (env, sizeof env, "ISA level %s ", lowest);
  CHECK (strstr (out, env) != NULL, "baseline forces the lowest level (%s)",
         lowest);
  return TSR_TEST_EXIT ();
}
