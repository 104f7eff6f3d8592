/* Area: tsr_vocab_from_gguf on malformed and unsupported vocabularies.
   Purpose: every refusal returns NULL with a message that names the key
   at fault (and the value or element where there is one): missing
   keys, wrong types, arrays of other lengths than the tokens, token
   types and ids out of range, duplicate tokens, merges that name no
   token, unsupported models and pre-tokenizers.  Optional keys may be
   left out.
   Limitations: each case changes one key of a valid 4-token file.  */
#include "vocab-test.h"

static const char *const toks[] = { "a", "b", "ab", "<s>" };
static const int32_t types[] = { 1, 1, 1, 3 };
static const float scores[] = { -1, -1, -0.5f, 0 };
static const char *const merges[] = { "a b" };

/* A valid vocabulary of MODEL, without the key OMIT (may be NULL).  */
static tsr_gguf_writer *
base (const char *model, const char *omit)
{
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
#define SET(key, ...)                                                     \
  do                                                                      \
    if (!omit || strcmp (omit, key) != 0)                                 \
      tsr_gguf_set_##__VA_ARGS__;                                         \
  while (0)
  SET ("tokenizer.ggml.model", str (w, "tokenizer.ggml.model", model));
  SET ("tokenizer.ggml.tokens",
       array_str (w, "tokenizer.ggml.tokens", toks, 4));
  SET ("tokenizer.ggml.token_type",
       array (w, "tokenizer.ggml.token_type", TSR_GGUF_INT32, types, 4));
  SET ("tokenizer.ggml.scores",
       array (w, "tokenizer.ggml.scores", TSR_GGUF_FLOAT32, scores, 4));
  if (strcmp (model, "gpt2") == 0)
    SET ("tokenizer.ggml.merges",
         array_str (w, "tokenizer.ggml.merges", merges, 1));
#undef SET
  return w;
}

static void
check_valid (void)
{
  tsr_vocab *v = vt_load (base ("gpt2", NULL));
  CHECK (v && tsr_vocab_n_tokens (v) == 4, "the base file is valid");
  tsr_vocab_free (v);
  v = vt_load (base ("llama", "tokenizer.ggml.scores"));
  CHECK (v != NULL, "scores are optional");
  tsr_vocab_free (v);
  v = vt_load (base ("llama", "tokenizer.ggml.token_type"));
  CHECK (v != NULL, "token types are optional");
  tsr_vocab_free (v);
  tsr_gguf_writer *w = base ("gpt2", NULL);
  tsr_gguf_set_i32 (w, "tokenizer.ggml.bos_token_id", -1);
  v = vt_load (w);
  CHECK (v && tsr_vocab_bos (v) == -1, "a negative id means none");
  tsr_vocab_free (v);
  CHECK (tsr_vocab_from_gguf (NULL) == NULL, "NULL file");
}

static void
check_models (void)
{
  static const char *const refused[] = { "rwkv", "plamo2", "none", "ugm" };
  for (int i = 0; i < 4; i++)
    {
      tsr_vocab *v = vt_load (base (refused[i], NULL));
      CHECK (!v && tsr_last_status () == TSR_ERR_UNSUPPORTED,
             "model %s: unsupported", refused[i]);
      vt_check_refused (v, refused[i], "tokenizer.ggml.model", refused[i],
                        NULL);
    }
  vt_check_refused (vt_load (base ("llama", "tokenizer.ggml.model")),
                    "model missing", "tokenizer.ggml.model", NULL);
  tsr_gguf_writer *w = base ("llama", NULL);
  tsr_gguf_set_u32 (w, "tokenizer.ggml.model", 1);
  vt_check_refused (vt_load (w), "model not a string",
                    "tokenizer.ggml.model", "u32", NULL);
  w = base ("gpt2", NULL);
  tsr_gguf_set_str (w, "tokenizer.ggml.pre", "no-such-family");
  vt_check_refused (vt_load (w), "pre no-such-family", "tokenizer.ggml.pre",
                    "no-such-family", NULL);
}

static void
check_arrays (void)
{
  vt_check_refused (vt_load (base ("llama", "tokenizer.ggml.tokens")),
                    "tokens missing", "tokenizer.ggml.tokens", NULL);
  tsr_gguf_writer *w = base ("llama", NULL);
  tsr_gguf_set_array (w, "tokenizer.ggml.tokens", TSR_GGUF_INT32, types, 4);
  vt_check_refused (vt_load (w), "tokens not strings",
                    "tokenizer.ggml.tokens", "i32", NULL);
  w = base ("llama", NULL);
  tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens", toks, 0);
  vt_check_refused (vt_load (w), "no tokens", "tokenizer.ggml.tokens", NULL);
  w = base ("llama", NULL);
  tsr_gguf_set_array (w, "tokenizer.ggml.scores", TSR_GGUF_FLOAT32, scores,
                      3);
  vt_check_refused (vt_load (w), "scores shorter than tokens",
                    "tokenizer.ggml.scores", "3", "4", NULL);
  w = base ("llama", NULL);
  tsr_gguf_set_array_str (w, "tokenizer.ggml.scores", toks, 4);
  vt_check_refused (vt_load (w), "scores of strings",
                    "tokenizer.ggml.scores", "string", NULL);
}

/* Token types TYPES are refused, naming the key, ELEM and VALUE.  */
static void
refuse_types (const int32_t *types, int n, const char *what,
              const char *elem, const char *value)
{
  tsr_gguf_writer *w = base ("llama", NULL);
  tsr_gguf_set_array (w, "tokenizer.ggml.token_type", TSR_GGUF_INT32, types,
                      (uint64_t) n);
  vt_check_refused (vt_load (w), what, "tokenizer.ggml.token_type", elem,
                    value, NULL);
}

static void
check_tokens (void)
{
  tsr_gguf_writer *w = base ("llama", NULL);
  const char *dup[] = { "a", "b", "a", "<s>" };
  tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens", dup, 4);
  vt_check_refused (vt_load (w), "duplicate token", "tokenizer.ggml.tokens",
                    "\"a\"", NULL);
  refuse_types ((const int32_t[]) { 1, 1, 1, 3, 1 }, 5,
                "token types longer than tokens", "5", "4");
  refuse_types ((const int32_t[]) { 1, 1, 9, 3 }, 4, "token type 9", "[2]",
                "9");
  refuse_types ((const int32_t[]) { 1, 1, 6, 3 }, 4, "byte token not <0xXX>",
                "[2]", "\"ab\"");
}

static void
check_merges (void)
{
  static const struct
  {
    const char *merge, *what, *names;
  } cases[] = {
    { "a c", "merge naming no token", "\"c\"" },
    { "ab", "merge without a space", "\"ab\"" },
    { "b a", "merge making no token", "\"ba\"" },
  };
  for (int i = 0; i < 3; i++)
    {
      tsr_gguf_writer *w = base ("gpt2", NULL);
      const char *m[2] = { "a b", cases[i].merge };
      tsr_gguf_set_array_str (w, "tokenizer.ggml.merges", m, 2);
      vt_check_refused (vt_load (w), cases[i].what,
                        "tokenizer.ggml.merges[1]", cases[i].names, NULL);
    }
  vt_check_refused (vt_load (base ("gpt2", "tokenizer.ggml.merges")),
                    "gpt2 without merges", "tokenizer.ggml.merges", NULL);
  tsr_gguf_writer *w = base ("gpt2", NULL);
  tsr_gguf_set_str (w, "tokenizer.ggml.merges", "a b");
  vt_check_refused (vt_load (w), "merges not an array",
                    "tokenizer.ggml.merges", NULL);
}

static void
check_ids (void)
{
  static const char *const keys[] = {
    "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
    "tokenizer.ggml.unknown_token_id",
  };
  for (int i = 0; i < 5; i++)
    {
      tsr_gguf_writer *w = base ("gpt2", NULL);
      tsr_gguf_set_u32 (w, keys[i], 4);
      vt_check_refused (vt_load (w), keys[i], keys[i], "4", NULL);
    }
  tsr_gguf_writer *w = base ("gpt2", NULL);
  tsr_gguf_set_str (w, "tokenizer.ggml.eos_token_id", "3");
  vt_check_refused (vt_load (w), "eos id a string",
                    "tokenizer.ggml.eos_token_id", "string", NULL);
  w = base ("gpt2", NULL);
  tsr_gguf_set_bool (w, "tokenizer.ggml.add_bos_token", true);
  vt_check_refused (vt_load (w), "add_bos without BOS",
                    "tokenizer.ggml.add_bos_token",
                    "tokenizer.ggml.bos_token_id", NULL);
  w = base ("llama", NULL);
  tsr_gguf_set_u32 (w, "tokenizer.ggml.add_space_prefix", 1);
  vt_check_refused (vt_load (w), "add_space_prefix not a bool",
                    "tokenizer.ggml.add_space_prefix", NULL);
}

int
main (void)
{
  check_valid ();
  check_models ();
  check_arrays ();
  check_tokens ();
  check_merges ();
  check_ids ();
  return TSR_TEST_EXIT ();
}
