/* loader.c - finding and opening backend module files with libltdl.
 *
 * Owns: directory scans for candidate files, lt_dlopen, and checking
 * that what was opened is a Tessera module (descriptor present, same
 * ABI).  It keeps no state: the registry decides what to do with a
 * module or a failure.  */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ltdl.h>

#include "tessera-impl.h"

#ifndef LT_MODULE_EXT
#define LT_MODULE_EXT ".so"
#endif

static pthread_once_t ltdl_once = PTHREAD_ONCE_INIT;
static int ltdl_status;

static void
ltdl_start (void)
{
  ltdl_status = lt_dlinit ();
}

bool
tsri_is_dir (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 && S_ISDIR (st.st_mode);
}

static bool
exists (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 && !S_ISDIR (st.st_mode);
}

static bool
has_suffix (const char *s, const char *suffix)
{
  size_t n = strlen (s), m = strlen (suffix);
  return n >= m && strcmp (s + n - m, suffix) == 0;
}

/* PATH itself, or PATH.la or PATH<ext>, exists.  */
static bool
module_file_exists (const char *path)
{
  char buf[4096];
  if (exists (path))
    return true;
  snprintf (buf, sizeof buf, "%s.la", path);
  if (exists (buf))
    return true;
  snprintf (buf, sizeof buf, "%s%s", path, LT_MODULE_EXT);
  return exists (buf);
}

tsr_module_error
tsri_loader_open (const char *path, struct tsri_opened *out, char *reason,
                  size_t reason_size)
{
  lt_dladvise advise;
  lt_dlhandle h;

  out->handle = NULL;
  out->desc = NULL;
  pthread_once (&ltdl_once, ltdl_start);
  if (ltdl_status != 0)
    {
      snprintf (reason, reason_size, "libltdl failed to initialize: %s",
                lt_dlerror ());
      return TSR_MODULE_OPEN_FAILED;
    }
  if (!module_file_exists (path))
    {
      snprintf (reason, reason_size, "no such file (tried %s, %s.la and "
                "%s%s)", path, path, path, LT_MODULE_EXT);
      return TSR_MODULE_NOT_FOUND;
    }
  /* Modules' symbols stay local: two modules may use the same names.  */
  if (lt_dladvise_init (&advise) || lt_dladvise_ext (&advise)
      || lt_dladvise_local (&advise))
    {
      snprintf (reason, reason_size, "libltdl: %s", lt_dlerror ());
      lt_dladvise_destroy (&advise);
      return TSR_MODULE_OPEN_FAILED;
    }
  h = lt_dlopenadvise (path, advise);
  lt_dladvise_destroy (&advise);
  if (!h)
    {
      const char *err = lt_dlerror ();
      snprintf (reason, reason_size, "the dynamic loader refused it: %s",
                err ? err : "unknown error");
      return TSR_MODULE_OPEN_FAILED;
    }
  const struct tsr_module_descriptor *d = lt_dlsym (h, TSR_MODULE_SYMBOL);
  if (!d)
    {
      snprintf (reason, reason_size, "it exports no '%s' descriptor",
                TSR_MODULE_SYMBOL);
      lt_dlclose (h);
      return TSR_MODULE_NOT_A_MODULE;
    }
  if (d->abi_version != TSR_MODULE_ABI_VERSION)
    {
      snprintf (reason, reason_size, "built for module ABI version %u, "
                "but this libtessera implements version %u; rebuild the "
                "module against this Tessera", (unsigned) d->abi_version,
                (unsigned) TSR_MODULE_ABI_VERSION);
      lt_dlclose (h);
      return TSR_MODULE_ABI_MISMATCH;
    }
  if (d->flags != 0)
    {
      snprintf (reason, reason_size, "its descriptor sets flags 0x%x, "
                "which this libtessera (module ABI version %u) does not "
                "know; rebuild the module against this Tessera",
                (unsigned) d->flags, (unsigned) TSR_MODULE_ABI_VERSION);
      lt_dlclose (h);
      return TSR_MODULE_ABI_MISMATCH;
    }
  if (!d->name || !d->score || !d->init)
    {
      snprintf (reason, reason_size, "its descriptor lacks a name, score "
                "or init function");
      lt_dlclose (h);
      return TSR_MODULE_NOT_A_MODULE;
    }
  out->handle = h;
  out->desc = d;
  return TSR_MODULE_OK;
}

void
tsri_loader_close (void *handle)
{
  if (handle)
    lt_dlclose ((lt_dlhandle) handle);
}

static int
compare_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

int
tsri_loader_scan_dir (const char *dir,
                      void (*fn) (const char *stem, void *data), void *data)
{
  DIR *d = opendir (dir);
  if (!d)
    return tsr_set_error (TSR_ERR_NOT_FOUND, "cannot read directory %s: %s",
                          dir, strerror (errno));
  char **stems = NULL;
  size_t n = 0, cap = 0;
  int st = TSR_OK;
  struct dirent *e;
  while ((e = readdir (d)) != NULL)
    {
      const char *name = e->d_name;
      size_t len = strlen (name), ext;
      if (strncmp (name, "tessera-", 8) != 0)
        continue;
      if (has_suffix (name, ".la"))
        ext = 3;
      else if (has_suffix (name, LT_MODULE_EXT))
        ext = strlen (LT_MODULE_EXT);
      else
        continue;
      if (n == cap)
        {
          cap = cap ? 2 * cap : 8;
          char **ns = realloc (stems, cap * sizeof *ns);
          if (!ns)
            {
              st = tsr_set_error (TSR_ERR_NO_MEMORY, "out of memory");
              break;
            }
          stems = ns;
        }
      size_t sz = strlen (dir) + 1 + len - ext + 1;
      stems[n] = malloc (sz);
      if (!stems[n])
        {
          st = tsr_set_error (TSR_ERR_NO_MEMORY, "out of memory");
          break;
        }
      snprintf (stems[n], sz, "%s/%.*s", dir, (int) (len - ext), name);
      n++;
    }
  closedir (d);
  if (st == TSR_OK && n)
    qsort (stems, n, sizeof *stems, compare_str);
  /* tessera-x.la and tessera-x.so give the same stem: load it once.  */
  for (size_t i = 0; st == TSR_OK && i < n; i++)
    if (i == 0 || strcmp (stems[i], stems[i - 1]) != 0)
      fn (stems[i], data);
  for (size_t i = 0; i < n; i++)
    free (stems[i]);
  free (stems);
  return st;
}
