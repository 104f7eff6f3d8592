/* op-checks.h - what several backends' supports_op check alike: the
 * element types and layouts their kernels take, and the shapes of the
 * ops whose checks the backends share.  Not installed; each module
 * includes it (static inline: nothing is exported).
 *
 * The graph builders validate shapes already; a backend checks again
 * because supports_op may be asked about a node built by hand.  A check
 * lives here once two backends need it word for word.  */
#ifndef TSR_MODULES_OP_CHECKS_H
#define TSR_MODULES_OP_CHECKS_H

#include <stdbool.h>
#include <stdint.h>

#include <tessera/ops.h>          /* enum tsr_rope_mode, tsr_pool_op */
#include <tessera/tensor.h>
#include <tessera/types.h>

static inline bool
tsr_chk_is_f32 (const tsr_tensor *t)
{
  return t && t->type == TSR_TYPE_F32;
}

static inline bool
tsr_chk_is_plain_float (tsr_type t)
{
  return t == TSR_TYPE_F32 || t == TSR_TYPE_F16 || t == TSR_TYPE_BF16;
}

static inline bool
tsr_chk_is_quant (tsr_type t)
{
  return t == TSR_TYPE_Q8_0 || t == TSR_TYPE_Q4_0;
}

static inline bool
tsr_chk_dense_rows (const tsr_tensor *t)
{
  return t->nb[0] == tsr_type_traits (t->type)->type_size;
}

static inline bool
tsr_chk_same_rows (const tsr_tensor *a, const tsr_tensor *b)
{
  return a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3];
}

static inline bool
tsr_chk_binary (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *b = d->src[1];

  return tsr_chk_is_f32 (d) && tsr_chk_is_f32 (a) && tsr_chk_is_f32 (b) && tsr_same_shape (d, a)
         && tsr_can_repeat (b, a);
}

static inline bool
tsr_chk_unary (const tsr_tensor *d)
{
  return tsr_chk_is_f32 (d) && tsr_chk_is_f32 (d->src[0]) && tsr_same_shape (d, d->src[0]);
}

static inline bool
tsr_chk_glu (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *b = d->src[1];

  if (!tsr_chk_is_f32 (d) || !tsr_chk_is_f32 (a) || !tsr_chk_same_rows (d, a))
    return false;
  if (b)
    return tsr_chk_is_f32 (b) && tsr_same_shape (a, b) && tsr_same_shape (d, a);
  return a->ne[0] == 2 * d->ne[0];
}

static inline bool
tsr_chk_get_rows (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *rows = d->src[1];

  if (!rows || rows->type != TSR_TYPE_I32 || !tsr_chk_is_f32 (d))
    return false;
  if (!tsr_chk_is_plain_float (a->type) && !(tsr_chk_is_quant (a->type) && tsr_chk_dense_rows (a)))
    return false;
  return d->ne[0] == a->ne[0] && d->ne[1] == rows->ne[0]
         && d->ne[2] == rows->ne[1] && d->ne[3] == rows->ne[2]
         && rows->ne[3] == 1;
}

static inline bool
tsr_chk_sum_rows (const tsr_tensor *d)
{
  return tsr_chk_is_f32 (d) && tsr_chk_is_f32 (d->src[0]) && d->ne[0] == 1
         && tsr_chk_same_rows (d->src[0], d);
}

static inline bool
tsr_chk_soft_max (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *mask = d->src[1];

  if (!tsr_chk_is_f32 (a) || !tsr_chk_is_f32 (d) || !tsr_same_shape (a, d))
    return false;
  return !mask
         || ((mask->type == TSR_TYPE_F32 || mask->type == TSR_TYPE_F16)
             && mask->ne[0] == a->ne[0] && mask->ne[1] >= a->ne[1]);
}

static inline bool
tsr_chk_rope (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *pos = d->src[1], *ff = d->src[2];
  int32_t n_dims = tsr_get_op_param_i32 (d, 0);
  int32_t mode = tsr_get_op_param_i32 (d, 1);

  return pos && tsr_chk_is_f32 (a) && pos->type == TSR_TYPE_I32 && tsr_chk_is_f32 (d)
         && tsr_same_shape (a, d) && pos->ne[0] == a->ne[2] && n_dims >= 2
         && n_dims % 2 == 0 && n_dims <= a->ne[0]
         && (mode == TSR_ROPE_NORMAL || mode == TSR_ROPE_NEOX)
         && (!ff || (tsr_chk_is_f32 (ff) && ff->ne[0] == n_dims / 2
                     && tsr_is_contiguous (ff)));
}

/* Shapes every kernel relies on: positive sizes, a known type, whole
   blocks.  The builders guarantee this; a hand-made tensor may not.  */
static inline bool
tsr_chk_sane_tensor (const tsr_tensor *t)
{
  if (!t || !tsr_type_valid (t->type))
    return false;
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    if (t->ne[i] < 1)
      return false;
  return t->ne[0] % tsr_type_traits (t->type)->block_size == 0;
}

/* pool_2d on f32: the window, stride and padding parameters make sense
   and D has the shape they give.  */
static inline bool
tsr_chk_pool_2d (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0];
  int32_t p[7];

  for (int i = 0; i < 7; i++)
    p[i] = tsr_get_op_param_i32 (d, i);
  if (!tsr_chk_is_f32 (a) || !tsr_chk_is_f32 (d)
      || (p[0] != TSR_POOL_MAX && p[0] != TSR_POOL_AVG) || p[1] < 1
      || p[2] < 1 || p[3] < 1 || p[4] < 1 || p[5] < 0 || p[6] < 0
      || p[5] >= p[1] || p[6] >= p[2])
    return false;
  int64_t w = a->ne[0] + 2 * (int64_t) p[5] - p[1];
  int64_t h = a->ne[1] + 2 * (int64_t) p[6] - p[2];
  return w >= 0 && h >= 0 && d->ne[0] == w / p[3] + 1
         && d->ne[1] == h / p[4] + 1 && d->ne[2] == a->ne[2]
         && d->ne[3] == a->ne[3];
}

#endif /* TSR_MODULES_OP_CHECKS_H */
