/* registry.c - every backend registration and device in the process.
 *
 * Owns: the module and failure lists, the search path, automatic
 * initialization on first use, lookups, and init_best.  Opening files is
 * loader.c's job.  One recursive lock guards everything, so module init
 * functions and log callbacks may call back into the registry.  */
#include <config.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#include "tessera-impl.h"

#ifndef TSR_USE_MODULES
#include "builtin-modules.h"
#else
static const struct tsr_module_descriptor *const tsr_builtin_modules[] = {
  NULL
};
#endif

#ifndef LT_MODULE_EXT
#define LT_MODULE_EXT ".so"
#endif

#ifndef TSR_BACKEND_DIR
#define TSR_BACKEND_DIR "/usr/local/lib/tessera"
#endif

struct module
{
  const char *name, *path;      /* interned */
  int score;
  bool builtin;
  void *handle;
  tsr_reg *reg;
  void (*finalize) (void);      /* the descriptor's, or NULL */
  void *(*get_proc) (const char *name);   /* TSR_MODULE_FLAG_PROC */
  long live;                    /* its backends, buffers and events */
};

struct failure
{
  const char *path, *name, *reason;     /* interned */
  tsr_module_error error;
};

static struct
{
  pthread_mutex_t lock;
  bool initialized, autoload;
  struct module *modules;
  size_t n_modules, cap_modules;
  struct failure *failures;
  size_t n_failures, cap_failures;
  char **dirs;                  /* added through the API */
  size_t n_dirs;
  const char *path_string;      /* tsr_registry_search_path's, interned */
  const char **strings;         /* the interned strings, never freed */
  size_t n_strings, cap_strings;
  struct tsri_name_index string_index;
  int in_module;                /* inside a module's score, init or
                                   finalize (this thread: R is locked) */
} R = { .autoload = true };


/* A module's score, init or finalize must not load or unload modules
   (the registry is in the middle of doing so): TSR_ERR_STATE.  Called
   with the lock held.  */
static int
reentered (const char *what)
{
  if (!R.in_module)
    return TSR_OK;
  return tsr_set_error (TSR_ERR_STATE, "registry: %s called from a "
                        "module's score, init or finalize function", what);
}

static pthread_once_t lock_once = PTHREAD_ONCE_INIT;

static void
lock_init (void)
{
  pthread_mutexattr_t a;
  pthread_mutexattr_init (&a);
  pthread_mutexattr_settype (&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init (&R.lock, &a);
  pthread_mutexattr_destroy (&a);
}

static void
lock (void)
{
  pthread_once (&lock_once, lock_init);
  pthread_mutex_lock (&R.lock);
}

static void
unlock (void)
{
  pthread_mutex_unlock (&R.lock);
}

/* Interned string I, for the index.  */
static void
string_at (const void *owner, int64_t i, const char **s, size_t *len)
{
  (void) owner;
  *s = R.strings[i];
  *len = strlen (*s);
}

/* S as a string that lives as long as the process: every string the
   registry hands out (module and failure names, paths and reasons, the
   search path) is interned, so that a caller's copy stays valid while
   other threads reload modules, record failures or add directories.
   Equal strings share one copy, so memory grows with the distinct
   strings seen, not with reloads.  NULL for NULL or when out of memory.
   Called with the lock held.  */
static const char *
intern (const char *s)
{
  if (!s)
    return NULL;
  int64_t i = tsri_name_index_find (&R.string_index, s, strlen (s),
                                    string_at, NULL);
  if (i >= 0)
    return R.strings[i];
  if (R.n_strings == R.cap_strings)
    {
      size_t cap = R.cap_strings ? 2 * R.cap_strings : 64;
      const char **t = realloc (R.strings, cap * sizeof *t);
      if (!t)
        return NULL;
      R.strings = t;
      R.cap_strings = cap;
    }
  char *copy = strdup (s);
  if (!copy)
    return NULL;
  R.strings[R.n_strings] = copy;
  if (tsri_name_index_add (&R.string_index, (int64_t) R.n_strings,
                           string_at, NULL) != TSR_OK)
    {
      free (copy);
      return NULL;
    }
  R.n_strings++;
  return copy;
}

const char *
tsr_module_error_string (tsr_module_error error)
{
  switch (error)
    {
    case TSR_MODULE_OK: return "loaded";
    case TSR_MODULE_NOT_FOUND: return "not found";
    case TSR_MODULE_OPEN_FAILED: return "cannot be opened";
    case TSR_MODULE_NOT_A_MODULE: return "not a Tessera module";
    case TSR_MODULE_ABI_MISMATCH: return "module ABI mismatch";
    case TSR_MODULE_UNUSABLE: return "not usable here";
    case TSR_MODULE_INIT_FAILED: return "initialization failed";
    case TSR_MODULE_DUPLICATE: return "duplicate";
    }
  return "unknown";
}

/* Forget the failure of PATH, for module NAME when both are known:
   compiled-in modules share the path "(built-in)".  */
static void
forget_failure (const char *path, const char *name)
{
  for (size_t i = 0; i < R.n_failures; i++)
    if (strcmp (R.failures[i].path, path) == 0
        && (!name || !R.failures[i].name
            || strcmp (R.failures[i].name, name) == 0))
      {
        memmove (&R.failures[i], &R.failures[i + 1],
                 (R.n_failures - i - 1) * sizeof *R.failures);
        R.n_failures--;
        return;
      }
}

/* Record a failure (replacing an older one for the same path) and log
   it.  Called with the lock held.  */
static void
record_failure (const char *path, const char *name, tsr_module_error error,
                const char *reason)
{
  forget_failure (path, name);
  tsr_log (error == TSR_MODULE_UNUSABLE || error == TSR_MODULE_DUPLICATE
           ? TSR_LOG_INFO : TSR_LOG_WARN, "backend module %s%s%s%s: %s: %s",
           path, name ? " (" : "", name ? name : "", name ? ")" : "",
           tsr_module_error_string (error), reason);
  if (R.n_failures == R.cap_failures)
    {
      size_t cap = R.cap_failures ? 2 * R.cap_failures : 8;
      struct failure *nf = realloc (R.failures, cap * sizeof *nf);
      if (!nf)
        return;                 /* logged above; nothing else to do */
      R.failures = nf;
      R.cap_failures = cap;
    }
  struct failure *f = &R.failures[R.n_failures];
  f->path = intern (path);
  f->name = intern (name);
  char shown[2048];             /* reasons quote file names */
  tsr_escape_text (shown, sizeof shown, reason);
  f->reason = intern (shown);
  f->error = error;
  if (f->path && f->reason)
    R.n_failures++;             /* else out of memory: logged above */
}

static struct module *
find_module (const char *name)
{
  for (size_t i = 0; i < R.n_modules; i++)
    if (strcasecmp (R.modules[i].name, name) == 0)
      return &R.modules[i];
  return NULL;
}

static struct module *
find_module_by_path (const char *path)
{
  for (size_t i = 0; i < R.n_modules; i++)
    if (strcmp (R.modules[i].path, path) == 0)
      return &R.modules[i];
  return NULL;
}

/* The first entry REG (or a device or buffer type of it) lacks that
   ABI 3 requires, written into WHY; false if none is missing.  */
static bool
lacks_entry (tsr_reg *reg, char *why, size_t n)
{
#define NEED(cond, ...)                                                   \
  do                                                                      \
    if (!(cond))                                                          \
      {                                                                   \
        snprintf (why, n, __VA_ARGS__);                                   \
        return true;                                                      \
      }                                                                   \
  while (0)
  const struct tsr_reg_iface *ri = &reg->iface;
  NEED (ri->get_name && ri->get_device_count && ri->get_device,
        "its registration lacks %s (required by module ABI %d)",
        !ri->get_name ? "get_name" : !ri->get_device_count
        ? "get_device_count" : "get_device", TSR_MODULE_ABI_VERSION);
  NEED (ri->get_name (reg), "its registration has no name (get_name "
        "returned NULL)");
  size_t count = ri->get_device_count (reg);
  NEED (count <= TSRI_MAX_DEVICES_PER_REG, "its registration claims %zu "
        "devices (at most %d are accepted)", count, TSRI_MAX_DEVICES_PER_REG);
  for (size_t i = 0; i < count; i++)
    {
      tsr_device *dev = ri->get_device (reg, i);
      NEED (dev, "its device %zu is NULL", i);
      const struct tsr_device_iface *di = &dev->iface;
      const char *miss = !di->get_name ? "get_name"
        : !di->get_description ? "get_description"
        : !di->get_type ? "get_type"
        : !di->init_backend ? "init_backend"
        : !di->get_buffer_type ? "get_buffer_type"
        : !di->supports_op ? "supports_op"
        : !di->supports_buft ? "supports_buft" : NULL;
      NEED (!miss, "its device %zu lacks %s (required by module ABI %d)", i,
            miss, TSR_MODULE_ABI_VERSION);
      NEED (di->get_name (dev) && di->get_description (dev), "its device "
            "%zu has no %s (NULL)", i, di->get_name (dev) ? "description"
            : "name");
      int events = !!di->event_new + !!di->event_free
                   + !!di->event_synchronize;
      NEED (events == 0 || events == 3, "device %s has %d of the three "
            "event entries (event_new, event_free, event_synchronize): "
            "all or none", di->get_name (dev), events);
      tsr_buffer_type *buft = di->get_buffer_type (dev);
      NEED (buft, "device %s has no buffer type", di->get_name (dev));
      const struct tsr_buffer_type_iface *bi = &buft->iface;
      miss = !bi->get_name ? "get_name" : !bi->alloc_buffer ? "alloc_buffer"
             : !bi->get_alignment ? "get_alignment" : NULL;
      NEED (!miss, "the buffer type of device %s lacks %s (required by "
            "module ABI %d)", di->get_name (dev), miss,
            TSR_MODULE_ABI_VERSION);
    }
  return false;
#undef NEED
}

/* A module's registration is given up: its FINALIZE runs, then the
   core frees REG if tsr_reg_new made it.  Called with the lock held.  */
static void
give_back (void (*finalize) (void), tsr_reg *reg)
{
  if (finalize)
    {
      R.in_module++;
      finalize ();
      R.in_module--;
    }
  tsri_reg_release (reg);
}

/* Score, initialize and register a descriptor.  HANDLE is closed on
   failure.  Called with the lock held.  */
static int
add_module (const struct tsr_module_descriptor *d, const char *path,
            void *handle, bool builtin)
{
  char reason[512], name[128];
  /* D lives in the module: copy what we need before closing HANDLE.  */
  snprintf (name, sizeof name, "%s", d->name);
  struct module *dup = find_module (name);
  if (dup)
    {
      snprintf (reason, sizeof reason, "a module named '%s' is already "
                "loaded from %s", name, dup->path);
      record_failure (path, name, TSR_MODULE_DUPLICATE, reason);
      tsri_loader_close (handle);
      return tsr_set_error (TSR_ERR_MODULE, "%s: %s", path, reason);
    }
  const char *why = NULL;
  R.in_module++;
  int score = d->score (&why);
  R.in_module--;
  if (score <= 0)
    {
      snprintf (reason, sizeof reason, "%s", why ? why
                : "the module gave no reason");
      record_failure (path, name, TSR_MODULE_UNUSABLE, reason);
      tsri_loader_close (handle);
      return tsr_set_error (TSR_ERR_MODULE, "%s: not usable: %s", name,
                            reason);
    }
  tsr_clear_error ();
  R.in_module++;
  tsr_reg *reg = d->init ();
  R.in_module--;
  if (!reg || reg->abi_version != TSR_MODULE_ABI_VERSION
      || lacks_entry (reg, reason, sizeof reason))
    {
      if (!reg || reg->abi_version != TSR_MODULE_ABI_VERSION)
        snprintf (reason, sizeof reason, "%s",
                  reg ? "its registration has the wrong ABI version"
                  : tsr_last_status () != TSR_OK ? tsr_last_error ()
                  : "its init function returned no registration");
      record_failure (path, name, TSR_MODULE_INIT_FAILED, reason);
      if (reg)
        give_back (d->finalize, reg);
      tsri_loader_close (handle);
      return tsr_set_error (TSR_ERR_MODULE, "%s: %s", name, reason);
    }
  if (R.n_modules == R.cap_modules)
    {
      size_t cap = R.cap_modules ? 2 * R.cap_modules : 8;
      struct module *nm = realloc (R.modules, cap * sizeof *nm);
      if (!nm)
        {
          give_back (d->finalize, reg);
          tsri_loader_close (handle);
          return tsr_set_error (TSR_ERR_NO_MEMORY, "registry: out of "
                                "memory");
        }
      R.modules = nm;
      R.cap_modules = cap;
    }
  struct module *m = &R.modules[R.n_modules];
  m->name = intern (name);
  m->path = intern (path);
  if (!m->name || !m->path)
    {
      give_back (d->finalize, reg);
      tsri_loader_close (handle);
      return tsr_set_error (TSR_ERR_NO_MEMORY, "registry: out of memory");
    }
  m->score = score;
  m->builtin = builtin;
  m->handle = handle;
  m->reg = reg;
  m->finalize = d->finalize;
  m->get_proc = d->flags & TSR_MODULE_FLAG_PROC
    ? ((const struct tsr_module_descriptor_ext *) d)->get_proc : NULL;
  m->live = 0;
  R.n_modules++;
  forget_failure (path, name);
  tsr_log (TSR_LOG_DEBUG, "backend module %s loaded from %s (score %d)",
           name, path, score);
  return TSR_OK;
}

/* Called with the lock held.  */
static int
load_path (const char *path)
{
  struct tsri_opened o;
  char reason[1024];
  if (find_module_by_path (path))
    return TSR_OK;
  tsr_module_error e = tsri_loader_open (path, &o, reason, sizeof reason);
  if (e != TSR_MODULE_OK)
    {
      record_failure (path, NULL, e, reason);
      return tsr_set_error (e == TSR_MODULE_NOT_FOUND ? TSR_ERR_NOT_FOUND
                            : TSR_ERR_MODULE, "%s: %s: %s", path,
                            tsr_module_error_string (e), reason);
    }
  return add_module (o.desc, path, o.handle, false);
}

static void
load_stem (const char *stem, void *data)
{
  (void) data;
  load_path (stem);
}

/* A directory or a file of the search path.  ERR_IF_MISSING: record a
   failure for entries that do not exist.  */
static void
load_entry (const char *entry, bool err_if_missing)
{
  if (!*entry)
    return;
  if (tsri_is_dir (entry))
    {
      /* A directory that cannot be read hides every module in it: a
         failure of its own.  */
      if (tsri_loader_scan_dir (entry, load_stem, NULL) != TSR_OK)
        record_failure (entry, NULL, TSR_MODULE_OPEN_FAILED,
                        tsr_last_error ());
    }
  else if (err_if_missing)
    load_path (entry);
  else
    tsr_log (TSR_LOG_DEBUG, "backend directory %s does not exist", entry);
}

/* FN (ENTRY, LISTED, DATA) for each entry of the search path in order:
   those of TESSERA_BACKEND_PATH and the added directories (LISTED: the
   user named them), then the backend directory.  Stops at the first
   nonzero FN, and returns it (0 after the last entry).  Called with the
   lock held.  */
static int
for_each_search_entry (int (*fn) (const char *entry, bool listed,
                                  void *data), void *data)
{
  const char *env = getenv ("TESSERA_BACKEND_PATH");
  int r = 0;
  if (env)
    {
      char *copy = strdup (env), *save = NULL;
      for (char *p = copy ? strtok_r (copy, ":", &save) : NULL; p && !r;
           p = strtok_r (NULL, ":", &save))
        r = fn (p, true, data);
      free (copy);
    }
  for (size_t i = 0; i < R.n_dirs && !r; i++)
    r = fn (R.dirs[i], true, data);
  return r ? r : fn (TSR_BACKEND_DIR, false, data);
}

static int
load_listed_entry (const char *entry, bool listed, void *data)
{
  (void) data;
  load_entry (entry, listed);
  return 0;
}

static void
load_all_locked (void)
{
  for_each_search_entry (load_listed_entry, NULL);
}

static void
init_locked (void)
{
  if (R.initialized)
    return;
  R.initialized = true;
  for (size_t i = 0; tsr_builtin_modules[i]; i++)
    add_module (tsr_builtin_modules[i], "(built-in)", NULL, true);
  if (R.autoload)
    load_all_locked ();
  tsr_clear_error ();
}

int
tsr_registry_set_autoload (bool enabled)
{
  int st = TSR_OK;
  lock ();
  if (R.initialized)
    st = tsr_set_error (TSR_ERR_STATE, "registry: already initialized; "
                        "set autoload before any other registry call");
  else
    R.autoload = enabled;
  unlock ();
  return st;
}

int
tsr_registry_load_all (void)
{
  lock ();
  int st = reentered ("tsr_registry_load_all");
  if (st == TSR_OK)
    {
      init_locked ();
      load_all_locked ();
    }
  unlock ();
  return st;
}

int
tsr_registry_add_search_dir (const char *dir)
{
  if (!dir || !*dir)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "registry: empty directory");
  lock ();
  int st = reentered ("tsr_registry_add_search_dir");
  if (st != TSR_OK)
    {
      unlock ();
      return st;
    }
  char **nd = realloc (R.dirs, (R.n_dirs + 1) * sizeof *nd);
  char *copy = strdup (dir);
  if (nd)
    R.dirs = nd;
  if (!nd || !copy)
    {
      free (copy);
      st = tsr_set_error (TSR_ERR_NO_MEMORY, "registry: out of memory");
    }
  else
    {
      R.dirs[R.n_dirs++] = copy;
      R.path_string = NULL;     /* the old one stays valid (interned) */
      if (R.initialized && R.autoload)
        load_entry (copy, true);
    }
  unlock ();
  return st;
}

const char *
tsr_registry_search_path (void)
{
  lock ();
  if (!R.path_string)
    {
      const char *env = getenv ("TESSERA_BACKEND_PATH");
      size_t len = (env ? strlen (env) + 1 : 0) + strlen (TSR_BACKEND_DIR)
                   + 1;
      for (size_t i = 0; i < R.n_dirs; i++)
        len += strlen (R.dirs[i]) + 1;
      char *s = malloc (len);
      if (s)
        {
          s[0] = '\0';
          if (env && *env)
            strcat (strcat (s, env), ":");
          for (size_t i = 0; i < R.n_dirs; i++)
            strcat (strcat (s, R.dirs[i]), ":");
          strcat (s, TSR_BACKEND_DIR);
        }
      R.path_string = intern (s);
      free (s);
    }
  const char *p = R.path_string ? R.path_string : TSR_BACKEND_DIR;
  unlock ();
  return p;
}

const char *
tsr_registry_backend_dir (void)
{
  return TSR_BACKEND_DIR;
}

int
tsr_registry_load (const char *path)
{
  if (!path || !*path)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "registry load: empty path");
  lock ();
  int st = reentered ("tsr_registry_load");
  if (st == TSR_OK)
    {
      init_locked ();
      st = load_path (path);
    }
  unlock ();
  return st;
}

int
tsr_registry_unload (const char *name)
{
  int st = TSR_OK;
  if (!name)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "registry unload: NULL name");
  lock ();
  st = reentered ("tsr_registry_unload");
  if (st == TSR_OK)
    init_locked ();
  struct module *m = st == TSR_OK ? find_module (name) : NULL;
  if (st != TSR_OK)
    ;
  else if (!m)
    st = tsr_set_error (TSR_ERR_NOT_FOUND, "registry unload: no module "
                        "named '%s' is loaded", name);
  else if (m->builtin)
    st = tsr_set_error (TSR_ERR_INVALID_ARG, "registry unload: '%s' is "
                        "compiled into libtessera", name);
  else if (m->live > 0)
    st = tsr_set_error (TSR_ERR_STATE, "registry unload: module '%s' still "
                        "has %ld object%s in use (backends, buffers, "
                        "events made from its devices); free them first",
                        name, m->live, m->live == 1 ? "" : "s");
  else
    {
      give_back (m->finalize, m->reg);
      tsri_loader_close (m->handle);
      size_t i = (size_t) (m - R.modules);
      memmove (m, m + 1, (R.n_modules - i - 1) * sizeof *m);
      R.n_modules--;
    }
  unlock ();
  return st;
}

size_t
tsr_registry_module_count (void)
{
  lock ();
  init_locked ();
  size_t n = R.n_modules;
  unlock ();
  return n;
}

bool
tsr_registry_module_get (size_t i, struct tsr_module_info *info)
{
  bool ok;
  lock ();
  init_locked ();
  ok = i < R.n_modules && info;
  if (ok)
    *info = (struct tsr_module_info) { R.modules[i].name, R.modules[i].path,
                                       R.modules[i].score,
                                       R.modules[i].builtin,
                                       R.modules[i].reg };
  unlock ();
  return ok;
}

size_t
tsr_registry_failure_count (void)
{
  lock ();
  init_locked ();
  size_t n = R.n_failures;
  unlock ();
  return n;
}

static void
fill_failure (const struct failure *f, struct tsr_module_failure *out)
{
  *out = (struct tsr_module_failure) { f->path, f->name, f->error,
                                       f->reason };
}

bool
tsr_registry_failure_get (size_t i, struct tsr_module_failure *f)
{
  bool ok;
  lock ();
  init_locked ();
  ok = i < R.n_failures && f;
  if (ok)
    fill_failure (&R.failures[i], f);
  unlock ();
  return ok;
}

bool
tsr_registry_failure_find (const char *key, struct tsr_module_failure *f)
{
  bool ok = false;
  lock ();
  init_locked ();
  for (size_t i = R.n_failures; key && f && i-- > 0 && !ok;)
    if (strcmp (R.failures[i].path, key) == 0
        || (R.failures[i].name && strcasecmp (R.failures[i].name, key) == 0))
      {
        fill_failure (&R.failures[i], f);
        ok = true;
      }
  unlock ();
  return ok;
}

void
tsri_registry_hold (tsr_device *dev, int delta)
{
  if (!dev || !dev->reg)
    return;
  lock ();
  for (size_t i = 0; i < R.n_modules; i++)
    if (R.modules[i].reg == dev->reg)
      {
        R.modules[i].live += delta;
        break;
      }
  unlock ();
}

/* Communication modules, loaded on demand.  */

/* Whether STEM.la or STEM + the module extension exists.  */
static bool
stem_exists (const char *stem)
{
  static const char *const ext[] = { ".la", LT_MODULE_EXT };
  char path[4096];
  for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
    {
      int len = snprintf (path, sizeof path, "%s%s", stem, ext[i]);
      if (len > 0 && (size_t) len < sizeof path && access (path, F_OK) == 0)
        return true;
    }
  return false;
}

/* Load tessera-comm-NAME from the first directory of the search path
   that has it.  Called with the lock held.  */
struct comm_search
{
  const char *name;
  char *tried;                  /* the directories looked in, for the
                                   message */
  size_t n_tried;
  int status;
};

static int
try_comm_entry (const char *entry, bool listed, void *data)
{
  struct comm_search *cs = data;
  char stem[4096];
  (void) listed;
  if (!tsri_is_dir (entry))
    return 0;
  snprintf (stem, sizeof stem, "%s/tessera-comm-%s", entry, cs->name);
  size_t len = strlen (cs->tried);
  snprintf (cs->tried + len, cs->n_tried - len, "%s%s", len ? ", " : "",
            entry);
  if (!stem_exists (stem))
    return 0;
  cs->status = load_path (stem);
  return cs->status != TSR_ERR_NOT_FOUND;
}

static int
load_comm_locked (const char *name, char *tried, size_t n_tried)
{
  struct comm_search cs = { name, tried, n_tried, TSR_ERR_NOT_FOUND };
  tried[0] = '\0';
  for_each_search_entry (try_comm_entry, &cs);
  return cs.status;
}

tsr_reg *
tsri_registry_comm_module (const char *name)
{
  char tried[2048];
  tsr_reg *reg = NULL;
  lock ();
  int st = reentered ("tsr_comm");
  if (st == TSR_OK)
    {
      init_locked ();
      struct module *m = find_module (name);
      if (!m)
        {
          st = load_comm_locked (name, tried, sizeof tried);
          if (st == TSR_ERR_NOT_FOUND)
            st = tsr_set_error (TSR_ERR_NOT_FOUND, "the %s communication "
                                "module tessera-comm-%s is not installed "
                                "(looked in %s): configure Tessera "
                                "--with-%s", name, name,
                                tried[0] ? tried : "no existing directory",
                                name);
          m = st == TSR_OK ? find_module (name) : NULL;
        }
      if (m && !m->get_proc)
        st = tsr_set_error (TSR_ERR_MODULE, "module %s (%s) has no "
                            "communication interface", name, m->path);
      else if (m)
        reg = m->reg;
    }
  unlock ();
  return reg;
}

void *
tsr_reg_get_proc (tsr_reg *reg, const char *name)
{
  void *(*get_proc) (const char *) = NULL;
  if (!reg || !name)
    return NULL;
  lock ();
  for (size_t i = 0; i < R.n_modules; i++)
    if (R.modules[i].reg == reg)
      get_proc = R.modules[i].get_proc;
  unlock ();
  return get_proc ? get_proc (name) : NULL;
}

/* Registrations and devices.  */

size_t
tsr_reg_count (void)
{
  return tsr_registry_module_count ();
}

tsr_reg *
tsr_reg_get (size_t i)
{
  struct tsr_module_info info;
  return tsr_registry_module_get (i, &info) ? info.reg : NULL;
}

const char *
tsr_reg_name (tsr_reg *reg)
{
  return reg ? reg->iface.get_name (reg) : "(none)";
}

tsr_reg *
tsr_reg_by_name (const char *name)
{
  tsr_reg *found = NULL;
  lock ();
  init_locked ();
  for (size_t i = 0; name && i < R.n_modules && !found; i++)
    if (strcasecmp (tsr_reg_name (R.modules[i].reg), name) == 0)
      found = R.modules[i].reg;
  unlock ();
  return found;
}

size_t
tsr_reg_device_count (tsr_reg *reg)
{
  return reg ? reg->iface.get_device_count (reg) : 0;
}

tsr_device *
tsr_reg_device_get (tsr_reg *reg, size_t i)
{
  return reg && i < tsr_reg_device_count (reg)
         ? reg->iface.get_device (reg, i) : NULL;
}

size_t
tsr_device_count (void)
{
  size_t n = 0;
  lock ();
  init_locked ();
  for (size_t i = 0; i < R.n_modules; i++)
    n += tsr_reg_device_count (R.modules[i].reg);
  unlock ();
  return n;
}

tsr_device *
tsr_device_get (size_t index)
{
  tsr_device *d = NULL;
  lock ();
  init_locked ();
  for (size_t i = 0; i < R.n_modules && !d; i++)
    {
      size_t n = tsr_reg_device_count (R.modules[i].reg);
      if (index < n)
        d = tsr_reg_device_get (R.modules[i].reg, index);
      else
        index -= n;
    }
  unlock ();
  return d;
}

tsr_device *
tsr_device_by_name (const char *name)
{
  tsr_device *found = NULL;
  lock ();
  for (size_t i = 0, n = tsr_device_count (); name && i < n && !found; i++)
    if (strcasecmp (tsr_device_name (tsr_device_get (i)), name) == 0)
      found = tsr_device_get (i);
  unlock ();
  return found;
}

tsr_device *
tsr_device_by_type (tsr_device_type type)
{
  tsr_device *found = NULL;
  lock ();
  for (size_t i = 0, n = tsr_device_count (); i < n && !found; i++)
    if (tsr_device_get_type (tsr_device_get (i)) == type)
      found = tsr_device_get (i);
  unlock ();
  return found;
}

tsr_backend *
tsr_backend_init_by_name (const char *name, const char *params)
{
  tsr_device *dev = tsr_device_by_name (name);
  if (!dev)
    dev = tsr_reg_device_get (tsr_reg_by_name (name), 0);
  if (!dev)
    {
      struct tsr_module_failure f;
      if (name && tsr_registry_failure_find (name, &f))
        tsr_set_error (TSR_ERR_NOT_FOUND, "no backend '%s': module %s %s: "
                       "%s", name, f.path, tsr_module_error_string (f.error),
                       f.reason);
      else
        tsr_set_error (TSR_ERR_NOT_FOUND, "no backend or device named "
                       "'%s' (search path: %s)", name ? name : "(null)",
                       tsr_registry_search_path ());
      return NULL;
    }
  return tsr_device_init (dev, params);
}

tsr_backend *
tsr_backend_init_by_type (tsr_device_type type, const char *params)
{
  tsr_device *dev = tsr_device_by_type (type);
  if (!dev)
    {
      tsr_set_error (TSR_ERR_NOT_FOUND, "no %s device (search path: %s)",
                     tsr_device_type_name (type),
                     tsr_registry_search_path ());
      return NULL;
    }
  return tsr_device_init (dev, params);
}

tsr_backend *
tsr_backend_init_best (void)
{
  /* An accelerator (BLAS) runs some ops only, beside a CPU: it comes
     last, for a process that has nothing else.  */
  static const tsr_device_type order[] = { TSR_DEVICE_GPU, TSR_DEVICE_IGPU,
                                           TSR_DEVICE_CPU,
                                           TSR_DEVICE_ACCEL };
  for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
    for (size_t i = 0, n = tsr_device_count (); i < n; i++)
      {
        tsr_device *dev = tsr_device_get (i);
        if (!dev || tsr_device_get_type (dev) != order[k])
          continue;
        tsr_backend *be = tsr_device_init (dev, NULL);
        if (be)
          return be;
        tsr_log (TSR_LOG_WARN, "device %s could not be initialized: %s",
                 tsr_device_name (dev), tsr_last_error ());
      }
  tsr_set_error (TSR_ERR_NOT_FOUND, "no usable device (search path: %s)",
                 tsr_registry_search_path ());
  return NULL;
}
