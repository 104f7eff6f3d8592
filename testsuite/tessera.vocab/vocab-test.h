/* vocab-test.h - helpers shared by the tessera.vocab test programs.
 *
 * Each test writes a tiny GGUF file with tokenizer.ggml.* keys through
 * Tessera's writer, reads it back from memory and makes a vocabulary of
 * it (the file is closed before the vocabulary is used: it must not
 * need it).  Expected token ids are worked out by hand from each test's
 * own vocabulary; these helpers only look ids up by text and compare.
 * GPT-2's byte-to-character table is written here again, from its
 * published definition, for building byte-level vocabularies.  */
#ifndef VOCAB_TEST_H
#define VOCAB_TEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tessera-model.h>
#include "tsr-test.h"

/* Token types of tokenizer.ggml.token_type.  */
enum { VT_NORMAL = 1, VT_UNKNOWN = 2, VT_CONTROL = 3, VT_USER = 4,
       VT_UNUSED = 5, VT_BYTE = 6 };

/* Write W to memory, open it, make its vocabulary, close the file and
   free W.  NULL (with tsr_last_error) when the vocabulary is refused.  */
static tsr_vocab *
vt_load (tsr_gguf_writer *w)
{
  void *mem = NULL;
  size_t size = 0;
  tsr_vocab *v = NULL;
  if (tsr_gguf_writer_write_memory (w, &mem, &size) == TSR_OK)
    {
      tsr_gguf *g = tsr_gguf_from_memory (mem, size, NULL);
      if (g)
        v = tsr_vocab_from_gguf (g);
      tsr_gguf_close (g);
    }
  free (mem);
  tsr_gguf_writer_free (w);
  return v;
}

/* The id of the token whose text is S, or -1.  */
static int32_t
vt_id (const tsr_vocab *v, const char *s)
{
  for (int32_t i = 0; i < tsr_vocab_n_tokens (v); i++)
    if (strcmp (tsr_vocab_token_text (v, i), s) == 0)
      return i;
  return -1;
}

/* Print the N ids at T as their texts, for a failure's details.  */
static const char *
vt_show (const tsr_vocab *v, const int32_t *t, int64_t n)
{
  static char buf[1024];
  size_t k = 0;
  buf[0] = '\0';
  for (int64_t i = 0; i < n && k < sizeof buf - 64; i++)
    {
      const char *s = tsr_vocab_token_text (v, t[i]);
      k += (size_t) snprintf (buf + k, sizeof buf - k, "%s%ld'%.40s'",
                              i ? " " : "", (long) t[i], s ? s : "?");
    }
  return buf;
}

/* Tokenize TEXT (LEN bytes) and check that the result is the N ids
   WANT.  */
static void
vt_check_len (const tsr_vocab *v, const char *text, size_t len, bool bos,
              bool special, const int32_t *want, int64_t n,
              const char *what)
{
  int32_t got[256];
  int64_t k = tsr_vocab_tokenize (v, text, len, bos, special, got, 256);
  bool same = k == n;
  for (int64_t i = 0; same && i < n; i++)
    same = got[i] == want[i];
  char wanted[1024];
  snprintf (wanted, sizeof wanted, "%s", vt_show (v, want, n));
  CHECK (same, "%s: tokens", what);
  if (!same)
    printf ("  want %s\n  got  %s%s\n", wanted,
            k < 0 ? tsr_last_error () : vt_show (v, got, k < 256 ? k : 256),
            "");
}

static void
vt_check (const tsr_vocab *v, const char *text, bool bos, bool special,
          const int32_t *want, int64_t n, const char *what)
{
  vt_check_len (v, text, strlen (text), bos, special, want, n, what);
}

/* Tokens to text and back: detokenizing the tokens of TEXT gives TEXT
   (with SPECIAL, special tokens give their text).  */
static void
vt_check_round_trip (const tsr_vocab *v, const char *text, bool special,
                     const char *what)
{
  int32_t t[512];
  char out[2048];
  int64_t k = tsr_vocab_tokenize (v, text, strlen (text), false, special,
                                  t, 512);
  int64_t n = k >= 0 && k <= 512
              ? tsr_vocab_detokenize (v, t, k, special, out, sizeof out) : -1;
  CHECK (n == (int64_t) strlen (text) && strcmp (out, text) == 0,
         "%s: round trip", what);
  if (n >= 0 && n < (int64_t) sizeof out && strcmp (out, text) != 0)
    printf ("  want '%s'\n  got  '%s'\n", text, out);
}

/* The error of the last refusal names every string in the NULL-ended
   list.  */
static void
vt_check_refused (tsr_vocab *v, const char *what, ...)
{
  va_list ap;
  bool named = true;
  va_start (ap, what);
  for (const char *s; (s = va_arg (ap, const char *));)
    named = named && strstr (tsr_last_error (), s) != NULL;
  va_end (ap);
  CHECK (!v && named, "%s: refused, naming the key", what);
  if (v || !named)
    printf ("  error: %s\n", v ? "(none: accepted)" : tsr_last_error ());
  tsr_vocab_free (v);
}

/* GPT-2's byte-level mapping: printable bytes (! to ~, 0xa1 to 0xac,
   0xae to 0xff) stand for the character of the same number, the other
   68 bytes in increasing order for U+0100, U+0101, ...  Appends the
   UTF-8 of byte B's character to S.  */
static void
vt_map_byte (unsigned char b, char **s)
{
  unsigned cp = b;
  if (!((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac)
        || (b >= 0xae)))
    {
      cp = 0x100;
      for (unsigned c = 0; c < b; c++)
        if (!((c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac)
              || (c >= 0xae)))
          cp++;
    }
  if (cp < 0x80)
    *(*s)++ = (char) cp;
  else
    {
      *(*s)++ = (char) (0xc0 | cp >> 6);
      *(*s)++ = (char) (0x80 | (cp & 0x3f));
    }
}

/* The byte-level text of the LEN bytes at S, in a new string.  */
static char *
vt_mapped (const char *s, size_t len)
{
  char *out = malloc (2 * len + 1), *p = out;
  for (size_t i = 0; i < len; i++)
    vt_map_byte ((unsigned char) s[i], &p);
  *p = '\0';
  return out;
}

/* A growing list of strings, no duplicates.  */
struct vt_list
{
  char **s;
  int n, cap;
};

static int
vt_list_find (const struct vt_list *l, const char *s)
{
  for (int i = 0; i < l->n; i++)
    if (strcmp (l->s[i], s) == 0)
      return i;
  return -1;
}

/* Add S (taken) unless present (then freed).  */
static void
vt_list_add (struct vt_list *l, char *s)
{
  if (vt_list_find (l, s) >= 0)
    {
      free (s);
      return;
    }
  if (l->n == l->cap)
    {
      l->cap = l->cap ? 2 * l->cap : 64;
      l->s = realloc (l->s, (size_t) l->cap * sizeof *l->s);
    }
  l->s[l->n++] = s;
}

static void
vt_list_free (struct vt_list *l)
{
  for (int i = 0; i < l->n; i++)
    free (l->s[i]);
  free (l->s);
  *l = (struct vt_list) { 0 };
}

#endif /* VOCAB_TEST_H */
