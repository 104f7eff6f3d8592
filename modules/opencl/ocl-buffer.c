/* ocl-buffer.c - device memory: one buffer type per OpenCL device.
 *
 * A buffer is one cl_mem.  Its base "address" is OCL_FAKE_BASE, so a
 * tensor's data pointer is the fake base plus its byte offset in the
 * cl_mem; nothing may dereference it (the buffer type is not host
 * memory), and tsr_opencl_tensor_mem turns it back into (cl_mem, offset).
 * set/get/clear go through the device's one in-order queue and block,
 * so they are ordered after every kernel enqueued before them.  */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "ocl-impl.h"

struct tsr_opencl_buffer
{
  struct tsr_opencl_device *d;
  cl_mem mem;
};

static struct tsr_opencl_device *
buft_dev (tsr_buffer_type *buft)
{
  return buft->context;
}

bool
tsr_opencl_tensor_mem (const struct tsr_opencl_device *d, const tsr_tensor *t, cl_mem *mem,
                size_t *offset)
{
  const struct tsr_opencl_buffer *b;

  if (!t || !t->buffer || t->buffer->buft != &d->buft || !t->data)
    return false;
  b = t->buffer->context;
  *mem = b->mem;
  *offset = (size_t) ((const char *) t->data - OCL_FAKE_BASE);
  return *offset <= t->buffer->size;
}

static int
report (const struct tsr_opencl_device *d, const char *what, cl_int err)
{
  return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: %s failed: %s (%d)",
                        d->name, what, tsr_opencl_error_string (err), (int) err);
}

static void
buf_free (tsr_buffer *buf)
{
  struct tsr_opencl_buffer *b = buf->context;

  clReleaseMemObject (b->mem);
  free (b);
}

static void *
buf_base (tsr_buffer *buf)
{
  (void) buf;
  return OCL_FAKE_BASE;
}

static int
buf_set (tsr_buffer *buf, tsr_tensor *t, const void *data, size_t offset,
         size_t size)
{
  struct tsr_opencl_buffer *b = buf->context;
  size_t at = (size_t) ((char *) t->data - OCL_FAKE_BASE) + offset;
  cl_int err = clEnqueueWriteBuffer (b->d->queue, b->mem, CL_TRUE, at, size,
                                     data, 0, NULL, NULL);

  if (err != CL_SUCCESS)
    return report (b->d, "clEnqueueWriteBuffer", err);
  return TSR_OK;
}

static int
buf_get (tsr_buffer *buf, const tsr_tensor *t, void *data, size_t offset,
         size_t size)
{
  struct tsr_opencl_buffer *b = buf->context;
  size_t at = (size_t) ((const char *) t->data - OCL_FAKE_BASE) + offset;
  cl_int err = clEnqueueReadBuffer (b->d->queue, b->mem, CL_TRUE, at, size,
                                    data, 0, NULL, NULL);

  if (err != CL_SUCCESS)
    return report (b->d, "clEnqueueReadBuffer", err);
  return TSR_OK;
}

static void
buf_clear (tsr_buffer *buf, uint8_t value)
{
  struct tsr_opencl_buffer *b = buf->context;
  cl_uchar pattern = value;
  cl_int err = clEnqueueFillBuffer (b->d->queue, b->mem, &pattern,
                                    sizeof pattern, 0, buf->size, 0, NULL,
                                    NULL);

  if (err == CL_SUCCESS)
    err = clFinish (b->d->queue);
  if (err != CL_SUCCESS)
    report (b->d, "clEnqueueFillBuffer", err);
}

static const struct tsr_buffer_iface tsr_opencl_buffer_iface = {
  .free_buffer = buf_free,
  .get_base = buf_base,
  .init_tensor = NULL,
  .set_tensor = buf_set,
  .get_tensor = buf_get,
  .clear = buf_clear,
};

static const char *
buft_name (tsr_buffer_type *buft)
{
  return buft_dev (buft)->name;
}

static tsr_buffer *
buft_alloc (tsr_buffer_type *buft, size_t size)
{
  struct tsr_opencl_device *d = buft_dev (buft);
  struct tsr_opencl_buffer *b;
  tsr_buffer *buf;
  cl_int err;

  if (tsr_opencl_device_ready (d) != TSR_OK)
    return NULL;
  if (size > d->max_alloc)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "opencl: %s: a buffer of %zu bytes "
                     "is larger than the device allows (%zu)", d->name, size,
                     d->max_alloc);
      return NULL;
    }
  b = calloc (1, sizeof *b);
  if (!b)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "opencl: out of memory");
      return NULL;
    }
  b->d = d;
  /* OpenCL refuses empty buffers.  */
  b->mem = clCreateBuffer (d->context, CL_MEM_READ_WRITE, size ? size : 1,
                           NULL, &err);
  if (!b->mem)
    {
      tsr_set_error (err == CL_MEM_OBJECT_ALLOCATION_FAILURE
                     || err == CL_OUT_OF_RESOURCES
                     || err == CL_OUT_OF_HOST_MEMORY
                     ? TSR_ERR_NO_MEMORY : TSR_ERR_BACKEND,
                     "opencl: %s: cannot allocate %zu bytes: %s (%d)",
                     d->name, size, tsr_opencl_error_string (err), (int) err);
      free (b);
      return NULL;
    }
  buf = tsr_buffer_new (buft, tsr_opencl_buffer_iface, b, size);
  if (!buf)
    {
      clReleaseMemObject (b->mem);
      free (b);
    }
  return buf;
}

static size_t
buft_alignment (tsr_buffer_type *buft)
{
  (void) buft;
  return OCL_ALIGN;
}

static size_t
buft_max_size (tsr_buffer_type *buft)
{
  return buft_dev (buft)->max_alloc;
}

static bool
buft_is_host (tsr_buffer_type *buft)
{
  (void) buft;
  return false;
}

void
tsr_opencl_buft_init (struct tsr_opencl_device *d)
{
  d->buft.iface.get_name = buft_name;
  d->buft.iface.alloc_buffer = buft_alloc;
  d->buft.iface.get_alignment = buft_alignment;
  d->buft.iface.get_max_size = buft_max_size;
  d->buft.iface.get_alloc_size = NULL;
  d->buft.iface.is_host = buft_is_host;
  d->buft.device = d->dev;      /* NULL until init registers it */
  d->buft.context = d;
}
