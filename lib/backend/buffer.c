/* buffer.c - buffer types and buffers; the host (malloc) buffer type.
 *
 * Owns: the generic buffer-type and buffer calls, placing tensors in
 * buffers, and host memory any backend may use.  */
#include <config.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if HAVE_DECL_MADV_HUGEPAGE
#include <sys/mman.h>
#endif

#include "tessera-impl.h"

#define HOST_ALIGN 64
/* Buffers of at least this many bytes are aligned to it and asked to
   be backed by transparent huge pages where the system has them only on
   request (Linux's "madvise" mode): streaming a large weight matrix
   through 4 KiB pages costs a page walk per page and stops the
   hardware prefetchers at every page boundary, which held the CPU's
   matrix-vector products well below the memory bandwidth.  */
#define HUGE_PAGE ((size_t) 2 << 20)

/* The buffers that exist: a tensor keeps a pointer to its buffer, and
   after tsr_buffer_free (a graph allocator freed, say) that pointer
   dangles; computing the tensor, or handing its graph to another
   allocator that takes it as placed, would read and write freed
   memory.  The core asks tsri_buffer_live before it trusts one.  An
   open-addressing set of pointers (no deletion marks: removal
   re-inserts the run after the slot), under a lock: buffers come and
   go rarely, lookups are a hash and a probe or two.  */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
/* Each entry also says whether a graph allocator made the buffer for
   the results of graphs (tsri_buffer_set_scratch).  */
struct live_entry
{
  const tsr_buffer *b;
  bool scratch;
};
static struct live_entry *live;
static size_t live_cap, live_n;

/* The slot holding B, or the empty slot that ends its run.  */
static size_t
live_find (const tsr_buffer *b)
{
  size_t i = tsri_hash_ptr (b, live_cap);
  while (live[i].b && live[i].b != b)
    i = (i + 1) & (live_cap - 1);
  return i;
}

static void
live_put (struct live_entry e)
{
  size_t i = tsri_hash_ptr (e.b, live_cap);
  while (live[i].b)
    i = (i + 1) & (live_cap - 1);
  live[i] = e;
}

static bool
live_add (const tsr_buffer *b)
{
  bool ok = true;
  pthread_mutex_lock (&live_lock);
  if (2 * (live_n + 1) > live_cap)
    {
      size_t cap = live_cap ? 2 * live_cap : 64;
      struct live_entry *old = live, *t = calloc (cap, sizeof *t);
      size_t old_cap = live_cap;
      if (!t)
        ok = false;
      else
        {
          live = t;
          live_cap = cap;
          for (size_t i = 0; i < old_cap; i++)
            if (old[i].b)
              live_put (old[i]);
          free (old);
        }
    }
  if (ok)
    {
      live_put ((struct live_entry) { b, false });
      live_n++;
    }
  pthread_mutex_unlock (&live_lock);
  return ok;
}

static void
live_remove (const tsr_buffer *b)
{
  pthread_mutex_lock (&live_lock);
  if (live_cap)
    {
      size_t i = live_find (b);
      if (live[i].b)
        {
          live[i].b = NULL;
          live_n--;
          /* Re-insert the rest of the run, which may have probed past
             the freed slot.  */
          for (size_t j = (i + 1) & (live_cap - 1); live[j].b;
               j = (j + 1) & (live_cap - 1))
            {
              struct live_entry m = live[j];
              live[j].b = NULL;
              live_put (m);
            }
        }
    }
  pthread_mutex_unlock (&live_lock);
}

bool
tsri_buffer_live (const tsr_buffer *b)
{
  bool found = false;
  pthread_mutex_lock (&live_lock);
  if (live_cap)
    found = live[live_find (b)].b == b;
  pthread_mutex_unlock (&live_lock);
  return found;
}

void
tsri_buffer_set_scratch (const tsr_buffer *b)
{
  pthread_mutex_lock (&live_lock);
  if (live_cap && live[live_find (b)].b == b)
    live[live_find (b)].scratch = true;
  pthread_mutex_unlock (&live_lock);
}

bool
tsri_buffer_scratch (const tsr_buffer *b)
{
  bool scratch = false;
  pthread_mutex_lock (&live_lock);
  if (live_cap && live[live_find (b)].b == b)
    scratch = live[live_find (b)].scratch;
  pthread_mutex_unlock (&live_lock);
  return scratch;
}

/* Generic calls.  */

const char *
tsr_buffer_type_name (tsr_buffer_type *buft)
{
  return buft ? buft->iface.get_name (buft) : "(none)";
}

tsr_buffer *
tsr_buffer_type_alloc (tsr_buffer_type *buft, size_t size)
{
  if (!buft)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "buffer alloc: NULL buffer type");
      return NULL;
    }
  return buft->iface.alloc_buffer (buft, size);
}

size_t
tsr_buffer_type_alignment (tsr_buffer_type *buft)
{
  return buft->iface.get_alignment (buft);
}

size_t
tsr_buffer_type_max_size (tsr_buffer_type *buft)
{
  return buft->iface.get_max_size ? buft->iface.get_max_size (buft)
                                  : SIZE_MAX;
}

size_t
tsr_buffer_type_alloc_size (tsr_buffer_type *buft, const tsr_tensor *t)
{
  return buft->iface.get_alloc_size ? buft->iface.get_alloc_size (buft, t)
                                    : tsr_nbytes (t);
}

bool
tsr_buffer_type_is_host (tsr_buffer_type *buft)
{
  return buft && buft->iface.is_host && buft->iface.is_host (buft);
}

tsr_device *
tsr_buffer_type_device (tsr_buffer_type *buft)
{
  return buft ? buft->device : NULL;
}

tsr_device *
tsr_buffer_type_memory_device (tsr_buffer_type *buft)
{
  if (!buft)
    return NULL;
  return tsr_buffer_type_is_host (buft) ? tsr_device_by_type (TSR_DEVICE_CPU)
                                        : buft->device;
}

tsr_buffer *
tsr_buffer_new (tsr_buffer_type *buft, struct tsr_buffer_iface iface,
                void *context, size_t size)
{
  const char *miss = !iface.get_base ? "get_base"
    : !iface.set_tensor ? "set_tensor" : !iface.get_tensor ? "get_tensor"
    : !iface.clear ? "clear" : NULL;
  if (miss)
    {
      tsr_set_error (TSR_ERR_MODULE, "buffer of %s: its interface lacks %s "
                     "(required by module ABI %d)",
                     buft ? tsr_buffer_type_name (buft) : "(no type)", miss,
                     TSR_MODULE_ABI_VERSION);
      return NULL;
    }
  tsr_buffer *buf = calloc (1, sizeof *buf);
  if (!buf)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "buffer: out of memory");
      return NULL;
    }
  if (!live_add (buf))
    {
      free (buf);
      tsr_set_error (TSR_ERR_NO_MEMORY, "buffer: out of memory");
      return NULL;
    }
  buf->iface = iface;
  buf->buft = buft;
  buf->context = context;
  buf->size = size;
  tsri_registry_hold (buft ? buft->device : NULL, 1);
  return buf;
}

void
tsr_buffer_free (tsr_buffer *buf)
{
  if (!buf)
    return;
  tsr_device *dev = buf->buft ? buf->buft->device : NULL;
  live_remove (buf);
  if (buf->iface.free_buffer)
    buf->iface.free_buffer (buf);
  free (buf);
  tsri_registry_hold (dev, -1);
}

size_t
tsr_buffer_size (tsr_buffer *buf)
{
  return buf ? buf->size : 0;
}

void *
tsr_buffer_base (tsr_buffer *buf)
{
  return buf ? buf->iface.get_base (buf) : NULL;
}

bool
tsr_buffer_is_host (tsr_buffer *buf)
{
  return buf && tsr_buffer_type_is_host (buf->buft);
}

void
tsr_buffer_clear (tsr_buffer *buf, unsigned char value)
{
  if (buf && buf->size)
    buf->iface.clear (buf, value);
}

tsr_buffer_type *
tsr_buffer_get_type (tsr_buffer *buf)
{
  return buf ? buf->buft : NULL;
}

int
tsr_buffer_place_tensor (tsr_buffer *buf, tsr_tensor *t, size_t offset)
{
  if (!buf || !t)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "place tensor: NULL "
                          "argument");
  if (t->view_src)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "place tensor: '%s' is a "
                          "view", t->name);
  size_t size = tsr_buffer_type_alloc_size (buf->buft, t);
  if (offset > buf->size || size > buf->size - offset)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "place tensor: '%s' (%zu "
                          "bytes at %zu) does not fit in a buffer of %zu "
                          "bytes", t->name, size, offset, buf->size);
  t->buffer = buf;
  t->data = (char *) tsr_buffer_base (buf) + offset;
  if (buf->iface.init_tensor)
    return buf->iface.init_tensor (buf, t);
  return TSR_OK;
}

int
tsri_tensor_init_view (tsr_tensor *t)
{
  if (!t->view_src || !t->view_src->data)
    return tsr_set_error (TSR_ERR_STATE, "view '%s': the tensor it views "
                          "has no memory yet", tsr_tensor_label (t));
  t->buffer = t->view_src->buffer;
  t->data = (char *) t->view_src->data + t->view_offs;
  if (t->buffer && t->buffer->iface.init_tensor)
    return t->buffer->iface.init_tensor (t->buffer, t);
  return TSR_OK;
}

/* The host buffer type.  */

static const char *
host_buft_name (tsr_buffer_type *buft)
{
  return "host";
}

static void
host_free (tsr_buffer *buf)
{
  free (buf->context);
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
  memcpy ((char *) t->data + offset, data, size);
  return TSR_OK;
}

static int
host_get (tsr_buffer *buf, const tsr_tensor *t, void *data, size_t offset,
          size_t size)
{
  memcpy (data, (const char *) t->data + offset, size);
  return TSR_OK;
}

static void
host_clear (tsr_buffer *buf, uint8_t value)
{
  memset (buf->iface.get_base (buf), value, buf->size);
}

static const struct tsr_buffer_iface host_buffer_iface = {
  .free_buffer = host_free,
  .get_base = host_base,
  .set_tensor = host_set,
  .get_tensor = host_get,
  .clear = host_clear,
};

/* SIZE bytes aligned for HOST_ALIGN, huge pages for large sizes.  */
static void *
host_memory (size_t size)
{
  void *p = NULL;
#if HAVE_DECL_MADV_HUGEPAGE
  if (size >= HUGE_PAGE && size <= SIZE_MAX - HUGE_PAGE)
    {
      size_t whole = (size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
      if (posix_memalign (&p, HUGE_PAGE, whole) != 0)
        return NULL;
      madvise (p, whole, MADV_HUGEPAGE);  /* a hint: failure is harmless */
      return p;
    }
#endif
  return posix_memalign (&p, HOST_ALIGN, size ? size : 1) == 0 ? p : NULL;
}

static tsr_buffer *
host_alloc (tsr_buffer_type *buft, size_t size)
{
  void *p = host_memory (size);
  if (!p)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "host buffer: cannot allocate %zu "
                     "bytes", size);
      return NULL;
    }
  tsr_buffer *buf = tsr_buffer_new (buft, host_buffer_iface, p, size);
  if (!buf)
    free (p);
  return buf;
}

static size_t
host_alignment (tsr_buffer_type *buft)
{
  return HOST_ALIGN;
}

static bool
host_is_host (tsr_buffer_type *buft)
{
  return true;
}

static struct tsr_buffer_type host_buft = {
  .iface = {
    .get_name = host_buft_name,
    .alloc_buffer = host_alloc,
    .get_alignment = host_alignment,
    .is_host = host_is_host,
  },
};

tsr_buffer_type *
tsr_host_buffer_type (void)
{
  return &host_buft;
}

/* Wraps user memory: nothing to free.  */
static void *
user_base (tsr_buffer *buf)
{
  return buf->context;
}

tsr_buffer *
tsr_buffer_from_host_ptr (void *ptr, size_t size)
{
  struct tsr_buffer_iface iface = host_buffer_iface;
  iface.free_buffer = NULL;
  iface.get_base = user_base;
  if (!ptr)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "buffer from host pointer: NULL");
      return NULL;
    }
  return tsr_buffer_new (&host_buft, iface, ptr, size);
}
