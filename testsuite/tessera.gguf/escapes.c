/* escapes.c - names from files never reach a terminal as commands, and
 * empty option arguments are refused (issue 17, classes 9 and 10).
 *
 * - tsr_escape_text against hand-written expectations: ESC, C1 controls
 *   (U+009B is a one-character CSI), DEL, bidirectional overrides,
 *   malformed UTF-8 become \xNN; printable UTF-8 stays.
 * - tessera-gguf dump (text and JSON) of a file whose keys, string
 *   values and tensor names carry such bytes prints none of them raw.
 * - Library messages quoting such a name are escaped.
 * - tessera-info with a module file whose name carries ESC.
 * - tessera-run's generated text on a terminal (script(1)) escapes the
 *   ESC sequences a vocabulary holds; into a pipe it is unchanged.
 * - Every tool refuses an empty option argument, and an empty item of a
 *   comma-separated list, with a usage error (exit 2).
 * - JSON output is valid UTF-8 whatever the bytes of a file's strings
 *   or of a model's path (issue 36): tessera-gguf dump --json writes a
 *   byte that is no character as \ufffd, a quote as \"; so does
 *   tessera-run --bench -f json for a path holding a quote and 0xff
 *   (it printed the path as it was: invalid JSON).  */
#include <sys/stat.h>
#include "gguf-test.h"

/* Bytes a terminal would act on: ESC, CSI (C2 9B), RLO (E2 80 AE), a
   bare C1 byte (9B), BEL.  */
static bool
has_raw_controls (const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      unsigned char c = (unsigned char) s[i];
      if (c == 0x1b || c == 0x07 || c == 0x9b)
        return true;
      if (c == 0xe2 && i + 2 < n && (unsigned char) s[i + 1] == 0x80
          && (unsigned char) s[i + 2] == 0xae)
        return true;
    }
  return false;
}

static void
escape_cases (void)
{
  static const struct { const char *in, *want; } cases[] = {
    { "plain name", "plain name" },
    { "a\033[31mred", "a\\x1b[31mred" },
    { "csi\xc2\x9b" "2J", "csi\\xc2\\x9b2J" },
    { "del\x7f", "del\\x7f" },
    { "rlo\xe2\x80\xae" "txt", "rlo\\xe2\\x80\\xaetxt" },
    { "bad\xff\xfe", "bad\\xff\\xfe" },
    { "cut\xe2\x82", "cut\\xe2\\x82" },
    { "overlong\xc0\xaf", "overlong\\xc0\\xaf" },
    { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },   /* é € 😀 stay */
    { "nl\nand\ttab", "nl\\x0aand\\x09tab" },
    { "back\\slash", "back\\slash" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      char out[256], twice[256];
      tsr_escape_text (out, sizeof out, cases[i].in);
      tsr_escape_text (twice, sizeof twice, out);
      CHECK (strcmp (out, cases[i].want) == 0 && strcmp (twice, out) == 0,
             "tsr_escape_text case %zu: '%s' (want '%s'; idempotent)", i,
             out, cases[i].want);
    }
  char small[8];
  size_t n = tsr_escape_text (small, sizeof small, "ab\033cdef");
  CHECK (n == strlen (small) && strcmp (small, "ab\\x1bc") == 0,
         "tsr_escape_text: cut to the buffer, never inside an escape (%s)",
         small);
}

/* Whether the N bytes at S are valid UTF-8 (no overlong forms, no
   surrogates, nothing above U+10FFFF), checked here independently of
   the tools.  */
static bool
valid_utf8 (const char *s, size_t n)
{
  const unsigned char *p = (const unsigned char *) s;
  for (size_t i = 0; i < n;)
    {
      unsigned c = p[i];
      size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
                   : (c >> 3) == 30 ? 4 : 0;
      if (len == 0 || i + len > n)
        return false;
      uint32_t cp = len == 1 ? c : c & (0x7f >> len);
      for (size_t k = 1; k < len; k++)
        {
          if ((p[i + k] & 0xc0) != 0x80)
            return false;
          cp = cp << 6 | (p[i + k] & 0x3f);
        }
      static const uint32_t least[5] = { 0, 0, 0x80, 0x800, 0x10000 };
      if (cp < least[len] || cp > 0x10ffff
          || (cp >= 0xd800 && cp <= 0xdfff))
        return false;
      i += len;
    }
  return true;
}

static char out_buf[1 << 16];

/* Run CMD (a shell command) into out_buf; its exit status.  */
static int
run (const char *cmd)
{
  FILE *p = popen (cmd, "r");
  size_t n = p ? fread (out_buf, 1, sizeof out_buf - 1, p) : 0;
  out_buf[n] = '\0';
  int st = p ? pclose (p) : -1;
  return WIFEXITED (st) ? WEXITSTATUS (st) : -1;
}

static void
dump_case (const char *bld, const char *dir)
{
  static const char evil[] = "k\033]0;owned\007\xc2\x9b" "2J\xe2\x80\xae";
  struct gt_buf b = { 0 };
  uint64_t ne[1] = { 8 };
  gt_header (&b, 3, 1, 2);
  gt_key (&b, evil, GT_U32);
  gt_u32 (&b, 7);
  gt_key (&b, "general.name", GT_STRING);
  gt_str (&b, "model\033[2J\xff");
  gt_tensor_info (&b, "t\033[1m\xc2\x9b", 1, ne, GT_TYPE_F32, 0);
  gt_pad (&b, 32);
  for (int i = 0; i < 8; i++)
    gt_f32 (&b, 0);
  char path[4200], cmd[8600];
  snprintf (path, sizeof path, "%s/evil.gguf", dir);
  FILE *f = fopen (path, "wb");
  if (f)
    {
      fwrite (b.p, 1, b.n, f);
      fclose (f);
    }
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-gguf dump %s 2>&1", bld,
            path);
  int st = run (cmd);
  CHECK (st == 0 && !has_raw_controls (out_buf, strlen (out_buf))
         && strstr (out_buf, "k\\x1b]0;owned\\x07\\xc2\\x9b2J\\xe2\\x80\\xae")
         && strstr (out_buf, "\"model\\x1b[2J\\xff\"")
         && strstr (out_buf, "t\\x1b[1m\\xc2\\x9b"),
         "dump: keys, strings and tensor names escaped:\n%s", out_buf);
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-gguf dump --json %s 2>&1",
            bld, path);
  st = run (cmd);
  CHECK (st == 0 && !memchr (out_buf, 0x1b, strlen (out_buf))
         && !memchr (out_buf, 0x07, strlen (out_buf)),
         "dump --json: control characters escaped by JSON's rules");
  CHECK (valid_utf8 (out_buf, strlen (out_buf))
         && strstr (out_buf, "\"model\\u001b[2J\\ufffd\""),
         "dump --json: valid UTF-8, a byte that is no character as "
         "\\ufffd:\n%s", out_buf);

  /* A library message quoting the name.  */
  tsr_gguf *g = tsr_gguf_from_memory (b.p, b.n, NULL);
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *t = ctx ? tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 9) : NULL;
  tsr_set_name (t, "t\033[1m\xc2\x9b");
  int s = g && t ? tsr_gguf_new_tensors (g, ctx) : -1;
  const char *msg = tsr_last_error ();
  CHECK (s == TSR_ERR_SHAPE && !has_raw_controls (msg, strlen (msg))
         && strstr (msg, "t\\x1b[1m\\xc2\\x9b"),
         "library message quoting a file's name is escaped (%s)", msg);
  tsr_context_free (ctx);
  tsr_gguf_close (g);
  remove (path);
  gt_free (&b);
}

static void
info_case (const char *bld, const char *dir)
{
  char path[4200], cmd[8600];
  snprintf (path, sizeof path, "%s/tessera-\033[31mx.so", dir);
  FILE *f = fopen (path, "w");
  if (f)
    {
      fputs ("not a library\n", f);
      fclose (f);
    }
  snprintf (cmd, sizeof cmd, "TESSERA_BACKEND_PATH='%s' %s/tools/tessera-info "
            "2>/dev/null", dir, bld);
  int st = run (cmd);
  CHECK (f && st == 0 && !has_raw_controls (out_buf, strlen (out_buf))
         && strstr (out_buf, "tessera-\\x1b[31mx"),
         "tessera-info: a module file name with ESC is escaped:\n%s",
         out_buf);
  remove (path);
}

/* tessera-run's generated text on a terminal: a model whose every
   token is "\033[31mN" (ESC sequences in the vocabulary), run under
   script(1) so that its standard output is a terminal; and into a pipe,
   where the text goes as it is.  */
static void
run_text_case (const char *bld, const char *dir)
{
  char tiny[4200], evil[4200], cmd[13000];
  snprintf (tiny, sizeof tiny, "%s/tiny.gguf", dir);
  snprintf (evil, sizeof evil, "%s/evil-vocab.gguf", dir);
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-gguf synth --tokenizer=llama "
            "%s 2>&1", bld, tiny);
  if (run (cmd) != 0 || run ("command -v script >/dev/null") != 0)
    {
      tsr_test_unsupported ("tessera-run on a terminal: no synth model or "
                            "no script(1)");
      return;
    }
  tsr_gguf *g = tsr_gguf_open (tiny, NULL);
  uint64_t n = 0;
  tsr_gguf_type et;
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_context *ctx = tsr_context_new (false);
  bool ok = g && w && ctx
            && tsr_gguf_get_array_info (g, "tokenizer.ggml.tokens", &et, &n)
               == TSR_OK
            && tsr_gguf_writer_copy_kv (w, g) == TSR_OK
            && tsr_gguf_new_tensors (g, ctx) == TSR_OK;
  char **toks = ok ? calloc (n, sizeof *toks) : NULL;
  for (uint64_t i = 0; toks && i < n; i++)
    {
      toks[i] = malloc (32);
      snprintf (toks[i], 32, "\033[31m%llu", (unsigned long long) i);
    }
  /* Every token an ordinary one (no byte or control tokens, whose text
     is not printed as it is).  */
  int32_t *types = ok ? malloc (n * sizeof *types) : NULL;
  for (uint64_t i = 0; types && i < n; i++)
    types[i] = 1;
  ok = ok && toks && types
       && tsr_gguf_set_array_str (w, "tokenizer.ggml.tokens",
                                  (const char *const *) toks, n) == TSR_OK
       && tsr_gguf_set_array (w, "tokenizer.ggml.token_type", TSR_GGUF_INT32,
                              types, n) == TSR_OK;
  free (types);
  for (tsr_tensor *t = ok ? tsr_context_first_tensor (ctx) : NULL; t;
       t = tsr_context_next_tensor (ctx, t))
    ok = ok && tsr_gguf_writer_add_tensor (w, t) == TSR_OK;
  ok = ok && tsr_gguf_writer_write_file (w, evil) == TSR_OK;
  for (uint64_t i = 0; toks && i < n; i++)
    free (toks[i]);
  free (toks);
  tsr_gguf_writer_free (w);
  tsr_context_free (ctx);
  tsr_gguf_close (g);
  CHECK (ok, "a model whose tokens hold ESC sequences is written (%s)",
         tsr_last_error ());
  if (!ok)
    return;
  snprintf (cmd, sizeof cmd, "script -qec '%s/tools/tessera-run -m %s "
            "--tokens=1 -n 4 2>/dev/null' /dev/null", bld, evil);
  int st = run (cmd);
  CHECK (st == 0 && !memchr (out_buf, 0x1b, strlen (out_buf))
         && strstr (out_buf, "\\x1b[31m"),
         "tessera-run on a terminal shows ESC as \\x1b: %s", out_buf);
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-run -m %s --tokens=1 -n 4 "
            "2>/dev/null", bld, evil);
  st = run (cmd);
  CHECK (st == 0 && memchr (out_buf, 0x1b, strlen (out_buf)),
         "into a pipe the generated text is unchanged");
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-run -m %s --tokens=1,,2 "
            "-n 1 2>&1", bld, evil);
  st = run (cmd);
  CHECK (st == 2 && strstr (out_buf, "''"), "an empty item of --tokens is "
         "refused (exit %d: %s)", st, out_buf);
  remove (evil);
  remove (tiny);
}

static void
empty_arguments (const char *bld)
{
  static const char *const cmds[] = {
    "tessera-info --load=", "tessera-info -L ''", "tessera-gguf --type= "
    "convert a b", "tessera-gguf convert -T '' a b",
    "tessera-gguf synth --arch= x", "tessera-bench --op=",
    "tessera-bench --device ''", "tessera-opcheck --case=",
    "tessera-opcheck -d ''", "tessera-run --model=", "tessera-run -m x "
    "--tokens=", "tessera-run -m x --device ''",
    "tessera-bench --type=f32,",
  };
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    {
      char cmd[4400];
      snprintf (cmd, sizeof cmd, "%s/tools/%s 2>&1", bld, cmds[i]);
      int st = run (cmd);
      CHECK (st == 2 && (strstr (out_buf, "not an empty argument")
                         || strstr (out_buf, "''")),
             "empty argument refused with usage: %s (exit %d: %s)", cmds[i],
             st, out_buf);
    }
}

/* tessera-run --bench -f json for a model whose path holds a quote and
   a byte that is no character.  */
static void
bench_json_case (const char *bld, const char *dir)
{
  char path[4200], cmd[9000];
  snprintf (path, sizeof path, "%s/q\"uote\xff.gguf", dir);
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-gguf synth --layers=1 "
            "'%s' > /dev/null 2>&1", bld, path);
  if (run (cmd) != 0)
    {
      CHECK (0, "a model at a path with a quote is written");
      return;
    }
  snprintf (cmd, sizeof cmd, "%s/tools/tessera-run -m '%s' --bench -f json "
            "--pp=4 --tg=2 -r 1 -d CPU 2>/dev/null", bld, path);
  int st = run (cmd);
  CHECK (st == 0 && out_buf[0] == '{'
         && valid_utf8 (out_buf, strlen (out_buf))
         && strstr (out_buf, "q\\\"uote\\ufffd.gguf\""),
         "--bench -f json: the path escaped, valid UTF-8:\n%s", out_buf);
  remove (path);
}

int
main (void)
{
  const char *bld = getenv ("TSR_TEST_BUILDDIR");
  escape_cases ();
  if (!bld)
    {
      tsr_test_unsupported ("tools: TSR_TEST_BUILDDIR not set");
      return TSR_TEST_EXIT ();
    }
  char dir[4200];
  snprintf (dir, sizeof dir, "%s/testsuite/bin/escapes-%ld", bld,
            (long) getpid ());
  if (mkdir (dir, 0700) != 0)
    {
      printf ("FAIL: cannot create %s\n", dir);
      return 1;
    }
  dump_case (bld, dir);
  info_case (bld, dir);
  run_text_case (bld, dir);
  bench_json_case (bld, dir);
  empty_arguments (bld);
  rmdir (dir);
  return TSR_TEST_EXIT ();
}
