/* Area: whole models on the OpenCL backend alone (no CPU behind it).
   Purpose: llama and qwen2 files of every kind of weight type (f32,
   f16, q8_0, q4_0, q4_1, q5_0, q5_1, the k-quants q2_K to q6_K, iq4_nl,
   iq4_xs, mxfp4) and files of the other architectures (qwen3moe's
   experts, gemma2's soft-capping and windows, gemma3, phi3's fused
   matrices) load on the first OpenCL device with every layer, the
   cache and the output there, run in one split per generated token,
   and give logits as close to the double-precision reference of
   testsuite/lib/tsr-model-ref.h as the CPU's: NMSE at most 1.5x the
   CPU's own, or within the CPU test's tolerance (1e-6 for f32 and f16
   weights, 1e-3 for block types: the CPU rounds activations to q8_0
   or q8_K, OpenCL keeps them f32 and is usually closer).  For f32
   files the 8 greedy tokens after the prompt are the CPU's.
   Limitations: small models (n_embd 64 to 256, 2 or 3 layers); speed
   is not checked (PoCL runs on this CPU).  */
#include "../tessera.model/model-test.h"
#include "tsr-model-ref.h"
#include "ocl-test.h"

#define N_TOK 9
#define N_GEN 8

struct ocl_case
{
  const char *name, *args;
  double tol;
};

static const struct ocl_case cases[] = {
  { "llama-f32", "--type=f32 --untied --rope-freqs", 1e-6 },
  { "qwen2-f32", "--arch=qwen2 --type=f32 --tied", 1e-6 },
  { "llama-f16", "--type=f16 --heads=8 --kv-heads=2", 1e-6 },
  { "llama-q8_0", "--type=q8_0 --untied", 1e-3 },
  { "qwen2-q4_0", "--arch=qwen2 --type=q4_0 --embd-type=q8_0", 1e-3 },
  { "llama-q4_1-q5_0", "--type=q4_1 --embd-type=q5_0", 1e-3 },
  { "qwen2-q5_1-iq4_nl", "--arch=qwen2 --type=q5_1 --embd-type=iq4_nl",
    1e-3 },
  { "llama-mxfp4", "--type=mxfp4 --embd-type=q8_0 --untied", 1e-3 },
  { "llama-q4_K", "--type=q4_K --embd=256 --ff=512 --untied", 1e-3 },
  { "llama-q6_K-q3_K", "--type=q6_K --embd-type=q3_K --embd=256 --ff=512",
    1e-3 },
  { "qwen2-q2_K-q5_K", "--arch=qwen2 --type=q2_K --embd-type=q5_K "
    "--embd=256 --ff=256 --heads=4", 1e-3 },
  { "llama-iq4_xs", "--type=iq4_xs --embd=256 --ff=512 --untied", 1e-3 },
  { "qwen3moe-f32", "--arch=qwen3moe --type=f32 --experts=4 "
    "--experts-used=2 --head-dim=32", 1e-6 },
  { "gemma2-f32", "--arch=gemma2 --type=f32 --swa=5 --attn-softcap=3",
    1e-6 },
  { "gemma3-q4_0", "--arch=gemma3 --type=q4_0 --swa=4 --layers=6", 1e-3 },
  { "phi3-q8_0", "--arch=phi3 --type=q8_0 --untied", 1e-3 },
};

static int32_t
argmax (const float *x, int64_t n)
{
  int32_t best = 0;
  for (int64_t i = 1; i < n; i++)
    if (x[i] > x[best])
      best = (int32_t) i;
  return best;
}

/* The prompt's logits on BE into LOGITS, then N_GEN greedy tokens into
   GEN; the scheduler's counters of the last token into STATS.  */
static int
run (const char *path, tsr_backend *be, const int32_t *t, float *logits,
     int32_t *gen, struct tsr_sched_stats *stats)
{
  struct tsr_model_params mp = { .backends = &be, .n_backends = 1,
                                 .gpu_layers = TSR_GPU_LAYERS_ALL };
  tsr_model *m = tsr_model_load (path, &mp);
  if (!m)
    return tsr_last_status ();
  int64_t v = tsr_model_get_hparams (m)->n_vocab;
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 64;
  sp.n_batch = N_TOK;
  tsr_session *s = tsr_session_new (m, &sp);
  float *last = malloc (sizeof *last * (size_t) v);
  int st = s && last ? tsr_session_decode (s, t, N_TOK, logits, true)
                     : tsr_last_status ();
  int32_t tok = st == TSR_OK ? argmax (logits + (N_TOK - 1) * v, v) : 0;
  for (int i = 0; i < N_GEN && st == TSR_OK; i++)
    {
      gen[i] = tok;
      st = tsr_session_decode (s, &tok, 1, last, false);
      tok = argmax (last, v);
    }
  if (st == TSR_OK && stats)
    tsr_sched_get_stats (tsr_session_sched (s), stats);
  free (last);
  tsr_session_free (s);
  tsr_model_free (m);
  return st;
}

static void
run_case (tsr_backend *ocl, tsr_backend *cpu, const struct ocl_case *c)
{
  char path[4096], err[512];
  if (!mt_synth (c->args, mt_path (c->name, path, sizeof path)))
    return;
  tsr_gguf *g = tsr_gguf_open (path, NULL);
  struct tsr_ref_model *ref = g ? tsr_ref_model_load (g, err, sizeof err)
                                : NULL;
  CHECK (ref != NULL, "%s: reference loads (%s)", c->name, ref ? "" : err);
  int64_t v = ref ? tsr_ref_model_n_vocab (ref) : 0;
  size_t n = (size_t) N_TOK * (size_t) v;
  double *want = ref ? malloc (sizeof *want * n) : NULL;
  float *on_cpu = malloc (sizeof *on_cpu * (n + 1));
  float *on_ocl = malloc (sizeof *on_ocl * (n + 1));
  int32_t t[N_TOK], gen_cpu[N_GEN], gen_ocl[N_GEN];
  mt_tokens (t, N_TOK, v ? v : 1, 9);
  struct tsr_sched_stats stats;
  if (want && tsr_ref_model_forward (ref, t, N_TOK, want) == 0)
    {
      int st = run (path, cpu, t, on_cpu, gen_cpu, NULL);
      CHECK (st == TSR_OK, "%s: CPU (%s)", c->name,
             st == TSR_OK ? "" : tsr_last_error ());
      int st2 = run (path, ocl, t, on_ocl, gen_ocl, &stats);
      CHECK (st2 == TSR_OK, "%s: OpenCL alone (%s)", c->name,
             st2 == TSR_OK ? "" : tsr_last_error ());
      if (st == TSR_OK && st2 == TSR_OK)
        {
          double e_cpu = mt_nmse (on_cpu, want, n);
          double e_ocl = mt_nmse (on_ocl, want, n);
          CHECK (e_ocl <= 1.5 * e_cpu || e_ocl <= c->tol,
                 "%s: OpenCL's logits against the reference: NMSE %.2e "
                 "(the CPU's %.2e; tolerance %.0e)", c->name, e_ocl, e_cpu,
                 c->tol);
          CHECK (stats.n_splits == 1 && stats.n_copies == 0,
                 "%s: a generated token in one split on OpenCL, no copy "
                 "(%d splits, %d copies)", c->name, stats.n_splits,
                 stats.n_copies);
          if (strstr (c->args, "--type=f32"))
            CHECK (memcmp (gen_cpu, gen_ocl, sizeof gen_cpu) == 0,
                   "%s: the CPU's %d greedy tokens", c->name, N_GEN);
        }
    }
  else if (ref)
    CHECK (0, "%s: the reference's forward pass", c->name);
  free (want);
  free (on_cpu);
  free (on_ocl);
  tsr_ref_model_free (ref);
  tsr_gguf_close (g);
  unlink (path);
}

int
main (void)
{
  tsr_backend *cpu = mt_cpu ();
  tsr_device *dev = cpu ? ocl_test_device () : NULL;
  tsr_backend *ocl = dev ? tsr_device_init (dev, NULL) : NULL;
  if (dev)
    CHECK (ocl != NULL, "OpenCL backend (%s)", ocl ? "" : tsr_last_error ());
  for (size_t i = 0; ocl && i < sizeof cases / sizeof cases[0]; i++)
    run_case (ocl, cpu, &cases[i]);
  tsr_backend_free (ocl);
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
