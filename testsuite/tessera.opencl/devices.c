/* The OpenCL devices as Tessera devices: names, descriptions, types,
   memory and caps; the device-memory buffer type (set/get at offsets,
   clear, no host pointer); a backend's asynchronous transfers; the CPU
   backend still being the one CPU device.  */
#include <stdio.h>
#include <string.h>
#include "ocl-test.h"

static void
check_device (tsr_device *dev, size_t i)
{
  struct tsr_device_props p;
  char want[32];

  tsr_device_get_props (dev, &p);
  snprintf (want, sizeof want, "OpenCL%zu", i);
  CHECK (strcmp (p.name, want) == 0, "device %zu is named %s (%s)", i, want,
         p.name);
  CHECK (tsr_device_by_name (want) == dev, "device %zu found by its name", i);
  CHECK (p.description && strlen (p.description) > 4
         && strchr (p.description, '(') && !strstr (p.description, "unknown ("),
         "device %zu has a real description: %s", i, p.description);
  CHECK (p.type != TSR_DEVICE_CPU, "device %zu is not typed CPU (%s)", i,
         tsr_device_type_name (p.type));
  CHECK (p.memory_total > 0, "device %zu reports its memory (%zu bytes)", i,
         p.memory_total);
  CHECK (p.caps.async, "device %zu is asynchronous", i);
}

static void
check_buffer (tsr_device *dev)
{
  tsr_buffer_type *buft = tsr_device_buffer_type (dev);
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 100);
  tsr_tensor *b = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 7);
  float in[100], out[100];
  int ok = 1;

  CHECK (!tsr_buffer_type_is_host (buft), "buffer type is device memory");
  CHECK (tsr_buffer_type_device (buft) == dev, "buffer type knows its "
         "device");
  CHECK (tsr_device_supports_buffer_type (dev, buft)
         && !tsr_device_supports_buffer_type (dev, tsr_host_buffer_type ()),
         "device reads its own buffers only");
  tsr_buffer *buf = tsr_context_alloc_tensors (ctx, buft);
  CHECK (buf != NULL, "tensors allocated in device memory: %s",
         buf ? "ok" : tsr_last_error ());
  if (!buf)
    {
      tsr_context_free (ctx);
      return;
    }
  CHECK (a->data != NULL && b->data != NULL && a->data != b->data,
         "tensors have distinct (device) addresses");
  for (int i = 0; i < 100; i++)
    in[i] = (float) i * 0.5f;
  CHECK (tsr_tensor_set (a, in, 0, sizeof in) == TSR_OK, "set a tensor");
  CHECK (tsr_tensor_set (b, in, 0, 7 * sizeof (float)) == TSR_OK,
         "set another tensor of the same buffer");
  CHECK (tsr_tensor_set (a, in + 90, 10 * sizeof (float),
                         5 * sizeof (float)) == TSR_OK, "set at an offset");
  memset (out, 0, sizeof out);
  tsr_tensor_get (a, out, 0, sizeof out);
  for (int i = 0; i < 100; i++)
    ok &= out[i] == (i >= 10 && i < 15 ? in[i + 80] : in[i]);
  CHECK (ok, "get gives what was set, offsets included");
  tsr_tensor_get (a, out, 40 * sizeof (float), sizeof (float));
  CHECK (out[0] == 20.0f, "get at an offset");
  tsr_buffer_clear (buf, 0);
  tsr_tensor_get (b, out, 0, 7 * sizeof (float));
  ok = 1;
  for (int i = 0; i < 7; i++)
    ok &= out[i] == 0.0f;
  CHECK (ok, "buffer clear zeroes device memory");

  tsr_backend *be = tsr_device_init (dev, NULL);
  CHECK (be != NULL, "backend on the device");
  if (be)
    {
      tsr_backend_tensor_set (be, b, in + 3, 0, 7 * sizeof (float));
      tsr_backend_tensor_get (be, b, out, 0, 7 * sizeof (float));
      ok = 1;
      for (int i = 0; i < 7; i++)
        ok &= out[i] == in[i + 3];
      CHECK (ok, "backend transfers (async, then synchronize)");
      CHECK (tsr_backend_set_n_threads (be, 2) == TSR_ERR_UNSUPPORTED,
             "no thread count to set");
      tsr_backend_free (be);
    }
  CHECK (tsr_device_init (dev, "bogus=1") == NULL
         && strstr (tsr_last_error (), "bogus"),
         "unknown backend parameters are refused: %s", tsr_last_error ());
  tsr_buffer_free (buf);
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_device *dev = ocl_test_device ();
  if (!dev)
    return TSR_TEST_EXIT ();

  tsr_reg *reg = tsr_reg_by_name ("OpenCL");
  CHECK (reg && tsr_device_reg (dev) == reg, "registration 'opencl' found "
         "in any case");
  for (size_t i = 0; reg && i < tsr_reg_device_count (reg); i++)
    check_device (tsr_reg_device_get (reg, i), i);
  tsr_device *cpu = tsr_device_by_type (TSR_DEVICE_CPU);
  CHECK (cpu && tsr_device_reg (cpu) == tsr_reg_by_name ("cpu"),
         "the CPU device by type is still the CPU backend's");
  check_buffer (dev);
  return TSR_TEST_EXIT ();
}
