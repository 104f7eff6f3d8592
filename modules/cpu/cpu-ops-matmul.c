/* cpu-ops-matmul.c - mul_mat: dst[i, j] = dot (a row i, b row j).
 *
 * a [k, m, a2, a3] (f32, f16, bf16, q8_0, q4_0) holds the weights, b
 * [k, n, b2, b3] is f32, dst [m, n, b2, b3] f32; batch (i2, i3) of b
 * uses batch (i2 / (b2 / a2), i3 / (b3 / a3)) of a.
 *
 * The work is cut into tiles of ROW_TILE rows of a by COL_TILE rows of
 * b per batch, dealt to threads in contiguous ranges.  A thread converts
 * the a rows of a tile to f32 once (kept while its next tile uses the
 * same rows) and dots each with every b row of the tile; strided b rows
 * are first copied to a contiguous row.  The dot products themselves
 * are in cpu-vec.c.  The tile loader is shared with mul_mat_id
 * (cpu-ops-nn.c).  */
#include <config.h>

#include "cpu-impl.h"

#define ROW_TILE TSR_CPU_WEIGHT_TILE
#define COL_TILE 64

bool
tsr_cpu_mul_mat_supports (const tsr_tensor *dst)
{
  const tsr_tensor *a = dst->src[0], *b = dst->src[1];

  if (!b || b->type != TSR_TYPE_F32 || dst->type != TSR_TYPE_F32)
    return false;
  if (!tsr_cpu_is_plain_float (a->type)
      && !(tsr_cpu_is_quant (a->type) && tsr_cpu_dense_rows (a)))
    return false;
  return a->ne[0] == b->ne[0] && dst->ne[0] == a->ne[1]
         && dst->ne[1] == b->ne[1] && dst->ne[2] == b->ne[2]
         && dst->ne[3] == b->ne[3] && b->ne[2] % a->ne[2] == 0
         && b->ne[3] % a->ne[3] == 0;
}

/* ROW_TILE converted rows of a and one contiguous row of b.  */
size_t
tsr_cpu_mul_mat_scratch (const tsr_tensor *dst)
{
  return (size_t) (ROW_TILE + 1) * (size_t) dst->src[0]->ne[0]
         * sizeof (float);
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

int
tsr_cpu_mul_mat (const struct tsr_cpu_op_ctx *c, tsr_tensor *dst, int ith,
                 int nth)
{
  const tsr_tensor *a = dst->src[0], *b = dst->src[1];
  const int64_t k = a->ne[0], m = a->ne[1], n = b->ne[1];
  const int64_t row_tiles = (m + ROW_TILE - 1) / ROW_TILE;
  const int64_t col_tiles = (n + COL_TILE - 1) / COL_TILE;
  const int64_t tiles = row_tiles * col_tiles * b->ne[2] * b->ne[3];
  const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  const bool b_direct = b->nb[0] == sizeof (float);
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

      tsr_cpu_weight_tile_load (&tile, a, i2 / r2, i3 / r3, rt * ROW_TILE,
                                a_buf);
      for (int64_t j = ct * COL_TILE; j < j_end; j++)
        {
          const char *bs = tsr_cpu_at (b, 0, j, i2, i3);
          const float *brow = (const float *) bs;

          if (!b_direct)
            {
              tsr_cpu_row_to_f32 (TSR_TYPE_F32, bs, b->nb[0], b_buf, k);
              brow = b_buf;
            }
          for (int64_t r = 0; r < tile.count; r++)
            *(float *) tsr_cpu_at (dst, tile.first + r, j, i2, i3)
              = tsr_cpu_vec_dot_f32 (k, tile.rows[r], brow);
        }
    }
  return TSR_OK;
}
