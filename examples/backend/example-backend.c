/* example-backend.c - a complete, minimal Tessera backend module.
 *
 * One device, "Example0", that computes f32 add and mul (with
 * broadcasting) in host memory, written against the installed headers
 * only.  It builds out of the tree with pkg-config:
 *
 *   cc -shared -fPIC -DTSR_MODULE_NAME=tessera_example \
 *      $(pkg-config --cflags tessera) -o tessera-example.so \
 *      example-backend.c $(pkg-config --libs tessera)
 *
 * and loads from any directory in TESSERA_BACKEND_PATH (or with
 * tsr_registry_load).  TSR_MODULE_NAME must match the file name
 * (tessera-example, '-' as '_').  See "Writing a backend module" in
 * the Tessera manual.  */
#include <stdlib.h>
#include <tessera.h>
#include <tessera/module.h>

/* The device: everything but the registration's bookkeeping, which
   tsr_reg_new does (see example_init).  */

static const char *
dev_name (tsr_device *dev)
{
  (void) dev;
  return "Example0";
}

static const char *
dev_description (tsr_device *dev)
{
  (void) dev;
  return "example backend: f32 add and mul in host memory";
}

static tsr_device_type
dev_type (tsr_device *dev)
{
  (void) dev;
  return TSR_DEVICE_ACCEL;
}

static tsr_buffer_type *
dev_buffer_type (tsr_device *dev)
{
  (void) dev;
  return tsr_host_buffer_type ();
}

/* The core has validated the node (shapes, operand types): say only
   which ops this backend has kernels for.  */
static bool
dev_supports_op (tsr_device *dev, const tsr_tensor *op)
{
  (void) dev;
  return op->op == TSR_OP_ADD || op->op == TSR_OP_MUL
         || tsr_op_get_kind (op->op) == TSR_OP_KIND_VIEW;
}

static bool
dev_supports_buft (tsr_device *dev, tsr_buffer_type *buft)
{
  (void) dev;
  return tsr_buffer_type_is_host (buft);
}

/* The backend: the object is made by tsr_backend_new and freed by the
   core; this one has no context, so it needs no free entry.  */

static const char *
be_name (tsr_backend *be)
{
  (void) be;
  return "example";
}

/* Element I of T (any strides; row-major order over the dimensions).  */
static float *
at (const tsr_tensor *t, int64_t i)
{
  int64_t i0 = i % t->ne[0], i1 = i / t->ne[0] % t->ne[1];
  int64_t i2 = i / (t->ne[0] * t->ne[1]) % t->ne[2];
  int64_t i3 = i / (t->ne[0] * t->ne[1] * t->ne[2]);
  return (float *) ((char *) t->data + i0 * t->nb[0] + i1 * t->nb[1]
                    + i2 * t->nb[2] + i3 * t->nb[3]);
}

/* Every node is valid and in host memory (the core checked); views
   need no work.  Synchronous, so no synchronize entry.  */
static int
be_graph_compute (tsr_backend *be, tsr_graph *g)
{
  (void) be;
  for (int n = 0; n < tsr_graph_n_nodes (g); n++)
    {
      tsr_tensor *d = tsr_graph_node (g, n);
      const tsr_tensor *a = d->src[0], *b = d->src[1];
      if (tsr_op_get_kind (d->op) == TSR_OP_KIND_VIEW)
        continue;
      if (d->op != TSR_OP_ADD && d->op != TSR_OP_MUL)
        return tsr_set_error (TSR_ERR_UNSUPPORTED, "example: no kernel for "
                              "%s", tsr_op_name (d->op));
      for (int64_t i = 0; i < tsr_nelements (d); i++)
        {
          /* b broadcasts: index it modulo its own shape.  */
          int64_t j0 = i % d->ne[0] % b->ne[0];
          int64_t j1 = i / d->ne[0] % d->ne[1] % b->ne[1];
          int64_t j2 = i / (d->ne[0] * d->ne[1]) % d->ne[2] % b->ne[2];
          int64_t j3 = i / (d->ne[0] * d->ne[1] * d->ne[2]) % b->ne[3];
          float y = *(const float *) ((const char *) b->data
                                      + j0 * b->nb[0] + j1 * b->nb[1]
                                      + j2 * b->nb[2] + j3 * b->nb[3]);
          float x = *at (a, i);
          *at (d, i) = d->op == TSR_OP_ADD ? x + y : x * y;
        }
    }
  return TSR_OK;
}

static tsr_backend *
dev_init_backend (tsr_device *dev, const char *params)
{
  static const struct tsr_backend_iface iface = {
    .get_name = be_name,
    .graph_compute = be_graph_compute,
  };

  /* No KEY=VALUE parameters: anything in PARAMS is refused, with a
     message saying so.  A backend with keys lists them here.  */
  if (tsr_params_parse ("example", params, NULL, 0) != TSR_OK)
    return NULL;
  return tsr_backend_new (dev, iface, NULL);
}

static const struct tsr_device_iface example_device_iface = {
  .get_name = dev_name,
  .get_description = dev_description,
  .get_type = dev_type,
  .init_backend = dev_init_backend,
  .get_buffer_type = dev_buffer_type,
  .supports_op = dev_supports_op,
  .supports_buft = dev_supports_buft,
};

/* The descriptor, the one exported object.  */

static int
example_score (const char **reason)
{
  (void) reason;
  return 1;                     /* works everywhere */
}

/* One device without a context; the core frees the registration when
   the module is unloaded.  */
static tsr_reg *
example_init (void)
{
  return tsr_reg_new ("example", &example_device_iface, 1, NULL, NULL);
}

const struct tsr_module_descriptor TSR_MODULE_DESCRIPTOR = {
  TSR_MODULE_ABI_VERSION, "example", example_score, example_init,
  NULL,                         /* finalize: nothing to release */
  0                             /* flags: reserved, 0 */
};
