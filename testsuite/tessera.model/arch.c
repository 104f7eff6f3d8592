/* Area: the architectures of the model runner (tessera/model.h,
   model/arch-*.c) on the CPU.
   Purpose: for every architecture but llama and qwen2 (reference.c)
   and for llama's sliding window and experts, a file written by
   tessera-gguf synth gives, through a session, the logits of the
   independent double-precision forward pass of
   testsuite/lib/tsr-model-ref.h at every position of a 13-token
   prompt: decoded in one batch, token by token (the cache equal to
   recomputing), and in batches of 5.  Several weight types, tied and
   untied outputs, heads wider than n_embd / n_head, sliding windows
   shorter than the prompt (so that they change the result),
   soft-capping strong enough to bend the scores (gemma2), gemma3's
   global layer (6 layers), fused and separate phi3 projections.  For
   mixtures of experts the bytes a token reads
   (tsr_model_bytes_per_token) count each expert tensor's
   expert_used_count / expert_count share, computed here from the
   file's tensor list.
   Quantized: each f32 file requantized to q4_0 and to q8_0 (tessera-gguf
   requantize) runs near the error its weights carry: the NMSE of the
   runner's logits on the quantized file against the reference on the
   f32 file is at most 2x (q4_0; seen 1.0-1.5x) the reference's own on
   the quantized file (the dequantized computation), 3x for q8_0 (seen
   2.1-2.7x: the CPU rounds activations to q8_0 for q8_0 weights, a
   rounding as large as the weights' own, and the two add).
   Tolerances (NMSE of the logits), as reference.c: f32 and f16
   weights 1e-6 (the cache is f16); q8_0, q4_0 and k-quant weights
   1e-3 (activations rounded to q8_0 / q8_K).  The argmax of every row
   must agree where the reference's top two logits are clearly apart.
   Limitations: small models (n_embd 64 to 256, up to 6 layers); other
   devices run these graphs in devices.c where they support them.  */
#include "model-test.h"
#include "tsr-model-ref.h"

#define N_TOK 13

struct arch_case
{
  const char *name, *args;
  double max_nmse;
};

static const struct arch_case cases[] = {
  { "qwen3-f32", "--arch=qwen3 --type=f32 --heads=4 --kv-heads=2 "
    "--head-dim=32 --tied", 1e-6 },
  { "qwen3-q8_0", "--arch=qwen3 --type=q8_0 --untied", 1e-3 },
  { "qwen3moe-f32", "--arch=qwen3moe --type=f32 --experts=4 "
    "--experts-used=2 --ff-exp=64 --untied", 1e-6 },
  { "qwen3moe-q4_0", "--arch=qwen3moe --type=q4_0 --experts=8 "
    "--experts-used=3 --ff-exp=32 --head-dim=32 --tied", 1e-3 },
  { "qwen2moe-f32", "--arch=qwen2moe --type=f32 --experts=4 "
    "--experts-used=2 --ff-exp=64 --ff-shexp=96 --untied", 1e-6 },
  { "qwen2moe-q8_0", "--arch=qwen2moe --type=q8_0 --experts=6 "
    "--experts-used=1 --ff-exp=64 --ff-shexp=128 --tied", 1e-3 },
  { "mixtral-f32", "--arch=llama --type=f32 --experts=4 --experts-used=2 "
    "--untied", 1e-6 },
  { "mixtral-q4_K", "--arch=llama --type=q4_K --embd=256 --ff=256 "
    "--experts=4 --experts-used=2 --tied", 1e-3 },
  { "mistral-swa-f32", "--arch=llama --type=f32 --swa=5 --untied", 1e-6 },
  { "mistral-swa-q8_0", "--arch=llama --type=q8_0 --swa=4 --heads=8 "
    "--kv-heads=2 --tied", 1e-3 },
  { "gemma2-f32", "--arch=gemma2 --type=f32 --swa=5 --attn-softcap=2 "
    "--final-softcap=4 --head-dim=32", 1e-6 },
  { "gemma2-q8_0", "--arch=gemma2 --type=q8_0 --swa=6 --untied", 1e-3 },
  { "gemma3-f32", "--arch=gemma3 --type=f32 --swa=5 --layers=6 "
    "--head-dim=32", 1e-6 },
  { "gemma3-q4_0", "--arch=gemma3 --type=q4_0 --swa=4 --layers=6 --untied",
    1e-3 },
  { "phi3-f32", "--arch=phi3 --type=f32 --untied", 1e-6 },
  { "phi3-f16-swa-unfused", "--arch=phi3 --type=f16 --unfused --swa=6 "
    "--heads=8 --kv-heads=4", 1e-6 },
  { "phi3-q8_0", "--arch=phi3 --type=q8_0 --tied", 1e-3 },
};

/* The bytes a token reads, from the file: every tensor once, experts
   (three dimensions) in the share a token is routed to, the embedding
   one row (and whole when it is also the output).  */
static uint64_t
file_bytes_per_token (const tsr_gguf *g, int64_t n_expert, int64_t n_used)
{
  uint64_t bytes = 0;
  bool tied = tsr_gguf_find_tensor (g, "output.weight") < 0;
  for (int64_t i = 0; i < tsr_gguf_n_tensors (g); i++)
    {
      struct tsr_gguf_tensor_info t;
      tsr_gguf_get_tensor_info (g, i, &t);
      if (strcmp (t.name, "token_embd.weight") == 0)
        bytes += tsr_row_size (t.type, t.ne[0]) + (tied ? t.size : 0);
      else if (t.ne[2] > 1)
        bytes += t.size / (uint64_t) n_expert * (uint64_t) n_used;
      else
        bytes += t.size;
    }
  return bytes;
}

/* NMSE of A against B, both double.  */
static double
nmse_dd (const double *a, const double *b, size_t n)
{
  double err = 0, norm = 0;
  for (size_t i = 0; i < n; i++)
    {
      err += (a[i] - b[i]) * (a[i] - b[i]);
      norm += b[i] * b[i];
    }
  return norm > 0 ? err / norm : err;
}

/* The f32 file PATH of case C requantized to TYPE: the runner within
   twice the dequantized computation's error, both against WANT (the
   reference on the f32 file).  */
static void
check_quantized (const struct arch_case *c, tsr_backend *cpu,
                 const char *path, const char *type, double factor,
                 const int32_t *t, const double *want, int64_t v)
{
  char qpath[4096], cmd[8400], err[512], name[96];
  snprintf (name, sizeof name, "%s-as-%s", c->name, type);
  mt_path (name, qpath, sizeof qpath);
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-gguf requantize --type=%s "
            "'%s' '%s'", mt_bld, type, path, qpath);
  int st = mt_shell (cmd);
  CHECK (st == 0, "%s: requantize (%s)", name, st == 0 ? "" : mt_out);
  if (st != 0)
    return;
  size_t n = N_TOK * (size_t) v;
  tsr_gguf *g = tsr_gguf_open (qpath, NULL);
  struct tsr_ref_model *ref = g ? tsr_ref_model_load (g, err, sizeof err)
                                : NULL;
  double *deq = malloc (sizeof *deq * n), *got = malloc (sizeof *got * n);
  float *gotf = malloc (sizeof *gotf * n);
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = ref ? tsr_model_load (qpath, &mp) : NULL;
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 64;
  sp.n_batch = N_TOK;
  tsr_session *s = m ? tsr_session_new (m, &sp) : NULL;
  st = s && deq && got && gotf
       && tsr_ref_model_forward (ref, t, N_TOK, deq) == 0
       ? tsr_session_decode (s, t, N_TOK, gotf, true) : TSR_ERR_STATE;
  CHECK (st == TSR_OK, "%s: reference and runner (%s)", name,
         ref ? tsr_last_error () : err);
  if (st == TSR_OK)
    {
      for (size_t i = 0; i < n; i++)
        got[i] = gotf[i];
      double e_w = nmse_dd (deq, want, n), e = nmse_dd (got, want, n);
      CHECK (e_w > 0 && e <= factor * e_w, "%s: against the f32 file's "
             "reference, the runner's NMSE %.3e is within %gx the "
             "dequantized computation's %.3e (%.2fx)", name, e, factor, e_w,
             e_w > 0 ? e / e_w : 0);
    }
  tsr_session_free (s);
  tsr_model_free (m);
  tsr_ref_model_free (ref);
  tsr_gguf_close (g);
  free (deq);
  free (got);
  free (gotf);
  unlink (qpath);
}

/* Decode the prompt in batches of BATCH into GOT and check it against
   WANT.  */
static void
check_decode (const struct arch_case *c, tsr_model *m, const int32_t *t,
              int batch, float *got, const double *want)
{
  int64_t v = tsr_model_get_hparams (m)->n_vocab;
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 64;
  sp.n_batch = N_TOK;
  tsr_session *s = tsr_session_new (m, &sp);
  int st = s ? mt_decode (s, t, N_TOK, batch, got, v) : tsr_last_status ();
  CHECK (st == TSR_OK, "%s: decode in batches of %d (%s)", c->name, batch,
         st == TSR_OK ? "" : tsr_last_error ());
  tsr_session_free (s);
  if (st != TSR_OK)
    return;
  double e = mt_nmse (got, want, N_TOK * (size_t) v);
  CHECK (e <= c->max_nmse, "%s: batches of %d against the reference: nmse "
         "%.2e (at most %.0e)", c->name, batch, e, c->max_nmse);
  int bad = mt_argmax_mismatches (got, want, N_TOK, v);
  CHECK (bad == 0, "%s: batches of %d: argmax of every position (%d "
         "differ)", c->name, batch, bad);
}

static void
run_case (tsr_backend *cpu, const struct arch_case *c)
{
  char path[4096], err[512];
  if (!mt_synth (c->args, mt_path (c->name, path, sizeof path)))
    return;
  tsr_gguf *g = tsr_gguf_open (path, NULL);
  struct tsr_ref_model *ref = g ? tsr_ref_model_load (g, err, sizeof err)
                                : NULL;
  CHECK (ref != NULL, "%s: reference loads (%s)", c->name,
         ref ? "" : err);
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = ref ? tsr_model_load (path, &mp) : NULL;
  if (ref)
    CHECK (m != NULL, "%s: load (%s)", c->name, m ? tsr_model_describe (m)
           : tsr_last_error ());
  if (m)
    {
      const struct tsr_model_hparams *hp = tsr_model_get_hparams (m);
      int64_t v = hp->n_vocab;
      int32_t t[N_TOK];
      mt_tokens (t, N_TOK, v, 11);
      double *want = malloc (sizeof *want * N_TOK * (size_t) v);
      float *got = malloc (sizeof *got * N_TOK * (size_t) v);
      if (want && got && tsr_ref_model_forward (ref, t, N_TOK, want) == 0)
        {
          check_decode (c, m, t, N_TOK, got, want);
          check_decode (c, m, t, 1, got, want);
          check_decode (c, m, t, 5, got, want);
          if (strstr (c->args, "--type=f32"))
            {
              check_quantized (c, cpu, path, "q4_0", 2, t, want, v);
              check_quantized (c, cpu, path, "q8_0", 3, t, want, v);
            }
        }
      else
        CHECK (0, "%s: the reference's forward pass", c->name);
      if (hp->n_expert > 0)
        {
          uint64_t want_b = file_bytes_per_token (g, hp->n_expert,
                                                  hp->n_expert_used);
          uint64_t b = tsr_model_bytes_per_token (m);
          CHECK (b == want_b && hp->n_expert_used < hp->n_expert,
                 "%s: a token reads %llu bytes: the %lld used experts of "
                 "%lld (%llu from the file)", c->name, (unsigned long long) b,
                 (long long) hp->n_expert_used, (long long) hp->n_expert,
                 (unsigned long long) want_b);
        }
      free (want);
      free (got);
    }
  tsr_model_free (m);
  tsr_ref_model_free (ref);
  tsr_gguf_close (g);
  unlink (path);
}

int
main (void)
{
  tsr_backend *cpu = mt_cpu ();
  if (!cpu)
    return TSR_TEST_EXIT ();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    run_case (cpu, &cases[i]);
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
