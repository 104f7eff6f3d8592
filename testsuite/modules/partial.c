/* A check-only backend module with two devices that keep their tensors
   in memory of their own buffer types, which no other device reads:
   Partial0 supports only f32 add and mul, Partial1 f32 matrix products
   too.  Each says it has 1 MiB free (it allocates more).  With them,
   the scheduler must split graphs and copy tensors across backends, and
   a model's layers can be placed on a device that cannot run all of
   them.  Arithmetic is plain C over strides.  */
#include <stdlib.h>
#include <string.h>
#include <tessera/module.h>

static const char *
buft_name (tsr_buffer_type *buft)
{
  return buft->context ? "partial-mm" : "partial";
}

static void
buf_free (tsr_buffer *buf)
{
  free (buf->context);
}

static void *
buf_base (tsr_buffer *buf)
{
  return buf->context;
}

static int
buf_set (tsr_buffer *buf, tsr_tensor *t, const void *data, size_t off,
         size_t size)
{
  memcpy ((char *) t->data + off, data, size);
  return TSR_OK;
}

static int
buf_get (tsr_buffer *buf, const tsr_tensor *t, void *data, size_t off,
         size_t size)
{
  memcpy (data, (const char *) t->data + off, size);
  return TSR_OK;
}

static void
buf_clear (tsr_buffer *buf, uint8_t v)
{
  memset (buf->context, v, buf->size);
}

static tsr_buffer *
buft_alloc (tsr_buffer_type *buft, size_t size)
{
  static const struct tsr_buffer_iface iface = {
    buf_free, buf_base, NULL, buf_set, buf_get, buf_clear
  };
  void *p = calloc (1, size ? size : 1);
  if (!p)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "partial: out of memory");
      return NULL;
    }
  tsr_buffer *b = tsr_buffer_new (buft, iface, p, size);
  if (!b)
    free (p);
  return b;
}

static size_t
buft_align (tsr_buffer_type *buft)
{
  return 32;
}

static tsr_device partial_devices[2];

/* Context: non-NULL for Partial1's (products too).  */
static struct tsr_buffer_type partial_bufts[2] = {
  { { buft_name, buft_alloc, buft_align, NULL, NULL, NULL },
    &partial_devices[0], NULL },
  { { buft_name, buft_alloc, buft_align, NULL, NULL, NULL },
    &partial_devices[1], &partial_devices[1] },
};

static bool
with_products (const tsr_device *dev)
{
  return dev == &partial_devices[1];
}

static bool
supports_op (tsr_device *dev, const tsr_tensor *op)
{
  if (op->op != TSR_OP_ADD && op->op != TSR_OP_MUL
      && !(op->op == TSR_OP_MUL_MAT && with_products (dev)))
    return false;
  return op->type == TSR_TYPE_F32 && op->src[0]->type == TSR_TYPE_F32
         && op->src[1]->type == TSR_TYPE_F32;
}

static float
at (const tsr_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
  float v;
  memcpy (&v, (const char *) t->data + (i0 % t->ne[0]) * t->nb[0]
          + (i1 % t->ne[1]) * t->nb[1] + (i2 % t->ne[2]) * t->nb[2]
          + (i3 % t->ne[3]) * t->nb[3], sizeof v);
  return v;
}

static void
store (tsr_tensor *d, int64_t i0, int64_t i1, int64_t i2, int64_t i3,
       float r)
{
  memcpy ((char *) d->data + i0 * d->nb[0] + i1 * d->nb[1] + i2 * d->nb[2]
          + i3 * d->nb[3], &r, sizeof r);
}

/* d[i0, i1] = sum over k of a[k, i0] b[k, i1], a broadcast over b's
   matrices.  */
static void
mul_mat (tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *b = d->src[1];
  for (int64_t i3 = 0; i3 < d->ne[3]; i3++)
    for (int64_t i2 = 0; i2 < d->ne[2]; i2++)
      for (int64_t i1 = 0; i1 < d->ne[1]; i1++)
        for (int64_t i0 = 0; i0 < d->ne[0]; i0++)
          {
            double acc = 0;
            for (int64_t k = 0; k < a->ne[0]; k++)
              acc += (double) at (a, k, i0, i2 / (b->ne[2] / a->ne[2]),
                                  i3 / (b->ne[3] / a->ne[3]))
                     * at (b, k, i1, i2, i3);
            store (d, i0, i1, i2, i3, (float) acc);
          }
}

static int
compute (tsr_backend *be, tsr_graph *g)
{
  for (int n = 0; n < tsr_graph_n_nodes (g); n++)
    {
      tsr_tensor *d = tsr_graph_node (g, n);
      if (tsr_op_get_kind (d->op) == TSR_OP_KIND_VIEW)
        continue;
      if (!supports_op (be->device, d))
        return tsr_set_error (TSR_ERR_UNSUPPORTED, "partial: %s",
                              tsr_op_name (d->op));
      if (d->op == TSR_OP_MUL_MAT)
        {
          mul_mat (d);
          continue;
        }
      for (int64_t i3 = 0; i3 < d->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < d->ne[2]; i2++)
          for (int64_t i1 = 0; i1 < d->ne[1]; i1++)
            for (int64_t i0 = 0; i0 < d->ne[0]; i0++)
              {
                float a = at (d->src[0], i0, i1, i2, i3);
                float b = at (d->src[1], i0, i1, i2, i3);
                store (d, i0, i1, i2, i3, d->op == TSR_OP_ADD ? a + b : a * b);
              }
    }
  return TSR_OK;
}

static const char *
be_name (tsr_backend *be)
{
  return with_products (be->device) ? "partial-mm" : "partial";
}

static tsr_backend *
init_backend (tsr_device *dev, const char *params)
{
  struct tsr_backend_iface iface = { 0 };

  iface.get_name = be_name;
  iface.graph_compute = compute;
  return tsr_backend_new (dev, iface, NULL);
}

static const char *
dev_name (tsr_device *dev)
{
  return with_products (dev) ? "Partial1" : "Partial0";
}

static const char *
dev_desc (tsr_device *dev)
{
  return with_products (dev)
         ? "check-only backend: f32 add, mul and mul_mat, private memory"
         : "check-only backend: f32 add and mul, private memory";
}

/* A small memory, so that a model runner's check of free memory before
   copying weights can be seen to refuse.  */
static void
dev_memory (tsr_device *dev, size_t *free_bytes, size_t *total)
{
  *free_bytes = 1u << 20;
  *total = 2u << 20;
}

static tsr_device_type
dev_type (tsr_device *dev)
{
  return TSR_DEVICE_ACCEL;
}

static tsr_buffer_type *
dev_buft (tsr_device *dev)
{
  return &partial_bufts[with_products (dev)];
}

static bool
supports_buft (tsr_device *dev, tsr_buffer_type *buft)
{
  return buft == dev_buft (dev);
}

static const char *
reg_name (tsr_reg *reg)
{
  return "partial";
}

static size_t
reg_count (tsr_reg *reg)
{
  return 2;
}

static tsr_device *
reg_dev (tsr_reg *reg, size_t i)
{
  return i < 2 ? &partial_devices[i] : NULL;
}

static tsr_reg partial_reg = {
  TSR_MODULE_ABI_VERSION, { reg_name, reg_count, reg_dev }, NULL
};

#define PARTIAL_DEVICE { \
  { .get_name = dev_name, .get_description = dev_desc, \
    .get_memory = dev_memory, .get_type = dev_type, \
    .init_backend = init_backend, .get_buffer_type = dev_buft, \
    .supports_op = supports_op, .supports_buft = supports_buft }, \
  &partial_reg, NULL }

static tsr_device partial_devices[2] = { PARTIAL_DEVICE, PARTIAL_DEVICE };

static int
score (const char **reason)
{
  return 1;
}

static tsr_reg *
init (void)
{
  return &partial_reg;
}

const struct tsr_module_descriptor TSR_MODULE_DESCRIPTOR = {
  TSR_MODULE_ABI_VERSION, "partial", score, init, NULL, 0
};
