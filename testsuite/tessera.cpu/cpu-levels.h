/* cpu-levels.h - what the level programs of tessera.cpu share: the ISA
   levels built (from modules/cpu/cpu-levels.def; cpu.exp passes
   configure's TSR_CPU_BUILT_<suffix> flags and links the built levels'
   libraries) and whether this CPU runs one.

   TSR_TEST_EACH_LEVEL (X) expands to X (suffix, name) for every level
   built, NAME as the device description spells it.  */
#ifndef TSR_TEST_CPU_LEVELS_H
#define TSR_TEST_CPU_LEVELS_H

#include <stdio.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"
#include "cpu-levels.def"

#define TSR_TEST_IF(c) TSR_TEST_IF_ (c)
#define TSR_TEST_IF_(c) TSR_TEST_IF_##c
#define TSR_TEST_IF_0(...)
#define TSR_TEST_IF_1(...) __VA_ARGS__
#define TSR_TEST_LEVEL_ONE(s, n, f, fl, m, ft, X) \
  TSR_TEST_IF (TSR_CPU_BUILT_##s) (X (s, n))
#define TSR_TEST_EACH_LEVEL(X) TSR_CPU_LEVELS (TSR_TEST_LEVEL_ONE, X)

/* Whether the CPU runs the level named NAME, from the device
   description's "this CPU runs: ..." list.  */
static int
tsr_test_level_runnable (const char *name)
{
  tsr_device *cpu = tsr_device_by_name ("cpu");
  const char *d = cpu ? tsr_device_description (cpu) : "";
  const char *p = strstr (d, "this CPU runs: ");
  char word[64];
  int n;

  if (!p)
    return 0;
  p += strlen ("this CPU runs: ");
  while (sscanf (p, "%63[^ );]%n", word, &n) == 1)
    {
      if (strcmp (word, name) == 0)
        return 1;
      p += n;
      while (*p == ' ')
        p++;
    }
  return 0;
}

/* Whether to test level NAME here: the CPU runs it; otherwise it is
   reported UNSUPPORTED.  */
static int
tsr_test_level_begin (const char *name)
{
  if (tsr_test_level_runnable (name))
    return 1;
  tsr_test_unsupported ("level %s: this CPU cannot run it", name);
  return 0;
}

/* An integer dot kernel of cpu-vec.h: OUT[r NY + c] for NR weight rows
   BX bytes apart and NY activation rows.  */
typedef void (*tsr_test_qdot_fn) (int64_t k, const void *x, size_t bx,
                                  int nr, int ny, const void *const *y,
                                  float *out);

/* DOT on three consecutive weight rows, as a tensor's rows lie: W (K
   elements of TYPE) in the middle, between two other rows (W's bytes
   rotated); OUT gets W's NY results.  Returns how many results of the
   other rows differ from those of DOT called on each row alone (each
   row is computed the same way whatever the number of rows, so none
   may; a wrong row stride or result index shows here or in W's).  */
static int
tsr_test_qdot_rows (tsr_test_qdot_fn dot, tsr_type type, int64_t k,
                    const void *w, int ny, const void *const *ys, float *out)
{
  enum { ROWS = 3, MAX_NY = 8, MAX_ROW = 64 * 1024 };
  static _Alignas (64) char rows[ROWS * MAX_ROW];
  float all[ROWS * MAX_NY], alone[MAX_NY];
  size_t bx = tsr_row_size (type, k);
  int diff = 0;

  if (bx > MAX_ROW || ny > MAX_NY)
    return 1;
  for (int r = 0; r < ROWS; r++)
    for (size_t i = 0; i < bx; i++)
      rows[r * bx + i] = ((const char *) w)[(i + (r - 1) * 7 + bx) % bx];
  dot (k, rows, bx, ROWS, ny, ys, all);
  for (int r = 0; r < ROWS; r += 2)
    {
      dot (k, rows + r * bx, 0, 1, ny, ys, alone);
      diff += memcmp (all + r * ny, alone, ny * sizeof *all) != 0;
    }
  memcpy (out, all + ny, ny * sizeof *all);
  return diff;
}

#endif /* TSR_TEST_CPU_LEVELS_H */
