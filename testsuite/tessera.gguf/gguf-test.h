/* gguf-test.h - helpers shared by the tessera.gguf test programs.
 *
 * A byte builder that writes GGUF fields as the published format
 * describes them (little-endian integers, strings as a u64 length and
 * the bytes), independent of Tessera's writer, and checks on reading
 * such bytes back.  */
#ifndef GGUF_TEST_H
#define GGUF_TEST_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>
#include <tessera.h>
#include "tsr-test.h"

/* Format constants, spelled out from the format description.  */
enum
{
  GT_U8 = 0, GT_I8, GT_U16, GT_I16, GT_U32, GT_I32, GT_F32, GT_BOOL,
  GT_STRING, GT_ARRAY, GT_U64, GT_I64, GT_F64
};
enum
{
  GT_TYPE_F32 = 0, GT_TYPE_F16 = 1, GT_TYPE_Q4_0 = 2, GT_TYPE_Q8_0 = 8,
  GT_TYPE_I32 = 26, GT_TYPE_BF16 = 30
};

struct gt_buf
{
  unsigned char *p;
  size_t n, cap;
};

static void
gt_bytes (struct gt_buf *b, const void *data, size_t n)
{
  if (b->n + n > b->cap)
    {
      b->cap = (b->n + n) * 2 + 64;
      b->p = realloc (b->p, b->cap);
      if (!b->p)
        abort ();
    }
  if (n)
    memcpy (b->p + b->n, data, n);
  b->n += n;
}

static void
gt_le (struct gt_buf *b, uint64_t v, int size)
{
  for (int i = 0; i < size; i++)
    {
      unsigned char c = (unsigned char) (v >> (8 * i));
      gt_bytes (b, &c, 1);
    }
}

#define gt_u8(b, v) gt_le (b, (uint8_t) (v), 1)
#define gt_u16(b, v) gt_le (b, (uint16_t) (v), 2)
#define gt_u32(b, v) gt_le (b, (uint32_t) (v), 4)
#define gt_u64(b, v) gt_le (b, (uint64_t) (v), 8)

static void
gt_f32 (struct gt_buf *b, float f)
{
  uint32_t u;
  memcpy (&u, &f, 4);
  gt_u32 (b, u);
}

static void
gt_f64 (struct gt_buf *b, double f)
{
  uint64_t u;
  memcpy (&u, &f, 8);
  gt_u64 (b, u);
}

static void
gt_str (struct gt_buf *b, const char *s)
{
  gt_u64 (b, strlen (s));
  gt_bytes (b, s, strlen (s));
}

/* Header: magic, version, tensor count, KV count.  */
static void
gt_header (struct gt_buf *b, uint32_t version, uint64_t n_tensors,
           uint64_t n_kv)
{
  gt_bytes (b, "GGUF", 4);
  gt_u32 (b, version);
  gt_u64 (b, n_tensors);
  gt_u64 (b, n_kv);
}

/* A key and its value type (the value follows).  */
static void
gt_key (struct gt_buf *b, const char *key, uint32_t type)
{
  gt_str (b, key);
  gt_u32 (b, type);
}

/* A tensor info with N_DIMS dims NE.  */
static void
gt_tensor_info (struct gt_buf *b, const char *name, uint32_t n_dims,
                const uint64_t *ne, uint32_t type, uint64_t offset)
{
  gt_str (b, name);
  gt_u32 (b, n_dims);
  for (uint32_t i = 0; i < n_dims; i++)
    gt_u64 (b, ne[i]);
  gt_u32 (b, type);
  gt_u64 (b, offset);
}

static void
gt_pad (struct gt_buf *b, size_t alignment)
{
  while (b->n % alignment)
    gt_u8 (b, 0);
}

static void
gt_free (struct gt_buf *b)
{
  free (b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

/* A file name under the build tree for test program NAME.  */
static const char *
gt_path (const char *name)
{
  static char path[4096];
  const char *dir = getenv ("TSR_TEST_BUILDDIR");
  snprintf (path, sizeof path, "%s/testsuite/bin/%s-%ld.gguf",
            dir ? dir : ".", name, (long) getpid ());
  return path;
}

/* Run BLD/tools/tessera-gguf with the arguments FMT..., its standard
   output and error into OUT (SIZE bytes, truncated); returns its exit
   status, or -1 when it did not exit.  */
static inline int
gt_run_tool (const char *bld, char *out, size_t size, const char *fmt, ...)
{
  char args[8192], cmd[12288];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (args, sizeof args, fmt, ap);
  va_end (ap);
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-gguf %s 2>&1", bld, args);
  FILE *p = popen (cmd, "r");
  size_t n = p ? fread (out, 1, size - 1, p) : 0;
  out[n] = '\0';
  int st = p ? pclose (p) : -1;
  return WIFEXITED (st) ? WEXITSTATUS (st) : -1;
}

#endif /* GGUF_TEST_H */
