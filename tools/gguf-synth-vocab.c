/* gguf-synth-vocab.c - synthetic tokenizer vocabularies for
 * tessera-gguf synth.
 *
 * Owns the tokenizer.ggml.* keys of the two kinds of vocabulary model
 * runners meet:
 *   llama  SentencePiece-style: <unk>, <s>, </s>, the byte tokens
 *          <0x00>..<0xFF>, then pieces with U+2581 for a space, scored
 *          from 0 down; bos 1, eos 2, unknown 0.
 *   gpt2   byte-level BPE: the 256 bytes in GPT-2's byte-to-unicode
 *          alphabet (U+0120 for a space), pieces each made by a merge,
 *          and control tokens at the end (Llama 3's or Qwen2's names).
 * The pieces are single characters, common English words and endings,
 * then filler made of lowercase letters with and without a leading
 * space.  Every vocabulary has exactly the tokens asked for, all
 * different, and is closed under prefixes: a piece of several
 * characters is a shorter piece plus one character, the merge that the
 * gpt2 merges list names.  */
#include <config.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf-synth.h"

/* tokenizer.ggml.token_type values.  */
enum { TOK_NORMAL = 1, TOK_UNKNOWN = 2, TOK_CONTROL = 3, TOK_BYTE = 6 };

#define LLAMA_BPE_SPECIALS 256
#define LLAMA_BPE_FULL 128256   /* Llama 3's vocabulary, 256 specials */
#define FILLER_MAX_LEN 6

struct vocab
{
  bool bpe;
  char **tok;
  float *score;
  int32_t *type;
  int64_t n, cap;
  char **merge;
  int64_t n_merge;
  int64_t *slot;                /* hash set: token index + 1, 0 empty */
  size_t n_slot;                /* a power of two, at least 2 * cap */
  float next_score;
};

/* Common pieces, in ASCII with ' ' for the space marker.  */
static const char *const common[] = {
  " the", " of", " and", " to", " a", " in", " is", " that", " it", " for",
  " was", " on", " with", " as", " he", " be", " at", " by", " this",
  " have", " from", " or", " one", " had", " not", " but", " what", " all",
  " were", " we", " when", " your", " can", " said", " there", " an",
  " which", " she", " do", " how", " their", " if", " will", " up",
  " other", " about", " out", " many", " then", " them", " these", " so",
  " some", " her", " would", " make", " like", " him", " into", " time",
  " has", " look", " two", " more", " go", " see", " no", " way", " could",
  " my", " than", " first", " been", " who", " its", " now", " people",
  " The", " I", " It", " In", " Hello", " world", " Once", " upon",
  " there", " little", " day", " very", " happy", " story", "ing", "ed",
  "er", "es", "ly", "tion", "'s", "s", ".", ",", " ."
};

/* Hash set of token strings.  */

static uint64_t
hash (const char *s)
{
  uint64_t h = UINT64_C (0xcbf29ce484222325);
  for (; *s; s++)
    h = (h ^ (unsigned char) *s) * UINT64_C (0x100000001b3);
  return h;
}

static int64_t *
find_slot (const struct vocab *v, const char *s)
{
  size_t i = (size_t) hash (s) & (v->n_slot - 1);
  while (v->slot[i] && strcmp (v->tok[v->slot[i] - 1], s) != 0)
    i = (i + 1) & (v->n_slot - 1);
  return &v->slot[i];
}

static bool
has (const struct vocab *v, const char *s)
{
  return *find_slot (v, s) != 0;
}

static bool
vocab_init (struct vocab *v, bool bpe, int64_t cap)
{
  *v = (struct vocab) { .bpe = bpe, .cap = cap };
  v->n_slot = 16;
  while (v->n_slot < 2 * (size_t) cap)
    v->n_slot *= 2;
  v->tok = calloc ((size_t) cap, sizeof *v->tok);
  v->score = calloc ((size_t) cap, sizeof *v->score);
  v->type = calloc ((size_t) cap, sizeof *v->type);
  v->merge = calloc ((size_t) cap, sizeof *v->merge);
  v->slot = calloc (v->n_slot, sizeof *v->slot);
  return v->tok && v->score && v->type && v->merge && v->slot;
}

static void
vocab_free (struct vocab *v)
{
  for (int64_t i = 0; i < v->n; i++)
    free (v->tok[i]);
  for (int64_t i = 0; i < v->n_merge; i++)
    free (v->merge[i]);
  free (v->tok);
  free (v->score);
  free (v->type);
  free (v->merge);
  free (v->slot);
}

/* Append S (not yet a token) as a token of TYPE.  */
static bool
push (struct vocab *v, const char *s, int32_t type, float score)
{
  char *copy = strdup (s);
  if (!copy)
    return false;
  v->tok[v->n] = copy;
  v->type[v->n] = type;
  v->score[v->n] = score;
  *find_slot (v, s) = ++v->n;
  return true;
}

static bool
full (const struct vocab *v)
{
  return v->n >= v->cap;
}

/* Bytes of the UTF-8 character whose first byte is C.  */
static size_t
char_len (unsigned char c)
{
  return c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
}

static size_t
put_utf8 (char *out, unsigned cp)
{
  if (cp < 0x80)
    {
      out[0] = (char) cp;
      return 1;
    }
  out[0] = (char) (0xc0 | (cp >> 6));
  out[1] = (char) (0x80 | (cp & 0x3f));
  return 2;
}

/* GPT-2's byte-to-unicode alphabet: printable Latin-1 bytes stand for
   themselves, the other 68 for U+0100 onwards in byte order.  */
static bool
byte_printable (int b)
{
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
}

static unsigned
byte_char (int b)
{
  if (byte_printable (b))
    return (unsigned) b;
  unsigned n = 0;
  for (int i = 0; i < b; i++)
    n += !byte_printable (i);
  return 256 + n;
}

/* ASCII S in the vocabulary's alphabet (' ' as U+2581 or U+0120).  */
static void
encode (const struct vocab *v, const char *s, char *out)
{
  for (; *s; s++)
    if (v->bpe)
      out += put_utf8 (out, byte_char ((unsigned char) *s));
    else if (*s == ' ')
      out += sprintf (out, "\xe2\x96\x81");
    else
      *out++ = *s;
  *out = '\0';
}

/* Add the piece S of several characters, whose prefix without its last
   character (at LAST) is a token; gpt2 also gets the merge.  */
static bool
add_merged (struct vocab *v, const char *s, size_t last)
{
  if (v->bpe)
    {
      char *m = malloc (strlen (s) + 2);
      if (!m)
        return false;
      sprintf (m, "%.*s %s", (int) last, s, s + last);
      v->merge[v->n_merge++] = m;
    }
  return push (v, s, TOK_NORMAL, v->next_score--);
}

/* Add S and every prefix of it that is not a token yet, shortest first,
   while there is room.  */
static bool
add_with_prefixes (struct vocab *v, const char *s)
{
  char buf[64];
  size_t len = strlen (s), last = 0;
  for (size_t k = 0; k < len && !full (v); last = k)
    {
      k += char_len ((unsigned char) s[k]);
      memcpy (buf, s, k);
      buf[k] = '\0';
      if (has (v, buf))
        continue;
      if (!(last == 0 ? push (v, buf, TOK_NORMAL, v->next_score--)
                      : add_merged (v, buf, last)))
        return false;
    }
  return true;
}

/* Lowercase strings of 1 to FILLER_MAX_LEN letters, each with and
   without a leading space, until the vocabulary is full.  */
static bool
add_filler (struct vocab *v)
{
  char word[FILLER_MAX_LEN + 2], enc[64];
  for (int len = 1; len <= FILLER_MAX_LEN && !full (v); len++)
    {
      word[0] = ' ';
      memset (word + 1, 'a', (size_t) len);
      word[len + 1] = '\0';
      for (bool more = true; more && !full (v);)
        {
          for (int skip = 0; skip < 2; skip++)
            {
              if (skip && len < 2)
                continue;
              encode (v, word + skip, enc);
              if (!add_with_prefixes (v, enc))
                return false;
            }
          /* Next word: count in base 26 from the last letter.  */
          int i = len;
          while (i >= 1 && word[i] == 'z')
            word[i--] = 'a';
          more = i >= 1;
          if (more)
            word[i]++;
        }
    }
  return full (v);
}

static bool
add_common (struct vocab *v)
{
  char enc[64];
  for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
    {
      encode (v, common[i], enc);
      if (!add_with_prefixes (v, enc))
        return false;
    }
  return true;
}

/* The llama (SentencePiece) vocabulary of N tokens.  */
static bool
build_llama (struct vocab *v, int64_t n)
{
  if (!vocab_init (v, false, n))
    return false;
  bool ok = push (v, "<unk>", TOK_UNKNOWN, 0)
            && push (v, "<s>", TOK_CONTROL, 0)
            && push (v, "</s>", TOK_CONTROL, 0);
  for (int b = 0; ok && b < 256; b++)
    {
      char s[8];
      snprintf (s, sizeof s, "<0x%02X>", b);
      ok = push (v, s, TOK_BYTE, 0);
    }
  char one[8];
  ok = ok && add_with_prefixes (v, "\xe2\x96\x81");
  for (int c = 33; ok && c < 127 && !full (v); c++)
    {
      snprintf (one, sizeof one, "%c", c);
      ok = add_with_prefixes (v, one);
    }
  return ok && add_common (v) && add_filler (v);
}

static void
special_name (const struct synth_vocab_spec *spec, int i, char *out,
              size_t size)
{
  static const char *const llama3[] = {
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
    "<|reserved_special_token_2|>", "<|start_header_id|>",
    "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"
  };
  static const char *const qwen2[] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>"
  };
  if (strcmp (spec->pre, "qwen2") == 0)
    snprintf (out, size, "%s", qwen2[i]);
  else if (i < 11)
    snprintf (out, size, "%s", llama3[i]);
  else
    snprintf (out, size, "<|reserved_special_token_%d|>", i - 8);
}

static int64_t
n_specials (const struct synth_vocab_spec *spec)
{
  if (strcmp (spec->pre, "qwen2") == 0)
    return 3;
  return spec->n_vocab >= LLAMA_BPE_FULL ? LLAMA_BPE_SPECIALS : 2;
}

/* The gpt2 (byte-level BPE) vocabulary of SPEC.  */
static bool
build_gpt2 (struct vocab *v, const struct synth_vocab_spec *spec)
{
  int64_t n_special = n_specials (spec);
  if (!vocab_init (v, true, spec->n_vocab))
    return false;
  v->cap = spec->n_vocab - n_special;     /* the specials come last */
  bool ok = true;
  for (int pass = 0; pass < 2; pass++)    /* printable bytes first */
    for (int b = 0; ok && b < 256; b++)
      if (byte_printable (b) == (pass == 0))
        {
          char s[4];
          s[put_utf8 (s, byte_char (b))] = '\0';
          ok = push (v, s, TOK_NORMAL, 0);
        }
  ok = ok && add_common (v) && add_filler (v);
  v->cap = spec->n_vocab;
  for (int i = 0; ok && i < n_special; i++)
    {
      char s[64];
      special_name (spec, i, s, sizeof s);
      ok = push (v, s, TOK_CONTROL, 0);
    }
  return ok;
}

int64_t
synth_vocab_min (const struct synth_vocab_spec *spec)
{
  if (spec->kind == SYNTH_TOK_LLAMA)
    return 3 + 256;
  if (spec->kind == SYNTH_TOK_GPT2)
    return 256 + (strcmp (spec->pre, "qwen2") == 0 ? 3 : 2);
  return 1;
}

/* The special token ids; UNK < 0: none.  */
static int
set_ids (tsr_gguf_writer *w, uint32_t bos, uint32_t eos, int64_t unk,
         bool add_bos)
{
  int st = tsr_gguf_set_u32 (w, "tokenizer.ggml.bos_token_id", bos);
  if (st == TSR_OK)
    st = tsr_gguf_set_u32 (w, "tokenizer.ggml.eos_token_id", eos);
  if (st == TSR_OK && unk >= 0)
    st = tsr_gguf_set_u32 (w, "tokenizer.ggml.unknown_token_id",
                           (uint32_t) unk);
  if (st == TSR_OK)
    st = tsr_gguf_set_bool (w, "tokenizer.ggml.add_bos_token", add_bos);
  if (st == TSR_OK)
    st = tsr_gguf_set_bool (w, "tokenizer.ggml.add_eos_token", false);
  return st;
}

/* The keys of V, in the order converted files have them.  */
static int
set_keys (tsr_gguf_writer *w, const struct vocab *v,
          const struct synth_vocab_spec *spec)
{
  int st = tsr_gguf_set_str (w, "tokenizer.ggml.model",
                             v->bpe ? "gpt2" : "llama");
  if (st == TSR_OK)
    st = tsr_gguf_set_str (w, "tokenizer.ggml.pre",
                           v->bpe ? spec->pre : "default");
  if (st == TSR_OK)
    st = tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens",
                                 (const char *const *) v->tok,
                                 (uint64_t) v->n);
  if (st == TSR_OK && !v->bpe)
    st = tsr_gguf_set_array (w, "tokenizer.ggml.scores", TSR_GGUF_FLOAT32,
                             v->score, (uint64_t) v->n);
  if (st == TSR_OK)
    st = tsr_gguf_set_array (w, "tokenizer.ggml.token_type", TSR_GGUF_INT32,
                             v->type, (uint64_t) v->n);
  if (st == TSR_OK && v->bpe)
    st = tsr_gguf_set_array_str (w, "tokenizer.ggml.merges",
                                 (const char *const *) v->merge,
                                 (uint64_t) v->n_merge);
  if (st != TSR_OK || !v->bpe)
    return st == TSR_OK ? set_ids (w, 1, 2, 0, true) : st;
  uint32_t first = (uint32_t) (spec->n_vocab - n_specials (spec));
  bool qwen2 = strcmp (spec->pre, "qwen2") == 0;
  return set_ids (w, first, qwen2 ? first : first + 1, -1, !qwen2);
}

int
synth_vocab_write (tsr_gguf_writer *w, const struct synth_vocab_spec *spec,
                   char *err, size_t errlen)
{
  if (spec->n_vocab < synth_vocab_min (spec))
    {
      snprintf (err, errlen, "a vocabulary of %lld tokens is too small",
                (long long) spec->n_vocab);
      return TSR_ERR_INVALID_ARG;
    }
  struct vocab v;
  bool ok = spec->kind == SYNTH_TOK_GPT2 ? build_gpt2 (&v, spec)
                                         : build_llama (&v, spec->n_vocab);
  int st = ok && v.n == spec->n_vocab ? TSR_OK : TSR_ERR_NO_MEMORY;
  if (st != TSR_OK)
    snprintf (err, errlen, "out of memory building the vocabulary");
  else
    st = set_keys (w, &v, spec);
  vocab_free (&v);
  return st;
}
