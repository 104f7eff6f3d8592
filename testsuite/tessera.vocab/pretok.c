/* Area: the pre-tokenizers of "gpt2" vocabularies (tokenizer.ggml.pre).
   Purpose: the splits of "gpt-2", "llama-bpe", "qwen2", "smollm" and
   "default", and of the families that split as they do (mpt, olmo,
   jais as gpt-2; starcoder, refact, command-r, codeshell, exaone,
   minerva-7b as smollm; megrez as qwen2), on contractions, letters, digits, punctuation, whitespace
   and newlines, ASCII and not.  For each text the expected pre-tokens
   are written by hand from the pre-tokenizer's regular expression.
   The test then builds a vocabulary in which each expected pre-token
   merges into one token whatever the order of the merges, and in which
   two neighbouring pre-tokens would merge as well, had they been one:
   the tokens show the split, too fine or too coarse.
   The families with expressions of their own (falcon, deepseek-llm,
   deepseek-coder, deepseek-v3, poro-chat/bloom/gpt3-finnish, viking,
   gpt-4o, tekken, chameleon) get texts with CJK, Greek, Cyrillic, Hebrew, emoji
   with a skin tone, combining marks, control characters and invalid
   UTF-8, and the classes of a few characters outside the main scripts
   (Tifinagh, Ol Chiki, a Roman numeral) are checked through llama-bpe
   and qwen2.
   Limitations: the texts are short.  */
#include "vocab-test.h"

/* Add the byte-level text of S[A..B) to L.  */
static char *
sub (const char *s, size_t a, size_t b)
{
  return vt_mapped (s + a, b - a);
}

/* Tokens and merges for every substring of P and every way to cut it
   in two.  */
static void
add_piece (struct vt_list *tok, struct vt_list *mrg, const char *p)
{
  size_t n = strlen (p);
  for (size_t a = 0; a < n; a++)
    for (size_t b = a + 1; b <= n; b++)
      {
        vt_list_add (tok, sub (p, a, b));
        for (size_t c = a + 1; c < b; c++)
          {
            char *x = sub (p, a, c), *y = sub (p, c, b);
            char *m = malloc (strlen (x) + strlen (y) + 2);
            sprintf (m, "%s %s", x, y);
            vt_list_add (mrg, m);
            free (x);
            free (y);
          }
      }
}

/* Tokens and merges that join any end of P to any start of Q.  */
static void
add_trap (struct vt_list *tok, struct vt_list *mrg, const char *p,
          const char *q)
{
  size_t np = strlen (p), nq = strlen (q);
  for (size_t a = 0; a < np; a++)
    for (size_t b = 1; b <= nq; b++)
      {
        char *x = sub (p, a, np), *y = sub (q, 0, b);
        char *t = malloc (strlen (x) + strlen (y) + 2);
        sprintf (t, "%s%s", x, y);
        vt_list_add (tok, t);
        t = malloc (strlen (x) + strlen (y) + 2);
        sprintf (t, "%s %s", x, y);
        vt_list_add (mrg, t);
        free (x);
        free (y);
      }
}

static tsr_vocab *
make (const char *pre, const char *const *pieces)
{
  struct vt_list tok = { 0 }, mrg = { 0 };
  for (int b = 0; b < 256; b++)
    {
      char c = (char) b;
      vt_list_add (&tok, vt_mapped (&c, 1));
    }
  for (int i = 0; pieces[i]; i++)
    {
      add_piece (&tok, &mrg, pieces[i]);
      if (pieces[i + 1])
        add_trap (&tok, &mrg, pieces[i], pieces[i + 1]);
    }
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_gguf_set_str (w, "tokenizer.ggml.model", "gpt2");
  if (pre)
    tsr_gguf_set_str (w, "tokenizer.ggml.pre", pre);
  tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens",
                          (const char *const *) tok.s, (uint64_t) tok.n);
  tsr_gguf_set_array_str (w, "tokenizer.ggml.merges",
                          (const char *const *) mrg.s, (uint64_t) mrg.n);
  vt_list_free (&tok);
  vt_list_free (&mrg);
  return vt_load (w);
}

/* PRE (NULL: no key) splits TEXT into PIECES (NULL-ended).  */
static void
check_split (const char *pre, const char *text, const char *const *pieces,
             const char *what)
{
  tsr_vocab *v = make (pre, pieces);
  if (!v)
    {
      CHECK (0, "%s: %s", pre ? pre : "no pre", what);
      printf ("  %s\n", tsr_last_error ());
      return;
    }
  int32_t want[64];
  int n = 0;
  for (; pieces[n]; n++)
    {
      char *m = vt_mapped (pieces[n], strlen (pieces[n]));
      want[n] = vt_id (v, m);
      free (m);
    }
  char desc[128];
  snprintf (desc, sizeof desc, "%s: %s", pre ? pre : "no pre", what);
  vt_check (v, text, false, false, want, n, desc);
  tsr_vocab_free (v);
}

#define SPLIT(pre, text, what, ...)                                       \
  check_split (pre, text, (const char *const[]) { __VA_ARGS__, NULL }, what)

static void
check_gpt2 (void)
{
  SPLIT ("gpt-2", "I'm here, you're 42  x\n", "contractions, spaces",
         "I", "'m", " here", ",", " you", "'re", " 42", " ", " x", "\n");
  /* Contractions are lower case only.  */
  SPLIT ("gpt-2", "DON'T", "upper-case contraction", "DON", "'", "T");
  SPLIT ("gpt-2", "a 123 45", "numbers", "a", " 123", " 45");
  /* Trailing whitespace stays together.  */
  SPLIT ("gpt-2", "x  \n", "trailing whitespace", "x", "  \n");
  SPLIT ("gpt-2", "h\xc3\xa9llo w\xc3\xb6rld", "non-ASCII letters",
         "h\xc3\xa9llo", " w\xc3\xb6rld");
  /* U+3000 is whitespace, but only ASCII space joins what follows.  */
  SPLIT ("gpt-2", "a\xe3\x80\x80" "b", "non-ASCII space",
         "a", "\xe3\x80\x80", "b");
  /* A combining accent is no letter: it goes with the punctuation.  */
  SPLIT ("gpt-2", "e\xcc\x81!", "combining mark", "e", "\xcc\x81!");
}

static void
check_llama3 (void)
{
  SPLIT ("llama-bpe", "I'M 12345 hello!!\n\n  world", "mixed",
         "I", "'M", " ", "123", "45", " hello", "!!\n\n", " ", " world");
  SPLIT ("llama-bpe", "a \n b", "spaces around a newline",
         "a", " \n", " b");
  SPLIT ("llama-bpe", "(hello) it's", "punctuation joins letters",
         "(hello", ")", " it", "'s");
  SPLIT ("llama-bpe", "x\t\ty", "tabs", "x", "\t", "\ty");
  SPLIT ("llama-bpe", "1234567", "digits by three", "123", "456", "7");
  SPLIT ("llama-bpe", "a\r\nb", "CR LF", "a", "\r\n", "b");
}

static void
check_qwen2 (void)
{
  SPLIT ("qwen2", "abc 2024!", "digits one by one",
         "abc", " ", "2", "0", "2", "4", "!");
  SPLIT ("qwen2", "I'M (x)", "contraction, punctuation",
         "I", "'M", " (", "x", ")");
}

static void
check_smollm (void)
{
  /* Digits are split off first, then the GPT-2 rules apply.  */
  SPLIT ("smollm", "ab 12 cd", "digits first", "ab", " ", "1", "2", " cd");
  SPLIT ("smollm", "x1y", "digit inside a word", "x", "1", "y");
}

/* Families that split as gpt-2, smollm or qwen2 do: the same texts,
   the same pre-tokens.  */
static void
check_aliases (void)
{
  static const char *const as_llama3[] = { "dbrx", "smaug-bpe",
                                           "chatglm-bpe" };
  for (size_t i = 0; i < sizeof as_llama3 / sizeof *as_llama3; i++)
    SPLIT (as_llama3[i], "1234567", "as llama-bpe", "123", "456", "7");
  SPLIT ("stablelm2", "abc 2024!", "as qwen2", "abc", " ", "2", "0", "2",
         "4", "!");
  static const char *const as_gpt2[] = { "mpt", "olmo", "jais" };
  static const char *const as_smollm[] = { "starcoder", "refact",
                                           "command-r", "codeshell",
                                           "exaone", "minerva-7b" };
  for (size_t i = 0; i < sizeof as_gpt2 / sizeof *as_gpt2; i++)
    SPLIT (as_gpt2[i], "I'm here, you're 42  x\n", "as gpt-2",
           "I", "'m", " here", ",", " you", "'re", " 42", " ", " x", "\n");
  for (size_t i = 0; i < sizeof as_smollm / sizeof *as_smollm; i++)
    SPLIT (as_smollm[i], "ab 12 cd", "as smollm", "ab", " ", "1", "2",
           " cd");
  SPLIT ("megrez", "abc 2024!", "as qwen2", "abc", " ", "2", "0", "2", "4",
         "!");
}

static void
check_default (void)
{
  /* Punctuation runs first, then GPT-2, numbers, then three digits.  */
  SPLIT ("default", "it's 12345 a+b", "all passes",
         "it", "'", "s", " ", "123", "45", " a", "+", "b");
  SPLIT ("default", "a ,b", "punctuation before GPT-2", "a", " ", ",", "b");
  SPLIT (NULL, "x==y", "missing key is default", "x", "==", "y");
}

/* Letters, numbers and punctuation of every script, from the UCD:
   Tifinagh letters, a Roman numeral, Ol Chiki digits, a full-width
   question mark.  */
static void
check_unicode_classes (void)
{
  SPLIT ("llama-bpe", " \xe2\xb5\x9c\xe2\xb4\xb0!", "Tifinagh letters",
         " \xe2\xb5\x9c\xe2\xb4\xb0", "!");
  SPLIT ("qwen2", "x\xe2\x85\xab\xe1\xb1\x91y", "Nl and Nd digits",
         "x", "\xe2\x85\xab", "\xe1\xb1\x91", "y");
  SPLIT ("default", "a\xef\xbc\x9f\xef\xbc\x9f" "b",
         "full-width punctuation", "a", "\xef\xbc\x9f\xef\xbc\x9f", "b");
}

/* Falcon: the default's passes without \p{N}+, with the backtick.  */
static void
check_falcon (void)
{
  SPLIT ("falcon", "it's 12345 a+b", "all passes",
         "it", "'", "s", " ", "123", "45", " a", "+", "b");
  SPLIT ("falcon", "a `b", "backtick isolated", "a", " ", "`", "b");
  SPLIT ("default", "a `b", "backtick with GPT-2", "a", " `", "b");
  SPLIT ("falcon", "x 12", "numbers stay with their space", "x", " 12");
  SPLIT ("default", "x 12", "numbers split from their space", "x", " ",
         "12");
}

static void
check_deepseek (void)
{
  SPLIT ("deepseek-llm", "Hello world!\n\n123 \xe4\xbd\xa0\xe5\xa5\xbd",
         "newlines, letters, numbers, CJK",
         "Hello", " world", "!", "\n", "\n", "123", " ",
         "\xe4\xbd\xa0\xe5\xa5\xbd");
  /* Greek and Cyrillic are in the letter class; trailing spaces.  */
  SPLIT ("deepseek-llm", "\xce\xb1\xce\xb2\xce\xb3, \xd0\xb3\xd0\xb4\xd0\xb5?  ",
         "Greek, Cyrillic, trailing spaces",
         "\xce\xb1\xce\xb2\xce\xb3", ",", " \xd0\xb3\xd0\xb4\xd0\xb5", "?",
         "  ");
  /* Hebrew is in no class of its expressions: it stays with the space
     before it.  */
  SPLIT ("deepseek-llm", "a \xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d b",
         "a script outside the classes",
         "a", " \xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d", " b");
  /* U+212A KELVIN SIGN and U+1F7D are listed as themselves.  */
  SPLIT ("deepseek-llm", "\xe2\x84\xaa\xe1\xbd\xbd!", "Kelvin sign, omega "
         "with oxia", "\xe2\x84\xaa\xe1\xbd\xbd", "!");
  SPLIT ("deepseek-llm", "a\xff" "b", "invalid UTF-8", "a", "\xff", "b");

  SPLIT ("deepseek-coder",
         "def f(x):\n  return x+1 # \xe6\xb3\xa8\xe9\x87\x8a",
         "code with a comment", "def", " f", "(", "x", "):", "\n", " ",
         " return", " x", "+", "1", " #", " ", "\xe6\xb3\xa8\xe9\x87\x8a");
  SPLIT ("deepseek-coder", "ab12\xe2\x82\xac", "digits one by one, a "
         "currency sign", "ab", "1", "2", "\xe2\x82\xac");

  SPLIT ("deepseek-v3", "Hello, World! 12345 \xe6\x97\xa5\xe6\x9c\xac"
         "\xe8\xaa\x9e\xe3\x81\xa7\xe3\x81\x99 .NET\n\nok",
         "mixed", "Hello", ",", " World", "!", " ", "123", "45", " ",
         "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xa7\xe3\x81\x99",
         " .", "NET", "\n\n", "ok");
  SPLIT ("deepseek-v3", "x.NET", "ASCII punctuation joins letters", "x",
         ".NET");
  SPLIT ("deepseek-v3", "a\x01" "b", "a control character before letters",
         "a", "\x01" "b");
}

static void
check_poro (void)
{
  static const char *const as_poro[] = { "poro-chat", "bloom",
                                         "gpt3-finnish" };
  for (size_t i = 0; i < sizeof as_poro / sizeof *as_poro; i++)
    SPLIT (as_poro[i], "Hei, maailma!  (testi) a|b\xe2\x80\xa6" "c",
           "sentence punctuation, parentheses, bar",
           "Hei", ",", " maailma", "!  (", "testi", ")", " a", "|", "b",
           "\xe2\x80\xa6", "c");
  SPLIT ("viking", "abc123 4", "then digits", "abc", "1", "2", "3", " ", "4");
}

static void
check_cased (void)
{
  SPLIT ("gpt-4o", "HelloWorld I'm THE best's 12345 x/y\n", "case, "
         "contractions, digits", "Hello", "World", " I'm", " THE",
         " best's", " ", "123", "45", " x", "/y", "\n");
  SPLIT ("gpt-4o", "a!!/\n", "punctuation, slash and newline", "a",
         "!!/\n");
  /* A combining accent belongs to the word; an emoji and its skin
     tone are one piece.  */
  SPLIT ("gpt-4o", "e\xcc\x81t\xc3\xa9 \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbdok",
         "combining mark, emoji modifier", "e\xcc\x81t\xc3\xa9",
         " \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", "ok");
  SPLIT ("tekken", "HelloWorld 2024 I'm", "case, single digits, no "
         "contractions", "Hello", "World", " ", "2", "0", "2", "4", " I",
         "'m");
}

/* Chameleon: sentinels and image codes isolated, tabs, newlines and
   runs of two or four spaces, digits and punctuation alone, then
   GPT-2's rules (which then split the sentinel's digits and brackets
   too).  */
static void
check_chameleon (void)
{
  SPLIT ("chameleon", "<sentinel:12>IMGIMGABZx  y\t1,", "sentinel, image "
         "code, spaces, digits, punctuation", "<", "sentinel", ":", "1",
         "2", ">", "IMGIMGABZ", "x", "  ", "y", "\t", "1", ",");
  SPLIT ("chameleon", "IMGIMGAAAAAZ", "more than four image letters",
         "IMGIMGAAAAAZ");
  SPLIT ("chameleon", "a     b", "four spaces, then GPT-2's", "a", "    ",
         " b");
}

/* Every pre-tokenizer on a corpus of hard strings: byte-level BPE
   promises that detokenizing the tokens gives the text back, whatever
   the pieces; and a word of 20 000 letters is split in linear time
   (the test would time out otherwise).  */
static void
check_round_trips (void)
{
  static const char *const pres[] = {
    "default", "gpt-2", "llama-bpe", "qwen2", "smollm", "falcon",
    "deepseek-llm", "deepseek-coder", "deepseek-v3", "poro-chat", "viking",
    "gpt-4o", "tekken", "chameleon",
  };
  static const char *const corpus[] = {
    "   leading and trailing   ", "tabs\t\tand\r\nCRLF\n\n\n",
    "1234567890 3.14159 1,000,000", "I'M you'RE we'll they'd",
    "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96\xe7\x95\x8c\xe3\x80\x82",
    "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd \xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9",
    "e\xcc\x81\xcc\x82 n\xcc\x83", "\xff\xfe bad \xc3 utf8 \xe2\x82",
    "\x01\x02 ctrl \x7f \x1b[0m", "<sentinel:3> IMGIMGAZ ..., !?",
    "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d \xd8\xb3\xd9\x84\xd8\xa7\xd9\x85",
  };
  struct vt_list tok = { 0 }, mrg = { 0 };
  for (int b = 0; b < 256; b++)
    {
      char c = (char) b;
      vt_list_add (&tok, vt_mapped (&c, 1));
    }
  size_t long_n = 20000;
  char *longw = malloc (long_n + 1);
  memset (longw, 'q', long_n);
  longw[long_n] = '\0';
  for (size_t i = 0; i < sizeof pres / sizeof *pres; i++)
    {
      tsr_gguf_writer *w = tsr_gguf_writer_new ();
      tsr_gguf_set_str (w, "tokenizer.ggml.model", "gpt2");
      tsr_gguf_set_str (w, "tokenizer.ggml.pre", pres[i]);
      tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens",
                              (const char *const *) tok.s,
                              (uint64_t) tok.n);
      tsr_gguf_set_array_str (w, "tokenizer.ggml.merges", NULL, 0);
      tsr_vocab *v = vt_load (w);
      CHECK (v != NULL, "%s: loads", pres[i]);
      if (!v)
        continue;
      for (size_t k = 0; k < sizeof corpus / sizeof *corpus; k++)
        {
          char what[96];
          snprintf (what, sizeof what, "%s: hard string %zu", pres[i], k);
          vt_check_round_trip (v, corpus[k], false, what);
        }
      int64_t n = tsr_vocab_tokenize (v, longw, long_n, false, false, NULL,
                                      0);
      CHECK (n == (int64_t) long_n, "%s: a word of %zu letters, one token "
             "a byte (%lld)", pres[i], long_n, (long long) n);
      tsr_vocab_free (v);
    }
  free (longw);
  vt_list_free (&tok);
  vt_list_free (&mrg);
}

int
main (void)
{
  check_round_trips ();
  check_unicode_classes ();
  check_falcon ();
  check_deepseek ();
  check_poro ();
  check_cased ();
  check_chameleon ();
  check_gpt2 ();
  check_llama3 ();
  check_qwen2 ();
  check_smollm ();
  check_aliases ();
  check_default ();
  return TSR_TEST_EXIT ();
}
