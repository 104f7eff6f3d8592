/* Write -> read round trip: a value of every one of the 13 metadata
   types (arrays of every fixed-size type and of strings), a tensor of
   every tensor type, written to a file and to memory by
   tsr_gguf_writer and read back exactly; typed getters refuse other
   types; the writer's own checks.  */
#include "gguf-test.h"

static const char *const strs[] = { "alpha", "", "\xc3\xa9t\xc3\xa9",
                                    "with space" };

static void
set_all_kv (tsr_gguf_writer *w)
{
  tsr_gguf_set_u8 (w, "t.u8", 200);
  tsr_gguf_set_i8 (w, "t.i8", -100);
  tsr_gguf_set_u16 (w, "t.u16", 60000);
  tsr_gguf_set_i16 (w, "t.i16", -30000);
  tsr_gguf_set_u32 (w, "t.u32", 4000000000u);
  tsr_gguf_set_i32 (w, "t.i32", -2000000000);
  tsr_gguf_set_f32 (w, "t.f32", 3.25f);
  tsr_gguf_set_bool (w, "t.bool", true);
  tsr_gguf_set_str (w, "t.str", "hello, gguf");
  tsr_gguf_set_u64 (w, "t.u64", 0xfedcba9876543210ULL);
  tsr_gguf_set_i64 (w, "t.i64", -0x123456789abcdefLL);
  tsr_gguf_set_f64 (w, "t.f64", -1.0 / 3.0);
  tsr_gguf_set_strn (w, "t.strn", "a\0b", 3);
  uint8_t u8[] = { 1, 2, 255 };
  int8_t i8[] = { -1, 0, 127 };
  uint16_t u16[] = { 1, 65535 };
  int16_t i16[] = { -32768, 32767 };
  uint32_t u32[] = { 7, 0xffffffffu };
  int32_t i32[] = { -5, 5, 0 };
  float f32[] = { 0.5f, -2.0f };
  uint8_t bools[] = { 1, 0, 1 };
  uint64_t u64[] = { 1ULL << 63 };
  int64_t i64[] = { -1, 1LL << 62 };
  double f64[] = { 1e300, -0.0 };
  tsr_gguf_set_array (w, "a.u8", TSR_GGUF_UINT8, u8, 3);
  tsr_gguf_set_array (w, "a.i8", TSR_GGUF_INT8, i8, 3);
  tsr_gguf_set_array (w, "a.u16", TSR_GGUF_UINT16, u16, 2);
  tsr_gguf_set_array (w, "a.i16", TSR_GGUF_INT16, i16, 2);
  tsr_gguf_set_array (w, "a.u32", TSR_GGUF_UINT32, u32, 2);
  tsr_gguf_set_array (w, "a.i32", TSR_GGUF_INT32, i32, 3);
  tsr_gguf_set_array (w, "a.f32", TSR_GGUF_FLOAT32, f32, 2);
  tsr_gguf_set_array (w, "a.bool", TSR_GGUF_BOOL, bools, 3);
  tsr_gguf_set_array (w, "a.u64", TSR_GGUF_UINT64, u64, 1);
  tsr_gguf_set_array (w, "a.i64", TSR_GGUF_INT64, i64, 2);
  tsr_gguf_set_array (w, "a.f64", TSR_GGUF_FLOAT64, f64, 2);
  tsr_gguf_set_array (w, "a.empty", TSR_GGUF_UINT32, NULL, 0);
  tsr_gguf_set_array_str (w, "a.str", strs, 4);
}

static void
check_scalars (const tsr_gguf *g, const char *how)
{
  uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32;
  int32_t i32; float f32; bool b; const char *s; size_t len;
  uint64_t u64; int64_t i64; double f64;
  CHECK (tsr_gguf_get_u8 (g, "t.u8", &u8) == TSR_OK && u8 == 200,
         "%s: u8", how);
  CHECK (tsr_gguf_get_i8 (g, "t.i8", &i8) == TSR_OK && i8 == -100,
         "%s: i8", how);
  CHECK (tsr_gguf_get_u16 (g, "t.u16", &u16) == TSR_OK && u16 == 60000,
         "%s: u16", how);
  CHECK (tsr_gguf_get_i16 (g, "t.i16", &i16) == TSR_OK && i16 == -30000,
         "%s: i16", how);
  CHECK (tsr_gguf_get_u32 (g, "t.u32", &u32) == TSR_OK
         && u32 == 4000000000u, "%s: u32", how);
  CHECK (tsr_gguf_get_i32 (g, "t.i32", &i32) == TSR_OK
         && i32 == -2000000000, "%s: i32", how);
  CHECK (tsr_gguf_get_f32 (g, "t.f32", &f32) == TSR_OK && f32 == 3.25f,
         "%s: f32", how);
  CHECK (tsr_gguf_get_bool (g, "t.bool", &b) == TSR_OK && b,
         "%s: bool", how);
  CHECK (tsr_gguf_get_str (g, "t.str", &s, &len) == TSR_OK
         && len == 11 && strcmp (s, "hello, gguf") == 0, "%s: string", how);
  CHECK (tsr_gguf_get_u64 (g, "t.u64", &u64) == TSR_OK
         && u64 == 0xfedcba9876543210ULL, "%s: u64", how);
  CHECK (tsr_gguf_get_i64 (g, "t.i64", &i64) == TSR_OK
         && i64 == -0x123456789abcdefLL, "%s: i64", how);
  CHECK (tsr_gguf_get_f64 (g, "t.f64", &f64) == TSR_OK
         && f64 == -1.0 / 3.0, "%s: f64", how);
  CHECK (tsr_gguf_get_str (g, "t.strn", &s, &len) == TSR_OK && len == 3
         && memcmp (s, "a\0b", 4) == 0, "%s: string with a NUL", how);
}

#define ARRAY_CHECK(how, key, type, ctype, n, ...)                         \
  do                                                                      \
    {                                                                     \
      ctype want[] = { __VA_ARGS__ }, got[n];                             \
      tsr_gguf_type et;                                                   \
      uint64_t count;                                                     \
      CHECK (tsr_gguf_get_array_info (g, key, &et, &count) == TSR_OK      \
             && et == type && count == n                                  \
             && tsr_gguf_get_array_data (g, key, type, 0, n, got)         \
                  == TSR_OK                                               \
             && memcmp (got, want, sizeof want) == 0, "%s: " key, how);   \
    }                                                                     \
  while (0)

static void
check_arrays (const tsr_gguf *g, const char *how)
{
  ARRAY_CHECK (how, "a.u8", TSR_GGUF_UINT8, uint8_t, 3, 1, 2, 255);
  ARRAY_CHECK (how, "a.i8", TSR_GGUF_INT8, int8_t, 3, -1, 0, 127);
  ARRAY_CHECK (how, "a.u16", TSR_GGUF_UINT16, uint16_t, 2, 1, 65535);
  ARRAY_CHECK (how, "a.i16", TSR_GGUF_INT16, int16_t, 2, -32768, 32767);
  ARRAY_CHECK (how, "a.u32", TSR_GGUF_UINT32, uint32_t, 2, 7, 0xffffffffu);
  ARRAY_CHECK (how, "a.i32", TSR_GGUF_INT32, int32_t, 3, -5, 5, 0);
  ARRAY_CHECK (how, "a.f32", TSR_GGUF_FLOAT32, float, 2, 0.5f, -2.0f);
  ARRAY_CHECK (how, "a.bool", TSR_GGUF_BOOL, uint8_t, 3, 1, 0, 1);
  ARRAY_CHECK (how, "a.u64", TSR_GGUF_UINT64, uint64_t, 1, 1ULL << 63);
  ARRAY_CHECK (how, "a.i64", TSR_GGUF_INT64, int64_t, 2, -1, 1LL << 62);
  ARRAY_CHECK (how, "a.f64", TSR_GGUF_FLOAT64, double, 2, 1e300, -0.0);
  tsr_gguf_type et;
  uint64_t n;
  CHECK (tsr_gguf_get_array_info (g, "a.empty", &et, &n) == TSR_OK
         && et == TSR_GGUF_UINT32 && n == 0, "%s: empty array", how);
  int ok = tsr_gguf_get_array_info (g, "a.str", &et, &n) == TSR_OK
           && et == TSR_GGUF_STRING && n == 4;
  for (uint64_t i = 0; ok && i < 4; i++)
    {
      const char *s;
      size_t len;
      ok = tsr_gguf_get_array_str (g, "a.str", i, &s, &len) == TSR_OK
           && len == strlen (strs[i]) && strcmp (s, strs[i]) == 0;
    }
  CHECK (ok, "%s: array of strings", how);
  /* Part of an array.  */
  int32_t part[2];
  CHECK (tsr_gguf_get_array_data (g, "a.i32", TSR_GGUF_INT32, 1, 2, part)
         == TSR_OK && part[0] == 5 && part[1] == 0, "%s: array slice", how);
}

/* Tensors of every type, host data filled with a byte pattern.  */
static const struct
{
  tsr_type type;
  int n_dims;
  int64_t ne[4];
} shapes[] = {
  { TSR_TYPE_F32, 2, { 5, 3 } },
  { TSR_TYPE_F16, 3, { 4, 2, 3 } },
  { TSR_TYPE_BF16, 1, { 7 } },
  { TSR_TYPE_I32, 4, { 2, 1, 3, 2 } },
  { TSR_TYPE_Q8_0, 2, { 64, 3 } },
  { TSR_TYPE_Q4_0, 2, { 32, 5 } },
};
#define N_SHAPES (int) (sizeof shapes / sizeof shapes[0])

static void
check_tensors (const tsr_gguf *g, tsr_context *ctx, const char *how)
{
  CHECK (tsr_gguf_n_tensors (g) == N_SHAPES, "%s: tensor count", how);
  int k = 0;
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); t;
       t = tsr_context_next_tensor (ctx, t), k++)
    {
      struct tsr_gguf_tensor_info info;
      int64_t i = tsr_gguf_find_tensor (g, t->name);
      int ok = i == k && tsr_gguf_get_tensor_info (g, i, &info) == TSR_OK
               && strcmp (info.name, t->name) == 0 && info.type == t->type
               && info.file_type == tsr_gguf_file_type (t->type)
               && info.n_dims == shapes[k].n_dims
               && memcmp (info.ne, t->ne, sizeof t->ne) == 0
               && info.size == tsr_nbytes (t)
               && info.offset % tsr_gguf_alignment (g) == 0
               && memcmp (tsr_gguf_tensor_data (g, i), t->data, info.size)
                    == 0;
      CHECK (ok, "%s: %s tensor '%s' (info and data)", how,
             tsr_type_name (t->type), t->name);
    }
}

static void
check_mismatches (const tsr_gguf *g)
{
  uint32_t u32;
  int32_t i32[2];
  const char *s;
  CHECK (tsr_gguf_get_u32 (g, "t.i32", &u32) == TSR_ERR_TYPE
         && strstr (tsr_last_error (), "is a i32, not a u32"),
         "get_u32 on an i32 key: type error (%s)", tsr_last_error ());
  CHECK (tsr_gguf_get_str (g, "a.str", &s, NULL) == TSR_ERR_TYPE,
         "get_str on an array: type error");
  CHECK (tsr_gguf_get_array_data (g, "a.u32", TSR_GGUF_INT32, 0, 1, i32)
         == TSR_ERR_TYPE && strstr (tsr_last_error (), "array of u32"),
         "array of u32 read as i32: type error");
  CHECK (tsr_gguf_get_array_data (g, "a.i32", TSR_GGUF_INT32, 2, 2, i32)
         == TSR_ERR_INVALID_ARG, "array read past its end refused");
  CHECK (tsr_gguf_get_array_str (g, "a.str", 4, &s, NULL)
         == TSR_ERR_INVALID_ARG, "string past the array's end refused");
  CHECK (tsr_gguf_get_u32 (g, "no.such.key", &u32) == TSR_ERR_NOT_FOUND
         && tsr_gguf_find_key (g, "no.such.key") == -1,
         "missing key: not found");
  CHECK (tsr_gguf_find_tensor (g, "nope") == -1, "missing tensor: -1");
}

static void
check_writer_errors (tsr_context *ctx)
{
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  CHECK (tsr_gguf_set_u32 (w, "general.alignment", 48) == TSR_ERR_INVALID_ARG,
         "writer refuses alignment 48");
  CHECK (tsr_gguf_set_u32 (w, "general.alignment", 0) == TSR_ERR_INVALID_ARG,
         "writer refuses alignment 0");
  CHECK (tsr_gguf_set_i32 (w, "general.alignment", 64) == TSR_ERR_TYPE,
         "writer refuses an i32 alignment");
  uint8_t bad = 2;
  CHECK (tsr_gguf_set_array (w, "b", TSR_GGUF_BOOL, &bad, 1)
         == TSR_ERR_INVALID_ARG, "writer refuses bool 2");
  CHECK (tsr_gguf_set_array (w, "s", TSR_GGUF_STRING, strs, 1)
         == TSR_ERR_TYPE, "set_array refuses strings");
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 4, 3);
  CHECK (tsr_gguf_writer_add_tensor (w, a) == TSR_ERR_INVALID_ARG,
         "writer refuses an unnamed tensor");
  tsr_set_name (a, "a");
  tsr_tensor *at = tsr_transpose (ctx, a);
  tsr_set_name (at, "at");
  CHECK (tsr_gguf_writer_add_tensor (w, a) == TSR_OK
         && tsr_gguf_writer_add_tensor (w, a) == TSR_ERR_INVALID_ARG,
         "writer refuses a duplicate tensor name");
  CHECK (tsr_gguf_writer_add_tensor (w, at) == TSR_ERR_INVALID_ARG,
         "writer refuses a non-contiguous view");
  /* Replacing a key keeps its place and count.  */
  tsr_gguf_set_u8 (w, "x", 1);
  tsr_gguf_set_str (w, "y", "y");
  tsr_gguf_set_f32 (w, "x", 2.0f);
  CHECK (tsr_gguf_writer_n_kv (w) == 2, "set on an existing key replaces "
         "it");
  tsr_gguf_writer_free (w);
}

int
main (void)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  set_all_kv (w);
  tsr_gguf_set_u32 (w, "general.alignment", 64);
  for (int k = 0; k < N_SHAPES; k++)
    {
      tsr_tensor *t = tsr_new_tensor (ctx, shapes[k].type, shapes[k].n_dims,
                                      shapes[k].ne);
      char name[32];
      snprintf (name, sizeof name, "blk.%d.%s", k,
                tsr_type_name (shapes[k].type));
      tsr_set_name (t, name);
      for (size_t b = 0; b < tsr_nbytes (t); b++)
        ((unsigned char *) t->data)[b] = (unsigned char) (b * 7 + k);
      tsr_gguf_writer_add_tensor (w, t);
    }
  CHECK (tsr_gguf_writer_n_kv (w) == 27 && tsr_gguf_writer_n_tensors (w)
         == N_SHAPES, "writer holds 27 keys and %d tensors", N_SHAPES);

  const char *path = gt_path ("roundtrip");
  CHECK (tsr_gguf_writer_write_file (w, path) == TSR_OK, "write file: %s",
         tsr_last_error ());
  struct tsr_gguf_error err;
  tsr_gguf *g = tsr_gguf_open (path, &err);
  CHECK (g != NULL, "open the written file: %s", g ? "" : err.message);
  if (g)
    {
      CHECK (tsr_gguf_version (g) == 3 && tsr_gguf_alignment (g) == 64
             && tsr_gguf_data_offset (g) % 64 == 0
             && tsr_gguf_size (g) % 64 == 0,
             "version 3, alignment 64, data section aligned");
      int order = tsr_gguf_n_kv (g) == 27
                  && strcmp (tsr_gguf_kv_key (g, 0), "t.u8") == 0
                  && tsr_gguf_kv_type (g, 0) == TSR_GGUF_UINT8
                  && strcmp (tsr_gguf_kv_key (g, 26), "general.alignment")
                       == 0
                  && tsr_gguf_kv_type (g, 25) == TSR_GGUF_ARRAY;
      CHECK (order, "keys in the order they were set");
      check_scalars (g, "file");
      check_arrays (g, "file");
      check_tensors (g, ctx, "file");
      check_mismatches (g);
    }

  void *mem;
  size_t size;
  CHECK (tsr_gguf_writer_write_memory (w, &mem, &size) == TSR_OK
         && g && size == tsr_gguf_size (g), "write to memory");
  FILE *f = fopen (path, "rb");
  unsigned char *disk = malloc (size + 1);
  CHECK (f && fread (disk, 1, size + 1, f) == size
         && memcmp (disk, mem, size) == 0,
         "memory and file output are the same bytes");
  if (f)
    fclose (f);
  free (disk);
  tsr_gguf *m = tsr_gguf_from_memory (mem, size, NULL);
  CHECK (m != NULL, "from_memory parses the written bytes");
  if (m)
    {
      check_scalars (m, "memory");
      check_arrays (m, "memory");
      check_tensors (m, ctx, "memory");
      /* Copying every key into a new writer gives the same metadata.  */
      tsr_gguf_writer *w2 = tsr_gguf_writer_new ();
      tsr_gguf_writer_copy_kv (w2, m);
      void *mem2;
      size_t size2;
      tsr_gguf_writer_write_memory (w2, &mem2, &size2);
      tsr_gguf *m2 = tsr_gguf_from_memory (mem2, size2, NULL);
      CHECK (m2 && tsr_gguf_n_kv (m2) == 27 && tsr_gguf_alignment (m2) == 64,
             "copy_kv copies all keys");
      if (m2)
        check_scalars (m2, "copied");
      tsr_gguf_close (m2);
      free (mem2);
      tsr_gguf_writer_free (w2);
      tsr_gguf_close (m);
    }
  free (mem);
  tsr_gguf_close (g);
  remove (path);
  tsr_gguf_writer_free (w);
  check_writer_errors (ctx);
  tsr_context_free (ctx);
  return TSR_TEST_EXIT ();
}
