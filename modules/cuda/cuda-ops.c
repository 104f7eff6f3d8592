/* cuda-ops.c - which operations the CUDA backend computes, and how
 * each is handed to its kernel.
 *
 * One table maps an op to its check (the types, shapes and layouts its
 * kernel handles) and its launcher; supports_op and the graph walk
 * both read it, so they cannot disagree.  Kernels follow strides, so
 * views and permutations are accepted wherever the CPU backend accepts
 * them, except block types (q8_0, q4_0), whose rows must be dense.
 * Each check is the CPU backend's for the op, plus what a kernel here
 * needs besides (shared memory, 32-bit counts); anything else is left
 * to the CPU by the scheduler.  The kernels, by file:
 *   cuda-elementwise.cu  add, sub, mul, div, scale, the unary math
 *                        ops, clamp, swiglu, geglu
 *   cuda-copy.cu         cpy and cont (except into block types),
 *                        get_rows
 *   cuda-set-rows.cu     set_rows; cpy and cont into q8_0 / q4_0
 *   cuda-rows.cu         sum_rows, norm, rms_norm, soft_max, rope
 *   cuda-reduce.cu       sum, mean, argmax
 *   cuda-shape.cu        repeat, concat, diag_mask_inf, pad, arange,
 *                        upscale
 *   cuda-sort.cu         argsort, top_k
 *   cuda-attn.cu         flash_attn_ext
 *   cuda-mul-mat-id.cu   mul_mat_id
 *   cuda-conv.cu         im2col, pool_2d
 * mul_mat is cuda-blas.c's (cuBLAS).  Ops with an index operand
 * (get_rows, set_rows, mul_mat_id) report a bad index through the
 * backend's status word, tagged with the node.  */
#include <config.h>

#include <tessera/ops.h>          /* enum tsr_rope_mode, tsr_sort_order */

#include "cuda-impl.h"
#include "../op-checks.h"

typedef bool (*supports_fn) (const tsr_tensor *dst);
typedef int (*launch_fn) (struct cu_backend *be, tsr_tensor *dst);

struct cu_tdesc
cu_desc (const tsr_tensor *t)
{
  struct cu_tdesc desc;

  desc.data = t->data;
  for (int i = 0; i < 4; i++)
    {
      desc.ne[i] = t->ne[i];
      desc.nb[i] = (int64_t) t->nb[i];
    }
  return desc;
}

/* Checks.  */

/* cpy / cont: same type (block types: same shape, dense rows), block
   type to f32/f16/bf16 (same shape, dense source rows), f32/f16/bf16
   to a block type (dense destination rows, any source layout or
   shape), between f32, f16 and bf16, and between i32 and f32.  */
static bool
copy_supports (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0];
  tsr_type st = a->type, dt = d->type;

  if (tsr_nelements (a) != tsr_nelements (d))
    return false;
  if (st == dt)                 /* block types: only those with kernels */
    return tsr_chk_is_quant (st)
           ? tsr_same_shape (a, d) && tsr_chk_dense_rows (a) && tsr_chk_dense_rows (d)
           : !tsr_type_traits (st)->is_quantized;
  if (tsr_chk_is_quant (st))
    return tsr_chk_is_plain_float (dt) && tsr_same_shape (a, d) && tsr_chk_dense_rows (a);
  if (tsr_chk_is_quant (dt))
    return tsr_chk_is_plain_float (st) && tsr_chk_dense_rows (d);
  if (tsr_chk_is_plain_float (st) && tsr_chk_is_plain_float (dt))
    return true;
  return (st == TSR_TYPE_I32 && dt == TSR_TYPE_F32)
         || (st == TSR_TYPE_F32 && dt == TSR_TYPE_I32);
}

static bool
same_dims (const tsr_tensor *a, const tsr_tensor *b, int from)
{
  for (int i = from; i < TSR_MAX_DIMS; i++)
    if (a->ne[i] != b->ne[i])
      return false;
  return true;
}

/* set_rows: src[0] the destination (d aliases it), src[1] the f32 rows,
   src[2] the i32 indices.  The claim words are indexed by int source
   row numbers.  */
static bool
set_rows_supports (const tsr_tensor *d)
{
  const tsr_tensor *dst = d->src[0], *src = d->src[1], *idx = d->src[2];
  tsr_type t = d->type;

  if (!src || !idx || src->type != TSR_TYPE_F32 || idx->type != TSR_TYPE_I32
      || dst->type != t || !tsr_same_shape (dst, d))
    return false;
  if (!tsr_chk_is_plain_float (t) && !(tsr_chk_is_quant (t) && tsr_chk_dense_rows (d)))
    return false;
  return src->ne[0] == d->ne[0] && idx->ne[0] == src->ne[1]
         && idx->ne[1] == src->ne[2] && idx->ne[2] == src->ne[3]
         && idx->ne[3] == 1 && src->ne[2] % d->ne[2] == 0
         && src->ne[3] % d->ne[3] == 0 && tsr_nrows (src) <= INT32_MAX;
}

static bool
is_f32_or_f16 (const tsr_tensor *t)
{
  return t->type == TSR_TYPE_F32 || t->type == TSR_TYPE_F16;
}

/* flash_attn_ext: src q, k, v, mask; the query row and accumulator of
   each warp in the 48 KiB of shared memory a launch gets.  */
static bool
flash_attn_supports (const tsr_tensor *d)
{
  const tsr_tensor *q = d->src[0], *k = d->src[1], *v = d->src[2];
  const tsr_tensor *mask = d->src[3];

  if (!k || !v || !tsr_chk_is_f32 (q) || !is_f32_or_f16 (k) || !is_f32_or_f16 (v)
      || !tsr_chk_is_f32 (d))
    return false;
  if (k->ne[0] != q->ne[0] || v->ne[1] != k->ne[1] || v->ne[2] != k->ne[2]
      || k->ne[3] != q->ne[3] || v->ne[3] != q->ne[3]
      || q->ne[2] % k->ne[2] != 0 || d->ne[0] != v->ne[0]
      || d->ne[1] != q->ne[1] || d->ne[2] != q->ne[2]
      || d->ne[3] != q->ne[3])
    return false;
  if (cu_flash_attn_shared (q->ne[0], v->ne[0]) > 48 * 1024)
    return false;
  return !mask
         || (is_f32_or_f16 (mask) && mask->ne[0] == k->ne[1]
             && mask->ne[1] >= q->ne[1] && q->ne[2] % mask->ne[2] == 0
             && q->ne[3] % mask->ne[3] == 0);
}

/* mul_mat_id: src as, b, ids.  */
static bool
mul_mat_id_supports (const tsr_tensor *d)
{
  const tsr_tensor *as = d->src[0], *b = d->src[1], *ids = d->src[2];

  if (!b || !ids || !tsr_chk_is_f32 (b) || ids->type != TSR_TYPE_I32 || !tsr_chk_is_f32 (d))
    return false;
  if (!tsr_chk_is_plain_float (as->type) && !(tsr_chk_is_quant (as->type) && tsr_chk_dense_rows (as)))
    return false;
  return as->ne[3] == 1 && b->ne[0] == as->ne[0] && b->ne[3] == 1
         && ids->ne[2] == 1 && ids->ne[3] == 1 && b->ne[2] == ids->ne[1]
         && (b->ne[1] == 1 || b->ne[1] == ids->ne[0])
         && d->ne[0] == as->ne[1] && d->ne[1] == ids->ne[0]
         && d->ne[2] == ids->ne[1] && d->ne[3] == 1;
}

static bool
sum_supports (const tsr_tensor *d)
{
  return tsr_chk_is_f32 (d) && tsr_chk_is_f32 (d->src[0]) && tsr_nelements (d) == 1;
}

static bool
mean_supports (const tsr_tensor *d)
{
  return tsr_chk_is_f32 (d) && tsr_chk_is_f32 (d->src[0]) && d->ne[0] == 1
         && same_dims (d, d->src[0], 1);
}

static bool
argmax_supports (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0];

  return d->type == TSR_TYPE_I32 && tsr_chk_is_f32 (a) && a->ne[0] <= INT32_MAX
         && d->ne[0] == a->ne[1] && d->ne[1] == a->ne[2]
         && d->ne[2] == a->ne[3] && d->ne[3] == 1;
}

static bool
repeat_supports (const tsr_tensor *d)
{
  return tsr_chk_is_f32 (d) && tsr_chk_is_f32 (d->src[0]) && tsr_can_repeat (d->src[0], d);
}

static bool
concat_supports (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *b = d->src[1];
  const int32_t dim = tsr_get_op_param_i32 (d, 0);

  if (!tsr_chk_is_f32 (d) || !tsr_chk_is_f32 (a) || !tsr_chk_is_f32 (b) || dim < 0
      || dim >= TSR_MAX_DIMS)
    return false;
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    if (i == dim ? d->ne[i] != a->ne[i] + b->ne[i]
                 : d->ne[i] != a->ne[i] || d->ne[i] != b->ne[i])
      return false;
  return true;
}

static bool
pad_supports (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0];

  if (!tsr_chk_is_f32 (d) || !tsr_chk_is_f32 (a))
    return false;
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    if (d->ne[i] != a->ne[i] + tsr_get_op_param_i32 (d, i))
      return false;
  return true;
}

/* arange has no source (cu_supports_op lets it through).  */
static bool
arange_supports (const tsr_tensor *d)
{
  return tsr_chk_is_f32 (d) && d->ne[1] == 1 && d->ne[2] == 1 && d->ne[3] == 1;
}

static bool
upscale_supports (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0];
  const int32_t f = tsr_get_op_param_i32 (d, 0);

  return tsr_chk_is_f32 (d) && tsr_chk_is_f32 (a) && f >= 1 && d->ne[0] == a->ne[0] * f
         && d->ne[1] == a->ne[1] * f && same_dims (d, a, 2);
}

/* argsort and top_k.  */
static bool
argsort_supports (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0];
  int32_t p0 = tsr_get_op_param_i32 (d, 0);     /* top_k: k, else order */

  if (d->type != TSR_TYPE_I32 || !tsr_chk_is_f32 (a) || a->ne[0] > INT32_MAX
      || !same_dims (d, a, 1))
    return false;
  if (d->op == TSR_OP_TOP_K)
    return d->ne[0] >= 1 && d->ne[0] <= a->ne[0] && d->ne[0] == p0;
  return d->op == TSR_OP_ARGSORT && d->ne[0] == a->ne[0]
         && (p0 == TSR_SORT_ASC || p0 == TSR_SORT_DESC);
}

/* Output length of a convolution along one axis (< 1 when none).  */
static int64_t
conv_out (int64_t in, int64_t k, int s, int p, int dil)
{
  int64_t span = in + 2 * (int64_t) p - (int64_t) dil * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

/* im2col: src kernel (shape only), input; patches of fewer than 2^31
   elements (the kernel's index arithmetic is 32-bit).  */
static bool
im2col_supports (const tsr_tensor *d)
{
  const tsr_tensor *kernel = d->src[0], *in = d->src[1];
  int32_t p[7];

  for (int i = 0; i < 7; i++)
    p[i] = tsr_get_op_param_i32 (d, i);
  if (!in || !tsr_chk_is_f32 (in) || !is_f32_or_f16 (d) || d->ne[0] > INT32_MAX)
    return false;
  bool is_2d = p[6] != 0;
  int s1 = is_2d ? p[1] : 1, p1 = is_2d ? p[3] : 0, d1 = is_2d ? p[5] : 1;
  if (p[0] < 1 || s1 < 1 || p[4] < 1 || d1 < 1 || p[2] < 0 || p1 < 0)
    return false;
  int64_t kh = is_2d ? kernel->ne[1] : 1, c = kernel->ne[is_2d ? 2 : 1];
  int64_t ow = conv_out (in->ne[0], kernel->ne[0], p[0], p[2], p[4]);
  int64_t oh = conv_out (is_2d ? in->ne[1] : 1, kh, s1, p1, d1);
  if (is_2d)
    return in->ne[2] == c && d->ne[0] == kernel->ne[0] * kh * c
           && d->ne[1] == ow && d->ne[2] == oh && d->ne[3] == in->ne[3];
  return in->ne[1] == c && in->ne[3] == 1 && d->ne[0] == kernel->ne[0] * c
         && d->ne[1] == ow && d->ne[2] == in->ne[2] && d->ne[3] == 1;
}

/* Launching.  */

static int
launched (struct cu_backend *be, const tsr_tensor *d, int err)
{
  if (err == 0)
    return TSR_OK;
  return tsr_set_error (TSR_ERR_BACKEND, "cuda: %s: %s '%s' failed: %s",
                        be->d->name, tsr_op_name (d->op), d->name,
                        cudaGetErrorString ((cudaError_t) err));
}

static int
binary_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_binary (be->stream, d->op, cu_desc (d),
                                     cu_desc (d->src[0]),
                                     cu_desc (d->src[1])));
}

static int
unary_launch (struct cu_backend *be, tsr_tensor *d)
{
  bool params = d->op == TSR_OP_SCALE || d->op == TSR_OP_CLAMP;
  float p0 = params ? tsr_get_op_param_f32 (d, 0) : 0.0f;
  float p1 = d->op == TSR_OP_CLAMP ? tsr_get_op_param_f32 (d, 1) : 0.0f;

  return launched (be, d, cu_unary (be->stream, d->op, p0, p1, cu_desc (d),
                                    cu_desc (d->src[0])));
}

static int
glu_launch (struct cu_backend *be, tsr_tensor *d)
{
  const tsr_tensor *b = d->src[1] ? d->src[1] : d->src[0];

  return launched (be, d, cu_glu (be->stream, d->op, cu_desc (d),
                                  cu_desc (d->src[0]), cu_desc (b),
                                  d->src[1] == NULL));
}

static int
copy_launch (struct cu_backend *be, tsr_tensor *d)
{
  const tsr_tensor *s = d->src[0];
  const struct tsr_type_traits *tr = tsr_type_traits (s->type);
  struct cu_tdesc dd = cu_desc (d), sd = cu_desc (s);

  if (s->type != d->type && tsr_chk_is_quant (d->type))
    return launched (be, d, cu_quantize (be->stream, dd, d->type, sd,
                                         s->type));
  if (s->type != d->type)
    return launched (be, d, cu_convert (be->stream, dd, d->type, sd,
                                        s->type));
  /* Same type: move bytes, block types a block at a time.  */
  dd.ne[0] /= tr->block_size;
  sd.ne[0] /= tr->block_size;
  return launched (be, d, cu_copy_bytes (be->stream, dd, sd,
                                         (int) tr->type_size));
}

static int
get_rows_launch (struct cu_backend *be, tsr_tensor *d)
{
  be->uses_status = true;
  return launched (be, d, cu_get_rows (be->stream, cu_desc (d),
                                       cu_desc (d->src[0]),
                                       d->src[0]->type,
                                       cu_desc (d->src[1]), be->status,
                                       be->tag));
}

static int
sum_rows_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_sum_rows (be->stream, cu_desc (d),
                                       cu_desc (d->src[0])));
}

static int
norm_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_norm (be->stream, d->op == TSR_OP_RMS_NORM,
                                   tsr_get_op_param_f32 (d, 0), cu_desc (d),
                                   cu_desc (d->src[0])));
}

static int
soft_max_launch (struct cu_backend *be, tsr_tensor *d)
{
  const tsr_tensor *mask = d->src[1];

  return launched (be, d, cu_soft_max (be->stream,
                                       tsr_get_op_param_f32 (d, 0),
                                       cu_desc (d), cu_desc (d->src[0]),
                                       cu_desc (mask ? mask : d->src[0]),
                                       mask ? (int) mask->type : -1));
}

static int
rope_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_rope (be->stream, cu_desc (d),
                                   cu_desc (d->src[0]), cu_desc (d->src[1]),
                                   tsr_get_op_param_i32 (d, 0),
                                   tsr_get_op_param_i32 (d, 1)
                                   == TSR_ROPE_NEOX,
                                   tsr_get_op_param_f32 (d, 2),
                                   tsr_get_op_param_f32 (d, 3)));
}

static int
set_rows_launch (struct cu_backend *be, tsr_tensor *d)
{
  size_t rows = (size_t) (d->ne[1] * d->ne[2] * d->ne[3]);
  int *claim = cu_scratch (be, rows * sizeof *claim);

  if (!claim)
    return TSR_ERR_NO_MEMORY;
  be->uses_status = true;
  return launched (be, d, cu_set_rows (be->stream, cu_desc (d), d->type,
                                       cu_desc (d->src[1]),
                                       cu_desc (d->src[2]), claim,
                                       be->status, be->tag));
}

static int
flash_attn_launch (struct cu_backend *be, tsr_tensor *d)
{
  const tsr_tensor *k = d->src[1], *v = d->src[2], *mask = d->src[3];

  return launched (be, d, cu_flash_attn (be->stream, cu_desc (d),
                                         cu_desc (d->src[0]), cu_desc (k),
                                         k->type, cu_desc (v), v->type,
                                         cu_desc (mask ? mask : k),
                                         mask ? (int) mask->type : -1,
                                         tsr_get_op_param_f32 (d, 0)));
}

static int
mul_mat_id_launch (struct cu_backend *be, tsr_tensor *d)
{
  be->uses_status = true;
  return launched (be, d, cu_mul_mat_id (be->stream, cu_desc (d),
                                         cu_desc (d->src[0]),
                                         d->src[0]->type,
                                         cu_desc (d->src[1]),
                                         cu_desc (d->src[2]), be->status,
                                         be->tag));
}

static int
sum_launch (struct cu_backend *be, tsr_tensor *d)
{
  double *partial = cu_scratch (be, CU_SUM_BLOCKS * sizeof *partial);

  if (!partial)
    return TSR_ERR_NO_MEMORY;
  return launched (be, d, cu_sum (be->stream, cu_desc (d),
                                  cu_desc (d->src[0]), partial));
}

static int
mean_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_mean (be->stream, cu_desc (d),
                                   cu_desc (d->src[0])));
}

static int
argmax_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_argmax (be->stream, cu_desc (d),
                                     cu_desc (d->src[0])));
}

static int
repeat_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_repeat (be->stream, cu_desc (d),
                                     cu_desc (d->src[0])));
}

static int
concat_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_concat (be->stream, cu_desc (d),
                                     cu_desc (d->src[0]),
                                     cu_desc (d->src[1]),
                                     tsr_get_op_param_i32 (d, 0)));
}

static int
diag_mask_inf_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_diag_mask_inf (be->stream, cu_desc (d),
                                            cu_desc (d->src[0]),
                                            tsr_get_op_param_i32 (d, 0)));
}

static int
pad_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_pad (be->stream, cu_desc (d),
                                  cu_desc (d->src[0])));
}

static int
arange_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_arange (be->stream, cu_desc (d),
                                     tsr_get_op_param_f32 (d, 0),
                                     tsr_get_op_param_f32 (d, 2)));
}

static int
upscale_launch (struct cu_backend *be, tsr_tensor *d)
{
  return launched (be, d, cu_upscale (be->stream, cu_desc (d),
                                      cu_desc (d->src[0]),
                                      tsr_get_op_param_i32 (d, 0)));
}

static int
argsort_launch (struct cu_backend *be, tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0];
  bool desc = d->op == TSR_OP_TOP_K
              || tsr_get_op_param_i32 (d, 0) == TSR_SORT_DESC;
  void *scratch = cu_scratch (be, cu_argsort_scratch (a->ne[0],
                                                      tsr_nrows (a)));

  if (!scratch)
    return TSR_ERR_NO_MEMORY;
  return launched (be, d, cu_argsort (be->stream, cu_desc (d), cu_desc (a),
                                      desc, scratch));
}

/* The op's seven i32 parameters (im2col, pool_2d).  */
static void
params7 (const tsr_tensor *d, int32_t p[7])
{
  for (int i = 0; i < 7; i++)
    p[i] = tsr_get_op_param_i32 (d, i);
}

static int
im2col_launch (struct cu_backend *be, tsr_tensor *d)
{
  int32_t p[7];

  params7 (d, p);
  return launched (be, d, cu_im2col (be->stream, cu_desc (d), d->type,
                                     cu_desc (d->src[1]), d->src[0]->ne,
                                     p));
}

static int
pool_2d_launch (struct cu_backend *be, tsr_tensor *d)
{
  int32_t p[7];

  params7 (d, p);
  return launched (be, d, cu_pool_2d (be->stream, cu_desc (d),
                                      cu_desc (d->src[0]), p));
}

struct cu_op
{
  supports_fn supports;
  launch_fn launch;
};

static const struct cu_op op_table[TSR_OP_COUNT] = {
  [TSR_OP_ADD] = { tsr_chk_binary, binary_launch },
  [TSR_OP_SUB] = { tsr_chk_binary, binary_launch },
  [TSR_OP_MUL] = { tsr_chk_binary, binary_launch },
  [TSR_OP_DIV] = { tsr_chk_binary, binary_launch },
  [TSR_OP_SCALE] = { tsr_chk_unary, unary_launch },
  [TSR_OP_SILU] = { tsr_chk_unary, unary_launch },
  [TSR_OP_GELU] = { tsr_chk_unary, unary_launch },
  [TSR_OP_SQR] = { tsr_chk_unary, unary_launch },
  [TSR_OP_SQRT] = { tsr_chk_unary, unary_launch },
  [TSR_OP_EXP] = { tsr_chk_unary, unary_launch },
  [TSR_OP_LOG] = { tsr_chk_unary, unary_launch },
  [TSR_OP_NEG] = { tsr_chk_unary, unary_launch },
  [TSR_OP_ABS] = { tsr_chk_unary, unary_launch },
  [TSR_OP_SIGMOID] = { tsr_chk_unary, unary_launch },
  [TSR_OP_TANH] = { tsr_chk_unary, unary_launch },
  [TSR_OP_RELU] = { tsr_chk_unary, unary_launch },
  [TSR_OP_GELU_QUICK] = { tsr_chk_unary, unary_launch },
  [TSR_OP_CLAMP] = { tsr_chk_unary, unary_launch },
  [TSR_OP_SWIGLU] = { tsr_chk_glu, glu_launch },
  [TSR_OP_GEGLU] = { tsr_chk_glu, glu_launch },
  [TSR_OP_CPY] = { copy_supports, copy_launch },
  [TSR_OP_CONT] = { copy_supports, copy_launch },
  [TSR_OP_GET_ROWS] = { tsr_chk_get_rows, get_rows_launch },
  [TSR_OP_MUL_MAT] = { cu_mul_mat_supports, cu_mul_mat },
  [TSR_OP_SUM_ROWS] = { tsr_chk_sum_rows, sum_rows_launch },
  [TSR_OP_NORM] = { tsr_chk_unary, norm_launch },
  [TSR_OP_RMS_NORM] = { tsr_chk_unary, norm_launch },
  [TSR_OP_SOFT_MAX] = { tsr_chk_soft_max, soft_max_launch },
  [TSR_OP_ROPE] = { tsr_chk_rope, rope_launch },
  [TSR_OP_SET_ROWS] = { set_rows_supports, set_rows_launch },
  [TSR_OP_DIAG_MASK_INF] = { tsr_chk_unary, diag_mask_inf_launch },
  [TSR_OP_FLASH_ATTN_EXT] = { flash_attn_supports, flash_attn_launch },
  [TSR_OP_MUL_MAT_ID] = { mul_mat_id_supports, mul_mat_id_launch },
  [TSR_OP_CONCAT] = { concat_supports, concat_launch },
  [TSR_OP_REPEAT] = { repeat_supports, repeat_launch },
  [TSR_OP_SUM] = { sum_supports, sum_launch },
  [TSR_OP_MEAN] = { mean_supports, mean_launch },
  [TSR_OP_ARGMAX] = { argmax_supports, argmax_launch },
  [TSR_OP_PAD] = { pad_supports, pad_launch },
  [TSR_OP_ARANGE] = { arange_supports, arange_launch },
  [TSR_OP_ARGSORT] = { argsort_supports, argsort_launch },
  [TSR_OP_TOP_K] = { argsort_supports, argsort_launch },
  [TSR_OP_UPSCALE] = { upscale_supports, upscale_launch },
  [TSR_OP_IM2COL] = { im2col_supports, im2col_launch },
  [TSR_OP_POOL_2D] = { tsr_chk_pool_2d, pool_2d_launch },
};

bool
cu_supports_op (const struct cu_device *d, const tsr_tensor *op)
{
  (void) d;                     /* every GPU runs the same kernels */
  if (!op || (unsigned) op->op >= TSR_OP_COUNT)
    return false;
  if (tsr_op_get_kind (op->op) == TSR_OP_KIND_VIEW)
    return true;                /* nothing to compute */
  /* arange is the one op without operands.  */
  if (!op_table[op->op].supports || !tsr_chk_sane_tensor (op)
      || (op->op != TSR_OP_ARANGE && !tsr_chk_sane_tensor (op->src[0])))
    return false;
  for (int i = 1; i < TSR_MAX_SRC; i++)
    if (op->src[i] && !tsr_chk_sane_tensor (op->src[i]))
      return false;
  return op_table[op->op].supports (op);
}

bool
cu_op_uses_status (const tsr_tensor *node)
{
  return cu_index_bound (node) > 0;
}

int64_t
cu_index_bound (const tsr_tensor *node)
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

int
cu_launch_op (struct cu_backend *be, tsr_tensor *node)
{
  return op_table[node->op].launch (be, node);
}
