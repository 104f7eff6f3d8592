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

/* Block types the GPU kernels decode as weights (get_rows, mul_mat,
   mul_mat_id): every quantized type but q8_K, the activation type of
   the CPU's k-quant dot products, which no model file holds.  */
static inline bool
tsr_chk_is_block_weight (tsr_type t)
{
  switch (t)
    {
    case TSR_TYPE_Q8_0: case TSR_TYPE_Q4_0: case TSR_TYPE_Q4_1:
    case TSR_TYPE_Q5_0: case TSR_TYPE_Q5_1: case TSR_TYPE_Q2_K:
    case TSR_TYPE_Q3_K: case TSR_TYPE_Q4_K: case TSR_TYPE_Q5_K:
    case TSR_TYPE_Q6_K: case TSR_TYPE_IQ4_NL: case TSR_TYPE_IQ4_XS:
    case TSR_TYPE_MXFP4:
      return true;
    default:
      return false;
    }
}

/* A weight operand the GPU kernels read: f32, f16, bf16, or a block
   type with dense rows.  */
static inline bool
tsr_chk_weight (const tsr_tensor *a)
{
  return tsr_chk_is_plain_float (a->type)
         || (tsr_chk_is_block_weight (a->type) && tsr_chk_dense_rows (a));
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

  if (!rows || rows->type != TSR_TYPE_I32 || !tsr_chk_is_f32 (d)
      || !tsr_chk_weight (a))
    return false;
  return d->ne[0] == a->ne[0] && d->ne[1] == rows->ne[0]
         && d->ne[2] == rows->ne[1] && d->ne[3] == rows->ne[2]
         && rows->ne[3] == 1;
}

/* mul_mat_id: src as [k, m, n_expert], b [k, 1 or n_used, n_tokens],
   ids [n_used, n_tokens].  */
static inline bool
tsr_chk_mul_mat_id (const tsr_tensor *d)
{
  const tsr_tensor *as = d->src[0], *b = d->src[1], *ids = d->src[2];

  if (!b || !ids || !tsr_chk_is_f32 (b) || ids->type != TSR_TYPE_I32
      || !tsr_chk_is_f32 (d) || !tsr_chk_weight (as))
    return false;
  return as->ne[3] == 1 && b->ne[0] == as->ne[0] && b->ne[3] == 1
         && ids->ne[2] == 1 && ids->ne[3] == 1 && b->ne[2] == ids->ne[1]
         && (b->ne[1] == 1 || b->ne[1] == ids->ne[0])
         && d->ne[0] == as->ne[1] && d->ne[1] == ids->ne[0]
         && d->ne[2] == ids->ne[1] && d->ne[3] == 1;
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

/* The bound of the indices NODE reads (rows of the table or of the
   destination, experts), for a backend's out-of-range message; 0 for
   ops without indices.  */
static inline int64_t
tsr_chk_index_bound (const tsr_tensor *node)
{
  switch (node->op)
    {
    case TSR_OP_GET_ROWS:       /* rows of the table */
    case TSR_OP_SET_ROWS:       /* rows of the destination */
      return node->src[0]->ne[1];
    case TSR_OP_MUL_MAT_ID:     /* experts */
      return node->src[0]->ne[2];
    default:
      return 0;
    }
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
