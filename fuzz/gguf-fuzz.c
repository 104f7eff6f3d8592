/* gguf-fuzz.c - libFuzzer target for the GGUF reader.
 *
 * Parses the input with tsr_gguf_from_memory.  A rejected input must
 * come with a message that names a byte offset inside the input.  An
 * accepted one is walked completely (every key through its typed
 * getter, every array element, every tensor's bytes), its tensors are
 * loaded into a host buffer, and it is written back with the writer and
 * parsed again: the copy must parse, with the same keys and tensors.
 * Any violation aborts, which libFuzzer reports as a crash.  */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tessera.h>
#include <tessera/module.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
require (bool ok, const char *what)
{
  if (!ok)
    {
      fprintf (stderr, "gguf-fuzz: invariant broken: %s (%s)\n", what,
               tsr_last_error ());
      abort ();
    }
}

static volatile uint64_t sink;

static void
walk_array (const tsr_gguf *g, const char *key)
{
  tsr_gguf_type et;
  uint64_t n;
  require (tsr_gguf_get_array_info (g, key, &et, &n) == TSR_OK, "array info");
  if (et == TSR_GGUF_STRING)
    {
      for (uint64_t i = 0; i < n; i++)
        {
          const char *s;
          size_t len;
          require (tsr_gguf_get_array_str (g, key, i, &s, &len) == TSR_OK
                   && s[len] == '\0', "array string");
          sink += len;
        }
      require (tsr_gguf_get_array_str (g, key, n, &(const char *) { 0 },
                                       NULL) != TSR_OK,
               "array string past the end is refused");
      return;
    }
  uint64_t buf[64];
  size_t esize = tsr_gguf_type_size (et);
  for (uint64_t first = 0; first < n; first += 64)
    {
      uint64_t count = n - first < 64 ? n - first : 64;
      require (tsr_gguf_get_array_data (g, key, et, first, count, buf)
               == TSR_OK, "array data");
      sink += ((unsigned char *) buf)[(count - 1) * esize];
    }
  require (tsr_gguf_get_array_data (g, key, et, n, 1, buf) != TSR_OK,
           "array data past the end is refused");
}

static void
walk_kv (const tsr_gguf *g)
{
  for (int64_t i = 0; i < tsr_gguf_n_kv (g); i++)
    {
      const char *key = tsr_gguf_kv_key (g, i);
      require (key && tsr_gguf_find_key (g, key) == i, "key lookup");
      union { uint64_t u; double f; int8_t b[8]; } v;
      const char *s;
      int st;
      switch (tsr_gguf_kv_type (g, i))
        {
        case TSR_GGUF_UINT8: st = tsr_gguf_get_u8 (g, key, (uint8_t *) &v); break;
        case TSR_GGUF_INT8: st = tsr_gguf_get_i8 (g, key, v.b); break;
        case TSR_GGUF_UINT16: st = tsr_gguf_get_u16 (g, key, (uint16_t *) &v); break;
        case TSR_GGUF_INT16: st = tsr_gguf_get_i16 (g, key, (int16_t *) &v); break;
        case TSR_GGUF_UINT32: st = tsr_gguf_get_u32 (g, key, (uint32_t *) &v); break;
        case TSR_GGUF_INT32: st = tsr_gguf_get_i32 (g, key, (int32_t *) &v); break;
        case TSR_GGUF_FLOAT32: st = tsr_gguf_get_f32 (g, key, (float *) &v); break;
        case TSR_GGUF_BOOL: st = tsr_gguf_get_bool (g, key, (bool *) &v); break;
        case TSR_GGUF_STRING: st = tsr_gguf_get_str (g, key, &s, NULL); break;
        case TSR_GGUF_UINT64: st = tsr_gguf_get_u64 (g, key, &v.u); break;
        case TSR_GGUF_INT64: st = tsr_gguf_get_i64 (g, key, (int64_t *) &v); break;
        case TSR_GGUF_FLOAT64: st = tsr_gguf_get_f64 (g, key, &v.f); break;
        case TSR_GGUF_ARRAY: walk_array (g, key); st = TSR_OK; break;
        default: st = -1; break;
        }
      require (st == TSR_OK, "typed getter of the key's own type");
      require (tsr_gguf_get_u8 (g, key, (uint8_t *) &v) == TSR_OK
               || tsr_last_status () == TSR_ERR_TYPE, "type mismatch");
    }
}

static void
walk_tensors (tsr_gguf *g)
{
  for (int64_t i = 0; i < tsr_gguf_n_tensors (g); i++)
    {
      struct tsr_gguf_tensor_info info;
      require (tsr_gguf_get_tensor_info (g, i, &info) == TSR_OK
               && tsr_gguf_find_tensor (g, info.name) == i, "tensor info");
      const unsigned char *p = tsr_gguf_tensor_data (g, i);
      if (info.size)
        sink += p[0] + p[info.size - 1];
    }
  tsr_context *ctx = tsr_context_new (true);
  require (ctx != NULL, "context");
  require (tsr_gguf_new_tensors (g, ctx) == TSR_OK, "new tensors");
  if (tsr_gguf_n_tensors (g) > 0)
    {
      tsr_buffer *buf = tsr_gguf_load_tensors (g, ctx, NULL, 0);
      require (buf != NULL, "load tensors");
      tsr_buffer_free (buf);
    }
  tsr_context_free (ctx);
}

/* Write G back and parse the copy.  */
static void
round_trip (tsr_gguf *g)
{
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  tsr_context *ctx = tsr_context_new (false);
  require (w && ctx, "writer");
  require (tsr_gguf_writer_copy_kv (w, g) == TSR_OK, "copy kv");
  require (tsr_gguf_new_tensors (g, ctx) == TSR_OK, "host tensors");
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); t;
       t = tsr_context_next_tensor (ctx, t))
    require (tsr_gguf_writer_add_tensor (w, t) == TSR_OK, "add tensor");
  void *copy;
  size_t copy_size;
  require (tsr_gguf_writer_write_memory (w, &copy, &copy_size) == TSR_OK,
           "write");
  tsr_gguf *h = tsr_gguf_from_memory (copy, copy_size, NULL);
  require (h != NULL, "the written copy parses");
  require (tsr_gguf_n_kv (h) == tsr_gguf_n_kv (g)
           && tsr_gguf_n_tensors (h) == tsr_gguf_n_tensors (g),
           "the copy has the same counts");
  for (int64_t i = 0; i < tsr_gguf_n_tensors (g); i++)
    {
      struct tsr_gguf_tensor_info a, b;
      tsr_gguf_get_tensor_info (g, i, &a);
      tsr_gguf_get_tensor_info (h, i, &b);
      require (strcmp (a.name, b.name) == 0 && a.type == b.type
               && memcmp (a.ne, b.ne, sizeof a.ne) == 0
               && memcmp (tsr_gguf_tensor_data (g, i),
                          tsr_gguf_tensor_data (h, i), a.size) == 0,
               "the copy has the same tensors");
    }
  tsr_gguf_close (h);
  free (copy);
  tsr_context_free (ctx);
  tsr_gguf_writer_free (w);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct tsr_gguf_error err;
  tsr_gguf *g = tsr_gguf_from_memory (data, size, &err);
  if (!g)
    {
      char prefix[40];
      snprintf (prefix, sizeof prefix, "offset %llu: ",
                (unsigned long long) err.offset);
      require (err.status != TSR_OK && err.offset <= size
               && strncmp (err.message, prefix, strlen (prefix)) == 0,
               "a rejection names an offset inside the input");
      return 0;
    }
  walk_kv (g);
  walk_tensors (g);
  /* A copy with a huge alignment is mostly padding: skip it.  */
  if (tsr_gguf_alignment (g) <= 4096)
    round_trip (g);
  tsr_gguf_close (g);
  return 0;
}
