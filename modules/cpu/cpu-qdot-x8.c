/* cpu-qdot-x8.c - integer dots of q4_0, q4_1, q5_0, q5_1, q8_0,
 * iq4_nl, mxfp4, q4_K, q5_K, q6_K and iq4_xs weights (and of every
 * block type of 32 packed as it is used) repacked in groups of 8 rows
 * (the CPU_REPACK buffer type; the layout is described in
 * cpu-repack.c) with q8_0 activations (cpu-vec.h; q8_K for the
 * super-block types, cpu-vec-k.h), compiled once per ISA level.
 *
 * One pass over a group's blocks computes 8 rows by NY <= 8 activation
 * columns: per block, the group's vectors give 4 vectors of unsigned
 * values for 8 rows, two lanes a row (q4_0: the nibbles of two
 * vectors, 0..15; q8_0: four vectors of the values plus 128), and each
 * of a column's 4 broadcasts of 8 activation bytes meets all 8 rows in
 * one multiply-add of unsigned by signed bytes summed in fours
 * (vpdpbusd with VNNI, else pmaddubsw + pmaddwd), the sums starting
 * from the offset, -8 (q4_0) or -128 (q8_0) times the activation
 * block's sum of values (cpu-vec.h), in one lane of each row's pair.
 * The exact int32 block sums times the two scales are accumulated in
 * f32.
 * - AVX-512BW (v4, v4-vnni, v4-amx): the 8 rows in one register;
 *   each row's two lanes added in int32 first, two columns a vector, so
 *   that the 32-row tiles (below, from TSR_CPU_X32_MIN_N columns; at
 *   v4-amx on AMX tiles) give the same results.
 * - AVX2 (v3, v3-vnni): 4 rows a register, the two halves of the group
 *   in turn.
 * - Otherwise, and q8_0 without VNNI (where pmaddubsw's pairs of
 *   255 x 127 would saturate), plain C: the reference; the buffer type
 *   does not repack those (tsr_cpu_repack_level).
 * Plain weights take the same kernels (cpu-ops-matmul.c): q4_0 and
 * q8_0 rows packed as the buffer type packs them, q5_0 rows in q8_0's
 * layout with their stored values 0..31 (offset multiplier 2: -16 times
 * the activation sums), iq4_nl and mxfp4 rows in q8_0's with their
 * table values plus 128 (mxfp4's halved E8M0 scales as f32, which f16
 * cannot hold), q4_1 and q5_1 rows in q4_0's and q8_0's with their
 * values unshifted and their f16 minimums after the scales, each row's
 * minimum times the activation block's scaled sum added in its even
 * lane; by tsr_cpu_x8_pack, which builds a group's block in vector
 * registers (8 rows' 16 or 32 bytes, transposed by quadwords) where the
 * level has AVX2 or AVX-512.
 * q4_K (AVX-512BW only; the reference elsewhere): per super-block of
 * 256 and group j of 32, the same 4 step sums S_j (from zero, within
 * int16: 16 products of 4-bit values by bytes), times the 6-bit scale
 * sc_j of each row (decoded for 8 rows at once from the packed bytes)
 * in one vpdpwssd, summed in int32 over the 8 groups: I; the minimums
 * m_j times the activation group sums A_j (from the q8_K sums of 16):
 * B; each row's two lanes added; then acc = fma (I, d dy, acc) and acc
 * = fma (B, -dmin dy, acc), the steps of the packed plain super-blocks
 * (cpu-vec-k.h), whose results these are, bit for bit.
 * q5_K: as q4_K, each value's fifth bit moved to bit 4 from the pair of
 * groups' vector of fifth bits; the group sums (16 products of 5-bit
 * values by bytes) outgrow int16, so the scales multiply in int32
 * (vpmulld).
 * q6_K (likewise): per group of 32 the 6-bit values (0..63) rebuilt
 * from a vector of low nibbles and one of high pairs, two sums of 16
 * (one per scale) starting from minus 32 times the activations they
 * meet (the q8_K row's offset sums for q6_K), so within int16, packed
 * to words and times the rows' int8 scales in one vpdpwssd: I
 * = sum_g sc_g (S_g - 32 A_g); then acc = fma (I, d dy, acc).  */
#include <config.h>

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "cpu-amx.h"
#include "cpu-vec.h"
#include "cpu-level.h"
#include "cpu-qdot.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#define ROWS TSR_CPU_REPACK_ROWS
/* A group's block (Q8, OM, EXT): as struct tsr_cpu_x8_layout says
   (cpu-vec.h).  q4_1's and q5_1's minimums (TSR_CPU_X8_MINS) times the
   activation block's scaled sum are added in f32; mxfp4's E8M0 scales
   outrange f16 (TSR_CPU_X8_F32S).  */
#define GROUP_VEC(ext) tsr_cpu_x8_vectors_at (ext)
#define GROUP_BYTES(q8, ext) tsr_cpu_x8_group_bytes (q8, ext)
/* Repacked q5_0 and q5_1 (QM): the nibbles' layout (q4_0's) after 32
   bytes of fifth bits, 4 masks of 64 bits, bit 8r + 4h + b of mask s
   the fifth bit of element 8s + 4h + b of row r (the byte of vector s
   that holds that element's low 4 bits).  */
#define GROUP_VEC_M(ext, qm) (GROUP_VEC (ext) + 32 * (qm))
#define GROUP_BYTES_M(q8, ext, qm) (GROUP_BYTES (q8, ext) + 32 * (qm))

#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
#define X8_VNNI 1
#else
#define X8_VNNI 0
#endif
/* The 32-row tiles' kernels on AMX tiles (v4-amx), their values
   signed.  */
#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512BW__)
#define X32_AMX 1
#else
#define X32_AMX 0
#endif

/* How a group of 8 rows of TYPE holds its block: as the buffer type
   stores it (REPACKED), or as tsr_cpu_x8_pack packs plain rows.  */
struct x8_source
{
  int q8, om, ext, qm;
  const int8_t *lut;
};

static inline struct x8_source
x8_source_of (tsr_type type, int repacked)
{
  struct tsr_cpu_x8_layout l = tsr_cpu_x8_layout_of (type);
  struct x8_source s = { l.q8, l.om, l.ext, 0, NULL };

  if (repacked && (type == TSR_TYPE_Q5_0 || type == TSR_TYPE_Q5_1))
    s = (struct x8_source) { 0, l.om, l.ext, 1, NULL };
  else if (repacked && type == TSR_TYPE_IQ4_NL)
    s = (struct x8_source) { 0, 16, 0, 0, tsr_cpu_iq4nl_values };
  else if (repacked && type == TSR_TYPE_MXFP4)
    s = (struct x8_source) { 0, 16, TSR_CPU_X8_E8M0, 0,
                             tsr_cpu_mxfp4_values };
  return s;
}

/* Value (unsigned, as the kernels take it) of element E of row R of a
   group's block O: the reference reading of the layouts.  */
static inline unsigned
x8_value_ref (const struct x8_source *d, const unsigned char *o, int r,
              int e)
{
  const int s = e / 8, lane = 2 * r + e % 8 / 4, b = e % 4;
  const int vo = GROUP_VEC_M (d->ext, d->qm);
  unsigned w;

  if (d->q8)
    return o[vo + 64 * s + 4 * lane + b];
  w = o[vo + 64 * (s / 2) + 4 * lane + b];
  w = s % 2 ? w >> 4 : w & 15;
  if (d->qm)
    w |= (o[GROUP_VEC (d->ext) + 8 * s + (4 * lane + b) / 8]
          >> (4 * lane + b) % 8 & 1) << 4;
  if (d->lut)
    w = (unsigned) (d->lut[w] + 128);
  return w;
}

static inline float
x8_scale_ref (const struct x8_source *d, const unsigned char *o, int r)
{
  float f;
  if (d->ext == TSR_CPU_X8_F32S)
    memcpy (&f, o + 4 * r, sizeof f);
  else if (d->ext == TSR_CPU_X8_E8M0)
    f = tsr_cpu_e8m0_half (o[r]);
  else
    f = fp16_to_f32 (load_fp16 ((const char *) o + 2 * r));
  return f;
}

/* The reference: every value of the layout read back one by one.  */
static inline void
x8_group_ref (int64_t k, const unsigned char *g, const int NY,
              const void *const *y, float *out, int ny_out, const int q8,
              const int om, const int ext, const int qm, const int8_t *lut,
              const int packed)
{
  (void) packed;
  const struct x8_source d = { q8, om, ext, qm, lut };
  const int64_t nb = k / 32;
  float acc[ROWS][TSR_CPU_QDOT_MAX_COLS] = { { 0 } };

  for (int64_t j = 0; j < nb; j++)
    {
      const unsigned char *o = g + j * GROUP_BYTES_M (q8, ext, qm);
      for (int r = 0; r < ROWS; r++)
        {
          const float dw = x8_scale_ref (&d, o, r);
          for (int c = 0; c < NY; c++)
            {
              const int8_t *a = y[c];
              int32_t s = om * tsr_cpu_qact_offset8 (y[c], k)[j];
              for (int e = 0; e < 32; e++)
                s += (int) x8_value_ref (&d, o, r, e)
                     * a[tsr_cpu_qact_pos (j, e)];
              acc[r][c] += dw * tsr_cpu_qact_scales (y[c], k)[j] * (float) s;
              if (ext == TSR_CPU_X8_MINS)
                acc[r][c] += fp16_to_f32 (load_fp16 ((const char *) o + 16
                                                     + 2 * r))
                             * tsr_cpu_qact_sums (y[c], k)[j];
            }
        }
    }
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < NY; c++)
      out[r * ny_out + c] = acc[r][c];
}

/* Where NY activation rows Y of K elements keep their values (Q),
   scales (DY), scaled block sums (SY) and offset sums (OY;
   cpu-vec.h).  */
static inline __attribute__ ((always_inline)) void
x8_cols (int64_t k, const int NY, const void *const *y, const int8_t **q,
         const float **dy, const float **sy, const int32_t **oy)
{
  TSR_CPU_UNROLL
  for (int c = 0; c < NY; c++)
    {
      q[c] = y[c];
      dy[c] = tsr_cpu_qact_scales (y[c], k);
      sy[c] = tsr_cpu_qact_sums (y[c], k);
      oy[c] = tsr_cpu_qact_offset8 (y[c], k);
    }
}

#if defined(__AVX512BW__)
/* Row r's result of columns 2p and 2p + 1: lanes 2r and 2r + 1 of
   ACC[p].  */
static inline __attribute__ ((always_inline)) void
x8_store512 (const __m512 *acc, const int NY, float *out, int ny_out)
{
  for (int c = 0; c < NY; c++)
    {
      float l[16];
      _mm512_storeu_ps (l, acc[c / 2]);
      for (int r = 0; r < ROWS; r++)
        out[r * ny_out + c] = l[2 * r + c % 2];
    }
}

/* Each row's two lanes of S0 (column 2p) and S1 (column 2p + 1) added:
   row r's sums of the two columns in lanes 2r and 2r + 1.  */
static inline __attribute__ ((always_inline)) __m512i
x8_pair_sums512 (__m512i s0, __m512i s1)
{
  __m512i t = _mm512_mask_shuffle_epi32 (s0, 0xaaaa, s1, _MM_PERM_CDAB);
  __m512i u = _mm512_mask_shuffle_epi32 (s1, 0x5555, s0, _MM_PERM_CDAB);
  return _mm512_add_epi32 (t, u);
}

/* Column 2p's value in the even lanes, 2p + 1's in the odd ones.  */
static inline __attribute__ ((always_inline)) __m512
x8_pair_set512 (float a, float b)
{
  return _mm512_mask_mov_ps (_mm512_set1_ps (a), 0xaaaa, _mm512_set1_ps (b));
}

/* The 8 rows' f16 values at P (a scale of each row) as floats, row r's
   in lanes 2r and 2r + 1.  */
static inline __attribute__ ((always_inline)) __m512
x8_pairs512 (const void *p)
{
  const __m512i pairs = _mm512_set_epi32 (7, 7, 6, 6, 5, 5, 4, 4,
                                          3, 3, 2, 2, 1, 1, 0, 0);
  return _mm512_permutexvar_ps
    (pairs, _mm512_castps256_ps512
              (_mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) p))));
}
#endif

/* The value table of a packed type's nibbles (NULL: the values are
   the nibbles, or bytes), and whether its values are bytes (q8_0's).  */
static inline const int8_t *
x8_table_of (tsr_type type)
{
  return type == TSR_TYPE_IQ4_NL ? tsr_cpu_iq4nl_values
         : type == TSR_TYPE_MXFP4 ? tsr_cpu_mxfp4_values : NULL;
}

static inline bool
x8_bytes (const struct tsr_cpu_x8_layout *d, const int8_t *table)
{
  return d->q8 && d->qh < 0 && !table;
}

/* Row R's scale (and minimum) of block BLK into the group's block O.  */
static inline void
x8_scale_into (const struct tsr_cpu_x8_layout *d, const unsigned char *blk,
               int r, unsigned char *o)
{
  if (d->ext == TSR_CPU_X8_F32S)
    {
      float f = tsr_cpu_e8m0_half (blk[0]);
      memcpy (o + 4 * r, &f, sizeof f);
      return;
    }
  memcpy (o + 2 * r, blk, 2);
  if (d->ext == TSR_CPU_X8_MINS)
    memcpy (o + 16 + 2 * r, blk + 2, 2);
}


#if defined(__AVX2__)
/* The 8 rows' E8M0 bytes at P as tsr_cpu_e8m0_half's floats (AVX-512,
   and the AVX2 kernels' halves).  */
static inline __attribute__ ((always_inline)) __m256
x8_rows256_e8m0 (const void *p)
{
  uint64_t b;
  memcpy (&b, p, sizeof b);
  __m256i e = _mm256_cvtepu8_epi32 (_mm_cvtsi64_si128 ((long long) b));
  /* e < 2: 2^-128 << e (subnormal); else (e - 1) << 23.  */
  __m256i big = _mm256_slli_epi32 (_mm256_sub_epi32 (e, _mm256_set1_epi32
                                                          (1)), 23);
  __m256i small = _mm256_sllv_epi32 (_mm256_set1_epi32 (0x00200000), e);
  return _mm256_castsi256_ps (_mm256_blendv_epi8 (big, small,
                                                  _mm256_cmpgt_epi32
                                                  (_mm256_set1_epi32 (2),
                                                   e)));
}
#endif

#if defined(__AVX512BW__)
/* Block J of 8 plain rows described by D (and TABLE) at X (BX bytes
   apart) as the 4
   vectors of values the kernels take (W[s]: elements 8s .. 8s + 7 of
   row r in quadword r, which is lanes 2r and 2r + 1), as
   tsr_cpu_x8_pack stores them (nibble layouts in two vectors).  */
static inline __attribute__ ((always_inline)) void
x8_plain512 (const struct tsr_cpu_x8_layout *d, const int8_t *table,
             const unsigned char *x, size_t bx, int64_t j, __m512i *w)
{
  const __m512i m4 = _mm512_set1_epi8 (15), top = _mm512_set1_epi8 (-128);
  const unsigned char *p = x + j * d->bb + d->qs;
  if (x8_bytes (d, table))
    {
      /* q8_0: each row's 32 values as quadwords q0..q3, two rows a
         vector, then quadword s of every row gathered into W[s].  */
      __m512i z[4];
      for (int i = 0; i < 4; i++)
        z[i] = _mm512_inserti64x4
                 (_mm512_castsi256_si512 (_mm256_loadu_si256
                                          ((const __m256i *)
                                           (p + 2 * i * bx))),
                  _mm256_loadu_si256 ((const __m256i *) (p + (2 * i + 1)
                                                         * bx)), 1);
      const __m512i even = _mm512_set_epi64 (13, 9, 5, 1, 12, 8, 4, 0);
      const __m512i odd = _mm512_set_epi64 (15, 11, 7, 3, 14, 10, 6, 2);
      /* Rows 0..3 (z0, z1), then 4..7: quadwords 0 and 1, 2 and 3.  */
      __m512i u0 = _mm512_permutex2var_epi64 (z[0], even, z[1]);
      __m512i u1 = _mm512_permutex2var_epi64 (z[0], odd, z[1]);
      __m512i u2 = _mm512_permutex2var_epi64 (z[2], even, z[3]);
      __m512i u3 = _mm512_permutex2var_epi64 (z[2], odd, z[3]);
      w[0] = _mm512_xor_si512 (_mm512_shuffle_i64x2 (u0, u2, 0x44), top);
      w[1] = _mm512_xor_si512 (_mm512_shuffle_i64x2 (u0, u2, 0xee), top);
      w[2] = _mm512_xor_si512 (_mm512_shuffle_i64x2 (u1, u3, 0x44), top);
      w[3] = _mm512_xor_si512 (_mm512_shuffle_i64x2 (u1, u3, 0xee), top);
      return;
    }
  /* Each row's 16 bytes of nibbles, four rows a vector; bytes 0..7 of
     every row into A, 8..15 into B: the low nibbles are elements 0..7
     and 8..15, the high ones 16..23 and 24..31.  */
  __m512i lo = _mm512_castsi128_si512 (_mm_loadu_si128 ((const __m128i *)
                                                         p));
  __m512i hi = _mm512_castsi128_si512 (_mm_loadu_si128 ((const __m128i *)
                                                         (p + 4 * bx)));
#define X8_ROW_INTO(v, r, i)                                            \
  v = _mm512_inserti32x4 (v, _mm_loadu_si128 ((const __m128i *)         \
                                              (p + (r) * bx)), i)
  X8_ROW_INTO (lo, 1, 1);
  X8_ROW_INTO (hi, 5, 1);
  X8_ROW_INTO (lo, 2, 2);
  X8_ROW_INTO (hi, 6, 2);
  X8_ROW_INTO (lo, 3, 3);
  X8_ROW_INTO (hi, 7, 3);
#undef X8_ROW_INTO
  __m512i a = _mm512_permutex2var_epi64
                (lo, _mm512_set_epi64 (14, 12, 10, 8, 6, 4, 2, 0), hi);
  __m512i b = _mm512_permutex2var_epi64
                (lo, _mm512_set_epi64 (15, 13, 11, 9, 7, 5, 3, 1), hi);
  w[0] = _mm512_and_si512 (a, m4);
  w[1] = _mm512_and_si512 (b, m4);
  w[2] = _mm512_and_si512 (_mm512_srli_epi16 (a, 4), m4);
  w[3] = _mm512_and_si512 (_mm512_srli_epi16 (b, 4), m4);
  if (d->qh >= 0)
    {
      /* The fifth bits: byte s of a row's qh holds those of elements
         8s .. 8s + 7, one per byte of the row's quadword of W[s].  */
      const __m512i sixteen = _mm512_set1_epi8 (16);
      uint64_t qh[4] = { 0, 0, 0, 0 };
      for (int r = 0; r < ROWS; r++)
        {
          uint32_t h = load_le32 ((const char *) x + (size_t) r * bx
                                  + j * d->bb + d->qh);
          for (int s = 0; s < 4; s++)
            qh[s] |= (uint64_t) ((h >> 8 * s) & 255) << 8 * r;
        }
      for (int s = 0; s < 4; s++)
        w[s] = _mm512_or_si512 (w[s], _mm512_maskz_mov_epi8
                                        ((__mmask64) qh[s], sixteen));
    }
  else if (table)
    {
      const __m512i tv = _mm512_broadcast_i32x4
                           (_mm_loadu_si128 ((const __m128i *) table));
      for (int s = 0; s < 4; s++)
        w[s] = _mm512_add_epi8 (_mm512_shuffle_epi8 (tv, w[s]), top);
    }
}

/* The 8 rows' f32 values at P, row r's in lanes 2r and 2r + 1.  */
static inline __attribute__ ((always_inline)) __m512
x8_pairs512_f32 (const void *p)
{
  const __m512i pairs = _mm512_set_epi32 (7, 7, 6, 6, 5, 5, 4, 4,
                                          3, 3, 2, 2, 1, 1, 0, 0);
  return _mm512_permutexvar_ps (pairs, _mm512_castps256_ps512
                                       (_mm256_loadu_ps ((const float *) p)));
}


/* The same, row r's in lanes 2r and 2r + 1.  */
static inline __attribute__ ((always_inline)) __m512
x8_pairs512_e8m0 (const void *p)
{
  const __m512i pairs = _mm512_set_epi32 (7, 7, 6, 6, 5, 5, 4, 4,
                                          3, 3, 2, 2, 1, 1, 0, 0);
  return _mm512_permutexvar_ps (pairs, _mm512_castps256_ps512
                                       (x8_rows256_e8m0 (p)));
}

/* The 8 rows' scales of a group's block O with EXT, as f32.  */
static inline __attribute__ ((always_inline)) __m256
x8_rows256 (const unsigned char *o, int ext)
{
  return ext == TSR_CPU_X8_F32S ? _mm256_loadu_ps ((const float *) o)
         : ext == TSR_CPU_X8_E8M0 ? x8_rows256_e8m0 (o)
         : _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) o));
}

/* The 4 step sums of one column against the 4 weight vectors, from
   OFF in the even lane of each row's pair.  */
static inline __attribute__ ((always_inline)) __m512i
x8_sum512 (__m512i w0, __m512i w1, __m512i w2, __m512i w3, const int8_t *a,
           int32_t off)
{
  __m512i s = _mm512_set1_epi64 ((int64_t) (uint32_t) off);
  __m512i a0 = _mm512_set1_epi64 (load_i64 (a));
  __m512i a1 = _mm512_set1_epi64 (load_i64 (a + 8));
  __m512i a2 = _mm512_set1_epi64 (load_i64 (a + 64));
  __m512i a3 = _mm512_set1_epi64 (load_i64 (a + 72));
#if defined(__AVX512VNNI__)
  s = _mm512_dpbusd_epi32 (s, w0, a0);
  s = _mm512_dpbusd_epi32 (s, w1, a1);
  s = _mm512_dpbusd_epi32 (s, w2, a2);
  return _mm512_dpbusd_epi32 (s, w3, a3);
#else
  return _mm512_add_epi32 (_mm512_add_epi32 (s, qdot_sum2_512 (w0, a0, w1,
                                                               a1, 1)),
                           qdot_sum2_512 (w2, a2, w3, a3, 1));
#endif
}

/* A group's block O (Q8, EXT, QM, LUT as x8_group's) as the 4 vectors
   of values the kernels take: W[s] element 8s + 4h + b of row r in
   byte b of lane 2r + h; TV: LUT's values plus 128, for the
   indices.  */
static inline __attribute__ ((always_inline)) void
x8_values512 (const unsigned char *o, const int q8, const int ext,
              const int qm, const int8_t *lut, __m512i tv, __m512i *w)
{
  const int vo = GROUP_VEC_M (ext, qm);
  const __m512i m4 = _mm512_set1_epi8 (15);

  if (q8)
    {
      for (int s = 0; s < 4; s++)
        w[s] = _mm512_loadu_si512 (o + vo + 64 * s);
      return;
    }
  __m512i v0 = _mm512_loadu_si512 (o + vo);
  __m512i v1 = _mm512_loadu_si512 (o + vo + 64);
  QDOT_IN_REG (v0);
  QDOT_IN_REG (v1);
  w[0] = _mm512_and_si512 (v0, m4);
  w[1] = _mm512_and_si512 (_mm512_srli_epi16 (v0, 4), m4);
  w[2] = _mm512_and_si512 (v1, m4);
  w[3] = _mm512_and_si512 (_mm512_srli_epi16 (v1, 4), m4);
  if (lut)
    for (int s = 0; s < 4; s++)
      w[s] = _mm512_shuffle_epi8 (tv, w[s]);
  if (qm)
    {
      /* The fifth bits: 16 added under each vector's mask.  */
      const __m512i sixteen = _mm512_set1_epi8 (16);
      uint64_t mk[4];
      memcpy (mk, o + GROUP_VEC (ext), sizeof mk);
      for (int s = 0; s < 4; s++)
        w[s] = _mm512_mask_add_epi8 (w[s], (__mmask64) mk[s], w[s], sixteen);
    }
}

/* LUT's values plus 128 (unsigned), for the indices: once, not per
   block.  */
static inline __attribute__ ((always_inline)) __m512i
x8_table512 (const int8_t *lut)
{
  return lut ? _mm512_add_epi8 (_mm512_broadcast_i32x4
                                (_mm_loadu_si128 ((const __m128i *) lut)),
                                _mm512_set1_epi8 ((char) 0x80))
             : _mm512_setzero_si512 ();
}

static inline __attribute__ ((always_inline)) void
x8_group (int64_t k, const unsigned char *g, const int NY,
          const void *const *y, float *out, int ny_out, const int q8,
          const int om, const int ext, const int qm, const int8_t *lut,
          const int packed)
{
  const int64_t nb = k / 32;
  const __m512i tv = x8_table512 (lut);
  const int8_t *q[TSR_CPU_QDOT_MAX_COLS];
  const float *dy[TSR_CPU_QDOT_MAX_COLS], *sy[TSR_CPU_QDOT_MAX_COLS];
  const int32_t *oy[TSR_CPU_QDOT_MAX_COLS];
  __m512 acc[TSR_CPU_QDOT_MAX_COLS];

  /* Values plus 128 overflow pmaddubsw's pairs without VNNI.  */
  if ((q8 || lut) && om == 16 && !X8_VNNI)
    {
      x8_group_ref (k, g, NY, y, out, ny_out, q8, om, ext, qm, lut, packed);
      return;
    }
  x8_cols (k, NY, y, q, dy, sy, oy);
  TSR_CPU_UNROLL
  for (int c = 0; c < NY; c++)
    acc[c] = _mm512_setzero_ps ();
  for (int64_t j = 0; j < nb; j++)
    {
      const unsigned char *o = g + j * GROUP_BYTES_M (q8, ext, qm);
      __m512i w[4];
      qdot_prefetch_ny ((const char *) o, GROUP_BYTES_M (q8, ext, qm),
                        packed ? 1 : NY);
      x8_values512 (o, q8, ext, qm, lut, tv, w);
      const __m512i w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
      __m512 dw = ext == TSR_CPU_X8_F32S ? x8_pairs512_f32 (o)
                  : ext == TSR_CPU_X8_E8M0 ? x8_pairs512_e8m0 (o)
                  : x8_pairs512 (o);
      __m512 mw = ext == TSR_CPU_X8_MINS ? x8_pairs512 (o + 16)
                                         : _mm512_setzero_ps ();
      const int64_t at = tsr_cpu_qact_pos (j, 0);

      /* Two columns a vector: each row's exact block sum (its two
         lanes added in int32) converted once, as the 32-row tiles do
         (x32_tile), so both give a row the same result.  */
      TSR_CPU_UNROLL
      for (int p = 0; p < (NY + 1) / 2; p++)
        {
          const int c = 2 * p, c1 = c + 1 < NY ? c + 1 : c;
          __m512i s0 = x8_sum512 (w0, w1, w2, w3, q[c] + at, om * oy[c][j]);
          __m512i s1 = c1 != c ? x8_sum512 (w0, w1, w2, w3, q[c1] + at,
                                            om * oy[c1][j])
                               : _mm512_setzero_si512 ();
          __m512 f = _mm512_cvtepi32_ps (x8_pair_sums512 (s0, s1));
          acc[p] = _mm512_fmadd_ps (_mm512_mul_ps (dw, x8_pair_set512
                                                         (dy[c][j],
                                                          dy[c1][j])),
                                    f, acc[p]);
          if (ext == TSR_CPU_X8_MINS)
            acc[p] = _mm512_fmadd_ps (mw, x8_pair_set512 (sy[c][j],
                                                          sy[c1][j]),
                                      acc[p]);
        }
    }
  x8_store512 (acc, NY, out, ny_out);
}

#elif defined(__AVX2__)
static inline __attribute__ ((always_inline)) __m256i
x8_sum256 (__m256i w0, __m256i w1, __m256i w2, __m256i w3, const int8_t *a,
           int32_t off)
{
  __m256i s = _mm256_set1_epi64x ((int64_t) (uint32_t) off);
  __m256i a0 = _mm256_set1_epi64x (load_i64 (a));
  __m256i a1 = _mm256_set1_epi64x (load_i64 (a + 8));
  __m256i a2 = _mm256_set1_epi64x (load_i64 (a + 64));
  __m256i a3 = _mm256_set1_epi64x (load_i64 (a + 72));
#if defined(__AVXVNNI__)
  s = _mm256_dpbusd_avx_epi32 (s, w0, a0);
  s = _mm256_dpbusd_avx_epi32 (s, w1, a1);
  s = _mm256_dpbusd_avx_epi32 (s, w2, a2);
  return _mm256_dpbusd_avx_epi32 (s, w3, a3);
#else
  return _mm256_add_epi32 (_mm256_add_epi32 (s, qdot_sum2_256 (w0, a0, w1,
                                                               a1, 1)),
                           qdot_sum2_256 (w2, a2, w3, a3, 1));
#endif
}

/* 32 bits of M, from bit 0, as 32 bytes: 16 where the bit is set, 0
   elsewhere (q5_0's and q5_1's fifth bits).  */
static inline __m256i
x8_bits256 (uint32_t m)
{
  const __m256i bit = _mm256_set1_epi64x ((long long) 0x8040201008040201ull);
  const __m256i x = _mm256_shuffle_epi8
    (_mm256_set1_epi32 ((int) m),
     _mm256_setr_epi8 (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                       2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  return _mm256_and_si256 (_mm256_cmpeq_epi8 (_mm256_and_si256 (x, bit), bit),
                           _mm256_set1_epi8 (16));
}

/* Rows 4 H .. 4 H + 3 of the group (lanes 8 H .. 8 H + 7 of the
   layout's 16); QM, LUT as x8_group's (the repacked q5_0 and q5_1;
   iq4_nl and mxfp4, with VNNI).  */
static inline __attribute__ ((always_inline)) void
x8_half (int64_t k, const unsigned char *g, int h, const int NY,
         const void *const *y, float *out, int ny_out, const int q8,
         const int om, const int ext, const int qm, const int8_t *lut,
         const int packed)
{
  const int64_t nb = k / 32;
  const int vo = GROUP_VEC_M (ext, qm);
  const __m256i m4 = _mm256_set1_epi8 (15);
  /* LUT's values plus 128 (unsigned), for the indices.  */
  const __m256i tv = lut ? _mm256_add_epi8 (_mm256_broadcastsi128_si256
                                            (_mm_loadu_si128
                                             ((const __m128i *) lut)),
                                            _mm256_set1_epi8 ((char) 0x80))
                         : _mm256_setzero_si256 ();
  const __m256i pairs = _mm256_set_epi32 (3, 3, 2, 2, 1, 1, 0, 0);
  const int8_t *q[TSR_CPU_QDOT_MAX_COLS];
  const float *dy[TSR_CPU_QDOT_MAX_COLS], *sy[TSR_CPU_QDOT_MAX_COLS];
  const int32_t *oy[TSR_CPU_QDOT_MAX_COLS];
  __m256 acc[TSR_CPU_QDOT_MAX_COLS];

  x8_cols (k, NY, y, q, dy, sy, oy);
  TSR_CPU_UNROLL
  for (int c = 0; c < NY; c++)
    acc[c] = _mm256_setzero_ps ();
  for (int64_t j = 0; j < nb; j++)
    {
      const unsigned char *o = g + j * GROUP_BYTES_M (q8, ext, qm);
      const unsigned char *v = o + vo + 32 * h;
      __m256i w0, w1, w2, w3;
      if (h == 0)
        qdot_prefetch_ny ((const char *) o, GROUP_BYTES_M (q8, ext, qm),
                          packed ? 1 : NY);
      if (q8)
        {
          w0 = _mm256_loadu_si256 ((const __m256i *) v);
          w1 = _mm256_loadu_si256 ((const __m256i *) (v + 64));
          w2 = _mm256_loadu_si256 ((const __m256i *) (v + 128));
          w3 = _mm256_loadu_si256 ((const __m256i *) (v + 192));
        }
      else
        {
          __m256i v0 = _mm256_loadu_si256 ((const __m256i *) v);
          __m256i v1 = _mm256_loadu_si256 ((const __m256i *) (v + 64));
          QDOT_IN_REG (v0);
          QDOT_IN_REG (v1);
          w0 = _mm256_and_si256 (v0, m4);
          w1 = _mm256_and_si256 (_mm256_srli_epi16 (v0, 4), m4);
          w2 = _mm256_and_si256 (v1, m4);
          w3 = _mm256_and_si256 (_mm256_srli_epi16 (v1, 4), m4);
          if (lut)
            {
              w0 = _mm256_shuffle_epi8 (tv, w0);
              w1 = _mm256_shuffle_epi8 (tv, w1);
              w2 = _mm256_shuffle_epi8 (tv, w2);
              w3 = _mm256_shuffle_epi8 (tv, w3);
            }
          if (qm)
            {
              /* The fifth bits of these 4 rows: bits 32 H .. 32 H + 31
                 of each vector's mask.  */
              const char *mk = (const char *) o + GROUP_VEC (ext) + 4 * h;
              w0 = _mm256_or_si256 (w0, x8_bits256 (load_le32 (mk)));
              w1 = _mm256_or_si256 (w1, x8_bits256 (load_le32 (mk + 8)));
              w2 = _mm256_or_si256 (w2, x8_bits256 (load_le32 (mk + 16)));
              w3 = _mm256_or_si256 (w3, x8_bits256 (load_le32 (mk + 24)));
            }
        }
      __m128 d4 = ext == TSR_CPU_X8_F32S
                  ? _mm_loadu_ps ((const float *) (o + 16 * h))
                  : ext == TSR_CPU_X8_E8M0
                  ? (h ? _mm256_extractf128_ps (x8_rows256_e8m0 (o), 1)
                       : _mm256_castps256_ps128 (x8_rows256_e8m0 (o)))
                  : _mm_cvtph_ps (_mm_loadl_epi64 ((const __m128i *)
                                                   (o + 8 * h)));
      __m256 dw = _mm256_permutevar8x32_ps (_mm256_castps128_ps256 (d4),
                                            pairs);
      /* The minimums in the even lanes only: once a row.  */
      __m256 mw = _mm256_setzero_ps ();
      if (ext == TSR_CPU_X8_MINS)
        mw = _mm256_blend_ps (_mm256_permutevar8x32_ps
                              (_mm256_castps128_ps256
                               (_mm_cvtph_ps (_mm_loadl_epi64
                                              ((const __m128i *)
                                               (o + 16 + 8 * h)))), pairs),
                              mw, 0xaa);
      const int64_t at = tsr_cpu_qact_pos (j, 0);

      TSR_CPU_UNROLL
      for (int c = 0; c < NY; c++)
        {
          __m256 f = _mm256_cvtepi32_ps (x8_sum256 (w0, w1, w2, w3,
                                                    q[c] + at,
                                                    om
                                                    * oy[c][j]));
          acc[c] = _mm256_fmadd_ps (_mm256_mul_ps (dw,
                                                   _mm256_set1_ps (dy[c][j])),
                                    f, acc[c]);
          if (ext == TSR_CPU_X8_MINS)
            acc[c] = _mm256_fmadd_ps (mw, _mm256_set1_ps (sy[c][j]), acc[c]);
        }
    }
  for (int c = 0; c < NY; c++)
    {
      float l[8];
      _mm256_storeu_ps (l, acc[c]);
      for (int r = 0; r < 4; r++)
        out[(4 * h + r) * ny_out + c] = l[2 * r] + l[2 * r + 1];
    }
}

static inline __attribute__ ((always_inline)) void
x8_group (int64_t k, const unsigned char *g, const int NY,
          const void *const *y, float *out, int ny_out, const int q8,
          const int om, const int ext, const int qm, const int8_t *lut,
          const int packed)
{
  /* Values plus 128 overflow pmaddubsw's pairs without VNNI (the
     buffer type repacks q8_0, iq4_nl and mxfp4 only with it).  */
  if ((q8 || lut) && om == 16 && !X8_VNNI)
    {
      x8_group_ref (k, g, NY, y, out, ny_out, q8, om, ext, qm, lut, packed);
      return;
    }
  x8_half (k, g, 0, NY, y, out, ny_out, q8, om, ext, qm, lut, packed);
  x8_half (k, g, 1, NY, y, out, ny_out, q8, om, ext, qm, lut, packed);
}
#else
#define x8_group x8_group_ref
#endif

/* Each group of 8 rows of NR, by CALL (N) for the column count N.  */
#define X8_ROWS(CALL)                                                   \
  for (int r0 = 0; r0 < nr; r0 += ROWS)                                 \
    {                                                                   \
      const unsigned char *g = (const unsigned char *) x                \
                               + (size_t) r0 * bx;                      \
      float *o = out + r0 * ny;                                         \
      switch (ny)                                                       \
        {                                                               \
        case 1: CALL (1); break;                                        \
        case 2: CALL (2); break;                                        \
        case 3: CALL (3); break;                                        \
        case 4: CALL (4); break;                                        \
        case 5: CALL (5); break;                                        \
        case 6: CALL (6); break;                                        \
        case 7: CALL (7); break;                                        \
        default: CALL (8); break;                                       \
        }                                                               \
    }
/* The group of type T's layout (constants once inlined); PACKED: plain
   rows packed into a thread's scratch as they are used
   (tsr_cpu_x8_pack), already in the caches, not streaming from
   memory.  */
#define TYPE_GROUP(t, N, packed)                                        \
  x8_group (k, g, N, y, o, ny, tsr_cpu_x8_layout_of (t).q8,             \
            tsr_cpu_x8_layout_of (t).om, tsr_cpu_x8_layout_of (t).ext, 0, \
            NULL, packed)
#define Q4_0_GROUP(N) TYPE_GROUP (TSR_TYPE_Q4_0, N, 0)
#define Q8_0_GROUP(N) TYPE_GROUP (TSR_TYPE_Q8_0, N, 0)
#define Q4_1_GROUP(N) TYPE_GROUP (TSR_TYPE_Q4_1, N, 0)
#define Q4_0S_GROUP(N) TYPE_GROUP (TSR_TYPE_Q4_0, N, 1)
#define Q8_0S_GROUP(N) TYPE_GROUP (TSR_TYPE_Q8_0, N, 1)
#define Q4_1S_GROUP(N) TYPE_GROUP (TSR_TYPE_Q4_1, N, 1)
#define Q5_0S_GROUP(N) TYPE_GROUP (TSR_TYPE_Q5_0, N, 1)
#define Q5_1S_GROUP(N) TYPE_GROUP (TSR_TYPE_Q5_1, N, 1)
#define MXFP4S_GROUP(N) TYPE_GROUP (TSR_TYPE_MXFP4, N, 1)
/* Repacked q5_0 (offset -16: twice q4_0's) and q5_1 (minimums): the
   nibbles and the masks of fifth bits.  */
#define Q5_0M_GROUP(N) x8_group (k, g, N, y, o, ny, 0, 2, 0, 1, NULL, 0)
#define Q5_1M_GROUP(N)                                                  \
  x8_group (k, g, N, y, o, ny, 0, 0, TSR_CPU_X8_MINS, 1, NULL, 0)
/* Repacked iq4_nl and mxfp4: nibbles, looked up (values plus 128).  */
#define IQ4_NLN_GROUP(N)                                                \
  x8_group (k, g, N, y, o, ny, 0, 16, 0, 0, tsr_cpu_iq4nl_values, 0)
#define MXFP4N_GROUP(N)                                                 \
  x8_group (k, g, N, y, o, ny, 0, 16, TSR_CPU_X8_E8M0, 0,               \
            tsr_cpu_mxfp4_values, 0)

/* A kernel of the repacked dots: NAME, its groups by GROUP.  */
#define X8_KERNEL(name, GROUP)                                          \
  void                                                                  \
  TSR_CPU_LEVEL_FN (name) (int64_t k, const void *x, size_t bx, int nr, \
                           int ny, const void *const *y, float *out)    \
  {                                                                     \
    X8_ROWS (GROUP)                                                     \
  }

/* Weights repacked by the buffer type.  */
X8_KERNEL (vec_dot_q4_0x8_q8_0, Q4_0_GROUP)
X8_KERNEL (vec_dot_q8_0x8_q8_0, Q8_0_GROUP)
X8_KERNEL (vec_dot_q4_1x8_q8_0, Q4_1_GROUP)
X8_KERNEL (vec_dot_q5_0x8m_q8_0, Q5_0M_GROUP)
X8_KERNEL (vec_dot_q5_1x8m_q8_0, Q5_1M_GROUP)
X8_KERNEL (vec_dot_iq4_nlx8n_q8_0, IQ4_NLN_GROUP)
X8_KERNEL (vec_dot_mxfp4x8n_q8_0, MXFP4N_GROUP)
/* Plain weights packed into the scratch (tsr_cpu_x8_pack).  */
X8_KERNEL (vec_dot_q4_0x8s_q8_0, Q4_0S_GROUP)
X8_KERNEL (vec_dot_q8_0x8s_q8_0, Q8_0S_GROUP)
X8_KERNEL (vec_dot_q4_1x8s_q8_0, Q4_1S_GROUP)
X8_KERNEL (vec_dot_q5_0x8s_q8_0, Q5_0S_GROUP)
X8_KERNEL (vec_dot_q5_1x8s_q8_0, Q5_1S_GROUP)
X8_KERNEL (vec_dot_mxfp4x8s_q8_0, MXFP4S_GROUP)

/* The 32-row tiles: products of many columns (TSR_CPU_X32_MIN_N,
   cpu-impl.h) of the blocks of 32, stored repacked or plain, take the
   weights of a thread's tile of 32 rows converted once into this
   layout (tsr_cpu_x32_from_x8) and these kernels.  Per block j of the
   rows (tsr_cpu_x32_block_bytes):
     bytes 0..127    the 32 rows' scales as f32, row r at 4r;
     (128..255       with minimums, q4_1's and q5_1's, theirs as f32;)
     then 16 vectors: vector 2v + h (v < 8, h < 2), lane l, byte b: the
     value of element 4v + b of row 16h + l, as the groups' vectors
     hold it (unsigned: q8_0's plus 128, iq4_nl's and mxfp4's table
     values plus 128, q5's 0..31, q4's 0..15); at v4-amx signed
     instead, each less its type's offset (8 q4_0, 16 q5_0, 128 the
     values plus 128; q4_1's and q5_1's as they are).
   At v4-amx (X32_AMX) a tile multiply (tdpbssd) takes 16 activation
   rows' block j (the rows' values block by block, cpu-vec.h) against
   16 rows' block, giving the 16 by 16 exact int32 block sums with the
   offsets already in, which the f32 steps below then take as the
   vector kernel's: the same results, bit for bit.
   A lane is a row, so one broadcast of 4 activation bytes feeds two
   vectors (32 rows) and every vpdpbusd sums a row's 4 products: 16 of
   them per column and block, against one conversion, multiply and
   multiply-add per 16 rows, where the 8-row kernel's 8-byte broadcasts
   take 2 lanes a row, so twice the conversions (about 75% of the 8-bit
   peak in a kernel-only loop against 57%).  Each row's block sum is
   the same exact int32 as the 8-row kernel's pair of lanes added, and
   the f32 steps the same (acc = fma (d_w d_y, S, acc), then the
   minimum times the activation sum), so the results are those of the
   8-row kernels, bit for bit.  */
#define X32_ROWS TSR_CPU_X32_ROWS
#define X32_VEC(mins) ((mins) ? 256 : 128)
#define X32_BYTES(mins) tsr_cpu_x32_block_bytes (mins)
#define X32_COLS 4                /* columns a pass */

/* Where element 4V (V < 8) of block J of an activation row starts.  */
static inline int64_t
x32_act (int64_t j, int v)
{
  return tsr_cpu_qact_pos (j, 4 * v);
}

/* The reference, every value one by one, in the kernel's f32 steps:
   blocks [J0, J0 + NJ) of the tile's rows at T (block J0 first) by NY
   activation rows of K elements, into ACC (column c's 32 rows at
   ACC + 32 c), which holds the sums of the blocks before J0.  */
static inline void
x32_tile_ref (int64_t k, int64_t j0, int64_t nj, const unsigned char *t,
              const int NY, const void *const *y, float *acc, const int om,
              const int mins)
{
  for (int r = 0; r < X32_ROWS; r++)
    for (int c = 0; c < NY; c++)
      {
        const int8_t *a = y[c];
        float sum = acc[32 * c + r];
        for (int64_t j = j0; j < j0 + nj; j++)
          {
            const unsigned char *o = t + (j - j0) * X32_BYTES (mins);
            const unsigned char *w = o + X32_VEC (mins) + 64 * (r / 16)
                                     + 4 * (r % 16);
            int32_t s = X32_AMX ? 0 : om * tsr_cpu_qact_offset8 (y[c], k)[j];
            float dw, mw;
            for (int v = 0; v < 8; v++)
              for (int b = 0; b < 4; b++)
                s += (X32_AMX ? (int) (int8_t) w[128 * v + b]
                              : (int) w[128 * v + b])
                     * a[x32_act (j, v) + b];
            memcpy (&dw, o + 4 * r, sizeof dw);
            sum = fmaf (dw * tsr_cpu_qact_scales (y[c], k)[j], (float) s,
                        sum);
            if (mins)
              {
                memcpy (&mw, o + 128 + 4 * r, sizeof mw);
                sum = fmaf (mw, tsr_cpu_qact_sums (y[c], k)[j], sum);
              }
          }
        acc[32 * c + r] = sum;
      }
}

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
static inline __attribute__ ((always_inline)) void
x32_tile (int64_t k, int64_t j0, int64_t nj, const unsigned char *t,
          const int NY, const void *const *y, float *sums, const int om,
          const int mins)
{
  const int8_t *q[X32_COLS];
  const float *dy[X32_COLS], *sy[X32_COLS];
  const int32_t *oy[X32_COLS];
  __m512 acc[X32_COLS][2];

  x8_cols (k, NY, y, q, dy, sy, oy);
  TSR_CPU_UNROLL
  for (int c = 0; c < NY; c++)
    {
      acc[c][0] = _mm512_loadu_ps (sums + 32 * c);
      acc[c][1] = _mm512_loadu_ps (sums + 32 * c + 16);
    }
  for (int64_t j = j0; j < j0 + nj; j++)
    {
      const unsigned char *o = t + (j - j0) * X32_BYTES (mins);
      const unsigned char *vec = o + X32_VEC (mins);
      __m512i s[X32_COLS][2];

      TSR_CPU_UNROLL
      for (int c = 0; c < NY; c++)
        s[c][0] = s[c][1] = _mm512_set1_epi32 (om * oy[c][j]);
      TSR_CPU_UNROLL
      for (int v = 0; v < 8; v++)
        {
          const __m512i p0 = _mm512_loadu_si512 (vec + 128 * v);
          const __m512i p1 = _mm512_loadu_si512 (vec + 128 * v + 64);
          const int64_t at = x32_act (j, v);
          TSR_CPU_UNROLL
          for (int c = 0; c < NY; c++)
            {
              const __m512i b = _mm512_set1_epi32
                                  ((int) load_le32 ((const char *) q[c]
                                                    + at));
              s[c][0] = _mm512_dpbusd_epi32 (s[c][0], p0, b);
              s[c][1] = _mm512_dpbusd_epi32 (s[c][1], p1, b);
            }
        }
      TSR_CPU_UNROLL
      for (int h = 0; h < 2; h++)
        {
          const __m512 dw = _mm512_loadu_ps ((const float *) o + 16 * h);
          const __m512 mw = mins ? _mm512_loadu_ps ((const float *) o + 32
                                                    + 16 * h)
                                 : _mm512_setzero_ps ();
          TSR_CPU_UNROLL
          for (int c = 0; c < NY; c++)
            {
              acc[c][h] = _mm512_fmadd_ps (_mm512_mul_ps
                                           (dw, _mm512_set1_ps (dy[c][j])),
                                           _mm512_cvtepi32_ps (s[c][h]),
                                           acc[c][h]);
              if (mins)
                acc[c][h] = _mm512_fmadd_ps (mw, _mm512_set1_ps (sy[c][j]),
                                             acc[c][h]);
            }
        }
    }
  TSR_CPU_UNROLL
  for (int c = 0; c < NY; c++)
    {
      _mm512_storeu_ps (sums + 32 * c, acc[c][0]);
      _mm512_storeu_ps (sums + 32 * c + 16, acc[c][1]);
    }
}
#else
#define x32_tile x32_tile_ref
#endif

#if X32_AMX
/* The tile configuration for blocks of 32 (tsr_cpu_amx_config_16x16:
   tile 2 and 3 16 activation rows' block, 4 and 5 8 tile rows of 16
   weight rows by 4 values).  */
static inline void
x32_amx_configure (void)
{
  struct tsr_cpu_amx_config c;

  tsr_cpu_amx_config_16x16 (&c, 32);
  _tile_loadconfig (&c);
}

/* Where the tile of activation rows C0 .. C0 + 15 of block J is read
   from, and its row stride: the rows' block-by-block values in place
   when the 16 rows are there and evenly spaced, else copied into BUF
   (the rows past NY zero).  */
static inline const int8_t *
x32_amx_rows (int64_t k, int64_t j, int c0, int ny, const void *const *y,
              ptrdiff_t even, int8_t *buf, size_t *stride)
{
  if (even && c0 + 16 <= ny)
    {
      *stride = (size_t) even;
      return tsr_cpu_qact_blockwise (y[c0], k) + 32 * j;
    }
  for (int r = 0; r < 16; r++)
    if (c0 + r < ny)
      memcpy (buf + 32 * r, tsr_cpu_qact_blockwise (y[c0 + r], k) + 32 * j,
              32);
    else
      memset (buf + 32 * r, 0, 32);
  *stride = 32;
  return buf;
}

/* Block JJ of activation rows C0.. by the tile's rows 16 H..16 H + 15
   in tiles TC, TA, TB: the tile product, stored to SUMS[TC].  */
#define X32_AMX_TILES(TC, TA, TB, JJ)                                   \
  do                                                                    \
    {                                                                   \
      size_t st_;                                                       \
      const int8_t *a_ = x32_amx_rows (k, JJ, c0, ny, y, even,          \
                                       rows[TC], &st_);                 \
      _tile_loadd (TA, a_, st_);                                        \
      _tile_loadd (TB, t + ((JJ) - j0) * X32_BYTES (mins)               \
                         + X32_VEC (mins) + 64 * h, 128);               \
      _tile_zero (TC);                                                  \
      _tile_dpbssd (TC, TA, TB);                                        \
      _tile_stored (TC, sums[TC], 64);                                  \
    }                                                                   \
  while (0)

/* Then each row's f32 steps of block JJ from SUMS[B] into ACC.  */
#define X32_AMX_STEPS(B, JJ)                                            \
  do                                                                    \
    {                                                                   \
      const float *o_ = (const float *) (t + ((JJ) - j0)                \
                                         * X32_BYTES (mins));           \
      const __m512 dw = _mm512_loadu_ps (o_ + 16 * h);                  \
      const __m512 mw = mins ? _mm512_loadu_ps (o_ + 32 + 16 * h)       \
                             : _mm512_setzero_ps ();                    \
      TSR_CPU_UNROLL16                                                  \
      for (int r = 0; r < 16; r++)                                      \
        {                                                               \
          acc[r] = _mm512_fmadd_ps (_mm512_mul_ps                       \
                                      (dw, _mm512_set1_ps (dy[r][JJ])), \
                                    _mm512_cvtepi32_ps                  \
                                      (_mm512_load_si512 (sums[B][r])), \
                                    acc[r]);                            \
          if (mins)                                                     \
            acc[r] = _mm512_fmadd_ps (mw, _mm512_set1_ps (sy[r][JJ]),   \
                                      acc[r]);                          \
        }                                                               \
    }                                                                   \
  while (0)

/* The tile's blocks [J0, J0 + NJ) at T by NY activation rows Y into
   ACC (column c's 32 rows at ACC + 32 c): per 16 rows and half of the
   tile, the blocks in turn, the 16 by 16 results in registers.  */
static inline __attribute__ ((always_inline)) void
x32_amx (int64_t k, int64_t j0, int64_t nj, const unsigned char *t, int ny,
         const void *const *y, float *out, const int mins)
{
  _Alignas (64) int32_t sums[2][16][16];
  _Alignas (64) int8_t rows[2][16 * 32];
  ptrdiff_t even = ny > 1 ? (const char *) y[1] - (const char *) y[0] : 0;

  for (int c = 2; c < ny && even; c++)
    if ((const char *) y[c] - (const char *) y[c - 1] != even)
      even = 0;
  if (nj <= 0)
    return;
  x32_amx_configure ();
  for (int c0 = 0; c0 < ny; c0 += 16)
    {
      const int nc = ny - c0 < 16 ? ny - c0 : 16;
      const float *dy[16], *sy[16];

      for (int r = 0; r < 16; r++)
        {
          const void *yr = y[c0 + (r < nc ? r : nc - 1)];
          dy[r] = tsr_cpu_qact_scales (yr, k);
          sy[r] = tsr_cpu_qact_sums (yr, k);
        }
      for (int h = 0; h < 2; h++)
        {
          __m512 acc[16];

          for (int r = 0; r < 16; r++)
            acc[r] = r < nc ? _mm512_loadu_ps (out + 32 * (c0 + r) + 16 * h)
                            : _mm512_setzero_ps ();
          /* Block j's steps wait on its stored sums: block j + 1's
             tile product is under way meanwhile.  */
          const int64_t end = j0 + nj;
          X32_AMX_TILES (0, 2, 4, j0);
          for (int64_t j = j0; j < end; j += 2)
            {
              if (j + 1 < end)
                X32_AMX_TILES (1, 3, 5, j + 1);
              X32_AMX_STEPS (0, j);
              if (j + 1 >= end)
                break;
              if (j + 2 < end)
                X32_AMX_TILES (0, 2, 4, j + 2);
              X32_AMX_STEPS (1, j + 1);
            }
          for (int r = 0; r < nc; r++)
            _mm512_storeu_ps (out + 32 * (c0 + r) + 16 * h, acc[r]);
        }
    }
  _tile_release ();
}

/* A kernel's work: the AMX tiles (their values signed: no offset).  */
static inline __attribute__ ((always_inline)) void
x32_kernel (int64_t k, int64_t j0, int64_t nj, const void *x, int ny,
            const void *const *y, float *acc, const int om, const int mins)
{
  (void) om;
  x32_amx (k, j0, nj, x, ny, y, acc, mins);
}
#else
/* A kernel's work: passes of up to X32_COLS columns.  */
#define X32_CALL(N)                                                     \
  x32_tile (k, j0, nj, x, N, y + c0, acc + 32 * c0, om, mins)
static inline __attribute__ ((always_inline)) void
x32_kernel (int64_t k, int64_t j0, int64_t nj, const void *x, int ny,
            const void *const *y, float *acc, const int om, const int mins)
{
  for (int c0 = 0; c0 < ny; c0 += X32_COLS)
    switch (ny - c0)
      {
      case 1: X32_CALL (1); break;
      case 2: X32_CALL (2); break;
      case 3: X32_CALL (3); break;
      default: X32_CALL (X32_COLS); break;
      }
}
#endif

#define X32_KERNEL(name, OM, MINS)                                      \
  void                                                                  \
  TSR_CPU_LEVEL_FN (name) (int64_t k, int64_t j0, int64_t nj,          \
                           const void *x, int ny, const void *const *y, \
                           float *acc)                                  \
  {                                                                     \
    x32_kernel (k, j0, nj, x, ny, y, acc, OM, MINS);                    \
  }

/* q4_0 (values 0..15, offset -8), q5_0 (0..31, -16), q8_0, iq4_nl and
   mxfp4 (values plus 128), q4_1 and q5_1 (no offset; minimums).  */
X32_KERNEL (vec_dot_x32o1_q8_0, 1, 0)
X32_KERNEL (vec_dot_x32o2_q8_0, 2, 0)
X32_KERNEL (vec_dot_x32o16_q8_0, 16, 0)
X32_KERNEL (vec_dot_x32m_q8_0, 0, 1)

void
TSR_CPU_LEVEL_FN (x32_from_x8) (tsr_type type, int64_t k, const void *x,
                                size_t gstride, int ng, int repacked,
                                void *dst)
{
  const struct x8_source d = x8_source_of (type, repacked);
  const int64_t nb = k / 32;
  const size_t gb = GROUP_BYTES_M (d.q8, d.ext, d.qm);
  const int mins = d.ext == TSR_CPU_X8_MINS;
  const unsigned char *src = x;

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
  const __m512i tv = x8_table512 (d.lut);
  /* Signed values for the tile multiplies: less the type's offset.  */
  const __m512i off = _mm512_set1_epi8 ((char) (X32_AMX ? 8 * d.om : 0));
  /* Lane l of a slab: lane 2l + h of the even group (l < 8), of the
     odd one (l >= 8).  */
  const __m512i idx[2] = {
    _mm512_set_epi32 (30, 28, 26, 24, 22, 20, 18, 16,
                      14, 12, 10, 8, 6, 4, 2, 0),
    _mm512_set_epi32 (31, 29, 27, 25, 23, 21, 19, 17,
                      15, 13, 11, 9, 7, 5, 3, 1)
  };
  for (int64_t j = 0; j < nb; j++)
    {
      unsigned char *o = (unsigned char *) dst + j * X32_BYTES (mins);
      __m512i w[4][4];
      for (int g = 0; g < 4; g++)
        {
          const unsigned char *ob = src + g * gstride + j * gb;
          __m256 sc = _mm256_setzero_ps (), mn = _mm256_setzero_ps ();
          if (g < ng)
            {
              x8_values512 (ob, d.q8, d.ext, d.qm, d.lut, tv, w[g]);
              sc = x8_rows256 (ob, d.ext);
              if (mins)
                mn = x8_rows256 (ob + 16, 0);
            }
          else
            for (int s = 0; s < 4; s++)
              w[g][s] = _mm512_setzero_si512 ();
          _mm256_storeu_ps ((float *) o + 8 * g, sc);
          if (mins)
            _mm256_storeu_ps ((float *) o + 32 + 8 * g, mn);
        }
      for (int sl = 0; sl < 2; sl++)
        for (int s = 0; s < 4; s++)
          for (int h = 0; h < 2; h++)
            _mm512_storeu_si512 (o + X32_VEC (mins) + 64 * (2 * (2 * s + h)
                                                            + sl),
                                 _mm512_sub_epi8 (_mm512_permutex2var_epi32
                                                    (w[2 * sl][s], idx[h],
                                                     w[2 * sl + 1][s]),
                                                  off));
    }
#else
  for (int64_t j = 0; j < nb; j++)
    {
      unsigned char *o = (unsigned char *) dst + j * X32_BYTES (mins);
      memset (o, 0, X32_BYTES (mins));
      for (int g = 0; g < ng; g++)
        {
          const unsigned char *ob = src + g * gstride + j * gb;
          for (int r = 0; r < 8; r++)
            {
              const int row = 8 * g + r;
              float f = x8_scale_ref (&d, ob, r);
              memcpy (o + 4 * row, &f, sizeof f);
              if (mins)
                {
                  f = fp16_to_f32 (load_fp16 ((const char *) ob + 16
                                              + 2 * r));
                  memcpy (o + 128 + 4 * row, &f, sizeof f);
                }
              for (int e = 0; e < 32; e++)
                o[X32_VEC (mins) + 64 * (2 * (e / 4) + row / 16)
                  + 4 * (row % 16) + e % 4]
                  = (unsigned char) (x8_value_ref (&d, ob, r, e)
                                     - (X32_AMX ? 8 * d.om : 0));
            }
        }
    }
#endif
}

/* Plain rows into one group of the layout, for products of weights
   that are not stored repacked (cpu-ops-matmul.c): the group the
   buffer type would have made of q4_0 and q8_0 rows, and for the other
   blocks of 32 the layout struct tsr_cpu_x8_layout gives them (the
   values as the kernels take them: q5_0's and q5_1's 5-bit values,
   iq4_nl's and mxfp4's table values plus 128), so that the same
   kernels, and the same order of additions, serve them.  Rows NR .. 7
   of the group are zero.  The reference, every value one by one.  */
static inline void
x8_pack_ref (tsr_type type, int64_t k, const unsigned char *x, size_t bx,
             int nr, unsigned char *dst)
{
  const int64_t nb = k / 32;
  const struct tsr_cpu_x8_layout d = tsr_cpu_x8_layout_of (type);
  const int8_t *table = x8_table_of (type);
  const int vo = GROUP_VEC (d.ext);
  for (int64_t j = 0; j < nb; j++)
    {
      unsigned char *o = dst + j * GROUP_BYTES (d.q8, d.ext);
      memset (o, 0, (size_t) vo);
      for (int r = 0; r < ROWS; r++)
        {
          const unsigned char *blk = x + (size_t) r * bx + j * d.bb;
          unsigned char v[32];
          memset (v, 0, sizeof v);
          if (r < nr)
            {
              x8_scale_into (&d, blk, r, o);
              for (int e = 0; e < 32; e++)
                {
                  int nib = e < 16 ? blk[d.qs + e] & 15
                                   : blk[d.qs + e - 16] >> 4;
                  if (x8_bytes (&d, table))
                    v[e] = (unsigned char) (blk[d.qs + e] ^ 0x80);
                  else if (d.qh >= 0)
                    v[e] = (unsigned char) (nib | ((load_le32 ((const char *)
                                                               blk + d.qh)
                                                    >> e) & 1) << 4);
                  else if (table)
                    v[e] = (unsigned char) (table[nib] + 128);
                  else
                    v[e] = (unsigned char) nib;
                }
            }
          for (int h = 0; h < 2; h++)
            for (int b = 0; b < 4; b++)
              {
                int at = (2 * r + h) * 4 + b, e = 4 * h + b;
                if (d.q8)
                  for (int s8 = 0; s8 < 4; s8++)
                    o[vo + 64 * s8 + at] = v[8 * s8 + e];
                else
                  {
                    o[vo + at] = (unsigned char) (v[e] | v[8 + e] << 4);
                    o[vo + 64 + at] = (unsigned char) (v[16 + e]
                                                       | v[24 + e] << 4);
                  }
              }
        }
    }
}

#if defined(__AVX2__) && !defined(__AVX512BW__)
/* Rows 4H .. 4H + 3 of x8_plain512's vectors: their bytes 32H ..
   32H + 31.  */
static inline __attribute__ ((always_inline)) void
x8_plain256 (const struct tsr_cpu_x8_layout *d, const int8_t *table,
             const unsigned char *x, size_t bx, int64_t j, int h, __m256i *w)
{
  const __m256i m4 = _mm256_set1_epi8 (15), top = _mm256_set1_epi8 (-128);
  const unsigned char *p = x + (size_t) (4 * h) * bx + j * d->bb + d->qs;
  if (x8_bytes (d, table))
    {
      /* A 4 x 4 transpose of quadwords.  */
      __m256i r[4];
      for (int i = 0; i < 4; i++)
        r[i] = _mm256_loadu_si256 ((const __m256i *) (p + i * bx));
      __m256i t0 = _mm256_unpacklo_epi64 (r[0], r[1]);
      __m256i t1 = _mm256_unpackhi_epi64 (r[0], r[1]);
      __m256i t2 = _mm256_unpacklo_epi64 (r[2], r[3]);
      __m256i t3 = _mm256_unpackhi_epi64 (r[2], r[3]);
      w[0] = _mm256_xor_si256 (_mm256_permute2x128_si256 (t0, t2, 0x20), top);
      w[1] = _mm256_xor_si256 (_mm256_permute2x128_si256 (t1, t3, 0x20), top);
      w[2] = _mm256_xor_si256 (_mm256_permute2x128_si256 (t0, t2, 0x31), top);
      w[3] = _mm256_xor_si256 (_mm256_permute2x128_si256 (t1, t3, 0x31), top);
      return;
    }
  __m256i x01 = _mm256_loadu2_m128i ((const __m128i *) (p + bx),
                                     (const __m128i *) p);
  __m256i x23 = _mm256_loadu2_m128i ((const __m128i *) (p + 3 * bx),
                                     (const __m128i *) (p + 2 * bx));
  __m256i a = _mm256_permute4x64_epi64 (_mm256_unpacklo_epi64 (x01, x23),
                                        0xd8);
  __m256i b = _mm256_permute4x64_epi64 (_mm256_unpackhi_epi64 (x01, x23),
                                        0xd8);
  w[0] = _mm256_and_si256 (a, m4);
  w[1] = _mm256_and_si256 (b, m4);
  w[2] = _mm256_and_si256 (_mm256_srli_epi16 (a, 4), m4);
  w[3] = _mm256_and_si256 (_mm256_srli_epi16 (b, 4), m4);
  if (d->qh >= 0)
    {
      /* The fifth bits, as x8_plain512's: bit 8i + b of M[s] for byte
         b of row i's quadword, spread to bytes of 16.  */
      const __m256i spread = _mm256_set_epi64x (0x0303030303030303,
                                                0x0202020202020202,
                                                0x0101010101010101, 0);
      const __m256i bit = _mm256_set1_epi64x ((int64_t) 0x8040201008040201);
      const __m256i sixteen = _mm256_set1_epi8 (16);
      uint32_t mq[4] = { 0, 0, 0, 0 };
      for (int i = 0; i < 4; i++)
        {
          uint32_t qh = load_le32 ((const char *) x + (size_t) (4 * h + i)
                                   * bx + j * d->bb + d->qh);
          for (int s = 0; s < 4; s++)
            mq[s] |= ((qh >> 8 * s) & 255) << 8 * i;
        }
      for (int s = 0; s < 4; s++)
        {
          __m256i v = _mm256_and_si256 (_mm256_shuffle_epi8
                                        (_mm256_set1_epi32 ((int) mq[s]),
                                         spread), bit);
          w[s] = _mm256_or_si256 (w[s], _mm256_and_si256
                                          (_mm256_cmpeq_epi8 (v, bit),
                                           sixteen));
        }
    }
  else if (table)
    {
      const __m256i tv = _mm256_broadcastsi128_si256
                           (_mm_loadu_si128 ((const __m128i *) table));
      for (int s = 0; s < 4; s++)
        w[s] = _mm256_add_epi8 (_mm256_shuffle_epi8 (tv, w[s]), top);
    }
}
#endif

#if defined(__AVX2__)
/* 8 rows: each block's vectors built in registers (x8_plain512, or
   x8_plain256 a half at a time) and stored.  */
static void
x8_pack_vec (tsr_type type, int64_t k, const unsigned char *x, size_t bx,
             unsigned char *dst)
{
  const int64_t nb = k / 32;
  const struct tsr_cpu_x8_layout d = tsr_cpu_x8_layout_of (type);
  const int8_t *table = x8_table_of (type);
  const int vo = GROUP_VEC (d.ext);
  const size_t bb = (size_t) d.bb;
  for (int64_t j = 0; j < nb; j++)
    {
      unsigned char *o = dst + j * GROUP_BYTES (d.q8, d.ext);
      /* The rows stream from memory side by side: each prefetched
         ahead, a line at a time (the hardware alone left the packing
         waiting on memory: q8_0, 4096 x 14336, n = 4, 3.9 -> 1.9 ms).  */
      if ((j * bb) / 64 != ((j + 1) * bb) / 64 || j == 0)
        for (int r = 0; r < ROWS; r++)
          _mm_prefetch ((const char *) x + (size_t) r * bx + j * bb
                        + TSR_CPU_PREFETCH_AHEAD, _MM_HINT_T0);
      for (int r = 0; r < ROWS; r++)
        x8_scale_into (&d, x + (size_t) r * bx + j * bb, r, o);
#if defined(__AVX512BW__)
      __m512i w[4];
      x8_plain512 (&d, table, x, bx, j, w);
      if (d.q8)
        for (int s = 0; s < 4; s++)
          _mm512_storeu_si512 (o + vo + 64 * s, w[s]);
      else
        {
          _mm512_storeu_si512 (o + vo, _mm512_or_si512
                                       (w[0], _mm512_slli_epi16 (w[1], 4)));
          _mm512_storeu_si512 (o + vo + 64, _mm512_or_si512
                                            (w[2],
                                             _mm512_slli_epi16 (w[3], 4)));
        }
#else
      for (int h = 0; h < 2; h++)
        {
          __m256i w[4];
          x8_plain256 (&d, table, x, bx, j, h, w);
          if (d.q8)
            for (int s = 0; s < 4; s++)
              _mm256_storeu_si256 ((__m256i *) (o + vo + 64 * s + 32 * h),
                                   w[s]);
          else
            {
              _mm256_storeu_si256 ((__m256i *) (o + vo + 32 * h),
                                   _mm256_or_si256
                                   (w[0], _mm256_slli_epi16 (w[1], 4)));
              _mm256_storeu_si256 ((__m256i *) (o + vo + 64 + 32 * h),
                                   _mm256_or_si256
                                   (w[2], _mm256_slli_epi16 (w[3], 4)));
            }
        }
#endif
    }
}
#endif

void
TSR_CPU_LEVEL_FN (x8_pack) (tsr_type type, int64_t k, const void *x,
                            size_t bx, int nr, void *dst)
{
#if defined(__AVX2__)
  if (nr == ROWS)
    {
      x8_pack_vec (type, k, x, bx, dst);
      return;
    }
#endif
  x8_pack_ref (type, k, x, bx, nr, dst);
}

/* A repacked super-block of 8 rows: 8 x 144 bytes (q4_K) or 8 x 176
   (q5_K, Q5 set); where group J's two vectors of low nibbles lie: q4_K
   at 128 + 128 J, q5_K by pairs of groups of 320 bytes, the even
   group's vectors, the odd one's, then the pair's vector of fifth
   bits (K5_HIGH).  */
#define K4_BYTES(q5) ((q5) ? 176 : 144)
#define K4_VALUES(q5, j) \
  ((q5) ? TSR_CPU_X8_Q5K_VALUES (j) : TSR_CPU_X8_Q4K_VALUES (j))
#define K5_HIGH(j) TSR_CPU_X8_Q5K_HIGH (j)

/* q4_K repacked (cpu-repack.c) by q8_K activations (cpu-vec-k.h).  The
   scales and minimums of the 8 rows' super-block: byte J (< 8) of row
   R, from the three vectors of packed bytes.  */
static inline void
k4_scales (const unsigned char *o, int r, int *sc, int *m)
{
  const unsigned char *p0 = o + 32 + 4 * r, *p1 = o + 64 + 4 * r;
  const unsigned char *p2 = o + 96 + 4 * r;
  for (int j = 0; j < 4; j++)
    {
      sc[j] = p0[j] & 63;
      m[j] = p1[j] & 63;
      sc[4 + j] = (p2[j] & 15) | (p0[j] >> 6) << 4;
      m[4 + j] = (p2[j] >> 4) | (p1[j] >> 6) << 4;
    }
}

/* acc + i f with one rounding where the level has a fused
   multiply-add: per super-block, as every kernel of the super-block
   types steps (cpu-vec-k.h).  */
static inline float
k_step (float acc, int32_t i, float f)
{
#if defined(FP_FAST_FMAF)
  return fmaf ((float) i, f, acc);
#else
  return (float) i * f + acc;
#endif
}

/* The reference: per super-block the exact integers I = sum_j sc_j S_j
   and B = sum_j m_j A_j (S_j the integer dot of group j, A_j its
   activation sum), then acc = fma (I, d dy, acc), acc = fma (B, -dmin
   dy, acc).  */
static inline void
k4_group_ref (int64_t k, const unsigned char *g, const int NY,
              const void *const *y, float *out, int ny_out, const int q5)
{
  const int64_t nb = k / 256;
  float acc[ROWS][TSR_CPU_QDOT_MAX_COLS] = { { 0 } };

  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o = g + i * ROWS * K4_BYTES (q5);
      for (int r = 0; r < ROWS; r++)
        {
          int sc[8], m[8];
          float d = fp16_to_f32 (load_fp16 ((const char *) o + 2 * r));
          float dmin = fp16_to_f32 (load_fp16 ((const char *) o + 16
                                               + 2 * r));
          k4_scales (o, r, sc, m);
          for (int c = 0; c < NY; c++)
            {
              const int8_t *a = (const int8_t *) y[c] + 256 * i;
              const int16_t *bs = tsr_cpu_kact_sums (y[c], k) + 16 * i;
              int32_t sum = 0, msum = 0;
              for (int j = 0; j < 8; j++)
                {
                  const unsigned char *v = o + K4_VALUES (q5, j);
                  const unsigned char *vh = o + K5_HIGH (j);
                  int32_t sj = 0;
                  for (int h = 0; h < 2; h++)
                    for (int b = 0; b < 4; b++)
                      {
                        int lane = (2 * r + h) * 4 + b, e = 4 * h + b;
                        const int8_t *aj = a + 32 * j;
                        /* q5_K's fifth bits, of the 4 values at bits
                           0..3 (even groups) or 4..7 (odd ones).  */
                        int hb = q5 ? vh[lane] >> 4 * (j % 2) : 0;
                        sj += ((v[lane] & 15) | (hb & 1) << 4) * aj[e]
                              + ((v[lane] >> 4) | (hb >> 1 & 1) << 4)
                                * aj[8 + e]
                              + ((v[64 + lane] & 15) | (hb >> 2 & 1) << 4)
                                * aj[16 + e]
                              + ((v[64 + lane] >> 4) | (hb >> 3 & 1) << 4)
                                * aj[24 + e];
                      }
                  sum += sc[j] * sj;
                  msum += m[j] * (bs[2 * j] + bs[2 * j + 1]);
                }
              float dy = tsr_cpu_kact_scales (y[c], k)[i];
              acc[r][c] = k_step (k_step (acc[r][c], sum, d * dy), msum,
                                  -dmin * dy);
            }
        }
    }
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < NY; c++)
      out[r * ny_out + c] = acc[r][c];
}

#if defined(__AVX512BW__)
/* S plus two step sums: W0 with the 8 activation bytes at A, W1 with
   the 8 at A + 8 (the 16 elements of a group of 16, two lanes a
   row).  */
static inline __attribute__ ((always_inline)) __m512i
k_sum2_512 (__m512i s, __m512i w0, __m512i w1, const int8_t *a)
{
  __m512i a0 = _mm512_set1_epi64 (load_i64 (a));
  __m512i a1 = _mm512_set1_epi64 (load_i64 (a + 8));
#if defined(__AVX512VNNI__)
  return _mm512_dpbusd_epi32 (_mm512_dpbusd_epi32 (s, w0, a0), w1, a1);
#else
  return _mm512_add_epi32 (s, qdot_sum2_512 (w0, a0, w1, a1, 1));
#endif
}

/* One group's 4 step sums from zero.  */
static inline __attribute__ ((always_inline)) __m512i
k4_sum512 (__m512i w0, __m512i w1, __m512i w2, __m512i w3, const int8_t *a)
{
  return k_sum2_512 (k_sum2_512 (_mm512_setzero_si512 (), w0, w1, a),
                     w2, w3, a + 16);
}

/* The activation group sums A_j (j < 8) of super-block I of a q8_K row
   Y, as int16 in two 64-bit values broadcast: *EVEN = A0, A2, A4, A6
   and *ODD = A1, A3, A5, A7 (low to high), matching the minimum pairs
   below: the row's sums of 32 (BS32, at the super-block), which are
   laid out so.  */
static inline __attribute__ ((always_inline)) void
k4_act_sums (const int16_t *bs32, __m512i *even, __m512i *odd)
{
  int64_t e, o;
  memcpy (&e, bs32, 8);
  memcpy (&o, bs32 + 4, 8);
  *even = _mm512_set1_epi64 (e);
  *odd = _mm512_set1_epi64 (o);
}

/* Rows' lane pairs (2r, 2r + 1) of X summed, as the 8 rows' floats.  */
static inline __m256
k_rows_ps (__m512i x)
{
  return _mm256_cvtepi32_ps (_mm512_cvtepi64_epi32
                             (_mm512_add_epi32 (x, _mm512_srli_epi64 (x,
                                                                      32))));
}

/* ACC + I F for the 8 rows, one rounding each: I the rows' exact
   integers (lanes 2r and 2r + 1 of TT summed), F = DW DY (their d
   times the activations' scale).  */
static inline __attribute__ ((always_inline)) __m256
k_step256 (__m256 acc, __m512i tt, __m256 dw, float dy)
{
  return _mm256_fmadd_ps (k_rows_ps (tt), _mm256_mul_ps
                                            (dw, _mm256_set1_ps (dy)), acc);
}

/* Row r's result of column c: lane r of ACC[c].  */
static inline __attribute__ ((always_inline)) void
k_store256 (const __m256 *acc, const int NY, float *out, int ny_out)
{
  for (int c = 0; c < NY; c++)
    {
      float l[ROWS];
      _mm256_storeu_ps (l, acc[c]);
      for (int r = 0; r < ROWS; r++)
        out[r * ny_out + c] = l[r];
    }
}

static inline __attribute__ ((always_inline)) void
k4_group (int64_t k, const unsigned char *g, const int NY,
          const void *const *y, float *out, int ny_out, const int q5)
{
  const int64_t nb = k / 256;
  const __m512i m4 = _mm512_set1_epi8 (15);
  const __m512i pairs = _mm512_set_epi32 (7, 7, 6, 6, 5, 5, 4, 4,
                                          3, 3, 2, 2, 1, 1, 0, 0);
  /* Lane 2r: row r of the first source, lane 2r + 1: of the second.  */
  const __m512i rows2 = _mm512_set_epi32 (23, 7, 22, 6, 21, 5, 20, 4,
                                          19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i byte = _mm512_set1_epi32 (0xff);
  const __m512i lo16 = _mm512_set1_epi32 (0x00ff00ff);
  const __m256i low6 = _mm256_set1_epi32 (0x3f3f3f3f);
  const __m256i low4 = _mm256_set1_epi32 (0x0f0f0f0f);
  const __m256i top2 = _mm256_set1_epi32 (0x03030303);
  const int8_t *q[TSR_CPU_QDOT_MAX_COLS];
  const int16_t *bs[TSR_CPU_QDOT_MAX_COLS];
  const float *dy[TSR_CPU_QDOT_MAX_COLS];
  __m256 acc[TSR_CPU_QDOT_MAX_COLS];

  qdot_kcolumns (k, NY, y, q, bs, dy, acc);
  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o = g + i * ROWS * K4_BYTES (q5);
      __m512i t[TSR_CPU_QDOT_MAX_COLS];
      qdot_prefetch_ny ((const char *) o, ROWS * K4_BYTES (q5), NY);
      const __m256 dw = _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) o));
      const __m256 dmw = _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *)
                                                           (o + 16)));
      __m256i p0 = _mm256_loadu_si256 ((const __m256i *) (o + 32));
      __m256i p1 = _mm256_loadu_si256 ((const __m256i *) (o + 64));
      __m256i p2 = _mm256_loadu_si256 ((const __m256i *) (o + 96));
      __m256i sc03 = _mm256_and_si256 (p0, low6);
      __m256i m03 = _mm256_and_si256 (p1, low6);
      __m256i sc47 = _mm256_or_si256
        (_mm256_and_si256 (p2, low4),
         _mm256_slli_epi32 (_mm256_and_si256 (_mm256_srli_epi32 (p0, 6),
                                              top2), 4));
      __m256i m47 = _mm256_or_si256
        (_mm256_and_si256 (_mm256_srli_epi32 (p2, 4), low4),
         _mm256_slli_epi32 (_mm256_and_si256 (_mm256_srli_epi32 (p1, 6),
                                              top2), 4));
      /* Scales: lanes 2r and 2r + 1 hold row r's 4 scale bytes (groups
         0..3, resp. 4..7).  Minimums: lane 2r + h holds row r's
         minimums of groups 4h .. 4h + 3, as int16 pairs (m_4h, m_4h+2)
         in MEVEN and (m_4h+1, m_4h+3) in MODD.  */
      __m512i s03 = _mm512_permutexvar_epi32 (pairs,
                                              _mm512_castsi256_si512 (sc03));
      __m512i s47 = _mm512_permutexvar_epi32 (pairs,
                                              _mm512_castsi256_si512 (sc47));
      __m512i mi = _mm512_permutex2var_epi32 (_mm512_castsi256_si512 (m03),
                                              rows2,
                                              _mm512_castsi256_si512 (m47));
      __m512i meven = _mm512_and_si512 (mi, lo16);
      __m512i modd = _mm512_and_si512 (_mm512_srli_epi32 (mi, 8), lo16);

      TSR_CPU_UNROLL
      for (int c = 0; c < NY; c++)
        t[c] = _mm512_setzero_si512 ();
      /* By pairs of groups (q5_K's share a vector of fifth bits), the
         pair's two unrolled: J's parity known, the offsets constant.  */
      for (int jp = 0; jp < 8; jp += 2)
      _Pragma ("GCC unroll 2")
      for (int j = jp; j < jp + 2; j++)
        {
          const unsigned char *v = o + K4_VALUES (q5, j);
          __m512i v0 = _mm512_loadu_si512 (v);
          __m512i v1 = _mm512_loadu_si512 (v + 64);
          QDOT_IN_REG (v0);
          QDOT_IN_REG (v1);
          __m512i w0 = _mm512_and_si512 (v0, m4);
          __m512i w1 = _mm512_and_si512 (_mm512_srli_epi16 (v0, 4), m4);
          __m512i w2 = _mm512_and_si512 (v1, m4);
          __m512i w3 = _mm512_and_si512 (_mm512_srli_epi16 (v1, 4), m4);
          if (q5)
            {
              /* The fifth bits to bit 4 (16-bit shifts; the mask drops
                 what crossed bytes): bits 0..3 of the pair's vector
                 for an even group, 4..7 for an odd one.  */
              const __m512i m10 = _mm512_set1_epi8 (0x10);
              __m512i vh = _mm512_loadu_si512 (o + K5_HIGH (j));
              QDOT_IN_REG (vh);
              if (j % 2)
                vh = _mm512_srli_epi16 (vh, 4);
              w0 = _mm512_or_si512 (w0, _mm512_and_si512
                                          (_mm512_slli_epi16 (vh, 4), m10));
              w1 = _mm512_or_si512 (w1, _mm512_and_si512
                                          (_mm512_slli_epi16 (vh, 3), m10));
              w2 = _mm512_or_si512 (w2, _mm512_and_si512
                                          (_mm512_slli_epi16 (vh, 2), m10));
              w3 = _mm512_or_si512 (w3, _mm512_and_si512
                                          (_mm512_slli_epi16 (vh, 1), m10));
            }
          /* The group's scale of each row in the low half of its lanes:
             the int16 multiplier of the group sum (16 products of 4-bit
             values by bytes: within int16).  */
          __m512i sci = _mm512_and_si512 (_mm512_srli_epi32 (j < 4 ? s03
                                                                    : s47,
                                                             8 * (j % 4)),
                                          byte);

          TSR_CPU_UNROLL
          for (int c = 0; c < NY; c++)
            {
              __m512i sj = k4_sum512 (w0, w1, w2, w3, q[c] + 256 * i + 32 * j);
              /* q5_K's 16 products of 5-bit values by bytes outgrow
                 int16: the scale in int32 (vpmulld).  */
              if (q5)
                t[c] = _mm512_add_epi32 (t[c], _mm512_mullo_epi32 (sj, sci));
              else
#if defined(__AVX512VNNI__)
                t[c] = _mm512_dpwssd_epi32 (t[c], sj, sci);
#else
                t[c] = _mm512_add_epi32 (t[c], _mm512_madd_epi16 (sj, sci));
#endif
            }
        }
      TSR_CPU_UNROLL
      for (int c = 0; c < NY; c++)
        {
          __m512i ve, vo;
          k4_act_sums (tsr_cpu_kact_sums32 (y[c], k) + 8 * i, &ve, &vo);
#if defined(__AVX512VNNI__)
          __m512i mm = _mm512_dpwssd_epi32 (_mm512_dpwssd_epi32
                                            (_mm512_setzero_si512 (),
                                             meven, ve), modd, vo);
#else
          __m512i mm = _mm512_add_epi32 (_mm512_madd_epi16 (meven, ve),
                                         _mm512_madd_epi16 (modd, vo));
#endif
          __m256 dyc = _mm256_set1_ps (dy[c][i]);
          acc[c] = _mm256_fmadd_ps (k_rows_ps (t[c]), _mm256_mul_ps (dw, dyc),
                                    acc[c]);
          acc[c] = _mm256_fnmadd_ps (k_rows_ps (mm), _mm256_mul_ps (dmw, dyc),
                                     acc[c]);
        }
    }
  k_store256 (acc, NY, out, ny_out);
}
#else
#define k4_group k4_group_ref
#endif

#define K4_GROUP(N) k4_group (k, g, N, y, o, ny, 0)
#define K5_GROUP(N) k4_group (k, g, N, y, o, ny, 1)

void
TSR_CPU_LEVEL_FN (vec_dot_q4_Kx8_q8_K) (int64_t k, const void *x, size_t bx,
                                        int nr, int ny, const void *const *y,
                                        float *out)
{
  X8_ROWS (K4_GROUP)
}

void
TSR_CPU_LEVEL_FN (vec_dot_q5_Kx8_q8_K) (int64_t k, const void *x, size_t bx,
                                        int nr, int ny, const void *const *y,
                                        float *out)
{
  X8_ROWS (K5_GROUP)
}

/* iq4_xs repacked (cpu-repack.c) by q8_K activations: per super-block
   of 8 rows (1088 bytes) the 8 f16 d at 0, the rows' 4 bytes of low
   scale bits at 16 + 4r, their 2 bytes of high scale bits at 48 + 2r,
   then group j's two vectors of nibbles, laid out as q4_0's, at 64 +
   128j.  Per super-block: I = sum_j sc_j (S_j - 128 A_j), S_j the
   integer dot of the table values plus 128 (1..241) with the
   activations, A_j their sum; then acc = fma (I, d dy, acc): the
   integers and the step of the packed plain super-blocks
   (cpu-vec-k.h).  */
#define XS_BYTES 136
#define XS_VALUES(j) (64 + 128 * (j))

/* Row R's signed scale of group J (stored plus 32 in 6 bits).  */
static inline int
xs_scale (const unsigned char *o, int r, int j)
{
  int lo = o[16 + 4 * r + j / 2] >> 4 * (j % 2) & 15;
  int hi = (o[48 + 2 * r] | o[49 + 2 * r] << 8) >> 2 * j & 3;
  return (lo | hi << 4) - 32;
}

static inline void
xs_group_ref (int64_t k, const unsigned char *g, const int NY,
              const void *const *y, float *out, int ny_out)
{
  const int64_t nb = k / 256;
  float acc[ROWS][TSR_CPU_QDOT_MAX_COLS] = { { 0 } };

  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o = g + i * ROWS * XS_BYTES;
      for (int r = 0; r < ROWS; r++)
        {
          float d = fp16_to_f32 (load_fp16 ((const char *) o + 2 * r));
          for (int c = 0; c < NY; c++)
            {
              const int8_t *a = (const int8_t *) y[c] + 256 * i;
              const int16_t *bs = tsr_cpu_kact_sums (y[c], k) + 16 * i;
              int32_t sum = 0;
              for (int j = 0; j < 8; j++)
                {
                  const unsigned char *v = o + XS_VALUES (j);
                  int32_t sj = 0;
                  for (int h = 0; h < 2; h++)
                    for (int b = 0; b < 4; b++)
                      {
                        int lane = (2 * r + h) * 4 + b, e = 4 * h + b;
                        const int8_t *aj = a + 32 * j;
                        int n[4] = { v[lane] & 15, v[lane] >> 4,
                                     v[64 + lane] & 15, v[64 + lane] >> 4 };
                        for (int q = 0; q < 4; q++)
                          sj += (tsr_cpu_iq4nl_values[n[q]] + 128)
                                * aj[8 * q + e];
                      }
                  sum += xs_scale (o, r, j)
                         * (sj - 128 * (bs[2 * j] + bs[2 * j + 1]));
                }
              float dy = tsr_cpu_kact_scales (y[c], k)[i];
              acc[r][c] = k_step (acc[r][c], sum, d * dy);
            }
        }
    }
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < NY; c++)
      out[r * ny_out + c] = acc[r][c];
}

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
static inline __attribute__ ((always_inline)) void
xs_group (int64_t k, const unsigned char *g, const int NY,
          const void *const *y, float *out, int ny_out)
{
  const int64_t nb = k / 256;
  const __m512i m4 = _mm512_set1_epi8 (15);
  const __m512i pairs = _mm512_set_epi32 (7, 7, 6, 6, 5, 5, 4, 4,
                                          3, 3, 2, 2, 1, 1, 0, 0);
  const __m256i low4 = _mm256_set1_epi8 (15);
  /* The table values plus 128, unsigned, in every 128-bit lane.  */
  const __m512i tv = _mm512_add_epi8 (_mm512_broadcast_i32x4
                                      (_mm_loadu_si128 ((const __m128i *)
                                                        tsr_cpu_iq4nl_values)),
                                      _mm512_set1_epi8 ((char) 0x80));
  const int8_t *q[TSR_CPU_QDOT_MAX_COLS];
  const int16_t *bs[TSR_CPU_QDOT_MAX_COLS];
  const float *dy[TSR_CPU_QDOT_MAX_COLS];
  __m256 acc[TSR_CPU_QDOT_MAX_COLS];

  qdot_kcolumns (k, NY, y, q, bs, dy, acc);
  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o = g + i * ROWS * XS_BYTES;
      __m512i t[TSR_CPU_QDOT_MAX_COLS];
      qdot_prefetch_ny ((const char *) o, ROWS * XS_BYTES, NY);
      const __m256 dw = _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) o));
      /* The 8 rows' scales, dword r of EV holding row r's of groups 0,
         2, 4, 6 and of OD those of 1, 3, 5, 7, as signed bytes: the
         low nibbles, then each row's 16 high bits spread a nibble a
         byte (groups 2k and 2k + 1 in nibble k).  */
      __m256i l = _mm256_loadu_si256 ((const __m256i *) (o + 16));
      __m256i h = _mm256_cvtepu16_epi32 (_mm_loadu_si128
                                         ((const __m128i *) (o + 48)));
      h = _mm256_or_si256
        (_mm256_or_si256 (_mm256_and_si256 (h, _mm256_set1_epi32 (0xf)),
                          _mm256_slli_epi32 (_mm256_and_si256
                                             (h, _mm256_set1_epi32 (0xf0)),
                                             4)),
         _mm256_or_si256 (_mm256_slli_epi32 (_mm256_and_si256
                                             (h, _mm256_set1_epi32 (0xf00)),
                                             8),
                          _mm256_slli_epi32 (_mm256_and_si256
                                             (h, _mm256_set1_epi32 (0xf000)),
                                             12)));
      const __m256i b32 = _mm256_set1_epi8 (32);
      __m256i ev = _mm256_sub_epi8
        (_mm256_or_si256 (_mm256_and_si256 (l, low4),
                          _mm256_slli_epi32 (_mm256_and_si256
                                             (h, _mm256_set1_epi8 (3)), 4)),
         b32);
      __m256i od = _mm256_sub_epi8
        (_mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi32 (l, 4), low4),
                          _mm256_slli_epi32 (_mm256_and_si256
                                             (h, _mm256_set1_epi8 (12)), 2)),
         b32);
      /* Lanes 2r and 2r + 1: row r's dword (for the group scales);
         as int16, lane 2r + h holds row r's pair (g_4h, g_4h+2) in SE,
         (g_4h+1, g_4h+3) in SO: k4_act_sums's order.  */
      const __m512i pe = _mm512_permutexvar_epi32
                           (pairs, _mm512_castsi256_si512 (ev));
      const __m512i po = _mm512_permutexvar_epi32
                           (pairs, _mm512_castsi256_si512 (od));
      const __m512i se = _mm512_cvtepi8_epi16 (ev);
      const __m512i so = _mm512_cvtepi8_epi16 (od);

      TSR_CPU_UNROLL
      for (int c = 0; c < NY; c++)
        t[c] = _mm512_setzero_si512 ();
      for (int jp = 0; jp < 8; jp += 2)
      _Pragma ("GCC unroll 2")
      for (int j = jp; j < jp + 2; j++)
        {
          const unsigned char *v = o + XS_VALUES (j);
          __m512i v0 = _mm512_loadu_si512 (v);
          __m512i v1 = _mm512_loadu_si512 (v + 64);
          QDOT_IN_REG (v0);
          QDOT_IN_REG (v1);
          __m512i w0 = _mm512_shuffle_epi8 (tv, _mm512_and_si512 (v0, m4));
          __m512i w1 = _mm512_shuffle_epi8
                         (tv, _mm512_and_si512 (_mm512_srli_epi16 (v0, 4),
                                                m4));
          __m512i w2 = _mm512_shuffle_epi8 (tv, _mm512_and_si512 (v1, m4));
          __m512i w3 = _mm512_shuffle_epi8
                         (tv, _mm512_and_si512 (_mm512_srli_epi16 (v1, 4),
                                                m4));
          /* Group j's scale of each row, sign-extended in its lanes.  */
          __m512i sci = _mm512_srai_epi32
                          (_mm512_slli_epi32 (j % 2 ? po : pe,
                                              24 - 8 * (j / 2)), 24);

          TSR_CPU_UNROLL
          for (int c = 0; c < NY; c++)
            {
              __m512i sj = k4_sum512 (w0, w1, w2, w3, q[c] + 256 * i + 32 * j);
              /* 16 products of values up to 241 by bytes: int32.  */
              t[c] = _mm512_add_epi32 (t[c], _mm512_mullo_epi32 (sj, sci));
            }
        }
      TSR_CPU_UNROLL
      for (int c = 0; c < NY; c++)
        {
          __m512i ae, ao;
          k4_act_sums (tsr_cpu_kact_sums32 (y[c], k) + 8 * i, &ae, &ao);
          __m512i off = _mm512_dpwssd_epi32 (_mm512_dpwssd_epi32
                                             (_mm512_setzero_si512 (), se,
                                              ae), so, ao);
          __m512i tt = _mm512_sub_epi32 (t[c], _mm512_slli_epi32 (off, 7));
          acc[c] = k_step256 (acc[c], tt, dw, dy[c][i]);
        }
    }
  k_store256 (acc, NY, out, ny_out);
}
#else
#define xs_group xs_group_ref
#endif

#define XS_GROUP(N) xs_group (k, g, N, y, o, ny)

void
TSR_CPU_LEVEL_FN (vec_dot_iq4_xsx8_q8_K) (int64_t k, const void *x,
                                          size_t bx, int nr, int ny,
                                          const void *const *y, float *out)
{
  X8_ROWS (XS_GROUP)
}

/* q6_K repacked (cpu-repack.c) by q8_K activations.  Per super-block:
   d dy (sum_g sc_g S_g - 32 sum_g sc_g A_g), S_g the integer dot of
   the stored values (0..63) of group g of 16 with the activations, A_g
   their sum (the q8_K row's sums of 16).  */
static inline void
k6_group_ref (int64_t k, const unsigned char *g, const int NY,
              const void *const *y, float *out, int ny_out)
{
  const int64_t nb = k / 256;
  float acc[ROWS][TSR_CPU_QDOT_MAX_COLS] = { { 0 } };

  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o = g + i * ROWS * 210;
      for (int r = 0; r < ROWS; r++)
        {
          int sc[16];
          float d = fp16_to_f32 (load_fp16 ((const char *) o + 2 * r));
          for (int s = 0; s < 4; s++)
            for (int h = 0; h < 2; h++)
              for (int b = 0; b < 2; b++)
                sc[8 * h + 2 * s + b]
                  = (int8_t) o[16 + 32 * s + 2 * (2 * r + h) + b];
          for (int c = 0; c < NY; c++)
            {
              const int8_t *a = (const int8_t *) y[c] + 256 * i;
              const int16_t *bs = tsr_cpu_kact_sums (y[c], k) + 16 * i;
              int32_t sum = 0, off = 0;
              for (int j = 0; j < 8; j++)
                {
                  const unsigned char *v = o + TSR_CPU_X8_Q6K_VALUES (j);
                  int32_t s2[2] = { 0, 0 };
                  for (int h = 0; h < 2; h++)
                    for (int b = 0; b < 4; b++)
                      {
                        int lane = (2 * r + h) * 4 + b, e = 4 * h + b;
                        int hb = v[128 + lane];
                        const int8_t *aj = a + 32 * j;
                        s2[0] += ((v[lane] & 15) | (hb & 3) << 4) * aj[e]
                                 + ((v[lane] >> 4) | (hb >> 2 & 3) << 4)
                                   * aj[8 + e];
                        s2[1] += ((v[64 + lane] & 15) | (hb >> 4 & 3) << 4)
                                   * aj[16 + e]
                                 + ((v[64 + lane] >> 4) | (hb >> 6) << 4)
                                   * aj[24 + e];
                      }
                  sum += sc[2 * j] * s2[0] + sc[2 * j + 1] * s2[1];
                }
              for (int q = 0; q < 16; q++)
                off += sc[q] * bs[q];
              float dy = tsr_cpu_kact_scales (y[c], k)[i];
              acc[r][c] = k_step (acc[r][c], sum - 32 * off, d * dy);
            }
        }
    }
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < NY; c++)
      out[r * ny_out + c] = acc[r][c];
}

#if defined(__AVX512BW__)
/* Rows' sums from a q6_K tile's lanes (k6_group): row 2l in dwords 4l
   and 4l + 2, row 2l + 1 in 4l + 1 and 4l + 3, as the 8 rows'
   floats.  */
static inline __m256
k6_rows_ps (__m512i x)
{
  const __m512i even_q = _mm512_set_epi64 (0, 0, 0, 0, 6, 4, 2, 0);
  x = _mm512_add_epi32 (x, _mm512_bsrli_epi128 (x, 8));
  return _mm256_cvtepi32_ps (_mm512_castsi512_si256
                             (_mm512_permutexvar_epi64 (even_q, x)));
}

/* Per group j of 32 (the scale groups 2j and 2j + 1 of 16) and column:
   two sums of 8 products a lane (row r in lanes 2r, 2r + 1), SA over
   group 2j and SB over 2j + 1, each starting from the activations'
   offset sums (cpu-vec-k.h), so they sum (stored - 32) y and stay
   within int16 (32 x 127 x 8); packed to words (vpackssdw, in 128-bit
   lanes: SA's 4 dwords, then SB's) and scaled by one vpdpwssd, whose
   pairs of words are one row's two halves with the same scale: dword
   4l + p of a 128-bit lane l then holds row 2l + p % 2, of group 2j
   (p < 2) or 2j + 1.  The scales are put in that order by one vpermw
   of the row's int16 scales.  6 multiplier operations for 4 vpdpbusd
   instead of 8 (two of them vpmulld), and no offset step per
   super-block: hot weights (2048 x 8192, two Zen 5 cores) at 8 columns
   763-770 -> 820-857 GFLOP/s, at 32 786-788 -> 830-870.  (Tried before
   with the offset sums computed here per super-block and column: 7-8%
   slower on rows of 2048.)  */
/* The vpermw indices of k6_group's scales, for H = j / 4: word 8l + 2p
   + e (e < 2) of the scales for pack (SA, SB) is row 2l + p % 2's
   scale of group 2j + (p >= 2), which is word 2 (2 row + H) + (p >= 2)
   of vector sc[j % 4].  */
static const int16_t k6_scale_words[2][32] = {
  { 0, 0, 4, 4, 1, 1, 5, 5, 8, 8, 12, 12, 9, 9, 13, 13,
    16, 16, 20, 20, 17, 17, 21, 21, 24, 24, 28, 28, 25, 25, 29, 29 },
  { 2, 2, 6, 6, 3, 3, 7, 7, 10, 10, 14, 14, 11, 11, 15, 15,
    18, 18, 22, 22, 19, 19, 23, 23, 26, 26, 30, 30, 27, 27, 31, 31 }
};

static inline __attribute__ ((always_inline)) void
k6_group (int64_t k, const unsigned char *g, const int NY,
          const void *const *y, float *out, int ny_out)
{
  const int64_t nb = k / 256;
  const __m512i m4 = _mm512_set1_epi8 (15);
  const __m512i m30 = _mm512_set1_epi8 (0x30);
  const __m512i sidx[2] = { _mm512_loadu_si512 (k6_scale_words[0]),
                            _mm512_loadu_si512 (k6_scale_words[1]) };
  const int8_t *q[TSR_CPU_QDOT_MAX_COLS];
  const int16_t *bs[TSR_CPU_QDOT_MAX_COLS];
  const int32_t *offs[TSR_CPU_QDOT_MAX_COLS];
  const float *dy[TSR_CPU_QDOT_MAX_COLS];
  __m256 acc[TSR_CPU_QDOT_MAX_COLS];

  qdot_kcolumns (k, NY, y, q, bs, dy, acc);
  TSR_CPU_UNROLL
  for (int c = 0; c < NY; c++)
    offs[c] = tsr_cpu_kact_offsets6 (y[c], k);
  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o = g + i * ROWS * 210;
      __m512i t[TSR_CPU_QDOT_MAX_COLS];
      __m512i sc[4];
      qdot_prefetch_ny ((const char *) o, ROWS * 210, NY);
      const __m256 dw = _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) o));
      /* Vector s: lane 2r + h holds row r's scales 8h + 2s and
         8h + 2s + 1 as int16.  */
      for (int s = 0; s < 4; s++)
        sc[s] = _mm512_cvtepi8_epi16 (_mm256_loadu_si256
                                      ((const __m256i *) (o + 16 + 32 * s)));
      TSR_CPU_UNROLL
      for (int c = 0; c < NY; c++)
        t[c] = _mm512_setzero_si512 ();
      for (int j = 0; j < 8; j++)
        {
          const unsigned char *v = o + TSR_CPU_X8_Q6K_VALUES (j);
          __m512i v0 = _mm512_loadu_si512 (v);
          __m512i v1 = _mm512_loadu_si512 (v + 64);
          __m512i vh = _mm512_loadu_si512 (v + 128);
          QDOT_IN_REG (v0);
          QDOT_IN_REG (v1);
          QDOT_IN_REG (vh);
          /* The 6-bit values: low nibble, then the high pair at bits
             4-5 (16-bit shifts; the mask drops what crossed bytes).  */
          __m512i w0 = _mm512_or_si512 (_mm512_and_si512 (v0, m4),
                                        _mm512_and_si512
                                        (_mm512_slli_epi16 (vh, 4), m30));
          __m512i w1 = _mm512_or_si512 (_mm512_and_si512
                                        (_mm512_srli_epi16 (v0, 4), m4),
                                        _mm512_and_si512
                                        (_mm512_slli_epi16 (vh, 2), m30));
          __m512i w2 = _mm512_or_si512 (_mm512_and_si512 (v1, m4),
                                        _mm512_and_si512 (vh, m30));
          __m512i w3 = _mm512_or_si512 (_mm512_and_si512
                                        (_mm512_srli_epi16 (v1, 4), m4),
                                        _mm512_and_si512
                                        (_mm512_srli_epi16 (vh, 2), m30));
          const __m512i scw = _mm512_permutexvar_epi16 (sidx[j / 4],
                                                        sc[j % 4]);

          TSR_CPU_UNROLL
          for (int c = 0; c < NY; c++)
            {
              const int8_t *a = q[c] + 256 * i + 32 * j;
              const int32_t *os = offs[c] + 32 * i + 4 * j;
              __m512i za, zb;
              qdot_offsets6_512 (os, &za, &zb);
              __m512i sa = k_sum2_512 (za, w0, w1, a);
              __m512i sb = k_sum2_512 (zb, w2, w3, a + 16);
              __m512i p = _mm512_packs_epi32 (sa, sb);
#if defined(__AVX512VNNI__)
              t[c] = _mm512_dpwssd_epi32 (t[c], p, scw);
#else
              t[c] = _mm512_add_epi32 (t[c], _mm512_madd_epi16 (p, scw));
#endif
            }
        }
      TSR_CPU_UNROLL
      for (int c = 0; c < NY; c++)
        acc[c] = _mm256_fmadd_ps (k6_rows_ps (t[c]),
                                  _mm256_mul_ps (dw, _mm256_set1_ps
                                                       (dy[c][i])), acc[c]);
    }
  k_store256 (acc, NY, out, ny_out);
}
#else
#define k6_group k6_group_ref
#endif

#define K6_GROUP(N) k6_group (k, g, N, y, o, ny)

void
TSR_CPU_LEVEL_FN (vec_dot_q6_Kx8_q8_K) (int64_t k, const void *x, size_t bx,
                                        int nr, int ny, const void *const *y,
                                        float *out)
{
  X8_ROWS (K6_GROUP)
}

int
TSR_CPU_LEVEL_FN (repack_level) (void)
{
#if defined(__AVX512BW__)
  return TSR_CPU_REPACK_Q4_0 | TSR_CPU_REPACK_Q4_K | TSR_CPU_REPACK_Q5_K
         | TSR_CPU_REPACK_Q5_0
         | TSR_CPU_REPACK_Q6_K
         | (X8_VNNI ? TSR_CPU_REPACK_IQ4_XS | TSR_CPU_REPACK_LUT : 0)
         | TSR_CPU_REPACK_PACK | TSR_CPU_REPACK_PACK_K
         | TSR_CPU_REPACK_PACK_K16
         | (X8_VNNI ? TSR_CPU_REPACK_Q8_0 | TSR_CPU_REPACK_X32 : 0)
         | (X32_AMX ? TSR_CPU_REPACK_AMX : 0);
#elif defined(__AVX2__)
  return TSR_CPU_REPACK_Q4_0 | TSR_CPU_REPACK_Q5_0 | TSR_CPU_REPACK_PACK
         | TSR_CPU_REPACK_PACK_K
         | (X8_VNNI ? TSR_CPU_REPACK_Q8_0 | TSR_CPU_REPACK_LUT : 0);
#else
  return 0;
#endif
}
