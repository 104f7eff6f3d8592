/* gguf-synth.c - tessera-gguf synth: a model file with random weights,
 * for the tests and benchmarks of a model runner that must not download
 * a model.  Architectures: llama (with a sliding window: Mistral; with
 * experts: Mixtral), qwen2, qwen2moe, qwen3, qwen3moe, gemma2, gemma3
 * and phi3, with the keys, tensor names and shapes of converted files
 * (expert tensors three-dimensional: [in, out, n_expert]).
 *
 * Owns the synth command line and its presets, the checks of the
 * hyper-parameters, the metadata keys, and the tensors: their names,
 * shapes, types and order as converted files have them, and their
 * seeded random values (the same seed gives the same file).  The
 * tokenizer keys come from gguf-synth-vocab.c.  Every tensor's data is
 * held in memory until the file is written, as the GGUF writer reads
 * it then: about the size of the file.  */
#include <config.h>

#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf-synth.h"
#include "tool-util.h"

static const char *program = "tessera-gguf synth";

enum synth_arch { ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN2MOE, ARCH_QWEN3,
                  ARCH_QWEN3MOE, ARCH_GEMMA2, ARCH_GEMMA3, ARCH_PHI3,
                  ARCH_COUNT };
static const char *const arch_names[ARCH_COUNT] = {
  "llama", "qwen2", "qwen2moe", "qwen3", "qwen3moe", "gemma2", "gemma3",
  "phi3"
};
#define ARCH_LIST "llama, qwen2, qwen2moe, qwen3, qwen3moe, gemma2, " \
                  "gemma3 or phi3"
#define PRESET_LIST "tiny, llama-3.2-1b, tinyllama-1.1b, qwen2-0.5b, " \
                    "qwen3-0.6b, gemma3-1b or phi3-mini"

static bool
is_qwen (enum synth_arch a)
{
  return a == ARCH_QWEN2 || a == ARCH_QWEN2MOE || a == ARCH_QWEN3
         || a == ARCH_QWEN3MOE;
}

/* The architectures whose every layer is a mixture of experts.  */
static bool
is_moe_arch (enum synth_arch a)
{
  return a == ARCH_QWEN2MOE || a == ARCH_QWEN3MOE;
}

static bool
is_gemma (enum synth_arch a)
{
  return a == ARCH_GEMMA2 || a == ARCH_GEMMA3;
}

/* The integer hyper-parameters, in the order of their options; 0 in a
   preset: not set (the ones from HP_HEAD_DIM on are optional).  */
enum hp { HP_VOCAB, HP_EMBD, HP_LAYERS, HP_HEADS, HP_KV_HEADS, HP_FF,
          HP_CTX, HP_HEAD_DIM, HP_SWA, HP_EXPERTS, HP_EXPERTS_USED,
          HP_FF_EXP, HP_FF_SHEXP, HP_COUNT };
static const char *const hp_names[HP_COUNT] = {
  "vocab", "embd", "layers", "heads", "kv-heads", "ff", "ctx", "head-dim",
  "swa", "experts", "experts-used", "ff-exp", "ff-shexp"
};
static const int64_t hp_max[HP_COUNT] = {
  INT64_C (1) << 24, 65536, 4096, 4096, 4096, INT64_C (1) << 20,
  UINT32_MAX, 65536, UINT32_MAX, 4096, 4096, INT64_C (1) << 20,
  INT64_C (1) << 20
};

/* llama3 RoPE frequency factors (rope_freqs.weight) as Llama 3.2 has
   them: factor, low and high frequency factors, original context.  */
#define LLAMA3_FACTOR 32.0
#define LLAMA3_LOW 1.0
#define LLAMA3_HIGH 4.0
#define LLAMA3_ORIG_CTX 8192.0
#define PI 3.14159265358979323846

struct preset
{
  const char *name;
  enum synth_arch arch;
  int64_t hp[HP_COUNT];
  bool tied, rope_freqs;
  double rope_base;             /* 0: the architecture's */
  enum synth_tokenizer tokenizer;
};

static const struct preset presets[] = {
  { "tiny", ARCH_LLAMA, { 512, 64, 2, 4, 2, 128, 256 }, false, false, 0,
    SYNTH_TOK_DEFAULT },
  { "llama-3.2-1b", ARCH_LLAMA, { 128256, 2048, 16, 32, 8, 8192, 131072 },
    true, true, 500000, SYNTH_TOK_GPT2 },
  { "tinyllama-1.1b", ARCH_LLAMA, { 32000, 2048, 22, 32, 4, 5632, 2048 },
    false, false, 10000, SYNTH_TOK_LLAMA },
  { "qwen2-0.5b", ARCH_QWEN2, { 151936, 896, 24, 14, 2, 4864, 32768 },
    true, false, 1000000, SYNTH_TOK_GPT2 },
  { "qwen3-0.6b", ARCH_QWEN3,
    { 151936, 1024, 28, 16, 8, 3072, 40960, [HP_HEAD_DIM] = 128 },
    true, false, 1000000, SYNTH_TOK_GPT2 },
  { "gemma3-1b", ARCH_GEMMA3,
    { 262144, 1152, 26, 4, 1, 6912, 32768, [HP_HEAD_DIM] = 256,
      [HP_SWA] = 512 }, true, false, 1000000, SYNTH_TOK_LLAMA },
  { "phi3-mini", ARCH_PHI3,
    { 32064, 3072, 32, 32, 32, 8192, 4096, [HP_SWA] = 2047 },
    false, false, 10000, SYNTH_TOK_LLAMA },
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

/* What the command line says; -1, 0 or TSR_TYPE_COUNT: not given.  */
struct synth_options
{
  const char *like, *name, *out;
  int arch, tied, rope_freqs, unfused;
  int64_t hp[HP_COUNT];
  double rope_base, rope_linear, attn_softcap, final_softcap;
  enum synth_tokenizer tokenizer;
  tsr_type type, embd_type;
  uint64_t seed;
};

/* The model to write.  */
struct synth_model
{
  enum synth_arch arch;
  char name[96];
  int64_t n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx;
  int64_t head_dim;             /* --head-dim, else n_embd / n_head */
  bool head_dim_set;            /* by --head-dim or the preset */
  bool head_dim_key;            /* write key_length and value_length */
  int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;  /* 0: dense */
  int64_t n_swa;                /* 0: no sliding_window key */
  bool tied, rope_freqs, fused_qkv;
  double rope_base, rope_linear, eps, attn_softcap, final_softcap;
  tsr_type type, embd_type;
  struct synth_vocab_spec vocab;
  uint64_t seed;
};

static void
synth_usage (FILE *f)
{
  fprintf (f,
           "Usage: tessera-gguf synth [OPTION]... OUT\n"
           "Write a model file with seeded random weights.\n\n"
           "  --like=PRESET       start from tiny (the default), "
           "llama-3.2-1b,\n"
           "                      tinyllama-1.1b, qwen2-0.5b, qwen3-0.6b, "
           "gemma3-1b\n"
           "                      or phi3-mini\n"
           "  --arch=ARCH         llama (with --experts: Mixtral), qwen2 "
           "(q/k/v biases),\n"
           "                      qwen2moe, qwen3 (q/k norms), qwen3moe, "
           "gemma2, gemma3\n"
           "                      or phi3\n"
           "  --vocab=N --embd=N --layers=N --heads=N --kv-heads=N --ff=N "
           "--ctx=N\n"
           "                      the hyper-parameters (override the "
           "preset's)\n"
           "  --head-dim=N        the head dimension (writes key_length "
           "and value_length;\n"
           "                      default --embd / --heads)\n"
           "  --experts=N         expert_count: MoE layers (llama, "
           "qwen2moe, qwen3moe)\n"
           "  --experts-used=K    expert_used_count (default 2)\n"
           "  --ff-exp=N          expert_feed_forward_length (qwen2moe, "
           "qwen3moe;\n"
           "                      default --ff)\n"
           "  --ff-shexp=N        expert_shared_feed_forward_length "
           "(qwen2moe;\n"
           "                      default --ff)\n"
           "  --swa=N             attention.sliding_window (llama, phi3; "
           "gemma2 and gemma3\n"
           "                      always have one, default 8)\n"
           "  --attn-softcap=F --final-softcap=F\n"
           "                      gemma2's logit soft-capping (default 50 "
           "and 30)\n"
           "  --unfused           phi3: attn_q, attn_k and attn_v instead "
           "of attn_qkv\n"
           "  --type=TYPE         matrices: any weight type (f32, f16, q8_0, q4_K...) "
           "(default f32)\n"
           "  --embd-type=TYPE    token_embd.weight (default: --type)\n"
           "  --tied, --untied    output.weight absent (tied to "
           "token_embd) or present\n"
           "                      (default: the preset's; gemma2, gemma3: "
           "tied)\n"
           "  --rope-base=F       rope.freq_base\n"
           "  --rope-linear=F     linear RoPE scaling by the factor F\n"
           "  --rope-freqs, --no-rope-freqs\n"
           "                      write rope_freqs.weight (llama3 factors) "
           "or not\n"
           "  --tokenizer=KIND    llama (SentencePiece), gpt2 (byte-level "
           "BPE) or none\n"
           "  --seed=N            random seed (default 1)\n"
           "  --name=NAME         general.name\n"
           "  -h, --help          display this help and exit\n\n"
           "Report bugs to: %s\n", PACKAGE_BUGREPORT);
}

/* Print "tessera-gguf synth: MESSAGE" on standard error; return 1.  */
static int
fail (const char *fmt, ...)
{
  va_list ap;
  fprintf (stderr, "%s: ", program);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  return 1;
}

/* Option values.  */

static bool
parse_int (const char *arg, const char *what, int64_t min, int64_t max,
           int64_t *v)
{
  char *end;
  long long x = strtoll (arg, &end, 10);
  if (end == arg || *end || x < min || x > max)
    {
      fail ("--%s=%s: want an integer from %lld to %lld", what, arg,
            (long long) min, (long long) max);
      return false;
    }
  *v = x;
  return true;
}

static bool
parse_positive (const char *arg, const char *what, double *v)
{
  char *end;
  double x = strtod (arg, &end);
  if (end == arg || *end || !(x > 0) || !isfinite (x))
    {
      fail ("--%s=%s: want a positive number", what, arg);
      return false;
    }
  *v = x;
  return true;
}

static bool
parse_type (const char *arg, const char *what, tsr_type *type)
{
  *type = tsr_type_from_name (arg);
  if (*type == TSR_TYPE_COUNT || *type == TSR_TYPE_I32
      || *type == TSR_TYPE_Q8_K)
    {
      fail ("--%s=%s: want a weight type (f32, f16, bf16, q8_0, q4_0, "
            "q4_1, q5_0, q5_1, q2_K..q6_K, iq4_nl, iq4_xs, mxfp4)", what,
            arg);
      return false;
    }
  return true;
}

static bool
parse_arch (const char *arg, int *arch)
{
  for (int a = 0; a < ARCH_COUNT; a++)
    if (strcmp (arg, arch_names[a]) == 0)
      {
        *arch = a;
        return true;
      }
  fail ("--arch=%s: want " ARCH_LIST, arg);
  return false;
}

static bool
parse_tokenizer (const char *arg, enum synth_tokenizer *tok)
{
  static const char *const names[] = { "none", "llama", "gpt2" };
  static const enum synth_tokenizer kinds[] = {
    SYNTH_TOK_NONE, SYNTH_TOK_LLAMA, SYNTH_TOK_GPT2
  };
  for (int i = 0; i < 3; i++)
    if (strcmp (arg, names[i]) == 0)
      {
        *tok = kinds[i];
        return true;
      }
  fail ("--tokenizer=%s: want llama, gpt2 or none", arg);
  return false;
}

enum
{
  OPT_HP = 256,                 /* OPT_HP + enum hp */
  OPT_LIKE = OPT_HP + HP_COUNT, OPT_ARCH, OPT_TYPE, OPT_EMBD_TYPE,
  OPT_TIED, OPT_UNTIED, OPT_ROPE_BASE, OPT_ROPE_LINEAR, OPT_ROPE_FREQS,
  OPT_NO_ROPE_FREQS, OPT_TOKENIZER, OPT_SEED, OPT_NAME, OPT_ATTN_SOFTCAP,
  OPT_FINAL_SOFTCAP, OPT_UNFUSED
};

/* Store option C with argument ARG in O.  False after a message.  */
static bool
take_option (struct synth_options *o, int c, const char *arg)
{
  int64_t seed;
  if (c >= OPT_HP && c < OPT_HP + HP_COUNT)
    return parse_int (arg, hp_names[c - OPT_HP], 1, hp_max[c - OPT_HP],
                      &o->hp[c - OPT_HP]);
  switch (c)
    {
    case OPT_LIKE: o->like = arg; return true;
    case OPT_NAME: o->name = arg; return true;
    case OPT_ARCH: return parse_arch (arg, &o->arch);
    case OPT_TYPE: return parse_type (arg, "type", &o->type);
    case OPT_EMBD_TYPE: return parse_type (arg, "embd-type", &o->embd_type);
    case OPT_TIED: o->tied = 1; return true;
    case OPT_UNTIED: o->tied = 0; return true;
    case OPT_ROPE_FREQS: o->rope_freqs = 1; return true;
    case OPT_NO_ROPE_FREQS: o->rope_freqs = 0; return true;
    case OPT_ROPE_BASE: return parse_positive (arg, "rope-base",
                                               &o->rope_base);
    case OPT_ROPE_LINEAR: return parse_positive (arg, "rope-linear",
                                                 &o->rope_linear);
    case OPT_ATTN_SOFTCAP: return parse_positive (arg, "attn-softcap",
                                                  &o->attn_softcap);
    case OPT_FINAL_SOFTCAP: return parse_positive (arg, "final-softcap",
                                                   &o->final_softcap);
    case OPT_UNFUSED: o->unfused = 1; return true;
    case OPT_TOKENIZER: return parse_tokenizer (arg, &o->tokenizer);
    case OPT_SEED:
      if (!parse_int (arg, "seed", 0, INT64_MAX, &seed))
        return false;
      o->seed = (uint64_t) seed;
      return true;
    default: return false;
    }
}

/* Parse ARGV into O: 0, or the exit status (1 bad value, 2 bad usage,
   -1 help printed).  */
static int
parse_options (int argc, char **argv, struct synth_options *o)
{
  static const struct option opts[] = {
    { "vocab", required_argument, NULL, OPT_HP + HP_VOCAB },
    { "embd", required_argument, NULL, OPT_HP + HP_EMBD },
    { "layers", required_argument, NULL, OPT_HP + HP_LAYERS },
    { "heads", required_argument, NULL, OPT_HP + HP_HEADS },
    { "kv-heads", required_argument, NULL, OPT_HP + HP_KV_HEADS },
    { "ff", required_argument, NULL, OPT_HP + HP_FF },
    { "ctx", required_argument, NULL, OPT_HP + HP_CTX },
    { "head-dim", required_argument, NULL, OPT_HP + HP_HEAD_DIM },
    { "swa", required_argument, NULL, OPT_HP + HP_SWA },
    { "experts", required_argument, NULL, OPT_HP + HP_EXPERTS },
    { "experts-used", required_argument, NULL, OPT_HP + HP_EXPERTS_USED },
    { "ff-exp", required_argument, NULL, OPT_HP + HP_FF_EXP },
    { "ff-shexp", required_argument, NULL, OPT_HP + HP_FF_SHEXP },
    { "attn-softcap", required_argument, NULL, OPT_ATTN_SOFTCAP },
    { "final-softcap", required_argument, NULL, OPT_FINAL_SOFTCAP },
    { "unfused", no_argument, NULL, OPT_UNFUSED },
    { "like", required_argument, NULL, OPT_LIKE },
    { "arch", required_argument, NULL, OPT_ARCH },
    { "type", required_argument, NULL, OPT_TYPE },
    { "embd-type", required_argument, NULL, OPT_EMBD_TYPE },
    { "tied", no_argument, NULL, OPT_TIED },
    { "untied", no_argument, NULL, OPT_UNTIED },
    { "rope-base", required_argument, NULL, OPT_ROPE_BASE },
    { "rope-linear", required_argument, NULL, OPT_ROPE_LINEAR },
    { "rope-freqs", no_argument, NULL, OPT_ROPE_FREQS },
    { "no-rope-freqs", no_argument, NULL, OPT_NO_ROPE_FREQS },
    { "tokenizer", required_argument, NULL, OPT_TOKENIZER },
    { "seed", required_argument, NULL, OPT_SEED },
    { "name", required_argument, NULL, OPT_NAME },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 }
  };
  *o = (struct synth_options) { .arch = -1, .tied = -1, .rope_freqs = -1,
                                .type = TSR_TYPE_COUNT,
                                .embd_type = TSR_TYPE_COUNT, .seed = 1 };
  for (int i = 0; i < HP_COUNT; i++)
    o->hp[i] = -1;
  argv[0] = (char *) program;   /* getopt's messages name it */
  int c;
  while ((c = getopt_long (argc, argv, "h", opts, NULL)) != -1)
    {
      if (c == 'h')
        {
          synth_usage (stdout);
          return -1;
        }
      if (c == '?')
        {
          fprintf (stderr, "Try 'tessera-gguf synth --help' for more "
                   "information.\n");
          return 2;
        }
      tt_check_optarg ("tessera-gguf synth", opts, c, optarg, NULL);
      if (!take_option (o, c, optarg))
        return 1;
    }
  if (optind != argc - 1)
    {
      fprintf (stderr, "%s: want one output file\nTry 'tessera-gguf synth "
               "--help' for more information.\n", program);
      return 2;
    }
  o->out = argv[optind];
  return 0;
}

/* The model.  */

static const struct preset *
find_preset (const char *name)
{
  for (size_t i = 0; i < N_PRESETS; i++)
    if (strcmp (presets[i].name, name) == 0)
      return &presets[i];
  return NULL;
}

static enum synth_tokenizer
default_tokenizer (const struct preset *p, enum synth_arch arch)
{
  if (p->tokenizer != SYNTH_TOK_DEFAULT && p->arch == arch)
    return p->tokenizer;
  return is_qwen (arch) ? SYNTH_TOK_GPT2 : SYNTH_TOK_LLAMA;
}

/* M from the preset and the options that override it.  The preset's
   head dimension goes with its other sizes; its sliding window and
   experts only to a model of its own architecture.  */
static void
resolve (const struct synth_options *o, const struct preset *p,
         struct synth_model *m)
{
  enum synth_arch arch = o->arch >= 0 ? (enum synth_arch) o->arch : p->arch;
  int64_t hp[HP_COUNT];
  for (int i = 0; i < HP_COUNT; i++)
    hp[i] = o->hp[i] > 0 ? o->hp[i]
            : i <= HP_HEAD_DIM || p->arch == arch ? p->hp[i] : 0;
  *m = (struct synth_model) {
    .arch = arch,
    .n_vocab = hp[HP_VOCAB], .n_embd = hp[HP_EMBD],
    .n_layer = hp[HP_LAYERS], .n_head = hp[HP_HEADS],
    .n_head_kv = hp[HP_KV_HEADS], .n_ff = hp[HP_FF], .n_ctx = hp[HP_CTX],
    .tied = o->tied >= 0 ? o->tied : is_gemma (arch) && p->arch != arch
            ? true : p->tied,
    .rope_linear = o->rope_linear, .seed = o->seed,
    .type = o->type != TSR_TYPE_COUNT ? o->type : TSR_TYPE_F32,
  };
  /* Converted qwen3 and gemma files always name their head dimension.  */
  m->head_dim_set = hp[HP_HEAD_DIM] > 0;
  m->head_dim_key = m->head_dim_set || is_gemma (arch)
                    || arch == ARCH_QWEN3 || arch == ARCH_QWEN3MOE;
  m->head_dim = hp[HP_HEAD_DIM] > 0 ? hp[HP_HEAD_DIM]
                : m->n_embd / m->n_head;
  m->n_expert = hp[HP_EXPERTS];
  if (m->n_expert > 0)
    {
      m->n_expert_used = hp[HP_EXPERTS_USED] > 0 ? hp[HP_EXPERTS_USED]
                         : m->n_expert < 2 ? m->n_expert : 2;
      m->n_ff_exp = hp[HP_FF_EXP] > 0 ? hp[HP_FF_EXP] : m->n_ff;
      if (arch == ARCH_QWEN2MOE)
        m->n_ff_shexp = hp[HP_FF_SHEXP] > 0 ? hp[HP_FF_SHEXP] : m->n_ff;
    }
  m->n_swa = hp[HP_SWA] > 0 ? hp[HP_SWA] : is_gemma (arch) ? 8 : 0;
  m->fused_qkv = arch == ARCH_PHI3 && o->unfused <= 0;
  if (arch == ARCH_GEMMA2)
    {
      m->attn_softcap = o->attn_softcap > 0 ? o->attn_softcap : 50.0;
      m->final_softcap = o->final_softcap > 0 ? o->final_softcap : 30.0;
    }
  m->rope_freqs = o->rope_freqs >= 0 ? o->rope_freqs
                  : p->rope_freqs && p->arch == m->arch;
  m->embd_type = o->embd_type != TSR_TYPE_COUNT ? o->embd_type : m->type;
  m->eps = arch == ARCH_LLAMA || arch == ARCH_PHI3 ? 1e-5 : 1e-6;
  m->rope_base = o->rope_base > 0 ? o->rope_base
                 : p->rope_base > 0 && p->arch == m->arch ? p->rope_base
                 : is_qwen (arch) || arch == ARCH_GEMMA3 ? 1000000.0
                 : 10000.0;
  m->vocab.n_vocab = m->n_vocab;
  m->vocab.pre = is_qwen (arch) ? "qwen2" : "llama-bpe";
  m->vocab.kind = o->tokenizer;
  if (m->vocab.kind == SYNTH_TOK_DEFAULT)
    {
      /* The default gives way to a vocabulary too small for it.  */
      m->vocab.kind = default_tokenizer (p, m->arch);
      if (m->n_vocab < synth_vocab_min (&m->vocab))
        m->vocab.kind = SYNTH_TOK_NONE;
    }
  if (o->name)
    snprintf (m->name, sizeof m->name, "%s", o->name);
  else
    snprintf (m->name, sizeof m->name, "synthetic %s", o->like ? o->like
              : arch_names[m->arch]);
}

/* Row length N of tensor WHAT (from option OPT) must fill TYPE's
   blocks.  */
static bool
check_row (tsr_type type, int64_t n, const char *what, const char *opt)
{
  int64_t block = tsr_type_traits (type)->block_size;
  if (n % block == 0)
    return true;
  fail ("%s rows have %lld elements (%s), not a multiple of the %s block "
        "size %lld", what, (long long) n, opt, tsr_type_name (type),
        (long long) block);
  return false;
}

/* False after a message when the options O ask for what M's
   architecture has not.  */
static bool
check_arch_options (const struct synth_options *o,
                    const struct synth_model *m)
{
  const char *an = arch_names[m->arch];
  const bool moe_arch = is_moe_arch (m->arch);
  if (moe_arch && m->n_expert == 0)
    return !fail ("--arch=%s needs --experts=N (the experts per layer)", an);
  if (m->n_expert > 0 && m->arch != ARCH_LLAMA && !moe_arch)
    return !fail ("--experts: %s files have no experts (llama, qwen2moe "
                  "and qwen3moe have)", an);
  if (m->n_expert == 1)
    return !fail ("--experts=1: want from 2 to 4096 experts (the model "
                  "loader's range)");
  if (o->hp[HP_EXPERTS_USED] > 0 && m->n_expert == 0)
    return !fail ("--experts-used needs --experts");
  if (m->n_expert > 0 && m->n_expert_used > m->n_expert)
    return !fail ("--experts-used=%lld: want from 1 to --experts=%lld",
                  (long long) m->n_expert_used, (long long) m->n_expert);
  if (o->hp[HP_FF_EXP] > 0 && !moe_arch)
    return !fail ("--ff-exp: %s files have no expert_feed_forward_length "
                  "(qwen2moe and qwen3moe have; llama's experts have --ff)",
                  an);
  if (o->hp[HP_FF_SHEXP] > 0 && m->arch != ARCH_QWEN2MOE)
    return !fail ("--ff-shexp: %s files have no shared expert (qwen2moe "
                  "has)", an);
  if (m->n_swa > 0 && is_qwen (m->arch))
    return !fail ("--swa: %s files have no sliding window (llama, gemma2, "
                  "gemma3 and phi3 have)", an);
  if ((o->attn_softcap > 0 || o->final_softcap > 0)
      && m->arch != ARCH_GEMMA2)
    return !fail ("--attn-softcap, --final-softcap: %s files have no "
                  "soft-capping (gemma2 has)", an);
  if (o->unfused > 0 && m->arch != ARCH_PHI3)
    return !fail ("--unfused: %s files have no attn_qkv to split (phi3 "
                  "has)", an);
  return true;
}

/* False after a message when M cannot be written.  */
static bool
check_model (const struct synth_options *o, const struct synth_model *m)
{
  const bool head_dim_given = m->head_dim_set;
  if (!check_arch_options (o, m))
    return false;
  if (!head_dim_given && m->n_embd % m->n_head != 0)
    return !fail ("--embd=%lld is not divisible by --heads=%lld",
                  (long long) m->n_embd, (long long) m->n_head);
  if (m->n_head % m->n_head_kv != 0)
    return !fail ("--heads=%lld is not divisible by --kv-heads=%lld",
                  (long long) m->n_head, (long long) m->n_head_kv);
  if (m->head_dim % 2 != 0)
    return !fail ("the head dimension %lld (%s) is odd: RoPE rotates pairs",
                  (long long) m->head_dim,
                  head_dim_given ? "--head-dim" : "--embd / --heads");
  if (m->rope_freqs && m->arch != ARCH_LLAMA)
    return !fail ("--rope-freqs: %s files have no rope_freqs.weight",
                  arch_names[m->arch]);
  /* Every matrix's row: n_embd, or ff, heads * head_dim, n_ff_exp or
     n_ff_shexp for the down and output projections.  */
  if (!check_row (m->type, m->n_embd, "matrix", "--embd")
      || (!is_moe_arch (m->arch)
          && !check_row (m->type, m->n_ff, "ffn_down", "--ff"))
      || !check_row (m->type, m->n_head * m->head_dim, "attn_output",
                     "--heads * head dimension")
      || (is_moe_arch (m->arch)
          && !check_row (m->type, m->n_ff_exp, "ffn_down_exps", "--ff-exp"))
      || (m->arch == ARCH_QWEN2MOE
          && !check_row (m->type, m->n_ff_shexp, "ffn_down_shexp",
                         "--ff-shexp"))
      || !check_row (m->embd_type, m->n_embd, "token_embd", "--embd"))
    return false;
  int64_t min = m->vocab.kind == SYNTH_TOK_NONE ? 1
                : synth_vocab_min (&m->vocab);
  if (m->n_vocab < min)
    return !fail ("--vocab=%lld is too small for a %s tokenizer (at least "
                  "%lld tokens)", (long long) m->n_vocab,
                  m->vocab.kind == SYNTH_TOK_LLAMA ? "llama" : "gpt2",
                  (long long) min);
  return true;
}

/* Metadata.  */

/* general.file_type: llama.cpp's file type ids (LLAMA_FTYPE_ALL_F32,
   MOSTLY_F16, MOSTLY_Q4_0, MOSTLY_Q8_0, MOSTLY_BF16).  */
static uint32_t
file_type (tsr_type type)
{
  switch (type)
    {
    case TSR_TYPE_F16: return 1;
    case TSR_TYPE_Q4_0: return 2;
    case TSR_TYPE_Q8_0: return 7;
    case TSR_TYPE_BF16: return 32;
    default: return 0;
    }
}

/* "ARCH.SUFFIX" in BUF (128 bytes).  */
static const char *
arch_key (const struct synth_model *m, const char *suffix, char *buf)
{
  snprintf (buf, 128, "%s.%s", arch_names[m->arch], suffix);
  return buf;
}

/* The hyper-parameters, in the order the converter writes them.  */
static int
set_model_keys (tsr_gguf_writer *w, const struct synth_model *m)
{
  int st = tsr_gguf_set_str (w, "general.architecture", arch_names[m->arch]);
  if (st == TSR_OK)
    st = tsr_gguf_set_str (w, "general.type", "model");
  if (st == TSR_OK)
    st = tsr_gguf_set_str (w, "general.name", m->name);
  const struct { const char *key; int64_t v; } u32s[] = {
    { "block_count", m->n_layer }, { "context_length", m->n_ctx },
    { "embedding_length", m->n_embd }, { "feed_forward_length", m->n_ff },
    { "attention.head_count", m->n_head },
    { "attention.head_count_kv", m->n_head_kv },
  };
  char k[128];
  for (size_t i = 0; st == TSR_OK && i < sizeof u32s / sizeof u32s[0]; i++)
    st = tsr_gguf_set_u32 (w, arch_key (m, u32s[i].key, k),
                           (uint32_t) u32s[i].v);
  if (st == TSR_OK)
    st = tsr_gguf_set_f32 (w, arch_key (m, "rope.freq_base", k),
                           (float) m->rope_base);
  if (st == TSR_OK)
    st = tsr_gguf_set_f32 (w, arch_key (m, "attention.layer_norm_rms_epsilon",
                                        k), (float) m->eps);
  if (st == TSR_OK)
    st = tsr_gguf_set_u32 (w, "general.file_type", file_type (m->type));
  if (st == TSR_OK)
    st = tsr_gguf_set_u32 (w, arch_key (m, "vocab_size", k),
                           (uint32_t) m->n_vocab);
  if (st == TSR_OK)
    st = tsr_gguf_set_u32 (w, arch_key (m, "rope.dimension_count", k),
                           (uint32_t) m->head_dim);
  if (st == TSR_OK && m->rope_linear > 0)
    st = tsr_gguf_set_str (w, arch_key (m, "rope.scaling.type", k), "linear");
  if (st == TSR_OK && m->rope_linear > 0)
    st = tsr_gguf_set_f32 (w, arch_key (m, "rope.scaling.factor", k),
                           (float) m->rope_linear);
  /* The keys of the other architectures and options: each when it
     applies (a llama or qwen2 file without them is as before).  */
  const bool moe_ff = is_moe_arch (m->arch);
  const struct { bool on; const char *key; int64_t v; } more[] = {
    { m->head_dim_key, "attention.key_length", m->head_dim },
    { m->head_dim_key, "attention.value_length", m->head_dim },
    { m->n_expert > 0, "expert_count", m->n_expert },
    { m->n_expert > 0, "expert_used_count", m->n_expert_used },
    { moe_ff, "expert_feed_forward_length", m->n_ff_exp },
    { m->arch == ARCH_QWEN2MOE, "expert_shared_feed_forward_length",
      m->n_ff_shexp },
    { m->n_swa > 0, "attention.sliding_window", m->n_swa },
  };
  for (size_t i = 0; st == TSR_OK && i < sizeof more / sizeof more[0]; i++)
    if (more[i].on)
      st = tsr_gguf_set_u32 (w, arch_key (m, more[i].key, k),
                             (uint32_t) more[i].v);
  if (st == TSR_OK && m->arch == ARCH_GEMMA2)
    st = tsr_gguf_set_f32 (w, arch_key (m, "attn_logit_softcapping", k),
                           (float) m->attn_softcap);
  if (st == TSR_OK && m->arch == ARCH_GEMMA2)
    st = tsr_gguf_set_f32 (w, arch_key (m, "final_logit_softcapping", k),
                           (float) m->final_softcap);
  return st;
}

/* Tensors.  */

enum fill { FILL_UNIFORM, FILL_ROPE_FREQS };

/* One tensor to write: values uniform in CENTER +- HALF.  */
struct tspec
{
  char name[TSR_MAX_NAME];
  int64_t ne0, ne1, ne2;        /* ne1 is 1 for vectors, ne2 but for
                                   experts [in, out, n_expert] */
  tsr_type type;
  enum fill fill;
  double center;
  float half;
};

/* The most tensors a layer has (qwen2moe's 17).  */
#define MAX_LAYER_TENSORS 20

struct tlist
{
  struct tspec *v;
  int64_t n;
};

static void
add (struct tlist *l, const char *name, int64_t ne0, int64_t ne1,
     tsr_type type, double center, double std)
{
  struct tspec *s = &l->v[l->n++];
  snprintf (s->name, sizeof s->name, "%s", name);
  s->ne0 = ne0;
  s->ne1 = ne1;
  s->ne2 = 1;
  s->type = type;
  s->fill = FILL_UNIFORM;
  s->center = center;
  s->half = (float) (std * sqrt (3.0));   /* uniform: std = half / sqrt 3 */
}

/* Matrices: std 1/sqrt(fan-in), so that each keeps the scale of its
   input.  Norms: 1 + small noise.  Biases: small.  */
static void
add_matrix (struct tlist *l, const char *name, int64_t ne0, int64_t ne1,
            tsr_type type)
{
  add (l, name, ne0, ne1, type, 0, 1 / sqrt ((double) ne0));
}

/* N_EXPERT matrices [NE0, NE1] in one tensor.  */
static void
add_experts (struct tlist *l, const char *name, int64_t ne0, int64_t ne1,
             int64_t n_expert, tsr_type type)
{
  add_matrix (l, name, ne0, ne1, type);
  l->v[l->n - 1].ne2 = n_expert;
}

static void
add_norm (struct tlist *l, const char *name, int64_t n)
{
  add (l, name, n, 1, TSR_TYPE_F32, 1, 0.05);
}

/* Layer IL's tensors in the order of their Hugging Face names sorted
   as strings (input_layernorm, mlp.down/gate/up_proj,
   post_attention_layernorm, self_attn.k/o/q/v_proj, bias before weight),
   which is the order the converter reads and writes them in.  The
   other architectures follow the same pattern with their own Hugging
   Face names: gemma's post_attention_layernorm,
   post_feedforward_layernorm, pre_feedforward_layernorm; the experts
   (merged), the router and the shared expert in place of the mlp;
   k_norm before k_proj and q_norm before q_proj; phi3's gate_up_proj
   and qkv_proj.  Mixtral's block_sparse_moe comes first.  The router
   (ffn_gate_inp) stays f32 as llama.cpp's quantizer leaves it.  */
static void
add_layer (struct tlist *l, const struct synth_model *m, int il)
{
  const int64_t e = m->n_embd, hd = m->head_dim, q = m->n_head * hd;
  const int64_t kv = m->n_head_kv * hd, ff = m->n_ff;
  const int64_t nx = m->n_expert, ffx = m->n_ff_exp, ffs = m->n_ff_shexp;
  const bool bias = m->arch == ARCH_QWEN2 || m->arch == ARCH_QWEN2MOE;
  const bool qk_norm = m->arch == ARCH_QWEN3 || m->arch == ARCH_QWEN3MOE
                       || m->arch == ARCH_GEMMA3;
  const bool mixtral = m->arch == ARCH_LLAMA && nx > 0;
  const double router_std = 1 / sqrt ((double) e);
  char n[TSR_MAX_NAME];
#define NAME(s) (snprintf (n, sizeof n, "blk.%d.%s", il, s), n)
  if (mixtral)
    {
      add_experts (l, NAME ("ffn_gate_exps.weight"), e, ff, nx, m->type);
      add_experts (l, NAME ("ffn_down_exps.weight"), ff, e, nx, m->type);
      add_experts (l, NAME ("ffn_up_exps.weight"), e, ff, nx, m->type);
      add (l, NAME ("ffn_gate_inp.weight"), e, nx, TSR_TYPE_F32, 0,
           router_std);
    }
  add_norm (l, NAME ("attn_norm.weight"), e);
  if (is_moe_arch (m->arch))
    {
      add_experts (l, NAME ("ffn_down_exps.weight"), ffx, e, nx, m->type);
      add_experts (l, NAME ("ffn_gate_exps.weight"), e, ffx, nx, m->type);
      add_experts (l, NAME ("ffn_up_exps.weight"), e, ffx, nx, m->type);
      add (l, NAME ("ffn_gate_inp.weight"), e, nx, TSR_TYPE_F32, 0,
           router_std);
      if (m->arch == ARCH_QWEN2MOE)
        {
          add_matrix (l, NAME ("ffn_down_shexp.weight"), ffs, e, m->type);
          add_matrix (l, NAME ("ffn_gate_shexp.weight"), e, ffs, m->type);
          add_matrix (l, NAME ("ffn_up_shexp.weight"), e, ffs, m->type);
          add (l, NAME ("ffn_gate_inp_shexp.weight"), e, 1, TSR_TYPE_F32, 0,
               router_std);
        }
    }
  else if (m->arch == ARCH_PHI3)
    {
      add_matrix (l, NAME ("ffn_down.weight"), ff, e, m->type);
      add_matrix (l, NAME ("ffn_up.weight"), e, 2 * ff, m->type);
    }
  else if (!mixtral)
    {
      add_matrix (l, NAME ("ffn_down.weight"), ff, e, m->type);
      add_matrix (l, NAME ("ffn_gate.weight"), e, ff, m->type);
      add_matrix (l, NAME ("ffn_up.weight"), e, ff, m->type);
    }
  if (is_gemma (m->arch))
    {
      add_norm (l, NAME ("post_attention_norm.weight"), e);
      add_norm (l, NAME ("post_ffw_norm.weight"), e);
    }
  add_norm (l, NAME ("ffn_norm.weight"), e);
  if (m->fused_qkv)
    {
      add_matrix (l, NAME ("attn_output.weight"), q, e, m->type);
      add_matrix (l, NAME ("attn_qkv.weight"), e, q + 2 * kv, m->type);
      return;
    }
  if (qk_norm)
    add_norm (l, NAME ("attn_k_norm.weight"), hd);
  if (bias)
    add (l, NAME ("attn_k.bias"), kv, 1, TSR_TYPE_F32, 0, 0.05);
  add_matrix (l, NAME ("attn_k.weight"), e, kv, m->type);
  add_matrix (l, NAME ("attn_output.weight"), q, e, m->type);
  if (qk_norm)
    add_norm (l, NAME ("attn_q_norm.weight"), hd);
  if (bias)
    add (l, NAME ("attn_q.bias"), q, 1, TSR_TYPE_F32, 0, 0.05);
  add_matrix (l, NAME ("attn_q.weight"), e, q, m->type);
  if (bias)
    add (l, NAME ("attn_v.bias"), kv, 1, TSR_TYPE_F32, 0, 0.05);
  add_matrix (l, NAME ("attn_v.weight"), e, kv, m->type);
#undef NAME
}

static int
cmp_decimal (const void *a, const void *b)
{
  char x[24], y[24];
  snprintf (x, sizeof x, "%d", *(const int *) a);
  snprintf (y, sizeof y, "%d", *(const int *) b);
  return strcmp (x, y);
}

/* Every tensor of M in file order: the generated rope_freqs first,
   then lm_head, embed_tokens, the layers (0, 1, 10, 11, ..., 2: their
   numbers sort as strings) and norm, as the converter sorts the Hugging
   Face names.  The logits come out at about std 3: token_embd has std
   1, or 3/sqrt(n_embd) where it is also the output matrix, so that a
   token's own row does not dominate its logits.  NULL when out of
   memory.  */
static struct tlist *
tensor_list (const struct synth_model *m)
{
  struct tlist *l = calloc (1, sizeof *l);
  int *order = malloc ((size_t) m->n_layer * sizeof *order);
  if (l)
    l->v = calloc ((size_t) (4 + MAX_LAYER_TENSORS * m->n_layer),
                   sizeof *l->v);
  if (!l || !l->v || !order)
    {
      free (order);
      free (l ? l->v : NULL);
      free (l);
      return NULL;
    }
  double out_std = 3 / sqrt ((double) m->n_embd);
  if (m->rope_freqs)
    {
      add (l, "rope_freqs.weight", m->head_dim / 2, 1, TSR_TYPE_F32, 0, 0);
      l->v[l->n - 1].fill = FILL_ROPE_FREQS;
    }
  if (!m->tied)
    add (l, "output.weight", m->n_embd, m->n_vocab, m->type, 0, out_std);
  add (l, "token_embd.weight", m->n_embd, m->n_vocab, m->embd_type, 0,
       m->tied ? out_std : 1.0);
  for (int i = 0; i < m->n_layer; i++)
    order[i] = i;
  qsort (order, (size_t) m->n_layer, sizeof *order, cmp_decimal);
  for (int i = 0; i < m->n_layer; i++)
    add_layer (l, m, order[i]);
  add (l, "output_norm.weight", m->n_embd, 1, TSR_TYPE_F32, 1, 0.05);
  free (order);
  return l;
}

static void
tlist_free (struct tlist *l)
{
  if (l)
    free (l->v);
  free (l);
}

/* llama3 frequency factors, as the converter computes them from the
   rope_scaling of a Llama 3.1+ config: 1 for short wavelengths, FACTOR
   for long ones, a smooth blend between.  */
static void
llama3_factors (const struct synth_model *m, float *ff)
{
  const double low_wavelen = LLAMA3_ORIG_CTX / LLAMA3_LOW;
  const double high_wavelen = LLAMA3_ORIG_CTX / LLAMA3_HIGH;
  for (int64_t i = 0; i < m->head_dim / 2; i++)
    {
      double freq = pow (m->rope_base, -(double) (2 * i) / m->head_dim);
      double wavelen = 2 * PI / freq;
      if (wavelen < high_wavelen)
        ff[i] = 1;
      else if (wavelen > low_wavelen)
        ff[i] = (float) LLAMA3_FACTOR;
      else
        {
          double smooth = (LLAMA3_ORIG_CTX / wavelen - LLAMA3_LOW)
                          / (LLAMA3_HIGH - LLAMA3_LOW);
          ff[i] = (float) (1 / ((1 - smooth) / LLAMA3_FACTOR + smooth));
        }
    }
}

/* A value uniform in CENTER +- HALF.  24 random bits give u in [-1, 1),
   whose product with the float HALF is exact in double: the same value
   on every machine, with or without fused multiply-add.  */
static inline float
draw (struct tt_rng *rng, double center, float half)
{
  double u = ((double) (tt_rng_next (rng) >> 40) - 8388608.0) * 0x1.0p-23;
  return (float) (center + (double) half * u);
}

/* Fill T as S says, from the stream the seed and S's name select, one
   row at a time (ne1 * ne2 rows) through ROW (S->ne0 floats).  */
static int
fill (const struct synth_model *m, const struct tspec *s, tsr_tensor *t,
      float *row)
{
  struct tt_rng rng;
  tt_rng_seed (&rng, m->seed, s->name, 0);
  size_t row_bytes = tsr_row_size (s->type, s->ne0);
  int st = TSR_OK;
  for (int64_t r = 0; r < s->ne1 * s->ne2 && st == TSR_OK; r++)
    {
      if (s->fill == FILL_ROPE_FREQS)
        llama3_factors (m, row);
      else
        for (int64_t i = 0; i < s->ne0; i++)
          row[i] = draw (&rng, s->center, s->half);
      st = tsr_quantize_row (s->type, row, (char *) t->data + r * row_bytes,
                             s->ne0);
    }
  return st;
}

/* Create, fill and add to W every tensor of L in CTX.  */
static int
add_tensors (tsr_gguf_writer *w, tsr_context *ctx,
             const struct synth_model *m, const struct tlist *l)
{
  int64_t widest = 1;
  for (int64_t i = 0; i < l->n; i++)
    widest = l->v[i].ne0 > widest ? l->v[i].ne0 : widest;
  float *row = malloc ((size_t) widest * sizeof *row);
  int st = row ? TSR_OK : TSR_ERR_NO_MEMORY;
  for (int64_t i = 0; st == TSR_OK && i < l->n; i++)
    {
      const struct tspec *s = &l->v[i];
      tsr_tensor *t = s->ne2 > 1
                      ? tsr_new_tensor_3d (ctx, s->type, s->ne0, s->ne1,
                                           s->ne2)
                      : s->ne1 > 1
                      ? tsr_new_tensor_2d (ctx, s->type, s->ne0, s->ne1)
                      : tsr_new_tensor_1d (ctx, s->type, s->ne0);
      st = t ? fill (m, s, t, row) : TSR_ERR_NO_MEMORY;
      if (st == TSR_OK)
        st = tsr_gguf_writer_add_tensor (w, tsr_set_name (t, s->name));
    }
  free (row);
  return st;
}

static int64_t
n_params (const struct tlist *l)
{
  int64_t n = 0;
  for (int64_t i = 0; i < l->n; i++)
    n += l->v[i].ne0 * l->v[i].ne1 * l->v[i].ne2;
  return n;
}

/* Write M to PATH.  */
static int
write_model (const struct synth_model *m, const char *path)
{
  double t0 = tt_now_us ();
  char err[256] = "";
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_context *ctx = tsr_context_new (false);
  struct tlist *l = tensor_list (m);
  int st = w && ctx && l ? set_model_keys (w, m) : TSR_ERR_NO_MEMORY;
  if (st == TSR_OK && m->vocab.kind != SYNTH_TOK_NONE)
    st = synth_vocab_write (w, &m->vocab, err, sizeof err);
  if (st == TSR_OK)
    st = tsr_gguf_set_u32 (w, "general.quantization_version", 2);
  if (st == TSR_OK)
    st = add_tensors (w, ctx, m, l);
  if (st == TSR_OK)
    st = tsr_gguf_writer_write_file (w, path);
  struct stat sb;
  if (st == TSR_OK && stat (path, &sb) == 0)
    printf ("%s: %s, %lld parameters, %lld layers, %s, %.1f MiB in %.1f s\n",
            path, arch_names[m->arch], (long long) n_params (l),
            (long long) m->n_layer, tsr_type_name (m->type),
            (double) sb.st_size / 1048576.0, (tt_now_us () - t0) / 1e6);
  else if (st != TSR_OK)
    fail ("%s: %s", path, *err ? err : st == TSR_ERR_NO_MEMORY
          && !*tsr_last_error () ? "out of memory" : tsr_last_error ());
  tlist_free (l);
  tsr_context_free (ctx);
  tsr_gguf_writer_free (w);
  return st == TSR_OK ? 0 : 1;
}

int
synth_main (int argc, char **argv)
{
  struct synth_options o;
  int status = parse_options (argc, argv, &o);
  if (status)
    return status < 0 ? 0 : status;
  const struct preset *p = find_preset (o.like ? o.like : "tiny");
  if (!p)
    return fail ("--like=%s: want " PRESET_LIST, o.like);
  struct synth_model m;
  resolve (&o, p, &m);
  if (!check_model (&o, &m))
    return 1;
  return write_model (&m, o.out);
}
