/* Validation: every kind of malformed file is refused with its own
   message naming the byte offset of the offending field, and nothing
   crashes or reads past the end (valgrind and ASan runs cover the
   latter).  Files are built byte by byte from the format description,
   each from a valid base with one field changed.  */
#include "gguf-test.h"

/* The base file: 3 keys, 2 f32 tensors.  Every field can be changed.  */
struct knobs
{
  uint32_t version;
  uint64_t n_tensors, n_kv;
  const char *key[3];
  uint32_t kv_type[3];
  uint32_t align_value;
  uint32_t elem_type;
  uint64_t arr_len;
  uint64_t key0_len;            /* 0: the real length */
  const char *name[2];
  uint32_t n_dims[2];
  uint64_t ne[2][5];
  uint32_t ttype[2];
  uint64_t offset[2];
  unsigned char bool_value;
};

/* Where the builder put each field.  */
struct where
{
  size_t kv[3], kv_type[3], kv_value[3], arr_len, arr_str1;
  size_t t[2], t_ndims[2], t_dim1[2], t_type[2], t_offset[2];
  size_t data, size;
};

static struct knobs
base (void)
{
  struct knobs k = {
    3, 2, 4,
    { "general.architecture", "general.alignment", "tokenizer.ggml.tokens" },
    { GT_STRING, GT_U32, GT_ARRAY },
    32, GT_STRING, 2, 0,
    { "w", "b" },
    { 2, 1 },
    { { 4, 2 }, { 4 } },
    { GT_TYPE_F32, GT_TYPE_F32 },
    { 0, 32 },
    1,
  };
  return k;
}

static void
build (struct gt_buf *b, const struct knobs *k, struct where *w)
{
  memset (b, 0, sizeof *b);
  gt_header (b, k->version, k->n_tensors, k->n_kv);
  w->kv[0] = b->n;
  gt_u64 (b, k->key0_len ? k->key0_len : strlen (k->key[0]));
  gt_bytes (b, k->key[0], strlen (k->key[0]));
  w->kv_type[0] = b->n;
  gt_u32 (b, k->kv_type[0]);
  w->kv_value[0] = b->n;
  gt_str (b, "llama");
  w->kv[1] = b->n;
  gt_str (b, k->key[1]);
  w->kv_type[1] = b->n;
  gt_u32 (b, k->kv_type[1]);
  w->kv_value[1] = b->n;
  if (k->kv_type[1] == GT_STRING)
    gt_str (b, "32");
  else
    gt_u32 (b, k->align_value);
  w->kv[2] = b->n;
  gt_str (b, k->key[2]);
  w->kv_type[2] = b->n;
  gt_u32 (b, k->kv_type[2]);
  w->kv_value[2] = b->n;
  gt_u32 (b, k->elem_type);
  w->arr_len = b->n;
  gt_u64 (b, k->arr_len);
  gt_str (b, "a");
  w->arr_str1 = b->n;
  gt_str (b, "bc");
  gt_key (b, "flag", GT_BOOL);
  gt_u8 (b, k->bool_value);
  for (int i = 0; i < 2; i++)
    {
      w->t[i] = b->n;
      gt_str (b, k->name[i]);
      w->t_ndims[i] = b->n;
      gt_u32 (b, k->n_dims[i]);
      w->t_dim1[i] = b->n + 8;
      for (uint32_t d = 0; d < k->n_dims[i]; d++)
        gt_u64 (b, k->ne[i][d]);
      w->t_type[i] = b->n;
      gt_u32 (b, k->ttype[i]);
      w->t_offset[i] = b->n;
      gt_u64 (b, k->offset[i]);
    }
  gt_pad (b, 32);
  w->data = b->n;
  for (int i = 0; i < 64; i++)
    gt_u8 (b, i);
  w->size = b->n;
}

/* Parse SIZE bytes of B: must fail at OFFSET with WANT in the message.  */
static void
expect (const char *desc, const unsigned char *p, size_t size,
        uint64_t offset, const char *want)
{
  struct tsr_gguf_error err;
  memset (&err, 0, sizeof err);
  tsr_gguf *g = tsr_gguf_from_memory (p, size, &err);
  char prefix[64];
  snprintf (prefix, sizeof prefix, "offset %llu: ",
            (unsigned long long) offset);
  int ok = !g && err.status == TSR_ERR_FORMAT && err.offset == offset
           && strncmp (err.message, prefix, strlen (prefix)) == 0
           && strstr (err.message, want)
           && strcmp (tsr_last_error (), err.message) == 0;
  CHECK (ok, "%s: wanted \"%s%s\", got \"%s\"", desc, prefix, want,
         g ? "(accepted)" : err.message);
  tsr_gguf_close (g);
}

/* Build K and expect a failure at the field FIELD of the result.  */
#define EXPECT(desc, field, want)                                         \
  do                                                                      \
    {                                                                     \
      struct gt_buf b;                                                    \
      struct where w;                                                     \
      build (&b, &k, &w);                                                 \
      expect (desc, b.p, b.n, field, want);                               \
      gt_free (&b);                                                       \
      k = base ();                                                        \
    }                                                                     \
  while (0)

static void
header_cases (void)
{
  struct knobs k = base ();
  struct gt_buf b;
  struct where w;
  build (&b, &k, &w);
  tsr_gguf *g = tsr_gguf_from_memory (b.p, b.n, NULL);
  CHECK (g && tsr_gguf_n_kv (g) == 4 && tsr_gguf_n_tensors (g) == 2,
         "the base file is valid: %s", g ? "" : tsr_last_error ());
  tsr_gguf_close (g);

  b.p[3] = 'X';
  expect ("bad magic", b.p, b.n, 0, "bad magic \"GGUX\": not a GGUF file");
  b.p[3] = 'F';
  gt_free (&b);

  k.version = 4;
  EXPECT ("unsupported version", 4, "unsupported GGUF version 4");
  k.version = 1;
  EXPECT ("version 1", 4, "GGUF version 1 (32-bit counts) is not supported");
  k.version = 0x03000000;
  EXPECT ("big-endian file", 4, "big-endian GGUF file");

  k.n_tensors = 1ULL << 32;
  build (&b, &k, &w);
  char want[128];
  snprintf (want, sizeof want, "n_tensors 4294967296 exceeds what a "
            "%zu-byte file can hold", b.n);
  gt_free (&b);
  EXPECT ("absurd n_tensors", 8, want);
  k.n_kv = 1ULL << 40;
  EXPECT ("absurd n_kv", 16, "n_kv 1099511627776 exceeds what a");
}

static void
metadata_cases (void)
{
  struct knobs k = base ();
  struct where w;
  struct gt_buf b;
  build (&b, &k, &w);
  gt_free (&b);

  k.key0_len = 1ULL << 62;
  EXPECT ("key length beyond the file", 24, "the key of metadata entry 0 "
          "is 4611686018427387904 bytes long, but only");
  k.arr_len = 1ULL << 61;
  EXPECT ("array of strings longer than the file", w.arr_len,
          "array 'tokenizer.ggml.tokens' of 2305843009213693952 strings "
          "needs more than the");
  k.elem_type = GT_U32;
  k.arr_len = 1ULL << 40;
  EXPECT ("u32 array longer than the file", w.arr_len,
          "array 'tokenizer.ggml.tokens' of 1099511627776 u32 values needs "
          "more than the");
  k.kv_type[0] = 13;
  EXPECT ("unknown value type", w.kv_type[0],
          "key 'general.architecture' has unknown value type 13");
  k.elem_type = 99;
  EXPECT ("unknown array element type", w.kv_value[2],
          "array 'tokenizer.ggml.tokens' has unknown element type 99");
  k.elem_type = GT_ARRAY;
  EXPECT ("nested array", w.kv_value[2], "nested arrays are not supported");
  k.key[2] = "general.architecture";
  EXPECT ("duplicate key", w.kv[2], "duplicate key 'general.architecture' "
          "(first at offset 24)");
  k.bool_value = 2;
  build (&b, &k, &w);
  size_t bool_at = w.t[0] - 1;
  gt_free (&b);
  EXPECT ("bool neither 0 nor 1", bool_at, "bool 'flag' is 2, neither 0 "
          "nor 1");
  k.align_value = 0;
  EXPECT ("alignment 0", w.kv_value[1], "general.alignment is 0");
  k.align_value = 48;
  EXPECT ("alignment not a power of two", w.kv_value[1],
          "general.alignment 48 is not a power of two");
  k.kv_type[1] = GT_STRING;
  EXPECT ("alignment of the wrong type", w.kv_value[1],
          "general.alignment is a string; it must be a u32");
}

static void
tensor_cases (void)
{
  struct knobs k = base ();
  struct where w;
  struct gt_buf b;
  build (&b, &k, &w);
  gt_free (&b);

  k.ttype[0] = 4;                /* the retired q4_2 */
  EXPECT ("unknown tensor type", w.t_type[0],
          "tensor 'w' has unknown tensor type 4");
  k.ttype[1] = 12345;
  EXPECT ("unknown tensor type (large id)", w.t_type[1],
          "tensor 'b' has unknown tensor type 12345");
  k.name[1] = "w";
  EXPECT ("duplicate tensor name", w.t[1], "duplicate tensor name 'w' "
          "(first at offset");
  k.n_dims[0] = 5;
  k.ne[0][2] = k.ne[0][3] = k.ne[0][4] = 1;
  EXPECT ("too many dimensions", w.t_ndims[0],
          "tensor 'w' has 5 dimensions (at most 4)");
  k.n_dims[0] = 3;
  k.ne[0][0] = k.ne[0][1] = k.ne[0][2] = 1ULL << 32;
  EXPECT ("dimensions overflow when multiplied", w.t[0],
          "the dimensions of tensor 'w' (4294967296 x 4294967296 x "
          "4294967296 x 1) overflow when multiplied");
  k.ne[0][1] = 1ULL << 63;
  EXPECT ("dimension above 2^63 - 1", w.t_dim1[0],
          "dimension 1 of tensor 'w' is 9223372036854775808, more than");
  k.ttype[0] = GT_TYPE_Q8_0;
  EXPECT ("row not a multiple of the block size", w.t_type[0],
          "tensor 'w' has rows of 4 elements, not a multiple of the q8_0 "
          "block size 32");
  k.offset[1] = 4096;
  EXPECT ("offset outside the data section", w.t_offset[1],
          "tensor 'b' data [4096, 4112) lies outside the data section of 64 "
          "bytes");
  k.offset[1] = 0;
  EXPECT ("overlapping tensors", w.t_offset[0],
          "tensors 'b' [0, 16) and 'w' [0, 32) overlap");
  k.offset[1] = 16;
  EXPECT ("misaligned offset", w.t_offset[1],
          "tensor 'b' has offset 16, not a multiple of the alignment 32");
  k.offset[1] = UINT64_MAX - 31;
  EXPECT ("offset near 2^64", w.t_offset[1], "lies outside the data "
          "section");
  k.name[0] = "";
  EXPECT ("empty tensor name", w.t[0], "tensor 0 has an empty name");
  k.name[1] = "a-name-that-is-far-too-long-for-a-tessera-tensor-name-"
              "0123456789";
  EXPECT ("tensor name too long", w.t[1], "bytes long (at most 63)");
}

/* Every prefix of the base file is refused, each naming the field it
   cuts (or a count the prefix cannot hold).  */
static void
truncation_cases (void)
{
  struct knobs k = base ();
  struct where w;
  struct gt_buf b;
  build (&b, &k, &w);
  int all = 1;
  /* The tensors end 48 bytes into the data section; the padding after
     the last one may be left out.  */
  size_t end = w.data + 48;
  for (size_t n = 0; n < b.n; n++)
    {
      tsr_gguf *g = tsr_gguf_from_memory (b.p, n, NULL);
      if ((g != NULL) != (n >= end))
        {
          CHECK (0, "prefix of %zu bytes %s", n, g ? "accepted"
                 : tsr_last_error ());
          all = 0;
        }
      tsr_gguf_close (g);
    }
  for (size_t n = 0; n < end; n++)
    {
      struct tsr_gguf_error err;
      tsr_gguf *g = tsr_gguf_from_memory (b.p, n, &err);
      if (g || err.offset > n
          || !(strstr (err.message, "the file ends inside")
               || strstr (err.message, "bytes are left in the file")
               || strstr (err.message, "file can hold")
               || strstr (err.message, "needs more than the")
               || strstr (err.message, "lies outside the data section")))
        {
          CHECK (0, "prefix of %zu bytes refused: %s", n,
                 g ? "accepted" : err.message);
          all = 0;
        }
      tsr_gguf_close (g);
    }
  CHECK (all, "the %zu prefixes of the base file without all tensor data "
         "refused, the longer ones accepted", end);
  static const struct
  {
    const char *desc;
    int field;                  /* index into the table below */
    size_t plus;
    const char *want;
  } cuts[] = {
    { "magic", 0, 2, "the file ends inside the magic" },
    { "version", 0, 6, "the file ends inside the version" },
    { "tensor count", 0, 10, "the file ends inside the tensor count" },
    { "metadata count", 0, 20, "the file ends inside the metadata count" },
    { "key length", 1, 3, "ends inside the length of the key of metadata "
      "entry 2" },
    { "key", 1, 12, "the key of metadata entry 2 is 21 bytes long, but "
      "only" },
    { "value type", 2, 1, "ends inside the value type of "
      "'tokenizer.ggml.tokens'" },
    { "array element type", 3, 2, "ends inside the element type of array "
      "'tokenizer.ggml.tokens'" },
    { "array length", 4, 5, "ends inside the length of array "
      "'tokenizer.ggml.tokens'" },
    { "array string length", 5, 7, "ends inside the length of string 1 of "
      "array 'tokenizer.ggml.tokens'" },
    { "array string", 5, 9, "string 1 of array 'tokenizer.ggml.tokens' is "
      "2 bytes long, but only 1" },
    { "u32 value", 6, 3, "ends inside the u32 value of "
      "'general.alignment'" },
    { "tensor name length", 7, 4, "ends inside the length of the name of "
      "tensor 0" },
    { "tensor dimension count", 8, 2, "ends inside the dimension count of "
      "tensor 'w'" },
    { "tensor dimension", 9, 7, "ends inside dimension 1 of tensor 'w'" },
    { "tensor type", 10, 3, "ends inside the type of tensor 'w'" },
    { "tensor offset", 11, 7, "ends inside the offset of tensor 'b'" },
    { "tensor data", 12, 40, "tensor 'b' data [32, 48) lies outside the "
      "data section of 40 bytes" },
  };
  size_t at[] = { 0, w.kv[2], w.kv_type[2], w.kv_value[2], w.arr_len,
                  w.arr_str1, w.kv_value[1], w.t[0], w.t_ndims[0],
                  w.t_dim1[0], w.t_type[0], w.t_offset[1], w.data };
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
    {
      size_t n = at[cuts[i].field] + cuts[i].plus;
      struct tsr_gguf_error err;
      tsr_gguf *g = tsr_gguf_from_memory (b.p, n, &err);
      CHECK (!g && strstr (err.message, cuts[i].want),
             "cut inside the %s: \"%s\"", cuts[i].desc,
             g ? "accepted" : err.message);
      tsr_gguf_close (g);
    }
  gt_free (&b);
}

static void
file_cases (void)
{
  struct tsr_gguf_error err;
  tsr_gguf *g = tsr_gguf_open ("/nonexistent/model.gguf", &err);
  CHECK (!g && err.status == TSR_ERR_NOT_FOUND
         && strstr (err.message, "cannot open '/nonexistent/model.gguf'"),
         "missing file: %s", err.message);
  const char *dir = getenv ("TSR_TEST_BUILDDIR");
  g = tsr_gguf_open (dir ? dir : ".", &err);
  CHECK (!g && strstr (err.message, "not a regular file"),
         "directory: %s", err.message);
  const char *path = gt_path ("empty");
  FILE *f = fopen (path, "wb");
  if (f)
    fclose (f);
  g = tsr_gguf_open (path, &err);
  CHECK (!g && err.offset == 0 && strstr (err.message, "inside the magic"),
         "empty file: %s", err.message);
  remove (path);
}

int
main (void)
{
  header_cases ();
  metadata_cases ();
  tensor_cases ();
  truncation_cases ();
  file_cases ();
  return TSR_TEST_EXIT ();
}
