/* opcheck-cases.c - the case list, the helpers builders share, and the
 * cases of the foundation ops: add, sub, mul, div, scale, silu, gelu,
 * cpy (with cast and dup), cont, the views (reshape, view, permute,
 * transpose), get_rows, mul_mat, sum_rows, norm, rms_norm, soft_max.
 *
 * Shapes are chosen to reach every code path a backend may have: a
 * single element, odd sizes (3, 17, 4097) that no vector width divides,
 * broadcasting in every dimension, batches, inputs that are transposed,
 * permuted or strided views, and results large enough to be split over
 * threads.  */
#include <config.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "opcheck.h"

/* The list.  */

void
oc_add (struct oc_list *l, tsr_op op, oc_build_fn build,
        const struct oc_params *p, const char *fmt, ...)
{
  va_list ap;
  if (l->n == l->cap)
    {
      size_t cap = l->cap ? 2 * l->cap : 256;
      struct oc_case *c = realloc (l->cases, cap * sizeof *c);
      if (!c)
        {
          fprintf (stderr, "tessera-opcheck: out of memory\n");
          exit (1);
        }
      l->cases = c;
      l->cap = cap;
    }
  struct oc_case *c = &l->cases[l->n++];
  memset (c, 0, sizeof *c);
  c->op = op;
  c->build = build;
  c->p = *p;
  va_start (ap, fmt);
  vsnprintf (c->name, sizeof c->name, fmt, ap);
  va_end (ap);
}

void
oc_list_free (struct oc_list *l)
{
  free (l->cases);
  memset (l, 0, sizeof *l);
}

void
oc_cases_all (struct oc_list *l)
{
  oc_cases_core (l);
  oc_cases_math (l);
  oc_cases_nn (l);
}

/* Helpers.  */

void
oc_ne (int64_t ne[TSR_MAX_DIMS], int64_t n0, int64_t n1, int64_t n2,
       int64_t n3)
{
  ne[0] = n0;
  ne[1] = n1;
  ne[2] = n2;
  ne[3] = n3;
}

const char *
oc_shape_str (char *buf, size_t n, tsr_type type,
              const int64_t ne[TSR_MAX_DIMS], enum oc_layout layout)
{
  static const char *const mark[] = { "", "T", "P", "S" };
  int dims = TSR_MAX_DIMS;
  size_t len;
  while (dims > 1 && ne[dims - 1] == 1)
    dims--;
  len = (size_t) snprintf (buf, n, "%s[", tsr_type_name (type));
  for (int d = 0; d < dims && len < n; d++)
    len += (size_t) snprintf (buf + len, n - len, "%s%lld", d ? "," : "",
                              (long long) ne[d]);
  if (len < n)
    snprintf (buf + len, n - len, "]%s", mark[layout]);
  return buf;
}

tsr_tensor *
oc_input (struct oc_build *b, tsr_type type, const int64_t ne[TSR_MAX_DIMS],
          struct oc_fill fill, enum oc_layout layout)
{
  int64_t rne[TSR_MAX_DIMS];
  tsr_tensor *root, *t;
  int64_t pad = tsr_type_traits (type) ? tsr_type_traits (type)->block_size
                                       : 1;

  if (b->n_inputs == OC_MAX_INPUTS)
    return NULL;
  memcpy (rne, ne, sizeof rne);
  switch (layout)
    {
    case OC_TRANSPOSED:
      rne[0] = ne[1];
      rne[1] = ne[0];
      break;
    case OC_PERMUTED:
      rne[1] = ne[2];
      rne[2] = ne[1];
      break;
    case OC_STRIDED:
      rne[0] = ne[0] + (pad > 1 ? pad : 3);
      break;
    case OC_CONT:
      break;
    }
  root = tsr_new_tensor (b->ctx, type, TSR_MAX_DIMS, rne);
  if (!root)
    return NULL;
  b->inputs[b->n_inputs] = root;
  b->fills[b->n_inputs] = fill;
  b->n_inputs++;
  switch (layout)
    {
    case OC_TRANSPOSED:
      return tsr_transpose (b->ctx, root);
    case OC_PERMUTED:
      return tsr_permute (b->ctx, root, 0, 2, 1, 3);
    case OC_STRIDED:
      /* Skip the first element (block) of each wider row.  */
      t = tsr_view_4d (b->ctx, root, ne[0], ne[1], ne[2], ne[3],
                       root->nb[1], root->nb[2], root->nb[3],
                       tsr_row_size (type, pad));
      return t;
    case OC_CONT:
      break;
    }
  return root;
}

tsr_tensor *
oc_operand (struct oc_build *b, const struct oc_params *p, int i,
            struct oc_fill fill)
{
  return oc_input (b, p->type[i], p->ne[i], fill, p->layout[i]);
}

#define F32 TSR_TYPE_F32
#define F16 TSR_TYPE_F16
#define BF16 TSR_TYPE_BF16
#define I32 TSR_TYPE_I32
#define Q8_0 TSR_TYPE_Q8_0
#define Q4_0 TSR_TYPE_Q4_0

const tsr_type oc_weight_types[OC_N_WEIGHT_TYPES] = { F32, F16, BF16, Q8_0,
                                                      Q4_0 };
const tsr_type oc_row32_types[] = {
  F32, F16, BF16, Q8_0, Q4_0, TSR_TYPE_Q4_1, TSR_TYPE_Q5_0, TSR_TYPE_Q5_1,
  TSR_TYPE_IQ4_NL, TSR_TYPE_MXFP4,
};
const size_t oc_n_row32_types = OC_N (oc_row32_types);
const tsr_type oc_block_types[OC_N_BLOCK_TYPES] = {
  TSR_TYPE_Q4_1, TSR_TYPE_Q5_0, TSR_TYPE_Q5_1, TSR_TYPE_Q2_K, TSR_TYPE_Q3_K,
  TSR_TYPE_Q4_K, TSR_TYPE_Q5_K, TSR_TYPE_Q6_K, TSR_TYPE_IQ4_NL,
  TSR_TYPE_IQ4_XS, TSR_TYPE_MXFP4,
};

static const struct oc_fill unit = { .lo = -1, .hi = 1 };

/* Shapes many element-wise cases share: a single element, odd sizes,
   a 4-D batch, and one big enough to be split over threads.  */
static const int64_t common_shapes[][TSR_MAX_DIMS] = {
  { 1, 1, 1, 1 }, { 3, 1, 1, 1 }, { 17, 3, 2, 1 }, { 16, 5, 4, 3 },
  { 4097, 9, 1, 1 },
};
#define N_COMMON_SHAPES (sizeof common_shapes / sizeof *common_shapes)
/* Shape for non-contiguous layouts.  */
static const int64_t nc_shape[TSR_MAX_DIMS] = { 17, 6, 5, 2 };

/* Element-wise binary ops.  */

static tsr_tensor *
build_binary (struct oc_build *b, const struct oc_case *c)
{
  struct oc_fill fb = unit;
  if (c->op == TSR_OP_DIV)
    fb = OC_UNIFORM (0.5, 2);   /* away from zero */
  tsr_tensor *x = oc_operand (b, &c->p, 0, unit);
  tsr_tensor *y = oc_operand (b, &c->p, 1, fb);
  switch (c->op)
    {
    case TSR_OP_ADD:
      return tsr_add (b->ctx, x, y);
    case TSR_OP_SUB:
      return tsr_sub (b->ctx, x, y);
    case TSR_OP_MUL:
      return tsr_mul (b->ctx, x, y);
    default:
      return tsr_div (b->ctx, x, y);
    }
}

static void
add_binary_case (struct oc_list *l, tsr_op op, const int64_t *na,
                 enum oc_layout la, const int64_t *nb, enum oc_layout lb)
{
  struct oc_params p = { .type = { F32, F32 }, .layout = { la, lb } };
  char sa[64], sb[64];
  memcpy (p.ne[0], na, sizeof p.ne[0]);
  memcpy (p.ne[1], nb, sizeof p.ne[1]);
  oc_add (l, op, build_binary, &p, "%s %s %s", tsr_op_name (op),
          oc_shape_str (sa, sizeof sa, F32, na, la),
          oc_shape_str (sb, sizeof sb, F32, nb, lb));
}

static void
cases_binary (struct oc_list *l)
{
  static const tsr_op ops[] = { TSR_OP_ADD, TSR_OP_SUB, TSR_OP_MUL,
                                TSR_OP_DIV };
  /* b broadcast over a in each dimension, and not at all.  */
  static const int64_t bcast[][TSR_MAX_DIMS] = {
    { 17, 6, 5, 2 }, { 17, 1, 5, 2 }, { 1, 6, 5, 2 }, { 17, 6, 1, 2 },
    { 17, 6, 5, 1 }, { 1, 1, 1, 1 }, { 17, 1, 1, 1 },
  };
  for (size_t o = 0; o < OC_N (ops); o++)
    {
      for (size_t s = 0; s < N_COMMON_SHAPES; s++)
        add_binary_case (l, ops[o], common_shapes[s], OC_CONT,
                         common_shapes[s], OC_CONT);
      for (size_t s = 1; s < OC_N (bcast); s++)
        add_binary_case (l, ops[o], nc_shape, OC_CONT, bcast[s], OC_CONT);
      add_binary_case (l, ops[o], common_shapes[4], OC_CONT,
                       (int64_t[]) { 4097, 1, 1, 1 }, OC_CONT);
      add_binary_case (l, ops[o], nc_shape, OC_TRANSPOSED, nc_shape,
                       OC_CONT);
      add_binary_case (l, ops[o], nc_shape, OC_CONT, nc_shape,
                       OC_PERMUTED);
      add_binary_case (l, ops[o], nc_shape, OC_STRIDED, bcast[1],
                       OC_TRANSPOSED);
      add_binary_case (l, ops[o], nc_shape, OC_PERMUTED, bcast[3],
                       OC_STRIDED);
    }
}

/* Unary ops of the foundation (scale, silu, gelu).  */

static tsr_tensor *
build_unary (struct oc_build *b, const struct oc_case *c)
{
  tsr_tensor *x = oc_operand (b, &c->p, 0, OC_UNIFORM (-4, 4));
  switch (c->op)
    {
    case TSR_OP_SCALE:
      return tsr_scale (b->ctx, x, c->p.fv[0]);
    case TSR_OP_SILU:
      return tsr_silu (b->ctx, x);
    default:
      return tsr_gelu (b->ctx, x);
    }
}

static void
cases_unary (struct oc_list *l)
{
  static const tsr_op ops[] = { TSR_OP_SCALE, TSR_OP_SILU, TSR_OP_GELU };
  static const enum oc_layout layouts[] = { OC_TRANSPOSED, OC_PERMUTED,
                                            OC_STRIDED };
  for (size_t o = 0; o < OC_N (ops); o++)
    {
      struct oc_params p = { .type = { F32 }, .fv = { 0.5f } };
      char sa[64];
      for (size_t s = 0; s < N_COMMON_SHAPES + 3; s++)
        {
          bool nc = s >= N_COMMON_SHAPES;
          memcpy (p.ne[0], nc ? nc_shape : common_shapes[s],
                  sizeof p.ne[0]);
          p.layout[0] = nc ? layouts[s - N_COMMON_SHAPES] : OC_CONT;
          p.fv[0] = s % 2 ? -2.0f : 0.5f;
          if (ops[o] == TSR_OP_SCALE)
            oc_add (l, ops[o], build_unary, &p, "scale %s s=%g",
                    oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]),
                    p.fv[0]);
          else
            oc_add (l, ops[o], build_unary, &p, "%s %s",
                    tsr_op_name (ops[o]),
                    oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]));
        }
    }
}

/* Copies: cpy between types and layouts, cast, dup, cont.  */

static struct oc_fill
fill_for (tsr_type type)
{
  /* Integers and values that survive a trip through i32.  */
  return type == I32 ? OC_UNIFORM (-1000, 1000) : OC_UNIFORM (-4, 4);
}

static tsr_tensor *
build_cpy (struct oc_build *b, const struct oc_case *c)
{
  tsr_tensor *x = oc_operand (b, &c->p, 0, fill_for (c->p.type[0]));
  tsr_tensor *y = oc_operand (b, &c->p, 1, fill_for (c->p.type[1]));
  return tsr_cpy (b->ctx, x, y);
}

static tsr_tensor *
build_cast (struct oc_build *b, const struct oc_case *c)
{
  tsr_tensor *x = oc_operand (b, &c->p, 0, fill_for (c->p.type[0]));
  if (c->p.iv[0])
    return tsr_dup (b->ctx, x);
  return tsr_cast (b->ctx, x, c->p.type[1]);
}

static tsr_tensor *
build_cont (struct oc_build *b, const struct oc_case *c)
{
  return tsr_cont (b->ctx, oc_operand (b, &c->p, 0,
                                       fill_for (c->p.type[0])));
}

static bool
is_quant (tsr_type t)
{
  return tsr_type_traits (t)->is_quantized;
}

static void
add_cpy_case (struct oc_list *l, tsr_type ta, enum oc_layout la,
              tsr_type tb, enum oc_layout lb, const int64_t *ne)
{
  struct oc_params p = { .type = { ta, tb }, .layout = { la, lb } };
  char sa[64], sb[64];
  memcpy (p.ne[0], ne, sizeof p.ne[0]);
  memcpy (p.ne[1], ne, sizeof p.ne[1]);
  oc_add (l, TSR_OP_CPY, build_cpy, &p, "cpy %s -> %s",
          oc_shape_str (sa, sizeof sa, ta, ne, la),
          oc_shape_str (sb, sizeof sb, tb, ne, lb));
}

static void
cases_copy (struct oc_list *l)
{
  static const tsr_type plain[] = { F32, F16, BF16 };
  static const int64_t shapes[][TSR_MAX_DIMS] = {
    { 1, 1, 1, 1 }, { 17, 3, 2, 1 }, { 64, 5, 3, 2 }, { 4096, 9, 1, 1 },
  };
  const int64_t *q = shapes[2];
  char sa[64];

  /* Plain types to plain types, contiguous and not.  */
  for (size_t a = 0; a < 3; a++)
    for (size_t d = 0; d < 3; d++)
      {
        add_cpy_case (l, plain[a], OC_CONT, plain[d], OC_CONT, shapes[1]);
        add_cpy_case (l, plain[a], OC_TRANSPOSED, plain[d], OC_CONT,
                      nc_shape);
        add_cpy_case (l, plain[a], OC_CONT, plain[d], OC_PERMUTED,
                      nc_shape);
      }
  add_cpy_case (l, F32, OC_STRIDED, F16, OC_TRANSPOSED, nc_shape);
  add_cpy_case (l, F32, OC_CONT, F32, OC_CONT, shapes[0]);
  add_cpy_case (l, F32, OC_CONT, F16, OC_CONT, shapes[3]);
  add_cpy_case (l, F16, OC_PERMUTED, F32, OC_STRIDED, nc_shape);
  /* i32 <-> f32.  */
  add_cpy_case (l, I32, OC_CONT, F32, OC_CONT, shapes[1]);
  add_cpy_case (l, F32, OC_CONT, I32, OC_CONT, shapes[1]);
  add_cpy_case (l, I32, OC_TRANSPOSED, F32, OC_CONT, nc_shape);
  add_cpy_case (l, I32, OC_CONT, I32, OC_PERMUTED, nc_shape);
  /* Quantizing, dequantizing, and quantized to the same type.  */
  for (size_t t = 3; t < oc_n_row32_types; t++)
    {
      tsr_type qt = oc_row32_types[t];
      add_cpy_case (l, F32, OC_CONT, qt, OC_CONT, q);
      add_cpy_case (l, F32, OC_TRANSPOSED, qt, OC_CONT, q);
      add_cpy_case (l, F16, OC_CONT, qt, OC_CONT, q);
      add_cpy_case (l, F32, OC_CONT, qt, OC_PERMUTED, q);
      add_cpy_case (l, qt, OC_CONT, F32, OC_CONT, q);
      add_cpy_case (l, qt, OC_STRIDED, F16, OC_CONT, q);
      add_cpy_case (l, qt, OC_CONT, qt, OC_CONT, q);
      add_cpy_case (l, F32, OC_CONT, qt, OC_CONT, shapes[3]);
    }
  /* tsr_cast and tsr_dup (cpy into a new tensor).  */
  for (size_t a = 0; a < oc_n_row32_types; a++)
    for (size_t d = 0; d < 3; d++)
      {
        tsr_type ta = oc_row32_types[a], td = plain[d];
        struct oc_params p = { .type = { ta, td } };
        memcpy (p.ne[0], q, sizeof p.ne[0]);
        oc_add (l, TSR_OP_CPY, build_cast, &p, "cpy cast %s -> %s",
                oc_shape_str (sa, sizeof sa, ta, q, OC_CONT),
                tsr_type_name (td));
        if (!is_quant (ta) && ta != td)
          {
            /* The other way round, from a non-contiguous source.  */
            p.type[0] = td;
            p.type[1] = ta;
            p.layout[0] = OC_PERMUTED;
            oc_add (l, TSR_OP_CPY, build_cast, &p, "cpy cast %s -> %s",
                    oc_shape_str (sa, sizeof sa, td, q, OC_PERMUTED),
                    tsr_type_name (ta));
          }
      }
  static const tsr_type dup_types[] = { F32, F16, I32, Q8_0 };
  for (size_t t = 0; t < OC_N (dup_types); t++)
    {
      struct oc_params p = { .type = { dup_types[t] }, .iv = { 1 } };
      p.layout[0] = is_quant (dup_types[t]) ? OC_STRIDED : OC_TRANSPOSED;
      memcpy (p.ne[0], q, sizeof p.ne[0]);
      oc_add (l, TSR_OP_CPY, build_cast, &p, "cpy dup %s",
              oc_shape_str (sa, sizeof sa, dup_types[t], q, p.layout[0]));
    }
  /* cont of every layout.  */
  static const tsr_type cont_types[] = { F32, F16, BF16, I32, Q8_0, Q4_0 };
  for (size_t t = 0; t < OC_N (cont_types); t++)
    for (int lay = 0; lay < 4; lay++)
      {
        tsr_type ct = cont_types[t];
        struct oc_params p = { .type = { ct }, .layout = { lay } };
        if (is_quant (ct) && lay == OC_TRANSPOSED)
          continue;             /* quantized rows cannot be split */
        memcpy (p.ne[0], is_quant (ct) ? q : nc_shape, sizeof p.ne[0]);
        oc_add (l, TSR_OP_CONT, build_cont, &p, "cont %s",
                oc_shape_str (sa, sizeof sa, ct, p.ne[0], lay));
      }
}

/* Views, checked through the copy or arithmetic that reads them.  */

static tsr_tensor *
build_view (struct oc_build *b, const struct oc_case *c)
{
  const int *v = c->p.iv;
  tsr_tensor *x = oc_operand (b, &c->p, 0, unit), *r;
  size_t es = sizeof (float);
  switch (c->op)
    {
    case TSR_OP_RESHAPE:
      r = tsr_reshape_4d (b->ctx, x, v[0], v[1], v[2], v[3]);
      /* Reading the view with a broadcast operand of its new shape
         checks the shape, not just the bytes.  */
      return tsr_add (b->ctx, r, oc_input (b, F32, (int64_t[]) { v[0], 1, 1,
                                                                 1 },
                                           unit, OC_CONT));
    case TSR_OP_VIEW:
      /* v: ne0, ne1, ne2, row stride, plane stride, offset (in
         elements).  */
      r = tsr_view_3d (b->ctx, x, v[0], v[1], v[2], (size_t) v[3] * es,
                       (size_t) v[4] * es, (size_t) v[5] * es);
      return tsr_cont (b->ctx, r);
    case TSR_OP_PERMUTE:
      return tsr_cont (b->ctx, tsr_permute (b->ctx, x, v[0], v[1], v[2],
                                            v[3]));
    default:
      r = tsr_transpose (b->ctx, x);
      return v[0] ? tsr_scale (b->ctx, r, 2.0f) : tsr_cont (b->ctx, r);
    }
}

static void
cases_views (struct oc_list *l)
{
  struct oc_params p = { .type = { F32 } };
  char sa[64];

  /* Every permutation of four axes.  */
  oc_ne (p.ne[0], 2, 3, 4, 5);
  for (int i = 0; i < 256; i++)
    {
      int a[4] = { i & 3, (i >> 2) & 3, (i >> 4) & 3, (i >> 6) & 3 };
      if ((1 << a[0] | 1 << a[1] | 1 << a[2] | 1 << a[3]) != 15)
        continue;
      memcpy (p.iv, a, sizeof a);
      oc_add (l, TSR_OP_PERMUTE, build_view, &p,
              "permute %s axes=%d,%d,%d,%d",
              oc_shape_str (sa, sizeof sa, F32, p.ne[0], OC_CONT),
              a[0], a[1], a[2], a[3]);
    }
  /* Transposes, read by a copy and by arithmetic.  */
  static const int64_t tshapes[][TSR_MAX_DIMS] = {
    { 1, 7, 1, 1 }, { 17, 3, 1, 1 }, { 33, 65, 2, 1 }, { 4097, 9, 1, 1 },
  };
  memset (p.iv, 0, sizeof p.iv);
  for (size_t s = 0; s < OC_N (tshapes); s++)
    for (int k = 0; k < 2; k++)
      {
        memcpy (p.ne[0], tshapes[s], sizeof p.ne[0]);
        p.iv[0] = k;
        oc_add (l, TSR_OP_TRANSPOSE, build_view, &p, "transpose %s %s",
                oc_shape_str (sa, sizeof sa, F32, p.ne[0], OC_CONT),
                k ? "scale" : "cont");
      }
  /* Reshapes of contiguous data.  */
  static const int reshapes[][5] = {
    /* source ne0, ne1 -> new shape */
    { 12, 10, 120, 1, 1 }, { 12, 10, 4, 3, 10 }, { 17, 6, 2, 51, 1 },
    { 4097, 2, 2, 4097, 1 },
  };
  for (size_t s = 0; s < OC_N (reshapes); s++)
    {
      const int *r = reshapes[s];
      oc_ne (p.ne[0], r[0], r[1], 1, 1);
      int total = r[0] * r[1], n2 = r[4], n1 = r[3], n0 = r[2];
      int n3 = total / (n0 * n1 * n2);
      p.iv[0] = n0;
      p.iv[1] = n1;
      p.iv[2] = n2;
      p.iv[3] = n3;
      oc_add (l, TSR_OP_RESHAPE, build_view, &p, "reshape %s -> "
              "[%d,%d,%d,%d]",
              oc_shape_str (sa, sizeof sa, F32, p.ne[0], OC_CONT),
              n0, n1, n2, n3);
    }
  /* Views at offsets, with strides of the source and of their own.  */
  static const int views[][6] = {
    { 5, 3, 1, 17, 102, 2 },      /* a window of rows */
    { 1, 6, 5, 17, 102, 16 },     /* the last column */
    { 17, 2, 2, 51, 204, 17 },    /* every third row, every other plane */
    { 40, 1, 1, 40, 40, 7 },      /* a run across rows */
    { 8, 4, 3, 9, 40, 3 },        /* rows overlapping in memory */
  };
  oc_ne (p.ne[0], 17, 6, 5, 2);
  for (size_t s = 0; s < OC_N (views); s++)
    {
      memcpy (p.iv, views[s], sizeof views[s]);
      oc_add (l, TSR_OP_VIEW, build_view, &p, "view %s [%d,%d,%d] nb=%d,%d "
              "offs=%d", oc_shape_str (sa, sizeof sa, F32, p.ne[0], OC_CONT),
              p.iv[0], p.iv[1], p.iv[2], p.iv[3], p.iv[4], p.iv[5]);
    }
}

/* get_rows and mul_mat, for every weight type.  */

static tsr_tensor *
build_get_rows (struct oc_build *b, const struct oc_case *c)
{
  tsr_tensor *x = oc_operand (b, &c->p, 0, unit);
  tsr_tensor *rows = oc_operand (b, &c->p, 1,
                                 OC_UNIFORM (0, (double) c->p.ne[0][1]));
  return tsr_get_rows (b->ctx, x, rows);
}

/* get_rows of WT for each of the N SHAPES (k, r, a2, a3, n, b2, b3),
   then the fourth one strided and permuted.  */
static void
add_get_rows_cases (struct oc_list *l, tsr_type wt,
                    const int64_t (*shapes)[7], size_t n)
{
  char sa[64], sb[64];
  for (size_t s = 0; s < n + 2; s++)
    {
      const int64_t *sh = shapes[s < n ? s : 3];
      struct oc_params p = { .type = { wt, I32 } };
      oc_ne (p.ne[0], sh[0], sh[1], sh[2], sh[3]);
      oc_ne (p.ne[1], sh[4], sh[5], sh[6], 1);
      if (s == n)
        p.layout[0] = OC_STRIDED;
      if (s == n + 1)
        p.layout[0] = OC_PERMUTED;
      oc_add (l, TSR_OP_GET_ROWS, build_get_rows, &p, "get_rows %s %s",
              oc_shape_str (sa, sizeof sa, wt, p.ne[0], p.layout[0]),
              oc_shape_str (sb, sizeof sb, I32, p.ne[1], OC_CONT));
    }
}

static void
cases_get_rows (struct oc_list *l)
{
  /* k, r, a2, a3, n, b2, b3 */
  static const int64_t shapes[][7] = {
    { 32, 1, 1, 1, 1, 1, 1 }, { 32, 7, 1, 1, 5, 1, 1 },
    { 96, 10, 2, 1, 3, 4, 1 }, { 64, 5, 2, 3, 4, 2, 3 },
    { 4096, 3, 1, 1, 9, 1, 1 },
  };
  static const int64_t block_shapes[][7] = {
    { 256, 1, 1, 1, 1, 1, 1 }, { 256, 7, 1, 1, 5, 1, 1 },
    { 512, 10, 2, 1, 3, 4, 1 }, { 256, 5, 2, 3, 4, 2, 3 },
    { 4096, 3, 1, 1, 9, 1, 1 },
  };
  for (size_t t = 0; t < OC_N_WEIGHT_TYPES; t++)
    add_get_rows_cases (l, oc_weight_types[t], shapes, OC_N (shapes));
  for (size_t t = 0; t < OC_N_BLOCK_TYPES; t++)
    add_get_rows_cases (l, oc_block_types[t], block_shapes,
                        OC_N (block_shapes));
}

static tsr_tensor *
build_mul_mat (struct oc_build *b, const struct oc_case *c)
{
  tsr_tensor *w = oc_operand (b, &c->p, 0, unit);
  tsr_tensor *x = oc_operand (b, &c->p, 1, unit);
  return tsr_mul_mat (b->ctx, w, x);
}

static void
add_mul_mat_case (struct oc_list *l, tsr_type wt, const int64_t *sh,
                  enum oc_layout la, enum oc_layout lb)
{
  /* sh: k, m, n, a2, a3, b2, b3 */
  struct oc_params p = { .type = { wt, F32 }, .layout = { la, lb } };
  char sa[64], sb[64];
  oc_ne (p.ne[0], sh[0], sh[1], sh[3], sh[4]);
  oc_ne (p.ne[1], sh[0], sh[2], sh[5], sh[6]);
  oc_add (l, TSR_OP_MUL_MAT, build_mul_mat, &p, "mul_mat %s %s",
          oc_shape_str (sa, sizeof sa, wt, p.ne[0], la),
          oc_shape_str (sb, sizeof sb, F32, p.ne[1], lb));
}

/* mul_mat of WT for each of the N SHAPES (k, m, n, a2, a3, b2, b3; at
   least 7), and some of them with other layouts.  */
static void
add_mul_mat_cases (struct oc_list *l, tsr_type wt, const int64_t (*shapes)[7],
                   size_t n)
{
  for (size_t s = 0; s < n; s++)
    add_mul_mat_case (l, wt, shapes[s], OC_CONT, OC_CONT);
  add_mul_mat_case (l, wt, shapes[3], OC_CONT, OC_TRANSPOSED);
  add_mul_mat_case (l, wt, shapes[6], OC_CONT, OC_PERMUTED);
  add_mul_mat_case (l, wt, shapes[6], OC_PERMUTED, OC_STRIDED);
  add_mul_mat_case (l, wt, shapes[2], OC_STRIDED, OC_CONT);
}

static void
cases_mul_mat (struct oc_list *l)
{
  /* k, m, n, a2, a3, b2, b3 */
  static const int64_t shapes[][7] = {
    { 32, 1, 1, 1, 1, 1, 1 },     /* one dot product */
    { 64, 16, 1, 1, 1, 1, 1 },    /* matrix-vector */
    { 64, 17, 3, 1, 1, 1, 1 },
    { 96, 7, 17, 1, 1, 1, 1 },
    { 256, 33, 8, 1, 1, 1, 1 },
    { 128, 130, 3, 1, 1, 1, 1 },  /* split over threads */
    { 64, 8, 5, 2, 3, 2, 3 },     /* batches */
    { 64, 8, 5, 2, 1, 4, 3 },     /* broadcast weights (shared heads) */
    { 32, 4, 3, 1, 1, 3, 2 },
    { 4096, 3, 2, 1, 1, 1, 1 },   /* long rows */
    { 2048, 19, 3, 2, 1, 4, 1 },  /* stages of the GPUs' kernels, batches */
  };
  for (size_t t = 0; t < OC_N_WEIGHT_TYPES; t++)
    add_mul_mat_cases (l, oc_weight_types[t], shapes, OC_N (shapes));
  /* The same with rows of whole super-blocks; 8 and 9 columns are
     either side of the GPUs' matrix-vector kernels.  No single dot
     product: the NMSE of one value is a poor measure when a device
     rounds activations (q4_1's minimum term cancels).  */
  static const int64_t block_shapes[][7] = {
    { 256, 16, 1, 1, 1, 1, 1 },
    { 256, 17, 3, 1, 1, 1, 1 }, { 512, 7, 17, 1, 1, 1, 1 },
    { 256, 33, 8, 1, 1, 1, 1 }, { 512, 130, 9, 1, 1, 1, 1 },
    { 256, 8, 5, 2, 3, 2, 3 }, { 256, 8, 5, 2, 1, 4, 3 },
    { 4096, 3, 2, 1, 1, 1, 1 },
    /* Rows of several 2048-element stages (the GPUs' staged kernels),
       4 columns, and 1 with broadcast batches.  */
    { 6144, 9, 4, 1, 1, 1, 1 }, { 2048, 19, 1, 2, 1, 4, 1 },
    /* Rows long enough for the GPUs' integer products to share a row
       among warps (256 blocks of 32: 4 warps; 128 units of 64: 2).  */
    { 8192, 9, 1, 1, 1, 1, 1 }, { 8192, 5, 3, 1, 1, 1, 1 },
  };
  for (size_t t = 0; t < OC_N_BLOCK_TYPES; t++)
    add_mul_mat_cases (l, oc_block_types[t], block_shapes,
                       OC_N (block_shapes));
  /* Odd row lengths, for types without blocks.  */
  static const int64_t odd[][7] = {
    { 1, 5, 3, 1, 1, 1, 1 }, { 17, 3, 5, 1, 1, 1, 1 },
    { 4097, 2, 3, 1, 1, 1, 1 },
  };
  for (size_t t = 0; t < 3; t++)
    for (size_t s = 0; s < OC_N (odd); s++)
      add_mul_mat_case (l, oc_weight_types[t], odd[s], OC_CONT, OC_CONT);
  /* Either side of the CPU's switches from integer dots to the GEMM
     (80 columns for the blocks of 32, 320 for the super-blocks), and
     transposed activations.  */
  static const int64_t kshapes[][7] = {
    { 256, 33, 79, 1, 1, 1, 1 }, { 512, 7, 80, 1, 1, 1, 1 },
    { 256, 9, 319, 1, 1, 1, 1 }, { 256, 4, 320, 1, 1, 1, 1 },
    { 1024, 3, 2, 1, 1, 1, 1 },
  };
  for (size_t t = 0; t < OC_N_BLOCK_TYPES; t++)
    {
      for (size_t s = 0; s < OC_N (kshapes); s++)
        add_mul_mat_case (l, oc_block_types[t], kshapes[s], OC_CONT,
                          OC_CONT);
      add_mul_mat_case (l, oc_block_types[t], kshapes[0], OC_CONT,
                        OC_TRANSPOSED);
    }
}

/* Row reductions and normalizations.  */

static tsr_tensor *
build_rows (struct oc_build *b, const struct oc_case *c)
{
  tsr_tensor *x = oc_operand (b, &c->p, 0, OC_UNIFORM (-2, 3));
  switch (c->op)
    {
    case TSR_OP_SUM_ROWS:
      return tsr_sum_rows (b->ctx, x);
    case TSR_OP_NORM:
      return tsr_norm (b->ctx, x, c->p.fv[0]);
    default:
      return tsr_rms_norm (b->ctx, x, c->p.fv[0]);
    }
}

static void
cases_rows (struct oc_list *l)
{
  static const tsr_op ops[] = { TSR_OP_SUM_ROWS, TSR_OP_NORM,
                                TSR_OP_RMS_NORM };
  static const enum oc_layout layouts[] = { OC_TRANSPOSED, OC_PERMUTED,
                                            OC_STRIDED };
  char sa[64];
  for (size_t o = 0; o < OC_N (ops); o++)
    for (size_t s = 0; s < N_COMMON_SHAPES + 3; s++)
      {
        bool nc = s >= N_COMMON_SHAPES;
        struct oc_params p = { .type = { F32 } };
        memcpy (p.ne[0], nc ? nc_shape : common_shapes[s], sizeof p.ne[0]);
        p.layout[0] = nc ? layouts[s - N_COMMON_SHAPES] : OC_CONT;
        p.fv[0] = s % 2 ? 1e-5f : 1e-6f;
        if (ops[o] == TSR_OP_SUM_ROWS)
          oc_add (l, ops[o], build_rows, &p, "sum_rows %s",
                  oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]));
        else
          oc_add (l, ops[o], build_rows, &p, "%s %s eps=%g",
                  tsr_op_name (ops[o]),
                  oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]),
                  p.fv[0]);
      }
}

static tsr_tensor *
build_soft_max (struct oc_build *b, const struct oc_case *c)
{
  tsr_tensor *x = oc_operand (b, &c->p, 0, OC_UNIFORM (-5, 5));
  tsr_tensor *mask = NULL;
  if (c->p.iv[0])
    {
      struct oc_fill mf = OC_UNIFORM (-2, 0);
      mf.p_neginf = 0.2;
      mask = oc_operand (b, &c->p, 1, mf);
    }
  return tsr_soft_max (b->ctx, x, mask, c->p.fv[0]);
}

static void
cases_soft_max (struct oc_list *l)
{
  /* a shape, mask shape (ne0 0: no mask) */
  static const int64_t shapes[][8] = {
    { 1, 1, 1, 1, 0, 0, 0, 0 }, { 17, 3, 2, 1, 0, 0, 0, 0 },
    { 4097, 9, 1, 1, 0, 0, 0, 0 }, { 17, 3, 2, 1, 17, 3, 1, 1 },
    { 32, 7, 4, 2, 32, 9, 1, 1 }, { 32, 7, 4, 2, 32, 7, 2, 2 },
    { 32, 7, 4, 2, 32, 7, 4, 2 }, { 4097, 9, 1, 1, 4097, 9, 1, 1 },
  };
  static const float scales[] = { 1.0f, 0.125f };
  char sa[64], sb[64];
  for (size_t s = 0; s < OC_N (shapes); s++)
    for (int mt = 0; mt < (shapes[s][4] ? 2 : 1); mt++)
      for (int k = 0; k < 2; k++)
        {
          const int64_t *sh = shapes[s];
          struct oc_params p = { .type = { F32, mt ? F16 : F32 } };
          oc_ne (p.ne[0], sh[0], sh[1], sh[2], sh[3]);
          oc_ne (p.ne[1], sh[4], sh[5], sh[6], sh[7]);
          p.iv[0] = sh[4] != 0;
          p.fv[0] = scales[k];
          if (s == 1 && k == 1)
            p.layout[0] = OC_PERMUTED;
          if (s == 3 && k == 1)
            p.layout[0] = OC_TRANSPOSED;
          oc_add (l, TSR_OP_SOFT_MAX, build_soft_max, &p,
                  "soft_max %s mask=%s scale=%g",
                  oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]),
                  p.iv[0] ? oc_shape_str (sb, sizeof sb, p.type[1], p.ne[1],
                                          OC_CONT) : "none",
                  p.fv[0]);
        }
}

void
oc_cases_core (struct oc_list *l)
{
  cases_binary (l);
  cases_unary (l);
  cases_copy (l);
  cases_views (l);
  cases_get_rows (l);
  cases_mul_mat (l);
  cases_rows (l);
  cases_soft_max (l);
}
