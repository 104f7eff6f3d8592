/* A module whose init fails.  */
#include <stddef.h>
#include <tessera/module.h>

static int
score (const char **reason)
{
  return 1;
}

static tsr_reg *
init (void)
{
  return NULL;
}

const struct tsr_module_descriptor TSR_MODULE_DESCRIPTOR = {
  TSR_MODULE_ABI_VERSION, "initnull", score, init, NULL, 0
};
