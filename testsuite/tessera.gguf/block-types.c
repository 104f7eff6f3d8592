/* The block types q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K q6_K q8_K iq4_nl
   iq4_xs mxfp4 in GGUF files, both ways:
   - a file written byte by byte here with the format's type ids (3, 6,
     7, 10..15, 20, 23, 39) reads back with each tensor's type, size
     (rows times blocks times the published block bytes) and bytes;
   - Tessera's writer writes each type with those ids, and the data
     (quantized from known floats) reads back identical;
   - a row that is not a whole number of blocks is refused.  */
#include "gguf-test.h"

static const struct
{
  const char *name;
  uint32_t id;
  int qk, bytes;
} types[] = {
  { "q4_1", 3, 32, 20 },    { "q5_0", 6, 32, 22 },   { "q5_1", 7, 32, 24 },
  { "q2_K", 10, 256, 84 },  { "q3_K", 11, 256, 110 }, { "q4_K", 12, 256, 144 },
  { "q5_K", 13, 256, 176 }, { "q6_K", 14, 256, 210 }, { "q8_K", 15, 256, 292 },
  { "iq4_nl", 20, 32, 18 }, { "iq4_xs", 23, 256, 136 }, { "mxfp4", 39, 32, 17 },
};
#define N_TYPES (sizeof types / sizeof types[0])
#define ROWS 3

/* Tensor I: [512, ROWS] of type I, data the pattern of I.  */
static size_t
tensor_bytes (size_t i)
{
  return (size_t) (512 / types[i].qk) * types[i].bytes * ROWS;
}

static void
independent_file (void)
{
  struct gt_buf b = { 0 };
  uint64_t offset = 0, offsets[N_TYPES];
  gt_header (&b, 3, N_TYPES, 0);
  for (size_t i = 0; i < N_TYPES; i++)
    {
      uint64_t ne[2] = { 512, ROWS };
      offsets[i] = offset;
      gt_tensor_info (&b, types[i].name, 2, ne, types[i].id, offset);
      offset += (tensor_bytes (i) + 31) / 32 * 32;
    }
  gt_pad (&b, 32);
  size_t data = b.n;
  for (size_t i = 0; i < N_TYPES; i++)
    {
      while (b.n < data + offsets[i])
        gt_u8 (&b, 0);
      for (size_t k = 0; k < tensor_bytes (i); k++)
        gt_u8 (&b, (k * 13 + i) & 0xff);
    }
  struct tsr_gguf_error err;
  tsr_gguf *g = tsr_gguf_from_memory (b.p, b.n, &err);
  CHECK (g != NULL, "a file with every block type parses%s%s", g ? "" : ": ",
         g ? "" : err.message);
  for (size_t i = 0; g && i < N_TYPES; i++)
    {
      struct tsr_gguf_tensor_info info;
      tsr_gguf_get_tensor_info (g, (int64_t) i, &info);
      const unsigned char *p = tsr_gguf_tensor_data (g, (int64_t) i);
      int same = p != NULL;
      for (size_t k = 0; same && k < tensor_bytes (i); k++)
        same = p[k] == ((k * 13 + i) & 0xff);
      CHECK (info.type == tsr_type_from_name (types[i].name)
             && info.file_type == types[i].id
             && tsr_gguf_file_type (info.type) == types[i].id
             && info.size == tensor_bytes (i) && same,
             "type id %u reads as %s, %zu bytes, data intact", types[i].id,
             types[i].name, tensor_bytes (i));
    }
  tsr_gguf_close (g);
  gt_free (&b);
}

static void
writer_round_trip (void)
{
  tsr_context *ctx = tsr_context_new (false);
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  float x[512 * ROWS];
  tsr_test_seed (5);
  for (int i = 0; i < 512 * ROWS; i++)
    x[i] = tsr_test_uniform (-2, 2);
  for (size_t i = 0; i < N_TYPES; i++)
    {
      tsr_type t = tsr_type_from_name (types[i].name);
      tsr_tensor *tt = tsr_new_tensor_2d (ctx, t, 512, ROWS);
      tsr_set_name (tt, types[i].name);
      tsr_quantize_row (t, x, tt->data, 512 * ROWS);
      tsr_gguf_writer_add_tensor (w, tt);
    }
  void *data = NULL;
  size_t size = 0;
  int st = tsr_gguf_writer_write_memory (w, &data, &size);
  tsr_gguf *g = st == TSR_OK ? tsr_gguf_from_memory (data, size, NULL) : NULL;
  CHECK (g != NULL, "Tessera writes a file with every block type");
  for (size_t i = 0; g && i < N_TYPES; i++)
    {
      tsr_tensor *tt = tsr_context_get_tensor (ctx, types[i].name);
      struct tsr_gguf_tensor_info info;
      tsr_gguf_get_tensor_info (g, tsr_gguf_find_tensor (g, types[i].name),
                                &info);
      CHECK (info.file_type == types[i].id && info.type == tt->type
             && info.size == tensor_bytes (i)
             && memcmp (tsr_gguf_tensor_data (g, tsr_gguf_find_tensor
                                                   (g, types[i].name)),
                        tt->data, info.size) == 0,
             "%s written with id %u reads back identical", types[i].name,
             types[i].id);
    }
  tsr_gguf_close (g);
  free (data);
  tsr_gguf_writer_free (w);
  tsr_context_free (ctx);
}

static void
partial_block (void)
{
  struct gt_buf b = { 0 };
  uint64_t ne[2] = { 288, 1 };
  gt_header (&b, 3, 1, 0);
  gt_tensor_info (&b, "w", 2, ne, 12, 0);
  gt_pad (&b, 32);
  for (int k = 0; k < 144 * 2; k++)
    gt_u8 (&b, 0);
  struct tsr_gguf_error err;
  tsr_gguf *g = tsr_gguf_from_memory (b.p, b.n, &err);
  CHECK (!g && strstr (err.message, "rows of 288 elements, not a multiple "
                       "of the q4_K block size 256"),
         "a q4_K tensor with rows of 288 is refused: %s",
         g ? "accepted" : err.message);
  tsr_gguf_close (g);
  gt_free (&b);
}

int
main (void)
{
  independent_file ();
  writer_round_trip ();
  partial_block ();
  return TSR_TEST_EXIT ();
}
