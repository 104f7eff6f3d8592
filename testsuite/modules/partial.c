/* A check-only backend that supports only f32 add and mul and keeps
   its tensors in memory of its own buffer type, which no other device
   reads; it says it has 1 MiB of it free (it allocates more).  With it, the scheduler must split graphs and copy tensors
   across backends.  Arithmetic is plain C over strides.  */
#include <stdlib.h>
#include <string.h>
#include <tessera/module.h>

static const char *
buft_name (tsr_buffer_type *buft)
{
  return "partial";
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

static tsr_device partial_device;

static struct tsr_buffer_type partial_buft = {
  { buft_name, buft_alloc, buft_align, NULL, NULL, NULL },
  &partial_device, NULL
};

static bool
supports_op (tsr_device *dev, const tsr_tensor *op)
{
  if (op->op != TSR_OP_ADD && op->op != TSR_OP_MUL)
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

static int
compute (tsr_backend *be, tsr_graph *g)
{
  for (int n = 0; n < tsr_graph_n_nodes (g); n++)
    {
      tsr_tensor *d = tsr_graph_node (g, n);
      if (tsr_op_get_kind (d->op) == TSR_OP_KIND_VIEW)
        continue;
      if (!supports_op (NULL, d))
        return tsr_set_error (TSR_ERR_UNSUPPORTED, "partial: %s",
                              tsr_op_name (d->op));
      for (int64_t i3 = 0; i3 < d->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < d->ne[2]; i2++)
          for (int64_t i1 = 0; i1 < d->ne[1]; i1++)
            for (int64_t i0 = 0; i0 < d->ne[0]; i0++)
              {
                float a = at (d->src[0], i0, i1, i2, i3);
                float b = at (d->src[1], i0, i1, i2, i3);
                float r = d->op == TSR_OP_ADD ? a + b : a * b;
                memcpy ((char *) d->data + i0 * d->nb[0] + i1 * d->nb[1]
                        + i2 * d->nb[2] + i3 * d->nb[3], &r, sizeof r);
              }
    }
  return TSR_OK;
}

static const char *
be_name (tsr_backend *be)
{
  return "partial";
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
  return "Partial0";
}

static const char *
dev_desc (tsr_device *dev)
{
  return "check-only backend: f32 add and mul, private memory";
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
  return &partial_buft;
}

static bool
supports_buft (tsr_device *dev, tsr_buffer_type *buft)
{
  return buft == &partial_buft;
}

static const char *
reg_name (tsr_reg *reg)
{
  return "partial";
}

static size_t
reg_count (tsr_reg *reg)
{
  return 1;
}

static tsr_device *
reg_dev (tsr_reg *reg, size_t i)
{
  return i == 0 ? &partial_device : NULL;
}

static tsr_reg partial_reg = {
  TSR_MODULE_ABI_VERSION, { reg_name, reg_count, reg_dev }, NULL
};

static tsr_device partial_device = {
  { .get_name = dev_name, .get_description = dev_desc,
    .get_memory = dev_memory, .get_type = dev_type,
    .init_backend = init_backend, .get_buffer_type = dev_buft,
    .supports_op = supports_op, .supports_buft = supports_buft },
  &partial_reg, NULL
};

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
