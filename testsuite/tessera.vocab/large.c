/* Area: vocabularies of the size real models ship (Llama 3: 128256
   tokens, 280000 merges; here 128256 tokens and 128000 merges).
   Purpose: such a vocabulary loads and tokenizes correctly; the load
   time is printed (as a note, not checked: machines differ).
   Limitations: generated tokens: the 256 byte characters, then every
   2- and 3-letter word of a to z, then 4-letter words in order, each
   made by one merge of its first letters and its last letter (2-letter
   merges first, in order, then 3-letter, then 4-letter).  */
#include <time.h>
#include "vocab-test.h"

#define N_TOKENS 128256
#define N_WORDS (N_TOKENS - 256)

/* Word K of the generated list (K < N_WORDS) into S.  */
static void
word (int k, char *s)
{
  int len = k < 676 ? 2 : k < 676 + 17576 ? 3 : 4;
  k -= len == 2 ? 0 : len == 3 ? 676 : 676 + 17576;
  for (int i = len - 1; i >= 0; i--, k /= 26)
    s[i] = (char) ('a' + k % 26);
  s[len] = '\0';
}

static tsr_gguf_writer *
build (void)
{
  char **tok = malloc (N_TOKENS * sizeof *tok);
  char **mrg = malloc (N_WORDS * sizeof *mrg);
  for (int b = 0; b < 256; b++)
    {
      char c = (char) b;
      tok[b] = vt_mapped (&c, 1);
    }
  for (int k = 0; k < N_WORDS; k++)
    {
      char w[8];
      word (k, w);
      size_t n = strlen (w);
      tok[256 + k] = strdup (w);
      mrg[k] = malloc (n + 2);
      memcpy (mrg[k], w, n - 1);
      mrg[k][n - 1] = ' ';
      memcpy (mrg[k] + n, w + n - 1, 2);
    }
  tsr_gguf_writer *wr = tsr_gguf_writer_new ();
  tsr_gguf_set_str (wr, "tokenizer.ggml.model", "gpt2");
  tsr_gguf_set_str (wr, "tokenizer.ggml.pre", "llama-bpe");
  tsr_gguf_set_array_str (wr, "tokenizer.ggml.tokens",
                          (const char *const *) tok, N_TOKENS);
  tsr_gguf_set_array_str (wr, "tokenizer.ggml.merges",
                          (const char *const *) mrg, N_WORDS);
  tsr_gguf_set_u32 (wr, "tokenizer.ggml.bos_token_id", 256);
  for (int i = 0; i < N_TOKENS; i++)
    free (tok[i]);
  for (int i = 0; i < N_WORDS; i++)
    free (mrg[i]);
  free (tok);
  free (mrg);
  return wr;
}

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define WANT(...) (const int32_t[]) { __VA_ARGS__ },                     \
    (int64_t) (sizeof ((const int32_t[]) { __VA_ARGS__ }) / sizeof (int32_t))

/* The id of generated word W.  */
static int32_t
id_of (const char *w)
{
  int n = (int) strlen (w), k = 0;
  for (int i = 0; i < n; i++)
    k = k * 26 + (w[i] - 'a');
  return 256 + k + (n >= 3 ? 676 : 0) + (n >= 4 ? 17576 : 0);
}

int
main (void)
{
  tsr_gguf_writer *w = build ();
  void *mem = NULL;
  size_t size = 0;
  tsr_gguf_writer_write_memory (w, &mem, &size);
  tsr_gguf_writer_free (w);
  tsr_gguf *g = tsr_gguf_from_memory (mem, size, NULL);
  double t0 = now ();
  tsr_vocab *v = g ? tsr_vocab_from_gguf (g) : NULL;
  double t1 = now ();
  tsr_gguf_close (g);
  free (mem);
  CHECK (v && tsr_vocab_n_tokens (v) == N_TOKENS, "loads %d tokens",
         N_TOKENS);
  if (!v)
    {
      printf ("  %s\n", tsr_last_error ());
      return 1;
    }
  printf ("note: %d tokens and %d merges loaded in %.1f ms\n", N_TOKENS,
          N_WORDS, (t1 - t0) * 1e3);
  /* Words that are tokens are taken whole by llama-bpe.  */
  vt_check (v, "abc", false, false, WANT (id_of ("abc")), "3-letter word");
  vt_check (v, "abcd", false, false, WANT (id_of ("abcd")), "4-letter word");
  /* "gzzz" is past the 4-letter words: g z (rank 181) merges first,
     then the first z z (675); gz zz is no merge, and gz z went stale.  */
  vt_check (v, "gzzz", true, false, WANT (256, id_of ("gz"), id_of ("zz")),
            "merges by rank");
  /* " zzz" is no token: the first z z (675), then zz z (a 3-letter
     merge); the space byte has no merge.  */
  char sp[4];
  char *p = sp;
  vt_map_byte (' ', &p);
  *p = '\0';
  vt_check (v, "a zzz", false, false,
            WANT (vt_id (v, "a"), vt_id (v, sp), id_of ("zzz")),
            "space byte");
  vt_check_round_trip (v, "the quick brown fox jumps over a lazy dog\n",
                       false, "sentence");
  tsr_vocab_free (v);
  return TSR_TEST_EXIT ();
}
