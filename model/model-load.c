/* model-load.c - a model file's hyper-parameters and weights, placed
 * on backends.
 *
 * Owns tsr_model_load/free and the model's accessors.  It reads the
 * keys and checks every tensor's presence, type and shape before any
 * weight is copied, so a bad file fails with the key or tensor named;
 * it does not build graphs (model-graph.c) or keep caches
 * (model-session.c).  */
#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model-lib.h"
#include "arch.h"

/* Keys.  */

/* An integer key of any integer type.  */
static int
get_int (const tsr_gguf *g, const char *key, int64_t *v)
{
  int64_t i = tsr_gguf_find_key (g, key);
  if (i < 0)
    return tsr_set_error (TSR_ERR_NOT_FOUND, "model: key %s is missing",
                          key);
  union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32;
          int32_t i32; uint64_t u64; int64_t i64; } x;
  switch (tsr_gguf_kv_type (g, i))
    {
    case TSR_GGUF_UINT8: tsr_gguf_get_u8 (g, key, &x.u8); *v = x.u8; break;
    case TSR_GGUF_INT8: tsr_gguf_get_i8 (g, key, &x.i8); *v = x.i8; break;
    case TSR_GGUF_UINT16: tsr_gguf_get_u16 (g, key, &x.u16); *v = x.u16; break;
    case TSR_GGUF_INT16: tsr_gguf_get_i16 (g, key, &x.i16); *v = x.i16; break;
    case TSR_GGUF_UINT32: tsr_gguf_get_u32 (g, key, &x.u32); *v = x.u32; break;
    case TSR_GGUF_INT32: tsr_gguf_get_i32 (g, key, &x.i32); *v = x.i32; break;
    case TSR_GGUF_INT64: tsr_gguf_get_i64 (g, key, &x.i64); *v = x.i64; break;
    case TSR_GGUF_UINT64:
      tsr_gguf_get_u64 (g, key, &x.u64);
      if (x.u64 > INT64_MAX)
        return tsr_set_error (TSR_ERR_FORMAT, "model: key %s: %" PRIu64
                              " is too large", key, x.u64);
      *v = (int64_t) x.u64;
      break;
    default:
      return tsr_set_error (TSR_ERR_FORMAT, "model: key %s is a %s, an "
                            "integer expected", key,
                            tsr_gguf_type_name (tsr_gguf_kv_type (g, i)));
    }
  return TSR_OK;
}

/* A positive integer key no larger than MAX; DEF (when >= 0) if the
   key is absent.  */
static int
get_count (const tsr_gguf *g, const char *arch, const char *name,
           int64_t def, int64_t max, int64_t *v)
{
  char key[128];
  snprintf (key, sizeof key, "%s.%s", arch, name);
  if (def >= 0 && tsr_gguf_find_key (g, key) < 0)
    {
      *v = def;
      return TSR_OK;
    }
  int st = get_int (g, key, v);
  if (st == TSR_OK && (*v < 1 || *v > max))
    st = tsr_set_error (TSR_ERR_FORMAT, "model: key %s = %" PRId64 " is "
                        "out of range [1, %" PRId64 "]", key, *v, max);
  return st;
}

/* A float key (f32 or f64); DEF if absent.  */
static int
get_float (const tsr_gguf *g, const char *arch, const char *name, float def,
           float *v)
{
  char key[128];
  snprintf (key, sizeof key, "%s.%s", arch, name);
  int64_t i = tsr_gguf_find_key (g, key);
  double d;
  *v = def;
  if (i < 0)
    return TSR_OK;
  if (tsr_gguf_kv_type (g, i) == TSR_GGUF_FLOAT64)
    {
      tsr_gguf_get_f64 (g, key, &d);
      *v = (float) d;
    }
  else if (tsr_gguf_get_f32 (g, key, v) != TSR_OK)
    return tsr_set_error (TSR_ERR_FORMAT, "model: key %s is a %s, a float "
                          "expected", key,
                          tsr_gguf_type_name (tsr_gguf_kv_type (g, i)));
  if (!isfinite (*v))
    return tsr_set_error (TSR_ERR_FORMAT, "model: key %s is not finite",
                          key);
  return TSR_OK;
}

static int
read_arch (const tsr_gguf *g, tsr_model *m)
{
  const char *arch;
  size_t len;
  if (tsr_gguf_get_str (g, "general.architecture", &arch, &len) != TSR_OK)
    return tsr_set_error (TSR_ERR_FORMAT, "model: key general.architecture "
                          "is missing or not a string");
  if (!(m->arch = tsri_arch_find (arch)))
    return tsr_set_error (TSR_ERR_UNSUPPORTED, "model: general.architecture "
                          "is \"%.40s\": supported are %s", arch,
                          tsri_arch_names ());
  snprintf (m->hp.arch, sizeof m->hp.arch, "%s", arch);
  m->hp.rope_mode = m->arch->rope;
  return TSR_OK;
}

/* Linear rope scaling when ARCH.rope.scaling.type says so; other types
   are refused rather than run wrongly.  */
static int
read_rope_scaling (const tsr_gguf *g, struct tsr_model_hparams *hp)
{
  char key[128];
  const char *type;
  snprintf (key, sizeof key, "%s.rope.scaling.type", hp->arch);
  hp->rope_freq_scale = 1.0f;
  if (tsr_gguf_find_key (g, key) < 0)
    {
      /* Older files give a factor without a type, or rope.scale_linear:
         both mean linear scaling.  */
      float f = 1.0f;
      int st = get_float (g, hp->arch, "rope.scaling.factor", 1.0f, &f);
      if (st == TSR_OK && f == 1.0f)
        st = get_float (g, hp->arch, "rope.scale_linear", 1.0f, &f);
      if (st == TSR_OK && !(f > 0 && isfinite (f) && isfinite (1.0f / f)))
        st = tsr_set_error (TSR_ERR_FORMAT, "model: the rope scaling factor "
                            "of %s is %g: a positive number whose inverse "
                            "is finite is needed", hp->arch, (double) f);
      if (st == TSR_OK)
        hp->rope_freq_scale = 1.0f / f;
      return st;
    }
  if (tsr_gguf_get_str (g, key, &type, NULL) != TSR_OK)
    return tsr_set_error (TSR_ERR_FORMAT, "model: key %s is not a string",
                          key);
  if (strcmp (type, "none") == 0)
    return TSR_OK;
  if (strcmp (type, "linear") != 0)
    return tsr_set_error (TSR_ERR_UNSUPPORTED, "model: %s \"%.40s\" is not "
                          "supported (none and linear are)", key, type);
  float factor;
  int st = get_float (g, hp->arch, "rope.scaling.factor", 1.0f, &factor);
  if (st == TSR_OK
      && !(factor > 0 && isfinite (factor) && isfinite (1.0f / factor)))
    st = tsr_set_error (TSR_ERR_FORMAT, "model: key %s.rope.scaling.factor "
                        "is %g: a positive number whose inverse is finite "
                        "is needed", hp->arch, (double) factor);
  if (st == TSR_OK)
    hp->rope_freq_scale = 1.0f / factor;
  return st;
}

/* The keys every architecture has.  */
static int
read_hparams (const tsr_gguf *g, tsr_model *m)
{
  struct tsr_model_hparams *hp = &m->hp;
  const int64_t big = INT64_C (1) << 31;
  const char *a = hp->arch;
  int st = read_arch (g, m);
  if (st == TSR_OK)
    st = get_count (g, a, "embedding_length", -1, big, &hp->n_embd);
  if (st == TSR_OK)
    st = get_count (g, a, "block_count", -1, 1 << 16, &hp->n_layer);
  if (st == TSR_OK)
    st = get_count (g, a, "feed_forward_length", -1, big, &hp->n_ff);
  if (st == TSR_OK)
    st = get_count (g, a, "attention.head_count", -1, 1 << 16, &hp->n_head);
  if (st == TSR_OK)
    st = get_count (g, a, "attention.head_count_kv", hp->n_head, 1 << 16,
                    &hp->n_head_kv);
  if (st == TSR_OK)
    st = get_count (g, a, "context_length", 4096, big, &hp->n_ctx_train);
  if (st == TSR_OK)
    st = get_count (g, a, "attention.key_length",
                    hp->n_embd / hp->n_head > 0 ? hp->n_embd / hp->n_head
                    : 1, 1 << 16, &hp->head_dim);
  char key[128];
  snprintf (key, sizeof key, "%s.attention.key_length", a);
  if (st == TSR_OK && tsr_gguf_find_key (g, key) < 0
      && hp->n_embd % hp->n_head != 0)
    st = tsr_set_error (TSR_ERR_FORMAT, "model: %s.embedding_length %"
                        PRId64 " is not a multiple of %s.attention."
                        "head_count %" PRId64 ", and the file has no %s",
                        a, hp->n_embd, a, hp->n_head, key);
  int64_t head_dim_v = 0;
  if (st == TSR_OK)
    st = get_count (g, a, "attention.value_length", hp->head_dim, 1 << 16,
                    &head_dim_v);
  if (st == TSR_OK && head_dim_v != hp->head_dim)
    st = tsr_set_error (TSR_ERR_UNSUPPORTED, "model: %s.attention."
                        "value_length %" PRId64 " differs from %s.attention."
                        "key_length %" PRId64 ": not supported", a,
                        head_dim_v, a, hp->head_dim);
  if (st == TSR_OK)
    st = get_count (g, a, "rope.dimension_count", hp->head_dim, 1 << 16,
                    &hp->n_rot);
  if (st == TSR_OK)
    st = get_float (g, a, "attention.layer_norm_rms_epsilon", m->arch->eps,
                    &hp->norm_eps);
  if (st == TSR_OK)
    st = get_float (g, a, "rope.freq_base", 10000.0f, &hp->rope_freq_base);
  if (st == TSR_OK)
    st = read_rope_scaling (g, hp);
  return st;
}

/* The layers with their defaults, then the architecture's keys and
   settings.  */
static int
arch_hparams (tsr_model *m)
{
  struct tsr_model_hparams *hp = &m->hp;
  m->layers = calloc ((size_t) hp->n_layer, sizeof *m->layers);
  if (!m->layers)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "model: out of memory");
  for (int64_t il = 0; il < hp->n_layer; il++)
    {
      m->layers[il].rope_base = hp->rope_freq_base;
      m->layers[il].rope_scale = hp->rope_freq_scale;
    }
  m->embd_scale = 1.0f;
  m->attn_scale = 1.0f / sqrtf ((float) hp->head_dim);
  struct tsri_loader ld = { m, TSR_OK };
  if (m->arch->hparams)
    m->arch->hparams (&ld);
  return ld.st;
}

/* Relations between the hyper-parameters the graph relies on.  */
static int
check_hparams (const struct tsr_model_hparams *hp)
{
  const char *a = hp->arch;
  if (hp->n_head % hp->n_head_kv != 0)
    return tsr_set_error (TSR_ERR_FORMAT, "model: %s.attention.head_count "
                          "%" PRId64 " is not a multiple of "
                          "%s.attention.head_count_kv %" PRId64, a,
                          hp->n_head, a, hp->n_head_kv);
  if (hp->n_rot % 2 != 0 || hp->n_rot > hp->head_dim)
    return tsr_set_error (TSR_ERR_FORMAT, "model: %s.rope.dimension_count "
                          "%" PRId64 " must be even and at most the head "
                          "size %" PRId64, a, hp->n_rot, hp->head_dim);
  if (!(hp->rope_freq_base > 0) || !(hp->norm_eps >= 0))
    return tsr_set_error (TSR_ERR_FORMAT, "model: %s.rope.freq_base must be "
                          "positive and %s.attention.layer_norm_rms_epsilon"
                          " not negative", a, a);
  if (!(hp->attn_softcap >= 0) || !(hp->final_softcap >= 0))
    return tsr_set_error (TSR_ERR_FORMAT, "model: the soft-capping values "
                          "of %s must not be negative", a);
  return TSR_OK;
}

/* Placement: which backend holds each layer (IL == n_layer: the output).
   The last GPU_LAYERS layers, and then the output, on backend 0, the
   rest on backend 1: every layer on backend 0 when GPU_LAYERS is
   negative or at least the layer count, none when it is 0.  */
static int
place_layer (const tsr_model *m, int gpu_layers, int64_t il)
{
  if (m->n_backends < 2 || gpu_layers < 0 || gpu_layers >= m->hp.n_layer)
    return 0;
  if (il == m->hp.n_layer)
    return gpu_layers > 0 ? 0 : 1;
  return il >= m->hp.n_layer - gpu_layers ? 0 : 1;
}

/* Several processes.  */

/* What every rank must agree on: the split, the hyper-parameters, the
   tensors' names, types, shapes and offsets, and the first bytes of
   each tensor's data (a file with the same layout but other weights
   differs there), in one string for tsr_comm_check_same.  */
static int
check_same_file (tsr_model *m, const struct tsr_model_params *p)
{
  const tsr_gguf *g = m->gguf;
  const struct tsr_model_hparams *hp = &m->hp;
  int64_t n = tsr_gguf_n_tensors (g);
  size_t cap = 256 + (size_t) n * (TSR_MAX_NAME + 160), len = 0;
  char *d = malloc (cap);
  if (!d)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "model: out of memory");
  len += (size_t) snprintf (d + len, cap - len, "split %d over %d; %s %"
                            PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %"
                            PRId64 " %" PRId64 " %a %a %a\n", (int) p->split,
                            tsr_comm_size (p->comm), hp->arch, hp->n_embd,
                            hp->n_layer, hp->n_head, hp->n_head_kv, hp->n_ff,
                            hp->head_dim, (double) hp->norm_eps,
                            (double) hp->rope_freq_base,
                            (double) hp->rope_freq_scale);
  for (int64_t i = 0; i < n && len < cap; i++)
    {
      struct tsr_gguf_tensor_info info;
      tsr_gguf_get_tensor_info (g, i, &info);
      const unsigned char *data = tsr_gguf_tensor_data (g, i);
      uint64_t head = 0;
      for (size_t k = 0; data && k < info.size && k < 64; k++)
        head = head * 131 + data[k];
      len += (size_t) snprintf (d + len, cap - len, "%s %d %" PRId64 " %"
                                PRId64 " %" PRId64 " %" PRId64 " %" PRIu64
                                " %" PRIx64 "\n", info.name, (int) info.type,
                                info.ne[0], info.ne[1], info.ne[2],
                                info.ne[3], (uint64_t) info.offset, head);
    }
  int st = tsr_comm_check_same (p->comm, d, len < cap ? len : cap,
                                "the model file (its tensors, "
                                "hyper-parameters or split)");
  free (d);
  return st;
}

/* This process's share: the whole model, or its rank's part of a
   split, with the split's refusals (the same on every rank).  */
static int
split_init (tsr_model *m, const struct tsr_model_params *p)
{
  struct tsri_split *sp = &m->split;
  const struct tsr_model_hparams *hp = &m->hp;
  *sp = (struct tsri_split) { .mode = TSR_SPLIT_NONE, .size = 1,
                              .n_head = hp->n_head,
                              .n_head_kv = hp->n_head_kv, .n_ff = hp->n_ff,
                              .layer0 = 0, .layer1 = hp->n_layer };
  if (!p || p->split == TSR_SPLIT_NONE)
    return TSR_OK;
  if (p->split != TSR_SPLIT_TENSOR && p->split != TSR_SPLIT_PIPELINE)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "model: split %d is not a "
                          "split", (int) p->split);
  if (!p->comm)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "model: a %s split needs a "
                          "communicator", p->split == TSR_SPLIT_TENSOR
                          ? "tensor" : "pipeline");
  int st = check_same_file (m, p);
  if (st != TSR_OK)
    return st;
  sp->comm = p->comm;
  sp->mode = p->split;
  sp->rank = tsr_comm_rank (p->comm);
  sp->size = tsr_comm_size (p->comm);
  const int64_t n = sp->size;
  if (sp->mode == TSR_SPLIT_TENSOR)
    {
      if (m->arch->no_tensor_split || hp->n_expert > 0)
        return tsr_set_error (TSR_ERR_UNSUPPORTED, "model: tensor parallel "
                              "split of %s%s files is not supported (use "
                              "the pipeline split)", hp->arch,
                              hp->n_expert > 0 ? " mixture-of-experts" : "");
      if (hp->n_head_kv % n != 0)
        return tsr_set_error (TSR_ERR_SHAPE, "model: tensor parallel over %"
                              PRId64 " ranks: the %" PRId64 " key/value heads "
                              "do not divide among them (use a number of "
                              "ranks that divides %" PRId64 ")", n,
                              hp->n_head_kv, hp->n_head_kv);
      if (hp->n_ff % n != 0)
        return tsr_set_error (TSR_ERR_SHAPE, "model: tensor parallel over %"
                              PRId64 " ranks: the %" PRId64 " feed-forward "
                              "rows do not divide among them", n, hp->n_ff);
      sp->n_head = hp->n_head / n;
      sp->n_head_kv = hp->n_head_kv / n;
      sp->n_ff = hp->n_ff / n;
      return TSR_OK;
    }
  if (hp->n_layer < n)
    return tsr_set_error (TSR_ERR_SHAPE, "model: pipeline parallel over %"
                          PRId64 " ranks, but the model has %" PRId64
                          " layers", n, hp->n_layer);
  sp->layer0 = sp->rank * hp->n_layer / n;
  sp->layer1 = (sp->rank + 1) * hp->n_layer / n;
  return TSR_OK;
}

static bool
tensor_parallel (const tsr_model *m)
{
  return m->split.mode == TSR_SPLIT_TENSOR && m->split.size > 1;
}

static bool
first_stage (const tsr_model *m)
{
  return m->split.layer0 == 0;
}

static bool
last_stage (const tsr_model *m)
{
  return m->split.layer1 == m->hp.n_layer;
}

/* Tensors.  */

/* The file's tensor NAME, which must have the shape NE0 x NE1 x NE2
   (NE1 == 0: a vector) and, when F32, be f32: its position, with *INFO
   filled; -1 when it is absent (an error unless OPTIONAL) or malformed
   (an error naming it, in *ST).  */
static int64_t
check_tensor3 (tsr_model *m, const char *name, int64_t ne0, int64_t ne1,
               int64_t ne2, bool f32, bool optional, int *st,
               struct tsr_gguf_tensor_info *info)
{
  int64_t i = tsr_gguf_find_tensor (m->gguf, name);
  if (*st != TSR_OK)
    return -1;
  if (i >= 0 && m->used)
    m->used[i] = 1;
  if (i < 0)
    {
      if (!optional)
        *st = tsr_set_error (TSR_ERR_FORMAT, "model: tensor %s is missing",
                             name);
      return -1;
    }
  tsr_gguf_get_tensor_info (m->gguf, i, info);
  int64_t want1 = ne1 ? ne1 : 1;
  if (info->ne[0] != ne0 || info->ne[1] != want1 || info->ne[2] != ne2
      || info->ne[3] != 1)
    {
      char want[96];
      if (ne2 > 1)
        snprintf (want, sizeof want, "[%" PRId64 ", %" PRId64 ", %" PRId64
                  "]", ne0, want1, ne2);
      else
        snprintf (want, sizeof want, "[%" PRId64 ", %" PRId64 "]", ne0,
                  want1);
      *st = tsr_set_error (TSR_ERR_SHAPE, "model: tensor %s has shape "
                           "[%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                           "], %s expected", name, info->ne[0], info->ne[1],
                           info->ne[2], info->ne[3], want);
      return -1;
    }
  if (f32 && info->type != TSR_TYPE_F32)
    {
      *st = tsr_set_error (TSR_ERR_TYPE, "model: tensor %s is %s, f32 "
                           "expected", name, tsr_type_name (info->type));
      return -1;
    }
  return i;
}

static int64_t
check_tensor (tsr_model *m, const char *name, int64_t ne0, int64_t ne1,
              bool f32, bool optional, int *st,
              struct tsr_gguf_tensor_info *info)
{
  return check_tensor3 (m, name, ne0, ne1, 1, f32, optional, st, info);
}

/* How the graph uses a weight: which probe nodes ask the backends.  */
enum { USE_MATRIX = 1, USE_ROWS = 2, USE_SCALE = 4, USE_BIAS = 8,
       USE_ROPE = 16, USE_EXPERTS = 32 };

static unsigned
use_of (const tsr_model *m, const char *name, int64_t ne1)
{
  size_t n = strlen (name);
  if (strcmp (name, "token_embd.weight") == 0)
    return USE_ROWS | (m->hp.tied_output ? USE_MATRIX : 0);
  if (strcmp (name, "rope_freqs.weight") == 0)
    return USE_ROPE;
  if (strstr (name, "_exps."))
    return USE_EXPERTS;
  /* qwen2moe's shared-expert gate: a vector multiplied as a matrix.  */
  if (ne1 || strstr (name, ".ffn_gate_inp_shexp."))
    return USE_MATRIX;
  return n > 5 && strcmp (name + n - 5, ".bias") == 0 ? USE_BIAS : USE_SCALE;
}

/* Can a backend of M compute each USE of a weight of TYPE, NE0 x NE1,
   kept in backend BE's memory, reading it there?  Asked with probe
   nodes of one and of 512 columns (some backends take only large
   batches, and the others read the same memory for small ones).  */
static bool
usable_in (const tsr_model *m, int be, unsigned use, tsr_type type,
           int64_t ne0, int64_t ne1)
{
  tsr_context *c = tsr_context_new (true);
  if (!c)
    return true;                /* cannot ask: keep the placement */
  tsr_buffer_type *buft = tsr_backend_buffer_type (m->backends[be]);
  int64_t n_exp = use & USE_EXPERTS ? m->hp.n_expert : 1;
  tsr_tensor *w = tsr_new_tensor_3d (c, type, ne0, ne1 ? ne1 : 1, n_exp);
  /* Each use asks its probes; one that any backend runs is enough.  */
  tsr_tensor *x = NULL;
  bool ok = w != NULL;
  for (unsigned u = USE_MATRIX; u <= USE_EXPERTS && ok; u <<= 1)
    {
      tsr_tensor *probe[2] = { NULL, NULL };
      if (!(use & u))
        continue;
      if (u == USE_EXPERTS)
        for (int k = 0; k < 2; k++)
          {
            int64_t nt = k ? 512 : 1, used = m->hp.n_expert_used;
            probe[k] = tsr_mul_mat_id (c, w, tsr_new_tensor_3d
                                         (c, TSR_TYPE_F32, ne0, 1, nt),
                                       tsr_new_tensor_2d (c, TSR_TYPE_I32,
                                                          used, nt));
          }
      else if (u == USE_MATRIX)
        for (int k = 0; k < 2; k++)
          probe[k] = tsr_mul_mat (c, w, tsr_new_tensor_2d
                                  (c, TSR_TYPE_F32, ne0, k ? 512 : 1));
      else if (u == USE_ROWS)
        probe[0] = tsr_get_rows (c, w, tsr_new_tensor_1d (c, TSR_TYPE_I32,
                                                          4));
      else if (u == USE_ROPE)
        probe[0] = tsr_rope_ext (c, tsr_new_tensor_3d (c, TSR_TYPE_F32,
                                                       m->hp.head_dim,
                                                       m->hp.n_head, 4),
                                 tsr_new_tensor_1d (c, TSR_TYPE_I32, 4), w,
                                 (int) m->hp.n_rot, m->hp.rope_mode,
                                 m->hp.rope_freq_base,
                                 m->hp.rope_freq_scale);
      else if ((x = tsr_new_tensor_2d (c, TSR_TYPE_F32, ne0, 4)))
        probe[0] = u == USE_SCALE ? tsr_mul (c, x, w) : tsr_add (c, x, w);
      bool any = false;
      for (int k = 0; k < m->n_backends && !any; k++)
        for (int i = 0; i < 2 && !any; i++)
          any = probe[i]
                && tsr_device_supports_buffer_type
                     (tsr_backend_device (m->backends[k]), buft)
                && tsr_backend_supports_op (m->backends[k], probe[i]);
      ok = any;
    }
  tsr_context_free (c);
  tsr_clear_error ();
  return ok;
}

/* The backend that keeps weight NAME of TYPE, NE0 x NE1, wanted on BE:
   BE when some backend computes with it there, else the first backend
   whose memory serves (a device that cannot multiply by a k-quant
   matrix leaves it to the CPU, not to a copy per compute); -1 when no
   backend computes with it anywhere.  */
static int
weight_backend (const tsr_model *m, int be, const char *name, tsr_type type,
                int64_t ne0, int64_t ne1)
{
  unsigned use = use_of (m, name, ne1);
  if (usable_in (m, be, use, type, ne0, ne1))
    return be;
  for (int k = 0; k < m->n_backends; k++)
    if (k != be && usable_in (m, k, use, type, ne0, ne1))
      return k;
  return -1;
}

/* Say that NAME is kept on backend K instead of BE.  */
static void
moved (tsr_model *m, const char *name, tsr_type type, int be, int k)
{
  tsr_log (TSR_LOG_INFO, "model: %s (%s) kept in %s memory: %s cannot "
           "compute with it", name, tsr_type_name (type),
           tsr_device_name (tsr_backend_device (m->backends[k])),
           tsr_device_name (tsr_backend_device (m->backends[be])));
  m->n_moved++;
}

/* The backend that keeps weight NAME, wanted on BE (said when another
   one does).  A weight no backend computes with (a q8_K matrix: that
   type only holds the k-quants' activations) is an error in *ST, at
   load rather than at the first prompt; BE is returned.  */
static int
keep_weight (tsr_model *m, int be, const char *name, tsr_type type,
             int64_t ne0, int64_t ne1, int *st)
{
  int k = weight_backend (m, be, name, type, ne0, ne1);
  if (k < 0)
    {
      if (*st == TSR_OK)
        *st = tsr_set_error (TSR_ERR_TYPE, "model: tensor %s is %s, which "
                             "no backend of this model computes with",
                             name, tsr_type_name (type));
      return be;
    }
  if (k != be)
    moved (m, name, type, be, k);
  return k;
}

/* Tensor NAME of TYPE, NE0 x NE1 x NE2, in the context of backend
   BE.  */
static tsr_tensor *
declare3 (tsr_model *m, int be, const char *name, tsr_type type,
          int64_t ne0, int64_t ne1, int64_t ne2, int *st)
{
  if (!m->ctx[be] && !(m->ctx[be] = tsr_context_new (true)))
    {
      *st = tsr_set_error (TSR_ERR_NO_MEMORY, "model: out of memory");
      return NULL;
    }
  tsr_tensor *t = ne2 > 1
                  ? tsr_new_tensor_3d (m->ctx[be], type, ne0, ne1, ne2)
                  : tsr_new_tensor_2d (m->ctx[be], type, ne0, ne1 ? ne1 : 1);
  if (!t)
    *st = tsr_last_status ();
  else
    tsr_set_param (tsr_set_name (t, name));
  return t;
}

static tsr_tensor *
declare (tsr_model *m, int be, const char *name, tsr_type type, int64_t ne0,
         int64_t ne1, int *st)
{
  return declare3 (m, be, name, type, ne0, ne1, 1, st);
}

/* Declare the file's tensor NAME, checked by check_tensor, on backend
   BE or the one that keeps it (keep_weight).  NULL when it is absent or
   malformed.  */
static tsr_tensor *
want_tensor (tsr_model *m, int be, const char *name, int64_t ne0,
             int64_t ne1, bool f32, bool optional, int *st)
{
  struct tsr_gguf_tensor_info info;
  if (check_tensor (m, name, ne0, ne1, f32, optional, st, &info) < 0)
    return NULL;
  be = keep_weight (m, be, name, info.type, ne0, ne1, st);
  return *st == TSR_OK ? declare (m, be, name, info.type, ne0, ne1, st)
                       : NULL;
}

/* Whether a matrix of TYPE, NE0 x ROWS, goes to backend BE's extra
   buffer type: the ones it repacks.  */
static bool
want_repack (const tsr_model *m, int be, tsr_type type, int64_t ne0,
             int64_t rows)
{
  return m->repack_buft[be]
         && tsr_buffer_type_repacks (m->repack_buft[be], type, ne0, rows);
}

/* Like want_tensor, for the rank's slice of the file's tensor NAME of
   shape NE0 x NE1 along DIM (0: columns, 1: rows; a vector's elements
   are its columns): COUNT of them from RANK * COUNT.  The whole tensor
   without tensor parallelism.  Slices, and matrices that go to the
   backend's extra buffer type (want_repack), are copied from the file
   when the weights are loaded.  */
static tsr_tensor *
want_split (tsr_model *m, int be, const char *name, int64_t ne0, int64_t ne1,
            bool f32, bool optional, int dim, int64_t count, int *st)
{
  struct tsr_gguf_tensor_info info;
  int64_t file_index = check_tensor (m, name, ne0, ne1, f32, optional, st,
                                     &info);
  if (file_index < 0)
    return NULL;
  tsr_type type = info.type;
  bool split = tensor_parallel (m);
  if (!split)
    count = dim == 0 ? ne0 : (ne1 ? ne1 : 1);
  be = keep_weight (m, be, name, type, ne0, ne1, st);
  if (*st != TSR_OK)
    return NULL;
  bool repack = ne1 && want_repack (m, be, type, dim == 0 ? count : ne0,
                                    dim == 1 ? count : ne1);
  if (!split && !repack)
    return declare (m, be, name, type, ne0, ne1, st);
  int64_t start = split ? m->split.rank * count : 0;
  int64_t bs = tsr_type_traits (type)->block_size;
  if (dim == 0 && (start % bs != 0 || count % bs != 0))
    {
      *st = tsr_set_error (TSR_ERR_SHAPE, "model: tensor parallel over %d "
                           "ranks cuts the rows of %s (%s, blocks of %"
                           PRId64 ") at column %" PRId64 ", inside a block",
                           m->split.size, name, tsr_type_name (type), bs,
                           start ? start : count);
      return NULL;
    }
  tsr_context **ctx = repack ? &m->repack_ctx[be] : &m->slice_ctx[be];
  if (!*ctx && !(*ctx = tsr_context_new (true)))
    {
      *st = tsr_set_error (TSR_ERR_NO_MEMORY, "model: out of memory");
      return NULL;
    }
  if (m->n_slices == m->cap_slices)
    {
      int cap = m->cap_slices ? 2 * m->cap_slices : 64;
      struct tsri_slice *ns = realloc (m->slices, (size_t) cap * sizeof *ns);
      if (!ns)
        {
          *st = tsr_set_error (TSR_ERR_NO_MEMORY, "model: out of memory");
          return NULL;
        }
      m->slices = ns;
      m->cap_slices = cap;
    }
  tsr_tensor *t = tsr_new_tensor_2d (*ctx, type, dim == 0 ? count : ne0,
                                     dim == 1 ? count : (ne1 ? ne1 : 1));
  if (!t)
    {
      *st = tsr_last_status ();
      return NULL;
    }
  tsr_set_param (tsr_set_name (t, name));
  m->n_repacked += repack;
  m->slices[m->n_slices++] = (struct tsri_slice) {
    t, file_index, dim, start, count };
  return t;
}

/* What architecture files use (arch.h).  */

void
tsri_fail (struct tsri_loader *ld, int status, const char *fmt, ...)
{
  if (ld->st != TSR_OK)
    return;
  char msg[512];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  ld->st = tsr_set_error (status, "model: %s", msg);
}

void
tsri_key_count (struct tsri_loader *ld, const char *suffix, int64_t def,
                int64_t max, int64_t *v)
{
  if (ld->st == TSR_OK)
    ld->st = get_count (ld->m->gguf, ld->m->hp.arch, suffix, def, max, v);
}

void
tsri_key_float (struct tsri_loader *ld, const char *suffix, float def,
                float *v)
{
  if (ld->st == TSR_OK)
    ld->st = get_float (ld->m->gguf, ld->m->hp.arch, suffix, def, v);
}

bool
tsri_key_present (const struct tsri_loader *ld, const char *suffix)
{
  char key[128];
  snprintf (key, sizeof key, "%s.%s", ld->m->hp.arch, suffix);
  return tsr_gguf_find_key (ld->m->gguf, key) >= 0;
}

void
tsri_key_experts (struct tsri_loader *ld, bool required)
{
  struct tsr_model_hparams *hp = &ld->m->hp;
  char key[128];
  int64_t n = 0;
  snprintf (key, sizeof key, "%s.expert_count", hp->arch);
  if (ld->st != TSR_OK)
    return;
  if (!required && tsr_gguf_find_key (ld->m->gguf, key) < 0)
    return;
  if ((ld->st = get_int (ld->m->gguf, key, &n)) != TSR_OK)
    return;
  if (n == 0 && !required)
    return;                     /* a dense model that says so */
  if (n < 2 || n > 4096)
    {
      tsri_fail (ld, TSR_ERR_FORMAT, "key %s = %" PRId64 " is out of range "
                 "[2, 4096]", key, n);
      return;
    }
  hp->n_expert = n;
  tsri_key_count (ld, "expert_used_count", -1, n, &hp->n_expert_used);
}

void
tsri_key_expert_ff (struct tsri_loader *ld)
{
  struct tsr_model_hparams *hp = &ld->m->hp;
  if (ld->st == TSR_OK)
    tsri_key_count (ld, "expert_feed_forward_length",
                    hp->n_ff / hp->n_expert_used > 0
                    ? hp->n_ff / hp->n_expert_used : 1, INT32_MAX,
                    &hp->n_ff_exp);
}

void
tsri_key_window_all (struct tsri_loader *ld)
{
  struct tsr_model_hparams *hp = &ld->m->hp;
  if (tsri_key_present (ld, "attention.sliding_window"))
    tsri_key_count (ld, "attention.sliding_window", -1, INT32_MAX,
                    &hp->n_swa);
  for (int64_t il = 0; il < hp->n_layer && hp->n_swa; il++)
    ld->m->layers[il].swa = true;
}

static bool
layer_name (struct tsri_loader *ld, int64_t il, const char *what,
            char *name)
{
  int n = snprintf (name, TSR_MAX_NAME, "blk.%" PRId64 ".%s", il, what);
  if (n < 0 || n >= TSR_MAX_NAME)
    tsri_fail (ld, TSR_ERR_INVALID_ARG, "tensor name blk.%" PRId64 ".%s "
               "is too long", il, what);
  return ld->st == TSR_OK;
}

bool
tsri_has (const struct tsri_loader *ld, int64_t il, const char *what)
{
  char name[TSR_MAX_NAME];
  snprintf (name, sizeof name, "blk.%" PRId64 ".%s", il, what);
  return tsr_gguf_find_tensor (ld->m->gguf, name) >= 0;
}

tsr_tensor *
tsri_want (struct tsri_loader *ld, int64_t il, const char *what,
           int64_t ne0, int64_t ne1, enum tsri_cut cut, unsigned flags)
{
  char name[TSR_MAX_NAME];
  if (ld->st != TSR_OK || !layer_name (ld, il, what, name))
    return NULL;
  tsr_model *m = ld->m;
  const struct tsri_split *sp = &m->split;
  const int64_t hd = m->hp.head_dim;
  const bool optional = flags & TSRI_OPTIONAL, vec = ne1 == 0;
  int be = m->layers[il].backend;
  int dim = 1;
  int64_t count = 0;
  switch (cut)
    {
    case TSRI_WHOLE:
      if (vec || tensor_parallel (m))
        return want_tensor (m, be, name, ne0, ne1, vec, optional, &ld->st);
      count = ne1;
      break;
    case TSRI_ROWS_Q: count = sp->n_head * hd; break;
    case TSRI_ROWS_KV: count = sp->n_head_kv * hd; break;
    case TSRI_ROWS_FF: count = sp->n_ff; break;
    case TSRI_COLS_Q: dim = 0; count = sp->n_head * hd; break;
    case TSRI_COLS_FF: dim = 0; count = sp->n_ff; break;
    }
  if (vec)
    dim = 0;                    /* a vector's elements are its columns */
  return want_split (m, be, name, ne0, ne1, vec, optional, dim, count,
                     &ld->st);
}

tsr_tensor *
tsri_want_experts (struct tsri_loader *ld, int64_t il, const char *what,
                   int64_t ne0, int64_t ne1)
{
  char name[TSR_MAX_NAME];
  struct tsr_gguf_tensor_info info;
  if (ld->st != TSR_OK || !layer_name (ld, il, what, name))
    return NULL;
  tsr_model *m = ld->m;
  if (check_tensor3 (m, name, ne0, ne1, m->hp.n_expert, false, false,
                     &ld->st, &info) < 0)
    return NULL;
  int be = keep_weight (m, m->layers[il].backend, name, info.type, ne0, ne1,
                        &ld->st);
  return ld->st == TSR_OK ? declare3 (m, be, name, info.type, ne0, ne1,
                                      m->hp.n_expert, &ld->st) : NULL;
}

void
tsri_want_attention (struct tsri_loader *ld, int64_t il,
                     struct tsri_layer *l, bool bias, bool qk_norm)
{
  const struct tsr_model_hparams *hp = &ld->m->hp;
  const int64_t d = hp->n_embd, dq = hp->n_head * hp->head_dim;
  const int64_t dkv = hp->n_head_kv * hp->head_dim;
  const unsigned opt = bias ? 0 : TSRI_OPTIONAL;
  l->attn_norm = tsri_want (ld, il, "attn_norm.weight", d, 0, TSRI_WHOLE, 0);
  l->wq = tsri_want (ld, il, "attn_q.weight", d, dq, TSRI_ROWS_Q, 0);
  l->wk = tsri_want (ld, il, "attn_k.weight", d, dkv, TSRI_ROWS_KV, 0);
  l->wv = tsri_want (ld, il, "attn_v.weight", d, dkv, TSRI_ROWS_KV, 0);
  /* Biases: required where the architecture has them; llama files
     may have them too.  */
  if (bias || hp->qkv_bias)
    {
      l->bq = tsri_want (ld, il, "attn_q.bias", dq, 0, TSRI_ROWS_Q, opt);
      l->bk = tsri_want (ld, il, "attn_k.bias", dkv, 0, TSRI_ROWS_KV, opt);
      l->bv = tsri_want (ld, il, "attn_v.bias", dkv, 0, TSRI_ROWS_KV, opt);
    }
  l->wo = tsri_want (ld, il, "attn_output.weight", dq, d, TSRI_COLS_Q, 0);
  if (qk_norm)
    {
      l->q_norm = tsri_want (ld, il, "attn_q_norm.weight", hp->head_dim, 0,
                             TSRI_WHOLE, 0);
      l->k_norm = tsri_want (ld, il, "attn_k_norm.weight", hp->head_dim, 0,
                             TSRI_WHOLE, 0);
    }
}

void
tsri_want_ffn (struct tsri_loader *ld, int64_t il, struct tsri_layer *l)
{
  const struct tsr_model_hparams *hp = &ld->m->hp;
  const int64_t d = hp->n_embd, ff = hp->n_ff;
  l->ffn_norm = tsri_want (ld, il, "ffn_norm.weight", d, 0, TSRI_WHOLE, 0);
  l->gate = tsri_want (ld, il, "ffn_gate.weight", d, ff, TSRI_ROWS_FF, 0);
  l->up = tsri_want (ld, il, "ffn_up.weight", d, ff, TSRI_ROWS_FF, 0);
  l->down = tsri_want (ld, il, "ffn_down.weight", ff, d, TSRI_COLS_FF, 0);
}

void
tsri_want_post_norms (struct tsri_loader *ld, int64_t il,
                      struct tsri_layer *l)
{
  const int64_t d = ld->m->hp.n_embd;
  l->attn_post_norm = tsri_want (ld, il, "post_attention_norm.weight", d, 0,
                                 TSRI_WHOLE, 0);
  l->ffn_post_norm = tsri_want (ld, il, "post_ffw_norm.weight", d, 0,
                                TSRI_WHOLE, 0);
}

void
tsri_want_moe (struct tsri_loader *ld, int64_t il, struct tsri_layer *l)
{
  const struct tsr_model_hparams *hp = &ld->m->hp;
  const int64_t d = hp->n_embd, ff = hp->n_ff_exp;
  l->ffn_norm = tsri_want (ld, il, "ffn_norm.weight", d, 0, TSRI_WHOLE, 0);
  l->gate_inp = tsri_want (ld, il, "ffn_gate_inp.weight", d, hp->n_expert,
                           TSRI_WHOLE, 0);
  l->gate_exps = tsri_want_experts (ld, il, "ffn_gate_exps.weight", d, ff);
  l->up_exps = tsri_want_experts (ld, il, "ffn_up_exps.weight", d, ff);
  l->down_exps = tsri_want_experts (ld, il, "ffn_down_exps.weight", ff, d);
}

/* Tensors of layers the file's block count leaves out: a file holding
   blk.1.* with block_count 1 would run as a smaller model, its other
   layers ignored without a word.  An error naming the first such
   tensor, the layer count they need and the key.  */
static int
check_extra_layers (tsr_model *m)
{
  int64_t n = tsr_gguf_n_tensors (m->gguf), beyond = 0, top = -1;
  const char *first = NULL;
  for (int64_t i = 0; i < n; i++)
    {
      struct tsr_gguf_tensor_info info;
      long long il;
      int len = 0;
      if (tsr_gguf_get_tensor_info (m->gguf, i, &info) != TSR_OK
          || sscanf (info.name, "blk.%lld.%n", &il, &len) != 1 || len == 0
          || il < m->hp.n_layer)
        continue;
      if (!first)
        first = info.name;
      beyond++;
      top = il > top ? il : top;
    }
  if (!beyond)
    return TSR_OK;
  return tsr_set_error (TSR_ERR_FORMAT, "model: %" PRId64 " tensors (%s "
                        "first) belong to layers past the %" PRId64 " that "
                        "%s.block_count gives: the file needs %lld layers "
                        "or fewer tensors", beyond, first, m->hp.n_layer,
                        m->hp.arch, (long long) top + 1);
}

/* Tensors of the file the architecture did not take: a file of
   another variant (a bias, a norm, a tensor of a newer model) would
   otherwise run without them and without a word.  A warning naming the
   first and their count; not over several processes, where each rank
   takes its own layers only.  */
static void
warn_unused (tsr_model *m)
{
  int64_t n = tsr_gguf_n_tensors (m->gguf), unused = 0;
  const char *first = NULL;
  if (!m->used || m->split.size > 1)
    return;
  for (int64_t i = 0; i < n; i++)
    {
      struct tsr_gguf_tensor_info info;
      if (m->used[i] || tsr_gguf_get_tensor_info (m->gguf, i, &info)
                        != TSR_OK)
        continue;
      if (!first)
        first = info.name;
      unused++;
    }
  if (unused)
    tsr_log (TSR_LOG_WARN, "model: %" PRId64 " of the file's %" PRId64
             " tensors are not part of the %s graph Tessera runs (%s "
             "first): they are ignored", unused, n, m->hp.arch, first);
}

static int
want_layers (tsr_model *m, int gpu_layers)
{
  struct tsri_loader ld = { m, TSR_OK };
  for (int64_t il = 0; il < m->hp.n_layer; il++)
    m->layers[il].backend = place_layer (m, gpu_layers, il);
  for (int64_t il = m->split.layer0; il < m->split.layer1 && ld.st == TSR_OK;
       il++)
    m->arch->tensors (&ld, il, &m->layers[il]);
  return ld.st;
}

/* token_embd, output_norm, output (or token_embd again on the output's
   backend when tied and placed elsewhere), rope_freqs.  */
static int
want_globals (tsr_model *m, int gpu_layers)
{
  struct tsr_model_hparams *hp = &m->hp;
  struct tsr_gguf_tensor_info info;
  int64_t i = tsr_gguf_find_tensor (m->gguf, "token_embd.weight");
  int st = TSR_OK;
  if (i < 0)
    return tsr_set_error (TSR_ERR_FORMAT, "model: tensor token_embd.weight "
                          "is missing");
  tsr_gguf_get_tensor_info (m->gguf, i, &info);
  hp->n_vocab = info.ne[1];
  if (m->used)
    m->used[i] = 1;
  int64_t vocab_key;
  char key[128];
  snprintf (key, sizeof key, "%s.vocab_size", hp->arch);
  if (tsr_gguf_find_key (m->gguf, key) >= 0
      && (st = get_int (m->gguf, key, &vocab_key)) == TSR_OK
      && vocab_key != hp->n_vocab)
    st = tsr_set_error (TSR_ERR_FORMAT, "model: key %s = %" PRId64 " but "
                        "token_embd.weight has %" PRId64 " rows", key,
                        vocab_key, hp->n_vocab);
  /* Every id the tokenizer makes needs a row, and every row a token
     (the files of this field pad the tokenizer to the embedding).  */
  tsr_gguf_type ttype;
  uint64_t n_tok;
  if (st == TSR_OK
      && tsr_gguf_find_key (m->gguf, "tokenizer.ggml.tokens") >= 0
      && tsr_gguf_get_array_info (m->gguf, "tokenizer.ggml.tokens", &ttype,
                                  &n_tok) == TSR_OK
      && n_tok != (uint64_t) hp->n_vocab)
    st = tsr_set_error (TSR_ERR_FORMAT, "model: tokenizer.ggml.tokens has "
                        "%llu tokens but token_embd.weight has %" PRId64
                        " rows: %s", (unsigned long long) n_tok, hp->n_vocab,
                        n_tok < (uint64_t) hp->n_vocab
                        ? "the ids past the tokenizer could be generated "
                          "but never printed"
                        : "the tokenizer makes ids the model has no row "
                          "for");
  m->embd_backend = m->hp.n_layer > 0 ? m->layers[0].backend : 0;
  m->out_backend = place_layer (m, gpu_layers, hp->n_layer);
  /* Tensor parallel: the output's rows split when the ranks divide the
     vocabulary, the logits gathered.  */
  struct tsri_split *sp = &m->split;
  sp->gather_logits = tensor_parallel (m) && hp->n_vocab % sp->size == 0;
  sp->n_vocab_out = sp->gather_logits ? hp->n_vocab / sp->size : hp->n_vocab;
  /* Pipeline: the embedding on the first stage, the output on the
     last.  */
  hp->tied_output = tsr_gguf_find_tensor (m->gguf, "output.weight") < 0;
  /* A tied embedding that is also this rank's output matrix, whole,
     where both run: declared as the output's matrices are (want_split),
     so the backend's extra buffer type may repack it, which speeds up
     the output product as much as the layers' (its get_rows reads the
     repacked rows).  */
  bool shared = hp->tied_output && first_stage (m) && last_stage (m)
                && !tensor_parallel (m) && m->out_backend == m->embd_backend;
  if (first_stage (m))
    m->tok_embd = shared
                  ? want_split (m, m->embd_backend, "token_embd.weight",
                                hp->n_embd, hp->n_vocab, false, false, 1,
                                hp->n_vocab, &st)
                  : want_tensor (m, m->embd_backend, "token_embd.weight",
                                 hp->n_embd, hp->n_vocab, false, false, &st);
  if (last_stage (m))
    {
      m->out_norm = want_tensor (m, m->out_backend, "output_norm.weight",
                                 hp->n_embd, 0, true, false, &st);
      if (!hp->tied_output || sp->gather_logits)
        m->output = want_split (m, m->out_backend, hp->tied_output
                                ? "token_embd.weight" : "output.weight",
                                hp->n_embd, hp->n_vocab, false, false, 1,
                                sp->n_vocab_out, &st);
      else if (m->tok_embd && m->out_backend == m->embd_backend)
        m->output = m->tok_embd;        /* where it was kept */
      else
        m->output = want_tensor (m, m->out_backend, "token_embd.weight",
                                 hp->n_embd, hp->n_vocab, false, false,
                                 &st);
    }
  /* rope_freqs: read by every layer's rope, so one copy in the memory
     of each backend that runs ropes for this rank's layers (a few
     hundred bytes each).  */
  hp->rope_freqs = false;
  for (int64_t il = sp->layer0; il < sp->layer1 && st == TSR_OK; il++)
    {
      struct tsri_layer *l = &m->layers[il];
      int k = weight_backend (m, l->backend, "rope_freqs.weight",
                              TSR_TYPE_F32, hp->n_rot / 2, 0);
      if (k < 0)
        k = l->backend;         /* absent, or refused when it is read */
      if (!m->rope_freqs[k])
        {
          m->rope_freqs[k] = want_tensor (m, k, "rope_freqs.weight",
                                          hp->n_rot / 2, 0, true, true, &st);
          if (m->rope_freqs[k] && k != l->backend)
            moved (m, "rope_freqs.weight", TSR_TYPE_F32, l->backend, k);
        }
      l->rope_freqs = m->rope_freqs[k];
      hp->rope_freqs |= l->rope_freqs != NULL;
    }
  return st;
}

/* Sizes.  */

static void
count_sizes (tsr_model *m)
{
  const tsr_gguf *g = m->gguf;
  struct tsr_gguf_tensor_info info;
  m->n_params = 0;
  for (int64_t i = 0; i < tsr_gguf_n_tensors (g); i++)
    {
      tsr_gguf_get_tensor_info (g, i, &info);
      m->n_params += (uint64_t) (info.ne[0] * info.ne[1] * info.ne[2]
                                 * info.ne[3]);
    }
  /* Every weight this process holds once per token, except the
     embedding: one row.  */
  uint64_t bytes = m->tok_embd ? tsr_row_size (m->tok_embd->type,
                                               m->hp.n_embd) : 0;
  for (int b = 0; b < m->n_backends; b++)
    for (int k = 0; k < 3; k++)
      {
        tsr_context *c = k == 2 ? m->repack_ctx[b]
                         : k ? m->slice_ctx[b] : m->ctx[b];
        for (tsr_tensor *t = c ? tsr_context_first_tensor (c) : NULL; t;
             t = tsr_context_next_tensor (c, t))
          if (t == m->tok_embd)
            continue;
          else if (t->ne[2] > 1 && m->hp.n_expert > 0)
            /* Experts: a token reads the ones it is routed to.  */
            bytes += tsr_nbytes (t) / (uint64_t) m->hp.n_expert
                     * (uint64_t) m->hp.n_expert_used;
          else
            bytes += tsr_nbytes (t);
      }
  if (m->tok_embd && m->output == m->tok_embd)  /* tied, read whole */
    bytes += tsr_nbytes (m->output);
  m->bytes_per_token = bytes;
}

/* "llama, 16 layers, ..., q4_0": the type holding most matrix bytes.  */
static void
describe (tsr_model *m)
{
  const struct tsr_model_hparams *hp = &m->hp;
  uint64_t by_type[TSR_TYPE_COUNT] = { 0 };
  for (int64_t il = m->split.layer0; il < m->split.layer1; il++)
    {
      const struct tsri_layer *l = &m->layers[il];
      const tsr_tensor *mats[] = { l->wq, l->wk, l->wv, l->wqkv, l->wo,
                                   l->gate, l->up, l->down, l->gate_exps,
                                   l->up_exps, l->down_exps, l->gate_shexp,
                                   l->up_shexp, l->down_shexp };
      for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++)
        if (mats[k])
          by_type[mats[k]->type] += tsr_nbytes (mats[k]);
    }
  /* (A pipeline's middle rank has neither embedding nor output.)  */
  const tsr_tensor *io = m->tok_embd ? m->tok_embd : m->output;
  int best = io ? io->type : m->layers[m->split.layer0].wo->type;
  for (int t = 0; t < TSR_TYPE_COUNT; t++)
    if (by_type[t] > by_type[best])
      best = t;
  double p = (double) m->n_params;
  int len = snprintf (m->describe, sizeof m->describe, "%s, %" PRId64
                      " layers, n_embd %" PRId64 ", %" PRId64 " heads (%"
                      PRId64 " kv), n_ff %" PRId64 ", vocab %" PRId64
                      ", %.2f %s parameters, %s%s", hp->arch,
                      hp->n_layer, hp->n_embd, hp->n_head, hp->n_head_kv,
                      hp->n_ff, hp->n_vocab, p >= 1e9 ? p / 1e9 : p / 1e6,
                      p >= 1e9 ? "B" : "M", tsr_type_name ((tsr_type) best),
                      hp->tied_output ? ", tied output" : "");
  if (hp->n_expert > 0 && len > 0 && (size_t) len < sizeof m->describe)
    len += snprintf (m->describe + len, sizeof m->describe - (size_t) len,
                     ", %" PRId64 " experts (%" PRId64 " used)",
                     hp->n_expert, hp->n_expert_used);
  if (hp->n_swa > 0 && len > 0 && (size_t) len < sizeof m->describe)
    len += snprintf (m->describe + len, sizeof m->describe - (size_t) len,
                     ", sliding window %" PRId64, hp->n_swa);
  if (len > 0 && (size_t) len < sizeof m->describe)
    len += snprintf (m->describe + len, sizeof m->describe - (size_t) len,
                     "; on ");
  const struct tsri_split *sp = &m->split;
  if (sp->mode == TSR_SPLIT_TENSOR && len > 0
      && (size_t) len < sizeof m->describe)
    len += snprintf (m->describe + len, sizeof m->describe - (size_t) len,
                     "rank %d of %d (tensor parallel: %" PRId64 " heads, %"
                     PRId64 " kv, n_ff %" PRId64 "%s), ", sp->rank, sp->size,
                     sp->n_head, sp->n_head_kv, sp->n_ff,
                     sp->gather_logits ? ", vocabulary split" : "");
  else if (sp->mode == TSR_SPLIT_PIPELINE && len > 0
           && (size_t) len < sizeof m->describe)
    len += snprintf (m->describe + len, sizeof m->describe - (size_t) len,
                     "rank %d of %d (pipeline: layers %" PRId64 "-%" PRId64
                     "), ", sp->rank, sp->size, sp->layer0, sp->layer1 - 1);
  /* Where the layers are: "CPU", or "CUDA0 (16 layers), CPU (6)".  */
  for (int b = 0; b < m->n_backends && len > 0
                  && (size_t) len < sizeof m->describe; b++)
    {
      int64_t n = 0;
      for (int64_t il = sp->layer0; il < sp->layer1; il++)
        n += m->layers[il].backend == b;
      if (n == 0 && b > 0)
        continue;
      len += snprintf (m->describe + len, sizeof m->describe - (size_t) len,
                       "%s%s (%" PRId64 " layers)", b ? ", " : "",
                       tsr_device_name (tsr_backend_device (m->backends[b])),
                       n);
    }
  if (m->n_moved && len > 0 && (size_t) len < sizeof m->describe)
    len += snprintf (m->describe + len, sizeof m->describe - (size_t) len,
                     "; %d weights kept where a device can compute with "
                     "them", m->n_moved);
  for (int b = 0; b < m->n_backends && len > 0
                  && (size_t) len < sizeof m->describe; b++)
    if (m->repack_ctx[b])
      len += snprintf (m->describe + len, sizeof m->describe - (size_t) len,
                       "; %d matrices in %s", m->n_repacked,
                       tsr_buffer_type_name (m->repack_buft[b]));
}

/* Backends and memory.  */

static int
take_backends (tsr_model *m, const struct tsr_model_params *p)
{
  if (p && p->backends && p->n_backends > 0)
    {
      if (p->n_backends > TSRI_MODEL_MAX_BACKENDS)
        return tsr_set_error (TSR_ERR_INVALID_ARG, "model: %d backends, at "
                              "most %d", p->n_backends,
                              TSRI_MODEL_MAX_BACKENDS);
      for (int i = 0; i < p->n_backends; i++)
        if (!(m->backends[i] = p->backends[i]))
          return tsr_set_error (TSR_ERR_INVALID_ARG, "model: backend %d is "
                                "NULL", i);
      m->n_backends = p->n_backends;
      return TSR_OK;
    }
  m->own_backends = true;
  if (!(m->backends[0] = tsr_backend_init_best ()))
    return tsr_last_status ();
  m->n_backends = 1;
  if (tsr_device_get_type (tsr_backend_device (m->backends[0]))
      != TSR_DEVICE_CPU)
    {
      m->backends[1] = tsr_backend_init_by_type (TSR_DEVICE_CPU, NULL);
      if (m->backends[1])
        m->n_backends = 2;
    }
  return TSR_OK;
}

/* Weights that must be copied to a device must fit its free memory:
   said before anything is copied.  */
static int
check_memory (const tsr_model *m, int b, size_t bytes, bool copied)
{
  tsr_device *dev = tsr_backend_device (m->backends[b]);
  size_t free_b = 0, total = 0;
  if (!copied || tsr_buffer_type_is_host (tsr_backend_buffer_type
                                          (m->backends[b])))
    return TSR_OK;
  tsr_device_memory (dev, &free_b, &total);
  if (total == 0 || bytes <= free_b)
    return TSR_OK;
  return tsr_set_error (TSR_ERR_NO_MEMORY, "model: the weights placed on %s "
                        "take %.1f MiB, but it has %.1f MiB free of %.1f "
                        "MiB (place fewer layers there, e.g. "
                        "--gpu-layers)", tsr_device_name (dev),
                        bytes / 1048576.0, free_b / 1048576.0,
                        total / 1048576.0);
}

/* Copy slice SL from the mapping: only its bytes are read.  Rows are
   one span of the file; columns a span per row, gathered first.  */
static int
load_slice (tsr_model *m, const struct tsri_slice *sl)
{
  struct tsr_gguf_tensor_info info;
  tsr_gguf_get_tensor_info (m->gguf, sl->file_index, &info);
  const unsigned char *src = tsr_gguf_tensor_data (m->gguf, sl->file_index);
  if (!src)
    return tsr_set_error (TSR_ERR_FORMAT, "model: tensor %s has no data",
                          info.name);
  size_t row = tsr_row_size (info.type, info.ne[0]);
  if (sl->dim == 1)
    return tsr_tensor_set (sl->t, src + (size_t) sl->start * row, 0,
                           (size_t) sl->count * row);
  size_t off = tsr_row_size (info.type, sl->start);
  size_t part = tsr_row_size (info.type, sl->count);
  int64_t rows = info.ne[1];
  unsigned char *tmp = malloc (part * (size_t) rows);
  if (!tmp)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "model: out of memory");
  for (int64_t r = 0; r < rows; r++)
    memcpy (tmp + (size_t) r * part, src + (size_t) r * row + off, part);
  int st = tsr_tensor_set (sl->t, tmp, 0, part * (size_t) rows);
  free (tmp);
  return st;
}

static int
load_weights (tsr_model *m, bool no_mmap)
{
  for (int b = 0; b < m->n_backends; b++)
    {
      size_t bytes = 0;
      if (!m->ctx[b])
        continue;
      for (tsr_tensor *t = tsr_context_first_tensor (m->ctx[b]); t;
           t = tsr_context_next_tensor (m->ctx[b], t))
        bytes += tsr_nbytes (t);
      for (int k = 0; k < 2; k++)
        {
          tsr_context *c = k ? m->repack_ctx[b] : m->slice_ctx[b];
          for (tsr_tensor *t = c ? tsr_context_first_tensor (c) : NULL; t;
               t = tsr_context_next_tensor (c, t))
            bytes += tsr_nbytes (t);
        }
      int st = check_memory (m, b, bytes, true);
      if (st != TSR_OK)
        return st;
    }
  for (int b = 0; b < m->n_backends; b++)
    {
      tsr_buffer_type *buft = tsr_backend_buffer_type (m->backends[b]);
      if (m->slice_ctx[b]
          && !(m->slice_buf[b] = tsr_context_alloc_tensors (m->slice_ctx[b],
                                                             buft)))
        return tsr_last_status ();
      if (m->repack_ctx[b]
          && !(m->repack_buf[b] = tsr_context_alloc_tensors
               (m->repack_ctx[b], m->repack_buft[b])))
        return tsr_last_status ();
    }
  for (int i = 0; i < m->n_slices; i++)
    {
      int st = load_slice (m, &m->slices[i]);
      if (st != TSR_OK)
        return st;
    }
  for (int b = 0; b < m->n_backends; b++)
    if (m->ctx[b])
      {
        tsr_buffer_type *buft = tsr_backend_buffer_type (m->backends[b]);
        m->buf[b] = tsr_gguf_load_tensors (m->gguf, m->ctx[b], buft,
                                           no_mmap ? TSR_GGUF_LOAD_COPY : 0);
        if (!m->buf[b])
          return tsr_last_status ();
      }
  return TSR_OK;
}

static int
model_init (tsr_model *m, const char *path,
            const struct tsr_model_params *p)
{
  struct tsr_gguf_error err;
  int gpu_layers = p ? p->gpu_layers : TSR_GPU_LAYERS_ALL;
  if (!(m->gguf = tsr_gguf_open (path, &err)))
    return err.status;
  int st = read_hparams (m->gguf, m);
  if (st == TSR_OK)
    st = arch_hparams (m);
  if (st == TSR_OK)
    st = check_hparams (&m->hp);
  if (st == TSR_OK)
    st = take_backends (m, p);
  if (st != TSR_OK)
    return st;
  for (int b = 0; b < m->n_backends && !(p && p->no_repack); b++)
    tsr_device_extra_buffer_types (tsr_backend_device (m->backends[b]),
                                   &m->repack_buft[b], 1);
  /* From here on every rank reads the same file (split_init checks it
     first): its failures are theirs too, up to the weights' loading.  */
  m->fail_agreed = p && p->comm && p->split != TSR_SPLIT_NONE;
  if ((st = split_init (m, p)) != TSR_OK)
    return st;
  m->hp.qkv_bias = tsr_gguf_find_tensor (m->gguf, "blk.0.attn_q.bias") >= 0;
  m->used = calloc ((size_t) tsr_gguf_n_tensors (m->gguf) + 1, 1);
  if (!m->used)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "model: out of memory");
  st = check_extra_layers (m);
  if (st == TSR_OK)
    st = want_layers (m, gpu_layers);
  if (st == TSR_OK)
    st = want_globals (m, gpu_layers);
  if (st == TSR_OK)
    warn_unused (m);
  free (m->used);
  m->used = NULL;
  if (st != TSR_OK)
    return st;
  /* Reading and placing the weights may fail on one rank only.  */
  m->fail_agreed = false;
  st = load_weights (m, p && p->no_mmap);
  if (st == TSR_OK)
    {
      count_sizes (m);
      describe (m);
    }
  return st;
}

struct tsr_model_params
tsr_model_params_default (void)
{
  return (struct tsr_model_params) { .gpu_layers = TSR_GPU_LAYERS_ALL };
}

tsr_model *
tsr_model_load (const char *path, const struct tsr_model_params *params)
{
  if (!path)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "model: NULL path");
      return NULL;
    }
  tsr_model *m = calloc (1, sizeof *m);
  if (!m)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "model: out of memory");
      return NULL;
    }
  if (model_init (m, path, params) != TSR_OK)
    {
      /* Keep the message across the frees.  */
      char msg[512];
      tsr_status st = tsr_last_status ();
      bool agreed = m->fail_agreed;
      snprintf (msg, sizeof msg, "%s", tsr_last_error ());
      tsr_model_free (m);
      tsr_set_error (st == TSR_OK ? TSR_ERR_FORMAT : st, "%s: %s", path, msg);
      /* The other ranks may wait for this one (in the checks of the
         load, or in their first decode): they end with its message.  */
      if (params && params->comm && tsr_comm_size (params->comm) > 1
          && !agreed)
        {
          snprintf (msg, sizeof msg, "%s", tsr_last_error ());
          tsr_comm_fail (params->comm, msg);
          tsr_set_error (st == TSR_OK ? TSR_ERR_FORMAT : st, "%s", msg);
        }
      return NULL;
    }
  return m;
}

void
tsr_model_free (tsr_model *m)
{
  if (!m)
    return;
  for (int b = 0; b < TSRI_MODEL_MAX_BACKENDS; b++)
    {
      tsr_buffer_free (m->buf[b]);
      tsr_context_free (m->ctx[b]);
      tsr_buffer_free (m->slice_buf[b]);
      tsr_context_free (m->slice_ctx[b]);
      tsr_buffer_free (m->repack_buf[b]);
      tsr_context_free (m->repack_ctx[b]);
    }
  free (m->slices);
  free (m->used);
  if (m->own_backends)
    for (int b = 0; b < m->n_backends; b++)
      tsr_backend_free (m->backends[b]);
  free (m->layers);
  tsr_gguf_close (m->gguf);
  free (m);
}

/* Accessors.  */

const struct tsr_model_hparams *
tsr_model_get_hparams (const tsr_model *m)
{
  return m ? &m->hp : NULL;
}

const tsr_gguf *
tsr_model_gguf (const tsr_model *m)
{
  return m ? m->gguf : NULL;
}

int
tsr_model_n_backends (const tsr_model *m)
{
  return m ? m->n_backends : 0;
}

tsr_backend *
tsr_model_backend (const tsr_model *m, int i)
{
  return m && i >= 0 && i < m->n_backends ? m->backends[i] : NULL;
}

int
tsr_model_layer_backend (const tsr_model *m, int64_t il)
{
  if (!m || il < 0 || il > m->hp.n_layer)
    return -1;
  return il == m->hp.n_layer ? m->out_backend : m->layers[il].backend;
}

uint64_t
tsr_model_bytes_per_token (const tsr_model *m)
{
  return m ? m->bytes_per_token : 0;
}

uint64_t
tsr_model_n_params (const tsr_model *m)
{
  return m ? m->n_params : 0;
}

const char *
tsr_model_describe (const tsr_model *m)
{
  return m ? m->describe : "";
}
