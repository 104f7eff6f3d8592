/* The super-block kernels of the CPU backend (cpu-kquant.c) for q2_K,
   q3_K, q4_K, q5_K, q6_K and iq4_xs, called directly at every ISA
   level built that this CPU runs (cpu.exp links the per-level
   libraries and defines TSR_CPU_BUILT_<suffix> for each level, see
   cpu-levels.h).

   - quantize_act_q8_K gives exactly the values, float scales and sums
     of 16 of the library's reference quantizer (tsr_quantize_row
     (TSR_TYPE_Q8_K)), ties, zeros, NaN, infinities and extreme
     magnitudes included, in the layout of cpu-vec-k.h;
   - row dequantization gives the bits of tsr_dequantize_row, on
     quantized random data and on random bytes (every bit pattern of
     the packed scales, finite f16 scales);
   - the dots of 1 to 8 activation rows are exact on integer data:
     super-block scales 1, activations -1..1 written straight into the
     layout, so that the reference (the exact integer sum of the
     reference dequantization times the activations) and every partial
     sum the kernels form stay below 2^24 for up to 5 super-blocks;
   - with real scales (weights from tsr_quantize_row, activations from
     the q8_K quantizer, and all-ones bit patterns against activations
     127, where the 16-bit pair sums are largest) they are within
     1e-5 of sum |w_i y_i| of the double reference: per super-block
     the kernels round two exact integers and their float products,
     about 8 roundings of 2^-24 each, plus one per super-block for the
     f32 sum;
   - the q4_K dots of 8 rows repacked as CPU_REPACK stores them (packed
     here from the layout's description) likewise, 8 rows by 1 to 8;
   - such groups of q4_K, q5_K, q6_K and iq4_xs converted to the packed
     tiles (tsr_cpu_kp8_from_x8) equal the plain rows packed
     (tsr_cpu_kp8_pack), byte for byte;
   - 16 or 8 plain rows of every type, packed and converted to the AMX
     layout (tsr_cpu_kt_from_kp8: at v4-amx the vector code, elsewhere
     the reference), dotted with 1, 5 and 40 columns (AMX tiles at
     v4-amx) give the packed tiles' results bit for bit.  */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"
#include "cpu-vec.h"
#include "cpu-levels.h"

typedef void (*quantize_fn) (int64_t, void *, const float *);
typedef void (*offsets_fn) (int64_t, void *);
typedef tsr_test_qdot_fn dot_fn;
typedef void (*row_fn) (int64_t, float *, const void *);
typedef void (*pack_fn) (tsr_type, int64_t, const void *, size_t, int,
                         void *);
typedef void (*from_fn) (tsr_type, int64_t, const void *, void *);
typedef void (*kt_from_fn) (tsr_type, int64_t, const void *, const void *,
                            void *);
typedef void (*kt_fn) (int64_t, const void *, const void *, const void *,
                       int, const void *, size_t, float *);

enum { N_TYPES = 6, MAX_NB = 8, QK = 256, MAX_K = QK * MAX_NB, ROWS = 8 };

static const tsr_type types[N_TYPES] = {
  TSR_TYPE_Q2_K, TSR_TYPE_Q3_K, TSR_TYPE_Q4_K, TSR_TYPE_Q5_K,
  TSR_TYPE_Q6_K, TSR_TYPE_IQ4_XS
};

/* Where each type keeps its f16 super-block scale and minimum (-1:
   none).  */
static const int d_at[N_TYPES] = {
  offsetof (struct tsr_block_q2_K, d), offsetof (struct tsr_block_q3_K, d),
  offsetof (struct tsr_block_q4_K, d), offsetof (struct tsr_block_q5_K, d),
  offsetof (struct tsr_block_q6_K, d), offsetof (struct tsr_block_iq4_xs, d)
};
static const int dmin_at[N_TYPES] = {
  offsetof (struct tsr_block_q2_K, dmin), -1,
  offsetof (struct tsr_block_q4_K, dmin),
  offsetof (struct tsr_block_q5_K, dmin), -1, -1
};

struct level
{
  const char *name;             /* as the device description says */
  quantize_fn quantize;
  offsets_fn offsets6;          /* q6_K's offset sums of a q8_K row */
  dot_fn dot[N_TYPES];
  row_fn row[N_TYPES];
  dot_fn dot_q4_K_x8;           /* q4_K repacked by 8 rows */
  dot_fn dot_q6_K_x8;           /* q6_K repacked by 8 rows */
  dot_fn dot_q5_K_x8;           /* q5_K repacked by 8 rows */
  dot_fn dot_iq4_xs_x8;         /* iq4_xs repacked by 8 rows */
  pack_fn kp8_pack;             /* 8 plain rows to packed tiles */
  from_fn kp8_from_x8;          /* a repacked group to packed tiles */
  dot_fn dot_p8[N_TYPES];       /* the packed tiles' dots */
  kt_from_fn kt_from;           /* two packed groups to the AMX layout */
  kt_fn dot_kt[N_TYPES];        /* its dots */
};

#define FNS(suffix, type)                                               \
  void tsr_cpu_vec_dot_##type##_q8_K_##suffix (int64_t, const void *,    \
                                               size_t, int, int,        \
                                               const void *const *,     \
                                               float *);                \
  void tsr_cpu_row_##type##_to_f32_##suffix (int64_t, float *, const void *);
#define KTFNS(suffix, type)                                             \
  void tsr_cpu_vec_dot_##type##p8_q8_K_##suffix (int64_t, const void *,  \
                                                 size_t, int, int,      \
                                                 const void *const *,   \
                                                 float *);              \
  void tsr_cpu_vec_dot_##type##t16_q8_K_##suffix (int64_t, const void *, \
                                                  const void *,         \
                                                  const void *, int,    \
                                                  const void *, size_t, \
                                                  float *);
#define LEVEL(suffix, name)                                             \
  void tsr_cpu_quantize_act_q8_K_##suffix (int64_t, void *, const float *); \
  void tsr_cpu_kact_fill_offsets6_##suffix (int64_t, void *);           \
  FNS (suffix, q2_K) FNS (suffix, q3_K) FNS (suffix, q4_K)              \
  FNS (suffix, q5_K) FNS (suffix, q6_K) FNS (suffix, iq4_xs)            \
  void tsr_cpu_vec_dot_q4_Kx8_q8_K_##suffix (int64_t, const void *,     \
                                             size_t, int, int,          \
                                             const void *const *,       \
                                             float *);                  \
  void tsr_cpu_vec_dot_q6_Kx8_q8_K_##suffix (int64_t, const void *,     \
                                             size_t, int, int,          \
                                             const void *const *,       \
                                             float *);                  \
  void tsr_cpu_vec_dot_q5_Kx8_q8_K_##suffix (int64_t, const void *,     \
                                             size_t, int, int,          \
                                             const void *const *,       \
                                             float *);                  \
  void tsr_cpu_vec_dot_iq4_xsx8_q8_K_##suffix (int64_t, const void *,   \
                                               size_t, int, int,        \
                                               const void *const *,     \
                                               float *);                \
  void tsr_cpu_kp8_pack_##suffix (tsr_type, int64_t, const void *,       \
                                  size_t, int, void *);                 \
  void tsr_cpu_kp8_from_x8_##suffix (tsr_type, int64_t, const void *,    \
                                     void *);                           \
  void tsr_cpu_kt_from_kp8_##suffix (tsr_type, int64_t, const void *,    \
                                     const void *, void *);             \
  KTFNS (suffix, q2_K) KTFNS (suffix, q3_K) KTFNS (suffix, q4_K)        \
  KTFNS (suffix, q5_K) KTFNS (suffix, q6_K) KTFNS (suffix, iq4_xs)      \
  static const struct level level_##suffix = {                         \
    name, tsr_cpu_quantize_act_q8_K_##suffix,                           \
    tsr_cpu_kact_fill_offsets6_##suffix,                                \
    { tsr_cpu_vec_dot_q2_K_q8_K_##suffix, tsr_cpu_vec_dot_q3_K_q8_K_##suffix, \
      tsr_cpu_vec_dot_q4_K_q8_K_##suffix, tsr_cpu_vec_dot_q5_K_q8_K_##suffix, \
      tsr_cpu_vec_dot_q6_K_q8_K_##suffix,                               \
      tsr_cpu_vec_dot_iq4_xs_q8_K_##suffix },                           \
    { tsr_cpu_row_q2_K_to_f32_##suffix, tsr_cpu_row_q3_K_to_f32_##suffix, \
      tsr_cpu_row_q4_K_to_f32_##suffix, tsr_cpu_row_q5_K_to_f32_##suffix, \
      tsr_cpu_row_q6_K_to_f32_##suffix, tsr_cpu_row_iq4_xs_to_f32_##suffix }, \
    tsr_cpu_vec_dot_q4_Kx8_q8_K_##suffix,                               \
    tsr_cpu_vec_dot_q6_Kx8_q8_K_##suffix,                               \
    tsr_cpu_vec_dot_q5_Kx8_q8_K_##suffix,                               \
    tsr_cpu_vec_dot_iq4_xsx8_q8_K_##suffix,                             \
    tsr_cpu_kp8_pack_##suffix, tsr_cpu_kp8_from_x8_##suffix,            \
    { tsr_cpu_vec_dot_q2_Kp8_q8_K_##suffix,                             \
      tsr_cpu_vec_dot_q3_Kp8_q8_K_##suffix,                             \
      tsr_cpu_vec_dot_q4_Kp8_q8_K_##suffix,                             \
      tsr_cpu_vec_dot_q5_Kp8_q8_K_##suffix,                             \
      tsr_cpu_vec_dot_q6_Kp8_q8_K_##suffix,                             \
      tsr_cpu_vec_dot_iq4_xsp8_q8_K_##suffix },                         \
    tsr_cpu_kt_from_kp8_##suffix,                                       \
    { tsr_cpu_vec_dot_q2_Kt16_q8_K_##suffix,                            \
      tsr_cpu_vec_dot_q3_Kt16_q8_K_##suffix,                            \
      tsr_cpu_vec_dot_q4_Kt16_q8_K_##suffix,                            \
      tsr_cpu_vec_dot_q5_Kt16_q8_K_##suffix,                            \
      tsr_cpu_vec_dot_q6_Kt16_q8_K_##suffix,                            \
      tsr_cpu_vec_dot_iq4_xst16_q8_K_##suffix } };
TSR_TEST_EACH_LEVEL (LEVEL)
#define LEVEL_ENTRY(suffix, name) &level_##suffix,
static const struct level *const levels[] = {
  TSR_TEST_EACH_LEVEL (LEVEL_ENTRY) NULL
};

/* Activations of super-block J: random, or special (ties at scale 1,
   zeros, NaN and infinity, tiny, huge, all 1).  */
static void
fill_act (float *x, int j)
{
  for (int i = 0; i < QK; i++)
    x[i] = tsr_test_uniform (-3, 3);
  switch (j % 8)
    {
    case 1:                     /* amax 127: id 1, x.5 ties */
      for (int i = 0; i < QK; i++)
        x[i] = (float) (i % 37 - 18) + 0.5f;
      x[200] = -127;
      break;
    case 2:
      memset (x, 0, QK * sizeof *x);
      break;
    case 3:
      x[5] = NAN;
      x[77] = INFINITY;
      break;
    case 4:
      x[9] = NAN;
      break;
    case 5:                     /* subnormal amax: 127 / amax is inf */
      for (int i = 0; i < QK; i++)
        x[i] *= 1e-40f;
      break;
    case 6:
      for (int i = 0; i < QK; i++)
        x[i] *= 1e37f;
      break;
    case 7:
      for (int i = 0; i < QK; i++)
        x[i] = 1;
      break;
    }
}

/* q6_K's offset sums of the K values Q, as cpu-vec-k.h lays them out:
   per group of 16, -32 times the sum of its values 0-3 and 8-11, then
   of 4-7 and 12-15.  */
static void
ref_offsets6 (int k, const int8_t *q, int32_t *o)
{
  for (int g = 0; g < k / 16; g++)
    for (int h = 0; h < 2; h++)
      {
        int sum = 0;
        for (int i = 0; i < 16; i++)
          if (i / 4 % 2 == h)
            sum += q[16 * g + i];
        o[2 * g + h] = -32 * sum;
      }
}

static void
check_quantize (const struct level *lv)
{
  static float x[MAX_K];
  static struct tsr_block_q8_K ref[MAX_NB];
  static _Alignas (64) char y[MAX_K * 2];
  int bad = 0;

  for (int nb = 1; nb <= MAX_NB; nb++)
    {
      int k = QK * nb;
      for (int j = 0; j < nb; j++)
        fill_act (x + QK * j, j + nb);
      tsr_quantize_row (TSR_TYPE_Q8_K, x, ref, k);
      memset (y, 0x5a, tsr_cpu_kact6_size (k));
      lv->quantize (k, y, x);
      lv->offsets6 (k, y);
      const int8_t *q = (const int8_t *) y;
      const int32_t *o6 = tsr_cpu_kact_offsets6 (y, k);
      const int16_t *s = tsr_cpu_kact_sums (y, k);
      const int16_t *s32 = tsr_cpu_kact_sums32 (y, k);
      const float *d = tsr_cpu_kact_scales (y, k);
      for (int j = 0; j < nb; j++)
        {
          if (memcmp (&d[j], &ref[j].d, sizeof d[j]) != 0)
            bad++;
          for (int i = 0; i < QK; i++)
            bad += q[QK * j + i] != ref[j].qs[i];
          for (int g = 0; g < 16; g++)
            bad += s[16 * j + g] != ref[j].bsums[g];
          /* The sums of 32, from the reference's values: the even
             groups of 32, then the odd ones.  */
          for (int g = 0; g < 8; g++)
            {
              int sum = 0;
              for (int i = 32 * g; i < 32 * g + 32; i++)
                sum += ref[j].qs[i];
              bad += s32[8 * j + g % 2 * 4 + g / 2] != sum;
            }
          /* q6_K's offset sums, from the reference's values.  */
          int32_t want6[32];
          ref_offsets6 (QK, ref[j].qs, want6);
          bad += memcmp (o6 + 32 * j, want6, sizeof want6) != 0;
        }
    }
  CHECK (bad == 0, "level %s: quantize_act_q8_K of 1..%d super-blocks "
         "equals tsr_quantize_row, its sums of 16 and 32 and q6_K's "
         "offset sums too (%d differences)", lv->name, MAX_NB, bad);
}

static void
set_half (char *p, float v)
{
  tsr_fp16_t h = tsr_fp32_to_fp16 (v);
  memcpy (p, &h, sizeof h);
}

/* NB super-blocks of weights of type T: KIND 0 quantized random data,
   1 random bytes with finite random f16 scales, 2 random bytes with
   scales 1, 3 every byte 0xff with scales 1.  */
static void
fill_weights (int t, int nb, int kind, char *w)
{
  static float v[MAX_K];
  size_t bytes = tsr_row_size (types[t], QK);

  if (kind == 0)
    {
      for (int i = 0; i < QK * nb; i++)
        v[i] = tsr_test_uniform (-1, 1) * (1 + i % 7);
      tsr_quantize_row (types[t], v, w, QK * nb);
      return;
    }
  for (size_t i = 0; i < bytes * nb; i++)
    w[i] = (char) (kind == 3 ? 0xff : rand () & 0xff);
  for (int j = 0; j < nb; j++)
    {
      char *b = w + j * bytes;
      float d = kind == 1 ? tsr_test_uniform (-2, 2)
                            * ldexpf (1, rand () % 20 - 12) : 1;
      set_half (b + d_at[t], d);
      if (dmin_at[t] >= 0)
        set_half (b + dmin_at[t], kind == 1 ? tsr_test_uniform (0, 1) : 1);
    }
}

static void
check_dequantize (const struct level *lv, int t)
{
  static _Alignas (64) char w[MAX_K * 2];
  static float want[MAX_K], got[MAX_K];
  int bad = 0;

  for (int kind = 0; kind < 4; kind++)
    for (int nb = 1; nb <= 3; nb++)
      {
        fill_weights (t, nb, kind, w);
        tsr_dequantize_row (types[t], w, want, QK * nb);
        memset (got, 0x5a, sizeof got);
        lv->row[t] (QK * nb, got, w);
        for (int i = 0; i < QK * nb; i++)
          bad += memcmp (&got[i], &want[i], sizeof got[i]) != 0;
        uint32_t past;             /* nothing written past the row */
        memcpy (&past, &got[QK * nb], sizeof past);
        bad += past != 0x5a5a5a5au;
      }
  CHECK (bad == 0, "level %s: %s rows to f32 equal tsr_dequantize_row "
         "bit for bit (%d differences)", lv->name, tsr_type_name (types[t]),
         bad);
}

/* An activation row of K values Q (integers -127..127) with scale D
   per super-block, in the layout of cpu-vec-k.h, q6_K's offset sums
   included.  */
static void
make_act (int k, const int8_t *q, float d, char *y)
{
  ref_offsets6 (k, q, (int32_t *) tsr_cpu_kact_offsets6 (y, k));
  int16_t *s = (int16_t *) tsr_cpu_kact_sums (y, k);
  int16_t *s32 = (int16_t *) tsr_cpu_kact_sums32 (y, k);
  float *ds = (float *) tsr_cpu_kact_scales (y, k);

  memcpy (y, q, (size_t) k);
  for (int g = 0; g < k / 16; g++)
    {
      int sum = 0;
      for (int i = 0; i < 16; i++)
        sum += q[16 * g + i];
      s[g] = (int16_t) sum;
    }
  for (int g = 0; g < k / 32; g++)
    {
      int sum = 0;
      for (int i = 0; i < 32; i++)
        sum += q[32 * g + i];
      /* Per super-block the even groups of 32, then the odd ones.  */
      s32[g / 8 * 8 + g % 2 * 4 + g % 8 / 2] = (int16_t) sum;
    }
  for (int j = 0; j < k / QK; j++)
    ds[j] = d;
}

static void
check_exact (const struct level *lv, int t)
{
  static _Alignas (64) char w[MAX_K * 2];
  static _Alignas (64) char act[ROWS][MAX_K * 2];
  static int8_t q[ROWS][MAX_K];
  static float deq[MAX_K];
  int fails = 0, not_integral = 0;

  for (int nb = 1; nb <= 5; nb++)
    {
      int k = QK * nb;
      const void *ys[ROWS];
      fill_weights (t, nb, 2, w);
      tsr_dequantize_row (types[t], w, deq, k);
      for (int i = 0; i < k; i++)
        not_integral += deq[i] != rintf (deq[i]);
      for (int r = 0; r < ROWS; r++)
        {
          for (int i = 0; i < k; i++)
            q[r][i] = (int8_t) (rand () % 3 - 1);
          make_act (k, q[r], 1.0f, act[r]);
          ys[r] = act[r];
        }
      for (int ny = 1; ny <= ROWS; ny++)
        {
          float out[ROWS];
          fails += tsr_test_qdot_rows (lv->dot[t], types[t], k, w, ny, ys,
                                       out);
          for (int r = 0; r < ny; r++)
            {
              long long want = 0;
              for (int i = 0; i < k; i++)
                want += (long long) deq[i] * q[r][i];
              fails += out[r] != (float) want;
            }
        }
    }
  CHECK (fails == 0 && not_integral == 0, "level %s: %s x q8_K dots of "
         "1..%d rows exact on integer data (%d failures)", lv->name,
         tsr_type_name (types[t]), ROWS, fails + not_integral);
}

static void
check_float (const struct level *lv, int t)
{
  static _Alignas (64) char w[MAX_K * 2];
  static _Alignas (64) char act[ROWS][MAX_K * 2];
  static float x[MAX_K], deq[MAX_K];
  static struct tsr_block_q8_K ref[ROWS][MAX_NB];
  int fails = 0;
  double worst = 0;

  for (int nb = 1; nb <= MAX_NB; nb++)
    {
      int k = QK * nb;
      const void *ys[ROWS];
      fill_weights (t, nb, nb % 4 == 3 ? 3 : 0, w);
      tsr_dequantize_row (types[t], w, deq, k);
      for (int r = 0; r < ROWS; r++)
        {
          for (int i = 0; i < k; i++)
            x[i] = nb % 4 == 3 && r == 0 ? 1 : tsr_test_uniform (-2, 2);
          tsr_quantize_row (TSR_TYPE_Q8_K, x, ref[r], k);
          lv->quantize (k, act[r], x);
          ys[r] = act[r];
        }
      for (int ny = 1; ny <= ROWS; ny++)
        {
          float out[ROWS];
          fails += tsr_test_qdot_rows (lv->dot[t], types[t], k, w, ny, ys,
                                       out);
          for (int r = 0; r < ny; r++)
            {
              double want = 0, mag = 0;
              for (int i = 0; i < k; i++)
                {
                  double p = (double) deq[i] * ref[r][i / QK].d
                             * ref[r][i / QK].qs[i % QK];
                  want += p;
                  mag += fabs (p);
                }
              double err = fabs (out[r] - want);
              if (!(err <= 1e-5 * mag))
                fails++;
              if (mag > 0)
                worst = fmax (worst, err / mag);
            }
        }
    }
  CHECK (fails == 0, "level %s: %s x q8_K dots of 1..%d rows within 1e-5 "
         "of sum |w y| (worst %.2g, %d failures)", lv->name,
         tsr_type_name (types[t]), ROWS, worst, fails);
}

/* 8 rows of q4_K (ROW bytes apart) repacked as CPU_REPACK stores them
   (modules/cpu/cpu-repack.c's description, written again here): per
   super-block the 8 d, the 8 dmin, bytes 0..3, 4..7 and 8..11 of the
   rows' packed scales as three vectors of 8 x 4 bytes, then per group
   j of 32 elements two vectors of 16 lanes of 4 bytes, lane 2r + h,
   byte b holding elements 32j + 4h + b (low nibble) and + 8 (high) in
   the first, + 16 and + 24 in the second.  */
static void
pack_q4_K_x8 (const char *w, size_t row, int nb, char *out)
{
  for (int i = 0; i < nb; i++)
    {
      unsigned char *o = (unsigned char *) out + i * 8 * 144;
      for (int r = 0; r < 8; r++)
        {
          const unsigned char *b = (const unsigned char *) w + r * row
                                   + i * 144;
          int e[256];
          for (int x = 0; x < 256; x++)
            {
              int byte = b[16 + 32 * (x / 64) + x % 32];
              e[x] = x / 32 % 2 ? byte >> 4 : byte & 15;
            }
          memcpy (o + 2 * r, b, 2);
          memcpy (o + 16 + 2 * r, b + 2, 2);
          for (int v = 0; v < 3; v++)
            memcpy (o + 32 + 32 * v + 4 * r, b + 4 + 4 * v, 4);
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int q = 0; q < 4; q++)
                {
                  int at = 4 * (2 * r + h) + q, x = 32 * j + 4 * h + q;
                  o[128 + 128 * j + at] = (unsigned char) (e[x]
                                                           | e[x + 8] << 4);
                  o[192 + 128 * j + at] = (unsigned char) (e[x + 16]
                                                           | e[x + 24] << 4);
                }
        }
    }
}

/* 8 rows of q6_K repacked as CPU_REPACK stores them (again from the
   description in modules/cpu/cpu-repack.c): per super-block the 8 d,
   then the int8 scales as four vectors of 32 bytes, vector s holding
   scales 8h + 2s, 8h + 2s + 1 of row r at bytes 2 (2r + h) and one
   more; then per group j of 32 elements three vectors of 16 lanes of 4
   bytes, lane 2r + h, byte b about elements x = 32j + 4h + b: the low 4
   bits of x (low nibble) and x + 8 (high) in the first, of x + 16 and
   x + 24 in the second, the high 2 bits of x, x + 8, x + 16, x + 24 in
   bits 0-1, 2-3, 4-5, 6-7 of the third.  The plain block's element x
   is its 6-bit value u(x) = v - 32's v, read here through the
   dequantizer's definition: ql, qh, scales, d.  */
static void
pack_q6_K_x8 (const char *w, size_t row, int nb, char *out)
{
  for (int i = 0; i < nb; i++)
    {
      unsigned char *o = (unsigned char *) out + i * 8 * 210;
      for (int r = 0; r < 8; r++)
        {
          const struct tsr_block_q6_K *b
            = (const struct tsr_block_q6_K *) (w + r * row) + i;
          int u[256];
          for (int half = 0; half < 2; half++)
            for (int l = 0; l < 32; l++)
              {
                const uint8_t *ql = b->ql + 64 * half, *qh = b->qh + 32 * half;
                int x = 128 * half + l;
                u[x] = (ql[l] & 15) | (qh[l] & 3) << 4;
                u[x + 32] = (ql[l + 32] & 15) | (qh[l] >> 2 & 3) << 4;
                u[x + 64] = (ql[l] >> 4) | (qh[l] >> 4 & 3) << 4;
                u[x + 96] = (ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4;
              }
          memcpy (o + 2 * r, &b->d, 2);
          for (int v = 0; v < 4; v++)
            for (int h = 0; h < 2; h++)
              {
                o[16 + 32 * v + 2 * (2 * r + h)]
                  = (unsigned char) b->scales[8 * h + 2 * v];
                o[16 + 32 * v + 2 * (2 * r + h) + 1]
                  = (unsigned char) b->scales[8 * h + 2 * v + 1];
              }
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int q = 0; q < 4; q++)
                {
                  int at = 4 * (2 * r + h) + q, x = 32 * j + 4 * h + q;
                  unsigned char *g = o + 144 + 192 * j;
                  g[at] = (unsigned char) ((u[x] & 15) | (u[x + 8] & 15) << 4);
                  g[64 + at] = (unsigned char) ((u[x + 16] & 15)
                                                | (u[x + 24] & 15) << 4);
                  g[128 + at] = (unsigned char) (u[x] >> 4 | u[x + 8] >> 4 << 2
                                                 | u[x + 16] >> 4 << 4
                                                 | u[x + 24] >> 4 << 6);
                }
        }
    }
}

/* 8 rows of q5_K repacked as CPU_REPACK stores them (again from the
   description in modules/cpu/cpu-repack.c): the 128 bytes of q4_K's
   header, then per pair p of groups (320 bytes) the even group's two
   vectors of low nibbles laid out as q4_K's, the odd group's, and a
   vector whose byte at lane 2r + h, byte b holds the fifth bits of
   elements x = 32j + 4h + b, x + 8, x + 16, x + 24 in bits 0..3 for
   j = 2p and in bits 4..7 for j = 2p + 1.  The plain block's 5-bit
   value of element x: the nibble of qs[32 (x / 64) + x % 32] (high for
   odd x / 32) plus 16 times bit x / 32 of qh[x % 32].  */
static void
pack_q5_K_x8 (const char *w, size_t row, int nb, char *out)
{
  for (int i = 0; i < nb; i++)
    {
      unsigned char *o = (unsigned char *) out + i * 8 * 176;
      for (int r = 0; r < 8; r++)
        {
          const struct tsr_block_q5_K *b
            = (const struct tsr_block_q5_K *) (w + r * row) + i;
          int u[256];
          for (int x = 0; x < 256; x++)
            {
              int byte = b->qs[32 * (x / 64) + x % 32];
              u[x] = (x / 32 % 2 ? byte >> 4 : byte & 15)
                     | (b->qh[x % 32] >> (x / 32) & 1) << 4;
            }
          memcpy (o + 2 * r, &b->d, 2);
          memcpy (o + 16 + 2 * r, &b->dmin, 2);
          for (int v = 0; v < 3; v++)
            memcpy (o + 32 + 32 * v + 4 * r, b->scales + 4 * v, 4);
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int q = 0; q < 4; q++)
                {
                  int at = 4 * (2 * r + h) + q, x = 32 * j + 4 * h + q;
                  unsigned char *g = o + 128 + 320 * (j / 2) + 128 * (j % 2);
                  unsigned char *hv = o + 128 + 320 * (j / 2) + 256;
                  g[at] = (unsigned char) ((u[x] & 15) | (u[x + 8] & 15) << 4);
                  g[64 + at] = (unsigned char) ((u[x + 16] & 15)
                                                | (u[x + 24] & 15) << 4);
                  int bits = u[x] >> 4 | u[x + 8] >> 4 << 1
                             | u[x + 16] >> 4 << 2 | u[x + 24] >> 4 << 3;
                  if (j % 2 == 0)
                    hv[at] = (unsigned char) bits;
                  else
                    hv[at] |= (unsigned char) (bits << 4);
                }
        }
    }
}

/* 8 rows of iq4_xs repacked as CPU_REPACK stores them (from the
   description in modules/cpu/cpu-repack.c): per super-block the 8 d,
   the rows' scales_l (4 bytes each) from byte 16, their scales_h (2
   bytes each) from byte 48, then per group j of 32 elements two
   vectors of 16 lanes of 4 bytes at 64 + 128j, lane 2r + h, byte b
   holding the 4-bit indices of elements x = 32j + 4h + b (low nibble)
   and x + 8 (high) in the first, x + 16 and x + 24 in the second.  The
   plain block's index of element x: qs[16 (x / 32) + x % 16], the low
   nibble for x % 32 < 16.  */
static void
pack_iq4_xs_x8 (const char *w, size_t row, int nb, char *out)
{
  for (int i = 0; i < nb; i++)
    {
      unsigned char *o = (unsigned char *) out + i * 8 * 136;
      for (int r = 0; r < 8; r++)
        {
          const struct tsr_block_iq4_xs *b
            = (const struct tsr_block_iq4_xs *) (w + r * row) + i;
          int u[256];
          for (int x = 0; x < 256; x++)
            {
              int byte = b->qs[16 * (x / 32) + x % 16];
              u[x] = x % 32 < 16 ? byte & 15 : byte >> 4;
            }
          memcpy (o + 2 * r, &b->d, 2);
          memcpy (o + 16 + 4 * r, b->scales_l, 4);
          o[48 + 2 * r] = (unsigned char) (b->scales_h & 255);
          o[49 + 2 * r] = (unsigned char) (b->scales_h >> 8);
          for (int j = 0; j < 8; j++)
            for (int h = 0; h < 2; h++)
              for (int q = 0; q < 4; q++)
                {
                  int at = 4 * (2 * r + h) + q, x = 32 * j + 4 * h + q;
                  unsigned char *g = o + 64 + 128 * j;
                  g[at] = (unsigned char) (u[x] | u[x + 8] << 4);
                  g[64 + at] = (unsigned char) (u[x + 16] | u[x + 24] << 4);
                }
        }
    }
}

/* 8 plain rows of types[T] (q4_K, q5_K, q6_K or iq4_xs), NB
   super-blocks, ROW bytes apart at W, as CPU_REPACK stores them.  */
static void
pack_x8 (int T, const char *w, size_t row, int nb, char *out)
{
  if (types[T] == TSR_TYPE_Q4_K)
    pack_q4_K_x8 (w, row, nb, out);
  else if (types[T] == TSR_TYPE_Q5_K)
    pack_q5_K_x8 (w, row, nb, out);
  else if (types[T] == TSR_TYPE_IQ4_XS)
    pack_iq4_xs_x8 (w, row, nb, out);
  else
    pack_q6_K_x8 (w, row, nb, out);
}

/* The repacked dots of types[T] (q4_K, q5_K, q6_K or iq4_xs), 8 rows by 1..8
   activation rows: exact on integer data (as check_exact), within the
   bound of check_float otherwise.  */
static void
check_x8 (const struct level *lv, int T)
{
  static _Alignas (64) char w[ROWS][MAX_K], packed[ROWS * MAX_K];
  static _Alignas (64) char act[ROWS][MAX_K * 2];
  static int8_t q[MAX_K];
  static float x[MAX_K], deq[ROWS][MAX_K];
  static struct tsr_block_q8_K ref[ROWS][MAX_NB];
  int fails = 0;
  double worst = 0;

  for (int integral = 1; integral >= 0; integral--)
    for (int nb = 1; nb <= 5; nb++)
      {
        int k = QK * nb;
        size_t row = tsr_row_size (types[T], k);
        const void *ys[ROWS];
        for (int r = 0; r < ROWS; r++)
          {
            fill_weights (T, nb, integral ? 2 : 0, w[r]);
            tsr_dequantize_row (types[T], w[r], deq[r], k);
          }
        char *plain = malloc (ROWS * row);
        for (int r = 0; r < ROWS; r++)
          memcpy (plain + r * row, w[r], row);
        pack_x8 (T, plain, row, nb, packed);
        free (plain);
        for (int c = 0; c < ROWS; c++)
          {
            if (integral)
              {
                for (int i = 0; i < k; i++)
                  q[i] = (int8_t) (rand () % 3 - 1);
                make_act (k, q, 1.0f, act[c]);
                for (int j = 0; j < nb; j++)
                  {
                    ref[c][j].d = 1;
                    memcpy (ref[c][j].qs, q + QK * j, QK);
                  }
              }
            else
              {
                for (int i = 0; i < k; i++)
                  x[i] = tsr_test_uniform (-2, 2);
                tsr_quantize_row (TSR_TYPE_Q8_K, x, ref[c], k);
                lv->quantize (k, act[c], x);
                lv->offsets6 (k, act[c]);
              }
            ys[c] = act[c];
          }
        for (int ny = 1; ny <= ROWS; ny++)
          {
            float out[ROWS * ROWS];
            (types[T] == TSR_TYPE_Q4_K ? lv->dot_q4_K_x8
             : types[T] == TSR_TYPE_Q5_K ? lv->dot_q5_K_x8
             : types[T] == TSR_TYPE_IQ4_XS ? lv->dot_iq4_xs_x8
                                           : lv->dot_q6_K_x8) (k, packed,
                                                               row, ROWS,
                                                               ny, ys, out);
            for (int r = 0; r < ROWS; r++)
              for (int c = 0; c < ny; c++)
                {
                  double want = 0, mag = 0;
                  for (int i = 0; i < k; i++)
                    {
                      double p = (double) deq[r][i] * ref[c][i / QK].d
                                 * ref[c][i / QK].qs[i % QK];
                      want += p;
                      mag += fabs (p);
                    }
                  double err = fabs (out[r * ny + c] - want);
                  if (!(integral ? out[r * ny + c] == (float) want
                                 : err <= 1e-5 * mag))
                    fails++;
                  if (mag > 0)
                    worst = fmax (worst, err / mag);
                }
          }
      }
  CHECK (fails == 0, "level %s: %s repacked by 8 rows x q8_K dots of "
         "1..%d rows, exact on integer data, within 1e-5 of sum |w y| "
         "otherwise (worst %.2g, %d failures)", lv->name,
         tsr_type_name (types[T]), ROWS, worst, fails);
}

/* q6_K repacked by 8 rows at the ends of its sums: rows of all stored
   0 (value -32) and all 63 (31) alternating, scales 127, against
   activations all -127 or all 127 (8 products a lane reach -32 x 127 x
   8 and 31 x 127 x 8, the ends of what the kernels pack into int16),
   8 rows by 1..8 columns, within 1e-5 of sum |w y|.  A kernel that
   summed the stored values unshifted in int16 would saturate.  */
static void
check_x8_q6_ends (const struct level *lv)
{
  enum { NB = 2, K = QK * NB };
  const int T = 4;
  static _Alignas (64) char packed[ROWS * K], act[ROWS][K * 2];
  static struct tsr_block_q6_K plain[ROWS][NB];
  static float deq[ROWS][K];
  static int8_t q[K];
  const void *ys[ROWS];
  int fails = 0;

  for (int r = 0; r < ROWS; r++)
    {
      for (int j = 0; j < NB; j++)
        {
          memset (plain[r][j].ql, r % 2 ? 0xff : 0, sizeof plain[r][j].ql);
          memset (plain[r][j].qh, r % 2 ? 0xff : 0, sizeof plain[r][j].qh);
          memset (plain[r][j].scales, 127, sizeof plain[r][j].scales);
          plain[r][j].d = tsr_fp32_to_fp16 (1.0f / 1024);
        }
      tsr_dequantize_row (TSR_TYPE_Q6_K, plain[r], deq[r], K);
    }
  pack_x8 (T, (const char *) plain, sizeof plain[0], NB, packed);
  for (int c = 0; c < ROWS; c++)
    {
      memset (q, c % 3 ? 127 : -127, sizeof q);
      make_act (K, q, 1.0f, act[c]);
      ys[c] = act[c];
    }
  for (int ny = 1; ny <= ROWS; ny++)
    {
      float out[ROWS * ROWS];
      lv->dot_q6_K_x8 (K, packed, sizeof plain[0], ROWS, ny, ys, out);
      for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < ny; c++)
          {
            double want = 0, mag = 0;
            for (int i = 0; i < K; i++)
              {
                double p = (double) deq[r][i] * ((const int8_t *) ys[c])[i];
                want += p;
                mag += fabs (p);
              }
            fails += !(fabs (out[r * ny + c] - want) <= 1e-5 * mag);
          }
    }
  CHECK (fails == 0, "level %s: q6_K repacked by 8 rows, values -32 and "
         "31 by activations -127 and 127, within 1e-5 of sum |w y| (%d "
         "failures)", lv->name, fails);
}

/* A repacked group of types[T] (q4_K, q5_K, q6_K or iq4_xs) converted
   to the packed tiles mul_mat computes it with from 64 columns equals,
   byte for byte, the 8 plain rows packed (on random bytes: every bit of
   the values and of the packed scales).  */
static void
check_from_x8 (const struct level *lv, int T)
{
  enum { P8_BYTES = 2624 };     /* TSR_CPU_KP8_BYTES */
  static _Alignas (64) char plain[ROWS * MAX_K], packed[ROWS * MAX_K];
  static _Alignas (64) unsigned char want[MAX_NB * P8_BYTES];
  static _Alignas (64) unsigned char got[MAX_NB * P8_BYTES];
  int64_t bad = 0;

  for (int kind = 0; kind < 4; kind++)
    for (int nb = 1; nb <= 3; nb++)
      {
        int k = QK * nb;
        size_t row = tsr_row_size (types[T], k);
        for (int r = 0; r < ROWS; r++)
          fill_weights (T, nb, kind, plain + r * row);
        pack_x8 (T, plain, row, nb, packed);
        memset (want, 0x5a, sizeof want);
        memset (got, 0xa5, sizeof got);
        lv->kp8_pack (types[T], k, plain, row, ROWS, want);
        lv->kp8_from_x8 (types[T], k, packed, got);
        for (size_t i = 0; i < (size_t) nb * P8_BYTES; i++)
          bad += want[i] != got[i];
      }
  CHECK (bad == 0, "level %s: %s repacked by 8 rows, converted to the "
         "packed tiles, equals the plain rows packed (%ld bytes differ)",
         lv->name, tsr_type_name (types[T]), (long) bad);
}

/* 16 (or 8) plain rows of types[T] packed (tsr_cpu_kp8_pack) and
   converted to the AMX layout (tsr_cpu_kt_from_kp8): their dots with
   1, 5 and 40 activation rows (tiles of 16 and a last one of fewer)
   equal the packed tiles' dots bit for bit, on quantized random
   weights, random bytes and all-ones bytes against random activations
   and activations of -127 and 127 (the largest integer sums).  */
static void
check_kt (const struct level *lv, int T)
{
  enum { P8_BYTES = 2624, KT_BYTES = 5120, COLS = 40, NBK = 3 };
  static _Alignas (64) char plain[16 * NBK * 256];
  static _Alignas (64) unsigned char groups[2 * NBK * P8_BYTES];
  static _Alignas (64) unsigned char kt[NBK * KT_BYTES];
  static _Alignas (64) char act[COLS * 2 * NBK * 256 * 2];
  static float x[NBK * QK];
  static const int nys[] = { 1, 5, COLS };
  int64_t bad = 0, cases = 0;

  for (int kind = 0; kind < 4; kind += 1 + (kind == 1))
    for (int nb = 1; nb <= NBK; nb += 2)
      for (int nr = 16; nr >= 8; nr -= 8)
        {
          const int k = QK * nb;
          const size_t row = tsr_row_size (types[T], k);
          const size_t ys = tsr_cpu_kact6_size (k);
          const size_t bx = (size_t) nb * P8_BYTES / 8;
          const void *yp[COLS];
          for (int r = 0; r < 16; r++)
            fill_weights (T, nb, kind, plain + r * row);
          lv->kp8_pack (types[T], k, plain, row, 8, groups);
          lv->kp8_pack (types[T], k, plain + 8 * row, row, 8,
                        groups + 8 * bx);
          const unsigned char *g1 = nr == 16 ? groups + 8 * bx : groups;
          memset (kt, 0x5a, sizeof kt);
          lv->kt_from (types[T], k, groups, g1, kt);
          for (int c = 0; c < COLS; c++)
            {
              char *y = act + c * ys;
              for (int i = 0; i < k; i++)
                x[i] = kind == 3 && c % 2 ? (i % 3 ? 127 : -127)
                       : tsr_test_uniform (-2, 2);
              lv->quantize (k, y, x);
              lv->offsets6 (k, y);
              yp[c] = y;
            }
          for (int s = 0; s < 3; s++)
            {
              const int ny = nys[s];
              float want[16 * 8], got[16 * COLS];
              memset (got, 0x5a, sizeof got);
              lv->dot_kt[T] (k, groups, g1, kt, ny, act, ys, got);
              for (int c0 = 0; c0 < ny; c0 += 8)
                {
                  const int n8 = ny - c0 < 8 ? ny - c0 : 8;
                  lv->dot_p8[T] (k, groups, bx, nr, n8, yp + c0, want);
                  for (int r = 0; r < nr; r++)
                    for (int c = 0; c < n8; c++)
                      bad += memcmp (&want[r * n8 + c],
                                     &got[16 * (c0 + c) + r],
                                     sizeof want[0]) != 0;
                }
              cases++;
            }
        }
  CHECK (bad == 0 && cases == 36, "level %s: %s rows in the AMX layout, "
         "dots of 1, 5 and 40 columns by 16 and 8 rows equal the packed "
         "tiles' bit for bit (%ld of %ld cases' results differ)", lv->name,
         tsr_type_name (types[T]), (long) bad, (long) cases);
}

int
main (void)
{
  int tested = 0;

  for (int l = 0; levels[l]; l++)
    {
      const struct level *lv = levels[l];
      if (!tsr_test_level_begin (lv->name))
        continue;
      tsr_test_seed (12);
      srand (12);
      check_quantize (lv);
      for (int t = 0; t < N_TYPES; t++)
        {
          check_dequantize (lv, t);
          check_exact (lv, t);
          check_float (lv, t);
        }
      check_x8 (lv, 2);         /* q4_K */
      check_x8 (lv, 3);         /* q5_K */
      check_x8 (lv, 4);         /* q6_K */
      check_x8_q6_ends (lv);
      check_x8 (lv, 5);         /* iq4_xs */
      for (int t = 2; t < N_TYPES; t++)
        check_from_x8 (lv, t);
      for (int t = 0; t < N_TYPES; t++)
        if (types[t] == TSR_TYPE_IQ4_XS && (strcmp (lv->name, "v3") == 0
                                           || strcmp (lv->name, "v4") == 0))
          /* Packed iq4_xs values plus 128 need VNNI there.  */
          tsr_test_unsupported ("level %s: iq4_xs's packed tiles need VNNI",
                                lv->name);
        else
          check_kt (lv, t);
      tested++;
    }
  CHECK (tested > 0, "some level was tested (%d)", tested);
  return TSR_TEST_EXIT ();
}
