/* vocab-pretok.c - pre-tokenizers of byte-level BPE vocabularies.
 *
 * Owns: splitting text into pre-tokens as the regular expressions of
 * the supported tokenizer.ggml.pre values do, with hand-written
 * scanners over code points instead of a regex engine.
 * A pre-tokenizer is a list of passes.  Each pass splits every piece
 * the previous one left (the first pass: the whole text) and sees only
 * that piece: a lookahead stops at its end.  A pass either covers its
 * piece with consecutive matches (the big alternations), or isolates
 * the matches of a small pattern, the text between two matches making
 * a piece of its own.  Time and memory are linear in the text.  */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "vocab-impl.h"

/* One piece of code points being scanned.  */
struct scan
{
  const uint32_t *cp;
  const uint8_t *cls;
  uint32_t end;                 /* the piece's end; positions are < end */
  uint32_t max_digits;          /* \p{N}{1,max_digits} */
};

/* The length of what the pattern matches at P, 0 for no match.  */
typedef uint32_t (*match_fn) (const struct scan *s, uint32_t p);

static bool
is_newline (uint32_t c)
{
  return c == '\r' || c == '\n';
}

/* The end of the run of characters of class CLS from P.  */
static uint32_t
run_end (const struct scan *s, uint32_t p, int cls)
{
  while (p < s->end && s->cls[p] == cls)
    p++;
  return p;
}

static uint32_t
fold (uint32_t c, bool caseless)
{
  return caseless && c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 's|'t|'re|'ve|'m|'ll|'d, ASCII case ignored when CASELESS.  */
static uint32_t
contraction (const struct scan *s, uint32_t p, bool caseless)
{
  if (s->cp[p] != '\'' || p + 1 >= s->end)
    return 0;
  uint32_t a = fold (s->cp[p + 1], caseless);
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return 2;
  if (p + 2 >= s->end)
    return 0;
  uint32_t b = fold (s->cp[p + 2], caseless);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e')
      || (a == 'l' && b == 'l'))
    return 3;
  return 0;
}

/* Whitespace at P: \s*[\r\n]+ when NEWLINES (through the last newline
   of the run), then \s+(?!\S) (the run but its last character when
   something follows) and \s+.  */
static uint32_t
spaces (const struct scan *s, uint32_t p, bool newlines)
{
  uint32_t e = run_end (s, p, TSRI_CP_SPACE);
  if (newlines)
    for (uint32_t q = e; q > p; q--)
      if (is_newline (s->cp[q - 1]))
        return q - p;
  if (e - p > 1 && e < s->end)
    return e - p - 1;
  return e > p ? e - p : 1;
}

/* GPT-2:
   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
   |\s+(?!\S)|\s+  */
static uint32_t
match_gpt2 (const struct scan *s, uint32_t p)
{
  uint32_t n = contraction (s, p, false);
  if (n)
    return n;
  uint32_t q = p + (s->cp[p] == ' ' && p + 1 < s->end);
  int cls = s->cls[q];
  if (cls != TSRI_CP_SPACE)
    return run_end (s, q, cls) - p;
  return spaces (s, p, false);
}

/* Llama 3 (max_digits 3) and Qwen2 (1):
   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+  */
static uint32_t
match_llama3 (const struct scan *s, uint32_t p)
{
  uint32_t n = contraction (s, p, true);
  if (n)
    return n;
  uint32_t c = s->cp[p];
  int cls = s->cls[p];
  if (cls == TSRI_CP_LETTER)
    return run_end (s, p, TSRI_CP_LETTER) - p;
  if (!is_newline (c) && cls != TSRI_CP_NUMBER && p + 1 < s->end
      && s->cls[p + 1] == TSRI_CP_LETTER)
    return run_end (s, p + 1, TSRI_CP_LETTER) - p;
  if (cls == TSRI_CP_NUMBER)
    {
      n = run_end (s, p, TSRI_CP_NUMBER) - p;
      return n < s->max_digits ? n : s->max_digits;
    }
  uint32_t q = p + (c == ' ' && p + 1 < s->end);
  if (s->cls[q] == TSRI_CP_OTHER)
    {
      uint32_t e = run_end (s, q, TSRI_CP_OTHER);
      while (e < s->end && is_newline (s->cp[e]))
        e++;
      return e - p;
    }
  return spaces (s, p, true);
}

/* \p{N} */
static uint32_t
match_number (const struct scan *s, uint32_t p)
{
  return s->cls[p] == TSRI_CP_NUMBER;
}

/* \p{N}+ */
static uint32_t
match_numbers (const struct scan *s, uint32_t p)
{
  return run_end (s, p, TSRI_CP_NUMBER) - p;
}

/* [0-9][0-9][0-9] */
static uint32_t
match_three_digits (const struct scan *s, uint32_t p)
{
  if (p + 3 > s->end)
    return 0;
  for (uint32_t i = p; i < p + 3; i++)
    if (s->cp[i] < '0' || s->cp[i] > '9')
      return 0;
  return 3;
}

/* [\p{P}\$\+<=>\^~\|]+ */
static uint32_t
match_punct (const struct scan *s, uint32_t p)
{
  uint32_t e = p;
  while (e < s->end && (tsri_cp_is_punct (s->cp[e])
                        || (s->cp[e] && s->cp[e] < 0x80
                            && strchr ("$+<=>^~|", (int) s->cp[e]))))
    e++;
  return e - p;
}

struct pass
{
  match_fn match;
  uint32_t max_digits;
};

/* The passes of each pre-tokenizer, ended by a NULL match.  */
static const struct pass pass_default[] = {
  { match_punct, 0 }, { match_gpt2, 0 }, { match_numbers, 0 },
  { match_three_digits, 0 }, { NULL, 0 } };
static const struct pass pass_gpt2[] = { { match_gpt2, 0 }, { NULL, 0 } };
static const struct pass pass_llama3[] = { { match_llama3, 3 },
                                           { NULL, 0 } };
static const struct pass pass_qwen2[] = { { match_llama3, 1 },
                                          { NULL, 0 } };
static const struct pass pass_smollm[] = {
  { match_number, 0 }, { match_gpt2, 0 }, { NULL, 0 } };

static const struct pass *
passes_of (enum tsri_vocab_pre pre)
{
  switch (pre)
    {
    case TSRI_PRE_GPT2: return pass_gpt2;
    case TSRI_PRE_LLAMA3: return pass_llama3;
    case TSRI_PRE_QWEN2: return pass_qwen2;
    case TSRI_PRE_SMOLLM: return pass_smollm;
    default: return pass_default;
    }
}

/* Split the pieces ending at IN[0 .. N_IN - 1] by PASS into OUT; the
   number of pieces.  */
static size_t
run_pass (const struct pass *pass, struct scan *s, const uint32_t *in,
          size_t n_in, uint32_t *out)
{
  size_t n_out = 0;
  uint32_t start = 0;
  s->max_digits = pass->max_digits;
  for (size_t i = 0; i < n_in; i++)
    {
      s->end = in[i];
      uint32_t gap = start, p = start;
      while (p < s->end)
        {
          uint32_t m = pass->match (s, p);
          if (!m)
            {
              p++;
              continue;
            }
          if (gap < p)
            out[n_out++] = p;
          p += m;
          out[n_out++] = p;
          gap = p;
        }
      if (gap < s->end)
        out[n_out++] = s->end;
      start = s->end;
    }
  return n_out;
}

static int
reserve (struct tsri_pretok *w, size_t n)
{
  if (n + 1 <= w->cap)
    return TSR_OK;
  size_t cap = n + 1 > 2 * w->cap ? n + 1 : 2 * w->cap;
  tsri_pretok_free (w);
  w->cp = malloc (cap * sizeof *w->cp);
  w->off = malloc (cap * sizeof *w->off);
  w->cuts[0] = malloc (cap * sizeof *w->cuts[0]);
  w->cuts[1] = malloc (cap * sizeof *w->cuts[1]);
  w->cls = malloc (cap);
  if (!w->cp || !w->off || !w->cuts[0] || !w->cuts[1] || !w->cls)
    {
      tsri_pretok_free (w);
      return tsr_set_error (TSR_ERR_NO_MEMORY, "tokenize: out of memory");
    }
  w->cap = cap;
  return TSR_OK;
}

void
tsri_pretok_free (struct tsri_pretok *w)
{
  free (w->cp);
  free (w->off);
  free (w->cuts[0]);
  free (w->cuts[1]);
  free (w->cls);
  *w = (struct tsri_pretok) { 0 };
}

/* Decode S into W's code points, their byte offsets and classes: the
   number of code points.  */
static uint32_t
decode (const char *s, size_t n, struct tsri_pretok *w)
{
  uint32_t k = 0;
  for (size_t i = 0; i < n; k++)
    {
      w->off[k] = (uint32_t) i;
      i += tsri_utf8_decode ((const unsigned char *) s + i, n - i,
                             &w->cp[k]);
      w->cls[k] = (uint8_t) tsri_cp_class (w->cp[k]);
    }
  w->off[k] = (uint32_t) n;
  return k;
}

int64_t
tsri_pretokenize (enum tsri_vocab_pre pre, const char *s, size_t n,
                  struct tsri_pretok *w, const uint32_t **ends)
{
  if (reserve (w, n) != TSR_OK)
    return -1;
  uint32_t n_cp = decode (s, n, w);
  struct scan sc = { w->cp, w->cls, n_cp, 0 };
  size_t n_cuts = 0, cur = 0;
  if (n_cp)
    w->cuts[cur][n_cuts++] = n_cp;
  for (const struct pass *p = passes_of (pre); p->match; p++, cur ^= 1)
    n_cuts = run_pass (p, &sc, w->cuts[cur], n_cuts, w->cuts[cur ^ 1]);
  for (size_t i = 0; i < n_cuts; i++)
    w->cuts[cur][i] = w->off[w->cuts[cur][i]];
  *ends = w->cuts[cur];
  return (int64_t) n_cuts;
}
