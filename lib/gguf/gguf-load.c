/* gguf-load.c - tensors of a GGUF file in a context and a buffer.
 *
 * Owns: creating tensors that match a file's tensor infos, and giving
 * them the file's data, either by placing them in a host buffer made of
 * the mapping itself (zero copy) or by copying each tensor once from
 * the mapping into a buffer of any type.  */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "gguf-impl.h"

/* Tensors placed in the mapping must be at least this aligned; GGUF's
   default alignment gives it.  */
#define MAP_ALIGN 32

static const char *
shape_str (tsr_type type, const int64_t ne[TSR_MAX_DIMS], char *buf,
           size_t n)
{
  snprintf (buf, n, "%s [%lld, %lld, %lld, %lld]", tsr_type_name (type),
            (long long) ne[0], (long long) ne[1], (long long) ne[2],
            (long long) ne[3]);
  return buf;
}

static int
check_match (const tsr_tensor *t, const struct tsr_gguf_tensor_info *info)
{
  if (t->type == info->type && memcmp (t->ne, info->ne, sizeof t->ne) == 0)
    return TSR_OK;
  char a[96], b[96];
  return tsr_set_error (TSR_ERR_SHAPE, "gguf: tensor '%s' is %s in the "
                        "context but %s in the file", info->name,
                        shape_str (t->type, t->ne, a, sizeof a),
                        shape_str (info->type, info->ne, b, sizeof b));
}

/* The tensors a context already has, by name: one pass, so that
   matching N file tensors against them stays linear.  */
struct ctx_names
{
  tsr_tensor **t;
  int64_t n;
  struct tsri_name_index ix;
};

static void
ctx_name (const void *owner, int64_t i, const char **s, size_t *len)
{
  *s = ((const struct ctx_names *) owner)->t[i]->name;
  *len = strlen (*s);
}

static int
ctx_names_init (struct ctx_names *cn, tsr_context *ctx)
{
  *cn = (struct ctx_names) { 0 };
  int64_t n = 0;
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); t;
       t = tsr_context_next_tensor (ctx, t))
    n++;
  if (n == 0)
    return TSR_OK;
  if (!(cn->t = malloc ((size_t) n * sizeof *cn->t)))
    return tsr_set_error (TSR_ERR_NO_MEMORY, "gguf: out of memory");
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); t;
       t = tsr_context_next_tensor (ctx, t))
    {
      cn->t[cn->n] = t;
      /* The first of equal names wins, as in tsr_context_get_tensor.  */
      if (tsri_name_index_find (&cn->ix, t->name, strlen (t->name), ctx_name,
                                cn) < 0
          && tsri_name_index_add (&cn->ix, cn->n, ctx_name, cn) != TSR_OK)
        return TSR_ERR_NO_MEMORY;
      cn->n++;
    }
  return TSR_OK;
}

int
tsr_gguf_new_tensors (const tsr_gguf *g, tsr_context *ctx)
{
  if (!g || !ctx)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf new tensors: NULL "
                          "argument");
  struct ctx_names cn;
  int st = ctx_names_init (&cn, ctx);
  for (int64_t i = 0; st == TSR_OK && i < g->n_tensors; i++)
    {
      const struct tsr_gguf_tensor_info *info = &g->tensors[i].info;
      int64_t k = tsri_name_index_find (&cn.ix, info->name,
                                        strlen (info->name), ctx_name, &cn);
      if (k >= 0)
        {
          st = check_match (cn.t[k], info);
          continue;
        }
      tsr_tensor *t = tsr_new_tensor (ctx, info->type, TSR_MAX_DIMS,
                                      info->ne);
      if (!t)
        {
          st = tsr_last_status ();
          break;
        }
      tsr_set_name (t, info->name);
      /* An allocating context holds the data at once.  */
      if (t->data && info->size)
        memcpy (t->data, tsr_gguf_tensor_data (g, i), info->size);
    }
  free (cn.t);
  tsri_name_index_free (&cn.ix);
  return st;
}

/* The zero-copy buffer: the data section of a mapped file.  */

struct map_buffer
{
  struct tsri_gguf_map *map;
  unsigned char *base;
};

static void
map_free (tsr_buffer *buf)
{
  struct map_buffer *mb = buf->context;
  tsri_gguf_map_unref (mb->map);
  free (mb);
}

static void *
map_base (tsr_buffer *buf)
{
  return ((struct map_buffer *) buf->context)->base;
}

static tsr_buffer *
map_buffer_new (tsr_gguf *g)
{
  struct map_buffer *mb = malloc (sizeof *mb);
  if (!mb)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "gguf load: out of memory");
      return NULL;
    }
  mb->map = g->map;
  mb->base = (unsigned char *) g->map->addr + g->data_offset;
  /* A host-pointer buffer (its set, get and clear work on tensor data
     and the base), which also keeps the mapping.  */
  tsr_buffer *buf = tsr_buffer_from_host_ptr (mb->base, (size_t) (g->size
                                                        - g->data_offset));
  if (!buf)
    {
      free (mb);
      return NULL;
    }
  buf->iface.free_buffer = map_free;
  buf->iface.get_base = map_base;
  buf->context = mb;
  atomic_fetch_add (&g->map->refs, 1);
  return buf;
}

/* Loading.  */

struct wanted
{
  tsr_tensor *t;
  int64_t i;                    /* in the file */
};

/* The tensors of CTX to load, checked against the file; *N of them.  */
static struct wanted *
collect (tsr_gguf *g, tsr_context *ctx, int64_t *n)
{
  int64_t count = 0;
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); t;
       t = tsr_context_next_tensor (ctx, t))
    count++;
  struct wanted *list = malloc ((size_t) count * sizeof *list + 1);
  if (!list)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "gguf load: out of memory");
      return NULL;
    }
  *n = 0;
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); t;
       t = tsr_context_next_tensor (ctx, t))
    {
      int64_t i = t->data || t->view_src ? -1
                                         : tsr_gguf_find_tensor (g, t->name);
      if (i < 0)
        continue;
      if (check_match (t, &g->tensors[i].info) != TSR_OK)
        {
          free (list);
          return NULL;
        }
      list[(*n)++] = (struct wanted) { t, i };
    }
  if (*n == 0)
    {
      free (list);
      tsr_set_error (TSR_ERR_INVALID_ARG, "gguf load: no tensor of the "
                     "context without data is in the file");
      return NULL;
    }
  return list;
}

static bool
can_map (const tsr_gguf *g, tsr_buffer_type *buft, unsigned flags,
         const struct wanted *list, int64_t n)
{
  if (!g->map || (flags & TSR_GGUF_LOAD_COPY)
      || (buft && !tsr_buffer_type_is_host (buft)))
    return false;
  for (int64_t k = 0; k < n; k++)
    if ((g->data_offset + g->tensors[list[k].i].info.offset) % MAP_ALIGN)
      return false;
  return true;
}

static tsr_buffer *
load_mapped (tsr_gguf *g, const struct wanted *list, int64_t n)
{
  tsr_buffer *buf = map_buffer_new (g);
  for (int64_t k = 0; buf && k < n; k++)
    if (tsr_buffer_place_tensor (buf, list[k].t,
                                 (size_t) g->tensors[list[k].i].info.offset)
        != TSR_OK)
      {
        tsr_buffer_free (buf);
        buf = NULL;
      }
  return buf;
}

static tsr_buffer *
load_copied (tsr_gguf *g, tsr_buffer_type *buft, const struct wanted *list,
             int64_t n)
{
  size_t align = tsr_buffer_type_alignment (buft), total = 0;
  for (int64_t k = 0; k < n; k++)
    {
      size_t size = tsr_buffer_type_alloc_size (buft, list[k].t);
      total = (total + align - 1) / align * align;
      if (size > SIZE_MAX - total - align)
        {
          tsr_set_error (TSR_ERR_NO_MEMORY, "gguf load: tensors too large");
          return NULL;
        }
      total += size;
    }
  tsr_buffer *buf = tsr_buffer_type_alloc (buft, total);
  size_t off = 0;
  for (int64_t k = 0; buf && k < n; k++)
    {
      tsr_tensor *t = list[k].t;
      const struct tsr_gguf_tensor_info *info = &g->tensors[list[k].i].info;
      off = (off + align - 1) / align * align;
      if (tsr_buffer_place_tensor (buf, t, off) != TSR_OK
          || tsr_tensor_set (t, tsr_gguf_tensor_data (g, list[k].i), 0,
                             info->size) != TSR_OK)
        {
          tsr_buffer_free (buf);
          buf = NULL;
        }
      off += tsr_buffer_type_alloc_size (buft, t);
    }
  return buf;
}

tsr_buffer *
tsr_gguf_load_tensors (tsr_gguf *g, tsr_context *ctx, tsr_buffer_type *buft,
                       unsigned flags)
{
  if (!g || !ctx)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "gguf load: NULL argument");
      return NULL;
    }
  int64_t n;
  struct wanted *list = collect (g, ctx, &n);
  if (!list)
    return NULL;
  tsr_buffer *buf;
  if (can_map (g, buft, flags, list, n))
    buf = load_mapped (g, list, n);
  else
    buf = load_copied (g, buft ? buft : tsr_host_buffer_type (), list, n);
  if (!buf)
    for (int64_t k = 0; k < n; k++)
      list[k].t->data = NULL, list[k].t->buffer = NULL;
  free (list);
  return buf;
}
