/* tessera/log.h - where Tessera's diagnostics go.
 *
 * By default messages at TSR_LOG_WARN and above are written to stderr.
 * The environment variable TESSERA_LOG (error, warn, info, debug, none)
 * sets the threshold; an application can install its own callback.  */
#ifndef TESSERA_LOG_H
#define TESSERA_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tsr_log_level {
  TSR_LOG_NONE = 0,
  TSR_LOG_ERROR,
  TSR_LOG_WARN,
  TSR_LOG_INFO,
  TSR_LOG_DEBUG
} tsr_log_level;

typedef void (*tsr_log_fn) (tsr_log_level level, const char *message,
                            void *user_data);

/* Install FN (NULL restores the stderr default).  Thread-safe.  */
void tsr_log_set_callback (tsr_log_fn fn, void *user_data);

/* Set the threshold; messages above it are dropped.  Overrides
   TESSERA_LOG.  */
void tsr_log_set_level (tsr_log_level level);
tsr_log_level tsr_log_get_level (void);

/* Emit a message (used by Tessera and its modules).  */
void tsr_log (tsr_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__ ((format (printf, 2, 3)))
#endif
  ;

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_LOG_H */
