/* backend.c - devices and backends: the generic calls over a module's
 * interface, with the documented defaults for optional entries.  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera-impl.h"

int
tsri_sync_after (tsr_backend *backend, int status)
{
  char msg[1024];

  if (status == TSR_OK)
    return tsr_backend_synchronize (backend);
  snprintf (msg, sizeof msg, "%s", tsr_last_error ());
  tsr_backend_synchronize (backend);
  tsr_set_error (status, "%s", msg);
  return status;
}

/* STATUS, a module's answer; a failure that came without a message
   gets one naming WHO, so the caller never sees a bare code.  */
static int
first_failure (int status, const char *who)
{
  if (status != TSR_OK && tsr_last_status () == TSR_OK)
    return tsr_set_error (status, "%s: failed (the backend gave no "
                          "message)", who);
  return status;
}

const char *
tsr_device_type_name (tsr_device_type type)
{
  switch (type)
    {
    case TSR_DEVICE_CPU: return "CPU";
    case TSR_DEVICE_GPU: return "GPU";
    case TSR_DEVICE_IGPU: return "IGPU";
    case TSR_DEVICE_ACCEL: return "ACCEL";
    case TSR_DEVICE_COMM: return "COMM";
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
  /* What the interface offers, whatever the module says.  */
  props->caps.host_buffer = tsr_device_host_buffer_type (dev) != NULL;
  props->caps.events = dev->iface.event_new != NULL;
}

tsr_buffer_type *
tsr_device_host_buffer_type (tsr_device *dev)
{
  if (!dev || !dev->iface.get_host_buffer_type)
    return NULL;
  return dev->iface.get_host_buffer_type (dev);
}

size_t
tsr_device_extra_buffer_types (tsr_device *dev, tsr_buffer_type **bufts,
                               size_t max)
{
  if (!dev)
    return 0;
  tsr_extra_bufts_fn fn = (tsr_extra_bufts_fn) tsr_reg_get_proc
    (dev->reg, TSR_EXTRA_BUFTS_NAME);
  return fn ? fn (dev, bufts, max) : 0;
}

bool
tsr_buffer_type_repacks (tsr_buffer_type *buft, tsr_type type, int64_t ne0,
                         int64_t ne1)
{
  if (!buft || !buft->device)
    return false;
  tsr_buft_repacks_fn fn = (tsr_buft_repacks_fn) tsr_reg_get_proc
    (buft->device->reg, TSR_BUFT_REPACKS_NAME);
  return fn && fn (buft, type, ne0, ne1);
}

int
tsr_backend_get_counters (tsr_backend *backend,
                          struct tsr_backend_counters *c, bool clear)
{
  if (!c)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "backend counters: NULL "
                          "destination");
  memset (c, 0, sizeof *c);
  if (!backend)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "backend counters: NULL "
                          "backend");
  tsr_backend_counters_fn fn = (tsr_backend_counters_fn) tsr_reg_get_proc
    (backend->device->reg, TSR_BACKEND_COUNTERS_NAME);
  if (!fn)
    return tsr_set_error (TSR_ERR_UNSUPPORTED, "%s: the backend keeps no "
                          "counters", tsr_backend_name (backend));
  return fn (backend, c, clear);
}

/* Events.  */

tsr_event *
tsr_event_new (tsr_device *dev)
{
  tsr_event *ev;
  int st;

  if (!dev)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "event: NULL device");
      return NULL;
    }
  if (!dev->iface.event_new || !dev->iface.event_free
      || !dev->iface.event_synchronize)
    {
      tsr_set_error (TSR_ERR_UNSUPPORTED, "event: device %s has no events",
                     tsr_device_name (dev));
      return NULL;
    }
  ev = calloc (1, sizeof *ev);
  if (!ev)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "event: out of memory");
      return NULL;
    }
  ev->device = dev;
  st = dev->iface.event_new (dev, ev);
  if (st != TSR_OK)
    {
      free (ev);
      return NULL;
    }
  tsri_registry_hold (dev, 1);
  return ev;
}

void
tsr_event_free (tsr_event *ev)
{
  if (!ev)
    return;
  tsr_device *dev = ev->device;
  dev->iface.event_free (ev);
  free (ev);
  tsri_registry_hold (dev, -1);
}

tsr_device *
tsr_event_device (tsr_event *ev)
{
  return ev ? ev->device : NULL;
}

int
tsr_event_record (tsr_event *ev, tsr_backend *backend)
{
  if (!ev || !backend)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "event record: NULL "
                          "argument");
  if (backend->device != ev->device || !backend->iface.event_record)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "event record: an event "
                          "of %s recorded on backend %s of another device",
                          tsr_device_name (ev->device),
                          tsr_backend_name (backend));
  return backend->iface.event_record (backend, ev);
}

int
tsr_event_synchronize (tsr_event *ev)
{
  if (!ev)
    return TSR_OK;
  return first_failure (ev->device->iface.event_synchronize (ev),
                        tsr_device_name (ev->device));
}

int
tsr_backend_event_wait (tsr_backend *backend, tsr_event *ev)
{
  if (!ev || !backend)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "event wait: NULL argument");
  if (backend->device->reg != ev->device->reg || !backend->iface.event_wait)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "event wait: backend %s "
                          "cannot wait for an event of %s (another "
                          "registration); synchronize on the host",
                          tsr_backend_name (backend),
                          tsr_device_name (ev->device));
  return backend->iface.event_wait (backend, ev);
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

/* The core checks the node (tsr_node_validate's rules); the module
   says only whether it has a kernel for these types and layouts.  */
bool
tsr_device_supports_op (tsr_device *dev, const tsr_tensor *op)
{
  struct tsri_verdict v;

  return dev && op && tsri_node_check (op, &v) == TSR_OK
         && dev->iface.supports_op (dev, op);
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
  tsr_clear_error ();
  tsr_backend *be = dev->iface.init_backend (dev, params);
  if (!be && tsr_last_status () == TSR_OK)
    tsr_set_error (TSR_ERR_BACKEND, "device %s: backend initialization "
                   "failed", tsr_device_name (dev));
  if (!be)
    return NULL;
  /* What module ABI 3 requires of a backend.  */
  const struct tsr_backend_iface *bi = &be->iface;
  const char *miss = !bi->get_name ? "get_name"
    : !bi->graph_compute ? "graph_compute"
    : dev->iface.event_new && !bi->event_record ? "event_record"
    : dev->iface.event_new && !bi->event_wait ? "event_wait" : NULL;
  size_t plen = params ? strlen (params) : 0;
  if (!miss && plen && (be->params = malloc (plen + 1)))
    memcpy (be->params, params, plen + 1);
  if (!miss && plen && !be->params)
    {
      tsr_backend_free (be);
      tsr_set_error (TSR_ERR_NO_MEMORY, "device %s: no memory for a "
                     "backend", tsr_device_name (dev));
      return NULL;
    }
  if (miss)
    {
      tsr_set_error (TSR_ERR_MODULE, "device %s: its backend lacks %s "
                     "(required by module ABI %d)", tsr_device_name (dev),
                     miss, TSR_MODULE_ABI_VERSION);
      tsr_backend_free (be);
      return NULL;
    }
  return be;
}

const char *
tsr_backend_name (tsr_backend *backend)
{
  return backend ? backend->iface.get_name (backend) : "(none)";
}

tsr_backend *
tsr_backend_new (tsr_device *dev, struct tsr_backend_iface iface,
                 void *context)
{
  tsr_backend *be;

  if (!dev)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "tsr_backend_new: NULL device");
      return NULL;
    }
  be = calloc (1, sizeof *be);
  if (!be)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "%s: no memory for a backend",
                     tsr_device_name (dev));
      return NULL;
    }
  be->iface = iface;
  be->device = dev;
  be->context = context;
  tsri_registry_hold (dev, 1);
  return be;
}

void
tsr_backend_free (tsr_backend *backend)
{
  if (!backend)
    return;
  tsr_device *dev = backend->device;
  if (backend->iface.free)
    backend->iface.free (backend);
  free (backend->params);
  free (backend);
  tsri_registry_hold (dev, -1);
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

int
tsr_backend_synchronize (tsr_backend *backend)
{
  if (!backend || !backend->iface.synchronize)
    return TSR_OK;
  return first_failure (backend->iface.synchronize (backend),
                        tsr_backend_name (backend));
}

int
tsr_no_kernel_error (const char *who, const tsr_tensor *node)
{
  char types[128];
  size_t len = 0;

  types[0] = '\0';
  for (int i = 0; i < TSR_MAX_SRC && len < sizeof types; i++)
    if (node->src[i])
      len += (size_t) snprintf (types + len, sizeof types - len, "%s%s",
                                len ? ", " : "",
                                tsr_type_name (node->src[i]->type));
  return tsr_set_error (TSR_ERR_UNSUPPORTED, "%s: no kernel for %s '%s' "
                        "with these operands (%s -> %s)", who,
                        tsr_op_name (node->op), tsr_tensor_label (node), types,
                        tsr_type_name (node->type));
}

/* T is allocated, in memory DEV reads.  */
static int
check_memory (tsr_device *dev, const tsr_tensor *t)
{
  if (t->buffer && !tsri_buffer_live (t->buffer))
    return tsr_set_error (TSR_ERR_STATE, "%s: tensor '%s' is in a buffer "
                          "that has been freed (its graph allocator or "
                          "buffer is gone)", tsr_device_name (dev),
                          tsr_tensor_label (t));
  tsr_buffer_type *buft = t->buffer ? tsr_buffer_get_type (t->buffer)
                                    : tsr_host_buffer_type ();

  if (!t->data)
    return tsr_set_error (TSR_ERR_STATE, "%s: tensor '%s' has no data (not "
                          "allocated)", tsr_device_name (dev), tsr_tensor_label (t));
  if (!dev->iface.supports_buft (dev, buft))
    return tsr_set_error (TSR_ERR_UNSUPPORTED, "%s: tensor '%s' is in %s "
                          "memory, which this device does not compute on",
                          tsr_device_name (dev), tsr_tensor_label (t),
                          t->buffer ? tsr_buffer_type_name (buft) : "host");
  return TSR_OK;
}

int
tsri_node_ready (tsr_device *dev, const tsr_tensor *node)
{
  struct tsri_verdict v;
  int st;

  if (tsri_node_check (node, &v) != TSR_OK)
    return tsr_set_error (v.status, "%s: %s", tsr_device_name (dev), v.msg);
  st = check_memory (dev, node);
  for (int i = 0; i < TSR_MAX_SRC && st == TSR_OK; i++)
    if (node->src[i])
      st = check_memory (dev, node->src[i]);
  return st;
}

/* The one place nodes are checked before a backend computes them
   (the scheduler checks its graphs when it places them): a backend's
   walk sees only valid nodes in memory it reads, and asks only which
   kernel takes them.  */
int
tsr_backend_graph_compute (tsr_backend *backend, tsr_graph *g)
{
  if (!backend || !g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "graph compute: NULL "
                          "argument");
  for (int i = 0; i < g->n_nodes; i++)
    if (tsri_node_ready (backend->device, g->nodes[i]) != TSR_OK)
      return tsr_last_status ();
  int st = backend->iface.graph_compute (backend, g);
  /* Wait even after a failure: queued work must not outlive the call.
     The first failure is the one reported.  */
  return tsri_sync_after (backend, st);
}

int
tsr_backend_set_n_threads (tsr_backend *backend, int n_threads)
{
  if (!backend)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "set threads: NULL backend");
  if (!backend->iface.set_n_threads)
    return tsr_set_error (TSR_ERR_UNSUPPORTED, "%s: thread count cannot be "
                          "set", tsr_backend_name (backend));
  int st = backend->iface.set_n_threads (backend, n_threads);
  if (st == TSR_OK)
    backend->n_threads = n_threads;
  return st;
}

tsr_backend *
tsr_backend_clone (tsr_backend *backend)
{
  if (!backend)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "clone: NULL backend");
      return NULL;
    }
  tsr_backend *b = tsr_device_init (backend->device, backend->params);
  if (b && backend->n_threads > 0
      && tsr_backend_set_n_threads (b, backend->n_threads) != TSR_OK)
    {
      tsr_backend_free (b);
      return NULL;
    }
  return b;
}

bool
tsr_backend_supports_op (tsr_backend *backend, const tsr_tensor *op)
{
  return tsr_device_supports_op (tsr_backend_device (backend), op);
}

/* The waiting versions: the asynchronous copy, then, where it really
   was one, the wait for it; the first failure of the two.  */
int
tsr_backend_tensor_set (tsr_backend *backend, tsr_tensor *t,
                        const void *data, size_t offset, size_t size)
{
  int st = tsr_backend_tensor_set_async (backend, t, data, offset, size);
  if (backend && backend->iface.set_tensor_async)
    st = tsri_sync_after (backend, st);
  return st;
}

int
tsr_backend_tensor_set_async (tsr_backend *backend, tsr_tensor *t,
                              const void *data, size_t offset, size_t size)
{
  int st = tsri_check_range ("tensor set", t, data, offset, size);
  if (st != TSR_OK || size == 0)
    return st;
  if (backend && backend->iface.set_tensor_async)
    return first_failure (backend->iface.set_tensor_async (backend, t, data,
                                                           offset, size),
                          tsr_backend_name (backend));
  return tsr_tensor_set (t, data, offset, size);
}

int
tsr_backend_tensor_get_async (tsr_backend *backend, const tsr_tensor *t,
                              void *data, size_t offset, size_t size)
{
  int st = tsri_check_range ("tensor get", t, data, offset, size);
  if (st != TSR_OK || size == 0)
    return st;
  if (backend && backend->iface.get_tensor_async)
    return first_failure (backend->iface.get_tensor_async (backend, t, data,
                                                           offset, size),
                          tsr_backend_name (backend));
  return tsr_tensor_get (t, data, offset, size);
}

int
tsr_backend_tensor_get (tsr_backend *backend, const tsr_tensor *t,
                        void *data, size_t offset, size_t size)
{
  int st = tsr_backend_tensor_get_async (backend, t, data, offset, size);
  if (backend && backend->iface.get_tensor_async)
    st = tsri_sync_after (backend, st);
  return st;
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
