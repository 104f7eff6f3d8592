/* ocl-ops.c - which operations the OpenCL backend computes, and how
 * each is handed to its kernel.
 *
 * One table maps an op to its launcher (kernel arguments and work
 * size) and, where the kernel takes only some types or layouts, its
 * check; supports_op and the graph walk both read it, so they cannot
 * disagree.  The core has checked shapes, operand types and parameters
 * (tsr_node_validate) before either sees a node, so a check says only
 * which types and layouts its kernel takes, and an entry without one
 * takes every valid node.  Every kernel follows strides, so views and
 * permutations are accepted wherever the CPU backend accepts them,
 * except block types (ocl-quant.cl), whose rows must be dense.
 * Launchers run under the device's lock (kernel objects are shared by
 * the device's backends).  */
#include <config.h>

#include <string.h>

#include <tessera/ops.h>          /* enum tsr_rope_mode */

#include "ocl-impl.h"
#include "../op-checks.h"

/* A tensor as a kernel sees it (struct tdesc in ocl-common.cl).  */
struct tsr_opencl_tdesc
{
  cl_long ne[4];
  cl_long nb[4];
  cl_long off;
};

/* Work items per launch at most; kernels loop over the rest.  */
#define MAX_ITEMS ((size_t) 1 << 20)
#define GROUP 64

typedef bool (*supports_fn) (const tsr_tensor *dst);
typedef int (*launch_fn) (struct tsr_opencl_launch *l, tsr_tensor *dst);

/* Checks.  */

/* cpy / cont: same type (block types: dense rows, moved as blocks),
   block type to f32/f16/bf16 (dense source rows), between f32, f16 and
   bf16, between i32 and f32, and from f32/f16/bf16 into a type
   quantizes () takes (dense destination rows).  */
/* The block types the kernels quantize into (k_quantize, k_set_rows_q):
   those of 32-element blocks, to the bits of the reference quantizers
   (ocl-copy.cl, ocl-fit.cl).  The super-block types' searches are not
   ported (the CPU quantizes into them).  */
static bool
quantizes (tsr_type t)
{
  switch (t)
    {
    case TSR_TYPE_Q8_0: case TSR_TYPE_Q4_0: case TSR_TYPE_Q4_1:
    case TSR_TYPE_Q5_0: case TSR_TYPE_Q5_1: case TSR_TYPE_IQ4_NL:
    case TSR_TYPE_MXFP4:
      return true;
    default:
      return false;
    }
}

static bool
copy_supports (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0];
  tsr_type st = a->type, dt = d->type;

  if (st == dt)                 /* block types: those the kernels read */
    return tsr_chk_is_block_weight (st)
           ? tsr_chk_dense_rows (a) && tsr_chk_dense_rows (d)
           : !tsr_type_traits (st)->is_quantized;
  if (tsr_chk_is_block_weight (st))
    return tsr_chk_is_plain_float (dt) && tsr_chk_dense_rows (a);
  if (tsr_chk_is_plain_float (st) && tsr_chk_is_plain_float (dt))
    return true;
  if (tsr_chk_is_plain_float (st) && quantizes (dt))
    return tsr_chk_dense_rows (d);
  return (st == TSR_TYPE_I32 && dt == TSR_TYPE_F32)
         || (st == TSR_TYPE_F32 && dt == TSR_TYPE_I32);
}

/* set_rows into f32, f16, bf16 or a type quantizes () takes (dense
   rows).  */
static bool
set_rows_supports (const tsr_tensor *d)
{
  return tsr_chk_is_plain_float (d->type)
         || (quantizes (d->type) && tsr_chk_dense_rows (d));
}

/* get_rows, mul_mat, mul_mat_id: weights of the types the kernels
   decode (not q8_K), block types with dense rows.  */
static bool
weight_supports (const tsr_tensor *d)
{
  return tsr_chk_weight (d->src[0]);
}

/* Launching.  */

struct args
{
  struct tsr_opencl_launch *l;
  enum tsr_opencl_kernel_id id;
  cl_kernel k;
  cl_uint i;
  cl_int err;
};

static void
arg (struct args *a, size_t size, const void *value)
{
  if (a->err == CL_SUCCESS)
    a->err = clSetKernelArg (a->k, a->i, size, value);
  a->i++;
}

static void
arg_int (struct args *a, cl_int v)
{
  arg (a, sizeof v, &v);
}

static void
arg_long (struct args *a, int64_t v)
{
  cl_long x = v;
  arg (a, sizeof x, &x);
}

static void
arg_float (struct args *a, float v)
{
  arg (a, sizeof v, &v);
}

/* T's buffer and descriptor.  NE0_DIV divides ne[0] (block types copied
   as blocks).  */
static void
arg_tensor_div (struct args *a, const tsr_tensor *t, int64_t ne0_div)
{
  struct tsr_opencl_tdesc desc;
  cl_mem mem = NULL;
  size_t off = 0;

  /* The core has checked that T is allocated in this device's memory;
     a data pointer past the end of its buffer fails the launch rather
     than reach the kernel.  */
  if (!tsr_opencl_tensor_mem (a->l->d, t, &mem, &off) && a->err == CL_SUCCESS)
    a->err = CL_INVALID_MEM_OBJECT;
  for (int i = 0; i < 4; i++)
    {
      desc.ne[i] = t->ne[i];
      desc.nb[i] = (cl_long) t->nb[i];
    }
  desc.ne[0] /= ne0_div;
  desc.off = (cl_long) off;
  arg (a, sizeof mem, &mem);
  arg (a, sizeof desc, &desc);
}

static void
arg_tensor (struct args *a, const tsr_tensor *t)
{
  arg_tensor_div (a, t, 1);
}

static void
arg_status (struct args *a)
{
  arg (a, sizeof (cl_mem), &a->l->status);
  arg_int (a, a->l->tag);
  a->l->uses_status = true;
}

static struct args
args_for (struct tsr_opencl_launch *l, enum tsr_opencl_kernel_id k)
{
  return (struct args) { l, k, l->d->kernels[k], 0, CL_SUCCESS };
}

/* Enqueue A's kernel over GLOBAL items in groups of LOCAL (NULL: the
   driver's choice); an error set when it fails.  */
static int
enqueue (struct args *a, const tsr_tensor *dst, size_t global,
         const size_t *local)
{
  cl_event ev = NULL;
  struct tsr_opencl_profile *prof = a->l->prof;

  if (a->err == CL_SUCCESS)
    a->err = clEnqueueNDRangeKernel (a->l->d->queue, a->k, 1, NULL, &global,
                                     local, 0, NULL, prof ? &ev : NULL);
  if (a->err == CL_SUCCESS && prof)
    tsr_opencl_profile_add (prof, tsr_opencl_kernel_name (a->id), dst, ev);
  if (a->err != CL_SUCCESS)
    return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: %s '%s' failed: %s "
                          "(%d)", a->l->d->name, tsr_op_name (dst->op),
                          dst->name, tsr_opencl_error_string (a->err),
                          (int) a->err);
  return TSR_OK;
}

/* Enqueue A's kernel over N items (N >= 1).  */
static int
run (struct args *a, tsr_tensor *dst, int64_t n)
{
  size_t items = (size_t) n < MAX_ITEMS ? (size_t) n : MAX_ITEMS;

  return enqueue (a, dst, (items + GROUP - 1) / GROUP * GROUP, NULL);
}

/* Enqueue A's kernel, one that takes a work-group per row or tile, over
   N groups (N >= 1) of the kernel's local size.  */
#define MAX_GROUPS ((size_t) 1 << 16)

static int
run_groups (struct args *a, tsr_tensor *dst, int64_t n)
{
  size_t local = a->l->d->local[a->id];
  size_t groups = (size_t) n < MAX_GROUPS ? (size_t) n : MAX_GROUPS;

  return enqueue (a, dst, groups * local, &local);
}

static int
binary_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_binary);
  arg_int (&a, d->op);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_tensor (&a, d->src[1]);
  arg_long (&a, tsr_nelements (d));
  return run (&a, d, tsr_nelements (d));
}

static int
unary_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_unary);
  bool params = d->op == TSR_OP_SCALE || d->op == TSR_OP_CLAMP;
  arg_int (&a, d->op);
  arg_float (&a, params ? tsr_get_op_param_f32 (d, 0) : 0.0f);
  arg_float (&a, d->op == TSR_OP_CLAMP ? tsr_get_op_param_f32 (d, 1) : 0.0f);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_long (&a, tsr_nelements (d));
  return run (&a, d, tsr_nelements (d));
}

static int
glu_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_glu);
  const tsr_tensor *b = d->src[1] ? d->src[1] : d->src[0];
  arg_int (&a, d->op);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_tensor (&a, b);
  arg_int (&a, d->src[1] != NULL);
  arg_long (&a, tsr_nelements (d));
  return run (&a, d, tsr_nelements (d));
}

static int
copy_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  if (d->type != d->src[0]->type && quantizes (d->type))
    {
      struct args q = args_for (l, OCL_K_quantize);
      arg_tensor (&q, d);
      arg_int (&q, d->type);
      arg_tensor (&q, d->src[0]);
      arg_int (&q, d->src[0]->type);
      arg_long (&q, tsr_nelements (d) / 32);
      return run (&q, d, tsr_nelements (d) / 32);
    }
  struct args a = args_for (l, OCL_K_copy);
  const tsr_tensor *s = d->src[0];
  const struct tsr_type_traits *tr = tsr_type_traits (s->type);
  bool same = s->type == d->type;
  int64_t div = same ? tr->block_size : 1;
  arg_tensor_div (&a, d, div);
  arg_int (&a, d->type);
  arg_tensor_div (&a, s, div);
  arg_int (&a, s->type);
  arg_int (&a, same ? (cl_int) tr->type_size : 0);
  arg_long (&a, tsr_nelements (d) / div);
  return run (&a, d, tsr_nelements (d) / div);
}

static int
get_rows_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_get_rows);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_int (&a, d->src[0]->type);
  arg_tensor (&a, d->src[1]);
  arg_status (&a);
  arg_long (&a, tsr_nelements (d));
  return run (&a, d, tsr_nelements (d));
}

static int
set_rows_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  const tsr_tensor *src = d->src[1], *idx = d->src[2];
  struct args c = args_for (l, OCL_K_set_rows_check);
  struct args a = args_for (l, OCL_K_set_rows);
  int st;

  arg_tensor (&c, idx);
  arg_long (&c, d->ne[1]);
  arg_status (&c);
  arg_long (&c, tsr_nelements (idx));
  st = run (&c, d, tsr_nelements (idx));
  if (st != TSR_OK)
    return st;
  if (quantizes (d->type))
    {
      struct args q = args_for (l, OCL_K_set_rows_q);
      arg_tensor (&q, d);
      arg_int (&q, d->type);
      arg_tensor (&q, src);
      arg_tensor (&q, idx);
      arg_status (&q);
      arg_long (&q, tsr_nelements (src) / 32);
      return run (&q, d, tsr_nelements (src) / 32);
    }
  arg_tensor (&a, d);
  arg_int (&a, d->type);
  arg_tensor (&a, src);
  arg_tensor (&a, idx);
  arg_status (&a);
  arg_long (&a, tsr_nelements (src));
  return run (&a, d, tsr_nelements (src));
}

#define OCL_MMV_MAX_COLS 8

/* At most this many columns take k_mul_mat_vec (MMV_MAX_COLS of
   ocl-matmul.cl), which reads each weight once; more take the tiled
   product (64-row tiles of weights, 64-column tiles of activations),
   or, on a device that cannot run it, a work item per element.  */
#define OCL_TILE 64

static int
mul_mat_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  const tsr_tensor *w = d->src[0];
  enum tsr_opencl_kernel_id k
    = d->src[1]->ne[1] <= OCL_MMV_MAX_COLS ? OCL_K_mul_mat_vec
    : l->d->tiled ? OCL_K_mul_mat_tiled : OCL_K_mul_mat;
  struct args a = args_for (l, k);
  int64_t batches = d->ne[2] * d->ne[3], n;

  if (k == OCL_K_mul_mat_vec)
    n = d->ne[0] * batches;
  else if (k == OCL_K_mul_mat_tiled)
    n = (d->ne[0] + OCL_TILE - 1) / OCL_TILE
        * ((d->ne[1] + OCL_TILE - 1) / OCL_TILE) * batches;
  else
    n = tsr_nelements (d);
  arg_tensor (&a, d);
  arg_tensor (&a, w);
  arg_int (&a, w->type);
  arg_tensor (&a, d->src[1]);
  arg_long (&a, n);
  return k == OCL_K_mul_mat ? run (&a, d, n) : run_groups (&a, d, n);
}

static int
mul_mat_id_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_mul_mat_id);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_int (&a, d->src[0]->type);
  arg_tensor (&a, d->src[1]);
  arg_tensor (&a, d->src[2]);
  arg_status (&a);
  arg_long (&a, tsr_nelements (d));
  return run_groups (&a, d, tsr_nelements (d));
}

static int
sum_rows_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_sum_rows);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_long (&a, tsr_nrows (d));
  return run_groups (&a, d, tsr_nrows (d));
}

/* Shape ops, reductions, sorting, im2col, pool_2d (ocl-shape.cl).  */
static int
shape_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_shape);
  arg_int (&a, d->op);
  for (int i = 0; i < 4; i++)
    arg_int (&a, d->op == TSR_OP_REPEAT ? 0 : tsr_get_op_param_i32 (d, i));
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  /* concat's second operand; the others pass the first, unread.  */
  arg_tensor (&a, d->op == TSR_OP_CONCAT ? d->src[1] : d->src[0]);
  arg_long (&a, tsr_nelements (d));
  return run (&a, d, tsr_nelements (d));
}

static int
arange_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_arange);
  arg_float (&a, tsr_get_op_param_f32 (d, 0));
  arg_float (&a, tsr_get_op_param_f32 (d, 2));
  arg_tensor (&a, d);
  arg_long (&a, d->ne[0]);
  return run (&a, d, d->ne[0]);
}

static int
reduce_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_reduce);
  int64_t rows = tsr_nrows (d->src[0]);
  arg_int (&a, d->op);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_long (&a, rows);
  return run (&a, d, d->op == TSR_OP_SUM ? 1 : rows);
}

static int
argsort_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_argsort);
  arg_int (&a, tsr_get_op_param_i32 (d, 0) == TSR_SORT_DESC);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_long (&a, tsr_nelements (d));
  return run (&a, d, tsr_nelements (d));
}

static int
im2col_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_im2col);
  const tsr_tensor *kernel = d->src[0];
  bool is_2d = tsr_get_op_param_i32 (d, 6) != 0;
  for (int i = 0; i < 7; i++)
    arg_int (&a, tsr_get_op_param_i32 (d, i));
  arg_long (&a, kernel->ne[0]);
  arg_long (&a, is_2d ? kernel->ne[1] : 1);
  arg_int (&a, d->type);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[1]);
  arg_long (&a, tsr_nelements (d));
  return run (&a, d, tsr_nelements (d));
}

static int
pool_2d_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_pool_2d);
  for (int i = 0; i < 7; i++)
    arg_int (&a, tsr_get_op_param_i32 (d, i));
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_long (&a, tsr_nelements (d));
  return run (&a, d, tsr_nelements (d));
}

/* top_k: K passes over the row, each the best element after the last
   one chosen (K * n reads: meant for routers, K at most 64).  */
static bool
top_k_supports (const tsr_tensor *d)
{
  return d->ne[0] <= 64;
}

static int
top_k_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_top_k);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_long (&a, tsr_nrows (d));
  return run (&a, d, tsr_nrows (d));
}

static int
norm_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_norm);
  arg_int (&a, d->op);
  arg_float (&a, tsr_get_op_param_f32 (d, 0));
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_long (&a, tsr_nrows (d));
  return run_groups (&a, d, tsr_nrows (d));
}

static int
soft_max_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_soft_max);
  const tsr_tensor *mask = d->src[1];
  arg_float (&a, tsr_get_op_param_f32 (d, 0));
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_tensor (&a, mask ? mask : d->src[0]);     /* unread without mask */
  arg_int (&a, mask ? (cl_int) mask->type : -1);
  arg_long (&a, tsr_nrows (d));
  return run_groups (&a, d, tsr_nrows (d));
}

static int
rope_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_rope);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_tensor (&a, d->src[1]);
  arg_tensor (&a, d->src[2] ? d->src[2] : d->src[1]);   /* unread without */
  arg_int (&a, d->src[2] != NULL);
  arg_int (&a, tsr_get_op_param_i32 (d, 0));
  arg_int (&a, tsr_get_op_param_i32 (d, 1) == TSR_ROPE_NEOX);
  arg_float (&a, tsr_get_op_param_f32 (d, 2));
  arg_float (&a, tsr_get_op_param_f32 (d, 3));
  arg_long (&a, tsr_nelements (d));
  return run (&a, d, tsr_nelements (d));
}

/* The values of a row are held in private memory (FA_MAX_DV of
   ocl-rows.cl).  */
#define OCL_FA_MAX_DV 256

static bool
flash_attn_supports (const tsr_tensor *d)
{
  return d->ne[0] <= OCL_FA_MAX_DV;
}

static int
flash_attn_launch (struct tsr_opencl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_flash_attn);
  const tsr_tensor *mask = d->src[3];
  arg_float (&a, tsr_get_op_param_f32 (d, 0));
  arg_float (&a, tsr_get_op_param_f32 (d, 1));
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_tensor (&a, d->src[1]);
  arg_int (&a, d->src[1]->type);
  arg_tensor (&a, d->src[2]);
  arg_int (&a, d->src[2]->type);
  arg_tensor (&a, mask ? mask : d->src[0]);     /* unread without mask */
  arg_int (&a, mask ? (cl_int) mask->type : -1);
  arg_long (&a, tsr_nrows (d));
  return run_groups (&a, d, tsr_nrows (d));
}

struct tsr_opencl_op
{
  supports_fn supports;         /* optional: every valid node */
  launch_fn launch;             /* NULL: no kernel for the op */
};

static const struct tsr_opencl_op op_table[TSR_OP_COUNT] = {
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
  [TSR_OP_SET_ROWS] = { set_rows_supports, set_rows_launch },
  [TSR_OP_MUL_MAT] = { weight_supports, mul_mat_launch },
  [TSR_OP_MUL_MAT_ID] = { weight_supports, mul_mat_id_launch },
  [TSR_OP_SUM_ROWS] = { NULL, sum_rows_launch },
  [TSR_OP_TOP_K] = { top_k_supports, top_k_launch },
  [TSR_OP_REPEAT] = { NULL, shape_launch },
  [TSR_OP_CONCAT] = { NULL, shape_launch },
  [TSR_OP_DIAG_MASK_INF] = { NULL, shape_launch },
  [TSR_OP_PAD] = { NULL, shape_launch },
  [TSR_OP_UPSCALE] = { NULL, shape_launch },
  [TSR_OP_ARANGE] = { NULL, arange_launch },
  [TSR_OP_SUM] = { NULL, reduce_launch },
  [TSR_OP_MEAN] = { NULL, reduce_launch },
  [TSR_OP_ARGMAX] = { NULL, reduce_launch },
  [TSR_OP_ARGSORT] = { NULL, argsort_launch },
  [TSR_OP_IM2COL] = { NULL, im2col_launch },
  [TSR_OP_POOL_2D] = { NULL, pool_2d_launch },
  [TSR_OP_NORM] = { NULL, norm_launch },
  [TSR_OP_RMS_NORM] = { NULL, norm_launch },
  [TSR_OP_SOFT_MAX] = { NULL, soft_max_launch },
  [TSR_OP_ROPE] = { NULL, rope_launch },
  [TSR_OP_FLASH_ATTN_EXT] = { flash_attn_supports, flash_attn_launch },
};

/* The core has checked the node (tsr_node_validate): what is left is
   whether a kernel takes its types and layouts.  */
bool
tsr_opencl_supports_op (const struct tsr_opencl_device *d, const tsr_tensor *op)
{
  const struct tsr_opencl_op *entry = &op_table[op->op];

  if (tsr_op_get_kind (op->op) == TSR_OP_KIND_VIEW)
    return true;                /* nothing to compute */
  /* Quantizing needs correctly rounded quotients: through double.  */
  if (!d->fp64 && quantizes (op->type)
      && (op->op == TSR_OP_SET_ROWS
          || ((op->op == TSR_OP_CPY || op->op == TSR_OP_CONT)
              && op->src[0]->type != op->type)))
    return false;
  return entry->launch && (!entry->supports || entry->supports (op));
}

bool
tsr_opencl_op_uses_status (const tsr_tensor *node)
{
  return tsr_index_bound (node) > 0;
}

int
tsr_opencl_enqueue_op (struct tsr_opencl_launch *l, tsr_tensor *node)
{
  return op_table[node->op].launch (l, node);
}
