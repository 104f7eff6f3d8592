/* cpu-ops-nn.c - transformer and convolution kernels: rope, set_rows,
 * flash_attn_ext, mul_mat_id, im2col, pool_2d.
 *
 * Scalar reference kernels, but for the inner loops of flash_attn_ext
 * and mul_mat_id, which are the per-level vector functions: every
 * operand may have any strides (read element by element through
 * tsr_cpu_at, or converted a row at a time), arithmetic that sums many
 * terms is done in double (flash_attn_ext: f32 with its sums of
 * softmax weights in double).  Work is split over destination rows,
 * except set_rows (over column blocks, so that the order of writes to
 * one row is the source order whatever the thread count),
 * flash_attn_ext (over groups of query rows that share a key head, so
 * that keys and values are read once for the group) and mul_mat_id
 * (over experts and tiles of weight rows, so that each weight row is
 * converted once; the row loading and dot products are mul_mat's; with
 * block-type weights the rows of b are quantized once (q8_0, or q8_K
 * for the super-block types) and dotted in integers, and only the
 * experts in use get work).  Shapes and
 * parameters are the builders' (lib/ops/ops-nn.c); each supports function
 * re-checks exactly what its kernel relies on.  Index operands
 * (set_rows, mul_mat_id) are checked in full before anything is
 * written: a bad index is an error and leaves the destination
 * untouched.  */
#include <config.h>

#include <math.h>
#include <string.h>

#include <tessera/ops.h>

#include "cpu-impl.h"

/* An f32 or f16 element as float / stored.  */
static float
load_f (const char *p, tsr_type type)
{
  if (type == TSR_TYPE_F16)
    {
      tsr_fp16_t h;
      memcpy (&h, p, sizeof h);
      return tsr_fp16_to_fp32 (h);
    }
  float v;
  memcpy (&v, p, sizeof v);
  return v;
}

static void
store_f (char *p, tsr_type type, float v)
{
  if (type == TSR_TYPE_F16)
    {
      tsr_fp16_t h = tsr_fp32_to_fp16 (v);
      memcpy (p, &h, sizeof h);
    }
  else
    memcpy (p, &v, sizeof v);
}

static int32_t
load_i32 (const char *p)
{
  int32_t v;
  memcpy (&v, p, sizeof v);
  return v;
}

/* rope */

/* cos and sin of the n_dims / 2 angles of one position.  */
size_t
tsr_cpu_rope_scratch (const tsr_tensor *dst)
{
  return (size_t) tsr_get_op_param_i32 (dst, 0) * sizeof (double);
}

static void
rope_angles (int32_t p, int64_t half, double base, double fscale,
             const float *ff, double *cs, double *sn)
{
  for (int64_t i = 0; i < half; i++)
    {
      double theta = p * fscale * pow (base, -(double) i / (double) half);
      if (ff)
        theta /= ff[i];
      cs[i] = cos (theta);
      sn[i] = sin (theta);
    }
}

int
tsr_cpu_rope (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
              int nth)
{
  const tsr_tensor *a = dst->src[0], *pos = dst->src[1];
  const int64_t half = tsr_get_op_param_i32 (dst, 0) / 2;
  const bool neox = tsr_get_op_param_i32 (dst, 1) == TSR_ROPE_NEOX;
  const double base = tsr_get_op_param_f32 (dst, 2);
  const double fscale = tsr_get_op_param_f32 (dst, 3);
  const float *ff = dst->src[2] ? dst->src[2]->data : NULL;
  double *cs = c->scratch[ith], *sn = cs + half;
  bool have = false;
  int32_t cached = 0;
  int64_t r0, r1;

  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      int64_t ix[TSR_MAX_DIMS];
      tsr_cpu_row_index (dst, r, ix);
      const int64_t i1 = ix[1], i2 = ix[2], i3 = ix[3];
      int32_t p = load_i32 (tsr_cpu_at (pos, i2, 0, 0, 0));

      /* Rows go head by head, so consecutive rows share a token.  */
      if (!have || p != cached)
        {
          rope_angles (p, half, base, fscale, ff, cs, sn);
          have = true;
          cached = p;
        }
      for (int64_t i = 0; i < half; i++)
        {
          int64_t j0 = neox ? i : 2 * i, j1 = neox ? i + half : 2 * i + 1;
          double x0 = *(const float *) tsr_cpu_at (a, j0, i1, i2, i3);
          double x1 = *(const float *) tsr_cpu_at (a, j1, i1, i2, i3);
          *(float *) tsr_cpu_at (dst, j0, i1, i2, i3)
            = (float) (x0 * cs[i] - x1 * sn[i]);
          *(float *) tsr_cpu_at (dst, j1, i1, i2, i3)
            = (float) (x0 * sn[i] + x1 * cs[i]);
        }
      for (int64_t j = 2 * half; j < a->ne[0]; j++)
        *(float *) tsr_cpu_at (dst, j, i1, i2, i3)
          = *(const float *) tsr_cpu_at (a, j, i1, i2, i3);
    }
  return TSR_OK;
}

/* set_rows: src[0] the destination (dst aliases it), src[1] the rows,
   src[2] the indices.  */

bool
tsr_cpu_set_rows_supports (const tsr_tensor *dst)
{
  tsr_type t = dst->type;

  return tsr_cpu_is_plain_float (t)
         || (tsr_cpu_is_quant (t) && tsr_cpu_dense_rows (dst));
}

/* A strided source row part as contiguous floats.  */
size_t
tsr_cpu_set_rows_scratch (const tsr_tensor *dst)
{
  return (size_t) dst->ne[0] * sizeof (float);
}

/* TSR_OK if every index of IDX is in [0, N), else the failure.  */
static int
check_indices (const struct tsr_cpu_op_ctx *c, const tsr_tensor *dst,
               const tsr_tensor *idx, int64_t n, const char *what)
{
  for (int64_t i2 = 0; i2 < idx->ne[2]; i2++)
    for (int64_t i1 = 0; i1 < idx->ne[1]; i1++)
      for (int64_t i0 = 0; i0 < idx->ne[0]; i0++)
        {
          int32_t v = load_i32 (tsr_cpu_at (idx, i0, i1, i2, 0));
          if (v < 0 || v >= n)
            return tsr_cpu_fail (c, TSR_ERR_INVALID_ARG,
                                 "cpu: %s '%s': index %ld at (%lld, %lld, "
                                 "%lld) of '%s' is outside [0, %lld) (%s)",
                                 tsr_op_name (dst->op), dst->name, (long) v,
                                 (long long) i0, (long long) i1,
                                 (long long) i2, idx->name, (long long) n,
                                 what);
        }
  return TSR_OK;
}

int
tsr_cpu_set_rows (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                  int nth)
{
  const tsr_tensor *src = dst->src[1], *idx = dst->src[2];
  const int64_t bs = tsr_type_traits (dst->type)->block_size;
  float *buf = c->scratch[ith];
  int64_t b0, b1;
  int status;

  /* Every thread checks all indices, so none writes if one is bad.  */
  status = check_indices (c, dst, idx, dst->ne[1], "destination rows");
  if (status != TSR_OK)
    return status;
  tsr_cpu_split (dst->ne[0] / bs, ith, nth, &b0, &b1);
  if (b0 == b1)
    return TSR_OK;
  const int64_t e0 = b0 * bs, n = (b1 - b0) * bs;
  for (int64_t l = 0; l < src->ne[3]; l++)
    for (int64_t j = 0; j < src->ne[2]; j++)
      for (int64_t i = 0; i < src->ne[1]; i++)
        {
          int32_t v = load_i32 (tsr_cpu_at (idx, i, j, l, 0));
          const char *s = tsr_cpu_at (src, e0, i, j, l);
          const float *x = (const float *) s;
          /* nb[0] steps one element, or one block of a quantized row.  */
          char *d = tsr_cpu_at (dst, 0, v, j % dst->ne[2], l % dst->ne[3])
                    + b0 * (int64_t) dst->nb[0];

          if (src->nb[0] != sizeof (float))
            {
              tsr_cpu_row_to_f32 (TSR_TYPE_F32, s, src->nb[0], buf, n);
              x = buf;
            }
          tsr_cpu_row_from_f32 (dst->type, d, dst->nb[0], x, n);
        }
  return TSR_OK;
}

/* flash_attn_ext: src q, k, v, mask.  */

/* Work is dealt in units of up to ATTN_ROWS query rows that share a
   key and value head (a query row's heads of the group, then the next
   query row's), so that each key and value row is read from memory
   once for all of them and is still in L1 for the next.  Each row walks
   the keys its mask lets it see (its visible keys, in order; found once
   for the rows of a unit that read one mask row): an online softmax
   over blocks of ATTN_BLOCK of them -- the block's scores (vector dot
   products; dense f16 keys a block in one call), their maximum, the
   rescaling of the row's sum and accumulator when the maximum grows,
   exp (score - maximum), then the weighted values added to the
   accumulator (dense f16 values a block in one call); f32, the sums of
   the weights in double.  A row's arithmetic depends on its visible keys
   and their order only, not on where they lie among hidden ones nor on
   the other rows of its unit: a row of a sequence decoded among other
   sequences (whose cells lie between its own) gets, bit for bit, what
   it gets alone.  Rows whose visible keys are prefixes of one list (a
   prompt's rows, the heads of a group) walk that list together, sharing
   each key and value row; others walk theirs apart.  */
#define ATTN_ROWS TSR_CPU_F16_ROWS
#define ATTN_BLOCK 64

/* Per row of a unit its query, accumulator, block of scores and of
   mask values (f32), and its visible keys with their mask values (NKV
   each); one key and one value row as f32, for strided K and V.  */
size_t
tsr_cpu_flash_attn_ext_scratch (const tsr_tensor *dst)
{
  size_t d = (size_t) dst->src[0]->ne[0], dv = (size_t) dst->ne[0];
  size_t nkv = (size_t) dst->src[1]->ne[1];

  return (ATTN_ROWS * (d + dv + 2 * ATTN_BLOCK + 2 * nkv) + d + dv)
         * sizeof (float);
}

/* Row J of head HK, batch B of K or V, as the vector functions take it:
   the stored row if its elements are dense (*F16 says whether f16),
   else converted to f32 into BUF.  */
static const void *
kv_row (const tsr_tensor *t, int64_t j, int64_t hk, int64_t b, float *buf,
        bool *f16)
{
  const char *p = tsr_cpu_at (t, 0, j, hk, b);

  *f16 = false;
  if (t->nb[0] == tsr_cpu_elem_size (t->type))
    {
      *f16 = t->type == TSR_TYPE_F16;
      return p;
    }
  tsr_cpu_row_to_f32 (t->type, p, t->nb[0], buf, t->ne[0]);
  return buf;
}

/* One unit: rows (Q1[r], H[r], B) for r < N, of kv head HK.  */
struct attn_unit
{
  int n;
  int64_t b, hk, q1[ATTN_ROWS], h[ATTN_ROWS];
};

/* Row R's visible keys into VIS (their mask values into MV), in order;
   their number.  */
static int64_t
visible_keys (const tsr_tensor *dst, const struct attn_unit *u, int r,
              int32_t *vis, float *mv)
{
  const tsr_tensor *k = dst->src[1], *mask = dst->src[3];
  const int64_t nkv = k->ne[1];
  int64_t n = 0;

  if (!mask)
    {
      for (int64_t j = 0; j < nkv; j++)
        {
          vis[j] = (int32_t) j;
          mv[j] = 0;
        }
      return nkv;
    }
  const char *row = tsr_cpu_at (mask, 0, u->q1[r], u->h[r] % mask->ne[2],
                                u->b % mask->ne[3]);
  const size_t nb0 = mask->nb[0];
  if (mask->type == TSR_TYPE_F32 && nb0 == sizeof (float))
    {
      /* Mostly hidden with many sequences (a 32-sequence decode's row
         sees 1 cell in 32): 8 at a time skipped when all are -inf,
         compared as bits, two to a 64-bit word; the others appended
         without a branch.  */
      const uint64_t hidden2 = 0xff800000ff800000u;
      const float *x = (const float *) row;
      int64_t j = 0;
      for (; j + 8 <= nkv; j += 8)
        {
          uint64_t b[4], any = 0;
          memcpy (b, x + j, sizeof b);
          for (int e = 0; e < 4; e++)
            any |= b[e] ^ hidden2;
          if (!any)
            continue;
          for (int e = 0; e < 8; e++)
            {
              vis[n] = (int32_t) (j + e);
              mv[n] = x[j + e];
              n += x[j + e] != -INFINITY;
            }
        }
      for (; j < nkv; j++)
        {
          vis[n] = (int32_t) j;
          mv[n] = x[j];
          n += x[j] != -INFINITY;
        }
      return n;
    }
  for (int64_t j = 0; j < nkv; j++)
    {
      float x = load_f (row + (size_t) j * nb0, mask->type);
      if (x == -INFINITY)
        continue;
      vis[n] = (int32_t) j;
      mv[n++] = x;
    }
  return n;
}

/* The working state of a unit's rows.  */
struct attn_rows
{
  float *qf[ATTN_ROWS], *acc[ATTN_ROWS], *s[ATTN_ROWS], *mrow[ATTN_ROWS];
  int32_t *vis[ATTN_ROWS];
  float *mv[ATTN_ROWS];
  int64_t len[ATTN_ROWS];
};

/* The scores of block B0 .. B0 + ATTN_BLOCK - 1 of list L (of NL keys)
   for the rows RS[0 .. NR) that walk it, into their S: scale * (q . k)
   + mask for the keys a row sees (the first LEN of the list), -inf for
   the rest of the block; with a soft-cap c, c tanh (scale * (q . k) / c)
   + mask, the block's tanh in one vector call per row.  */
static void
attn_scores (const tsr_tensor *dst, const struct attn_unit *u,
             struct attn_rows *w, const int *rs, int nr, const int32_t *l,
             int64_t nl, int64_t b0, float *kbuf)
{
  const tsr_tensor *q = dst->src[0], *k = dst->src[1];
  const float scale = tsr_get_op_param_f32 (dst, 0);
  const float cap = tsr_get_op_param_f32 (dst, 1);
  const int64_t nj = nl - b0 < ATTN_BLOCK ? nl - b0 : ATTN_BLOCK;
  bool whole = k->type == TSR_TYPE_F16 && k->nb[0] == sizeof (tsr_fp16_t);

  /* Every row sees the block's keys (decoding: the rows of a unit are
     one query row's heads), dense f16 keys: their dots in one call.  */
  for (int a = 0; whole && a < nr; a++)
    whole = w->len[rs[a]] >= b0 + nj;
  if (whole)
    {
      const float *qs[ATTN_ROWS];
      float *outs[ATTN_ROWS];
      for (int a = 0; a < nr; a++)
        {
          qs[a] = w->qf[rs[a]];
          outs[a] = w->s[rs[a]];
        }
      tsr_cpu_vec_dot_f16_keys (q->ne[0], tsr_cpu_at (k, 0, 0, u->hk, u->b),
                                k->nb[1], l + b0, (int) nj, nr, qs, outs);
      for (int a = 0; a < nr; a++)
        {
          int r = rs[a];
          for (int64_t i = 0; i < ATTN_BLOCK; i++)
            {
              float dot = i < nj ? w->s[r][i] : 0;
              float mval = i < nj ? w->mv[r][b0 + i] : -INFINITY;
              if (cap > 0)
                {
                  w->mrow[r][i] = mval;
                  w->s[r][i] = i < nj ? scale * dot / cap : 0;
                }
              else
                w->s[r][i] = i < nj ? scale * dot + mval : -INFINITY;
            }
        }
    }
  for (int64_t i = 0; !whole && i < ATTN_BLOCK; i++)
    {
      const float *qs[ATTN_ROWS];
      float dots[ATTN_ROWS];
      int ra[ATTN_ROWS], na = 0;

      for (int a = 0; a < nr; a++)
        {
          int r = rs[a];
          if (b0 + i < nl && b0 + i < w->len[r])
            {
              qs[na] = w->qf[r];
              ra[na++] = r;
            }
          else if (cap > 0)
            {
              w->mrow[r][i] = -INFINITY;
              w->s[r][i] = 0;
            }
          else
            w->s[r][i] = -INFINITY;
        }
      if (na == 0)
        continue;
      bool f16 = false;
      const void *kr = kv_row (k, l[b0 + i], u->hk, u->b, kbuf, &f16);
      if (f16)
        tsr_cpu_vec_dot_f16_rows (q->ne[0], kr, na, qs, dots);
      else
        for (int a = 0; a < na; a++)
          dots[a] = tsr_cpu_vec_dot_f32 (q->ne[0], kr, qs[a]);
      for (int a = 0; a < na; a++)
        {
          int r = ra[a];
          float mval = w->mv[r][b0 + i];
          if (cap > 0)
            {
              w->mrow[r][i] = mval;
              w->s[r][i] = scale * dots[a] / cap;
            }
          else
            w->s[r][i] = scale * dots[a] + mval;
        }
    }
  if (cap > 0)
    for (int a = 0; a < nr; a++)
      {
        int r = rs[a];
        tsr_cpu_vec_tanh_f32 (ATTN_BLOCK, w->s[r], w->s[r]);
        for (int64_t i = 0; i < ATTN_BLOCK; i++)
          w->s[r][i] = cap * w->s[r][i] + w->mrow[r][i];
      }
}

/* Rows RS[0 .. NR) walk list L of NL keys (each row the first LEN of
   it) and write their results.  */
static void
attn_walk (tsr_tensor *dst, const struct attn_unit *u, struct attn_rows *w,
           const int *rs, int nr, const int32_t *l, int64_t nl, float *kbuf,
           float *vbuf)
{
  const tsr_tensor *v = dst->src[2];
  const int64_t dv = v->ne[0];
  float m[ATTN_ROWS];
  double sum[ATTN_ROWS];
  bool skip[ATTN_ROWS];

  for (int a = 0; a < nr; a++)
    {
      tsr_cpu_vec_set_f32 (dv, w->acc[rs[a]], 0);
      m[a] = -INFINITY;
      sum[a] = 0;
    }
  for (int64_t b0 = 0; b0 < nl; b0 += ATTN_BLOCK)
    {
      int64_t nj = nl - b0 < ATTN_BLOCK ? nl - b0 : ATTN_BLOCK;

      attn_scores (dst, u, w, rs, nr, l, nl, b0, kbuf);
      /* Whole blocks always (hidden entries -inf): the vector functions
         see a row's scores at the same places whatever the list.  */
      for (int a = 0; a < nr; a++)
        {
          float *s = w->s[rs[a]];
          float bm = tsr_cpu_vec_max_f32 (ATTN_BLOCK, s);
          skip[a] = bm == -INFINITY;
          if (skip[a])
            {
              /* Every key masked, or NaN scores (which vec_max skips,
                 and which make the row's sum NaN).  */
              for (int64_t j = 0; j < ATTN_BLOCK; j++)
                if (s[j] != s[j])
                  sum[a] = NAN;
              continue;
            }
          if (bm > m[a])
            {
              float f = expf (m[a] - bm);
              tsr_cpu_vec_scale_f32 (dv, w->acc[rs[a]], w->acc[rs[a]], f);
              sum[a] *= f;
              m[a] = bm;
            }
          sum[a] += tsr_cpu_vec_exp_sub_f32 (ATTN_BLOCK, s, s, m[a]);
        }
      if (v->type == TSR_TYPE_F16 && v->nb[0] == sizeof (tsr_fp16_t))
        {
          /* Dense f16 values: the block's in one call, each row's
             accumulator in registers over them.  */
          float *accs[ATTN_ROWS];
          const float *ws[ATTN_ROWS];
          int na = 0;
          for (int a = 0; a < nr; a++)
            if (!skip[a])
              {
                accs[na] = w->acc[rs[a]];
                ws[na++] = w->s[rs[a]];
              }
          if (na > 0)
            tsr_cpu_vec_mad_f16_keys (dv, accs, na,
                                      tsr_cpu_at (v, 0, 0, u->hk, u->b),
                                      v->nb[1], l + b0, (int) nj, ws);
          continue;
        }
      for (int64_t j = 0; j < nj; j++)
        {
          const void *vr;
          bool f16 = false;
          float *accs[ATTN_ROWS], ws[ATTN_ROWS];
          int na = 0;

          /* Rows with a weight for value J (a zero weight adds
             nothing, and must not turn an infinite value into NaN).  */
          for (int a = 0; a < nr; a++)
            if (!skip[a] && w->s[rs[a]][j] != 0)
              {
                accs[na] = w->acc[rs[a]];
                ws[na++] = w->s[rs[a]][j];
              }
          if (na == 0)
            continue;
          vr = kv_row (v, l[b0 + j], u->hk, u->b, vbuf, &f16);
          if (f16)
            tsr_cpu_vec_mad_f16_rows (dv, accs, na, vr, ws);
          else
            for (int a = 0; a < na; a++)
              tsr_cpu_vec_mad_f32 (dv, accs[a], vr, ws[a]);
        }
    }
  /* No key left (all masked): zeros, not 0 / 0.  A NaN score (a NaN
     query, key or mask) makes the row NaN: attention does not hide it.  */
  for (int a = 0; a < nr; a++)
    {
      int r = rs[a];
      for (int64_t i = 0; i < dv; i++)
        *(float *) tsr_cpu_at (dst, i, u->q1[r], u->h[r], u->b)
          = sum[a] > 0 ? (float) (w->acc[r][i] / sum[a])
            : sum[a] != sum[a] ? NAN : 0.0f;
    }
}

/* Whether the first N keys of A are those of B.  */
static bool
same_keys (const int32_t *a, const int32_t *b, int64_t n)
{
  return memcmp (a, b, (size_t) n * sizeof *a) == 0;
}

static void
attn_unit (tsr_tensor *dst, const struct attn_unit *u, float *scratch)
{
  const tsr_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2];
  const int64_t d = q->ne[0], dv = v->ne[0], nkv = k->ne[1];
  const size_t per_row = (size_t) (d + dv + 2 * ATTN_BLOCK + 2 * nkv);
  float *kbuf = scratch + ATTN_ROWS * per_row;
  float *vbuf = kbuf + d;
  const tsr_tensor *mask = dst->src[3];
  const void *mrow[ATTN_ROWS];
  struct attn_rows w;
  int group[ATTN_ROWS], lead[ATTN_ROWS], n_groups = 0;

  for (int r = 0; r < u->n; r++)
    {
      w.qf[r] = scratch + r * per_row;
      w.acc[r] = w.qf[r] + d;
      w.s[r] = w.acc[r] + dv;
      w.mrow[r] = w.s[r] + ATTN_BLOCK;
      w.vis[r] = (int32_t *) (w.mrow[r] + ATTN_BLOCK);
      w.mv[r] = (float *) (w.vis[r] + nkv);
      tsr_cpu_row_to_f32 (TSR_TYPE_F32, tsr_cpu_at (q, 0, u->q1[r], u->h[r],
                                                    u->b),
                          q->nb[0], w.qf[r], d);
      /* The heads of a query row read one mask row (the mask is
         broadcast over heads): its visible keys are found once (the
         scan of every cell was 40% of this op's time with 8 sequences
         decoding).  */
      mrow[r] = mask ? tsr_cpu_at (mask, 0, u->q1[r], u->h[r] % mask->ne[2],
                                   u->b % mask->ne[3])
                     : NULL;
      int same = 0;
      while (same < r && mrow[same] != mrow[r])
        same++;
      if (same < r)
        {
          w.vis[r] = w.vis[same];
          w.mv[r] = w.mv[same];
          w.len[r] = w.len[same];
        }
      else
        w.len[r] = visible_keys (dst, u, r, w.vis[r], w.mv[r]);
      /* Its group: the first whose list is a prefix of its own or has
         its own as a prefix (the longer leads).  */
      int g = 0;
      for (; g < n_groups; g++)
        {
          int l0 = lead[g];
          int64_t n = w.len[r] < w.len[l0] ? w.len[r] : w.len[l0];
          if (same_keys (w.vis[r], w.vis[l0], n))
            break;
        }
      if (g == n_groups)
        lead[n_groups++] = r;
      else if (w.len[r] > w.len[lead[g]])
        lead[g] = r;
      group[r] = g;
    }
  for (int g = 0; g < n_groups; g++)
    {
      int rs[ATTN_ROWS], nr = 0;
      for (int r = 0; r < u->n; r++)
        if (group[r] == g)
          rs[nr++] = r;
      attn_walk (dst, u, &w, rs, nr, w.vis[lead[g]], w.len[lead[g]], kbuf,
                 vbuf);
    }
}

int
tsr_cpu_flash_attn_ext (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst,
                        int ith, int nth)
{
  const tsr_tensor *q = dst->src[0], *k = dst->src[1];
  const int64_t nq = q->ne[1], group = q->ne[2] / k->ne[2];
  /* Rows per kv head and batch: NQ of each head of the group.  */
  const int64_t per_head = nq * group;
  const int64_t chunks = (per_head + ATTN_ROWS - 1) / ATTN_ROWS;
  int64_t u0, u1;

  tsr_cpu_split (chunks * k->ne[2] * q->ne[3], ith, nth, &u0, &u1);
  for (int64_t un = u0; un < u1; un++)
    {
      struct attn_unit u;
      int64_t first = un % chunks * ATTN_ROWS;

      u.hk = un / chunks % k->ne[2];
      u.b = un / chunks / k->ne[2];
      u.n = per_head - first < ATTN_ROWS ? (int) (per_head - first)
                                         : ATTN_ROWS;
      /* Query row by query row, the heads of the group together:
         they see the same keys, so walk them once.  (Head by head,
         the rows of a unit were several sequences' decoding rows, none
         sharing a key, each key row read once per head.)  */
      for (int r = 0; r < u.n; r++)
        {
          u.q1[r] = (first + r) / group;
          u.h[r] = u.hk * group + (first + r) % group;
        }
      attn_unit (dst, &u, c->scratch[ith]);
    }
  return TSR_OK;
}

/* mul_mat_id: src as, b, ids.  */

bool
tsr_cpu_mul_mat_id_supports (const tsr_tensor *dst)
{
  const tsr_tensor *as = dst->src[0];

  return tsr_cpu_is_plain_float (as->type)
         || (tsr_cpu_is_quant (as->type) && tsr_cpu_dense_rows (as));
}

/* Bytes of the list of experts in use, rounded to a cache line: packed
   expert rows follow it.  */
static size_t
expert_list_bytes (const tsr_tensor *as)
{
  return ((size_t) as->ne[2] * sizeof (int64_t) + 63) / 64 * 64;
}

/* Quantized weights: a row of b as floats (to quantize), the list of
   experts in use, then the 8-row groups of a tile of plain rows packed
   for the repacked dots (tsr_cpu_x8_pack) where the type and level have
   them.  Others: a tile of converted weight rows and one contiguous
   row of b.  */
size_t
tsr_cpu_mul_mat_id_scratch (const tsr_tensor *dst)
{
  const tsr_tensor *as = dst->src[0];
  size_t list = expert_list_bytes (as), group;
  size_t row = (size_t) as->ne[0] * sizeof (float);

  if (tsr_cpu_is_quant (as->type))
    {
      if (tsr_cpu_qdot_x8p_kernel (as->type, &group))
        list += 2 * group * (size_t) (as->ne[0] / 32);
      return row > list ? row : list;
    }
  return (size_t) (TSR_CPU_WEIGHT_TILE + 1) * row;
}

/* Quantized weights: every row of b, quantized once (prepare pass).  */
size_t
tsr_cpu_mul_mat_id_shared (const tsr_tensor *dst)
{
  const tsr_tensor *b = dst->src[1];

  return tsr_cpu_is_quant (dst->src[0]->type)
         ? (size_t) tsr_cpu_nrows (b)
           * tsr_cpu_act_size (dst->src[0]->type, b->ne[0])
         : 0;
}

int
tsr_cpu_mul_mat_id_prepare (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst,
                            int ith, int nth)
{
  if (tsr_cpu_is_quant (dst->src[0]->type))
    tsr_cpu_quantize_rows (c, dst->src[1], dst->src[0]->type, ith, nth);
  return TSR_OK;
}

/* Where an expert's rows are read from: the tensor, or rows packed in
   8-row groups (PACK, ROW bytes a row) for KERNEL.  */
struct expert_rows
{
  tsr_cpu_qdot_fn kernel;       /* NULL: the plain rows */
  const unsigned char *pack;
  size_t row;
};

/* Quantized weights: the results of rows [FIRST, LAST) of expert X
   for the NY activation rows YS, those of (slot, token) (ES, TS).  */
static void
expert_qdot_rows (tsr_tensor *dst, int64_t x, int64_t first, int64_t last,
                  int ny, const void *const *ys, const int64_t *es,
                  const int64_t *ts, const struct expert_rows *pk)
{
  enum { ROWS = 16, G = TSR_CPU_REPACK_ROWS };
  const tsr_tensor *as = dst->src[0];
  const tsr_cpu_qdot_fn qdot = tsr_cpu_qdot_kernel (as->type);
  float out[ROWS * TSR_CPU_QDOT_MAX_COLS];

  for (int64_t i0 = first; i0 < last; i0 += ROWS)
    {
      int nr = last - i0 < ROWS ? (int) (last - i0) : ROWS;

      if (pk->kernel)
        /* Whole groups; the rows past the end are zero.  */
        pk->kernel (as->ne[0], pk->pack + (i0 - first) * pk->row, pk->row,
                    (nr + G - 1) / G * G, ny, ys, out);
      else
        qdot (as->ne[0], tsr_cpu_at (as, 0, i0, x, 0), as->nb[1], nr, ny,
              ys, out);
      for (int r = 0; r < nr; r++)
        for (int y = 0; y < ny; y++)
          *(float *) tsr_cpu_at (dst, i0 + r, es[y], ts[y], 0)
            = out[r * ny + y];
    }
}

/* Quantized weights: the integer dots of rows [FIRST, LAST) of expert X
   with every (slot, token) that chose it, up to TSR_CPU_QDOT_MAX_COLS
   of them per pass over the rows; with TSR_CPU_X8P_MIN_N or more
   (the super-block types: tsr_cpu_kp8_min_n ()) and a kernel X8P for
   the type (block types of 32, AVX2 or AVX-512: 8 experts of 4096 x
   4096, 512 tokens, 2 a token, two cores: q4_0 341 -> 771 GFLOP/s,
   q8_0 349 -> 734, mxfp4 330 -> 789; super-block types, AVX-512), the
   rows packed into PACK first (GROUP bytes a block of a group).  */
static void
expert_qdots (tsr_tensor *dst, const void *act, int64_t x, int64_t first,
              int64_t last, tsr_cpu_qdot_fn x8p, size_t group,
              unsigned char *pack)
{
  const tsr_tensor *as = dst->src[0], *b = dst->src[1], *ids = dst->src[2];
  const size_t size = tsr_cpu_act_size (as->type, b->ne[0]);
  const void *ys[TSR_CPU_QDOT_MAX_COLS];
  int64_t es[TSR_CPU_QDOT_MAX_COLS], ts[TSR_CPU_QDOT_MAX_COLS];
  int ny = 0;
  struct expert_rows pk = { NULL, pack, 0 };

  /* Enough (slot, token) pairs for this expert: its rows packed once
     for all of them, as mul_mat packs plain weights.  */
  if (x8p)
    {
      int64_t n_x = 0;
      for (int64_t t = 0; t < ids->ne[1]; t++)
        for (int64_t e = 0; e < ids->ne[0]; e++)
          n_x += load_i32 (tsr_cpu_at (ids, e, t, 0, 0)) == x;
      int64_t least = tsr_cpu_is_kquant (as->type) ? tsr_cpu_kp8_min_n ()
                      : TSR_CPU_X8P_MIN_N;
      if (n_x >= least)
        {
          pk.kernel = x8p;
          pk.row = tsr_cpu_x8_pack_rows (as, x, 0, first, last, group, pack);
        }
    }

  for (int64_t t = 0; t < ids->ne[1]; t++)
    for (int64_t e = 0; e < ids->ne[0]; e++)
      if (load_i32 (tsr_cpu_at (ids, e, t, 0, 0)) == x)
        {
          /* b row (e % n_b, t), quantized in row-major order.  */
          ys[ny] = (const char *) act + (t * b->ne[1] + e % b->ne[1]) * size;
          es[ny] = e;
          ts[ny++] = t;
          if (ny == TSR_CPU_QDOT_MAX_COLS)
            {
              expert_qdot_rows (dst, x, first, last, ny, ys, es, ts, &pk);
              ny = 0;
            }
        }
  if (ny > 0)
    expert_qdot_rows (dst, x, first, last, ny, ys, es, ts, &pk);
}

/* Quantized weights: work only for the experts in use, in tiles of
   weight rows.  */
static int
mul_mat_id_qdots (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                  int nth)
{
  const tsr_tensor *as = dst->src[0], *ids = dst->src[2];
  const int64_t m = as->ne[1];
  int64_t *used = c->scratch[ith], n_used = 0, tile, tiles, u0, u1;
  size_t group = 0;
  const tsr_cpu_qdot_fn x8p = tsr_cpu_qdot_x8p_kernel (as->type, &group);
  unsigned char *pack = (unsigned char *) c->scratch[ith]
                        + expert_list_bytes (as);

  for (int64_t x = 0; x < as->ne[2]; x++)
    used[x] = 0;
  for (int64_t t = 0; t < ids->ne[1]; t++)
    for (int64_t e = 0; e < ids->ne[0]; e++)
      used[load_i32 (tsr_cpu_at (ids, e, t, 0, 0))] = 1;
  for (int64_t x = 0; x < as->ne[2]; x++)
    if (used[x])
      used[n_used++] = x;
  tile = tsr_cpu_qdot_tile (m, n_used, nth);
  /* Packed rows: whole groups (at most 16 rows, 2 groups).  */
  if (x8p)
    tile = (tile + TSR_CPU_REPACK_ROWS - 1) / TSR_CPU_REPACK_ROWS
           * TSR_CPU_REPACK_ROWS;
  tiles = (m + tile - 1) / tile;
  tsr_cpu_split (n_used * tiles, ith, nth, &u0, &u1);
  for (int64_t u = u0; u < u1; u++)
    {
      int64_t first = u % tiles * tile;
      expert_qdots (dst, c->shared, used[u / tiles], first,
                    first + tile < m ? first + tile : m, x8p, group, pack);
    }
  return TSR_OK;
}

/* The dots of the loaded TILE of expert weights with b row (E % n_b, T)
   into dst[:, e, t].  */
static void
expert_dots (tsr_tensor *dst, const struct tsr_cpu_weight_tile *tile,
             int64_t e, int64_t t, float *b_buf)
{
  const tsr_tensor *b = dst->src[1];
  const int64_t k = b->ne[0];
  const char *bs = tsr_cpu_at (b, 0, e % b->ne[1], t, 0);
  const float *brow = (const float *) bs;

  if (b->nb[0] != sizeof (float))
    {
      tsr_cpu_row_to_f32 (TSR_TYPE_F32, bs, b->nb[0], b_buf, k);
      brow = b_buf;
    }
  for (int64_t r = 0; r < tile->count; r++)
    *(float *) tsr_cpu_at (dst, tile->first + r, e, t, 0)
      = tsr_cpu_vec_dot_f32 (k, tile->rows[r], brow);
}

int
tsr_cpu_mul_mat_id (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                    int nth)
{
  const tsr_tensor *as = dst->src[0], *ids = dst->src[2];
  const int64_t m = as->ne[1], n_expert = as->ne[2];
  const int64_t row_tiles = (m + TSR_CPU_WEIGHT_TILE - 1)
                            / TSR_CPU_WEIGHT_TILE;
  float *a_buf = c->scratch[ith];
  float *b_buf = a_buf + TSR_CPU_WEIGHT_TILE * as->ne[0];
  struct tsr_cpu_weight_tile tile = TSR_CPU_WEIGHT_TILE_INIT;
  int64_t u0, u1;
  int status;

  status = check_indices (c, dst, ids, n_expert, "experts");
  if (status != TSR_OK)
    return status;
  if (tsr_cpu_is_quant (as->type))
    return mul_mat_id_qdots (c, dst, ith, nth);
  /* Unit u: expert u / row_tiles, rows of tile u % row_tiles; every
     (slot, token) choosing that expert uses the converted rows.  */
  tsr_cpu_split (n_expert * row_tiles, ith, nth, &u0, &u1);
  for (int64_t u = u0; u < u1; u++)
    {
      const int64_t x = u / row_tiles, first = u % row_tiles
                                               * TSR_CPU_WEIGHT_TILE;
      for (int64_t t = 0; t < ids->ne[1]; t++)
        for (int64_t e = 0; e < ids->ne[0]; e++)
          {
            if (load_i32 (tsr_cpu_at (ids, e, t, 0, 0)) != x)
              continue;
            tsr_cpu_weight_tile_load (&tile, as, x, 0, first, a_buf);
            expert_dots (dst, &tile, e, t, b_buf);
          }
    }
  return TSR_OK;
}

/* im2col: src kernel (shape only), input.  */

struct conv_geom
{
  bool is_2d;
  int64_t kw, kh, c;            /* kernel extent and channels */
  int64_t w, h;                 /* input extent (h = 1 for 1-D) */
  int s0, s1, p0, p1, d0, d1;
};

static struct conv_geom
im2col_geom (const tsr_tensor *dst)
{
  const tsr_tensor *kernel = dst->src[0], *in = dst->src[1];
  struct conv_geom g;
  int32_t p[7];

  for (int i = 0; i < 7; i++)
    p[i] = tsr_get_op_param_i32 (dst, i);
  g.s0 = p[0], g.s1 = p[1], g.p0 = p[2], g.p1 = p[3], g.d0 = p[4];
  g.d1 = p[5], g.is_2d = p[6] != 0;
  g.kw = kernel->ne[0];
  g.w = in->ne[0];
  if (g.is_2d)
    g.kh = kernel->ne[1], g.c = kernel->ne[2], g.h = in->ne[1];
  else
    {
      g.kh = 1, g.c = kernel->ne[1], g.h = 1;
      g.s1 = 1, g.p1 = 0, g.d1 = 1;
    }
  return g;
}

int
tsr_cpu_im2col (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                int nth)
{
  const tsr_tensor *in = dst->src[1];
  const struct conv_geom g = im2col_geom (dst);
  int64_t r0, r1;

  (void) c;
  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      int64_t ix[TSR_MAX_DIMS];
      tsr_cpu_row_index (dst, r, ix);
      /* 2-D rows are (ow, oh, n); 1-D rows (ow, n).  */
      const int64_t ow = ix[1], oh = g.is_2d ? ix[2] : 0;
      const int64_t n = g.is_2d ? ix[3] : ix[2];
      int64_t k = 0;

      for (int64_t ch = 0; ch < g.c; ch++)
        for (int64_t kh = 0; kh < g.kh; kh++)
          for (int64_t kw = 0; kw < g.kw; kw++, k++)
            {
              int64_t x = ow * g.s0 - g.p0 + kw * g.d0;
              int64_t y = oh * g.s1 - g.p1 + kh * g.d1;
              float v = 0.0f;
              if (x >= 0 && x < g.w && y >= 0 && y < g.h)
                v = *(const float *) (g.is_2d ? tsr_cpu_at (in, x, y, ch, n)
                                              : tsr_cpu_at (in, x, ch, n, 0));
              store_f (tsr_cpu_at (dst, k, ix[1], ix[2], ix[3]), dst->type,
                       v);
            }
    }
  return TSR_OK;
}

/* pool_2d */

/* One output cell: the window clipped to the input.  */
static float
pool_cell (const tsr_tensor *a, bool is_max, int64_t x0, int64_t x1,
           int64_t y0, int64_t y1, int64_t i2, int64_t i3)
{
  double sum = 0;
  float max = -INFINITY;
  x0 = x0 < 0 ? 0 : x0;
  y0 = y0 < 0 ? 0 : y0;
  x1 = x1 > a->ne[0] ? a->ne[0] : x1;
  y1 = y1 > a->ne[1] ? a->ne[1] : y1;
  for (int64_t y = y0; y < y1; y++)
    for (int64_t x = x0; x < x1; x++)
      {
        float v = *(const float *) tsr_cpu_at (a, x, y, i2, i3);
        sum += v;
        if (isnan (v) || isnan (max))
          max = NAN;            /* NaN propagates, as in the sum */
        else if (v > max)
          max = v;
      }
  return is_max ? max : (float) (sum / (double) ((x1 - x0) * (y1 - y0)));
}

int
tsr_cpu_pool_2d (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                 int nth)
{
  const tsr_tensor *a = dst->src[0];
  const bool is_max = tsr_get_op_param_i32 (dst, 0) == TSR_POOL_MAX;
  const int64_t k0 = tsr_get_op_param_i32 (dst, 1);
  const int64_t k1 = tsr_get_op_param_i32 (dst, 2);
  const int64_t s0 = tsr_get_op_param_i32 (dst, 3);
  const int64_t s1 = tsr_get_op_param_i32 (dst, 4);
  const int64_t p0 = tsr_get_op_param_i32 (dst, 5);
  const int64_t p1 = tsr_get_op_param_i32 (dst, 6);
  int64_t r0, r1;

  (void) c;
  tsr_cpu_split (tsr_cpu_nrows (dst), ith, nth, &r0, &r1);
  for (int64_t r = r0; r < r1; r++)
    {
      int64_t ix[TSR_MAX_DIMS];
      tsr_cpu_row_index (dst, r, ix);
      const int64_t y0 = ix[1] * s1 - p1;
      for (int64_t ow = 0; ow < dst->ne[0]; ow++)
        {
          const int64_t x0 = ow * s0 - p0;
          *(float *) tsr_cpu_at (dst, ow, ix[1], ix[2], ix[3])
            = pool_cell (a, is_max, x0, x0 + k0, y0, y0 + k1, ix[2], ix[3]);
        }
    }
  return TSR_OK;
}
