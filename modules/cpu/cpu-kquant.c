/* cpu-kquant.c - the super-block types q2_K, q3_K, q4_K, q5_K, q6_K and
 * iq4_xs: the q8_K activation quantizer, integer dot products with q8_K
 * activations, row dequantization, and (at the end) plain rows packed
 * 8 at a time for register tiles (cpu-vec-k.h), compiled once per ISA
 * level (see cpu-vec.c for how; the activation layout is in
 * cpu-vec-k.h).
 *
 * Every type is first decoded, one super-block of 256 elements at a
 * time, into one common form (struct sb): each element's stored integer
 * as a byte in element order (0..63 for the k-quants: the offsets 4 of
 * q3_K and 32 of q6_K are not subtracted; iq4_xs: the signed table
 * value), and per group of 16 elements an integer scale and an integer
 * bias.  Then the super-block's dot with an activation super-block
 * (values y, sums of 16 Y_g, scale dy) is
 *   d dy sum_g sc_g sum_(i in g) w_i y_i  +  dbias dy sum_g bias_g Y_g
 * with dbias = -dmin, bias_g the group minimum (q2_K, q4_K, q5_K) or
 * dbias = d, bias_g = -offset sc_g (q3_K, q6_K): two exact int32 sums
 * (|.| < 2^28), then f32.  AVX-512 and AVX2 decode every type
 * straight into registers (through memory, byte stores followed by
 * wide loads stall on store forwarding: ten to forty times slower at
 * v3); plain C decoders serve the other levels.  The per-level part is
 * the dot of a decoded super-block:
 * - AVX-512BW (v4): 64 weights per register, pmaddubsw (unsigned
 *   weights by signed activations into int16 pairs, at most 2 * 63 *
 *   127, or 2 * 127 * 127 for iq4_xs's |w| by y sign (w)), then pmaddwd
 *   by the group scales, summed in int32.
 * - AVX2 (v3), SSSE3 (v2): the same on 32 and 16 bytes.
 * - Arm with the dot product extension: sdot per group of 16.
 * - Otherwise plain C (the baseline and the reference).
 * Dequantization computes (d sc_g) (w - offset) - dmin bias_g exactly
 * as the reference does; the compiler vectorizes the plain C.  */
#include <config.h>

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "cpu-vec.h"
#include "cpu-level.h"
#include "cpu-qdot.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>
#endif

#define QK TSR_QK_K
#define GROUPS (QK / 16)

/* The decoded super-block and the accumulators stay in registers.  */
#define UNROLL TSR_CPU_UNROLL


/* Quantization to q8_K, the reference's steps: amax, 127 / amax, each
   value rounded and clamped as tsri_round_clamp does (NaN to -127).  */
static inline int
round_clamp_127 (float v)
{
  if (!(v > -127.0f))
    return -127;
  if (v >= 127.0f)
    return 127;
  return (int) lrintf (v);
}

void
TSR_CPU_LEVEL_FN (quantize_act_q8_K) (int64_t k, void *y, const float *x)
{
  int8_t *q = y;
  int16_t *sums = (int16_t *) tsr_cpu_kact_sums (y, k);
  int16_t *sums32 = (int16_t *) tsr_cpu_kact_sums32 (y, k);
  float *d = (float *) tsr_cpu_kact_scales (y, k);

  for (int64_t j = 0; j < k / QK; j++, x += QK, q += QK)
    {
#if defined(__AVX512F__)
      /* The same steps 16 at a time, a group of 16 a vector: max_ps
         returns its second operand for a NaN (skipped, as fmaxf does);
         a value not above -127 (NaN too) is -127, one from 127 up is
         127, the others rounded to nearest even (cvtps in the default
         rounding mode, as lrintf).  */
      const __m512 sign = _mm512_set1_ps (-0.0f);
      __m512 m = _mm512_setzero_ps ();
      for (int g = 0; g < GROUPS; g++)
        m = _mm512_max_ps (_mm512_andnot_ps (sign, _mm512_loadu_ps
                                                   (x + 16 * g)), m);
      float amax = _mm512_reduce_max_ps (m);
      float id = amax > 0 && isfinite (amax) ? 127 / amax : 0;
      d[j] = id > 0 ? amax / 127 : 0;
      const __m512 vid = _mm512_set1_ps (id);
      const __m512 lo = _mm512_set1_ps (-127.0f), hi = _mm512_set1_ps (127.0f);
      for (int g = 0; g < GROUPS; g++)
        {
          __m512 v = _mm512_mul_ps (_mm512_loadu_ps (x + 16 * g), vid);
          v = _mm512_mask_mov_ps (lo, _mm512_cmp_ps_mask (v, lo, _CMP_GT_OQ),
                                  v);
          v = _mm512_mask_mov_ps (v, _mm512_cmp_ps_mask (v, hi, _CMP_GE_OQ),
                                  hi);
          __m512i qi = _mm512_cvtps_epi32 (v);
          _mm_storeu_si128 ((__m128i *) (q + 16 * g),
                            _mm512_cvtepi32_epi8 (qi));
          sums[j * GROUPS + g] = (int16_t) _mm512_reduce_add_epi32 (qi);
        }
#elif defined(__AVX2__)
      /* As AVX-512, 8 at a time.  */
      const __m256 sign = _mm256_set1_ps (-0.0f);
      __m256 m = _mm256_setzero_ps ();
      for (int i = 0; i < QK; i += 8)
        m = _mm256_max_ps (_mm256_andnot_ps (sign, _mm256_loadu_ps (x + i)),
                           m);
      __m128 m4 = _mm_max_ps (_mm256_castps256_ps128 (m),
                              _mm256_extractf128_ps (m, 1));
      m4 = _mm_max_ps (m4, _mm_movehl_ps (m4, m4));
      m4 = _mm_max_ss (m4, _mm_movehdup_ps (m4));
      float amax = _mm_cvtss_f32 (m4);
      float id = amax > 0 && isfinite (amax) ? 127 / amax : 0;
      d[j] = id > 0 ? amax / 127 : 0;
      const __m256 vid = _mm256_set1_ps (id);
      const __m256 lo = _mm256_set1_ps (-127.0f), hi = _mm256_set1_ps (127.0f);
      for (int g = 0; g < GROUPS; g++)
        {
          __m256i qi[2];
          for (int h = 0; h < 2; h++)
            {
              __m256 v = _mm256_mul_ps (_mm256_loadu_ps (x + 16 * g + 8 * h),
                                        vid);
              v = _mm256_blendv_ps (lo, v, _mm256_cmp_ps (v, lo, _CMP_GT_OQ));
              v = _mm256_blendv_ps (v, hi, _mm256_cmp_ps (v, hi, _CMP_GE_OQ));
              qi[h] = _mm256_cvtps_epi32 (v);
            }
          /* Packs work within 128-bit lanes: 0-3 8-11 4-7 12-15 as
             words, then bytes 0-3 8-11 .. of the low lane and 4-7 12-15
             of the high one; put them in order.  */
          __m256i w16 = _mm256_packs_epi32 (qi[0], qi[1]);
          __m128i b = _mm_packs_epi16 (_mm256_castsi256_si128 (w16),
                                       _mm256_extracti128_si256 (w16, 1));
          b = _mm_shuffle_epi32 (b, 0xd8);
          _mm_storeu_si128 ((__m128i *) (q + 16 * g), b);
          __m256i t = _mm256_add_epi32 (qi[0], qi[1]);
          __m128i s4 = _mm_add_epi32 (_mm256_castsi256_si128 (t),
                                      _mm256_extracti128_si256 (t, 1));
          s4 = _mm_add_epi32 (s4, _mm_shuffle_epi32 (s4, 0x4e));
          s4 = _mm_add_epi32 (s4, _mm_shuffle_epi32 (s4, 0xb1));
          sums[j * GROUPS + g] = (int16_t) _mm_cvtsi128_si32 (s4);
        }
#else
      float amax = 0;
      for (int i = 0; i < QK; i++)
        amax = fmaxf (amax, fabsf (x[i]));
      float id = amax > 0 && isfinite (amax) ? 127 / amax : 0;
      d[j] = id > 0 ? amax / 127 : 0;
      for (int g = 0; g < GROUPS; g++)
        {
          int sum = 0;
          for (int i = 16 * g; i < 16 * g + 16; i++)
            {
              q[i] = (int8_t) round_clamp_127 (x[i] * id);
              sum += q[i];
            }
          sums[j * GROUPS + g] = (int16_t) sum;
        }
#endif
      /* |sum| <= 32 x 127; the even groups of 32, then the odd ones.  */
      for (int g = 0; g < GROUPS / 2; g++)
        sums32[j * GROUPS / 2 + g % 2 * 4 + g / 2]
          = (int16_t) (sums[j * GROUPS + 2 * g] + sums[j * GROUPS + 2 * g
                                                       + 1]);
    }
}

void
TSR_CPU_LEVEL_FN (kact_fill_offsets6) (int64_t k, void *y)
{
  const int8_t *q = y;
  int32_t *o = (int32_t *) tsr_cpu_kact_offsets6 (y, k);
  int64_t i = 0;

#if defined(__AVX512BW__)
  /* 4 groups a vector: the sums of each 4 values (pmaddubsw by ones,
     then pmaddwd by ones: exact), quads 2 and 3 of each 128-bit lane
     added to 0 and 1, those pairs gathered, times -32.  */
  const __m512i ones8 = _mm512_set1_epi8 (1), ones16 = _mm512_set1_epi16 (1);
  const __m512i pairs = _mm512_set_epi32 (0, 0, 0, 0, 0, 0, 0, 0,
                                          13, 12, 9, 8, 5, 4, 1, 0);
  for (; i + 64 <= k; i += 64)
    {
      __m512i x = _mm512_madd_epi16 (_mm512_maddubs_epi16
                                       (ones8, _mm512_loadu_si512 (q + i)),
                                     ones16);
      x = _mm512_add_epi32 (x, _mm512_bsrli_epi128 (x, 8));
      x = _mm512_permutexvar_epi32 (pairs, x);
      x = _mm512_sub_epi32 (_mm512_setzero_si512 (),
                            _mm512_slli_epi32 (x, 5));
      _mm256_storeu_si256 ((__m256i *) (o + i / 8),
                           _mm512_castsi512_si256 (x));
    }
#endif
  for (; i < k; i += 16)
    for (int h = 0; h < 2; h++)
      {
        int32_t sum = 0;
        for (int e = 0; e < 4; e++)
          sum += q[i + 4 * h + e] + q[i + 8 + 4 * h + e];
        o[i / 8 + h] = -32 * sum;
      }
}

/* The common form of a super-block.  */
struct sb
{
  _Alignas (64) uint8_t w[QK];  /* stored integers, element order */
  _Alignas (32) int16_t sc[GROUPS];     /* multiplier of sum w y */
  _Alignas (32) int16_t bias[GROUPS];   /* multiplier of sum y */
  float d, dmin;                /* dmin: 0 for types without minimums */
};

/* What sets the types apart besides their decoders.  */
enum ktype { KQ2, KQ3, KQ4, KQ5, KQ6, KIQ4XS };

static inline bool
has_mins (enum ktype t)
{
  return t == KQ2 || t == KQ4 || t == KQ5;
}

/* The offset subtracted from a stored integer.  */
static inline int
offset_of (enum ktype t)
{
  return t == KQ3 ? 4 : t == KQ6 ? 32 : 0;
}

static inline size_t
block_bytes (enum ktype t)
{
  switch (t)
    {
    case KQ2: return sizeof (struct tsr_block_q2_K);
    case KQ3: return sizeof (struct tsr_block_q3_K);
    case KQ4: return sizeof (struct tsr_block_q4_K);
    case KQ5: return sizeof (struct tsr_block_q5_K);
    case KQ6: return sizeof (struct tsr_block_q6_K);
    default: return sizeof (struct tsr_block_iq4_xs);
    }
}

static inline float
half (tsr_fp16_t h)
{
  return fp16_to_f32 (h);
}

/* Decoders in plain C.  Bit positions: see lib/types/types-kquant.c.  */

/* q2_K and q3_K: element 32 c + l of half h is bits 2c of byte 32 h + l.  */
static inline void
unpack_crumbs (const uint8_t *qs, uint8_t *w)
{
  for (int h = 0; h < 2; h++)
    for (int c = 0; c < 4; c++)
      for (int l = 0; l < 32; l++)
        w[128 * h + 32 * c + l] = qs[32 * h + l] >> (2 * c) & 3;
}

static inline void
decode_q2_K (const void *blk, struct sb *s)
{
  const struct tsr_block_q2_K *b = blk;

  unpack_crumbs (b->qs, s->w);
  for (int g = 0; g < GROUPS; g++)
    {
      s->sc[g] = b->scales[g] & 15;
      s->bias[g] = b->scales[g] >> 4;
    }
  s->d = half (b->d);
  s->dmin = half (b->dmin);
}

static inline void
decode_q3_K (const void *blk, struct sb *s)
{
  const struct tsr_block_q3_K *b = blk;

  unpack_crumbs (b->qs, s->w);
  for (int e = 0; e < QK; e++)
    s->w[e] |= (uint8_t) ((b->hmask[e % 32] >> (e / 32) & 1) << 2);
  for (int g = 0; g < GROUPS; g++)
    {
      int lo = g < 8 ? b->scales[g] & 15 : b->scales[g - 8] >> 4;
      int hi = b->scales[8 + g % 4] >> (2 * (g / 4)) & 3;
      s->sc[g] = (int16_t) ((lo | hi << 4) - 32);
      s->bias[g] = (int16_t) (-4 * s->sc[g]);
    }
  s->d = half (b->d);
  s->dmin = 0;
}

/* q4_K and q5_K: the six-bit scales and minimums of the 8 groups of 32,
   packed in 12 bytes.  */
static inline void
scales_k4 (const uint8_t *p, struct sb *s)
{
  for (int j = 0; j < 8; j++)
    {
      int sc, m;
      if (j < 4)
        {
          sc = p[j] & 63;
          m = p[j + 4] & 63;
        }
      else
        {
          sc = (p[j + 4] & 15) | (p[j - 4] >> 6) << 4;
          m = (p[j + 4] >> 4) | (p[j] >> 6) << 4;
        }
      s->sc[2 * j] = s->sc[2 * j + 1] = (int16_t) sc;
      s->bias[2 * j] = s->bias[2 * j + 1] = (int16_t) m;
    }
}

/* Element 32 j + l is nibble j % 2 of byte 32 (j / 2) + l.  */
static inline void
unpack_nibbles_k4 (const uint8_t *qs, uint8_t *w)
{
  for (int h = 0; h < 4; h++)
    for (int l = 0; l < 32; l++)
      {
        w[64 * h + l] = qs[32 * h + l] & 15;
        w[64 * h + 32 + l] = qs[32 * h + l] >> 4;
      }
}

static inline void
decode_q4_K (const void *blk, struct sb *s)
{
  const struct tsr_block_q4_K *b = blk;

  unpack_nibbles_k4 (b->qs, s->w);
  scales_k4 (b->scales, s);
  s->d = half (b->d);
  s->dmin = half (b->dmin);
}

static inline void
decode_q5_K (const void *blk, struct sb *s)
{
  const struct tsr_block_q5_K *b = blk;

  unpack_nibbles_k4 (b->qs, s->w);
  for (int e = 0; e < QK; e++)
    s->w[e] |= (uint8_t) ((b->qh[e % 32] >> (e / 32) & 1) << 4);
  scales_k4 (b->scales, s);
  s->d = half (b->d);
  s->dmin = half (b->dmin);
}

/* q6_K: element 32 c + l of half h has its low nibble in byte 64 h +
   32 (c % 2) + l (the high one for c >= 2), its top two bits at bit
   2 c of byte 32 h + l of qh.  */
static inline void
decode_q6_K (const void *blk, struct sb *s)
{
  const struct tsr_block_q6_K *b = blk;

  for (int h = 0; h < 2; h++)
    for (int c = 0; c < 4; c++)
      for (int l = 0; l < 32; l++)
        {
          int lo = b->ql[64 * h + 32 * (c % 2) + l] >> (c / 2 * 4) & 15;
          int hi = b->qh[32 * h + l] >> (2 * c) & 3;
          s->w[128 * h + 32 * c + l] = (uint8_t) (lo | hi << 4);
        }
  for (int g = 0; g < GROUPS; g++)
    {
      s->sc[g] = b->scales[g];
      s->bias[g] = (int16_t) (-32 * b->scales[g]);
    }
  s->d = half (b->d);
  s->dmin = 0;
}

/* iq4_xs: group j of 32 has the low nibbles of bytes 16 j .. 16 j + 15
   as elements 0..15, the high nibbles as 16..31.  */
static inline void
decode_iq4_xs (const void *blk, struct sb *s)
{
  const struct tsr_block_iq4_xs *b = blk;

  for (int j = 0; j < 8; j++)
    {
      int ls = (b->scales_l[j / 2] >> (4 * (j % 2)) & 15)
               | (b->scales_h >> (2 * j) & 3) << 4;
      s->sc[2 * j] = s->sc[2 * j + 1] = (int16_t) (ls - 32);
      s->bias[2 * j] = s->bias[2 * j + 1] = 0;
      for (int l = 0; l < 16; l++)
        {
          const uint8_t q = b->qs[16 * j + l];
          s->w[32 * j + l] = (uint8_t) tsr_cpu_iq4nl_values[q & 15];
          s->w[32 * j + 16 + l] = (uint8_t) tsr_cpu_iq4nl_values[q >> 4];
        }
    }
  s->d = half (b->d);
  s->dmin = 0;
}

static inline __attribute__ ((always_inline)) void
decode (enum ktype t, const void *blk, struct sb *s)
{
  switch (t)
    {
    case KQ2: decode_q2_K (blk, s); break;
    case KQ3: decode_q3_K (blk, s); break;
    case KQ4: decode_q4_K (blk, s); break;
    case KQ5: decode_q5_K (blk, s); break;
    case KQ6: decode_q6_K (blk, s); break;
    default: decode_iq4_xs (blk, s); break;
    }
}

/* The scales of the super-block types, decoded in vector registers:
   what the register decoders of AVX-512 (v4) and AVX2 (v3) below
   share.  */
#if defined(__AVX2__) && defined(__F16C__) && defined(__BMI2__)

static inline uint64_t
ld64 (const void *p)
{
  uint64_t u;

  memcpy (&u, p, sizeof u);
  return u;
}

/* The two float factors of a super-block, lanes 0 and 1 of one
   vector: d and -dmin from the adjacent halves at P (the sign flipped
   in the half itself, an exact negation), or d twice.  One conversion
   instead of two scalar ones and a negation.  */
static inline __m128
dd_mins_r (const tsr_fp16_t *p)
{
  return _mm_cvtph_ps (_mm_cvtsi32_si128
                       ((int) (load_le32 ((const char *) p) ^ 0x80000000u)));
}

static inline __m128
dd_same_r (tsr_fp16_t h)
{
  return _mm_cvtph_ps (_mm_cvtsi32_si128 ((int) (h | (uint32_t) h << 16)));
}

/* q4_K, q5_K: the 8 scales in lanes 0..7, minimums in 8..15, from the
   12 bytes at P (read as 16: the block goes on past them).  With u0,
   u1, u2 its three words: u0 & 0x3f3f3f3f, (u2 & 0x0f0f0f0f) | (u0 >> 2
   & 0x30303030), u1 & 0x3f3f3f3f, (u2 >> 4 & 0x0f0f0f0f) | (u1 >> 2 &
   0x30303030): in vector registers, no round trip through memory.  */
static inline __m256i
scales_k4_r (const uint8_t *p)
{
  const __m128i x = _mm_loadu_si128 ((const __m128i *) p);
  const __m128i lo = _mm_and_si128
    (_mm_srlv_epi32 (_mm_shuffle_epi32 (x, _MM_SHUFFLE (2, 1, 2, 0)),
                     _mm_setr_epi32 (0, 0, 0, 4)),
     _mm_setr_epi32 (0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  const __m128i hi = _mm_and_si128
    (_mm_srli_epi32 (_mm_shuffle_epi32 (x, _MM_SHUFFLE (1, 1, 0, 0)), 2),
     _mm_setr_epi32 (0, 0x30303030, 0, 0x30303030));
  return _mm256_cvtepu8_epi16 (_mm_or_si128 (lo, hi));
}

/* q3_K: the 16 signed scales (stored plus 32) of the groups of 16.
   Six bits each: low nibbles of bytes 0..7 for groups 0..7, high
   nibbles for 8..15; two bits each from bytes 8..11.  */
static inline __m256i
scales_q3_K_r (const struct tsr_block_q3_K *b)
{
#if defined(__AVX512VL__)
  /* In vector registers: the low nibbles of bytes 0..7, then their high
     nibbles; the two bits of group g, bits 2 (g / 4) of byte 8 + g % 4,
     rotated to bits 4-5 of that byte (left 4, 2, 0, right 2 in the
     four dwords of word 8..11 broadcast).  */
  const __m128i lo = _mm_and_si128
    (_mm_srlv_epi64 (_mm_set1_epi64x ((long long) ld64 (b->scales)),
                     _mm_set_epi64x (4, 0)), _mm_set1_epi8 (0x0f));
  const __m128i top = _mm_rolv_epi32
    (_mm_set1_epi32 ((int) load_le32 ((const char *) b->scales + 8)),
     _mm_setr_epi32 (4, 2, 0, 30));
  return _mm256_cvtepi8_epi16 (_mm_sub_epi8 (_mm_ternarylogic_epi32
                                             (lo, top, _mm_set1_epi8 (0x30),
                                              0xf8),
                                             _mm_set1_epi8 (32)));
#else
  uint64_t lo;
  uint32_t hi;

  memcpy (&lo, b->scales, sizeof lo);
  memcpy (&hi, b->scales + 8, sizeof hi);
  __m128i low = _mm_set_epi64x ((long long) (lo >> 4 & 0x0f0f0f0f0f0f0f0full),
                                (long long) (lo & 0x0f0f0f0f0f0f0f0full));
  __m128i top = _mm_setr_epi32 ((int) (hi & 0x03030303),
                                (int) (hi >> 2 & 0x03030303),
                                (int) (hi >> 4 & 0x03030303),
                                (int) (hi >> 6 & 0x03030303));
  return _mm256_cvtepi8_epi16 (_mm_sub_epi8 (_mm_or_si128
                                             (low, _mm_slli_epi16 (top, 4)),
                                             _mm_set1_epi8 (32)));
#endif
}

/* iq4_xs: the 8 signed scales (stored plus 32) of the groups of 32, in
   lanes 0..7: four bits from scales_l, two from scales_h each.  */
static inline __m256i
scales_iq4_xs_r (const struct tsr_block_iq4_xs *b)
{
  uint32_t sl;

  memcpy (&sl, b->scales_l, sizeof sl);
  __m128i ls = _mm_unpacklo_epi8
    (_mm_cvtsi32_si128 ((int) (sl & 0x0f0f0f0f)),
     _mm_cvtsi32_si128 ((int) (sl >> 4 & 0x0f0f0f0f)));
  ls = _mm_or_si128 (ls, _mm_cvtsi64_si128
                           ((long long) (_pdep_u64 (b->scales_h,
                                                    0x0303030303030303ull)
                                         << 4)));
  return _mm256_cvtepi8_epi16 (_mm_sub_epi8 (ls, _mm_set1_epi8 (32)));
}

#if defined(__FMA__)
/* The f32 steps of one super-block of a row by one column, those of the
   packed tiles (p8_step, p8_half_v3, p8_group): the two exact integers,
   I (the scaled products; q3_K and q6_K: with their biases) and B (the
   minimums times the activations' sums), as the lanes of ISUM and BSUM
   summed (exact: |.| < 2^28), then acc = fma (I, d dy, acc) and, for
   the types with minimums (MINS), acc = fma (B, -dmin dy, acc).  F
   holds d dy and -dmin dy in lanes 0 and 1; the accumulator is lane 0
   of ACC.  Summing the lanes of each super-block costs a few
   operations a column, but a row's result no longer depends on how
   its kernel spread the products over lanes: the plain dots give the
   tiles' bits, so a product's columns do not change with how many
   there are (the manual's "Reproducible results").  */
static inline __m128
kdot_step (__m128 acc, __m256i isum, __m256i bsum, __m128 f, bool mins)
{
  /* I and B of halves 0-3 and 4-7 in lanes 0 and 1 of each 128-bit
     lane, then the halves added.  */
  __m256i h = _mm256_hadd_epi32 (isum, bsum);
  h = _mm256_hadd_epi32 (h, h);
  const __m128 ib = _mm_cvtepi32_ps (_mm_add_epi32
                                     (_mm256_castsi256_si128 (h),
                                      _mm256_extracti128_si256 (h, 1)));
  acc = _mm_fmadd_ss (ib, f, acc);
  if (mins)
    acc = _mm_fmadd_ss (_mm_movehdup_ps (ib), _mm_movehdup_ps (f), acc);
  return acc;
}

/* kdot_step for two columns at once, the same steps on each (their
   accumulators, F and the integers side by side in one vector: lanes
   0, 1 and 2, 3), with fewer operations a column.  */
static inline void
kdot_step2 (__m128 *acc0, __m128 *acc1, __m256i i0, __m256i b0, __m128 f0,
            __m256i i1, __m256i b1, __m128 f1, bool mins)
{
  /* I0, B0, I1, B1 of halves 0-3 and 4-7, then the halves added.  */
  const __m256i h = _mm256_hadd_epi32 (_mm256_hadd_epi32 (i0, b0),
                                       _mm256_hadd_epi32 (i1, b1));
  const __m128 ib = _mm_cvtepi32_ps (_mm_add_epi32
                                     (_mm256_castsi256_si128 (h),
                                      _mm256_extracti128_si256 (h, 1)));
  const __m128 f = _mm_movelh_ps (f0, f1);
  __m128 a = _mm_movelh_ps (*acc0, *acc1);

  a = _mm_fmadd_ps (ib, f, a);
  if (mins)
    a = _mm_fmadd_ps (_mm_movehdup_ps (ib), _mm_movehdup_ps (f), a);
  *acc0 = a;
  *acc1 = _mm_movehl_ps (a, a);
}
#endif

#endif

/* The dot of decoded super-block S (SGN: signed weights) with
   super-block J of the NY activation rows Y, into the accumulators:
   d dy times the scaled products, DBIAS dy times the biased sums.  */
#if defined(__AVX512BW__)

/* AVX-512: the super-block decoded straight into registers (through
   memory, narrow stores followed by wide loads would stall on store
   forwarding): the 4 registers of weights, per register the int16
   scale of each pair sum, the 16 biases, and the lanes to negate the
   activations in (iq4_xs).  */
struct sbv
{
  __m512i w[4], scr[4];
  __m256i bias;
  __mmask64 neg[4];
  __m128 dd;
};

/* Lane i of the pair sums of register r is in group of 16 4 r + i / 8,
   group of 32 2 r + i / 16.  */
static inline __m512i
lanes16 (int r)
{
  return _mm512_add_epi16 (_mm512_setr_epi64 (0, 0, 0x0001000100010001,
                                              0x0001000100010001,
                                              0x0002000200020002,
                                              0x0002000200020002,
                                              0x0003000300030003,
                                              0x0003000300030003),
                           _mm512_set1_epi16 ((short) (4 * r)));
}

static inline __m512i
lanes32 (int r)
{
  return _mm512_add_epi16 (_mm512_setr_epi64 (0, 0, 0, 0,
                                              0x0001000100010001,
                                              0x0001000100010001,
                                              0x0001000100010001,
                                              0x0001000100010001),
                           _mm512_set1_epi16 ((short) (2 * r)));
}

/* Scales per group of 16 (SC16, int16) or of 32 (SC32, lanes 0..7).  */
static inline void
scales16_v4 (__m256i sc16, struct sbv *v)
{
  UNROLL
  for (int r = 0; r < 4; r++)
    v->scr[r] = _mm512_permutexvar_epi16 (lanes16 (r),
                                          _mm512_castsi256_si512 (sc16));
}

static inline void
scales32_v4 (__m256i sc32, struct sbv *v)
{
  UNROLL
  for (int r = 0; r < 4; r++)
    v->scr[r] = _mm512_permutexvar_epi16 (lanes32 (r),
                                          _mm512_castsi256_si512 (sc32));
}

static inline void
decode_k4_v4 (const uint8_t *qs, const uint8_t *scales, struct sbv *v)
{
  const __m512i m4 = _mm512_set1_epi8 (0x0f);
  /* Bias of group of 16 g: the minimum of group of 32 g / 2.  */
  const __m256i mins = _mm256_setr_epi16 (8, 8, 9, 9, 10, 10, 11, 11, 12,
                                          12, 13, 13, 14, 14, 15, 15);
  __m256i s = scales_k4_r (scales);

  UNROLL
  for (int h = 0; h < 2; h++)
    {
      /* Bytes 0..31: groups 4h (low nibbles) and 4h + 1 (high); 32..63
         the next two.  */
      __m512i q = _mm512_loadu_si512 (qs + 64 * h);
      __m512i lo = _mm512_and_si512 (q, m4);
      __m512i hi = _mm512_and_si512 (_mm512_srli_epi16 (q, 4), m4);
      v->w[2 * h] = _mm512_shuffle_i64x2 (lo, hi, _MM_SHUFFLE (1, 0, 1, 0));
      v->w[2 * h + 1] = _mm512_shuffle_i64x2 (lo, hi,
                                              _MM_SHUFFLE (3, 2, 3, 2));
    }
  scales32_v4 (s, v);
  v->bias = _mm256_permutexvar_epi16 (mins, s);
}

static inline void
decode_q4_K_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_q4_K *b = blk;

  decode_k4_v4 (b->qs, b->scales, v);
  v->dd = dd_mins_r (&b->d);
}

/* The bytes (1 << 2r) in the low half, (1 << (2r + 1)) in the high:
   bit e / 32 of byte e % 32 for the elements of register r.  */
static inline __m512i
bit_pair (int r)
{
  return _mm512_inserti64x4 (_mm512_set1_epi8 ((char) (1 << (2 * r))),
                             _mm256_set1_epi8 ((char) (1 << (2 * r + 1))),
                             1);
}

static inline void
decode_q5_K_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_q5_K *b = blk;
  const __m512i qh = _mm512_broadcast_i64x4
    (_mm256_loadu_si256 ((const __m256i *) b->qh));

  decode_k4_v4 (b->qs, b->scales, v);
  UNROLL
  for (int r = 0; r < 4; r++)
    v->w[r] = _mm512_mask_add_epi8 (v->w[r],
                                    _mm512_test_epi8_mask (qh, bit_pair (r)),
                                    v->w[r], _mm512_set1_epi8 (16));
  v->dd = dd_mins_r (&b->d);
}

/* q6_K: register 2h + k holds elements 128 h + 64 k ..: the low (k = 0)
   or high nibbles of ql[64 h ..], top bits from qh[32 h + l]: bits 0-1
   for elements l, 2-3 for 32 + l, 4-5 for 64 + l, 6-7 for 96 + l
   (shifted to bits 4-5 of each byte; a 16-bit shift moves bits across
   the bytes of a pair, the mask drops them).  */
static inline void
decode_q6_K_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_q6_K *b = blk;
  const __m512i m4 = _mm512_set1_epi8 (0x0f), m30 = _mm512_set1_epi8 (0x30);
  const __m512i left = _mm512_inserti64x4 (_mm512_set1_epi16 (4),
                                           _mm256_set1_epi16 (2), 1);
  const __m512i right = _mm512_inserti64x4 (_mm512_setzero_si512 (),
                                            _mm256_set1_epi16 (2), 1);
  __m256i sc;

  UNROLL
  for (int h = 0; h < 2; h++)
    {
      __m512i ql = _mm512_loadu_si512 (b->ql + 64 * h);
      __m512i qh = _mm512_broadcast_i64x4
        (_mm256_loadu_si256 ((const __m256i *) (b->qh + 32 * h)));
      v->w[2 * h] = _mm512_or_si512
        (_mm512_and_si512 (ql, m4),
         _mm512_and_si512 (_mm512_sllv_epi16 (qh, left), m30));
      v->w[2 * h + 1] = _mm512_or_si512
        (_mm512_and_si512 (_mm512_srli_epi16 (ql, 4), m4),
         _mm512_and_si512 (_mm512_srlv_epi16 (qh, right), m30));
    }
  sc = _mm256_cvtepi8_epi16 (_mm_loadu_si128 ((const __m128i *) b->scales));
  scales16_v4 (sc, v);
  v->bias = _mm256_sub_epi16 (_mm256_setzero_si256 (),
                              _mm256_slli_epi16 (sc, 5));
  v->dd = dd_same_r (b->d);
}

/* q2_K, q3_K: register r holds elements 64 r ..: bits 2c and 2c + 2
   (c = 2 (r % 2)) of qs[32 (r / 2) + l].  */
static inline void
crumbs_v4 (const uint8_t *qs, struct sbv *v)
{
  const __m512i m3 = _mm512_set1_epi8 (3);

  UNROLL
  for (int h = 0; h < 2; h++)
    {
      __m512i q = _mm512_broadcast_i64x4
        (_mm256_loadu_si256 ((const __m256i *) (qs + 32 * h)));
      UNROLL
      for (int k = 0; k < 2; k++)
        {
          __m512i shift = _mm512_inserti64x4
            (_mm512_set1_epi16 ((short) (4 * k)),
             _mm256_set1_epi16 ((short) (4 * k + 2)), 1);
          v->w[2 * h + k] = _mm512_and_si512 (_mm512_srlv_epi16 (q, shift),
                                              m3);
        }
    }
}

static inline void
decode_q2_K_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_q2_K *b = blk;
  const __m128i s = _mm_loadu_si128 ((const __m128i *) b->scales);
  const __m128i m4 = _mm_set1_epi8 (0x0f);

  crumbs_v4 (b->qs, v);
  scales16_v4 (_mm256_cvtepu8_epi16 (_mm_and_si128 (s, m4)), v);
  v->bias = _mm256_cvtepu8_epi16 (_mm_and_si128 (_mm_srli_epi16 (s, 4), m4));
  v->dd = dd_mins_r (&b->d);
}

static inline void
decode_q3_K_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_q3_K *b = blk;
  const __m512i hm = _mm512_broadcast_i64x4
    (_mm256_loadu_si256 ((const __m256i *) b->hmask));
  const __m256i sc = scales_q3_K_r (b);

  crumbs_v4 (b->qs, v);
  /* The high bit of register r's elements, bit 2r (low half) or 2r + 1
     (high half) of hmask, tested into a mask (port 5 on Intel: the
     shifts and products of this loop all queue on port 0) that selects
     the 4s or-ed in (the crumbs are below bit 2).  */
  UNROLL
  for (int r = 0; r < 4; r++)
    v->w[r] = _mm512_or_si512 (v->w[r], _mm512_maskz_mov_epi8
                               (_mm512_test_epi8_mask (hm, bit_pair (r)),
                                _mm512_set1_epi8 (4)));
  scales16_v4 (sc, v);
  v->bias = _mm256_sub_epi16 (_mm256_setzero_si256 (),
                              _mm256_slli_epi16 (sc, 2));
  v->dd = dd_same_r (b->d);
}

/* iq4_xs: register r holds groups 2r, 2r + 1: the low then high nibbles
   of qs[32 r ..] 0..15, then those of 16..31 (the 32 bytes spread as
   [0..15, 0..15, 16..31, 16..31], shifted by 0 or 4 per 128-bit lane),
   through the table of magnitudes; the negative entries are the first
   eight, so the lanes to negate are the nibbles without bit 3.  */
static inline void
decode_iq4_xs_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_iq4_xs *b = blk;
  const __m512i mag = _mm512_abs_epi8 (_mm512_broadcast_i32x4
                                       (_mm_loadu_si128 ((const __m128i *)
                                                         tsr_cpu_iq4nl_values)));
  const __m512i m4 = _mm512_set1_epi8 (0x0f), m8 = _mm512_set1_epi8 (8);
  const __m512i shift = _mm512_setr_epi64 (0, 0, 0x0004000400040004,
                                           0x0004000400040004, 0, 0,
                                           0x0004000400040004,
                                           0x0004000400040004);

  UNROLL
  for (int r = 0; r < 4; r++)
    {
      __m512i q = _mm512_castsi256_si512
        (_mm256_loadu_si256 ((const __m256i *) (b->qs + 32 * r)));
      q = _mm512_shuffle_i64x2 (q, q, _MM_SHUFFLE (1, 1, 0, 0));
      __m512i x = _mm512_and_si512 (_mm512_srlv_epi16 (q, shift), m4);
      v->neg[r] = _mm512_testn_epi8_mask (x, m8);
      v->w[r] = _mm512_shuffle_epi8 (mag, x);
    }
  scales32_v4 (scales_iq4_xs_r (b), v);
  v->bias = _mm256_setzero_si256 ();
  v->dd = dd_same_r (b->d);
}

/* Lane 0: a row's sum by one column (kdot_step).  */
struct acc
{
  __m128 a;
};

/* SUM plus the int16 pair sums of W.Y times the int16 scales SCR: one
   vpdpwssd with VNNI (no saturation in either form: the pair sums of
   pmaddwd stay far inside int32).  */
static inline __m512i
scaled_dot_v4 (__m512i sum, __m512i w, __m512i y, __m512i scr)
{
#if defined(__AVX512VNNI__)
  return _mm512_dpwssd_epi32 (sum, _mm512_maddubs_epi16 (w, y), scr);
#else
  return _mm512_add_epi32 (sum, _mm512_madd_epi16 (_mm512_maddubs_epi16
                                                   (w, y), scr));
#endif
}

/* Nothing to prepare per super-block (sbv_dot).  */
struct sbv_pre
{
  char unused;
};

static inline __attribute__ ((always_inline)) void
sbv_prep (const struct sbv *v, enum ktype t, struct sbv_pre *p)
{
  (void) v, (void) t, (void) p;
}

/* Super-block J of column Y by the decoded one V: the lanes of I into
   *ISUM, those of B into *BSUM, d dy and -dmin dy into *F
   (kdot_step).  */
static inline __attribute__ ((always_inline)) void
sbv_col (const struct sbv *v, const struct sbv_pre *p, enum ktype t,
         int64_t j, int64_t k, const void *y, __m256i *isum, __m256i *bsum,
         __m128 *f)
{
  const int8_t *yq = (const int8_t *) y + j * QK;
  __m512i sum = _mm512_setzero_si512 ();

  (void) p;
  *f = _mm_mul_ps (v->dd, _mm_set1_ps (tsr_cpu_kact_scales (y, k)[j]));
  UNROLL
  for (int r = 0; r < 4; r++)
    {
      __m512i yr = _mm512_load_si512 (yq + 64 * r);
      if (t == KIQ4XS)
        yr = _mm512_mask_sub_epi8 (yr, v->neg[r], _mm512_setzero_si512 (),
                                   yr);
      sum = scaled_dot_v4 (sum, v->w[r], yr, v->scr[r]);
    }
  const __m256i ys = _mm256_loadu_si256
    ((const __m256i *) (tsr_cpu_kact_sums (y, k) + j * GROUPS));
  if (!has_mins (t) && t != KIQ4XS)
    {
      /* q3_K, q6_K: the bias has the factor d too, so its sums go into
         the integer sum (within int32: below 2^29 for q6_K).  */
#if defined(__AVX512VNNI__)
      sum = _mm512_dpwssd_epi32 (sum, _mm512_zextsi256_si512 (ys),
                                 _mm512_zextsi256_si512 (v->bias));
#else
      sum = _mm512_add_epi32 (sum, _mm512_zextsi256_si512
                                     (_mm256_madd_epi16 (ys, v->bias)));
#endif
    }
  *isum = _mm256_add_epi32 (_mm512_castsi512_si256 (sum),
                            _mm512_extracti64x4_epi64 (sum, 1));
  *bsum = has_mins (t) ? _mm256_madd_epi16 (ys, v->bias) : *isum;
}

static inline void
acc_zero (struct acc *a)
{
  a->a = _mm_setzero_ps ();
}

static inline float
acc_sum (const struct acc *a)
{
  return _mm_cvtss_f32 (a->a);
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) \
  && defined(__BMI2__)

/* AVX2 (v3, v3-vnni): as AVX-512, the super-block decoded straight into
   registers, 8 of 32 weights in element order (register r: elements
   32 r ..), per register the int16 scale of each pair sum (lanes 0-7:
   group of 16 2 r, lanes 8-15: group 2 r + 1), and the 16 biases.
   iq4_xs keeps its signed values: pmaddubsw takes |w| and y sign (w).
   (Decoding into memory with byte stores and reading it back with wide
   loads ran ten to forty times slower.)  */
struct sbv
{
  __m256i w[8], scr[8];
  __m256i bias;
  __m128 dd;
};

/* Both 128-bit lanes of a register: int16 lane A of X in the low, B in
   the high one.  */
static inline __m256i
pick2 (__m256i x, int a, int b)
{
  const __m256i both = _mm256_permute2x128_si256 (x, x, 0x00);
  const __m256i both_hi = _mm256_permute2x128_si256 (x, x, 0x11);
  __m256i lo = _mm256_shuffle_epi8 (a < 8 ? both : both_hi,
                                    _mm256_set1_epi16
                                    ((short) (2 * (a % 8)
                                              | (2 * (a % 8) + 1) << 8)));
  __m256i hi = _mm256_shuffle_epi8 (b < 8 ? both : both_hi,
                                    _mm256_set1_epi16
                                    ((short) (2 * (b % 8)
                                              | (2 * (b % 8) + 1) << 8)));
  return _mm256_blend_epi32 (lo, hi, 0xf0);
}

/* Scales per group of 16 (SC16, 16 int16): register r gets 2 r, 2 r + 1.  */
static inline void
scales16_v3 (__m256i sc16, struct sbv *v)
{
  UNROLL
  for (int r = 0; r < 8; r++)
    v->scr[r] = pick2 (sc16, 2 * r, 2 * r + 1);
}

/* Scales per group of 32 (lanes 0-7 of SC): register r gets r.  */
static inline void
scales32_v3 (__m256i sc, struct sbv *v)
{
  UNROLL
  for (int r = 0; r < 8; r++)
    v->scr[r] = pick2 (sc, r, r);
}

/* q4_K, q5_K: 32 bytes of nibbles per 64 elements, the low nibbles
   the first 32 elements, the high ones the next 32.  */
static inline void
decode_k4_v3 (const uint8_t *qs, const uint8_t *scales, struct sbv *v)
{
  const __m256i m4 = _mm256_set1_epi8 (0x0f);
  const __m256i s = scales_k4_r (scales);

  UNROLL
  for (int i = 0; i < 4; i++)
    {
      __m256i q = _mm256_loadu_si256 ((const __m256i *) (qs + 32 * i));
      v->w[2 * i] = _mm256_and_si256 (q, m4);
      v->w[2 * i + 1] = _mm256_and_si256 (_mm256_srli_epi16 (q, 4), m4);
    }
  scales32_v3 (s, v);
  /* Bias of group of 16 g: the minimum of group of 32 g / 2, lanes
     8..15 of S.  */
  v->bias = _mm256_shuffle_epi8 (_mm256_permute2x128_si256 (s, s, 0x11),
                                 _mm256_setr_epi8 (0, 1, 0, 1, 2, 3, 2, 3,
                                                   4, 5, 4, 5, 6, 7, 6, 7,
                                                   8, 9, 8, 9, 10, 11, 10,
                                                   11, 12, 13, 12, 13, 14,
                                                   15, 14, 15));
}

static inline void
decode_q4_K_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_q4_K *b = blk;

  decode_k4_v3 (b->qs, b->scales, v);
  v->dd = dd_mins_r (&b->d);
}

/* Bytes whose bit R is set in Q: 0xff, else 0.  */
static inline __m256i
bit_set (__m256i q, int r)
{
  const __m256i m = _mm256_set1_epi8 ((char) (1 << r));
  return _mm256_cmpeq_epi8 (_mm256_and_si256 (q, m), m);
}

static inline void
decode_q5_K_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_q5_K *b = blk;
  const __m256i qh = _mm256_loadu_si256 ((const __m256i *) b->qh);

  decode_k4_v3 (b->qs, b->scales, v);
  UNROLL
  for (int r = 0; r < 8; r++)
    v->w[r] = _mm256_add_epi8 (v->w[r], _mm256_and_si256
                               (bit_set (qh, r), _mm256_set1_epi8 (16)));
  v->dd = dd_mins_r (&b->d);
}

/* q6_K: per 128 elements, ql[64] and qh[32]: elements l, 32 + l, 64 + l,
   96 + l are the low nibbles of ql[l], ql[32 + l], the high nibbles of
   ql[l], ql[32 + l], with bits 0-1, 2-3, 4-5, 6-7 of qh[l] on top.  */
static inline void
decode_q6_K_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_q6_K *b = blk;
  const __m256i m4 = _mm256_set1_epi8 (0x0f), m30 = _mm256_set1_epi8 (0x30);
  __m256i sc;

  UNROLL
  for (int h = 0; h < 2; h++)
    {
      __m256i l0 = _mm256_loadu_si256 ((const __m256i *) (b->ql + 64 * h));
      __m256i l1 = _mm256_loadu_si256 ((const __m256i *)
                                       (b->ql + 64 * h + 32));
      __m256i qh = _mm256_loadu_si256 ((const __m256i *) (b->qh + 32 * h));
      v->w[4 * h] = _mm256_or_si256
        (_mm256_and_si256 (l0, m4),
         _mm256_and_si256 (_mm256_slli_epi16 (qh, 4), m30));
      v->w[4 * h + 1] = _mm256_or_si256
        (_mm256_and_si256 (l1, m4),
         _mm256_and_si256 (_mm256_slli_epi16 (qh, 2), m30));
      v->w[4 * h + 2] = _mm256_or_si256
        (_mm256_and_si256 (_mm256_srli_epi16 (l0, 4), m4),
         _mm256_and_si256 (qh, m30));
      v->w[4 * h + 3] = _mm256_or_si256
        (_mm256_and_si256 (_mm256_srli_epi16 (l1, 4), m4),
         _mm256_and_si256 (_mm256_srli_epi16 (qh, 2), m30));
    }
  sc = _mm256_cvtepi8_epi16 (_mm_loadu_si128 ((const __m128i *) b->scales));
  scales16_v3 (sc, v);
  v->bias = _mm256_sub_epi16 (_mm256_setzero_si256 (),
                              _mm256_slli_epi16 (sc, 5));
  v->dd = dd_same_r (b->d);
}

/* q2_K, q3_K: per 128 elements, qs[32]: elements 32 j + l are bits 2j,
   2j + 1 of qs[l].  */
static inline void
crumbs_v3 (const uint8_t *qs, struct sbv *v)
{
  const __m256i m3 = _mm256_set1_epi8 (3);

  UNROLL
  for (int h = 0; h < 2; h++)
    {
      __m256i q = _mm256_loadu_si256 ((const __m256i *) (qs + 32 * h));
      v->w[4 * h] = _mm256_and_si256 (q, m3);
      v->w[4 * h + 1] = _mm256_and_si256 (_mm256_srli_epi16 (q, 2), m3);
      v->w[4 * h + 2] = _mm256_and_si256 (_mm256_srli_epi16 (q, 4), m3);
      v->w[4 * h + 3] = _mm256_and_si256 (_mm256_srli_epi16 (q, 6), m3);
    }
}

static inline void
decode_q2_K_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_q2_K *b = blk;
  const __m128i s = _mm_loadu_si128 ((const __m128i *) b->scales);
  const __m128i m4 = _mm_set1_epi8 (0x0f);

  crumbs_v3 (b->qs, v);
  scales16_v3 (_mm256_cvtepu8_epi16 (_mm_and_si128 (s, m4)), v);
  v->bias = _mm256_cvtepu8_epi16 (_mm_and_si128 (_mm_srli_epi16 (s, 4), m4));
  v->dd = dd_mins_r (&b->d);
}

static inline void
decode_q3_K_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_q3_K *b = blk;
  const __m256i hm = _mm256_loadu_si256 ((const __m256i *) b->hmask);
  const __m256i sc = scales_q3_K_r (b);

  crumbs_v3 (b->qs, v);
  UNROLL
  for (int r = 0; r < 8; r++)
    v->w[r] = _mm256_add_epi8 (v->w[r], _mm256_and_si256
                               (bit_set (hm, r), _mm256_set1_epi8 (4)));
  scales16_v3 (sc, v);
  v->bias = _mm256_sub_epi16 (_mm256_setzero_si256 (),
                              _mm256_slli_epi16 (sc, 2));
  v->dd = dd_same_r (b->d);
}

/* iq4_xs: register r holds group of 32 r: the low nibbles of qs[16 r ..]
   then the high ones, through the table.  */
static inline void
decode_iq4_xs_r (const void *blk, struct sbv *v)
{
  const struct tsr_block_iq4_xs *b = blk;
  const __m256i table = _mm256_broadcastsi128_si256
    (_mm_loadu_si128 ((const __m128i *) tsr_cpu_iq4nl_values));
  const __m128i m4 = _mm_set1_epi8 (0x0f);

  UNROLL
  for (int r = 0; r < 8; r++)
    {
      __m128i q = _mm_loadu_si128 ((const __m128i *) (b->qs + 16 * r));
      __m256i x = _mm256_inserti128_si256
        (_mm256_castsi128_si256 (_mm_and_si128 (q, m4)),
         _mm_and_si128 (_mm_srli_epi16 (q, 4), m4), 1);
      v->w[r] = _mm256_shuffle_epi8 (table, x);
    }
  scales32_v3 (scales_iq4_xs_r (b), v);
  v->bias = _mm256_setzero_si256 ();
  v->dd = dd_same_r (b->d);
}

/* Lane 0: a row's sum by one column (kdot_step).  */
struct acc
{
  __m128 a;
};

/* SUM plus the int16 pair sums of W.Y times the int16 scales SCR: one
   vpdpwssd with AVX-VNNI.  */
static inline __m256i
scaled_dot_v3 (__m256i sum, __m256i w, __m256i y, __m256i scr)
{
#if defined(__AVXVNNI__)
  return _mm256_dpwssd_avx_epi32 (sum, _mm256_maddubs_epi16 (w, y), scr);
#else
  return _mm256_add_epi32 (sum, _mm256_madd_epi16 (_mm256_maddubs_epi16
                                                   (w, y), scr));
#endif
}

/* The weights as pmaddubsw takes them (iq4_xs: |w|), once a
   super-block (sbv_dot).  */
struct sbv_pre
{
  __m256i w[8];
};

static inline __attribute__ ((always_inline)) void
sbv_prep (const struct sbv *v, enum ktype t, struct sbv_pre *p)
{
  UNROLL
  for (int r = 0; r < 8; r++)
    p->w[r] = t == KIQ4XS ? _mm256_abs_epi8 (v->w[r]) : v->w[r];
}

/* As AVX-512's.  */
static inline __attribute__ ((always_inline)) void
sbv_col (const struct sbv *v, const struct sbv_pre *p, enum ktype t,
         int64_t j, int64_t k, const void *y, __m256i *isum, __m256i *bsum,
         __m128 *f)
{
  const int8_t *yq = (const int8_t *) y + j * QK;
  __m256i sum = _mm256_setzero_si256 ();

  *f = _mm_mul_ps (v->dd, _mm_set1_ps (tsr_cpu_kact_scales (y, k)[j]));
  UNROLL
  for (int r = 0; r < 8; r++)
    {
      __m256i yr = _mm256_load_si256 ((const __m256i *) (yq + 32 * r));
      if (t == KIQ4XS)
        yr = _mm256_sign_epi8 (yr, v->w[r]);
      sum = scaled_dot_v3 (sum, p->w[r], yr, v->scr[r]);
    }
  const __m256i ys = _mm256_loadu_si256
    ((const __m256i *) (tsr_cpu_kact_sums (y, k) + j * GROUPS));
  if (!has_mins (t) && t != KIQ4XS)
    {
      /* q3_K, q6_K: the bias has the factor d too (as AVX-512).  */
#if defined(__AVXVNNI__)
      sum = _mm256_dpwssd_avx_epi32 (sum, ys, v->bias);
#else
      sum = _mm256_add_epi32 (sum, _mm256_madd_epi16 (ys, v->bias));
#endif
    }
  *isum = sum;
  *bsum = has_mins (t) ? _mm256_madd_epi16 (ys, v->bias) : sum;
}

static inline void
acc_zero (struct acc *a)
{
  a->a = _mm_setzero_ps ();
}

static inline float
acc_sum (const struct acc *a)
{
  return _mm_cvtss_f32 (a->a);
}

#elif defined(__SSSE3__)

struct acc
{
  __m128 a;
};

static inline __attribute__ ((always_inline)) void
sb_dot (const struct sb *s, bool sgn, float dbias, int64_t j, int64_t k,
        const int ny, const void *const *y, struct acc *acc)
{
  const __m128i bias0 = _mm_load_si128 ((const __m128i *) s->bias);
  const __m128i bias1 = _mm_load_si128 ((const __m128i *) s->bias + 1);

  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + j * QK;
      const int16_t *ys = tsr_cpu_kact_sums (y[c], k) + j * GROUPS;
      const float dy = tsr_cpu_kact_scales (y[c], k)[j];
      __m128i sum = _mm_setzero_si128 (), bs;

      for (int g = 0; g < GROUPS; g++)
        {
          __m128i w = _mm_load_si128 ((const __m128i *) (s->w + 16 * g));
          __m128i yg = _mm_load_si128 ((const __m128i *) (yq + 16 * g));
          if (sgn)
            {
              yg = _mm_sign_epi8 (yg, w);
              w = _mm_abs_epi8 (w);
            }
          sum = _mm_add_epi32 (sum, _mm_madd_epi16
                                      (_mm_maddubs_epi16 (w, yg),
                                       _mm_set1_epi16 (s->sc[g])));
        }
      bs = _mm_add_epi32
        (_mm_madd_epi16 (_mm_loadu_si128 ((const __m128i *) ys), bias0),
         _mm_madd_epi16 (_mm_loadu_si128 ((const __m128i *) (ys + 8)),
                         bias1));
      acc[c].a = _mm_add_ps (acc[c].a, _mm_mul_ps (_mm_cvtepi32_ps (sum),
                                                   _mm_set1_ps (s->d * dy)));
      acc[c].a = _mm_add_ps (acc[c].a, _mm_mul_ps (_mm_cvtepi32_ps (bs),
                                                   _mm_set1_ps (dbias * dy)));
    }
}

static inline void
acc_zero (struct acc *a)
{
  a->a = _mm_setzero_ps ();
}

static inline float
acc_sum (const struct acc *a)
{
  __m128 t = _mm_add_ps (a->a, _mm_movehl_ps (a->a, a->a));
  t = _mm_add_ss (t, _mm_shuffle_ps (t, t, 1));
  return _mm_cvtss_f32 (t);
}

#elif defined(__ARM_FEATURE_DOTPROD)

struct acc
{
  float32x4_t a;
};

static inline __attribute__ ((always_inline)) void
sb_dot (const struct sb *s, bool sgn, float dbias, int64_t j, int64_t k,
        const int ny, const void *const *y, struct acc *acc)
{
  (void) sgn;                   /* sdot takes signed bytes both sides */
  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + j * QK;
      const int16_t *ys = tsr_cpu_kact_sums (y[c], k) + j * GROUPS;
      const float dy = tsr_cpu_kact_scales (y[c], k)[j];
      int32x4_t sum = vdupq_n_s32 (0), bs = vdupq_n_s32 (0);

      for (int g = 0; g < GROUPS; g++)
        sum = vmlaq_n_s32 (sum, vdotq_s32 (vdupq_n_s32 (0),
                                           vld1q_s8 ((const int8_t *) s->w
                                                     + 16 * g),
                                           vld1q_s8 (yq + 16 * g)),
                           s->sc[g]);
      for (int g = 0; g < GROUPS; g += 4)
        bs = vmlal_s16 (bs, vld1_s16 (ys + g), vld1_s16 (s->bias + g));
      acc[c].a = vfmaq_n_f32 (acc[c].a, vcvtq_f32_s32 (sum), s->d * dy);
      acc[c].a = vfmaq_n_f32 (acc[c].a, vcvtq_f32_s32 (bs), dbias * dy);
    }
}

static inline void
acc_zero (struct acc *a)
{
  a->a = vdupq_n_f32 (0);
}

static inline float
acc_sum (const struct acc *a)
{
  return vaddvq_f32 (a->a);
}

#else

struct acc
{
  float a;
};

static inline __attribute__ ((always_inline)) void
sb_dot (const struct sb *s, bool sgn, float dbias, int64_t j, int64_t k,
        const int ny, const void *const *y, struct acc *acc)
{
  for (int c = 0; c < ny; c++)
    {
      const int8_t *yq = (const int8_t *) y[c] + j * QK;
      const int16_t *ys = tsr_cpu_kact_sums (y[c], k) + j * GROUPS;
      const float dy = tsr_cpu_kact_scales (y[c], k)[j];
      int32_t sum = 0, bs = 0;

      for (int g = 0; g < GROUPS; g++)
        {
          int32_t t = 0;
          for (int i = 16 * g; i < 16 * g + 16; i++)
            t += (sgn ? (int8_t) s->w[i] : s->w[i]) * yq[i];
          sum += s->sc[g] * t;
          bs += s->bias[g] * ys[g];
        }
      acc[c].a += s->d * dy * (float) sum + dbias * dy * (float) bs;
    }
}

static inline void
acc_zero (struct acc *a)
{
  a->a = 0;
}

static inline float
acc_sum (const struct acc *a)
{
  return a->a;
}

#endif

/* Levels whose register decoders (decode_<type>_r, struct sbv) exist.  */
#if defined(__AVX512BW__) \
  || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) \
      && defined(__BMI2__))
#define KQ_REGS 1

static inline __attribute__ ((always_inline)) void
decode_regs (enum ktype t, const void *blk, struct sbv *v)
{
  switch (t)
    {
    case KQ2: decode_q2_K_r (blk, v); break;
    case KQ3: decode_q3_K_r (blk, v); break;
    case KQ4: decode_q4_K_r (blk, v); break;
    case KQ5: decode_q5_K_r (blk, v); break;
    case KQ6: decode_q6_K_r (blk, v); break;
    default: decode_iq4_xs_r (blk, v); break;
    }
}

/* The dot of decoded super-block V with super-block J of the NY
   columns Y, into their accumulators: two columns at a time
   (kdot_step2), the last one alone.  */
static inline __attribute__ ((always_inline)) void
sbv_dot (const struct sbv *v, enum ktype t, int64_t j, int64_t k,
         const int ny, const void *const *y, struct acc *acc)
{
  struct sbv_pre p;

  sbv_prep (v, t, &p);
  UNROLL
  for (int c = 0; c < ny; c += 2)
    {
      __m256i i0, b0;
      __m128 f0;
      sbv_col (v, &p, t, j, k, y[c], &i0, &b0, &f0);
      if (c + 1 < ny)
        {
          __m256i i1, b1;
          __m128 f1;
          sbv_col (v, &p, t, j, k, y[c + 1], &i1, &b1, &f1);
          kdot_step2 (&acc[c].a, &acc[c + 1].a, i0, b0, f0, i1, b1, f1,
                      has_mins (t));
        }
      else
        acc[c].a = kdot_step (acc[c].a, i0, b0, f0, has_mins (t));
    }
}
#endif

/* Super-blocks [J0, J1) of the row at X (K elements) dotted with the
   NY columns Y, into ACC, each prefetching the lines AHEAD bytes from
   it.  */
static inline __attribute__ ((always_inline)) void
kdot_range (enum ktype t, int64_t k, const char *x, int64_t j0, int64_t j1,
            ptrdiff_t ahead, const int ny, const void *const *y,
            struct acc *acc)
{
  const size_t bytes = block_bytes (t);

  x += (size_t) j0 * bytes;
  for (int64_t j = j0; j < j1; j++, x += bytes)
    {
      /* AHEAD may be negative (kdot_rows): a signed offset, which
         does not wrap around as a size_t would.  */
      qdot_prefetch_ahead (x + ahead, 0, bytes);
#ifdef KQ_REGS
      struct sbv v;
      decode_regs (t, x, &v);
      sbv_dot (&v, t, j, k, ny, y, acc);
#else
      struct sb s;
      decode (t, x, &s);
      sb_dot (&s, t == KIQ4XS, has_mins (t) ? -s.dmin : s.d, j, k, ny, y,
              acc);
#endif
    }
}

static inline __attribute__ ((always_inline)) void
kdot (enum ktype t, int64_t k, const char *x, const int ny,
      const void *const *y, float *out)
{
  struct acc acc[TSR_CPU_QDOT_MAX_COLS];

  UNROLL
  for (int c = 0; c < ny; c++)
    acc_zero (&acc[c]);
  kdot_range (t, k, x, 0, k / QK, TSR_CPU_PREFETCH_AHEAD, ny, y, acc);
  UNROLL
  for (int c = 0; c < ny; c++)
    out[c] = acc_sum (&acc[c]);
}

/* The NR rows at X (BX bytes apart) by NY columns, row r's results at
   OUT + r NY.  With several columns of long rows, KDOT_KC super-blocks
   of every row (up to KDOT_RC rows) at a time, each row's accumulators
   kept in memory between the chunks, so that the columns' chunks (8
   columns of 2048 elements: about 19 KiB) are read from L1 by every
   row instead of streaming whole columns through it from L2 for each
   row (4096 x 14336, n = 8: 375 GFLOP/s for q4_K against 565 on rows
   of 2048).  Each accumulator takes the same steps in the same order
   either way: the results are the same bits.
   The chunks are read row after row, each row's a stream with gaps
   that the hardware prefetchers follow too late, so each super-block
   prefetches its counterpart KDOT_PF_ROWS chunks later in that order
   (the same chunk KDOT_PF_ROWS rows on, or the next chunk of the first
   rows), not TSR_CPU_PREFETCH_AHEAD bytes on along its own row, which
   the rows read in between evicted.  Two Zen 5 cores, 4096 x 14336,
   plain weights, cold, runs alternated, GFLOP/s at n = 2 / 4 / 8: q3_K
   162-164 / 260-265 / 409-436 -> 280-290 / 453-463 / 568-578, q2_K
   289-291 / 420-432 / 559-582 -> 380-395 / 521-582 / 608-617, q5_K
   224-226 / 400-410 / 488-507 -> 231-245 / 430-444 / 530-532; 14336 x
   4096 (two chunks a row) at n = 4: q2_K 424-448 -> 514-524, q5_K
   276-292 -> 363-380, q3_K even.  2, 4, 6, 8 and 12 rows ahead were
   measured: 4 to 6 best.  */
#define KDOT_KC 8
#define KDOT_RC 16
#ifndef KDOT_PF_ROWS
#define KDOT_PF_ROWS 5
#endif
static inline __attribute__ ((always_inline)) void
kdot_rows (enum ktype t, int64_t k, const char *x, size_t bx, int nr,
           const int ny, const void *const *y, float *out)
{
  const int64_t nb = k / QK;

  if (ny == 1 || nr == 1 || nb <= KDOT_KC)
    {
      for (int r = 0; r < nr; r++)
        kdot (t, k, x + (size_t) r * bx, ny, y, out + r * ny);
      return;
    }
  for (int r0 = 0; r0 < nr; r0 += KDOT_RC)
    {
      const int rn = nr - r0 < KDOT_RC ? nr - r0 : KDOT_RC;
      struct acc acc[KDOT_RC][TSR_CPU_QDOT_MAX_COLS];

      for (int r = 0; r < rn; r++)
        UNROLL
        for (int c = 0; c < ny; c++)
          acc_zero (&acc[r][c]);
      for (int64_t j0 = 0; j0 < nb; j0 += KDOT_KC)
        {
          const int64_t j1 = nb - j0 < KDOT_KC ? nb : j0 + KDOT_KC;
          for (int r = 0; r < rn; r++)
            {
              /* The chunk KDOT_PF_ROWS rows on (the next chunk of the
                 first rows near the end): the order of the reads,
                 which the hardware's prefetchers, following each row,
                 do not see.  */
              const int rp = (r + KDOT_PF_ROWS) % rn;
              const int64_t jp = j0 + (r + KDOT_PF_ROWS) / rn * KDOT_KC;
              const ptrdiff_t ahead
                = ((ptrdiff_t) rp - r) * (ptrdiff_t) bx
                  + (ptrdiff_t) (jp - j0) * (ptrdiff_t) block_bytes (t);
              kdot_range (t, k, x + (size_t) (r0 + r) * bx, j0, j1,
                          jp < nb ? ahead : 0, ny, y, acc[r]);
            }
        }
      for (int r = 0; r < rn; r++)
        UNROLL
        for (int c = 0; c < ny; c++)
          out[(r0 + r) * ny + c] = acc_sum (&acc[r][c]);
    }
}


/* The common form of super-block BLK, decoded in registers where the
   level can (the GEMM converts weights through krow: byte stores read
   back as vectors stalled it) and put in S with full-width stores.  */
static inline __attribute__ ((always_inline)) void
decode_wide (enum ktype t, const void *blk, struct sb *s)
{
#if defined(__AVX512BW__)
  struct sbv v;
  _Alignas (64) int16_t scr[4][32];

  decode_regs (t, blk, &v);
  UNROLL
  for (int r = 0; r < 4; r++)
    {
      __m512i w = v.w[r];
      if (t == KIQ4XS)
        w = _mm512_mask_sub_epi8 (w, v.neg[r], _mm512_setzero_si512 (), w);
      _mm512_store_si512 (s->w + 64 * r, w);
      _mm512_store_si512 (scr[r], v.scr[r]);
    }
  /* Lane i of register r's scales is group of 16 4 r + i / 8.  */
  for (int g = 0; g < GROUPS; g++)
    s->sc[g] = scr[g / 4][8 * (g % 4)];
  _mm256_store_si256 ((__m256i *) s->bias, v.bias);
  s->d = _mm_cvtss_f32 (v.dd);
  s->dmin = has_mins (t) ? -_mm_cvtss_f32 (_mm_movehdup_ps (v.dd)) : 0;
#elif defined(KQ_REGS)
  struct sbv v;
  _Alignas (32) int16_t scr[8][16];

  decode_regs (t, blk, &v);
  UNROLL
  for (int r = 0; r < 8; r++)
    {
      _mm256_store_si256 ((__m256i *) (s->w + 32 * r), v.w[r]);
      _mm256_store_si256 ((__m256i *) scr[r], v.scr[r]);
    }
  /* Lanes 0-7 of register r's scales are group 2 r, 8-15 2 r + 1.  */
  for (int g = 0; g < GROUPS; g++)
    s->sc[g] = scr[g / 2][8 * (g % 2)];
  _mm256_store_si256 ((__m256i *) s->bias, v.bias);
  s->d = _mm_cvtss_f32 (v.dd);
  s->dmin = has_mins (t) ? -_mm_cvtss_f32 (_mm_movehdup_ps (v.dd)) : 0;
#else
  decode (t, blk, s);
#endif
}

/* Dequantization: (d sc_g) (w - offset), minus dmin bias_g for the
   types with minimums, in the reference's order.  */
static inline __attribute__ ((always_inline)) void
krow (enum ktype t, int64_t n, float *y, const char *x)
{
  const size_t bytes = block_bytes (t);
  const int off = offset_of (t);
  struct sb s;

  for (int64_t j = 0; j < n / QK; j++, x += bytes, y += QK)
    {
      decode_wide (t, x, &s);
      for (int g = 0; g < GROUPS; g++)
        {
          const float dl = s.d * s.sc[g], ml = s.dmin * s.bias[g];
          float *yg = y + 16 * g;
          const uint8_t *wg = s.w + 16 * g;
          if (has_mins (t))
            for (int i = 0; i < 16; i++)
              yg[i] = dl * wg[i] - ml;
          else if (t == KIQ4XS)
            for (int i = 0; i < 16; i++)
              yg[i] = dl * (int8_t) wg[i];
          else
            for (int i = 0; i < 16; i++)
              yg[i] = dl * (wg[i] - off);
        }
    }
}

#define KTYPE_FNS(name, t)                                              \
  void                                                                  \
  TSR_CPU_LEVEL_FN (vec_dot_##name##_q8_K) (int64_t k, const void *x,   \
                                            size_t bx, int nr, int ny,  \
                                            const void *const *y,       \
                                            float *out)                 \
  {                                                                     \
    switch (ny)                                                         \
      {                                                                 \
      case 1: kdot_rows (t, k, (const char *) x, bx, nr, 1, y, out); break; \
      case 2: kdot_rows (t, k, (const char *) x, bx, nr, 2, y, out); break; \
      case 3: kdot_rows (t, k, (const char *) x, bx, nr, 3, y, out); break; \
      case 4: kdot_rows (t, k, (const char *) x, bx, nr, 4, y, out); break; \
      case 5: kdot_rows (t, k, (const char *) x, bx, nr, 5, y, out); break; \
      case 6: kdot_rows (t, k, (const char *) x, bx, nr, 6, y, out); break; \
      case 7: kdot_rows (t, k, (const char *) x, bx, nr, 7, y, out); break; \
      default: kdot_rows (t, k, (const char *) x, bx, nr, 8, y, out); break; \
      }                                                                 \
  }                                                                     \
  void                                                                  \
  TSR_CPU_LEVEL_FN (row_##name##_to_f32) (int64_t n, float *y,          \
                                          const void *x)                \
  {                                                                     \
    krow (t, n, y, (const char *) x);                                   \
  }

KTYPE_FNS (q2_K, KQ2)
KTYPE_FNS (q3_K, KQ3)
KTYPE_FNS (q4_K, KQ4)
KTYPE_FNS (q5_K, KQ5)
KTYPE_FNS (q6_K, KQ6)
KTYPE_FNS (iq4_xs, KIQ4XS)


/* The groups of 32 whose sums go together in pair S (dword S of the
   activation row's sums of 32 read as int32, cpu-vec-k.h: groups 0 and
   2, 4 and 6, 1 and 3, 5 and 7): p8_bias16 and the AMX kernels pair
   the minimums and q4_K's offsets so.  */
static const int pairs32[4][2] = { { 0, 2 }, { 4, 6 }, { 1, 3 }, { 5, 7 } };

/* The 8-row packed form of plain super-blocks (cpu-vec-k.h): mul_mat
   packs a thread's tile of rows once for all its columns, then runs
   register tiles of 8 rows by up to 8 columns over it.  Per
   super-block and row the two exact integers of the plain dots (I: the
   scaled products, and the biases of q3_K, q6_K and iq4_xs; B: the
   minimums times the activation sums), then the f32 steps.  */
#define P8 TSR_CPU_KP8_ROWS

static inline enum ktype
ktype_of (tsr_type type)
{
  switch (type)
    {
    case TSR_TYPE_Q2_K: return KQ2;
    case TSR_TYPE_Q3_K: return KQ3;
    case TSR_TYPE_Q4_K: return KQ4;
    case TSR_TYPE_Q5_K: return KQ5;
    case TSR_TYPE_Q6_K: return KQ6;
    default: return KIQ4XS;
    }
}

/* Where value E (< 256) of row R sits in a packed super-block.  */
static inline size_t
p8_value_at (int r, int e)
{
  return TSR_CPU_KP8_W + 64 * (size_t) (e / 8) + 8 * r + e % 8;
}

/* Row R's scale (resp. bias) of group of 16 G.  */
static inline size_t
p8_scale_at (int r, int g)
{
  return TSR_CPU_KP8_SC + 64 * (size_t) (g / 4) + 2 * (8 * (g % 4) + r);
}

static inline size_t
p8_bias_at (int r, int g)
{
  return TSR_CPU_KP8_BIAS + 32 * (size_t) (g / 2) + 4 * r + 2 * (g % 2);
}

#if !defined(__AVX512BW__)
/* Decoded super-block S of row R into the packed one at O: its values
   (iq4_xs: plus 128), scales, biases (iq4_xs: -128 times its scales)
   and float factors.  */
static void
p8_put_ref (enum ktype t, const struct sb *s, int r, unsigned char *o)
{
  float dm = has_mins (t) ? -s->dmin : 0;

  for (int e = 0; e < QK; e++)
    o[p8_value_at (r, e)] = (uint8_t) (t == KIQ4XS ? s->w[e] ^ 0x80 : s->w[e]);
  for (int g = 0; g < GROUPS; g++)
    {
      int16_t bias = t == KIQ4XS ? (int16_t) (-128 * s->sc[g]) : s->bias[g];
      memcpy (o + p8_scale_at (r, g), &s->sc[g], 2);
      memcpy (o + p8_bias_at (r, g), &bias, 2);
    }
  memcpy (o + TSR_CPU_KP8_D + 4 * r, &s->d, 4);
  memcpy (o + TSR_CPU_KP8_DM + 4 * r, &dm, 4);
}

/* The stored value of element E of row R (iq4_xs: its index into the
   table) in super-block S of a repacked group (cpu-repack.c): in the
   vectors of group of 32 J = E / 32, lane 2 r + h, byte b for element
   32 J + 8 v + 4 h + b, nibble v % 2 of the vector v / 2; q5_K's fifth
   bit is bit v (+ 4 for an odd J) of the pair's vector of fifth bits,
   q6_K's high bits are bits 2 v, 2 v + 1 of the third vector.  */
static int
p8_x8_value (enum ktype t, const unsigned char *s, int r, int e)
{
  const int j = e / 32, v = e % 32 / 8, at = 8 * r + e % 8;
  const int base = t == KQ4 ? TSR_CPU_X8_Q4K_VALUES (j)
                   : t == KQ5 ? TSR_CPU_X8_Q5K_VALUES (j)
                   : t == KQ6 ? TSR_CPU_X8_Q6K_VALUES (j)
                   : TSR_CPU_X8_XS_VALUES (j);
  int q = s[base + 64 * (v / 2) + at] >> (4 * (v % 2)) & 15;

  if (t == KQ5)
    q |= (s[TSR_CPU_X8_Q5K_HIGH (j) + at] >> (4 * (j % 2) + v) & 1) << 4;
  else if (t == KQ6)
    q |= (s[base + 128 + at] >> (2 * v) & 3) << 4;
  return q;
}

/* The reference conversion of super-block S of a repacked group into
   the packed one at O: per row, the plain block's head (scales,
   factors) put back where the decoder reads it, decoded, and the
   values read from the group.  */
static void
p8_from_x8_ref (enum ktype t, const unsigned char *s, unsigned char *o)
{
  for (int r = 0; r < P8; r++)
    {
      _Alignas (16) unsigned char blk[256] = { 0 };
      struct sb sb;
      if (t == KQ4 || t == KQ5)
        {
          /* d, dmin, then the 12 bytes of scales and minimums.  */
          memcpy (blk, s + 2 * r, 2);
          memcpy (blk + 2, s + 16 + 2 * r, 2);
          for (int w = 0; w < 3; w++)
            memcpy (blk + 4 + 4 * w, s + 32 + 32 * w + 4 * r, 4);
        }
      else if (t == KQ6)
        {
          struct tsr_block_q6_K *b = (struct tsr_block_q6_K *) blk;
          memcpy (&b->d, s + 2 * r, 2);
          /* Scales 8 h + 2 q and the next: bytes 4 r + 2 h of the
             scales' vector q.  */
          for (int q = 0; q < 4; q++)
            for (int h = 0; h < 2; h++)
              memcpy (b->scales + 8 * h + 2 * q,
                      s + 16 + 32 * q + 4 * r + 2 * h, 2);
        }
      else
        {
          struct tsr_block_iq4_xs *b = (struct tsr_block_iq4_xs *) blk;
          memcpy (&b->d, s + 2 * r, 2);
          memcpy (&b->scales_h, s + 48 + 2 * r, 2);
          memcpy (b->scales_l, s + 16 + 4 * r, 4);
        }
      decode (t, blk, &sb);
      for (int e = 0; e < QK; e++)
        {
          int q = p8_x8_value (t, s, r, e);
          sb.w[e] = (uint8_t) (t == KIQ4XS ? tsr_cpu_iq4nl_values[q] : q);
        }
      p8_put_ref (t, &sb, r, o);
    }
}
#endif

#if !defined(KQ_REGS)
/* The reference pack: every field put one by one.  */
static void
p8_pack_ref (enum ktype t, int64_t k, const char *x, size_t bx, int nr,
             unsigned char *dst)
{
  const size_t bytes = block_bytes (t);

  memset (dst, 0, (size_t) (k / QK) * TSR_CPU_KP8_BYTES);
  for (int64_t i = 0; i < k / QK; i++)
    for (int r = 0; r < nr; r++)
      {
        struct sb s;
        decode (t, x + (size_t) r * bx + (size_t) i * bytes, &s);
        p8_put_ref (t, &s, r, dst + (size_t) i * TSR_CPU_KP8_BYTES);
      }
}

#endif

/* acc + i f, the step every kernel of the super-block types takes per
   super-block (one rounding where the level has a fused multiply-add,
   as the vector code does).  */
static inline float
p8_step (float acc, int32_t i, float f)
{
#if defined(FP_FAST_FMAF)
  return fmaf ((float) i, f, acc);
#else
  return (float) i * f + acc;
#endif
}

#if !defined(KQ_REGS)
/* The reference kernel: OUT[r NY_OUT + c] for the 8 rows of the packed
   group G and NY columns.  */
static void
p8_group_ref (enum ktype t, int64_t k, const unsigned char *g, int ny,
              const void *const *y, float *out, int ny_out)
{
  float acc[P8][TSR_CPU_QDOT_MAX_COLS] = { { 0 } };

  for (int64_t i = 0; i < k / QK; i++)
    {
      const unsigned char *o = g + (size_t) i * TSR_CPU_KP8_BYTES;
      for (int r = 0; r < P8; r++)
        for (int c = 0; c < ny; c++)
          {
            const int8_t *a = (const int8_t *) y[c] + QK * i;
            const int16_t *ys = tsr_cpu_kact_sums (y[c], k) + GROUPS * i;
            const float dy = tsr_cpu_kact_scales (y[c], k)[i];
            int32_t isum = 0, bsum = 0;
            float d, dm;
            for (int gi = 0; gi < GROUPS; gi++)
              {
                int16_t sc, bias;
                int32_t sg = 0;
                memcpy (&sc, o + p8_scale_at (r, gi), 2);
                memcpy (&bias, o + p8_bias_at (r, gi), 2);
                for (int e = 16 * gi; e < 16 * gi + 16; e++)
                  sg += o[p8_value_at (r, e)] * a[e];
                isum += sc * sg;
                if (has_mins (t))
                  bsum += bias * ys[gi];
                else
                  isum += bias * ys[gi];
              }
            memcpy (&d, o + TSR_CPU_KP8_D + 4 * r, 4);
            memcpy (&dm, o + TSR_CPU_KP8_DM + 4 * r, 4);
            acc[r][c] = p8_step (acc[r][c], isum, d * dy);
            if (has_mins (t))
              acc[r][c] = p8_step (acc[r][c], bsum, dm * dy);
          }
    }
  for (int r = 0; r < P8; r++)
    for (int c = 0; c < ny; c++)
      out[r * ny_out + c] = acc[r][c];
}
#endif

/* Vectors of 8 values a row summed before their scale: within int16
   (the AVX-512 kernel packs two such sums into words, the AVX2
   vpdpwssd reads the low half), 8 products for 5-bit values (8 x 31 x
   127), 16 for q4_K's and 4 for q6_K's.
   iq4_xs's values plus 128 overflow even 4: its groups of 32 are
   scaled in int32 (vpmulld).  */
static inline int
p8_span (enum ktype t)
{
  return t == KQ6 ? 1 : t == KQ4 || t == KIQ4XS ? 4 : 2;
}

#if defined(__AVX512BW__)
/* The 8 rows' values of a super-block, decoded into STAGE (row r at 256
   r), packed: value vector v (of 32) holds 8 bytes of each row, a
   transposition of 8 by 8 quadwords per 64 bytes.  */
static inline void
p8_put_values (const uint8_t (*stage)[QK], unsigned char *o)
{
  const __m512i lo = _mm512_setr_epi64 (0, 8, 2, 10, 4, 12, 6, 14);
  const __m512i hi = _mm512_setr_epi64 (1, 9, 3, 11, 5, 13, 7, 15);
  const __m512i lo2 = _mm512_setr_epi64 (0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i hi2 = _mm512_setr_epi64 (2, 3, 10, 11, 6, 7, 14, 15);
  const __m512i lo4 = _mm512_setr_epi64 (0, 1, 2, 3, 8, 9, 10, 11);
  const __m512i hi4 = _mm512_setr_epi64 (4, 5, 6, 7, 12, 13, 14, 15);

  for (int c = 0; c < QK / 64; c++)
    {
      __m512i a[8], b[8];
      UNROLL
      for (int r = 0; r < 8; r++)
        a[r] = _mm512_load_si512 (stage[r] + 64 * c);
      /* Pairs of rows (b[r]: quadwords 0, 2, 4, 6 of rows r, r + 1;
         b[r + 1] the odd ones), fours (a[r + j]: quadwords j and
         4 + j of rows r..r + 3, j < 4), then all eight.  */
      UNROLL
      for (int r = 0; r < 8; r += 2)
        {
          b[r] = _mm512_permutex2var_epi64 (a[r], lo, a[r + 1]);
          b[r + 1] = _mm512_permutex2var_epi64 (a[r], hi, a[r + 1]);
        }
      UNROLL
      for (int r = 0; r < 8; r += 4)
        UNROLL
        for (int j = 0; j < 2; j++)
          {
            a[r + j] = _mm512_permutex2var_epi64 (b[r + j], lo2,
                                                  b[r + 2 + j]);
            a[r + 2 + j] = _mm512_permutex2var_epi64 (b[r + j], hi2,
                                                      b[r + 2 + j]);
          }
      UNROLL
      for (int j = 0; j < 4; j++)
        {
          b[j] = _mm512_permutex2var_epi64 (a[j], lo4, a[4 + j]);
          b[4 + j] = _mm512_permutex2var_epi64 (a[j], hi4, a[4 + j]);
        }
      /* b[j]: quadword j of rows 0..7.  */
      UNROLL
      for (int j = 0; j < 8; j++)
        _mm512_storeu_si512 (o + TSR_CPU_KP8_W + 64 * (8 * c + j), b[j]);
    }
}
#endif

#if defined(__AVX512BW__)
/* The 16 int16 scales of a decoded super-block, groups of 16 in
   order, from its per-pair scales (lane i of register q: group
   4 q + i / 8).  */
static inline __m256i
p8_scales16 (const struct sbv *v)
{
  /* Words 0, 8, 16, 24 of each register.  */
  const __m512i pick = _mm512_setr_epi32 (0x00080000, 0x00180010,
                                          0x00280020, 0x00380030,
                                          0, 0, 0, 0, 0, 0, 0, 0,
                                          0, 0, 0, 0);
  const __m512i join = _mm512_setr_epi32 (0x00010000, 0x00030002,
                                          0x00050004, 0x00070006,
                                          0x00210020, 0x00230022,
                                          0x00250024, 0x00270026,
                                          0, 0, 0, 0, 0, 0, 0, 0);
  __m512i a = _mm512_permutex2var_epi16 (v->scr[0], pick, v->scr[1]);
  __m512i b = _mm512_permutex2var_epi16 (v->scr[2], pick, v->scr[3]);
  return _mm512_castsi512_si256 (_mm512_permutex2var_epi16 (a, join, b));
}

/* The 8 rows' 16 int16 (row r at 16 r of ROWS) as 4 vectors at DST:
   word w of vector j comes from row r (w) % 4 of the first four rows
   (the pair of vectors lo) or of the last four (hi), group g (j, w),
   as IDX (j) says; HI the words from the last four.  */
static inline void
p8_put_words (const int16_t *rows, const __m512i *idx, __mmask32 hi,
              unsigned char *dst)
{
  const __m512i r01 = _mm512_load_si512 (rows);
  const __m512i r23 = _mm512_load_si512 (rows + 32);
  const __m512i r45 = _mm512_load_si512 (rows + 64);
  const __m512i r67 = _mm512_load_si512 (rows + 96);

  UNROLL
  for (int j = 0; j < 4; j++)
    _mm512_storeu_si512 (dst + 64 * j, _mm512_mask_blend_epi16
                         (hi, _mm512_permutex2var_epi16 (r01, idx[j], r23),
                          _mm512_permutex2var_epi16 (r45, idx[j], r67)));
}

/* Where the scales and biases of the 8 rows go (p8_put_words).
   Scales: word w of vector j is row w % 8 of group 4 j + w / 8; biases:
   row w % 16 / 2 of group 4 j + 2 (w / 16) + w % 2.  Row r of group g is
   word 16 (r % 4) + g of its pair of staged vectors.  */
static const int16_t p8_scale_idx[4][32] = {
  { 0, 16, 32, 48, 0, 16, 32, 48, 1, 17, 33, 49, 1, 17, 33, 49,
    2, 18, 34, 50, 2, 18, 34, 50, 3, 19, 35, 51, 3, 19, 35, 51 },
  { 4, 20, 36, 52, 4, 20, 36, 52, 5, 21, 37, 53, 5, 21, 37, 53,
    6, 22, 38, 54, 6, 22, 38, 54, 7, 23, 39, 55, 7, 23, 39, 55 },
  { 8, 24, 40, 56, 8, 24, 40, 56, 9, 25, 41, 57, 9, 25, 41, 57,
    10, 26, 42, 58, 10, 26, 42, 58, 11, 27, 43, 59, 11, 27, 43, 59 },
  { 12, 28, 44, 60, 12, 28, 44, 60, 13, 29, 45, 61, 13, 29, 45, 61,
    14, 30, 46, 62, 14, 30, 46, 62, 15, 31, 47, 63, 15, 31, 47, 63 }
};
static const int16_t p8_bias_idx[4][32] = {
  { 0, 1, 16, 17, 32, 33, 48, 49, 0, 1, 16, 17, 32, 33, 48, 49,
    2, 3, 18, 19, 34, 35, 50, 51, 2, 3, 18, 19, 34, 35, 50, 51 },
  { 4, 5, 20, 21, 36, 37, 52, 53, 4, 5, 20, 21, 36, 37, 52, 53,
    6, 7, 22, 23, 38, 39, 54, 55, 6, 7, 22, 23, 38, 39, 54, 55 },
  { 8, 9, 24, 25, 40, 41, 56, 57, 8, 9, 24, 25, 40, 41, 56, 57,
    10, 11, 26, 27, 42, 43, 58, 59, 10, 11, 26, 27, 42, 43, 58, 59 },
  { 12, 13, 28, 29, 44, 45, 60, 61, 12, 13, 28, 29, 44, 45, 60, 61,
    14, 15, 30, 31, 46, 47, 62, 63, 14, 15, 30, 31, 46, 47, 62, 63 }
};

/* The two tables into registers, once per call of the packers.  */
static inline void
p8_load_idx (__m512i *sidx, __m512i *bidx)
{
  for (int j = 0; j < 4; j++)
    {
      sidx[j] = _mm512_loadu_si512 (p8_scale_idx[j]);
      bidx[j] = _mm512_loadu_si512 (p8_bias_idx[j]);
    }
}

/* Super-block I of the NR plain rows at X (BX bytes apart) packed
   into O: each row's super-block decoded in registers (as the plain
   dots do), its values, scales and biases staged, then transposed for
   the 8 rows at once (SIDX and BIDX: p8_scale_idx and p8_bias_idx,
   loaded once by the caller).  */
static inline __attribute__ ((always_inline)) void
p8_pack_sb (enum ktype t, const char *x, size_t bx, int nr, int64_t i,
            const __m512i *sidx, const __m512i *bidx, unsigned char *o)
{
  const size_t bytes = block_bytes (t);
  _Alignas (64) uint8_t stage[P8][QK];
  _Alignas (64) int16_t sc[P8][GROUPS], bias[P8][GROUPS];
  float d[P8], dm[P8];

  for (int r = 0; r < P8; r++)
    {
      struct sbv v;
      if (r >= nr)
        {
          memset (stage[r], 0, QK);
          memset (sc[r], 0, sizeof sc[r]);
          memset (bias[r], 0, sizeof bias[r]);
          d[r] = dm[r] = 0;
          continue;
        }
      const char *blk = x + (size_t) r * bx + (size_t) i * bytes;
      /* Eight rows' streams: the prefetchers alone left the decoder
         waiting on memory most of the time.  Ahead in the row (long
         rows), and the same super-block of the next group's row (short
         rows, a model's 2048 elements: 2 KiB ahead is the next rows,
         already being read).  */
      qdot_prefetch (blk, bytes);
      for (size_t l = 0; l < bytes + 63; l += 64)
        _mm_prefetch (blk + P8 * bx + l, _MM_HINT_T1);
      decode_regs (t, blk, &v);
      UNROLL
      for (int q = 0; q < 4; q++)
        {
          __m512i w = v.w[q];
          if (t == KIQ4XS)
            w = _mm512_xor_si512 (_mm512_mask_sub_epi8
                                  (w, v.neg[q], _mm512_setzero_si512 (), w),
                                  _mm512_set1_epi8 ((char) 0x80));
          _mm512_store_si512 (stage[r] + 64 * q, w);
        }
      __m256i s16 = p8_scales16 (&v);
      _mm256_store_si256 ((__m256i *) sc[r], s16);
      _mm256_store_si256 ((__m256i *) bias[r],
                          t == KIQ4XS
                          ? _mm256_mullo_epi16 (s16, _mm256_set1_epi16 (-128))
                          : v.bias);
      d[r] = _mm_cvtss_f32 (v.dd);
      dm[r] = has_mins (t) ? _mm_cvtss_f32 (_mm_movehdup_ps (v.dd)) : 0;
    }
  p8_put_values ((const uint8_t (*)[QK]) stage, o);
  p8_put_words (&sc[0][0], sidx, 0xf0f0f0f0u, o + TSR_CPU_KP8_SC);
  p8_put_words (&bias[0][0], bidx, 0xff00ff00u, o + TSR_CPU_KP8_BIAS);
  memcpy (o + TSR_CPU_KP8_D, d, sizeof d);
  memcpy (o + TSR_CPU_KP8_DM, dm, sizeof dm);
}

/* Byte j of the 8 words of V (one a row) as quadword j: the 8 rows'
   bytes j.  */
static inline __m256i
p8_rows_bytes (__m256i v)
{
  const __m256i by_byte = _mm256_setr_epi8 (0, 4, 8, 12, 1, 5, 9, 13, 2, 6,
                                            10, 14, 3, 7, 11, 15, 0, 4, 8,
                                            12, 1, 5, 9, 13, 2, 6, 10, 14,
                                            3, 7, 11, 15);
  return _mm256_permutevar8x32_epi32 (_mm256_shuffle_epi8 (v, by_byte),
                                      _mm256_setr_epi32 (0, 4, 1, 5, 2, 6,
                                                         3, 7));
}

/* Super-block S of a repacked group of 8 rows (cpu-repack.c) packed
   into O as p8_pack_sb packs the plain rows.  A repacked vector of
   nibbles is two packed value vectors already (lane 2 r + h, byte b:
   elements 4 h + b and 8 + 4 h + b of a group of 32 of row r, which
   the packed vectors 4 j and 4 j + 1 hold at byte 8 r + 4 h + b), so
   the values take a mask and a shift, or-ed with their fifth bits
   (q5_K) or high bits (q6_K), or looked up (iq4_xs).  The group keeps
   the 8 rows' scales side by side too: q4_K's, q5_K's and q6_K's are
   decoded for the 8 rows at once and transposed in registers (per row
   through memory, the stores stalled the loads that followed them:
   81 against 20 ns a super-block of 8 rows of q4_K), iq4_xs's per row
   by its decoder's steps.  */
static inline __attribute__ ((always_inline)) void
p8_from_x8_sb (enum ktype t, const unsigned char *s, const __m512i *sidx,
               const __m512i *bidx, unsigned char *o)
{
  const __m512i m4 = _mm512_set1_epi8 (0x0f);
  const size_t bytes = P8 * block_bytes (t);

  /* The group streams from memory: the next super-block asked for now
     (the prefetchers alone left the conversion waiting: 4096 x 14336
     q4_K at n = 16, 605 against 746 GFLOP/s; further ahead gained
     nothing).  */
  for (size_t l = 0; l < bytes; l += 64)
    _mm_prefetch ((const char *) s + bytes + l, _MM_HINT_T0);
  /* iq4_xs: the table's values plus 128.  */
  const __m512i lut = _mm512_broadcast_i32x4
    (_mm_xor_si128 (_mm_loadu_si128 ((const __m128i *) tsr_cpu_iq4nl_values),
                    _mm_set1_epi8 ((char) 0x80)));

  UNROLL
  for (int j = 0; j < 8; j++)
    {
      size_t at = t == KQ4 ? TSR_CPU_X8_Q4K_VALUES (j)
                  : t == KQ5 ? TSR_CPU_X8_Q5K_VALUES (j)
                  : t == KQ6 ? TSR_CPU_X8_Q6K_VALUES (j)
                  : TSR_CPU_X8_XS_VALUES (j);
      __m512i v0 = _mm512_loadu_si512 (s + at);
      __m512i v1 = _mm512_loadu_si512 (s + at + 64);
      QDOT_IN_REG (v0);
      QDOT_IN_REG (v1);
      __m512i w[4] = { _mm512_and_si512 (v0, m4),
                       _mm512_and_si512 (_mm512_srli_epi16 (v0, 4), m4),
                       _mm512_and_si512 (v1, m4),
                       _mm512_and_si512 (_mm512_srli_epi16 (v1, 4), m4) };
      if (t == KQ5)
        {
          /* Bit v (even j) or 4 + v (odd j) of a byte to bit 4: the
             16-bit shifts move no other byte's bit there.  */
          __m512i h = _mm512_loadu_si512 (s + TSR_CPU_X8_Q5K_HIGH (j));
          QDOT_IN_REG (h);
          const __m512i m16 = _mm512_set1_epi8 (0x10);
          w[0] = _mm512_or_si512 (w[0], _mm512_and_si512
                                  (j % 2 ? h : _mm512_slli_epi16 (h, 4),
                                   m16));
          w[1] = _mm512_or_si512 (w[1], _mm512_and_si512
                                  (j % 2 ? _mm512_srli_epi16 (h, 1)
                                   : _mm512_slli_epi16 (h, 3), m16));
          w[2] = _mm512_or_si512 (w[2], _mm512_and_si512
                                  (j % 2 ? _mm512_srli_epi16 (h, 2)
                                   : _mm512_slli_epi16 (h, 2), m16));
          w[3] = _mm512_or_si512 (w[3], _mm512_and_si512
                                  (j % 2 ? _mm512_srli_epi16 (h, 3)
                                   : _mm512_slli_epi16 (h, 1), m16));
        }
      else if (t == KQ6)
        {
          /* Bits 2v, 2v + 1 of a byte to bits 4, 5.  */
          __m512i h = _mm512_loadu_si512 (s + at + 128);
          QDOT_IN_REG (h);
          const __m512i m48 = _mm512_set1_epi8 (0x30);
          w[0] = _mm512_or_si512 (w[0], _mm512_and_si512
                                  (_mm512_slli_epi16 (h, 4), m48));
          w[1] = _mm512_or_si512 (w[1], _mm512_and_si512
                                  (_mm512_slli_epi16 (h, 2), m48));
          w[2] = _mm512_or_si512 (w[2], _mm512_and_si512 (h, m48));
          w[3] = _mm512_or_si512 (w[3], _mm512_and_si512
                                  (_mm512_srli_epi16 (h, 2), m48));
        }
      UNROLL
      for (int v = 0; v < 4; v++)
        _mm512_storeu_si512 (o + TSR_CPU_KP8_W + 64 * (4 * j + v),
                             t == KIQ4XS ? _mm512_shuffle_epi8 (lut, w[v])
                                         : w[v]);
    }

  /* The 8 rows' f16 d are the group's first 16 bytes.  */
  _mm256_storeu_ps ((float *) (o + TSR_CPU_KP8_D),
                    _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) s)));
  if (t == KQ4 || t == KQ5)
    {
      /* The three words u0, u1, u2 of each row's packed scales and
         minimums (row r in word r of each vector), decoded for the 8
         rows at once as scales_k4_r does for one, then transposed:
         byte j of every row's word, for the groups of 32 j.  */
      const __m256i u0 = _mm256_loadu_si256 ((const __m256i *) (s + 32));
      const __m256i u1 = _mm256_loadu_si256 ((const __m256i *) (s + 64));
      const __m256i u2 = _mm256_loadu_si256 ((const __m256i *) (s + 96));
      const __m256i m63 = _mm256_set1_epi8 (63), m15 = _mm256_set1_epi8 (15);
      const __m256i m48 = _mm256_set1_epi8 (48);
      const __m256i part[4] = {
        _mm256_and_si256 (u0, m63),
        _mm256_or_si256 (_mm256_and_si256 (u2, m15),
                         _mm256_and_si256 (_mm256_srli_epi32 (u0, 2), m48)),
        _mm256_and_si256 (u1, m63),
        _mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi32 (u2, 4), m15),
                         _mm256_and_si256 (_mm256_srli_epi32 (u1, 2), m48))
      };
      UNROLL
      for (int h = 0; h < 2; h++)
        {
          /* Quadword j: scale (minimum) 4 h + j of rows 0..7.  */
          __m256i sc = p8_rows_bytes (part[h]), mn = p8_rows_bytes (part[2 + h]);
          /* Scales: each group of 32's 8 rows twice (its two groups of
             16).  */
          __m512i c = _mm512_cvtepu8_epi16 (sc);
          _mm512_storeu_si512 (o + TSR_CPU_KP8_SC + 128 * h,
                               _mm512_shuffle_i64x2 (c, c, 0x50));
          _mm512_storeu_si512 (o + TSR_CPU_KP8_SC + 128 * h + 64,
                               _mm512_shuffle_i64x2 (c, c, 0xfa));
          /* Biases: a pair of groups of 16 is one group of 32, its
             minimum in both words of a row's pair.  */
          UNROLL
          for (int q = 0; q < 2; q++)
            {
              __m512i b = _mm512_cvtepu8_epi32 (q ? _mm256_extracti128_si256
                                                      (mn, 1)
                                                  : _mm256_castsi256_si128
                                                      (mn));
              _mm512_storeu_si512 (o + TSR_CPU_KP8_BIAS + 128 * h + 64 * q,
                                   _mm512_or_si512 (b, _mm512_slli_epi32
                                                         (b, 16)));
            }
        }
      /* -dmin: the f16 sign flipped (exact), as dd_mins_r does.  */
      _mm256_storeu_ps ((float *) (o + TSR_CPU_KP8_DM), _mm256_cvtph_ps
                        (_mm_xor_si128 (_mm_loadu_si128 ((const __m128i *)
                                                         (s + 16)),
                                        _mm_set1_epi16 ((short) 0x8000))));
      return;
    }
  if (t == KQ6)
    {
      /* Vector q of scales: row r's word holds its scales 2 q, 2 q + 1,
         8 + 2 q, 9 + 2 q (int8).  */
      UNROLL
      for (int q = 0; q < 4; q++)
        {
          const __m256i v = _mm256_loadu_si256 ((const __m256i *)
                                                (s + 16 + 32 * q));
          /* Quadwords: scales 2 q, 2 q + 1, 8 + 2 q, 9 + 2 q of rows
             0..7.  */
          __m512i c = _mm512_cvtepi8_epi16 (p8_rows_bytes (v));
          _mm256_storeu_si256 ((__m256i *) (o + TSR_CPU_KP8_SC + 32 * q),
                               _mm512_castsi512_si256 (c));
          _mm256_storeu_si256 ((__m256i *) (o + TSR_CPU_KP8_SC + 128
                                            + 32 * q),
                               _mm512_extracti64x4_epi64 (c, 1));
          /* Biases -32 times the scales: row r's pairs of pair q and
             4 + q are its word's halves.  */
          __m512i b = _mm512_sub_epi16 (_mm512_setzero_si512 (),
                                        _mm512_slli_epi16
                                        (_mm512_cvtepi8_epi16 (v), 5));
          _mm256_storeu_si256 ((__m256i *) (o + TSR_CPU_KP8_BIAS + 32 * q),
                               _mm512_cvtepi64_epi32 (b));
          _mm256_storeu_si256 ((__m256i *) (o + TSR_CPU_KP8_BIAS + 128
                                            + 32 * q),
                               _mm512_cvtepi64_epi32
                               (_mm512_srli_epi64 (b, 32)));
        }
      _mm256_storeu_si256 ((__m256i *) (o + TSR_CPU_KP8_DM),
                           _mm256_setzero_si256 ());
      return;
    }

  /* iq4_xs: per row, as its plain decoder.  */
  _Alignas (64) int16_t sc[P8][GROUPS], bias[P8][GROUPS];
  const __m256i pair = _mm256_setr_epi16 (0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5,
                                          6, 6, 7, 7);
  for (int r = 0; r < P8; r++)
    {
      struct tsr_block_iq4_xs b;
      memcpy (&b.scales_h, s + 48 + 2 * r, 2);
      memcpy (b.scales_l, s + 16 + 4 * r, 4);
      __m256i s16 = _mm256_permutexvar_epi16 (pair, scales_iq4_xs_r (&b));
      _mm256_store_si256 ((__m256i *) sc[r], s16);
      _mm256_store_si256 ((__m256i *) bias[r],
                          _mm256_mullo_epi16 (s16, _mm256_set1_epi16 (-128)));
    }
  p8_put_words (&sc[0][0], sidx, 0xf0f0f0f0u, o + TSR_CPU_KP8_SC);
  p8_put_words (&bias[0][0], bidx, 0xff00ff00u, o + TSR_CPU_KP8_BIAS);
  _mm256_storeu_si256 ((__m256i *) (o + TSR_CPU_KP8_DM),
                       _mm256_setzero_si256 ());
}

/* Word w of a group's scale vector comes from word w / 4 (+ 8 (g % 4))
   of its quarter of the scales: lane 2 r + h gets row r's.  */
static const int16_t p8_scale_words[32] = {
  0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
  4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7
};

#if defined(__AVX512VNNI__)
/* Word w of the scale vector of packed sums (p8_group): row 2 l +
   m % 2 for lane 4 l + m.  */
static const int16_t p8_pack_rows[32] = {
  0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3,
  4, 4, 5, 5, 4, 4, 5, 5, 6, 6, 7, 7, 6, 6, 7, 7
};
#endif

/* Pairs of int16 activation sums read as one int32.  */
typedef int32_t p8_i32 __attribute__ ((may_alias, aligned (2)));

/* 8 activation bytes at A, broadcast.  */
static inline __m512i
p8_bcast (const int8_t *a)
{
  return _mm512_set1_epi64 (load_i64 (a));
}

/* The 16 rows' sums of two groups' sums S0 and S1 (rows 0..7 and
   8..15): packed sums (lanes 4 l + m, m = 0, 2: row 2 l; m = 1, 3: row
   2 l + 1) or pairs (lanes 2 r and 2 r + 1).  */
static inline __m512i
p8_rows16 (__m512i s0, __m512i s1, bool packed)
{
  if (packed)
    {
      const __m512i pick = _mm512_setr_epi32 (0, 1, 4, 5, 8, 9, 12, 13,
                                              16, 17, 20, 21, 24, 25, 28,
                                              29);
      return _mm512_permutex2var_epi32
        (_mm512_add_epi32 (s0, _mm512_bsrli_epi128 (s0, 8)), pick,
         _mm512_add_epi32 (s1, _mm512_bsrli_epi128 (s1, 8)));
    }
  const __m512i even = _mm512_setr_epi32 (0, 2, 4, 6, 8, 10, 12, 14,
                                          16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_epi32
    (_mm512_add_epi32 (s0, _mm512_srli_epi64 (s0, 32)), even,
     _mm512_add_epi32 (s1, _mm512_srli_epi64 (s1, 32)));
}

/* 8 floats at A and 8 at B.  */
static inline __m512
p8_join (const unsigned char *a, const unsigned char *b)
{
  return _mm512_insertf32x8 (_mm512_castps256_ps512
                             (_mm256_loadu_ps ((const float *) a)),
                             _mm256_loadu_ps ((const float *) b), 1);
}

/* The bias sums of super-block I of the 16 rows at O[0] and O[1] (8
   each) by NY columns: row r (lane r) of B16[c].  Pair of groups s of
   the 16 rows' biases: lane r (h 8 + r) of vector s, row r's of group
   h, by the pair of activation sums broadcast (dword s).  Types whose
   biases go by groups of 32 (q4_K, q5_K, iq4_xs: the two words of a
   lane are equal) take pairs of groups of 32 instead, a word from each
   of two vectors, by the pairs of sums of 32 (BS32, dword s: groups
   0 and 2, 4 and 6, 1 and 3, 5 and 7): 4 vpdpwssd a column instead of
   8.  */
static inline __attribute__ ((always_inline)) void
p8_bias16 (enum ktype t, const unsigned char *const *o, const int NY,
           const int16_t *const *bs, const int16_t *const *bs32, int64_t i,
           __m512i *b16)
{
  const bool by32 = t == KQ4 || t == KQ5 || t == KIQ4XS;
  const int np = by32 ? 4 : 8;
  __m512i bias[8], b32[4];

  UNROLL
  for (int s = 0; s < 8; s++)
    bias[s] = _mm512_inserti64x4
      (_mm512_castsi256_si512 (_mm256_loadu_si256
                               ((const __m256i *) (o[0] + TSR_CPU_KP8_BIAS
                                                   + 32 * s))),
       _mm256_loadu_si256 ((const __m256i *) (o[1] + TSR_CPU_KP8_BIAS
                                              + 32 * s)), 1);
  if (by32)
    {
      UNROLL
      for (int s = 0; s < 4; s++)
        b32[s] = _mm512_mask_blend_epi16 (0xaaaaaaaau, bias[pairs32[s][0]],
                                          bias[pairs32[s][1]]);
      UNROLL
      for (int s = 0; s < 4; s++)
        bias[s] = b32[s];
    }
  UNROLL
  for (int c = 0; c < NY; c++)
    {
      const p8_i32 *ys = by32 ? (const p8_i32 *) (bs32[c] + GROUPS / 2 * i)
                              : (const p8_i32 *) (bs[c] + GROUPS * i);
      __m512i bp[2] = { _mm512_setzero_si512 (), _mm512_setzero_si512 () };

      /* Two chains.  */
      UNROLL
      for (int s = 0; s < np; s++)
        {
#if defined(__AVX512VNNI__)
          bp[s % 2] = _mm512_dpwssd_epi32 (bp[s % 2], bias[s],
                                           _mm512_set1_epi32 (ys[s]));
#else
          bp[s % 2] = _mm512_add_epi32 (bp[s % 2], _mm512_madd_epi16
                                                   (bias[s],
                                                    _mm512_set1_epi32
                                                    (ys[s])));
#endif
        }
      b16[c] = _mm512_add_epi32 (bp[0], bp[1]);
    }
}

/* 16 rows, the packed groups at G and G + GS (the same for a group of
   8 alone: its results come twice), by NY columns into OUT[r NY_OUT +
   c] (R rows of them).  The integer sums in a register tile of 16 rows
   (two vectors) by NY columns, each activation broadcast serving both
   groups; then per super-block and column one vector of 16 rows for
   the bias sums (vpdpwssd of the 16 rows' pairs of biases by a pair of
   activation sums broadcast) and one for the f32 steps.  Measured on
   Zen 5 (kernel alone, 4096 elements): the 8-row tile with its bias
   and f32 steps per 8 rows ran q4_K at 45% of the 8-bit dot peak,
   q6_K at 33%; this one at 54% and 44%.  */
static inline __attribute__ ((always_inline)) void
p8_group (enum ktype t, int64_t k, const unsigned char *g, size_t gs,
          const int NY, const void *const *y, float *out, int ny_out,
          int R)
{
  const int64_t nb = k / QK;
  const int span = p8_span (t), step = span == 4 ? 2 : 1;
  const int nv = 2 * step;
  const __m512i words = _mm512_loadu_si512 (p8_scale_words);
#if defined(__AVX512VNNI__)
  /* q6_K's offset (32) folded into the integer sums: each lane's
     starts at minus the offset times the sum of the activations it
     meets (the activation row's offset sums, cpu-vec-k.h; computed
     here per super-block and column they cost 3-7%: 2048 x 4096 at 64
     columns 1,003 against 1,036-1,078 GFLOP/s, 4096 x 14336 at 512
     988-1,032 against 1,041-1,067), so the lanes hold sums of
     (stored - 32) y, no
     bias step follows, and sums of 8 products stay within int16 (32 x
     127 x 8: the activations are -127..127), two vectors a sum as
     q5_K's.  A fifth fewer multiplier operations, 13-16% faster at
     512 columns (Zen 5).  q3_K's offset (4) folded so measured the
     same or 3% slower: its sums were 8 products already.  */
  const int off = t == KQ6 ? 32 : 0;
  /* Groups of 16 a unit of packed sums, vectors a half unit: q2_K,
     q3_K, q5_K, q6_K (folded) 2, q4_K 4; iq4_xs scales its sums in
     int32.  */
  const int U = off ? 2 : span;
  const bool packs = t != KIQ4XS;
  const __m512i prows = _mm512_loadu_si512 (p8_pack_rows);
  const int32_t *offs[TSR_CPU_QDOT_MAX_COLS];
  UNROLL
  for (int c = 0; c < NY; c++)
    offs[c] = off ? tsr_cpu_kact_offsets6 (y[c], k) : NULL;
#else
  const int off = 0;
  const bool packs = false;
#endif
  const int8_t *q[TSR_CPU_QDOT_MAX_COLS];
  const int16_t *bs[TSR_CPU_QDOT_MAX_COLS], *bs32[TSR_CPU_QDOT_MAX_COLS];
  const float *dy[TSR_CPU_QDOT_MAX_COLS];
  __m256 acc8[TSR_CPU_QDOT_MAX_COLS];  /* unused: 16 rows a vector */
  __m512 acc[TSR_CPU_QDOT_MAX_COLS];

  qdot_kcolumns (k, NY, y, q, bs, dy, acc8);
  UNROLL
  for (int c = 0; c < NY; c++)
    bs32[c] = tsr_cpu_kact_sums32 (y[c], k);
  UNROLL
  for (int c = 0; c < NY; c++)
    acc[c] = _mm512_setzero_ps ();
  /* The bias sums of super-block i + 1 come between the integer sums
     of i and its f32 steps, which wait for the last of those.  */
  __m512i b16[TSR_CPU_QDOT_MAX_COLS];
  if (!off)
    {
      const unsigned char *o0[2] = { g, g + gs };
      p8_bias16 (t, o0, NY, bs, bs32, 0, b16);
    }
  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o[2] = {
        g + (size_t) i * TSR_CPU_KP8_BYTES,
        g + gs + (size_t) i * TSR_CPU_KP8_BYTES
      };
      __m512i isum[2][TSR_CPU_QDOT_MAX_COLS];

      UNROLL
      for (int h = 0; h < 2; h++)
        UNROLL
        for (int c = 0; c < NY; c++)
          isum[h][c] = _mm512_setzero_si512 ();
#if defined(__AVX512VNNI__)
      if (packs)
        /* Units of U groups of 16 (2 U vectors), two sums of U
           vectors each (the first half, groups gi.., and the second,
           gb..), each lane within int16 (p8_span), packed into words
           (vpackssdw: no saturation) and scaled by one vpdpwssd: lane
           4 l + m of a 128-bit lane l holds row 2 l + m % 2 of the
           first half (m < 2) or the second.  5 multiplier operations for 4 vpdpbusd
           instead of 6 (q2_K, q3_K, q5_K, q6_K with its offset
           folded), 9 for 8 instead of 10 (q4_K).  */
        for (int gi = 0; gi < GROUPS; gi += U)
          {
            const int gb = gi + U / 2;
            const __m512i idx = _mm512_add_epi16
              (prows, _mm512_mask_blend_epi16
                        (0xf0f0f0f0u,
                         _mm512_set1_epi16 ((short) (8 * (gi % 4))),
                         _mm512_set1_epi16 ((short) (8 * (gb % 4)))));
            __m512i w[2][8], scv[2];

            UNROLL
            for (int h = 0; h < 2; h++)
              {
                scv[h] = _mm512_permutexvar_epi16
                  (idx, _mm512_loadu_si512 (o[h] + TSR_CPU_KP8_SC
                                            + 64 * (gi / 4)));
                UNROLL
                for (int v = 0; v < 2 * U; v++)
                  w[h][v] = _mm512_loadu_si512 (o[h] + TSR_CPU_KP8_W
                                                + 128 * gi + 64 * v);
              }
            UNROLL
            for (int c = 0; c < NY; c++)
              {
                const int8_t *a = q[c] + QK * i + 16 * gi;
                __m512i bv[8];

                UNROLL
                for (int v = 0; v < 2 * U; v++)
                  bv[v] = p8_bcast (a + 8 * v);
                __m512i z0 = _mm512_setzero_si512 ();
                __m512i z1 = _mm512_setzero_si512 ();
                if (off)
                  {
                    /* Groups gi and gb = gi + 1 (U = 2): their pairs
                       of offset sums lie side by side.  */
                    qdot_offsets6_512 (offs[c] + 2 * GROUPS * i + 2 * gi,
                                       &z0, &z1);
                  }
                UNROLL
                for (int h = 0; h < 2; h++)
                  {
                    __m512i s0 = z0;
                    __m512i s1 = z1;
                    UNROLL
                    for (int v = 0; v < U; v++)
                      {
                        s0 = _mm512_dpbusd_epi32 (s0, w[h][v], bv[v]);
                        s1 = _mm512_dpbusd_epi32 (s1, w[h][U + v],
                                                  bv[U + v]);
                      }
                    isum[h][c] = _mm512_dpwssd_epi32
                      (isum[h][c], _mm512_packs_epi32 (s0, s1), scv[h]);
                  }
              }
          }
      else
#endif
      for (int gi = 0; gi < GROUPS; gi += step)
        {
          const __m512i idx = _mm512_add_epi16
            (words, _mm512_set1_epi16 ((short) (8 * (gi % 4))));
          __m512i w[2][4], scv[2];

          UNROLL
          for (int h = 0; h < 2; h++)
            {
              const __m512i quarter = _mm512_loadu_si512
                (o[h] + TSR_CPU_KP8_SC + 64 * (gi / 4));
              const unsigned char *wv = o[h] + TSR_CPU_KP8_W + 128 * gi;
#if defined(__AVX512VNNI__)
              /* iq4_xs: sign-extended (vpmulld).  */
              scv[h] = _mm512_srai_epi32 (_mm512_slli_epi32
                                          (_mm512_permutexvar_epi16
                                           (idx, quarter), 16), 16);
#else
              scv[h] = _mm512_permutexvar_epi16 (idx, quarter);
#endif
              UNROLL
              for (int v = 0; v < nv; v++)
                w[h][v] = _mm512_loadu_si512 (wv + 64 * v);
            }
          UNROLL
          for (int c = 0; c < NY; c++)
            {
              const int8_t *a = q[c] + QK * i + 16 * gi;
              __m512i b[4];

              UNROLL
              for (int v = 0; v < nv; v++)
                b[v] = p8_bcast (a + 8 * v);
              UNROLL
              for (int h = 0; h < 2; h++)
                {
#if defined(__AVX512VNNI__)
                  __m512i s = _mm512_setzero_si512 ();
                  UNROLL
                  for (int v = 0; v < nv; v++)
                    s = _mm512_dpbusd_epi32 (s, w[h][v], b[v]);
                  isum[h][c] = _mm512_add_epi32
                    (isum[h][c], _mm512_mullo_epi32 (s, scv[h]));
#else
                  UNROLL
                  for (int v = 0; v < nv; v++)
                    isum[h][c] = _mm512_add_epi32
                      (isum[h][c], _mm512_madd_epi16 (_mm512_maddubs_epi16
                                                      (w[h][v], b[v]),
                                                      scv[h]));
#endif
                }
            }
        }

      const __m512 dv = p8_join (o[0] + TSR_CPU_KP8_D, o[1] + TSR_CPU_KP8_D);
      const __m512 dmv = has_mins (t)
                         ? p8_join (o[0] + TSR_CPU_KP8_DM,
                                    o[1] + TSR_CPU_KP8_DM)
                         : _mm512_setzero_ps ();
      __m512i i16[TSR_CPU_QDOT_MAX_COLS], bnext[TSR_CPU_QDOT_MAX_COLS];

      UNROLL
      for (int c = 0; c < NY; c++)
        {
          i16[c] = p8_rows16 (isum[0][c], isum[1][c], packs);
          if (!has_mins (t) && !off)
            i16[c] = _mm512_add_epi32 (i16[c], b16[c]);
        }
      if (i + 1 < nb && !off)
        {
          const unsigned char *on[2] = { o[0] + TSR_CPU_KP8_BYTES,
                                         o[1] + TSR_CPU_KP8_BYTES };
          p8_bias16 (t, on, NY, bs, bs32, i + 1, bnext);
        }
      UNROLL
      for (int c = 0; c < NY; c++)
        {
          const __m512 dyc = _mm512_set1_ps (dy[c][i]);
          acc[c] = _mm512_fmadd_ps (_mm512_cvtepi32_ps (i16[c]),
                                    _mm512_mul_ps (dv, dyc), acc[c]);
          if (has_mins (t))
            acc[c] = _mm512_fmadd_ps (_mm512_cvtepi32_ps (b16[c]),
                                      _mm512_mul_ps (dmv, dyc), acc[c]);
          if (i + 1 < nb && !off)
            b16[c] = bnext[c];
        }
    }
  UNROLL
  for (int c = 0; c < NY; c++)
    {
      float l[2 * P8];
      _mm512_storeu_ps (l, acc[c]);
      for (int r = 0; r < R; r++)
        out[r * ny_out + c] = l[r];
    }
}
#elif defined(KQ_REGS)
/* AVX2 (v3, v3-vnni): the tile packed from the register decoders'
   super-blocks (decode_wide) a quadword of values at a time, then each
   half of a group (4 rows, 32 bytes of each 64-byte vector) over up to
   4 columns at a time: 16 vector registers hold no more.  */
static inline __attribute__ ((always_inline)) void
p8_pack_v3 (enum ktype t, int64_t k, const char *x, size_t bx, int nr,
            unsigned char *dst)
{
  const size_t bytes = block_bytes (t);
  const uint64_t flip = t == KIQ4XS ? 0x8080808080808080ull : 0;

  memset (dst, 0, (size_t) (k / QK) * TSR_CPU_KP8_BYTES);
  for (int64_t i = 0; i < k / QK; i++)
    {
      unsigned char *o = dst + (size_t) i * TSR_CPU_KP8_BYTES;
      for (int r = 0; r < nr; r++)
        {
          const char *blk = x + (size_t) r * bx + (size_t) i * bytes;
          struct sb sbk;
          float dm;
          qdot_prefetch (blk, bytes);
          decode_wide (t, blk, &sbk);
          for (int v = 0; v < QK / 8; v++)
            {
              uint64_t q;
              memcpy (&q, sbk.w + 8 * v, 8);
              q ^= flip;
              memcpy (o + TSR_CPU_KP8_W + 64 * v + 8 * r, &q, 8);
            }
          for (int g = 0; g < GROUPS; g++)
            {
              int16_t bias = t == KIQ4XS ? (int16_t) (-128 * sbk.sc[g])
                                         : sbk.bias[g];
              memcpy (o + p8_scale_at (r, g), &sbk.sc[g], 2);
              memcpy (o + p8_bias_at (r, g), &bias, 2);
            }
          /* decode_wide gives dmin with its sign (d - dmin min).  */
          dm = has_mins (t) ? -sbk.dmin : 0;
          memcpy (o + TSR_CPU_KP8_D + 4 * r, &sbk.d, 4);
          memcpy (o + TSR_CPU_KP8_DM + 4 * r, &dm, 4);
        }
    }
}

/* Rows 4 H .. 4 H + 3 of the packed group G by NC (1..4) columns.  */
static inline __attribute__ ((always_inline)) void
p8_half_v3 (enum ktype t, int64_t k, const unsigned char *g, int h,
            const int NC, const void *const *y, float *out, int ny_out)
{
  const int64_t nb = k / QK;
  const int span = p8_span (t), step = span == 4 ? 2 : 1;
  const __m256i pairs = _mm256_setr_epi32 (0, 0, 0, 0, 1, 1, 1, 1);
  __m128 acc[4];

  UNROLL
  for (int c = 0; c < NC; c++)
    acc[c] = _mm_setzero_ps ();
  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o = g + (size_t) i * TSR_CPU_KP8_BYTES;
      __m256i isum[4];

      UNROLL
      for (int c = 0; c < NC; c++)
        isum[c] = _mm256_setzero_si256 ();
      for (int gi = 0; gi < GROUPS; gi += step)
        {
          /* The 4 rows' scales of group GI, each twice (lanes 2r + h),
             zero-extended (the vpdpwssd form), sign-extended (vpmulld),
             or in both halves (pmaddwd of pair sums).  */
          const __m128i s4 = _mm_loadl_epi64 ((const __m128i *)
                                              (o + TSR_CPU_KP8_SC + 16 * gi
                                               + 8 * h));
          const __m128i s8 = _mm_unpacklo_epi16 (s4, s4);
          __m256i scv;
          __m256i w[4];
#if defined(__AVXVNNI__)
          scv = t == KIQ4XS ? _mm256_cvtepi16_epi32 (s8)
                            : _mm256_cvtepu16_epi32 (s8);
#else
          scv = _mm256_cvtepu16_epi32 (s8);
          scv = _mm256_or_si256 (scv, _mm256_slli_epi32 (scv, 16));
#endif
          UNROLL
          for (int v = 0; v < 2 * step; v++)
            w[v] = _mm256_loadu_si256 ((const __m256i *)
                                       (o + TSR_CPU_KP8_W
                                        + 64 * (2 * gi + v) + 32 * h));
          UNROLL
          for (int c = 0; c < NC; c++)
            {
              const int8_t *a = (const int8_t *) y[c] + QK * i + 16 * gi;
#if defined(__AVXVNNI__)
              __m256i sg = _mm256_setzero_si256 ();
              if (span == 1)
                UNROLL
                for (int v = 0; v < 2; v++)
                  isum[c] = _mm256_dpwssd_avx_epi32
                    (isum[c], _mm256_dpbusd_avx_epi32
                                (_mm256_setzero_si256 (), w[v],
                                 _mm256_set1_epi64x (load_i64 (a + 8 * v))),
                     scv);
              else
                {
                  UNROLL
                  for (int v = 0; v < 2 * step; v++)
                    sg = _mm256_dpbusd_avx_epi32
                      (sg, w[v], _mm256_set1_epi64x (load_i64 (a + 8 * v)));
                  isum[c] = t == KIQ4XS
                            ? _mm256_add_epi32 (isum[c],
                                                _mm256_mullo_epi32 (sg, scv))
                            : _mm256_dpwssd_avx_epi32 (isum[c], sg, scv);
                }
#else
              UNROLL
              for (int v = 0; v < 2 * step; v++)
                isum[c] = _mm256_add_epi32
                  (isum[c], _mm256_madd_epi16
                              (_mm256_maddubs_epi16
                               (w[v], _mm256_set1_epi64x (load_i64 (a + 8 * v))),
                               scv));
#endif
            }
        }

      const __m128 dv = _mm_loadu_ps ((const float *)
                                      (o + TSR_CPU_KP8_D + 16 * h));
      const __m128 dmv = _mm_loadu_ps ((const float *)
                                       (o + TSR_CPU_KP8_DM + 16 * h));
      UNROLL
      for (int c = 0; c < NC; c++)
        {
          const __m256i ys = _mm256_loadu_si256
            ((const __m256i *) (tsr_cpu_kact_sums (y[c], k) + GROUPS * i));
          const __m128 dyc = _mm_set1_ps (tsr_cpu_kact_scales (y[c], k)[i]);
          __m256i b = _mm256_setzero_si256 ();

          /* Pairs of groups s and s + 1 of the 4 rows: lane r + 4 j of
             pair s + j.  */
          UNROLL
          for (int s2 = 0; s2 < 8; s2 += 2)
            {
              __m256i av = _mm256_permutevar8x32_epi32
                (ys, _mm256_add_epi32 (pairs, _mm256_set1_epi32 (s2)));
              __m256i bv = _mm256_loadu2_m128i
                ((const __m128i *) (o + TSR_CPU_KP8_BIAS + 32 * (s2 + 1)
                                    + 16 * h),
                 (const __m128i *) (o + TSR_CPU_KP8_BIAS + 32 * s2
                                    + 16 * h));
#if defined(__AVXVNNI__)
              b = _mm256_dpwssd_avx_epi32 (b, bv, av);
#else
              b = _mm256_add_epi32 (b, _mm256_madd_epi16 (bv, av));
#endif
            }
          __m128i b4 = _mm_add_epi32 (_mm256_castsi256_si128 (b),
                                      _mm256_extracti128_si256 (b, 1));
          /* Row r: lanes 2r and 2r + 1 (pairs of each 128-bit half).  */
          __m128i i4 = _mm256_castsi256_si128
            (_mm256_permute4x64_epi64 (_mm256_hadd_epi32 (isum[c], isum[c]),
                                       _MM_SHUFFLE (3, 1, 2, 0)));
          if (!has_mins (t))
            i4 = _mm_add_epi32 (i4, b4);
          acc[c] = _mm_fmadd_ps (_mm_cvtepi32_ps (i4), _mm_mul_ps (dv, dyc),
                                 acc[c]);
          if (has_mins (t))
            acc[c] = _mm_fmadd_ps (_mm_cvtepi32_ps (b4),
                                   _mm_mul_ps (dmv, dyc), acc[c]);
        }
    }
  UNROLL
  for (int c = 0; c < NC; c++)
    {
      float l[4];
      _mm_storeu_ps (l, acc[c]);
      for (int r = 0; r < 4; r++)
        out[(4 * h + r) * ny_out + c] = l[r];
    }
}

static inline __attribute__ ((always_inline)) void
p8_group_v3 (enum ktype t, int64_t k, const unsigned char *g, int ny,
             const void *const *y, float *out, int ny_out)
{
  for (int h = 0; h < 2; h++)
    for (int c0 = 0; c0 < ny; c0 += 4)
      switch (ny - c0 < 4 ? ny - c0 : 4)
        {
        case 1: p8_half_v3 (t, k, g, h, 1, y + c0, out + c0, ny_out); break;
        case 2: p8_half_v3 (t, k, g, h, 2, y + c0, out + c0, ny_out); break;
        case 3: p8_half_v3 (t, k, g, h, 3, y + c0, out + c0, ny_out); break;
        default: p8_half_v3 (t, k, g, h, 4, y + c0, out + c0, ny_out); break;
        }
}

#define p8_group p8_group_v3
#else
#define p8_group p8_group_ref
#endif

#if defined(__AVX512BW__)
/* The packed 8-row groups of NR rows (a multiple of 8) at X, BX bytes
   a packed row, by NY <= 8 columns: two groups at a time (a last one
   alone twice).  */
static inline __attribute__ ((always_inline)) void
p8_rows (enum ktype t, int64_t k, const void *x, size_t bx, int nr, int ny,
         const void *const *y, float *out)
{
  for (int r0 = 0; r0 < nr; r0 += 2 * P8)
    {
      const unsigned char *g = (const unsigned char *) x + (size_t) r0 * bx;
      const int R = nr - r0 < 2 * P8 ? P8 : 2 * P8;
      const size_t gs = R == P8 ? 0 : P8 * bx;
      float *o = out + r0 * ny;
      switch (ny)
        {
        case 1: p8_group (t, k, g, gs, 1, y, o, ny, R); break;
        case 2: p8_group (t, k, g, gs, 2, y, o, ny, R); break;
        case 3: p8_group (t, k, g, gs, 3, y, o, ny, R); break;
        case 4: p8_group (t, k, g, gs, 4, y, o, ny, R); break;
        case 5: p8_group (t, k, g, gs, 5, y, o, ny, R); break;
        case 6: p8_group (t, k, g, gs, 6, y, o, ny, R); break;
        case 7: p8_group (t, k, g, gs, 7, y, o, ny, R); break;
        default: p8_group (t, k, g, gs, 8, y, o, ny, R); break;
        }
    }
}
#else
/* The packed 8-row groups of NR rows (a multiple of 8) at X, BX bytes
   a packed row.  */
static inline __attribute__ ((always_inline)) void
p8_rows (enum ktype t, int64_t k, const void *x, size_t bx, int nr, int ny,
         const void *const *y, float *out)
{
  for (int r0 = 0; r0 < nr; r0 += P8)
    {
      const unsigned char *g = (const unsigned char *) x + (size_t) r0 * bx;
      float *o = out + r0 * ny;
      switch (ny)
        {
        case 1: p8_group (t, k, g, 1, y, o, ny); break;
        case 2: p8_group (t, k, g, 2, y, o, ny); break;
        case 3: p8_group (t, k, g, 3, y, o, ny); break;
        case 4: p8_group (t, k, g, 4, y, o, ny); break;
        case 5: p8_group (t, k, g, 5, y, o, ny); break;
        case 6: p8_group (t, k, g, 6, y, o, ny); break;
        case 7: p8_group (t, k, g, 7, y, o, ny); break;
        default: p8_group (t, k, g, 8, y, o, ny); break;
        }
    }
}
#endif

void
TSR_CPU_LEVEL_FN (kp8_pack) (tsr_type type, int64_t k, const void *x,
                             size_t bx, int nr, void *dst)
{
#if defined(__AVX512BW__)
  /* One copy per type: the decoder's constants stay in registers.  */
#define P8_PACK(t)                                                      \
  for (int64_t i = 0; i < k / QK; i++)                                  \
    p8_pack_sb (t, x, bx, nr, i, sidx, bidx, (unsigned char *) dst      \
                                             + (size_t) i               \
                                               * TSR_CPU_KP8_BYTES)
  __m512i sidx[4], bidx[4];

  p8_load_idx (sidx, bidx);
  switch (ktype_of (type))
    {
    case KQ2: P8_PACK (KQ2); break;
    case KQ3: P8_PACK (KQ3); break;
    case KQ4: P8_PACK (KQ4); break;
    case KQ5: P8_PACK (KQ5); break;
    case KQ6: P8_PACK (KQ6); break;
    default: P8_PACK (KIQ4XS); break;
    }
#undef P8_PACK
#elif defined(KQ_REGS)
  switch (ktype_of (type))
    {
    case KQ2: p8_pack_v3 (KQ2, k, x, bx, nr, dst); break;
    case KQ3: p8_pack_v3 (KQ3, k, x, bx, nr, dst); break;
    case KQ4: p8_pack_v3 (KQ4, k, x, bx, nr, dst); break;
    case KQ5: p8_pack_v3 (KQ5, k, x, bx, nr, dst); break;
    case KQ6: p8_pack_v3 (KQ6, k, x, bx, nr, dst); break;
    default: p8_pack_v3 (KIQ4XS, k, x, bx, nr, dst); break;
    }
#else
  p8_pack_ref (ktype_of (type), k, x, bx, nr, dst);
#endif
}

void
TSR_CPU_LEVEL_FN (kp8_from_x8) (tsr_type type, int64_t k, const void *x,
                                void *dst)
{
  const size_t group = P8 * block_bytes (ktype_of (type));
#if defined(__AVX512BW__)
#define P8_FROM(t)                                                      \
  for (int64_t i = 0; i < k / QK; i++)                                  \
    p8_from_x8_sb (t, (const unsigned char *) x + (size_t) i * group,   \
                   sidx, bidx, (unsigned char *) dst                    \
                               + (size_t) i * TSR_CPU_KP8_BYTES)
  __m512i sidx[4], bidx[4];

  p8_load_idx (sidx, bidx);
  switch (ktype_of (type))
    {
    case KQ4: P8_FROM (KQ4); break;
    case KQ5: P8_FROM (KQ5); break;
    case KQ6: P8_FROM (KQ6); break;
    default: P8_FROM (KIQ4XS); break;
    }
#undef P8_FROM
#else
  /* (Only levels with AVX-512BW repack these types: this is the
     reference the tests hold the vector code to.)  */
  memset (dst, 0, (size_t) (k / QK) * TSR_CPU_KP8_BYTES);
  for (int64_t i = 0; i < k / QK; i++)
    p8_from_x8_ref (ktype_of (type),
                    (const unsigned char *) x + (size_t) i * group,
                    (unsigned char *) dst + (size_t) i * TSR_CPU_KP8_BYTES);
#endif
}

#define P8_FN(name, t)                                                  \
  void                                                                  \
  TSR_CPU_LEVEL_FN (vec_dot_##name##p8_q8_K) (int64_t k, const void *x, \
                                              size_t bx, int nr, int ny, \
                                              const void *const *y,     \
                                              float *out)               \
  {                                                                     \
    p8_rows (t, k, x, bx, nr, ny, y, out);                              \
  }

P8_FN (q2_K, KQ2)
P8_FN (q3_K, KQ3)
P8_FN (q4_K, KQ4)
P8_FN (q5_K, KQ5)
P8_FN (q6_K, KQ6)
P8_FN (iq4_xs, KIQ4XS)

/* The packed tiles on AMX (v4-amx; the layout in cpu-vec-k.h).  */
#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512BW__)
#define KT_AMX 1
#include "cpu-amx.h"
#else
#define KT_AMX 0
#endif
#define KT_W 4096               /* where the scales start */
#define KT_CORR (KT_W + 512)    /* q4_K: the offset's pairs of scales */

/* Elements a group of the AMX layout: the types whose scales go by 32
   take groups of 32, the others of 16.  */
static inline int
kt_group (enum ktype t)
{
  return t == KQ4 || t == KQ5 || t == KIQ4XS ? 32 : 16;
}

/* What the layout subtracts from a packed value: the offsets, iq4_xs's
   128 (its packed values are the table's plus 128), and 8 from q4_K's
   (so that a group's sums stay within int16; kt_corr).  */
static inline int
kt_offset (enum ktype t)
{
  return t == KIQ4XS ? 128 : t == KQ4 ? 8 : offset_of (t);
}

/* The types whose group sums stay within int16 (|sum| <= 16 x 3 x 127
   for q2_K, 16 x 4 x 127 for q3_K, 32 x 8 x 127 = 32,512 for q4_K less
   8): their scales are stored as the pair of words (scale, 0), which
   one vpdpwssd multiplies with an int32 sum's low word (the high word,
   its sign, meets the 0).  The others' scales are int32, multiplied by
   vpmulld.  */
static inline bool
kt_words (enum ktype t)
{
  return t == KQ2 || t == KQ3 || t == KQ4;
}

/* q4_K's 8 subtracted comes back as the sum over its groups of 32 of 8
   times the scale times the activations' sum: pairs of them, as
   p8_bias16 pairs the minimums (PAIRS32).  */

/* Row N's scale of group G in the layout at D.  */
static inline int32_t
kt_scale_at (enum ktype t, const unsigned char *d, int g, int n)
{
  int32_t s;
  int16_t w;

  if (!kt_words (t))
    {
      memcpy (&s, d + KT_W + 64 * g + 4 * n, 4);
      return s;
    }
  memcpy (&w, d + KT_W + 64 * g + 4 * n, 2);
  return w;
}

#if !KT_AMX
/* The reference conversion, value by value.  */
static void
kt_from_kp8_ref (enum ktype t, int64_t k, const unsigned char *g0,
                 const unsigned char *g1, unsigned char *dst)
{
  const int G = kt_group (t), off = kt_offset (t);

  for (int64_t i = 0; i < k / QK; i++)
    {
      const unsigned char *o[2] = { g0 + (size_t) i * TSR_CPU_KP8_BYTES,
                                    g1 + (size_t) i * TSR_CPU_KP8_BYTES };
      unsigned char *d = dst + (size_t) i * TSR_CPU_KT_BYTES;
      for (int n = 0; n < TSR_CPU_KT_ROWS; n++)
        {
          int16_t sc[GROUPS];
          for (int g = 0; g < GROUPS; g++)
            memcpy (&sc[g], o[n / P8] + p8_scale_at (n % P8, g), 2);
          for (int e = 0; e < QK; e++)
            d[64 * (e / 4) + 4 * n + e % 4]
              = (unsigned char) (o[n / P8][p8_value_at (n % P8, e)] - off);
          for (int g = 0; g < QK / G; g++)
            {
              int16_t w[2] = { sc[g * G / 16], 0 };
              int32_t v = sc[g * G / 16];
              if (kt_words (t))
                memcpy (d + KT_W + 64 * g + 4 * n, w, 4);
              else
                memcpy (d + KT_W + 64 * g + 4 * n, &v, 4);
            }
          if (t == KQ4)
            for (int p = 0; p < 4; p++)
              {
                int16_t w[2] = { (int16_t) (8 * sc[2 * pairs32[p][0]]),
                                 (int16_t) (8 * sc[2 * pairs32[p][1]]) };
                memcpy (d + KT_CORR + 64 * p + 4 * n, w, 4);
              }
        }
    }
}

/* The reference kernel: the layout's values and scales, the packed
   groups' biases and factors, in the f32 steps of the packed tiles'
   kernels.  */
static void
kt_dot_ref (enum ktype t, int64_t k, const unsigned char *g0,
            const unsigned char *g1, const unsigned char *kt, int ny,
            const char *y, size_t ys, float *out)
{
  const int G = kt_group (t);

  for (int c = 0; c < ny; c++)
    {
      const void *yc = y + (size_t) c * ys;
      const int8_t *a = yc;
      const int16_t *bs = tsr_cpu_kact_sums (yc, k);
      const int16_t *bs32 = tsr_cpu_kact_sums32 (yc, k);
      const float *dy = tsr_cpu_kact_scales (yc, k);
      for (int n = 0; n < TSR_CPU_KT_ROWS; n++)
        {
          float acc = 0;
          for (int64_t i = 0; i < k / QK; i++)
            {
              const unsigned char *o = (n < P8 ? g0 : g1)
                                       + (size_t) i * TSR_CPU_KP8_BYTES;
              const unsigned char *d = kt + (size_t) i * TSR_CPU_KT_BYTES;
              int32_t isum = 0, bsum = 0;
              float dw, dm;
              for (int g = 0; g < QK / G; g++)
                {
                  int32_t s = 0;
                  for (int e = G * g; e < G * g + G; e++)
                    s += (int8_t) d[64 * (e / 4) + 4 * n + e % 4]
                         * a[QK * i + e];
                  isum += kt_scale_at (t, d, g, n) * s;
                }
              if (t == KQ4)
                for (int p = 0; p < 4; p++)
                  for (int h = 0; h < 2; h++)
                    {
                      int16_t w;
                      memcpy (&w, d + KT_CORR + 64 * p + 4 * n + 2 * h, 2);
                      isum += w * bs32[GROUPS / 2 * i + 2 * p + h];
                    }
              if (has_mins (t))
                for (int g = 0; g < GROUPS; g++)
                  {
                    int16_t bias;
                    memcpy (&bias, o + p8_bias_at (n % P8, g), 2);
                    bsum += bias * bs[GROUPS * i + g];
                  }
              memcpy (&dw, o + TSR_CPU_KP8_D + 4 * (n % P8), 4);
              memcpy (&dm, o + TSR_CPU_KP8_DM + 4 * (n % P8), 4);
              acc = p8_step (acc, isum, dw * dy[i]);
              if (has_mins (t))
                acc = p8_step (acc, bsum, dm * dy[i]);
            }
          out[TSR_CPU_KT_ROWS * c + n] = acc;
        }
    }
}
#endif /* !KT_AMX */

#if KT_AMX
/* Super-block I of the two packed groups O[0], O[1] into the layout at
   D: per vector of 8 elements of the 8 rows, two tile rows of the 16
   (the 4-byte halves of each row's 8), then the scales.  */
static inline __attribute__ ((always_inline)) void
kt_from_kp8_sb (enum ktype t, const unsigned char *const *o,
                unsigned char *d)
{
  const int G = kt_group (t);
  const __m512i even = _mm512_setr_epi32 (0, 2, 4, 6, 8, 10, 12, 14,
                                          16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32 (even, _mm512_set1_epi32 (1));
  const __m512i off = _mm512_set1_epi8 ((char) kt_offset (t));

  UNROLL
  for (int v = 0; v < QK / 8; v++)
    {
      const __m512i a = _mm512_loadu_si512 (o[0] + TSR_CPU_KP8_W + 64 * v);
      const __m512i b = _mm512_loadu_si512 (o[1] + TSR_CPU_KP8_W + 64 * v);
      _mm512_storeu_si512 (d + 128 * v, _mm512_sub_epi8
                                          (_mm512_permutex2var_epi32
                                             (a, even, b), off));
      _mm512_storeu_si512 (d + 128 * v + 64, _mm512_sub_epi8
                                               (_mm512_permutex2var_epi32
                                                  (a, odd, b), off));
    }
  __m256i sc[8];
  UNROLL
  for (int g = 0; g < QK / G; g++)
    {
      /* The 8 rows' int16 scales of group of 16 g G / 16 lie side by
         side.  */
      const int at = (int) p8_scale_at (0, g * G / 16);
      const __m256i s = _mm256_inserti128_si256
        (_mm256_castsi128_si256 (_mm_loadu_si128 ((const __m128i *)
                                                  (o[0] + at))),
         _mm_loadu_si128 ((const __m128i *) (o[1] + at)), 1);
      _mm512_storeu_si512 (d + KT_W + 64 * g,
                           kt_words (t) ? _mm512_cvtepu16_epi32 (s)
                                        : _mm512_cvtepi16_epi32 (s));
      if (g < 8)
        sc[g] = s;
    }
  if (t == KQ4)
    UNROLL
    for (int p = 0; p < 4; p++)
      _mm512_storeu_si512
        (d + KT_CORR + 64 * p,
         _mm512_or_si512 (_mm512_cvtepu16_epi32
                            (_mm256_slli_epi16 (sc[pairs32[p][0]], 3)),
                          _mm512_slli_epi32 (_mm512_cvtepu16_epi32
                                               (_mm256_slli_epi16
                                                  (sc[pairs32[p][1]], 3)),
                                             16)));
}

/* The tile configuration for groups of G bytes
   (tsr_cpu_amx_config_16x16).  */
static inline void
kt_configure (int G)
{
  struct tsr_cpu_amx_config c;

  tsr_cpu_amx_config_16x16 (&c, G);
  _tile_loadconfig (&c);
}

/* Group GG of the activation rows at A (stride ST) by the 16 rows' at
   W in tiles TC, TA, TB: the product, stored to SUMS[TC].  */
#define KT_TILES(TC, TA, TB, GG)                                        \
  do                                                                    \
    {                                                                   \
      _tile_loadd (TA, a + G * (GG), st);                               \
      _tile_loadd (TB, w + 16 * G * (GG), 64);                          \
      _tile_zero (TC);                                                  \
      _tile_dpbssd (TC, TA, TB);                                        \
      _tile_stored (TC, sums[TC], 64);                                  \
    }                                                                   \
  while (0)

/* Then each activation row's group sums from SUMS[B] times the rows'
   scales of group GG into ISUM.  */
#define KT_SCALE(B, GG)                                                 \
  do                                                                    \
    {                                                                   \
      const __m512i scv_ = _mm512_loadu_si512 (w + KT_W + 64 * (GG));   \
      TSR_CPU_UNROLL16                                                  \
      for (int r = 0; r < 16; r++)                                      \
        isum[r] = kt_words (t)                                          \
                  ? _mm512_dpwssd_epi32 (isum[r],                       \
                                         _mm512_load_si512 (sums[B][r]), \
                                         scv_)                          \
                  : _mm512_add_epi32                                    \
                      (isum[r], _mm512_mullo_epi32                      \
                                  (_mm512_load_si512 (sums[B][r]), scv_)); \
    }                                                                   \
  while (0)

/* 16 activation rows a tile multiply: per super-block the groups in
   turn (group g + 1's product under way while g's sums are scaled),
   the 16 by 16 integer sums I in registers, then the biases
   (p8_bias16) and the f32 steps of p8_group.  */
static inline __attribute__ ((always_inline)) void
kt_amx (enum ktype t, int64_t k, const unsigned char *g0,
        const unsigned char *g1, const unsigned char *kt, int ny,
        const char *y, size_t ys, float *out)
{
  const int G = kt_group (t), ng = QK / G;
  const int64_t nb = k / QK;
  _Alignas (64) int32_t sums[2][16][16];
  _Alignas (64) int8_t rows[16 * QK];
  _Alignas (64) float acc[16][16];

  kt_configure (G);
  for (int c0 = 0; c0 < ny; c0 += 16)
    {
      const int nc = ny - c0 < 16 ? ny - c0 : 16;
      const float *dy[16];
      const int16_t *bs[16], *bs32[16];

      for (int r = 0; r < 16; r++)
        {
          const char *yr = y + (size_t) (c0 + (r < nc ? r : nc - 1)) * ys;
          dy[r] = tsr_cpu_kact_scales (yr, k);
          bs[r] = tsr_cpu_kact_sums (yr, k);
          bs32[r] = tsr_cpu_kact_sums32 (yr, k);
          _mm512_store_ps (acc[r], _mm512_setzero_ps ());
        }
      if (nc < 16)
        memset (rows, 0, sizeof rows);
      for (int64_t i = 0; i < nb; i++)
        {
          const unsigned char *o[2] = { g0 + (size_t) i * TSR_CPU_KP8_BYTES,
                                        g1 + (size_t) i * TSR_CPU_KP8_BYTES };
          const unsigned char *w = kt + (size_t) i * TSR_CPU_KT_BYTES;
          const int8_t *a;
          size_t st;
          __m512i isum[16];

          if (nc == 16)
            {
              a = (const int8_t *) (y + (size_t) c0 * ys) + QK * i;
              st = ys;
            }
          else
            {
              /* A last tile of fewer rows: theirs copied, the rest
                 zero.  */
              for (int r = 0; r < nc; r++)
                memcpy (rows + QK * r, y + (size_t) (c0 + r) * ys + QK * i,
                        QK);
              a = rows;
              st = QK;
            }
          TSR_CPU_UNROLL16
          for (int r = 0; r < 16; r++)
            isum[r] = _mm512_setzero_si512 ();
          KT_TILES (0, 2, 4, 0);
          for (int g = 0; g < ng; g += 2)
            {
              KT_TILES (1, 3, 5, g + 1);
              KT_SCALE (0, g);
              if (g + 2 < ng)
                KT_TILES (0, 2, 4, g + 2);
              KT_SCALE (1, g + 1);
            }
          if (t == KQ4)
            {
              /* The 8 subtracted: pairs of 8 times the scales by the
                 pairs of activation sums of 32.  */
              __m512i cv[4];
              UNROLL
              for (int p = 0; p < 4; p++)
                cv[p] = _mm512_loadu_si512 (w + KT_CORR + 64 * p);
              TSR_CPU_UNROLL16
              for (int r = 0; r < 16; r++)
                {
                  const int16_t *b = bs32[r] + GROUPS / 2 * i;
                  UNROLL
                  for (int p = 0; p < 4; p++)
                    isum[r] = _mm512_dpwssd_epi32
                      (isum[r], cv[p],
                       _mm512_set1_epi32 ((int) load_le32
                                            ((const char *) (b + 2 * p))));
                }
            }

          __m512i b16[16];
          if (has_mins (t))
            p8_bias16 (t, o, 16, bs, bs32, i, b16);
          const __m512 dv = p8_join (o[0] + TSR_CPU_KP8_D,
                                     o[1] + TSR_CPU_KP8_D);
          const __m512 dmv = has_mins (t)
                             ? p8_join (o[0] + TSR_CPU_KP8_DM,
                                        o[1] + TSR_CPU_KP8_DM)
                             : _mm512_setzero_ps ();
          TSR_CPU_UNROLL16
          for (int r = 0; r < 16; r++)
            {
              const __m512 dyr = _mm512_set1_ps (dy[r][i]);
              __m512 f = _mm512_fmadd_ps (_mm512_cvtepi32_ps (isum[r]),
                                          _mm512_mul_ps (dv, dyr),
                                          _mm512_load_ps (acc[r]));
              if (has_mins (t))
                f = _mm512_fmadd_ps (_mm512_cvtepi32_ps (b16[r]),
                                     _mm512_mul_ps (dmv, dyr), f);
              _mm512_store_ps (acc[r], f);
            }
        }
      for (int r = 0; r < nc; r++)
        memcpy (out + TSR_CPU_KT_ROWS * (c0 + r), acc[r], sizeof acc[r]);
    }
  _tile_release ();
}
#undef KT_TILES
#undef KT_SCALE
#endif /* KT_AMX */

void
TSR_CPU_LEVEL_FN (kt_from_kp8) (tsr_type type, int64_t k, const void *g0,
                                const void *g1, void *dst)
{
#if KT_AMX
#define KT_FROM(t)                                                      \
  for (int64_t i = 0; i < k / QK; i++)                                  \
    {                                                                   \
      const unsigned char *o[2] = {                                     \
        (const unsigned char *) g0 + (size_t) i * TSR_CPU_KP8_BYTES,    \
        (const unsigned char *) g1 + (size_t) i * TSR_CPU_KP8_BYTES     \
      };                                                                \
      kt_from_kp8_sb (t, o, (unsigned char *) dst                       \
                            + (size_t) i * TSR_CPU_KT_BYTES);           \
    }
  switch (ktype_of (type))
    {
    case KQ2: KT_FROM (KQ2); break;
    case KQ3: KT_FROM (KQ3); break;
    case KQ4: KT_FROM (KQ4); break;
    case KQ5: KT_FROM (KQ5); break;
    case KQ6: KT_FROM (KQ6); break;
    default: KT_FROM (KIQ4XS); break;
    }
#undef KT_FROM
#else
  /* (Only v4-amx multiplies this layout: this is the reference the
     tests hold the vector code to.)  */
  kt_from_kp8_ref (ktype_of (type), k, g0, g1, dst);
#endif
}

#if KT_AMX
#define KT_DOT(t) kt_amx (t, k, g0, g1, x, ny, y, ys, out)
#else
#define KT_DOT(t) kt_dot_ref (t, k, g0, g1, x, ny, y, ys, out)
#endif
#define KT_FN(name, t)                                                  \
  void                                                                  \
  TSR_CPU_LEVEL_FN (vec_dot_##name##t16_q8_K) (int64_t k, const void *g0_, \
                                               const void *g1_,         \
                                               const void *x, int ny,   \
                                               const void *y_, size_t ys, \
                                               float *out)              \
  {                                                                     \
    const unsigned char *g0 = g0_, *g1 = g1_;                           \
    const char *y = y_;                                                 \
    KT_DOT (t);                                                         \
  }

KT_FN (q2_K, KQ2)
KT_FN (q3_K, KQ3)
KT_FN (q4_K, KQ4)
KT_FN (q5_K, KQ5)
KT_FN (q6_K, KQ6)
KT_FN (iq4_xs, KIQ4XS)
#undef KT_FN
#undef KT_DOT
