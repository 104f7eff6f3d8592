/* tensor.c - contexts (arenas of tensors) and tensor metadata.
 *
 * Owns: tensor creation, shape queries, names and flags, host element
 * access, and tensor data transfer through a tensor's buffer.  Knows
 * nothing of operations (ops.c) or graphs (graph.c).  */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "tessera-impl.h"

#define TSR_ALIGN 64

struct tsri_chunk
{
  struct tsri_chunk *next;
  max_align_t pad[];            /* data follows, aligned */
};

/* Every tensor is allocated with a back pointer to its context.  */
struct tsri_tensor_box
{
  tsr_tensor t;
  tsr_context *ctx;
  tsr_tensor *next;
};

tsr_context *
tsr_context_new (bool no_alloc)
{
  tsr_context *ctx = calloc (1, sizeof *ctx);
  if (!ctx)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "context: out of memory");
      return NULL;
    }
  ctx->no_alloc = no_alloc;
  return ctx;
}

void
tsr_context_free (tsr_context *ctx)
{
  if (!ctx)
    return;
  for (struct tsri_chunk *c = ctx->chunks, *next; c; c = next)
    {
      next = c->next;
      free (c);
    }
  free (ctx);
}

bool
tsr_context_no_alloc (const tsr_context *ctx)
{
  return ctx && ctx->no_alloc;
}

void *
tsri_context_alloc (tsr_context *ctx, size_t size)
{
  size_t head = (sizeof (struct tsri_chunk) + TSR_ALIGN - 1)
                / TSR_ALIGN * TSR_ALIGN;
  if (size > SIZE_MAX - head - TSR_ALIGN)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "context: %zu bytes is too large",
                     size);
      return NULL;
    }
  struct tsri_chunk *c = NULL;
  if (posix_memalign ((void **) &c, TSR_ALIGN, head + size) != 0)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "context: cannot allocate %zu "
                     "bytes", size);
      return NULL;
    }
  memset (c, 0, head + size);
  c->next = ctx->chunks;
  ctx->chunks = c;
  return (char *) c + head;
}

void
tsri_set_strides (tsr_tensor *t)
{
  const struct tsr_type_traits *tr = tsr_type_traits (t->type);
  t->nb[0] = tr->type_size;
  t->nb[1] = tr->type_size * (size_t) (t->ne[0] / tr->block_size);
  for (int i = 2; i < TSR_MAX_DIMS; i++)
    t->nb[i] = t->nb[i - 1] * (size_t) t->ne[i - 1];
}

bool
tsri_shape_fits (tsr_type type, const int64_t ne[TSR_MAX_DIMS])
{
  const struct tsr_type_traits *tr = tsr_type_traits (type);
  /* With a dimension of 0 counted as 1, so that any later product of
     the sizes, in any order, fits: the element count in int64_t (block
     types have fewer bytes than elements) and the bytes in half the
     address space.  */
  uint64_t elems = 1, blocks = (uint64_t) (ne[0] ? ne[0] : tr->block_size)
                               / (uint64_t) tr->block_size;
  if (blocks > (uint64_t) (SIZE_MAX / 2) / tr->type_size)
    return false;
  uint64_t bytes = blocks * tr->type_size;
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    {
      uint64_t k = ne[i] ? (uint64_t) ne[i] : 1;
      if (elems > (uint64_t) INT64_MAX / k)
        return false;
      elems *= k;
      if (i > 0)
        {
          if (bytes > (uint64_t) (SIZE_MAX / 2) / k)
            return false;
          bytes *= k;
        }
    }
  return bytes <= (uint64_t) (SIZE_MAX / 2);
}

static bool
shape_ok (tsr_type type, const int64_t ne[TSR_MAX_DIMS])
{
  const struct tsr_type_traits *tr = tsr_type_traits (type);
  if (!tr)
    {
      tsr_set_error (TSR_ERR_TYPE, "new tensor: invalid type %d", (int) type);
      return false;
    }
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    if (ne[i] < 0)
      {
        tsr_set_error (TSR_ERR_SHAPE, "new tensor: dimension %d is "
                       "negative (%lld)", i, (long long) ne[i]);
        return false;
      }
  if (ne[0] % tr->block_size != 0)
    {
      tsr_set_error (TSR_ERR_SHAPE, "new tensor: row length %lld is not a "
                     "multiple of the %s block size %lld",
                     (long long) ne[0], tr->name, (long long) tr->block_size);
      return false;
    }
  if (!tsri_shape_fits (type, ne))
    {
      tsr_set_error (TSR_ERR_SHAPE, "new tensor: size overflows ([%lld, "
                     "%lld, %lld, %lld] elements of %s)", (long long) ne[0],
                     (long long) ne[1], (long long) ne[2], (long long) ne[3],
                     tr->name);
      return false;
    }
  return true;
}

tsr_tensor *
tsri_new_tensor_impl (tsr_context *ctx, tsr_type type,
                      const int64_t ne[TSR_MAX_DIMS], tsr_tensor *view_src,
                      size_t view_offs)
{
  if (!ctx)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "new tensor: NULL context");
      return NULL;
    }
  if (!shape_ok (type, ne))
    return NULL;
  if (view_src && view_src->view_src)
    {
      view_offs += view_src->view_offs;
      view_src = view_src->view_src;
    }
  struct tsri_tensor_box *box = tsri_context_alloc (ctx, sizeof *box);
  if (!box)
    return NULL;
  tsr_tensor *t = &box->t;
  box->ctx = ctx;
  t->type = type;
  memcpy (t->ne, ne, sizeof t->ne);
  tsri_set_strides (t);
  t->view_src = view_src;
  t->view_offs = view_offs;
  if (view_src)
    {
      t->buffer = view_src->buffer;
      if (view_src->data)
        t->data = (char *) view_src->data + view_offs;
    }
  else if (!ctx->no_alloc)
    {
      size_t n = tsr_nbytes (t);
      t->data = tsri_context_alloc (ctx, n ? n : 1);
      if (!t->data)
        return NULL;
    }
  if (ctx->last)
    ((struct tsri_tensor_box *) ctx->last)->next = t;
  else
    ctx->first = t;
  ctx->last = t;
  return t;
}

tsr_context *
tsri_tensor_context (const tsr_tensor *t)
{
  return ((const struct tsri_tensor_box *) t)->ctx;
}

tsr_tensor *
tsr_context_first_tensor (tsr_context *ctx)
{
  return ctx ? ctx->first : NULL;
}

tsr_tensor *
tsr_context_next_tensor (tsr_context *ctx, tsr_tensor *t)
{
  (void) ctx;
  return t ? ((struct tsri_tensor_box *) t)->next : NULL;
}

tsr_tensor *
tsr_context_get_tensor (tsr_context *ctx, const char *name)
{
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); t && name;
       t = tsr_context_next_tensor (ctx, t))
    if (strcmp (t->name, name) == 0)
      return t;
  return NULL;
}

tsr_tensor *
tsr_new_tensor (tsr_context *ctx, tsr_type type, int n_dims,
                const int64_t *ne)
{
  int64_t full[TSR_MAX_DIMS] = { 1, 1, 1, 1 };
  if (n_dims < 1 || n_dims > TSR_MAX_DIMS || !ne)
    {
      tsr_set_error (TSR_ERR_SHAPE, "new tensor: %d dimensions (1 to %d "
                     "allowed)", n_dims, TSR_MAX_DIMS);
      return NULL;
    }
  memcpy (full, ne, (size_t) n_dims * sizeof *ne);
  return tsri_new_tensor_impl (ctx, type, full, NULL, 0);
}

tsr_tensor *
tsr_new_tensor_1d (tsr_context *ctx, tsr_type type, int64_t ne0)
{
  return tsr_new_tensor (ctx, type, 1, &ne0);
}

tsr_tensor *
tsr_new_tensor_2d (tsr_context *ctx, tsr_type type, int64_t ne0, int64_t ne1)
{
  int64_t ne[2] = { ne0, ne1 };
  return tsr_new_tensor (ctx, type, 2, ne);
}

tsr_tensor *
tsr_new_tensor_3d (tsr_context *ctx, tsr_type type, int64_t ne0, int64_t ne1,
                   int64_t ne2)
{
  int64_t ne[3] = { ne0, ne1, ne2 };
  return tsr_new_tensor (ctx, type, 3, ne);
}

tsr_tensor *
tsr_new_tensor_4d (tsr_context *ctx, tsr_type type, int64_t ne0, int64_t ne1,
                   int64_t ne2, int64_t ne3)
{
  int64_t ne[4] = { ne0, ne1, ne2, ne3 };
  return tsr_new_tensor (ctx, type, 4, ne);
}

tsr_tensor *
tsr_set_name (tsr_tensor *t, const char *name)
{
  if (t)
    {
      strncpy (t->name, name ? name : "", sizeof t->name - 1);
      t->name[sizeof t->name - 1] = '\0';
    }
  return t;
}

const char *
tsr_get_name (const tsr_tensor *t)
{
  return t ? t->name : "";
}

void
tsr_set_input (tsr_tensor *t)
{
  if (t)
    t->flags |= TSR_FLAG_INPUT;
}

void
tsr_set_output (tsr_tensor *t)
{
  if (t)
    t->flags |= TSR_FLAG_OUTPUT;
}

void
tsr_set_param (tsr_tensor *t)
{
  if (t)
    t->flags |= TSR_FLAG_PARAM;
}

int64_t
tsr_nelements (const tsr_tensor *t)
{
  return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

int64_t
tsr_nrows (const tsr_tensor *t)
{
  return t->ne[1] * t->ne[2] * t->ne[3];
}

/* A + B * C, or SIZE_MAX when it does not fit.  */
static size_t
add_mul_sat (size_t a, size_t b, size_t c)
{
  if (a == SIZE_MAX || (c && b > (SIZE_MAX - a) / c))
    return SIZE_MAX;
  return a + b * c;
}

/* Overflow-safe: strides a hand-made tensor or view may hold (up to
   2^64 - 1) give SIZE_MAX, which no buffer has, never a wrapped small
   number that would pass a bounds check.  */
size_t
tsr_nbytes (const tsr_tensor *t)
{
  const struct tsr_type_traits *tr = tsr_type_traits (t->type);
  if (!tr)
    return SIZE_MAX;
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    if (t->ne[i] <= 0)
      return 0;
  size_t bytes;
  if (tr->block_size == 1)
    bytes = add_mul_sat (tr->type_size, (size_t) (t->ne[0] - 1), t->nb[0]);
  else
    bytes = add_mul_sat (0, (size_t) (t->ne[0] / tr->block_size),
                         tr->type_size);
  for (int i = 1; i < TSR_MAX_DIMS; i++)
    bytes = add_mul_sat (bytes, (size_t) (t->ne[i] - 1), t->nb[i]);
  return bytes;
}

int
tsr_n_dims (const tsr_tensor *t)
{
  for (int i = TSR_MAX_DIMS - 1; i >= 1; i--)
    if (t->ne[i] > 1)
      return i + 1;
  return 1;
}

bool
tsr_is_rows_contiguous (const tsr_tensor *t)
{
  return t->nb[0] == tsr_type_traits (t->type)->type_size;
}

bool
tsr_is_contiguous (const tsr_tensor *t)
{
  const struct tsr_type_traits *tr = tsr_type_traits (t->type);
  size_t next = tr->type_size;
  if (t->ne[0] != tr->block_size && t->nb[0] != next)
    return false;
  next = tsr_row_size (t->type, t->ne[0]);
  for (int i = 1; i < TSR_MAX_DIMS; i++)
    {
      if (t->ne[i] != 1 && t->nb[i] != next)
        return false;
      next *= (size_t) t->ne[i];
    }
  return true;
}

bool
tsr_is_view (const tsr_tensor *t)
{
  return t->view_src != NULL;
}

bool
tsr_same_shape (const tsr_tensor *a, const tsr_tensor *b)
{
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    if (a->ne[i] != b->ne[i])
      return false;
  return true;
}

bool
tsr_can_repeat (const tsr_tensor *b, const tsr_tensor *a)
{
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    if (b->ne[i] == 0 || a->ne[i] % b->ne[i] != 0)
      return false;
  return true;
}

int32_t
tsr_get_op_param_i32 (const tsr_tensor *t, int i)
{
  if (!t || i < 0 || i >= TSR_MAX_OP_PARAMS)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "op parameter %d of %s: %s", i,
                     t ? tsr_tensor_label (t) : "(null)",
                     t ? "out of range" : "no tensor");
      return 0;
    }
  return t->op_params[i];
}

float
tsr_get_op_param_f32 (const tsr_tensor *t, int i)
{
  float f;
  if (!t || i < 0 || i >= TSR_MAX_OP_PARAMS)
    {
      tsr_get_op_param_i32 (t, i);        /* records the error */
      return 0.0f;
    }
  memcpy (&f, &t->op_params[i], sizeof f);
  return f;
}

/* Byte offset of logical element I (row-major, dim 0 fastest).  */
static size_t
element_offset (const tsr_tensor *t, int64_t i)
{
  int64_t i0 = i % t->ne[0], r = i / t->ne[0];
  int64_t i1 = r % t->ne[1];
  r /= t->ne[1];
  int64_t i2 = r % t->ne[2], i3 = r / t->ne[2];
  return (size_t) i0 * t->nb[0] + (size_t) i1 * t->nb[1]
         + (size_t) i2 * t->nb[2] + (size_t) i3 * t->nb[3];
}

float
tsr_get_f32_1d (const tsr_tensor *t, int64_t i)
{
  const char *p = (const char *) t->data + element_offset (t, i);
  switch (t->type)
    {
    case TSR_TYPE_F32: { float v; memcpy (&v, p, 4); return v; }
    case TSR_TYPE_F16: { tsr_fp16_t h; memcpy (&h, p, 2);
                         return tsr_fp16_to_fp32 (h); }
    case TSR_TYPE_BF16: { tsr_bf16_t h; memcpy (&h, p, 2);
                          return tsr_bf16_to_fp32 (h); }
    case TSR_TYPE_I32: { int32_t v; memcpy (&v, p, 4); return (float) v; }
    default:
      return 0.0f / 0.0f;       /* quantized: not element-addressable */
    }
}

void
tsr_set_f32_1d (tsr_tensor *t, int64_t i, float v)
{
  char *p = (char *) t->data + element_offset (t, i);
  switch (t->type)
    {
    case TSR_TYPE_F32: memcpy (p, &v, 4); break;
    case TSR_TYPE_F16: { tsr_fp16_t h = tsr_fp32_to_fp16 (v);
                         memcpy (p, &h, 2); break; }
    case TSR_TYPE_BF16: { tsr_bf16_t h = tsr_fp32_to_bf16 (v);
                          memcpy (p, &h, 2); break; }
    case TSR_TYPE_I32: { int32_t x = (int32_t) v; memcpy (p, &x, 4); break; }
    default: break;
    }
}

int
tsri_check_range (const char *what, const tsr_tensor *t, const void *data,
                  size_t offset, size_t size)
{
  if (!t || (!data && size))
    return tsr_set_error (TSR_ERR_INVALID_ARG, "%s: NULL argument", what);
  if (!t->data)
    return tsr_set_error (TSR_ERR_STATE, "%s: tensor '%s' has no data "
                          "(not allocated)", what, t->name);
  size_t n = tsr_nbytes (t);
  if (offset > n || size > n - offset)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "%s: bytes [%zu, %zu) are "
                          "outside tensor '%s' (%zu bytes)", what, offset,
                          offset + size, t->name, n);
  return TSR_OK;
}

int
tsr_tensor_set (tsr_tensor *t, const void *data, size_t offset, size_t size)
{
  int st = tsri_check_range ("tensor set", t, data, offset, size);
  if (st != TSR_OK || size == 0)
    return st;
  if (t->buffer)
    return t->buffer->iface.set_tensor (t->buffer, t, data, offset, size);
  else
    memcpy ((char *) t->data + offset, data, size);
  return TSR_OK;
}

int
tsr_tensor_get (const tsr_tensor *t, void *data, size_t offset, size_t size)
{
  int st = tsri_check_range ("tensor get", t, data, offset, size);
  if (st != TSR_OK || size == 0)
    return st;
  if (t->buffer)
    return t->buffer->iface.get_tensor (t->buffer, t, data, offset, size);
  else
    memcpy (data, (const char *) t->data + offset, size);
  return TSR_OK;
}
