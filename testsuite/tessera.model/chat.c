/* Area: chat templates (tessera/chat.h) and tessera-run --chat.
   Purpose: a system message, a user turn, an assistant reply and a
   second user turn, with the assistant's opening, come out of each
   recognized template exactly as the families' published templates
   write them (the expected texts below are written out by hand from
   those templates: llama3 trims contents, gemma names the assistant
   "model", trims contents and puts the system text before the first
   user's); detection from template texts by their markers, names,
   refusals (an unknown template, an unknown role, gemma's and
   mistral's late system message, mistral's system message with no
   user message to go into, NULL arguments), the length when the
   buffer is short.  Mistral's expected texts follow the strings of
   docs.mistral.ai's "Tokenization" page (V1, V3, V3-Tekken), DeepSeek
   V3's its published template (system text first, then the turns).
   tessera-run --chat: a file without tokenizer.chat_template is
   refused naming --chat-template; with one named, -p runs one turn and
   standard input a turn per line (the second turn's prompt holds the
   first reply's last token and the turn suffix); an unknown name is
   refused listing the known ones.
   Limitations: the model is random (its replies are not judged); the
   synthesized vocabulary has no chat marker tokens, so markers are
   tokenized as text here.  */
#include "model-test.h"

static const struct tsr_chat_message conv[] = {
  { "system", "Be brief." },
  { "user", " Hi there \n" },
  { "assistant", "Hello." },
  { "user", "Why?" },
};

static const struct
{
  enum tsr_chat_template t;
  const char *want;
} formats[] = {
  { TSR_CHAT_LLAMA3,
    "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nWhy?<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n" },
  { TSR_CHAT_CHATML,
    "<|im_start|>system\nBe brief.<|im_end|>\n"
    "<|im_start|>user\n Hi there \n<|im_end|>\n"
    "<|im_start|>assistant\nHello.<|im_end|>\n"
    "<|im_start|>user\nWhy?<|im_end|>\n"
    "<|im_start|>assistant\n" },
  { TSR_CHAT_GEMMA,
    "<start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n"
    "<start_of_turn>model\nHello.<end_of_turn>\n"
    "<start_of_turn>user\nWhy?<end_of_turn>\n"
    "<start_of_turn>model\n" },
  { TSR_CHAT_PHI3,
    "<|system|>\nBe brief.<|end|>\n"
    "<|user|>\n Hi there \n<|end|>\n"
    "<|assistant|>\nHello.<|end|>\n"
    "<|user|>\nWhy?<|end|>\n"
    "<|assistant|>\n" },
  /* Mistral's (docs.mistral.ai, "Tokenization"): V1 puts the system
     text before the first user message, V3 and V3-Tekken before the
     last; the reply follows [/INST] at once.  */
  { TSR_CHAT_MISTRAL_V1,
    " [INST] Be brief.\n\n Hi there \n [/INST] Hello.</s>"
    " [INST] Why? [/INST]" },
  { TSR_CHAT_MISTRAL_V3,
    "[INST]  Hi there \n[/INST] Hello.</s>"
    "[INST] Be brief.\n\nWhy?[/INST]" },
  { TSR_CHAT_MISTRAL_V3_TEKKEN,
    "[INST] Hi there \n[/INST]Hello.</s>"
    "[INST]Be brief.\n\nWhy?[/INST]" },
  /* DeepSeek V3's: the system text first, no marker of its own.  */
  { TSR_CHAT_DEEPSEEK3,
    "Be brief.<\xef\xbd\x9cUser\xef\xbd\x9c> Hi there \n"
    "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>Hello."
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
    "<\xef\xbd\x9cUser\xef\xbd\x9c>Why?"
    "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>" },
};

static void
check_formats (void)
{
  char buf[1024];
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    {
      const char *name = tsr_chat_template_name (formats[i].t);
      int64_t n = tsr_chat_format (formats[i].t, conv, 4, true, buf,
                                   sizeof buf);
      CHECK (n == (int64_t) strlen (formats[i].want)
             && strcmp (buf, formats[i].want) == 0,
             "%s: the conversation as its template writes it (got %s)",
             name, n >= 0 ? buf : tsr_last_error ());
      char small[16];
      int64_t m = tsr_chat_format (formats[i].t, conv, 4, true, small,
                                   sizeof small);
      CHECK (m == n && strlen (small) == sizeof small - 1
             && strncmp (small, formats[i].want, sizeof small - 1) == 0,
             "%s: a short buffer gets the start and the length needed",
             name);
      CHECK (tsr_chat_template_by_name (name) == formats[i].t,
             "%s: found by its name", name);
    }
  /* Detection from template texts (fragments of the published ones).  */
  static const struct
  {
    const char *text;
    enum tsr_chat_template t;
  } texts[] = {
    { "{% set content = '<|start_header_id|>' + message['role'] + "
      "'<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}",
      TSR_CHAT_LLAMA3 },
    { "{% for message in messages %}{{'<|im_start|>' + message['role'] + "
      "'\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}",
      TSR_CHAT_CHATML },
    { "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + "
      "'<end_of_turn>\n' }}", TSR_CHAT_GEMMA },
    { "{{'<|' + message['role'] + '|>' + '\n' + message['content'] + "
      "'<|end|>\n'}}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}",
      TSR_CHAT_PHI3 },
    { "{{ bos_token }}{% for m in messages %}[INST] {{ m['content'] }} "
      "[/INST]{% endfor %}", TSR_CHAT_UNKNOWN },
    { "{{ ' [INST] ' + message['content'] + ' [/INST]' }}{% elif message"
      "['role'] == 'assistant' %}{{ ' ' + message['content'] + eos_token }}",
      TSR_CHAT_MISTRAL_V1 },
    { "{{- '[INST] ' + message['content'] + '[/INST]' }}", 
      TSR_CHAT_MISTRAL_V3 },
    { "{{- '[INST]' + message['content'] + '[/INST]' }}",
      TSR_CHAT_MISTRAL_V3_TEKKEN },
    { "{{- '[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' }}"
      "{{- '[INST]' + message['content'] + '[/INST]' }}", TSR_CHAT_UNKNOWN },
    { "[INST] <<SYS>>\n' + system + '\n<</SYS>>\n\n' [/INST]",
      TSR_CHAT_UNKNOWN },
    { "{{'<\xef\xbd\x9cUser\xef\xbd\x9c>' + message['content']}}"
      "{{'<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>' + content + "
      "'<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence"
      "\xef\xbd\x9c>'}}", TSR_CHAT_DEEPSEEK3 },
  };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    CHECK (tsr_chat_template_detect (texts[i].text) == texts[i].t,
           "template text %zu detected as %s", i,
           tsr_chat_template_name (texts[i].t));
  CHECK (tsr_chat_template_detect (NULL) == TSR_CHAT_UNKNOWN
         && tsr_chat_template_by_name ("vicuna") == TSR_CHAT_UNKNOWN
         && tsr_chat_template_by_name (NULL) == TSR_CHAT_UNKNOWN,
         "no template from NULL or an unknown name");
  struct tsr_chat_message bad = { "tool", "x" };
  struct tsr_chat_message late[2] = { { "user", "a" }, { "system", "b" } };
  CHECK (tsr_chat_format (TSR_CHAT_UNKNOWN, conv, 1, true, buf, sizeof buf)
         < 0 && strstr (tsr_last_error (), "llama3")
         && tsr_chat_format (TSR_CHAT_CHATML, &bad, 1, true, buf, sizeof buf)
            < 0 && strstr (tsr_last_error (), "tool")
         && tsr_chat_format (TSR_CHAT_GEMMA, late, 2, true, buf, sizeof buf)
            < 0
         && tsr_chat_format (TSR_CHAT_MISTRAL_V3, late, 2, true, buf,
                             sizeof buf) < 0
         && tsr_chat_format (TSR_CHAT_MISTRAL_V1, conv, 1, true, buf,
                             sizeof buf) < 0
         && tsr_chat_format (TSR_CHAT_CHATML, NULL, 1, true, buf, sizeof buf)
            < 0,
         "an unknown template, an unknown role, gemma's and mistral's "
         "late system message, mistral's system message without a user "
         "message and NULL messages are refused (%s)", tsr_last_error ());
  CHECK (tsr_chat_format (TSR_CHAT_PHI3, conv + 1, 1, false, NULL, 0)
         == (int64_t) strlen ("<|user|>\n Hi there \n<|end|>\n"),
         "the length alone, with no buffer");
}

static void
check_tool (void)
{
  char path[4096], cmd[8192];
  if (!mt_synth ("--arch=qwen2 --type=f32", mt_path ("chat", path,
                                                      sizeof path)))
    return;
  snprintf (cmd, sizeof cmd, "'%s/tools/tessera-run' -m '%s' --chat -p hi "
            "-n 2", mt_bld, path);
  int st = mt_shell (cmd);
  CHECK (st != 0 && strstr (mt_out, "--chat-template"), "--chat on a file "
         "without a chat template is refused, naming --chat-template (%s)",
         mt_out);
  snprintf (cmd, sizeof cmd, "'%s/tools/tessera-run' -m '%s' "
            "--chat-template=chatml --system=brief -p hi -n 3 "
            "--ignore-eos", mt_bld, path);
  st = mt_shell (cmd);
  CHECK (st == 0 && strstr (mt_out, "generation: 3 tokens"),
         "--chat-template=chatml -p: one turn (%s)", mt_out);
  snprintf (cmd, sizeof cmd, "printf 'one\\n\\ntwo\\n' | '%s/tools/tessera-run'"
            " -m '%s' --chat-template=gemma -n 2 --ignore-eos", mt_bld, path);
  st = mt_shell (cmd);
  CHECK (st == 0 && strstr (mt_out, "generation: 4 tokens"),
         "--chat from standard input: a turn per non-empty line (%s)",
         mt_out);
  snprintf (cmd, sizeof cmd, "'%s/tools/tessera-run' -m '%s' "
            "--chat-template=vicuna -p hi", mt_bld, path);
  st = mt_shell (cmd);
  CHECK (st != 0 && strstr (mt_out, "llama3, chatml, gemma, phi3"),
         "an unknown --chat-template is refused, listing the known (%s)",
         mt_out);
  unlink (path);
}

int
main (void)
{
  if (!mt_init ())
    return TSR_TEST_EXIT ();
  check_formats ();
  check_tool ();
  return TSR_TEST_EXIT ();
}
