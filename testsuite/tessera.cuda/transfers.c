/* Pinned host memory and events of the CUDA backend: the device's host
   buffer type is host memory named CUDA<n>_Host that the CPU backend
   computes on; asynchronous copies from and to it through two backends
   (streams) ordered by an event give back what was written; an event
   recorded after a graph lets the host wait for it.  UNSUPPORTED
   without a CUDA device.  */
#include <string.h>
#include "cuda-test.h"

#define N (4 << 20)             /* 16 MiB of f32 */

int
main (void)
{
  tsr_device *dev = cuda_test_device ();
  struct tsr_device_props p;

  if (!dev)
    return TSR_TEST_EXIT ();
  tsr_device_get_props (dev, &p);
  CHECK (p.caps.host_buffer && p.caps.events, "caps: host buffer %d, "
         "events %d", p.caps.host_buffer, p.caps.events);
  tsr_buffer_type *hb = tsr_device_host_buffer_type (dev);
  CHECK (hb && tsr_buffer_type_is_host (hb)
         && strcmp (tsr_buffer_type_name (hb), "CUDA0_Host") == 0,
         "pinned host buffer type CUDA0_Host is host memory (%s)",
         hb ? tsr_buffer_type_name (hb) : "none");
  tsr_device *cpu = tsr_device_by_name ("CPU");
  CHECK (hb && cpu && tsr_device_supports_buffer_type (cpu, hb),
         "the CPU computes on pinned memory");
  if (!hb || !cpu)
    return TSR_TEST_EXIT ();

  /* x on the GPU; src, dst, a, b, sum in pinned host memory.  */
  tsr_context *gctx = tsr_context_new (true);
  tsr_context *hctx = tsr_context_new (true);
  tsr_tensor *x = tsr_new_tensor_1d (gctx, TSR_TYPE_F32, N);
  tsr_tensor *src = tsr_new_tensor_1d (hctx, TSR_TYPE_F32, N);
  tsr_tensor *dst = tsr_new_tensor_1d (hctx, TSR_TYPE_F32, N);
  tsr_tensor *a = tsr_new_tensor_1d (hctx, TSR_TYPE_F32, 1000);
  tsr_tensor *b = tsr_new_tensor_1d (hctx, TSR_TYPE_F32, 1000);
  tsr_tensor *sum = tsr_add (hctx, a, b);
  tsr_buffer *gbuf = tsr_context_alloc_tensors (gctx,
                                                tsr_device_buffer_type (dev));
  tsr_buffer *hbuf = tsr_context_alloc_tensors (hctx, hb);
  tsr_backend *b1 = tsr_device_init (dev, NULL);
  tsr_backend *b2 = tsr_device_init (dev, NULL);
  tsr_backend *cb = tsr_device_init (cpu, NULL);
  tsr_event *ev = tsr_event_new (dev);
  CHECK (gbuf && hbuf && b1 && b2 && cb && ev, "buffers, backends and an "
         "event: %s", gbuf && hbuf && b1 && b2 && cb && ev ? "ok"
         : tsr_last_error ());
  if (!gbuf || !hbuf || !b1 || !b2 || !cb || !ev)
    return TSR_TEST_EXIT ();
  CHECK (tsr_buffer_is_host (hbuf), "the pinned buffer is host memory");

  float *in = src->data, *out = dst->data;
  for (int i = 0; i < N; i++)
    {
      in[i] = (float) i * 0.5f - 7.0f;
      out[i] = -1.0f;
    }
  /* Write on stream 1; read on stream 2 after the event.  */
  tsr_backend_tensor_set_async (b1, x, in, 0, N * sizeof (float));
  CHECK (tsr_event_record (ev, b1) == TSR_OK, "event recorded after the "
         "write");
  CHECK (tsr_backend_event_wait (b2, ev) == TSR_OK, "second stream waits "
         "for it");
  tsr_backend_tensor_get_async (b2, x, out, 0, N * sizeof (float));
  tsr_backend_synchronize (b2);
  CHECK (memcmp (in, out, N * sizeof (float)) == 0, "16 MiB through the "
         "GPU and back, ordered by the event");

  /* Host waits for an event recorded after an asynchronous read.  */
  memset (out, 0, N * sizeof (float));
  tsr_backend_tensor_get_async (b1, x, out, 4 * sizeof (float),
                                100 * sizeof (float));
  tsr_event_record (ev, b1);
  tsr_event_synchronize (ev);
  CHECK (memcmp (out, in + 4, 100 * sizeof (float)) == 0,
         "event synchronize waits for an asynchronous read");

  /* The CPU backend on pinned memory.  */
  float *pa = a->data, *pb = b->data;
  for (int i = 0; i < 1000; i++)
    {
      pa[i] = (float) i;
      pb[i] = 0.25f * (float) i;
    }
  tsr_graph *g = tsr_graph_new (hctx);
  tsr_graph_build (g, sum);
  CHECK (tsr_backend_graph_compute (cb, g) == TSR_OK, "CPU computes a + b "
         "in pinned memory");
  int ok = 1;
  for (int i = 0; i < 1000; i++)
    ok &= ((float *) sum->data)[i] == 1.25f * (float) i;
  CHECK (ok, "a + b is exact");

  CHECK (tsr_event_record (ev, cb) == TSR_ERR_INVALID_ARG,
         "a CUDA event cannot be recorded on the CPU backend");
  tsr_event_free (ev);
  tsr_backend_free (b1);
  tsr_backend_free (b2);
  tsr_backend_free (cb);
  tsr_buffer_free (gbuf);
  tsr_buffer_free (hbuf);
  tsr_context_free (gctx);
  tsr_context_free (hctx);
  return TSR_TEST_EXIT ();
}
