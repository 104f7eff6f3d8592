/* Area: the unigram tokenizer of "t5" vocabularies (model/vocab-ugm.c).
   Purpose: SentencePiece's unigram rules on small vocabularies: the
   segmentation of the highest total score, not the greedy one; the
   unknown token where no token is a character, consecutive ones merged;
   spaces as U+2581 with the prefix, or with
   tokenizer.ggml.remove_extra_whitespaces one mark before each word;
   the precompiled character map (a darts-clone double array built here
   by hand: the longest key wins, a key without a leaf falls back to the
   character); invalid UTF-8 as U+FFFD; detokenizing.  Expected ids are
   derived by hand from the scores.  A map whose size field exceeds the
   array, and a vocabulary without an unknown token, are refused.
   Limitations: no real T5 vocabulary or NFKC map.  */
#include "vocab-test.h"

#define M "\xe2\x96\x81"        /* U+2581 */

static const char *const toks[] = {
  "<pad>", "</s>", "<unk>", M, M "hello", M "he", "llo", M "world",
  M "a", M "b", "b", M "A", "!",
};
static const float scores[] = {
  0, 0, 0, -3.0f, -1.0f, -0.5f, -0.4f, -1.0f,
  -1.0f, -1.0f, -1.0f, -1.0f, -1.0f,
};
#define N_TOKS ((int) (sizeof toks / sizeof toks[0]))

/* A darts-clone double array with the keys "\uFF21" -> "A" and "!!" ->
   "!" (and "!" a prefix without a value), then the replacements.  */
#define UNITS 4096
static uint32_t units[UNITS];
static uint32_t next_base = 1280;

static bool
insert (const char *key, uint32_t value)
{
  uint32_t node = 1024;                 /* the root's children */
  size_t n = strlen (key);
  for (size_t i = 0; i < n; i++)
    {
      uint32_t c = (unsigned char) key[i], idx = node ^ c, off;
      if (idx >= UNITS || next_base + 256 > UNITS)
        return false;
      if (!units[idx])
        {
          off = idx ^ next_base;
          next_base += 256;
          units[idx] = c | off << 10;
        }
      else if ((units[idx] & 0x800000ffu) != c)
        return false;                   /* a collision: change the keys */
      off = units[idx] >> 10;
      node = idx ^ off;
      if (i + 1 == n)
        {
          units[idx] |= 1u << 8;
          units[node] = 1u << 31 | value;
        }
    }
  return true;
}

static size_t
charsmap (unsigned char *out, uint32_t blob_field_extra)
{
  static const char repl[] = "A\0!";   /* offsets 0 and 2 */
  memset (units, 0, sizeof units);
  next_base = 1280;
  units[0] = 1024u << 10;
  bool ok = insert ("\xef\xbc\xa1", 0) && insert ("!!", 2);
  CHECK (ok, "the test's double array is built");
  uint32_t blob = UNITS * 4 + blob_field_extra;
  size_t k = 0;
  for (int b = 0; b < 4; b++)
    out[k++] = (unsigned char) (blob >> (8 * b));
  for (int i = 0; i < UNITS; i++)
    for (int b = 0; b < 4; b++)
      out[k++] = (unsigned char) (units[i] >> (8 * b));
  memcpy (out + k, repl, sizeof repl);
  return k + sizeof repl;
}

static tsr_gguf_writer *
writer (bool remove_ws, bool with_map, uint32_t extra)
{
  int32_t type[N_TOKS];
  for (int i = 0; i < N_TOKS; i++)
    type[i] = i < 3 ? (i == 2 ? VT_UNKNOWN : VT_CONTROL) : VT_NORMAL;
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_gguf_set_str (w, "tokenizer.ggml.model", "t5");
  tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens", toks, N_TOKS);
  tsr_gguf_set_array (w, "tokenizer.ggml.scores", TSR_GGUF_FLOAT32, scores,
                      N_TOKS);
  tsr_gguf_set_array (w, "tokenizer.ggml.token_type", TSR_GGUF_INT32, type,
                      N_TOKS);
  if (remove_ws)
    tsr_gguf_set_bool (w, "tokenizer.ggml.remove_extra_whitespaces", true);
  if (with_map)
    {
      static unsigned char map[4 + UNITS * 4 + 8];
      size_t n = charsmap (map, extra);
      tsr_gguf_set_array (w, "tokenizer.ggml.precompiled_charsmap",
                          TSR_GGUF_UINT8, map, n);
    }
  return w;
}

#define IDS(...) (const int32_t[]) { __VA_ARGS__ }
#define N_IDS(...) ((int64_t) (sizeof (IDS (__VA_ARGS__)) / sizeof (int32_t)))
#define EXPECT(v, text, what, ...)                                        \
  vt_check (v, text, false, false, IDS (__VA_ARGS__), N_IDS (__VA_ARGS__), \
            what)

int
main (void)
{
  tsr_vocab *v = vt_load (writer (false, true, 0));
  CHECK (v != NULL, "a t5 vocabulary loads: %s", v ? "" : tsr_last_error ());
  if (!v)
    return TSR_TEST_EXIT ();
  CHECK (strcmp (tsr_vocab_model (v), "t5") == 0 && !tsr_vocab_add_bos (v)
         && tsr_vocab_eos (v) == 1, "model t5, no BOS, EOS </s>");
  /* "\u2581hello" scores -1; "\u2581he" + "llo" -0.9: the better total.  */
  EXPECT (v, "hello", "the best total, not the longest token", 5, 6);
  EXPECT (v, "hello world", "words", 5, 6, 7);
  /* Two snowmen have no token: one unknown token for both.  */
  EXPECT (v, "hello \xe2\x98\x83\xe2\x98\x83 world", "unknown characters "
          "merged", 5, 6, 3, 2, 7);
  EXPECT (v, "\xef\xbc\xa1" "b!!!", "the character map: longest key, a "
          "prefix without value", 11, 10, 12, 12);
  EXPECT (v, "b\xff", "invalid UTF-8 is U+FFFD, unknown", 9, 2);
  EXPECT (v, " a  b", "spaces kept without removal", 3, 8, 3, 9);
  int32_t t[] = { 5, 6, 7 };
  char out[64];
  int64_t n = tsr_vocab_detokenize (v, t, 3, false, out, sizeof out);
  CHECK (n >= 0 && strcmp (out, "hello world") == 0,
         "detokenize: marks become spaces, the prefix goes ('%s')",
         n >= 0 ? out : tsr_last_error ());
  tsr_vocab_free (v);

  v = vt_load (writer (true, false, 0));
  CHECK (v != NULL, "with remove_extra_whitespaces: loads");
  if (v)
    {
      EXPECT (v, "  a   b  ", "one mark before each word", 8, 9);
      tsr_vocab_free (v);
    }

  vt_check_refused (vt_load (writer (false, true, 100000)),
                    "a map's size field past its end",
                    "tokenizer.ggml.precompiled_charsmap", NULL);
  /* A damaged map (random units and replacements) gives some
     normalization, never a read outside it (run under ASan).  */
  int damaged_ok = 0;
  for (unsigned seed = 1; seed <= 50; seed++)
    {
      tsr_gguf_writer *dw = writer (false, false, 0);
      static unsigned char map[4 + UNITS * 4 + 8];
      size_t n = charsmap (map, 0);
      tsr_test_seed (seed);
      for (int k = 0; k < 400; k++)
        {
          size_t at = 4 + (size_t) tsr_test_uniform (0, (float) (n - 4));
          map[at < n ? at : n - 1] = (unsigned char) tsr_test_uniform (0, 256);
        }
      tsr_gguf_set_array (dw, "tokenizer.ggml.precompiled_charsmap",
                          TSR_GGUF_UINT8, map, n);
      tsr_vocab *d = vt_load (dw);
      int32_t got[64];
      damaged_ok += d && tsr_vocab_tokenize (d, "\xef\xbc\xa1!! hello", 12,
                                            false, false, got, 64) > 0;
      tsr_vocab_free (d);
    }
  CHECK (damaged_ok == 50, "50 damaged maps: loaded and tokenized (%d)",
         damaged_ok);

  /* Two tokens: T5's unknown id 2 does not exist.  */
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_gguf_set_str (w, "tokenizer.ggml.model", "t5");
  tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens", toks + 3, 2);
  tsr_gguf_set_array (w, "tokenizer.ggml.scores", TSR_GGUF_FLOAT32, scores,
                      2);
  vt_check_refused (vt_load (w), "no unknown token",
                    "tokenizer.ggml.unknown_token_id", NULL);
  return TSR_TEST_EXIT ();
}
