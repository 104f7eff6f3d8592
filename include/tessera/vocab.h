/* tessera/vocab.h - the tokenizer of a model file.
 *
 * A model file carries its vocabulary in tokenizer.ggml.* keys: the
 * token texts, their types and scores or merges, the special token ids.
 * tsr_vocab_from_gguf reads and checks them once; the vocabulary then
 * turns UTF-8 text into token ids and ids back into text, and outlives
 * the file.  A vocabulary is never changed after it is made: threads
 * may tokenize with the same one at once.
 *
 * Supported (tokenizer.ggml.model):
 *   "llama"  SentencePiece BPE: the text gets a leading space
 *            (tokenizer.ggml.add_space_prefix, default true), spaces
 *            become U+2581, then adjacent symbols, starting from UTF-8
 *            characters, are merged into the vocabulary token of the
 *            highest score (ties: the leftmost pair) until no pair is a
 *            token.  A character that is no token becomes its <0xXX>
 *            byte tokens, else the unknown token.
 *   "gpt2"   byte-level BPE: the text is split into pre-tokens by the
 *            rules of tokenizer.ggml.pre, each byte becomes the
 *            printable character GPT-2 maps it to, then the pair of
 *            the lowest rank in tokenizer.ggml.merges is merged until
 *            none is left.  Pre-tokenizers: "default" (also when the key
 *            is missing), "gpt-2" (also mpt, olmo, jais), "llama-bpe"
 *            (also "llama3", "llama-v3", dbrx, smaug-bpe, chatglm-bpe;
 *            Llama 3: digits in groups of up to three, a pre-token that
 *            is a token is taken whole), "qwen2" (also
 *            "deepseek-r1-qwen", megrez, stablelm2; digits one by one),
 *            "smollm" (also starcoder, refact, command-r, codeshell,
 *            exaone, minerva-7b), "falcon", "deepseek-llm",
 *            "deepseek-coder", "deepseek-v3", "poro-chat" (also bloom,
 *            gpt3-finnish), "viking", "gpt-4o", "tekken" and
 *            "chameleon", each by its family's published expressions.
 *   "bert"   WordPiece: BERT's basic tokenizer (controls dropped,
 *            accents stripped after NFD, lowercase, punctuation and CJK
 *            ideographs as words of their own), then each word's
 *            longest pieces from the left (tokens written as GGUF
 *            converters write them: U+2581 before a word's first
 *            piece); a word with no pieces is the unknown token.  With
 *            add_bos the text is framed [CLS] ... [SEP]
 *            (tokenizer.ggml.bos_token_id and
 *            tokenizer.ggml.seperator_token_id, else those texts).
 *   "t5"     unigram (SentencePiece): normalized by the file's
 *            precompiled character map, spaces as U+2581 (a prefix;
 *            tokenizer.ggml.remove_extra_whitespaces: one before each
 *            word), then the segmentation of the highest total score,
 *            unknown characters as one unknown token per run.
 * Any other model ("rwkv", "none"...) or pre-tokenizer is refused
 * with an error naming it.
 *
 * Unicode: letters, numbers, punctuation, marks and White_Space are
 * classified exactly, from tables generated from the Unicode Character
 * Database (model/gen-ucd.awk).  Text is not Unicode-normalized except
 * by WordPiece.  Special token texts are found leftmost first, the
 * longest where several start at the same byte.
 * tokenizer.ggml.add_eos_token is not applied.  */
#ifndef TESSERA_VOCAB_H
#define TESSERA_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tessera/gguf.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_vocab tsr_vocab;

/* The vocabulary of G's tokenizer.ggml.* keys (copied: G may be closed
   afterwards).  NULL with an error naming the key for a missing or
   malformed key (arrays of other lengths than tokenizer.ggml.tokens,
   a token type outside 0 to 6, a duplicate token, a merge naming a
   text that is no token, a special token id out of range...) or an
   unsupported tokenizer.ggml.model or tokenizer.ggml.pre.  */
tsr_vocab *tsr_vocab_from_gguf (const tsr_gguf *g);
void tsr_vocab_free (tsr_vocab *v);

int32_t tsr_vocab_n_tokens (const tsr_vocab *v);
/* "llama" or "gpt2".  */
const char *tsr_vocab_model (const tsr_vocab *v);
/* The pre-tokenizer of a gpt2 vocabulary ("default", "gpt-2",
   "llama-bpe", "qwen2", "smollm": the canonical name); "" for llama.  */
const char *tsr_vocab_pre (const tsr_vocab *v);

/* Special tokens: tokenizer.ggml.bos_token_id and eos_token_id, else
   SentencePiece's 1 and 2 for llama vocabularies (when they exist);
   -1 when there is none.  */
int32_t tsr_vocab_bos (const tsr_vocab *v);
int32_t tsr_vocab_eos (const tsr_vocab *v);
/* Whether prompts start with BOS: tokenizer.ggml.add_bos_token, else
   true for llama, bert and the llama-bpe pre-tokenizer, false for
   other gpt2 vocabularies.  */
bool tsr_vocab_add_bos (const tsr_vocab *v);
/* Whether ID ends generation: the eos, eot and eom tokens
   (tokenizer.ggml.eos_token_id, eot_token_id, eom_token_id) and the
   tokens whose text marks the end of a turn in the common chat formats
   ("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
   "<|endoftext|>", "<|end_of_text|>", "<|eom_id|>").  */
bool tsr_vocab_is_eog (const tsr_vocab *v, int32_t id);
/* The text of token ID as the file stores it (NUL-terminated, valid
   until tsr_vocab_free), or NULL for a bad id.  */
const char *tsr_vocab_token_text (const tsr_vocab *v, int32_t id);

/* Tokenize LEN bytes of TEXT (UTF-8; invalid bytes are kept as bytes).
   Writes at most MAX ids to TOKENS (may be NULL when MAX is 0) and
   returns the number of tokens the text needs, which may exceed MAX:
   call again with more room.  -1 with an error for a bad argument, a
   text over 512 MiB, a vocabulary without BOS when ADD_BOS is set, or
   a character that has no token, no byte token and no unknown token
   to stand for it.
   ADD_BOS puts BOS first (bert: and the separator [SEP] last).
   User-defined tokens (type 4) written in the
   text always become their ids; control and unknown tokens
   ("<|begin_of_text|>", "<s>"...) only with PARSE_SPECIAL, otherwise
   they are tokenized as plain text.  */
int64_t tsr_vocab_tokenize (const tsr_vocab *v, const char *text, size_t len,
                            bool add_bos, bool parse_special,
                            int32_t *tokens, int64_t max);

/* The bytes token ID stands for in output text: U+2581 becomes a space
   and <0xXX> tokens their byte (llama), the byte-level mapping is
   undone (gpt2).  Control, unknown and unused tokens give "" unless
   SPECIAL, then their text; user-defined tokens give their text.
   Writes at most N bytes to BUF, and a NUL after them when the piece is
   shorter than N; returns the piece's length (more than N: truncated),
   or -1 with an error for a bad id.  */
int64_t tsr_vocab_token_to_piece (const tsr_vocab *v, int32_t id,
                                  bool special, char *buf, size_t n);

/* The text of N_TOKENS tokens: their pieces one after the other, less
   the space a llama vocabulary's add_space_prefix put in front (one
   leading space of the first piece that is not empty).  Written and
   returned as tsr_vocab_token_to_piece does.  */
int64_t tsr_vocab_detokenize (const tsr_vocab *v, const int32_t *tokens,
                              int64_t n_tokens, bool special, char *buf,
                              size_t n);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_VOCAB_H */
