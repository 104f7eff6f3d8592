/* vocab-load.c - a vocabulary from a GGUF file's tokenizer.ggml.* keys.
 *
 * Owns: reading and checking every tokenizer key, the defaults each
 * model uses for keys a file leaves out, and building the text and
 * merge indexes.  Every refusal names the key (and the element) at
 * fault.  The keys and their values are the public contract of model
 * files; their names are spelled here exactly as files use them.  */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vocab-impl.h"

#define KEY_MODEL "tokenizer.ggml.model"
#define KEY_PRE "tokenizer.ggml.pre"
#define KEY_TOKENS "tokenizer.ggml.tokens"
#define KEY_SCORES "tokenizer.ggml.scores"
#define KEY_TYPES "tokenizer.ggml.token_type"
#define KEY_MERGES "tokenizer.ggml.merges"
#define KEY_BOS "tokenizer.ggml.bos_token_id"
#define KEY_EOS "tokenizer.ggml.eos_token_id"
#define KEY_EOT "tokenizer.ggml.eot_token_id"
#define KEY_EOM "tokenizer.ggml.eom_token_id"
#define KEY_UNK "tokenizer.ggml.unknown_token_id"
/* (sic: the key's spelling in GGUF files) */
#define KEY_SEP "tokenizer.ggml.seperator_token_id"
#define KEY_CHARSMAP "tokenizer.ggml.precompiled_charsmap"
#define KEY_REMOVE_WS "tokenizer.ggml.remove_extra_whitespaces"
#define KEY_ADD_BOS "tokenizer.ggml.add_bos_token"
#define KEY_ADD_SPACE "tokenizer.ggml.add_space_prefix"

/* Show at most this many bytes of a token in a message.  */
#define SHOW 48

static int
fail (int status, const char *fmt, ...)
{
  char msg[400];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  return tsr_set_error (status, "vocab: %s", msg);
}

static int
show_len (size_t len)
{
  return len > SHOW ? SHOW : (int) len;
}

/* "a u32", "an array of f32" or "missing": what KEY holds.  */
static const char *
describe (const tsr_gguf *g, const char *key, char *buf, size_t n)
{
  int64_t i = tsr_gguf_find_key (g, key);
  tsr_gguf_type t = tsr_gguf_kv_type (g, i), elem;
  uint64_t len;
  if (i < 0)
    return "missing";
  if (t == TSR_GGUF_ARRAY
      && tsr_gguf_get_array_info (g, key, &elem, &len) == TSR_OK)
    snprintf (buf, n, "an array of %s", tsr_gguf_type_name (elem));
  else
    snprintf (buf, n, "a%s %s", t == TSR_GGUF_INT8 || t == TSR_GGUF_INT16
              || t == TSR_GGUF_INT32 || t == TSR_GGUF_INT64 ? "n" : "",
              tsr_gguf_type_name (t));
  return buf;
}

/* The length of array KEY, whose elements must be ELEM (or ALT, unless
   that is TSR_GGUF_TYPE_COUNT) into *N and their type into *TYPE.
   TSR_ERR_NOT_FOUND, with an error only when REQUIRED, if absent.  */
static int
array_of (const tsr_gguf *g, const char *key, tsr_gguf_type elem,
          tsr_gguf_type alt, bool required, tsr_gguf_type *type,
          uint64_t *n)
{
  char buf[64];
  if (tsr_gguf_find_key (g, key) < 0)
    return required ? fail (TSR_ERR_NOT_FOUND, "no key %s", key)
                    : TSR_ERR_NOT_FOUND;
  if (tsr_gguf_get_array_info (g, key, type, n) != TSR_OK
      || (*type != elem && *type != alt))
    return fail (TSR_ERR_TYPE, "%s is %s, not an array of %s", key,
                 describe (g, key, buf, sizeof buf),
                 tsr_gguf_type_name (elem));
  return TSR_OK;
}

/* Optional bool KEY into *B; absent leaves *B.  */
static int
read_bool (const tsr_gguf *g, const char *key, bool *b)
{
  char buf[64];
  if (tsr_gguf_find_key (g, key) < 0)
    return TSR_OK;
  if (tsr_gguf_get_bool (g, key, b) != TSR_OK)
    return fail (TSR_ERR_TYPE, "%s is %s, not a bool", key,
                 describe (g, key, buf, sizeof buf));
  return TSR_OK;
}

/* KEY, an integer of any type, into *X (u64 above INT64_MAX saturates).
   False when it is no integer.  */
static bool
read_int (const tsr_gguf *g, const char *key, int64_t *x)
{
  union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32;
          int32_t i32; uint64_t u64; int64_t i64; } u;
  switch (tsr_gguf_kv_type (g, tsr_gguf_find_key (g, key)))
    {
    case TSR_GGUF_UINT8: tsr_gguf_get_u8 (g, key, &u.u8); *x = u.u8; break;
    case TSR_GGUF_INT8: tsr_gguf_get_i8 (g, key, &u.i8); *x = u.i8; break;
    case TSR_GGUF_UINT16: tsr_gguf_get_u16 (g, key, &u.u16); *x = u.u16; break;
    case TSR_GGUF_INT16: tsr_gguf_get_i16 (g, key, &u.i16); *x = u.i16; break;
    case TSR_GGUF_UINT32: tsr_gguf_get_u32 (g, key, &u.u32); *x = u.u32; break;
    case TSR_GGUF_INT32: tsr_gguf_get_i32 (g, key, &u.i32); *x = u.i32; break;
    case TSR_GGUF_INT64: tsr_gguf_get_i64 (g, key, &u.i64); *x = u.i64; break;
    case TSR_GGUF_UINT64:
      tsr_gguf_get_u64 (g, key, &u.u64);
      *x = u.u64 > INT64_MAX ? INT64_MAX : (int64_t) u.u64;
      break;
    default: return false;
    }
  return true;
}

/* Optional token id KEY into *ID: a negative value means none.  */
static int
read_id (const tsr_vocab *v, const tsr_gguf *g, const char *key,
         int32_t *id)
{
  char buf[64];
  int64_t x;
  if (tsr_gguf_find_key (g, key) < 0)
    return TSR_OK;
  if (!read_int (g, key, &x))
    return fail (TSR_ERR_TYPE, "%s is %s, not an integer token id", key,
                 describe (g, key, buf, sizeof buf));
  if (x >= v->n_tokens)
    return fail (TSR_ERR_FORMAT, "%s = %lld is out of range: the "
                 "vocabulary has %ld tokens", key, (long long) x,
                 (long) v->n_tokens);
  *id = x < 0 ? -1 : (int32_t) x;
  return TSR_OK;
}

/* The model and the pre-tokenizer.  */

static int
read_model (tsr_vocab *v, const tsr_gguf *g)
{
  char buf[64];
  const char *s;
  if (tsr_gguf_find_key (g, KEY_MODEL) < 0)
    return fail (TSR_ERR_NOT_FOUND, "no key %s", KEY_MODEL);
  if (tsr_gguf_get_str (g, KEY_MODEL, &s, NULL) != TSR_OK)
    return fail (TSR_ERR_TYPE, "%s is %s, not a string", KEY_MODEL,
                 describe (g, KEY_MODEL, buf, sizeof buf));
  if (strcmp (s, "llama") == 0)
    v->model = TSRI_VOCAB_SPM;
  else if (strcmp (s, "gpt2") == 0)
    v->model = TSRI_VOCAB_BPE;
  else if (strcmp (s, "bert") == 0)
    v->model = TSRI_VOCAB_WPM;
  else if (strcmp (s, "t5") == 0)
    v->model = TSRI_VOCAB_UGM;
  else
    return fail (TSR_ERR_UNSUPPORTED, "%s \"%.*s\" is not supported "
                 "(Tessera tokenizes \"llama\", \"gpt2\", \"bert\" and "
                 "\"t5\" vocabularies)", KEY_MODEL, show_len (strlen (s)),
                 s);
  return TSR_OK;
}

static const struct
{
  const char *name;
  enum tsri_vocab_pre pre;
} pre_names[] = {
  { "default", TSRI_PRE_DEFAULT }, { "gpt-2", TSRI_PRE_GPT2 },
  { "llama-bpe", TSRI_PRE_LLAMA3 }, { "llama3", TSRI_PRE_LLAMA3 },
  { "llama-v3", TSRI_PRE_LLAMA3 }, { "qwen2", TSRI_PRE_QWEN2 },
  { "deepseek-r1-qwen", TSRI_PRE_QWEN2 }, { "smollm", TSRI_PRE_SMOLLM },
  /* Families whose tokenizers split with the same expressions as one
     of the above (their pre-tokenizer definitions are those lists).  */
  { "mpt", TSRI_PRE_GPT2 }, { "olmo", TSRI_PRE_GPT2 },
  { "jais", TSRI_PRE_GPT2 },
  { "starcoder", TSRI_PRE_SMOLLM }, { "refact", TSRI_PRE_SMOLLM },
  { "command-r", TSRI_PRE_SMOLLM }, { "codeshell", TSRI_PRE_SMOLLM },
  { "exaone", TSRI_PRE_SMOLLM }, { "minerva-7b", TSRI_PRE_SMOLLM },
  { "megrez", TSRI_PRE_QWEN2 }, { "stablelm2", TSRI_PRE_QWEN2 },
  { "dbrx", TSRI_PRE_LLAMA3 }, { "smaug-bpe", TSRI_PRE_LLAMA3 },
  { "chatglm-bpe", TSRI_PRE_LLAMA3 },
  /* Families with expressions of their own (vocab-pretok.c).  */
  { "falcon", TSRI_PRE_FALCON }, { "deepseek-llm", TSRI_PRE_DEEPSEEK_LLM },
  { "deepseek-coder", TSRI_PRE_DEEPSEEK_CODER },
  { "deepseek-v3", TSRI_PRE_DEEPSEEK_V3 },
  { "poro-chat", TSRI_PRE_PORO }, { "bloom", TSRI_PRE_PORO },
  { "gpt3-finnish", TSRI_PRE_PORO }, { "viking", TSRI_PRE_VIKING },
  { "gpt-4o", TSRI_PRE_GPT4O }, { "tekken", TSRI_PRE_TEKKEN },
  { "chameleon", TSRI_PRE_CHAMELEON },
};

static int
read_pre (tsr_vocab *v, const tsr_gguf *g)
{
  char buf[64];
  const char *s;
  v->pre = TSRI_PRE_DEFAULT;
  if (v->model != TSRI_VOCAB_BPE)
    {
      v->pre = TSRI_PRE_NONE;
      return TSR_OK;
    }
  if (tsr_gguf_find_key (g, KEY_PRE) < 0)
    return TSR_OK;
  if (tsr_gguf_get_str (g, KEY_PRE, &s, NULL) != TSR_OK)
    return fail (TSR_ERR_TYPE, "%s is %s, not a string", KEY_PRE,
                 describe (g, KEY_PRE, buf, sizeof buf));
  for (size_t i = 0; i < sizeof pre_names / sizeof *pre_names; i++)
    if (strcmp (s, pre_names[i].name) == 0)
      {
        v->pre = pre_names[i].pre;
        return TSR_OK;
      }
  return fail (TSR_ERR_UNSUPPORTED, "%s \"%.*s\" is not supported (Tessera "
               "knows default, gpt-2, llama-bpe, qwen2, smollm, falcon, "
               "deepseek-llm, deepseek-coder, deepseek-v3, poro-chat, bloom, "
               "gpt3-finnish, viking, gpt-4o, tekken, chameleon, and the "
               "families that "
               "split as one of them: mpt, olmo, jais, starcoder, refact, "
               "command-r, codeshell, exaone, minerva-7b, megrez, stablelm2, "
               "dbrx, smaug-bpe, chatglm-bpe)", KEY_PRE,
               show_len (strlen (s)), s);
}

/* Token texts and their index.  */

static uint64_t
table_size (uint64_t n)
{
  uint64_t cap = 16;
  while (cap < 2 * n)
    cap *= 2;
  return cap;
}

/* String I of array KEY, which array_of checked, into *S and *LEN.  */
static void
string_at (const tsr_gguf *g, const char *key, uint64_t i, const char **s,
           size_t *len)
{
  if (tsr_gguf_get_array_str (g, key, i, s, len) != TSR_OK)
    {
      *s = "";
      *len = 0;
    }
}

static int
copy_texts (tsr_vocab *v, const tsr_gguf *g)
{
  uint64_t total = 0;
  const char *s;
  size_t len;
  for (int32_t i = 0; i < v->n_tokens; i++)
    {
      string_at (g, KEY_TOKENS, (uint64_t) i, &s, &len);
      total += len + 1;
    }
  if (total > UINT32_MAX)
    return fail (TSR_ERR_FORMAT, "%s: %llu bytes of text, more than "
                 "Tessera takes (4 GiB)", KEY_TOKENS,
                 (unsigned long long) total);
  v->text = malloc ((size_t) total);
  v->tokens = calloc ((uint32_t) v->n_tokens, sizeof *v->tokens);
  if (!v->text || !v->tokens)
    return fail (TSR_ERR_NO_MEMORY, "out of memory");
  uint32_t off = 0;
  for (int32_t i = 0; i < v->n_tokens; i++)
    {
      string_at (g, KEY_TOKENS, (uint64_t) i, &s, &len);
      memcpy (v->text + off, s, len);
      v->text[off + len] = '\0';
      v->tokens[i] = (struct tsri_vocab_token) { off, (uint32_t) len, 0.0f,
                                                 TSRI_TOKEN_NORMAL };
      off += (uint32_t) len + 1;
    }
  return TSR_OK;
}

static int
index_texts (tsr_vocab *v)
{
  uint64_t cap = table_size ((uint64_t) v->n_tokens);
  v->slots = calloc ((size_t) cap, sizeof *v->slots);
  if (!v->slots)
    return fail (TSR_ERR_NO_MEMORY, "out of memory");
  v->mask = cap - 1;
  for (int32_t id = 0; id < v->n_tokens; id++)
    {
      const struct tsri_vocab_token *t = &v->tokens[id];
      const char *s = v->text + t->off;
      if (t->len == 0)          /* never found in text */
        continue;
      uint64_t h = tsr_hash (s, t->len) & v->mask;
      for (; v->slots[h]; h = (h + 1) & v->mask)
        {
          const struct tsri_vocab_token *o = &v->tokens[v->slots[h] - 1];
          if (o->len == t->len && memcmp (v->text + o->off, s, t->len) == 0)
            return fail (TSR_ERR_FORMAT, "%s: \"%.*s\" is both token %ld "
                         "and token %ld", KEY_TOKENS, show_len (t->len), s,
                         (long) (v->slots[h] - 1), (long) id);
        }
      v->slots[h] = id + 1;
    }
  return TSR_OK;
}

static int
read_tokens (tsr_vocab *v, const tsr_gguf *g)
{
  tsr_gguf_type type;
  uint64_t n;
  int st = array_of (g, KEY_TOKENS, TSR_GGUF_STRING, TSR_GGUF_TYPE_COUNT,
                     true, &type, &n);
  if (st != TSR_OK)
    return st;
  if (n == 0 || n > INT32_MAX)
    return fail (TSR_ERR_FORMAT, "%s has %llu tokens (1 to %ld taken)",
                 KEY_TOKENS, (unsigned long long) n, (long) INT32_MAX);
  v->n_tokens = (int32_t) n;
  st = copy_texts (v, g);
  return st == TSR_OK ? index_texts (v) : st;
}

/* Scores and token types.  */

static int
check_length (const char *key, uint64_t n, const tsr_vocab *v)
{
  if (n != (uint64_t) v->n_tokens)
    return fail (TSR_ERR_FORMAT, "%s has %llu entries but %s has %ld",
                 key, (unsigned long long) n, KEY_TOKENS,
                 (long) v->n_tokens);
  return TSR_OK;
}

/* Optional array KEY of a 4-byte ELEM (or ALT) per token: a new copy
   in *X (NULL when the key is absent), its element type in *TYPE.  */
static int
read_per_token (const tsr_vocab *v, const tsr_gguf *g, const char *key,
                tsr_gguf_type elem, tsr_gguf_type alt, tsr_gguf_type *type,
                int32_t **x)
{
  uint64_t n;
  *x = NULL;
  int st = array_of (g, key, elem, alt, false, type, &n);
  if (st == TSR_ERR_NOT_FOUND)
    return TSR_OK;
  if (st != TSR_OK || (st = check_length (key, n, v)) != TSR_OK)
    return st;
  if (!(*x = malloc ((size_t) n * sizeof **x)))
    return fail (TSR_ERR_NO_MEMORY, "out of memory");
  tsr_gguf_get_array_data (g, key, *type, 0, n, *x);
  return TSR_OK;
}

static int
read_scores (tsr_vocab *v, const tsr_gguf *g)
{
  tsr_gguf_type type;
  int32_t *x;
  int st = read_per_token (v, g, KEY_SCORES, TSR_GGUF_FLOAT32,
                           TSR_GGUF_INT32, &type, &x);
  for (int32_t i = 0; x && i < v->n_tokens; i++)
    if (type == TSR_GGUF_INT32)
      v->tokens[i].score = (float) x[i];
    else
      memcpy (&v->tokens[i].score, &x[i], sizeof (float));
  free (x);
  return st;
}

/* The byte of a byte token's text "<0xXX>", or -1.  */
int
tsri_vocab_byte_value (const char *s, size_t len)
{
  int b = 0;
  if (len != 6 || memcmp (s, "<0x", 3) != 0 || s[5] != '>')
    return -1;
  for (int i = 3; i < 5; i++)
    {
      int c = s[i], d = c >= '0' && c <= '9' ? c - '0'
                        : (c | 0x20) >= 'a' && (c | 0x20) <= 'f'
                        ? (c | 0x20) - 'a' + 10 : -1;
      if (d < 0)
        return -1;
      b = b * 16 + d;
    }
  return b;
}

static int
check_type (const tsr_vocab *v, int32_t id, int32_t type)
{
  const struct tsri_vocab_token *t = &v->tokens[id];
  if (type < TSRI_TOKEN_UNDEFINED || type > TSRI_TOKEN_BYTE)
    return fail (TSR_ERR_FORMAT, "%s[%ld] = %ld is not a token type "
                 "(0 to 6)", KEY_TYPES, (long) id, (long) type);
  if (type == TSRI_TOKEN_BYTE
      && tsri_vocab_byte_value (v->text + t->off, t->len) < 0)
    return fail (TSR_ERR_FORMAT, "%s[%ld] is 6 (byte) but token %ld "
                 "\"%.*s\" is not <0xXX>", KEY_TYPES, (long) id, (long) id,
                 show_len (t->len), v->text + t->off);
  return TSR_OK;
}

static int
read_types (tsr_vocab *v, const tsr_gguf *g)
{
  tsr_gguf_type type;
  int32_t *x;
  int st = read_per_token (v, g, KEY_TYPES, TSR_GGUF_INT32,
                           TSR_GGUF_TYPE_COUNT, &type, &x);
  for (int32_t i = 0; x && i < v->n_tokens && st == TSR_OK; i++)
    if ((st = check_type (v, i, x[i])) == TSR_OK)
      v->tokens[i].type = (uint8_t) x[i];
  free (x);
  return st;
}

/* Merges.  */

static uint64_t
merge_key (int32_t left, int32_t right)
{
  return ((uint64_t) (uint32_t) left << 32 | (uint32_t) right) + 1;
}

/* Keyed: merges are pairs of token ids a file chooses.  */
static uint64_t
merge_hash (uint64_t key)
{
  return tsr_hash_u64 (key);
}

const struct tsri_vocab_merge *
tsri_vocab_merge (const tsr_vocab *v, int32_t left, int32_t right)
{
  if (!v->merges)
    return NULL;
  uint64_t key = merge_key (left, right);
  for (uint64_t h = merge_hash (key) & v->merge_mask;;
       h = (h + 1) & v->merge_mask)
    {
      const struct tsri_vocab_merge *m = &v->merges[h];
      if (m->key == key || m->key == 0)
        return m->key ? m : NULL;
    }
}

/* Merge I, "LEFT RIGHT" (split at the first space after the first
   byte), into the index; the first of two equal merges wins.  BUF has
   room for the merge's text.  */
static int
add_merge (tsr_vocab *v, uint64_t i, const char *s, size_t len, char *buf)
{
  const char *sp = len > 1 ? memchr (s + 1, ' ', len - 1) : NULL;
  if (!sp)
    return fail (TSR_ERR_FORMAT, "%s[%llu] \"%.*s\" is not two tokens "
                 "separated by a space", KEY_MERGES, (unsigned long long) i,
                 show_len (len), s);
  size_t nl = (size_t) (sp - s), nr = len - nl - 1;
  int32_t l = tsri_vocab_find (v, s, nl), r = tsri_vocab_find (v, sp + 1, nr);
  memcpy (buf, s, nl);
  memcpy (buf + nl, sp + 1, nr);
  int32_t result = tsri_vocab_find (v, buf, nl + nr);
  const char *bad = l < 0 ? s : r < 0 ? sp + 1 : result < 0 ? buf : NULL;
  if (bad)
    return fail (TSR_ERR_FORMAT, "%s[%llu] \"%.*s\": \"%.*s\" is not a "
                 "token", KEY_MERGES, (unsigned long long) i, show_len (len),
                 s, show_len (l < 0 ? nl : r < 0 ? nr : nl + nr), bad);
  uint64_t key = merge_key (l, r), h = merge_hash (key) & v->merge_mask;
  while (v->merges[h].key && v->merges[h].key != key)
    h = (h + 1) & v->merge_mask;
  if (!v->merges[h].key)
    v->merges[h] = (struct tsri_vocab_merge) { key, (int32_t) i, result };
  return TSR_OK;
}

static int
read_merges (tsr_vocab *v, const tsr_gguf *g)
{
  tsr_gguf_type type;
  uint64_t n;
  if (v->model != TSRI_VOCAB_BPE)
    return TSR_OK;
  int st = array_of (g, KEY_MERGES, TSR_GGUF_STRING, TSR_GGUF_TYPE_COUNT,
                     true, &type, &n);
  if (st != TSR_OK)
    return st;
  if (n > INT32_MAX)
    return fail (TSR_ERR_FORMAT, "%s has %llu merges (at most %ld taken)",
                 KEY_MERGES, (unsigned long long) n, (long) INT32_MAX);
  uint64_t cap = table_size (n);
  v->merges = calloc ((size_t) cap, sizeof *v->merges);
  v->merge_mask = cap - 1;
  char *buf = NULL;
  size_t buf_cap = 0;
  bool oom = !v->merges;
  for (uint64_t i = 0; i < n && st == TSR_OK && !oom; i++)
    {
      const char *s;
      size_t len;
      string_at (g, KEY_MERGES, i, &s, &len);
      if (len > buf_cap)
        {
          char *p = realloc (buf, 2 * len);
          oom = !p;
          buf = p ? p : buf;
          buf_cap = p ? 2 * len : buf_cap;
        }
      if (!oom)
        st = add_merge (v, i, s, len, buf);
    }
  free (buf);
  return oom ? fail (TSR_ERR_NO_MEMORY, "out of memory") : st;
}

/* Special tokens and flags.  */

/* SentencePiece's conventional ids, where the vocabulary has them.  */
static int32_t
default_id (const tsr_vocab *v, int32_t id)
{
  return v->model == TSRI_VOCAB_SPM && id < v->n_tokens ? id : -1;
}

/* Texts that end a turn in the common chat formats.  */
static const char *const eog_texts[] = {
  "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
  "<|end_of_text|>", "<|eom_id|>",
};

static void
add_eog (tsr_vocab *v, int32_t id)
{
  if (id < 0 || v->n_eog == TSRI_VOCAB_MAX_EOG)
    return;
  for (int i = 0; i < v->n_eog; i++)
    if (v->eog[i] == id)
      return;
  v->eog[v->n_eog++] = id;
}

/* The id of the token whose text is S, or -1.  */
static int32_t
find_text (const tsr_vocab *v, const char *s)
{
  return tsri_vocab_find (v, s, strlen (s));
}

static int
read_special_ids (tsr_vocab *v, const tsr_gguf *g)
{
  int32_t eot = -1, eom = -1;
  bool wpm = v->model == TSRI_VOCAB_WPM, ugm = v->model == TSRI_VOCAB_UGM;
  /* T5's conventional ids: pad 0, eos 1, unk 2, no BOS.  */
  v->bos = wpm ? find_text (v, "[CLS]") : ugm ? -1 : default_id (v, 1);
  v->eos = wpm ? -1 : ugm ? (v->n_tokens > 1 ? 1 : -1) : default_id (v, 2);
  v->unk = wpm ? find_text (v, "[UNK]")
           : ugm ? (v->n_tokens > 2 ? 2 : -1) : default_id (v, 0);
  v->sep = wpm ? find_text (v, "[SEP]") : -1;
  if (wpm)
    {
      int st = read_id (v, g, KEY_SEP, &v->sep);
      if (st != TSR_OK)
        return st;
    }
  int st = read_id (v, g, KEY_BOS, &v->bos);
  if (st == TSR_OK)
    st = read_id (v, g, KEY_EOS, &v->eos);
  if (st == TSR_OK)
    st = read_id (v, g, KEY_EOT, &eot);
  if (st == TSR_OK)
    st = read_id (v, g, KEY_EOM, &eom);
  if (st == TSR_OK)
    st = read_id (v, g, KEY_UNK, &v->unk);
  if (st == TSR_OK && wpm && v->unk < 0)
    return fail (TSR_ERR_FORMAT, "a WordPiece (bert) vocabulary needs an "
                 "unknown token: %s, or a token \"[UNK]\"", KEY_UNK);
  if (st == TSR_OK && ugm && v->unk < 0)
    return fail (TSR_ERR_FORMAT, "a unigram (t5) vocabulary needs an "
                 "unknown token (%s)", KEY_UNK);
  add_eog (v, v->eos);
  add_eog (v, eot);
  add_eog (v, eom);
  for (size_t i = 0; i < sizeof eog_texts / sizeof *eog_texts; i++)
    add_eog (v, tsri_vocab_find (v, eog_texts[i], strlen (eog_texts[i])));
  return st;
}

static int
read_flags (tsr_vocab *v, const tsr_gguf *g)
{
  bool explicit_bos = tsr_gguf_find_key (g, KEY_ADD_BOS) >= 0;
  v->add_bos = v->model == TSRI_VOCAB_SPM || v->pre == TSRI_PRE_LLAMA3
               || v->model == TSRI_VOCAB_WPM;
  v->add_space_prefix = v->model == TSRI_VOCAB_SPM
                        || v->model == TSRI_VOCAB_UGM;
  v->ignore_merges = v->pre == TSRI_PRE_LLAMA3;
  int st = read_bool (g, KEY_ADD_BOS, &v->add_bos);
  if (st == TSR_OK)
    st = read_bool (g, KEY_ADD_SPACE, &v->add_space_prefix);
  if (st == TSR_OK)
    st = read_bool (g, KEY_REMOVE_WS, &v->remove_extra_spaces);
  if (st == TSR_OK && v->add_bos && v->bos < 0)
    {
      if (explicit_bos)
        return fail (TSR_ERR_FORMAT, "%s is true but there is no BOS token "
                     "(%s)", KEY_ADD_BOS, KEY_BOS);
      v->add_bos = false;
    }
  return st;
}

static void
find_byte_tokens (tsr_vocab *v)
{
  for (int b = 0; b < 256; b++)
    {
      char s[8];
      size_t len;
      if (v->model == TSRI_VOCAB_SPM)
        len = (size_t) snprintf (s, sizeof s, "<0x%02X>", b);
      else
        len = tsri_utf8_encode (tsri_byte_to_cp ((unsigned char) b), s);
      v->byte_token[b] = tsri_vocab_find (v, s, len);
    }
}

/* Special tokens, sorted by first byte then longest first.  */

struct special
{
  unsigned char first;
  uint32_t len;
  int32_t id;
};

static int
special_cmp (const void *a, const void *b)
{
  const struct special *x = a, *y = b;
  if (x->first != y->first)
    return x->first < y->first ? -1 : 1;
  if (x->len != y->len)
    return x->len > y->len ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static bool
is_special (const struct tsri_vocab_token *t)
{
  return t->len && (t->type == TSRI_TOKEN_CONTROL
                    || t->type == TSRI_TOKEN_UNKNOWN
                    || t->type == TSRI_TOKEN_USER_DEFINED);
}

static int
index_specials (tsr_vocab *v)
{
  int32_t n = 0;
  for (int32_t id = 0; id < v->n_tokens; id++)
    n += is_special (&v->tokens[id]);
  struct special *list = malloc (((size_t) n + 1) * sizeof *list);
  v->special = malloc (((size_t) n + 1) * sizeof *v->special);
  if (!list || !v->special)
    {
      free (list);
      return fail (TSR_ERR_NO_MEMORY, "out of memory");
    }
  n = 0;
  for (int32_t id = 0; id < v->n_tokens; id++)
    if (is_special (&v->tokens[id]))
      list[n++] = (struct special) {
        (unsigned char) v->text[v->tokens[id].off], v->tokens[id].len, id };
  qsort (list, (size_t) n, sizeof *list, special_cmp);
  int32_t k = 0;
  for (int c = 0; c <= 256; c++)
    {
      v->special_first[c] = k;
      while (c < 256 && k < n && list[k].first == c)
        k++;
    }
  for (int32_t i = 0; i < n; i++)
    v->special[i] = list[i].id;
  free (list);
  return TSR_OK;
}

/* Unigram vocabularies: the character map, the longest token, the
   unknown token's score (the lowest normal score less 10).  */
static int
read_unigram (tsr_vocab *v, const tsr_gguf *g)
{
  tsr_gguf_type type;
  uint64_t n;
  if (v->model != TSRI_VOCAB_UGM)
    return TSR_OK;
  double min_score = 0;
  bool any = false;
  for (int32_t i = 0; i < v->n_tokens; i++)
    {
      const struct tsri_vocab_token *t = &v->tokens[i];
      if (t->len > v->max_token_len)
        v->max_token_len = t->len;
      if (t->type == TSRI_TOKEN_NORMAL && (!any || t->score < min_score))
        {
          min_score = t->score;
          any = true;
        }
    }
  v->unk_score = min_score - 10.0;
  int st = array_of (g, KEY_CHARSMAP, TSR_GGUF_UINT8, TSR_GGUF_INT8, false,
                     &type, &n);
  if (st == TSR_ERR_NOT_FOUND || (st == TSR_OK && n == 0))
    return TSR_OK;
  if (st != TSR_OK)
    return st;
  if (n > SIZE_MAX / 2 || !(v->charsmap_copy = malloc ((size_t) n + 1)))
    return fail (TSR_ERR_NO_MEMORY, "out of memory");
  tsr_gguf_get_array_data (g, KEY_CHARSMAP, type, 0, n, v->charsmap_copy);
  v->charsmap_copy[n] = 0;
  const unsigned char *p = v->charsmap_copy;
  uint64_t blob = (uint64_t) p[0] | (uint64_t) p[1] << 8
                  | (uint64_t) p[2] << 16 | (uint64_t) p[3] << 24;
  /* The double array's size, then the array, then the replacements
     (NUL-terminated; at least one byte).  */
  if (n < 4 || blob % 4 || blob + 4 >= n)
    return fail (TSR_ERR_FORMAT, "%s: %llu bytes cannot hold a double "
                 "array of %llu bytes and its replacements", KEY_CHARSMAP,
                 (unsigned long long) n,
                 (unsigned long long) (n < 4 ? 0 : blob));
  v->charsmap.units = p + 4;
  v->charsmap.n_units = (size_t) blob / 4;
  v->charsmap.text = (const char *) p + 4 + blob;
  v->charsmap.n_text = (size_t) (n - 4 - blob);
  return TSR_OK;
}

int
tsri_vocab_load (tsr_vocab *v, const tsr_gguf *g)
{
  int (*const steps[]) (tsr_vocab *, const tsr_gguf *) = {
    read_model, read_pre, read_tokens, read_scores, read_types,
    read_merges, read_special_ids, read_flags, read_unigram,
  };
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
    {
      int st = steps[i] (v, g);
      if (st != TSR_OK)
        return st;
    }
  find_byte_tokens (v);
  return index_specials (v);
}
