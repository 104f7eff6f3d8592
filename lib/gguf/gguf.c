/* gguf.c - GGUF files: opening, and the reader's queries and getters.
 *
 * Owns: mapping files, the string arena and name index of a parsed
 * file, the value and tensor type tables, and answering questions
 * about a file that gguf-parse.c validated.  Never reads a byte the
 * parser did not check.  Writing is gguf-write.c, loading tensors into
 * buffers gguf-load.c.  */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf-impl.h"

/* Types.  */

static const struct
{
  const char *name;
  size_t size;
} value_types[TSR_GGUF_TYPE_COUNT] = {
  [TSR_GGUF_UINT8] = { "u8", 1 },     [TSR_GGUF_INT8] = { "i8", 1 },
  [TSR_GGUF_UINT16] = { "u16", 2 },   [TSR_GGUF_INT16] = { "i16", 2 },
  [TSR_GGUF_UINT32] = { "u32", 4 },   [TSR_GGUF_INT32] = { "i32", 4 },
  [TSR_GGUF_FLOAT32] = { "f32", 4 },  [TSR_GGUF_BOOL] = { "bool", 1 },
  [TSR_GGUF_STRING] = { "string", 0 }, [TSR_GGUF_ARRAY] = { "array", 0 },
  [TSR_GGUF_UINT64] = { "u64", 8 },   [TSR_GGUF_INT64] = { "i64", 8 },
  [TSR_GGUF_FLOAT64] = { "f64", 8 },
};

const char *
tsr_gguf_type_name (tsr_gguf_type type)
{
  return (unsigned) type < TSR_GGUF_TYPE_COUNT ? value_types[type].name
                                               : "invalid";
}

size_t
tsr_gguf_type_size (tsr_gguf_type type)
{
  return (unsigned) type < TSR_GGUF_TYPE_COUNT ? value_types[type].size : 0;
}

/* Tensor type ids of the file format (ggml's numbering).  Every type
   has one: an entry left out would read as 0, f32's.  */
static const uint32_t file_types[TSR_TYPE_COUNT] = {
  [TSR_TYPE_F32] = 0,     [TSR_TYPE_F16] = 1,     [TSR_TYPE_Q4_0] = 2,
  [TSR_TYPE_Q4_1] = 3,    [TSR_TYPE_Q5_0] = 6,    [TSR_TYPE_Q5_1] = 7,
  [TSR_TYPE_Q8_0] = 8,    [TSR_TYPE_Q2_K] = 10,   [TSR_TYPE_Q3_K] = 11,
  [TSR_TYPE_Q4_K] = 12,   [TSR_TYPE_Q5_K] = 13,   [TSR_TYPE_Q6_K] = 14,
  [TSR_TYPE_Q8_K] = 15,   [TSR_TYPE_IQ4_NL] = 20, [TSR_TYPE_IQ4_XS] = 23,
  [TSR_TYPE_I32] = 26,    [TSR_TYPE_BF16] = 30,   [TSR_TYPE_MXFP4] = 39,
};

uint32_t
tsr_gguf_file_type (tsr_type type)
{
  return tsr_type_valid (type) ? file_types[type] : UINT32_MAX;
}

tsr_type
tsr_gguf_tensor_type (uint32_t file_type)
{
  for (int t = 0; t < TSR_TYPE_COUNT; t++)
    if (file_types[t] == file_type)
      return (tsr_type) t;
  return TSR_TYPE_COUNT;
}

/* Little-endian reads, whatever the host.  */

uint16_t
tsri_rd16 (const unsigned char *p)
{
  return (uint16_t) (p[0] | p[1] << 8);
}

uint32_t
tsri_rd32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
         | (uint32_t) p[3] << 24;
}

uint64_t
tsri_rd64 (const unsigned char *p)
{
  return (uint64_t) tsri_rd32 (p) | (uint64_t) tsri_rd32 (p + 4) << 32;
}

/* The arena: NUL-terminated copies of names and strings, freed with
   the file.  */

struct tsri_gguf_arena
{
  struct tsri_gguf_arena *next;
  size_t used, cap;
  max_align_t data[];
};

#define ARENA_CHUNK 65536

void *
tsri_gguf_arena_alloc (tsr_gguf *g, uint64_t size)
{
  size = (size + 15) & ~(uint64_t) 15;
  struct tsri_gguf_arena *a = g->arena;
  if (!a || a->cap - a->used < size)
    {
      uint64_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;
      if (cap > SIZE_MAX - sizeof *a
          || !(a = malloc (sizeof *a + (size_t) cap)))
        {
          tsr_set_error (TSR_ERR_NO_MEMORY, "gguf: out of memory");
          return NULL;
        }
      a->used = 0;
      a->cap = (size_t) cap;
      /* A big block goes behind the current chunk so that the current
         one keeps filling.  */
      if (g->arena && size > ARENA_CHUNK)
        {
          a->next = g->arena->next;
          g->arena->next = a;
        }
      else
        {
          a->next = g->arena;
          g->arena = a;
        }
    }
  void *p = (char *) a->data + a->used;
  a->used += (size_t) size;
  return p;
}

char *
tsri_gguf_strdup (tsr_gguf *g, const unsigned char *s, uint64_t len)
{
  char *p = tsri_gguf_arena_alloc (g, len + 1);
  if (p)
    {
      memcpy (p, s, (size_t) len);
      p[len] = '\0';
    }
  return p;
}

void
tsri_gguf_kv_name (const void *owner, int64_t i, const char **s, size_t *len)
{
  const struct tsri_gguf_str *k = &((const tsr_gguf *) owner)->kv[i].key;
  *s = k->s;
  *len = (size_t) k->len;
}

void
tsri_gguf_tensor_name (const void *owner, int64_t i, const char **s,
                       size_t *len)
{
  const struct tsri_gguf_str *n
    = &((const tsr_gguf *) owner)->tensors[i].name;
  *s = n->s;
  *len = (size_t) n->len;
}

/* Opening and closing.  */

static void
set_open_error (struct tsr_gguf_error *err, int status, const char *fmt,
                ...)
{
  char msg[sizeof err->message];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  tsr_set_error (status, "%s", msg);
  if (err)
    {
      err->status = (tsr_status) status;
      err->offset = 0;
      snprintf (err->message, sizeof err->message, "%s", tsr_last_error ());
    }
}

static tsr_gguf *
parse_new (const void *data, size_t size, struct tsri_gguf_map *map,
           struct tsr_gguf_error *err)
{
  tsr_gguf *g = calloc (1, sizeof *g);
  if (!g)
    {
      set_open_error (err, TSR_ERR_NO_MEMORY, "gguf: out of memory");
      if (map)
        tsri_gguf_map_unref (map);
      return NULL;
    }
  g->data = data;
  g->size = size;
  g->map = map;
  if (tsri_gguf_parse (g, err) != TSR_OK)
    {
      tsr_gguf_close (g);
      return NULL;
    }
  if (err)
    {
      err->status = TSR_OK;
      err->offset = 0;
      err->message[0] = '\0';
    }
  return g;
}

tsr_gguf *
tsr_gguf_from_memory (const void *data, size_t size,
                      struct tsr_gguf_error *err)
{
  static const unsigned char empty[1];
  if (!data && size)
    {
      set_open_error (err, TSR_ERR_INVALID_ARG, "gguf: NULL data");
      return NULL;
    }
  return parse_new (data ? data : empty, size, NULL, err);
}

void
tsri_gguf_map_unref (struct tsri_gguf_map *map)
{
  if (map && atomic_fetch_sub (&map->refs, 1) == 1)
    {
      munmap (map->addr, map->len);
      free (map);
    }
}

tsr_gguf *
tsr_gguf_open (const char *path, struct tsr_gguf_error *err)
{
  if (!path)
    {
      set_open_error (err, TSR_ERR_INVALID_ARG, "gguf: NULL path");
      return NULL;
    }
  struct stat st;
  char why[300];
  int fd = tsri_open_regular (path, &st, why, sizeof why);
  if (fd < 0)
    {
      int e = errno;
      set_open_error (err, e == ENOENT ? TSR_ERR_NOT_FOUND
                                       : TSR_ERR_INVALID_ARG,
                      "cannot open '%s': %s", path, why);
      return NULL;
    }
  if (st.st_size == 0)
    {
      close (fd);
      return tsr_gguf_from_memory (NULL, 0, err);
    }
  if ((uint64_t) st.st_size > SIZE_MAX)
    {
      close (fd);
      set_open_error (err, TSR_ERR_INVALID_ARG, "cannot map '%s': %s", path,
                      strerror (EFBIG));
      return NULL;
    }
  /* Private and writable: tensors placed in the mapping may be written
     by their user without ever changing the file.  */
  void *addr = mmap (NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE, fd, 0);
  int e = errno;
  close (fd);
  if (addr == MAP_FAILED)
    {
      set_open_error (err, TSR_ERR_INVALID_ARG, "cannot map '%s': %s", path,
                      strerror (e));
      return NULL;
    }
#if HAVE_DECL_MADV_HUGEPAGE
  /* A hint (its failure is harmless): where the file's pages are not
     cached yet, Linux then reads them in as 2 MiB folios and maps them
     with 2 MiB pages.  Measured (q4_0 Llama-3.2-1B shape, file dropped
     from the cache first): 20% of the mapping in 2 MiB pages and 64%
     of the read roof without, 98% and 87-93% with.  Pages cached
     small (a file just written in small writes) stay small.  */
  madvise (addr, (size_t) st.st_size, MADV_HUGEPAGE);
#endif
  struct tsri_gguf_map *map = malloc (sizeof *map);
  if (!map)
    {
      munmap (addr, (size_t) st.st_size);
      set_open_error (err, TSR_ERR_NO_MEMORY, "cannot map '%s': out of "
                      "memory", path);
      return NULL;
    }
  map->addr = addr;
  map->len = (size_t) st.st_size;
  atomic_init (&map->refs, 1);
  return parse_new (addr, map->len, map, err);
}

void
tsr_gguf_close (tsr_gguf *g)
{
  if (!g)
    return;
  for (struct tsri_gguf_arena *a = g->arena, *next; a; a = next)
    {
      next = a->next;
      free (a);
    }
  free (g->kv);
  free (g->tensors);
  tsri_name_index_free (&g->kv_index);
  tsri_name_index_free (&g->tensor_index);
  tsri_gguf_map_unref (g->map);
  free (g);
}

/* Queries.  */

uint32_t
tsr_gguf_version (const tsr_gguf *g)
{
  return g ? g->version : 0;
}

size_t
tsr_gguf_alignment (const tsr_gguf *g)
{
  return g ? g->alignment : 0;
}

uint64_t
tsr_gguf_size (const tsr_gguf *g)
{
  return g ? g->size : 0;
}

uint64_t
tsr_gguf_data_offset (const tsr_gguf *g)
{
  return g ? g->data_offset : 0;
}

int64_t
tsr_gguf_n_kv (const tsr_gguf *g)
{
  return g ? g->n_kv : 0;
}

int64_t
tsr_gguf_find_key (const tsr_gguf *g, const char *key)
{
  if (!g || !key)
    return -1;
  return tsri_name_index_find (&g->kv_index, key, strlen (key),
                               tsri_gguf_kv_name, g);
}

const char *
tsr_gguf_kv_key (const tsr_gguf *g, int64_t i)
{
  return g && i >= 0 && i < g->n_kv ? g->kv[i].key.s : NULL;
}

tsr_gguf_type
tsr_gguf_kv_type (const tsr_gguf *g, int64_t i)
{
  return g && i >= 0 && i < g->n_kv ? g->kv[i].type : TSR_GGUF_TYPE_COUNT;
}

/* The KV of KEY if it has TYPE (and, for arrays, ELEM_TYPE unless that
   is TSR_GGUF_TYPE_COUNT); NULL with an error otherwise.  */
static const struct tsri_gguf_kv *
get_kv (const tsr_gguf *g, const char *key, tsr_gguf_type type,
        tsr_gguf_type elem_type, const void *out)
{
  if (!g || !key || !out)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "gguf get: NULL argument");
      return NULL;
    }
  int64_t i = tsr_gguf_find_key (g, key);
  if (i < 0)
    {
      tsr_set_error (TSR_ERR_NOT_FOUND, "gguf: no key '%s'", key);
      return NULL;
    }
  const struct tsri_gguf_kv *kv = &g->kv[i];
  if (kv->type != type)
    {
      tsr_set_error (TSR_ERR_TYPE, "gguf: key '%s' is a%s %s, not a%s %s",
                     key, kv->type == TSR_GGUF_ARRAY ? "n" : "",
                     tsr_gguf_type_name (kv->type),
                     type == TSR_GGUF_ARRAY ? "n" : "",
                     tsr_gguf_type_name (type));
      return NULL;
    }
  if (type == TSR_GGUF_ARRAY && elem_type != TSR_GGUF_TYPE_COUNT
      && kv->elem_type != elem_type)
    {
      tsr_set_error (TSR_ERR_TYPE, "gguf: key '%s' is an array of %s, "
                     "not of %s", key, tsr_gguf_type_name (kv->elem_type),
                     tsr_gguf_type_name (elem_type));
      return NULL;
    }
  return kv;
}

/* Decode N values of fixed-size TYPE from SRC into host values.  */
static void
decode (tsr_gguf_type type, const unsigned char *src, void *dst, uint64_t n)
{
  size_t size = tsr_gguf_type_size (type);
  unsigned char *d = dst;
  for (uint64_t i = 0; i < n; i++, src += size, d += size)
    switch (size)
      {
      case 1: *d = *src; break;
      case 2: { uint16_t v = tsri_rd16 (src); memcpy (d, &v, 2); break; }
      case 4: { uint32_t v = tsri_rd32 (src); memcpy (d, &v, 4); break; }
      default: { uint64_t v = tsri_rd64 (src); memcpy (d, &v, 8); break; }
      }
}

#define DEFINE_GETTER(suffix, ctype, tag)                                  \
  int                                                                     \
  tsr_gguf_get_##suffix (const tsr_gguf *g, const char *key, ctype *v)    \
  {                                                                       \
    const struct tsri_gguf_kv *kv                                         \
      = get_kv (g, key, tag, TSR_GGUF_TYPE_COUNT, v);                     \
    if (!kv)                                                              \
      return tsr_last_status ();                                          \
    decode (tag, kv->value, v, 1);                                        \
    return TSR_OK;                                                        \
  }

DEFINE_GETTER (u8, uint8_t, TSR_GGUF_UINT8)
DEFINE_GETTER (i8, int8_t, TSR_GGUF_INT8)
DEFINE_GETTER (u16, uint16_t, TSR_GGUF_UINT16)
DEFINE_GETTER (i16, int16_t, TSR_GGUF_INT16)
DEFINE_GETTER (u32, uint32_t, TSR_GGUF_UINT32)
DEFINE_GETTER (i32, int32_t, TSR_GGUF_INT32)
DEFINE_GETTER (u64, uint64_t, TSR_GGUF_UINT64)
DEFINE_GETTER (i64, int64_t, TSR_GGUF_INT64)
DEFINE_GETTER (f32, float, TSR_GGUF_FLOAT32)
DEFINE_GETTER (f64, double, TSR_GGUF_FLOAT64)

int
tsr_gguf_get_bool (const tsr_gguf *g, const char *key, bool *v)
{
  const struct tsri_gguf_kv *kv
    = get_kv (g, key, TSR_GGUF_BOOL, TSR_GGUF_TYPE_COUNT, v);
  if (!kv)
    return tsr_last_status ();
  *v = kv->value[0] != 0;
  return TSR_OK;
}

int
tsr_gguf_get_str (const tsr_gguf *g, const char *key, const char **s,
                  size_t *len)
{
  const struct tsri_gguf_kv *kv
    = get_kv (g, key, TSR_GGUF_STRING, TSR_GGUF_TYPE_COUNT, s);
  if (!kv)
    return tsr_last_status ();
  *s = kv->strs[0].s;
  if (len)
    *len = (size_t) kv->strs[0].len;
  return TSR_OK;
}

int
tsr_gguf_get_array_info (const tsr_gguf *g, const char *key,
                         tsr_gguf_type *elem_type, uint64_t *n)
{
  const struct tsri_gguf_kv *kv
    = get_kv (g, key, TSR_GGUF_ARRAY, TSR_GGUF_TYPE_COUNT, n);
  if (!kv)
    return tsr_last_status ();
  if (elem_type)
    *elem_type = kv->elem_type;
  *n = kv->n;
  return TSR_OK;
}

static int
check_range (const struct tsri_gguf_kv *kv, const char *key, uint64_t first,
             uint64_t count)
{
  if (first > kv->n || count > kv->n - first)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf: elements [%llu, "
                          "%llu) are outside array '%s' of %llu",
                          (unsigned long long) first,
                          (unsigned long long) (first + count), key,
                          (unsigned long long) kv->n);
  return TSR_OK;
}

int
tsr_gguf_get_array_data (const tsr_gguf *g, const char *key,
                         tsr_gguf_type elem_type, uint64_t first,
                         uint64_t count, void *dst)
{
  if (tsr_gguf_type_size (elem_type) == 0)
    return tsr_set_error (TSR_ERR_TYPE, "gguf: array data of %s: only "
                          "fixed-size element types are copied",
                          tsr_gguf_type_name (elem_type));
  const struct tsri_gguf_kv *kv
    = get_kv (g, key, TSR_GGUF_ARRAY, elem_type, count ? dst : "");
  if (!kv)
    return tsr_last_status ();
  int st = check_range (kv, key, first, count);
  if (st == TSR_OK)
    decode (elem_type, kv->elems + first * tsr_gguf_type_size (elem_type),
            dst, count);
  return st;
}

int
tsr_gguf_get_array_str (const tsr_gguf *g, const char *key, uint64_t i,
                        const char **s, size_t *len)
{
  const struct tsri_gguf_kv *kv
    = get_kv (g, key, TSR_GGUF_ARRAY, TSR_GGUF_STRING, s);
  if (!kv)
    return tsr_last_status ();
  int st = check_range (kv, key, i, 1);
  if (st != TSR_OK)
    return st;
  *s = kv->strs[i].s;
  if (len)
    *len = (size_t) kv->strs[i].len;
  return TSR_OK;
}

int64_t
tsr_gguf_n_tensors (const tsr_gguf *g)
{
  return g ? g->n_tensors : 0;
}

int64_t
tsr_gguf_find_tensor (const tsr_gguf *g, const char *name)
{
  if (!g || !name)
    return -1;
  return tsri_name_index_find (&g->tensor_index, name, strlen (name),
                               tsri_gguf_tensor_name, g);
}

int
tsr_gguf_get_tensor_info (const tsr_gguf *g, int64_t i,
                          struct tsr_gguf_tensor_info *info)
{
  if (!g || !info || i < 0 || i >= g->n_tensors)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf: no tensor %lld",
                          (long long) i);
  *info = g->tensors[i].info;
  return TSR_OK;
}

const void *
tsr_gguf_tensor_data (const tsr_gguf *g, int64_t i)
{
  if (!g || i < 0 || i >= g->n_tensors)
    return NULL;
  return g->data + g->data_offset + g->tensors[i].info.offset;
}
