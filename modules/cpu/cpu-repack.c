/* cpu-repack.c - the CPU's repacked weight buffer type, "CPU_REPACK".
 *
 * A matrix of q4_0 or q4_1 (or, where the level has VNNI, q8_0; with
 * AVX-512BW also q5_0, q5_1, q4_K, q5_K and q6_K, with both iq4_nl,
 * mxfp4 and iq4_xs) weights whose rows come in multiples of 8 (dense,
 * 2 to 4 dimensions) is stored in this buffer with every 8 consecutive
 * rows interleaved block by block, so that the integer dots
 * (cpu-qdot-x8.c) load one 64-byte vector of weights for 8 rows at once
 * and reuse each activation load for all 8 (a register tile of 8 rows
 * by up to 8 columns).  A group of 8 rows
 * takes the bytes the 8 rows take in the plain layout; for each block
 * index j of the rows:
 *
 *   bytes 0..15     the 8 rows' f16 scales, row 0 first;
 *   then 64-byte vectors of 16 lanes of 4 bytes, lane 2r + h holding
 *   elements of row r (r < 8, h < 2): byte b of lane 2r + h holds
 *   - q4_0, two vectors (V0 at 16, V1 at 80; 144 bytes a block): in
 *     V0 the stored 4-bit value (0..15) of element 4h + b in the low
 *     nibble and of element 8 + 4h + b in the high nibble, in V1
 *     elements 16 + 4h + b and 24 + 4h + b.  (In a plain q4_0 block,
 *     element e < 16 is the low nibble of byte e, element e >= 16 the
 *     high nibble of byte e - 16.)
 *   - q8_0, four vectors (V0..V3 at 16, 80, 144, 208; 272 bytes a
 *     block): in Vs the value of element 8s + 4h + b plus 128, as an
 *     unsigned byte.
 * q4_1 (as q4_0, 160 bytes a block): the 8 rows' f16 minimums follow
 * their scales (at 16), then q4_0's two vectors (at 32 and 96) of its
 * stored nibbles.
 * iq4_nl (where the level has AVX-512BW and VNNI) as q4_0 (the
 * nibbles are indices into its value table); mxfp4 likewise, 136 bytes
 * a block: the 8 rows' E8M0 bytes, then q4_0's two vectors (at 8 and
 * 72).
 * q5_0 (where the level has AVX-512BW; 176 bytes a block) and q5_1
 * (192): q4_0's and q4_1's layouts with 32 bytes of fifth bits before
 * the vectors, as 4 masks of 64 bits: bit 8r + 4h + b of mask s (byte
 * r of mask s: byte s of row r's qh) is the fifth bit of element 8s +
 * 4h + b of row r, whose low 4 bits lane 2r + h, byte b of the vectors
 * holds.
 * q4_K (where the level has AVX-512BW), per super-block of 256 (1152
 * bytes): the 8 rows' f16 d at 0, their f16 dmin at 16, their 12 bytes
 * of packed scales and minimums as three vectors of 8 x 4 bytes (bytes
 * 0..3 of row r at 32 + 4r, 4..7 at 64 + 4r, 8..11 at 96 + 4r), then
 * per group j < 8 of 32 elements, at 128 + 128j, two vectors laid out
 * as q4_0's for the elements 32j .. 32j + 31 (the stored 4-bit values;
 * in a plain q4_K block element 32j + l is the low nibble of byte
 * 32 (j / 2) + l for even j, the high one for odd j).
 * q5_K (where the level has AVX-512BW), per super-block of 256 (1408
 * bytes): q4_K's first 128 bytes (d, dmin, the packed scales), then per
 * pair p < 4 of groups, at 128 + 320p, the even group's two vectors of
 * low nibbles laid out as q4_K's, the odd group's, and one vector of
 * fifth bits: byte b of lane 2r + h holds those of elements 32j + 4h +
 * b, + 8, + 16 and + 24 in bits 0..3 for j = 2p, in bits 4..7 for j =
 * 2p + 1 (in a plain q5_K block the fifth bit of element e is bit e / 32
 * of qh[e % 32]).
 * iq4_xs (where the level has AVX-512BW and VNNI), per super-block of
 * 256 (1088 bytes): the 8 rows' f16 d at 0, their 4 bytes of low scale
 * bits at 16 + 4r, their 2 bytes of high scale bits at 48 + 2r, then
 * per group j < 8 of 32 elements, at 64 + 128j, two vectors laid out
 * as q4_0's (the stored 4-bit indices into the value table; a plain
 * block's group j is laid out as a q4_0 block's values, at 8 + 16j).
 * q6_K (where the level has AVX-512BW), per super-block of 256 (1680
 * bytes): the 8 rows' f16 d at 0, their int8 scales at 16 as four
 * vectors of 32 bytes, vector s holding in bytes 2L and 2L + 1 (lane L
 * = 2r + h of 16 lanes of 2 bytes) scales 8h + 2s and 8h + 2s + 1 of
 * row r, then per group j < 8 of 32 elements, at 144 + 192j, three
 * vectors: two of the low 4 bits laid out as q4_0's for the elements
 * 32j .. 32j + 31, then one of the high 2 bits, byte b of lane 2r + h
 * holding those of elements 32j + 4h + b, + 8, + 16 and + 24 in bits
 * 0-1, 2-3, 4-5 and 6-7 (the stored 6-bit values, 0 to 63, are
 * element + 32).
 * So each vector of values (the low nibbles of V0, ...) is elements
 * 8s .. 8s + 7 of every row, two lanes a row, which one broadcast of 8
 * activation values feeds.
 *
 * Other tensors (other types, rows not a multiple of 8, strided
 * elements) are stored plain.  Reads and writes (tsr_tensor_get /
 * tsr_tensor_set) convert, so the layout is invisible to them: any
 * byte range of the plain layout may be read or written, a group that
 * is only partly written being read back, changed and packed again.
 * The buffer is not "host" memory to the core (the bytes are not the
 * tensor's plain bytes), so nothing reads them but this module; the CPU
 * backend computes mul_mat from them, and get_rows (a tied embedding
 * that is also the output matrix: tsr_cpu_repack_row_to_f32), and
 * refuses every other op that would read them (tsr_cpu_repacked,
 * cpu-ops.c).
 *
 * The buffer type is offered (tsr_device_extra_buffer_types) where the
 * CPU's ISA level has vector code for the repacked dots (AVX2 and
 * AVX-512; q8_0 with VNNI only: unsigned values up to 255 would
 * overflow pmaddubsw's pairs); the model loader puts the matrices it
 * repacks there (tsr_buffer_type_repacks).  */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "cpu-impl.h"

#define GROUP_ROWS TSR_CPU_REPACK_ROWS

/* Whether weights of TYPE, NE0 x NE1 (per matrix), are repacked.  */
static bool
repacks (tsr_type type, int64_t ne0, int64_t ne1)
{
  int level = tsr_cpu_repack_level ();
  return ne1 > 0 && ne1 % GROUP_ROWS == 0 && ne0 > 0 && ne0 % 32 == 0
         && (((type == TSR_TYPE_Q4_0 || type == TSR_TYPE_Q4_1)
              && (level & TSR_CPU_REPACK_Q4_0))
             || ((type == TSR_TYPE_Q5_0 || type == TSR_TYPE_Q5_1)
                 && (level & TSR_CPU_REPACK_Q5_0))
             || ((type == TSR_TYPE_IQ4_NL || type == TSR_TYPE_MXFP4)
                 && (level & TSR_CPU_REPACK_LUT))
             || (type == TSR_TYPE_Q8_0 && (level & TSR_CPU_REPACK_Q8_0))
             || (type == TSR_TYPE_Q4_K && ne0 % 256 == 0
                 && (level & TSR_CPU_REPACK_Q4_K))
             || (type == TSR_TYPE_Q5_K && ne0 % 256 == 0
                 && (level & TSR_CPU_REPACK_Q5_K))
             || (type == TSR_TYPE_IQ4_XS && ne0 % 256 == 0
                 && (level & TSR_CPU_REPACK_IQ4_XS))
             || (type == TSR_TYPE_Q6_K && ne0 % 256 == 0
                 && (level & TSR_CPU_REPACK_Q6_K)));
}

/* Whether T, in this buffer type, is stored repacked.  */
bool
tsr_cpu_repackable (const tsr_tensor *t)
{
  return repacks (t->type, t->ne[0], t->ne[1])
         && t->nb[0] == tsr_type_traits (t->type)->type_size
         && tsr_is_contiguous (t);
}

static inline int
nibble (const unsigned char *block, int e)
{
  const unsigned char *qs = block + 2;
  return e < 16 ? qs[e] & 15 : qs[e - 16] >> 4;
}

/* q4_K and q5_K: row R's d, dmin and 12 bytes of scales and minimums
   (the first 16 bytes of its plain block BLK) into the group's first
   128 bytes at O, or back.  */
static void
k4_head_pack (unsigned char *o, const unsigned char *blk, int r)
{
  memcpy (o + 2 * r, blk, 2);
  memcpy (o + 16 + 2 * r, blk + 2, 2);
  for (int w = 0; w < 3; w++)
    memcpy (o + 32 + 32 * w + 4 * r, blk + 4 + 4 * w, 4);
}

static void
k4_head_unpack (unsigned char *blk, const unsigned char *o, int r)
{
  memcpy (blk, o + 2 * r, 2);
  memcpy (blk + 2, o + 16 + 2 * r, 2);
  for (int w = 0; w < 3; w++)
    memcpy (blk + 4 + 4 * w, o + 32 + 32 * w + 4 * r, 4);
}

/* q4_K: 8 plain rows of NB super-blocks to one group, or back.  */
#define Q4K_BYTES 144
static void
pack_group_q4_K (unsigned char *dst, const unsigned char *src, size_t row,
                 int64_t nb)
{
  for (int64_t i = 0; i < nb; i++)
    {
      unsigned char *o = dst + i * GROUP_ROWS * Q4K_BYTES;
      for (int r = 0; r < GROUP_ROWS; r++)
        {
          const unsigned char *blk = src + r * row + i * Q4K_BYTES;
          const unsigned char *qs = blk + 16;
          k4_head_pack (o, blk, r);
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int b = 0; b < 4; b++)
                {
                  int at = (2 * r + h) * 4 + b, e = 4 * h + b;
                  int q[4];
                  for (int v = 0; v < 4; v++)
                    {
                      int byte = qs[32 * (j / 2) + 8 * v + e];
                      q[v] = j % 2 ? byte >> 4 : byte & 15;
                    }
                  o[TSR_CPU_X8_Q4K_VALUES (j) + at]
                    = (unsigned char) (q[0] | q[1] << 4);
                  o[TSR_CPU_X8_Q4K_VALUES (j) + 64 + at]
                    = (unsigned char) (q[2] | q[3] << 4);
                }
        }
    }
}

/* (The unpackers write rows R0 .. R1 - 1 of the group, row R at DST +
   (R - R0) ROW.)  */
static void
unpack_group_q4_K (unsigned char *dst, const unsigned char *src, size_t row,
                   int64_t nb, int r0, int r1)
{
  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o = src + i * GROUP_ROWS * Q4K_BYTES;
      for (int r = r0; r < r1; r++)
        {
          unsigned char *blk = dst + (r - r0) * row + i * Q4K_BYTES;
          unsigned char *qs = blk + 16;
          k4_head_unpack (blk, o, r);
          memset (qs, 0, 128);
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int b = 0; b < 4; b++)
                {
                  int at = (2 * r + h) * 4 + b, e = 4 * h + b;
                  int v0 = o[TSR_CPU_X8_Q4K_VALUES (j) + at];
                  int v1 = o[TSR_CPU_X8_Q4K_VALUES (j) + 64 + at];
                  int q[4] = { v0 & 15, v0 >> 4, v1 & 15, v1 >> 4 };
                  for (int v = 0; v < 4; v++)
                    qs[32 * (j / 2) + 8 * v + e]
                      |= (unsigned char) (j % 2 ? q[v] << 4 : q[v]);
                }
        }
    }
}

/* q5_K (176 bytes a plain block: d, dmin, 12 bytes of scales and
   minimums, 32 of fifth bits qh, 128 of nibbles qs): the fifth bit of
   element E is bit E / 32 of qh[E % 32], its low 4 bits those of q4_K's
   element E in qs.  */
#define Q5K_BYTES 176
#define Q5_NIB(j) TSR_CPU_X8_Q5K_VALUES (j)
#define Q5_HIGH(j) TSR_CPU_X8_Q5K_HIGH (j)

static void
pack_group_q5_K (unsigned char *dst, const unsigned char *src, size_t row,
                 int64_t nb)
{
  for (int64_t i = 0; i < nb; i++)
    {
      unsigned char *o = dst + i * GROUP_ROWS * Q5K_BYTES;
      for (int r = 0; r < GROUP_ROWS; r++)
        {
          const unsigned char *blk = src + r * row + i * Q5K_BYTES;
          const unsigned char *qh = blk + 16, *qs = blk + 48;
          k4_head_pack (o, blk, r);
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int b = 0; b < 4; b++)
                {
                  int at = (2 * r + h) * 4 + b, e = 4 * h + b;
                  int q[4], hb = 0;
                  for (int v = 0; v < 4; v++)
                    {
                      int byte = qs[32 * (j / 2) + 8 * v + e];
                      q[v] = j % 2 ? byte >> 4 : byte & 15;
                      hb |= (qh[8 * v + e] >> j & 1) << v;
                    }
                  o[Q5_NIB (j) + at] = (unsigned char) (q[0] | q[1] << 4);
                  o[Q5_NIB (j) + 64 + at] = (unsigned char) (q[2]
                                                             | q[3] << 4);
                  if (j % 2 == 0)
                    o[Q5_HIGH (j) + at] = (unsigned char) hb;
                  else
                    o[Q5_HIGH (j) + at] |= (unsigned char) (hb << 4);
                }
        }
    }
}

static void
unpack_group_q5_K (unsigned char *dst, const unsigned char *src, size_t row,
                   int64_t nb, int r0, int r1)
{
  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o = src + i * GROUP_ROWS * Q5K_BYTES;
      for (int r = r0; r < r1; r++)
        {
          unsigned char *blk = dst + (r - r0) * row + i * Q5K_BYTES;
          unsigned char *qh = blk + 16, *qs = blk + 48;
          k4_head_unpack (blk, o, r);
          memset (qh, 0, 160);
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int b = 0; b < 4; b++)
                {
                  int at = (2 * r + h) * 4 + b, e = 4 * h + b;
                  int v0 = o[Q5_NIB (j) + at], v1 = o[Q5_NIB (j) + 64 + at];
                  int hb = o[Q5_HIGH (j) + at] >> 4 * (j % 2);
                  int q[4] = { v0 & 15, v0 >> 4, v1 & 15, v1 >> 4 };
                  for (int v = 0; v < 4; v++)
                    {
                      qs[32 * (j / 2) + 8 * v + e]
                        |= (unsigned char) (j % 2 ? q[v] << 4 : q[v]);
                      qh[8 * v + e] |= (unsigned char) ((hb >> v & 1) << j);
                    }
                }
        }
    }
}

/* iq4_xs (136 bytes a plain block: d, 2 bytes of high scale bits, 4
   of low ones, then per group j of 32 the 16 bytes at 8 + 16j laid out
   as a q4_0 block's nibbles).  */
#define XS_BYTES 136

static void
pack_group_iq4_xs (unsigned char *dst, const unsigned char *src,
                   size_t row, int64_t nb)
{
  for (int64_t i = 0; i < nb; i++)
    {
      unsigned char *o = dst + i * GROUP_ROWS * XS_BYTES;
      for (int r = 0; r < GROUP_ROWS; r++)
        {
          const unsigned char *blk = src + r * row + i * XS_BYTES;
          memcpy (o + 2 * r, blk, 2);
          memcpy (o + 16 + 4 * r, blk + 4, 4);
          memcpy (o + 48 + 2 * r, blk + 2, 2);
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int b = 0; b < 4; b++)
                {
                  /* nibble () reads a q4_0 block's values after its
                     2-byte scale.  */
                  const unsigned char *g = blk + 8 + 16 * j - 2;
                  int at = (2 * r + h) * 4 + b, e = 4 * h + b;
                  unsigned char *v = o + TSR_CPU_X8_XS_VALUES (j);
                  v[at] = (unsigned char) (nibble (g, e)
                                           | nibble (g, 8 + e) << 4);
                  v[64 + at] = (unsigned char) (nibble (g, 16 + e)
                                                | nibble (g, 24 + e) << 4);
                }
        }
    }
}

static void
unpack_group_iq4_xs (unsigned char *dst, const unsigned char *src,
                     size_t row, int64_t nb, int r0, int r1)
{
  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o = src + i * GROUP_ROWS * XS_BYTES;
      for (int r = r0; r < r1; r++)
        {
          unsigned char *blk = dst + (r - r0) * row + i * XS_BYTES;
          memcpy (blk, o + 2 * r, 2);
          memcpy (blk + 4, o + 16 + 4 * r, 4);
          memcpy (blk + 2, o + 48 + 2 * r, 2);
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int b = 0; b < 4; b++)
                {
                  unsigned char *qs = blk + 8 + 16 * j;
                  int at = (2 * r + h) * 4 + b, e = 4 * h + b;
                  int v0 = o[TSR_CPU_X8_XS_VALUES (j) + at];
                  int v1 = o[TSR_CPU_X8_XS_VALUES (j) + 64 + at];
                  qs[e] = (unsigned char) ((v0 & 15) | (v1 & 15) << 4);
                  qs[8 + e] = (unsigned char) ((v0 >> 4) | (v1 >> 4) << 4);
                }
        }
    }
}

/* q6_K: where a plain block keeps the stored 6-bit value of element E
   (< 256): its low 4 bits at bit Q6_LO_SHIFT of byte Q6_LO_AT (ql),
   its high 2 bits at bit Q6_HI_SHIFT of byte Q6_HI_AT (qh).  */
#define Q6K_BYTES 210
#define Q6_LO_AT(e) (64 * ((e) / 128) + 32 * ((e) % 128 / 32 % 2) + (e) % 32)
#define Q6_LO_SHIFT(e) ((e) % 128 < 64 ? 0 : 4)
#define Q6_HI_AT(e) (128 + 32 * ((e) / 128) + (e) % 32)
#define Q6_HI_SHIFT(e) (2 * ((e) % 128 / 32))

static inline int
q6_lo (const unsigned char *blk, int e)
{
  return blk[Q6_LO_AT (e)] >> Q6_LO_SHIFT (e) & 15;
}

static inline int
q6_hi (const unsigned char *blk, int e)
{
  return blk[Q6_HI_AT (e)] >> Q6_HI_SHIFT (e) & 3;
}

/* q6_K: 8 plain rows of NB super-blocks to one group, or back.  */
static void
pack_group_q6_K (unsigned char *dst, const unsigned char *src, size_t row,
                 int64_t nb)
{
  for (int64_t i = 0; i < nb; i++)
    {
      unsigned char *o = dst + i * GROUP_ROWS * Q6K_BYTES;
      for (int r = 0; r < GROUP_ROWS; r++)
        {
          const unsigned char *blk = src + r * row + i * Q6K_BYTES;
          memcpy (o + 2 * r, blk + 208, 2);
          for (int s = 0; s < 4; s++)
            for (int h = 0; h < 2; h++)
              {
                o[16 + 32 * s + 2 * (2 * r + h)] = blk[192 + 8 * h + 2 * s];
                o[16 + 32 * s + 2 * (2 * r + h) + 1]
                  = blk[192 + 8 * h + 2 * s + 1];
              }
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int b = 0; b < 4; b++)
                {
                  int at = (2 * r + h) * 4 + b, e = 32 * j + 4 * h + b;
                  unsigned char *v = o + TSR_CPU_X8_Q6K_VALUES (j);
                  v[at] = (unsigned char) (q6_lo (blk, e)
                                           | q6_lo (blk, e + 8) << 4);
                  v[64 + at] = (unsigned char) (q6_lo (blk, e + 16)
                                                | q6_lo (blk, e + 24) << 4);
                  v[128 + at] = (unsigned char) (q6_hi (blk, e)
                                                 | q6_hi (blk, e + 8) << 2
                                                 | q6_hi (blk, e + 16) << 4
                                                 | q6_hi (blk, e + 24) << 6);
                }
        }
    }
}

static void
unpack_group_q6_K (unsigned char *dst, const unsigned char *src, size_t row,
                   int64_t nb, int r0, int r1)
{
  for (int64_t i = 0; i < nb; i++)
    {
      const unsigned char *o = src + i * GROUP_ROWS * Q6K_BYTES;
      for (int r = r0; r < r1; r++)
        {
          unsigned char *blk = dst + (r - r0) * row + i * Q6K_BYTES;
          memcpy (blk + 208, o + 2 * r, 2);
          for (int s = 0; s < 4; s++)
            for (int h = 0; h < 2; h++)
              {
                blk[192 + 8 * h + 2 * s] = o[16 + 32 * s + 2 * (2 * r + h)];
                blk[192 + 8 * h + 2 * s + 1]
                  = o[16 + 32 * s + 2 * (2 * r + h) + 1];
              }
          memset (blk, 0, 192);
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int b = 0; b < 4; b++)
                {
                  int at = (2 * r + h) * 4 + b, e0 = 32 * j + 4 * h + b;
                  const unsigned char *v = o + TSR_CPU_X8_Q6K_VALUES (j);
                  int lo[4] = { v[at] & 15, v[at] >> 4, v[64 + at] & 15,
                                v[64 + at] >> 4 };
                  for (int q = 0; q < 4; q++)
                    {
                      int e = e0 + 8 * q;
                      int hi = v[128 + at] >> (2 * q) & 3;
                      blk[Q6_LO_AT (e)]
                        |= (unsigned char) (lo[q] << Q6_LO_SHIFT (e));
                      blk[Q6_HI_AT (e)]
                        |= (unsigned char) (hi << Q6_HI_SHIFT (e));
                    }
                }
        }
    }
}

/* Where a block of 32 of TYPE keeps its fields: in the plain block,
   its fifth bits (QH, -1: none) and its values (QS), as
   tsr_cpu_x8_layout_of records them; in the group's block, the masks of
   fifth bits (MO) and the vectors (VO).  */
struct stored
{
  bool mins, five, e8;
  int qh, qs, mo, vo;
};

static struct stored
stored_of (tsr_type type)
{
  struct tsr_cpu_x8_layout l = tsr_cpu_x8_layout_of (type);
  struct stored d;
  d.mins = type == TSR_TYPE_Q4_1 || type == TSR_TYPE_Q5_1;
  d.five = l.qh >= 0;
  d.e8 = type == TSR_TYPE_MXFP4;
  d.qh = l.qh;
  d.qs = l.qs;
  d.mo = d.mins ? 32 : d.e8 ? 8 : 16;
  d.vo = d.mo + (d.five ? 32 : 0);
  return d;
}

/* 8 plain rows of NB blocks of TYPE at SRC (ROW bytes apart) to one
   group at DST.  */
static void
pack_group (tsr_type type, unsigned char *dst, const unsigned char *src,
            size_t row, int64_t nb)
{
  const bool q8 = type == TSR_TYPE_Q8_0;
  if (type == TSR_TYPE_Q4_K)
    {
      pack_group_q4_K (dst, src, row, nb);
      return;
    }
  if (type == TSR_TYPE_Q5_K)
    {
      pack_group_q5_K (dst, src, row, nb);
      return;
    }
  if (type == TSR_TYPE_IQ4_XS)
    {
      pack_group_iq4_xs (dst, src, row, nb);
      return;
    }
  if (type == TSR_TYPE_Q6_K)
    {
      pack_group_q6_K (dst, src, row, nb);
      return;
    }
  const size_t bb = tsr_type_traits (type)->type_size;
  /* q4_1, q5_1: the minimums after the scales; mxfp4: one E8M0 byte a
     row; q5_0, q5_1: the masks of fifth bits (byte r of mask s is byte
     s of row r's qh); then q4_0's vectors of the nibbles (nibble ()
     reads from 2 bytes on, where a q4_0 block's are).  */
  const struct stored d = stored_of (type);
  for (int64_t j = 0; j < nb; j++)
    {
      unsigned char *o = dst + j * GROUP_ROWS * bb;
      for (int r = 0; r < GROUP_ROWS; r++)
        {
          const unsigned char *blk = src + r * row + j * bb;
          const unsigned char *nb4 = blk + d.qs - 2;
          if (d.e8)
            o[r] = blk[0];
          else
            memcpy (o + 2 * r, blk, 2);
          if (d.mins)
            memcpy (o + 16 + 2 * r, blk + 2, 2);
          for (int v = 0; d.five && v < 4; v++)
            o[d.mo + 8 * v + r] = blk[d.qh + v];
          for (int h = 0; h < 2; h++)
            for (int b = 0; b < 4; b++)
              {
                int at = (2 * r + h) * 4 + b, e = 4 * h + b;
                if (q8)
                  for (int v = 0; v < 4; v++)
                    o[16 + 64 * v + at] = (unsigned char)
                      (blk[2 + 8 * v + e] ^ 0x80);
                else
                  {
                    o[d.vo + at] = (unsigned char) (nibble (nb4, e)
                                                    | nibble (nb4, 8 + e)
                                                      << 4);
                    o[d.vo + 64 + at] = (unsigned char) (nibble (nb4, 16 + e)
                                                         | nibble (nb4,
                                                                   24 + e)
                                                           << 4);
                  }
              }
        }
    }
}

/* The inverse: rows R0 .. R1 - 1 of the group at SRC to plain rows at
   DST (row R at DST + (R - R0) ROW).  */
static void
unpack_rows (tsr_type type, unsigned char *dst, const unsigned char *src,
             size_t row, int64_t nb, int r0, int r1)
{
  const bool q8 = type == TSR_TYPE_Q8_0;
  if (type == TSR_TYPE_Q4_K)
    {
      unpack_group_q4_K (dst, src, row, nb, r0, r1);
      return;
    }
  if (type == TSR_TYPE_Q5_K)
    {
      unpack_group_q5_K (dst, src, row, nb, r0, r1);
      return;
    }
  if (type == TSR_TYPE_IQ4_XS)
    {
      unpack_group_iq4_xs (dst, src, row, nb, r0, r1);
      return;
    }
  if (type == TSR_TYPE_Q6_K)
    {
      unpack_group_q6_K (dst, src, row, nb, r0, r1);
      return;
    }
  const size_t bb = tsr_type_traits (type)->type_size;
  const struct stored d = stored_of (type);
  for (int64_t j = 0; j < nb; j++)
    {
      const unsigned char *o = src + j * GROUP_ROWS * bb;
      for (int r = r0; r < r1; r++)
        {
          unsigned char *blk = dst + (r - r0) * row + j * bb;
          unsigned char *qs = blk + d.qs;
          if (d.e8)
            blk[0] = o[r];
          else
            memcpy (blk, o + 2 * r, 2);
          if (d.mins)
            memcpy (blk + 2, o + 16 + 2 * r, 2);
          for (int v = 0; d.five && v < 4; v++)
            blk[d.qh + v] = o[d.mo + 8 * v + r];
          for (int h = 0; h < 2; h++)
            for (int b = 0; b < 4; b++)
              {
                int at = (2 * r + h) * 4 + b, e = 4 * h + b;
                if (q8)
                  {
                    for (int v = 0; v < 4; v++)
                      qs[8 * v + e] = (unsigned char) (o[16 + 64 * v + at]
                                                       ^ 0x80);
                    continue;
                  }
                int v0 = o[d.vo + at], v1 = o[d.vo + 64 + at];
                /* elements e, 8 + e (< 16): low nibbles of bytes e,
                   8 + e; elements 16 + e, 24 + e: their high ones.  */
                qs[e] = (unsigned char) ((v0 & 15) | (v1 & 15) << 4);
                qs[8 + e] = (unsigned char) ((v0 >> 4) | (v1 >> 4) << 4);
              }
        }
    }
}

/* One group at SRC to its 8 plain rows at DST.  */
static void
unpack_group (tsr_type type, unsigned char *dst, const unsigned char *src,
              size_t row, int64_t nb)
{
  unpack_rows (type, dst, src, row, nb, 0, GROUP_ROWS);
}

void
tsr_cpu_repack_row_to_f32 (const tsr_tensor *t, const void *group, int r,
                           float *y)
{
  const struct tsr_type_traits *tr = tsr_type_traits (t->type);
  const int64_t nb = t->ne[0] / tr->block_size;
  _Alignas (16) unsigned char blk[TSR_CPU_REPACK_MAX_BLOCK];

  _Static_assert (Q6K_BYTES <= TSR_CPU_REPACK_MAX_BLOCK,
                  "the largest repacked block fits");

  /* A block at a time: a group's block j is the 8 rows' blocks j.  */
  for (int64_t j = 0; j < nb; j++)
    {
      unpack_rows (t->type, blk, (const unsigned char *) group
                                 + (size_t) j * GROUP_ROWS * tr->type_size,
                   tr->type_size, 1, r, r + 1);
      tsr_cpu_row_to_f32 (t->type, (const char *) blk, tr->type_size,
                          y + j * tr->block_size,
                          tr->block_size);
    }
}

/* The buffer: a host buffer (its alignment, and huge pages for large
   sizes: the dots stream them) holding the bytes in the layout above,
   and where its repacked tensors lie (for clear).  */
struct repack_buffer
{
  tsr_buffer *mem;
  unsigned char *base;
  size_t n, cap;
  struct { size_t offset, size; tsr_type type; } *packed;
};

static void
repack_free (tsr_buffer *buf)
{
  struct repack_buffer *rb = buf->context;
  tsr_buffer_free (rb->mem);
  free (rb->packed);
  free (rb);
}

static void *
repack_base (tsr_buffer *buf)
{
  return ((struct repack_buffer *) buf->context)->base;
}

static int
repack_init_tensor (tsr_buffer *buf, tsr_tensor *t)
{
  struct repack_buffer *rb = buf->context;
  if (t->view_src || !tsr_cpu_repackable (t))
    return TSR_OK;
  if (rb->n == rb->cap)
    {
      size_t cap = rb->cap ? 2 * rb->cap : 32;
      void *p = realloc (rb->packed, cap * sizeof *rb->packed);
      if (!p)
        return tsr_set_error (TSR_ERR_NO_MEMORY, "CPU_REPACK: %s: out of "
                              "memory", tsr_tensor_label (t));
      rb->packed = p;
      rb->cap = cap;
    }
  rb->packed[rb->n].offset = (size_t) ((unsigned char *) t->data - rb->base);
  rb->packed[rb->n].size = tsr_nbytes (t);
  rb->packed[rb->n].type = t->type;
  rb->n++;
  return TSR_OK;
}

/* Walk the groups of T that bytes [OFFSET, OFFSET + SIZE) of its plain
   layout touch; WRITE: DATA into them, else out of them into DATA.  */
static int
repack_rw (tsr_tensor *t, void *data, size_t offset, size_t size, bool write)
{
  const size_t row = t->nb[1];
  const size_t gbytes = row * GROUP_ROWS;
  const int64_t nb = t->ne[0] / tsr_type_traits (t->type)->block_size;
  unsigned char *base = t->data;
  unsigned char *tmp = NULL;

  if (size == 0)
    return TSR_OK;
  for (size_t g = offset / gbytes; g * gbytes < offset + size; g++)
    {
      size_t g0 = g * gbytes;
      size_t lo = offset > g0 ? offset : g0;
      size_t hi = offset + size < g0 + gbytes ? offset + size : g0 + gbytes;
      unsigned char *user = (unsigned char *) data + (lo - offset);

      if (lo == g0 && hi == g0 + gbytes)
        {
          if (write)
            pack_group (t->type, base + g0, user, row, nb);
          else
            unpack_group (t->type, user, base + g0, row, nb);
          continue;
        }
      if (!tmp && !(tmp = malloc (gbytes)))
        return tsr_set_error (TSR_ERR_NO_MEMORY, "CPU_REPACK: %s: out of "
                              "memory", tsr_tensor_label (t));
      unpack_group (t->type, tmp, base + g0, row, nb);
      if (write)
        {
          memcpy (tmp + (lo - g0), user, hi - lo);
          pack_group (t->type, base + g0, tmp, row, nb);
        }
      else
        memcpy (user, tmp + (lo - g0), hi - lo);
    }
  free (tmp);
  return TSR_OK;
}

/* How T's bytes are reached: *PLAIN as they are (a plain tensor, or a
   view of one), else through repack_rw (T repacked itself).  A view of
   repacked weights, whose bytes are not its own, is refused
   (TSR_ERR_UNSUPPORTED, recorded with VERB).  */
static int
repack_route (const tsr_tensor *t, const char *verb, bool *plain)
{
  const tsr_tensor *owner = t->view_src ? t->view_src : t;
  *plain = !tsr_cpu_repackable (owner);
  if (*plain || owner == t)
    return TSR_OK;
  return tsr_set_error (TSR_ERR_UNSUPPORTED, "CPU_REPACK: %s views "
                        "repacked weights %s: %s the whole tensor instead",
                        tsr_tensor_label (t), tsr_tensor_label (owner),
                        verb);
}

static int
repack_set (tsr_buffer *buf, tsr_tensor *t, const void *data, size_t offset,
            size_t size)
{
  (void) buf;
  bool plain;
  int st = repack_route (t, "write", &plain);
  if (st != TSR_OK || !plain)
    return st != TSR_OK ? st : repack_rw (t, (void *) data, offset, size,
                                          true);
  memcpy ((char *) t->data + offset, data, size);
  return TSR_OK;
}

static int
repack_get (tsr_buffer *buf, const tsr_tensor *t, void *data, size_t offset,
            size_t size)
{
  (void) buf;
  bool plain;
  int st = repack_route (t, "read", &plain);
  if (st != TSR_OK || !plain)
    return st != TSR_OK ? st : repack_rw ((tsr_tensor *) t, data, offset,
                                          size, false);
  memcpy (data, (const char *) t->data + offset, size);
  return TSR_OK;
}

static void
repack_clear (tsr_buffer *buf, uint8_t value)
{
  /* Plain bytes all VALUE: every block of a repacked tensor is the same
     group's block, packed once per tensor from 8 plain blocks of VALUE
     (the tensors are few; the blocks many).  */
  struct repack_buffer *rb = buf->context;
  _Alignas (16) unsigned char plain[GROUP_ROWS * TSR_CPU_REPACK_MAX_BLOCK];
  _Alignas (16) unsigned char packed[sizeof plain];

  memset (plain, value, sizeof plain);
  memset (rb->base, value, buf->size);
  for (size_t i = 0; i < rb->n; i++)
    {
      tsr_type type = rb->packed[i].type;
      size_t bb = tsr_type_traits (type)->type_size;
      size_t step = GROUP_ROWS * bb;
      pack_group (type, packed, plain, bb, 1);
      for (size_t o = 0; o < rb->packed[i].size; o += step)
        memcpy (rb->base + rb->packed[i].offset + o, packed, step);
    }
}

static const struct tsr_buffer_iface repack_buffer_iface = {
  .free_buffer = repack_free,
  .get_base = repack_base,
  .init_tensor = repack_init_tensor,
  .set_tensor = repack_set,
  .get_tensor = repack_get,
  .clear = repack_clear,
};

static const char *
repack_name (tsr_buffer_type *buft)
{
  (void) buft;
  return "CPU_REPACK";
}

static tsr_buffer *
repack_alloc (tsr_buffer_type *buft, size_t size)
{
  struct repack_buffer *rb = calloc (1, sizeof *rb);
  if (!rb)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "CPU_REPACK: out of memory");
      return NULL;
    }
  if (!(rb->mem = tsr_buffer_type_alloc (tsr_host_buffer_type (), size)))
    {
      free (rb);
      return NULL;
    }
  rb->base = tsr_buffer_base (rb->mem);
  tsr_buffer *buf = tsr_buffer_new (buft, repack_buffer_iface, rb, size);
  if (!buf)
    {
      tsr_buffer_free (rb->mem);
      free (rb);
    }
  return buf;
}

static size_t
repack_alignment (tsr_buffer_type *buft)
{
  (void) buft;
  return tsr_buffer_type_alignment (tsr_host_buffer_type ());
}

static struct tsr_buffer_type repack_buft = {
  .iface = {
    .get_name = repack_name,
    .alloc_buffer = repack_alloc,
    .get_alignment = repack_alignment,
  },
};

tsr_buffer_type *
tsr_cpu_repack_buffer_type (tsr_device *dev)
{
  repack_buft.device = dev;
  return &repack_buft;
}

bool
tsr_cpu_is_repack_buft (const tsr_buffer_type *buft)
{
  return buft == &repack_buft;
}

bool
tsr_cpu_repack_holds (tsr_buffer_type *buft, tsr_type type, int64_t ne0,
                      int64_t ne1)
{
  return buft == &repack_buft && repacks (type, ne0, ne1);
}

bool
tsr_cpu_repacked (const tsr_tensor *t)
{
  const tsr_tensor *owner = t->view_src ? t->view_src : t;
  return owner->buffer && owner->buffer->buft == &repack_buft
         && tsr_cpu_repackable (owner);
}
