/* gguf-impl.h - what the gguf*.c files share.  Not installed.
 *
 * A parsed file keeps pointers into the file's bytes (the mapping or
 * the caller's memory) for values, and NUL-terminated copies of every
 * key, string and tensor name.  */
#ifndef TESSERA_GGUF_IMPL_H
#define TESSERA_GGUF_IMPL_H

#include <stdatomic.h>
#include "tessera-impl.h"
#include <tessera/gguf.h>

#define TSRI_GGUF_MAGIC "GGUF"
/* Smallest encodings, to bound counts by the bytes left: a KV is a key
   length, a type and at least one byte of value; a tensor info a name
   length, n_dims, a type and an offset.  */
#define TSRI_GGUF_MIN_KV 13
#define TSRI_GGUF_MIN_TENSOR 24

/* A mapped file, shared by the parsed file and zero-copy buffers.  */
struct tsri_gguf_map
{
  void *addr;
  size_t len;
  atomic_int refs;
};
void tsri_gguf_map_unref (struct tsri_gguf_map *map);

struct tsri_gguf_str
{
  char *s;                      /* NUL-terminated copy */
  uint64_t len;
};

struct tsri_gguf_kv
{
  struct tsri_gguf_str key;
  tsr_gguf_type type;
  tsr_gguf_type elem_type;      /* arrays */
  uint64_t n;                   /* arrays: element count */
  uint64_t offset;              /* of the key in the file */
  uint64_t value_offset;        /* of the value (after its type) */
  const unsigned char *value;   /* encoded value, as in the file */
  uint64_t value_size;
  const unsigned char *elems;   /* arrays of fixed-size values */
  struct tsri_gguf_str *strs;   /* a string, or the array's strings */
};

struct tsri_gguf_tensor
{
  struct tsr_gguf_tensor_info info;
  struct tsri_gguf_str name;    /* info.name is name.s */
  uint64_t offset;              /* of the tensor info in the file */
  uint64_t offset_field;        /* of its offset field */
};

struct tsri_gguf_arena;

struct tsr_gguf
{
  const unsigned char *data;
  uint64_t size;
  struct tsri_gguf_map *map;    /* NULL for caller memory */
  uint32_t version;
  size_t alignment;
  uint64_t data_offset;
  int64_t n_kv, n_tensors;
  struct tsri_gguf_kv *kv;
  struct tsri_gguf_tensor *tensors;
  struct tsri_name_index kv_index, tensor_index;
  struct tsri_gguf_arena *arena;
};

/* gguf-parse.c: validate DATA into G (data, size, map set); on failure
   fill ERR and return an error status.  */
int tsri_gguf_parse (tsr_gguf *g, struct tsr_gguf_error *err);

/* gguf.c */
uint16_t tsri_rd16 (const unsigned char *p);
uint32_t tsri_rd32 (const unsigned char *p);
uint64_t tsri_rd64 (const unsigned char *p);
/* LEN + 1 bytes from G's arena; NULL after recording an error.  */
char *tsri_gguf_strdup (tsr_gguf *g, const unsigned char *s, uint64_t len);
void *tsri_gguf_arena_alloc (tsr_gguf *g, uint64_t size);
/* Names for the indexes (OWNER is the tsr_gguf).  */
void tsri_gguf_kv_name (const void *owner, int64_t i, const char **s,
                        size_t *len);
void tsri_gguf_tensor_name (const void *owner, int64_t i, const char **s,
                            size_t *len);

#endif /* TESSERA_GGUF_IMPL_H */
