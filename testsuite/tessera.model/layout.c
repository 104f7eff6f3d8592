/* Area: the library layout (libtessera and libtessera-model).
   Purpose: libtessera holds tensors, backends, the scheduler and GGUF,
   and nothing of the model layer: its shared object exports the
   scheduler's and GGUF's entry points and none of the model's,
   vocabularies' or sampling's, which libtessera-model exports.  So a
   program that only computes tensors links only libtessera.  Shared
   builds only (UNSUPPORTED in static ones).  */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "tsr-test.h"

static const char *const core[] = { "tsr_sched_new", "tsr_gguf_open",
                                    "tsr_mul_mat", "tsr_hash" };
static const char *const model[] = { "tsr_model_load", "tsr_session_new",
                                     "tsr_vocab_from_gguf",
                                     "tsr_sampler_new" };

int
main (void)
{
  const char *bld = getenv ("TSR_TEST_BUILDDIR");
  char path[4096], archive[4096];
  CHECK (bld != NULL, "test environment is set (TSR_TEST_BUILDDIR)");
  if (!bld)
    return TSR_TEST_EXIT ();
  snprintf (path, sizeof path, "%s/lib/.libs/libtessera.so", bld);
  snprintf (archive, sizeof archive, "%s/lib/.libs/libtessera.a", bld);
  if (access (path, R_OK) != 0 && access (archive, R_OK) == 0)
    {
      tsr_test_unsupported ("static build: no shared objects to look into");
      return TSR_TEST_EXIT ();
    }
  void *lib = dlopen (path, RTLD_NOW | RTLD_LOCAL);
  CHECK (lib != NULL, "libtessera opens: %s", lib ? "" : dlerror ());
  snprintf (path, sizeof path, "%s/model/.libs/libtessera-model.so", bld);
  void *mlib = dlopen (path, RTLD_NOW | RTLD_LOCAL);
  CHECK (mlib != NULL, "libtessera-model opens: %s", mlib ? "" : dlerror ());
  for (size_t i = 0; lib && i < sizeof core / sizeof core[0]; i++)
    CHECK (dlsym (lib, core[i]) != NULL, "libtessera exports %s", core[i]);
  /* (dlsym on libtessera's handle searches it and what it depends
     on, which libtessera-model is not.)  */
  for (size_t i = 0; lib && mlib && i < sizeof model / sizeof model[0]; i++)
    CHECK (dlsym (mlib, model[i]) != NULL && dlsym (lib, model[i]) == NULL,
           "%s is libtessera-model's, not libtessera's", model[i]);
  if (mlib)
    dlclose (mlib);
  if (lib)
    dlclose (lib);
  return TSR_TEST_EXIT ();
}
