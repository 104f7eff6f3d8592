/* cpu-levels.h - what the level programs of tessera.cpu share: the ISA
   levels built (cpu.exp defines TSR_TEST_LEVEL_<suffix> for each and
   links their libraries) and whether this CPU runs one.

   TSR_TEST_EACH_LEVEL (X) expands to X (suffix, name) for every level
   built, NAME as the device description spells it.  */
#ifndef TSR_TEST_CPU_LEVELS_H
#define TSR_TEST_CPU_LEVELS_H

#include <stdio.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

#ifdef TSR_TEST_LEVEL_x86_64
#define TSR_TEST_LEVEL_X86_64_(X) X (x86_64, "x86-64")
#else
#define TSR_TEST_LEVEL_X86_64_(X)
#endif
#ifdef TSR_TEST_LEVEL_v2
#define TSR_TEST_LEVEL_V2_(X) X (v2, "v2")
#else
#define TSR_TEST_LEVEL_V2_(X)
#endif
#ifdef TSR_TEST_LEVEL_v3
#define TSR_TEST_LEVEL_V3_(X) X (v3, "v3")
#else
#define TSR_TEST_LEVEL_V3_(X)
#endif
#ifdef TSR_TEST_LEVEL_v3vnni
#define TSR_TEST_LEVEL_V3VNNI_(X) X (v3vnni, "v3-vnni")
#else
#define TSR_TEST_LEVEL_V3VNNI_(X)
#endif
#ifdef TSR_TEST_LEVEL_v4
#define TSR_TEST_LEVEL_V4_(X) X (v4, "v4")
#else
#define TSR_TEST_LEVEL_V4_(X)
#endif
#ifdef TSR_TEST_LEVEL_v4vnni
#define TSR_TEST_LEVEL_V4VNNI_(X) X (v4vnni, "v4-vnni")
#else
#define TSR_TEST_LEVEL_V4VNNI_(X)
#endif
#ifdef TSR_TEST_LEVEL_armv8
#define TSR_TEST_LEVEL_ARMV8_(X) X (armv8, "armv8-a")
#else
#define TSR_TEST_LEVEL_ARMV8_(X)
#endif
#ifdef TSR_TEST_LEVEL_armv8_2
#define TSR_TEST_LEVEL_ARMV8_2_(X) X (armv8_2, "armv8.2-a")
#else
#define TSR_TEST_LEVEL_ARMV8_2_(X)
#endif
#ifdef TSR_TEST_LEVEL_armv8_6
#define TSR_TEST_LEVEL_ARMV8_6_(X) X (armv8_6, "armv8.6-a")
#else
#define TSR_TEST_LEVEL_ARMV8_6_(X)
#endif
#ifdef TSR_TEST_LEVEL_generic
#define TSR_TEST_LEVEL_GENERIC_(X) X (generic, "generic")
#else
#define TSR_TEST_LEVEL_GENERIC_(X)
#endif
#define TSR_TEST_EACH_LEVEL(X)                                          \
  TSR_TEST_LEVEL_X86_64_ (X) TSR_TEST_LEVEL_V2_ (X) TSR_TEST_LEVEL_V3_ (X) \
  TSR_TEST_LEVEL_V3VNNI_ (X) TSR_TEST_LEVEL_V4_ (X)                     \
  TSR_TEST_LEVEL_V4VNNI_ (X) TSR_TEST_LEVEL_ARMV8_ (X)                  \
  TSR_TEST_LEVEL_ARMV8_2_ (X) TSR_TEST_LEVEL_ARMV8_6_ (X)               \
  TSR_TEST_LEVEL_GENERIC_ (X)

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
