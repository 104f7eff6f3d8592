/* model.c - one model over the ranks of an MPI job (run by mpi.exp
 * under mpirun with 2 and 3 ranks; argv[1] is the number of ranks).
 *
 * Every rank also runs the model alone, as one process, and compares:
 * tensor parallel and pipeline parallel give that process's logits
 * within NMSE 1e-10 for f32 models (the ranks' partial sums add in
 * another order, nothing else changes) and 1e-8 for q8_0 ones (the
 * same, with activations quantized in the same blocks), and the same
 * greedy tokens (llama, qwen2, qwen3, gemma2; qwen3moe by pipeline,
 * its tensor split refused).  Then the refusals: a split that cuts the key/value
 * heads or a quantization block, and a rank whose file differs, fail
 * on every rank with a message, without a hang.  */
#include <string.h>
#include "../tessera.model/model-test.h"
#include "tsr-model-ref.h"

#define PROMPT 7
#define GEN 6

static tsr_comm *comm;
static int rank, size;
static tsr_backend *cpu;

/* Rank 0 writes the model (synth ARGS); every rank gets its path.  */
static bool
shared_model (const char *name, const char *args, char *path, size_t n)
{
  int ok = 1;
  if (rank == 0)
    {
      mt_path (name, path, n);
      ok = mt_synth (args, path);
    }
  tsr_comm_broadcast (comm, path, n, 0);
  tsr_comm_broadcast (comm, &ok, sizeof ok, 0);
  return ok;
}

static tsr_model *
load (const char *path, enum tsr_model_split split)
{
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1,
                                 .comm = comm, .split = split };
  return tsr_model_load (path, &mp);
}

static int32_t
argmax (const float *x, int64_t n)
{
  int32_t best = 0;
  for (int64_t i = 1; i < n; i++)
    if (x[i] > x[best])
      best = (int32_t) i;
  return best;
}

/* The prompt's logits (all positions) and GEN greedy tokens, the token
   chosen by rank 0 and broadcast (as tessera-run does).  KV_F32: an f32
   key/value cache.  */
static int
run (tsr_model *m, bool kv_f32, float *logits, int32_t *gen)
{
  int64_t vocab = tsr_model_get_hparams (m)->n_vocab;
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 64;
  sp.n_batch = 16;
  sp.n_threads = 1;
  sp.kv_type = kv_f32 ? TSR_TYPE_F32 : TSR_TYPE_F16;
  tsr_session *s = tsr_session_new (m, &sp);
  if (!s)
    return tsr_last_status ();
  int32_t t[PROMPT];
  mt_tokens (t, PROMPT, vocab, 3);
  int st = tsr_session_decode (s, t, PROMPT, logits, true);
  float *last = malloc (sizeof (float) * (size_t) vocab);
  int32_t tok = argmax (logits + (size_t) (PROMPT - 1) * vocab, vocab);
  for (int i = 0; i < GEN && st == TSR_OK && last; i++)
    {
      if (size > 1)
        tsr_comm_broadcast (comm, &tok, sizeof tok, 0);
      gen[i] = tok;
      st = tsr_session_decode (s, &tok, 1, last, false);
      tok = argmax (last, vocab);
    }
  free (last);
  tsr_session_free (s);
  return st;
}

/* The model of synth ARGS run alone and split both ways, with an f16
   cache (TOL16: a key that differs in its last f32 bit may round to
   another f16) and an f32 one (TOL32: summation order only); with the
   f32 cache the split is also no farther than the single process from
   the double-precision pass of tsr-model-ref.h.  */
static void
compare (const char *name, const char *args, double tol16, double tol32,
         bool tensor_ok)
{
  char path[512];
  if (!shared_model (name, args, path, sizeof path))
    return;
  tsr_model *alone = tsr_model_load (path, &(struct tsr_model_params) {
                                       .backends = &cpu, .n_backends = 1 });
  CHECK (alone != NULL, "rank %d: %s: loads alone (%s)", rank, name,
         alone ? "ok" : tsr_last_error ());
  if (!alone)
    return;
  int64_t vocab = tsr_model_get_hparams (alone)->n_vocab;
  size_t n = (size_t) PROMPT * (size_t) vocab;
  float *ref = malloc (n * sizeof *ref), *got = malloc (n * sizeof *got);
  double *exact = malloc (n * sizeof *exact);
  char err[256];
  struct tsr_ref_model *rm = tsr_ref_model_load (tsr_model_gguf (alone), err,
                                                 sizeof err);
  int32_t toks[PROMPT];
  mt_tokens (toks, PROMPT, vocab, 3);
  bool have_exact = rm && exact
                    && tsr_ref_model_forward (rm, toks, PROMPT, exact) == 0;
  CHECK (have_exact, "rank %d: %s: the double-precision pass (%s)", rank,
         name, rm ? "ok" : err);
  tsr_ref_model_free (rm);
  static const enum tsr_model_split splits[] = { TSR_SPLIT_TENSOR,
                                                 TSR_SPLIT_PIPELINE };
  static const char *const split_names[] = { "tensor", "pipeline" };
  for (int k = 0; k < 2; k++)
    {
      if (splits[k] == TSR_SPLIT_TENSOR && !tensor_ok)
        {
          /* Experts and fused matrices are not cut: refused, the
             pipeline runs them.  */
          tsr_model *m = load (path, splits[k]);
          CHECK (!m && strstr (tsr_last_error (), "pipeline split"),
                 "rank %d: %s: tensor parallel is refused, naming the "
                 "pipeline split (%s)", rank, name,
                 m ? "loaded" : tsr_last_error ());
          tsr_model_free (m);
          continue;
        }
      tsr_model *m = load (path, splits[k]);
      CHECK (m != NULL && strstr (tsr_model_describe (m), split_names[k]),
             "rank %d: %s: %s parallel over %d ranks loads (%s)", rank,
             name, split_names[k], size,
             m ? tsr_model_describe (m) : tsr_last_error ());
      if (!m)
        continue;
      CHECK (tsr_model_bytes_per_token (m)
             < tsr_model_bytes_per_token (alone),
             "rank %d: %s: %s parallel: this rank reads %llu of the %llu "
             "weight bytes a token needs", rank, name, split_names[k],
             (unsigned long long) tsr_model_bytes_per_token (m),
             (unsigned long long) tsr_model_bytes_per_token (alone));
      for (int f32 = 0; f32 < 2; f32++)
        {
          int32_t ref_gen[GEN], got_gen[GEN];
          const char *cache = f32 ? "f32 cache" : "f16 cache";
          double tol = f32 ? tol32 : tol16;
          int st = run (alone, f32, ref, ref_gen);
          int st2 = st == TSR_OK ? run (m, f32, got, got_gen) : st;
          double e = mt_nmse_f (got, ref, n);
          CHECK (st2 == TSR_OK && e <= tol, "rank %d: %s, %s: %s parallel "
                 "logits of %d positions match one process's: NMSE %.2e <= "
                 "%.0e (%s)", rank, name, cache, split_names[k], PROMPT, e,
                 tol, st2 == TSR_OK ? "ok" : tsr_last_error ());
          CHECK (st2 == TSR_OK
                 && memcmp (got_gen, ref_gen, sizeof ref_gen) == 0,
                 "rank %d: %s, %s: %s parallel: the same %d greedy tokens",
                 rank, name, cache, split_names[k], GEN);
          if (f32 && have_exact && st2 == TSR_OK)
            {
              double ea = mt_nmse (ref, exact, n), es = mt_nmse (got, exact, n);
              CHECK (es <= 1.01 * ea + 1e-12, "rank %d: %s, %s: %s parallel "
                     "is as close to the double pass as one process (NMSE "
                     "%.3e, %.3e)", rank, name, cache, split_names[k], es,
                     ea);
            }
        }
      tsr_model_free (m);
    }
  free (ref);
  free (got);
  free (exact);
  tsr_model_free (alone);
  if (rank == 0)
    remove (path);
}

/* Loading that every rank must refuse with a message containing
   WANT.  */
static void
refused (const char *what, const char *path, enum tsr_model_split split,
         const char *want)
{
  tsr_model *m = load (path, split);
  CHECK (!m && strstr (tsr_last_error (), want), "rank %d: %s is refused "
         "(%s)", rank, what, m ? "loaded" : tsr_last_error ());
  tsr_model_free (m);
}

static void
refusals (void)
{
  char path[512], args[256];
  /* Key/value heads the ranks do not divide.  */
  int kv = size + 1;
  snprintf (args, sizeof args, "--type=f32 --heads=%d --kv-heads=%d "
            "--embd=%d --ff=96 --layers=2 --vocab=64", 2 * kv, kv, 32 * kv);
  if (shared_model ("kv", args, path, sizeof path))
    {
      refused ("tensor parallel cutting the key/value heads", path,
               TSR_SPLIT_TENSOR, "key/value heads");
      if (rank == 0)
        remove (path);
    }
  /* q4_K rows (blocks of 256) cut at 768 / size: inside a block for
     an even size (a multiple of 256 split 3 ways in whole parts is
     always whole blocks).  */
  if (shared_model ("q4k", "--type=q4_K --heads=12 --kv-heads=6 --embd=768 "
                    "--ff=768 --layers=1 --vocab=64", path, sizeof path))
    {
      if (size % 2 == 0)
        refused ("tensor parallel cutting q4_K blocks", path,
                 TSR_SPLIT_TENSOR, "inside a block");
      tsr_model *m = load (path, TSR_SPLIT_PIPELINE);
      CHECK (!m && strstr (tsr_last_error (), "layers"),
             "rank %d: a pipeline of more ranks than layers is refused "
             "(%s)", rank, m ? "loaded" : tsr_last_error ());
      tsr_model_free (m);
      if (rank == 0)
        remove (path);
    }
  /* The last rank's file has other weights.  */
  mt_path ("seed", path, sizeof path);
  snprintf (args, sizeof args, "--type=f32 --layers=2 --seed=%d",
            rank == size - 1 ? 2 : 1);
  if (mt_synth (args, path))
    {
      char want[32];
      snprintf (want, sizeof want, "rank %d", size - 1);
      refused ("a rank with another model file", path, TSR_SPLIT_TENSOR,
               want);
      remove (path);
    }
  /* A split without a communicator.  */
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1,
                                 .split = TSR_SPLIT_TENSOR };
  tsr_model *m = tsr_model_load ("unused.gguf", &mp);
  CHECK (!m, "rank %d: a split without a communicator is refused", rank);
}

int
main (int argc, char **argv)
{
  if (!mt_init ())
    return 1;
  comm = tsr_comm_world ();
  if (!comm)
    {
      printf ("FAIL: tsr_comm_world: %s\n", tsr_last_error ());
      return 1;
    }
  rank = tsr_comm_rank (comm);
  size = tsr_comm_size (comm);
  CHECK (argc > 1 && size == atoi (argv[1]), "rank %d: %d ranks", rank,
         size);
  cpu = tsr_backend_init_by_type (TSR_DEVICE_CPU, "threads=1");
  if (!cpu)
    {
      printf ("FAIL: rank %d: %s\n", rank, tsr_last_error ());
      return 1;
    }
  /* Heads, key/value heads, feed-forward rows and (for the first) the
     vocabulary divide by 2 and by 3.  */
  compare ("llama-f32", "--type=f32 --heads=12 --kv-heads=6 --embd=192 "
           "--ff=384 --layers=3 --vocab=384 --untied", 1e-8, 1e-10, true);
  compare ("qwen2-f32", "--arch=qwen2 --type=f32 --heads=6 --kv-heads=6 "
           "--embd=96 --ff=192 --layers=4 --vocab=250 --tied", 1e-8, 1e-10,
           true);
  compare ("llama-q8_0", "--type=q8_0 --heads=12 --kv-heads=6 --embd=384 "
           "--ff=768 --layers=3 --vocab=384 --tied", 1e-8, 1e-8, true);
  /* Other architectures: per-head norms and wide heads, soft-capping
     and a window shorter than the prompt, experts (pipeline only).  */
  compare ("qwen3-f32", "--arch=qwen3 --type=f32 --heads=12 --kv-heads=6 "
           "--embd=192 --head-dim=32 --ff=384 --layers=3 --vocab=384 "
           "--untied", 1e-8, 1e-10, true);
  compare ("gemma2-f32", "--arch=gemma2 --type=f32 --heads=6 --kv-heads=6 "
           "--embd=96 --ff=192 --layers=4 --vocab=250 --swa=4 "
           "--attn-softcap=5", 1e-8, 1e-10, true);
  compare ("qwen3moe-f32", "--arch=qwen3moe --type=f32 --heads=6 "
           "--kv-heads=6 --embd=96 --ff=192 --experts=4 --experts-used=2 "
           "--layers=3 --vocab=250", 1e-8, 1e-10, false);
  refusals ();
  tsr_backend_free (cpu);
  tsr_comm_free (comm);
  return TSR_TEST_EXIT ();
}
