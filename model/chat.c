/* chat.c - chat templates (tessera/chat.h): each family's turn format,
 * written out from its published template, and its detection by the
 * marker tokens of a file's tokenizer.chat_template.  */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "model-lib.h"
#include <tessera/chat.h>

static const char *const names[] = {
  [TSR_CHAT_UNKNOWN] = "unknown", [TSR_CHAT_LLAMA3] = "llama3",
  [TSR_CHAT_CHATML] = "chatml", [TSR_CHAT_GEMMA] = "gemma",
  [TSR_CHAT_PHI3] = "phi3", [TSR_CHAT_MISTRAL_V1] = "mistral-v1",
  [TSR_CHAT_MISTRAL_V3] = "mistral-v3",
  [TSR_CHAT_MISTRAL_V3_TEKKEN] = "mistral-v3-tekken",
  [TSR_CHAT_DEEPSEEK3] = "deepseek3",
};

/* The markers of DeepSeek V3 (full-width vertical bars, U+FF5C; the
   lower one eighth block U+2581 between words).  */
#define DS_USER "<\xef\xbd\x9cUser\xef\xbd\x9c>"
#define DS_ASSISTANT "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"
#define DS_END "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"

enum tsr_chat_template
tsr_chat_template_detect (const char *text)
{
  if (!text)
    return TSR_CHAT_UNKNOWN;
  if (strstr (text, "<|start_header_id|>") && strstr (text, "<|eot_id|>"))
    return TSR_CHAT_LLAMA3;
  if (strstr (text, "<|im_start|>"))
    return TSR_CHAT_CHATML;
  if (strstr (text, "<start_of_turn>"))
    return TSR_CHAT_GEMMA;
  if (strstr (text, "<|assistant|>") && strstr (text, "<|end|>"))
    return TSR_CHAT_PHI3;
  if (strstr (text, DS_USER) && strstr (text, DS_ASSISTANT))
    return TSR_CHAT_DEEPSEEK3;
  /* Mistral's, by the spaces its templates put around [INST] (Llama
     2's, with <<SYS>>, and V7's, with [SYSTEM_PROMPT], are others).  */
  if (strstr (text, "[INST]") && strstr (text, "[/INST]")
      && !strstr (text, "<<SYS>>") && !strstr (text, "[SYSTEM_PROMPT]"))
    {
      if (strstr (text, "' [INST] '"))
        return TSR_CHAT_MISTRAL_V1;
      if (strstr (text, "'[INST] '"))
        return TSR_CHAT_MISTRAL_V3;
      if (strstr (text, "'[INST]'"))
        return TSR_CHAT_MISTRAL_V3_TEKKEN;
    }
  return TSR_CHAT_UNKNOWN;
}

enum tsr_chat_template
tsr_chat_template_by_name (const char *name)
{
  for (int t = TSR_CHAT_LLAMA3; name && t <= TSR_CHAT_DEEPSEEK3; t++)
    if (strcmp (name, names[t]) == 0)
      return (enum tsr_chat_template) t;
  return TSR_CHAT_UNKNOWN;
}

const char *
tsr_chat_template_name (enum tsr_chat_template t)
{
  return t >= TSR_CHAT_UNKNOWN && t <= TSR_CHAT_DEEPSEEK3 ? names[t]
                                                          : "unknown";
}

const char *
tsr_chat_template_names (void)
{
  return "llama3, chatml, gemma, phi3, mistral-v1, mistral-v3, "
         "mistral-v3-tekken, deepseek3";
}

const char *
tsr_chat_turn_suffix (enum tsr_chat_template t)
{
  return t == TSR_CHAT_CHATML || t == TSR_CHAT_GEMMA || t == TSR_CHAT_PHI3
         ? "\n" : "";
}

/* The text being written: what fits in BUF, and the whole length.  */
struct out
{
  char *buf;
  size_t cap, len;
};

static void
put (struct out *o, const char *s, size_t n)
{
  if (o->len < o->cap)
    {
      size_t k = o->cap - o->len < n ? o->cap - o->len : n;
      memcpy (o->buf + o->len, s, k);
    }
  o->len += n;
}

static void
puts_ (struct out *o, const char *s)
{
  put (o, s, strlen (s));
}

/* S without leading and trailing white space (Jinja's trim).  */
static void
put_trimmed (struct out *o, const char *s)
{
  const char *e = s + strlen (s);
  while (s < e && strchr (" \t\n\r\f\v", *s))
    s++;
  while (e > s && strchr (" \t\n\r\f\v", e[-1]))
    e--;
  put (o, s, (size_t) (e - s));
}

static bool
known_role (const char *r)
{
  return strcmp (r, "system") == 0 || strcmp (r, "user") == 0
         || strcmp (r, "assistant") == 0;
}

int64_t
tsr_chat_format (enum tsr_chat_template t, const struct tsr_chat_message *msgs,
                 int n, bool add_assistant, char *buf, size_t cap)
{
  struct out o = { buf, cap, 0 };
  if (t <= TSR_CHAT_UNKNOWN || t > TSR_CHAT_DEEPSEEK3)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "chat: unknown template (known: "
                     "%s)", tsr_chat_template_names ());
      return -1;
    }
  if (n < 0 || (n > 0 && !msgs) || (cap > 0 && !buf))
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "chat: NULL messages or buffer");
      return -1;
    }
  for (int i = 0; i < n; i++)
    if (!msgs[i].role || !msgs[i].content || !known_role (msgs[i].role))
      {
        tsr_set_error (TSR_ERR_INVALID_ARG, "chat: message %d: role \"%.40s\""
                       " (system, user or assistant, with content)", i,
                       msgs[i].role ? msgs[i].role : "(null)");
        return -1;
      }
  /* gemma, mistral: no system turn; its text goes before the first
     (gemma, mistral-v1) or the last (mistral-v3) user message's.  */
  const char *system = NULL;
  int first = 0, host = -1;
  bool mistral = t == TSR_CHAT_MISTRAL_V1 || t == TSR_CHAT_MISTRAL_V3
                 || t == TSR_CHAT_MISTRAL_V3_TEKKEN;
  if ((t == TSR_CHAT_GEMMA || mistral) && n > 0
      && strcmp (msgs[0].role, "system") == 0)
    {
      system = msgs[0].content;
      first = 1;
      for (int i = first; i < n; i++)
        if (strcmp (msgs[i].role, "user") == 0
            && (host < 0 || t == TSR_CHAT_MISTRAL_V3
                || t == TSR_CHAT_MISTRAL_V3_TEKKEN))
          host = i;
    }
  if (system && mistral && host < 0)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "chat: %s: a system message "
                     "goes into a user message, and there is none",
                     tsr_chat_template_name (t));
      return -1;
    }
  /* deepseek3: every system message first, joined by a blank line.  */
  if (t == TSR_CHAT_DEEPSEEK3)
    for (int i = 0, k = 0; i < n; i++)
      if (strcmp (msgs[i].role, "system") == 0)
        {
          if (k++)
            puts_ (&o, "\n\n");
          puts_ (&o, msgs[i].content);
        }
  for (int i = first; i < n; i++)
    {
      const char *role = msgs[i].role, *text = msgs[i].content;
      if ((mistral || t == TSR_CHAT_GEMMA) && strcmp (role, "system") == 0)
        {
          tsr_set_error (TSR_ERR_INVALID_ARG, "chat: %s: a system message "
                         "only comes first (message %d)",
                         tsr_chat_template_name (t), i);
          return -1;
        }
      if (mistral)
        {
          bool user = strcmp (role, "user") == 0;
          bool v1 = t == TSR_CHAT_MISTRAL_V1;
          bool tekken = t == TSR_CHAT_MISTRAL_V3_TEKKEN;
          puts_ (&o, !user ? (tekken ? "" : " ")
                     : v1 ? " [INST] " : tekken ? "[INST]" : "[INST] ");
          if (system && i == host)
            {
              puts_ (&o, system);
              puts_ (&o, "\n\n");
            }
          puts_ (&o, text);
          puts_ (&o, !user ? "</s>" : v1 ? " [/INST]" : "[/INST]");
          continue;
        }
      switch (t)
        {
        case TSR_CHAT_DEEPSEEK3:
          if (strcmp (role, "user") == 0)
            {
              puts_ (&o, DS_USER);
              puts_ (&o, text);
            }
          else if (strcmp (role, "assistant") == 0)
            {
              puts_ (&o, DS_ASSISTANT);
              puts_ (&o, text);
              puts_ (&o, DS_END);
            }
          break;
        case TSR_CHAT_LLAMA3:
          puts_ (&o, "<|start_header_id|>");
          puts_ (&o, role);
          puts_ (&o, "<|end_header_id|>\n\n");
          put_trimmed (&o, text);
          puts_ (&o, "<|eot_id|>");
          break;
        case TSR_CHAT_CHATML:
          puts_ (&o, "<|im_start|>");
          puts_ (&o, role);
          puts_ (&o, "\n");
          puts_ (&o, text);
          puts_ (&o, "<|im_end|>\n");
          break;
        case TSR_CHAT_GEMMA:
          puts_ (&o, "<start_of_turn>");
          puts_ (&o, strcmp (role, "assistant") == 0 ? "model" : role);
          puts_ (&o, "\n");
          if (system && i == first)
            {
              puts_ (&o, system);         /* as given: not trimmed */
              puts_ (&o, "\n\n");
            }
          put_trimmed (&o, text);
          puts_ (&o, "<end_of_turn>\n");
          break;
        default:                /* phi3 */
          puts_ (&o, "<|");
          puts_ (&o, role);
          puts_ (&o, "|>\n");
          puts_ (&o, text);
          puts_ (&o, "<|end|>\n");
          break;
        }
    }
  /* Mistral's reply follows [/INST] at once.  */
  if (add_assistant && !mistral)
    puts_ (&o, t == TSR_CHAT_LLAMA3
               ? "<|start_header_id|>assistant<|end_header_id|>\n\n"
               : t == TSR_CHAT_CHATML ? "<|im_start|>assistant\n"
               : t == TSR_CHAT_GEMMA ? "<start_of_turn>model\n"
               : t == TSR_CHAT_DEEPSEEK3 ? DS_ASSISTANT
               : "<|assistant|>\n");
  if (cap > 0)
    buf[o.len < cap ? o.len : cap - 1] = '\0';
  return (int64_t) o.len;
}
