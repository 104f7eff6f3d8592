/* gguf-synth.h - tessera-gguf synth: model files with random weights.
 * Not installed.
 *
 * gguf-synth.c owns the command, the presets, the hyper-parameter keys
 * and the tensors; gguf-synth-vocab.c owns the synthetic tokenizer
 * vocabularies.  Both use only Tessera's public API.  */
#ifndef GGUF_SYNTH_H
#define GGUF_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include <tessera.h>

enum synth_tokenizer
{
  SYNTH_TOK_DEFAULT,            /* the preset's, else the architecture's */
  SYNTH_TOK_NONE,               /* no tokenizer.ggml.* keys */
  SYNTH_TOK_LLAMA,              /* SentencePiece-style ("llama") */
  SYNTH_TOK_GPT2                /* byte-level BPE ("gpt2") */
};

/* The vocabulary to write: KIND (not DEFAULT or NONE) with exactly
   N_VOCAB tokens; PRE is tokenizer.ggml.pre of a gpt2 vocabulary
   ("llama-bpe" or "qwen2").  */
struct synth_vocab_spec
{
  enum synth_tokenizer kind;
  const char *pre;
  int64_t n_vocab;
};

/* The fewest tokens a vocabulary of SPEC's kind and pre holds.  */
int64_t synth_vocab_min (const struct synth_vocab_spec *spec);

/* Add the tokenizer.ggml.* keys of SPEC's vocabulary to W.  TSR_OK, or
   an error status with a message in ERR.  */
int synth_vocab_write (tsr_gguf_writer *w, const struct synth_vocab_spec *spec,
                       char *err, size_t errlen);

/* tessera-gguf synth: ARGV[0] is "synth".  Returns the exit status.  */
int synth_main (int argc, char **argv);

#endif /* GGUF_SYNTH_H */
