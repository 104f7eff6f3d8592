/* ocl-ops.c - which operations the OpenCL backend computes, and how
 * each is handed to its kernel.
 *
 * One table maps an op to its check (what the kernel handles: types,
 * shapes, layouts) and its launcher (kernel arguments and work size);
 * supports_op and the graph walk both read it, so they cannot
 * disagree.  Every kernel follows strides, so views and permutations
 * are accepted wherever the CPU backend accepts them, except block
 * types (q8_0, q4_0), whose rows must be dense.  Launchers run under
 * the device's lock (kernel objects are shared by the device's
 * backends).  */
#include <config.h>

#include <string.h>

#include <tessera/ops.h>          /* enum tsr_rope_mode */

#include "ocl-impl.h"
#include "../op-checks.h"

/* A tensor as a kernel sees it (struct tdesc in ocl-common.cl).  */
struct ocl_tdesc
{
  cl_long ne[4];
  cl_long nb[4];
  cl_long off;
};

/* Work items per launch at most; kernels loop over the rest.  */
#define MAX_ITEMS ((size_t) 1 << 20)
#define GROUP 64

typedef bool (*supports_fn) (const tsr_tensor *dst);
typedef int (*launch_fn) (struct ocl_launch *l, tsr_tensor *dst);

/* Checks.  */

/* cpy / cont: same type (block types: same shape, dense rows), block
   type to f32/f16/bf16 (same shape, dense source rows), between f32,
   f16 and bf16, and between i32 and f32.  Not to a block type.  */
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
  if (tsr_chk_is_plain_float (st) && tsr_chk_is_plain_float (dt))
    return true;
  return (st == TSR_TYPE_I32 && dt == TSR_TYPE_F32)
         || (st == TSR_TYPE_F32 && dt == TSR_TYPE_I32);
}

/* set_rows into f32, f16 or bf16 (not into block types).  */
static bool
set_rows_supports (const tsr_tensor *d)
{
  const tsr_tensor *dst = d->src[0], *src = d->src[1], *idx = d->src[2];

  if (!src || !idx || !tsr_chk_is_f32 (src) || idx->type != TSR_TYPE_I32
      || dst->type != d->type || !tsr_chk_is_plain_float (d->type)
      || !tsr_same_shape (dst, d))
    return false;
  return src->ne[0] == d->ne[0] && idx->ne[0] == src->ne[1]
         && idx->ne[1] == src->ne[2] && idx->ne[2] == src->ne[3]
         && idx->ne[3] == 1 && src->ne[2] % d->ne[2] == 0
         && src->ne[3] % d->ne[3] == 0;
}

static bool
mul_mat_supports (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *b = d->src[1];

  if (!tsr_chk_is_f32 (b) || !tsr_chk_is_f32 (d))
    return false;
  if (!tsr_chk_is_plain_float (a->type) && !(tsr_chk_is_quant (a->type) && tsr_chk_dense_rows (a)))
    return false;
  return a->ne[0] == b->ne[0] && d->ne[0] == a->ne[1] && d->ne[1] == b->ne[1]
         && d->ne[2] == b->ne[2] && d->ne[3] == b->ne[3]
         && b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0;
}

/* Launching.  */

struct args
{
  struct ocl_launch *l;
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
  struct ocl_tdesc desc;
  cl_mem mem = NULL;
  size_t off = 0;

  ocl_tensor_mem (a->l->d, t, &mem, &off);   /* checked by the walk */
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
  arg (a, sizeof (cl_mem), &a->l->d->status);
  a->l->uses_status = true;
}

static struct args
args_for (struct ocl_launch *l, enum ocl_kernel_id k)
{
  return (struct args) { l, l->d->kernels[k], 0, CL_SUCCESS };
}

/* Enqueue A's kernel over N items (N >= 1).  */
static int
run (struct args *a, tsr_tensor *dst, int64_t n)
{
  size_t items = (size_t) n < MAX_ITEMS ? (size_t) n : MAX_ITEMS;
  size_t global = (items + GROUP - 1) / GROUP * GROUP;

  if (a->err == CL_SUCCESS)
    a->err = clEnqueueNDRangeKernel (a->l->d->queue, a->k, 1, NULL, &global,
                                     NULL, 0, NULL, NULL);
  if (a->err != CL_SUCCESS)
    return tsr_set_error (TSR_ERR_BACKEND, "opencl: %s: %s '%s' failed: %s "
                          "(%d)", a->l->d->name, tsr_op_name (dst->op),
                          dst->name, ocl_error_string (a->err),
                          (int) a->err);
  return TSR_OK;
}

static int
binary_launch (struct ocl_launch *l, tsr_tensor *d)
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
unary_launch (struct ocl_launch *l, tsr_tensor *d)
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
glu_launch (struct ocl_launch *l, tsr_tensor *d)
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
copy_launch (struct ocl_launch *l, tsr_tensor *d)
{
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
get_rows_launch (struct ocl_launch *l, tsr_tensor *d)
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
set_rows_launch (struct ocl_launch *l, tsr_tensor *d)
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
  arg_tensor (&a, d);
  arg_int (&a, d->type);
  arg_tensor (&a, src);
  arg_tensor (&a, idx);
  arg_status (&a);
  arg_long (&a, tsr_nelements (src));
  return run (&a, d, tsr_nelements (src));
}

static int
mul_mat_launch (struct ocl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_mul_mat);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_int (&a, d->src[0]->type);
  arg_tensor (&a, d->src[1]);
  arg_long (&a, tsr_nelements (d));
  return run (&a, d, tsr_nelements (d));
}

static int
sum_rows_launch (struct ocl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_sum_rows);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_long (&a, tsr_nrows (d));
  return run (&a, d, tsr_nrows (d));
}

static int
norm_launch (struct ocl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_norm);
  arg_int (&a, d->op);
  arg_float (&a, tsr_get_op_param_f32 (d, 0));
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_long (&a, tsr_nrows (d));
  return run (&a, d, tsr_nrows (d));
}

static int
soft_max_launch (struct ocl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_soft_max);
  const tsr_tensor *mask = d->src[1];
  arg_float (&a, tsr_get_op_param_f32 (d, 0));
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_tensor (&a, mask ? mask : d->src[0]);     /* unread without mask */
  arg_int (&a, mask ? (cl_int) mask->type : -1);
  arg_long (&a, tsr_nrows (d));
  return run (&a, d, tsr_nrows (d));
}

static int
rope_launch (struct ocl_launch *l, tsr_tensor *d)
{
  struct args a = args_for (l, OCL_K_rope);
  arg_tensor (&a, d);
  arg_tensor (&a, d->src[0]);
  arg_tensor (&a, d->src[1]);
  arg_int (&a, tsr_get_op_param_i32 (d, 0));
  arg_int (&a, tsr_get_op_param_i32 (d, 1) == TSR_ROPE_NEOX);
  arg_float (&a, tsr_get_op_param_f32 (d, 2));
  arg_float (&a, tsr_get_op_param_f32 (d, 3));
  arg_long (&a, tsr_nelements (d));
  return run (&a, d, tsr_nelements (d));
}

struct ocl_op
{
  supports_fn supports;
  launch_fn launch;
};

static const struct ocl_op op_table[TSR_OP_COUNT] = {
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
  [TSR_OP_SET_ROWS] = { set_rows_supports, set_rows_launch },
  [TSR_OP_MUL_MAT] = { mul_mat_supports, mul_mat_launch },
  [TSR_OP_SUM_ROWS] = { tsr_chk_sum_rows, sum_rows_launch },
  [TSR_OP_NORM] = { tsr_chk_unary, norm_launch },
  [TSR_OP_RMS_NORM] = { tsr_chk_unary, norm_launch },
  [TSR_OP_SOFT_MAX] = { tsr_chk_soft_max, soft_max_launch },
  [TSR_OP_ROPE] = { tsr_chk_rope, rope_launch },
};

bool
ocl_supports_op (const struct ocl_device *d, const tsr_tensor *op)
{
  (void) d;                     /* every device runs the same kernels */
  if (!op || (unsigned) op->op >= TSR_OP_COUNT)
    return false;
  if (tsr_op_get_kind (op->op) == TSR_OP_KIND_VIEW)
    return true;                /* nothing to compute */
  if (!op_table[op->op].supports || !tsr_chk_sane_tensor (op)
      || !tsr_chk_sane_tensor (op->src[0]))
    return false;
  for (int i = 1; i < TSR_MAX_SRC; i++)
    if (op->src[i] && !tsr_chk_sane_tensor (op->src[i]))
      return false;
  return op_table[op->op].supports (op);
}

bool
ocl_op_uses_status (const tsr_tensor *node)
{
  return node->op == TSR_OP_GET_ROWS || node->op == TSR_OP_SET_ROWS;
}

int
ocl_enqueue_op (struct ocl_launch *l, tsr_tensor *node)
{
  return op_table[node->op].launch (l, node);
}
