/* ocl-quant.cl - the block types as the kernels read them: where each
 * element of a block lies and how it becomes a float.
 *
 * block_value performs lib/types*.c's to_float operation for operation
 * (an int level converted to float, times the scale, minus or plus the
 * minimum, in the same order), with contraction into fused multiply-adds
 * off, so an element decodes to the bits tsr_dequantize_row gives.
 * Layouts (bytes from the start of a block; "d" and "m" are fp16):
 *
 *   q8_0    34: d, int8 q[32]
 *   q4_0    18: d, nibbles[16]              (element j: low nibble of
 *   q4_1    20: d, m, nibbles[16]            byte j % 16, high for
 *   q5_0    22: d, qh[4], nibbles[16]        j >= 16; q5_*: fifth bit
 *   q5_1    24: d, m, qh[4], nibbles[16]     j of the LE word qh)
 *   iq4_nl  18: d, nibbles[16]
 *   mxfp4   17: E8M0 e, nibbles[16]
 *   q2_K    84: scales[16], qs[64], d, dmin
 *   q3_K   110: hmask[32], qs[64], scales[12], d
 *   q4_K   144: d, dmin, scales[12], qs[128]
 *   q5_K   176: d, dmin, scales[12], qh[32], qs[128]
 *   q6_K   210: ql[128], qh[64], int8 scales[16], d
 *   iq4_xs 136: d, scales_h (LE 16 bits), scales_l[4], qs[128]
 *
 * Block bytes reach the kernels as the tensor's nb[0] (dense rows), so
 * only the element counts are known here.  Every multi-byte field is
 * read a byte at a time: blocks of 17 or 110 bytes leave fields
 * unaligned.  */

#pragma OPENCL FP_CONTRACT OFF

constant char kvalues_iq4nl[16] = {
  -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
};

/* Twice the E2M1 values (the E8M0 scale is halved to match).  */
constant char kvalues_mxfp4[16] = {
  0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12
};

/* Elements in a block of TYPE (a block type).  */
int
block_elems (int type)
{
  switch (type)
    {
    case TSR_TYPE_Q2_K: case TSR_TYPE_Q3_K: case TSR_TYPE_Q4_K:
    case TSR_TYPE_Q5_K: case TSR_TYPE_Q6_K: case TSR_TYPE_IQ4_XS:
      return 256;
    default:
      return 32;
    }
}

/* The fp16 at B + OFF as a float.  */
float
half_at (global const uchar *b, int off)
{
  return f16_to_f32 ((ushort) (b[off] | ((uint) b[off + 1] << 8)));
}

/* Nibble J (0..31) of the 16 bytes at QS: low nibbles first.  */
int
nibble32 (global const uchar *qs, int j)
{
  return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
}

/* The fifth bit of element J: bit J of the little-endian word at QH.  */
int
fifth_bit (global const uchar *qh, int j)
{
  return (qh[j / 8] >> (j % 8)) & 1;
}

/* 2^(e - 128) from its bits: E8M0's scale times one half.  */
float
e8m0_half (uchar e)
{
  return as_float (e < 2 ? 0x00200000u << e : (uint) (e - 1) << 23);
}

/* The 2-bit field of element E in q2_K / q3_K's qs.  */
int
crumb (global const uchar *qs, int e)
{
  return qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32)) & 3;
}

/* The six-bit scale of group G (of 16) of q3_K.  */
int
q3_scale (global const uchar *s, int g)
{
  int lo = g < 8 ? s[g] & 15 : s[g - 8] >> 4;
  int hi = s[8 + g % 4] >> (2 * (g / 4)) & 3;
  return lo | hi << 4;
}

/* Scale (*SC) and minimum (*M) codes of group J (of 32) of q4_K /
   q5_K, from their 12 packed bytes at S.  */
void
scale_min_k4 (global const uchar *s, int j, int *sc, int *m)
{
  if (j < 4)
    {
      *sc = s[j] & 63;
      *m = s[j + 4] & 63;
    }
  else
    {
      *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
      *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

float
value_k4 (global const uchar *b, int e, int q)
{
  int sc, m;
  scale_min_k4 (b + 4, e / 32, &sc, &m);
  const float d1 = half_at (b, 0) * sc, m1 = half_at (b, 2) * m;
  return d1 * q - m1;
}

float
value_q2_K (global const uchar *b, int e)
{
  const int s = b[e / 16];
  const float dl = half_at (b, 80) * (s & 0xf);
  const float ml = half_at (b, 82) * (s >> 4);
  return dl * crumb (b + 16, e) - ml;
}

float
value_q3_K (global const uchar *b, int e)
{
  const float dl = half_at (b, 108) * (q3_scale (b + 96, e / 16) - 32);
  const int high = b[e % 32] >> (e / 32) & 1;
  return dl * (crumb (b + 32, e) - (high ? 0 : 4));
}

float
value_q4_K (global const uchar *b, int e)
{
  int q = b[16 + 32 * (e / 64) + e % 32] >> (4 * (e / 32 % 2)) & 0xf;
  return value_k4 (b, e, q);
}

float
value_q5_K (global const uchar *b, int e)
{
  int q = b[48 + 32 * (e / 64) + e % 32] >> (4 * (e / 32 % 2)) & 0xf;
  return value_k4 (b, e, q + ((b[16 + e % 32] >> (e / 32)) & 1 ? 16 : 0));
}

float
value_q6_K (global const uchar *b, int e)
{
  const int lo = b[64 * (e / 128) + 32 * (e % 128 / 32 % 2) + e % 32]
                 >> (e % 128 / 64 * 4) & 0xf;
  const int hi = b[128 + 32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32)) & 3;
  const int sc = ((global const char *) b)[192 + e / 16];
  return half_at (b, 208) * sc * ((lo | hi << 4) - 32);
}

float
value_iq4_xs (global const uchar *b, int e)
{
  const int j = e / 32;
  const int ls = (b[4 + j / 2] >> (4 * (j % 2)) & 0xf)
                 | (((b[2] | (b[3] << 8)) >> (2 * j)) & 3) << 4;
  const float dl = half_at (b, 0) * (ls - 32);
  return dl * kvalues_iq4nl[nibble32 (b + 8 + 16 * j, e % 32)];
}

/* Element E of the block at B of TYPE.  */
float
block_value (global const uchar *b, int type, int e)
{
  switch (type)
    {
    case TSR_TYPE_Q8_0:
      return half_at (b, 0) * ((global const char *) b)[2 + e];
    case TSR_TYPE_Q4_0:
      return half_at (b, 0) * (nibble32 (b + 2, e) - 8);
    case TSR_TYPE_Q4_1:
      return nibble32 (b + 4, e) * half_at (b, 0) + half_at (b, 2);
    case TSR_TYPE_Q5_0:
      return ((nibble32 (b + 6, e) | fifth_bit (b + 2, e) << 4) - 16)
             * half_at (b, 0);
    case TSR_TYPE_Q5_1:
      return (nibble32 (b + 8, e) | fifth_bit (b + 4, e) << 4)
             * half_at (b, 0) + half_at (b, 2);
    case TSR_TYPE_IQ4_NL:
      return half_at (b, 0) * kvalues_iq4nl[nibble32 (b + 2, e)];
    case TSR_TYPE_MXFP4:
      return kvalues_mxfp4[nibble32 (b + 1, e)] * e8m0_half (b[0]);
    case TSR_TYPE_Q2_K:
      return value_q2_K (b, e);
    case TSR_TYPE_Q3_K:
      return value_q3_K (b, e);
    case TSR_TYPE_Q4_K:
      return value_q4_K (b, e);
    case TSR_TYPE_Q5_K:
      return value_q5_K (b, e);
    case TSR_TYPE_Q6_K:
      return value_q6_K (b, e);
    case TSR_TYPE_IQ4_XS:
      return value_iq4_xs (b, e);
    default:
      return 0.0f;
    }
}

/* Elements 16 C .. 16 C + 15 of the block at B into V.  Every block
   type's groups are 16 or 32 elements, so the scales a chunk needs are
   the same for all 16 and the compiler keeps them out of the loop.  */
void
block_chunk (global const uchar *b, int type, int c, float v[16])
{
  for (int l = 0; l < 16; l++)
    v[l] = block_value (b, type, 16 * c + l);
}

#pragma OPENCL FP_CONTRACT ON
