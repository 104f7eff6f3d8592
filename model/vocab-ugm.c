/* vocab-ugm.c - the unigram tokenizer of T5-style vocabularies
 * (tokenizer.ggml.model "t5": SentencePiece's unigram model).
 *
 * Owns the text to tokens of one fragment:
 *   1. normalization, SentencePiece's: at each place the longest key
 *      of the file's precompiled character map (a darts-clone double
 *      array, tokenizer.ggml.precompiled_charsmap) is replaced by its
 *      value, else one UTF-8 character is kept (a byte that starts no
 *      valid character becomes U+FFFD); spaces become U+2581, with one
 *      before the text (tokenizer.ggml.add_space_prefix, default true),
 *      or, with tokenizer.ggml.remove_extra_whitespaces, one before
 *      each run of non-spaces and none elsewhere;
 *   2. the segmentation of the highest total score (Viterbi over byte
 *      positions): every normal, user-defined (score 0) or unused
 *      token that starts at a character boundary; where no token is
 *      exactly the character there, the unknown token, scored the
 *      lowest normal score minus 10; consecutive unknown tokens become
 *      one.  Ties keep the segmentation found first (the shorter token
 *      at the earlier place).
 * The character map comes from the file: every index into it is
 * checked, so a damaged map gives a wrong normalization, never a read
 * outside it.  */
#include <config.h>

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "vocab-impl.h"

#define SPACE_MARK "\xe2\x96\x81"

/* darts-clone units: the label (bits 0-7, and bit 31 set on a leaf's
   value unit), whether the node has a leaf (bit 8), the offset to its
   children (bits 10-30, shifted by 8 more when bit 9 is set), and a
   leaf's value (bits 0-30).  */
static uint32_t
unit_label (uint32_t u)
{
  return u & ((1u << 31) | 0xffu);
}

static bool
unit_has_leaf (uint32_t u)
{
  return (u >> 8) & 1u;
}

static uint32_t
unit_offset (uint32_t u)
{
  return (u >> 10) << ((u & (1u << 9)) >> 6);
}

static uint32_t
unit_value (uint32_t u)
{
  return u & ((1u << 31) - 1);
}

/* Unit I of M (GGUF is little-endian).  */
static uint32_t
unit_at (const struct tsri_charsmap *m, size_t i)
{
  const unsigned char *p = m->units + 4 * i;
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
         | (uint32_t) p[3] << 24;
}

/* The longest key of M at S (N bytes): its length, and the offset of
   its replacement in *VALUE; 0 for none.  */
static size_t
charsmap_match (const struct tsri_charsmap *m, const char *s, size_t n,
                uint32_t *value)
{
  size_t best = 0;
  if (!m->n_units)
    return 0;
  size_t node = unit_offset (unit_at (m, 0));
  for (size_t i = 0; i < n; i++)
    {
      unsigned char c = (unsigned char) s[i];
      if (!c)
        break;
      node ^= c;
      if (node >= m->n_units)
        break;
      uint32_t u = unit_at (m, node);
      if (unit_label (u) != c)
        break;
      node ^= unit_offset (u);
      if (node >= m->n_units)
        break;
      if (unit_has_leaf (u))
        {
          best = i + 1;
          *value = unit_value (unit_at (m, node));
        }
    }
  return best;
}

struct buf
{
  char *s;
  size_t n, cap;
};

static bool
append (struct buf *b, const char *s, size_t n)
{
  if (b->n + n > b->cap)
    {
      size_t cap = 2 * (b->n + n) + 16;
      char *p = realloc (b->s, cap);
      if (!p)
        return false;
      b->s = p;
      b->cap = cap;
    }
  memcpy (b->s + b->n, s, n);
  b->n += n;
  return true;
}

/* The normalized text of S (N bytes) into OUT; false when out of
   memory.  */
static bool
normalize (const tsr_vocab *v, const char *s, size_t n, struct buf *out)
{
  const struct tsri_charsmap *m = &v->charsmap;
  bool merge = v->remove_extra_spaces, in_word = false, prefixed = false;
  for (size_t i = 0; i < n;)
    {
      const char *piece;
      size_t len, used;
      uint32_t value = 0;
      size_t k = charsmap_match (m, s + i, n - i, &value);
      if (k && value < m->n_text)
        {
          piece = m->text + value;
          len = strnlen (piece, m->n_text - value);
          used = k;
        }
      else
        {
          uint32_t cp;
          used = tsri_utf8_decode ((const unsigned char *) s + i, n - i, &cp);
          piece = cp == TSRI_CP_INVALID ? "\xef\xbf\xbd" : s + i;
          len = cp == TSRI_CP_INVALID ? 3 : used;
        }
      for (size_t j = 0; j < len; j++)
        if (piece[j] != ' ')
          {
            if (!in_word)
              {
                in_word = true;
                if ((v->add_space_prefix && !prefixed) || merge)
                  {
                    if (!append (out, SPACE_MARK, 3))
                      return false;
                    prefixed = true;
                  }
              }
            if (!append (out, piece + j, 1))
              return false;
          }
        else
          {
            in_word = false;
            if (!merge && !append (out, SPACE_MARK, 3))
              return false;
          }
      i += used;
    }
  return true;
}

/* The best segmentation ending at each byte: its last token, where
   that token starts, and the total score.  */
struct best
{
  int32_t id;
  size_t start;
  double score;
};

static bool
counts (const struct tsri_vocab_token *t)
{
  return t->type == TSRI_TOKEN_NORMAL || t->type == TSRI_TOKEN_USER_DEFINED
         || t->type == TSRI_TOKEN_UNUSED;
}

static size_t
char_len (unsigned char c)
{
  return c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
}

int
tsri_ugm_fragment (const tsr_vocab *v, const char *s, size_t n,
                   void (*emit) (void *, int32_t), void *ctx)
{
  struct buf t = { 0 };
  if (!normalize (v, s, n, &t))
    {
      free (t.s);
      return tsr_set_error (TSR_ERR_NO_MEMORY, "vocab: tokenize: out of "
                            "memory");
    }
  size_t len = t.n;
  struct best *b = malloc ((len + 1) * sizeof *b);
  int32_t *ids = malloc ((len + 1) * sizeof *ids);
  if (!b || !ids)
    {
      free (t.s);
      free (b);
      free (ids);
      return tsr_set_error (TSR_ERR_NO_MEMORY, "vocab: tokenize: out of "
                            "memory");
    }
  for (size_t i = 0; i <= len; i++)
    b[i] = (struct best) { v->unk, 0, -DBL_MAX };
  b[0].score = 0;
  for (size_t i = 0; i < len;)
    {
      size_t units = char_len ((unsigned char) t.s[i]);
      units = units < len - i ? units : len - i;
      bool whole_char = false;
      size_t max = len - i < v->max_token_len ? len - i : v->max_token_len;
      for (size_t l = 1; l <= max; l++)
        {
          int32_t id = tsri_vocab_find (v, t.s + i, l);
          if (id < 0 || !counts (&v->tokens[id]))
            continue;
          whole_char |= l == units;
          double sc = v->tokens[id].type == TSRI_TOKEN_USER_DEFINED
                      ? 0.0 : (double) v->tokens[id].score;
          double c = b[i].score + sc;
          if (c > b[i + l].score)
            b[i + l] = (struct best) { id, i, c };
        }
      if (!whole_char)
        {
          double c = b[i].score + v->unk_score;
          if (c > b[i + units].score)
            b[i + units] = (struct best) { v->unk, i, c };
        }
      i += units;
    }
  size_t k = 0;
  bool prev_unk = false;
  for (size_t e = len; e > 0; e = b[e].start)
    {
      bool unk = b[e].id == v->unk;
      if (!(unk && prev_unk))
        ids[k++] = b[e].id;
      prev_unk = unk;
    }
  while (k > 0)
    emit (ctx, ids[--k]);
  free (t.s);
  free (b);
  free (ids);
  return TSR_OK;
}
