/* Every op's invalid variants, built by hand (a copy of a builder's
   node with one thing changed: the result's shape or type, an operand
   missing or of the wrong type, an operand's shape, the parameters).
   tsr_node_validate refuses what the builders would have refused, with
   the status they give, and every device present answers
   tsr_device_supports_op with false for each node it refuses: no
   device computes a node another refuses for its shape.  A graph
   holding a refused node fails in tsr_backend_graph_compute with the
   same status, naming the node, before any kernel runs.  */
#include <stdio.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

#define MAX_NODES 64

struct named
{
  const char *what;
  tsr_tensor *node;
};

static tsr_context *ctx;
static tsr_backend *cpu;
static int n_devices;
static tsr_device *devices[16];

static tsr_tensor *
f32 (int64_t a, int64_t b, int64_t c, int64_t d)
{
  tsr_tensor *t = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, a, b, c, d);
  for (int64_t i = 0; i < tsr_nelements (t); i++)
    tsr_set_f32_1d (t, i, (float) (i % 7) * 0.25f - 0.5f);
  return t;
}

static tsr_tensor *
of_type (tsr_type type, int64_t a, int64_t b, int64_t c, int64_t d)
{
  return tsr_new_tensor_4d (ctx, type, a, b, c, d);
}

static tsr_tensor *
indices (int64_t n, int64_t m, int64_t bound)
{
  tsr_tensor *t = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, n, m);
  for (int64_t i = 0; i < n * m; i++)
    ((int32_t *) t->data)[i] = (int32_t) (i % bound);
  return t;
}

/* One node of every op that computes, made by its builder.  */
static int
valid_nodes (struct named *out)
{
  tsr_tensor *a = f32 (8, 4, 2, 1), *b = f32 (8, 4, 2, 1);
  tsr_tensor *row = f32 (8, 1, 1, 1);
  tsr_tensor *w = f32 (8, 5, 1, 1), *x = f32 (8, 3, 1, 1);
  tsr_tensor *img = f32 (8, 8, 2, 1);
  int n = 0;
#define ADD(expr) out[n++] = (struct named) { #expr, (expr) }
  ADD (tsr_add (ctx, a, row));
  ADD (tsr_sub (ctx, a, b));
  ADD (tsr_mul (ctx, a, row));
  ADD (tsr_div (ctx, a, b));
  ADD (tsr_scale (ctx, a, 2));
  ADD (tsr_silu (ctx, a));
  ADD (tsr_gelu (ctx, a));
  ADD (tsr_norm (ctx, a, 1e-5f));
  ADD (tsr_rms_norm (ctx, a, 1e-5f));
  ADD (tsr_sqr (ctx, a));
  ADD (tsr_sqrt (ctx, a));
  ADD (tsr_exp (ctx, a));
  ADD (tsr_ln (ctx, a));
  ADD (tsr_neg (ctx, a));
  ADD (tsr_abs (ctx, a));
  ADD (tsr_sigmoid (ctx, a));
  ADD (tsr_tanh (ctx, a));
  ADD (tsr_relu (ctx, a));
  ADD (tsr_gelu_quick (ctx, a));
  ADD (tsr_gelu_erf (ctx, a));
  ADD (tsr_clamp (ctx, a, -1, 1));
  ADD (tsr_diag_mask_inf (ctx, a, 0));
  ADD (tsr_cpy (ctx, a, of_type (TSR_TYPE_F16, 8, 4, 2, 1)));
  ADD (tsr_cast (ctx, a, TSR_TYPE_F16));
  ADD (tsr_cont (ctx, tsr_transpose (ctx, a)));
  ADD (tsr_get_rows (ctx, w, indices (3, 1, 5)));
  ADD (tsr_mul_mat (ctx, w, x));
  ADD (tsr_sum_rows (ctx, a));
  ADD (tsr_soft_max (ctx, a, f32 (8, 4, 1, 1), 0.5f));
  ADD (tsr_swiglu (ctx, a, b));
  ADD (tsr_geglu (ctx, a, NULL));
  ADD (tsr_sum (ctx, a));
  ADD (tsr_mean (ctx, a));
  ADD (tsr_argmax (ctx, a));
  ADD (tsr_repeat (ctx, row, a));
  ADD (tsr_concat (ctx, a, b, 1));
  ADD (tsr_pad (ctx, a, 1, 0, 2, 0));
  ADD (tsr_arange (ctx, 0, 5, 1));
  ADD (tsr_upscale (ctx, a, 2));
  ADD (tsr_argsort (ctx, a, TSR_SORT_ASC));
  ADD (tsr_top_k (ctx, a, 3));
  ADD (tsr_rope (ctx, f32 (8, 2, 5, 1), indices (5, 1, 9), 8,
                 TSR_ROPE_NORMAL, 1e4f, 1));
  ADD (tsr_set_rows (ctx, of_type (TSR_TYPE_F16, 8, 10, 1, 1),
                     f32 (8, 3, 1, 1), indices (3, 1, 10)));
  ADD (tsr_flash_attn_ext (ctx, f32 (8, 3, 2, 1),
                           of_type (TSR_TYPE_F16, 8, 6, 1, 1),
                           of_type (TSR_TYPE_F16, 8, 6, 1, 1),
                           of_type (TSR_TYPE_F16, 6, 3, 1, 1), 0.3f));
  ADD (tsr_mul_mat_id (ctx, f32 (8, 5, 4, 1), f32 (8, 1, 3, 1),
                       indices (2, 3, 4)));
  ADD (tsr_im2col (ctx, f32 (3, 3, 2, 4), img, 1, 1, 0, 0, 1, 1, true,
                   TSR_TYPE_F32));
  ADD (tsr_pool_2d (ctx, img, TSR_POOL_MAX, 2, 2, 2, 2, 0, 0));
#undef ADD
  return n;
}

/* A copy of N, made by hand (its own tensor, N's fields).  */
static tsr_tensor *
copy_of (const tsr_tensor *n, const char *name)
{
  tsr_tensor *h = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 1);
  *h = *n;
  snprintf (h->name, sizeof h->name, "%s", name);
  return h;
}

static bool
cpy_is_cast (const tsr_tensor *n)
{
  return n->op == TSR_OP_CPY && !n->src[1];
}

static int n_refused_total, n_checked_total;

/* V was made from a valid node by one change.  WANT: the status
   tsr_node_validate must give (TSR_OK: either, just agree).  Checks
   the verdict and that no device accepts a refused node.  Returns
   whether the check line failed (printed then).  */
static void
check_variant (const char *op, const char *change, tsr_tensor *v,
               tsr_status want)
{
  tsr_clear_error ();
  tsr_status got = tsr_node_validate (v);
  char msg[600];

  snprintf (msg, sizeof msg, "%s", tsr_last_error ());
  n_checked_total++;
  if (want != TSR_OK && got != want)
    {
      tsr_test_result (0, "%s, %s: refused with status %d (want %d): %s",
                       op, change, (int) got, (int) want, msg);
      return;
    }
  if (got != TSR_OK && !strstr (msg, op))
    {
      tsr_test_result (0, "%s, %s: the message names the op: %s", op,
                       change, msg);
      return;
    }
  if (got == TSR_OK)
    return;
  n_refused_total++;
  for (int d = 0; d < n_devices; d++)
    if (tsr_device_supports_op (devices[d], v))
      {
        tsr_test_result (0, "%s, %s: refused (%s) but %s supports it", op,
                         change, msg, tsr_device_name (devices[d]));
        return;
      }
  /* Computed, it fails before any kernel runs, with that status.  */
  tsr_graph *g = tsr_graph_new (ctx);
  if (g && tsr_graph_build (g, v) == TSR_OK)
    {
      tsr_clear_error ();
      int st = tsr_backend_graph_compute (cpu, g);
      /* A hand-made operand that is itself a node may be refused
         first, by its own name.  */
      if (st != (int) got || !(strstr (tsr_last_error (), v->name)
                               || strstr (tsr_last_error (), "hand-operand")))
        {
          tsr_test_result (0, "%s, %s: computing it gives status %d (want "
                           "%d) and \"%s\" (want the node's name)", op,
                           change, st, (int) got, tsr_last_error ());
          return;
        }
    }
}

int
main (void)
{
  struct named nodes[MAX_NODES];
  int n_nodes, bad_before;

  ctx = tsr_context_new (false);
  cpu = tsr_backend_init_by_name ("cpu", NULL);
  CHECK (ctx && cpu, "context and cpu backend");
  if (!ctx || !cpu)
    return TSR_TEST_EXIT ();
  for (size_t i = 0; i < tsr_device_count () && n_devices < 16; i++)
    devices[n_devices++] = tsr_device_get (i);
  n_nodes = valid_nodes (nodes);

  /* Builders' nodes pass, whatever the device says about them.  */
  bad_before = tsr_test_failures;
  for (int k = 0; k < n_nodes; k++)
    if (!nodes[k].node || tsr_node_validate (nodes[k].node) != TSR_OK)
      tsr_test_result (0, "%s is built and valid: %s", nodes[k].what,
                       tsr_last_error ());
  CHECK (tsr_test_failures == bad_before, "the %d builders' nodes are valid",
         n_nodes);
  if (tsr_test_failures != bad_before)
    return TSR_TEST_EXIT ();

  tsr_tensor *wrong_i32 = indices (8, 4, 3);
  for (int k = 0; k < n_nodes; k++)
    {
      const tsr_tensor *n = nodes[k].node;
      const char *op = tsr_op_name (n->op);
      char name[48];
      tsr_tensor *v;

      bad_before = tsr_test_failures;
      snprintf (name, sizeof name, "hand-%d-a", k);
      v = copy_of (n, name);
      v->ne[0] += 1;
      check_variant (op, "result one longer", v, TSR_ERR_SHAPE);

      snprintf (name, sizeof name, "hand-%d-b", k);
      v = copy_of (n, name);
      v->ne[1] *= 2;
      check_variant (op, "result rows doubled", v, TSR_ERR_SHAPE);

      snprintf (name, sizeof name, "hand-%d-c", k);
      v = copy_of (n, name);
      v->type = n->type == TSR_TYPE_I32 ? TSR_TYPE_F32 : TSR_TYPE_I32;
      check_variant (op, "result of another type", v,
                     cpy_is_cast (n) ? TSR_OK : TSR_ERR_TYPE);

      snprintf (name, sizeof name, "hand-%d-d", k);
      v = copy_of (n, name);
      v->type = (tsr_type) 1000;
      check_variant (op, "result of no type", v, TSR_ERR_TYPE);

      for (int i = 0; i < TSR_MAX_SRC; i++)
        if (n->src[i])
          {
            char change[64];
            snprintf (name, sizeof name, "hand-%d-e%d", k, i);
            v = copy_of (n, name);
            v->src[i] = NULL;
            snprintf (change, sizeof change, "operand %d missing", i);
            /* The first operand is always required.  */
            check_variant (op, change, v,
                           i == 0 ? TSR_ERR_INVALID_ARG : TSR_OK);

            snprintf (name, sizeof name, "hand-%d-f%d", k, i);
            v = copy_of (n, name);
            v->src[i] = wrong_i32;
            snprintf (change, sizeof change, "operand %d an i32 [8, 4]", i);
            check_variant (op, change, v, TSR_OK);

            snprintf (name, sizeof name, "hand-%d-g%d", k, i);
            v = copy_of (n, name);
            tsr_tensor *s = copy_of (n->src[i], "hand-operand");
            s->ne[0] = 0;
            v->src[i] = s;
            snprintf (change, sizeof change, "operand %d of size 0", i);
            check_variant (op, change, v, TSR_ERR_SHAPE);
          }

      for (int p = 0; p < 3; p++)
        {
          static const int32_t fill[3] = { -1, 0, 0x7fffffff };
          char change[64];
          snprintf (name, sizeof name, "hand-%d-h%d", k, p);
          v = copy_of (n, name);
          for (int i = 0; i < TSR_MAX_OP_PARAMS; i++)
            v->op_params[i] = fill[p];
          snprintf (change, sizeof change, "parameters all %d",
                    (int) fill[p]);
          check_variant (op, change, v, TSR_OK);
        }
      CHECK (tsr_test_failures == bad_before, "%s: every device refuses the "
             "hand-built variants tsr_node_validate refuses", op);
    }

  /* The drift the old per-backend checks had: a broadcast operand that
     does not divide the other's shape.  */
  tsr_tensor *add = copy_of (nodes[0].node, "hand-add-broadcast");
  add->src[1] = f32 (3, 1, 1, 1);
  bad_before = tsr_test_failures;
  check_variant ("add", "second operand [3] against [8, 4, 2]", add,
                 TSR_ERR_SHAPE);
  CHECK (tsr_test_failures == bad_before, "add with an operand that does not "
         "broadcast is refused by the core and by every device");

  CHECK (n_refused_total > 5 * n_nodes, "%d of %d hand-built variants "
         "refused, on %d devices", n_refused_total, n_checked_total,
         n_devices);
  tsr_backend_free (cpu);
  tsr_context_free (ctx);
  return TSR_TEST_EXIT ();
}
