/* A module whose descriptor symbol is shorter than module ABI 3's
   descriptor (it ends after init), with the right ABI version: reading
   finalize and flags would read past it.  The loader checks the
   symbol's size first.  */
#include <stdint.h>
#include <stddef.h>
#include <tessera/module.h>

static int
score (const char **reason)
{
  (void) reason;
  return 1;
}

static tsr_reg *
init (void)
{
  return NULL;
}

/* The first fields of struct tsr_module_descriptor only.  */
struct short_descriptor
{
  uint32_t abi_version;
  const char *name;
  int (*score) (const char **reason);
  tsr_reg *(*init) (void);
};

#define TSR_SHORT_PASTE2(a, b) a##b
#define TSR_SHORT_PASTE(a, b) TSR_SHORT_PASTE2 (a, b)
TSR_MODULE_EXPORT const struct short_descriptor
TSR_SHORT_PASTE (TSR_MODULE_NAME, _LTX_tsr_module_descriptor) = {
  TSR_MODULE_ABI_VERSION, "shortdesc", score, init
};
