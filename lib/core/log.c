/* log.c - diagnostics: a threshold, a callback, stderr by default.  */
#include <config.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "tessera-impl.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
/* Atomic: set by any thread while others log (module loading).  */
static _Atomic int log_level = TSR_LOG_WARN;
static tsr_log_fn log_fn;
static void *log_user;

static void
log_read_env (void)
{
  static const char *const names[] = { "none", "error", "warn", "info",
                                       "debug" };
  const char *env = getenv ("TESSERA_LOG");
  if (!env || !*env)
    return;
  for (int i = 0; i < 5; i++)
    if (strcasecmp (env, names[i]) == 0)
      {
        atomic_store (&log_level, i);
        return;
      }
  fprintf (stderr, "tessera: TESSERA_LOG='%s' not understood (use none, "
           "error, warn, info or debug)\n", env);
}

void
tsr_log_set_callback (tsr_log_fn fn, void *user_data)
{
  pthread_mutex_lock (&log_lock);
  log_fn = fn;
  log_user = user_data;
  pthread_mutex_unlock (&log_lock);
}

void
tsr_log_set_level (tsr_log_level level)
{
  pthread_once (&log_once, log_read_env);
  atomic_store (&log_level, (int) level);
}

tsr_log_level
tsr_log_get_level (void)
{
  pthread_once (&log_once, log_read_env);
  return (tsr_log_level) atomic_load (&log_level);
}

void
tsri_vlog (tsr_log_level level, const char *fmt, va_list ap)
{
  static const char *const tags[] = { "", "error", "warning", "info",
                                      "debug" };
  char raw[1024], msg[1024];
  if (level == TSR_LOG_NONE || level > tsr_log_get_level ())
    return;
  vsnprintf (raw, sizeof raw, fmt, ap);
  tsr_escape_text (msg, sizeof msg, raw);  /* names from input inside */
  pthread_mutex_lock (&log_lock);
  tsr_log_fn fn = log_fn;
  void *user = log_user;
  pthread_mutex_unlock (&log_lock);
  /* Called without the lock: a callback may log or call Tessera.  */
  if (fn)
    fn (level, msg, user);
  else
    fprintf (stderr, "tessera: %s: %s\n", tags[level], msg);
}

void
tsr_log (tsr_log_level level, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  tsri_vlog (level, fmt, ap);
  va_end (ap);
}
