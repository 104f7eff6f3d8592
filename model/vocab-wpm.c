/* vocab-wpm.c - WordPiece, the tokenizer of BERT-style vocabularies
 * (tokenizer.ggml.model "bert").
 *
 * Owns the text to tokens of one fragment, by BERT's published rules
 * (its basic tokenizer, then WordPiece):
 *   1. clean: drop NUL, U+FFFD, bytes that are not UTF-8 and every
 *      other character of category C (controls, format, unassigned...)
 *      except tab, newline and carriage return; White_Space separates
 *      words;
 *   2. CJK ideographs become words of their own;
 *   3. strip accents: canonical decomposition (NFD), marks of category
 *      Mn dropped; then lowercase (simple mappings; a capital sigma
 *      that ends a word becomes the final sigma);
 *   4. punctuation (category P, or any ASCII punctuation or symbol)
 *      becomes words of one character;
 *   5. each word, longest token first from the left: the word's first
 *      piece is looked up with the word-start mark U+2581 before it
 *      (GGUF converters write BERT's "word" as "\u2581word" and its
 *      continuation "##ing" as "ing"), later pieces as they are; a
 *      word with a place no token starts, or of more than 100
 *      characters, is the unknown token.  */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "vocab-impl.h"

#define WPM_MAX_WORD 100        /* characters; longer words are unknown */

/* BERT's CJK ideographs (the fast tokenizer's ranges).  */
static bool
is_cjk (uint32_t c)
{
  return (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf)
         || (c >= 0x20000 && c <= 0x2a6df) || (c >= 0x2a700 && c <= 0x2b73f)
         || (c >= 0x2b740 && c <= 0x2b81f) || (c >= 0x2b920 && c <= 0x2ceaf)
         || (c >= 0xf900 && c <= 0xfaff) || (c >= 0x2f800 && c <= 0x2fa1f);
}

static bool
is_punct (uint32_t c)
{
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40)
           || (c >= 0x5b && c <= 0x60) || (c >= 0x7b && c <= 0x7e);
  return tsri_cp_is_punct (c);
}

static bool
dropped (uint32_t c)
{
  if (c == '\t' || c == '\n' || c == '\r')
    return false;
  if (c == 0 || c == 0xfffd || c == TSRI_CP_INVALID)
    return true;
  enum tsri_uc k = tsri_cp_category (c);
  return k == TSRI_UC_Cc || k == TSRI_UC_Cf || k == TSRI_UC_Cs
         || k == TSRI_UC_Co || k == TSRI_UC_Cn;
}

static bool
is_cased (uint32_t c)
{
  enum tsri_uc k = tsri_cp_category (c);
  return k == TSRI_UC_Lu || k == TSRI_UC_Ll || k == TSRI_UC_Lt;
}

/* Words are runs of the normalized code points between separators
   (SEP); a CJK ideograph or a punctuation character is a run of its
   own.  */
#define SEP 0xffffffffu

/* The normalized code points of S (N bytes) into *OUT (malloc'd): the
   number, or -1 when out of memory.  */
static int64_t
normalize (const char *s, size_t n, uint32_t **out)
{
  uint32_t *o = malloc ((3 * n * TSRI_NFD_MAX + 2) * sizeof *o);
  int64_t k = 0;
  if (!o)
    return -1;
  for (size_t i = 0; i < n;)
    {
      uint32_t c, d[TSRI_NFD_MAX];
      i += tsri_utf8_decode ((const unsigned char *) s + i, n - i, &c);
      if (dropped (c))
        continue;
      if (tsri_cp_is_space (c))
        {
          o[k++] = SEP;
          continue;
        }
      bool alone = is_cjk (c) || is_punct (c);
      if (alone)
        o[k++] = SEP;
      size_t m = tsri_nfd (&c, 1, d);
      for (size_t j = 0; j < m; j++)
        if (tsri_cp_category (d[j]) != TSRI_UC_Mn)
          {
            /* Split the decomposition's punctuation off as well.  */
            if (!alone && is_punct (d[j]))
              {
                o[k++] = SEP;
                o[k++] = d[j];
                o[k++] = SEP;
              }
            else
              o[k++] = d[j];
          }
      if (alone)
        o[k++] = SEP;
    }
  /* Lowercase, with the final sigma where a capital sigma ends a word
     (a cased letter before it, none after).  */
  for (int64_t i = 0; i < k; i++)
    {
      if (o[i] == SEP)
        continue;
      if (o[i] == 0x03a3 && i > 0 && o[i - 1] != SEP && is_cased (o[i - 1])
          && (i + 1 == k || o[i + 1] == SEP || !is_cased (o[i + 1])))
        o[i] = 0x03c2;
      else
        o[i] = tsri_cp_lower (o[i]);
    }
  *out = o;
  return k;
}

/* Tokens of the word W[0 .. N - 1] (code points, N >= 1) through EMIT;
   BUF has room for the word's UTF-8 and the mark.  */
static void
word_tokens (const tsr_vocab *v, const uint32_t *w, int64_t n, char *buf,
             size_t *off, void (*emit) (void *, int32_t), void *ctx,
             int32_t *ids)
{
  if (n > WPM_MAX_WORD)
    {
      emit (ctx, v->unk);
      return;
    }
  /* Byte offsets of each character in BUF after the mark.  */
  static const char mark[] = "\xe2\x96\x81";
  memcpy (buf, mark, 3);
  size_t b = 3;
  for (int64_t i = 0; i < n; i++)
    {
      off[i] = b;
      b += tsri_utf8_encode (w[i], buf + b);
    }
  off[n] = b;
  int64_t n_ids = 0;
  for (int64_t start = 0; start < n;)
    {
      int32_t id = -1;
      int64_t end = n;
      for (; end > start; end--)
        {
          size_t a = start ? off[start] : 0;   /* the mark at a word start */
          id = tsri_vocab_find (v, buf + a, off[end] - a);
          if (id >= 0)
            break;
        }
      if (id < 0)
        {
          emit (ctx, v->unk);
          return;
        }
      ids[n_ids++] = id;
      start = end;
    }
  for (int64_t i = 0; i < n_ids; i++)
    emit (ctx, ids[i]);
}

int
tsri_wpm_fragment (const tsr_vocab *v, const char *s, size_t n,
                   void (*emit) (void *, int32_t), void *ctx)
{
  uint32_t *cp;
  int64_t k = normalize (s, n, &cp);
  if (k < 0)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "vocab: tokenize: out of "
                          "memory");
  char *buf = malloc (4 * (WPM_MAX_WORD + 1) + 4);
  size_t *off = malloc ((WPM_MAX_WORD + 2) * sizeof *off);
  int32_t *ids = malloc ((WPM_MAX_WORD + 1) * sizeof *ids);
  int st = buf && off && ids ? TSR_OK
           : tsr_set_error (TSR_ERR_NO_MEMORY, "vocab: tokenize: out of "
                            "memory");
  for (int64_t i = 0; i < k && st == TSR_OK;)
    {
      if (cp[i] == SEP)
        {
          i++;
          continue;
        }
      int64_t e = i;
      while (e < k && cp[e] != SEP)
        e++;
      word_tokens (v, cp + i, e - i, buf, off, emit, ctx, ids);
      i = e;
    }
  free (buf);
  free (off);
  free (ids);
  free (cp);
  return st;
}
