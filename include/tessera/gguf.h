/* tessera/gguf.h - GGUF model files: read, validate, write, load.
 *
 * GGUF (version 3, also read: version 2) is the single-file format
 * models of this field ship in: a header, typed key-value metadata, a
 * table of tensor infos, then the tensor data, each tensor at an offset
 * aligned to general.alignment (default 32).  Every number is little
 * endian; big-endian files are recognized and refused.
 *
 * Reading maps the file (tsr_gguf_open) or uses caller memory
 * (tsr_gguf_from_memory) and validates all of it before returning:
 * a malformed file yields NULL and a message that says what is wrong
 * and at which byte offset, never a crash or a read past the end.
 * Besides the format's own rules, Tessera requires keys and tensor
 * names without NUL bytes, tensor names of 1 to TSR_MAX_NAME - 1 bytes,
 * tensor types it knows, and no arrays of arrays.
 * Tensors are then loaded into any backend buffer: host buffers point
 * into the mapping, device buffers get one copy from it.
 *
 * Writing builds the metadata in memory (tsr_gguf_writer) and streams
 * the file: header, metadata and tensor infos first, then each
 * tensor's data read from its backend and padded to the alignment.  */
#ifndef TESSERA_GGUF_H
#define TESSERA_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <tessera/backend.h>
#include <tessera/status.h>
#include <tessera/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSR_GGUF_VERSION 3
#define TSR_GGUF_DEFAULT_ALIGNMENT 32
#define TSR_GGUF_KEY_ALIGNMENT "general.alignment"

/* Metadata value types, numbered as in the file.  */
typedef enum tsr_gguf_type {
  TSR_GGUF_UINT8 = 0,
  TSR_GGUF_INT8 = 1,
  TSR_GGUF_UINT16 = 2,
  TSR_GGUF_INT16 = 3,
  TSR_GGUF_UINT32 = 4,
  TSR_GGUF_INT32 = 5,
  TSR_GGUF_FLOAT32 = 6,
  TSR_GGUF_BOOL = 7,
  TSR_GGUF_STRING = 8,
  TSR_GGUF_ARRAY = 9,
  TSR_GGUF_UINT64 = 10,
  TSR_GGUF_INT64 = 11,
  TSR_GGUF_FLOAT64 = 12,
  TSR_GGUF_TYPE_COUNT
} tsr_gguf_type;

/* "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string",
   "array", "u64", "i64", "f64"; "invalid" otherwise.  */
const char *tsr_gguf_type_name (tsr_gguf_type type);
/* Bytes of one value of a fixed-size TYPE; 0 for strings and arrays.  */
size_t tsr_gguf_type_size (tsr_gguf_type type);

/* The file's tensor type id of a Tessera type (f32 0, f16 1, q4_0 2,
   q4_1 3, q5_0 6, q5_1 7, q8_0 8, q2_K 10, q3_K 11, q4_K 12, q5_K 13,
   q6_K 14, q8_K 15, iq4_nl 20, iq4_xs 23, i32 26, bf16 30, mxfp4 39),
   and back: TSR_TYPE_COUNT for an id Tessera does not know.  */
uint32_t tsr_gguf_file_type (tsr_type type);
tsr_type tsr_gguf_tensor_type (uint32_t file_type);

/* Why opening failed.  MESSAGE is also the thread's tsr_last_error().  */
struct tsr_gguf_error {
  tsr_status status;      /* TSR_ERR_FORMAT for a malformed file */
  uint64_t offset;        /* byte offset of the offending field */
  char message[320];      /* "offset 8: n_tensors ... ", or the I/O error */
};

/* Reading.  */

typedef struct tsr_gguf tsr_gguf;

/* Map and validate the file PATH.  NULL on failure, with ERR (may be
   NULL) and tsr_last_error() saying why.  */
tsr_gguf *tsr_gguf_open (const char *path, struct tsr_gguf_error *err);
/* Validate the SIZE bytes at DATA, which must stay valid and unchanged
   until tsr_gguf_close and every buffer loaded from it are done.  */
tsr_gguf *tsr_gguf_from_memory (const void *data, size_t size,
                                struct tsr_gguf_error *err);
/* Release G.  Host buffers made by tsr_gguf_load_tensors keep the
   mapping alive until they are freed.  */
void tsr_gguf_close (tsr_gguf *g);

uint32_t tsr_gguf_version (const tsr_gguf *g);
size_t tsr_gguf_alignment (const tsr_gguf *g);
/* Size of the file, and the offset of its tensor data section.  */
uint64_t tsr_gguf_size (const tsr_gguf *g);
uint64_t tsr_gguf_data_offset (const tsr_gguf *g);

/* Metadata by position (0 .. n_kv - 1, in file order) and by key.  */
int64_t tsr_gguf_n_kv (const tsr_gguf *g);
/* Position of KEY, or -1.  */
int64_t tsr_gguf_find_key (const tsr_gguf *g, const char *key);
const char *tsr_gguf_kv_key (const tsr_gguf *g, int64_t i);
/* TSR_GGUF_TYPE_COUNT for a bad I.  */
tsr_gguf_type tsr_gguf_kv_type (const tsr_gguf *g, int64_t i);

/* Typed getters.  Each returns TSR_OK and stores the value, or
   TSR_ERR_NOT_FOUND (no such key) or TSR_ERR_TYPE (the key holds
   another type; nothing is converted) with a message.  */
int tsr_gguf_get_u8 (const tsr_gguf *g, const char *key, uint8_t *v);
int tsr_gguf_get_i8 (const tsr_gguf *g, const char *key, int8_t *v);
int tsr_gguf_get_u16 (const tsr_gguf *g, const char *key, uint16_t *v);
int tsr_gguf_get_i16 (const tsr_gguf *g, const char *key, int16_t *v);
int tsr_gguf_get_u32 (const tsr_gguf *g, const char *key, uint32_t *v);
int tsr_gguf_get_i32 (const tsr_gguf *g, const char *key, int32_t *v);
int tsr_gguf_get_u64 (const tsr_gguf *g, const char *key, uint64_t *v);
int tsr_gguf_get_i64 (const tsr_gguf *g, const char *key, int64_t *v);
int tsr_gguf_get_f32 (const tsr_gguf *g, const char *key, float *v);
int tsr_gguf_get_f64 (const tsr_gguf *g, const char *key, double *v);
int tsr_gguf_get_bool (const tsr_gguf *g, const char *key, bool *v);
/* A string: NUL-terminated (it may hold NULs of its own: LEN, which
   may be NULL, gives its length), valid until tsr_gguf_close.  */
int tsr_gguf_get_str (const tsr_gguf *g, const char *key, const char **s,
                      size_t *len);
/* An array: its element type and length.  */
int tsr_gguf_get_array_info (const tsr_gguf *g, const char *key,
                             tsr_gguf_type *elem_type, uint64_t *n);
/* Copy elements FIRST .. FIRST + COUNT - 1 of an array of ELEM_TYPE (a
   fixed-size type) into DST as host values (bool as one byte).  */
int tsr_gguf_get_array_data (const tsr_gguf *g, const char *key,
                             tsr_gguf_type elem_type, uint64_t first,
                             uint64_t count, void *dst);
/* Element I of an array of strings (as tsr_gguf_get_str).  */
int tsr_gguf_get_array_str (const tsr_gguf *g, const char *key, uint64_t i,
                            const char **s, size_t *len);

/* Tensor infos, in file order.  */
struct tsr_gguf_tensor_info {
  const char *name;
  int n_dims;                     /* as stored (0 to 4) */
  int64_t ne[TSR_MAX_DIMS];       /* unused dimensions are 1 */
  tsr_type type;
  uint32_t file_type;             /* the type id in the file */
  uint64_t offset;                /* in the data section */
  size_t size;                    /* bytes */
};

int64_t tsr_gguf_n_tensors (const tsr_gguf *g);
/* Position of the tensor NAME, or -1.  */
int64_t tsr_gguf_find_tensor (const tsr_gguf *g, const char *name);
/* TSR_OK, or TSR_ERR_INVALID_ARG for a bad I.  */
int tsr_gguf_get_tensor_info (const tsr_gguf *g, int64_t i,
                              struct tsr_gguf_tensor_info *info);
/* The bytes of tensor I in the mapping (read only), or NULL.  */
const void *tsr_gguf_tensor_data (const tsr_gguf *g, int64_t i);

/* Loading tensors.  */

/* Create in CTX one tensor per tensor of G, with its name, shape and
   type, in file order.  Tensors CTX already holds under the same name
   are kept (their shape and type must match).  In a no_alloc context
   the new tensors have no data (see tsr_gguf_load_tensors); in an
   allocating one they get a copy of the file's data.  */
int tsr_gguf_new_tensors (const tsr_gguf *g, tsr_context *ctx);

enum tsr_gguf_load_flag {
  /* Copy into a new buffer even where tensors could point into the
     mapping.  */
  TSR_GGUF_LOAD_COPY = 1
};

/* Give every tensor of CTX that names a tensor of G and has no data
   yet the file's data, in one new buffer, and return it (the caller
   frees it after the tensors).  With a host BUFT (or NULL) and a file
   opened with tsr_gguf_open whose tensors all lie at 32-byte aligned
   addresses, the buffer is the mapping itself: nothing is copied, the
   mapping is private (writes never reach the file) and lives until the
   buffer is freed.  Otherwise a buffer of BUFT (host
   when NULL) is allocated and each tensor is set from the mapping once.
   Shapes and types must match the file.  NULL with an error on
   failure or when no tensor of CTX needs data.  */
tsr_buffer *tsr_gguf_load_tensors (tsr_gguf *g, tsr_context *ctx,
                                   tsr_buffer_type *buft, unsigned flags);

/* Writing.  */

typedef struct tsr_gguf_writer tsr_gguf_writer;

tsr_gguf_writer *tsr_gguf_writer_new (void);
void tsr_gguf_writer_free (tsr_gguf_writer *w);

/* Setters add KEY at the end, or replace its value in place.  Setting
   general.alignment requires a u32 that is a power of two.  */
int tsr_gguf_set_u8 (tsr_gguf_writer *w, const char *key, uint8_t v);
int tsr_gguf_set_i8 (tsr_gguf_writer *w, const char *key, int8_t v);
int tsr_gguf_set_u16 (tsr_gguf_writer *w, const char *key, uint16_t v);
int tsr_gguf_set_i16 (tsr_gguf_writer *w, const char *key, int16_t v);
int tsr_gguf_set_u32 (tsr_gguf_writer *w, const char *key, uint32_t v);
int tsr_gguf_set_i32 (tsr_gguf_writer *w, const char *key, int32_t v);
int tsr_gguf_set_u64 (tsr_gguf_writer *w, const char *key, uint64_t v);
int tsr_gguf_set_i64 (tsr_gguf_writer *w, const char *key, int64_t v);
int tsr_gguf_set_f32 (tsr_gguf_writer *w, const char *key, float v);
int tsr_gguf_set_f64 (tsr_gguf_writer *w, const char *key, double v);
int tsr_gguf_set_bool (tsr_gguf_writer *w, const char *key, bool v);
int tsr_gguf_set_str (tsr_gguf_writer *w, const char *key, const char *s);
/* A string of LEN bytes (may hold NULs).  */
int tsr_gguf_set_strn (tsr_gguf_writer *w, const char *key, const char *s,
                       size_t len);
/* An array of N values of the fixed-size ELEM_TYPE, host values at DATA
   (bool: one byte each, 0 or 1).  */
int tsr_gguf_set_array (tsr_gguf_writer *w, const char *key,
                        tsr_gguf_type elem_type, const void *data,
                        uint64_t n);
int tsr_gguf_set_array_str (tsr_gguf_writer *w, const char *key,
                            const char *const *strs, uint64_t n);
/* Copy every key of G (in order) into W, replacing keys W has.  */
int tsr_gguf_writer_copy_kv (tsr_gguf_writer *w, const tsr_gguf *g);
int64_t tsr_gguf_writer_n_kv (const tsr_gguf_writer *w);

/* Add T (contiguous, named, with data in any buffer) as the next
   tensor.  Its shape is taken now; its data is read with
   tsr_tensor_get when the file is written, so T must live until then.  */
int tsr_gguf_writer_add_tensor (tsr_gguf_writer *w, const tsr_tensor *t);
int64_t tsr_gguf_writer_n_tensors (const tsr_gguf_writer *w);

/* Write the file: to STREAM (binary, written sequentially), to PATH,
   or to a new malloc'd block *DATA of *SIZE bytes the caller frees.
   PATH is written as a new file beside it, then renamed over it, so it
   is never left half-written and may be the file being read; an
   existing PATH must be a regular file (a symbolic link, device or
   FIFO is refused with TSR_ERR_INVALID_ARG, and left as it is).  */
int tsr_gguf_writer_write_stream (tsr_gguf_writer *w, FILE *stream);
int tsr_gguf_writer_write_file (tsr_gguf_writer *w, const char *path);
int tsr_gguf_writer_write_memory (tsr_gguf_writer *w, void **data,
                                  size_t *size);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_GGUF_H */
