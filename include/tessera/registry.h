/* tessera/registry.h - backend registrations, devices and module loading.
 *
 * The registry holds every backend family ("reg": cpu, blas, cuda...)
 * and their devices.  It initializes itself on first use: compiled-in
 * backends are registered and backend modules are loaded from, in
 * order, the directories and files of TESSERA_BACKEND_PATH (separated
 * by ':'), the directories added with tsr_registry_add_search_dir, and
 * the configured backend directory.  Every module that could not be
 * used is recorded with its path and the reason.
 *
 * Thread safety: every function may be called from any thread at any
 * time (one recursive lock; a module's score, init and finalize may not
 * load or unload, which returns TSR_ERR_STATE).  Lifetimes:
 *   - strings returned (module names, paths and failure reasons in
 *     struct tsr_module_info and tsr_module_failure, the search path)
 *     live as long as the process, whatever other threads load, reload
 *     or add meanwhile;
 *   - registrations and devices live until their module is unloaded,
 *     which tsr_registry_unload refuses (TSR_ERR_STATE) while a backend,
 *     buffer or event made from its devices exists; unloading while
 *     another thread still looks a device up is the caller's race.  */
#ifndef TESSERA_REGISTRY_H
#define TESSERA_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <tessera/backend.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Why a module was not used.  */
typedef enum tsr_module_error {
  TSR_MODULE_OK = 0,
  TSR_MODULE_NOT_FOUND,      /* no such file */
  TSR_MODULE_OPEN_FAILED,    /* the dynamic loader refused it */
  TSR_MODULE_NOT_A_MODULE,   /* no Tessera module descriptor */
  TSR_MODULE_ABI_MISMATCH,   /* built for another module ABI */
  TSR_MODULE_UNUSABLE,       /* its score is 0 on this machine */
  TSR_MODULE_INIT_FAILED,    /* its init returned no registration, or
                                one of another ABI version */
  TSR_MODULE_DUPLICATE       /* a module of that name is loaded already */
} tsr_module_error;

struct tsr_module_info {
  const char *name;          /* "cpu" */
  const char *path;          /* file it came from, "(built-in)" if none */
  int score;
  bool builtin;
  tsr_reg *reg;
};

struct tsr_module_failure {
  const char *path;          /* what was tried */
  const char *name;          /* module name if known, else NULL */
  tsr_module_error error;
  const char *reason;        /* a sentence for a user */
};

const char *tsr_module_error_string (tsr_module_error error);

/* Before first use only: with ENABLED false the registry does not
   search for modules on its own (compiled-in backends are still
   there; tsr_registry_load and tsr_registry_load_all work).  Returns
   TSR_ERR_STATE once the registry is initialized.  */
int tsr_registry_set_autoload (bool enabled);
/* Search the path now (modules already loaded are kept).  */
int tsr_registry_load_all (void);
/* Add DIR to the search path, before the configured backend dir.  Once
   the registry is initialized (with autoload on), DIR is searched at
   once.  */
int tsr_registry_add_search_dir (const char *dir);
/* The search path, ':'-separated, as the registry uses it (valid for
   the life of the process; a later tsr_registry_add_search_dir makes a
   new one).  */
const char *tsr_registry_search_path (void);
/* The configured backend directory.  */
const char *tsr_registry_backend_dir (void);

/* Load one module file (.la, shared library, or a name without
   extension).  TSR_OK, TSR_ERR_NOT_FOUND when there is no such file,
   or TSR_ERR_MODULE; every failure is recorded.  */
int tsr_registry_load (const char *path);
/* Unload the module named NAME and drop its registration and devices.
   TSR_ERR_STATE while backends, buffers or events made from its
   devices exist: free them first.  */
int tsr_registry_unload (const char *name);

size_t tsr_registry_module_count (void);
bool tsr_registry_module_get (size_t i, struct tsr_module_info *info);
size_t tsr_registry_failure_count (void);
bool tsr_registry_failure_get (size_t i, struct tsr_module_failure *f);
/* The failure recorded for module name or path KEY, newest first.  */
bool tsr_registry_failure_find (const char *key,
                                struct tsr_module_failure *f);

/* Registrations.  */
size_t tsr_reg_count (void);
tsr_reg *tsr_reg_get (size_t i);
tsr_reg *tsr_reg_by_name (const char *name);   /* case-insensitive */
const char *tsr_reg_name (tsr_reg *reg);
/* A module's named entry point beyond the backend interface (for its
   own companion API, e.g. the communication interface of
   tessera/module.h), or NULL when it has none of that name.  */
void *tsr_reg_get_proc (tsr_reg *reg, const char *name);
size_t tsr_reg_device_count (tsr_reg *reg);
tsr_device *tsr_reg_device_get (tsr_reg *reg, size_t i);

/* Devices over all registrations.  */
size_t tsr_device_count (void);
tsr_device *tsr_device_get (size_t i);
tsr_device *tsr_device_by_name (const char *name); /* case-insensitive */
tsr_device *tsr_device_by_type (tsr_device_type type);

/* A backend on the named device (or the first device of the named
   registration), on the first device of TYPE, or on the best device:
   GPU, then IGPU, then CPU, then ACCEL (an accelerator such as BLAS
   runs only some ops: use it beside the CPU through a scheduler).  */
tsr_backend *tsr_backend_init_by_name (const char *name, const char *params);
tsr_backend *tsr_backend_init_by_type (tsr_device_type type,
                                       const char *params);
tsr_backend *tsr_backend_init_best (void);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_REGISTRY_H */
