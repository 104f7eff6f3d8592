/* The block types that came after the backends' kernels (q4_1 ... mxfp4,
   issue 12): every device the registry finds must say no in
   supports_op to the ops it has no kernel for, rather than run a
   generic path that does not understand the blocks: mul_mat,
   mul_mat_id and get_rows with such weights, cpy from and to them and
   between two tensors of one such type (cont / dup), set_rows into them.
   The graph builders accept these nodes; they are built here with
   q4_K, q6_K, iq4_xs and mxfp4.

   The CPU has kernels for every one of these nodes; CUDA for mul_mat,
   mul_mat_id and get_rows (gpu-quants), not for copies or set_rows;
   OpenCL for those and the copies out of every block type (to f32, to
   the same type), and quantizes (cpy from f32, set_rows) into the
   32-element blocks (mxfp4 here) where the device has doubles, not
   into the super-block types; other devices (BLAS, test modules) for
   none.
   Limitations: a device that gains kernels must be listed in
   supported () below; until then this test holds the line.  */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <tessera.h>
#include "tsr-test.h"

static const tsr_type types[] = { TSR_TYPE_Q4_K, TSR_TYPE_Q6_K,
                                  TSR_TYPE_IQ4_XS, TSR_TYPE_MXFP4 };

/* Whether DEV has a kernel for NODE, whose block type is T.  */
static int
supported (tsr_device *dev, const tsr_tensor *node, tsr_type t)
{
  const char *name = tsr_device_name (dev);
  tsr_op op = node->op;
  (void) t;
  /* The CPU: every one of them (cpu-kquant.c, cpu-qdot-32.c).  */
  if (strcmp (name, "CPU") == 0)
    return 1;
  bool weights = op == TSR_OP_MUL_MAT || op == TSR_OP_MUL_MAT_ID
                 || op == TSR_OP_GET_ROWS;
  /* CUDA: the weight ops (cuda-blocks.cuh).  */
  if (strncmp (name, "CUDA", 4) == 0)
    return weights;
  /* OpenCL: the weight ops and the copies out (ocl-quant.cl,
     ocl-copy.cl); quantizing (ocl-fit.cl) into 32-element blocks,
     through doubles.  */
  if (strncmp (name, "OpenCL", 6) == 0)
    {
      bool into = node->type == t
                  && (op == TSR_OP_SET_ROWS || node->src[0]->type != t);
      bool fp64 = !strstr (tsr_device_description (dev), "no fp64");
      if (into)
        return t == TSR_TYPE_MXFP4 && fp64;
      return 1;
    }
  return 0;
}

/* The nodes of one type T.  */
static int
build_nodes (tsr_context *ctx, tsr_type t, tsr_tensor **nodes,
             const char **what)
{
  int n = 0;
  tsr_tensor *w = tsr_new_tensor_2d (ctx, t, 256, 4);
  tsr_tensor *w3 = tsr_new_tensor_3d (ctx, t, 256, 4, 2);
  tsr_tensor *x = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 256, 3);
  tsr_tensor *xf = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 256, 4);
  tsr_tensor *rows = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 2);
  tsr_tensor *ids = tsr_new_tensor_2d (ctx, TSR_TYPE_I32, 1, 3);
  tsr_tensor *w2 = tsr_new_tensor_2d (ctx, t, 256, 4);
  what[n] = "mul_mat";
  nodes[n++] = tsr_mul_mat (ctx, w, x);
  what[n] = "mul_mat_id";
  nodes[n++] = tsr_mul_mat_id (ctx, w3, tsr_new_tensor_3d (ctx, TSR_TYPE_F32,
                                                             256, 1, 3), ids);
  what[n] = "get_rows";
  nodes[n++] = tsr_get_rows (ctx, w, rows);
  what[n] = "cpy to f32";
  nodes[n++] = tsr_cpy (ctx, w, xf);
  what[n] = "cpy from f32";
  nodes[n++] = tsr_cpy (ctx, xf, w2);
  what[n] = "cpy to the same type";
  nodes[n++] = tsr_cpy (ctx, w, w2);
  what[n] = "cont";
  nodes[n++] = tsr_cont (ctx, w);
  what[n] = "dup";
  nodes[n++] = tsr_dup (ctx, w);
  what[n] = "set_rows";
  nodes[n++] = tsr_set_rows (ctx, w2, tsr_new_tensor_2d (ctx, TSR_TYPE_F32,
                                                          256, 2), rows);
  return n;
}

int
main (void)
{
  size_t nd = tsr_device_count ();
  CHECK (nd > 0, "the registry finds devices (%zu)", nd);
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
    {
      tsr_context *ctx = tsr_context_new (true);
      tsr_tensor *nodes[16];
      const char *what[16];
      int n = build_nodes (ctx, types[ti], nodes, what);
      for (int i = 0; i < n; i++)
        {
          if (!nodes[i])
            {
              /* The builders accept every one of these nodes.  */
              CHECK (0, "%s %s: the builder accepts it (%s)", what[i],
                     tsr_type_name (types[ti]), tsr_last_error ());
              continue;
            }
          for (size_t d = 0; d < nd; d++)
            {
              tsr_device *dev = tsr_device_get (d);
              int yes = supported (dev, nodes[i], types[ti]);
              CHECK (tsr_device_supports_op (dev, nodes[i]) == yes,
                     "%s %s: %s %s it", what[i], tsr_type_name (types[ti]),
                     tsr_device_name (dev), yes ? "accepts" : "refuses");
            }
        }
      tsr_context_free (ctx);
    }
  return TSR_TEST_EXIT ();
}
