/* vocab.c - the vocabulary object, and tokens back to text.
 *
 * Owns: creating and freeing a tsr_vocab, its queries, looking up a
 * token by its text, and the text a token stands for (token_to_piece,
 * detokenize).  Reading the file is vocab-load.c; text to tokens is
 * vocab-tokenize.c.  */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "vocab-impl.h"

tsr_vocab *
tsr_vocab_from_gguf (const tsr_gguf *g)
{
  if (!g)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "vocab: NULL file");
      return NULL;
    }
  tsr_vocab *v = calloc (1, sizeof *v);
  if (!v)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "vocab: out of memory");
      return NULL;
    }
  if (tsri_vocab_load (v, g) != TSR_OK)
    {
      tsr_vocab_free (v);
      return NULL;
    }
  return v;
}

void
tsr_vocab_free (tsr_vocab *v)
{
  if (!v)
    return;
  free (v->text);
  free (v->tokens);
  free (v->slots);
  free (v->merges);
  free (v->special);
  free (v->charsmap_copy);
  free (v);
}

int32_t
tsri_vocab_find (const tsr_vocab *v, const char *s, size_t len)
{
  for (uint64_t h = tsr_hash (s, len) & v->mask;; h = (h + 1) & v->mask)
    {
      int32_t id = v->slots[h] - 1;
      if (id < 0)
        return -1;
      const struct tsri_vocab_token *t = &v->tokens[id];
      if (t->len == len && memcmp (v->text + t->off, s, len) == 0)
        return id;
    }
}

bool
tsri_vocab_mergeable (const tsr_vocab *v, int32_t id)
{
  uint8_t type = v->tokens[id].type;
  return type == TSRI_TOKEN_NORMAL || type == TSRI_TOKEN_USER_DEFINED
         || type == TSRI_TOKEN_UNDEFINED;
}

/* Queries.  */

int32_t
tsr_vocab_n_tokens (const tsr_vocab *v)
{
  return v ? v->n_tokens : 0;
}

const char *
tsr_vocab_model (const tsr_vocab *v)
{
  return !v ? NULL : v->model == TSRI_VOCAB_SPM ? "llama"
         : v->model == TSRI_VOCAB_WPM ? "bert"
         : v->model == TSRI_VOCAB_UGM ? "t5" : "gpt2";
}

const char *
tsr_vocab_pre (const tsr_vocab *v)
{
  static const char *const names[] = {
    [TSRI_PRE_NONE] = "", [TSRI_PRE_DEFAULT] = "default",
    [TSRI_PRE_GPT2] = "gpt-2", [TSRI_PRE_LLAMA3] = "llama-bpe",
    [TSRI_PRE_QWEN2] = "qwen2", [TSRI_PRE_SMOLLM] = "smollm",
    [TSRI_PRE_FALCON] = "falcon", [TSRI_PRE_DEEPSEEK_LLM] = "deepseek-llm",
    [TSRI_PRE_DEEPSEEK_CODER] = "deepseek-coder",
    [TSRI_PRE_DEEPSEEK_V3] = "deepseek-v3", [TSRI_PRE_PORO] = "poro-chat",
    [TSRI_PRE_VIKING] = "viking", [TSRI_PRE_GPT4O] = "gpt-4o",
    [TSRI_PRE_TEKKEN] = "tekken", [TSRI_PRE_CHAMELEON] = "chameleon",
  };
  return v ? names[v->pre] : NULL;
}

int32_t
tsr_vocab_bos (const tsr_vocab *v)
{
  return v ? v->bos : -1;
}

int32_t
tsr_vocab_eos (const tsr_vocab *v)
{
  return v ? v->eos : -1;
}

bool
tsr_vocab_add_bos (const tsr_vocab *v)
{
  return v && v->add_bos;
}

bool
tsr_vocab_is_eog (const tsr_vocab *v, int32_t id)
{
  for (int i = 0; v && i < v->n_eog; i++)
    if (v->eog[i] == id)
      return true;
  return false;
}

const char *
tsr_vocab_token_text (const tsr_vocab *v, int32_t id)
{
  if (!v || id < 0 || id >= v->n_tokens)
    return NULL;
  return v->text + v->tokens[id].off;
}

/* Pieces.  */

/* Output that counts past the end of BUF; SKIP_SPACE drops a space
   that starts what is written.  */
struct out
{
  char *buf;
  size_t n;
  uint64_t len;
  bool skip_space;
};

static void
put (struct out *o, const char *s, size_t k)
{
  if (o->skip_space && k)
    {
      if (*s == ' ')
        s++, k--;
      o->skip_space = false;
    }
  if (o->len < o->n)
    memcpy (o->buf + o->len, s, k < o->n - o->len ? k : o->n - o->len);
  o->len += k;
}

static int64_t
finish (struct out *o)
{
  if (o->len < o->n)
    o->buf[o->len] = '\0';
  return (int64_t) o->len;
}

/* SentencePiece: U+2581 is a space.  */
static void
put_unescaped (struct out *o, const char *s, size_t len)
{
  size_t start = 0;
  for (size_t i = 0; i + 3 <= len;)
    if (memcmp (s + i, "\xe2\x96\x81", 3) == 0)
      {
        put (o, s + start, i - start);
        put (o, " ", 1);
        i += 3;
        start = i;
      }
    else
      i++;
  put (o, s + start, len - start);
}

/* Byte-level BPE: each character stands for a byte; one that stands
   for none is kept as it is.  */
static void
put_unmapped (struct out *o, const char *s, size_t len)
{
  for (size_t i = 0, k; i < len; i += k)
    {
      uint32_t cp;
      k = tsri_utf8_decode ((const unsigned char *) s + i, len - i, &cp);
      int b = tsri_cp_to_byte (cp);
      char c = (char) b;
      put (o, b >= 0 ? &c : s + i, b >= 0 ? 1 : k);
    }
}

static void
put_piece (const tsr_vocab *v, int32_t id, bool special, struct out *o)
{
  const struct tsri_vocab_token *t = &v->tokens[id];
  const char *s = v->text + t->off;
  switch (t->type)
    {
    case TSRI_TOKEN_CONTROL:
    case TSRI_TOKEN_UNKNOWN:
    case TSRI_TOKEN_UNUSED:
      if (special)
        put (o, s, t->len);
      break;
    case TSRI_TOKEN_USER_DEFINED:
      put (o, s, t->len);
      break;
    case TSRI_TOKEN_BYTE:
      {
        char c = (char) tsri_vocab_byte_value (s, t->len);
        put (o, &c, 1);
        break;
      }
    default:
      if (v->model != TSRI_VOCAB_BPE)
        put_unescaped (o, s, t->len);
      else
        put_unmapped (o, s, t->len);
    }
}

static bool
check_id (const tsr_vocab *v, int32_t id, const char *who)
{
  if (!v || id < 0 || id >= v->n_tokens)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "vocab: %s: token %ld is not in "
                     "the vocabulary of %ld tokens", who, (long) id,
                     (long) (v ? v->n_tokens : 0));
      return false;
    }
  return true;
}

static bool
check_buf (const char *buf, size_t n, const char *who)
{
  if (!buf && n)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "vocab: %s: NULL buffer of %zu "
                     "bytes", who, n);
      return false;
    }
  return true;
}

int64_t
tsr_vocab_token_to_piece (const tsr_vocab *v, int32_t id, bool special,
                          char *buf, size_t n)
{
  if (!check_id (v, id, "token_to_piece")
      || !check_buf (buf, n, "token_to_piece"))
    return -1;
  struct out o = { buf, n, 0, false };
  put_piece (v, id, special, &o);
  return finish (&o);
}

int64_t
tsr_vocab_detokenize (const tsr_vocab *v, const int32_t *tokens,
                      int64_t n_tokens, bool special, char *buf, size_t n)
{
  if (!check_buf (buf, n, "detokenize"))
    return -1;
  if (!v || n_tokens < 0 || (!tokens && n_tokens))
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "vocab: detokenize: bad "
                     "arguments");
      return -1;
    }
  struct out o = { buf, n, 0,
                   ((v->model == TSRI_VOCAB_SPM
                     || v->model == TSRI_VOCAB_UGM) && v->add_space_prefix)
                   || v->model == TSRI_VOCAB_WPM };
  for (int64_t i = 0; i < n_tokens; i++)
    {
      if (!check_id (v, tokens[i], "detokenize"))
        return -1;
      put_piece (v, tokens[i], special, &o);
    }
  return finish (&o);
}
