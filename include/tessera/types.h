/* tessera/types.h - element types, their traits and reference conversions.
 *
 * Quantized types store elements in blocks: q8_0 is a half-precision
 * scale followed by 32 signed bytes (x = d * q); q4_0 is a half-precision
 * scale followed by 16 bytes of packed 4-bit values, element j of the
 * block in the low nibble of byte j and element j + 16 in the high nibble
 * (x = d * (q - 8)).  These layouts match the GGUF file format.  */
#ifndef TESSERA_TYPES_H
#define TESSERA_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tsr_type {
  TSR_TYPE_F32 = 0,
  TSR_TYPE_F16,
  TSR_TYPE_BF16,
  TSR_TYPE_I32,
  TSR_TYPE_Q8_0,
  TSR_TYPE_Q4_0,
  TSR_TYPE_COUNT
} tsr_type;

#define TSR_QK8_0 32
#define TSR_QK4_0 32

typedef uint16_t tsr_fp16_t;   /* IEEE 754 binary16 bits */
typedef uint16_t tsr_bf16_t;   /* bfloat16 bits */

struct tsr_block_q8_0 {
  tsr_fp16_t d;
  int8_t qs[TSR_QK8_0];
};

struct tsr_block_q4_0 {
  tsr_fp16_t d;
  uint8_t qs[TSR_QK4_0 / 2];
};

/* Converts N elements between a row of this type and floats.  N must
   be a multiple of the block size.  */
typedef void (*tsr_to_float_fn) (const void *src, float *dst, int64_t n);
typedef void (*tsr_from_float_fn) (const float *src, void *dst, int64_t n);

struct tsr_type_traits {
  const char *name;          /* "f32", "q4_0", ... */
  int64_t block_size;        /* elements per block (1 for plain types) */
  size_t type_size;          /* bytes per block */
  bool is_quantized;
  bool is_float;             /* converts to and from float */
  tsr_to_float_fn to_float;  /* NULL for i32 */
  tsr_from_float_fn from_float;
};

/* Traits of TYPE, or NULL for an invalid type.  */
const struct tsr_type_traits *tsr_type_traits (tsr_type type);
const char *tsr_type_name (tsr_type type);
/* The type named NAME (case-insensitive); TSR_TYPE_COUNT when none.  */
tsr_type tsr_type_from_name (const char *name);
bool tsr_type_valid (tsr_type type);
/* Bytes taken by N elements of TYPE (N a multiple of the block size).  */
size_t tsr_row_size (tsr_type type, int64_t n);

/* Scalar reference conversions (round to nearest even).  */
tsr_fp16_t tsr_fp32_to_fp16 (float f);
float tsr_fp16_to_fp32 (tsr_fp16_t h);
tsr_bf16_t tsr_fp32_to_bf16 (float f);
float tsr_bf16_to_fp32 (tsr_bf16_t h);

/* Quantize N floats (N a multiple of the block size) into DST, or
   dequantize back.  Return TSR_OK, or an error for a bad type or N.  */
int tsr_quantize_row (tsr_type type, const float *src, void *dst, int64_t n);
int tsr_dequantize_row (tsr_type type, const void *src, float *dst,
                        int64_t n);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_TYPES_H */
