/* Area: tessera-run --logits (issue 36, unchecked allocation).
   Purpose: the buffer for all of a batch's logits is sized by the
   rows the prompt's batches give, not by --batch, and its allocation is
   checked.  A 3-token prompt with --batch=65536 on a model of 128256
   tokens asked for 65536 rows (34 GB): under a 4 GB address-space limit
   the allocation failed unchecked and the copy crashed (SIGSEGV).  Now
   it runs and writes 3 rows of logits (1539072 bytes).
   Limitations: the limit is set with ulimit -v, which sanitizer builds
   cannot run under (their shadow memory): there the case is
   UNSUPPORTED.  */
#include <sys/stat.h>
#include "model-test.h"

#if defined __SANITIZE_ADDRESS__ || defined __SANITIZE_THREAD__
# define SANITIZED 1
#elif defined __has_feature
# if __has_feature (address_sanitizer) || __has_feature (thread_sanitizer)
#  define SANITIZED 1
# endif
#endif

int
main (void)
{
  char path[4096], out[4200], cmd[12000];
  struct stat st;
  if (!mt_init ())
    return TSR_TEST_EXIT ();
#ifdef SANITIZED
  tsr_test_unsupported ("--logits memory: ulimit -v under a sanitizer");
  return TSR_TEST_EXIT ();
#endif
  mt_path ("logits-memory", path, sizeof path);
  snprintf (out, sizeof out, "%s.f32", path);
  if (!mt_synth ("--layers=1 --vocab=128256", path))
    return TSR_TEST_EXIT ();
  snprintf (cmd, sizeof cmd, "ulimit -v 4000000; '%s/tools/tessera-run' "
            "-m '%s' --tokens=1,2,3 -n 0 --batch=65536 --logits='%s' -d CPU",
            mt_bld, path, out);
  int rc = mt_shell (cmd);
  CHECK (rc == 0 && stat (out, &st) == 0 && st.st_size == 3 * 128256 * 4,
         "--batch=65536 --logits with 3 tokens of a 128256-token model "
         "under 4 GB: runs, 3 rows written (exit %d, %lld bytes): %s", rc,
         rc == 0 ? (long long) st.st_size : -1LL, mt_out);
  remove (out);
  remove (path);
  return TSR_TEST_EXIT ();
}
