/* status.c - status codes and the per-thread last error.  */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera-impl.h"

static _Thread_local tsr_status last_status;
static _Thread_local char last_message[512];

const char *
tsr_status_string (tsr_status status)
{
  switch (status)
    {
    case TSR_OK: return "success";
    case TSR_ERR_INVALID_ARG: return "invalid argument";
    case TSR_ERR_NO_MEMORY: return "out of memory";
    case TSR_ERR_SHAPE: return "shape mismatch";
    case TSR_ERR_TYPE: return "unsupported element type";
    case TSR_ERR_UNSUPPORTED: return "operation not supported";
    case TSR_ERR_NOT_FOUND: return "not found";
    case TSR_ERR_MODULE: return "backend module unusable";
    case TSR_ERR_BACKEND: return "backend failure";
    case TSR_ERR_STATE: return "call made in the wrong state";
    case TSR_ERR_FORMAT: return "malformed input";
    case TSR_ERR_TIMEOUT: return "timed out";
    case TSR_ERR_NUMERIC: return "non-finite result";
    case TSR_ERR_PEER: return "another process failed";
    }
  return "unknown status";
}

/* The length of the UTF-8 sequence at S (N bytes left) if it is a
   well-formed character that is safe on a terminal, else 0: not a C0
   or C1 control, DEL, or a bidirectional override or isolate (which
   reorder what a terminal shows).  */
static size_t
safe_char (const unsigned char *s, size_t n)
{
  unsigned c = s[0];
  if (c >= 0x20 && c < 0x7f)
    return 1;
  size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (len == 0 || len > n)
    return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  uint32_t cp = len == 2 ? (c & 0x1f) << 6 | (s[1] & 0x3f)
                : len == 3 ? (c & 0x0f) << 12 | (s[1] & 0x3fu) << 6
                             | (s[2] & 0x3f)
                : (c & 0x07) << 18 | (s[1] & 0x3fu) << 12
                  | (s[2] & 0x3fu) << 6 | (s[3] & 0x3f);
  static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
  if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)
      || cp < 0xa0 || (cp >= 0x202a && cp <= 0x202e)
      || (cp >= 0x2066 && cp <= 0x2069))
    return 0;
  return len;
}

size_t
tsr_escape_text (char *dst, size_t size, const char *src)
{
  const unsigned char *s = (const unsigned char *) src;
  size_t n = strlen (src), o = 0;
  if (size == 0)
    return 0;
  for (size_t i = 0; i < n;)
    {
      size_t len = safe_char (s + i, n - i);
      if (len)
        {
          if (o + len >= size)
            break;
          memcpy (dst + o, s + i, len);
          o += len;
          i += len;
        }
      else
        {
          if (o + 4 >= size)
            break;
          snprintf (dst + o, 5, "\\x%02x", s[i]);
          o += 4;
          i++;
        }
    }
  dst[o] = '\0';
  return o;
}

int
tsr_set_error (int status, const char *fmt, ...)
{
  va_list ap;
  char raw[sizeof last_message];
  last_status = (tsr_status) status;
  va_start (ap, fmt);
  vsnprintf (raw, sizeof raw, fmt, ap);
  va_end (ap);
  /* Messages quote names from files, directories and modules: never let
     one carry a terminal escape or malformed text to whoever prints
     it.  */
  tsr_escape_text (last_message, sizeof last_message, raw);
  tsr_log (TSR_LOG_DEBUG, "error: %s", last_message);
  return status;
}

const char *
tsr_last_error (void)
{
  return last_message;
}

tsr_status
tsr_last_status (void)
{
  return last_status;
}

void
tsr_clear_error (void)
{
  last_status = TSR_OK;
  last_message[0] = '\0';
}

_Noreturn void
tsri_assert_fail (const char *what, const char *file, int line)
{
  fprintf (stderr, "tessera: internal error: %s:%d: assertion '%s' failed\n",
           file, line, what);
  abort ();
}

const char *
tsr_version (void)
{
  return PACKAGE_VERSION;
}
