/* cuda-buffer.c - device memory: one buffer type per GPU; and pinned
 * host memory, another buffer type per GPU (at the end).
 *
 * A buffer is one cudaMalloc allocation (never managed memory); its
 * base is the device pointer, so a tensor's data pointer is a device
 * address that kernels take as it is and the host never dereferences
 * (the buffer type is not host memory).  set/get/clear are synchronous
 * with respect to the host: cudaMemcpy and cudaMemset on the legacy
 * default stream, which waits for work queued on the device's other
 * (blocking) streams, so they see every kernel queued before them.  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-impl.h"

struct tsr_cuda_buffer
{
  struct tsr_cuda_device *d;
  void *mem;
};

bool
tsr_cuda_tensor_on (const struct tsr_cuda_device *d, const tsr_tensor *t)
{
  return t && t->buffer && t->buffer->buft == &d->buft && t->data;
}

static void
buf_free (tsr_buffer *buf)
{
  struct tsr_cuda_buffer *b = buf->context;

  cudaSetDevice (b->d->ordinal);
  cudaFree (b->mem);
  free (b);
}

static void *
buf_base (tsr_buffer *buf)
{
  return ((struct tsr_cuda_buffer *) buf->context)->mem;
}

static int
report (const struct tsr_cuda_device *d, const char *what, cudaError_t err)
{
  return tsr_cuda_error (d, what, err);
}

static int
buf_set (tsr_buffer *buf, tsr_tensor *t, const void *data, size_t offset,
         size_t size)
{
  struct tsr_cuda_buffer *b = buf->context;
  cudaError_t err = cudaSetDevice (b->d->ordinal);

  if (err == cudaSuccess)
    err = cudaMemcpy ((char *) t->data + offset, data, size,
                      cudaMemcpyHostToDevice);
  if (err != cudaSuccess)
    return report (b->d, "cudaMemcpy (to the device)", err);
  return TSR_OK;
}

static int
buf_get (tsr_buffer *buf, const tsr_tensor *t, void *data, size_t offset,
         size_t size)
{
  struct tsr_cuda_buffer *b = buf->context;
  cudaError_t err = cudaSetDevice (b->d->ordinal);

  if (err == cudaSuccess)
    err = cudaMemcpy (data, (const char *) t->data + offset, size,
                      cudaMemcpyDeviceToHost);
  if (err != cudaSuccess)
    return report (b->d, "cudaMemcpy (from the device)", err);
  return TSR_OK;
}

static void
buf_clear (tsr_buffer *buf, uint8_t value)
{
  struct tsr_cuda_buffer *b = buf->context;
  cudaError_t err = cudaSetDevice (b->d->ordinal);

  if (err == cudaSuccess)
    err = cudaMemset (b->mem, value, buf->size);
  if (err == cudaSuccess)
    err = cudaDeviceSynchronize ();
  if (err != cudaSuccess)
    report (b->d, "cudaMemset", err);
}

static const struct tsr_buffer_iface tsr_cuda_buffer_iface = {
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
  return ((struct tsr_cuda_device *) buft->context)->name;
}

static tsr_buffer *
buft_alloc (tsr_buffer_type *buft, size_t size)
{
  struct tsr_cuda_device *d = buft->context;
  struct tsr_cuda_buffer *b = calloc (1, sizeof *b);
  cudaError_t err;
  tsr_buffer *buf;

  if (!b)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "cuda: out of memory");
      return NULL;
    }
  b->d = d;
  err = cudaSetDevice (d->ordinal);
  /* cudaMalloc refuses nothing of size 0, but a real block keeps the
     base distinct and non-NULL.  */
  if (err == cudaSuccess)
    err = cudaMalloc (&b->mem, size ? size : CU_ALIGN);
  if (err != cudaSuccess)
    {
      tsr_set_error (err == cudaErrorMemoryAllocation ? TSR_ERR_NO_MEMORY
                     : TSR_ERR_BACKEND, "cuda: %s: cannot allocate %zu "
                     "bytes: %s", d->name, size, cudaGetErrorString (err));
      cudaGetLastError ();      /* not sticky: clear it */
      free (b);
      return NULL;
    }
  buf = tsr_buffer_new (buft, tsr_cuda_buffer_iface, b, size);
  if (!buf)
    {
      cudaFree (b->mem);
      free (b);
    }
  return buf;
}

static size_t
buft_alignment (tsr_buffer_type *buft)
{
  (void) buft;
  return CU_ALIGN;
}

static size_t
buft_max_size (tsr_buffer_type *buft)
{
  return ((struct tsr_cuda_device *) buft->context)->mem_total;
}

static bool
buft_is_host (tsr_buffer_type *buft)
{
  (void) buft;
  return false;
}

void
tsr_cuda_buft_init (struct tsr_cuda_device *d)
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

/* Pinned host memory (cudaHostAlloc, portable to every GPU): plain
   host memory to the CPU, and what the GPU's copy engines read and
   write directly, so that a backend's set/get from it run
   asynchronously.  One buffer type per device, named "CUDA<n>_Host".  */

static void
host_free (tsr_buffer *buf)
{
  cudaFreeHost (buf->context);
}

static void *
host_base (tsr_buffer *buf)
{
  return buf->context;
}

static int
host_set (tsr_buffer *buf, tsr_tensor *t, const void *data, size_t offset,
          size_t size)
{
  (void) buf;
  memcpy ((char *) t->data + offset, data, size);
  return TSR_OK;
}

static int
host_get (tsr_buffer *buf, const tsr_tensor *t, void *data, size_t offset,
          size_t size)
{
  (void) buf;
  memcpy (data, (const char *) t->data + offset, size);
  return TSR_OK;
}

static void
host_clear (tsr_buffer *buf, uint8_t value)
{
  memset (buf->context, value, buf->size);
}

static const struct tsr_buffer_iface tsr_cuda_host_buffer_iface = {
  .free_buffer = host_free,
  .get_base = host_base,
  .init_tensor = NULL,
  .set_tensor = host_set,
  .get_tensor = host_get,
  .clear = host_clear,
};

static const char *
host_buft_name (tsr_buffer_type *buft)
{
  return ((struct tsr_cuda_device *) buft->context)->host_name;
}

static tsr_buffer *
host_buft_alloc (tsr_buffer_type *buft, size_t size)
{
  struct tsr_cuda_device *d = buft->context;
  void *mem = NULL;
  cudaError_t err = cudaSetDevice (d->ordinal);
  tsr_buffer *buf;

  if (err == cudaSuccess)
    err = cudaHostAlloc (&mem, size ? size : CU_ALIGN, cudaHostAllocPortable);
  if (err != cudaSuccess)
    {
      tsr_set_error (err == cudaErrorMemoryAllocation ? TSR_ERR_NO_MEMORY
                     : TSR_ERR_BACKEND, "cuda: %s: cannot allocate %zu "
                     "bytes of pinned host memory: %s", d->name, size,
                     cudaGetErrorString (err));
      cudaGetLastError ();      /* not sticky: clear it */
      return NULL;
    }
  buf = tsr_buffer_new (buft, tsr_cuda_host_buffer_iface, mem, size);
  if (!buf)
    cudaFreeHost (mem);
  return buf;
}

static bool
host_buft_is_host (tsr_buffer_type *buft)
{
  (void) buft;
  return true;
}

void
tsr_cuda_host_buft_init (struct tsr_cuda_device *d)
{
  snprintf (d->host_name, sizeof d->host_name, "%s_Host", d->name);
  d->host_buft.iface.get_name = host_buft_name;
  d->host_buft.iface.alloc_buffer = host_buft_alloc;
  d->host_buft.iface.get_alignment = buft_alignment;
  d->host_buft.iface.get_max_size = NULL;
  d->host_buft.iface.get_alloc_size = NULL;
  d->host_buft.iface.is_host = host_buft_is_host;
  d->host_buft.device = d->dev;
  d->host_buft.context = d;
}
