/* cuda-blocks.cuh - the block types as the kernels read them: how many
 * elements and bytes a block has, and how each element becomes a
 * float.  Included by cuda-common.cuh after its conversions (tsr_cuda_load
 * reads block types through it); not installed.
 *
 * tsr_cuda_block_value performs lib/types*.c's to_float operation for
 * operation (an int level converted to float, times the scale, minus
 * or plus the minimum, in that order) with explicitly rounded float
 * operations (__fmul_rn, __fadd_rn: never contracted into a fused
 * multiply-add), so an element decodes to the bits tsr_dequantize_row
 * gives.  The layouts are tessera/types.h's structs, read through
 * them: every block type with a 16-bit field has an even size, so its
 * blocks are 2-byte aligned wherever a tensor's data is.  The same
 * decoders, in OpenCL C, are modules/opencl/ocl-quant.cl.  */
#ifndef TSR_CUDA_BLOCKS_CUH
#define TSR_CUDA_BLOCKS_CUH

#include <stdint.h>

#include <tessera/types.h>

/* Elements and bytes of a block of TYPE; 0 for types without blocks
   and for q8_K (no kernel reads it).  */
static __host__ __device__ inline int
tsr_cuda_block_elems (int type)
{
  switch (type)
    {
    case TSR_TYPE_Q8_0: case TSR_TYPE_Q4_0: case TSR_TYPE_Q4_1:
    case TSR_TYPE_Q5_0: case TSR_TYPE_Q5_1: case TSR_TYPE_IQ4_NL:
    case TSR_TYPE_MXFP4:
      return 32;
    case TSR_TYPE_Q2_K: case TSR_TYPE_Q3_K: case TSR_TYPE_Q4_K:
    case TSR_TYPE_Q5_K: case TSR_TYPE_Q6_K: case TSR_TYPE_IQ4_XS:
      return 256;
    default:
      return 0;
    }
}

static __host__ __device__ inline int
tsr_cuda_block_bytes (int type)
{
  switch (type)
    {
#define CU_BYTES(T, t)                                                    \
    case TSR_TYPE_##T: return (int) sizeof (struct tsr_block_##t);
    CU_BYTES (Q8_0, q8_0) CU_BYTES (Q4_0, q4_0) CU_BYTES (Q4_1, q4_1)
    CU_BYTES (Q5_0, q5_0) CU_BYTES (Q5_1, q5_1) CU_BYTES (Q2_K, q2_K)
    CU_BYTES (Q3_K, q3_K) CU_BYTES (Q4_K, q4_K) CU_BYTES (Q5_K, q5_K)
    CU_BYTES (Q6_K, q6_K) CU_BYTES (IQ4_NL, iq4_nl)
    CU_BYTES (IQ4_XS, iq4_xs) CU_BYTES (MXFP4, mxfp4)
#undef CU_BYTES
    default:
      return 0;
    }
}

/* Whether TYPE is a block type the kernels decode.  */
static __host__ __device__ inline bool
tsr_cuda_is_block (int type)
{
  return tsr_cuda_block_elems (type) != 0;
}

__device__ static const signed char tsr_cuda_kvalues_iq4nl[16] = {
  -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
};

/* Twice the E2M1 values (the E8M0 scale is halved to match).  */
__device__ static const signed char tsr_cuda_kvalues_mxfp4[16] = {
  0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12
};

/* Nibble J (0..31) of 16 bytes: low nibbles first.  */
static __device__ inline int
tsr_cuda_nibble32 (const uint8_t *qs, int j)
{
  return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
}

/* The fifth bit of element J: bit J of the little-endian word QH.  */
static __device__ inline int
tsr_cuda_fifth_bit (const uint8_t *qh, int j)
{
  return (qh[j / 8] >> (j % 8)) & 1;
}

/* 2^(e - 128) from its bits: E8M0's scale times one half.  */
static __device__ inline float
tsr_cuda_e8m0_half (uint8_t e)
{
  return __uint_as_float (e < 2 ? 0x00200000u << e
                                : (uint32_t) (e - 1) << 23);
}

/* The 2-bit field of element E in q2_K / q3_K's qs.  */
static __device__ inline int
tsr_cuda_crumb (const uint8_t *qs, int e)
{
  return qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32)) & 3;
}

static __device__ inline int
tsr_cuda_q3_scale (const uint8_t *s, int g)
{
  int lo = g < 8 ? s[g] & 15 : s[g - 8] >> 4;
  int hi = s[8 + g % 4] >> (2 * (g / 4)) & 3;
  return lo | hi << 4;
}

/* q4_K / q5_K: element with level Q of group E / 32, scale d * sc and
   minimum dmin * m (six-bit codes in the 12 bytes S).  */
static __device__ inline float
tsr_cuda_value_k4 (uint16_t d, uint16_t dmin, const uint8_t *s, int e, int q)
{
  int j = e / 32, sc, m;
  if (j < 4)
    {
      sc = s[j] & 63;
      m = s[j + 4] & 63;
    }
  else
    {
      sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
      m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
  float d1 = __fmul_rn (tsr_cuda_f16_to_f32 (d), (float) sc);
  float m1 = __fmul_rn (tsr_cuda_f16_to_f32 (dmin), (float) m);
  return __fsub_rn (__fmul_rn (d1, (float) q), m1);
}

static __device__ inline float
tsr_cuda_value_q2_K (const struct tsr_block_q2_K *b, int e)
{
  int s = b->scales[e / 16];
  float dl = __fmul_rn (tsr_cuda_f16_to_f32 (b->d), (float) (s & 0xf));
  float ml = __fmul_rn (tsr_cuda_f16_to_f32 (b->dmin), (float) (s >> 4));
  return __fsub_rn (__fmul_rn (dl, (float) tsr_cuda_crumb (b->qs, e)), ml);
}

static __device__ inline float
tsr_cuda_value_q3_K (const struct tsr_block_q3_K *b, int e)
{
  float dl = __fmul_rn (tsr_cuda_f16_to_f32 (b->d),
                        (float) (tsr_cuda_q3_scale (b->scales, e / 16) - 32));
  int high = b->hmask[e % 32] >> (e / 32) & 1;
  return __fmul_rn (dl, (float) (tsr_cuda_crumb (b->qs, e) - (high ? 0 : 4)));
}

static __device__ inline float
tsr_cuda_value_q4_K (const struct tsr_block_q4_K *b, int e)
{
  int q = b->qs[32 * (e / 64) + e % 32] >> (4 * (e / 32 % 2)) & 0xf;
  return tsr_cuda_value_k4 (b->d, b->dmin, b->scales, e, q);
}

static __device__ inline float
tsr_cuda_value_q5_K (const struct tsr_block_q5_K *b, int e)
{
  int q = b->qs[32 * (e / 64) + e % 32] >> (4 * (e / 32 % 2)) & 0xf;
  q += (b->qh[e % 32] >> (e / 32)) & 1 ? 16 : 0;
  return tsr_cuda_value_k4 (b->d, b->dmin, b->scales, e, q);
}

static __device__ inline float
tsr_cuda_value_q6_K (const struct tsr_block_q6_K *b, int e)
{
  int lo = b->ql[64 * (e / 128) + 32 * (e % 128 / 32 % 2) + e % 32]
           >> (e % 128 / 64 * 4) & 0xf;
  int hi = b->qh[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32)) & 3;
  float dl = __fmul_rn (tsr_cuda_f16_to_f32 (b->d), (float) b->scales[e / 16]);
  return __fmul_rn (dl, (float) ((lo | hi << 4) - 32));
}

static __device__ inline float
tsr_cuda_value_iq4_xs (const struct tsr_block_iq4_xs *b, int e)
{
  int j = e / 32;
  int ls = (b->scales_l[j / 2] >> (4 * (j % 2)) & 0xf)
           | ((b->scales_h >> (2 * j)) & 3) << 4;
  float dl = __fmul_rn (tsr_cuda_f16_to_f32 (b->d), (float) (ls - 32));
  return __fmul_rn (dl, (float) tsr_cuda_kvalues_iq4nl[tsr_cuda_nibble32 (b->qs + 16 * j,
                                                              e % 32)]);
}

/* Element E of the block at P of TYPE.  */
static __device__ inline float
tsr_cuda_block_value (const void *p, int type, int e)
{
#define CU_BLOCK(t) ((const struct tsr_block_##t *) p)
  switch (type)
    {
    case TSR_TYPE_Q8_0:
      return __fmul_rn (tsr_cuda_f16_to_f32 (CU_BLOCK (q8_0)->d),
                        (float) CU_BLOCK (q8_0)->qs[e]);
    case TSR_TYPE_Q4_0:
      return __fmul_rn (tsr_cuda_f16_to_f32 (CU_BLOCK (q4_0)->d),
                        (float) (tsr_cuda_nibble32 (CU_BLOCK (q4_0)->qs, e) - 8));
    case TSR_TYPE_Q4_1:
      {
        const struct tsr_block_q4_1 *b = CU_BLOCK (q4_1);
        float x = __fmul_rn ((float) tsr_cuda_nibble32 (b->qs, e),
                             tsr_cuda_f16_to_f32 (b->d));
        return __fadd_rn (x, tsr_cuda_f16_to_f32 (b->m));
      }
    case TSR_TYPE_Q5_0:
      {
        const struct tsr_block_q5_0 *b = CU_BLOCK (q5_0);
        int q = tsr_cuda_nibble32 (b->qs, e) | tsr_cuda_fifth_bit (b->qh, e) << 4;
        return __fmul_rn ((float) (q - 16), tsr_cuda_f16_to_f32 (b->d));
      }
    case TSR_TYPE_Q5_1:
      {
        const struct tsr_block_q5_1 *b = CU_BLOCK (q5_1);
        int q = tsr_cuda_nibble32 (b->qs, e) | tsr_cuda_fifth_bit (b->qh, e) << 4;
        return __fadd_rn (__fmul_rn ((float) q, tsr_cuda_f16_to_f32 (b->d)),
                          tsr_cuda_f16_to_f32 (b->m));
      }
    case TSR_TYPE_IQ4_NL:
      return __fmul_rn (tsr_cuda_f16_to_f32 (CU_BLOCK (iq4_nl)->d),
                        (float) tsr_cuda_kvalues_iq4nl[tsr_cuda_nibble32
                                                 (CU_BLOCK (iq4_nl)->qs, e)]);
    case TSR_TYPE_MXFP4:
      return __fmul_rn ((float) tsr_cuda_kvalues_mxfp4[tsr_cuda_nibble32
                                                 (CU_BLOCK (mxfp4)->qs, e)],
                        tsr_cuda_e8m0_half (CU_BLOCK (mxfp4)->e));
    case TSR_TYPE_Q2_K: return tsr_cuda_value_q2_K (CU_BLOCK (q2_K), e);
    case TSR_TYPE_Q3_K: return tsr_cuda_value_q3_K (CU_BLOCK (q3_K), e);
    case TSR_TYPE_Q4_K: return tsr_cuda_value_q4_K (CU_BLOCK (q4_K), e);
    case TSR_TYPE_Q5_K: return tsr_cuda_value_q5_K (CU_BLOCK (q5_K), e);
    case TSR_TYPE_Q6_K: return tsr_cuda_value_q6_K (CU_BLOCK (q6_K), e);
    case TSR_TYPE_IQ4_XS: return tsr_cuda_value_iq4_xs (CU_BLOCK (iq4_xs), e);
    default: return 0.0f;
    }
#undef CU_BLOCK
}

/* Elements 16 C .. 16 C + 15 of the block at P into V.  Every type's
   groups are 16 or 32 elements, so a chunk's scales are the same for
   all 16 and the compiler computes them once.  */
static __device__ inline void
tsr_cuda_block_chunk (const void *p, int type, int c, float v[16])
{
#pragma unroll
  for (int l = 0; l < 16; l++)
    v[l] = tsr_cuda_block_value (p, type, 16 * c + l);
}

#endif /* TSR_CUDA_BLOCKS_CUH */
