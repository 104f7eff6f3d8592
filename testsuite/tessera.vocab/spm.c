/* Area: tokenizer.ggml.model "llama" (SentencePiece BPE).
   Purpose: merges by score (the highest first, ties to the leftmost),
   the space prefix and U+2581, byte fallback, the unknown token, BOS,
   control and user-defined tokens written in the text, pieces and
   round trips, the vocabulary's queries.
   Limitations: a 35-token vocabulary made for these texts; every
   expected sequence below is worked out by hand from it.  */
#include "vocab-test.h"

#define SP "\xe2\x96\x81"         /* U+2581, SentencePiece's space */

static const struct
{
  const char *text;
  float score;
  int type;
} toks[] = {
  /* 0 */ { "<unk>", 0, VT_UNKNOWN }, { "<s>", 0, VT_CONTROL },
  /* 2 */ { "</s>", 0, VT_CONTROL }, { "<0x0A>", 0, VT_BYTE },
  /* 4 */ { "<0xC3>", 0, VT_BYTE }, { "<0xA9>", 0, VT_BYTE },
  /* 6 */ { SP, -3, VT_NORMAL }, { "h", -4, VT_NORMAL },
  /* 8 */ { "e", -4, VT_NORMAL }, { "l", -4, VT_NORMAL },
  /* 10 */ { "o", -4, VT_NORMAL }, { "w", -4, VT_NORMAL },
  /* 12 */ { "r", -4, VT_NORMAL }, { "d", -4, VT_NORMAL },
  /* 14 */ { "ll", -1.0f, VT_NORMAL }, { "he", -1.5f, VT_NORMAL },
  /* 16 */ { "llo", -1.2f, VT_NORMAL }, { "hello", -0.5f, VT_NORMAL },
  /* 18 */ { SP "hello", -0.1f, VT_NORMAL }, { SP "w", -2.5f, VT_NORMAL },
  /* 20 */ { "or", -2, VT_NORMAL }, { "ld", -2, VT_NORMAL },
  /* 22 */ { "orld", -1.8f, VT_NORMAL }, { SP "world", -0.2f, VT_NORMAL },
  /* 24 */ { "a", -4, VT_NORMAL }, { "b", -4, VT_NORMAL },
  /* 26 */ { "c", -4, VT_NORMAL }, { "ab", -2, VT_NORMAL },
  /* 28 */ { "bc", -1, VT_NORMAL }, { "x", -4, VT_NORMAL },
  /* 30 */ { "xx", -1, VT_NORMAL }, { "<|user|>", 0, VT_USER },
  /* 32 */ { "<|im_end|>", 0, VT_CONTROL }, { SP SP, -2, VT_NORMAL },
  /* 34 */ { "<unused0>", 0, VT_UNUSED },
};
#define N_TOKS ((int) (sizeof toks / sizeof *toks))

/* The vocabulary, with the space prefix as SPACE_PREFIX says (-1: the
   key left out).  */
static tsr_vocab *
make (int space_prefix)
{
  const char *text[N_TOKS];
  float score[N_TOKS];
  int32_t type[N_TOKS];
  for (int i = 0; i < N_TOKS; i++)
    {
      text[i] = toks[i].text;
      score[i] = toks[i].score;
      type[i] = toks[i].type;
    }
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_gguf_set_str (w, "general.architecture", "llama");
  tsr_gguf_set_str (w, "tokenizer.ggml.model", "llama");
  tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens", text, N_TOKS);
  tsr_gguf_set_array (w, "tokenizer.ggml.scores", TSR_GGUF_FLOAT32, score,
                      N_TOKS);
  tsr_gguf_set_array (w, "tokenizer.ggml.token_type", TSR_GGUF_INT32, type,
                      N_TOKS);
  if (space_prefix >= 0)
    tsr_gguf_set_bool (w, "tokenizer.ggml.add_space_prefix",
                       space_prefix != 0);
  return vt_load (w);
}

#define WANT(...) (const int32_t[]) { __VA_ARGS__ },                     \
    (int64_t) (sizeof ((const int32_t[]) { __VA_ARGS__ }) / sizeof (int32_t))
#define NONE (const int32_t *) NULL, 0

static void
check_merges (const tsr_vocab *v)
{
  /* ▁hello: ll (-1.0), llo (-1.2), he (-1.5), hello, then ▁hello.  */
  vt_check (v, "hello", false, false, WANT (18), "hello");
  /* ▁world: or and ld tie at -2, or (leftmost) first; orld, ▁w (-2.5),
     then ▁world.  */
  vt_check (v, "hello world", false, false, WANT (18, 23), "two words");
  vt_check (v, "hello world", true, false, WANT (1, 18, 23), "BOS");
  /* bc (-1) before ab (-2), although ab is further left.  */
  vt_check (v, "abc", false, false, WANT (6, 24, 28), "higher score first");
  /* Two xx pairs of the same score: the leftmost merges.  */
  vt_check (v, "xxx", false, false, WANT (6, 30, 29), "ties: leftmost");
  /* Two spaces: ▁ a ▁▁ b.  */
  vt_check (v, "a  b", false, false, WANT (6, 24, 33, 25), "spaces");
  vt_check (v, "", false, false, NONE, "empty text");
  vt_check (v, "", true, false, WANT (1), "empty text, BOS");
}

static void
check_fallback (const tsr_vocab *v)
{
  /* é is no token: its bytes C3 A9; newline: <0x0A>.  */
  vt_check (v, "\xc3\xa9\n", false, false, WANT (6, 4, 5, 3),
            "byte fallback");
  /* z has no byte token: the unknown token.  */
  vt_check (v, "z", false, false, WANT (6, 0), "unknown");
  /* An invalid byte (0xA9 alone) has a byte token.  */
  vt_check (v, "\xa9", false, false, WANT (6, 5), "invalid UTF-8 byte");
}

static void
check_special (const tsr_vocab *v)
{
  vt_check (v, "hello</s>", false, true, WANT (18, 2), "parse special");
  /* Not parsed: < / s > are four characters with no token.  */
  vt_check (v, "hello</s>", false, false, WANT (18, 0, 0, 0, 0),
            "special as text");
  /* The text after a special token gets the space prefix too.  */
  vt_check (v, "</s>hello", false, true, WANT (2, 18), "prefix after special");
  /* User-defined tokens are found even without PARSE_SPECIAL.  */
  vt_check (v, "<|user|>hello", false, false, WANT (31, 18), "user-defined");
}

static void
check_piece (const tsr_vocab *v, int32_t id, bool special, const char *want,
             const char *what)
{
  char buf[32];
  int64_t n = tsr_vocab_token_to_piece (v, id, special, buf, sizeof buf);
  CHECK (n == (int64_t) strlen (want) && strcmp (buf, want) == 0,
         "piece: %s", what);
}

static void
check_pieces (const tsr_vocab *v)
{
  check_piece (v, 18, false, " hello", "U+2581 is a space");
  check_piece (v, 3, false, "\n", "byte token");
  check_piece (v, 2, false, "", "control");
  check_piece (v, 2, true, "</s>", "control, special");
  check_piece (v, 0, false, "", "unknown");
  check_piece (v, 0, true, "<unk>", "unknown, special");
  check_piece (v, 31, false, "<|user|>", "user-defined");
  check_piece (v, 34, false, "", "unused");
  char buf[8] = "XXXXXXX";
  CHECK (tsr_vocab_token_to_piece (v, 18, false, buf, 3) == 6
         && memcmp (buf, " heXXXX", 7) == 0, "piece: truncated");
  CHECK (tsr_vocab_token_to_piece (v, N_TOKS, false, buf, 8) == -1
         && strstr (tsr_last_error (), "35") != NULL, "piece: bad id");
  CHECK (tsr_vocab_token_to_piece (v, -1, false, buf, 8) == -1,
         "piece: negative id");
  vt_check_round_trip (v, "hello world", false, "words");
  vt_check_round_trip (v, "\xc3\xa9\n", false, "bytes");
  vt_check_round_trip (v, "a  b", false, "spaces");
  vt_check_round_trip (v, "hello</s>", true, "special");
}

static void
check_queries (const tsr_vocab *v)
{
  CHECK (tsr_vocab_n_tokens (v) == N_TOKS, "n_tokens");
  CHECK (strcmp (tsr_vocab_model (v), "llama") == 0
         && strcmp (tsr_vocab_pre (v), "") == 0, "model");
  CHECK (tsr_vocab_bos (v) == 1 && tsr_vocab_eos (v) == 2,
         "default BOS and EOS");
  CHECK (tsr_vocab_add_bos (v), "add_bos by default");
  CHECK (tsr_vocab_is_eog (v, 2) && tsr_vocab_is_eog (v, 32)
         && !tsr_vocab_is_eog (v, 18) && !tsr_vocab_is_eog (v, -1)
         && !tsr_vocab_is_eog (v, 1), "end of generation");
  CHECK (strcmp (tsr_vocab_token_text (v, 18), SP "hello") == 0
         && tsr_vocab_token_text (v, N_TOKS) == NULL, "token text");
}

static void
check_no_prefix (void)
{
  tsr_vocab *v = make (0);
  CHECK (v != NULL, "no space prefix: loads");
  if (!v)
    return;
  vt_check (v, "hello", false, false, WANT (17), "no space prefix");
  vt_check (v, "hello world", false, false, WANT (17, 23),
            "no space prefix, two words");
  vt_check_round_trip (v, " hello world", false, "no space prefix");
  tsr_vocab_free (v);
}

int
main (void)
{
  tsr_vocab *v = make (-1);
  CHECK (v != NULL, "loads");
  if (!v)
    {
      printf ("  %s\n", tsr_last_error ());
      return 1;
    }
  check_merges (v);
  check_fallback (v);
  check_special (v);
  check_pieces (v);
  check_queries (v);
  tsr_vocab_free (v);
  check_no_prefix ();
  return TSR_TEST_EXIT ();
}
