/* Area: several sequences in one session (tsr_session_decode_batch,
   tsr_session_seq_fork, tsr_session_seq_remove, tessera/model.h).
   Purpose: a batch that mixes the rows of four sequences of different
   lengths, each at its own positions, gives every row the logits of
   the same sequence decoded alone in a session of its own, and so do
   the steps that follow (one row per sequence); a sequence forked from
   another's prompt shares its cells (a cache too small for copies
   holds them) and goes on as that prompt followed by its own tokens;
   a removed sequence's cells are free again and the others are not
   disturbed.  Bad batches (a sequence out of range, positions that do
   not follow) are refused and leave the cache as it was; a full cache
   is refused; a context shift is refused while other sequences hold
   cells.  A batch that fails once its rows took cells (a NaN under
   TESSERA_CHECK_FINITE) frees them.
   On the CPU the logits of every row are those of its sequence alone
   bit for bit: each row's attention walks its own visible keys in
   blocks, wherever they lie in the cache, and the products give each
   column what it gets alone -- for 1, 4 and 16 sequences in q4_0,
   q5_0, iq4_nl, mxfp4, q4_K, q3_K and q6_K files (repacked from v3 on,
   iq4_nl and mxfp4 with VNNI; q3_K, and q6_K below AVX-512: the
   super-block types' plain dots sum as
   their tiles and repacked kernels at every ISA level; CI runs this
   program at the native level, at v3 in the static build and at the
   baseline in the sanitizer job), in
   micro-batches of at most 64 rows (n_ubatch; beyond,
   some products switch to a GEMM that sums otherwise: issue 35, point
   4); f32 files up to 4 sequences, and within NMSE 1e-10 for 16 (their
   products sum otherwise for many columns).
   One layer and two, llama and qwen2 (biases, rope on halves), f32
   cache.
   On every OpenCL or CUDA device found, the mixed batch and its steps
   against the same device's sequences alone (NMSE 1e-8).
   Limitations: random weights.  */
#include "model-test.h"       /* first: _POSIX_C_SOURCE (setenv) */
#include <stdlib.h>
#include <string.h>

#define MAX_SEQ 16
#define N_GEN 3
#define TOL 1e-10

/* Sequence Q's prompt: 1 to 12 tokens.  */
static int
prompt_len (int q)
{
  return 1 + (2 + 7 * q) % 12;
}

static tsr_session *
session (tsr_model *m, int n_ctx)
{
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = n_ctx;
  sp.n_batch = 256;
  /* Graphs of at most 64 rows: beyond (80 columns for blocks of 32),
     the CPU's products of some types at some ISA levels (the baseline
     the sanitizer job builds) switch to a GEMM whose sums differ.  */
  sp.n_ubatch = 64;
  sp.kv_type = TSR_TYPE_F32;
  return tsr_session_new (m, &sp);
}

/* The NMSE of GOT against WANT (N floats), and whether they are the
   same bits (*SAME stays true only while they are).  */
static double
nmse (const float *got, const float *want, size_t n, bool *same)
{
  double e = 0, w = 0;
  for (size_t i = 0; i < n; i++)
    {
      double d = (double) got[i] - want[i];
      e += d * d;
      w += (double) want[i] * want[i];
      *same = *same && got[i] == want[i];
    }
  return w > 0 ? e / w : e;
}

/* Sequence Q's tokens: its prompt, then its generated ones.  */
static void
seq_tokens (int q, int32_t *t, int n, int64_t vocab)
{
  mt_tokens (t, n, vocab, 101 + 17 * (unsigned) q);
}

/* N_SEQ sequences (1 to MAX_SEQ); EXACT: the logits must be those of
   each sequence alone bit for bit (the CPU), else within TOL.  */
static void
mixed (const char *name, tsr_model *m, int n_seq, bool exact, double tol)
{
  const int64_t v = tsr_model_get_hparams (m)->n_vocab;
  int32_t t[MAX_SEQ][32];
  float *alone[MAX_SEQ];
  int total = 0;

  /* Each sequence alone: its prompt's and steps' logits.  */
  for (int q = 0; q < n_seq; q++)
    {
      int n = prompt_len (q) + N_GEN;
      seq_tokens (q, t[q], n, v);
      alone[q] = malloc ((size_t) n * (size_t) v * sizeof (float));
      tsr_session *s = session (m, 64);
      int st = s && alone[q] ? mt_decode (s, t[q], prompt_len (q),
                                          prompt_len (q), alone[q], v)
                             : TSR_ERR_NO_MEMORY;
      for (int g = 0; g < N_GEN && st == TSR_OK; g++)
        st = tsr_session_decode (s, &t[q][prompt_len (q) + g], 1,
                                 alone[q] + (size_t) (prompt_len (q) + g) * v,
                                 true);
      CHECK (st == TSR_OK, "%s: sequence %d alone (%s)", name, q,
             st == TSR_OK ? "" : tsr_last_error ());
      tsr_session_free (s);
      total += prompt_len (q);
    }

  /* All prompts in one batch, their rows dealt round the sequences.  */
  int32_t tok[256], seq[256], pos[256];
  bool want[256];
  int k = 0;
  for (int i = 0; k < total; i++)
    for (int q = 0; q < n_seq; q++)
      if (i < prompt_len (q))
        {
          tok[k] = t[q][i];
          seq[k] = q;
          pos[k] = i;
          want[k++] = true;
        }
  float *got = malloc ((size_t) total * (size_t) v * sizeof *got);
  tsr_session *s = session (m, 256);
  struct tsr_batch b = { .n_tokens = total, .tokens = tok, .seq = seq,
                         .logits = want };
  int st = s && got ? tsr_session_decode_batch (s, &b, got)
                    : TSR_ERR_NO_MEMORY;
  CHECK (st == TSR_OK, "%s: a batch of %d rows of %d sequences (%s)", name,
         total, n_seq, st == TSR_OK ? "" : tsr_last_error ());
  double worst = 0;
  bool same = true;
  for (int r = 0; st == TSR_OK && r < total; r++)
    {
      double e = nmse (got + (size_t) r * v,
                       alone[seq[r]] + (size_t) pos[r] * v, (size_t) v,
                       &same);
      worst = e > worst ? e : worst;
    }
  if (st == TSR_OK)
    CHECK (exact ? same : worst <= tol, "%s, %d sequences: each row of the "
           "mixed batch has its sequence's logits alone: %s (NMSE %.2e at "
           "most; %s)", name, n_seq, same ? "bit-identical" : "last bits "
           "differ", worst, exact ? "bit-identical wanted" : "tolerance");
  for (int q = 0; q < n_seq && st == TSR_OK; q++)
    CHECK (tsr_session_seq_pos_max (s, q) == prompt_len (q) - 1,
           "%s: sequence %d's last position is %d (%d)", name, q,
           prompt_len (q) - 1, tsr_session_seq_pos_max (s, q));

  /* Steps: one row a sequence, positions from the session (NULL), the
     rows in reverse order of sequences.  */
  worst = 0;
  same = true;
  for (int g = 0; g < N_GEN && st == TSR_OK; g++)
    {
      for (int r = 0; r < n_seq; r++)
        {
          int q = n_seq - 1 - r;
          tok[r] = t[q][prompt_len (q) + g];
          seq[r] = q;
          want[r] = true;
        }
      struct tsr_batch step = { .n_tokens = n_seq, .tokens = tok,
                                .seq = seq, .logits = want };
      st = tsr_session_decode_batch (s, &step, got);
      for (int r = 0; r < n_seq && st == TSR_OK; r++)
        {
          int q = seq[r];
          double e = nmse (got + (size_t) r * v,
                           alone[q] + (size_t) (prompt_len (q) + g) * v,
                           (size_t) v, &same);
          worst = e > worst ? e : worst;
        }
    }
  CHECK (st == TSR_OK && (exact ? same : worst <= tol), "%s, %d "
         "sequences: %d steps of one row a sequence: %s (NMSE %.2e at most; "
         "%s)%s%s", name, n_seq, N_GEN, same ? "bit-identical" : "last bits "
         "differ", worst, exact ? "bit-identical wanted" : "tolerance",
         st == TSR_OK ? "" : ": ", st == TSR_OK ? "" : tsr_last_error ());

  /* Refusals leave the cache as it was (sequence 1 has cells).  */
  if (n_seq < 2)
    goto done;
  int before = tsr_session_seq_pos_max (s, 1);
  int32_t bad_seq = TSR_SEQ_MAX, old_pos = 0, one = 1;
  struct tsr_batch bad1 = { .n_tokens = 1, .tokens = tok, .seq = &bad_seq };
  struct tsr_batch bad2 = { .n_tokens = 1, .tokens = tok, .seq = &one,
                            .pos = &old_pos };
  CHECK (tsr_session_decode_batch (s, &bad1, NULL) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "sequence 64"),
         "%s: a sequence out of range is refused (%s)", name,
         tsr_last_error ());
  CHECK (tsr_session_decode_batch (s, &bad2, NULL) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "does not follow"),
         "%s: a position before the sequence's last is refused (%s)", name,
         tsr_last_error ());
  CHECK (tsr_session_decode_batch (s, NULL, NULL) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "NULL batch"),
         "%s: a NULL batch is refused (%s)", name, tsr_last_error ());
  CHECK (tsr_session_seq_pos_max (s, 1) == before,
         "%s: the refused batches left the cache as it was", name);
  CHECK (tsr_session_shift (s, 0, 1) == TSR_ERR_STATE,
         "%s: a context shift is refused while several sequences hold "
         "cells (%s)", name, tsr_last_error ());
done:

  tsr_session_free (s);
  free (got);
  for (int q = 0; q < n_seq; q++)
    free (alone[q]);
}

/* A prompt of P tokens in sequence 0, forked into 1 and 2, each going
   on with its own token, in a cache of N_CTX cells that could not hold
   three copies of the prompt.  */
#define P 10
#define N_CTX 16

static void
fork_remove (const char *name, tsr_model *m, bool exact)
{
  const int64_t v = tsr_model_get_hparams (m)->n_vocab;
  int32_t prompt[P + 1], next[3];
  mt_tokens (prompt, P, v, 7);
  mt_tokens (next, 3, v, 99);
  float *want = malloc (3 * (size_t) v * sizeof *want);
  float *got = malloc (3 * (size_t) v * sizeof *got);
  if (!want || !got)
    {
      CHECK (0, "%s: memory", name);
      free (want);
      free (got);
      return;
    }
  /* Alone: the prompt, then each continuation.  */
  int st = TSR_OK;
  for (int q = 0; q < 3 && st == TSR_OK; q++)
    {
      tsr_session *a = session (m, N_CTX);
      memcpy (prompt + P, &next[q], sizeof *next);
      st = a ? tsr_session_decode (a, prompt, P + 1, want + (size_t) q * v,
                                   false)
             : tsr_last_status ();
      tsr_session_free (a);
    }
  CHECK (st == TSR_OK, "%s: the continuations alone (%s)", name,
         st == TSR_OK ? "" : tsr_last_error ());

  tsr_session *s = session (m, N_CTX);
  if (st == TSR_OK)
    st = s ? tsr_session_decode (s, prompt, P, NULL, false)
           : tsr_last_status ();
  if (st == TSR_OK)
    st = tsr_session_seq_fork (s, 0, 1);
  if (st == TSR_OK)
    st = tsr_session_seq_fork (s, 0, 2);
  CHECK (st == TSR_OK && tsr_session_seq_pos_max (s, 1) == P - 1
         && tsr_session_seq_pos_max (s, 2) == P - 1,
         "%s: two forks of a %d-token prompt (%s)", name, P,
         st == TSR_OK ? "" : tsr_last_error ());
  int32_t seq[3] = { 0, 1, 2 };
  bool all[3] = { true, true, true };
  struct tsr_batch b = { .n_tokens = 3, .tokens = next, .seq = seq,
                         .logits = all };
  /* 10 shared cells and 3 new ones in 16: copies would need 33.  */
  if (st == TSR_OK)
    st = tsr_session_decode_batch (s, &b, got);
  CHECK (st == TSR_OK, "%s: the three continue in one batch, the prompt's "
         "cells shared (%s)", name, st == TSR_OK ? "" : tsr_last_error ());
  if (st == TSR_OK)
    {
      bool same = true;
      double e = nmse (got, want, 3 * (size_t) v, &same);
      CHECK (exact ? same : e <= TOL, "%s: each fork gives its "
             "continuation's logits alone: %s (NMSE %.2e; %s)", name,
             same ? "bit-identical" : "last bits differ", e,
             exact ? "bit-identical wanted" : "tolerance");
    }

  /* Removing sequence 1 frees its one cell of its own (the shared
     ones stay for 0 and 2).  */
  if (st == TSR_OK)
    st = tsr_session_seq_remove (s, 1, 0, -1);
  CHECK (st == TSR_OK && tsr_session_seq_pos_max (s, 1) == -1
         && tsr_session_seq_pos_max (s, 0) == P
         && tsr_session_seq_pos_max (s, 2) == P,
         "%s: sequence 1 removed, 0 and 2 kept (%s)", name,
         st == TSR_OK ? "" : tsr_last_error ());
  /* Sequence 2 goes on after the removal: its new cell lies above its
     others (the freed one is below), so it still gets what it gets
     alone.  */
  int32_t y = 77, s2 = 2, alone3[P + 2];
  memcpy (alone3, prompt, P * sizeof *prompt);
  alone3[P] = next[2];
  alone3[P + 1] = y;
  struct tsr_batch step = { .n_tokens = 1, .tokens = &y, .seq = &s2 };
  tsr_session *a = session (m, N_CTX);
  if (st == TSR_OK)
    st = tsr_session_decode_batch (s, &step, got);
  /* Its logits alone into WANT's second row (the first is kept for the
     end).  */
  if (st == TSR_OK)
    st = a ? tsr_session_decode (a, alone3, P + 2, want + v, false)
           : tsr_last_status ();
  tsr_session_free (a);
  if (st == TSR_OK)
    {
      bool same = true;
      double e = nmse (got, want + v, (size_t) v, &same);
      CHECK (exact ? same : e <= TOL, "%s: after the removal, sequence 2's "
             "next token has its logits alone: %s (NMSE %.2e)", name,
             same ? "bit-identical" : "last bits differ", e);
    }
  else
    CHECK (0, "%s: sequence 2 after the removal (%s)", name,
           tsr_last_error ());
  /* 16 cells: 10 shared, 0's one, 2's two; 3 free, one of them 1's.  */
  int32_t three[3];
  mt_tokens (three, 3, v, 5);
  int32_t s0[3] = { 0, 0, 0 };
  struct tsr_batch fill = { .n_tokens = 3, .tokens = three, .seq = s0 };
  if (st == TSR_OK)
    st = tsr_session_decode_batch (s, &fill, NULL);
  CHECK (st == TSR_OK, "%s: the freed cell is used again: 3 more rows fit "
         "(%s)", name, st == TSR_OK ? "" : tsr_last_error ());
  int32_t last = three[0];
  struct tsr_batch full = { .n_tokens = 1, .tokens = &last, .seq = &s2 };
  CHECK (st == TSR_OK && tsr_session_decode_batch (s, &full, NULL)
                         == TSR_ERR_STATE
         && strstr (tsr_last_error (), "cache is full"),
         "%s: then the cache is full (%s)", name, tsr_last_error ());
  CHECK (tsr_session_seq_fork (s, 3, 3) == TSR_ERR_INVALID_ARG
         && tsr_session_seq_fork (s, 0, TSR_SEQ_MAX) == TSR_ERR_INVALID_ARG
         && tsr_session_seq_remove (s, TSR_SEQ_MAX, 0, -1)
            == TSR_ERR_INVALID_ARG
         && tsr_session_seq_remove (s, 0, 5, 2) == TSR_ERR_INVALID_ARG,
         "%s: bad forks and removals are refused", name);
  /* Everything removed: the cache is empty, and sequence 0 decodes as
     in a fresh session.  */
  if (st == TSR_OK)
    st = tsr_session_seq_remove (s, -1, 0, -1);
  memcpy (prompt + P, &next[0], sizeof *next);
  if (st == TSR_OK)
    st = tsr_session_decode (s, prompt, P + 1, got, false);
  if (st == TSR_OK)
    {
      bool same = true;
      double e = nmse (got, want, (size_t) v, &same);
      CHECK (e == 0 && tsr_session_n_past (s) == P + 1,
             "%s: after removing every sequence, decoding is a fresh "
             "session's (NMSE %.2e, n_past %d)", name, e,
             tsr_session_n_past (s));
    }
  else
    CHECK (0, "%s: removing every sequence (%s)", name, tsr_last_error ());
  tsr_session_free (s);
  free (want);
  free (got);
}

/* A decode that fails after its rows took cells (a NaN in token 5's
   embedding, TESSERA_CHECK_FINITE): the cells are free again, the
   other sequence's positions unchanged, and decoding goes on as in a
   session that never saw the failed batch.  */
static void
rollback (tsr_backend *cpu)
{
  char path[4096];
  if (!mt_synth ("--type=f32 --layers=1", mt_path ("nan", path,
                                                   sizeof path)))
    return;
  bool ok = mt_nan_in_row (path, "token_embd.weight", 5);
  CHECK (ok, "a NaN written into token 5's embedding");
  setenv ("TESSERA_CHECK_FINITE", "1", 1);
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = ok ? tsr_model_load (path, &mp) : NULL;
  const int64_t v = m ? tsr_model_get_hparams (m)->n_vocab : 1;
  tsr_session *s = m ? session (m, 16) : NULL, *fresh = m ? session (m, 16)
                                                          : NULL;
  float *a = malloc ((size_t) v * sizeof *a), *b = malloc ((size_t) v
                                                           * sizeof *b);
  int32_t first[4] = { 1, 2, 3, 4 }, tok[2] = { 4, 5 }, seq[2] = { 0, 1 };
  int st = s && fresh && a && b ? tsr_session_decode (s, first, 3, NULL,
                                                      false)
                                : TSR_ERR_NO_MEMORY;
  struct tsr_batch bad = { .n_tokens = 2, .tokens = tok, .seq = seq };
  if (st == TSR_OK)
    st = tsr_session_decode_batch (s, &bad, NULL);
  CHECK (st == TSR_ERR_NUMERIC, "the batch with token 5 fails (%s)",
         tsr_last_error ());
  CHECK (tsr_session_seq_pos_max (s, 0) == 2
         && tsr_session_seq_pos_max (s, 1) == -1,
         "its rows' cells are free again: sequence 0 ends at 2, 1 is empty "
         "(%d, %d)", tsr_session_seq_pos_max (s, 0),
         tsr_session_seq_pos_max (s, 1));
  st = s && fresh && a && b ? tsr_session_decode (s, &first[3], 1, a, false)
                            : TSR_ERR_NO_MEMORY;
  if (st == TSR_OK)
    st = tsr_session_decode (fresh, first, 4, b, false);
  CHECK (st == TSR_OK && !memcmp (a, b, (size_t) v * sizeof *a),
         "then sequence 0 goes on as a session that never saw the failed "
         "batch, bit for bit (%s)", st == TSR_OK ? "" : tsr_last_error ());
  unsetenv ("TESSERA_CHECK_FINITE");
  free (a);
  free (b);
  tsr_session_free (s);
  tsr_session_free (fresh);
  tsr_model_free (m);
  unlink (path);
}

int
main (void)
{
  /* EXACT16: bit-identical with 16 sequences too.  The CPU's f32
     products change their summation for many columns (a batch of 100
     rows against one of 12), so f32 files are bit-identical up to 4
     sequences here and within NMSE 1e-10 beyond; the quantized ones
     sum alike at every column count.  */
  static const struct
  {
    const char *name, *args;
    bool exact16;
  } cases[] = {
    { "llama, 1 layer", "--type=f32 --layers=1", false },
    { "llama, 2 layers", "--type=f32 --layers=2", false },
    { "qwen2, 2 layers", "--arch=qwen2 --type=f32 --layers=2", false },
    { "llama q4_0, 2 layers", "--type=q4_0 --layers=2", true },
    { "llama q4_K, 2 layers", "--type=q4_K --embd=256 --ff=512 --layers=2",
      true },
    /* Never repacked (plain dots, then the tiles from 16 or 64 rows).  */
    { "llama q3_K, 2 layers", "--type=q3_K --embd=256 --ff=512 --layers=2",
      true },
    { "llama q6_K, 2 layers", "--type=q6_K --embd=256 --ff=512 --layers=2",
      true },
    /* Repacked at v3 and up (x8m, and with VNNI the looked-up x8n).  */
    { "llama q5_0, 2 layers", "--type=q5_0 --layers=2", true },
    { "llama iq4_nl, 2 layers", "--type=iq4_nl --layers=2", true },
    { "llama mxfp4, 2 layers", "--type=mxfp4 --layers=2", true },
  };
  tsr_backend *cpu = mt_cpu ();
  if (!cpu)
    return TSR_TEST_EXIT ();
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    {
      char path[4096];
      if (!mt_synth (cases[i].args, mt_path ("seq", path, sizeof path)))
        continue;
      struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
      tsr_model *m = tsr_model_load (path, &mp);
      CHECK (m != NULL, "%s: load (%s)", cases[i].name,
             m ? "" : tsr_last_error ());
      if (m)
        {
          for (int n = 1; n <= MAX_SEQ; n *= 4)
            mixed (cases[i].name, m, n, n <= 4 || cases[i].exact16, TOL);
          fork_remove (cases[i].name, m, cases[i].exact16);
        }
      tsr_model_free (m);
      unlink (path);
    }
  rollback (cpu);
  /* A GPU-class device (OpenCL, CUDA) holding the model alone: its
     attention keeps the sequences apart too (NMSE against the same
     device's sequences alone; its reductions may regroup as the
     CPU's).  */
  for (size_t i = 0; i < tsr_device_count (); i++)
    {
      tsr_device *d = tsr_device_get (i);
      const char *dn = tsr_device_name (d);
      if (strncmp (dn, "OpenCL", 6) != 0 && strncmp (dn, "CUDA", 4) != 0)
        continue;
      tsr_backend *dev = tsr_device_init (d, NULL);
      char path[4096], name[128];
      snprintf (name, sizeof name, "llama, 2 layers, on %s", dn);
      if (dev && mt_synth ("--type=f32 --layers=2", mt_path ("seqdev", path,
                                                           sizeof path)))
        {
          struct tsr_model_params mp = { .backends = &dev, .n_backends = 1 };
          tsr_model *m = tsr_model_load (path, &mp);
          CHECK (m != NULL, "%s: load (%s)", name, m ? "" : tsr_last_error ());
          if (m)
            mixed (name, m, 4, false, 1e-8);
          tsr_model_free (m);
          unlink (path);
        }
      tsr_backend_free (dev);
    }
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
