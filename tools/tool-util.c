/* tool-util.c - helpers shared by the command-line tools (tool-util.h).  */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdbool.h>
#include <time.h>
#include <sys/stat.h>
#ifdef __linux__
#include <sys/sysmacros.h>          /* major, minor */
#endif

#include <tessera/module.h>  /* tsr_host_buffer_type */

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

void
tt_check_optarg (const char *program, const struct option *opts, int c,
                 const char *arg, const char *allow_empty)
{
  if (!arg || *arg || c <= 0 || (allow_empty && c < 256
                                 && strchr (allow_empty, c)))
    return;
  char name[64];
  snprintf (name, sizeof name, "-%c", c < 256 ? c : '?');
  for (const struct option *o = opts; o && o->name; o++)
    if (o->val == c && !o->flag)
      {
        snprintf (name, sizeof name, "--%s", o->name);
        break;
      }
  tt_usage_error (program, "option %s needs a value, not an empty "
                  "argument", name);
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
  char *copy = strdup (list);
  if (!copy)
    {
      fprintf (stderr, "out of memory\n");
      exit (1);
    }
  /* Every item, empty ones included ("1,,2", "cpu,"): EACH refuses an
     empty name like any other it does not know, rather than the list
     silently losing it.  */
  for (char *tok = copy, *end;; tok = end + 1)
    {
      end = strchr (tok, ',');
      if (end)
        *end = '\0';
      each (tok, data);
      if (!end)
        break;
    }
  free (copy);
}

const char *
tt_shown (const char *s)
{
  static _Thread_local char bufs[8][4096];
  static _Thread_local unsigned next;
  char *b = bufs[next++ % 8];
  tsr_escape_text (b, sizeof bufs[0], s ? s : "(null)");
  return b;
}

void
tt_print_escaped (const char *s, size_t n, FILE *f)
{
  char in[1024], out[4 * sizeof in];
  while (n)
    {
      /* A piece never ends before a UTF-8 continuation byte, so that no
         character is split and taken for malformed.  */
      size_t k = n < sizeof in - 1 ? n : sizeof in - 1;
      while (k < n && k > 1 && (s[k] & 0xc0) == 0x80)
        k--;
      memcpy (in, s, k);
      in[k] = '\0';
      tsr_escape_text (out, sizeof out, in);
      fputs (out, f);
      s += k;
      n -= k;
    }
}

/* The length of the valid UTF-8 character at S (N bytes left), or 0
   when the bytes there are not one (overlong forms, surrogates and
   code points above U+10FFFF included).  */
static size_t
utf8_char (const unsigned char *s, size_t n)
{
  size_t len = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
               : s[0] >= 0xe0 && s[0] <= 0xef ? 3
               : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
  if (len == 0 || len > n)
    return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)
      || (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
    return 0;
  return len;
}

void
tt_print_json_string (const char *s, size_t n, FILE *f)
{
  const unsigned char *p = (const unsigned char *) s;
  fputc ('"', f);
  while (n)
    {
      size_t len = utf8_char (p, n);
      if (len == 0)
        {
          fputs ("\\ufffd", f);       /* one byte that is no character */
          len = 1;
        }
      else if (*p == '"' || *p == '\\')
        fprintf (f, "\\%c", *p);
      else if (*p == '\n')
        fputs ("\\n", f);
      else if (*p == '\t')
        fputs ("\\t", f);
      else if (*p < 0x20 || *p == 0x7f)
        fprintf (f, "\\u%04x", *p);
      else
        fwrite (p, 1, len, f);
      p += len;
      n -= len;
    }
  fputc ('"', f);
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

/* Memory read bandwidth.  */

enum { BW_BYTES = 1 << 30, BW_PASSES = 5 };

struct bw_slice
{
  const uint64_t *p;
  size_t n;
  uint64_t sum;
};

/* Bytes prefetched ahead, every line, as the CPU's matrix-vector
   kernels do: at times on a shared machine 64-byte loads alone read
   28 GB/s where prefetched ones read 40 and the kernels 30-40, above
   their roof.  */
#define BW_AHEAD 8192
#if defined(__GNUC__)
# define BW_PREFETCH(p) __builtin_prefetch (p)
#else
# define BW_PREFETCH(p) ((void) (p))
#endif

/* The XOR of the N words at P, read with independent sums of VT
   vectors (loads not serialized by one add chain; a scalar loop cannot
   issue loads fast enough to reach the memory's speed).  */
#define BW_SUM_BODY(VT)                                                 \
  {                                                                     \
    const size_t per = sizeof (VT) / sizeof (uint64_t);                 \
    VT a0, a1, a2, a3, v0, v1, v2, v3;                                  \
    uint64_t sum = 0;                                                   \
    size_t i = 0;                                                       \
    memset (&a0, 0, sizeof a0);                                         \
    a1 = a2 = a3 = a0;                                                  \
    /* Named accumulators: an array of them stayed in memory at -O2,  \
       a store and a reload per vector.  */                             \
    for (; i + 4 * per <= n; i += 4 * per)                              \
      {                                                                 \
        for (size_t l = 0; l < 4 * sizeof v0; l += 64)                  \
          BW_PREFETCH ((const char *) (p + i) + BW_AHEAD + l);          \
        memcpy (&v0, p + i, sizeof v0);                                 \
        memcpy (&v1, p + i + per, sizeof v1);                           \
        memcpy (&v2, p + i + 2 * per, sizeof v2);                       \
        memcpy (&v3, p + i + 3 * per, sizeof v3);                       \
        a0 += v0;                                                       \
        a1 += v1;                                                       \
        a2 += v2;                                                       \
        a3 += v3;                                                       \
      }                                                                 \
    for (; i < n; i++)                                                  \
      sum += p[i];                                                      \
    a0 += a1 + a2 + a3;                                                 \
    for (size_t e = 0; e < per; e++)                                    \
      {                                                                 \
        uint64_t w;                                                     \
        memcpy (&w, (const char *) &a0 + e * sizeof w, sizeof w);       \
        sum ^= w;                                                       \
      }                                                                 \
    return sum;                                                         \
  }

/* With GCC's vector extension, 16-byte vectors (SSE2, the x86-64
   baseline); 32- and 64-byte ones where the compiler takes a function
   target attribute and the CPU has AVX2 / AVX-512 (configure checks
   both): on two Zen 5 cores 16-byte loads read 45 GB/s where 64-byte
   ones read 55-60, less than the matrix-vector products themselves
   read, so the roof was too low.  */
#if defined(__GNUC__)
typedef uint64_t bw_vec __attribute__ ((vector_size (16)));
#else
typedef uint64_t bw_vec;
#endif

static uint64_t
bw_sum (const uint64_t *p, size_t n)
BW_SUM_BODY (bw_vec)

#if TSR_HAVE_TARGET_X86_VECTORS
typedef uint64_t bw_vec32 __attribute__ ((vector_size (32)));
typedef uint64_t bw_vec64 __attribute__ ((vector_size (64)));

__attribute__ ((target ("avx2"))) static uint64_t
bw_sum_avx2 (const uint64_t *p, size_t n)
BW_SUM_BODY (bw_vec32)

__attribute__ ((target ("avx512f"))) static uint64_t
bw_sum_avx512 (const uint64_t *p, size_t n)
BW_SUM_BODY (bw_vec64)
#endif

static void *
bw_read (void *arg)
{
  struct bw_slice *s = arg;

#if TSR_HAVE_TARGET_X86_VECTORS
  if (__builtin_cpu_supports ("avx512f"))
    s->sum = bw_sum_avx512 (s->p, s->n);
  else if (__builtin_cpu_supports ("avx2"))
    s->sum = bw_sum_avx2 (s->p, s->n);
  else
#endif
    s->sum = bw_sum (s->p, s->n);
  return NULL;
}

static volatile uint64_t bw_sink;

double
tt_read_bandwidth (int threads)
{
  if (threads < 1 || threads > 256)
    threads = 1;
  /* Memory as weights get it: a host buffer (2 MiB-aligned, asking
     for transparent huge pages).  Read from 4 KiB pages of plain
     malloc the roof came out 15-20% below what the matrix-vector
     products read from their buffers.  */
  tsr_buffer *hb = tsr_buffer_type_alloc (tsr_host_buffer_type (), BW_BYTES);
  uint64_t *buf = hb ? tsr_buffer_base (hb) : NULL;
  struct bw_slice sl[256];
  pthread_t tid[256];
  double best = 0;
  if (!buf)
    {
      tsr_buffer_free (hb);
      return 0;
    }
  memset (buf, 1, BW_BYTES);            /* fault the pages in */
  size_t n = BW_BYTES / sizeof *buf, per = n / (size_t) threads;
  for (int pass = 0; pass < BW_PASSES; pass++)
    {
      double t0 = tt_now_us ();
      bool started[256] = { false };
      for (int t = 0; t < threads; t++)
        sl[t] = (struct bw_slice) { buf + (size_t) t * per,
                                    t == threads - 1 ? n - t * per : per, 0 };
      for (int t = 1; t < threads; t++)
        started[t] = pthread_create (&tid[t], NULL, bw_read, &sl[t]) == 0;
      bw_read (&sl[0]);
      for (int t = 1; t < threads; t++)
        if (started[t])
          pthread_join (tid[t], NULL);
        else
          bw_read (&sl[t]);
      double us = tt_now_us () - t0;
      for (int t = 0; t < threads; t++)
        bw_sink ^= sl[t].sum;
      double gbps = us > 0 ? BW_BYTES / (us * 1e3) : 0;
      best = gbps > best ? gbps : best;
    }
  tsr_buffer_free (hb);
  /* The best pass: a shared machine only ever slows a pass down, and
     with the median the products of the same run sometimes read
     faster than their roof.  */
  return best;
}

/* The read bandwidth of BE's memory: the sum of a 1 GiB f32 tensor
   ([4096, 65536], so that a device spreads the rows over its cores),
   or the sums of its rows, computed by BE: the best of the passes
   after a first one, five at most, fewer once a second has gone by
   (a slow device: PoCL's).  0 when the tensor cannot be had or the
   backend cannot run either op.  */
double
tt_device_bandwidth (tsr_backend *be)
{
  enum { COLS = 4096, ROWS = BW_BYTES / 4 / COLS, CHUNK = 64 };
  double best = 0, spent = 0;
  float *zero = calloc ((size_t) COLS * CHUNK, sizeof *zero);
  tsr_context *ctx = zero ? tsr_context_new (true) : NULL;
  tsr_gallocr *ga = NULL;
  tsr_tensor *x = ctx ? tsr_new_tensor_2d (ctx, TSR_TYPE_F32, COLS, ROWS)
                      : NULL;
  /* Not every backend sums everything; the sums of the rows read as
     much.  */
  tsr_tensor *out = x ? tsr_sum (ctx, x) : NULL;
  if (x && (!out || !tsr_backend_supports_op (be, out)))
    out = tsr_sum_rows (ctx, x);
  tsr_graph *g = out ? tsr_graph_new (ctx) : NULL;
  bool ok = g && tsr_graph_build (g, out) == TSR_OK
            && tsr_backend_supports_op (be, out)
            && (ga = tsr_gallocr_new (tsr_backend_buffer_type (be)))
            && tsr_gallocr_alloc_graph (ga, g) == TSR_OK;
  /* Defined contents, 1 MiB at a time.  */
  size_t chunk = sizeof *zero * COLS * CHUNK;
  for (size_t r = 0; r < ROWS / CHUNK && ok; r++)
    ok = tsr_tensor_set (x, zero, r * chunk, chunk) == TSR_OK;
  for (int pass = 0; ok && pass <= BW_PASSES; pass++)
    {
      double t0 = tt_now_us ();
      ok = tsr_backend_graph_compute (be, g) == TSR_OK
           && tsr_backend_synchronize (be) == TSR_OK;
      double us = tt_now_us () - t0;
      double gbps = us > 0 ? BW_BYTES / (us * 1e3) : 0;
      if (ok && pass > 0 && gbps > best)        /* pass 0 warms */
        best = gbps;
      spent += us;
      if (pass > 0 && spent > 1e6)
        break;
    }
  tsr_gallocr_free (ga);
  tsr_context_free (ctx);
  free (zero);
  return ok ? best : 0;
}

/* How much of the mapping of PATH in this process the kernel maps with
   2 MiB pages (FilePmdMapped in /proc/self/smaps, Linux).  */
bool
tt_mapped_pages (const char *path, uint64_t *kb, uint64_t *pmd_kb)
{
#ifdef __linux__
  struct stat st;
  FILE *f;
  char line[4352];
  bool mine = false, found = false;

  *kb = *pmd_kb = 0;
  if (stat (path, &st) != 0 || !(f = fopen ("/proc/self/smaps", "r")))
    return false;
  while (fgets (line, sizeof line, f))
    {
      unsigned long long v, ino;
      unsigned maj, mnr;
      char key[64];
      /* A mapping's first line: range perms offset dev inode [path].  */
      if (sscanf (line, "%*[0-9a-f]-%*[0-9a-f] %*s %*[0-9a-f] %x:%x %llu",
                  &maj, &mnr, &ino) == 3)
        {
          mine = ino != 0 && ino == (unsigned long long) st.st_ino
                 && maj == major (st.st_dev) && mnr == minor (st.st_dev);
          found |= mine;
        }
      else if (mine && sscanf (line, "%63[^:]: %llu kB", key, &v) == 2)
        {
          if (strcmp (key, "Size") == 0)
            *kb += v;
          else if (strcmp (key, "FilePmdMapped") == 0)
            *pmd_kb += v;
        }
    }
  fclose (f);
  return found;
#else
  (void) path;
  *kb = *pmd_kb = 0;
  return false;
#endif
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

double
tt_median (double *v, int n)
{
  qsort (v, (size_t) n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
