/* gguf-parse.c - validating a GGUF file.
 *
 * Owns: reading every field of the header, the metadata and the tensor
 * infos, and every check that makes the rest of the library safe: no
 * read past the end, every count bounded by the bytes left before
 * anything is allocated for it, names unique, tensors inside the data
 * section and apart.  Each failure says what is wrong and the byte
 * offset of the field, as "offset N: ...".  */
#include <config.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf-impl.h"

struct cursor
{
  tsr_gguf *g;
  uint64_t pos;
  struct tsr_gguf_error *err;
};

static int
failv (struct cursor *c, int status, uint64_t offset, const char *fmt,
       va_list ap)
{
  char what[256];
  vsnprintf (what, sizeof what, fmt, ap);
  tsr_set_error (status, "offset %llu: %s", (unsigned long long) offset,
                 what);
  if (c->err)
    {
      c->err->status = (tsr_status) status;
      c->err->offset = offset;
      snprintf (c->err->message, sizeof c->err->message, "%s",
                tsr_last_error ());
    }
  return status;
}

#if defined(__GNUC__)
__attribute__ ((format (printf, 3, 4)))
#endif
static int
fail (struct cursor *c, uint64_t offset, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  int st = failv (c, TSR_ERR_FORMAT, offset, fmt, ap);
  va_end (ap);
  return st;
}

static int
no_memory (struct cursor *c)
{
  if (c->err)
    {
      c->err->status = TSR_ERR_NO_MEMORY;
      c->err->offset = c->pos;
      snprintf (c->err->message, sizeof c->err->message, "%s",
                tsr_last_error ());
    }
  return TSR_ERR_NO_MEMORY;
}

static uint64_t
left (const struct cursor *c)
{
  return c->g->size - c->pos;
}

/* N more bytes must be there for the field WHAT (a format).  */
#if defined(__GNUC__)
__attribute__ ((format (printf, 3, 4)))
#endif
static int
need (struct cursor *c, uint64_t n, const char *what, ...)
{
  if (left (c) >= n)
    return TSR_OK;
  char field[200];
  va_list ap;
  va_start (ap, what);
  vsnprintf (field, sizeof field, what, ap);
  va_end (ap);
  return fail (c, c->pos, "the file ends inside %s (%llu of its %llu bytes "
               "are there)", field, (unsigned long long) left (c),
               (unsigned long long) n);
}

static const unsigned char *
here (const struct cursor *c)
{
  return c->g->data + c->pos;
}

static uint32_t
take32 (struct cursor *c)
{
  uint32_t v = tsri_rd32 (here (c));
  c->pos += 4;
  return v;
}

static uint64_t
take64 (struct cursor *c)
{
  uint64_t v = tsri_rd64 (here (c));
  c->pos += 8;
  return v;
}

/* A printable, shortened copy of a name for messages.  */
static const char *
show (const char *s, uint64_t len, char *buf, size_t size)
{
  size_t n = 0;
  for (uint64_t i = 0; i < len && n + 5 < size; i++)
    {
      unsigned char ch = (unsigned char) s[i];
      if (ch >= 0x20 && ch < 0x7f && ch != '\\')
        buf[n++] = (char) ch;
      else
        n += (size_t) snprintf (buf + n, size - n, "\\x%02x", ch);
    }
  if (n + 5 >= size)
    memcpy (buf + size - 4, "...", 4);
  else
    buf[n] = '\0';
  return buf;
}

/* A string: a u64 length and its bytes.  WHAT names it (a format).
   Stores a NUL-terminated copy in *OUT.  */
#if defined(__GNUC__)
__attribute__ ((format (printf, 3, 4)))
#endif
static int
read_string (struct cursor *c, struct tsri_gguf_str *out, const char *what,
             ...)
{
  /* The field's name is formatted only for an error: a vocabulary
     has hundreds of thousands of strings.  */
  char field[200];
  va_list ap;
  if (left (c) < 8)
    {
      va_start (ap, what);
      vsnprintf (field, sizeof field, what, ap);
      va_end (ap);
      return need (c, 8, "the length of %s", field);
    }
  uint64_t at = c->pos, len = take64 (c);
  if (len > left (c))
    {
      va_start (ap, what);
      vsnprintf (field, sizeof field, what, ap);
      va_end (ap);
      return fail (c, at, "%s is %llu bytes long, but only %llu bytes are "
                   "left in the file", field, (unsigned long long) len,
                   (unsigned long long) left (c));
    }
  out->s = tsri_gguf_strdup (c->g, here (c), len);
  if (!out->s)
    return no_memory (c);
  out->len = len;
  c->pos += len;
  return TSR_OK;
}

/* Header.  */

static int
read_header (struct cursor *c, uint64_t *n_tensors, uint64_t *n_kv)
{
  char buf[40];
  int st = need (c, 4, "the magic");
  if (st != TSR_OK)
    return st;
  if (memcmp (here (c), TSRI_GGUF_MAGIC, 4) != 0)
    return fail (c, 0, "bad magic \"%s\": not a GGUF file",
                 show ((const char *) here (c), 4, buf, sizeof buf));
  c->pos += 4;
  if ((st = need (c, 4, "the version")) != TSR_OK)
    return st;
  uint32_t v = take32 (c);
  uint32_t swapped = __builtin_bswap32 (v);
  if (v != 2 && v != 3)
    {
      if (swapped >= 1 && swapped <= 3)
        return fail (c, 4, "version 0x%08x is version %u byte-swapped: a "
                     "big-endian GGUF file, and only little-endian files "
                     "are read", v, swapped);
      if (v == 1)
        return fail (c, 4, "GGUF version 1 (32-bit counts) is not "
                     "supported; versions 2 and 3 are");
      return fail (c, 4, "unsupported GGUF version %u (versions 2 and 3 "
                   "are read)", v);
    }
  c->g->version = v;
  if ((st = need (c, 8, "the tensor count")) != TSR_OK)
    return st;
  *n_tensors = take64 (c);
  if ((st = need (c, 8, "the metadata count")) != TSR_OK)
    return st;
  *n_kv = take64 (c);
  if (*n_tensors > left (c) / TSRI_GGUF_MIN_TENSOR)
    return fail (c, 8, "n_tensors %llu exceeds what a %llu-byte file can "
                 "hold", (unsigned long long) *n_tensors,
                 (unsigned long long) c->g->size);
  if (*n_kv > left (c) / TSRI_GGUF_MIN_KV)
    return fail (c, 16, "n_kv %llu exceeds what a %llu-byte file can hold",
                 (unsigned long long) *n_kv,
                 (unsigned long long) c->g->size);
  return TSR_OK;
}

/* Metadata.  */

static int
check_bools (struct cursor *c, const unsigned char *p, uint64_t n,
             const char *key)
{
  char buf[100];
  for (uint64_t i = 0; i < n; i++)
    if (p[i] > 1)
      return fail (c, (uint64_t) (p + i - c->g->data), "bool %s%s'%s' is "
                   "%u, neither 0 nor 1", n > 1 ? "in " : "",
                   n > 1 ? "array " : "",
                   show (key, strlen (key), buf, sizeof buf), p[i]);
  return TSR_OK;
}

static int
read_array (struct cursor *c, struct tsri_gguf_kv *kv, const char *key)
{
  int st = need (c, 4, "the element type of array '%s'", key);
  if (st != TSR_OK)
    return st;
  uint64_t at = c->pos;
  uint32_t et = take32 (c);
  if (et >= TSR_GGUF_TYPE_COUNT)
    return fail (c, at, "array '%s' has unknown element type %u", key, et);
  if (et == TSR_GGUF_ARRAY)
    return fail (c, at, "array '%s' holds arrays; nested arrays are not "
                 "supported", key);
  kv->elem_type = (tsr_gguf_type) et;
  if ((st = need (c, 8, "the length of array '%s'", key)) != TSR_OK)
    return st;
  at = c->pos;
  kv->n = take64 (c);
  size_t size = tsr_gguf_type_size (kv->elem_type);
  if (size)
    {
      if (kv->n > left (c) / size)
        return fail (c, at, "array '%s' of %llu %s values needs more than "
                     "the %llu bytes left in the file", key,
                     (unsigned long long) kv->n,
                     tsr_gguf_type_name (kv->elem_type),
                     (unsigned long long) left (c));
      kv->elems = here (c);
      c->pos += kv->n * size;
      if (kv->elem_type == TSR_GGUF_BOOL)
        return check_bools (c, kv->elems, kv->n, key);
      return TSR_OK;
    }
  if (kv->n > left (c) / 8)
    return fail (c, at, "array '%s' of %llu strings needs more than the "
                 "%llu bytes left in the file", key,
                 (unsigned long long) kv->n, (unsigned long long) left (c));
  /* Allocate for the strings that are really there (each at least its
     8-byte length), not for the count claimed: string M, the first
     that does not fit, fails to read below.  */
  uint64_t m = 0;
  for (uint64_t p = c->pos; m < kv->n && c->g->size - p >= 8; m++)
    {
      uint64_t len = tsri_rd64 (c->g->data + p);
      if (len > c->g->size - p - 8)
        break;
      p += 8 + len;
    }
  kv->strs = tsri_gguf_arena_alloc (c->g, (m + 1) * sizeof *kv->strs);
  if (!kv->strs)
    return no_memory (c);
  for (uint64_t i = 0; i < kv->n; i++)
    if ((st = read_string (c, &kv->strs[i], "string %llu of array '%s'",
                           (unsigned long long) i, key)) != TSR_OK)
      return st;
  return TSR_OK;
}

static int
read_value (struct cursor *c, struct tsri_gguf_kv *kv, const char *key)
{
  kv->value = here (c);
  kv->value_offset = c->pos;
  if (kv->type == TSR_GGUF_ARRAY)
    return read_array (c, kv, key);
  if (kv->type == TSR_GGUF_STRING)
    {
      kv->strs = tsri_gguf_arena_alloc (c->g, sizeof *kv->strs);
      if (!kv->strs)
        return no_memory (c);
      return read_string (c, kv->strs, "the value of '%s'", key);
    }
  size_t size = tsr_gguf_type_size (kv->type);
  int st = need (c, size, "the %s value of '%s'",
                 tsr_gguf_type_name (kv->type), key);
  if (st != TSR_OK)
    return st;
  c->pos += size;
  if (kv->type == TSR_GGUF_BOOL)
    return check_bools (c, kv->value, 1, key);
  return TSR_OK;
}

/* Keys and tensor names: C strings (no NUL inside), each unique.  */
struct name_kind
{
  const char *what;
  size_t index_field;           /* offsetof the index in tsr_gguf */
  tsri_name_at name_at;
  uint64_t (*offset_at) (const tsr_gguf *, int64_t);
};

static uint64_t
kv_offset (const tsr_gguf *g, int64_t i)
{
  return g->kv[i].offset;
}

static uint64_t
tensor_offset (const tsr_gguf *g, int64_t i)
{
  return g->tensors[i].offset;
}

static const struct name_kind key_names = {
  "key", offsetof (tsr_gguf, kv_index), tsri_gguf_kv_name, kv_offset
};
static const struct name_kind tensor_names = {
  "tensor name", offsetof (tsr_gguf, tensor_index), tsri_gguf_tensor_name,
  tensor_offset
};

/* Check NAME (number I, at offset AT; SHOWN for messages) and index
   it.  */
static int
add_name (struct cursor *c, const struct name_kind *kind,
          const struct tsri_gguf_str *name, uint64_t at, int64_t i,
          const char *shown)
{
  struct tsri_name_index *ix
    = (struct tsri_name_index *) ((char *) c->g + kind->index_field);
  if (memchr (name->s, '\0', (size_t) name->len))
    return fail (c, at, "%s '%s' contains a NUL byte", kind->what, shown);
  int64_t first = tsri_name_index_find (ix, name->s, (size_t) name->len,
                                        kind->name_at, c->g);
  if (first >= 0)
    return fail (c, at, "duplicate %s '%s' (first at offset %llu)",
                 kind->what, shown,
                 (unsigned long long) kind->offset_at (c->g, first));
  if (tsri_name_index_add (ix, i, kind->name_at, c->g) != TSR_OK)
    return no_memory (c);
  return TSR_OK;
}

static int
read_kv (struct cursor *c, int64_t i)
{
  tsr_gguf *g = c->g;
  struct tsri_gguf_kv *kv = &g->kv[i];
  char key[120];
  kv->offset = c->pos;
  int st = read_string (c, &kv->key, "the key of metadata entry %lld",
                        (long long) i);
  if (st != TSR_OK)
    return st;
  show (kv->key.s, kv->key.len, key, sizeof key);
  if ((st = add_name (c, &key_names, &kv->key, kv->offset, i, key))
      != TSR_OK)
    return st;
  if ((st = need (c, 4, "the value type of '%s'", key)) != TSR_OK)
    return st;
  uint64_t at = c->pos;
  uint32_t type = take32 (c);
  if (type >= TSR_GGUF_TYPE_COUNT)
    return fail (c, at, "key '%s' has unknown value type %u", key, type);
  kv->type = (tsr_gguf_type) type;
  if ((st = read_value (c, kv, key)) != TSR_OK)
    return st;
  kv->value_size = c->pos - kv->value_offset;
  return TSR_OK;
}

static int
read_alignment (struct cursor *c)
{
  tsr_gguf *g = c->g;
  g->alignment = TSR_GGUF_DEFAULT_ALIGNMENT;
  int64_t i = tsr_gguf_find_key (g, TSR_GGUF_KEY_ALIGNMENT);
  if (i < 0)
    return TSR_OK;
  const struct tsri_gguf_kv *kv = &g->kv[i];
  if (kv->type != TSR_GGUF_UINT32)
    return fail (c, kv->value_offset, TSR_GGUF_KEY_ALIGNMENT " is a%s %s; "
                 "it must be a u32", kv->type == TSR_GGUF_ARRAY ? "n" : "",
                 tsr_gguf_type_name (kv->type));
  uint32_t a = tsri_rd32 (kv->value);
  if (a == 0)
    return fail (c, kv->value_offset, TSR_GGUF_KEY_ALIGNMENT " is 0");
  if (a & (a - 1))
    return fail (c, kv->value_offset, TSR_GGUF_KEY_ALIGNMENT " %u is not a "
                 "power of two", a);
  g->alignment = a;
  return TSR_OK;
}

/* Tensor infos.  */

/* Bytes of a tensor of TYPE shaped NE, or false on overflow.  As for
   tsr_new_tensor, a dimension of 0 counts as 1 in the overflow check, so
   that every accepted shape can be created.  */
static bool
tensor_bytes (tsr_type type, const int64_t ne[TSR_MAX_DIMS], size_t *bytes)
{
  const struct tsr_type_traits *tr = tsr_type_traits (type);
  uint64_t row = (uint64_t) (ne[0] / tr->block_size) * tr->type_size;
  uint64_t span = row ? row : tr->type_size, n = row;
  for (int d = 1; d < TSR_MAX_DIMS; d++)
    {
      uint64_t k = ne[d] ? (uint64_t) ne[d] : 1;
      if (span > ((uint64_t) INT64_MAX / 2) / k)
        return false;
      span *= k;
      n *= (uint64_t) ne[d];
    }
  if (ne[0] > (int64_t) (INT64_MAX / 2 / tr->type_size)
      || !tsri_shape_fits (type, ne))     /* as tsr_new_tensor requires */
    return false;
  *bytes = (size_t) n;
  return true;
}

static int
read_dims (struct cursor *c, struct tsri_gguf_tensor *t, const char *name)
{
  int st = need (c, 4, "the dimension count of tensor '%s'", name);
  if (st != TSR_OK)
    return st;
  uint64_t at = c->pos;
  uint32_t n_dims = take32 (c);
  if (n_dims > TSR_MAX_DIMS)
    return fail (c, at, "tensor '%s' has %u dimensions (at most %d)", name,
                 n_dims, TSR_MAX_DIMS);
  t->info.n_dims = (int) n_dims;
  for (int d = 0; d < TSR_MAX_DIMS; d++)
    t->info.ne[d] = 1;
  for (uint32_t d = 0; d < n_dims; d++)
    {
      if ((st = need (c, 8, "dimension %u of tensor '%s'", d, name))
          != TSR_OK)
        return st;
      at = c->pos;
      uint64_t ne = take64 (c);
      if (ne > (uint64_t) INT64_MAX)
        return fail (c, at, "dimension %u of tensor '%s' is %llu, more than "
                     "2^63 - 1", d, name, (unsigned long long) ne);
      t->info.ne[d] = (int64_t) ne;
    }
  return TSR_OK;
}

static int
read_tensor_type (struct cursor *c, struct tsri_gguf_tensor *t,
                  const char *name)
{
  int st = need (c, 4, "the type of tensor '%s'", name);
  if (st != TSR_OK)
    return st;
  uint64_t at = c->pos;
  t->info.file_type = take32 (c);
  t->info.type = tsr_gguf_tensor_type (t->info.file_type);
  if (t->info.type == TSR_TYPE_COUNT)
    return fail (c, at, "tensor '%s' has unknown tensor type %u (Tessera "
                 "reads f32, f16, bf16, i32, q8_0, q4_0, q4_1, q5_0, "
                 "q5_1, q2_K..q6_K, q8_K, iq4_nl, iq4_xs and mxfp4)", name,
                 t->info.file_type);
  const struct tsr_type_traits *tr = tsr_type_traits (t->info.type);
  const int64_t *ne = t->info.ne;
  if (ne[0] % tr->block_size != 0)
    return fail (c, at, "tensor '%s' has rows of %lld elements, not a "
                 "multiple of the %s block size %lld", name,
                 (long long) ne[0], tr->name, (long long) tr->block_size);
  if (!tensor_bytes (t->info.type, ne, &t->info.size))
    return fail (c, t->offset, "the dimensions of tensor '%s' (%lld x %lld "
                 "x %lld x %lld) overflow when multiplied", name,
                 (long long) ne[0], (long long) ne[1], (long long) ne[2],
                 (long long) ne[3]);
  return TSR_OK;
}

static int
read_tensor_info (struct cursor *c, int64_t i)
{
  tsr_gguf *g = c->g;
  struct tsri_gguf_tensor *t = &g->tensors[i];
  char name[120];
  t->offset = c->pos;
  int st = read_string (c, &t->name, "the name of tensor %lld",
                        (long long) i);
  if (st != TSR_OK)
    return st;
  t->info.name = t->name.s;
  show (t->name.s, t->name.len, name, sizeof name);
  if (t->name.len == 0)
    return fail (c, t->offset, "tensor %lld has an empty name",
                 (long long) i);
  if (t->name.len >= TSR_MAX_NAME)
    return fail (c, t->offset, "tensor name '%s' is %llu bytes long (at "
                 "most %d)", name, (unsigned long long) t->name.len,
                 TSR_MAX_NAME - 1);
  if ((st = add_name (c, &tensor_names, &t->name, t->offset, i, name))
      != TSR_OK
      || (st = read_dims (c, t, name)) != TSR_OK
      || (st = read_tensor_type (c, t, name)) != TSR_OK)
    return st;
  if ((st = need (c, 8, "the offset of tensor '%s'", name)) != TSR_OK)
    return st;
  t->offset_field = c->pos;
  t->info.offset = take64 (c);
  if (t->info.offset % g->alignment)
    return fail (c, t->offset_field, "tensor '%s' has offset %llu, not a "
                 "multiple of the alignment %zu", name,
                 (unsigned long long) t->info.offset, g->alignment);
  return TSR_OK;
}

/* Tensor data: inside the data section, and no two tensors share a
   byte.  */

/* qsort has no context argument in C11: the file being checked, per
   thread.  */
static _Thread_local const tsr_gguf *sort_file;

static int
by_offset (const void *a, const void *b)
{
  const struct tsri_gguf_tensor *ta = &sort_file->tensors[*(const int64_t *) a];
  const struct tsri_gguf_tensor *tb = &sort_file->tensors[*(const int64_t *) b];
  if (ta->info.offset != tb->info.offset)
    return ta->info.offset < tb->info.offset ? -1 : 1;
  return ta->info.size < tb->info.size ? -1 : ta->info.size > tb->info.size;
}

static int
check_extents (struct cursor *c)
{
  tsr_gguf *g = c->g;
  char name[120], other[120];
  uint64_t room = g->data_offset <= g->size ? g->size - g->data_offset : 0;
  for (int64_t i = 0; i < g->n_tensors; i++)
    {
      const struct tsri_gguf_tensor *t = &g->tensors[i];
      if (t->info.offset > room || t->info.size > room - t->info.offset
          || g->data_offset > g->size)
        return fail (c, t->offset_field, "tensor '%s' data [%llu, %llu) "
                     "lies outside the data section of %llu bytes (at "
                     "offset %llu)",
                     show (t->name.s, t->name.len, name, sizeof name),
                     (unsigned long long) t->info.offset,
                     (unsigned long long) (t->info.offset + t->info.size),
                     (unsigned long long) room,
                     (unsigned long long) g->data_offset);
    }
  int64_t *order = malloc ((size_t) g->n_tensors * sizeof *order + 1);
  if (!order)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "gguf: out of memory");
      return no_memory (c);
    }
  int64_t n = 0;
  for (int64_t i = 0; i < g->n_tensors; i++)
    if (g->tensors[i].info.size)
      order[n++] = i;
  sort_file = g;
  qsort (order, (size_t) n, sizeof *order, by_offset);
  int st = TSR_OK;
  for (int64_t k = 1; k < n && st == TSR_OK; k++)
    {
      const struct tsri_gguf_tensor *a = &g->tensors[order[k - 1]];
      const struct tsri_gguf_tensor *b = &g->tensors[order[k]];
      if (a->info.offset + a->info.size > b->info.offset)
        st = fail (c, b->offset_field, "tensors '%s' [%llu, %llu) and '%s' "
                   "[%llu, %llu) overlap",
                   show (a->name.s, a->name.len, other, sizeof other),
                   (unsigned long long) a->info.offset,
                   (unsigned long long) (a->info.offset + a->info.size),
                   show (b->name.s, b->name.len, name, sizeof name),
                   (unsigned long long) b->info.offset,
                   (unsigned long long) (b->info.offset + b->info.size));
    }
  free (order);
  return st;
}

/* Make *ITEMS (capacity *CAP items of SIZE bytes, zeroed) hold item I
   of at most N: doubling, never beyond N.  */
static int
room_for (struct cursor *c, void **items, uint64_t *cap, uint64_t i,
          uint64_t n, size_t size)
{
  if (i < *cap)
    return TSR_OK;
  uint64_t ncap = *cap ? *cap * 2 : 64;
  if (ncap > n)
    ncap = n;
  void *p = ncap <= SIZE_MAX / size ? realloc (*items, (size_t) ncap * size)
                                    : NULL;
  if (!p)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "gguf: out of memory");
      return no_memory (c);
    }
  memset ((char *) p + *cap * size, 0, (size_t) (ncap - *cap) * size);
  *items = p;
  *cap = ncap;
  return TSR_OK;
}

int
tsri_gguf_parse (tsr_gguf *g, struct tsr_gguf_error *err)
{
  struct cursor c = { g, 0, err };
  uint64_t n_tensors = 0, n_kv = 0;
  int st = read_header (&c, &n_tensors, &n_kv);
  if (st != TSR_OK)
    return st;
  /* The counts are bounded by the file size above, but the entries are
     allocated as they are read: a file claiming many and holding few
     costs memory for the few.  */
  uint64_t cap_kv = 0, cap_tensors = 0;
  for (uint64_t i = 0; i < n_kv; i++, g->n_kv++)
    if ((st = room_for (&c, (void **) &g->kv, &cap_kv, i, n_kv,
                        sizeof *g->kv)) != TSR_OK
        || (st = read_kv (&c, (int64_t) i)) != TSR_OK)
      return st;
  if ((st = read_alignment (&c)) != TSR_OK)
    return st;
  for (uint64_t i = 0; i < n_tensors; i++, g->n_tensors++)
    if ((st = room_for (&c, (void **) &g->tensors, &cap_tensors, i,
                        n_tensors, sizeof *g->tensors)) != TSR_OK
        || (st = read_tensor_info (&c, (int64_t) i)) != TSR_OK)
      return st;
  g->data_offset = (c.pos + g->alignment - 1) / g->alignment * g->alignment;
  return check_extents (&c);
}
