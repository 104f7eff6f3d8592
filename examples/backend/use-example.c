/* use-example.c - load the example backend module (its path is the
   argument) and compute (x + y) * y on it, with y broadcast over the
   rows of x; check the result and that the device refuses what it has
   no kernel for.  Exit status 0 when everything holds.  */
#include <stdio.h>
#include <tessera.h>

int
main (int argc, char **argv)
{
  if (argc != 2 || tsr_registry_load (argv[1]) != TSR_OK)
    {
      fprintf (stderr, "use-example: cannot load %s: %s\n",
               argc == 2 ? argv[1] : "(no path)", tsr_last_error ());
      return 1;
    }
  tsr_backend *be = tsr_backend_init_by_name ("Example0", NULL);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 3, 2);
  tsr_tensor *y = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 3);
  for (int i = 0; i < 6; i++)
    tsr_set_f32_1d (x, i, (float) i);
  for (int i = 0; i < 3; i++)
    tsr_set_f32_1d (y, i, 0.5f * (float) (i + 1));
  tsr_tensor *r = tsr_mul (ctx, tsr_add (ctx, x, y), y);
  tsr_graph *g = tsr_graph_new (ctx);
  if (!be || !r || tsr_graph_build (g, r) != TSR_OK
      || tsr_backend_graph_compute (be, g) != TSR_OK)
    {
      fprintf (stderr, "use-example: %s\n", tsr_last_error ());
      return 1;
    }
  int bad = 0;
  for (int i = 0; i < 6; i++)
    {
      float yi = 0.5f * (float) (i % 3 + 1);
      float want = ((float) i + yi) * yi;
      if (tsr_get_f32_1d (r, i) != want)
        {
          fprintf (stderr, "use-example: element %d is %g, want %g\n", i,
                   (double) tsr_get_f32_1d (r, i), (double) want);
          bad = 1;
        }
    }
  if (tsr_backend_supports_op (be, tsr_silu (ctx, x)))
    {
      fprintf (stderr, "use-example: the device claims silu\n");
      bad = 1;
    }
  tsr_backend_free (be);
  tsr_context_free (ctx);
  if (!bad)
    printf ("use-example: the example backend computed (x + y) * y\n");
  return bad;
}
