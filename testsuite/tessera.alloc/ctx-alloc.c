/* tsr_context_alloc_tensors places every tensor of a context (weights)
   in one buffer, aligned, without overlap; views follow their source. */
#include <stdint.h>
#include <tessera.h>
#include "tsr-test.h"

int
main (void)
{
  tsr_buffer_type *buft = tsr_device_buffer_type (tsr_device_by_name ("cpu"));
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *t[5];
  t[0] = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 17, 3);
  t[1] = tsr_new_tensor_2d (ctx, TSR_TYPE_Q4_0, 64, 5);
  t[2] = tsr_new_tensor_1d (ctx, TSR_TYPE_F16, 3);
  t[3] = tsr_new_tensor_3d (ctx, TSR_TYPE_Q8_0, 32, 2, 2);
  t[4] = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 1);
  tsr_tensor *v = tsr_view_1d (ctx, t[0], 5, 4 * sizeof (float));
  CHECK (v && v->data == NULL, "view has no data before allocation");
  tsr_buffer *buf = tsr_context_alloc_tensors (ctx, buft);
  CHECK (buf != NULL, "context tensors allocated");
  size_t align = tsr_buffer_type_alignment (buft), sum = 0;
  int aligned = 1, disjoint = 1;
  for (int i = 0; i < 5; i++)
    {
      aligned &= ((uintptr_t) t[i]->data % align) == 0;
      sum += tsr_nbytes (t[i]);
      for (int j = 0; j < i; j++)
        {
          const char *a = t[i]->data, *b = t[j]->data;
          disjoint &= a + tsr_nbytes (t[i]) <= b || b + tsr_nbytes (t[j]) <= a;
        }
    }
  CHECK (aligned, "every tensor aligned to %zu bytes", align);
  CHECK (disjoint, "no two tensors overlap");
  CHECK (buf && tsr_buffer_size (buf) >= sum
         && tsr_buffer_size (buf) <= sum + 5 * align,
         "buffer size is the tensors plus alignment padding (%zu, %zu)",
         buf ? tsr_buffer_size (buf) : 0, sum);
  CHECK (v->data == (char *) t[0]->data + 16 && v->buffer == buf,
         "view placed inside its source");
  CHECK (tsr_nbytes (t[1]) == 5 * 2 * 18 && tsr_nbytes (t[3]) == 4 * 34,
         "quantized tensor sizes follow the block layout");
  float x[3] = { 1.5f, -2.0f, 65504.0f }, y[3];
  tsr_tensor_set (t[2], NULL, 0, 0);
  CHECK (tsr_tensor_set (t[0], x, 0, sizeof x) == TSR_OK
         && tsr_tensor_get (t[0], y, 0, sizeof y) == TSR_OK
         && y[0] == x[0] && y[2] == x[2], "set/get round trip");
  CHECK (tsr_tensor_set (t[0], x, tsr_nbytes (t[0]) - 4, 8)
         == TSR_ERR_INVALID_ARG, "set past the end refused");
  tsr_buffer_free (buf);
  tsr_context_free (ctx);

  ctx = tsr_context_new (true);
  CHECK (tsr_context_alloc_tensors (ctx, buft) == NULL, "empty context: "
         "nothing to allocate is reported");
  tsr_context_free (ctx);
  return TSR_TEST_EXIT ();
}
