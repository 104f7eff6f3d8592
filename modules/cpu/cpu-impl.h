/* cpu-impl.h - what the CPU backend's files share.  Not installed.
 *
 * The module is split by concern:
 *   cpu-module.c       descriptor, registration, device, backend, graph
 *                      walk (checks, scratch memory, thread hand-off)
 *   cpu-threadpool.c   worker threads
 *   cpu-ops.c          the op table and supports_op
 *   cpu-ops-*.c        one family of kernels each
 *   cpu-vec.c          hot loops over contiguous arrays,
 *   cpu-qdot.c         integer dots of q8_0 / q4_0 weights,
 *   cpu-kquant.c       the super-block types' dots and dequantization,
 *   cpu-gemm.c         the GEMM micro-kernel, all per ISA level
 *                      (see cpu-vec.h)
 * Everything here has hidden visibility: the module exports only its
 * descriptor.  */
#ifndef TSR_CPU_IMPL_H
#define TSR_CPU_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tessera/module.h>

#include "cpu-threadpool.h"
#include "cpu-vec.h"

/* Where kernels report failures.  Kernels run on worker threads, whose
   thread-local tsr_last_error the caller never sees: the first failure
   is kept here and re-raised on the calling thread.  */
struct tsr_cpu_error;

/* What a kernel gets besides its tensor.  */
struct tsr_cpu_op_ctx
{
  void *const *scratch;         /* per-thread scratch, scratch[ith] */
  size_t scratch_size;          /* bytes in each, as the op asked */
  void *shared;                 /* scratch every thread sees (64-byte */
  size_t shared_size;           /* aligned), as the op asked */
  struct tsr_cpu_error *error;
};

/* Compute part ITH of NTH of DST (dst->op, dst->src).  Returns TSR_OK
   or the status given to tsr_cpu_fail.  */
typedef int (*tsr_cpu_kernel_fn) (const struct tsr_cpu_op_ctx *c,
                                  tsr_tensor *dst, int ith, int nth);
/* Whether the kernel handles DST's types and layouts (the core has
   checked its shapes and parameters).  */
typedef bool (*tsr_cpu_supports_fn) (const tsr_tensor *dst);
/* Scratch bytes each thread needs for DST (0: none).  */
typedef size_t (*tsr_cpu_scratch_fn) (const tsr_tensor *dst);

struct tsr_cpu_op
{
  tsr_cpu_kernel_fn kernel;
  tsr_cpu_supports_fn supports; /* optional: every valid node */
  tsr_cpu_scratch_fn scratch;   /* optional */
  /* Optional, for work that every part of the kernel reads (activations
     quantized once): SHARED sizes the shared scratch, PREPARE fills it,
     split over the threads like a kernel; the kernel starts when every
     part of PREPARE has returned.  */
  tsr_cpu_scratch_fn shared;
  tsr_cpu_kernel_fn prepare;
};

/* cpu-ops.c */
/* The table entry of OP, or NULL when the backend has no kernel.  */
TSR_MODULE_HIDDEN const struct tsr_cpu_op *tsr_cpu_op_get (tsr_op op);
/* Whether the backend computes OP (view ops: always).  */
TSR_MODULE_HIDDEN bool tsr_cpu_supports_op (const tsr_tensor *op);

/* cpu-module.c */
/* Record STATUS and a message for the current graph_compute (the
   first one wins); returns STATUS.  Safe from any worker.  */
TSR_MODULE_HIDDEN int tsr_cpu_fail (const struct tsr_cpu_op_ctx *c, int status,
                                 const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__ ((format (printf, 3, 4)))
#endif
  ;

/* Kernels, one family per file, and the type checks of those that
   take only some types (TSR_CPU_DECLARE_TYPED_OP).  */
#define TSR_CPU_DECLARE_OP(name)                                          \
  TSR_MODULE_HIDDEN int tsr_cpu_##name (const struct tsr_cpu_op_ctx *c,      \
                                     tsr_tensor *dst, int ith, int nth)
#define TSR_CPU_DECLARE_TYPED_OP(name)                                    \
  TSR_CPU_DECLARE_OP (name);                                              \
  TSR_MODULE_HIDDEN bool tsr_cpu_##name##_supports (const tsr_tensor *dst)

/* cpu-ops-elementwise.c */
TSR_CPU_DECLARE_OP (binary);        /* add, sub, mul, div */
TSR_CPU_DECLARE_OP (unary);         /* scale, silu, gelu */
/* Y[0..N) = f (X[0..N)) for the unary op DST.  */
typedef void (*tsr_cpu_unary_row_fn) (int64_t n, float *y, const float *x,
                                      const tsr_tensor *dst);
/* Part ITH of NTH of DST = FN (DST->src[0]), f32 of one shape, any
   strides.  Returns TSR_OK.  */
TSR_MODULE_HIDDEN int tsr_cpu_unary_map (tsr_tensor *dst,
                                      tsr_cpu_unary_row_fn fn, int ith,
                                      int nth);
/* cpu-ops-copy.c */
TSR_CPU_DECLARE_TYPED_OP (copy);          /* cpy, cont */
TSR_MODULE_HIDDEN size_t tsr_cpu_copy_scratch (const tsr_tensor *dst);
/* cpu-ops-rows.c */
TSR_CPU_DECLARE_OP (sum_rows);
TSR_CPU_DECLARE_OP (norm);          /* norm, rms_norm */
TSR_CPU_DECLARE_OP (soft_max);
TSR_CPU_DECLARE_TYPED_OP (get_rows);
/* One f32 row of src[0] (for gathering strided rows).  */
TSR_MODULE_HIDDEN size_t tsr_cpu_rows_scratch (const tsr_tensor *dst);
/* cpu-repack.c: the CPU_REPACK buffer type.  Whether T is stored
   repacked there (its type and shape allow it), whether T or the
   tensor it views is, the buffer type, whether BUFT is it, and whether
   BUFT is it and repacks matrices of TYPE, NE0 x NE1.  */
TSR_MODULE_HIDDEN bool tsr_cpu_repackable (const tsr_tensor *t);
TSR_MODULE_HIDDEN bool tsr_cpu_repack_holds (tsr_buffer_type *buft,
                                             tsr_type type, int64_t ne0,
                                             int64_t ne1);
TSR_MODULE_HIDDEN bool tsr_cpu_repacked (const tsr_tensor *t);
TSR_MODULE_HIDDEN tsr_buffer_type *tsr_cpu_repack_buffer_type (tsr_device *dev);
TSR_MODULE_HIDDEN bool tsr_cpu_is_repack_buft (const tsr_buffer_type *buft);
/* Row R (< 8) of the repacked group of 8 rows at GROUP (the bytes the
   8 rows of T take, from the first's) as T->ne[0] floats at Y: what
   get_rows reads from repacked weights (a tied embedding that is also
   the output matrix).  */
#define TSR_CPU_REPACK_MAX_BLOCK 256    /* >= a repacked type's block bytes */
TSR_MODULE_HIDDEN void tsr_cpu_repack_row_to_f32 (const tsr_tensor *t,
                                                  const void *group, int r,
                                                  float *y);
/* cpu-ops-matmul.c */
TSR_CPU_DECLARE_TYPED_OP (mul_mat);
TSR_MODULE_HIDDEN size_t tsr_cpu_mul_mat_scratch (const tsr_tensor *dst);
TSR_MODULE_HIDDEN size_t tsr_cpu_mul_mat_shared (const tsr_tensor *dst);
TSR_MODULE_HIDDEN int tsr_cpu_mul_mat_prepare (const struct tsr_cpu_op_ctx *c,
                                            tsr_tensor *dst, int ith,
                                            int nth);
/* Part ITH of NTH of quantizing every row of the f32 activations B (any
   strides; rows in row-major order over dimensions 1..3) for the
   integer dots with weights of type WTYPE: row r to C->shared + r *
   tsr_cpu_act_size (WTYPE, b->ne[0]).  Strided rows are gathered into
   c->scratch[ith] (b->ne[0] floats).  */
TSR_MODULE_HIDDEN void tsr_cpu_quantize_rows (const struct tsr_cpu_op_ctx *c,
                                           const tsr_tensor *b,
                                           tsr_type wtype, int ith, int nth);
/* Weight rows per unit of work of the integer dots, for M rows in each
   of UNITS matrices: a tile that stays in L2 while it is dotted with
   every group of activation rows, or fewer rows so that each of NTH
   threads gets a few units.  */
TSR_MODULE_HIDDEN int64_t tsr_cpu_qdot_tile (int64_t m, int64_t units, int nth);
/* Weight types of 256-element super-blocks, dotted with q8_K
   activations (cpu-kquant.c).  */
static inline bool
tsr_cpu_is_kquant (tsr_type type)
{
  switch (type)
    {
    case TSR_TYPE_Q2_K:
    case TSR_TYPE_Q3_K:
    case TSR_TYPE_Q4_K:
    case TSR_TYPE_Q5_K:
    case TSR_TYPE_Q6_K:
    case TSR_TYPE_IQ4_XS:
      return true;
    default:
      return false;
    }
}
/* Bytes of one activation row of K elements quantized for weights of
   TYPE (q8_K for the super-block types, with q6_K's offset sums for
   q6_K; q8_0 otherwise).  */
static inline size_t
tsr_cpu_act_size (tsr_type type, int64_t k)
{
  return type == TSR_TYPE_Q6_K ? tsr_cpu_kact6_size (k)
         : tsr_cpu_is_kquant (type) ? tsr_cpu_kact_size (k)
                                    : tsr_cpu_qact_size (k);
}
/* The integer dot kernel of weight TYPE (one that tsr_cpu_is_quant
   accepts; NULL otherwise): OUT[r NY + c] = dot (weight row r of NR, K
   elements at X + r BX, quantized activation row Y[c]) for c < NY <=
   TSR_CPU_QDOT_MAX_COLS (cpu-vec.h).  */
typedef void (*tsr_cpu_qdot_fn) (int64_t k, const void *x, size_t bx,
                                 int nr, int ny, const void *const *y,
                                 float *out);
static inline tsr_cpu_qdot_fn
tsr_cpu_qdot_kernel (tsr_type type)
{
  switch (type)
    {
    case TSR_TYPE_Q8_0: return tsr_cpu_vec_dot_q8_0_q8_0;
    case TSR_TYPE_Q4_0: return tsr_cpu_vec_dot_q4_0_q8_0;
    case TSR_TYPE_Q4_1: return tsr_cpu_vec_dot_q4_1_q8_0;
    case TSR_TYPE_Q5_0: return tsr_cpu_vec_dot_q5_0_q8_0;
    case TSR_TYPE_Q5_1: return tsr_cpu_vec_dot_q5_1_q8_0;
    case TSR_TYPE_IQ4_NL: return tsr_cpu_vec_dot_iq4_nl_q8_0;
    case TSR_TYPE_MXFP4: return tsr_cpu_vec_dot_mxfp4_q8_0;
    case TSR_TYPE_Q2_K: return tsr_cpu_vec_dot_q2_K_q8_K;
    case TSR_TYPE_Q3_K: return tsr_cpu_vec_dot_q3_K_q8_K;
    case TSR_TYPE_Q4_K: return tsr_cpu_vec_dot_q4_K_q8_K;
    case TSR_TYPE_Q5_K: return tsr_cpu_vec_dot_q5_K_q8_K;
    case TSR_TYPE_Q6_K: return tsr_cpu_vec_dot_q6_K_q8_K;
    case TSR_TYPE_IQ4_XS: return tsr_cpu_vec_dot_iq4_xs_q8_K;
    default: return NULL;
    }
}
/* The same for weights of TYPE repacked in groups of
   TSR_CPU_REPACK_ROWS rows (CPU_REPACK; X the first row of a group, NR a
   multiple of it): q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, mxfp4, q4_K,
   q5_K, q6_K, iq4_xs; NULL otherwise.  */
static inline tsr_cpu_qdot_fn
tsr_cpu_qdot_x8_kernel (tsr_type type)
{
  switch (type)
    {
    case TSR_TYPE_Q4_0: return tsr_cpu_vec_dot_q4_0x8_q8_0;
    case TSR_TYPE_Q4_1: return tsr_cpu_vec_dot_q4_1x8_q8_0;
    case TSR_TYPE_Q5_0: return tsr_cpu_vec_dot_q5_0x8m_q8_0;
    case TSR_TYPE_Q5_1: return tsr_cpu_vec_dot_q5_1x8m_q8_0;
    case TSR_TYPE_IQ4_NL: return tsr_cpu_vec_dot_iq4_nlx8n_q8_0;
    case TSR_TYPE_MXFP4: return tsr_cpu_vec_dot_mxfp4x8n_q8_0;
    case TSR_TYPE_Q8_0: return tsr_cpu_vec_dot_q8_0x8_q8_0;
    case TSR_TYPE_Q4_K: return tsr_cpu_vec_dot_q4_Kx8_q8_K;
    case TSR_TYPE_Q5_K: return tsr_cpu_vec_dot_q5_Kx8_q8_K;
    case TSR_TYPE_Q6_K: return tsr_cpu_vec_dot_q6_Kx8_q8_K;
    case TSR_TYPE_IQ4_XS: return tsr_cpu_vec_dot_iq4_xsx8_q8_K;
    default: return NULL;
    }
}
/* Plain weights of TYPE packed group by group as they are used
   (tsr_cpu_x8_pack) for the repacked dots: their kernel, and in *GROUP
   the bytes of a group's block of 32 elements; NULL where this level
   has no vector code for the packing (TSR_CPU_REPACK_PACK) or the
   layout (q4_0, q4_1, q5_0 and q5_1 need TSR_CPU_REPACK_Q4_0, q8_0,
   iq4_nl and mxfp4 TSR_CPU_REPACK_Q8_0), or the type has no such
   packing.  */
/* Plain weights are packed from this many activation rows on
   (mul_mat, and mul_mat_id per expert): below, the plain dots are
   faster.  */
#define TSR_CPU_X8P_MIN_N 4
static inline tsr_cpu_qdot_fn
tsr_cpu_qdot_x8p_kernel (tsr_type type, size_t *group)
{
  int level = tsr_cpu_repack_level ();
  /* Values up to 31 suit pmaddubsw; values plus 128 need VNNI.  */
  bool small = level & TSR_CPU_REPACK_Q4_0, big = level & TSR_CPU_REPACK_Q8_0;
  struct tsr_cpu_x8_layout l = tsr_cpu_x8_layout_of (type);

  if (tsr_cpu_is_kquant (type))
    {
      /* The packed super-blocks (cpu-vec-k.h), as bytes a block of
         32 of a group.  */
      *group = TSR_CPU_KP8_BYTES / 8;
      if (!(level & TSR_CPU_REPACK_PACK_K))
        return NULL;
      switch (type)
        {
        case TSR_TYPE_Q2_K: return tsr_cpu_vec_dot_q2_Kp8_q8_K;
        case TSR_TYPE_Q3_K: return tsr_cpu_vec_dot_q3_Kp8_q8_K;
        case TSR_TYPE_Q4_K: return tsr_cpu_vec_dot_q4_Kp8_q8_K;
        case TSR_TYPE_Q5_K: return tsr_cpu_vec_dot_q5_Kp8_q8_K;
        case TSR_TYPE_Q6_K: return tsr_cpu_vec_dot_q6_Kp8_q8_K;
        /* Values plus 128 need VNNI, as q8_0's.  */
        default: return big ? tsr_cpu_vec_dot_iq4_xsp8_q8_K : NULL;
        }
    }
  *group = tsr_cpu_x8_group_bytes (l.q8, l.ext);
  if (!(level & TSR_CPU_REPACK_PACK))
    return NULL;
  switch (type)
    {
    case TSR_TYPE_Q4_0: return small ? tsr_cpu_vec_dot_q4_0x8s_q8_0 : NULL;
    case TSR_TYPE_Q4_1: return small ? tsr_cpu_vec_dot_q4_1x8s_q8_0 : NULL;
    case TSR_TYPE_Q5_0: return small ? tsr_cpu_vec_dot_q5_0x8s_q8_0 : NULL;
    case TSR_TYPE_Q5_1: return small ? tsr_cpu_vec_dot_q5_1x8s_q8_0 : NULL;
    case TSR_TYPE_Q8_0:
    case TSR_TYPE_IQ4_NL: return big ? tsr_cpu_vec_dot_q8_0x8s_q8_0 : NULL;
    case TSR_TYPE_MXFP4: return big ? tsr_cpu_vec_dot_mxfp4x8s_q8_0 : NULL;
    default: return NULL;
    }
}
/* Products of this many columns or more take the blocks of 32 (stored
   repacked, or plain where tsr_cpu_qdot_x8p_kernel packs them) in
   32-row tiles, each thread converting its tile of rows once for all
   its columns (tsr_cpu_x32_from_x8; AVX-512 with VNNI).  Their results
   are the 8-row kernels', bit for bit.  The conversion costs about as
   much as 4 or 5 columns of the tiles' products and waits on memory
   besides, so the tiles win from about 128 columns (two Zen 5 cores,
   v4-vnni, 4096 x 14336, GFLOP/s of the 8-row kernels against the
   tiles: q4_0 at 64 columns 1,162 / 1,071-1,138, at 128 1,172 /
   1,253-1,293, at 512 1,148-1,162 / 1,362-1,424; q8_0 1,096 /
   929-966, 1,135 / 1,157-1,168, 1,110-1,148 / 1,268-1,363).  */
#define TSR_CPU_X32_MIN_N 128
/* With the AMX kernels (v4-amx) from this many: there the tiles' dots
   outrun the 8-row kernels from 32 columns (4096 x 14336, two vCPUs of
   an Intel Xeon (Emerald Rapids), GFLOP/s of the 8-row kernels against
   the AMX tiles in turn, two rounds: q8_0 at 32 columns 141-264 against
   357-444, at 48 202-311 against 401-411, at 64 294-333 against
   409-437, at 96 276-425 against 470-473; q4_0 at 32 303-354 against
   408-414, at 64 315-338 against 435-469; at 16 and 24 either way).  */
#define TSR_CPU_X32_AMX_MIN_N 32
typedef void (*tsr_cpu_x32_fn) (int64_t k, int64_t j0, int64_t nj,
                                const void *x, int ny, const void *const *y,
                                float *acc);
static inline tsr_cpu_x32_fn
tsr_cpu_qdot_x32_kernel (tsr_type type, size_t *block)
{
  *block = tsr_cpu_x32_block_bytes (type == TSR_TYPE_Q4_1
                                    || type == TSR_TYPE_Q5_1);
  if (!(tsr_cpu_repack_level () & TSR_CPU_REPACK_X32))
    return NULL;
  switch (type)
    {
    case TSR_TYPE_Q4_0: return tsr_cpu_vec_dot_x32o1_q8_0;
    case TSR_TYPE_Q5_0: return tsr_cpu_vec_dot_x32o2_q8_0;
    case TSR_TYPE_Q8_0:
    case TSR_TYPE_IQ4_NL:
    case TSR_TYPE_MXFP4: return tsr_cpu_vec_dot_x32o16_q8_0;
    case TSR_TYPE_Q4_1:
    case TSR_TYPE_Q5_1: return tsr_cpu_vec_dot_x32m_q8_0;
    default: return NULL;
    }
}
/* Plain weights of the super-block types: packed by tile from
   tsr_cpu_kp8_min_n () columns (tsr_cpu_qdot_x8p_kernel; the tile is
   packed once for all its column passes); below, the plain dots.
   With AVX-512 from TSR_CPU_KP8_MIN_N: on a model's rows of 2048
   elements the tiles at 9 columns (8 + 1) ran at 274 against the plain
   dots' 455-497 GFLOP/s, at 16 at 589-600 against 520-576 (two cores,
   v4-vnni).  A one-pass variant that packed each super-block of 8 rows
   into L1 as the pass went was tried for 6-15 columns and removed: it
   beat the plain dots on long rows (2048 x 8192: 408-413 against
   356-362) but lost on a model's rows of 2048 (8192 x 2048, n = 6 and
   8: 401-463 against 485-556; 8 sequences of a Q5_K_M model: steps of
   49.6-50.3 against 47.6-47.8 ms).  */
#define TSR_CPU_KP8_MIN_N 16
/* With AVX2 (no TSR_CPU_REPACK_PACK_K16), the tiles from this many
   columns, the plain dots below (two cores, 4096 x 14336, v3-vnni,
   GFLOP/s at n = 32 / 64 / 512: plain dots 265-322 / 262-316, GEMM
   229-232; tiles 250-290 / 301-363 / 358-440).  */
#define TSR_CPU_KP8_MIN_N_TILE 64
/* Repacked weights of the super-block types (CPU_REPACK: q4_K, q5_K,
   q6_K, iq4_xs, all with AVX-512) take the same tiles from this many
   columns, converted from the repacked layout by tile
   (tsr_cpu_kp8_from_x8); below, their own kernels (two cores, v4-vnni,
   GFLOP/s of the repacked kernels against the tiles, 4096 x 14336:
   q4_K at n = 16 1,017 / 746, 32 1,002-1,014 / 914-931, 48 997-1,032
   / 953-1,006, 64 1,013-1,048 / 989-1,054; q6_K at 32 699-703 /
   718-723, 64 739-743 / 779-811).  */
#define TSR_CPU_KP8_MIN_N_X8 64
/* At v4-amx q3_K, q4_K, q5_K and iq4_xs, plain or repacked, take the
   packed tiles converted once more by thread tile of 16 rows into the
   AMX layout (tsr_cpu_kt_from_kp8, cpu-vec-k.h) from this many
   columns: 16 activation rows a tile multiply.  Their results are the
   packed tiles' kernels', bit for bit.  One core of an Intel Xeon
   (Emerald Rapids), kernels alone on 16 rows of 4096 elements in L2,
   multiply-adds a ns of the packed tiles' VNNI kernel against the AMX
   kernel at 16 / 32 / 64 columns: q4_K 208 / 202 / 203 against 281 /
   296 / 297, q5_K 187 / - / 190 against 266 / - / 279, iq4_xs 155 /
   158 / 152 against 301 / 302 / 304, q3_K 184 / 185 / 182 against 224
   / 243 / 252; the conversion costs about 120 ns a super-block of the
   16 rows (at 16 columns as much as the gain).  q2_K (183 against
   186-202) and q6_K (175 against 176-187) keep the VNNI kernels: their
   groups of 16 take a tile multiply, a tile store and 16 scalings each
   (q6_K's sums outrange int16, so vpmulld).  */
#define TSR_CPU_KT_MIN_N 32
typedef void (*tsr_cpu_kt_fn) (int64_t k, const void *g0, const void *g1,
                               const void *t, int ny, const void *y,
                               size_t ys, float *out);
/* The AMX kernel of TYPE mul_mat takes at this level; NULL where the
   level has no AMX tiles or TYPE keeps the packed tiles' kernels.  (The
   kernels of q2_K and q6_K exist, and are tested, for every level.)  */
static inline tsr_cpu_kt_fn
tsr_cpu_qdot_kt_kernel (tsr_type type)
{
  if (!(tsr_cpu_repack_level () & TSR_CPU_REPACK_AMX))
    return NULL;
  switch (type)
    {
    case TSR_TYPE_Q3_K: return tsr_cpu_vec_dot_q3_Kt16_q8_K;
    case TSR_TYPE_Q4_K: return tsr_cpu_vec_dot_q4_Kt16_q8_K;
    case TSR_TYPE_Q5_K: return tsr_cpu_vec_dot_q5_Kt16_q8_K;
    case TSR_TYPE_IQ4_XS: return tsr_cpu_vec_dot_iq4_xst16_q8_K;
    default: return NULL;
    }
}
/* The columns from which plain super-block weights are packed by tile
   at this level.  */
static inline int64_t
tsr_cpu_kp8_min_n (void)
{
  return tsr_cpu_repack_level () & TSR_CPU_REPACK_PACK_K16
         ? TSR_CPU_KP8_MIN_N : TSR_CPU_KP8_MIN_N_TILE;
}

/* Rows [FIRST, LAST) (at most 16) of matrix (I2, I3) of plain weights
   A into PACK as 8-row groups of GROUP bytes a block
   (tsr_cpu_x8_pack), the last one padded with zero rows: the bytes a
   packed row takes, the row stride the repacked kernels step by
   (cpu-ops-matmul.c; mul_mat and mul_mat_id).  */
TSR_MODULE_HIDDEN size_t tsr_cpu_x8_pack_rows (const tsr_tensor *a,
                                               int64_t i2, int64_t i3,
                                               int64_t first, int64_t last,
                                               size_t group,
                                               unsigned char *pack);
/* Up to TSR_CPU_WEIGHT_TILE consecutive weight rows as f32, for dot
   products (mul_mat, mul_mat_id).  */
#define TSR_CPU_WEIGHT_TILE 16
struct tsr_cpu_weight_tile
{
  int64_t i2, i3, first;        /* which rows are loaded (-1: none) */
  int64_t count;
  const float *rows[TSR_CPU_WEIGHT_TILE];
};
#define TSR_CPU_WEIGHT_TILE_INIT { -1, -1, -1, 0, { NULL } }
/* Load rows FIRST.. of batch (I2, I3) of weights A (dense f32 rows
   are used in place, others converted into BUF, which holds
   TSR_CPU_WEIGHT_TILE rows); nothing to do if already loaded.  */
TSR_MODULE_HIDDEN void tsr_cpu_weight_tile_load (struct tsr_cpu_weight_tile *t,
                                              const tsr_tensor *a,
                                              int64_t i2, int64_t i3,
                                              int64_t first, float *buf);

/* cpu-ops-nn.c: transformer and convolution ops.  */
TSR_CPU_DECLARE_OP (rope);
TSR_MODULE_HIDDEN size_t tsr_cpu_rope_scratch (const tsr_tensor *dst);
TSR_CPU_DECLARE_TYPED_OP (set_rows);
TSR_MODULE_HIDDEN size_t tsr_cpu_set_rows_scratch (const tsr_tensor *dst);
TSR_CPU_DECLARE_OP (flash_attn_ext);
TSR_MODULE_HIDDEN size_t tsr_cpu_flash_attn_ext_scratch (const tsr_tensor *dst);
TSR_CPU_DECLARE_TYPED_OP (mul_mat_id);
TSR_MODULE_HIDDEN size_t tsr_cpu_mul_mat_id_scratch (const tsr_tensor *dst);
TSR_MODULE_HIDDEN size_t tsr_cpu_mul_mat_id_shared (const tsr_tensor *dst);
TSR_MODULE_HIDDEN int tsr_cpu_mul_mat_id_prepare
  (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith, int nth);
TSR_CPU_DECLARE_OP (im2col);
TSR_CPU_DECLARE_OP (pool_2d);
/* end of cpu-ops-nn.c */

/* cpu-ops-math.c: element-wise math, reductions and shape ops.  */
TSR_CPU_DECLARE_OP (math_unary);    /* sqr .. gelu_quick, clamp */
TSR_CPU_DECLARE_OP (glu);           /* swiglu, geglu */
TSR_MODULE_HIDDEN size_t tsr_cpu_glu_scratch (const tsr_tensor *dst);
TSR_CPU_DECLARE_OP (sum);
TSR_CPU_DECLARE_OP (mean);
TSR_CPU_DECLARE_OP (argmax);
TSR_CPU_DECLARE_OP (repeat);
TSR_CPU_DECLARE_OP (concat);
TSR_CPU_DECLARE_OP (diag_mask_inf);
TSR_CPU_DECLARE_OP (pad);
TSR_CPU_DECLARE_OP (arange);
TSR_CPU_DECLARE_OP (upscale);
TSR_CPU_DECLARE_OP (argsort);       /* argsort, top_k */
TSR_MODULE_HIDDEN size_t tsr_cpu_argsort_scratch (const tsr_tensor *dst);
/* end of cpu-ops-math.c */

/* Helpers for kernels.  */

/* The share [*START, *END) of N items for part ITH of NTH.  */
static inline void
tsr_cpu_split (int64_t n, int ith, int nth, int64_t *start, int64_t *end)
{
  *start = n * ith / nth;
  *end = n * (ith + 1) / nth;
}

/* Address of element (I0, I1, I2, I3) of T, following its strides.  */
static inline char *
tsr_cpu_at (const tsr_tensor *t, int64_t i0, int64_t i1, int64_t i2,
            int64_t i3)
{
  return (char *) t->data + i0 * (int64_t) t->nb[0] + i1 * (int64_t) t->nb[1]
         + i2 * (int64_t) t->nb[2] + i3 * (int64_t) t->nb[3];
}

/* The indices (I[1], I[2], I[3]) of row R of T, rows in row-major
   order over dimensions 1..3 (I[0] is set to 0).  */
static inline void
tsr_cpu_row_index (const tsr_tensor *t, int64_t r, int64_t i[TSR_MAX_DIMS])
{
  i[0] = 0;
  i[1] = r % t->ne[1];
  i[2] = r / t->ne[1] % t->ne[2];
  i[3] = r / (t->ne[1] * t->ne[2]);
}

/* Row R of T.  */
static inline char *
tsr_cpu_row (const tsr_tensor *t, int64_t r)
{
  int64_t i[TSR_MAX_DIMS];
  tsr_cpu_row_index (t, r, i);
  return tsr_cpu_at (t, 0, i[1], i[2], i[3]);
}

static inline int64_t
tsr_cpu_nrows (const tsr_tensor *t)
{
  return t->ne[1] * t->ne[2] * t->ne[3];
}

/* Bytes of one element of a plain (non-block) type.  */
static inline size_t
tsr_cpu_elem_size (tsr_type type)
{
  return tsr_type_traits (type)->type_size;
}

/* Whether T's rows are dense (nb[0] is one element or block).  */
static inline bool
tsr_cpu_dense_rows (const tsr_tensor *t)
{
  return t->nb[0] == tsr_type_traits (t->type)->type_size;
}

/* Types with a float value per element (f32, f16, bf16).  */
static inline bool
tsr_cpu_is_plain_float (tsr_type type)
{
  return type == TSR_TYPE_F32 || type == TSR_TYPE_F16
         || type == TSR_TYPE_BF16;
}

/* The block types the kernels take: rows to f32 (cpu-vec.c,
   cpu-qdot-32.c, cpu-kquant.c), integer dots with q8_0 or q8_K
   activations (tsr_cpu_qdot), and rows from f32 through libtessera's
   reference quantizer.  */
static inline bool
tsr_cpu_is_quant (tsr_type type)
{
  switch (type)
    {
    case TSR_TYPE_Q8_0:
    case TSR_TYPE_Q4_0:
    case TSR_TYPE_Q4_1:
    case TSR_TYPE_Q5_0:
    case TSR_TYPE_Q5_1:
    case TSR_TYPE_IQ4_NL:
    case TSR_TYPE_MXFP4:
      return true;
    default:
      return tsr_cpu_is_kquant (type);
    }
}

/* Convert a strided row of N elements to contiguous floats / back.
   SRC_TYPE / DST_TYPE: f32, f16, bf16 or i32, or (dense rows) a type
   tsr_cpu_is_quant accepts.  */
TSR_MODULE_HIDDEN void tsr_cpu_row_to_f32 (tsr_type src_type, const char *src,
                                        size_t src_stride, float *dst,
                                        int64_t n);
TSR_MODULE_HIDDEN void tsr_cpu_row_from_f32 (tsr_type dst_type, char *dst,
                                          size_t dst_stride, const float *src,
                                          int64_t n);

#endif /* TSR_CPU_IMPL_H */
