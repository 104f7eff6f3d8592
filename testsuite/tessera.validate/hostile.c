/* Hostile shapes (issue 17, classes 1 to 3): operations on tensors with
   a zero-sized dimension are refused when built, with a message, never
   divided by at compute; views whose strides overflow, or reach past
   their parent, are refused by the builder and by tsr_node_validate
   (and so by every device and by graph compute); a transfer past a
   tensor's end through any backend is refused by the core before the
   backend sees it.  */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

static tsr_context *ctx;

static void
refused (tsr_tensor *r, tsr_status want, const char *word, const char *what)
{
  CHECK (r == NULL && tsr_last_status () == want
         && strstr (tsr_last_error (), word), "%s is refused (status %d, "
         "\"%s\")", what, (int) tsr_last_status (), tsr_last_error ());
  tsr_clear_error ();
}

static tsr_tensor *
t4 (tsr_type type, int64_t a, int64_t b, int64_t c, int64_t d)
{
  return tsr_new_tensor_4d (ctx, type, a, b, c, d);
}

int
main (void)
{
  ctx = tsr_context_new (false);
  tsr_tensor *a = t4 (TSR_TYPE_F32, 8, 4, 2, 1);

  /* Class 1: zero-sized operands.  */
  tsr_tensor *w0 = t4 (TSR_TYPE_F32, 8, 3, 0, 1);
  CHECK (w0 != NULL, "a tensor may be empty (%s)", tsr_last_error ());
  refused (tsr_mul_mat (ctx, w0, a), TSR_ERR_SHAPE, "dimension 2",
           "mul_mat with a zero batch dimension");
  refused (tsr_get_rows (ctx, t4 (TSR_TYPE_F32, 8, 0, 1, 1),
                         tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 2)),
           TSR_ERR_SHAPE, "get_rows", "get_rows of an empty source");
  refused (tsr_soft_max (ctx, a, t4 (TSR_TYPE_F32, 8, 4, 0, 1), 1.0f),
           TSR_ERR_SHAPE, "soft_max", "soft_max with an empty mask");
  refused (tsr_set_rows (ctx, t4 (TSR_TYPE_F16, 8, 0, 1, 1),
                         t4 (TSR_TYPE_F32, 8, 2, 1, 1),
                         tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 2)),
           TSR_ERR_SHAPE, "set_rows", "set_rows into an empty destination");
  refused (tsr_flash_attn_ext (ctx, t4 (TSR_TYPE_F32, 8, 3, 2, 1),
                               t4 (TSR_TYPE_F16, 8, 6, 0, 1),
                               t4 (TSR_TYPE_F16, 8, 6, 0, 1), NULL, 1.0f),
           TSR_ERR_SHAPE, "flash_attn_ext", "flash_attn_ext with zero KV "
           "heads");
  refused (tsr_add (ctx, a, t4 (TSR_TYPE_F32, 8, 0, 1, 1)), TSR_ERR_SHAPE,
           "add", "add of an empty broadcast operand");
  refused (tsr_im2col (ctx, t4 (TSR_TYPE_F32, 3, 3, 2, 4),
                       t4 (TSR_TYPE_F32, 8, 8, 2, 1), 1, 1, 0, 0,
                       1 << 30, 1 << 30, true, TSR_TYPE_F32),
           TSR_ERR_SHAPE, "im2col", "im2col with a huge dilation (no "
           "output position)");

  /* Class 2: views.  */
  tsr_tensor *small = t4 (TSR_TYPE_F32, 4, 4, 1, 1);     /* 64 bytes */
  refused (tsr_view_2d (ctx, small, 4, 2, (size_t) 1 << 63, 0),
           TSR_ERR_SHAPE, "view", "a view with a stride near 2^63");
  refused (tsr_view_2d (ctx, small, 4, 2, SIZE_MAX - 7, 0), TSR_ERR_SHAPE,
           "view", "a view whose stride wraps around");
  refused (tsr_view_1d (ctx, small, 4, 60), TSR_ERR_SHAPE, "view",
           "a view reaching past its parent's end");
  tsr_tensor *ok = tsr_view_2d (ctx, small, 4, 2, 32, 0);
  CHECK (ok != NULL, "a view inside its parent is built");
  if (ok)
    {
      /* The same view, its stride changed by hand after building.  */
      ok->nb[1] = SIZE_MAX - 3;
      CHECK (tsr_node_validate (ok) == TSR_ERR_SHAPE, "a hand-changed "
             "stride that overflows is refused by validation: %s",
             tsr_last_error ());
      ok->nb[1] = 52;            /* 16 + 52 bytes: past the 64 */
      CHECK (tsr_node_validate (ok) == TSR_ERR_SHAPE, "a hand-changed "
             "stride past the parent's end is refused: %s",
             tsr_last_error ());
      tsr_tensor *s = tsr_scale (ctx, ok, 2.0f);
      ok->nb[1] = SIZE_MAX - 3;
      tsr_backend *cpu = tsr_backend_init_by_name ("cpu", NULL);
      tsr_graph *g = tsr_graph_new (ctx);
      int st = cpu && s && g && tsr_graph_build (g, s) == TSR_OK
               ? tsr_backend_graph_compute (cpu, g) : -1;
      CHECK (st == TSR_ERR_SHAPE, "computing a scale of it is refused "
             "before any kernel runs (status %d: %s)", st,
             tsr_last_error ());
      for (size_t d = 0; d < tsr_device_count (); d++)
        CHECK (!tsr_device_supports_op (tsr_device_get (d), s), "%s "
               "refuses it", tsr_device_name (tsr_device_get (d)));
      tsr_backend_free (cpu);
    }

  /* Class 3: transfers past a tensor's end, through every device's
     backend, into a tensor of that device's memory.  */
  char big[256];
  memset (big, 0x5a, sizeof big);
  for (size_t d = 0; d < tsr_device_count (); d++)
    {
      tsr_device *dev = tsr_device_get (d);
      tsr_backend *be = tsr_device_init (dev, NULL);
      if (!be)
        continue;
      tsr_context *c2 = tsr_context_new (true);
      tsr_tensor *x = tsr_new_tensor_1d (c2, TSR_TYPE_F32, 4);  /* 16 B */
      tsr_tensor *y = tsr_new_tensor_1d (c2, TSR_TYPE_F32, 4);
      tsr_buffer *buf = tsr_context_alloc_tensors
        (c2, tsr_backend_buffer_type (be));
      if (buf)
        {
          float zero[4] = { 0 }, back[4] = { 1, 1, 1, 1 };
          tsr_backend_tensor_set (be, y, zero, 0, sizeof zero);
          int st = tsr_backend_tensor_set (be, x, big, 0, 144);
          int st2 = tsr_backend_tensor_set_async (be, x, big, 8, 16);
          int st3 = tsr_backend_tensor_get (be, x, big, 4, 16);
          tsr_backend_tensor_get (be, y, back, 0, sizeof back);
          CHECK (st == TSR_ERR_INVALID_ARG && st2 == TSR_ERR_INVALID_ARG
                 && st3 == TSR_ERR_INVALID_ARG && back[0] == 0
                 && back[3] == 0, "%s: set/get past a 16-byte tensor's end "
                 "are refused (%d %d %d) and the next tensor is untouched",
                 tsr_device_name (dev), st, st2, st3);
          tsr_buffer_free (buf);
        }
      tsr_context_free (c2);
      tsr_backend_free (be);
    }
  tsr_context_free (ctx);
  return TSR_TEST_EXIT ();
}
