/* Area: the model runner over several devices (tessera/model.h, the
   scheduler).
   Purpose: every device Tessera finds (PoCL's OpenCL, BLAS, CUDA where
   present, and the check-only "partial" backend, whose private memory
   forces the scheduler to split the graph and copy between devices)
   runs a model with the CPU behind it, with all layers on the device
   and with only the last one there (gpu_layers = 1), and gives the
   CPU's logits, for llama files and for qwen3moe (experts), gemma2
   (soft-capping, windows) and phi3 (fused matrices) ones; a GPU-class
   device (OpenCL, CUDA) runs each alone in one split.  Weights that do
   not fit a device's free memory are
   refused before loading, with the sizes.
   Tolerance: NMSE against the CPU alone 1e-4 for f32 weights (devices
   may sum in another order or round activations to f16 in their
   kernels), 2e-3 for q8_0 (the CPU rounds activations to q8_0 for few
   tokens, another device may not).
   tessera-run --bench on each such device takes the roof of the set
   from the device's own memory (a positive figure), or says on
   standard error why it cannot and uses the host's.
   Where the work runs: in every such placement no weight byte is
   copied between devices on any compute (each weight is kept where a
   backend computes with it, and each node runs where its weights are),
   and no node is an exception to that; the two-layer q4_0 model of the
   scheduler issue, with its last layer on an OpenCL device, runs a
   generated token in at most 4 splits.
   Limitations: a device that cannot run some op leaves it to the CPU;
   the result is still compared.  The device's figure itself is not
   checked (no reference for it here).  */
#include "model-test.h"

#define N_TOK 9

struct model_case
{
  const char *name, *args;
  double max_nmse;
};

static const struct model_case cases[] = {
  { "f32", "--type=f32 --untied --layers=3", 1e-4 },
  { "q8_0-tied", "--type=q8_0 --tied --layers=3 --rope-freqs", 2e-3 },
  /* Other architectures' graphs.  */
  { "qwen3moe-f32", "--arch=qwen3moe --type=f32 --experts=4 "
    "--experts-used=2 --layers=3 --untied", 1e-4 },
  { "gemma2-f32", "--arch=gemma2 --type=f32 --swa=4 --attn-softcap=5 "
    "--layers=3", 1e-4 },
  { "phi3-q8_0", "--arch=phi3 --type=q8_0 --swa=5 --layers=3", 2e-3 },
};

/* Logits of the prompt on BE[0..N) with GPU_LAYERS, into OUT, then one
   generated token; the scheduler's counters of the prompt and of the
   token into PROMPT and TOKEN (may be NULL); status.  */
static int
run (const char *path, tsr_backend **be, int n, int gpu_layers, float *out,
     struct tsr_sched_stats *prompt, struct tsr_sched_stats *token)
{
  struct tsr_model_params mp = { .backends = be, .n_backends = n,
                                 .gpu_layers = gpu_layers };
  tsr_model *m = tsr_model_load (path, &mp);
  if (!m)
    return tsr_last_status ();
  int64_t v = tsr_model_get_hparams (m)->n_vocab;
  int32_t t[N_TOK + 1];
  mt_tokens (t, N_TOK + 1, v, 5);
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 32;
  sp.n_batch = N_TOK;
  tsr_session *s = tsr_session_new (m, &sp);
  int st = s ? tsr_session_decode (s, t, N_TOK, out, true)
             : tsr_last_status ();
  if (st == TSR_OK && prompt)
    tsr_sched_get_stats (tsr_session_sched (s), prompt);
  if (st == TSR_OK && token)
    {
      /* The second token of a generation: its graph is the steady
         state's.  */
      float *one = malloc ((size_t) v * sizeof *one);
      for (int k = 0; k < 2 && st == TSR_OK; k++)
        st = tsr_session_decode (s, &t[N_TOK], 1, one, false);
      tsr_sched_get_stats (tsr_session_sched (s), token);
      free (one);
    }
  tsr_session_free (s);
  tsr_model_free (m);
  return st;
}

/* No weight copied, no exception, in the counters ST of a run named
   WHAT.  */
static void
check_no_weight_copies (const struct tsr_sched_stats *st, const char *what)
{
  CHECK (st->bytes[TSR_SCHED_COPY_WEIGHT] == 0 && st->n_exceptions == 0
         && st->n_computes > 0,
         "%s: 0 weight bytes copied per compute, no exception (%llu "
         "weight bytes in %d copies, %d exceptions; %d splits, %llu "
         "activation bytes)", what,
         (unsigned long long) st->bytes[TSR_SCHED_COPY_WEIGHT],
         st->copies[TSR_SCHED_COPY_WEIGHT], st->n_exceptions, st->n_splits,
         (unsigned long long) st->bytes[TSR_SCHED_COPY_ACTIVATION]);
}

static void
check_device (tsr_backend *dev, tsr_backend *cpu, const struct model_case *c,
              const char *path, const float *want, float *got, size_t n)
{
  const char *name = tsr_backend_name (dev);
  tsr_backend *both[2] = { dev, cpu };
  static const int layers[] = { -1, 1 };
  for (int k = 0; k < 2; k++)
    {
      struct tsr_sched_stats prompt, token;
      char what[160];
      int st = run (path, both, 2, layers[k], got, &prompt, &token);
      double e = st == TSR_OK ? mt_nmse_f (got, want, n) : 1;
      CHECK (st == TSR_OK && e <= c->max_nmse, "%s: %s+CPU, %s: the CPU's "
             "logits (nmse %.2e, at most %.0e) %s", c->name, name,
             k ? "last layer on it" : "all layers on it", e, c->max_nmse,
             st == TSR_OK ? "" : tsr_last_error ());
      if (st != TSR_OK)
        continue;
      snprintf (what, sizeof what, "%s: %s+CPU, %s, prompt", c->name, name,
                k ? "last layer on it" : "all layers on it");
      check_no_weight_copies (&prompt, what);
      snprintf (what, sizeof what, "%s: %s+CPU, %s, generated token",
                c->name, name, k ? "last layer on it" : "all layers on it");
      check_no_weight_copies (&token, what);
      /* Splits: the layer range's two ends, and at most a crossing to
         the CPU and back per layer on the device (a device that leaves
         the cache to the CPU attends there); the partial devices lack
         norms, rope and attention, so their layers cross more.  */
      int on_dev = k ? 1 : 3;
      if (strncmp (tsr_device_name (tsr_backend_device (dev)), "Partial", 7)
          != 0)
        CHECK (token.n_splits <= 2 + 2 * on_dev, "%s: at most %d splits "
               "(%d)", what, 2 + 2 * on_dev, token.n_splits);
    }
  /* A GPU-class device (OpenCL, CUDA) runs the model alone, the cache
     in its memory: one split, the CPU's logits.  */
  const char *dn = tsr_device_name (tsr_backend_device (dev));
  if (strncmp (dn, "OpenCL", 6) == 0 || strncmp (dn, "CUDA", 4) == 0)
    {
      struct tsr_sched_stats token;
      int st = run (path, &dev, 1, -1, got, NULL, &token);
      double e = st == TSR_OK ? mt_nmse_f (got, want, n) : 1;
      CHECK (st == TSR_OK && e <= c->max_nmse && token.n_splits == 1,
             "%s: %s alone: the CPU's logits (nmse %.2e, at most %.0e), "
             "one split (%d) %s", c->name, name, e, c->max_nmse,
             token.n_splits, st == TSR_OK ? "" : tsr_last_error ());
    }
}

/* The scheduler issue's case: the two-layer q4_0 model with its last
   layer on DEV.  A device that leaves the key/value cache to the CPU
   (OpenCL before flash_attn_ext): CPU [embedding, layer 0] | DEV
   [layer 1's q, k, v] | CPU [its attention] | DEV [the rest and the
   output]; with the cache on the device, 2 splits.  At most 4 splits
   per generated token (14 on OpenCL before placement followed memory),
   no weight copied.  */
static void
check_issue_case (tsr_backend *dev, tsr_backend *cpu)
{
  char path[4096];
  if (!mt_synth ("--type=q4_0 --layers=2", mt_path ("two", path,
                                                     sizeof path)))
    return;
  tsr_backend *both[2] = { dev, cpu };
  float *logits = malloc ((size_t) N_TOK * 512 * sizeof *logits);
  struct tsr_sched_stats token;
  int st = run (path, both, 2, 1, logits, NULL, &token);
  CHECK (st == TSR_OK && token.n_splits <= 4
         && token.bytes[TSR_SCHED_COPY_WEIGHT] == 0,
         "q4_0, 2 layers, %s+CPU, last layer on it: at most 4 splits per "
         "generated token, no weight copied (%d splits, %d copies, %llu "
         "weight bytes) %s", tsr_backend_name (dev), token.n_splits,
         token.n_copies,
         (unsigned long long) token.bytes[TSR_SCHED_COPY_WEIGHT],
         st == TSR_OK ? "" : tsr_last_error ());
  /* The CPU hands its work to the device without waiting (queued
     copies); the host waits only where the CPU reads the device's
     results: at most once (the attention of the device's layer when the
     device leaves the cache to the CPU).  */
  CHECK (st == TSR_OK && token.n_host_waits <= 1,
         "q4_0, 2 layers, %s+CPU: at most one host wait between splits "
         "per token (%d, %d in a queue)", tsr_backend_name (dev),
         token.n_host_waits, token.n_device_waits);
  free (logits);
  unlink (path);
}

/* tessera-run --bench with NAME first: a roof of NAME's own.  */
static void
check_bench_roof (const char *name, const char *path)
{
  char cmd[8192], want[128];
  snprintf (cmd, sizeof cmd, "TESSERA_LOG=none '%s/tools/tessera-run' -m "
            "'%s' --bench --pp=4 --tg=2 -r 1 -t 2 -d %s,CPU", mt_bld, path,
            name);
  int st = mt_shell (cmd);
  char unseen[160];
  snprintf (unseen, sizeof unseen, "no backend or device named '%s'", name);
  if (st != 0 && strstr (mt_out, unseen))
    {
      /* Seen on an H100: NVIDIA's OpenCL device, listed here, was not
         listed in a tool started from this process (run by hand, the
         same command worked).  Not this check's subject.  */
      tsr_test_unsupported ("%s: tessera-run started from this test does "
                            "not see the device", name);
      return;
    }
  snprintf (want, sizeof want, "%s+CPU: read bandwidth of its first device "
            "(roof): ", name);
  const char *at = strstr (mt_out, want);
  double gbps = at ? strtod (at + strlen (want), NULL) : 0;
  bool said = strstr (mt_out, "cannot measure the device's read "
                      "bandwidth") != NULL;
  CHECK (st == 0 && (gbps > 0 || said), "%s: tessera-run --bench takes the "
         "set's roof from the device's memory (%s)", name,
         at ? "measured" : said ? "said it cannot" : mt_out);
}

/* PART: Partial1, which multiplies f32 matrices, so the model's
   matrices go to its memory.  */
static void
check_memory (tsr_backend *part, tsr_backend *cpu)
{
  char path[4096];
  if (!mt_synth ("--type=f32 --layers=8 --untied",
                 mt_path ("big", path, sizeof path)))
    return;
  tsr_backend *both[2] = { part, cpu };
  struct tsr_model_params mp = { .backends = both, .n_backends = 2,
                                 .gpu_layers = -1 };
  tsr_model *m = tsr_model_load (path, &mp);
  const char *e = tsr_last_error ();
  CHECK (!m && tsr_last_status () == TSR_ERR_NO_MEMORY
         && strstr (e, "Partial1") && strstr (e, "MiB free"),
         "weights larger than a device's free memory are refused (%s)", e);
  tsr_model_free (m);
  mp.gpu_layers = 2;
  m = tsr_model_load (path, &mp);
  CHECK (m && tsr_model_layer_backend (m, 7) == 0
         && tsr_model_layer_backend (m, 5) == 1
         && tsr_model_layer_backend (m, 8) == 0,
         "with gpu_layers 2 the last two layers and the output fit (%s)",
         m ? "" : tsr_last_error ());
  tsr_model_free (m);
  unlink (path);
}

int
main (void)
{
  tsr_backend *cpu = mt_cpu ();
  if (!cpu)
    return TSR_TEST_EXIT ();
  /* The tool first, while this process holds no device.  */
  {
    char path[4096];
    if (mt_synth (cases[0].args, mt_path ("bench", path, sizeof path)))
      {
        for (size_t i = 0; i < tsr_device_count (); i++)
          {
            tsr_device *d = tsr_device_get (i);
            if (tsr_device_get_type (d) != TSR_DEVICE_CPU)
              check_bench_roof (tsr_device_name (d), path);
          }
        unlink (path);
      }
  }
  tsr_backend *part = mt_partial ("partial");
  tsr_backend *devs[16];
  int n_dev = 0;
  for (size_t i = 0; i < tsr_device_count () && n_dev < 16; i++)
    {
      tsr_device *d = tsr_device_get (i);
      if (tsr_device_get_type (d) != TSR_DEVICE_CPU
          && strcmp (tsr_device_name (d), "Partial0") != 0)
        if ((devs[n_dev] = tsr_device_init (d, NULL)))
          n_dev++;
    }
  if (part)
    devs[n_dev++] = part;
  else
    tsr_test_unsupported ("partial backend not available (static build)");
  if (n_dev == 0)
    tsr_test_unsupported ("no device besides the CPU");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    {
      char path[4096];
      if (!mt_synth (cases[c].args, mt_path (cases[c].name, path,
                                             sizeof path)))
        continue;
      size_t n = (size_t) N_TOK * 512;           /* tiny: vocab 512 */
      float *want = malloc (n * sizeof *want), *got = malloc (n * sizeof *got);
      int st = run (path, &cpu, 1, -1, want, NULL, NULL);
      CHECK (st == TSR_OK, "%s: CPU alone (%s)", cases[c].name,
             st == TSR_OK ? "" : tsr_last_error ());
      for (int d = 0; d < n_dev && st == TSR_OK; d++)
        check_device (devs[d], cpu, &cases[c], path, want, got, n);

      free (want);
      free (got);
      unlink (path);
    }
  tsr_backend *mm = NULL;
  for (int d = 0; d < n_dev; d++)
    if (strcmp (tsr_device_name (tsr_backend_device (devs[d])), "Partial1")
        == 0)
      mm = devs[d];
    else if (devs[d] != part)
      check_issue_case (devs[d], cpu);
  if (mm)
    check_memory (mm, cpu);
  for (int d = 0; d < n_dev; d++)
    tsr_backend_free (devs[d]);
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
