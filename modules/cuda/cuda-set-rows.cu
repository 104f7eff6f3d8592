/* cuda-set-rows.cu - writing into rows picked by an index, and into
 * block types: set_rows (any destination type the CPU backend takes:
 * f32, f16, bf16, q8_0, q4_0) and cpy / cont into q8_0 and q4_0.
 * Quantized blocks come from tsr_cuda_quantize_block, bit for bit the
 * reference quantizer's, one thread per destination block.
 *
 * set_rows runs in three kernels on the stream, so that each sees all
 * of the previous one's writes:
 *   check  every index, a bad one into the status word; the claim word
 *          of each destination row named is reset to -1;
 *   claim  each source row puts its row-major number into its
 *          destination row's claim word with atomicMax, so the word
 *          ends as the last source row naming that row (the CPU's
 *          "last writer wins", whatever order the threads ran in);
 *   write  unless the status word is set (then nothing is written, as
 *          on the CPU), each source row whose claim won is converted
 *          into its destination row.
 * The claim words (one int per destination row) are the caller's
 * scratch memory.  A set_rows of at most CU_THREADS source rows (a
 * token's keys or values, a few tokens') runs in one thread block
 * instead (k_set_rows_small): the block checks, compares the rows'
 * destinations in shared memory (a row is written unless a later one
 * names its destination) and writes, in one launch.  */
#include "cuda-common.cuh"

/* What the three kernels share about one set_rows.  */
struct set_rows_args
{
  tsr_cuda_tdesc d;                   /* destination [k, r, d2, d3] */
  int dtype;
  tsr_cuda_tdesc s;                   /* source f32 [k, n, b2, b3] */
  tsr_cuda_tdesc idx;                 /* i32 [n, b2, b3] */
  int *claim;                   /* r * d2 * d3 words */
  tsr_cuda_status *status;
  int tag;
};

/* Source row R's destination row number (a claim word), or -1 when its
   index is out of range; *V gets the index, *DP the destination row's
   address, *SP the source row's.  */
static __device__ int64_t
target_row (const set_rows_args &a, int64_t r, int *v, char **dp,
            const char **sp)
{
  int64_t i, j, l;

  tsr_cuda_split_row (r, a.s, &i, &j, &l);
  *v = *(const int32_t *) tsr_cuda_at (a.idx, i, j, l, 0);
  if (*v < 0 || *v >= a.d.ne[1])
    return -1;
  int64_t j2 = j % a.d.ne[2], l3 = l % a.d.ne[3];
  *dp = tsr_cuda_at (a.d, 0, *v, j2, l3);
  *sp = tsr_cuda_at (a.s, 0, i, j, l);
  return *v + a.d.ne[1] * (j2 + a.d.ne[2] * l3);
}

static __global__ void
k_set_rows_check (set_rows_args a, int64_t nrows)
{
  CU_FOR_ITEMS (r, nrows)
    {
      int v;
      char *dp;
      const char *sp;
      int64_t t = target_row (a, r, &v, &dp, &sp);
      if (t < 0)
        tsr_cuda_bad_index (a.status, a.tag, v);
      else
        a.claim[t] = -1;
    }
}

static __global__ void
k_set_rows_claim (set_rows_args a, int64_t nrows)
{
  CU_FOR_ITEMS (r, nrows)
    {
      int v;
      char *dp;
      const char *sp;
      int64_t t = target_row (a, r, &v, &dp, &sp);
      if (t >= 0)
        atomicMax (&a.claim[t], (int) r);
    }
}

/* Whether source row R is written: no index was bad (the status word
   is clear) and R's claim won.  *DP and *SP as for target_row.  */
static __device__ bool
writes_row (const set_rows_args &a, int64_t r, char **dp, const char **sp)
{
  int v;

  if (*(volatile int *) &a.status->status != 0)
    return false;
  int64_t t = target_row (a, r, &v, dp, sp);
  return t >= 0 && a.claim[t] == (int) r;
}

/* Plain destinations: one thread per element.  */
static __global__ void
k_set_rows_plain (set_rows_args a, int64_t nrows)
{
  CU_FOR_GRID_ROWS (r, nrows)
    {
      char *dp;
      const char *sp;
      if (!writes_row (a, r, &dp, &sp))
        continue;
      CU_FOR_ROW_ITEMS (i0, a.d.ne[0])
        tsr_cuda_store (dp + i0 * a.d.nb[0], a.dtype,
                  *(const float *) (sp + i0 * a.s.nb[0]));
    }
}

/* Block destinations: one thread per block of 32 elements.  */
static __global__ void
k_set_rows_quant (set_rows_args a, int64_t nrows)
{
  CU_FOR_GRID_ROWS (r, nrows)
    {
      char *dp;
      const char *sp;
      if (!writes_row (a, r, &dp, &sp))
        continue;
      CU_FOR_ROW_ITEMS (blk, a.d.ne[0] / CU_QK)
        {
          float x[CU_QK];
          for (int j = 0; j < CU_QK; j++)
            x[j] = *(const float *) (sp + (blk * CU_QK + j) * a.s.nb[0]);
          tsr_cuda_quantize_block (x, dp + blk * a.d.nb[0], a.dtype);
        }
    }
}

/* At most CU_THREADS source rows, by one thread block of at least
   CU_THREADS threads: thread R finds row R's destination (kept in
   shared memory with the rows' addresses); then, unless an index was
   bad, warp W writes rows W, W + warps, ..., each unless a later row
   names the same destination.  Three memory round trips in all (the
   index, the status word, the row).  Every thread of the block calls
   it (it has a barrier).  */
static_assert (CU_PHASE_ROWS_MAX == CU_THREADS, "a row per thread");
struct set_rows_shared
{
  int64_t target[CU_THREADS];
  char *dst[CU_THREADS];
  const char *src[CU_THREADS];
};

static __device__ void
set_rows_block (const set_rows_args &a, int nrows, int quant,
                set_rows_shared &sh)
{
  const int r = threadIdx.x, lane = r % 32;

  if (r < nrows)
    {
      int v;
      sh.target[r] = target_row (a, r, &v, &sh.dst[r], &sh.src[r]);
      if (sh.target[r] < 0)
        tsr_cuda_bad_index (a.status, a.tag, v);
    }
  __syncthreads ();
  if (*(volatile int *) &a.status->status != 0)
    return;
  for (int k = r / 32; k < nrows; k += blockDim.x / 32)
    {
      bool win = true;
      for (int j = k + 1; j < nrows && win; j++)
        win = sh.target[j] != sh.target[k];
      if (!win)
        continue;
      char *dp = sh.dst[k];
      const char *sp = sh.src[k];
      if (quant)
        for (int64_t blk = lane; blk < a.d.ne[0] / CU_QK; blk += 32)
          {
            float x[CU_QK];
            for (int j = 0; j < CU_QK; j++)
              x[j] = *(const float *) (sp + (blk * CU_QK + j) * a.s.nb[0]);
            tsr_cuda_quantize_block (x, dp + blk * a.d.nb[0], a.dtype);
          }
      else
        for (int64_t i0 = lane; i0 < a.d.ne[0]; i0 += 32)
          tsr_cuda_store (dp + i0 * a.d.nb[0], a.dtype,
                          *(const float *) (sp + i0 * a.s.nb[0]));
    }
}

static __global__ void
k_set_rows_small (set_rows_args a, int nrows, int quant)
{
  __shared__ set_rows_shared sh;
  set_rows_block (a, nrows, quant, sh);
}

static __host__ __device__ bool
quant_type (int dtype)
{
  return dtype == TSR_TYPE_Q8_0 || dtype == TSR_TYPE_Q4_0;
}

#define CU_PHASE_THREADS 512
#define CU_PHASE_ANGLES 512     /* rope angles kept in shared memory */

/* The phases of PH in order, with a barrier before those that read or
   write what a phase since the last barrier writes, or write what such
   a phase reads (tsr_cuda_run_phases decides): a phase's global writes
   are seen by the block's threads after the barrier; nothing here
   reads through the read-only cache.
   Phases between two barriers run side by side (a token's q and k
   rotations; its key and value rows), each rope or set_rows phase on
   the shared memory of its slot, which alternates.  */
static __global__ void __launch_bounds__ (CU_PHASE_THREADS)
k_phases (tsr_cuda_phases ph, tsr_cuda_status *status)
{
  __shared__ set_rows_shared shs[2];
  __shared__ double2 css[2][CU_PHASE_ANGLES];

  tsr_cuda_pdl_begin ();
  for (int i = 0; i < ph.n; i++)
    {
      const tsr_cuda_phase &p = ph.p[i];
      double2 *cs = css[p.slot];
      if (p.sync)
        __syncthreads ();
      if (p.op == TSR_OP_ROPE)
        {
          /* Every head of a position turns by the same angles: their
             cosines and sines (in double, the costly part) once into
             CS where they fit.  */
          const int64_t n = tsr_cuda_nelements (p.d), n_half = p.n_dims / 2;
          const int64_t nt = n_half * p.d.ne[2];
          const bool table = nt <= CU_PHASE_ANGLES;
          for (int64_t t = threadIdx.x; table && t < nt; t += blockDim.x)
            {
              double c, sn;
              sincos (tsr_cuda_rope_theta (p.b, p.x, p.has_ff, n_half,
                                           p.freq_base, p.freq_scale,
                                           t / n_half, t % n_half), &sn, &c);
              cs[t] = make_double2 (c, sn);
            }
          __syncthreads ();
          for (int64_t e = threadIdx.x; e < n; e += blockDim.x)
            tsr_cuda_rope_item (p.d, p.a, p.b, p.x, p.has_ff, p.n_dims,
                                p.neox, p.freq_base, p.freq_scale, e,
                                table ? cs : NULL);
        }
      else
        {
          set_rows_args a = { p.d, p.dtype, p.a, p.b, NULL, status, p.tag };
          set_rows_block (a, (int) tsr_cuda_nrows (p.a), quant_type (p.dtype),
                          shs[p.slot]);
        }
    }
}

/* The bytes [*LO, *HI) T's elements may span (for block types more:
   NB[0] is a block's size, NE[0] counts elements).  */
static void
desc_span (const tsr_cuda_tdesc &t, uintptr_t *lo, uintptr_t *hi)
{
  uintptr_t end = (uintptr_t) t.data + (uintptr_t) t.nb[0];
  for (int i = 0; i < 4; i++)
    end += (uintptr_t) ((t.ne[i] > 0 ? t.ne[i] - 1 : 0) * t.nb[i]);
  *lo = (uintptr_t) t.data;
  *hi = end;
}

static bool
desc_overlap (const tsr_cuda_tdesc &x, const tsr_cuda_tdesc &y)
{
  uintptr_t xl, xh, yl, yh;
  desc_span (x, &xl, &xh);
  desc_span (y, &yl, &yh);
  return xl < yh && yl < xh;
}

/* Whether phase P's reads include T.  */
static bool
reads (const tsr_cuda_phase &p, const tsr_cuda_tdesc &t)
{
  return desc_overlap (t, p.a) || desc_overlap (t, p.b)
         || (p.op == TSR_OP_ROPE && p.has_ff && desc_overlap (t, p.x));
}

/* Whether phase Q, after P, must wait for it: Q reads or writes what P
   writes, or writes what P reads.  */
static bool
depends (const tsr_cuda_phase &p, const tsr_cuda_phase &q)
{
  return desc_overlap (p.d, q.d) || reads (q, p.d) || reads (p, q.d);
}

int
tsr_cuda_run_phases (cudaStream_t st, const tsr_cuda_phases *given,
                     tsr_cuda_status *status)
{
  tsr_cuda_phases ph = *given;
  int stage = 0, count[2] = { 0, 0 };

  if (ph.n < 1 || ph.n > CU_PHASES_MAX)
    return (int) cudaErrorInvalidValue;
  for (int i = 0; i < ph.n; i++)
    {
      tsr_cuda_phase &p = ph.p[i];
      const bool rope = p.op == TSR_OP_ROPE;
      int64_t n = rope ? host_nelements (p.d) : host_nrows (p.a);
      if (n > (rope ? CU_PHASE_ROPE_MAX : CU_PHASE_ROWS_MAX))
        return (int) cudaErrorInvalidValue;
      /* A barrier before P where it depends on a phase since the last
         one, or where one of its kind there has its slot.  */
      p.slot = count[rope]++ % 2;
      p.sync = 0;
      for (int j = stage; j < i && !p.sync; j++)
        p.sync = depends (ph.p[j], p)
                 || (ph.p[j].op == p.op && ph.p[j].slot == p.slot);
      if (p.sync)
        stage = i;
    }
  return tsr_cuda_launch (k_phases, dim3 (1), dim3 (CU_PHASE_THREADS), 0, st,
                          ph, status);
}

int
tsr_cuda_set_rows (cudaStream_t st, tsr_cuda_tdesc d, int dtype, tsr_cuda_tdesc s,
             tsr_cuda_tdesc idx, int *claim, tsr_cuda_status *status, int tag)
{
  set_rows_args a = { d, dtype, s, idx, claim, status, tag };
  int64_t nrows = host_nrows (s);
  bool quant = quant_type (dtype);
  dim3 grid, block;

  if (nrows <= CU_THREADS)
    {
      k_set_rows_small<<<1, CU_THREADS, 0, st>>> (a, (int) nrows, quant);
      return tsr_cuda_launched ();
    }
  k_set_rows_check<<<tsr_cuda_blocks (nrows), CU_THREADS, 0, st>>> (a, nrows);
  k_set_rows_claim<<<tsr_cuda_blocks (nrows), CU_THREADS, 0, st>>> (a, nrows);
  tsr_cuda_row_grid (quant ? d.ne[0] / CU_QK : d.ne[0], nrows, &grid, &block);
  if (quant)
    k_set_rows_quant<<<grid, block, 0, st>>> (a, nrows);
  else
    k_set_rows_plain<<<grid, block, 0, st>>> (a, nrows);
  tsr_cuda_count (2);           /* check and claim */
  return tsr_cuda_launched ();
}

/* cpy / cont into a block type: destination block BLK of row R from
   the source elements at the same row-major positions, found by
   splitting the first one's position and stepping from there.  */
static __global__ void
k_quantize (tsr_cuda_tdesc d, int dtype, tsr_cuda_tdesc s, int stype, int64_t nrows)
{
  CU_FOR_GRID_ROWS (r, nrows)
    {
      int64_t d1, d2, d3;
      tsr_cuda_split_row (r, d, &d1, &d2, &d3);
      char *dp = tsr_cuda_at (d, 0, d1, d2, d3);
      CU_FOR_ROW_ITEMS (blk, d.ne[0] / CU_QK)
        {
          int64_t i0, i1, i2, i3;
          float x[CU_QK];
          tsr_cuda_split (r * d.ne[0] + blk * CU_QK, s, &i0, &i1, &i2, &i3);
#pragma unroll
          for (int j = 0; j < CU_QK; j++)
            {
              x[j] = tsr_cuda_load (tsr_cuda_at (s, 0, i1, i2, i3), i0, s.nb[0], stype);
              if (++i0 < s.ne[0])
                continue;
              i0 = 0;
              if (++i1 < s.ne[1])
                continue;
              i1 = 0;
              if (++i2 < s.ne[2])
                continue;
              i2 = 0;
              i3++;
            }
          tsr_cuda_quantize_block (x, dp + blk * d.nb[0], dtype);
        }
    }
}

int
tsr_cuda_quantize (cudaStream_t st, tsr_cuda_tdesc d, int dtype, tsr_cuda_tdesc s, int stype)
{
  dim3 grid, block;

  tsr_cuda_row_grid (d.ne[0] / CU_QK, host_nrows (d), &grid, &block);
  k_quantize<<<grid, block, 0, st>>> (d, dtype, s, stype, host_nrows (d));
  return tsr_cuda_launched ();
}
