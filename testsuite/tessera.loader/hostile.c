/* Files in a search directory that are not modules, or not loadable,
 * each appear in the failure list with a reason of their own, and none
 * of them hangs or crashes the process (issue 17, classes 5 and 6):
 * a FIFO, an empty file, a text file, a directory named like a module,
 * a .la of random bytes, a .la whose dlname climbs out of the directory,
 * a .la naming a symbolic link to /dev/zero, a shared library cut short
 * (the dynamic loader would map it and die of SIGBUS), an unreadable
 * file and directory (not as root), and a module with an undefined
 * symbol (lazy binding would end the process with status 127 at its
 * first call).  Also: a FIFO or a device opened as a GGUF file.  */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <tessera.h>
#include "tsr-test.h"

static char dir[4096];

static void
put_file (const char *name, const void *data, size_t n)
{
  char path[4200];
  snprintf (path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen (path, "wb");
  if (f)
    {
      if (n)
        fwrite (data, 1, n, f);
      fclose (f);
    }
}

/* The failure recorded for DIR/STEM names PHRASE.  */
static void
expect (const char *stem, const char *phrase)
{
  char path[4200];
  struct tsr_module_failure f;
  snprintf (path, sizeof path, "%s/%s", dir, stem);
  bool found = tsr_registry_failure_find (path, &f);
  CHECK (found && strstr (f.reason, phrase), "%s: recorded, the reason "
         "says '%s' (%s)", stem, phrase, found ? f.reason : "no failure");
}

/* A copy of the first N bytes of the shared library of module NAME in
   MODS (its .libs/tessera-NAME.so) as DIR/tessera-AS.so; false when
   there is none.  */
static bool
truncated_copy (const char *mods, const char *name, const char *as, long n)
{
  char src[4200], buf[65536];
  snprintf (src, sizeof src, "%s/.libs/tessera-%s.so", mods, name);
  FILE *in = fopen (src, "rb");
  if (!in)
    return false;
  size_t got = fread (buf, 1, (size_t) n < sizeof buf ? (size_t) n
                                                      : sizeof buf, in);
  fclose (in);
  char as_name[256];
  snprintf (as_name, sizeof as_name, "tessera-%s.so", as);
  put_file (as_name, buf, got);
  return got == (size_t) n;
}

static void
gguf_non_regular (void)
{
  char fifo[4200];
  snprintf (fifo, sizeof fifo, "%s/model.gguf", dir);
  struct tsr_gguf_error err;
  if (mkfifo (fifo, 0600) == 0)
    {
      tsr_gguf *g = tsr_gguf_open (fifo, &err);
      CHECK (!g && strstr (err.message, "FIFO"), "gguf: a FIFO is refused "
             "without waiting (%s)", err.message);
      unlink (fifo);
    }
  else
    tsr_test_unsupported ("gguf: a FIFO is refused: mkfifo: %s",
                          strerror (errno));
  tsr_gguf *g = tsr_gguf_open ("/dev/zero", &err);
  CHECK (!g && strstr (err.message, "character device"), "gguf: /dev/zero "
         "is refused (%s)", err.message);
}

/* The writer replaces only a regular file or a new name.  */
static void
writer_targets (void)
{
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_gguf_set_u32 (w, "a", 1);
  char target[4200], link[4200], file[4200];
  snprintf (target, sizeof target, "%s/target", dir);
  snprintf (link, sizeof link, "%s/link.gguf", dir);
  snprintf (file, sizeof file, "%s/out.gguf", dir);
  put_file ("target", "keep", 4);
  bool linked = symlink (target, link) == 0;
  int st = linked ? tsr_gguf_writer_write_file (w, link) : -1;
  struct stat sb;
  FILE *f = fopen (target, "rb");
  char back[8] = "";
  if (f)
    {
      if (!fgets (back, sizeof back, f))
        back[0] = '\0';
      fclose (f);
    }
  CHECK (linked && st == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "symbolic link")
         && lstat (link, &sb) == 0 && S_ISLNK (sb.st_mode)
         && strcmp (back, "keep") == 0,
         "writer: a symbolic link is refused, link and target untouched "
         "(%s)", tsr_last_error ());
  CHECK (tsr_gguf_writer_write_file (w, "/dev/null") == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "character device"),
         "writer: a device is refused (%s)", tsr_last_error ());
  put_file ("out.gguf", "old", 3);
  chmod (file, 0640);
  tsr_gguf *g = NULL;
  CHECK (tsr_gguf_writer_write_file (w, file) == TSR_OK
         && (g = tsr_gguf_open (file, NULL)) && tsr_gguf_n_kv (g) == 1
         && stat (file, &sb) == 0 && (sb.st_mode & 0777) == 0640,
         "writer: a regular file is replaced, keeping its mode");
  tsr_gguf_close (g);
  unlink (file);
  unlink (link);
  unlink (target);
  tsr_gguf_writer_free (w);
}

/* Loads the check-only module NAME (built beside the tests in MODS;
   not in a static build): true with its status in *ST and its failure
   record in *F (*FOUND: whether there is one); false, reporting WHAT
   unsupported, when it is not there.  */
static bool
load_check_only (const char *mods, const char *name, const char *what,
                 int *st, struct tsr_module_failure *f, bool *found)
{
  char path[4200];

  snprintf (path, sizeof path, "%s/%s.la", mods ? mods : ".", name);
  if (!mods || access (path, R_OK) != 0)
    {
      tsr_test_unsupported ("%s: check-only modules not built (static "
                            "build)", what);
      return false;
    }
  snprintf (path, sizeof path, "%s/%s", mods, name);
  *st = tsr_registry_load (path);
  *found = tsr_registry_failure_find (path, f);
  return true;
}

int
main (void)
{
  const char *bld = getenv ("TSR_TEST_BUILDDIR");
  const char *mods = getenv ("TSR_TEST_MODULE_DIR");
  snprintf (dir, sizeof dir, "%s/testsuite/bin/hostile-%ld",
            bld ? bld : "/tmp", (long) getpid ());
  if (mkdir (dir, 0700) != 0)
    {
      printf ("FAIL: cannot create %s: %s\n", dir, strerror (errno));
      return 1;
    }
  gguf_non_regular ();
  writer_targets ();

  char path[4200];
  snprintf (path, sizeof path, "%s/tessera-fifo.so", dir);
  bool fifo = mkfifo (path, 0600) == 0;
  put_file ("tessera-empty.so", "", 0);
  put_file ("tessera-text.so", "INPUT (libc.so)\n", 16);
  snprintf (path, sizeof path, "%s/tessera-dir.so", dir);
  mkdir (path, 0700);
  unsigned char junk[3000];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (unsigned char) (i * 131 + 7);
  put_file ("tessera-junk.la", junk, sizeof junk);
  static const char climb[] = "dlname='../../../../../../dev/zero'\n"
                              "installed=no\n";
  put_file ("tessera-climb.la", climb, sizeof climb - 1);
  static const char zero[] = "dlname='tessera-zero.so'\nlibdir='/nonexistent'"
                             "\ninstalled=yes\n";
  put_file ("tessera-zero.la", zero, sizeof zero - 1);
  snprintf (path, sizeof path, "%s/tessera-zero.so", dir);
  bool zlink = symlink ("/dev/zero", path) == 0;
  bool cut = mods && truncated_copy (mods, "zeroscore", "cut", 6000);
  bool root = geteuid () == 0;
  put_file ("tessera-secret.so", "x", 1);
  snprintf (path, sizeof path, "%s/tessera-secret.so", dir);
  chmod (path, 0);
  char sub[4200];
  snprintf (sub, sizeof sub, "%s/closed", dir);
  mkdir (sub, 0700);
  chmod (sub, 0);

  /* All of them at once, as a search directory: nothing may hang.  */
  tsr_test_deadline (60, "loading a directory of hostile files");
  tsr_registry_add_search_dir (dir);
  tsr_registry_add_search_dir (sub);
  tsr_registry_load_all ();
  alarm (0);
  if (fifo)
    expect ("tessera-fifo", "FIFO");
  expect ("tessera-empty", "empty");
  expect ("tessera-text", "not a shared library");
  expect ("tessera-dir", "directory");
  expect ("tessera-junk", "not a libtool library file");
  expect ("tessera-climb", "not a file name beside it");
  if (zlink)
    expect ("tessera-zero", "character device");
  if (cut)
    expect ("tessera-cut", "truncated");
  else
    tsr_test_unsupported ("tessera-cut: no check-only module to cut "
                          "(static build)");
  if (root)
    {
      tsr_test_unsupported ("tessera-secret: unreadable file (running as "
                            "root, which reads it)");
      tsr_test_unsupported ("closed: unreadable directory (running as "
                            "root)");
    }
  else
    {
      expect ("tessera-secret", "ermission");
      struct tsr_module_failure f;
      bool found = tsr_registry_failure_find (sub, &f);
      CHECK (found && strstr (f.reason, "ermission"), "an unreadable "
             "directory is a failure of its own (%s)",
             found ? f.reason : "none");
    }

  /* A module with an undefined symbol: a failure naming it, and the
     process goes on.  */
  int st;
  struct tsr_module_failure f;
  bool found;
  if (load_check_only (mods, "tessera-undefsym", "undefined symbol", &st, &f,
                       &found))
    {
      CHECK (st == TSR_ERR_MODULE && found
             && strstr (f.reason, "tsr_test_no_such_function"),
             "undefined symbol: refused at load, naming the symbol (%s)",
             found ? f.reason : "none");
      CHECK (tsr_reg_by_name ("undefsym") == NULL, "undefined symbol: no "
             "registration");
    }

  /* A descriptor shorter than this ABI's.  */
  if (load_check_only (mods, "tessera-shortdesc", "short descriptor", &st,
                       &f, &found))
    CHECK (st == TSR_ERR_MODULE && found
           && f.error == TSR_MODULE_ABI_MISMATCH
           && strstr (f.reason, "smaller than"),
           "short descriptor: refused by its size (%s)",
           found ? f.reason : "none");

  chmod (sub, 0700);
  snprintf (path, sizeof path, "rm -rf '%s'", dir);
  if (system (path) != 0)
    printf ("FAIL: cannot remove %s\n", dir);
  return TSR_TEST_EXIT ();
}
