/* gguf-write.c - building and writing GGUF files.
 *
 * Owns: the writer's metadata (each value kept encoded exactly as the
 * file stores it), its tensor list, and the byte layout of a written
 * file: header, metadata, tensor infos, zero padding to the alignment,
 * then each tensor's data followed by zero padding to the alignment
 * (padding even after the last tensor, so every tensor's padded size is
 * a multiple of the alignment).
 * Tensor data is read from its buffer at write time, in pieces, so a
 * model is never held in memory twice.  */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf-impl.h"

#define COPY_CHUNK (1u << 20)
#define WRITE_BUFFER ((size_t) 4 << 20)   /* see tsr_gguf_writer_write_file */

struct bytes
{
  unsigned char *p;
  size_t n, cap;
  bool failed;
};

static void
put (struct bytes *b, const void *data, size_t n)
{
  if (b->failed || n == 0)
    return;
  if (b->cap - b->n < n)
    {
      size_t cap = b->cap ? b->cap : 256;
      while (cap - b->n < n && cap <= SIZE_MAX / 2)
        cap *= 2;
      unsigned char *p = cap - b->n >= n ? realloc (b->p, cap) : NULL;
      if (!p)
        {
          b->failed = true;
          return;
        }
      b->p = p;
      b->cap = cap;
    }
  memcpy (b->p + b->n, data, n);
  b->n += n;
}

static void
put_le (struct bytes *b, uint64_t v, size_t size)
{
  unsigned char buf[8];
  for (size_t i = 0; i < size; i++)
    buf[i] = (unsigned char) (v >> (8 * i));
  put (b, buf, size);
}

static void
put_str (struct bytes *b, const char *s, uint64_t len)
{
  put_le (b, len, 8);
  put (b, s, (size_t) len);
}

/* Host values of fixed-size TYPE, as the file stores them.  */
static void
put_values (struct bytes *b, tsr_gguf_type type, const void *data,
            uint64_t n)
{
  size_t size = tsr_gguf_type_size (type);
  const unsigned char *p = data;
  for (uint64_t i = 0; i < n; i++, p += size)
    {
      uint64_t v = 0;
      switch (size)
        {
        case 1: v = *p; break;
        case 2: { uint16_t x; memcpy (&x, p, 2); v = x; break; }
        case 4: { uint32_t x; memcpy (&x, p, 4); v = x; break; }
        default: memcpy (&v, p, 8); break;
        }
      put_le (b, v, size);
    }
}

struct wkv
{
  char *key;
  tsr_gguf_type type;
  struct bytes value;           /* encoded, after the type field */
};

struct wtensor
{
  const tsr_tensor *t;
  char name[TSR_MAX_NAME];
  int n_dims;
  int64_t ne[TSR_MAX_DIMS];
  tsr_type type;
  size_t size;
};

struct tsr_gguf_writer
{
  struct wkv *kv;
  int64_t n_kv, cap_kv;
  struct wtensor *tensors;
  int64_t n_tensors, cap_tensors;
  uint32_t alignment;
  /* Keys and names seen, so that many of them stay linear.  */
  struct tsri_name_index kv_index, tensor_index;
};

static void
wkv_name (const void *owner, int64_t i, const char **s, size_t *len)
{
  *s = ((const tsr_gguf_writer *) owner)->kv[i].key;
  *len = strlen (*s);
}

static void
wtensor_name (const void *owner, int64_t i, const char **s, size_t *len)
{
  *s = ((const tsr_gguf_writer *) owner)->tensors[i].name;
  *len = strlen (*s);
}

tsr_gguf_writer *
tsr_gguf_writer_new (void)
{
  tsr_gguf_writer *w = calloc (1, sizeof *w);
  if (!w)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "gguf writer: out of memory");
      return NULL;
    }
  w->alignment = TSR_GGUF_DEFAULT_ALIGNMENT;
  return w;
}

void
tsr_gguf_writer_free (tsr_gguf_writer *w)
{
  if (!w)
    return;
  for (int64_t i = 0; i < w->n_kv; i++)
    {
      free (w->kv[i].key);
      free (w->kv[i].value.p);
    }
  free (w->kv);
  free (w->tensors);
  tsri_name_index_free (&w->kv_index);
  tsri_name_index_free (&w->tensor_index);
  free (w);
}

int64_t
tsr_gguf_writer_n_kv (const tsr_gguf_writer *w)
{
  return w ? w->n_kv : 0;
}

int64_t
tsr_gguf_writer_n_tensors (const tsr_gguf_writer *w)
{
  return w ? w->n_tensors : 0;
}

static bool
grow (void **items, int64_t *cap, int64_t n, size_t size)
{
  if (n < *cap)
    return true;
  int64_t ncap = *cap ? *cap * 2 : 16;
  void *p = realloc (*items, (size_t) ncap * size);
  if (!p)
    return false;
  *items = p;
  *cap = ncap;
  return true;
}

/* The alignment key must be a u32 power of two: the file's layout
   depends on it.  */
static int
check_alignment (tsr_gguf_writer *w, const char *key, tsr_gguf_type type,
                 const struct bytes *value)
{
  if (strcmp (key, TSR_GGUF_KEY_ALIGNMENT) != 0)
    return TSR_OK;
  if (type != TSR_GGUF_UINT32)
    return tsr_set_error (TSR_ERR_TYPE, "gguf writer: " TSR_GGUF_KEY_ALIGNMENT
                          " must be a u32, not a%s %s",
                          type == TSR_GGUF_ARRAY ? "n" : "",
                          tsr_gguf_type_name (type));
  uint32_t a = tsri_rd32 (value->p);
  if (a == 0 || (a & (a - 1)))
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: "
                          TSR_GGUF_KEY_ALIGNMENT " %u is not a power of "
                          "two", a);
  w->alignment = a;
  return TSR_OK;
}

/* Store KEY with TYPE and the encoded VALUE (taken over, even on
   failure).  */
static int
set_kv (tsr_gguf_writer *w, const char *key, tsr_gguf_type type,
        struct bytes value)
{
  int st = TSR_OK;
  if (!w || !key)
    st = tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: NULL argument");
  else if (value.failed)
    st = tsr_set_error (TSR_ERR_NO_MEMORY, "gguf writer: out of memory");
  else
    st = check_alignment (w, key, type, &value);
  if (st != TSR_OK)
    {
      free (value.p);
      return st;
    }
  int64_t i = tsri_name_index_find (&w->kv_index, key, strlen (key),
                                    wkv_name, w);
  if (i >= 0)
    {
      free (w->kv[i].value.p);
      w->kv[i].type = type;
      w->kv[i].value = value;
      return TSR_OK;
    }
  char *k = strdup (key);
  if (!k || !grow ((void **) &w->kv, &w->cap_kv, w->n_kv, sizeof *w->kv))
    {
      free (k);
      free (value.p);
      return tsr_set_error (TSR_ERR_NO_MEMORY, "gguf writer: out of memory");
    }
  w->kv[w->n_kv] = (struct wkv) { k, type, value };
  if (tsri_name_index_add (&w->kv_index, w->n_kv, wkv_name, w) != TSR_OK)
    {
      free (k);
      free (value.p);
      return tsr_set_error (TSR_ERR_NO_MEMORY, "gguf writer: out of memory");
    }
  w->n_kv++;
  return TSR_OK;
}

static int
set_scalar (tsr_gguf_writer *w, const char *key, tsr_gguf_type type,
            const void *v)
{
  struct bytes b = { 0 };
  put_values (&b, type, v, 1);
  return set_kv (w, key, type, b);
}

#define DEFINE_SETTER(suffix, ctype, tag)                                  \
  int                                                                     \
  tsr_gguf_set_##suffix (tsr_gguf_writer *w, const char *key, ctype v)    \
  {                                                                       \
    return set_scalar (w, key, tag, &v);                                  \
  }

DEFINE_SETTER (u8, uint8_t, TSR_GGUF_UINT8)
DEFINE_SETTER (i8, int8_t, TSR_GGUF_INT8)
DEFINE_SETTER (u16, uint16_t, TSR_GGUF_UINT16)
DEFINE_SETTER (i16, int16_t, TSR_GGUF_INT16)
DEFINE_SETTER (u32, uint32_t, TSR_GGUF_UINT32)
DEFINE_SETTER (i32, int32_t, TSR_GGUF_INT32)
DEFINE_SETTER (u64, uint64_t, TSR_GGUF_UINT64)
DEFINE_SETTER (i64, int64_t, TSR_GGUF_INT64)
DEFINE_SETTER (f32, float, TSR_GGUF_FLOAT32)
DEFINE_SETTER (f64, double, TSR_GGUF_FLOAT64)

int
tsr_gguf_set_bool (tsr_gguf_writer *w, const char *key, bool v)
{
  uint8_t b = v ? 1 : 0;
  return set_scalar (w, key, TSR_GGUF_BOOL, &b);
}

int
tsr_gguf_set_strn (tsr_gguf_writer *w, const char *key, const char *s,
                   size_t len)
{
  if (!s && len)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: NULL string");
  struct bytes b = { 0 };
  put_str (&b, s, len);
  return set_kv (w, key, TSR_GGUF_STRING, b);
}

int
tsr_gguf_set_str (tsr_gguf_writer *w, const char *key, const char *s)
{
  if (!s)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: NULL string");
  return tsr_gguf_set_strn (w, key, s, strlen (s));
}

int
tsr_gguf_set_array (tsr_gguf_writer *w, const char *key,
                    tsr_gguf_type elem_type, const void *data, uint64_t n)
{
  if (tsr_gguf_type_size (elem_type) == 0)
    return tsr_set_error (TSR_ERR_TYPE, "gguf writer: array '%s' of %s: "
                          "use tsr_gguf_set_array_str for strings; arrays "
                          "of arrays are not written", key ? key : "",
                          tsr_gguf_type_name (elem_type));
  if (!data && n)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: NULL data");
  if (elem_type == TSR_GGUF_BOOL)
    for (uint64_t i = 0; i < n; i++)
      if (((const uint8_t *) data)[i] > 1)
        return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: bool %llu "
                              "of array '%s' is neither 0 nor 1",
                              (unsigned long long) i, key ? key : "");
  struct bytes b = { 0 };
  put_le (&b, elem_type, 4);
  put_le (&b, n, 8);
  put_values (&b, elem_type, data, n);
  return set_kv (w, key, TSR_GGUF_ARRAY, b);
}

int
tsr_gguf_set_array_str (tsr_gguf_writer *w, const char *key,
                        const char *const *strs, uint64_t n)
{
  if (!strs && n)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: NULL strings");
  struct bytes b = { 0 };
  put_le (&b, TSR_GGUF_STRING, 4);
  put_le (&b, n, 8);
  for (uint64_t i = 0; i < n; i++)
    {
      if (!strs[i])
        {
          free (b.p);
          return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: string "
                                "%llu of array '%s' is NULL",
                                (unsigned long long) i, key ? key : "");
        }
      put_str (&b, strs[i], strlen (strs[i]));
    }
  return set_kv (w, key, TSR_GGUF_ARRAY, b);
}

int
tsr_gguf_writer_copy_kv (tsr_gguf_writer *w, const tsr_gguf *g)
{
  if (!w || !g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: NULL argument");
  for (int64_t i = 0; i < g->n_kv; i++)
    {
      const struct tsri_gguf_kv *kv = &g->kv[i];
      struct bytes b = { 0 };
      put (&b, kv->value, (size_t) kv->value_size);
      int st = set_kv (w, kv->key.s, kv->type, b);
      if (st != TSR_OK)
        return st;
    }
  return TSR_OK;
}

int
tsr_gguf_writer_add_tensor (tsr_gguf_writer *w, const tsr_tensor *t)
{
  if (!w || !t)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: NULL argument");
  if (!t->name[0])
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: a tensor "
                          "needs a name");
  if (!t->data)
    return tsr_set_error (TSR_ERR_STATE, "gguf writer: tensor '%s' has no "
                          "data", t->name);
  if (!tsr_is_contiguous (t))
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: tensor '%s' is "
                          "not contiguous", t->name);
  if (tsri_name_index_find (&w->tensor_index, t->name, strlen (t->name),
                            wtensor_name, w) >= 0)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: duplicate "
                          "tensor name '%s'", t->name);
  if (!grow ((void **) &w->tensors, &w->cap_tensors, w->n_tensors,
             sizeof *w->tensors))
    return tsr_set_error (TSR_ERR_NO_MEMORY, "gguf writer: out of memory");
  struct wtensor *wt = &w->tensors[w->n_tensors];
  wt->t = t;
  memcpy (wt->name, t->name, sizeof wt->name);
  if (tsri_name_index_add (&w->tensor_index, w->n_tensors, wtensor_name, w)
      != TSR_OK)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "gguf writer: out of memory");
  w->n_tensors++;
  /* Trailing dimensions of 1 are left out (a 0 is kept).  */
  wt->n_dims = TSR_MAX_DIMS;
  while (wt->n_dims > 1 && t->ne[wt->n_dims - 1] == 1)
    wt->n_dims--;
  memcpy (wt->ne, t->ne, sizeof wt->ne);
  wt->type = t->type;
  wt->size = tsr_nbytes (t);
  return TSR_OK;
}

/* Output.  */

static uint64_t
padded (uint64_t n, uint32_t alignment)
{
  return (n + alignment - 1) / alignment * alignment;
}

/* Header, metadata and tensor infos.  */
static int
build_head (const tsr_gguf_writer *w, struct bytes *b)
{
  put (b, TSRI_GGUF_MAGIC, 4);
  put_le (b, TSR_GGUF_VERSION, 4);
  put_le (b, (uint64_t) w->n_tensors, 8);
  put_le (b, (uint64_t) w->n_kv, 8);
  for (int64_t i = 0; i < w->n_kv; i++)
    {
      put_str (b, w->kv[i].key, strlen (w->kv[i].key));
      put_le (b, w->kv[i].type, 4);
      put (b, w->kv[i].value.p, w->kv[i].value.n);
    }
  uint64_t offset = 0;
  for (int64_t i = 0; i < w->n_tensors; i++)
    {
      const struct wtensor *t = &w->tensors[i];
      put_str (b, t->name, strlen (t->name));
      put_le (b, (uint64_t) t->n_dims, 4);
      for (int d = 0; d < t->n_dims; d++)
        put_le (b, (uint64_t) t->ne[d], 8);
      put_le (b, tsr_gguf_file_type (t->type), 4);
      put_le (b, offset, 8);
      offset += padded (t->size, w->alignment);
    }
  if (b->failed)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "gguf writer: out of memory");
  return TSR_OK;
}

typedef int (*sink_fn) (void *sink, const void *data, size_t n);

/* N zero bytes.  */
static int
put_zeros (sink_fn out, void *sink, uint64_t n)
{
  static const unsigned char zeros[4096];
  int st = TSR_OK;
  for (; n && st == TSR_OK; n -= n < sizeof zeros ? n : sizeof zeros)
    st = out (sink, zeros, n < sizeof zeros ? (size_t) n : sizeof zeros);
  return st;
}

static int
write_tensor (const tsr_gguf_writer *w, const struct wtensor *t,
              unsigned char *chunk, sink_fn out, void *sink)
{
  if (t->t->type != t->type || memcmp (t->t->ne, t->ne, sizeof t->ne) != 0
      || !t->t->data)
    return tsr_set_error (TSR_ERR_STATE, "gguf writer: tensor '%s' changed "
                          "after it was added", t->name);
  for (size_t done = 0; done < t->size;)
    {
      size_t n = t->size - done < COPY_CHUNK ? t->size - done : COPY_CHUNK;
      int st = tsr_tensor_get (t->t, chunk, done, n);
      if (st == TSR_OK)
        st = out (sink, chunk, n);
      if (st != TSR_OK)
        return st;
      done += n;
    }
  return put_zeros (out, sink, padded (t->size, w->alignment) - t->size);
}

static int
write_all (tsr_gguf_writer *w, sink_fn out, void *sink)
{
  struct bytes head = { 0 };
  int st = build_head (w, &head);
  if (st == TSR_OK)
    st = out (sink, head.p, head.n);
  if (st == TSR_OK)
    st = put_zeros (out, sink, padded (head.n, w->alignment) - head.n);
  free (head.p);
  unsigned char *chunk = st == TSR_OK && w->n_tensors
                         ? malloc (COPY_CHUNK) : NULL;
  if (st == TSR_OK && w->n_tensors && !chunk)
    st = tsr_set_error (TSR_ERR_NO_MEMORY, "gguf writer: out of memory");
  for (int64_t i = 0; i < w->n_tensors && st == TSR_OK; i++)
    st = write_tensor (w, &w->tensors[i], chunk, out, sink);
  free (chunk);
  return st;
}

static int
file_sink (void *sink, const void *data, size_t n)
{
  if (n && fwrite (data, 1, n, sink) != n)
    return tsr_set_error (TSR_ERR_BACKEND, "gguf writer: write failed: %s",
                          strerror (errno));
  return TSR_OK;
}

int
tsr_gguf_writer_write_stream (tsr_gguf_writer *w, FILE *stream)
{
  if (!w || !stream)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: NULL argument");
  return write_all (w, file_sink, stream);
}

/* A file of its own beside PATH, created for writing (mode 0666 less
   the umask, as fopen would): its descriptor and name in TMP, or -1.  */
static int
create_beside (const char *path, char *tmp, size_t size)
{
  static atomic_uint counter;
  for (int tries = 0; tries < 100; tries++)
    {
      snprintf (tmp, size, "%s.tmp-%ld-%u", path, (long) getpid (),
                atomic_fetch_add (&counter, 1));
      int fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY,
                     0666);
      if (fd >= 0 || errno != EEXIST)
        return fd;
    }
  errno = EEXIST;
  return -1;
}

int
tsr_gguf_writer_write_file (tsr_gguf_writer *w, const char *path)
{
  if (!w || !path)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: NULL argument");
  /* Only a regular file or a new name is replaced: writing through a
     symbolic link, into a device or a FIFO, is refused, not done.  */
  struct stat st;
  bool existed = lstat (path, &st) == 0;
  if (existed && !S_ISREG (st.st_mode))
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: '%s' is %s; "
                          "only a regular file or a new name is replaced "
                          "(nothing was written)", path,
                          tsri_file_kind ((unsigned) st.st_mode));
  /* Written beside it and renamed over it once complete: PATH is never
     half-written, and may be the file being converted (mapped).  */
  size_t tsize = strlen (path) + 40;
  char *tmp = malloc (tsize);
  if (!tmp)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "gguf writer: out of memory");
  int fd = create_beside (path, tmp, tsize);
  FILE *f = fd >= 0 ? fdopen (fd, "wb") : NULL;
  if (!f)
    {
      int e = errno;
      if (fd >= 0)
        {
          close (fd);
          remove (tmp);
        }
      free (tmp);
      return tsr_set_error (TSR_ERR_NOT_FOUND, "gguf writer: cannot create "
                            "a file beside '%s': %s", path, strerror (e));
    }
  /* Written WRITE_BUFFER bytes at a time: Linux's page cache keeps a
     file written in small writes (stdio's 4 KiB) in 4 KiB pages, and a
     model mapped from such pages generated tokens a quarter slower than
     from the 2 MiB pages that large, aligned writes give (measured: q4_0
     written 64 KiB at a time, 0% of its mapping in 2 MiB pages, 70% of
     the read roof; 4 MiB at a time, 100% and 91%).  */
  char *vbuf = malloc (WRITE_BUFFER);
  if (vbuf)
    setvbuf (f, vbuf, _IOFBF, WRITE_BUFFER);
  if (existed)
    fchmod (fd, st.st_mode & 07777);    /* keep the old file's mode */
  int status = write_all (w, file_sink, f);
  if (fclose (f) != 0 && status == TSR_OK)
    status = tsr_set_error (TSR_ERR_BACKEND, "gguf writer: cannot write "
                            "'%s': %s", tmp, strerror (errno));
  free (vbuf);
  if (status == TSR_OK && rename (tmp, path) != 0)
    status = tsr_set_error (TSR_ERR_BACKEND, "gguf writer: cannot rename "
                            "'%s' to '%s': %s", tmp, path, strerror (errno));
  if (status != TSR_OK)
    remove (tmp);               /* no half-written model left behind */
  free (tmp);
  return status;
}

static int
memory_sink (void *sink, const void *data, size_t n)
{
  struct bytes *b = sink;
  put (b, data, n);
  return b->failed ? tsr_set_error (TSR_ERR_NO_MEMORY, "gguf writer: out "
                                    "of memory")
                   : TSR_OK;
}

int
tsr_gguf_writer_write_memory (tsr_gguf_writer *w, void **data, size_t *size)
{
  if (!w || !data || !size)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "gguf writer: NULL argument");
  struct bytes b = { 0 };
  int st = write_all (w, memory_sink, &b);
  if (st != TSR_OK)
    {
      free (b.p);
      return st;
    }
  *data = b.p ? b.p : malloc (1);
  *size = b.n;
  return *data ? TSR_OK : tsr_set_error (TSR_ERR_NO_MEMORY, "gguf writer: "
                                         "out of memory");
}
