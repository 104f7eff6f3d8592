/* A module that cannot work here, and says why.  */
#include <stddef.h>
#include <tessera/module.h>

static int
score (const char **reason)
{
  *reason = "no zeroscore hardware in this machine (test module)";
  return 0;
}

static tsr_reg *
init (void)
{
  return NULL;
}

const struct tsr_module_descriptor TSR_MODULE_DESCRIPTOR = {
  TSR_MODULE_ABI_VERSION, "zeroscore", score, init, NULL, 0
};
