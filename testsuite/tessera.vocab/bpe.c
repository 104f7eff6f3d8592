/* Area: tokenizer.ggml.model "gpt2" (byte-level BPE).
   Purpose: merges by rank (the lowest first, ties to the leftmost),
   GPT-2's byte-to-character mapping both ways, pre-tokens as the
   limits of merging, llama-bpe taking a pre-token that is a token
   whole, control tokens with and without PARSE_SPECIAL, the unknown
   token and its absence, BOS defaults, pieces and round trips.
   Limitations: a 32-token vocabulary made for these texts; every
   expected sequence below is worked out by hand from it.  */
#include "vocab-test.h"

#define G "\xc4\xa0"              /* Ġ: the space byte */
#define C "\xc4\x8a"              /* Ċ: the newline byte */

static const char *const toks[] = {
  /* 0 */ "<|endoftext|>", "h", "e", "l", "o", G, "w", "r", "d",
  /* 9 */ "ll", "he", "llo", "hello", G "w", "or", G "wor", "ld",
  /* 17 */ G "world", "\xc3\x83", "\xc2\xa9", "\xc3\x83\xc2\xa9", C,
  /* 22 */ "a", "b", "c", "ab", "abc", "x", "xx", "el", "<unk>", "hel",
};
#define N_TOKS ((int) (sizeof toks / sizeof *toks))

static const char *const merges[] = {
  /* 0 */ "l l", "h e", "ll o", "he llo", G " w", "o r", G "w or",
  /* 7 */ "l d", G "wor ld", "\xc3\x83 \xc2\xa9", "a b", "ab c", "x x",
  /* 13 */ "e l",
};

/* The vocabulary with pre-tokenizer PRE, unknown token UNK and BOS
   (-1: the key left out).  */
static tsr_vocab *
make (const char *pre, int unk, int bos)
{
  int32_t type[N_TOKS];
  for (int i = 0; i < N_TOKS; i++)
    type[i] = i == 0 ? VT_CONTROL : i == 30 ? VT_UNKNOWN : VT_NORMAL;
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_gguf_set_str (w, "tokenizer.ggml.model", "gpt2");
  tsr_gguf_set_str (w, "tokenizer.ggml.pre", pre);
  tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens", toks, N_TOKS);
  tsr_gguf_set_array (w, "tokenizer.ggml.token_type", TSR_GGUF_INT32, type,
                      N_TOKS);
  tsr_gguf_set_array_str (w, "tokenizer.ggml.merges", merges,
                          sizeof merges / sizeof *merges);
  tsr_gguf_set_u32 (w, "tokenizer.ggml.eos_token_id", 0);
  if (unk >= 0)
    tsr_gguf_set_u32 (w, "tokenizer.ggml.unknown_token_id", (uint32_t) unk);
  if (bos >= 0)
    tsr_gguf_set_u32 (w, "tokenizer.ggml.bos_token_id", (uint32_t) bos);
  return vt_load (w);
}

#define WANT(...) (const int32_t[]) { __VA_ARGS__ },                     \
    (int64_t) (sizeof ((const int32_t[]) { __VA_ARGS__ }) / sizeof (int32_t))

static void
check_merges (const tsr_vocab *v)
{
  /* l l (0), h e (1), ll o (2), he llo (3); e l (13) went stale.  */
  vt_check (v, "hello", false, false, WANT (12), "hello");
  /* " world": Ġ w (4), o r (5), Ġw or (6), l d (7), Ġwor ld (8).  */
  vt_check (v, "hello world", false, false, WANT (12, 17), "two words");
  /* l l (rank 0) before e l (rank 13), although e l is further left.  */
  vt_check (v, "ell", false, false, WANT (2, 9), "lowest rank first");
  vt_check (v, "lll", false, false, WANT (9, 3), "ties: leftmost");
  /* No merge crosses pre-tokens: "hello" and "\n".  */
  vt_check (v, "hello\n", false, false, WANT (12, 21), "newline byte");
  /* é is bytes C3 A9, characters Ã ©, merged by rank 9.  */
  vt_check (v, "\xc3\xa9", false, false, WANT (20), "byte mapping");
  vt_check (v, "abc", false, false, WANT (26), "abc");
  vt_check (v, "hel", false, false, WANT (10, 3), "gpt-2 merges hel");
}

static void
check_special (const tsr_vocab *v)
{
  vt_check (v, "hello<|endoftext|>", false, true, WANT (12, 0),
            "parse special");
  /* As text: pre-tokens hello, <|, endoftext, |>; of these bytes only
     e d o e x are tokens, with no merge between them.  */
  vt_check (v, "hello<|endoftext|>", false, false,
            WANT (12, 30, 30, 2, 30, 8, 4, 30, 30, 2, 27, 30, 30, 30),
            "special as text");
  vt_check (v, "z", false, false, WANT (30), "unknown");
}

static void
check_pieces (const tsr_vocab *v)
{
  char buf[32];
  CHECK (tsr_vocab_token_to_piece (v, 17, false, buf, sizeof buf) == 6
         && strcmp (buf, " world") == 0, "piece: Ġ is a space");
  CHECK (tsr_vocab_token_to_piece (v, 20, false, buf, sizeof buf) == 2
         && strcmp (buf, "\xc3\xa9") == 0, "piece: bytes unmapped");
  CHECK (tsr_vocab_token_to_piece (v, 0, false, buf, sizeof buf) == 0
         && tsr_vocab_token_to_piece (v, 0, true, buf, sizeof buf) == 13
         && strcmp (buf, "<|endoftext|>") == 0, "piece: control");
  vt_check_round_trip (v, "hello world\n", false, "words");
  vt_check_round_trip (v, "\xc3\xa9 hello", false, "bytes");
  vt_check_round_trip (v, "hello<|endoftext|>", true, "special");
}

static void
check_queries (const tsr_vocab *v)
{
  CHECK (strcmp (tsr_vocab_model (v), "gpt2") == 0
         && strcmp (tsr_vocab_pre (v), "gpt-2") == 0, "model and pre");
  CHECK (tsr_vocab_bos (v) == -1 && tsr_vocab_eos (v) == 0,
         "no default BOS");
  CHECK (!tsr_vocab_add_bos (v), "gpt-2: no BOS by default");
  CHECK (tsr_vocab_is_eog (v, 0) && !tsr_vocab_is_eog (v, 12),
         "end of generation");
  int32_t t[4];
  CHECK (tsr_vocab_tokenize (v, "hello", 5, true, false, t, 4) == -1
         && strstr (tsr_last_error (), "BOS") != NULL, "BOS asked, none");
  CHECK (tsr_vocab_tokenize (v, "hello", 5, false, false, NULL, 0) == 1,
         "counting without room");
  CHECK (tsr_vocab_tokenize (v, "hello world", 11, false, false, t, 1) == 2
         && t[0] == 12, "result longer than the room");
  CHECK (tsr_vocab_tokenize (v, NULL, 3, false, false, t, 4) == -1,
         "NULL text");
}

static void
check_no_unknown (void)
{
  tsr_vocab *v = make ("gpt-2", -1, -1);
  int32_t t[4];
  CHECK (v && tsr_vocab_tokenize (v, "z", 1, false, false, t, 4) == -1
         && strstr (tsr_last_error (), "0x7A") != NULL,
         "no unknown token: an error naming the byte");
  tsr_vocab_free (v);
}

static void
check_llama_bpe (void)
{
  tsr_vocab *v = make ("llama-bpe", 30, 0);
  CHECK (v && strcmp (tsr_vocab_pre (v), "llama-bpe") == 0,
         "llama-bpe: loads");
  if (!v)
    return;
  /* The pre-token hel is a token: taken whole, merges ignored.  */
  vt_check (v, "hel", false, false, WANT (31), "llama-bpe: whole pre-token");
  vt_check (v, "hello world", true, false, WANT (0, 12, 17),
            "llama-bpe: BOS");
  CHECK (tsr_vocab_add_bos (v), "llama-bpe: BOS by default");
  tsr_vocab_free (v);
}

int
main (void)
{
  tsr_vocab *v = make ("gpt-2", 30, -1);
  CHECK (v != NULL, "loads");
  if (!v)
    {
      printf ("  %s\n", tsr_last_error ());
      return 1;
    }
  check_merges (v);
  check_special (v);
  check_pieces (v);
  check_queries (v);
  tsr_vocab_free (v);
  check_no_unknown ();
  check_llama_bpe ();
  return TSR_TEST_EXIT ();
}
