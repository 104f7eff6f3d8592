/* gguf-recipe.h - which type each tensor of a model gets when
 * tessera-gguf requantizes it: one plain type, or a preset (Q4_K_M...)
 * that mixes types per tensor the way the presets users download do.  */
#ifndef TSR_GGUF_RECIPE_H
#define TSR_GGUF_RECIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <tessera.h>

enum gr_preset
{
  GR_PLAIN,                     /* one type for every quantizable tensor */
  GR_Q2_K, GR_Q3_K_M, GR_Q4_0, GR_Q4_K_S, GR_Q4_K_M, GR_Q5_K_M, GR_Q6_K,
  GR_Q8_0, GR_IQ4_XS
};

struct gr_recipe
{
  enum gr_preset preset;
  tsr_type type;                /* the plain type, or the preset's base */
  const char *name;             /* "Q4_K_M", or the type's name */
  int file_type;                /* general.file_type to record, or -1 */
};

/* The recipe named NAME: a preset (any case) or a type name.  False
   for neither (or i32).  */
bool gr_recipe_find (const char *name, struct gr_recipe *r);

/* What the rules need to know about the model being requantized.  */
struct gr_model
{
  bool falcon;                  /* general.architecture "falcon" */
  bool tied;                    /* no output.weight: token_embd is it */
  int n_gqa;                    /* attention heads per KV head, or 0 */
  int n_expert;                 /* experts, 0 for dense models */
  int n_layer;                  /* blocks */
  int n_attn_v;                 /* attn_v-like tensors */
};

void gr_model_init (const tsr_gguf *g, struct gr_model *m);

/* The type tensor INFO gets under recipe R.  When the chosen type's
   block does not divide the rows, a compatible type is returned and a
   sentence saying so is written into NOTE (empty otherwise).  */
tsr_type gr_tensor_type (const struct gr_recipe *r, const struct gr_model *m,
                         const struct tsr_gguf_tensor_info *info,
                         char *note, size_t note_size);

#endif /* TSR_GGUF_RECIPE_H */
