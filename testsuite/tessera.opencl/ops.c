/* Every operation the OpenCL backend supports, against the CPU backend:
   the same graph is built, allocated in each device's memory, filled
   with the same inputs and computed; the results must agree (NMSE
   below 1e-7: the kernels differ from the CPU's only in the order of
   sums and in the last bits of exp/tanh; for products with q8_0 and
   q4_0 weights 5e-4, as in the op checker, because the CPU rounds the
   activations of such products to q8_0 when they are few rows and
   OpenCL does not).  The OpenCL device must
   claim every node of these graphs and refuse the ones listed at the
   end.  Bad indices are errors of graph_compute, as on the CPU.  */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ocl-test.h"

#define MAX_IN 6

struct input
{
  tsr_tensor *t;
  float lo, hi;        /* uniform floats, or i32 in [lo, hi) */
};

struct build
{
  tsr_context *ctx;
  int n;
  struct input in[MAX_IN];
};

typedef tsr_tensor *(*build_fn) (struct build *b);

static tsr_tensor *
input (struct build *b, tsr_type type, int64_t n0, int64_t n1, int64_t n2,
       int64_t n3, float lo, float hi)
{
  tsr_tensor *t = tsr_new_tensor_4d (b->ctx, type, n0, n1, n2, n3);
  b->in[b->n++] = (struct input) { t, lo, hi };
  tsr_set_input (t);
  return t;
}

#define F32(n0, n1, n2, n3) input (b, TSR_TYPE_F32, n0, n1, n2, n3, -2, 2)

/* The case builders.  */

static tsr_tensor *
c_add (struct build *b)
{
  return tsr_add (b->ctx, F32 (13, 5, 3, 2), F32 (13, 1, 3, 1));
}

static tsr_tensor *
c_sub_row (struct build *b)
{
  return tsr_sub (b->ctx, F32 (12, 5, 3, 2), F32 (4, 5, 1, 2));
}

static tsr_tensor *
c_mul_transposed (struct build *b)
{
  tsr_tensor *a = tsr_transpose (b->ctx, F32 (6, 9, 2, 1));
  return tsr_mul (b->ctx, a, F32 (9, 1, 1, 1));
}

static tsr_tensor *
c_div (struct build *b)
{
  return tsr_div (b->ctx, F32 (17, 3, 1, 1),
                  input (b, TSR_TYPE_F32, 17, 3, 1, 1, 0.5f, 3));
}

static tsr_tensor *
c_scale (struct build *b)
{
  return tsr_scale (b->ctx, F32 (33, 4, 1, 1), -0.75f);
}

#define UNARY_CASE(fn, lo, hi)                                            \
  static tsr_tensor *c_##fn (struct build *b)                             \
  {                                                                       \
    return tsr_##fn (b->ctx, input (b, TSR_TYPE_F32, 40, 3, 2, 1, lo,     \
                                    hi));                                 \
  }
UNARY_CASE (silu, -8, 8)
UNARY_CASE (gelu, -5, 5)
UNARY_CASE (sqr, -3, 3)
UNARY_CASE (sqrt, 0, 9)
UNARY_CASE (exp, -5, 5)
UNARY_CASE (ln, 0.01f, 9)
UNARY_CASE (neg, -3, 3)
UNARY_CASE (abs, -3, 3)
UNARY_CASE (sigmoid, -8, 8)
UNARY_CASE (tanh, -4, 4)
UNARY_CASE (relu, -3, 3)
UNARY_CASE (gelu_quick, -5, 5)
UNARY_CASE (gelu_erf, -5, 5)

static tsr_tensor *
c_clamp (struct build *b)
{
  return tsr_clamp (b->ctx, F32 (21, 4, 1, 1), -0.5f, 1.25f);
}

static tsr_tensor *
c_swiglu_split (struct build *b)
{
  return tsr_swiglu (b->ctx, F32 (24, 5, 2, 1), NULL);
}

static tsr_tensor *
c_geglu (struct build *b)
{
  return tsr_geglu (b->ctx, F32 (12, 5, 2, 1), F32 (12, 5, 2, 1));
}

static tsr_tensor *
c_cast_f16 (struct build *b)
{
  return tsr_cast (b->ctx, input (b, TSR_TYPE_F32, 30, 7, 1, 1, -70000,
                                  70000), TSR_TYPE_F16);
}

static tsr_tensor *
c_cast_bf16_from_f16 (struct build *b)
{
  return tsr_cast (b->ctx, input (b, TSR_TYPE_F16, 30, 7, 1, 1, -9, 9),
                   TSR_TYPE_BF16);
}

static tsr_tensor *
c_cast_i32 (struct build *b)
{
  return tsr_cast (b->ctx, tsr_cast (b->ctx, input (b, TSR_TYPE_F32, 19, 3,
                                                    1, 1, -100, 100),
                                     TSR_TYPE_I32), TSR_TYPE_F32);
}

static tsr_tensor *
c_cont_permuted (struct build *b)
{
  return tsr_cont (b->ctx, tsr_permute (b->ctx, F32 (5, 4, 3, 2), 2, 0, 1,
                                        3));
}

static tsr_tensor *
c_dup_f16_transposed (struct build *b)
{
  return tsr_dup (b->ctx, tsr_transpose (b->ctx,
                                         input (b, TSR_TYPE_F16, 7, 5, 2, 1,
                                                -3, 3)));
}

static tsr_tensor *
c_cpy_into_view (struct build *b)
{
  tsr_tensor *dst = input (b, TSR_TYPE_F16, 8, 6, 1, 1, -1, 1);
  tsr_tensor *v = tsr_view_2d (b->ctx, dst, 4, 6, dst->nb[1],
                               2 * dst->nb[0]);
  return tsr_cpy (b->ctx, F32 (4, 6, 1, 1), v);
}

static tsr_tensor *
c_cast_q8_0 (struct build *b)
{
  return tsr_cast (b->ctx, input (b, TSR_TYPE_Q8_0, 64, 3, 2, 1, -2, 2),
                   TSR_TYPE_F32);
}

static tsr_tensor *
c_dup_q4_0 (struct build *b)
{
  return tsr_cast (b->ctx, tsr_dup (b->ctx, input (b, TSR_TYPE_Q4_0, 64, 3,
                                                   1, 1, -2, 2)),
                   TSR_TYPE_F16);
}

static tsr_tensor *
get_rows_of (struct build *b, tsr_type type)
{
  tsr_tensor *a = input (b, type, 64, 10, 2, 1, -2, 2);
  return tsr_get_rows (b->ctx, a, input (b, TSR_TYPE_I32, 5, 4, 1, 1, 0,
                                         10));
}

static tsr_tensor *c_get_rows_f32 (struct build *b)
{ return get_rows_of (b, TSR_TYPE_F32); }
static tsr_tensor *c_get_rows_f16 (struct build *b)
{ return get_rows_of (b, TSR_TYPE_F16); }
static tsr_tensor *c_get_rows_bf16 (struct build *b)
{ return get_rows_of (b, TSR_TYPE_BF16); }
static tsr_tensor *c_get_rows_q8_0 (struct build *b)
{ return get_rows_of (b, TSR_TYPE_Q8_0); }
static tsr_tensor *c_get_rows_q4_0 (struct build *b)
{ return get_rows_of (b, TSR_TYPE_Q4_0); }

static tsr_tensor *
mul_mat_of (struct build *b, tsr_type type)
{
  tsr_tensor *a = input (b, type, 96, 33, 2, 1, -1, 1);
  return tsr_mul_mat (b->ctx, a, F32 (96, 7, 4, 2));
}

static tsr_tensor *c_mul_mat_f32 (struct build *b)
{ return mul_mat_of (b, TSR_TYPE_F32); }
static tsr_tensor *c_mul_mat_f16 (struct build *b)
{ return mul_mat_of (b, TSR_TYPE_F16); }
static tsr_tensor *c_mul_mat_bf16 (struct build *b)
{ return mul_mat_of (b, TSR_TYPE_BF16); }
static tsr_tensor *c_mul_mat_q8_0 (struct build *b)
{ return mul_mat_of (b, TSR_TYPE_Q8_0); }
static tsr_tensor *c_mul_mat_q4_0 (struct build *b)
{ return mul_mat_of (b, TSR_TYPE_Q4_0); }

static tsr_tensor *
c_mul_mat_transposed_b (struct build *b)
{
  tsr_tensor *bt = tsr_transpose (b->ctx, F32 (9, 40, 1, 1));
  return tsr_mul_mat (b->ctx, F32 (40, 11, 1, 1), bt);
}

static tsr_tensor *
c_sum_rows (struct build *b)
{
  return tsr_sum_rows (b->ctx, F32 (300, 5, 2, 1));
}

static tsr_tensor *
c_norm (struct build *b)
{
  return tsr_norm (b->ctx, input (b, TSR_TYPE_F32, 64, 6, 2, 1, 1, 3), 1e-5f);
}

static tsr_tensor *
c_rms_norm_transposed (struct build *b)
{
  return tsr_rms_norm (b->ctx, tsr_transpose (b->ctx, F32 (6, 48, 1, 1)),
                       1e-6f);
}

static tsr_tensor *
c_soft_max (struct build *b)
{
  return tsr_soft_max (b->ctx, input (b, TSR_TYPE_F32, 50, 6, 2, 1, -8, 8),
                       NULL, 1.0f);
}

static tsr_tensor *
c_soft_max_mask_f32 (struct build *b)
{
  tsr_tensor *a = F32 (16, 5, 4, 1);
  return tsr_soft_max (b->ctx, a, F32 (16, 8, 2, 1), 0.125f);
}

static tsr_tensor *
c_soft_max_causal_f16 (struct build *b)
{
  /* A causal mask: -inf above the diagonal, row 0 of the first batch
     all -inf (a fully masked row gives zeros).  */
  tsr_tensor *m = input (b, TSR_TYPE_F16, 16, 5, 1, 1, 0, 0);
  return tsr_soft_max (b->ctx, F32 (16, 5, 3, 1), m, 0.5f);
}

static tsr_tensor *
c_rope_normal (struct build *b)
{
  tsr_tensor *a = F32 (16, 3, 5, 1);
  tsr_tensor *pos = input (b, TSR_TYPE_I32, 5, 1, 1, 1, 0, 4096);
  return tsr_rope (b->ctx, a, pos, 12, TSR_ROPE_NORMAL, 10000.0f, 1.0f);
}

static tsr_tensor *
c_rope_neox (struct build *b)
{
  tsr_tensor *a = F32 (16, 3, 5, 2);
  tsr_tensor *pos = input (b, TSR_TYPE_I32, 5, 1, 1, 1, 0, 100);
  return tsr_rope (b->ctx, a, pos, 16, TSR_ROPE_NEOX, 500000.0f, 0.5f);
}

static tsr_tensor *
set_rows_of (struct build *b, tsr_type type)
{
  tsr_tensor *dst = input (b, type, 32, 9, 2, 1, -1, 1);
  tsr_tensor *src = F32 (32, 6, 2, 1);
  /* 6 indices in [0, 4): repeats, so "last one wins" is exercised.  */
  tsr_tensor *idx = input (b, TSR_TYPE_I32, 6, 2, 1, 1, 0, 4);
  return tsr_set_rows (b->ctx, dst, src, idx);
}

static tsr_tensor *c_set_rows_f32 (struct build *b)
{ return set_rows_of (b, TSR_TYPE_F32); }
static tsr_tensor *c_set_rows_f16 (struct build *b)
{ return set_rows_of (b, TSR_TYPE_F16); }

static const struct
{
  const char *name;
  build_fn build;
  double nmse;                  /* the most allowed; 0: 1e-7 */
} cases[] = {
#define C(name) { #name, c_##name, 0 }
#define Q(name) { #name, c_##name, 5e-4 }
  C (add), C (sub_row), C (mul_transposed), C (div), C (scale), C (silu),
  C (gelu), C (sqr), C (sqrt), C (exp), C (ln), C (neg), C (abs),
  C (sigmoid), C (tanh), C (relu), C (gelu_quick), C (gelu_erf),
  C (clamp),
  C (swiglu_split), C (geglu), C (cast_f16), C (cast_bf16_from_f16),
  C (cast_i32), C (cont_permuted), C (dup_f16_transposed),
  C (cpy_into_view), C (cast_q8_0), C (dup_q4_0), C (get_rows_f32),
  C (get_rows_f16), C (get_rows_bf16), C (get_rows_q8_0), C (get_rows_q4_0),
  C (mul_mat_f32), C (mul_mat_f16), C (mul_mat_bf16), Q (mul_mat_q8_0),
  Q (mul_mat_q4_0), C (mul_mat_transposed_b), C (sum_rows), C (norm),
  C (rms_norm_transposed), C (soft_max), C (soft_max_mask_f32),
  C (soft_max_causal_f16), C (rope_normal), C (rope_neox),
  C (set_rows_f32), C (set_rows_f16),
#undef C
#undef Q
};

/* Running a case.  */

static void
fill (const struct input *in, unsigned long long seed)
{
  tsr_tensor *t = in->t;
  int64_t n = tsr_nelements (t);
  float *f = malloc ((size_t) n * sizeof *f);
  void *raw = malloc (tsr_nbytes (t));

  tsr_test_seed (seed);
  if (t->type == TSR_TYPE_I32)
    for (int64_t i = 0; i < n; i++)
      ((int32_t *) raw)[i] = (int32_t) floorf (tsr_test_uniform (in->lo,
                                                                 in->hi));
  else
    {
      for (int64_t i = 0; i < n; i++)
        f[i] = tsr_test_uniform (in->lo, in->hi);
      if (in->lo == 0 && in->hi == 0)   /* a causal mask */
        for (int64_t i = 0; i < n; i++)
          {
            int64_t c = i % t->ne[0], r = i / t->ne[0];
            f[i] = c > r + 10 || r == 0 ? -INFINITY : 0.0f;
          }
      tsr_quantize_row (t->type, f, raw, n);
    }
  tsr_tensor_set (t, raw, 0, tsr_nbytes (t));
  free (f);
  free (raw);
}

/* The result as floats (the whole destination for cpy and set_rows,
   which write into a view of it).  */
static float *
result (tsr_tensor *out, int64_t *n)
{
  tsr_tensor *t = out;
  while (t->view_src)
    t = t->view_src;
  size_t bytes = tsr_nbytes (t);
  void *raw = malloc (bytes);
  float *f;

  *n = tsr_nelements (t);
  f = malloc ((size_t) *n * sizeof *f);
  tsr_tensor_get (t, raw, 0, bytes);
  if (t->type == TSR_TYPE_I32)
    for (int64_t i = 0; i < *n; i++)
      f[i] = (float) ((int32_t *) raw)[i];
  else
    tsr_dequantize_row (t->type, raw, f, *n);
  free (raw);
  return f;
}

/* Run case K on BE; its result (NULL on failure, with *WHY).  */
static float *
run (int k, tsr_backend *be, int64_t *n, int check_support,
     const char **why)
{
  struct build b = { tsr_context_new (true), 0, { { 0 } } };
  tsr_tensor *out = cases[k].build (&b);
  float *f = NULL;

  *why = "build failed";
  if (out)
    {
      tsr_graph *g = tsr_graph_new (b.ctx);
      tsr_graph_build (g, out);
      int claimed = 1;
      for (int i = 0; i < tsr_graph_n_nodes (g); i++)
        claimed &= tsr_backend_supports_op (be, tsr_graph_node (g, i));
      if (check_support)
        CHECK (claimed, "%s: supported by %s", cases[k].name,
               tsr_backend_name (be));
      tsr_buffer *buf = tsr_context_alloc_tensors (b.ctx,
                                                   tsr_backend_buffer_type
                                                   (be));
      *why = tsr_last_error ();
      if (buf)
        {
          for (int i = 0; i < b.n; i++)
            fill (&b.in[i], 1000 + 17 * k + i);
          if (tsr_backend_graph_compute (be, g) == TSR_OK)
            f = result (out, n);
          else
            *why = tsr_last_error ();
          tsr_buffer_free (buf);
        }
    }
  tsr_context_free (b.ctx);
  return f;
}

static double
nmse (const float *got, const float *want, int64_t n, int64_t *bad)
{
  double err = 0, ref = 0;

  *bad = -1;
  for (int64_t i = 0; i < n; i++)
    {
      if (isnan (want[i]) || isinf (want[i]))
        {
          if (!(isnan (want[i]) ? isnan (got[i]) : got[i] == want[i]))
            *bad = i;
          continue;
        }
      double d = (double) got[i] - want[i];
      if (!(fabs (d) <= 1e-3 + 1e-3 * fabs (want[i])) && *bad < 0)
        *bad = i;
      err += d * d;
      ref += (double) want[i] * want[i];
    }
  return ref > 0 ? err / ref : err;
}

/* Index errors: get_rows reports the bad index; set_rows writes
   nothing.  */
static void
check_index_errors (tsr_backend *be)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 8, 4);
  tsr_tensor *rows = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 3);
  tsr_tensor *src = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 8, 3);
  tsr_tensor *gr = tsr_get_rows (ctx, a, rows);
  tsr_tensor *sr = tsr_set_rows (ctx, a, src, rows);
  tsr_graph *g1 = tsr_graph_new (ctx), *g2 = tsr_graph_new (ctx);
  tsr_graph_build (g1, gr);
  tsr_graph_build (g2, sr);
  tsr_buffer *buf = tsr_context_alloc_tensors (ctx,
                                               tsr_backend_buffer_type (be));
  float av[32], sv[24], out[32];
  int32_t idx[3] = { 1, 4, 0 };
  for (int i = 0; i < 32; i++)
    av[i] = (float) i;
  for (int i = 0; i < 24; i++)
    sv[i] = -1.0f;
  tsr_tensor_set (a, av, 0, sizeof av);
  tsr_tensor_set (src, sv, 0, sizeof sv);
  tsr_tensor_set (rows, idx, 0, sizeof idx);
  CHECK (tsr_backend_graph_compute (be, g1) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "index 4"),
         "get_rows: an index out of range is an error: %s",
         tsr_last_error ());
  CHECK (tsr_backend_graph_compute (be, g2) == TSR_ERR_INVALID_ARG,
         "set_rows: an index out of range is an error: %s",
         tsr_last_error ());
  tsr_tensor_get (a, out, 0, sizeof out);
  CHECK (memcmp (out, av, sizeof av) == 0, "set_rows: nothing written "
         "after a bad index");
  idx[1] = 3;
  tsr_tensor_set (rows, idx, 0, sizeof idx);
  CHECK (tsr_backend_graph_compute (be, g1) == TSR_OK
         && tsr_backend_graph_compute (be, g2) == TSR_OK,
         "good indices compute again after an error");
  tsr_buffer_free (buf);
  tsr_context_free (ctx);

  /* Two nodes read indices; only the second has a bad one: the error
     names that node, not the first that reads indices.  */
  ctx = tsr_context_new (true);
  a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 8, 4);
  tsr_tensor *ok_rows = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 2);
  tsr_tensor *bad_rows = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 2);
  tsr_tensor *first = tsr_set_name (tsr_get_rows (ctx, a, ok_rows), "first");
  tsr_tensor *second = tsr_set_name (tsr_get_rows (ctx, a, bad_rows),
                                     "second");
  tsr_graph *g3 = tsr_graph_new (ctx);
  tsr_graph_build (g3, tsr_add (ctx, first, second));
  buf = tsr_context_alloc_tensors (ctx, tsr_backend_buffer_type (be));
  int32_t okv[2] = { 0, 3 }, badv[2] = { 2, 7 };
  tsr_tensor_set (a, av, 0, sizeof av);
  tsr_tensor_set (ok_rows, okv, 0, sizeof okv);
  tsr_tensor_set (bad_rows, badv, 0, sizeof badv);
  CHECK (tsr_backend_graph_compute (be, g3) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "'second'")
         && strstr (tsr_last_error (), "index 7"),
         "the bad index is blamed on the node that read it: %s",
         tsr_last_error ());
  tsr_buffer_free (buf);
  tsr_context_free (ctx);
}

/* Operations and operands the kernels do not handle.  */
static void
check_refusals (tsr_device *dev)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 64, 4);
  tsr_tensor *q = tsr_new_tensor_4d (ctx, TSR_TYPE_F32, 320, 4, 2, 1);
  tsr_tensor *k = tsr_new_tensor_4d (ctx, TSR_TYPE_F16, 320, 8, 2, 1);

  tsr_tensor *wide = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 256, 4);
  CHECK (!tsr_device_supports_op (dev, tsr_cast (ctx, wide, TSR_TYPE_Q4_K))
         && !tsr_device_supports_op (dev, tsr_cast (ctx, wide,
                                                    TSR_TYPE_IQ4_XS))
         && tsr_device_supports_op (dev, tsr_cast (ctx, a, TSR_TYPE_Q5_1)),
         "quantizing copies into super-block types are left to the CPU, "
         "into 32-element blocks not");
  CHECK (!tsr_device_supports_op (dev, tsr_flash_attn_ext (ctx, q, k, k,
                                                           NULL, 0.125f)),
         "flash_attn_ext with values of more than 256 elements is left to "
         "the CPU");
  CHECK (!tsr_device_supports_op (dev, tsr_top_k (ctx, tsr_new_tensor_2d
                                                     (ctx, TSR_TYPE_F32, 100,
                                                      2), 65)),
         "top_k of more than 64 elements is left to the CPU");
  tsr_context_free (ctx);
}

int
main (void)
{
  tsr_device *dev = ocl_test_device ();
  if (!dev)
    return TSR_TEST_EXIT ();
  tsr_backend *ocl = tsr_device_init (dev, NULL);
  tsr_backend *cpu = tsr_backend_init_by_type (TSR_DEVICE_CPU, "threads=1");
  CHECK (ocl && cpu, "OpenCL and CPU backends: %s",
         ocl && cpu ? "ok" : tsr_last_error ());
  if (!ocl || !cpu)
    return TSR_TEST_EXIT ();

  for (int k = 0; k < (int) (sizeof cases / sizeof cases[0]); k++)
    {
      int64_t n_ref = 0, n = 0, bad;
      const char *why;
      float *ref = run (k, cpu, &n_ref, 0, &why);
      if (!ref)
        {
          CHECK (0, "%s: cpu reference: %s", cases[k].name, why);
          continue;
        }
      float *got = run (k, ocl, &n, 1, &why);
      if (!got)
        CHECK (0, "%s: computes on OpenCL: %s", cases[k].name, why);
      else
        {
          double e = nmse (got, ref, n, &bad), limit = cases[k].nmse;
          /* Elements of a looser case may differ by more than 1e-3.  */
          if (limit > 0 && bad >= 0 && isfinite (ref[bad]))
            bad = -1;
          CHECK (n == n_ref && e <= (limit > 0 ? limit : 1e-7) && bad < 0,
                 "%s: OpenCL equals the CPU (nmse %.3g%s)", cases[k].name, e,
                 bad >= 0 ? ", an element differs" : "");
          if (bad >= 0)
            printf ("  element %lld: %.9g, cpu %.9g\n", (long long) bad,
                    got[bad], ref[bad]);
        }
      free (ref);
      free (got);
    }
  check_index_errors (ocl);
  check_refusals (dev);
  tsr_backend_free (ocl);
  tsr_backend_free (cpu);
  return TSR_TEST_EXIT ();
}
