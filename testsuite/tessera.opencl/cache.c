/* Area: the OpenCL backend's cache of kernel binaries
   (modules/opencl/ocl-cache.c).
   Purpose: a process that builds the kernels from source stores the
   program's binary under $TESSERA_CACHE_DIR/opencl (one file); the next
   process loads it instead of compiling and computes the same tokens;
   a damaged entry is rebuilt from source and rewritten, never a
   failure; TESSERA_OPENCL_CACHE=0 neither reads nor writes; a cache
   that cannot be written (its directory under a regular file) costs
   only the rebuild.  Each step runs tessera-run in a child process
   (the program is built once per process) and reads its debug log.
   Limitations: the time saved is not checked (a benchmark's matter).  */
#include "../tessera.model/model-test.h"
#include <dirent.h>
#include <sys/stat.h>
#include "ocl-test.h"

static char model[4096], dir[4096];

/* tessera-run on the model with the cache in CACHE_DIR and the extra
   environment ENV; its exit status, its output in mt_out.  */
static int
run_tool (const char *cache_dir, const char *env)
{
  char cmd[12288];
  snprintf (cmd, sizeof cmd, "TESSERA_CACHE_DIR='%s' TESSERA_LOG=debug %s "
            "'%s/tools/tessera-run' -m '%s' --tokens=1,2,3 -n 3 -d OpenCL0",
            cache_dir, env, mt_bld, model);
  return mt_shell (cmd);
}

/* The generated text of the last run: the line before the timings.  */
static void
generated (char *buf, size_t n)
{
  const char *end = strstr (mt_out, "\nprompt:");
  const char *start = end;
  while (start && start > mt_out && start[-1] != '\n')
    start--;
  size_t len = start && end ? (size_t) (end - start) : 0;
  snprintf (buf, n, "%.*s", (int) (len < n ? len : n - 1), start);
}

/* Files in DIR/opencl ending in .bin; the first one's path in PATH.  */
static int
entries (char *path, size_t n)
{
  char sub[4200];
  int count = 0;
  snprintf (sub, sizeof sub, "%s/opencl", dir);
  DIR *d = opendir (sub);
  for (struct dirent *e = d ? readdir (d) : NULL; e; e = readdir (d))
    {
      size_t len = strlen (e->d_name);
      if (len > 4 && strcmp (e->d_name + len - 4, ".bin") == 0)
        {
          if (count++ == 0)
            snprintf (path, n, "%s/%s", sub, e->d_name);
        }
    }
  if (d)
    closedir (d);
  return count;
}

static void
clear (void)
{
  char cmd[8400];
  snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
  mt_shell (cmd);
}

int
main (void)
{
  if (!mt_init () || !ocl_test_device ())
    return TSR_TEST_EXIT ();
  snprintf (dir, sizeof dir, "%s/testsuite/bin/ocl-cache-%ld", mt_bld,
            (long) getpid ());
  if (!mt_synth ("--type=q4_0 --layers=2", mt_path ("cache", model,
                                                    sizeof model)))
    return TSR_TEST_EXIT ();
  clear ();
  char first[512], again[512], entry[4400] = "";

  int st = run_tool (dir, "");
  if (st != 0 && strstr (mt_out, "no backend or device named"))
    {
      tsr_test_unsupported ("tessera-run started from this test does not "
                            "see OpenCL0");
      unlink (model);
      return TSR_TEST_EXIT ();
    }
  generated (first, sizeof first);
  CHECK (st == 0 && strstr (mt_out, "kernels built from source")
         && strstr (mt_out, "kernels cached in") && entries (entry,
                                                            sizeof entry)
                                                   == 1,
         "a first run builds from source and stores one entry (%s)",
         st == 0 ? entry : mt_out);

  st = run_tool (dir, "");
  generated (again, sizeof again);
  CHECK (st == 0 && strstr (mt_out, "kernels loaded from")
         && !strstr (mt_out, "built from source")
         && strcmp (first, again) == 0 && *first,
         "the next run loads the entry and generates the same text "
         "('%s', '%s')", first, again);

  FILE *f = fopen (entry, "wb");
  if (f)
    {
      fputs ("not a program binary", f);
      fclose (f);
    }
  st = run_tool (dir, "");
  generated (again, sizeof again);
  size_t size = 0;
  struct stat sb;
  if (stat (entry, &sb) == 0)
    size = (size_t) sb.st_size;
  CHECK (st == 0 && strstr (mt_out, "unusable")
         && strstr (mt_out, "built from source")
         && strcmp (first, again) == 0 && size > 100,
         "a damaged entry is rebuilt from source and rewritten (%zu "
         "bytes)", size);

  clear ();
  st = run_tool (dir, "TESSERA_OPENCL_CACHE=0");
  CHECK (st == 0 && !strstr (mt_out, "kernels cached in")
         && !strstr (mt_out, "kernels loaded from")
         && strstr (mt_out, "kernels built from source")
         && entries (entry, sizeof entry) == 0,
         "TESSERA_OPENCL_CACHE=0 neither reads nor writes");

  /* A directory that cannot be made: under a regular file.  */
  char blocked[4200];
  snprintf (blocked, sizeof blocked, "%s/file", model);
  st = run_tool (blocked, "");
  CHECK (st == 0 && strstr (mt_out, "could not cache"),
         "a cache that cannot be written: said, and the run goes on (%s)",
         st == 0 ? "" : mt_out);
  clear ();
  unlink (model);
  return TSR_TEST_EXIT ();
}
