/* Type traits: names, block and type sizes, row sizes, lookup by name,
   invalid types, and the traits' row converters agreeing with the
   scalar conversions and tsr_quantize_row / tsr_dequantize_row.  */
#include <stdint.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

struct expect
{
  tsr_type type;
  const char *name;
  const char *upper;
  int64_t block_size;
  size_t type_size;
  int quantized;
};

/* From the formats, field by field: q8_0 = fp16 scale + 32 int8; q4_0 =
   fp16 scale + 16 bytes of nibbles; the _1 types add an fp16 minimum,
   the 5-bit types 4 bytes of fifth bits; the k-quants hold 256 elements:
   q2_K 16 scale bytes + 64 bytes of 2-bit q + 2 fp16; q3_K 32 bytes of
   high bits + 64 + 12 scale bytes + fp16; q4_K 2 fp16 + 12 + 128; q5_K
   q4_K + 32 bytes of fifth bits; q6_K 128 + 64 + 16 int8 scales + fp16;
   q8_K f32 + 256 int8 + 16 int16 sums; iq4_nl as q4_0; iq4_xs fp16 +
   u16 + 4 + 128; mxfp4 one exponent byte + 16 bytes of nibbles.  */
static const struct expect types[] = {
  { TSR_TYPE_F32, "f32", "F32", 1, 4, 0 },
  { TSR_TYPE_F16, "f16", "F16", 1, 2, 0 },
  { TSR_TYPE_BF16, "bf16", "BF16", 1, 2, 0 },
  { TSR_TYPE_I32, "i32", "I32", 1, 4, 0 },
  { TSR_TYPE_Q8_0, "q8_0", "Q8_0", 32, 2 + 32, 1 },
  { TSR_TYPE_Q4_0, "q4_0", "Q4_0", 32, 2 + 16, 1 },
  { TSR_TYPE_Q4_1, "q4_1", "Q4_1", 32, 2 + 2 + 16, 1 },
  { TSR_TYPE_Q5_0, "q5_0", "Q5_0", 32, 2 + 4 + 16, 1 },
  { TSR_TYPE_Q5_1, "q5_1", "Q5_1", 32, 2 + 2 + 4 + 16, 1 },
  { TSR_TYPE_Q2_K, "q2_K", "Q2_K", 256, 16 + 64 + 2 + 2, 1 },
  { TSR_TYPE_Q3_K, "q3_K", "Q3_K", 256, 32 + 64 + 12 + 2, 1 },
  { TSR_TYPE_Q4_K, "q4_K", "Q4_K", 256, 2 + 2 + 12 + 128, 1 },
  { TSR_TYPE_Q5_K, "q5_K", "q5_k", 256, 2 + 2 + 12 + 32 + 128, 1 },
  { TSR_TYPE_Q6_K, "q6_K", "Q6_K", 256, 128 + 64 + 16 + 2, 1 },
  { TSR_TYPE_Q8_K, "q8_K", "Q8_K", 256, 4 + 256 + 2 * 16, 1 },
  { TSR_TYPE_IQ4_NL, "iq4_nl", "IQ4_NL", 32, 2 + 16, 1 },
  { TSR_TYPE_IQ4_XS, "iq4_xs", "Iq4_Xs", 256, 2 + 2 + 4 + 128, 1 },
  { TSR_TYPE_MXFP4, "mxfp4", "MXFP4", 32, 1 + 16, 1 },
};

static void
check_type (const struct expect *e)
{
  const struct tsr_type_traits *tr = tsr_type_traits (e->type);
  CHECK (tsr_type_valid (e->type), "%s is valid", e->name);
  if (!tr)
    {
      CHECK (0, "%s has traits: NULL", e->name);
      return;
    }
  CHECK (tr->name && strcmp (tr->name, e->name) == 0, "%s traits name",
         e->name);
  CHECK (tsr_type_name (e->type) && strcmp (tsr_type_name (e->type), e->name) == 0,
         "%s tsr_type_name", e->name);
  CHECK (tr->block_size == e->block_size && tr->type_size == e->type_size,
         "%s holds %ld elements in %zu bytes (got %ld in %zu)", e->name,
         (long) e->block_size, e->type_size, (long) tr->block_size,
         tr->type_size);
  CHECK (tr->is_quantized == (e->quantized != 0), "%s is_quantized is %d",
         e->name, e->quantized);
  CHECK (tsr_type_from_name (e->name) == e->type, "type from name \"%s\"",
         e->name);
  CHECK (tsr_type_from_name (e->upper) == e->type, "type from name \"%s\"",
         e->upper);
  if (e->type == TSR_TYPE_I32)
    CHECK (tr->to_float == NULL && !tr->is_float,
           "i32 has no to_float and is not a float type");
  else
    CHECK (tr->to_float != NULL && tr->from_float != NULL,
           "%s has to_float and from_float", e->name);
}

static void
check_row_sizes (void)
{
  CHECK (tsr_row_size (TSR_TYPE_F32, 17) == 68, "row size of 17 f32 is 68");
  CHECK (tsr_row_size (TSR_TYPE_F16, 3) == 6, "row size of 3 f16 is 6");
  CHECK (tsr_row_size (TSR_TYPE_BF16, 4097) == 8194, "row size of 4097 bf16 is 8194");
  CHECK (tsr_row_size (TSR_TYPE_I32, 5) == 20, "row size of 5 i32 is 20");
  CHECK (tsr_row_size (TSR_TYPE_Q8_0, 64) == 68, "row size of 64 q8_0 is 68");
  CHECK (tsr_row_size (TSR_TYPE_Q4_0, 96) == 54, "row size of 96 q4_0 is 54");
  CHECK (tsr_row_size (TSR_TYPE_Q8_0, 4096) == 128 * 34,
         "row size of 4096 q8_0 is 4352");
  CHECK (tsr_row_size (TSR_TYPE_F32, 0) == 0, "row size of 0 f32 is 0");
}

static void
check_invalid (void)
{
  CHECK (!tsr_type_valid (TSR_TYPE_COUNT), "TSR_TYPE_COUNT is not valid");
  CHECK (!tsr_type_valid ((tsr_type) -1), "type -1 is not valid");
  CHECK (tsr_type_traits (TSR_TYPE_COUNT) == NULL, "no traits for TSR_TYPE_COUNT");
  CHECK (tsr_type_traits ((tsr_type) 1000) == NULL, "no traits for type 1000");
  CHECK (tsr_type_traits ((tsr_type) -1) == NULL, "no traits for type -1");
  const char *n = tsr_type_name (TSR_TYPE_COUNT);
  int clash = 0;
  for (size_t i = 0; n && i < sizeof types / sizeof types[0]; i++)
    clash |= strcmp (n, types[i].name) == 0;
  CHECK (!clash, "name of an invalid type is no valid type's name");
  CHECK (tsr_type_from_name ("q4_2") == TSR_TYPE_COUNT, "no type named q4_2");
  CHECK (tsr_type_from_name ("q4_k_m") == TSR_TYPE_COUNT,
         "a preset is not a type name");
  CHECK (tsr_type_from_name ("") == TSR_TYPE_COUNT, "no type named \"\"");
  CHECK (tsr_type_from_name ("f32 ") == TSR_TYPE_COUNT, "no type named \"f32 \"");
  CHECK (tsr_type_from_name ("Bf16") == TSR_TYPE_BF16, "type from name \"Bf16\"");
}

/* The traits' row converters against the scalar references.  */
static void
check_converters (void)
{
  enum { N = 96 };
  float src[N], back[N], ref[N];
  uint16_t h[N];
  unsigned char q[N / 32 * 34], qref[N / 32 * 34];
  tsr_test_seed (7);
  for (int i = 0; i < N; i++)
    src[i] = tsr_test_uniform (-300.0f, 300.0f);

  const struct tsr_type_traits *tr = tsr_type_traits (TSR_TYPE_F16);
  int ok = tr != NULL;
  if (ok)
    {
      tr->from_float (src, h, N);
      tr->to_float (h, back, N);
      for (int i = 0; i < N; i++)
        ok &= h[i] == tsr_fp32_to_fp16 (src[i])
              && back[i] == tsr_fp16_to_fp32 (h[i]);
    }
  CHECK (ok, "f16 row converters match the scalar conversions");

  tr = tsr_type_traits (TSR_TYPE_BF16);
  ok = tr != NULL;
  if (ok)
    {
      tr->from_float (src, h, N);
      tr->to_float (h, back, N);
      for (int i = 0; i < N; i++)
        ok &= h[i] == tsr_fp32_to_bf16 (src[i])
              && back[i] == tsr_bf16_to_fp32 (h[i]);
    }
  CHECK (ok, "bf16 row converters match the scalar conversions");

  tr = tsr_type_traits (TSR_TYPE_F32);
  ok = tr != NULL;
  if (ok)
    {
      float copy[N];
      tr->from_float (src, copy, N);
      tr->to_float (copy, back, N);
      ok = memcmp (back, src, sizeof src) == 0;
    }
  CHECK (ok, "f32 row converters copy exactly");

  static const tsr_type qt[] = { TSR_TYPE_Q8_0, TSR_TYPE_Q4_0 };
  for (int k = 0; k < 2; k++)
    {
      tr = tsr_type_traits (qt[k]);
      size_t bytes = tsr_row_size (qt[k], N);
      ok = tr != NULL && bytes <= sizeof q;
      if (ok)
        {
          memset (q, 0, sizeof q);
          memset (qref, 0, sizeof qref);
          tr->from_float (src, q, N);
          ok = tsr_quantize_row (qt[k], src, qref, N) == TSR_OK
               && memcmp (q, qref, bytes) == 0;
          tr->to_float (q, back, N);
          ok &= tsr_dequantize_row (qt[k], q, ref, N) == TSR_OK
                && memcmp (back, ref, sizeof ref) == 0;
        }
      CHECK (ok, "%s traits converters agree with tsr_quantize_row and"
             " tsr_dequantize_row", tsr_type_name (qt[k]));
    }
}

int
main (void)
{
  CHECK (sizeof types / sizeof types[0] == TSR_TYPE_COUNT,
         "every type is listed here (%d of %d)",
         (int) (sizeof types / sizeof types[0]), (int) TSR_TYPE_COUNT);
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    check_type (&types[i]);
  CHECK (TSR_QK8_0 == 32 && TSR_QK4_0 == 32, "q8_0 and q4_0 blocks hold 32");
  CHECK (sizeof (struct tsr_block_q8_0) == 34
         && sizeof (struct tsr_block_q4_0) == 18,
         "block structs are 34 and 18 bytes");
  check_row_sizes ();
  check_invalid ();
  check_converters ();
  /* Last: a NULL name must be refused, not crash.  */
  CHECK (tsr_type_from_name (NULL) == TSR_TYPE_COUNT, "no type named NULL");
  return TSR_TEST_EXIT ();
}
