/* unbounded.c - small inputs must not buy unbounded work or memory
 * (issue 17, class 4).
 *
 * - Names chosen to collide in the name hash: 262144 keys that all
 *   collide in the low 20 bits of FNV-1a (the hash Tessera used before;
 *   built as a multicollision, a chain of colliding 3-byte blocks, since
 *   FNV's low bits depend only on low bits).  With an unkeyed hash every
 *   lookup walked one chain: quadratic, minutes.  The keyed hash makes
 *   such inputs impossible to choose; the file must parse, and every key
 *   be found, under a generous deadline.
 * - Many tensors and keys through the writer and tsr_gguf_new_tensors
 *   (each duplicate check was a scan of all before it).
 * - A file claiming more entries than it holds: the reader allocates
 *   for the entries it finds, not the count claimed (checked under a
 *   data-size limit in a child process).
 * - tessera-gguf convert of a tensor of 0 x 2^40 elements (2^40 empty
 *   rows): nothing to convert, at once.
 * - The keyed hash itself is SipHash-2-4, checked against the test
 *   vectors of its paper.  */
#include <sys/resource.h>
#include <sys/wait.h>
#include "gguf-test.h"
#include "../../lib/core/siphash.h"

#define N_STEPS 18                      /* 2^18 colliding keys */
#define FNV_BITS 20

static uint32_t
fnv_step (uint32_t h, unsigned char c)
{
  /* FNV-1a's step, modulo 2^FNV_BITS (the low bits only depend on the
     low bits of the state).  */
  return (uint32_t) (((h ^ c) * 0x100000001b3ULL) & ((1u << FNV_BITS) - 1));
}

/* Two different 3-byte blocks (bytes 1 to 255: names hold no NUL)
   taking state H to the same state; false when none (then the test is
   unsupported).  Two-byte blocks never collide (FNV's prime is 435
   modulo 2^20, so one byte's difference cannot be cancelled by the
   next); among 3-byte blocks a collision turns up after about 2^10.  */
static void
block_of (int i, char out[3])
{
  out[0] = (char) (1 + i / (255 * 255));
  out[1] = (char) (1 + i / 255 % 255);
  out[2] = (char) (1 + i % 255);
}

static bool
colliding_blocks (uint32_t h, char a[3], char b[3], uint32_t *next)
{
  static int32_t seen[1u << FNV_BITS];
  memset (seen, -1, sizeof seen);
  for (int i = 0; i < 255 * 255 * 255; i++)
    {
      char blk[3];
      block_of (i, blk);
      uint32_t s = h;
      for (int k = 0; k < 3; k++)
        s = fnv_step (s, (unsigned char) blk[k]);
      if (seen[s] >= 0)
        {
          block_of (seen[s], a);
          memcpy (b, blk, 3);
          *next = s;
          return true;
        }
      seen[s] = i;
    }
  return false;
}

static uint32_t
fnv_low (const char *s, size_t n)
{
  uint32_t h = (uint32_t) (0xcbf29ce484222325ULL & ((1u << FNV_BITS) - 1));
  for (size_t i = 0; i < n; i++)
    h = fnv_step (h, (unsigned char) s[i]);
  return h;
}

static void
colliding_keys (void)
{
  char blocks[N_STEPS][2][3];
  uint32_t h = fnv_low ("k", 1);
  for (int s = 0; s < N_STEPS; s++)
    if (!colliding_blocks (h, blocks[s][0], blocks[s][1], &h))
      {
        tsr_test_unsupported ("colliding keys: no 3-byte collision found");
        return;
      }
  const uint64_t n = (uint64_t) 1 << N_STEPS;
  char key[2 + 3 * N_STEPS];
  struct gt_buf b = { 0 };
  gt_header (&b, 3, 0, n);
  for (uint64_t k = 0; k < n; k++)
    {
      key[0] = 'k';
      for (int s = 0; s < N_STEPS; s++)
        memcpy (key + 1 + 3 * s, blocks[s][(k >> s) & 1], 3);
      key[1 + 3 * N_STEPS] = '\0';
      gt_key (&b, key, GT_U32);
      gt_u32 (&b, (uint32_t) k);
    }
  /* The generator is right: the last key collides with the first.  */
  CHECK (fnv_low (key, strlen (key)) == h,
         "colliding keys: the keys collide under FNV-1a's low %d bits",
         FNV_BITS);
  tsr_test_deadline (60, "262144 colliding keys: parse and look up");
  tsr_gguf *g = tsr_gguf_from_memory (b.p, b.n, NULL);
  bool all = g && tsr_gguf_n_kv (g) == (int64_t) n;
  for (uint64_t k = 0; all && k < n; k += 97)
    {
      for (int s = 0; s < N_STEPS; s++)
        memcpy (key + 1 + 3 * s, blocks[s][(k >> s) & 1], 3);
      uint32_t v = 0;
      all = tsr_gguf_find_key (g, key) == (int64_t) k
            && tsr_gguf_get_u32 (g, key, &v) == TSR_OK && v == k;
    }
  alarm (0);
  CHECK (all, "colliding keys: %llu keys parsed and found%s%s",
         (unsigned long long) n, g ? "" : ": ", g ? "" : tsr_last_error ());
  tsr_gguf_close (g);
  gt_free (&b);
}

/* The writer and tsr_gguf_new_tensors with many names.  */
static void
many_names (void)
{
  enum { N = 150000 };
  tsr_test_deadline (60, "150000 tensors and keys: writer and new_tensors");
  tsr_context *ctx = tsr_context_new (true);
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  bool ok = ctx && w;
  char name[32];
  for (int i = 0; ok && i < N; i++)
    {
      tsr_tensor *t = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 1);
      snprintf (name, sizeof name, "t%d", i);
      tsr_set_name (t, name);
      static float one = 1;
      t->data = &one;
      snprintf (name, sizeof name, "key.%d", i);
      ok = t && tsr_gguf_writer_add_tensor (w, t) == TSR_OK
           && tsr_gguf_set_u32 (w, name, (uint32_t) i) == TSR_OK;
    }
  /* Duplicates are still refused, and a key set twice replaced.  */
  tsr_tensor *dup = ok ? tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 1) : NULL;
  static float two = 2;
  if (dup)
    {
      tsr_set_name (dup, "t77");
      dup->data = &two;
    }
  bool dup_refused = dup && tsr_gguf_writer_add_tensor (w, dup)
                              == TSR_ERR_INVALID_ARG;
  bool replaced = ok && tsr_gguf_set_u32 (w, "key.5", 55) == TSR_OK
                  && tsr_gguf_writer_n_kv (w) == N;
  void *mem = NULL;
  size_t size = 0;
  ok = ok && tsr_gguf_writer_write_memory (w, &mem, &size) == TSR_OK;
  tsr_gguf *g = ok ? tsr_gguf_from_memory (mem, size, NULL) : NULL;
  uint32_t v = 0;
  bool back = g && tsr_gguf_n_tensors (g) == N && tsr_gguf_n_kv (g) == N
              && tsr_gguf_get_u32 (g, "key.5", &v) == TSR_OK && v == 55
              && tsr_gguf_find_tensor (g, "t149999") == N - 1;
  /* Into a context that already holds some of the names.  */
  tsr_context *ctx2 = tsr_context_new (true);
  tsr_tensor *pre = ctx2 ? tsr_new_tensor_1d (ctx2, TSR_TYPE_F32, 1) : NULL;
  tsr_set_name (pre, "t123");
  bool matched = g && pre && tsr_gguf_new_tensors (g, ctx2) == TSR_OK;
  int64_t count = 0;
  for (tsr_tensor *t = ctx2 ? tsr_context_first_tensor (ctx2) : NULL; t;
       t = tsr_context_next_tensor (ctx2, t))
    count++;
  tsr_context *ctx3 = tsr_context_new (true);
  tsr_tensor *bad = ctx3 ? tsr_new_tensor_1d (ctx3, TSR_TYPE_F32, 2) : NULL;
  tsr_set_name (bad, "t124");      /* wrong shape: refused by name */
  bool shape = g && bad && tsr_gguf_new_tensors (g, ctx3) == TSR_ERR_SHAPE
               && strstr (tsr_last_error (), "'t124'");
  alarm (0);
  CHECK (ok && dup_refused && replaced,
         "many names: 150000 tensors and keys written, duplicate refused, "
         "key replaced");
  CHECK (back, "many names: read back");
  CHECK (matched && count == N,
         "many names: new_tensors matched the existing tensor (%lld "
         "tensors)", (long long) count);
  CHECK (shape, "many names: new_tensors refuses a shape mismatch by "
         "name: %s", tsr_last_error ());
  tsr_gguf_close (g);
  free (mem);
  tsr_gguf_writer_free (w);
  tsr_context_free (ctx);
  tsr_context_free (ctx2);
  tsr_context_free (ctx3);
}

/* A 1 MiB file claiming as many entries as such a file could hold, but
   garbage after the first: in a child whose data size is limited to
   what the file's entries could need, the reader reports the format
   error (an allocation for the claimed count would fail first).  */
static void
claimed_counts (void)
{
  const char *wrap = getenv ("TESSERA_TEST_WRAPPER");
#if defined(__SANITIZE_ADDRESS__)
  bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  bool sanitized = true;
#else
  bool sanitized = false;
#endif
#else
  bool sanitized = false;
#endif
  if (sanitized || (wrap && *wrap))
    {
      tsr_test_unsupported ("claimed counts: a data-size limit under a "
                            "sanitizer or wrapper");
      return;
    }
  enum { SIZE = 1 << 20 };
  struct gt_buf b = { 0 };
  /* The largest count the header check lets through: KVs of at least
     13 bytes in the bytes left.  */
  uint64_t left = SIZE - 24;
  gt_header (&b, 3, 0, left / 13);
  gt_key (&b, "a", GT_U8);
  gt_u8 (&b, 1);
  gt_u64 (&b, 5);                       /* a key of 5 bytes ... */
  while (b.n < SIZE)
    gt_u8 (&b, 0xff);                   /* ... then invalid UTF-8/type */
  /* One string array claiming a string per 8 bytes left.  */
  struct gt_buf a = { 0 };
  gt_header (&a, 3, 0, 1);
  gt_key (&a, "strings", GT_ARRAY);
  gt_u32 (&a, GT_STRING);
  gt_u64 (&a, (SIZE - a.n - 8) / 8);
  gt_str (&a, "one");
  gt_u64 (&a, (uint64_t) 1 << 40);      /* the second: too long */
  while (a.n < SIZE)
    gt_u8 (&a, 0);

  struct gt_buf *files[2] = { &b, &a };
  const char *what[2] = { "n_kv", "string array length" };
  for (int f = 0; f < 2; f++)
    {
      fflush (stdout);
      pid_t pid = fork ();
      if (pid == 0)
        {
          /* Room for the file's real entries several times over, not
             for the ~80000 claimed (8 MB and more).  */
          struct rlimit rl;
          FILE *statm = fopen ("/proc/self/statm", "r");
          unsigned long pages[7] = { 0 };
          if (!statm || fscanf (statm, "%lu %lu %lu %lu %lu %lu", &pages[0],
                                &pages[1], &pages[2], &pages[3], &pages[4],
                                &pages[5]) != 6)
            _exit (3);
          fclose (statm);
          unsigned long data = pages[5] * (unsigned long) sysconf
                                                 (_SC_PAGESIZE);
          rl.rlim_cur = rl.rlim_max = data + 512 * 1024;
          if (setrlimit (RLIMIT_DATA, &rl) != 0)
            _exit (3);
          struct tsr_gguf_error err = { 0 };
          tsr_gguf *g = tsr_gguf_from_memory (files[f]->p, files[f]->n,
                                              &err);
          _exit (g ? 4 : err.status == TSR_ERR_FORMAT ? 0
                       : err.status == TSR_ERR_NO_MEMORY ? 5 : 6);
        }
      int st = 0;
      if (pid > 0)
        waitpid (pid, &st, 0);
      int code = pid > 0 && WIFEXITED (st) ? WEXITSTATUS (st) : -1;
      if (code == 3)
        tsr_test_unsupported ("claimed counts (%s): no /proc/self/statm "
                              "or RLIMIT_DATA", what[f]);
      else
        CHECK (code == 0, "claimed counts (%s): format error, not an "
               "allocation for the claimed count (child exit %d: 4 parsed, "
               "5 out of memory)", what[f], code);
    }
  gt_free (&a);
  gt_free (&b);
}

/* tessera-gguf convert of a 0 x 2^40 tensor.  */
static void
empty_rows (void)
{
  const char *bld = getenv ("TSR_TEST_BUILDDIR");
  if (!bld)
    {
      tsr_test_unsupported ("empty rows: TSR_TEST_BUILDDIR not set");
      return;
    }
  struct gt_buf b = { 0 };
  uint64_t ne[2] = { 0, (uint64_t) 1 << 40 };
  gt_header (&b, 3, 1, 0);
  gt_tensor_info (&b, "empty", 2, ne, GT_TYPE_F32, 0);
  gt_pad (&b, 32);
  char in[4200], out[4200];
  snprintf (in, sizeof in, "%s", gt_path ("unbounded-in"));
  snprintf (out, sizeof out, "%s", gt_path ("unbounded-out"));
  FILE *f = fopen (in, "wb");
  bool written = f && fwrite (b.p, 1, b.n, f) == b.n;
  if (f)
    fclose (f);
  char cmd[9000], text[2000];
  /* timeout(1) ends a hang; its status 124 is a failure.  */
  snprintf (cmd, sizeof cmd, "timeout -s KILL 60 %s/tools/tessera-gguf "
            "convert --type=q8_0 %s %s 2>&1", bld, in, out);
  FILE *p = written ? popen (cmd, "r") : NULL;
  size_t n = p ? fread (text, 1, sizeof text - 1, p) : 0;
  text[n] = '\0';
  int st = p ? pclose (p) : -1;
  tsr_gguf *g = tsr_gguf_open (out, NULL);
  struct tsr_gguf_tensor_info info = { 0 };
  bool ok = WIFEXITED (st) && WEXITSTATUS (st) == 0 && g
            && tsr_gguf_get_tensor_info (g, 0, &info) == TSR_OK
            && info.type == TSR_TYPE_Q8_0 && info.ne[0] == 0
            && info.ne[1] == (int64_t) 1 << 40 && info.size == 0;
  CHECK (ok, "empty rows: convert of a 0 x 2^40 tensor ends at once: %s",
         text);
  tsr_gguf_close (g);
  remove (in);
  remove (out);
  gt_free (&b);
}

static void
siphash_vectors (void)
{
  /* From the SipHash paper: key 00 01 .. 0f, messages 00 01 .. (n-1).  */
  static const uint64_t want[] = {
    [0] = 0x726fdb47dd0e0e31ULL, [15] = 0xa129ca6149be45e5ULL,
    [63] = 0x958a324ceb064572ULL
  };
  unsigned char k[16], m[64];
  for (int i = 0; i < 16; i++)
    k[i] = (unsigned char) i;
  for (int i = 0; i < 64; i++)
    m[i] = (unsigned char) i;
  uint64_t key[2] = { tsri_sip_word (k, 8), tsri_sip_word (k + 8, 8) };
  int lens[] = { 0, 15, 63 };
  for (int i = 0; i < 3; i++)
    CHECK (tsri_siphash24 (key, m, (size_t) lens[i]) == want[lens[i]],
           "siphash-2-4: the paper's vector for %d bytes", lens[i]);
}

int
main (void)
{
  siphash_vectors ();
  colliding_keys ();
  many_names ();
  claimed_counts ();
  empty_rows ();
  return TSR_TEST_EXIT ();
}
