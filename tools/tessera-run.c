/* tessera-run - run a language model file: a prompt in, tokens out.
 *
 *   tessera-run -m MODEL.gguf --tokens=1,15043 -n 32
 *   tessera-run -m MODEL.gguf -p "Once upon a time" -n 64 --temp 0.8
 *   tessera-run -m MODEL.gguf --bench
 *
 * Loading, the forward pass, the cache and sampling live in the
 * library (tessera/model.h); this file parses options, turns the prompt
 * into tokens, drives a session and prints.  The model benchmark is in
 * run-bench.c.  */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"
#include "tool-util.h"

static const char *program = "tessera-run";

static void
usage (FILE *f)
{
  fprintf (f,
           "Usage: tessera-run -m MODEL [OPTION]...\n"
           "Run a model file (GGUF: llama, qwen2, qwen2moe, qwen3, qwen3moe,\n"
           "gemma2, gemma3, phi3): process a prompt, then "
           "generate tokens.\n\n"
           "Input and output:\n"
           "  -m, --model=FILE      the model file\n"
           "      --tokens=ID,...   the prompt as token ids\n"
           "  -p, --prompt=TEXT     the prompt as text (the file's "
           "tokenizer)\n"
           "  -n, --n-predict=N     tokens to generate (default 32; -1: "
           "until the end-of-\n"
           "                        generation token)\n"
           "      --print-ids       print the generated token ids on one "
           "line\n"
           "      --logits=FILE     write the logits of every prompt "
           "position\n"
           "                        (little-endian f32, n_prompt x n_vocab)\n"
           "      --ignore-eos      go on after an end-of-generation "
           "token\n"
           "      --special         print control tokens' text\n"
           "      --chat            a conversation in the model's chat "
           "format: -p is\n"
           "                        one user turn, else each line of "
           "standard input\n"
           "      --chat-template=NAME  llama3, chatml, gemma, phi3, "
           "mistral-v1,\n"
           "                        mistral-v3, mistral-v3-tekken or "
           "deepseek3 (default:\n"
           "                        the file's tokenizer.chat_template, "
           "recognized)\n"
           "      --system=TEXT     a system message before the first "
           "turn\n\n"
           "Sampling (greedy unless --temp > 0):\n"
           "      --temp=T          temperature (default 0: greedy)\n"
           "      --top-k=K         keep the K most likely tokens (default "
           "40)\n"
           "      --top-p=P         keep the most likely tokens up to "
           "probability P\n"
           "                        (default 0.95)\n"
           "      --seed=N          random seed (default 1)\n\n"
           "Devices and memory:\n"
           "  -d, --device=LIST     devices in priority order, "
           "comma-separated\n"
           "                        (default: the best device, and the CPU)\n"
           "      --gpu-layers=N    the last N layers (and the output) on "
           "the first\n"
           "                        device, the others on the second "
           "(default: all;\n"
           "                        0: leave the first device out)\n"
           "  -c, --ctx=N           cache positions (default 4096); when "
           "generation\n"
           "                        fills them, the oldest half after "
           "--keep is dropped\n"
           "      --keep=N          positions a context shift keeps "
           "(default 0)\n"
           "      --no-context-shift  refuse a generation longer than the "
           "context\n"
           "      --check-finite    stop at the first node whose result "
           "holds NaN or\n"
           "                        an infinity, naming it "
           "(TESSERA_CHECK_FINITE=1; slow)\n"
           "  -b, --batch=N         prompt tokens per batch (default 512)\n"
           "      --ubatch=N        tokens per graph: a larger batch is cut "
           "into\n"
           "                        micro-batches (default: the batch)\n"
           "      --pipeline=N      micro-batches in flight when the layers "
           "are on\n"
           "                        several devices (default 2; 1: one at a "
           "time)\n"
           "  -t, --threads=N       CPU threads (default: the backend's)\n"
           "      --cache-type=T    key/value cache elements: f16 (default) "
           "or f32\n"
           "      --no-mmap         copy the weights instead of mapping "
           "the file\n"
           "      --no-repack       keep the matrices mapped instead of "
           "repacking\n"
           "                        them for the CPU (CPU_REPACK)\n\n"
           "Several processes (under mpirun; rank 0 prints):\n"
           "      --tensor-parallel   each rank holds 1/N of the heads and "
           "feed-forward\n"
           "                          rows (N must divide the KV heads)\n"
           "      --pipeline-parallel each rank holds 1/N of the layers\n\n"
           "Benchmark:\n"
           "      --bench           time prompt processing and generation "
           "instead\n"
           "      --pp=N            prompt tokens per test (default 512)\n"
           "      --tg=N            generated tokens per test (default "
           "128)\n"
           "  -r, --repetitions=N   runs per test, the median is reported "
           "(default 3)\n"
           "      --parallel=N      N continuations of the prompt (seeds "
           "--seed, +1, ...),\n"
           "                        decoded together, the prompt once; "
           "printed at the end\n"
           "      --bench-batched   time 1, 2, 4... sequences decoded "
           "together instead:\n"
           "                        prompt and aggregate generation "
           "tokens/s (--pp\n"
           "                        default 128 here)\n"
           "      --parallel-list=N,N,...  the sequence counts (default "
           "1,2,4,8,16,32)\n"
           "      --pp-shared       one prompt for all sequences, "
           "decoded once\n"
           "  -f, --format=FMT      table, csv or json (default table)\n"
           "                        --device may be repeated: one device set "
           "each\n\n"
           "  -h, --help            display this help and exit\n"
           "  -V, --version         output version information and exit\n\n"
           "Report bugs to: %s\n", PACKAGE_BUGREPORT);
}

enum
{
  OPT_TOKENS = 256, OPT_PRINT_IDS, OPT_LOGITS, OPT_IGNORE_EOS, OPT_SPECIAL,
  OPT_TEMP, OPT_TOP_K, OPT_TOP_P, OPT_SEED, OPT_GPU_LAYERS, OPT_NO_MMAP, OPT_NO_REPACK,
  OPT_BENCH, OPT_PP, OPT_TG, OPT_TENSOR_PARALLEL, OPT_PIPELINE_PARALLEL, OPT_CACHE_TYPE,
  OPT_UBATCH, OPT_PIPELINE, OPT_KEEP, OPT_NO_SHIFT, OPT_CHAT,
  OPT_CHAT_TEMPLATE, OPT_SYSTEM, OPT_CHECK_FINITE, OPT_BENCH_BATCHED,
  OPT_PP_SHARED, OPT_PARALLEL_LIST, OPT_PARALLEL
};

static float
parse_float (const char *arg, const char *what, float min, float max)
{
  char *end;
  errno = 0;
  double v = strtod (arg, &end);
  if (errno || end == arg || *end || !(v >= min && v <= max))
    tt_usage_error (program, "bad %s", what);
  return (float) v;
}

static void
parse_one (struct run_options *o, int c)
{
  switch (c)
    {
    case 'm': o->model = optarg; break;
    case OPT_TOKENS: o->tokens = optarg; break;
    case 'p': o->prompt = optarg; break;
    case 'n':
      o->n_predict = (int) tt_parse_number (program, optarg, "-n", -1,
                                            1 << 24);
      break;
    case OPT_PRINT_IDS: o->print_ids = true; break;
    case OPT_LOGITS: o->logits_file = optarg; break;
    case OPT_IGNORE_EOS: o->ignore_eos = true; break;
    case OPT_KEEP:
      o->keep = (int) tt_parse_number (program, optarg, "--keep", 0,
                                       1 << 24);
      break;
    case OPT_NO_SHIFT: o->no_shift = true; break;
    case OPT_CHECK_FINITE:
      /* Read by every scheduler made from now on.  */
      setenv ("TESSERA_CHECK_FINITE", "1", 1);
      break;
    case OPT_CHAT: o->chat = true; break;
    case OPT_CHAT_TEMPLATE:
      o->chat_template = optarg;
      o->chat = true;
      break;
    case OPT_SYSTEM: o->system = optarg; break;
    case OPT_SPECIAL: o->special = true; break;
    case OPT_TEMP: o->sampling.temp = parse_float (optarg, "--temp", 0, 1e6);
      break;
    case OPT_TOP_K:
      o->sampling.top_k = (int) tt_parse_number (program, optarg, "--top-k",
                                                 0, INT32_MAX);
      break;
    case OPT_TOP_P: o->sampling.top_p = parse_float (optarg, "--top-p", 0, 1);
      break;
    case OPT_SEED:
      o->sampling.seed = (uint64_t) tt_parse_number (program, optarg,
                                                     "--seed", 0, INT64_MAX);
      break;
    case 'd':
      if (o->n_sets == RUN_MAX_SETS)
        tt_usage_error (program, "too many --device options (%s)", optarg);
      if (!*optarg)
        tt_usage_error (program, "empty device list%s", "");
      o->devices[o->n_sets++] = optarg;
      break;
    case OPT_GPU_LAYERS:
      o->gpu_layers = (int) tt_parse_number (program, optarg, "--gpu-layers",
                                             0, 1 << 16);
      break;
    case 'c':
      o->n_ctx = (int) tt_parse_number (program, optarg, "--ctx", 1,
                                        1 << 24);
      break;
    case 'b':
      o->n_batch = (int) tt_parse_number (program, optarg, "--batch", 1,
                                          1 << 16);
      break;
    case 't':
      o->n_threads = (int) tt_parse_number (program, optarg, "--threads", 1,
                                            1024);
      break;
    case OPT_UBATCH:
      o->n_ubatch = (int) tt_parse_number (program, optarg, "--ubatch", 1,
                                           1 << 16);
      break;
    case OPT_PIPELINE:
      o->n_pipeline = (int) tt_parse_number (program, optarg, "--pipeline",
                                             1, 8);
      break;
    case OPT_NO_MMAP: o->no_mmap = true; break;
    case OPT_NO_REPACK: o->no_repack = true; break;
    case OPT_CACHE_TYPE:
      if (strcmp (optarg, "f16") && strcmp (optarg, "f32"))
        tt_usage_error (program, "--cache-type %s: f16 or f32", optarg);
      o->kv_f32 = strcmp (optarg, "f32") == 0;
      break;
    case OPT_TENSOR_PARALLEL:
    case OPT_PIPELINE_PARALLEL:
      if (o->split != TSR_SPLIT_NONE)
        tt_usage_error (program, "--tensor-parallel and --pipeline-parallel "
                        "both given%s", "");
      o->split = c == OPT_TENSOR_PARALLEL ? TSR_SPLIT_TENSOR
                                          : TSR_SPLIT_PIPELINE;
      break;
    case OPT_BENCH: o->bench = true; break;
    case OPT_BENCH_BATCHED: o->bench_batched = true; break;
    case OPT_PP_SHARED: o->pp_shared = true; break;
    case OPT_PARALLEL_LIST: o->parallel_list = optarg; break;
    case OPT_PARALLEL:
      o->n_parallel = (int) tt_parse_number (program, optarg, "--parallel",
                                             1, TSR_SEQ_MAX);
      break;
    case OPT_PP: o->pp = (int) tt_parse_number (program, optarg, "--pp", 0,
                                                1 << 16);
      o->pp_given = true;
      break;
    case OPT_TG: o->tg = (int) tt_parse_number (program, optarg, "--tg", 0,
                                                1 << 16);
      break;
    case 'r':
      o->repetitions = (int) tt_parse_number (program, optarg,
                                              "--repetitions", 1, 1000);
      break;
    case 'f':
      if (strcmp (optarg, "table") && strcmp (optarg, "csv")
          && strcmp (optarg, "json"))
        tt_usage_error (program, "unknown format %s (table, csv, json)",
                        optarg);
      o->format = optarg;
      break;
    default:
      tt_common_option (program, c, usage);
    }
}

static void
parse_options (int argc, char **argv, struct run_options *o)
{
  static const struct option opts[] = {
    { "model", required_argument, NULL, 'm' },
    { "tokens", required_argument, NULL, OPT_TOKENS },
    { "prompt", required_argument, NULL, 'p' },
    { "n-predict", required_argument, NULL, 'n' },
    { "print-ids", no_argument, NULL, OPT_PRINT_IDS },
    { "logits", required_argument, NULL, OPT_LOGITS },
    { "ignore-eos", no_argument, NULL, OPT_IGNORE_EOS },
    { "keep", required_argument, NULL, OPT_KEEP },
    { "no-context-shift", no_argument, NULL, OPT_NO_SHIFT },
    { "check-finite", no_argument, NULL, OPT_CHECK_FINITE },
    { "chat", no_argument, NULL, OPT_CHAT },
    { "chat-template", required_argument, NULL, OPT_CHAT_TEMPLATE },
    { "system", required_argument, NULL, OPT_SYSTEM },
    { "special", no_argument, NULL, OPT_SPECIAL },
    { "temp", required_argument, NULL, OPT_TEMP },
    { "top-k", required_argument, NULL, OPT_TOP_K },
    { "top-p", required_argument, NULL, OPT_TOP_P },
    { "seed", required_argument, NULL, OPT_SEED },
    { "device", required_argument, NULL, 'd' },
    { "gpu-layers", required_argument, NULL, OPT_GPU_LAYERS },
    { "ctx", required_argument, NULL, 'c' },
    { "batch", required_argument, NULL, 'b' },
    { "ubatch", required_argument, NULL, OPT_UBATCH },
    { "pipeline", required_argument, NULL, OPT_PIPELINE },
    { "threads", required_argument, NULL, 't' },
    { "no-mmap", no_argument, NULL, OPT_NO_MMAP },
    { "no-repack", no_argument, NULL, OPT_NO_REPACK },
    { "cache-type", required_argument, NULL, OPT_CACHE_TYPE },
    { "tensor-parallel", no_argument, NULL, OPT_TENSOR_PARALLEL },
    { "pipeline-parallel", no_argument, NULL, OPT_PIPELINE_PARALLEL },
    { "bench", no_argument, NULL, OPT_BENCH },
    { "bench-batched", no_argument, NULL, OPT_BENCH_BATCHED },
    { "pp-shared", no_argument, NULL, OPT_PP_SHARED },
    { "parallel-list", required_argument, NULL, OPT_PARALLEL_LIST },
    { "parallel", required_argument, NULL, OPT_PARALLEL },
    { "pp", required_argument, NULL, OPT_PP },
    { "tg", required_argument, NULL, OPT_TG },
    { "repetitions", required_argument, NULL, 'r' },
    { "format", required_argument, NULL, 'f' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
  };
  int c;
  *o = (struct run_options) {
    .gpu_layers = -1, .n_predict = 32, .pp = 512, .tg = 128,
    .repetitions = 3, .format = "table",
    .sampling = { .temp = 0, .top_k = 40, .top_p = 0.95f, .seed = 1 }
  };
  while ((c = getopt_long (argc, argv, "m:p:n:d:c:b:t:r:f:hV", opts, NULL))
         != -1)
    {
      /* An empty prompt is a request: generate from BOS alone.  */
      tt_check_optarg (program, opts, c, optarg, "p");
      parse_one (o, c);
    }
  if (optind < argc)
    tt_usage_error (program, "unexpected argument %s", argv[optind]);
  if (!o->model)
    tt_usage_error (program, "no model file (-m FILE)%s", "");
  if (o->tokens && o->prompt)
    tt_usage_error (program, "--tokens and -p both given%s", "");
  if (o->n_sets > 1 && !o->bench)
    tt_usage_error (program, "--device given more than once (one list, "
                    "or --bench)%s", "");
  if (o->bench && o->bench_batched)
    tt_usage_error (program, "--bench and --bench-batched both given%s", "");
  if ((o->pp_shared || o->parallel_list) && !o->bench_batched)
    tt_usage_error (program, "--pp-shared and --parallel-list go with "
                    "--bench-batched%s", "");
  if (o->bench_batched && !o->pp_given)
    o->pp = 128;
  if (o->n_parallel > 1 && (o->chat || o->n_predict < 0 || o->logits_file
                            || o->split != TSR_SPLIT_NONE))
    tt_usage_error (program, "--parallel goes without --chat, -n -1, "
                    "--logits and the splits over ranks%s", "");
}

/* Devices.  */

struct open_ctx
{
  tsr_backend **be;
  int n, max, failed;
};

static void
open_one (const char *name, void *data)
{
  struct open_ctx *c = data;
  if (c->failed)
    return;
  if (c->n == c->max)
    {
      fprintf (stderr, "%s: too many devices (at most %d)\n", program,
               c->max);
      c->failed = 1;
      return;
    }
  if (!(c->be[c->n] = tsr_backend_init_by_name (name, NULL)))
    {
      fprintf (stderr, "%s: device %s: %s\n", program, name,
               tsr_last_error ());
      c->failed = 1;
      return;
    }
  c->n++;
}

/* --gpu-layers=0: no layer on the first device, so leave it out (from
   the default set too: then the CPU alone).  */
static int
drop_first (tsr_backend **be, int n)
{
  if (n == 0)
    {
      if (!(be[0] = tsr_backend_init_by_type (TSR_DEVICE_CPU, NULL)))
        {
          fprintf (stderr, "%s: CPU: %s\n", program, tsr_last_error ());
          return -1;
        }
      return 1;
    }
  if (n == 1)
    return n;                   /* nowhere else to go */
  tsr_backend_free (be[0]);
  memmove (be, be + 1, (size_t) (n - 1) * sizeof *be);
  return n - 1;
}

int
run_open_backends (const char *list, int gpu_layers, tsr_backend **be,
                   int max)
{
  struct open_ctx c = { be, 0, max, 0 };
  if (!list)
    return gpu_layers == 0 ? drop_first (be, 0) : 0;
  tt_for_each_name (list, open_one, &c);
  if (!c.failed && c.n == 0)
    {
      fprintf (stderr, "%s: no device named in \"%s\"\n", program, list);
      c.failed = 1;
    }
  if (c.failed)
    {
      for (int i = 0; i < c.n; i++)
        tsr_backend_free (be[i]);
      return -1;
    }
  return gpu_layers == 0 ? drop_first (be, c.n) : c.n;
}

/* The prompt.  */

struct tokens
{
  int32_t *id;
  int n, cap;
};

static int
push_token (struct tokens *t, int64_t id)
{
  if (t->n == t->cap)
    {
      int cap = t->cap ? 2 * t->cap : 64;
      int32_t *p = realloc (t->id, (size_t) cap * sizeof *p);
      if (!p)
        return -1;
      t->id = p;
      t->cap = cap;
    }
  t->id[t->n++] = (int32_t) id;
  return 0;
}

static void
parse_id (const char *name, void *data)
{
  struct tokens *t = data;
  long long id = tt_parse_number (program, name, "token id", 0, INT32_MAX);
  if (push_token (t, id) != 0)
    {
      fprintf (stderr, "%s: out of memory\n", program);
      exit (1);
    }
}

/* Generation.  */

struct timing
{
  double prompt_us, gen_us;
  int n_prompt, n_gen;
  int32_t last;                 /* the last token sampled (not decoded) */
};

static int
write_logits (FILE *f, const float *logits, int64_t n)
{
  /* Little-endian f32 whatever the host.  */
  for (int64_t i = 0; i < n; i++)
    {
      uint32_t u;
      unsigned char b[4];
      memcpy (&u, &logits[i], 4);
      for (int k = 0; k < 4; k++)
        b[k] = (unsigned char) (u >> (8 * k));
      if (fwrite (b, 1, 4, f) != 4)
        return -1;
    }
  return 0;
}

/* Run the prompt in batches; the last position's logits in LAST.  */
static int
run_prompt (tsr_session *s, const struct run_options *o,
            const struct tokens *p, int64_t n_vocab, float *last)
{
  FILE *f = NULL;
  float *all = NULL;
  int batch = o->n_batch > 0 ? o->n_batch : 512;
  /* The rows of logits the batches give, not what --batch allows.  */
  if (batch > p->n)
    batch = p->n > 0 ? p->n : 1;
  if (o->logits_file)
    {
      size_t bytes = (size_t) batch * (size_t) n_vocab * sizeof *all;
      if (!(f = fopen (o->logits_file, "wb")))
        {
          fprintf (stderr, "%s: %s: %s\n", program, o->logits_file,
                   strerror (errno));
          return -1;
        }
      if (!(all = malloc (bytes)))
        {
          fprintf (stderr, "%s: --logits: no memory for %d rows of %lld "
                   "logits (%zu bytes); a smaller --batch needs less\n",
                   program, batch, (long long) n_vocab, bytes);
          fclose (f);
          return -1;
        }
    }
  int st = TSR_OK;
  for (int i = 0; i < p->n && st == TSR_OK; i += batch)
    {
      int n = p->n - i < batch ? p->n - i : batch;
      st = tsr_session_decode (s, p->id + i, n, f ? all : last, f != NULL);
      if (st == TSR_OK && f)
        {
          memcpy (last, all + (size_t) (n - 1) * n_vocab,
                  (size_t) n_vocab * sizeof *last);
          if (write_logits (f, all, n * n_vocab) != 0)
            {
              fprintf (stderr, "%s: %s: write error\n", program,
                       o->logits_file);
              st = TSR_ERR_INVALID_ARG;
              tsr_clear_error ();
            }
        }
    }
  free (all);
  if (f && fclose (f) != 0 && st == TSR_OK)
    {
      fprintf (stderr, "%s: %s: %s\n", program, o->logits_file,
               strerror (errno));
      return -1;
    }
  if (st != TSR_OK && tsr_last_status () != TSR_OK)
    fprintf (stderr, "%s: prompt: %s\n", program, tsr_last_error ());
  return st == TSR_OK ? 0 : -1;
}

/* Generated text.  Into a pipe or file it goes as it is; on a terminal
   the bytes a terminal would take as commands (a vocabulary is input:
   a token may hold ESC sequences) are shown as \xNN by tsr_escape_text,
   newlines and tabs kept.  A character split across tokens waits for
   its last byte (PENDING), so it is not taken for malformed UTF-8.  */
static char pending[8];
static size_t n_pending;

static void
print_text (const char *p, size_t n, bool final)
{
  static int tty = -1;
  if (tty < 0)
    tty = isatty (STDOUT_FILENO);
  if (!tty)
    {
      fwrite (p, 1, n, stdout);
      return;
    }
  char buf[sizeof pending + 256];
  if (n > sizeof buf - n_pending)
    n = sizeof buf - n_pending;
  memcpy (buf, pending, n_pending);
  memcpy (buf + n_pending, p, n);
  size_t total = n_pending + n, cut = total;
  /* An unfinished UTF-8 sequence at the end waits for the next token.  */
  for (size_t back = 1; !final && back <= 3 && back <= total; back++)
    {
      unsigned char c = (unsigned char) buf[total - back];
      if ((c & 0xc0) == 0x80)
        continue;               /* a continuation byte: look further */
      size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
      if (len > back)
        cut = total - back;
      break;
    }
  size_t run = 0;
  for (size_t i = 0; i < cut; i++)
    if (buf[i] == '\n' || buf[i] == '\t' || buf[i] == '\0')
      {
        tt_print_escaped (buf + run, i - run, stdout);
        if (buf[i])
          putchar (buf[i]);
        else
          fputs ("\\x00", stdout);
        run = i + 1;
      }
  tt_print_escaped (buf + run, cut - run, stdout);
  n_pending = total - cut;
  memcpy (pending, buf + cut, n_pending);
}

static void
print_token (const tsr_vocab *v, int32_t id, bool special)
{
  char buf[256];
  if (!v)
    return;
  int64_t n = tsr_vocab_token_to_piece (v, id, special, buf, sizeof buf);
  if (n > 0)
    print_text (buf, n < (int64_t) sizeof buf ? (size_t) n : sizeof buf,
                false);
  fflush (stdout);
}

/* --parallel N: N continuations of the prompt in S's sequence 0 (its
   last logits in LOGITS), sequence I sampled with seed + I, decoded
   together one row a sequence a step, the prompt's cells shared
   (forked, not recomputed).  Each printed after the others are done.  */
static int
generate_parallel (tsr_session *s, const struct run_options *o,
                   const tsr_vocab *v, int64_t n_vocab, const float *logits,
                   struct timing *tm)
{
  const int n = o->n_parallel, n_gen = o->n_predict;
  tsr_sampler *smp[TSR_SEQ_MAX] = { 0 };
  int32_t *ids = malloc ((size_t) n * (size_t) (n_gen + 1) * sizeof *ids);
  /* Each sequence's next logits (ROWS), and a step's (OUT: the live
     sequences' rows, in order).  */
  float *rows = malloc ((size_t) n * (size_t) n_vocab * sizeof *rows);
  float *out = malloc ((size_t) n * (size_t) n_vocab * sizeof *out);
  int32_t tok[TSR_SEQ_MAX], seq[TSR_SEQ_MAX], len[TSR_SEQ_MAX] = { 0 };
  bool live[TSR_SEQ_MAX], want[TSR_SEQ_MAX];
  int rc = ids && rows && out ? 0 : -1;
  for (int q = 0; q < n && rc == 0; q++)
    {
      struct tsr_sampler_params sp = o->sampling;
      sp.seed = o->sampling.seed + (uint64_t) q;
      if (!(smp[q] = tsr_sampler_new (&sp)))
        rc = -1;
      if (q > 0 && rc == 0 && tsr_session_seq_fork (s, 0, q) != TSR_OK)
        rc = -1;
      live[q] = true;
      if (rows)
        memcpy (rows + (size_t) q * n_vocab, logits,
                (size_t) n_vocab * sizeof *rows);
    }
  if (rc != 0)
    fprintf (stderr, "%s: --parallel %d: %s\n", program, n,
             *tsr_last_error () ? tsr_last_error () : "out of memory");
  double t0 = tt_now_us ();
  for (int step = 0; step < n_gen && rc == 0; step++)
    {
      int k = 0;
      for (int q = 0; q < n; q++)
        {
          if (!live[q])
            continue;
          int32_t id = tsr_sampler_sample (smp[q], rows + (size_t) q * n_vocab,
                                           n_vocab);
          if (id < 0)
            {
              fprintf (stderr, "%s: sequence %d: every logit is NaN\n",
                       program, q);
              rc = -1;
              break;
            }
          ids[(size_t) q * (size_t) (n_gen + 1) + len[q]++] = id;
          tm->n_gen++;
          if ((v && !o->ignore_eos && tsr_vocab_is_eog (v, id))
              || len[q] == n_gen)
            {
              live[q] = false;
              continue;
            }
          tok[k] = id;
          seq[k] = q;
          want[k++] = true;
        }
      if (rc != 0 || k == 0)
        break;
      struct tsr_batch b = { .n_tokens = k, .tokens = tok, .seq = seq,
                             .logits = want };
      if (tsr_session_decode_batch (s, &b, out) != TSR_OK)
        {
          fprintf (stderr, "%s: generation: %s\n", program,
                   tsr_last_error ());
          rc = -1;
        }
      /* Row I's logits are sequence SEQ[I]'s next.  */
      for (int i = 0; i < k && rc == 0; i++)
        memcpy (rows + (size_t) seq[i] * n_vocab, out + (size_t) i * n_vocab,
                (size_t) n_vocab * sizeof *rows);
    }
  tm->gen_us = tt_now_us () - t0;
  for (int q = 0; q < n && rc == 0; q++)
    {
      const int32_t *id = ids + (size_t) q * (size_t) (n_gen + 1);
      printf ("[sequence %d, seed %llu]%s", q,
              (unsigned long long) (o->sampling.seed + (uint64_t) q),
              o->print_ids ? "" : "\n");
      if (o->print_ids)
        for (int i = 0; i < len[q]; i++)
          printf (" %d", id[i]);
      else
        {
          for (int i = 0; i < len[q]; i++)
            print_token (v, id[i], o->special);
          print_text ("", 0, true);
        }
      putchar ('\n');
    }
  for (int q = 0; q < n; q++)
    tsr_sampler_free (smp[q]);
  free (ids);
  free (rows);
  free (out);
  return rc;
}

/* Room in the cache for N more positions: context shifts, each
   dropping half of what follows --keep, unless --no-context-shift.  */
static int
make_room (tsr_session *s, const struct run_options *o, int n)
{
  int ctx = tsr_session_n_ctx (s);
  while (tsr_session_n_past (s) + n > ctx)
    {
      int past = tsr_session_n_past (s), drop = (past - o->keep) / 2;
      if (o->no_shift || drop < 1 || n > ctx - o->keep)
        {
          fprintf (stderr, "%s: a turn of %d tokens does not fit the %d "
                   "free positions of the context (--ctx%s)\n", program, n,
                   ctx - past, o->no_shift ? ", --no-context-shift" : "");
          return -1;
        }
      if (tsr_session_shift (s, o->keep, drop) != TSR_OK)
        {
          fprintf (stderr, "%s: context shift: %s\n", program,
                   tsr_last_error ());
          return -1;
        }
      tsr_log (TSR_LOG_INFO, "context shift: kept %d positions, dropped %d",
               o->keep, drop);
    }
  return 0;
}

static int
generate (tsr_session *s, const struct run_options *o, const tsr_vocab *v,
          int64_t n_vocab, float *logits, struct timing *tm)
{
  tsr_sampler *smp = tsr_sampler_new (&o->sampling);
  size_t cap = o->n_predict >= 0 ? (size_t) o->n_predict + 1 : 256;
  int32_t *ids = malloc (cap * sizeof *ids);
  int rc = 0;
  if (!smp || !ids)
    {
      fprintf (stderr, "%s: out of memory\n", program);
      rc = -1;
    }
  double t0 = tt_now_us ();
  for (int i = 0; (o->n_predict < 0 || i < o->n_predict) && rc == 0; i++)
    {
      int32_t id = tsr_sampler_sample (smp, logits, n_vocab);
      /* Every rank goes on with rank 0's token.  */
      if (o->comm && tsr_comm_size (o->comm) > 1
          && tsr_comm_broadcast (o->comm, &id, sizeof id, 0) != TSR_OK)
        {
          fprintf (stderr, "%s: %s\n", program, tsr_last_error ());
          rc = -1;
          break;
        }
      if (id < 0)
        {
          fprintf (stderr, "%s: every logit is NaN\n", program);
          rc = -1;
          break;
        }
      if ((size_t) tm->n_gen == cap)
        {
          int32_t *more = realloc (ids, 2 * cap * sizeof *ids);
          if (!more)
            {
              fprintf (stderr, "%s: out of memory\n", program);
              rc = -1;
              break;
            }
          ids = more;
          cap *= 2;
        }
      ids[tm->n_gen++] = id;
      tm->last = id;
      print_token (v, id, o->special);
      if (v && !o->ignore_eos && tsr_vocab_is_eog (v, id))
        break;
      if (o->n_predict >= 0 && i + 1 >= o->n_predict)
        break;
      /* A full cache: drop the oldest half after --keep.  */
      if (make_room (s, o, 1) != 0)
        {
          rc = -1;
          break;
        }
      if (tsr_session_decode (s, &id, 1, logits, false) != TSR_OK)
        {
          fprintf (stderr, "\n%s: generation: %s\n", program,
                   tsr_last_error ());
          rc = -1;
        }
    }
  tm->gen_us = tt_now_us () - t0;
  if (v)
    {
      print_text ("", 0, true);         /* what waited, escaped */
      putchar ('\n');
    }
  if (o->print_ids)
    for (int i = 0; i < tm->n_gen; i++)
      printf ("%d%c", ids[i], i + 1 < tm->n_gen ? ' ' : '\n');
  free (ids);
  tsr_sampler_free (smp);
  return rc;
}

static int
prompt_tokens (const struct run_options *o, const tsr_vocab *v,
               struct tokens *p)
{
  if (o->tokens)
    {
      tt_for_each_name (o->tokens, parse_id, p);
      if (p->n == 0)
        tt_usage_error (program, "--tokens names no token%s", "");
      return 0;
    }
  if (!v)
    {
      fprintf (stderr, "%s: -p needs the model's tokenizer: %s\n(give the "
               "prompt as ids with --tokens)\n", program, tsr_last_error ());
      return -1;
    }
  const char *text = o->prompt ? o->prompt : "";
  size_t len = strlen (text);
  int64_t n = tsr_vocab_tokenize (v, text, len, tsr_vocab_add_bos (v), false,
                                  NULL, 0);
  if (n < 0)
    {
      fprintf (stderr, "%s: -p: %s\n", program, tsr_last_error ());
      return -1;
    }
  p->id = malloc ((size_t) (n ? n : 1) * sizeof *p->id);
  if (!p->id)
    return -1;
  p->n = p->cap = (int) n;
  tsr_vocab_tokenize (v, text, len, tsr_vocab_add_bos (v), false, p->id, n);
  if (n == 0)
    {
      fprintf (stderr, "%s: the prompt is empty\n", program);
      return -1;
    }
  return 0;
}

/* The chat template: --chat-template, else the file's, recognized.  */
static enum tsr_chat_template
chat_template (const struct run_options *o, const tsr_model *m)
{
  enum tsr_chat_template t;
  const char *text = NULL;
  if (o->chat_template)
    {
      t = tsr_chat_template_by_name (o->chat_template);
      if (t == TSR_CHAT_UNKNOWN)
        fprintf (stderr, "%s: --chat-template=%s: want %s\n", program,
                 o->chat_template, tsr_chat_template_names ());
      return t;
    }
  if (tsr_gguf_get_str (tsr_model_gguf (m), "tokenizer.chat_template", &text,
                        NULL) != TSR_OK)
    {
      tsr_clear_error ();
      fprintf (stderr, "%s: --chat: the file has no tokenizer.chat_template;"
               " name one with --chat-template=NAME (%s)\n", program,
               tsr_chat_template_names ());
      return TSR_CHAT_UNKNOWN;
    }
  t = tsr_chat_template_detect (text);
  if (t == TSR_CHAT_UNKNOWN)
    fprintf (stderr, "%s: --chat: the file's chat template is none that "
             "Tessera recognizes; name one with --chat-template=NAME (%s)\n",
             program, tsr_chat_template_names ());
  return t;
}

/* One user turn: the reply's opening after the previous reply's end
   (its last token, then the template's turn suffix), and the reply.  */
static int
chat_turn (tsr_session *s, const struct run_options *o, const tsr_vocab *v,
           enum tsr_chat_template t, const char *user, bool first,
           int64_t n_vocab, float *logits, struct timing *tm)
{
  struct tsr_chat_message msgs[2];
  int n = 0;
  if (first && o->system)
    msgs[n++] = (struct tsr_chat_message) { "system", o->system };
  msgs[n++] = (struct tsr_chat_message) { "user", user };
  const char *suffix = first ? "" : tsr_chat_turn_suffix (t);
  int64_t len = tsr_chat_format (t, msgs, n, true, NULL, 0);
  size_t ls = strlen (suffix);
  char *text = len >= 0 ? malloc (ls + (size_t) len + 1) : NULL;
  struct tokens p = { 0 };
  int rc = text ? 0 : -1;
  if (text)
    {
      memcpy (text, suffix, ls);
      tsr_chat_format (t, msgs, n, true, text + ls, (size_t) len + 1);
      bool bos = first && tsr_vocab_add_bos (v);
      int64_t k = tsr_vocab_tokenize (v, text, ls + (size_t) len, bos, true,
                                      NULL, 0);
      if (!first)
        k++;                    /* the previous reply's last token */
      p.id = k > 0 ? malloc ((size_t) k * sizeof *p.id) : NULL;
      if (!p.id)
        rc = -1;
      else
        {
          if (!first)
            p.id[p.n++] = tm->last;
          p.n += (int) tsr_vocab_tokenize (v, text, ls + (size_t) len, bos,
                                           true, p.id + p.n, k - p.n);
        }
    }
  if (rc != 0)
    fprintf (stderr, "%s: %s\n", program, len < 0 ? tsr_last_error ()
                                                  : "out of memory");
  if (rc == 0)
    rc = make_room (s, o, p.n);
  if (rc == 0)
    {
      double t0 = tt_now_us ();
      rc = run_prompt (s, o, &p, n_vocab, logits);
      tm->prompt_us += tt_now_us () - t0;
      tm->n_prompt += p.n;
    }
  if (rc == 0)
    {
      struct timing turn = { 0 };
      rc = generate (s, o, v, n_vocab, logits, &turn);
      tm->gen_us += turn.gen_us;
      tm->n_gen += turn.n_gen;
      tm->last = turn.last;
    }
  free (p.id);
  free (text);
  return rc;
}

/* --chat: -p as one user turn, else a turn per line of standard input
   (a prompt on standard error when it is a terminal).  */
static int
run_chat (const struct run_options *o, tsr_model *m, tsr_session *s,
          const tsr_vocab *v, int64_t n_vocab, float *logits,
          struct timing *tm)
{
  enum tsr_chat_template t = chat_template (o, m);
  if (t == TSR_CHAT_UNKNOWN)
    return -1;
  if (o->prompt)
    return chat_turn (s, o, v, t, o->prompt, true, n_vocab, logits, tm);
  bool tty = isatty (STDIN_FILENO);
  char line[8192];
  int rc = 0;
  bool first = true;
  while (rc == 0)
    {
      if (tty)
        fputs ("> ", stderr);
      if (!fgets (line, sizeof line, stdin))
        break;
      line[strcspn (line, "\n")] = '\0';
      if (!*line)
        continue;
      rc = chat_turn (s, o, v, t, line, first, n_vocab, logits, tm);
      first = false;
    }
  return rc;
}

static int
run_model (const struct run_options *o, tsr_model *m)
{
  const struct tsr_model_hparams *hp = tsr_model_get_hparams (m);
  tsr_vocab *v = tsr_vocab_from_gguf (tsr_model_gguf (m));
  struct tokens p = { 0 };
  struct timing tm = { 0 };
  float *logits = malloc ((size_t) hp->n_vocab * sizeof *logits);
  int rc = logits ? 0 : -1;
  if (rc == 0 && o->chat && (!v || o->tokens))
    {
      fprintf (stderr, "%s: --chat needs the model's tokenizer and text "
               "(-p or standard input), not --tokens%s%s\n", program,
               v ? "" : ": ", v ? "" : tsr_last_error ());
      rc = -1;
    }
  if (rc == 0 && !o->chat)
    rc = prompt_tokens (o, v, &p);
  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = o->n_ctx > 0 ? o->n_ctx : sp.n_ctx;
  sp.n_batch = o->n_batch > 0 ? o->n_batch : sp.n_batch;
  sp.n_threads = o->n_threads;
  sp.kv_type = o->kv_f32 ? TSR_TYPE_F32 : TSR_TYPE_F16;
  sp.n_ubatch = o->n_ubatch;
  sp.n_pipeline = o->n_pipeline;
  tsr_session *s = rc == 0 ? tsr_session_new (m, &sp) : NULL;
  if (rc == 0 && !s)
    {
      fprintf (stderr, "%s: %s\n", program, tsr_last_error ());
      rc = -1;
    }
  int n_ctx = s ? tsr_session_n_ctx (s) : 0;
  if (rc == 0 && o->chat)
    {
      if (!o->no_shift && o->keep > (n_ctx - 2) / 2)
        {
          fprintf (stderr, "%s: --keep=%d leaves no room to shift a context "
                   "of %d (--ctx; at most %d)\n", program, o->keep, n_ctx,
                   (n_ctx - 2) / 2);
          rc = -1;
        }
      if (rc == 0)
        rc = run_chat (o, m, s, v, hp->n_vocab, logits, &tm);
    }
  else if (rc == 0 && p.n > n_ctx)
    {
      fprintf (stderr, "%s: %d prompt tokens do not fit a context of %d "
               "(--ctx)\n", program, p.n, n_ctx);
      rc = -1;
    }
  else if (rc == 0 && o->no_shift
           && (o->n_predict < 0 || p.n + o->n_predict > n_ctx + 1))
    {
      fprintf (stderr, "%s: %d prompt tokens and %s to generate do not fit "
               "a context of %d (--ctx), and --no-context-shift is given\n",
               program, p.n, o->n_predict < 0 ? "no limit" : "more",
               n_ctx);
      rc = -1;
    }
  else if (rc == 0 && o->n_parallel > 1
           && (int64_t) p.n + (int64_t) o->n_parallel * o->n_predict
              > n_ctx)
    {
      fprintf (stderr, "%s: %d prompt tokens and %d continuations of %d "
               "do not fit a context of %d (--ctx)\n", program, p.n,
               o->n_parallel, o->n_predict, n_ctx);
      rc = -1;
    }
  else if (rc == 0 && !o->no_shift && o->keep > (n_ctx - 2) / 2)
    {
      fprintf (stderr, "%s: --keep=%d leaves no room to shift a context of "
               "%d (--ctx; at most %d)\n", program, o->keep, n_ctx,
               (n_ctx - 2) / 2);
      rc = -1;
    }
  if (rc == 0 && !o->chat)
    {
      double t0 = tt_now_us ();
      rc = run_prompt (s, o, &p, hp->n_vocab, logits);
      tm.prompt_us = tt_now_us () - t0;
      tm.n_prompt = p.n;
    }
  if (rc == 0 && !o->chat && o->n_parallel > 1)
    rc = generate_parallel (s, o, v, hp->n_vocab, logits, &tm);
  else if (rc == 0 && !o->chat)
    rc = generate (s, o, v, hp->n_vocab, logits, &tm);
  if (rc == 0)
    printf ("prompt: %d tokens, %.2f tokens/s; generation: %d tokens, "
            "%.2f tokens/s\n", tm.n_prompt,
            tm.prompt_us > 0 ? tm.n_prompt * 1e6 / tm.prompt_us : 0.0,
            tm.n_gen, tm.gen_us > 0 ? tm.n_gen * 1e6 / tm.gen_us : 0.0);
  tsr_session_free (s);
  tsr_vocab_free (v);
  free (p.id);
  free (logits);
  return rc == 0 ? 0 : 1;
}

/* Several processes: the job's communicator; rank 0 alone prints to
   stdout, and the others' messages name their rank.  */
static char rank_program[64];

static int
start_ranks (struct run_options *o)
{
  if (!(o->comm = tsr_comm_world ()))
    {
      fprintf (stderr, "%s: %s: %s\n", program, o->split == TSR_SPLIT_TENSOR
               ? "--tensor-parallel" : "--pipeline-parallel",
               tsr_last_error ());
      return -1;
    }
  int rank = tsr_comm_rank (o->comm);
  if (rank != 0)
    {
      snprintf (rank_program, sizeof rank_program, "%s (rank %d)", program,
                rank);
      program = rank_program;
      if (!freopen ("/dev/null", "w", stdout))
        fclose (stdout);
    }
  return 0;
}

/* The exit status RC; after a failure on any rank of several, the job
   stops (the others would wait for this one).  */
static int
end_ranks (struct run_options *o, int rc)
{
  if (!o->comm)
    return rc;
  if (rc != 0 && tsr_comm_size (o->comm) > 1)
    {
      fflush (stdout);
      tsr_comm_abort (o->comm, rc, NULL);
    }
  tsr_comm_free (o->comm);
  return rc;
}

int
main (int argc, char **argv)
{
  struct run_options o;
  tsr_backend *be[TSR_SCHED_MAX_BACKENDS];
  parse_options (argc, argv, &o);
  if (o.split != TSR_SPLIT_NONE && start_ranks (&o) != 0)
    return 1;
  if (o.bench)
    return end_ranks (&o, run_bench (&o));
  if (o.bench_batched)
    return end_ranks (&o, run_bench_batched (&o));
  int n_be = run_open_backends (o.n_sets ? o.devices[0] : NULL,
                                o.gpu_layers, be, TSR_SCHED_MAX_BACKENDS);
  if (n_be < 0)
    return end_ranks (&o, 1);
  struct tsr_model_params mp = { .backends = n_be ? be : NULL,
                                 .n_backends = n_be,
                                 .gpu_layers = o.gpu_layers,
                                 .no_mmap = o.no_mmap,
                                 .no_repack = o.no_repack,
                                 .comm = o.comm, .split = o.split };
  tsr_model *m = tsr_model_load (o.model, &mp);
  int rc = 1;
  if (!m)
    fprintf (stderr, "%s: %s\n", program, tsr_last_error ());
  else
    {
      if (!o.comm || tsr_comm_rank (o.comm) == 0)
        fprintf (stderr, "%s: %s\n", program, tsr_model_describe (m));
      rc = run_model (&o, m);
    }
  tsr_model_free (m);
  for (int i = 0; i < n_be; i++)
    tsr_backend_free (be[i]);
  return end_ranks (&o, rc);
}
