/* In a static build (--disable-shared) the program carries libtessera
   and its backends inside itself, and the same registry calls find the
   CPU backend.  In a shared build this test is unsupported.  */
#include <stdio.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

static int
libtessera_is_shared (void)
{
  char line[4096];
  int found = 0;
  FILE *f = fopen ("/proc/self/maps", "r");
  while (f && fgets (line, sizeof line, f))
    found |= strstr (line, "libtessera.so") != NULL;
  if (f)
    fclose (f);
  return found;
}

int
main (void)
{
  if (libtessera_is_shared ())
    {
      tsr_test_unsupported ("static build: this build links libtessera "
                            "as a shared library");
      return 0;
    }
  CHECK (!libtessera_is_shared (), "program is linked with the static "
         "libtessera");
  tsr_reg *cpu = tsr_reg_by_name ("cpu");
  CHECK (cpu != NULL, "static program finds the cpu registration");
  struct tsr_module_info m;
  int builtin = 0;
  for (size_t i = 0; i < tsr_registry_module_count (); i++)
    if (tsr_registry_module_get (i, &m) && m.reg == cpu)
      builtin = m.builtin;
  CHECK (builtin, "cpu backend is compiled in");
  tsr_backend *be = tsr_backend_init_best ();
  CHECK (be && tsr_device_get_type (tsr_backend_device (be))
         == TSR_DEVICE_CPU, "init_best gives the cpu backend");
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 2);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 3);
  for (int i = 0; i < 8; i++)
    ((float *) a->data)[i] = (float) i;
  for (int i = 0; i < 12; i++)
    ((float *) b->data)[i] = (float) (i % 5);
  tsr_tensor *c = tsr_mul_mat (ctx, a, b);
  tsr_graph *g = tsr_graph_new (ctx);
  tsr_graph_build (g, c);
  CHECK (be && tsr_backend_graph_compute (be, g) == TSR_OK, "static build "
         "computes");
  int ok = 1;
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < 2; i++)
      {
        float want = 0;
        for (int k = 0; k < 4; k++)
          want += (float) (i * 4 + k) * (float) ((j * 4 + k) % 5);
        ok &= ((float *) c->data)[j * 2 + i] == want;
      }
  CHECK (ok, "matrix product exact (small integers)");
  tsr_context_free (ctx);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
