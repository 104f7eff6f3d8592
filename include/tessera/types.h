/* tessera/types.h - element types, their traits and reference conversions.
 *
 * Quantized types store elements in blocks whose layouts are those of
 * the GGUF file format (ggml's numbering and bytes), so a block written
 * by any GGUF implementation reads here unchanged.  "d" is a scale,
 * "m" / "dmin" a minimum, q the stored integer of an element:
 *
 *   q8_0    32: fp16 d, int8 q[32]                        x = d * q
 *   q4_0    32: fp16 d, 4-bit q                           x = d * (q - 8)
 *   q4_1    32: fp16 d, fp16 m, 4-bit q                   x = d * q + m
 *   q5_0    32: fp16 d, 5th bits qh, 4-bit low bits       x = d * (q - 16)
 *   q5_1    32: fp16 d, fp16 m, qh, low bits              x = d * q + m
 *   iq4_nl  32: fp16 d, 4-bit index into a non-linear table
 *                                       x = d * kvalues_iq4nl[q]
 *   mxfp4   32: E8M0 exponent byte e, 4-bit E2M1 codes    x = 2^(e-127) * fp4
 *   q2_K   256: 16 groups of 16, 4-bit scale and min per group, 2-bit q
 *   q3_K   256: 16 groups of 16, 6-bit signed scales, 3-bit q (2 + hmask)
 *   q4_K   256: 8 groups of 32, 6-bit scale and min each, 4-bit q
 *   q5_K   256: as q4_K with a fifth bit per element in qh
 *   q6_K   256: 16 groups of 16, int8 scales, 6-bit q (4 in ql + 2 in qh)
 *   iq4_xs 256: 8 groups of 32, 6-bit scales, iq4_nl's table
 *   q8_K   256: f32 d, int8 q[256], int16 sums of each 16 q (bsums);
 *               the activation type of the k-quant dot products
 *
 * In the 32-element types with 4-bit fields, element j of a block is the
 * low nibble of byte j and element j + 16 the high nibble; q5_0/q5_1
 * keep element j's fifth bit in bit j of the little-endian word qh.
 * The k-quant packings are documented beside their to_float functions
 * (lib/types/types-kquant.c) and in the manual; to_float reproduces the
 * format's published dequantization operation for operation.  */
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
  TSR_TYPE_Q4_1,
  TSR_TYPE_Q5_0,
  TSR_TYPE_Q5_1,
  TSR_TYPE_Q2_K,
  TSR_TYPE_Q3_K,
  TSR_TYPE_Q4_K,
  TSR_TYPE_Q5_K,
  TSR_TYPE_Q6_K,
  TSR_TYPE_Q8_K,
  TSR_TYPE_IQ4_NL,
  TSR_TYPE_IQ4_XS,
  TSR_TYPE_MXFP4,
  TSR_TYPE_COUNT
} tsr_type;

#define TSR_QK8_0 32
#define TSR_QK4_0 32
#define TSR_QK4_1 32
#define TSR_QK5_0 32
#define TSR_QK5_1 32
#define TSR_QK4_NL 32
#define TSR_QK_MXFP4 32
#define TSR_QK_K 256            /* super-block of the k-quants, iq4_xs */
#define TSR_K_SCALE_SIZE 12     /* packed 6-bit scales of q3_K..q5_K */

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

struct tsr_block_q4_1 {
  tsr_fp16_t d;
  tsr_fp16_t m;
  uint8_t qs[TSR_QK4_1 / 2];
};

struct tsr_block_q5_0 {
  tsr_fp16_t d;
  uint8_t qh[4];                /* fifth bits, little-endian uint32 */
  uint8_t qs[TSR_QK5_0 / 2];
};

struct tsr_block_q5_1 {
  tsr_fp16_t d;
  tsr_fp16_t m;
  uint8_t qh[4];
  uint8_t qs[TSR_QK5_1 / 2];
};

struct tsr_block_q2_K {
  uint8_t scales[TSR_QK_K / 16]; /* low nibble scale, high nibble min */
  uint8_t qs[TSR_QK_K / 4];
  tsr_fp16_t d;
  tsr_fp16_t dmin;
};

struct tsr_block_q3_K {
  uint8_t hmask[TSR_QK_K / 8];  /* third bit of every element */
  uint8_t qs[TSR_QK_K / 4];     /* low two bits */
  uint8_t scales[TSR_K_SCALE_SIZE];
  tsr_fp16_t d;
};

struct tsr_block_q4_K {
  tsr_fp16_t d;
  tsr_fp16_t dmin;
  uint8_t scales[TSR_K_SCALE_SIZE];
  uint8_t qs[TSR_QK_K / 2];
};

struct tsr_block_q5_K {
  tsr_fp16_t d;
  tsr_fp16_t dmin;
  uint8_t scales[TSR_K_SCALE_SIZE];
  uint8_t qh[TSR_QK_K / 8];
  uint8_t qs[TSR_QK_K / 2];
};

struct tsr_block_q6_K {
  uint8_t ql[TSR_QK_K / 2];     /* low four bits */
  uint8_t qh[TSR_QK_K / 4];     /* high two bits */
  int8_t scales[TSR_QK_K / 16];
  tsr_fp16_t d;
};

struct tsr_block_q8_K {
  float d;
  int8_t qs[TSR_QK_K];
  int16_t bsums[TSR_QK_K / 16]; /* sum of qs[16 i .. 16 i + 15] */
};

struct tsr_block_iq4_nl {
  tsr_fp16_t d;
  uint8_t qs[TSR_QK4_NL / 2];
};

struct tsr_block_iq4_xs {
  tsr_fp16_t d;
  uint16_t scales_h;            /* high 2 bits of the 8 group scales */
  uint8_t scales_l[TSR_QK_K / 64]; /* low 4 bits, two per byte */
  uint8_t qs[TSR_QK_K / 2];
};

struct tsr_block_mxfp4 {
  uint8_t e;                    /* E8M0 shared exponent */
  uint8_t qs[TSR_QK_MXFP4 / 2]; /* E2M1 codes */
};

/* Converts N elements between a row of this type and floats.  N must
   be a multiple of the block size.  */
typedef void (*tsr_to_float_fn) (const void *src, float *dst, int64_t n);
typedef void (*tsr_from_float_fn) (const float *src, void *dst, int64_t n);

struct tsr_type_traits {
  const char *name;          /* "f32", "q4_0", "q4_K", "iq4_nl", ... */
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
