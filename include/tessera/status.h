/* tessera/status.h - status codes and per-thread error messages.
 *
 * Every fallible Tessera call reports failure through a tsr_status (or a
 * NULL pointer) and leaves a human-readable message describing the
 * failure in a thread-local slot, read with tsr_last_error().  Library
 * code never aborts on bad user input.  */
#ifndef TESSERA_STATUS_H
#define TESSERA_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tsr_status {
  TSR_OK = 0,
  TSR_ERR_INVALID_ARG,   /* a NULL or out-of-range argument */
  TSR_ERR_NO_MEMORY,     /* an allocation failed */
  TSR_ERR_SHAPE,         /* tensor shapes do not fit the operation */
  TSR_ERR_TYPE,          /* element type not accepted by the operation */
  TSR_ERR_UNSUPPORTED,   /* a backend cannot run this operation */
  TSR_ERR_NOT_FOUND,     /* no such backend, device, module or file */
  TSR_ERR_MODULE,        /* a backend module could not be used */
  TSR_ERR_BACKEND,       /* a backend reported a failure */
  TSR_ERR_STATE,         /* call made in the wrong state */
  TSR_ERR_FORMAT,        /* malformed input data (a GGUF file...) */
  TSR_ERR_TIMEOUT,       /* other processes did not answer in time */
  TSR_ERR_NUMERIC,       /* a result holds NaN or an infinity
                            (TESSERA_CHECK_FINITE) */
  TSR_ERR_PEER           /* another process of the job failed
                            (tsr_comm_fail) */
} tsr_status;

/* A short English description of STATUS ("shape mismatch", ...).  */
const char *tsr_status_string (tsr_status status);

/* The message of the most recent failure in the calling thread, or ""
   when there was none.  The string stays valid until the next failing
   Tessera call in the same thread.  It is safe to print: names it
   quotes from files, directories or modules are escaped as by
   tsr_escape_text.  */
const char *tsr_last_error (void);

/* The status of the most recent failure in the calling thread.  */
tsr_status tsr_last_status (void);

/* Forget the calling thread's last error.  */
void tsr_clear_error (void);

/* Copy the string SRC into DST (SIZE bytes; NUL-terminated, cut at a
   whole character when too long) for printing: every byte that is not
   part of a well-formed, printable UTF-8 character is written as \xNN
   (control characters such as ESC, C1 controls, DEL, bidirectional
   overrides and isolates, malformed UTF-8).  Returns the length
   written.  For names read from files (GGUF keys, tensor names) before
   they reach a terminal; escaping twice changes nothing.  */
size_t tsr_escape_text (char *dst, size_t size, const char *src);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_STATUS_H */
