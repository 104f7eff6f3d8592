/* tool-util.c - helpers shared by the command-line tools (tool-util.h).  */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tool-util.h"

static uint64_t
splitmix (uint64_t *s)
{
  uint64_t z = (*s += UINT64_C (0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

void
tt_rng_seed (struct tt_rng *r, uint64_t seed, const char *name, int stream)
{
  uint64_t h = UINT64_C (0xcbf29ce484222325);   /* FNV-1a of the name */
  for (const unsigned char *p = (const unsigned char *) name; *p; p++)
    h = (h ^ *p) * UINT64_C (0x100000001b3);
  r->s = seed ^ h ^ ((uint64_t) stream * UINT64_C (0xd1b54a32d192ed03));
  splitmix (&r->s);
}

uint64_t
tt_rng_next (struct tt_rng *r)
{
  return splitmix (&r->s);
}

double
tt_rng_uniform (struct tt_rng *r)
{
  return (double) (tt_rng_next (r) >> 11) * 0x1.0p-53;
}

double
tt_now_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

void
tt_usage_error (const char *program, const char *fmt, const char *arg)
{
  fprintf (stderr, "%s: ", program);
  fprintf (stderr, fmt, arg);
  fprintf (stderr, "\nTry '%s --help' for more information.\n", program);
  exit (2);
}

long long
tt_parse_number (const char *program, const char *arg, const char *what,
                 long long min, long long max)
{
  char *end;
  errno = 0;
  long long v = strtoll (arg, &end, 0);
  if (errno != 0 || end == arg || *end != '\0' || v < min || v > max)
    {
      fprintf (stderr, "%s: bad %s '%s' (want an integer in [%lld, %lld])\n"
               "Try '%s --help' for more information.\n", program, what,
               arg, min, max, program);
      exit (2);
    }
  return v;
}

void
tt_common_option (const char *program, int c, void (*usage) (FILE *))
{
  if (c == 'h')
    {
      usage (stdout);
      exit (0);
    }
  if (c == 'V')
    {
      printf ("%s (Tessera) %s\n", program, tsr_version ());
      exit (0);
    }
  fprintf (stderr, "Try '%s --help' for more information.\n", program);
  exit (2);
}

void
tt_for_each_name (const char *list,
                  void (*each) (const char *name, void *data), void *data)
{
  char *copy = strdup (list), *save = NULL;
  if (!copy)
    {
      fprintf (stderr, "out of memory\n");
      exit (1);
    }
  for (char *tok = strtok_r (copy, ",", &save); tok;
       tok = strtok_r (NULL, ",", &save))
    each (tok, data);
  free (copy);
}

void
tt_vmessage (char *buf, size_t size, const char *fmt, va_list ap)
{
  vsnprintf (buf, size, fmt, ap);
  for (char *p = buf; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t')
      *p = ' ';
}

tsr_op
tt_op_by_name (const char *name)
{
  for (int op = 0; op < TSR_OP_COUNT; op++)
    if (strcasecmp (tsr_op_name ((tsr_op) op), name) == 0)
      return (tsr_op) op;
  return TSR_OP_COUNT;
}

struct op_names
{
  const char *program;
  bool *ops;
};

static void
add_op (const char *name, void *data)
{
  struct op_names *x = data;
  tsr_op op = tt_op_by_name (name);
  if (op == TSR_OP_COUNT)
    tt_usage_error (x->program, "unknown operation '%s'", name);
  x->ops[op] = true;
}

void
tt_parse_ops (const char *program, const char *list, bool ops[TSR_OP_COUNT])
{
  struct op_names x = { program, ops };
  tt_for_each_name (list, add_op, &x);
}

int
tt_from_float (tsr_type type, const float *src, void *dst, int64_t n)
{
  const struct tsr_type_traits *tr = tsr_type_traits (type);
  if (type == TSR_TYPE_F32)
    memcpy (dst, src, (size_t) n * sizeof *src);
  else if (tr && tr->is_quantized)
    return tsr_quantize_row (type, src, dst, n);
  else if (tr && tr->from_float)
    tr->from_float (src, dst, n);
  else
    return TSR_ERR_TYPE;
  return TSR_OK;
}

size_t
tt_select_devices (const char *program, const char *name, tsr_device **devs)
{
  size_t n = tsr_device_count (), k = 0;
  for (size_t i = 0; i < n; i++)
    {
      tsr_device *dev = tsr_device_get (i);
      if (!name || strcasecmp (name, tsr_device_name (dev)) == 0)
        devs[k++] = dev;
    }
  if (name && k == 0)
    {
      fprintf (stderr, "%s: unknown device '%s'; devices:", program, name);
      for (size_t i = 0; i < n; i++)
        fprintf (stderr, " %s", tsr_device_name (tsr_device_get (i)));
      fprintf (stderr, "%s\n", n ? "" : " (none)");
      exit (2);
    }
  return k;
}
