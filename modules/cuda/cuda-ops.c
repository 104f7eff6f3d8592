/* cuda-ops.c - which operations the CUDA backend computes, and how
 * each is handed to its kernel.
 *
 * One table maps an op to its launcher and, where the kernel takes
 * only some types or layouts, its check; supports_op and the graph
 * walk both read it, so they cannot disagree.  The core has checked
 * shapes, operand types and parameters (tsr_node_validate) before
 * either sees a node, so a check says only what a kernel here needs
 * besides (types, dense rows, shared memory, 32-bit counts), and an
 * entry without one takes every valid node; a node no kernel takes is
 * left to the CPU by the scheduler.  Kernels follow strides, so views
 * and permutations are accepted wherever the CPU backend accepts them,
 * except block types, whose rows must be dense.  The kernels, by file:
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
typedef int (*launch_fn) (struct tsr_cuda_backend *be, tsr_tensor *dst);

struct tsr_cuda_tdesc
tsr_cuda_desc (const tsr_tensor *t)
{
  struct tsr_cuda_tdesc desc;

  desc.data = t->data;
  for (int i = 0; i < 4; i++)
    {
      desc.ne[i] = t->ne[i];
      desc.nb[i] = (int64_t) t->nb[i];
    }
  return desc;
}

/* Checks.  */

/* cpy / cont: same type (block types: only q8_0 and q4_0, dense rows),
   block type to f32/f16/bf16 (dense source rows), f32/f16/bf16 to a
   block type (dense destination rows, any source layout or shape),
   between f32, f16 and bf16, and between i32 and f32.  */
static bool
copy_supports (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0];
  tsr_type st = a->type, dt = d->type;

  if (st == dt)                 /* block types: only those with kernels */
    return tsr_chk_is_quant (st)
           ? tsr_chk_dense_rows (a) && tsr_chk_dense_rows (d)
           : !tsr_type_traits (st)->is_quantized;
  if (tsr_chk_is_quant (st))
    return tsr_chk_is_plain_float (dt) && tsr_chk_dense_rows (a);
  if (tsr_chk_is_quant (dt))
    return tsr_chk_is_plain_float (st) && tsr_chk_dense_rows (d);
  if (tsr_chk_is_plain_float (st) && tsr_chk_is_plain_float (dt))
    return true;
  return (st == TSR_TYPE_I32 && dt == TSR_TYPE_F32)
         || (st == TSR_TYPE_F32 && dt == TSR_TYPE_I32);
}

/* set_rows into f32, f16, bf16, or q8_0 / q4_0 with dense rows.  The
   claim words are indexed by int source row numbers.  */
static bool
set_rows_supports (const tsr_tensor *d)
{
  tsr_type t = d->type;

  if (!tsr_chk_is_plain_float (t)
      && !(tsr_chk_is_quant (t) && tsr_chk_dense_rows (d)))
    return false;
  return tsr_nrows (d->src[1]) <= INT32_MAX;
}

/* get_rows, mul_mat_id: weights of the types the kernels decode (not
   q8_K), block types with dense rows.  */
static bool
weight_supports (const tsr_tensor *d)
{
  return tsr_chk_weight (d->src[0]);
}

/* flash_attn_ext: the query row and accumulator of each warp in the
   48 KiB of shared memory a launch gets.  */
static bool
flash_attn_supports (const tsr_tensor *d)
{
  return tsr_cuda_flash_attn_shared (d->src[0]->ne[0], d->src[2]->ne[0])
         <= 48 * 1024;
}

/* im2col: patches of fewer than 2^31 elements (the kernel's index
   arithmetic is 32-bit).  */
static bool
im2col_supports (const tsr_tensor *d)
{
  return d->ne[0] <= INT32_MAX;
}

/* Launching.  */

static int
launched (struct tsr_cuda_backend *be, const tsr_tensor *d, int err)
{
  if (err == 0)
    return TSR_OK;
  return tsr_set_error (TSR_ERR_BACKEND, "cuda: %s: %s '%s' failed: %s",
                        be->d->name, tsr_op_name (d->op), d->name,
                        cudaGetErrorString ((cudaError_t) err));
}

static int
binary_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  return launched (be, d, tsr_cuda_binary (be->stream, d->op, tsr_cuda_desc (d),
                                     tsr_cuda_desc (d->src[0]),
                                     tsr_cuda_desc (d->src[1])));
}

static int
unary_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  bool params = d->op == TSR_OP_SCALE || d->op == TSR_OP_CLAMP;
  float p0 = params ? tsr_get_op_param_f32 (d, 0) : 0.0f;
  float p1 = d->op == TSR_OP_CLAMP ? tsr_get_op_param_f32 (d, 1) : 0.0f;

  return launched (be, d, tsr_cuda_unary (be->stream, d->op, p0, p1, tsr_cuda_desc (d),
                                    tsr_cuda_desc (d->src[0])));
}

static int
glu_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  const tsr_tensor *b = d->src[1] ? d->src[1] : d->src[0];

  return launched (be, d, tsr_cuda_glu (be->stream, d->op, tsr_cuda_desc (d),
                                  tsr_cuda_desc (d->src[0]), tsr_cuda_desc (b),
                                  d->src[1] == NULL));
}

static int
copy_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  const tsr_tensor *s = d->src[0];
  const struct tsr_type_traits *tr = tsr_type_traits (s->type);
  struct tsr_cuda_tdesc dd = tsr_cuda_desc (d), sd = tsr_cuda_desc (s);

  if (s->type != d->type && tsr_chk_is_quant (d->type))
    return launched (be, d, tsr_cuda_quantize (be->stream, dd, d->type, sd,
                                         s->type));
  if (s->type != d->type)
    return launched (be, d, tsr_cuda_convert (be->stream, dd, d->type, sd,
                                        s->type));
  /* Same type: move bytes, block types a block at a time.  */
  dd.ne[0] /= tr->block_size;
  sd.ne[0] /= tr->block_size;
  return launched (be, d, tsr_cuda_copy_bytes (be->stream, dd, sd,
                                         (int) tr->type_size));
}

static int
get_rows_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  be->uses_status = true;
  return launched (be, d, tsr_cuda_get_rows (be->stream, tsr_cuda_desc (d),
                                       tsr_cuda_desc (d->src[0]),
                                       d->src[0]->type,
                                       tsr_cuda_desc (d->src[1]), be->status,
                                       be->tag));
}

static int
sum_rows_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  return launched (be, d, tsr_cuda_sum_rows (be->stream, tsr_cuda_desc (d),
                                       tsr_cuda_desc (d->src[0])));
}

static int
norm_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  return launched (be, d, tsr_cuda_norm (be->stream, d->op == TSR_OP_RMS_NORM,
                                   tsr_get_op_param_f32 (d, 0), tsr_cuda_desc (d),
                                   tsr_cuda_desc (d->src[0])));
}

static int
soft_max_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  const tsr_tensor *mask = d->src[1];

  return launched (be, d, tsr_cuda_soft_max (be->stream,
                                       tsr_get_op_param_f32 (d, 0),
                                       tsr_cuda_desc (d), tsr_cuda_desc (d->src[0]),
                                       tsr_cuda_desc (mask ? mask : d->src[0]),
                                       mask ? (int) mask->type : -1));
}

static int
rope_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  const tsr_tensor *ff = d->src[2];
  return launched (be, d, tsr_cuda_rope (be->stream, tsr_cuda_desc (d),
                                   tsr_cuda_desc (d->src[0]), tsr_cuda_desc (d->src[1]),
                                   tsr_cuda_desc (ff ? ff : d->src[1]), ff != NULL,
                                   tsr_get_op_param_i32 (d, 0),
                                   tsr_get_op_param_i32 (d, 1)
                                   == TSR_ROPE_NEOX,
                                   tsr_get_op_param_f32 (d, 2),
                                   tsr_get_op_param_f32 (d, 3)));
}

static int
set_rows_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  size_t rows = (size_t) (d->ne[1] * d->ne[2] * d->ne[3]);
  int *claim = tsr_cuda_scratch (be, rows * sizeof *claim);

  if (!claim)
    return TSR_ERR_NO_MEMORY;
  be->uses_status = true;
  return launched (be, d, tsr_cuda_set_rows (be->stream, tsr_cuda_desc (d), d->type,
                                       tsr_cuda_desc (d->src[1]),
                                       tsr_cuda_desc (d->src[2]), claim,
                                       be->status, be->tag));
}

static int
flash_attn_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  const tsr_tensor *k = d->src[1], *v = d->src[2], *mask = d->src[3];
  char *q8 = NULL;
  void *ds8 = NULL;

  /* The next product's activations rounded here (cuda-fuse.c).  */
  if (be->q8_out && !(q8 = tsr_cuda_mmv_q8_scratch (be, d, &ds8)))
    return TSR_ERR_NO_MEMORY;
  return launched (be, d, tsr_cuda_flash_attn (be->stream, tsr_cuda_desc (d),
                                         tsr_cuda_desc (d->src[0]), tsr_cuda_desc (k),
                                         k->type, tsr_cuda_desc (v), v->type,
                                         tsr_cuda_desc (mask ? mask : k),
                                         mask ? (int) mask->type : -1,
                                         tsr_get_op_param_f32 (d, 0),
                                         tsr_get_op_param_f32 (d, 1),
                                         (signed char *) q8, ds8));
}

static int
mul_mat_id_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  be->uses_status = true;
  return launched (be, d, tsr_cuda_mul_mat_id (be->stream, tsr_cuda_desc (d),
                                         tsr_cuda_desc (d->src[0]),
                                         d->src[0]->type,
                                         tsr_cuda_desc (d->src[1]),
                                         tsr_cuda_desc (d->src[2]), be->status,
                                         be->tag));
}

static int
sum_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  double *partial = tsr_cuda_scratch (be, CU_SUM_BLOCKS * sizeof *partial);

  if (!partial)
    return TSR_ERR_NO_MEMORY;
  return launched (be, d, tsr_cuda_sum (be->stream, tsr_cuda_desc (d),
                                  tsr_cuda_desc (d->src[0]), partial));
}

static int
mean_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  return launched (be, d, tsr_cuda_mean (be->stream, tsr_cuda_desc (d),
                                   tsr_cuda_desc (d->src[0])));
}

static int
argmax_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  return launched (be, d, tsr_cuda_argmax (be->stream, tsr_cuda_desc (d),
                                     tsr_cuda_desc (d->src[0])));
}

static int
repeat_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  return launched (be, d, tsr_cuda_repeat (be->stream, tsr_cuda_desc (d),
                                     tsr_cuda_desc (d->src[0])));
}

static int
concat_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  return launched (be, d, tsr_cuda_concat (be->stream, tsr_cuda_desc (d),
                                     tsr_cuda_desc (d->src[0]),
                                     tsr_cuda_desc (d->src[1]),
                                     tsr_get_op_param_i32 (d, 0)));
}

static int
diag_mask_inf_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  return launched (be, d, tsr_cuda_diag_mask_inf (be->stream, tsr_cuda_desc (d),
                                            tsr_cuda_desc (d->src[0]),
                                            tsr_get_op_param_i32 (d, 0)));
}

static int
pad_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  return launched (be, d, tsr_cuda_pad (be->stream, tsr_cuda_desc (d),
                                  tsr_cuda_desc (d->src[0])));
}

static int
arange_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  return launched (be, d, tsr_cuda_arange (be->stream, tsr_cuda_desc (d),
                                     tsr_get_op_param_f32 (d, 0),
                                     tsr_get_op_param_f32 (d, 2)));
}

static int
upscale_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  return launched (be, d, tsr_cuda_upscale (be->stream, tsr_cuda_desc (d),
                                      tsr_cuda_desc (d->src[0]),
                                      tsr_get_op_param_i32 (d, 0)));
}

static int
argsort_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0];
  bool desc = d->op == TSR_OP_TOP_K
              || tsr_get_op_param_i32 (d, 0) == TSR_SORT_DESC;
  void *scratch = tsr_cuda_scratch (be, tsr_cuda_argsort_scratch (a->ne[0],
                                                      tsr_nrows (a)));

  if (!scratch)
    return TSR_ERR_NO_MEMORY;
  return launched (be, d, tsr_cuda_argsort (be->stream, tsr_cuda_desc (d), tsr_cuda_desc (a),
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
im2col_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  int32_t p[7];

  params7 (d, p);
  return launched (be, d, tsr_cuda_im2col (be->stream, tsr_cuda_desc (d), d->type,
                                     tsr_cuda_desc (d->src[1]), d->src[0]->ne,
                                     p));
}

static int
pool_2d_launch (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  int32_t p[7];

  params7 (d, p);
  return launched (be, d, tsr_cuda_pool_2d (be->stream, tsr_cuda_desc (d),
                                      tsr_cuda_desc (d->src[0]), p));
}

struct tsr_cuda_op
{
  supports_fn supports;         /* optional: every valid node */
  launch_fn launch;             /* NULL: no kernel for the op */
};

static const struct tsr_cuda_op op_table[TSR_OP_COUNT] = {
  [TSR_OP_ADD] = { NULL, binary_launch },
  [TSR_OP_SUB] = { NULL, binary_launch },
  [TSR_OP_MUL] = { NULL, binary_launch },
  [TSR_OP_DIV] = { NULL, binary_launch },
  [TSR_OP_SCALE] = { NULL, unary_launch },
  [TSR_OP_SILU] = { NULL, unary_launch },
  [TSR_OP_GELU] = { NULL, unary_launch },
  [TSR_OP_SQR] = { NULL, unary_launch },
  [TSR_OP_SQRT] = { NULL, unary_launch },
  [TSR_OP_EXP] = { NULL, unary_launch },
  [TSR_OP_LOG] = { NULL, unary_launch },
  [TSR_OP_NEG] = { NULL, unary_launch },
  [TSR_OP_ABS] = { NULL, unary_launch },
  [TSR_OP_SIGMOID] = { NULL, unary_launch },
  [TSR_OP_TANH] = { NULL, unary_launch },
  [TSR_OP_RELU] = { NULL, unary_launch },
  [TSR_OP_GELU_QUICK] = { NULL, unary_launch },
  [TSR_OP_GELU_ERF] = { NULL, unary_launch },
  [TSR_OP_CLAMP] = { NULL, unary_launch },
  [TSR_OP_SWIGLU] = { NULL, glu_launch },
  [TSR_OP_GEGLU] = { NULL, glu_launch },
  [TSR_OP_CPY] = { copy_supports, copy_launch },
  [TSR_OP_CONT] = { copy_supports, copy_launch },
  [TSR_OP_GET_ROWS] = { weight_supports, get_rows_launch },
  [TSR_OP_MUL_MAT] = { tsr_cuda_mul_mat_supports, tsr_cuda_mul_mat },
  [TSR_OP_SUM_ROWS] = { NULL, sum_rows_launch },
  [TSR_OP_NORM] = { NULL, norm_launch },
  [TSR_OP_RMS_NORM] = { NULL, norm_launch },
  [TSR_OP_SOFT_MAX] = { NULL, soft_max_launch },
  [TSR_OP_ROPE] = { NULL, rope_launch },
  [TSR_OP_SET_ROWS] = { set_rows_supports, set_rows_launch },
  [TSR_OP_DIAG_MASK_INF] = { NULL, diag_mask_inf_launch },
  [TSR_OP_FLASH_ATTN_EXT] = { flash_attn_supports, flash_attn_launch },
  [TSR_OP_MUL_MAT_ID] = { weight_supports, mul_mat_id_launch },
  [TSR_OP_CONCAT] = { NULL, concat_launch },
  [TSR_OP_REPEAT] = { NULL, repeat_launch },
  [TSR_OP_SUM] = { NULL, sum_launch },
  [TSR_OP_MEAN] = { NULL, mean_launch },
  [TSR_OP_ARGMAX] = { NULL, argmax_launch },
  [TSR_OP_PAD] = { NULL, pad_launch },
  [TSR_OP_ARANGE] = { NULL, arange_launch },
  [TSR_OP_ARGSORT] = { NULL, argsort_launch },
  [TSR_OP_TOP_K] = { NULL, argsort_launch },
  [TSR_OP_UPSCALE] = { NULL, upscale_launch },
  [TSR_OP_IM2COL] = { im2col_supports, im2col_launch },
  [TSR_OP_POOL_2D] = { NULL, pool_2d_launch },
};

/* The core has checked the node (tsr_node_validate): what is left is
   whether a kernel takes its types and layouts.  */
bool
tsr_cuda_supports_op (const struct tsr_cuda_device *d, const tsr_tensor *op)
{
  const struct tsr_cuda_op *entry = &op_table[op->op];

  (void) d;                     /* every GPU runs the same kernels */
  if (tsr_op_get_kind (op->op) == TSR_OP_KIND_VIEW)
    return true;                /* nothing to compute */
  return entry->launch && (!entry->supports || entry->supports (op));
}

int
tsr_cuda_launch_op (struct tsr_cuda_backend *be, tsr_tensor *node)
{
  return op_table[node->op].launch (be, node);
}
