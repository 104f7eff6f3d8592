/* status.c - status codes and the per-thread last error.  */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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
    }
  return "unknown status";
}

int
tsr_set_error (int status, const char *fmt, ...)
{
  va_list ap;
  last_status = (tsr_status) status;
  va_start (ap, fmt);
  vsnprintf (last_message, sizeof last_message, fmt, ap);
  va_end (ap);
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
