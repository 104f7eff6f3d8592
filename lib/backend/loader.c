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
#include <unistd.h>

#include <ltdl.h>
#ifdef HAVE_DLFCN_H
#include <dlfcn.h>
#endif
#if defined(HAVE_DLADDR1) && defined(HAVE_LINK_H)
#include <link.h>               /* ElfW */
#else
#undef HAVE_DLADDR1
#endif

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
has_suffix (const char *s, const char *suffix)
{
  size_t n = strlen (s), m = strlen (suffix);
  return n >= m && strcmp (s + n - m, suffix) == 0;
}

/* The file PATH names, as libltdl would look for it: PATH itself, else
   PATH.la, else PATH<ext>; the first that exists, whatever it is.  */
static bool
pick_file (const char *path, char *file, size_t size)
{
  static const char *const ext[] = { "", ".la", LT_MODULE_EXT };
  struct stat st;
  for (int i = 0; i < 3; i++)
    {
      snprintf (file, size, "%s%s", path, ext[i]);
      if (lstat (file, &st) == 0)
        return true;
    }
  return false;
}

/* The value of VAR='...' (or VAR=word) on a line of the libtool file
   TEXT, into OUT; false if absent.  */
static bool
la_value (const char *text, const char *var, char *out, size_t size)
{
  size_t n = strlen (var);
  for (const char *line = text; line && *line;
       line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
    {
      if (strncmp (line, var, n) != 0 || line[n] != '=')
        continue;
      const char *v = line + n + 1, *end;
      if (*v == '\'')
        end = strchr (++v, '\'');
      else
        end = v + strcspn (v, " \t\n");
      if (!end || (size_t) (end - v) >= size)
        return false;
      memcpy (out, v, (size_t) (end - v));
      out[end - v] = '\0';
      return true;
    }
  return false;
}

/* The shared library a libtool file LA names, resolved as libltdl
   does (installed: LIBDIR/DLNAME; not installed: DIR/.libs/DLNAME;
   then DIR/DLNAME), into OUT; else a REASON.  */
static bool
resolve_la (const char *la, char *out, size_t size, char *reason,
            size_t rsize)
{
  struct stat st;
  char why[512];
  int fd = tsri_open_regular (la, &st, why, sizeof why);
  if (fd < 0)
    {
      snprintf (reason, rsize, "%s: %s", la, why);
      return false;
    }
  char text[16384];
  ssize_t n = st.st_size < (off_t) sizeof text
              ? read (fd, text, sizeof text - 1) : -1;
  close (fd);
  if (n < 0)
    {
      snprintf (reason, rsize, "%s is not a libtool library file (%s)", la,
                st.st_size >= (off_t) sizeof text ? "too large"
                                                  : "cannot be read");
      return false;
    }
  text[n] = '\0';
  char dlname[256], libdir[1024] = "", installed[8] = "";
  if (memchr (text, '\0', (size_t) n) || !la_value (text, "dlname", dlname,
                                                    sizeof dlname)
      || !*dlname)
    {
      snprintf (reason, rsize, "%s is not a libtool library file (no "
                "dlname)", la);
      return false;
    }
  if (strchr (dlname, '/') || strcmp (dlname, "..") == 0
      || strcmp (dlname, ".") == 0)
    {
      snprintf (reason, rsize, "%s names the library '%s', not a file "
                "name beside it", la, dlname);
      return false;
    }
  la_value (text, "libdir", libdir, sizeof libdir);
  la_value (text, "installed", installed, sizeof installed);
  char dir[4096];
  snprintf (dir, sizeof dir, "%s", la);
  char *slash = strrchr (dir, '/');
  if (slash)
    *slash = '\0';
  else
    snprintf (dir, sizeof dir, ".");
  char cand[3][4096 + 300];
  int nc = 0;
  if (strcmp (installed, "no") != 0 && *libdir)
    snprintf (cand[nc++], sizeof cand[0], "%.1000s/%s", libdir, dlname);
  if (strcmp (installed, "no") == 0)
    snprintf (cand[nc++], sizeof cand[0], "%s/.libs/%s", dir, dlname);
  snprintf (cand[nc++], sizeof cand[0], "%s/%s", dir, dlname);
  for (int i = 0; i < nc; i++)
    if (lstat (cand[i], &st) == 0)
      {
        snprintf (out, size, "%.4000s", cand[i]);
        return true;
      }
  snprintf (reason, rsize, "%.1000s names '%s', which is not there (looked "
            "for %.1000s%s%.1000s%s%.1000s)", la, dlname, cand[0],
            nc > 1 ? ", " : "", nc > 1 ? cand[1] : "", nc > 2 ? ", " : "",
            nc > 2 ? cand[2] : "");
  return false;
}

/* Check the shared library FILE before any loader touches it: a
   regular file, a sane ELF file whose segments are all there, and,
   where dlopen is at hand, one whose symbols all resolve (bound now,
   so that a missing one is a reason here rather than the end of the
   process at its first call).  */
static tsr_module_error
check_library (const char *file, void **pre, char *reason, size_t rsize)
{
  *pre = NULL;
  struct stat st;
  char why[512];
  int fd = tsri_open_regular (file, &st, why, sizeof why);
  if (fd < 0)
    {
      snprintf (reason, rsize, "%s: %s", file, why);
      return TSR_MODULE_OPEN_FAILED;
    }
  bool ok = tsri_check_shared_object (fd, (uint64_t) st.st_size, why,
                                      sizeof why);
  close (fd);
  if (!ok)
    {
      snprintf (reason, rsize, "%s %s", file, why);
      return TSR_MODULE_OPEN_FAILED;
    }
#ifdef HAVE_DLFCN_H
  void *h = dlopen (file, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    {
      const char *e = dlerror ();
      snprintf (reason, rsize, "the dynamic loader refused it: %s",
                e ? e : "unknown error");
      return TSR_MODULE_OPEN_FAILED;
    }
  /* Kept open until libltdl has its own reference.  */
  *pre = h;
#endif
  return TSR_MODULE_OK;
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
  /* The file is chosen and checked here, and libltdl is handed the
     shared library itself: it would try each name in turn and report
     only the last error ("file not found"), and it hands whatever it
     finds to the dynamic loader, FIFOs and truncated files included.  */
  char file[4096], lib[4096];
  if (!pick_file (path, file, sizeof file))
    {
      snprintf (reason, reason_size, "no such file (tried %s, %s.la and "
                "%s%s)", path, path, path, LT_MODULE_EXT);
      return TSR_MODULE_NOT_FOUND;
    }
  const char *target = file;
  if (has_suffix (file, ".la"))
    {
      if (!resolve_la (file, lib, sizeof lib, reason, reason_size))
        return TSR_MODULE_OPEN_FAILED;
      target = lib;
    }
  void *pre;
  tsr_module_error e = check_library (target, &pre, reason, reason_size);
  if (e != TSR_MODULE_OK)
    return e;
  /* Modules' symbols stay local: two modules may use the same names.  */
  if (lt_dladvise_init (&advise) || lt_dladvise_ext (&advise)
      || lt_dladvise_local (&advise))
    {
      snprintf (reason, reason_size, "libltdl: %s", lt_dlerror ());
      lt_dladvise_destroy (&advise);
#ifdef HAVE_DLFCN_H
      if (pre)
        dlclose (pre);
#endif
      return TSR_MODULE_OPEN_FAILED;
    }
  h = lt_dlopenadvise (target, advise);
  lt_dladvise_destroy (&advise);
#ifdef HAVE_DLFCN_H
  if (pre)
    dlclose (pre);
#endif
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
  /* The descriptor symbol's size, where the symbol table says: one
     smaller than this ABI's descriptor would be read past its end.  */
  unsigned long dsize = 0;
#ifdef HAVE_DLADDR1               /* glibc; RTLD_DL_SYMENT is an enum */
  Dl_info di;
  const ElfW (Sym) *sym = NULL;
  if (dladdr1 (d, &di, (void **) &sym, RTLD_DL_SYMENT) && sym)
    dsize = (unsigned long) sym->st_size;
#endif
  if (dsize != 0 && dsize < sizeof d->abi_version)
    {
      snprintf (reason, reason_size, "its descriptor is %lu bytes, too "
                "small to hold an ABI version", dsize);
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
  if (dsize != 0 && dsize < sizeof *d)
    {
      snprintf (reason, reason_size, "its descriptor is %lu bytes, smaller "
                "than the %zu of module ABI version %u; rebuild the module "
                "against this Tessera", dsize, sizeof *d,
                (unsigned) TSR_MODULE_ABI_VERSION);
      lt_dlclose (h);
      return TSR_MODULE_ABI_MISMATCH;
    }
  if (d->flags & ~TSR_MODULE_KNOWN_FLAGS)
    {
      snprintf (reason, reason_size, "its descriptor sets flags 0x%x, "
                "which this libtessera (module ABI version %u) does not "
                "know; rebuild the module against this Tessera",
                (unsigned) (d->flags & ~TSR_MODULE_KNOWN_FLAGS),
                (unsigned) TSR_MODULE_ABI_VERSION);
      lt_dlclose (h);
      return TSR_MODULE_ABI_MISMATCH;
    }
  if ((d->flags & TSR_MODULE_FLAG_PROC) && dsize != 0
      && dsize < sizeof (struct tsr_module_descriptor_ext))
    {
      snprintf (reason, reason_size, "its descriptor sets the flag of "
                "named entry points but is %lu bytes, not the %zu of "
                "that descriptor", dsize,
                sizeof (struct tsr_module_descriptor_ext));
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
      /* tessera-comm-NAME: loaded on demand only (tessera/module.h).  */
      if (strncmp (name, "tessera-", 8) != 0
          || strncmp (name, "tessera-comm-", 13) == 0)
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
