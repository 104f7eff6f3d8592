/* gguf-recipe.c - the per-tensor type choices of tessera-gguf
 * requantize.
 *
 * Owns the presets users know from the files they download (Q4_K_M
 * above all) and their rules: which tensors are quantized at all (two
 * or more dimensions, not norms, expert gates or position tables), the
 * higher type of the output matrix (and of the token embedding when it
 * doubles as the output), the extra bits some attn_v and ffn_down
 * layers get, and the fallback to a type whose block divides a tensor's
 * rows.  The rules are those of llama.cpp's llama_tensor_get_type,
 * restated here for the presets Tessera offers, without an importance
 * matrix.  Converting the data is tessera-gguf.c's job.  */
#include <config.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gguf-recipe.h"

static const struct gr_recipe presets[] = {
  { GR_Q2_K, TSR_TYPE_Q2_K, "Q2_K", 10 },
  { GR_Q3_K_M, TSR_TYPE_Q3_K, "Q3_K_M", 12 },
  { GR_Q4_0, TSR_TYPE_Q4_0, "Q4_0", 2 },
  { GR_Q4_K_S, TSR_TYPE_Q4_K, "Q4_K_S", 14 },
  { GR_Q4_K_M, TSR_TYPE_Q4_K, "Q4_K_M", 15 },
  { GR_Q5_K_M, TSR_TYPE_Q5_K, "Q5_K_M", 17 },
  { GR_Q6_K, TSR_TYPE_Q6_K, "Q6_K", 18 },
  { GR_Q8_0, TSR_TYPE_Q8_0, "Q8_0", 7 },
  { GR_IQ4_XS, TSR_TYPE_IQ4_XS, "IQ4_XS", 30 },
};

/* general.file_type of a file that is all one type ("mostly" TYPE).  */
static int
plain_file_type (tsr_type t)
{
  static const struct { tsr_type type; int id; } ids[] = {
    { TSR_TYPE_F32, 0 },     { TSR_TYPE_F16, 1 },     { TSR_TYPE_Q4_0, 2 },
    { TSR_TYPE_Q4_1, 3 },    { TSR_TYPE_Q8_0, 7 },    { TSR_TYPE_Q5_0, 8 },
    { TSR_TYPE_Q5_1, 9 },    { TSR_TYPE_Q6_K, 18 },   { TSR_TYPE_IQ4_NL, 25 },
    { TSR_TYPE_IQ4_XS, 30 }, { TSR_TYPE_BF16, 32 },
  };
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
    if (ids[i].type == t)
      return ids[i].id;
  return -1;
}

bool
gr_recipe_find (const char *name, struct gr_recipe *r)
{
  if (!name)
    return false;
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (strcasecmp (name, presets[i].name) == 0)
      {
        *r = presets[i];
        return true;
      }
  tsr_type t = tsr_type_from_name (name);
  if (t == TSR_TYPE_COUNT || t == TSR_TYPE_I32)
    return false;
  *r = (struct gr_recipe) { GR_PLAIN, t, tsr_type_name (t),
                            plain_file_type (t) };
  return true;
}

/* The model.  */

enum category
{
  CAT_TOKEN_EMBD, CAT_OUTPUT, CAT_ATTN_V, CAT_ATTN_K, CAT_ATTN_Q,
  CAT_ATTN_OUTPUT, CAT_FFN_UP, CAT_FFN_GATE, CAT_FFN_DOWN, CAT_OTHER
};

static enum category
category (const char *name)
{
  static const struct { const char *part; enum category c; } parts[] = {
    { "attn_qkv.weight", CAT_ATTN_V }, { "attn_kv_b.weight", CAT_ATTN_V },
    { "attn_v.weight", CAT_ATTN_V },   { "attn_k.weight", CAT_ATTN_K },
    { "attn_q.weight", CAT_ATTN_Q },
    { "attn_output.weight", CAT_ATTN_OUTPUT },
    { "ffn_up", CAT_FFN_UP },          { "ffn_gate", CAT_FFN_GATE },
    { "ffn_down", CAT_FFN_DOWN },
  };
  if (strcmp (name, "output.weight") == 0)
    return CAT_OUTPUT;
  if (strcmp (name, "token_embd.weight") == 0
      || strcmp (name, "per_layer_token_embd.weight") == 0)
    return CAT_TOKEN_EMBD;
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (strstr (name, parts[i].part))
      return parts[i].c;
  return CAT_OTHER;
}

static int
layer_of (const char *name)
{
  int layer;
  return sscanf (name, "blk.%d.", &layer) == 1 && layer >= 0 ? layer : 0;
}

static uint32_t
arch_u32 (const tsr_gguf *g, const char *arch, const char *key)
{
  char full[256];
  uint32_t v = 0;
  snprintf (full, sizeof full, "%s.%s", arch, key);
  if (tsr_gguf_get_u32 (g, full, &v) != TSR_OK)
    v = 0;
  return v;
}

void
gr_model_init (const tsr_gguf *g, struct gr_model *m)
{
  const char *arch = "";
  if (tsr_gguf_get_str (g, "general.architecture", &arch, NULL) != TSR_OK)
    arch = "";
  memset (m, 0, sizeof *m);
  m->falcon = strcmp (arch, "falcon") == 0;
  m->tied = tsr_gguf_find_tensor (g, "output.weight") < 0;
  uint32_t heads = arch_u32 (g, arch, "attention.head_count");
  uint32_t kv = arch_u32 (g, arch, "attention.head_count_kv");
  m->n_gqa = heads && kv ? (int) (heads / kv) : 0;
  m->n_expert = (int) arch_u32 (g, arch, "expert_count");
  m->n_layer = (int) arch_u32 (g, arch, "block_count");
  int top = 0;
  for (int64_t i = 0; i < tsr_gguf_n_tensors (g); i++)
    {
      struct tsr_gguf_tensor_info info;
      tsr_gguf_get_tensor_info (g, i, &info);
      if (category (info.name) == CAT_ATTN_V)
        m->n_attn_v++;
      if (strncmp (info.name, "blk.", 4) == 0 && layer_of (info.name) >= top)
        top = layer_of (info.name) + 1;
    }
  if (m->n_layer <= 0)
    m->n_layer = top;
}

/* Tensors that stay as they are: fewer than two dimensions, norms,
   expert gates and the small tables the presets never quantize.  */
static bool
quantizable (const struct tsr_gguf_tensor_info *info)
{
  static const char *const keep[] = {
    "_norm.weight", "ffn_gate_inp.weight", "position_embd.weight",
    "token_types.weight", "ssm_conv1d", "shortconv.conv.weight", "altup",
    "laurel", "per_layer_model_proj", "time_mix_", "attn_rel_b.weight",
  };
  if (info->n_dims < 2 || !tsr_type_traits (info->type)->is_float)
    return false;
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
    if (strstr (info->name, keep[i]))
      return false;
  return true;
}

/* The presets' rules.  */

/* The layers that get more bits: the first and last eighth and every
   third layer in between.  */
static bool
more_bits (int i, int n)
{
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static tsr_type
output_type (const struct gr_recipe *r, const struct gr_model *m,
             int64_t ne0)
{
  if (m->falcon || ne0 % tsr_type_traits (r->type)->block_size != 0)
    return TSR_TYPE_Q8_0;
  return r->type == TSR_TYPE_Q8_0 ? r->type : TSR_TYPE_Q6_K;
}

static tsr_type
attn_v_type (const struct gr_recipe *r, const struct gr_model *m, int i)
{
  tsr_type t = r->type;
  int n = m->n_attn_v;
  switch (r->preset)
    {
    case GR_Q2_K:
      t = m->n_gqa >= 4 ? TSR_TYPE_Q4_K : TSR_TYPE_Q3_K;
      break;
    case GR_Q3_K_M:
      t = i < 2 ? TSR_TYPE_Q5_K : TSR_TYPE_Q4_K;
      break;
    case GR_IQ4_XS:
      t = m->n_gqa >= 4 ? TSR_TYPE_Q5_K : t;
      break;
    case GR_Q4_K_M:
    case GR_Q5_K_M:
      t = more_bits (i, n) ? TSR_TYPE_Q6_K : t;
      break;
    case GR_Q4_K_S:
      t = i < 4 ? TSR_TYPE_Q5_K : t;
      break;
    default:
      break;
    }
  return m->n_expert == 8 ? TSR_TYPE_Q8_0 : t;
}

static tsr_type
ffn_down_type (const struct gr_recipe *r, const struct gr_model *m, int i)
{
  int n = m->n_layer;
  switch (r->preset)
    {
    case GR_Q2_K:
      return TSR_TYPE_Q3_K;
    case GR_Q3_K_M:
      return i < n / 16 ? TSR_TYPE_Q5_K
             : !m->falcon || more_bits (i, n) ? TSR_TYPE_Q4_K : TSR_TYPE_Q3_K;
    case GR_Q4_K_M:
      if (m->falcon)
        return i < n / 16 ? TSR_TYPE_Q6_K
               : more_bits (i, n) ? TSR_TYPE_Q5_K : TSR_TYPE_Q4_K;
      return more_bits (i, n) ? TSR_TYPE_Q6_K : r->type;
    case GR_IQ4_XS:
      return i < n / 8 ? TSR_TYPE_Q5_K : r->type;
    case GR_Q5_K_M:
      return more_bits (i, n) ? TSR_TYPE_Q6_K : r->type;
    case GR_Q4_K_S:
      return !m->falcon && i < n / 8 ? TSR_TYPE_Q5_K : r->type;
    default:
      return r->type;
    }
}

static tsr_type
attn_output_type (const struct gr_recipe *r, const struct gr_model *m)
{
  if (m->falcon)
    return r->type;
  if (m->n_expert == 8)
    return r->preset == GR_Q2_K || r->preset == GR_Q3_K_M
           || r->preset == GR_Q4_K_S || r->preset == GR_Q4_K_M
           || r->preset == GR_IQ4_XS ? TSR_TYPE_Q5_K : r->type;
  return r->preset == GR_Q2_K ? TSR_TYPE_Q3_K
         : r->preset == GR_Q3_K_M ? TSR_TYPE_Q4_K : r->type;
}

static tsr_type
preset_type (const struct gr_recipe *r, const struct gr_model *m,
             const struct tsr_gguf_tensor_info *info)
{
  enum category c = category (info->name);
  if (c == CAT_OUTPUT || (m->tied && c == CAT_TOKEN_EMBD))
    return output_type (r, m, info->ne[0]);
  switch (c)
    {
    case CAT_ATTN_V:
      return attn_v_type (r, m, layer_of (info->name));
    case CAT_ATTN_K:
      return m->n_expert == 8 ? TSR_TYPE_Q8_0 : r->type;
    case CAT_FFN_DOWN:
      return ffn_down_type (r, m, layer_of (info->name));
    case CAT_ATTN_OUTPUT:
      return attn_output_type (r, m);
    default:
      return r->type;
    }
}

/* A type whose block divides NE0, for a chosen T that does not.  */
static tsr_type
fallback (tsr_type t, int64_t ne0)
{
  tsr_type f;
  switch (t)
    {
    case TSR_TYPE_IQ4_XS: f = TSR_TYPE_IQ4_NL; break;
    case TSR_TYPE_Q2_K:
    case TSR_TYPE_Q3_K: f = TSR_TYPE_Q4_0; break;
    case TSR_TYPE_Q4_K: f = TSR_TYPE_Q5_0; break;
    case TSR_TYPE_Q5_K: f = TSR_TYPE_Q5_1; break;
    case TSR_TYPE_Q6_K: f = TSR_TYPE_Q8_0; break;
    default: f = TSR_TYPE_F16; break;
    }
  return ne0 % tsr_type_traits (f)->block_size == 0 ? f : TSR_TYPE_F16;
}

tsr_type
gr_tensor_type (const struct gr_recipe *r, const struct gr_model *m,
                const struct tsr_gguf_tensor_info *info, char *note,
                size_t note_size)
{
  note[0] = '\0';
  if (!quantizable (info))
    return info->type;
  tsr_type t = r->preset == GR_PLAIN ? r->type : preset_type (r, m, info);
  int64_t block = tsr_type_traits (t)->block_size;
  if (info->ne[0] % block == 0)
    return t;
  tsr_type f = fallback (t, info->ne[0]);
  snprintf (note, note_size, "%s: rows of %lld are not a multiple of the "
            "%s block size %lld: %s instead", info->name,
            (long long) info->ne[0], tsr_type_name (t), (long long) block,
            tsr_type_name (f));
  return f;
}
