/* cpu-ops-matmul.c - mul_mat: dst[i, j] = dot (a row i, b row j).
 *
 * a [k, m, a2, a3] (f32, f16, bf16, or a block type of tsr_cpu_is_quant)
 * holds the weights, b [k, n, b2, b3] is f32, dst [m, n, b2, b3] f32;
 * batch (i2, i3) of b uses batch (i2 / (b2 / a2), i3 / (b3 / a3)) of a.
 *
 * Three ways, by weight type and n:
 * - block types and n < QDOT_MAX_N, weights repacked in the CPU_REPACK
 *   buffer at every n, and plain weights of the blocks of 32 from
 *   TSR_CPU_X8P_MIN_N columns where the level can pack them: integer dots
 *   (cpu-qdot.c,
 *   cpu-qdot-32.c; cpu-kquant.c for the super-block types, whose
 *   activations are quantized to q8_K instead of q8_0).  A prepare pass quantizes every activation row
 *   once, split over the threads, into the shared scratch; then the weight rows are dealt to
 *   the threads in tiles of contiguous rows, and each weight row is
 *   dotted with up to TSR_CPU_QDOT_MAX_COLS activation rows per pass,
 *   so the weights are read from memory once (a tile stays in L2 for
 *   the further passes).  The dots run at a rate about independent of
 *   n; the f32 GEMM, which converts the weights once per JB columns,
 *   overtakes them where its conversion has enough columns to pay for:
 *   near n = 80 for the 32-element blocks, near n = 256 for the
 *   super-blocks (2 threads, m = 4096, k = 14336: q4_0 / q8_0 dots
 *   about 210-230 GFLOP/s against the GEMM's 200 at n = 64 and 260-280
 *   at 512; q4_K dots about 270 against 140 at 64, 250 at 256, 275 at
 *   512), so QDOT_MAX_N and QDOT_MAX_N_K.
 *   Repacked weights (cpu-repack.c) go through register tiles of 8 rows
 *   by up to 8 columns (cpu-qdot-x8.c) at every n; plain weights of
 *   the blocks of 32 take the same kernels from TSR_CPU_X8P_MIN_N columns where
 *   the level has them (AVX2, AVX-512; q8_0, iq4_nl and mxfp4 with
 *   VNNI), each thread packing the 8-row groups of its tile of
 *   rows into its scratch once for all the columns (tsr_cpu_x8_pack),
 *   which leaves them with the repacked weights' results bit for bit
 *   and outruns both the plain dots and the f32 GEMM (two cores, v4-vnni,
 *   4096 x 14336, GFLOP/s at n = 16 / 64 / 512: q4_0 329 / 310 / 430
 *   -> 659 / 1,050 / 1,148, q8_0 330 / 329 / 430 -> 516 / 940 / 1,101,
 *   q5_0 323 / 320 / 409 -> 559 / 914 / 1,073, iq4_nl 330 / 330 / 439
 *   -> 677 / 976 / 1,130, q4_1 350 / - / 425 -> 670 / 924 / 991, q5_1
 *   320 / - / 450 -> 531 / 826 / 826, mxfp4 324 / - / 460 -> 625 / 926
 *   / 1,072; 41-54% of the 8-bit dot-product peak at 512).
 *   From TSR_CPU_X32_MIN_N columns (AVX-512 with VNNI) the blocks of
 *   32, repacked or plain, go through 32-row tiles instead
 *   (mul_mat_x32): each thread converts its 32 rows, X32_RUN blocks at
 *   a time, into a layout with a row per vector lane
 *   (tsr_cpu_x32_from_x8) and dots every column with them, the same
 *   f32 steps as the 8-row kernels (q4_0 at 512: 1,362-1,424); at
 *   v4-amx from TSR_CPU_X32_AMX_MIN_N columns, 16 by 16 of a block in
 *   one tile multiply (cpu-qdot-x8.c).
 *   Plain weights of the super-block types (AVX-512; iq4_xs with VNNI)
 *   are packed too (tsr_cpu_kp8_pack, cpu-vec-k.h: 8 rows' values as
 *   bytes, their scales and biases transposed): from
 *   TSR_CPU_KP8_MIN_N columns a thread's tile at once for all its
 *   column passes; they sum as the repacked q4_K and q6_K kernels do (two
 *   cores, v4-vnni, GFLOP/s at n = 16 / 64 / 512: q2_K 391 / 389 / 469
 *   -> 538 / 713 / 796, q3_K 364 / 385 / 472 -> 532 / 719 / 819, q4_K
 *   369 / 371 / 467 -> 590 / 776 / 900, q5_K 367 / 372 / 468 -> 503 /
 *   708 / 798, q6_K 322 / 350 / 481 -> 482 / 655 / 713, iq4_xs 472 /
 *   485 / 477 -> 553 / 820 / 908).
 *   Repacked q4_K, q5_K, q6_K and iq4_xs take the same tiles from
 *   TSR_CPU_KP8_MIN_N_X8 columns, each thread converting its tile from
 *   the repacked layout (tsr_cpu_kp8_from_x8: a few vector operations
 *   a vector of values, the bytes tsr_cpu_kp8_pack makes of the plain
 *   rows, so the results stay bit for bit the same), since the tiles
 *   of 16 rows outrun the repacked kernels' 8 where there are enough
 *   columns to pay for the conversion (two cores, v4-vnni, GFLOP/s at
 *   n = 512, 4096 x 14336: q4_K 1,043 -> 1,068-1,091, q5_K 950-966 ->
 *   1,058-1,070, q6_K 727-759 -> 856-863, iq4_xs 985-1,012 ->
 *   1,069-1,075; 8192 x 2048: 962-979 -> 1,027-1,033, 906-918 ->
 *   959-961, 713-729 -> 781-787, 918-929 -> 950-983; at 64 columns
 *   about even, below it the repacked kernels win).
 *   At v4-amx q3_K, q4_K, q5_K and iq4_xs, plain or repacked, go
 *   from TSR_CPU_KT_MIN_N columns through AMX tiles instead
 *   (mul_mat_kt): each thread packs its 16 rows as above, converts
 *   them into the AMX layout (tsr_cpu_kt_from_kp8, cpu-vec-k.h) and
 *   dots KT_COLS columns a call, 16 activation rows a tile multiply;
 *   the same results, bit for bit.
 * - otherwise, n >= GEMM_MIN_N (F32_GEMM_MIN_N, HALF_GEMM_MIN_N for
 *   float weights): a packed GEMM (cpu-gemm.c).  Per batch
 *   the product is cut into blocks of IB weight rows by JB activation
 *   rows, dealt to threads in contiguous ranges (weight blocks vary
 *   fastest); for each run of KC along k a thread packs the activation
 *   block once and every weight block it owns (converted to f32 on the
 *   way: f16, bf16 and the quantized types cost one conversion per
 *   element per JB columns), then runs the micro-kernel over the packed
 *   panels.
 * - otherwise (gemv and a few columns of float weights, or a
 *   destination with strided elements): tiles of ROW_TILE rows of a by
 *   COL_TILE rows of b; each a row is dotted with each b row directly in
 *   its stored type (cpu-vec.c widens it in registers), so the weights
 *   are read once per column tile at their stored size.  Dense f32,
 *   f16 or bf16 weights go through register tiles of 4 rows by up to 6
 *   columns along k in chunks of TILE_KC (tile_dots), so each weight
 *   and each activation load feeds several multiply-adds, and 4 rows
 *   stream from memory at once: even for one column that reads faster
 *   than a row at a time (2 threads, 16384 x 14336: f32 23.3 -> 28.7,
 *   f16 20.7 -> 26.1 wGB/s, the read roof 27.6).
 *   Weights with strided elements are converted to f32 per tile first.
 * The tile loader is shared with mul_mat_id (cpu-ops-nn.c).  */
#include <config.h>

#include <string.h>

#include "cpu-impl.h"

#define ROW_TILE TSR_CPU_WEIGHT_TILE
#define COL_TILE 64

/* GEMM blocking: KC floats of a packed panel row (a multiple of every
   quantized block size), IB weight rows (a multiple of every level's
   NR) and JB activation rows per block.  */
#define GEMM_MIN_N 16
/* Float weights: the register tiles (tile_dots) beat the GEMM below
   about 32 columns of f32 and 40 of f16 or bf16, whose conversion the
   GEMM pays per JB columns (two cores, m = 4096, k = 14336: f32 at
   n = 16 134 against 93 GFLOP/s, 24 159 / 150, 32 156 / 163; f16 at
   n = 16 201 / 92, 32 189 / 152, 48 179 / 196).  */
#define F32_GEMM_MIN_N 32
#define HALF_GEMM_MIN_N 40
/* Integer dots below this many activation rows (see above): 32-element
   blocks, super-blocks (q8_K activations); rows of weights per unit of
   work (when there are enough for every thread).  */
#define QDOT_MAX_N 80
#define QDOT_MAX_N_K 320
#define QDOT_TILE 16
/* The 32-row tiles convert and compute this many blocks of 32 at a
   time (144 or 160 KiB converted, which stay in L2 for every column;
   runs of 32 and 64 blocks, which L1 holds, lost 5-12% at 512 columns
   by reading the columns' activations in shorter pieces).  */
#define X32_RUN 128
/* Activation columns a call of the AMX tiles' kernels (v4-amx): 4 tile
   multiplies of 16, the 64 columns' sums (8 KiB) in L1.  */
#define X32_AMX_COLS 64
/* Activation columns a call of the super-block types' AMX kernels:
   the 16 rows' layout (5 KiB a super-block) read once per 64.  */
#define KT_COLS 64
#define KC 256
#define IB 256
#define JB 512
#define GEMM_ALIGN 64

bool
tsr_cpu_mul_mat_supports (const tsr_tensor *dst)
{
  const tsr_tensor *a = dst->src[0];

  /* Repacked weights only as the whole tensor the buffer packed.  */
  if (tsr_cpu_repacked (a))
    return !a->view_src && !tsr_cpu_repacked (dst->src[1]);
  return tsr_cpu_is_plain_float (a->type)
         || (tsr_cpu_is_quant (a->type) && tsr_cpu_dense_rows (a));
}

/* Plain weights whose type the repacked dots' layout holds (the
   blocks of 32), at least TSR_CPU_X8P_MIN_N columns: packed group by
   group into the scratch as they are used and computed by the
   repacked kernels (tsr_cpu_x8_pack); plain super-blocks from
   tsr_cpu_kp8_min_n () columns and repacked ones from
   TSR_CPU_KP8_MIN_N_X8, into the packed tiles (tsr_cpu_kp8_pack,
   tsr_cpu_kp8_from_x8).  The kernel, and in *GROUP the bytes of a
   group's block; NULL otherwise.  */
static tsr_cpu_qdot_fn
x8p_kernel (const tsr_tensor *dst, size_t *group)
{
  const tsr_tensor *a = dst->src[0];

  if (tsr_cpu_repacked (a))
    return tsr_cpu_is_kquant (a->type)
           && dst->src[1]->ne[1] >= TSR_CPU_KP8_MIN_N_X8
           && (tsr_cpu_repack_level () & TSR_CPU_REPACK_PACK_K16)
           ? tsr_cpu_qdot_x8p_kernel (a->type, group) : NULL;
  if (dst->src[1]->ne[1] < (tsr_cpu_is_kquant (a->type)
                               ? tsr_cpu_kp8_min_n () : TSR_CPU_X8P_MIN_N)
      || a->nb[0] != tsr_type_traits (a->type)->type_size)
    return NULL;
  return tsr_cpu_qdot_x8p_kernel (a->type, group);
}

/* The blocks of 32, stored repacked or plain where the level packs
   them (x8p_kernel), from TSR_CPU_X32_MIN_N columns (with AMX,
   TSR_CPU_X32_AMX_MIN_N): converted by tile
   into the 32-row tiles (x32_pack_run).  The kernel, and in
   *BLOCK the bytes of a tile's block; NULL otherwise.  */
static tsr_cpu_x32_fn
x32_kernel (const tsr_tensor *dst, size_t *block)
{
  const tsr_tensor *a = dst->src[0];
  const int64_t min_n = tsr_cpu_repack_level () & TSR_CPU_REPACK_AMX
                        ? TSR_CPU_X32_AMX_MIN_N : TSR_CPU_X32_MIN_N;
  size_t group;

  if (dst->src[1]->ne[1] < min_n || tsr_cpu_is_kquant (a->type)
      || (!tsr_cpu_repacked (a)
          && (a->nb[0] != tsr_type_traits (a->type)->type_size
              || !tsr_cpu_qdot_x8p_kernel (a->type, &group))))
    return NULL;
  return tsr_cpu_qdot_x32_kernel (a->type, block);
}

/* The bytes of a block of an 8-row group that plain weights A are
   packed into before x32_pack_run converts them; 0 for weights stored
   repacked, which it converts where they are.  */
static size_t
x32_group (const tsr_tensor *a)
{
  size_t group = 0;

  if (!tsr_cpu_repacked (a))
    tsr_cpu_qdot_x8p_kernel (a->type, &group);
  return group;
}

/* The super-block types on AMX tiles (v4-amx), repacked or plain
   where the level packs them (x8p_kernel's packed tiles), from
   TSR_CPU_KT_MIN_N columns: each thread's 16 rows packed, then
   converted into the AMX layout (mul_mat_kt).  The kernel; NULL
   otherwise.  */
static tsr_cpu_kt_fn
kt_kernel (const tsr_tensor *dst)
{
  const tsr_tensor *a = dst->src[0];
  size_t group;

  if (dst->src[1]->ne[1] < TSR_CPU_KT_MIN_N || !tsr_cpu_is_kquant (a->type)
      || !tsr_cpu_qdot_x8p_kernel (a->type, &group)
      || (!tsr_cpu_repacked (a)
          && a->nb[0] != tsr_type_traits (a->type)->type_size))
    return NULL;
  return tsr_cpu_qdot_kt_kernel (a->type);
}

/* Its scratch: a tile's two packed groups, their AMX layout.  */
static size_t
kt_scratch (const tsr_tensor *a)
{
  const size_t sbs = (size_t) (a->ne[0] / TSR_QK_K);
  return sbs * (2 * TSR_CPU_KP8_BYTES + TSR_CPU_KT_BYTES) + GEMM_ALIGN;
}

/* Repacked weights (CPU_REPACK) take the integer dots at every n:
   their 8-row by 8-column register tiles outrun the GEMM, which would
   have to unpack them; so do the plain weights packed likewise.  */
static bool
use_qdots (const tsr_tensor *dst)
{
  tsr_type t = dst->src[0]->type;
  size_t group;

  return tsr_cpu_is_quant (t)
         && (dst->src[1]->ne[1] < (tsr_cpu_is_kquant (t) ? QDOT_MAX_N_K
                                                         : QDOT_MAX_N)
             || tsr_cpu_repacked (dst->src[0])
             || x8p_kernel (dst, &group) || x32_kernel (dst, &group)
             || kt_kernel (dst));
}

static bool
use_gemm (const tsr_tensor *dst)
{
  tsr_type t = dst->src[0]->type;
  int64_t min_n = t == TSR_TYPE_F32 ? F32_GEMM_MIN_N
                  : tsr_cpu_is_plain_float (t) ? HALF_GEMM_MIN_N : GEMM_MIN_N;
  return dst->src[1]->ne[1] >= min_n && dst->nb[0] == sizeof (float)
         && dst->nb[1] % sizeof (float) == 0;
}

/* Integer dots: one row of b as contiguous floats, to quantize.
   Small n: ROW_TILE converted rows of a and one contiguous row of b.
   GEMM: the packed activation block, a packed weight block, and
   TSR_CPU_GEMM_MAX_NR rows of KC floats to convert weights into.  */
size_t
tsr_cpu_mul_mat_scratch (const tsr_tensor *dst)
{
  if (use_qdots (dst))
    {
      const tsr_tensor *a = dst->src[0];
      size_t group, block, row = (size_t) dst->src[1]->ne[0] * sizeof (float);
      /* The packed groups of a tile of rows; a 32-row tile's run of
         blocks, plain rows' 8-row groups to convert it from, and the
         tile's sums.  */
      size_t groups = kt_kernel (dst) ? kt_scratch (a)
                      : x32_kernel (dst, &block)
                      ? X32_RUN * block
                        + TSR_CPU_X32_ROWS / TSR_CPU_REPACK_ROWS * X32_RUN
                          * x32_group (a)
                        + TSR_CPU_X32_ROWS * sizeof (float)
                          * (size_t) dst->src[1]->ne[1] + GEMM_ALIGN
                      : x8p_kernel (dst, &group)
                      ? QDOT_TILE / TSR_CPU_REPACK_ROWS * group
                        * (size_t) (a->ne[0] / 32)
                      : 0;
      return groups > row ? groups : row;
    }

  size_t dots = (size_t) (ROW_TILE + 1) * (size_t) dst->src[0]->ne[0]
                * sizeof (float);
  size_t gemm = ((size_t) KC * (JB + TSR_CPU_GEMM_MAX_MR) + (size_t) KC * IB
                 + (size_t) KC * TSR_CPU_GEMM_MAX_NR) * sizeof (float)
                + 3 * GEMM_ALIGN;

  return use_gemm (dst) && gemm > dots ? gemm : dots;
}

/* Integer dots: every row of b, quantized.  */
size_t
tsr_cpu_mul_mat_shared (const tsr_tensor *dst)
{
  const tsr_tensor *b = dst->src[1];

  return use_qdots (dst) ? (size_t) tsr_cpu_nrows (b)
                           * tsr_cpu_act_size (dst->src[0]->type, b->ne[0])
                         : 0;
}

void
tsr_cpu_quantize_rows (const struct tsr_cpu_op_ctx *c, const tsr_tensor *b,
                       tsr_type wtype, int ith, int nth)
{
  const int64_t k = b->ne[0];
  const size_t size = tsr_cpu_act_size (wtype, k);
  const bool kquant = tsr_cpu_is_kquant (wtype);
  int64_t r0, r1;

  tsr_cpu_split (tsr_cpu_nrows (b), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      const char *src = tsr_cpu_row (b, r);
      const float *row = (const float *) src;

      if (b->nb[0] != sizeof (float))
        {
          tsr_cpu_row_to_f32 (TSR_TYPE_F32, src, b->nb[0], c->scratch[ith],
                              k);
          row = c->scratch[ith];
        }
      char *y = (char *) c->shared + r * size;
      if (kquant)
        {
          tsr_cpu_quantize_act_q8_K (k, y, row);
          if (wtype == TSR_TYPE_Q6_K)
            tsr_cpu_kact_fill_offsets6 (k, y);
        }
      else
        tsr_cpu_quantize_act_q8_0 (k, y, row);
    }
}

int
tsr_cpu_mul_mat_prepare (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst,
                         int ith, int nth)
{
  if (use_qdots (dst))
    tsr_cpu_quantize_rows (c, dst->src[1], dst->src[0]->type, ith, nth);
  return TSR_OK;
}

void
tsr_cpu_weight_tile_load (struct tsr_cpu_weight_tile *t, const tsr_tensor *a,
                          int64_t ia2, int64_t ia3, int64_t first, float *buf)
{
  const int64_t k = a->ne[0];
  const bool direct = a->type == TSR_TYPE_F32 && a->nb[0] == sizeof (float);

  if (t->first == first && t->i2 == ia2 && t->i3 == ia3)
    return;
  t->i2 = ia2;
  t->i3 = ia3;
  t->first = first;
  t->count = a->ne[1] - first < TSR_CPU_WEIGHT_TILE ? a->ne[1] - first
                                                    : TSR_CPU_WEIGHT_TILE;
  for (int64_t r = 0; r < t->count; r++)
    {
      const char *s = tsr_cpu_at (a, 0, first + r, ia2, ia3);
      if (direct)
        t->rows[r] = (const float *) s;
      else
        {
          tsr_cpu_row_to_f32 (a->type, s, a->nb[0], buf + r * k, k);
          t->rows[r] = buf + r * k;
        }
    }
}

/* The dot of weight row AROW (K elements of TYPE, dense) and BROW.  */
static inline float
dot_row (tsr_type type, int64_t k, const void *arow, const float *brow)
{
  switch (type)
    {
    case TSR_TYPE_F16:
      return tsr_cpu_vec_dot_f16 (k, arow, brow);
    case TSR_TYPE_BF16:
      return tsr_cpu_vec_dot_bf16 (k, arow, brow);
    case TSR_TYPE_Q8_0:
      return tsr_cpu_vec_dot_q8_0 (k, arow, brow);
    case TSR_TYPE_Q4_0:
      return tsr_cpu_vec_dot_q4_0 (k, arow, brow);
    default:
      return tsr_cpu_vec_dot_f32 (k, arow, brow);
    }
}

/* Rows [FIRST, FIRST + COUNT) of float weights A times columns [J0,
   J_END) of B in register tiles (tsr_cpu_vec_dot_tile) of 4
   rows by a group of up to TSR_CPU_DOT_TILE_NC columns (groups of even
   size: 13 columns go as 5 + 4 + 4), along k in chunks of TILE_KC.
   Within a chunk every row of the tile passes over one column group
   (TILE_KC floats a column, about 24 KiB: it stays in L1) before the
   next group, so the columns are read from L1 and the chunk of weights
   (16 rows) from L2 after its first group: with the rows outermost,
   32 columns (128 KiB a chunk) were streamed from L2 for every 4 rows,
   and f16 at n = 16 and 24 ran 10% slower.  Each weight is read from
   memory once for all the columns.  Chunks sum in double.  */
#define TILE_KC 1024

static void
tile_dots (const tsr_tensor *a, const tsr_tensor *b, tsr_tensor *dst,
           int64_t first, int64_t count, int64_t j0, int64_t j_end,
           int64_t i2, int64_t i3, int64_t r2, int64_t r3)
{
  const int64_t k = a->ne[0];
  const size_t esize = tsr_type_traits (a->type)->type_size;
  double acc[ROW_TILE][COL_TILE];
  const char *rows[ROW_TILE];
  const float *cols[COL_TILE];
  const int64_t nj = j_end - j0;
  const int64_t groups = (nj + TSR_CPU_DOT_TILE_NC - 1) / TSR_CPU_DOT_TILE_NC;
  int nc;

  for (int64_t q = 0; q < count; q++)
    {
      rows[q] = tsr_cpu_at (a, 0, first + q, i2 / r2, i3 / r3);
      for (int64_t e = 0; e < nj; e++)
        acc[q][e] = 0;
    }
  for (int64_t e = 0; e < nj; e++)
    cols[e] = (const float *) tsr_cpu_at (b, 0, j0 + e, i2, i3);
  for (int64_t k0 = 0; k0 < k; k0 += TILE_KC)
    {
      int64_t kl = k - k0 < TILE_KC ? k - k0 : TILE_KC;
      for (int64_t j = 0, g = 0; j < nj; j += nc, g++)
        {
          const float *yc[TSR_CPU_DOT_TILE_NC];
          /* Even groups, the first nj % groups one column wider.  */
          nc = (int) (nj / groups + (g < nj % groups));
          for (int e = 0; e < nc; e++)
            yc[e] = cols[j + e] + k0;
          for (int64_t r = 0; r < count; r += 4)
            {
              int mr = count - r < 4 ? (int) (count - r) : 4;
              const void *xr[4];
              float out[4 * TSR_CPU_DOT_TILE_NC];
              for (int q = 0; q < mr; q++)
                xr[q] = rows[r + q] + (size_t) k0 * esize;
              tsr_cpu_vec_dot_tile (kl, a->type, mr, xr, nc, yc, out);
              for (int q = 0; q < mr; q++)
                for (int e = 0; e < nc; e++)
                  acc[r + q][j + e] += out[q * TSR_CPU_DOT_TILE_NC + e];
            }
        }
    }
  for (int64_t q = 0; q < count; q++)
    for (int64_t e = 0; e < nj; e++)
      *(float *) tsr_cpu_at (dst, first + q, j0 + e, i2, i3)
        = (float) acc[q][e];
}

static int
mul_mat_dots (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
              int nth)
{
  const tsr_tensor *a = dst->src[0], *b = dst->src[1];
  const int64_t k = a->ne[0], m = a->ne[1], n = b->ne[1];
  const int64_t row_tiles = (m + ROW_TILE - 1) / ROW_TILE;
  const int64_t col_tiles = (n + COL_TILE - 1) / COL_TILE;
  const int64_t tiles = row_tiles * col_tiles * b->ne[2] * b->ne[3];
  const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  const bool b_direct = b->nb[0] == sizeof (float);
  /* dot_row reads these types in place; others are converted.  */
  const bool a_direct = tsr_cpu_dense_rows (a)
                        && (tsr_cpu_is_plain_float (a->type)
                            || a->type == TSR_TYPE_Q8_0
                            || a->type == TSR_TYPE_Q4_0);
  float *a_buf = c->scratch[ith];
  float *b_buf = a_buf + ROW_TILE * k;
  struct tsr_cpu_weight_tile tile = TSR_CPU_WEIGHT_TILE_INIT;
  int64_t u0, u1;

  tsr_cpu_split (tiles, ith, nth, &u0, &u1);
  for (int64_t u = u0; u < u1; u++)
    {
      /* Column tiles vary fastest, so a thread's consecutive tiles
         reuse the a rows it has converted.  */
      int64_t ct = u % col_tiles, rt = u / col_tiles % row_tiles;
      int64_t batch = u / (col_tiles * row_tiles);
      int64_t i2 = batch % b->ne[2], i3 = batch / b->ne[2];
      int64_t j_end = (ct + 1) * COL_TILE < n ? (ct + 1) * COL_TILE : n;
      int64_t first = rt * ROW_TILE;
      int64_t count = m - first < ROW_TILE ? m - first : ROW_TILE;

      if (!a_direct)
        tsr_cpu_weight_tile_load (&tile, a, i2 / r2, i3 / r3, first, a_buf);
      if (a_direct && b_direct && tsr_cpu_is_plain_float (a->type))
        {
          tile_dots (a, b, dst, first, count, ct * COL_TILE, j_end, i2, i3,
                     r2, r3);
          continue;
        }
      for (int64_t j = ct * COL_TILE; j < j_end; j++)
        {
          const char *bs = tsr_cpu_at (b, 0, j, i2, i3);
          const float *brow = (const float *) bs;

          if (!b_direct)
            {
              tsr_cpu_row_to_f32 (TSR_TYPE_F32, bs, b->nb[0], b_buf, k);
              brow = b_buf;
            }
          for (int64_t r = 0; r < count; r++)
            *(float *) tsr_cpu_at (dst, first + r, j, i2, i3)
              = a_direct ? dot_row (a->type, k,
                                    tsr_cpu_at (a, 0, first + r, i2 / r2,
                                                i3 / r3), brow)
                         : tsr_cpu_vec_dot_f32 (k, tile.rows[r], brow);
        }
    }
  return TSR_OK;
}

int64_t
tsr_cpu_qdot_tile (int64_t m, int64_t units, int nth)
{
  int64_t tile = QDOT_TILE;

  if ((m + tile - 1) / tile * units < 4 * (int64_t) nth)
    tile = m * units / (4 * (int64_t) nth);
  return tile < 1 ? 1 : tile;
}

/* Unit U of the integer dots' work, tiles of TILE weight rows varying
   fastest, then the batches of b: its rows [FIRST, LAST), its batch
   (I2, I3) of b and dst, and that batch's quantized rows of b (ACT,
   SIZE bytes each, quantized in row-major order).  */
struct qdot_unit
{
  int64_t first, last, i2, i3;
  const char *act;
};

static inline struct qdot_unit
qdot_unit (const struct tsr_cpu_op_ctx *c, const tsr_tensor *dst, int64_t u,
           int64_t tile, size_t size)
{
  const tsr_tensor *b = dst->src[1];
  const int64_t m = dst->src[0]->ne[1], tiles = (m + tile - 1) / tile;
  const int64_t batch = u / tiles, first = u % tiles * tile;
  return (struct qdot_unit) {
    first, first + tile < m ? first + tile : m, batch % b->ne[2],
    batch / b->ne[2], (const char *) c->shared + batch * b->ne[1] * size
  };
}

static int mul_mat_x32 (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst,
                        tsr_cpu_x32_fn x32, size_t block, int ith, int nth);
static int mul_mat_kt (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst,
                       tsr_cpu_kt_fn kt, int ith, int nth);

static int
mul_mat_qdots (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
               int nth)
{
  const tsr_tensor *a = dst->src[0], *b = dst->src[1];
  const int64_t k = a->ne[0], m = a->ne[1], n = b->ne[1];
  const int64_t batches = b->ne[2] * b->ne[3];
  const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  const size_t size = tsr_cpu_act_size (a->type, k);
  size_t group = 0, block;
  const tsr_cpu_x32_fn x32 = x32_kernel (dst, &block);
  if (x32)
    return mul_mat_x32 (c, dst, x32, block, ith, nth);
  const tsr_cpu_kt_fn kt = kt_kernel (dst);
  if (kt)
    return mul_mat_kt (c, dst, kt, ith, nth);
  const tsr_cpu_qdot_fn x8p = x8p_kernel (dst, &group);
  const bool packed = tsr_cpu_repacked (a) && !x8p;
  const int64_t g = packed || x8p ? TSR_CPU_REPACK_ROWS : 1;
  /* Repacked or packed here: whole groups of TSR_CPU_REPACK_ROWS
     rows.  */
  const int64_t tile = (tsr_cpu_qdot_tile (m, batches, nth) + g - 1) / g * g;
  const int64_t tiles = (m + tile - 1) / tile;
  const tsr_cpu_qdot_fn qdot = packed ? tsr_cpu_qdot_x8_kernel (a->type)
                               : x8p ? x8p : tsr_cpu_qdot_kernel (a->type);
  size_t x8p_row = 0;            /* a packed row's bytes */
  unsigned char *pack = c->scratch[ith];
  float out[QDOT_TILE * TSR_CPU_QDOT_MAX_COLS];
  int64_t u0, u1;

  tsr_cpu_split (tiles * batches, ith, nth, &u0, &u1);
  for (int64_t u = u0; u < u1; u++)
    {
      const struct qdot_unit q = qdot_unit (c, dst, u, tile, size);
      const int64_t first = q.first, last = q.last, i2 = q.i2, i3 = q.i3;
      const char *act = q.act;

      /* Plain weights to pack: the tile's rows, once for every
         column.  */
      if (x8p)
        x8p_row = tsr_cpu_x8_pack_rows (a, i2 / r2, i3 / r3, first, last,
                                        group, pack);

      for (int64_t j0 = 0; j0 < n; j0 += TSR_CPU_QDOT_MAX_COLS)
        {
          const void *ys[TSR_CPU_QDOT_MAX_COLS];
          int ny = n - j0 < TSR_CPU_QDOT_MAX_COLS ? (int) (n - j0)
                                                  : TSR_CPU_QDOT_MAX_COLS;

          for (int y = 0; y < ny; y++)
            ys[y] = act + (j0 + y) * size;
          for (int64_t i0 = first; i0 < last; i0 += QDOT_TILE)
            {
              int nr = last - i0 < QDOT_TILE ? (int) (last - i0) : QDOT_TILE;

              if (x8p)
                /* Whole groups; the rows past the end are zero.  */
                qdot (k, pack + (i0 - first) * x8p_row, x8p_row,
                      (nr + g - 1) / g * (int) g, ny, ys, out);
              else
                qdot (k, tsr_cpu_at (a, 0, i0, i2 / r2, i3 / r3), a->nb[1],
                      nr, ny, ys, out);
              /* A column's rows are adjacent in dst: one line each
                 (the other order stored across ny lines at a time,
                 4% of a 32-sequence decode step).  */
              for (int y = 0; y < ny; y++)
                {
                  char *d = tsr_cpu_at (dst, i0, j0 + y, i2, i3);
                  for (int r = 0; r < nr; r++)
                    *(float *) (d + (size_t) r * dst->nb[0])
                      = out[r * ny + y];
                }
            }
        }
    }
  return TSR_OK;
}

size_t
tsr_cpu_x8_pack_rows (const tsr_tensor *a, int64_t i2, int64_t i3,
                      int64_t first, int64_t last, size_t group,
                      unsigned char *pack)
{
  const size_t row = group / TSR_CPU_REPACK_ROWS * (size_t) (a->ne[0] / 32);

  for (int64_t i = first; i < last; i += TSR_CPU_REPACK_ROWS)
    {
      const void *x = tsr_cpu_at (a, 0, i, i2, i3);
      int nr = last - i < TSR_CPU_REPACK_ROWS ? (int) (last - i)
                                              : TSR_CPU_REPACK_ROWS;
      if (tsr_cpu_repacked (a))
        tsr_cpu_kp8_from_x8 (a->type, a->ne[0], x, pack + (i - first) * row);
      else if (tsr_cpu_is_kquant (a->type))
        tsr_cpu_kp8_pack (a->type, a->ne[0], x, a->nb[1], nr,
                          pack + (i - first) * row);
      else
        tsr_cpu_x8_pack (a->type, a->ne[0], x, a->nb[1], nr,
                         pack + (i - first) * row);
    }
  return row;
}

static inline float *
align_up (void *p)
{
  uintptr_t u = ((uintptr_t) p + GEMM_ALIGN - 1) & ~(uintptr_t) (GEMM_ALIGN - 1);
  return (float *) u;
}

/* Blocks [J0, J0 + NJ) of rows [FIRST, LAST) (at most 32, FIRST a
   multiple of 8) of matrix (I2, I3) of A, repacked or plain, into PACK
   as a 32-row tile's run of blocks (tsr_cpu_x32_from_x8), the plain
   rows first packed in 8-row groups after it (GROUPS); the rows past
   LAST are zero.  */
static void
x32_pack_run (const tsr_tensor *a, int64_t i2, int64_t i3, int64_t first,
              int64_t last, int64_t j0, int64_t nj, unsigned char *pack,
              unsigned char *groups)
{
  const size_t bs = tsr_type_traits (a->type)->type_size;
  const int ng = (int) ((last - first + TSR_CPU_REPACK_ROWS - 1)
                        / TSR_CPU_REPACK_ROWS);
  const char *x = tsr_cpu_at (a, 0, first, i2, i3);

  if (tsr_cpu_repacked (a))
    {
      /* A group's block is its 8 rows' plain blocks' bytes.  */
      tsr_cpu_x32_from_x8 (a->type, 32 * nj,
                           x + (size_t) j0 * TSR_CPU_REPACK_ROWS * bs,
                           TSR_CPU_REPACK_ROWS * a->nb[1], ng, 1, pack);
      return;
    }
  const size_t group = x32_group (a);
  for (int g = 0; g < ng; g++)
    {
      int64_t i = (int64_t) g * TSR_CPU_REPACK_ROWS;
      int nr = last - first - i < TSR_CPU_REPACK_ROWS
               ? (int) (last - first - i) : TSR_CPU_REPACK_ROWS;
      tsr_cpu_x8_pack (a->type, 32 * nj,
                       x + (size_t) i * a->nb[1] + (size_t) j0 * bs,
                       a->nb[1], nr, groups + (size_t) g * group * nj);
    }
  tsr_cpu_x32_from_x8 (a->type, 32 * nj, groups, group * nj, ng, 0, pack);
}

/* The 32-row tiles: each thread's tiles of 32 rows (as the integer
   dots deal them), by runs of X32_RUN blocks converted into the
   scratch and dotted with every column, the sums carried from run to
   run (so the f32 steps, and the results, are those of the 8-row
   kernels on the whole rows).  */
static int
mul_mat_x32 (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst,
             tsr_cpu_x32_fn x32, size_t block, int ith, int nth)
{
  const tsr_tensor *a = dst->src[0], *b = dst->src[1];
  const int64_t k = a->ne[0], m = a->ne[1], n = b->ne[1], nb = k / 32;
  const int64_t batches = b->ne[2] * b->ne[3];
  const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  const size_t size = tsr_cpu_act_size (a->type, k);
  const int64_t tile = TSR_CPU_X32_ROWS;
  const int64_t tiles = (m + tile - 1) / tile;
  /* Columns a kernel call: the AMX kernels take 16 a tile multiply.  */
  const int cols = tsr_cpu_repack_level () & TSR_CPU_REPACK_AMX
                   ? X32_AMX_COLS : TSR_CPU_QDOT_MAX_COLS;
  unsigned char *pack = c->scratch[ith];
  unsigned char *groups = pack + X32_RUN * block;
  float *sums = align_up (groups + TSR_CPU_X32_ROWS / TSR_CPU_REPACK_ROWS
                                   * X32_RUN * x32_group (a));
  int64_t u0, u1;

  tsr_cpu_split (tiles * batches, ith, nth, &u0, &u1);
  for (int64_t u = u0; u < u1; u++)
    {
      const struct qdot_unit q = qdot_unit (c, dst, u, tile, size);

      memset (sums, 0, (size_t) (TSR_CPU_X32_ROWS * n) * sizeof (float));
      for (int64_t j0 = 0; j0 < nb; j0 += X32_RUN)
        {
          const int64_t nj = nb - j0 < X32_RUN ? nb - j0 : X32_RUN;

          x32_pack_run (a, q.i2 / r2, q.i3 / r3, q.first, q.last, j0, nj,
                        pack, groups);
          for (int64_t y0 = 0; y0 < n; y0 += cols)
            {
              const void *ys[X32_AMX_COLS];
              int ny = n - y0 < cols ? (int) (n - y0) : cols;
              for (int y = 0; y < ny; y++)
                ys[y] = q.act + (y0 + y) * size;
              x32 (k, j0, nj, pack, ny, ys, sums + TSR_CPU_X32_ROWS * y0);
            }
        }
      for (int64_t y = 0; y < n; y++)
        {
          char *d = tsr_cpu_at (dst, q.first, y, q.i2, q.i3);
          for (int64_t r = 0; r < q.last - q.first; r++)
            *(float *) (d + (size_t) r * dst->nb[0])
              = sums[TSR_CPU_X32_ROWS * y + r];
        }
    }
  return TSR_OK;
}

/* The super-block types on AMX tiles: each thread's tiles of 16 rows
   packed (as x8p_kernel's tiles: tsr_cpu_x8_pack_rows), converted into
   the AMX layout (tsr_cpu_kt_from_kp8), and dotted with the columns
   KT_COLS at a time.  */
static int
mul_mat_kt (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst,
            tsr_cpu_kt_fn kt, int ith, int nth)
{
  const tsr_tensor *a = dst->src[0], *b = dst->src[1];
  const int64_t k = a->ne[0], m = a->ne[1], n = b->ne[1];
  const int64_t batches = b->ne[2] * b->ne[3];
  const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  const size_t size = tsr_cpu_act_size (a->type, k);
  const int64_t tile = TSR_CPU_KT_ROWS;
  const int64_t tiles = (m + tile - 1) / tile;
  unsigned char *pack = c->scratch[ith];
  unsigned char *t = (unsigned char *) align_up
    (pack + (size_t) (k / TSR_QK_K) * 2 * TSR_CPU_KP8_BYTES);
  float out[TSR_CPU_KT_ROWS * KT_COLS];
  size_t group;
  int64_t u0, u1;

  tsr_cpu_qdot_x8p_kernel (a->type, &group);
  tsr_cpu_split (tiles * batches, ith, nth, &u0, &u1);
  for (int64_t u = u0; u < u1; u++)
    {
      const struct qdot_unit q = qdot_unit (c, dst, u, tile, size);
      const int nr = (int) (q.last - q.first);
      const size_t row = tsr_cpu_x8_pack_rows (a, q.i2 / r2, q.i3 / r3,
                                               q.first, q.last, group, pack);
      /* 8 rows alone: their group twice.  */
      const unsigned char *g1 = nr > TSR_CPU_REPACK_ROWS
                                ? pack + TSR_CPU_REPACK_ROWS * row : pack;

      tsr_cpu_kt_from_kp8 (a->type, k, pack, g1, t);
      for (int64_t y0 = 0; y0 < n; y0 += KT_COLS)
        {
          const int ny = n - y0 < KT_COLS ? (int) (n - y0) : KT_COLS;
          kt (k, pack, g1, t, ny, q.act + y0 * size, size, out);
          for (int y = 0; y < ny; y++)
            {
              char *d = tsr_cpu_at (dst, q.first, y0 + y, q.i2, q.i3);
              for (int r = 0; r < nr; r++)
                *(float *) (d + (size_t) r * dst->nb[0])
                  = out[TSR_CPU_KT_ROWS * y + r];
            }
        }
    }
  return TSR_OK;
}

/* Where one thread's GEMM works.  */
struct gemm
{
  const tsr_tensor *a, *b;
  tsr_tensor *dst;
  int mr, nr;
  int64_t ib, jb;                /* block sizes, <= IB, JB */
  float *bpack, *apack, *conv;   /* JB x KC, IB x KC, NR x KC floats */
};

/* Rows [J0, J0 + NJ) of b batch (I2, I3), elements [PC, PC + KC), into
   g->bpack as MR-row panels.  */
static void
pack_b_block (struct gemm *g, int64_t i2, int64_t i3, int64_t j0, int64_t nj,
              int64_t pc, int64_t kc)
{
  const tsr_tensor *b = g->b;
  const bool direct = b->nb[0] == sizeof (float)
                      && b->nb[1] % sizeof (float) == 0;

  for (int64_t jp = 0; jp < nj; jp += g->mr)
    {
      int64_t rows = nj - jp < g->mr ? nj - jp : g->mr;
      const float *src = (const float *) tsr_cpu_at (b, pc, j0 + jp, i2, i3);
      int64_t lds = (int64_t) (b->nb[1] / sizeof (float));

      if (!direct)
        {
          for (int64_t r = 0; r < rows; r++)
            tsr_cpu_row_to_f32 (TSR_TYPE_F32,
                                tsr_cpu_at (b, pc, j0 + jp + r, i2, i3),
                                b->nb[0], g->conv + r * kc, kc);
          src = g->conv;
          lds = kc;
        }
      tsr_cpu_gemm_pack_b (kc, rows, src, lds, g->bpack + jp * kc);
    }
}

/* Weight rows [I0, I0 + NI) of a batch (IA2, IA3), elements [PC, PC +
   KC), converted to f32, into g->apack as NR-row panels.  */
static void
pack_a_block (struct gemm *g, int64_t ia2, int64_t ia3, int64_t i0,
              int64_t ni, int64_t pc, int64_t kc)
{
  const tsr_tensor *a = g->a;
  const struct tsr_type_traits *tr = tsr_type_traits (a->type);
  const bool direct = a->type == TSR_TYPE_F32 && a->nb[0] == sizeof (float)
                      && a->nb[1] % sizeof (float) == 0;

  for (int64_t ip = 0; ip < ni; ip += g->nr)
    {
      int64_t rows = ni - ip < g->nr ? ni - ip : g->nr;
      const float *src;
      int64_t lds;

      if (direct)
        {
          src = (const float *) tsr_cpu_at (a, pc, i0 + ip, ia2, ia3);
          lds = (int64_t) (a->nb[1] / sizeof (float));
        }
      else
        {
          for (int64_t r = 0; r < rows; r++)
            {
              const char *row = tsr_cpu_at (a, 0, i0 + ip + r, ia2, ia3);
              /* Quantized rows are dense: element PC starts block
                 PC / blck_size.  */
              row += tr->is_quantized
                     ? pc / tr->block_size * (int64_t) tr->type_size
                     : pc * (int64_t) a->nb[0];
              tsr_cpu_row_to_f32 (a->type, row, a->nb[0], g->conv + r * kc,
                                  kc);
            }
          src = g->conv;
          lds = kc;
        }
      tsr_cpu_gemm_pack_a (kc, rows, src, lds, g->apack + ip * kc);
    }
}

/* dst rows [J0, J0 + NJ) of batch (I2, I3), weight blocks IB0..IB1-1.  */
static void
gemm_group (struct gemm *g, int64_t i2, int64_t i3, int64_t j0, int64_t nj,
            int64_t ib0, int64_t ib1)
{
  const tsr_tensor *a = g->a, *b = g->b;
  const int64_t k = a->ne[0], m = a->ne[1];
  const int64_t ia2 = i2 / (b->ne[2] / a->ne[2]);
  const int64_t ia3 = i3 / (b->ne[3] / a->ne[3]);
  const int64_t ldc = (int64_t) (g->dst->nb[1] / sizeof (float));

  for (int64_t pc = 0; pc < k; pc += KC)
    {
      int64_t kc = k - pc < KC ? k - pc : KC;

      pack_b_block (g, i2, i3, j0, nj, pc, kc);
      for (int64_t ib = ib0; ib < ib1; ib++)
        {
          int64_t i0 = ib * g->ib, ni = m - i0 < g->ib ? m - i0 : g->ib;

          pack_a_block (g, ia2, ia3, i0, ni, pc, kc);
          for (int64_t jp = 0; jp < nj; jp += g->mr)
            for (int64_t ip = 0; ip < ni; ip += g->nr)
              tsr_cpu_gemm_kernel (kc, g->apack + ip * kc,
                                   g->bpack + jp * kc,
                                   (float *) tsr_cpu_at (g->dst, i0 + ip,
                                                         j0 + jp, i2, i3),
                                   ldc, nj - jp < g->mr ? nj - jp : g->mr,
                                   ni - ip < g->nr ? ni - ip : g->nr,
                                   pc > 0);
        }
    }
}

/* N / PARTS rounded up to a multiple of UNIT, at least UNIT, at most
   MAX (a multiple of UNIT).  */
static int64_t
block_size (int64_t n, int64_t parts, int64_t unit, int64_t max)
{
  int64_t b = (n + parts - 1) / parts;

  b = (b + unit - 1) / unit * unit;
  return b < unit ? unit : b > max ? max : b;
}

static int
mul_mat_gemm (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
              int nth)
{
  const tsr_tensor *a = dst->src[0], *b = dst->src[1];
  const int64_t m = a->ne[1], n = b->ne[1], batches = b->ne[2] * b->ne[3];
  struct gemm g = { a, b, dst, 0, 0, IB, JB, NULL, NULL, NULL };
  int64_t iblocks, jblocks, per_batch, u0, u1;

  tsr_cpu_gemm_shape (&g.mr, &g.nr);
  /* Enough blocks for every thread: smaller weight blocks first, then
     smaller activation blocks.  */
  if ((m + IB - 1) / IB * batches < nth)
    g.ib = block_size (m, (nth + batches - 1) / batches, g.nr, IB);
  iblocks = (m + g.ib - 1) / g.ib;
  if (iblocks * batches < nth)
    g.jb = block_size (n, (nth + iblocks * batches - 1)
                          / (iblocks * batches), g.mr, JB);
  jblocks = (n + g.jb - 1) / g.jb;
  per_batch = iblocks * jblocks;
  g.bpack = align_up (c->scratch[ith]);
  g.apack = align_up (g.bpack + KC * (JB + TSR_CPU_GEMM_MAX_MR));
  g.conv = align_up (g.apack + KC * IB);
  tsr_cpu_split (per_batch * batches, ith, nth, &u0, &u1);
  while (u0 < u1)
    {
      /* A run of weight blocks sharing one activation block.  */
      int64_t batch = u0 / per_batch, jb = u0 % per_batch / iblocks;
      int64_t ib0 = u0 % iblocks;
      int64_t ib1 = iblocks - ib0 < u1 - u0 ? iblocks : ib0 + (u1 - u0);
      int64_t j0 = jb * g.jb;

      gemm_group (&g, batch % b->ne[2], batch / b->ne[2], j0,
                  n - j0 < g.jb ? n - j0 : g.jb, ib0, ib1);
      u0 += ib1 - ib0;
    }
  return TSR_OK;
}

int
tsr_cpu_mul_mat (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                 int nth)
{
  if (use_qdots (dst))
    return mul_mat_qdots (c, dst, ith, nth);
  return use_gemm (dst) ? mul_mat_gemm (c, dst, ith, nth)
                        : mul_mat_dots (c, dst, ith, nth);
}
