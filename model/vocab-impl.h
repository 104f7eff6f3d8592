/* vocab-impl.h - what the vocab*.c files share.  Not installed.
 *
 * A vocabulary owns a copy of every token text (one block, each text
 * NUL-terminated), an open-addressing index from text to id, and for
 * byte-level BPE an index from a merge's pair of token ids to its rank
 * and result.  */
#ifndef TESSERA_VOCAB_IMPL_H
#define TESSERA_VOCAB_IMPL_H

#include "model-lib.h"
#include <tessera/vocab.h>

/* Longest text tsr_vocab_tokenize takes (its indices are 32-bit and
   SentencePiece normalization triples spaces).  */
#define TSRI_VOCAB_MAX_TEXT ((size_t) 512 << 20)

enum tsri_vocab_model
{
  TSRI_VOCAB_SPM,               /* "llama" */
  TSRI_VOCAB_BPE                /* "gpt2" */
};

/* Pre-tokenizers of byte-level BPE (vocab-pretok.c).  */
enum tsri_vocab_pre
{
  TSRI_PRE_NONE,                /* SentencePiece: no pre-tokenizer */
  TSRI_PRE_DEFAULT,
  TSRI_PRE_GPT2,
  TSRI_PRE_LLAMA3,
  TSRI_PRE_QWEN2,
  TSRI_PRE_SMOLLM
};

/* tokenizer.ggml.token_type values.  */
enum tsri_token_type
{
  TSRI_TOKEN_UNDEFINED = 0,
  TSRI_TOKEN_NORMAL = 1,
  TSRI_TOKEN_UNKNOWN = 2,
  TSRI_TOKEN_CONTROL = 3,
  TSRI_TOKEN_USER_DEFINED = 4,
  TSRI_TOKEN_UNUSED = 5,
  TSRI_TOKEN_BYTE = 6
};

struct tsri_vocab_token
{
  uint32_t off, len;            /* text: v->text + off */
  float score;
  uint8_t type;
};

/* A merge: the pair's key (0: empty slot), rank and resulting token.  */
struct tsri_vocab_merge
{
  uint64_t key;
  int32_t rank, result;
};

#define TSRI_VOCAB_MAX_EOG 16

struct tsr_vocab
{
  enum tsri_vocab_model model;
  enum tsri_vocab_pre pre;
  int32_t n_tokens;
  char *text;
  struct tsri_vocab_token *tokens;
  int32_t *slots;               /* text index: id + 1, 0 is empty */
  uint64_t mask;
  struct tsri_vocab_merge *merges;
  uint64_t merge_mask;
  int32_t bos, eos, unk;
  int32_t eog[TSRI_VOCAB_MAX_EOG];
  int n_eog;
  bool add_bos, add_space_prefix, ignore_merges;
  /* llama: the <0xXX> token of each byte; gpt2: the token of the
     character the byte maps to; -1 where there is none.  */
  int32_t byte_token[256];
  /* Tokens found in text before tokenizing (control, unknown and
     user-defined), by first byte, longest first: those starting with
     byte C are special[special_first[C] .. special_first[C + 1] - 1].  */
  int32_t *special;
  int32_t special_first[257];
};

/* vocab.c */
/* The id of the token whose text is the LEN bytes at S, or -1.  */
int32_t tsri_vocab_find (const tsr_vocab *v, const char *s, size_t len);
/* Whether token ID may result from merging text (normal, user-defined
   or undefined: never control, unknown, unused or byte tokens).  */
bool tsri_vocab_mergeable (const tsr_vocab *v, int32_t id);

/* vocab-load.c */
/* Fill V (zeroed) from G; an error names the key.  */
int tsri_vocab_load (tsr_vocab *v, const tsr_gguf *g);
/* The byte of a byte token's text "<0xXX>", or -1.  */
int tsri_vocab_byte_value (const char *s, size_t len);
/* The merge of tokens LEFT and RIGHT, or NULL.  */
const struct tsri_vocab_merge *tsri_vocab_merge (const tsr_vocab *v,
                                                 int32_t left, int32_t right);

/* vocab-unicode.c */
enum tsri_cp_class
{
  TSRI_CP_OTHER,                /* punctuation, symbols, marks, controls */
  TSRI_CP_LETTER,
  TSRI_CP_NUMBER,
  TSRI_CP_SPACE
};
/* Code point standing for a byte that starts no valid UTF-8 sequence.  */
#define TSRI_CP_INVALID 0x110000u
/* Decode the character at S (N >= 1 bytes): its length in bytes, and
   its code point in *CP (TSRI_CP_INVALID, length 1, for an invalid
   or truncated sequence).  */
size_t tsri_utf8_decode (const unsigned char *s, size_t n, uint32_t *cp);
/* Encode CP (at most 0x10FFFF) into OUT: the number of bytes.  */
size_t tsri_utf8_encode (uint32_t cp, char out[4]);
enum tsri_cp_class tsri_cp_class (uint32_t cp);
/* Punctuation (\p{P}), for the "default" pre-tokenizer.  */
bool tsri_cp_is_punct (uint32_t cp);
/* GPT-2's byte-level mapping: the printable character standing for
   byte B, and back (-1 for a character that stands for no byte).  */
uint32_t tsri_byte_to_cp (unsigned char b);
int tsri_cp_to_byte (uint32_t cp);

/* vocab-pretok.c */
/* Scratch of the pre-tokenizer, grown to the longest text seen.  */
struct tsri_pretok
{
  size_t cap;
  uint32_t *cp, *off, *cuts[2];
  uint8_t *cls;
};
void tsri_pretok_free (struct tsri_pretok *w);
/* Split the N bytes at S into the pre-tokens of PRE: returns their
   number and stores in *ENDS the byte offset after each (increasing,
   the last is N).  -1 with an error when out of memory.  */
int64_t tsri_pretokenize (enum tsri_vocab_pre pre, const char *s, size_t n,
                          struct tsri_pretok *w, const uint32_t **ends);

#endif /* TESSERA_VOCAB_IMPL_H */
