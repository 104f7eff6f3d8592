/* model-arch.c - the table of architectures.
 *
 * Adding an architecture: its file arch-NAME.c (arch.h says what it
 * defines) and one line here.  */
#include <config.h>

#include <string.h>

#include "model-lib.h"
#include "arch.h"

extern const struct tsri_arch tsri_arch_llama, tsri_arch_qwen2,
  tsri_arch_qwen2moe, tsri_arch_qwen3, tsri_arch_qwen3moe, tsri_arch_gemma2,
  tsri_arch_gemma3, tsri_arch_phi3;

static const struct tsri_arch *const archs[] = {
  &tsri_arch_llama,
  &tsri_arch_qwen2,
  &tsri_arch_qwen2moe,
  &tsri_arch_qwen3,
  &tsri_arch_qwen3moe,
  &tsri_arch_gemma2,
  &tsri_arch_gemma3,
  &tsri_arch_phi3,
};

const struct tsri_arch *
tsri_arch_find (const char *name)
{
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
    if (strcmp (archs[i]->name, name) == 0)
      return archs[i];
  return NULL;
}

const char *
tsri_arch_names (void)
{
  return "llama, qwen2, qwen2moe, qwen3, qwen3moe, gemma2, gemma3 and phi3";
}
