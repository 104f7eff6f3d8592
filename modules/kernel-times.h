/* kernel-times.h - the sums behind the CUDA and OpenCL kernel profiles
 * (TESSERA_CUDA_PROFILE, TESSERA_OPENCL_PROFILE): device time summed
 * under a label per kernel, and the table printed, largest first.  Not
 * installed; each module includes it (static inline: nothing is
 * exported).  How the times are measured stays each module's.  */
#ifndef TSR_MODULES_KERNEL_TIMES_H
#define TSR_MODULES_KERNEL_TIMES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TSR_KTIMES_LABEL 112

struct tsr_ktimes_entry
{
  char label[TSR_KTIMES_LABEL];
  uint64_t calls;
  double ms;
};

struct tsr_ktimes
{
  struct tsr_ktimes_entry *e;
  int n, cap;
  uint64_t computes;
};

/* Add a call of MS milliseconds under LABEL; false (nothing counted)
   when out of memory.  */
static inline bool
tsr_ktimes_add (struct tsr_ktimes *t, const char *label, double ms)
{
  struct tsr_ktimes_entry *e = NULL;
  for (int i = 0; i < t->n && !e; i++)
    if (strcmp (t->e[i].label, label) == 0)
      e = &t->e[i];
  if (!e)
    {
      if (t->n == t->cap)
        {
          int cap = t->cap ? 2 * t->cap : 32;
          struct tsr_ktimes_entry *n = realloc (t->e, (size_t) cap
                                                      * sizeof *n);
          if (!n)
            return false;
          t->e = n;
          t->cap = cap;
        }
      e = &t->e[t->n++];
      memset (e, 0, sizeof *e);
      snprintf (e->label, sizeof e->label, "%s", label);
    }
  e->calls++;
  e->ms += ms;
  return true;
}

static inline int
tsr_ktimes_by_time (const void *a, const void *b)
{
  double x = ((const struct tsr_ktimes_entry *) a)->ms;
  double y = ((const struct tsr_ktimes_entry *) b)->ms;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* The table on standard error, under "WHO: profile of N computes, X ms
   on the WHERE", labels in a column of WIDTH; then the sums freed.  */
static inline void
tsr_ktimes_print_free (struct tsr_ktimes *t, const char *who,
                       const char *where, int width)
{
  double total = 0;
  qsort (t->e, (size_t) t->n, sizeof *t->e, tsr_ktimes_by_time);
  for (int i = 0; i < t->n; i++)
    total += t->e[i].ms;
  fprintf (stderr, "%s: profile of %llu computes, %.3f ms on the %s "
           "(%.1f us a compute)\n%-*s %8s %10s %9s %6s\n", who,
           (unsigned long long) t->computes, total, where,
           t->computes ? 1e3 * total / (double) t->computes : 0.0,
           width, "kernel", "calls", "total ms", "us/call", "share");
  for (int i = 0; i < t->n; i++)
    fprintf (stderr, "%-*s %8llu %10.3f %9.2f %5.1f%%\n", width,
             t->e[i].label, (unsigned long long) t->e[i].calls, t->e[i].ms,
             1e3 * t->e[i].ms / (double) t->e[i].calls,
             total > 0 ? 100 * t->e[i].ms / total : 0.0);
  free (t->e);
  *t = (struct tsr_ktimes) { 0 };
}

#endif /* TSR_MODULES_KERNEL_TIMES_H */
