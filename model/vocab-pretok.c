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
  const uint8_t *cls;           /* enum tsri_cp_class */
  const uint8_t *cat;           /* enum tsri_uc */
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

/* The expressions of the families below are those of their tokenizers'
   published definitions (tokenizer.json's pre_tokenizer, as the GGUF
   converters name them in tokenizer.ggml.pre).  Where an expression
   names no Unicode property (\p{...}) its \s is ASCII whitespace, as in
   the reference implementation's expression engine; with properties,
   \s is White_Space.  */

static bool
ascii_space (uint32_t c)
{
  return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Code point ranges, increasing.  */
struct cp_range
{
  uint32_t lo, hi;
};

static bool
in_ranges (const struct cp_range *r, size_t n, uint32_t c)
{
  size_t lo = 0, hi = n;
  while (lo < hi)
    {
      size_t mid = (lo + hi) / 2;
      if (c < r[mid].lo)
        hi = mid;
      else if (c > r[mid].hi)
        lo = mid + 1;
      else
        return true;
    }
  return false;
}

#define N_RANGES(r) (sizeof (r) / sizeof (r)[0])

/* The end of the run from P of code points that IS holds for.  */
static uint32_t
run_while (const struct scan *s, uint32_t p,
           bool (*is) (const struct scan *s, uint32_t p))
{
  while (p < s->end && is (s, p))
    p++;
  return p;
}

/* \s?X+ where S_IS tells the optional whitespace: X at P or after one
   whitespace character.  */
static uint32_t
space_then_run (const struct scan *s, uint32_t p, bool (*space) (uint32_t),
                bool (*is) (const struct scan *s, uint32_t p))
{
  if (space (s->cp[p]) && p + 1 < s->end && is (s, p + 1))
    return run_while (s, p + 1, is) - p;
  if (is (s, p))
    return run_while (s, p, is) - p;
  return 0;
}

static bool
is_white_space (uint32_t c)
{
  return tsri_cp_class (c) == TSRI_CP_SPACE;
}

/* [\r\n] */
static uint32_t
match_newline (const struct scan *s, uint32_t p)
{
  return is_newline (s->cp[p]);
}

/* DeepSeek's [一-龥ࠀ-一가-퟿]+: U+0800..U+9FA5 and U+AC00..U+D7FF.  */
static const struct cp_range ds_cjk[] = {
  { 0x0800, 0x9fa5 }, { 0xac00, 0xd7ff },
};

static bool
is_ds_cjk (const struct scan *s, uint32_t p)
{
  return in_ranges (ds_cjk, N_RANGES (ds_cjk), s->cp[p]);
}

static uint32_t
match_ds_cjk (const struct scan *s, uint32_t p)
{
  return run_while (s, p, is_ds_cjk) - p;
}

/* deepseek-llm's letter class: the cased letters of an older Unicode,
   listed range by range in its expression.  */
static const struct cp_range ds_letters[] = {
  { 0x0041, 0x005a }, { 0x0061, 0x007a }, { 0x00b5, 0x00b5 },
  { 0x00c0, 0x00d6 }, { 0x00d8, 0x00f6 }, { 0x00f8, 0x01ba },
  { 0x01bc, 0x01bf }, { 0x01c4, 0x0293 }, { 0x0295, 0x02af },
  { 0x0370, 0x0373 }, { 0x0376, 0x0377 }, { 0x037b, 0x037d },
  { 0x037f, 0x037f }, { 0x0386, 0x0386 }, { 0x0388, 0x038a },
  { 0x038c, 0x038c }, { 0x038e, 0x03a1 }, { 0x03a3, 0x03f5 },
  { 0x03f7, 0x0481 }, { 0x048a, 0x052f }, { 0x0531, 0x0556 },
  { 0x10a0, 0x10c5 }, { 0x13a0, 0x13f5 }, { 0x13f8, 0x13fd },
  { 0x1c90, 0x1cba }, { 0x1cbd, 0x1cbf }, { 0x1d00, 0x1d2b },
  { 0x1d6b, 0x1d77 }, { 0x1d79, 0x1d9a }, { 0x1e00, 0x1f15 },
  { 0x1f18, 0x1f1d }, { 0x1f20, 0x1f45 }, { 0x1f48, 0x1f4d },
  { 0x1f50, 0x1f57 }, { 0x1f59, 0x1f59 }, { 0x1f5b, 0x1f5b },
  { 0x1f5d, 0x1f5d }, { 0x1f5f, 0x1f7d }, { 0x1f80, 0x1fb4 },
  { 0x1fb6, 0x1fbc }, { 0x1fbe, 0x1fbe }, { 0x1fc2, 0x1fc4 },
  { 0x1fc6, 0x1fcc }, { 0x1fd0, 0x1fd3 }, { 0x1fd6, 0x1fdb },
  { 0x1fe0, 0x1fec }, { 0x1ff2, 0x1ff4 }, { 0x1ff6, 0x1ffc },
  { 0x2102, 0x2102 }, { 0x2107, 0x2107 }, { 0x210a, 0x2113 },
  { 0x2115, 0x2115 }, { 0x2119, 0x211d }, { 0x2124, 0x2124 },
  { 0x2126, 0x2126 }, { 0x2128, 0x2128 }, { 0x212a, 0x212d },
  { 0x212f, 0x2134 }, { 0x2139, 0x2139 }, { 0x213c, 0x213f },
  { 0x2145, 0x2149 }, { 0x214e, 0x214e }, { 0x2183, 0x2184 },
  { 0x2c00, 0x2c7b }, { 0x2c7e, 0x2ce4 }, { 0x2ceb, 0x2cee },
  { 0x2cf2, 0x2cf3 }, { 0xa640, 0xa66d }, { 0xa680, 0xa69b },
  { 0xa722, 0xa76f }, { 0xa771, 0xa787 }, { 0xa78b, 0xa78e },
  { 0xab70, 0xabbf }, { 0xfb00, 0xfb06 }, { 0xfb13, 0xfb17 },
  { 0xff21, 0xff3a }, { 0xff41, 0xff5a }, { 0x10400, 0x1044f },
  { 0x104b0, 0x104d3 }, { 0x104d8, 0x104fb }, { 0x10c80, 0x10cb2 },
  { 0x10cc0, 0x10cf2 }, { 0x118a0, 0x118df }, { 0x1e900, 0x1e943 },
};

static bool
is_ds_letter (const struct scan *s, uint32_t p)
{
  return in_ranges (ds_letters, N_RANGES (ds_letters), s->cp[p]);
}

/* \s?[letters]+ */
static uint32_t
match_ds_letters (const struct scan *s, uint32_t p)
{
  return space_then_run (s, p, ascii_space, is_ds_letter);
}

/* deepseek-llm's [!-/:-~！-／：-～‘-‟　-。]  */
static const struct cp_range ds_punct[] = {
  { 0x21, 0x2f }, { 0x3a, 0x7e }, { 0x2018, 0x201f }, { 0x3000, 0x3002 },
  { 0xff01, 0xff0f }, { 0xff1a, 0xff5e },
};

static bool
is_ds_punct (const struct scan *s, uint32_t p)
{
  return in_ranges (ds_punct, N_RANGES (ds_punct), s->cp[p]);
}

/* \s?[punctuation]+ */
static uint32_t
match_ds_punct (const struct scan *s, uint32_t p)
{
  return space_then_run (s, p, ascii_space, is_ds_punct);
}

/* \s+$ (ASCII whitespace to the end of the piece) */
static uint32_t
match_trailing_space (const struct scan *s, uint32_t p)
{
  uint32_t e = p;
  while (e < s->end && ascii_space (s->cp[e]))
    e++;
  return e > p && e == s->end ? e - p : 0;
}

static bool
is_letter (const struct scan *s, uint32_t p)
{
  return s->cls[p] == TSRI_CP_LETTER;
}

static bool
is_punct_at (const struct scan *s, uint32_t p)
{
  return TSRI_UC_IS_PUNCT (s->cat[p]);
}

/* deepseek-coder: \s?\p{L}+ and \s?\p{P}+ */
static uint32_t
match_space_letters (const struct scan *s, uint32_t p)
{
  return space_then_run (s, p, is_white_space, is_letter);
}

static uint32_t
match_space_punct (const struct scan *s, uint32_t p)
{
  return space_then_run (s, p, is_white_space, is_punct_at);
}

/* Falcon's [\p{P}\$\+<=>\^~\|`]+ */
static uint32_t
match_punct_falcon (const struct scan *s, uint32_t p)
{
  uint32_t e = p;
  while (e < s->end && (tsri_cp_is_punct (s->cp[e])
                        || (s->cp[e] && s->cp[e] < 0x80
                            && strchr ("$+<=>^~|`", (int) s->cp[e]))))
    e++;
  return e - p;
}

/* Poro, BLOOM, GPT-3-Finnish and Viking: ?[^(\s|.,!?…。，、।۔،)]+ --
   a class excluding whitespace, the parentheses and the bar, and
   sentence punctuation of several scripts.  */
static bool
is_poro_word (const struct scan *s, uint32_t p)
{
  uint32_t c = s->cp[p];
  if (c < 0x80)
    return !ascii_space (c) && !strchr ("(|.,!?)", (int) c);
  return c != 0x2026 && c != 0x3002 && c != 0xff0c && c != 0x3001
         && c != 0x0964 && c != 0x06d4 && c != 0x060c;
}

static bool
is_blank (uint32_t c)
{
  return c == ' ';
}

static uint32_t
match_poro (const struct scan *s, uint32_t p)
{
  return space_then_run (s, p, is_blank, is_poro_word);
}

/* DeepSeek-V3's [一-龥぀-ゟ゠-ヿ]+ */
static const struct cp_range ds3_cjk[] = {
  { 0x3040, 0x309f }, { 0x30a0, 0x30ff }, { 0x4e00, 0x9fa5 },
};

static bool
is_ds3_cjk (const struct scan *s, uint32_t p)
{
  return in_ranges (ds3_cjk, N_RANGES (ds3_cjk), s->cp[p]);
}

static uint32_t
match_ds3_cjk (const struct scan *s, uint32_t p)
{
  return run_while (s, p, is_ds3_cjk) - p;
}

static bool
is_ascii_letter (const struct scan *s, uint32_t p)
{
  uint32_t c = s->cp[p] | 0x20;
  return c >= 'a' && c <= 'z';
}

static bool
is_letter_or_mark (const struct scan *s, uint32_t p)
{
  return TSRI_UC_IS_LETTER (s->cat[p]) || TSRI_UC_IS_MARK (s->cat[p]);
}

static bool
is_punct_or_symbol (const struct scan *s, uint32_t p)
{
  return TSRI_UC_IS_PUNCT (s->cat[p]) || TSRI_UC_IS_SYMBOL (s->cat[p]);
}

/* DeepSeek-V3:
   [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
   |[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*
   |\s*[\r\n]+|\s+(?!\S)|\s+  */
static uint32_t
match_deepseek3 (const struct scan *s, uint32_t p)
{
  uint32_t c = s->cp[p];
  if (c > ' ' && c < 0x7f && !is_ascii_letter (s, p) && !(c >= '0' && c <= '9')
      && p + 1 < s->end && is_ascii_letter (s, p + 1))
    return run_while (s, p + 1, is_ascii_letter) - p;
  if (!is_newline (c) && !TSRI_UC_IS_LETTER (s->cat[p])
      && !is_punct_or_symbol (s, p) && p + 1 < s->end
      && is_letter_or_mark (s, p + 1))
    return run_while (s, p + 1, is_letter_or_mark) - p;
  if (is_letter_or_mark (s, p))
    return run_while (s, p, is_letter_or_mark) - p;
  uint32_t q = p + (c == ' ' && p + 1 < s->end);
  if (is_punct_or_symbol (s, q))
    {
      uint32_t e = run_while (s, q, is_punct_or_symbol);
      while (e < s->end && is_newline (s->cp[e]))
        e++;
      return e - p;
    }
  if (s->cls[p] == TSRI_CP_SPACE)
    return spaces (s, p, true);
  return 0;
}

/* \p{N}{1,3} */
static uint32_t
match_numbers3 (const struct scan *s, uint32_t p)
{
  uint32_t n = run_end (s, p, TSRI_CP_NUMBER) - p;
  return n < 3 ? n : 3;
}

/* GPT-4o (o200k) and Tekken (Mistral NeMo): words split by case.
   U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], W = [\p{Ll}\p{Lm}\p{Lo}\p{M}];
     [^\r\n\p{L}\p{N}]?U*W+C?|[^\r\n\p{L}\p{N}]?U+W*C?|\p{N}{1,3}
     | ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
   with C = (?i:'s|'t|'re|'ve|'m|'ll|'d) for GPT-4o (none for Tekken)
   and \p{N} alone for Tekken.  */
static bool
is_upper_ish (const struct scan *s, uint32_t p)
{
  int c = s->cat[p];
  return c == TSRI_UC_Lu || c == TSRI_UC_Lt || c == TSRI_UC_Lm
         || c == TSRI_UC_Lo || TSRI_UC_IS_MARK (c);
}

static bool
is_lower_ish (const struct scan *s, uint32_t p)
{
  int c = s->cat[p];
  return c == TSRI_UC_Ll || c == TSRI_UC_Lm || c == TSRI_UC_Lo
         || TSRI_UC_IS_MARK (c);
}

/* The end of U*W+ from P, or P when it does not match.  U* takes the
   longest run, then gives back characters until one that W+ can start
   on (one in both classes), from which W+ runs.  */
static uint32_t
cased_word (const struct scan *s, uint32_t p)
{
  uint32_t k = run_while (s, p, is_upper_ish);
  for (uint32_t j = k + 1; j-- > p;)
    if (j < s->end && is_lower_ish (s, j))
      return run_while (s, j, is_lower_ish);
  return p;
}

static uint32_t
case_words (const struct scan *s, uint32_t p, bool contractions)
{
  uint32_t c = s->cp[p];
  bool prefix = !is_newline (c) && s->cls[p] != TSRI_CP_LETTER
                && s->cls[p] != TSRI_CP_NUMBER && p + 1 < s->end;
  uint32_t e = 0;
  /* First alternative, with the prefix, then without; then the
     second likewise.  */
  for (int alt = 0; alt < 2 && !e; alt++)
    for (int with = prefix ? 1 : 0; with >= 0 && !e; with--)
      {
        uint32_t q = p + (uint32_t) with;
        if (q >= s->end)
          continue;
        uint32_t m = alt == 0 ? cased_word (s, q)
                     : is_upper_ish (s, q)
                       ? run_while (s, run_while (s, q, is_upper_ish),
                                    is_lower_ish)
                       : q;
        if (m > q)
          e = m;
      }
  if (!e)
    return 0;
  if (contractions && e < s->end)
    e += contraction (s, e, true);
  return e - p;
}

static uint32_t
match_cased (const struct scan *s, uint32_t p, bool contractions,
             uint32_t max_digits)
{
  uint32_t n = case_words (s, p, contractions);
  if (n)
    return n;
  if (s->cls[p] == TSRI_CP_NUMBER)
    {
      n = run_end (s, p, TSRI_CP_NUMBER) - p;
      return n < max_digits ? n : max_digits;
    }
  uint32_t q = p + (s->cp[p] == ' ' && p + 1 < s->end);
  if (s->cls[q] == TSRI_CP_OTHER)
    {
      uint32_t e = run_end (s, q, TSRI_CP_OTHER);
      while (e < s->end && (is_newline (s->cp[e]) || s->cp[e] == '/'))
        e++;
      return e - p;
    }
  return spaces (s, p, true);
}

static uint32_t
match_gpt4o (const struct scan *s, uint32_t p)
{
  return match_cased (s, p, true, 3);
}

static uint32_t
match_tekken (const struct scan *s, uint32_t p)
{
  return match_cased (s, p, false, 1);
}

/* Chameleon: <sentinel:[0-9]+>, then (IMGIMG)((A|B|...|I){1,4})Z, then
   ([\t\n]|    |  ), then \p{N}, then [\p{P}!-/:-@\[-`{-~] (each
   isolated), then GPT-2's expression.  */
static bool
is_ascii_digit (const struct scan *s, uint32_t p)
{
  return s->cp[p] >= '0' && s->cp[p] <= '9';
}

static bool
literal (const struct scan *s, uint32_t p, const char *lit)
{
  for (; *lit; lit++, p++)
    if (p >= s->end || s->cp[p] != (unsigned char) *lit)
      return false;
  return true;
}

static uint32_t
match_sentinel (const struct scan *s, uint32_t p)
{
  if (!literal (s, p, "<sentinel:"))
    return 0;
  uint32_t e = run_while (s, p + 10, is_ascii_digit);
  return e > p + 10 && e < s->end && s->cp[e] == '>' ? e + 1 - p : 0;
}

static bool
is_a_to_i (const struct scan *s, uint32_t p)
{
  return s->cp[p] >= 'A' && s->cp[p] <= 'I';
}

static uint32_t
match_image (const struct scan *s, uint32_t p)
{
  if (!literal (s, p, "IMGIMG"))
    return 0;
  /* {1,4} gives back letters only to find the Z: after a run of more
     than four, the next character is a letter, never Z.  */
  uint32_t r = run_while (s, p + 6, is_a_to_i) - (p + 6);
  uint32_t z = p + 6 + r;
  return r >= 1 && r <= 4 && z < s->end && s->cp[z] == 'Z' ? r + 7 : 0;
}

static uint32_t
match_cham_spaces (const struct scan *s, uint32_t p)
{
  if (s->cp[p] == '\t' || s->cp[p] == '\n')
    return 1;
  return literal (s, p, "    ") ? 4 : literal (s, p, "  ") ? 2 : 0;
}

static uint32_t
match_punct1 (const struct scan *s, uint32_t p)
{
  uint32_t c = s->cp[p];
  return TSRI_UC_IS_PUNCT (s->cat[p])
         || (c > ' ' && c < 0x7f && !is_ascii_letter (s, p)
             && !is_ascii_digit (s, p));
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
static const struct pass pass_falcon[] = {
  { match_punct_falcon, 0 }, { match_gpt2, 0 }, { match_three_digits, 0 },
  { NULL, 0 } };
static const struct pass pass_deepseek_llm[] = {
  { match_newline, 0 }, { match_ds_letters, 0 }, { match_ds_punct, 0 },
  { match_trailing_space, 0 }, { match_ds_cjk, 0 }, { match_numbers, 0 },
  { NULL, 0 } };
static const struct pass pass_deepseek_coder[] = {
  { match_newline, 0 }, { match_space_letters, 0 }, { match_space_punct, 0 },
  { match_ds_cjk, 0 }, { match_number, 0 }, { NULL, 0 } };
static const struct pass pass_deepseek_v3[] = {
  { match_numbers3, 0 }, { match_ds3_cjk, 0 }, { match_deepseek3, 0 },
  { NULL, 0 } };
static const struct pass pass_poro[] = { { match_poro, 0 }, { NULL, 0 } };
static const struct pass pass_viking[] = {
  { match_poro, 0 }, { match_number, 0 }, { NULL, 0 } };
static const struct pass pass_gpt4o[] = { { match_gpt4o, 0 }, { NULL, 0 } };
static const struct pass pass_tekken[] = { { match_tekken, 0 },
                                           { NULL, 0 } };
static const struct pass pass_chameleon[] = {
  { match_sentinel, 0 }, { match_image, 0 }, { match_cham_spaces, 0 },
  { match_number, 0 }, { match_punct1, 0 }, { match_gpt2, 0 },
  { NULL, 0 } };

static const struct pass *
passes_of (enum tsri_vocab_pre pre)
{
  switch (pre)
    {
    case TSRI_PRE_GPT2: return pass_gpt2;
    case TSRI_PRE_LLAMA3: return pass_llama3;
    case TSRI_PRE_QWEN2: return pass_qwen2;
    case TSRI_PRE_SMOLLM: return pass_smollm;
    case TSRI_PRE_FALCON: return pass_falcon;
    case TSRI_PRE_DEEPSEEK_LLM: return pass_deepseek_llm;
    case TSRI_PRE_DEEPSEEK_CODER: return pass_deepseek_coder;
    case TSRI_PRE_DEEPSEEK_V3: return pass_deepseek_v3;
    case TSRI_PRE_PORO: return pass_poro;
    case TSRI_PRE_VIKING: return pass_viking;
    case TSRI_PRE_GPT4O: return pass_gpt4o;
    case TSRI_PRE_TEKKEN: return pass_tekken;
    case TSRI_PRE_CHAMELEON: return pass_chameleon;
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
  w->cat = malloc (cap);
  if (!w->cp || !w->off || !w->cuts[0] || !w->cuts[1] || !w->cls || !w->cat)
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
  free (w->cat);
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
      w->cat[k] = (uint8_t) tsri_cp_category (w->cp[k]);
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
  struct scan sc = { w->cp, w->cls, w->cat, n_cp, 0 };
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
