/* tessera/chat.h - chat templates: a conversation as the text a model
 * was trained on, for the families whose template is recognized by
 * its marker tokens (no general Jinja engine).
 *
 *   llama3  <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|>
 *           (content trimmed); the reply opens with the assistant's
 *           header.  Llama 3, 3.1, 3.2, 3.3 (whose templates also
 *           write a dated system message of their own: give one as
 *           the first message if the model wants it).
 *   chatml  <|im_start|>ROLE\nCONTENT<|im_end|>\n; the reply opens with
 *           <|im_start|>assistant\n.  Qwen 1.5 to 3, Yi, SmolLM2...
 *           (Qwen 2.5's template adds a default system message when
 *           there is none: give it.)
 *   gemma   <start_of_turn>ROLE\nCONTENT<end_of_turn>\n, ROLE user or
 *           model (for assistant), content trimmed; a system message
 *           goes before the first user message's content, followed by
 *           a blank line.  Gemma, Gemma 2, Gemma 3.
 *   phi3    <|ROLE|>\nCONTENT<|end|>\n; the reply opens with
 *           <|assistant|>\n.  Phi-3, Phi-3.5.
 *   mistral-v1         " [INST] USER [/INST]", " ASSISTANT</s>"; a
 *           system message goes before the first user message's
 *           content, then a blank line.  Mistral 7B Instruct v0.1 and
 *           v0.2, Mixtral 8x7B Instruct (Mistral's tokenizer V1).
 *   mistral-v3         "[INST] USER[/INST]", " ASSISTANT</s>"; a system
 *           message goes before the last user message's content, then
 *           a blank line.  Mistral 7B Instruct v0.3, Mixtral 8x22B
 *           Instruct, Codestral 22B, Mistral Large 2407 (tokenizer V3).
 *   mistral-v3-tekken  "[INST]USER[/INST]", "ASSISTANT</s>"; the system
 *           message as for mistral-v3.  Mistral NeMo, Pixtral 12B,
 *           Ministral 8B (tokenizer V3-Tekken).  (Templates with
 *           [SYSTEM_PROMPT], Mistral's V7, are not recognized.)
 *   deepseek3  the system messages first (joined by a blank line), then
 *           "<|User|>USER", "<|Assistant|>ASSISTANT<|end_of_sentence|>"
 *           (the bars are U+FF5C FULLWIDTH VERTICAL LINE, the
 *           underscores U+2581 LOWER ONE EIGHTH BLOCK); the reply opens
 *           with <|Assistant|>.  DeepSeek V3, R1 and its distilled
 *           models.
 *
 * The beginning-of-sequence token is not part of the text: the
 * tokenizer adds it (tsr_vocab_add_bos).  Tokenize the result with
 * parse_special true, so that the markers become their tokens.  */
#ifndef TESSERA_CHAT_H
#define TESSERA_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tsr_chat_template
{
  TSR_CHAT_UNKNOWN = 0,
  TSR_CHAT_LLAMA3,
  TSR_CHAT_CHATML,
  TSR_CHAT_GEMMA,
  TSR_CHAT_PHI3,
  TSR_CHAT_MISTRAL_V1,
  TSR_CHAT_MISTRAL_V3,
  TSR_CHAT_MISTRAL_V3_TEKKEN,
  TSR_CHAT_DEEPSEEK3
};

struct tsr_chat_message
{
  const char *role;             /* "system", "user" or "assistant" */
  const char *content;
};

/* The template a model file's tokenizer.chat_template text is, by the
   markers it writes; TSR_CHAT_UNKNOWN when none matches (or NULL).  */
enum tsr_chat_template tsr_chat_template_detect (const char *text);
/* By name ("llama3", "chatml", "gemma", "phi3", "mistral-v1",
   "mistral-v3", "mistral-v3-tekken", "deepseek3"); TSR_CHAT_UNKNOWN for
   another.  */
enum tsr_chat_template tsr_chat_template_by_name (const char *name);
/* The name of T ("unknown" for TSR_CHAT_UNKNOWN), and the names
   recognized, for messages: "llama3, chatml, gemma, phi3, ...".  */
const char *tsr_chat_template_name (enum tsr_chat_template t);
const char *tsr_chat_template_names (void);
/* What follows a reply's end-of-generation token in T's text before
   the next turn ("\n" for chatml, gemma and phi3, "" for the others).  */
const char *tsr_chat_turn_suffix (enum tsr_chat_template t);

/* MSGS[0..N) formatted with T into BUF (at most CAP bytes, with a NUL
   when it fits); with ADD_ASSISTANT the opening of the assistant's
   reply is appended.  Returns the text's length (more than CAP - 1:
   call again with a larger buffer), or -1 with tsr_last_error: an
   unknown template, a role other than system, user and assistant, a
   system message after the first (gemma), NULL arguments.  */
int64_t tsr_chat_format (enum tsr_chat_template t,
                         const struct tsr_chat_message *msgs, int n,
                         bool add_assistant, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_CHAT_H */
