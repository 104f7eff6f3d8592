/* An embedder can turn automatic module loading off before first use,
   and load modules itself later.  */
#include <stdlib.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

int
main (void)
{
  CHECK (tsr_registry_set_autoload (false) == TSR_OK,
         "autoload can be disabled before first use");
  size_t builtins = 0, n = tsr_registry_module_count ();
  for (size_t i = 0; i < n; i++)
    {
      struct tsr_module_info m;
      builtins += tsr_registry_module_get (i, &m) && m.builtin;
    }
  CHECK (n == builtins, "without autoload only compiled-in backends are "
         "there (%zu modules, %zu built in)", n, builtins);
  /* Compiled-in backends are always scored; one unusable here (a
     compiled-in CUDA backend without a GPU) is no module tried.  */
  size_t tried = 0;
  for (size_t i = 0; i < tsr_registry_failure_count (); i++)
    {
      struct tsr_module_failure f;
      tried += tsr_registry_failure_get (i, &f)
               && strcmp (f.path, "(built-in)") != 0;
    }
  CHECK (tried == 0, "nothing was tried");
  CHECK (tsr_registry_set_autoload (true) == TSR_ERR_STATE,
         "autoload cannot change after initialization");
  CHECK (tsr_registry_load_all () == TSR_OK, "explicit load_all");
  CHECK (tsr_reg_by_name ("cpu") != NULL, "cpu available after load_all");
  size_t after = tsr_registry_module_count ();
  CHECK (tsr_registry_load_all () == TSR_OK
         && tsr_registry_module_count () == after,
         "a second load_all loads nothing twice");
  return TSR_TEST_EXIT ();
}
