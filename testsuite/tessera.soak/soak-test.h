/* soak-test.h - what the soak tests share: the resident set size.  */
#ifndef SOAK_TEST_H
#define SOAK_TEST_H

#include <stdio.h>
#include <unistd.h>

/* This process's resident set size in bytes, or -1 where
   /proc/self/statm cannot be read.  */
static long
soak_rss (void)
{
  FILE *f = fopen ("/proc/self/statm", "r");
  long pages = -1, resident = -1;
  if (!f)
    return -1;
  if (fscanf (f, "%ld %ld", &pages, &resident) != 2)
    resident = -1;
  fclose (f);
  return resident < 0 ? -1 : resident * sysconf (_SC_PAGESIZE);
}

#if defined __SANITIZE_ADDRESS__
# define SOAK_ASAN 1
#elif defined __has_feature
# if __has_feature (address_sanitizer)
#  define SOAK_ASAN 1
# endif
#endif
#ifndef SOAK_ASAN
# define SOAK_ASAN 0
#endif

/* Check that the resident set size LATE is within 2% of EARLY, or say
   UNSUPPORTED where it cannot be read or means nothing (under
   AddressSanitizer, whose quarantine keeps freed memory; LeakSanitizer
   reports leaks at exit there instead).  */
static void
soak_check_rss (const char *what, long early, long late)
{
  if (SOAK_ASAN)
    {
      tsr_test_unsupported ("%s: resident memory under AddressSanitizer "
                            "(its quarantine keeps freed memory; "
                            "LeakSanitizer checks at exit)", what);
      return;
    }
  if (early < 0 || late < 0)
    {
      tsr_test_unsupported ("%s: resident memory (no /proc/self/statm)",
                            what);
      return;
    }
  CHECK ((double) late <= (double) early * 1.02, "%s: resident memory "
         "%ld KiB, then %ld KiB (%+.2f%%, at most +2%%)", what,
         early / 1024, late / 1024,
         100.0 * ((double) late - (double) early) / (double) early);
}

#endif
