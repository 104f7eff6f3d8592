/* The integer dot product kernels of the CPU backend (cpu-qdot.c,
   cpu-qdot-32.c) and its rows of block types to f32, called directly at
   every ISA level built that this CPU runs.  cpu.exp links the
   per-level libraries of the module and defines TSR_CPU_BUILT_<suffix>
   for each.  Block types: q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4.

   - quantize_act_q8_0 gives exactly the values and f16 scales of the
     library's reference quantizer (tsr_quantize_row), ties and extreme
     blocks included, and the offset sums, scaled block sums and zero
     padding of the layout in cpu-vec.h;
   - rows to f32 give the bits of tsr_dequantize_row (NaN for NaN), on
     random blocks with random scales, specials included;
   - the dots of each type with 1 to 8 q8_0 rows are exact on integer
     data (unit scales, integer minimums: every partial sum is an
     integer below 2^24, so f32 holds it exactly), for row lengths that
     leave every kind of partial vector group;
   - with real scales they are within the f32 summation bound
     (nb + 4) 2^-23 sum (|d_x d_y| |x_i y_i| + |m_x d_y| |y_i|) of the
     double reference (vector kernels scale parts of a block's sum
     separately; q4_0's offset of 8 and q5_0's and mxfp4's of 16 may be
     taken off as a minimum -8 d_x or -16 d_x, which counts as m_x).
   - the dots of q4_0 and q8_0 weights repacked in groups of 8 rows
     (the CPU_REPACK layout, packed here from its description)
     likewise, 16 rows by 1 to 8 q8_0 rows;
   - those groups converted to the 32-row tiles (tsr_cpu_x32_from_x8),
     from the stored layout and from plain rows packed by x8_pack, make
     the same bytes, whose dots (in two runs of blocks) are exact on
     integer data, within the bound otherwise, and with AVX-512 the
     8-row kernels' results bit for bit, and by 40 evenly spaced rows
     (copies of the 8) their copies' results bit for bit;
   The reference integers of a weight block are tsr_dequantize_row's
   values of the block with its scale set to 1 and its minimum to 0.  */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"
#include "cpu-vec.h"
#include "cpu-levels.h"

typedef void (*quantize_fn) (int64_t, void *, const float *);
typedef tsr_test_qdot_fn dot_fn;
typedef void (*row_fn) (int64_t, float *, const void *);
typedef void (*x32_fn) (int64_t, int64_t, int64_t, const void *, int,
                        const void *const *, float *);
typedef void (*x32_from_fn) (tsr_type, int64_t, const void *, size_t, int,
                             int, void *);
typedef void (*x8_pack_fn) (tsr_type, int64_t, const void *, size_t, int,
                            void *);

struct level
{
  const char *name;             /* as the device description says */
  quantize_fn quantize;
  dot_fn dot[TSR_TYPE_COUNT];   /* by weight type */
  dot_fn dot_x8[7];             /* x8_types[] repacked by 8 rows */
  row_fn row[TSR_TYPE_COUNT];
  x32_fn x32[7];                /* x8_types[] in 32-row tiles */
  x32_from_fn x32_from;
  x8_pack_fn x8_pack;
};

/* The block types with kernels.  */
static const tsr_type types[] = { TSR_TYPE_Q8_0, TSR_TYPE_Q4_0,
                                  TSR_TYPE_Q4_1, TSR_TYPE_Q5_0,
                                  TSR_TYPE_Q5_1, TSR_TYPE_IQ4_NL,
                                  TSR_TYPE_MXFP4 };
#define N_TYPES (int) (sizeof types / sizeof types[0])

#define KERNELS(t, s)                                                   \
  void tsr_cpu_vec_dot_##t##_q8_0_##s (int64_t, const void *, size_t,   \
                                       int, int, const void *const *,   \
                                       float *);                        \
  void tsr_cpu_row_##t##_to_f32_##s (int64_t, float *, const void *);
#define ENTRY(T, t, s)                                                  \
  .dot[TSR_TYPE_##T] = tsr_cpu_vec_dot_##t##_q8_0_##s,                  \
  .row[TSR_TYPE_##T] = tsr_cpu_row_##t##_to_f32_##s
#define X8_KERNEL(t, s)                                                 \
  void tsr_cpu_vec_dot_##t##_q8_0_##s (int64_t, const void *, size_t,   \
                                       int, int, const void *const *,   \
                                       float *);
#define X32_KERNEL(v, s)                                                \
  void tsr_cpu_vec_dot_x32##v##_q8_0_##s (int64_t, int64_t, int64_t,    \
                                          const void *, int,            \
                                          const void *const *, float *);
/* The types CPU_REPACK stores in groups of 8 rows of blocks of 32, in
   the order of dot_x8.  */
static const tsr_type x8_types[] = { TSR_TYPE_Q4_0, TSR_TYPE_Q8_0,
                                     TSR_TYPE_Q4_1, TSR_TYPE_Q5_0,
                                     TSR_TYPE_Q5_1, TSR_TYPE_IQ4_NL,
                                     TSR_TYPE_MXFP4 };
#define N_X8 (int) (sizeof x8_types / sizeof x8_types[0])
#define LEVEL(s, level_name)                                            \
  void tsr_cpu_quantize_act_q8_0_##s (int64_t, void *, const float *);  \
  KERNELS (q8_0, s) KERNELS (q4_0, s) KERNELS (q4_1, s)                 \
  KERNELS (q5_0, s) KERNELS (q5_1, s) KERNELS (iq4_nl, s)               \
  KERNELS (mxfp4, s)                                                    \
  X8_KERNEL (q4_0x8, s) X8_KERNEL (q8_0x8, s) X8_KERNEL (q4_1x8, s)    \
  X8_KERNEL (q5_0x8m, s) X8_KERNEL (q5_1x8m, s)                         \
  X8_KERNEL (iq4_nlx8n, s) X8_KERNEL (mxfp4x8n, s)                      \
  X32_KERNEL (o1, s) X32_KERNEL (o2, s) X32_KERNEL (o16, s)             \
  X32_KERNEL (m, s)                                                     \
  void tsr_cpu_x32_from_x8_##s (tsr_type, int64_t, const void *, size_t, \
                                int, int, void *);                      \
  void tsr_cpu_x8_pack_##s (tsr_type, int64_t, const void *, size_t, int, \
                            void *);                                    \
  static const struct level level_##s = {                              \
    .name = level_name, .quantize = tsr_cpu_quantize_act_q8_0_##s,      \
    .dot_x8 = { tsr_cpu_vec_dot_q4_0x8_q8_0_##s,                        \
                tsr_cpu_vec_dot_q8_0x8_q8_0_##s,                        \
                tsr_cpu_vec_dot_q4_1x8_q8_0_##s,                        \
                tsr_cpu_vec_dot_q5_0x8m_q8_0_##s,                       \
                tsr_cpu_vec_dot_q5_1x8m_q8_0_##s,                       \
                tsr_cpu_vec_dot_iq4_nlx8n_q8_0_##s,                     \
                tsr_cpu_vec_dot_mxfp4x8n_q8_0_##s },                    \
    .x32 = { tsr_cpu_vec_dot_x32o1_q8_0_##s,                            \
             tsr_cpu_vec_dot_x32o16_q8_0_##s,                           \
             tsr_cpu_vec_dot_x32m_q8_0_##s,                             \
             tsr_cpu_vec_dot_x32o2_q8_0_##s,                            \
             tsr_cpu_vec_dot_x32m_q8_0_##s,                             \
             tsr_cpu_vec_dot_x32o16_q8_0_##s,                           \
             tsr_cpu_vec_dot_x32o16_q8_0_##s },                         \
    .x32_from = tsr_cpu_x32_from_x8_##s, .x8_pack = tsr_cpu_x8_pack_##s, \
    ENTRY (Q8_0, q8_0, s), ENTRY (Q4_0, q4_0, s), ENTRY (Q4_1, q4_1, s), \
    ENTRY (Q5_0, q5_0, s), ENTRY (Q5_1, q5_1, s),                       \
    ENTRY (IQ4_NL, iq4_nl, s), ENTRY (MXFP4, mxfp4, s) };
TSR_TEST_EACH_LEVEL (LEVEL)
#define LEVEL_ENTRY(s, level_name) &level_##s,
static const struct level *const levels[] = {
  TSR_TEST_EACH_LEVEL (LEVEL_ENTRY) NULL
};

enum { MAX_K = 32 * 40, ROWS = 8 };

/* Row lengths in blocks: 1..5, around the vector groups of 2, 4, 8 and
   16 blocks, and 32.  */
static const int lengths[] = { 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 19, 31,
                               32, 33, 40 };
#define N_LENGTHS (int) (sizeof lengths / sizeof lengths[0])

/* Activations for block J of a row: random, or one of the special
   blocks (ties, all zero, tiny, huge, subnormal).  */
static void
fill_block (float *x, int j)
{
  for (int i = 0; i < 32; i++)
    x[i] = tsr_test_uniform (-3, 3);
  switch (j % 9)
    {
    case 1:                     /* d = 1: x * id = v + 0.5, ties */
      for (int i = 0; i < 32; i++)
        x[i] = (float) ((i % 17) - 8) + 0.5f;
      x[31] = 127;
      break;
    case 3:
      memset (x, 0, 32 * sizeof *x);
      break;
    case 5:                     /* scale below f16: stored as 0 */
      for (int i = 0; i < 32; i++)
        x[i] *= 1e-7f;
      break;
    case 7:                     /* scale above f16: stored as inf */
      for (int i = 0; i < 32; i++)
        x[i] *= 1e30f;
      break;
    case 8:                     /* subnormal scale, 1 / d overflows */
      for (int i = 0; i < 32; i++)
        x[i] *= 1e-39f;
      break;
    }
}

static void
check_quantize (const struct level *lv)
{
  static float x[MAX_K];
  static struct tsr_block_q8_0 ref[MAX_K / 32];
  static _Alignas (64) char y[MAX_K * 4];

  for (int t = 0; t < N_LENGTHS; t++)
    {
      int nb = lengths[t], k = 32 * nb, bad = 0;
      int64_t nbp = tsr_cpu_qact_blocks (k);
      for (int j = 0; j < nb; j++)
        fill_block (x + 32 * j, j + t);
      tsr_quantize_row (TSR_TYPE_Q8_0, x, ref, k);
      memset (y, 0x5a, tsr_cpu_qact_size (k));
      lv->quantize (k, y, x);
      const int8_t *q = (const int8_t *) y;
      const int16_t *w = tsr_cpu_qact_offsets (y, k);
      const float *d = tsr_cpu_qact_scales (y, k);
      const float *sums = tsr_cpu_qact_sums (y, k);
      for (int64_t j = 0; j < nbp; j++)
        {
          int real = j < nb;
          float dj = real ? tsr_fp16_to_fp32 (ref[j].d) : 0.0f;
          int sum = 0;
          for (int i = 0; real && i < 32; i++)
            sum += ref[j].qs[i];
          float sj = dj * (float) sum;
          if (memcmp (&d[j], &dj, sizeof dj) != 0)
            bad++;
          if (memcmp (&sums[j], &sj, sizeof sj) != 0 && !(isnan (sj)
                                                          && isnan (sums[j])))
            bad++;
          for (int i = 0; i < 32; i++)
            {
              if (q[tsr_cpu_qact_pos (j, i)] != (real ? ref[j].qs[i] : 0))
                bad++;
              if (tsr_cpu_qact_blockwise (y, k)[32 * j + i]
                  != (real ? ref[j].qs[i] : 0))
                bad++;
            }
          for (int i = 0; i < 8; i++)
            {
              int want = real ? 8 * (ref[j].qs[2 * i] + ref[j].qs[2 * i + 1]
                                     + ref[j].qs[16 + 2 * i]
                                     + ref[j].qs[17 + 2 * i]) : 0;
              if (w[j * 8 + i] != want)
                bad++;
            }
        }
      CHECK (bad == 0, "level %s: quantize_act_q8_0 of %d blocks equals "
             "tsr_quantize_row, its values in both orders (%d differences)", lv->name, nb, bad);
    }
}

/* Offsets of a block's scale and minimum (-1: none); mxfp4's scale is
   its E8M0 byte.  */
static int
min_at (tsr_type type)
{
  return type == TSR_TYPE_Q4_1 || type == TSR_TYPE_Q5_1 ? 2 : -1;
}

static size_t
block_bytes (tsr_type type)
{
  return tsr_type_traits (type)->type_size;
}

static void
put_fp16 (char *p, float v)
{
  tsr_fp16_t h = tsr_fp32_to_fp16 (v);
  memcpy (p, &h, sizeof h);
}

static float
get_fp16 (const char *p)
{
  tsr_fp16_t h;
  memcpy (&h, p, sizeof h);
  return tsr_fp16_to_fp32 (h);
}

/* Weights of NB blocks of TYPE: random bits with unit scales and small
   integer minimums (INTEGRAL), or tsr_quantize_row of random floats.  */
static void
fill_weights (tsr_type type, int nb, int integral, char *w)
{
  static float v[MAX_K];
  size_t bs = block_bytes (type);

  if (integral)
    for (int j = 0; j < nb; j++)
      {
        char *b = w + j * bs;
        for (size_t i = 0; i < bs; i++)
          b[i] = (char) (type == TSR_TYPE_Q8_0 ? (rand () % 255) - 127
                                               : rand () & 0xff);
        if (type == TSR_TYPE_MXFP4)
          b[0] = (char) 128;    /* 2^(128 - 128): twice E2M1 values */
        else
          put_fp16 (b, 1.0f);
        if (min_at (type) >= 0)
          put_fp16 (b + min_at (type), (float) (rand () % 17 - 8));
      }
  else
    {
      for (int i = 0; i < 32 * nb; i++)
        v[i] = tsr_test_uniform (-1, 1);
      tsr_quantize_row (type, v, w, 32 * nb);
    }
}

/* Block J of W: its integers Q (the reference's values of the block
   with unit scale and no minimum), its scale *D and minimum *M.  */
static void
weight_block (tsr_type type, const char *w, int j, int q[32], double *d,
              double *m)
{
  char b[64];
  float v[32];
  size_t bs = block_bytes (type);

  memcpy (b, w + j * bs, bs);
  if (type == TSR_TYPE_MXFP4)
    {
      *d = ldexp (1.0, (unsigned char) b[0] - 128);
      b[0] = (char) 128;
    }
  else
    {
      *d = get_fp16 (b);
      put_fp16 (b, 1.0f);
    }
  *m = 0;
  if (min_at (type) >= 0)
    {
      *m = get_fp16 (b + min_at (type));
      put_fp16 (b + min_at (type), 0.0f);
    }
  tsr_dequantize_row (type, b, v, 32);
  for (int i = 0; i < 32; i++)
    q[i] = (int) v[i];
}

static void
check_dots (const struct level *lv, tsr_type type, int integral)
{
  static float x[ROWS][MAX_K];
  static struct tsr_block_q8_0 ref[ROWS][MAX_K / 32];
  static _Alignas (64) char act[ROWS][MAX_K * 4];
  static _Alignas (64) char w[MAX_K * 2];
  dot_fn dot = lv->dot[type];
  int fails = 0;
  double worst = 0;

  for (int t = 0; t < N_LENGTHS; t++)
    {
      int nb = lengths[t], k = 32 * nb;
      const void *ys[ROWS];
      for (int r = 0; r < ROWS; r++)
        {
          for (int i = 0; i < k; i++)
            x[r][i] = integral ? (float) ((rand () % 255) - 127)
                               : tsr_test_uniform (-2, 2);
          if (integral)         /* amax 127: d = 1, values exact */
            for (int j = 0; j < nb; j++)
              x[r][32 * j + (j + r) % 32] = (j + r) % 2 ? 127.0f : -127.0f;
          tsr_quantize_row (TSR_TYPE_Q8_0, x[r], ref[r], k);
          lv->quantize (k, act[r], x[r]);
          ys[r] = act[r];
        }
      fill_weights (type, nb, integral, w);
      for (int ny = 1; ny <= ROWS; ny++)
        {
          float out[ROWS];
          fails += tsr_test_qdot_rows (dot, type, k, w, ny, ys, out);
          for (int r = 0; r < ny; r++)
            {
              double want = 0, mag = 0;
              for (int j = 0; j < nb; j++)
                {
                  int q[32];
                  long s = 0, sa = 0, sy = 0, sya = 0;
                  double dx, mx;
                  weight_block (type, w, j, q, &dx, &mx);
                  double dy = tsr_fp16_to_fp32 (ref[r][j].d);
                  for (int i = 0; i < 32; i++)
                    {
                      s += (long) q[i] * ref[r][j].qs[i];
                      sa += labs ((long) q[i] * ref[r][j].qs[i]);
                      sy += ref[r][j].qs[i];
                      sya += labs ((long) ref[r][j].qs[i]);
                    }
                  want += dx * dy * (double) s + mx * dy * (double) sy;
                  mag += fabs (dx * dy) * (double) sa
                         + fabs (mx * dy) * (double) sya;
                  if (type == TSR_TYPE_Q5_0 || type == TSR_TYPE_MXFP4)
                    /* Offset 16 off the stored levels, in f32.  */
                    mag += 16 * fabs (dx * dy) * (double) sya;
                  if (type == TSR_TYPE_Q4_0)
                    mag += 8 * fabs (dx * dy) * (double) sya;
                }
              double err = fabs (out[r] - want);
              double tol = integral ? 0 : (nb + 4) * 0x1p-23 * mag;
              if (!(err <= tol))
                fails++;
              if (mag > 0)
                worst = fmax (worst, err / mag);
            }
        }
    }
  CHECK (fails == 0, "level %s: %s x q8_0 dots of 1..%d rows, %s "
         "(worst error %.2g of sum |products|, %d failures)", lv->name,
         tsr_type_name (type), ROWS, integral ? "exact on integer data"
         : "within the f32 summation bound", worst, fails);
}

/* Rows of TYPE (one of x8_types) repacked as the CPU_REPACK buffer
   type stores them (modules/cpu/cpu-repack.c's description, written
   again here): per group of 8 rows and block j, the 8 f16 scales
   (mxfp4: the 8 E8M0 bytes), q4_1's and q5_1's 8 f16 minimums, q5_0's
   and q5_1's 4 masks of 8 bytes (byte r of mask s: byte s of row r's
   32 fifth bits), then vectors of 16 lanes of 4 bytes, lane 2r + h,
   byte b for row r: two of nibbles, elements 4h + b (low nibble) and 8
   + 4h + b (high) in the first, 16 + 4h + b and 24 + 4h + b in the
   second (the stored 4-bit values, or indices into iq4_nl's and
   mxfp4's tables); q8_0's four, vector s holding element 8s + 4h + b
   plus 128.  */
static void
pack_x8 (tsr_type type, const char *plain, int nrows, int nb, char *out)
{
  const bool q8 = type == TSR_TYPE_Q8_0, e8 = type == TSR_TYPE_MXFP4;
  const bool mins = type == TSR_TYPE_Q4_1 || type == TSR_TYPE_Q5_1;
  const bool five = type == TSR_TYPE_Q5_0 || type == TSR_TYPE_Q5_1;
  const size_t bb = block_bytes (type), row = (size_t) nb * bb;
  /* In a plain block: the fifth bits (q5_0, q5_1), the values.  */
  const int qh = mins ? 4 : 2, qs = e8 ? 1 : qh + (five ? 4 : 0);
  /* In a group's block: the masks, the vectors.  */
  const int mo = e8 ? 8 : mins ? 32 : 16, vo = mo + (five ? 32 : 0);
  for (int g = 0; g < nrows / 8; g++)
    for (int j = 0; j < nb; j++)
      {
        unsigned char *o = (unsigned char *) out + g * 8 * row + j * 8 * bb;
        for (int r = 0; r < 8; r++)
          {
            const unsigned char *b = (const unsigned char *) plain
                                     + (g * 8 + r) * row + j * bb;
            int e[32];
            for (int i = 0; i < 32; i++)
              e[i] = q8 ? (int8_t) b[2 + i] + 128
                        : i < 16 ? b[qs + i] & 15 : b[qs + i - 16] >> 4;
            if (e8)
              o[r] = b[0];
            else
              memcpy (o + 2 * r, b, 2);
            if (mins)
              memcpy (o + 16 + 2 * r, b + 2, 2);
            for (int v = 0; five && v < 4; v++)
              o[mo + 8 * v + r] = b[qh + v];
            for (int h = 0; h < 2; h++)
              for (int q = 0; q < 4; q++)
                {
                  int at = 4 * (2 * r + h) + q, i = 4 * h + q;
                  if (q8)
                    for (int v = 0; v < 4; v++)
                      o[vo + 64 * v + at] = (unsigned char) e[8 * v + i];
                  else
                    {
                      o[vo + at] = (unsigned char) (e[i] | e[8 + i] << 4);
                      o[vo + 64 + at] = (unsigned char) (e[16 + i]
                                                         | e[24 + i] << 4);
                    }
                }
          }
      }
}

/* The double reference of a weight row W (NB blocks of TYPE) by the
   q8_0 row REF: *WANT, and *MAG, the sum of the magnitudes the f32
   steps meet.  */
static void
x8_reference (tsr_type type, const char *w, const struct tsr_block_q8_0 *ref,
              int nb, double *want, double *mag)
{
  *want = 0;
  *mag = 0;
  for (int j = 0; j < nb; j++)
    {
      int q[32];
      long sq = 0, sa = 0, sy = 0, sya = 0;
      double dx, mx;
      weight_block (type, w, j, q, &dx, &mx);
      double dy = tsr_fp16_to_fp32 (ref[j].d);
      for (int e = 0; e < 32; e++)
        {
          sq += (long) q[e] * ref[j].qs[e];
          sa += labs ((long) q[e] * ref[j].qs[e]);
          sy += ref[j].qs[e];
          sya += labs ((long) ref[j].qs[e]);
        }
      *want += dx * dy * (double) sq + mx * dy * (double) sy;
      /* The offsets (up to 128 times the activation sum)
         and minimums come in through f32 too.  */
      *mag += fabs (dx * dy) * (double) (sa + 128 * sya)
              + fabs (mx * dy) * (double) sya;
    }
}

/* The operands of the repacked dots, NB blocks a row: ROWS activation
   rows (integers with a block scale of 1 where INTEGRAL, else random)
   as their reference q8_0 blocks REF and in the level's layout ACT,
   pointed to by YS; NR weight rows of TYPE in W and, one after the
   other, in PLAIN.  */
static void
make_operands (const struct level *lv, tsr_type type, int nb, int integral,
               int nr, struct tsr_block_q8_0 ref[][MAX_K / 32],
               char act[][MAX_K * 4], const void **ys, char w[][MAX_K * 2],
               char *plain)
{
  static float x[MAX_K];
  const int k = 32 * nb;
  const size_t row = (size_t) nb * block_bytes (type);

  for (int r = 0; r < ROWS; r++)
    {
      for (int i = 0; i < k; i++)
        x[i] = integral ? (float) ((rand () % 255) - 127)
                        : tsr_test_uniform (-2, 2);
      for (int j = 0; integral && j < nb; j++)
        x[32 * j + (j + r) % 32] = (j + r) % 2 ? 127.0f : -127.0f;
      tsr_quantize_row (TSR_TYPE_Q8_0, x, ref[r], k);
      lv->quantize (k, act[r], x);
      ys[r] = act[r];
    }
  for (int i = 0; i < nr; i++)
    {
      fill_weights (type, nb, integral, w[i]);
      memcpy (plain + i * row, w[i], row);
    }
}

/* The repacked dots of x8_types[XT] of 16 rows (two groups) by 1..8
   activation rows: exact on integer data, within the f32 summation
   bound otherwise, against the same double reference as check_dots.
   (The buffer type stores some of them only at some levels; the
   kernels exist at every level, the reference's C at the others.)  */
static void
check_dots_x8 (const struct level *lv, int xt, int integral)
{
  const tsr_type type = x8_types[xt];
  enum { NR = 16 };
  static struct tsr_block_q8_0 ref[ROWS][MAX_K / 32];
  static _Alignas (64) char act[ROWS][MAX_K * 4];
  static char w[NR][MAX_K * 2], packed[NR * MAX_K * 2];
  int fails = 0;
  double worst = 0;

  for (int t = 0; t < N_LENGTHS; t++)
    {
      int nb = lengths[t], k = 32 * nb;
      size_t row = (size_t) nb * block_bytes (type);
      const void *ys[ROWS];
      char *plain = malloc (NR * row);
      make_operands (lv, type, nb, integral, NR, ref, act, ys, w, plain);
      pack_x8 (type, plain, NR, nb, packed);
      for (int ny = 1; ny <= ROWS; ny++)
        {
          float out[NR * ROWS];
          lv->dot_x8[xt] (k, packed, row, NR, ny, ys, out);
          for (int i = 0; i < NR; i++)
            for (int c = 0; c < ny; c++)
              {
                double want, mag;
                x8_reference (type, w[i], ref[c], nb, &want, &mag);
                double err = fabs (out[i * ny + c] - want);
                double tol = integral ? 0 : (nb + 4) * 0x1p-23 * mag;
                if (!(err <= tol))
                  fails++;
                if (mag > 0)
                  worst = fmax (worst, err / mag);
              }
        }
      free (plain);
    }
  CHECK (fails == 0, "level %s: %s repacked by 8 rows x q8_0 dots of "
         "16 rows by 1..%d, %s (worst error %.2g of sum |products|, %d "
         "failures)", lv->name, tsr_type_name (type), ROWS,
         integral ? "exact on integer data"
         : "within the f32 summation bound", worst, fails);
}

/* The 32-row tiles of x8_types[XT] (24 and 32 rows: 3 and 4 groups):
   converted from the groups as CPU_REPACK stores them and from the
   plain rows packed by x8_pack, byte for byte the same tile; its dots
   by 1..8 activation rows, taken in two runs of blocks, exact on
   integer data and within the f32 summation bound otherwise, and at
   the levels with AVX-512 (whose 8-row kernels take the same f32
   steps; without VNNI only those of values up to 31) bit for bit the
   8-row kernel's.  */
static void
check_x32 (const struct level *lv, int xt, int integral)
{
  const tsr_type type = x8_types[xt];
  /* Without VNNI the 8-row kernels of values plus 128 are the plain C
     reference (pmaddubsw's pairs would overflow).  */
  const bool plus128 = type == TSR_TYPE_Q8_0 || type == TSR_TYPE_IQ4_NL
                       || type == TSR_TYPE_MXFP4;
  const bool same = strcmp (lv->name, "v4-vnni") == 0
                    || strcmp (lv->name, "v4-amx") == 0
                    || (strcmp (lv->name, "v4") == 0 && !plus128);
  const bool mins = type == TSR_TYPE_Q4_1 || type == TSR_TYPE_Q5_1;
  const size_t tb = tsr_cpu_x32_block_bytes (mins);
  const struct tsr_cpu_x8_layout l = tsr_cpu_x8_layout_of (type);
  const size_t gb = tsr_cpu_x8_group_bytes (l.q8, l.ext);
  enum { NR = 32 };
  static struct tsr_block_q8_0 ref[ROWS][MAX_K / 32];
  static _Alignas (64) char act[ROWS][MAX_K * 4];
  static char w[NR][MAX_K * 2], packed[NR * MAX_K * 2];
  static _Alignas (64) char groups[4 * 288 * (MAX_K / 32)];
  static _Alignas (64) unsigned char tile[1280 * (MAX_K / 32)];
  static _Alignas (64) unsigned char tile2[1280 * (MAX_K / 32)];
  /* WIDE activation rows evenly spaced, row c a copy of row c % ROWS
     (the AMX kernels read 16 such rows in one tile load, a partial
     group of 16 from a copy).  */
  enum { WIDE = 40 };
  static _Alignas (64) char wide[WIDE][MAX_K * 4];
  int fails = 0, tiles_differ = 0, unequal = 0, wide_differ = 0;
  double worst = 0;

  for (int t = 0; t < N_LENGTHS; t++)
    for (int nr = 24; nr <= NR; nr += 8)
      {
        const int nb = lengths[t], k = 32 * nb, ng = nr / 8;
        const size_t row = (size_t) nb * block_bytes (type);
        const void *ys[ROWS];
        char *plain = malloc (NR * row);
        make_operands (lv, type, nb, integral, nr, ref, act, ys, w, plain);
        pack_x8 (type, plain, nr, nb, packed);
        lv->x32_from (type, k, packed, 8 * row, ng, 1, tile);
        for (int g = 0; g < ng; g++)
          lv->x8_pack (type, k, plain + (size_t) g * 8 * row, row, 8,
                       groups + (size_t) g * gb * nb);
        memset (tile2, 0x5a, tb * nb);
        lv->x32_from (type, k, groups, gb * nb, ng, 0, tile2);
        tiles_differ += memcmp (tile, tile2, tb * nb) != 0;
        for (int ny = 1; ny <= ROWS; ny++)
          {
            float acc[ROWS * 32], out[NR * ROWS];
            memset (acc, 0, sizeof acc);
            lv->x32[xt] (k, 0, nb / 2, tile, ny, ys, acc);
            lv->x32[xt] (k, nb / 2, nb - nb / 2, tile + tb * (nb / 2), ny,
                         ys, acc);
            lv->dot_x8[xt] (k, packed, row, nr, ny, ys, out);
            for (int i = 0; i < nr; i++)
              for (int c = 0; c < ny; c++)
                {
                  double want, mag;
                  x8_reference (type, w[i], ref[c], nb, &want, &mag);
                  double err = fabs (acc[32 * c + i] - want);
                  double tol = integral ? 0 : (nb + 4) * 0x1p-23 * mag;
                  if (!(err <= tol))
                    fails++;
                  if (mag > 0)
                    worst = fmax (worst, err / mag);
                  if (same && memcmp (&acc[32 * c + i], &out[i * ny + c],
                                      sizeof (float)) != 0)
                    unequal++;
                }
            if (ny == ROWS)
              {
                static float wacc[WIDE * 32];
                const void *wys[WIDE];
                for (int c = 0; c < WIDE; c++)
                  {
                    memcpy (wide[c], act[c % ROWS], sizeof wide[c]);
                    wys[c] = wide[c];
                  }
                memset (wacc, 0, sizeof wacc);
                lv->x32[xt] (k, 0, nb / 2, tile, WIDE, wys, wacc);
                lv->x32[xt] (k, nb / 2, nb - nb / 2, tile + tb * (nb / 2),
                             WIDE, wys, wacc);
                for (int c = 0; c < WIDE; c++)
                  wide_differ += memcmp (&wacc[32 * c], &acc[32 * (c % ROWS)],
                                         (size_t) nr * sizeof (float)) != 0;
              }
          }
        free (plain);
      }
  CHECK (fails == 0 && tiles_differ == 0 && unequal == 0
         && wide_differ == 0,
         "level %s: %s in 32-row tiles (24 and 32 rows) x q8_0 dots by "
         "1..%d, two runs of blocks, %s (worst error %.2g of sum "
         "|products|, %d failures); converted from the repacked and the "
         "packed groups alike (%d differ)%s (%d differ); by %d evenly "
         "spaced rows, each row's results those of its copy among %d, bit "
         "for bit (%d differ)", lv->name,
         tsr_type_name (type), ROWS,
         integral ? "exact on integer data"
         : "within the f32 summation bound", worst, fails, tiles_differ,
         same ? "; the 8-row kernel's results, bit for bit"
         : "; (other f32 steps than this level's 8-row kernel)", unequal,
         WIDE, ROWS, wide_differ);
}

/* A random scale: mostly ordinary, sometimes zero, subnormal, huge,
   infinite or NaN.  */
static float
random_scale (void)
{
  static const float special[] = { 0.0f, 6e-8f, 3e-5f, 65504.0f, INFINITY,
                                   NAN, -1.5f };
  int r = rand () % 16;
  return r < (int) (sizeof special / sizeof *special)
         ? special[r] : tsr_test_uniform (-4, 4);
}

static void
check_rows (const struct level *lv, tsr_type type)
{
  static _Alignas (64) char w[MAX_K * 2];
  static float got[MAX_K], want[MAX_K];
  size_t bs = block_bytes (type);
  int bad = 0;

  for (int t = 0; t < N_LENGTHS; t++)
    {
      int nb = lengths[t], k = 32 * nb;
      for (int j = 0; j < nb; j++)
        {
          char *b = w + j * bs;
          for (size_t i = 0; i < bs; i++)
            b[i] = (char) (rand () & 0xff);
          if (type != TSR_TYPE_MXFP4)
            put_fp16 (b, random_scale ());
          if (min_at (type) >= 0)
            put_fp16 (b + min_at (type), random_scale ());
        }
      tsr_dequantize_row (type, w, want, k);
      lv->row[type] (k, got, w);
      for (int i = 0; i < k; i++)
        if (memcmp (&got[i], &want[i], sizeof got[i]) != 0
            && !(isnan (got[i]) && isnan (want[i])))
          bad++;
    }
  CHECK (bad == 0, "level %s: %s rows to f32 give tsr_dequantize_row's "
         "bits (%d differences)", lv->name, tsr_type_name (type), bad);
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
      tsr_test_seed (11);
      srand (11);
      check_quantize (lv);
      for (int t = 0; t < N_TYPES; t++)
        {
          check_rows (lv, types[t]);
          for (int integral = 1; integral >= 0; integral--)
            check_dots (lv, types[t], integral);
        }
      for (int xt = 0; xt < N_X8; xt++)
        for (int integral = 1; integral >= 0; integral--)
          {
            check_dots_x8 (lv, xt, integral);
            check_x32 (lv, xt, integral);
          }
      tested++;
    }
  CHECK (tested > 0, "some level was tested (%d)", tested);
  return TSR_TEST_EXIT ();
}
