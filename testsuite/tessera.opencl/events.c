/* Events of the OpenCL backend and asynchronous transfers: 4 MiB
   written without waiting, an event recorded after it, a second
   backend of the device waiting for it before reading back; the host
   waiting for an event recorded after an asynchronous read; an event
   never recorded is reached at once.  UNSUPPORTED without an OpenCL
   device.  */
#include <stdlib.h>
#include <string.h>
#include "ocl-test.h"

#define N (1 << 20)

int
main (void)
{
  tsr_device *dev = ocl_test_device ();
  struct tsr_device_props p;

  if (!dev)
    return TSR_TEST_EXIT ();
  tsr_device_get_props (dev, &p);
  CHECK (p.caps.events && p.caps.async, "caps: events %d, async %d",
         p.caps.events, p.caps.async);
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *x = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, N);
  tsr_buffer *buf = tsr_context_alloc_tensors (ctx,
                                               tsr_device_buffer_type (dev));
  tsr_backend *b1 = tsr_device_init (dev, NULL);
  tsr_backend *b2 = tsr_device_init (dev, NULL);
  tsr_event *ev = tsr_event_new (dev);
  float *in = malloc (N * sizeof *in), *out = malloc (N * sizeof *out);
  CHECK (buf && b1 && b2 && ev && in && out, "buffer, backends, event: %s",
         buf && b1 && b2 && ev ? "ok" : tsr_last_error ());
  if (!buf || !b1 || !b2 || !ev || !in || !out)
    return TSR_TEST_EXIT ();

  tsr_event_synchronize (ev);
  CHECK (tsr_backend_event_wait (b2, ev) == TSR_OK, "an event never "
         "recorded is reached at once");
  for (int i = 0; i < N; i++)
    {
      in[i] = (float) i - 0.75f;
      out[i] = 0;
    }
  tsr_backend_tensor_set_async (b1, x, in, 0, N * sizeof (float));
  CHECK (tsr_event_record (ev, b1) == TSR_OK, "event recorded after the "
         "write");
  CHECK (tsr_backend_event_wait (b2, ev) == TSR_OK, "second backend waits "
         "for it");
  tsr_backend_tensor_get_async (b2, x, out, 0, N * sizeof (float));
  tsr_backend_synchronize (b2);
  CHECK (memcmp (in, out, N * sizeof (float)) == 0, "4 MiB written and "
         "read back in order");

  memset (out, 0, N * sizeof (float));
  tsr_backend_tensor_get_async (b1, x, out, 8 * sizeof (float),
                                1000 * sizeof (float));
  CHECK (tsr_event_record (ev, b1) == TSR_OK, "recorded again");
  tsr_event_synchronize (ev);
  CHECK (memcmp (out, in + 8, 1000 * sizeof (float)) == 0,
         "the host waits for an asynchronous read");

  tsr_backend *cpu = tsr_backend_init_by_name ("CPU", NULL);
  CHECK (cpu && tsr_event_record (ev, cpu) == TSR_ERR_INVALID_ARG,
         "an OpenCL event is not recorded on the CPU backend");
  tsr_backend_free (cpu);
  tsr_event_free (ev);
  tsr_backend_free (b1);
  tsr_backend_free (b2);
  tsr_buffer_free (buf);
  tsr_context_free (ctx);
  free (in);
  free (out);
  return TSR_TEST_EXIT ();
}
