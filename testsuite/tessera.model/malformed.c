/* Area: tsr_model_load and tsr_session_decode (tessera/model.h).
   Purpose: model files that cannot be run are refused with an error
   naming the key or tensor at fault, never a crash: another
   architecture, missing keys, keys of the wrong type, head counts that
   do not divide, a missing or misshapen tensor, a norm that is not
   f32, a vocabulary size that disagrees, an unsupported rope scaling,
   heads that do not divide the embedding (no key_length), values
   longer than keys, a file that is not GGUF; for a mixture of experts
   (qwen3moe) a missing expert tensor or router, expert_used_count 0 or
   above expert_count, an expert_count the tensors disagree with, a
   missing q norm; tensors of layers past the block count; a head size
   of 0; a rope scaling factor whose inverse overflows (1e-40, and
   infinite with a linear type); matrices of
   a type no backend multiplies (q8_K, written by tessera-gguf
   convert), refused at load rather than at the first prompt; a
   tokenizer shorter than the embedding (refused); a tensor no part of
   the graph uses (loaded, with a warning naming it); and bad
   calls: token ids outside the vocabulary, batches larger than the
   session's, NULL arguments.
   Each variant is a valid model file (written by tessera-gguf synth)
   with one thing changed through the GGUF reader and writer.
   Limitations: the GGUF format itself is tested in tessera.gguf.  */
#include "model-test.h"

static char base[4096], base_moe[4096];

struct variant
{
  const char *what;
  const char *set_str_key, *set_str_val;  /* a string key to set */
  const char *set_u32_key;                /* a u32 key to set */
  uint32_t u32;
  const char *drop;                       /* a tensor to leave out */
  const char *reshape;                    /* a tensor to write halved */
  const char *as_f16;                     /* a tensor to write as f16 */
  const char *expect[2];                  /* in the error message */
  bool moe;                               /* changes the qwen3moe file */
  const char *set_f32_key;                /* an f32 key to set */
  float f32;
};

static const struct variant variants[] = {
  { "another architecture", "general.architecture", "mamba", NULL, 0, NULL,
    NULL, NULL, { "mamba", "gemma3 and phi3" } },
  { "keys of another architecture", "general.architecture", "qwen2", NULL,
    0, NULL, NULL, NULL, { "qwen2.embedding_length", "missing" } },
  { "a count key holding a string", "llama.block_count", "two", NULL, 0,
    NULL, NULL, NULL, { "llama.block_count", "integer" } },
  { "zero layers", NULL, NULL, "llama.block_count", 0, NULL, NULL, NULL,
    { "llama.block_count", "out of range" } },
  { "fewer layers than the file holds", NULL, NULL, "llama.block_count", 1,
    NULL, NULL, NULL, { "blk.1.", "llama.block_count" } },
  { "a head size of 0", NULL, NULL, "llama.attention.key_length", 0, NULL,
    NULL, NULL, { "llama.attention.key_length", "out of range" } },
  { "a rope scaling factor whose inverse overflows", NULL, NULL, NULL, 0,
    NULL, NULL, NULL, { "rope scaling factor", "inverse" }, false,
    "llama.rope.scaling.factor", 1e-40f },
  { "an infinite rope scaling factor", "llama.rope.scaling.type", "linear",
    NULL, 0, NULL, NULL, NULL, { "llama.rope.scaling.factor", "not finite" },
    false, "llama.rope.scaling.factor", (float) INFINITY },
  { "heads not a multiple of the kv heads", NULL, NULL,
    "llama.attention.head_count_kv", 3, NULL, NULL, NULL,
    { "head_count_kv", "multiple" } },
  { "a vocabulary size that disagrees", NULL, NULL, "llama.vocab_size",
    999, NULL, NULL, NULL, { "llama.vocab_size", "token_embd.weight" } },
  { "an unsupported rope scaling", "llama.rope.scaling.type", "yarn", NULL,
    0, NULL, NULL, NULL, { "yarn", "not supported" } },
  { "a missing tensor", NULL, NULL, NULL, 0, "blk.1.ffn_up.weight", NULL,
    NULL, { "blk.1.ffn_up.weight", "missing" } },
  { "a missing output norm", NULL, NULL, NULL, 0, "output_norm.weight",
    NULL, NULL, { "output_norm.weight", "missing" } },
  { "a misshapen tensor", NULL, NULL, NULL, 0, NULL, "blk.0.attn_k.weight",
    NULL, { "blk.0.attn_k.weight", "expected" } },
  { "a norm in f16", NULL, NULL, NULL, 0, NULL, NULL,
    "blk.1.ffn_norm.weight", { "blk.1.ffn_norm.weight", "f32 expected" } },
  { "heads that do not divide the embedding", NULL, NULL,
    "llama.attention.head_count", 3, NULL, NULL, NULL,
    { "llama.embedding_length", "head_count" } },
  { "values longer than keys", NULL, NULL, "llama.attention.value_length",
    32, NULL, NULL, NULL, { "llama.attention.value_length",
                            "not supported" } },
  /* Mixtures of experts (qwen3moe).  */
  { "a missing expert tensor", NULL, NULL, NULL, 0,
    "blk.1.ffn_down_exps.weight", NULL, NULL,
    { "blk.1.ffn_down_exps.weight", "missing" }, true },
  { "a missing router", NULL, NULL, NULL, 0, "blk.0.ffn_gate_inp.weight",
    NULL, NULL, { "blk.0.ffn_gate_inp.weight", "missing" }, true },
  { "more experts used than there are", NULL, NULL,
    "qwen3moe.expert_used_count", 5, NULL, NULL, NULL,
    { "qwen3moe.expert_used_count", "out of range" }, true },
  { "no expert used", NULL, NULL, "qwen3moe.expert_used_count", 0, NULL,
    NULL, NULL, { "qwen3moe.expert_used_count", "out of range" }, true },
  { "experts of another count", NULL, NULL, "qwen3moe.expert_count", 6,
    NULL, NULL, NULL, { "blk.0.ffn_gate_inp.weight", "expected" }, true },
  { "a missing q norm", NULL, NULL, NULL, 0, "blk.1.attn_q_norm.weight",
    NULL, NULL, { "blk.1.attn_q_norm.weight", "missing" }, true },
};

/* T's data as a new tensor of CTX: halved in dimension 1, or as f16.  */
static tsr_tensor *
changed (tsr_context *ctx, const tsr_tensor *t, bool halve)
{
  int64_t ne1 = halve ? t->ne[1] / 2 : t->ne[1];
  tsr_type type = halve ? t->type : TSR_TYPE_F16;
  tsr_tensor *n = tsr_new_tensor_2d (ctx, type, t->ne[0], ne1);
  tsr_set_name (n, tsr_get_name (t));
  if (halve)
    memcpy (n->data, t->data, tsr_nbytes (n));
  else
    for (int64_t i = 0; i < tsr_nelements (t); i++)
      ((uint16_t *) n->data)[i] = tsr_fp32_to_fp16 (((float *) t->data)[i]);
  return n;
}

/* Write BASE with V's change to PATH.  */
static bool
write_variant (const struct variant *v, const char *path)
{
  tsr_gguf *g = tsr_gguf_open (v->moe ? base_moe : base, NULL);
  tsr_context *ctx = tsr_context_new (false);
  tsr_context *extra = tsr_context_new (false);   /* changed tensors */
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  bool ok = g && ctx && w && tsr_gguf_new_tensors (g, ctx) == TSR_OK
            && tsr_gguf_writer_copy_kv (w, g) == TSR_OK;
  if (ok && v->set_str_key)
    ok = tsr_gguf_set_str (w, v->set_str_key, v->set_str_val) == TSR_OK;
  if (ok && v->set_u32_key)
    ok = tsr_gguf_set_u32 (w, v->set_u32_key, v->u32) == TSR_OK;
  if (ok && v->set_f32_key)
    ok = tsr_gguf_set_f32 (w, v->set_f32_key, v->f32) == TSR_OK;
  for (tsr_tensor *t = ok ? tsr_context_first_tensor (ctx) : NULL; t && ok;
       t = tsr_context_next_tensor (ctx, t))
    {
      const char *name = tsr_get_name (t);
      if ((v->drop && !strcmp (name, v->drop))
          || (v->reshape && !strcmp (name, v->reshape))
          || (v->as_f16 && !strcmp (name, v->as_f16)))
        {
          if (!v->drop)
            ok = tsr_gguf_writer_add_tensor
                   (w, changed (extra, t, v->reshape != NULL)) == TSR_OK;
          continue;
        }
      ok = tsr_gguf_writer_add_tensor (w, t) == TSR_OK;
    }
  ok = ok && tsr_gguf_writer_write_file (w, path) == TSR_OK;
  CHECK (ok, "%s: write the variant (%s)", v->what,
         ok ? "" : tsr_last_error ());
  tsr_gguf_writer_free (w);
  tsr_context_free (extra);
  tsr_context_free (ctx);
  tsr_gguf_close (g);
  return ok;
}

static void
check_refused (tsr_backend *cpu, const struct variant *v)
{
  char path[4096];
  if (!write_variant (v, mt_path ("variant", path, sizeof path)))
    return;
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = tsr_model_load (path, &mp);
  const char *e = tsr_last_error ();
  CHECK (!m && strstr (e, v->expect[0]) && strstr (e, v->expect[1])
         && strstr (e, path), "%s: refused, naming it (%s)", v->what, e);
  tsr_model_free (m);
  unlink (path);
}

static void
check_not_gguf (tsr_backend *cpu)
{
  char path[4096];
  FILE *f = fopen (mt_path ("junk", path, sizeof path), "wb");
  fputs ("this is not a model file, just some text\n", f);
  fclose (f);
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = tsr_model_load (path, &mp);
  CHECK (!m && strstr (tsr_last_error (), path), "a text file is refused "
         "(%s)", tsr_last_error ());
  unlink (path);
  m = tsr_model_load (path, &mp);
  CHECK (!m && tsr_last_status () != TSR_OK, "a missing file is refused "
         "(%s)", tsr_last_error ());
  m = tsr_model_load (NULL, &mp);
  CHECK (!m && tsr_last_status () == TSR_ERR_INVALID_ARG, "a NULL path is "
         "refused (%s)", tsr_last_error ());
}

/* A model whose matrices are q8_K (the k-quants' activation type,
   which no backend multiplies): refused at load, naming a tensor and
   the type.  */
static void
check_q8_k (tsr_backend *cpu)
{
  char path[4096], conv[4200], cmd[12000];
  if (!mt_synth ("--embd=256 --ff=512 --layers=1 --heads=4 --kv-heads=2",
                 mt_path ("k256", path, sizeof path)))
    return;
  snprintf (conv, sizeof conv, "%s.q8_K.gguf", path);
  snprintf (cmd, sizeof cmd, "'%s/tools/tessera-gguf' convert --type=q8_K "
            "'%s' '%s'", mt_bld, path, conv);
  CHECK (mt_shell (cmd) == 0, "convert to q8_K (%s)", mt_out);
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = tsr_model_load (conv, &mp);
  const char *e = tsr_last_error ();
  CHECK (!m && tsr_last_status () == TSR_ERR_TYPE && strstr (e, "q8_K")
         && strstr (e, ".weight") && strstr (e, "no backend"),
         "q8_K matrices: refused at load (%s)", e);
  tsr_model_free (m);
  m = tsr_model_load (path, &mp);
  CHECK (m != NULL, "the same model in f32 loads (%s)",
         m ? "" : tsr_last_error ());
  tsr_model_free (m);
  unlink (conv);
  unlink (path);
}

/* BASE rewritten to PATH with tokenizer.ggml.tokens cut to KEEP tokens
   (KEEP 0: unchanged) and, with EXTRA, a tensor the graph has no place
   for.  */
static bool
write_changed (const char *path, uint64_t keep, bool extra)
{
  tsr_gguf *g = tsr_gguf_open (base, NULL);
  tsr_context *ctx = tsr_context_new (false);
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  bool ok = g && ctx && w && tsr_gguf_new_tensors (g, ctx) == TSR_OK
            && tsr_gguf_writer_copy_kv (w, g) == TSR_OK;
  if (ok && keep)
    {
      const char **tok = malloc (keep * sizeof *tok);
      for (uint64_t i = 0; ok && i < keep; i++)
        ok = tsr_gguf_get_array_str (g, "tokenizer.ggml.tokens", i, &tok[i],
                                     NULL) == TSR_OK;
      ok = ok && tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens", tok,
                                         keep) == TSR_OK;
      free (tok);
    }
  for (tsr_tensor *t = ok ? tsr_context_first_tensor (ctx) : NULL; t && ok;
       t = tsr_context_next_tensor (ctx, t))
    ok = tsr_gguf_writer_add_tensor (w, t) == TSR_OK;
  tsr_tensor *x = NULL;
  if (ok && extra)
    {
      x = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 8);
      memset (x->data, 0, tsr_nbytes (x));
      tsr_set_name (x, "blk.0.attn_sinks.weight");
      ok = tsr_gguf_writer_add_tensor (w, x) == TSR_OK;
    }
  ok = ok && tsr_gguf_writer_write_file (w, path) == TSR_OK;
  tsr_gguf_writer_free (w);
  tsr_context_free (ctx);
  tsr_gguf_close (g);
  return ok;
}

static char warned[1024];

static void
keep_warning (tsr_log_level level, const char *msg, void *user)
{
  (void) user;
  if (level == TSR_LOG_WARN && !warned[0])
    snprintf (warned, sizeof warned, "%s", msg);
}

/* Load PATH with warnings shown, the first one kept in WARNED.  */
static tsr_model *
load_watched (const char *path, const struct tsr_model_params *mp)
{
  warned[0] = '\0';
  tsr_log_level saved = tsr_log_get_level ();
  tsr_log_set_level (TSR_LOG_WARN);
  tsr_log_set_callback (keep_warning, NULL);
  tsr_model *m = tsr_model_load (path, mp);
  tsr_log_set_callback (NULL, NULL);
  tsr_log_set_level (saved);
  return m;
}

/* The tokenizer must cover the embedding's rows exactly; a tensor the
   graph does not use is named in a warning.  */
static void
check_tensors_and_tokens (tsr_backend *cpu)
{
  char path[4096];
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_gguf *g = tsr_gguf_open (base, NULL);
  tsr_gguf_type type;
  uint64_t n = 0;
  if (g)
    tsr_gguf_get_array_info (g, "tokenizer.ggml.tokens", &type, &n);
  tsr_gguf_close (g);
  CHECK (n > 8, "the base file has a tokenizer (%llu tokens)",
         (unsigned long long) n);
  if (n > 8 && write_changed (mt_path ("short-tok", path, sizeof path),
                              n / 2, false))
    {
      tsr_model *m = tsr_model_load (path, &mp);
      const char *e = tsr_last_error ();
      CHECK (!m && strstr (e, "tokenizer.ggml.tokens")
             && strstr (e, "token_embd.weight") && strstr (e, "never "
                                                           "printed"),
             "a tokenizer shorter than the embedding: refused (%s)", e);
      tsr_model_free (m);
      unlink (path);
    }
  if (write_changed (mt_path ("extra", path, sizeof path), 0, true))
    {
      tsr_model *m = load_watched (path, &mp);
      CHECK (m && strstr (warned, "blk.0.attn_sinks.weight")
             && strstr (warned, "1 of the file"),
             "a tensor the graph does not use: loaded, with a warning "
             "naming it (%s)", m ? warned : tsr_last_error ());
      tsr_model_free (m);
      unlink (path);
    }
  tsr_model *m = load_watched (base, &mp);
  CHECK (m && !warned[0], "the unchanged file: no warning (%s)", warned);
  tsr_model_free (m);
}

static void
check_bad_calls (tsr_backend *cpu)
{
  struct tsr_model_params mp = { .backends = &cpu, .n_backends = 1 };
  tsr_model *m = tsr_model_load (base, &mp);
  CHECK (m != NULL, "the unchanged file loads (%s)",
         m ? "" : tsr_last_error ());
  if (!m)
    return;
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 32;
  sp.n_batch = 4;
  tsr_session *s = tsr_session_new (m, &sp);
  int32_t v = (int32_t) tsr_model_get_hparams (m)->n_vocab;
  int32_t bad[2] = { 1, v }, neg = -1, five[5] = { 1, 2, 3, 4, 5 };
  CHECK (tsr_session_decode (s, bad, 2, NULL, false) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "vocabulary"),
         "a token id equal to the vocabulary size is refused (%s)",
         tsr_last_error ());
  CHECK (tsr_session_decode (s, &neg, 1, NULL, false) == TSR_ERR_INVALID_ARG,
         "a negative token id is refused (%s)", tsr_last_error ());
  CHECK (tsr_session_decode (s, five, 5, NULL, false) == TSR_ERR_INVALID_ARG,
         "a batch above n_batch is refused (%s)", tsr_last_error ());
  CHECK (tsr_session_decode (s, five, 0, NULL, false) == TSR_ERR_INVALID_ARG
         && tsr_session_decode (NULL, five, 1, NULL, false)
            == TSR_ERR_INVALID_ARG
         && tsr_session_decode (s, NULL, 1, NULL, false)
            == TSR_ERR_INVALID_ARG,
         "empty batches and NULL arguments are refused");
  CHECK (tsr_session_n_past (s) == 0, "refused calls leave the cache empty");
  CHECK (tsr_session_new (NULL, &sp) == NULL, "a session needs a model");
  tsr_session_free (s);
  tsr_model_free (m);
}

int
main (void)
{
  tsr_backend *cpu = mt_cpu ();
  if (!cpu || !mt_synth ("--type=q8_0 --untied --heads=4 --kv-heads=2",
                         mt_path ("base", base, sizeof base))
      || !mt_synth ("--arch=qwen3moe --type=q8_0 --experts=4 "
                    "--experts-used=2", mt_path ("base-moe", base_moe,
                                                 sizeof base_moe)))
    return TSR_TEST_EXIT ();
  for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
    check_refused (cpu, &variants[i]);
  check_not_gguf (cpu);
  check_q8_k (cpu);
  check_tensors_and_tokens (cpu);
  check_bad_calls (cpu);
  unlink (base);
  unlink (base_moe);
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
