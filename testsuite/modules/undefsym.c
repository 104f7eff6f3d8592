/* A module that needs a function nothing defines.  Loaded with lazy
   binding it would load, and the process would end (status 127,
   "symbol lookup error") at the first call of init; the loader binds
   every symbol when it loads a module, so this is a recorded failure
   naming the symbol.  */
#include <stddef.h>
#include <tessera/module.h>

extern tsr_reg *tsr_test_no_such_function (void);

static int
score (const char **reason)
{
  (void) reason;
  return 1;
}

static tsr_reg *
init (void)
{
  return tsr_test_no_such_function ();
}

const struct tsr_module_descriptor TSR_MODULE_DESCRIPTOR = {
  TSR_MODULE_ABI_VERSION, "undefsym", score, init, NULL, 0
};
