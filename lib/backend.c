/* backend.c - devices and backends: the generic calls over a module's
 * interface, with the documented defaults for optional entries.  */
#include <config.h>

#include <stdlib.h>

#include "tessera-impl.h"

const char *
tsr_device_type_name (tsr_device_type type)
{
  switch (type)
    {
    case TSR_DEVICE_CPU: return "CPU";
    case TSR_DEVICE_GPU: return "GPU";
    case TSR_DEVICE_IGPU: return "IGPU";
    case TSR_DEVICE_ACCEL: return "ACCEL";
    }
  return "unknown";
}

const char *
tsr_device_name (tsr_device *dev)
{
  return dev ? dev->iface.get_name (dev) : "(none)";
}

const char *
tsr_device_description (tsr_device *dev)
{
  return dev ? dev->iface.get_description (dev) : "(none)";
}

tsr_device_type
tsr_device_get_type (tsr_device *dev)
{
  return dev->iface.get_type (dev);
}

void
tsr_device_memory (tsr_device *dev, size_t *free_bytes, size_t *total_bytes)
{
  size_t f = 0, t = 0;
  if (dev && dev->iface.get_memory)
    dev->iface.get_memory (dev, &f, &t);
  if (free_bytes)
    *free_bytes = f;
  if (total_bytes)
    *total_bytes = t;
}

void
tsr_device_get_props (tsr_device *dev, struct tsr_device_props *props)
{
  props->name = tsr_device_name (dev);
  props->description = tsr_device_description (dev);
  tsr_device_memory (dev, &props->memory_free, &props->memory_total);
  props->type = tsr_device_get_type (dev);
  props->caps = (struct tsr_device_caps) { 0 };
  if (dev->iface.get_caps)
    dev->iface.get_caps (dev, &props->caps);
}

tsr_reg *
tsr_device_reg (tsr_device *dev)
{
  return dev ? dev->reg : NULL;
}

tsr_buffer_type *
tsr_device_buffer_type (tsr_device *dev)
{
  return dev ? dev->iface.get_buffer_type (dev) : NULL;
}

bool
tsr_device_supports_op (tsr_device *dev, const tsr_tensor *op)
{
  return dev && op && dev->iface.supports_op (dev, op);
}

bool
tsr_device_supports_buffer_type (tsr_device *dev, tsr_buffer_type *buft)
{
  return dev && buft && dev->iface.supports_buft (dev, buft);
}

tsr_backend *
tsr_device_init (tsr_device *dev, const char *params)
{
  if (!dev)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "device init: NULL device");
      return NULL;
    }
  tsr_backend *be = dev->iface.init_backend (dev, params);
  if (!be && tsr_last_status () == TSR_OK)
    tsr_set_error (TSR_ERR_BACKEND, "device %s: backend initialization "
                   "failed", tsr_device_name (dev));
  return be;
}

const char *
tsr_backend_name (tsr_backend *backend)
{
  return backend ? backend->iface.get_name (backend) : "(none)";
}

void
tsr_backend_free (tsr_backend *backend)
{
  if (backend)
    backend->iface.free (backend);
}

tsr_device *
tsr_backend_device (tsr_backend *backend)
{
  return backend ? backend->device : NULL;
}

tsr_buffer_type *
tsr_backend_buffer_type (tsr_backend *backend)
{
  return tsr_device_buffer_type (tsr_backend_device (backend));
}

tsr_buffer *
tsr_backend_alloc_buffer (tsr_backend *backend, size_t size)
{
  return tsr_buffer_type_alloc (tsr_backend_buffer_type (backend), size);
}

void
tsr_backend_synchronize (tsr_backend *backend)
{
  if (backend && backend->iface.synchronize)
    backend->iface.synchronize (backend);
}

int
tsr_backend_graph_compute (tsr_backend *backend, tsr_graph *g)
{
  if (!backend || !g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "graph compute: NULL "
                          "argument");
  int st = backend->iface.graph_compute (backend, g);
  if (st == TSR_OK)
    tsr_backend_synchronize (backend);
  return st;
}

int
tsr_backend_set_n_threads (tsr_backend *backend, int n_threads)
{
  if (!backend)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "set threads: NULL backend");
  if (!backend->iface.set_n_threads)
    return tsr_set_error (TSR_ERR_UNSUPPORTED, "%s: thread count cannot be "
                          "set", tsr_backend_name (backend));
  return backend->iface.set_n_threads (backend, n_threads);
}

bool
tsr_backend_supports_op (tsr_backend *backend, const tsr_tensor *op)
{
  return tsr_device_supports_op (tsr_backend_device (backend), op);
}

void
tsr_backend_tensor_set (tsr_backend *backend, tsr_tensor *t,
                        const void *data, size_t offset, size_t size)
{
  if (backend && backend->iface.set_tensor_async)
    {
      backend->iface.set_tensor_async (backend, t, data, offset, size);
      tsr_backend_synchronize (backend);
    }
  else
    tsr_tensor_set (t, data, offset, size);
}

void
tsr_backend_tensor_get (tsr_backend *backend, const tsr_tensor *t,
                        void *data, size_t offset, size_t size)
{
  if (backend && backend->iface.get_tensor_async)
    {
      backend->iface.get_tensor_async (backend, t, data, offset, size);
      tsr_backend_synchronize (backend);
    }
  else
    tsr_tensor_get (t, data, offset, size);
}

static size_t
align_up (size_t n, size_t a)
{
  return (n + a - 1) / a * a;
}

tsr_buffer *
tsr_context_alloc_tensors (tsr_context *ctx, tsr_buffer_type *buft)
{
  if (!ctx || !buft)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "alloc tensors: NULL argument");
      return NULL;
    }
  size_t align = tsr_buffer_type_alignment (buft), total = 0;
  for (tsr_tensor *t = ctx->first; t; t = tsr_context_next_tensor (ctx, t))
    if (!t->data && !t->view_src)
      total = align_up (total, align) + tsr_buffer_type_alloc_size (buft, t);
  if (total == 0)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "alloc tensors: the context has "
                     "no tensors to allocate");
      return NULL;
    }
  tsr_buffer *buf = tsr_buffer_type_alloc (buft, total);
  if (!buf)
    return NULL;
  size_t off = 0;
  for (tsr_tensor *t = ctx->first; t; t = tsr_context_next_tensor (ctx, t))
    {
      int st = TSR_OK;
      if (!t->data && !t->view_src)
        {
          off = align_up (off, align);
          st = tsr_buffer_place_tensor (buf, t, off);
          off += tsr_buffer_type_alloc_size (buft, t);
        }
      else if (!t->data && t->view_src && t->view_src->data)
        st = tsri_tensor_init_view (t);
      if (st != TSR_OK)
        {
          tsr_buffer_free (buf);
          return NULL;
        }
    }
  return buf;
}
