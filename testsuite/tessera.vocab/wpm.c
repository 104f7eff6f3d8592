/* Area: WordPiece, the tokenizer of "bert" vocabularies
   (model/vocab-wpm.c).
   Purpose: BERT's rules on a small vocabulary written as GGUF files
   write BERT's (word-start pieces marked with U+2581, continuations
   bare): lowercasing, accents stripped after canonical decomposition,
   the final sigma, punctuation and CJK ideographs as words of their
   own, controls and invalid UTF-8 dropped, White_Space between words,
   the longest piece first without backtracking (a word whose rest has
   no piece is [UNK], as is a word of more than 100 characters);
   add_bos frames the text with [CLS] ... [SEP]; special token texts;
   detokenizing joins continuations and spaces words.  Expected ids are
   written by hand from the rules.  A vocabulary without an unknown
   token is refused.
   Limitations: no real BERT vocabulary (the acceptance suite's bge
   file is not in the tree).  */
#include "vocab-test.h"

static const char *const toks[] = {
  "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
  "\xe2\x96\x81hello", "\xe2\x96\x81world", "\xe2\x96\x81,", "\xe2\x96\x81!",
  "\xe2\x96\x81un", "aff", "able", "\xe2\x96\x81unab",
  "\xe2\x96\x81" "cafe", "\xe2\x96\x81\xcf\x83\xce\xbf\xcf\x86\xce\xbf\xcf\x82",
  "\xe2\x96\x81\xe4\xb8\xad", "\xe2\x96\x81\xe5\x9b\xbd", "\xe2\x96\x81" "ab",
  "\xe2\x96\x81" "c", "\xe2\x96\x81" "don", "\xe2\x96\x81'", "\xe2\x96\x81t",
  "\xe2\x96\x81" "a", "a",
};
#define N_TOKS ((int) (sizeof toks / sizeof toks[0]))

static tsr_gguf_writer *
writer (bool with_unk)
{
  int32_t type[N_TOKS];
  for (int i = 0; i < N_TOKS; i++)
    type[i] = i < 5 ? (i == 1 ? VT_UNKNOWN : VT_CONTROL) : VT_NORMAL;
  const char *text[N_TOKS];
  for (int i = 0; i < N_TOKS; i++)
    text[i] = i == 1 && !with_unk ? "[NOUNK]" : toks[i];
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_gguf_set_str (w, "tokenizer.ggml.model", "bert");
  tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens", text, N_TOKS);
  tsr_gguf_set_array (w, "tokenizer.ggml.token_type", TSR_GGUF_INT32, type,
                      N_TOKS);
  return w;
}

#define IDS(...) (const int32_t[]) { __VA_ARGS__ }
#define N_IDS(...) ((int64_t) (sizeof (IDS (__VA_ARGS__)) / sizeof (int32_t)))
#define EXPECT(v, text, bos, what, ...)                                   \
  vt_check (v, text, bos, true, IDS (__VA_ARGS__), N_IDS (__VA_ARGS__), what)

int
main (void)
{
  tsr_vocab *v = vt_load (writer (true));
  CHECK (v != NULL, "a bert vocabulary loads: %s", v ? "" : tsr_last_error ());
  if (!v)
    return TSR_TEST_EXIT ();
  CHECK (strcmp (tsr_vocab_model (v), "bert") == 0
         && tsr_vocab_add_bos (v) && tsr_vocab_bos (v) == 2,
         "its model is bert, [CLS] begins a text");
  EXPECT (v, "Hello, World!", false, "lowercase, punctuation", 5, 7, 6, 8);
  EXPECT (v, "Hello world", true, "[CLS] and [SEP] around", 2, 5, 6, 3);
  EXPECT (v, "unaffable", false, "longest pieces from the left", 9, 10,
          11);
  /* "\u2581unab" is the longest start of "unable"; "le" has no piece,
     and WordPiece does not go back to "\u2581un" + "able".  */
  EXPECT (v, "unable", false, "no backtracking: [UNK]", 1);
  EXPECT (v, "Caf\xc3\xa9", false, "accent stripped (precomposed)", 13);
  EXPECT (v, "Cafe\xcc\x81", false, "accent stripped (combining)", 13);
  EXPECT (v, "\xce\xa3\xce\x9f\xce\xa6\xce\x9f\xce\xa3", false,
          "final sigma", 14);
  EXPECT (v, "\xe4\xb8\xad\xe5\x9b\xbd", false, "CJK ideographs alone", 15,
          16);
  EXPECT (v, "a\x01" "b\tc", false, "controls dropped, tab separates", 17,
          18);
  EXPECT (v, "a\xff" "b", false, "invalid UTF-8 dropped", 17);
  EXPECT (v, "don't", false, "apostrophe alone", 19, 20, 21);
  EXPECT (v, "zzz \xf0\x9f\x91\x8d", false, "unknown words", 1, 1);
  char longw[160];
  memset (longw, 'a', 101);
  longw[101] = '\0';
  EXPECT (v, longw, false, "101 characters: [UNK]", 1);
  longw[100] = '\0';
  int32_t want100[100];
  want100[0] = 22;
  for (int i = 1; i < 100; i++)
    want100[i] = 23;
  vt_check (v, longw, false, true, want100, 100, "100 characters: pieces");
  EXPECT (v, "[CLS]hello[SEP]", false, "special texts", 2, 5, 3);

  int32_t t[] = { 5, 7, 6, 9, 10, 11 };
  char out[128];
  int64_t n = tsr_vocab_detokenize (v, t, 6, false, out, sizeof out);
  CHECK (n >= 0 && strcmp (out, "hello , world unaffable") == 0,
         "detokenize: words spaced, continuations joined ('%s')",
         n >= 0 ? out : tsr_last_error ());
  tsr_vocab_free (v);

  vt_check_refused (vt_load (writer (false)), "no unknown token",
                    "tokenizer.ggml.unknown_token_id", "[UNK]", NULL);
  return TSR_TEST_EXIT ();
}
