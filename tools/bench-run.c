/* bench-run.c - the benchmarks of tessera-bench and timing one case.
 *
 * Owns: each benchmark's graph and its count of floating-point
 * operations and bytes, placing a case's tensors with the graph
 * allocator on the backend's buffer type, filling the inputs once with
 * deterministic random numbers (quantized for quantized types), and the
 * timing loop.  It does not print: bench-report.c does.  */
#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Inputs of one build of a case's graph, and builds at most (copies
   of the weights, bench_run).  */
#define BUILD_INPUTS 4
#define MAX_INPUTS (BUILD_INPUTS * BENCH_MAX_COPIES)
/* Automatic warm-up: at least one run, and this share of the timed
   runs' minimum time.  Automatic timed runs: at least BENCH_MIN_RUNS,
   at most MAX_RUNS.  */
#define WARMUP_SHARE 0.1
#define MAX_WARMUP 100
#define MAX_RUNS 1000

enum fill
{
  FILL_UNIFORM,   /* floats in [-1, 1), converted to the tensor's type */
  FILL_EXPERTS,   /* i32 expert ids: element i is i % BENCH_EXPERTS */
  FILL_ROWS       /* i32 row indices: element i is 7919 i % index_range */
};

struct bench_build
{
  tsr_context *ctx;
  int n_inputs;
  tsr_tensor *inputs[MAX_INPUTS];
  enum fill fills[MAX_INPUTS];
  int64_t index_range;          /* FILL_ROWS: rows to index */
  int first_input[BENCH_MAX_COPIES];    /* of each build: its weights */
};

static tsr_tensor *
input (struct bench_build *b, enum fill fill, tsr_type type, int64_t ne0,
       int64_t ne1, int64_t ne2)
{
  tsr_tensor *t = tsr_new_tensor_3d (b->ctx, type, ne0, ne1, ne2);
  if (!t || b->n_inputs == MAX_INPUTS)
    return NULL;
  tsr_set_input (t);
  b->inputs[b->n_inputs] = t;
  b->fills[b->n_inputs++] = fill;
  return t;
}

static tsr_tensor *
uniform (struct bench_build *b, tsr_type type, int64_t ne0, int64_t ne1,
         int64_t ne2)
{
  return input (b, FILL_UNIFORM, type, ne0, ne1, ne2);
}

/* The benchmarks.  Weights (a, as, K and V) are counted once per run
   however many rows of the other operand use them.  */

/* Bytes of f32 elements: products of sizes in double (a shape of
   2^32 x 2^32 overflows int64_t).  */
#define F32_BYTES(n) (4.0 * (double) (n))
#define F32_BYTES2(a, b) (4.0 * (double) (a) * (double) (b))

static double
weight_bytes (tsr_type type, int64_t m, int64_t k)
{
  return (double) tsr_row_size (type, k) * (double) m;
}

/* mul_mat: weights a [k, m] of TYPE times f32 b [k, n].  */
static tsr_tensor *
build_mul_mat (struct bench_build *b, tsr_type type, int64_t m, int64_t k,
               int64_t n)
{
  tsr_tensor *a = uniform (b, type, k, m, 1);
  tsr_tensor *x = uniform (b, TSR_TYPE_F32, k, n, 1);
  return tsr_mul_mat (b->ctx, a, x);
}

static struct bench_cost
cost_mul_mat (tsr_type type, int64_t m, int64_t k, int64_t n)
{
  double w = weight_bytes (type, m, k);
  return (struct bench_cost) {
    .flops = 2.0 * (double) m * (double) k * (double) n,
    .bytes = w + F32_BYTES2 (k, n) + F32_BYTES2 (m, n),
    .weight_bytes = n <= 8 ? w : 0
  };
}

/* mul_mat_id: BENCH_EXPERTS experts [k, m] of TYPE, n tokens of
   BENCH_EXPERTS_USED f32 rows [k] each; token t uses the experts
   (t * used + e) % experts, so the experts are used evenly and each
   token's are distinct.  */
static tsr_tensor *
build_mul_mat_id (struct bench_build *b, tsr_type type, int64_t m,
                  int64_t k, int64_t n)
{
  tsr_tensor *as = uniform (b, type, k, m, BENCH_EXPERTS);
  tsr_tensor *x = uniform (b, TSR_TYPE_F32, k, BENCH_EXPERTS_USED, n);
  tsr_tensor *ids = input (b, FILL_EXPERTS, TSR_TYPE_I32, BENCH_EXPERTS_USED,
                           n, 1);
  return tsr_mul_mat_id (b->ctx, as, x, ids);
}

static struct bench_cost
cost_mul_mat_id (tsr_type type, int64_t m, int64_t k, int64_t n)
{
  double rows = (double) BENCH_EXPERTS_USED * (double) n;
  double experts = rows < BENCH_EXPERTS ? rows : BENCH_EXPERTS;
  double w = weight_bytes (type, m, k) * (double) experts;
  return (struct bench_cost) {
    .flops = 2.0 * (double) m * (double) k * (double) rows,
    .bytes = w + F32_BYTES2 (k, rows) + F32_BYTES (rows)
             + F32_BYTES2 (m, rows),
    .weight_bytes = n <= 8 ? w : 0
  };
}

/* get_rows: n rows, spread over the table, of weights a [k, m] of
   TYPE, converted to f32.  */
static tsr_tensor *
build_get_rows (struct bench_build *b, tsr_type type, int64_t m, int64_t k,
                int64_t n)
{
  tsr_tensor *a = uniform (b, type, k, m, 1);
  tsr_tensor *rows = input (b, FILL_ROWS, TSR_TYPE_I32, n, 1, 1);
  b->index_range = m;
  return tsr_get_rows (b->ctx, a, rows);
}

static struct bench_cost
cost_get_rows (tsr_type type, int64_t m, int64_t k, int64_t n)
{
  (void) m;
  return (struct bench_cost) {
    .bytes = weight_bytes (type, n, k) + F32_BYTES (n) + F32_BYTES2 (k, n)
  };
}

/* flash_attn_ext: m keys and values of head size k and TYPE,
   BENCH_KV_HEADS of them, read by n queries of BENCH_HEADS f32 heads;
   no mask.  Two products per key and query: q . k and p v.  */
static tsr_tensor *
build_flash_attn (struct bench_build *b, tsr_type type, int64_t m,
                  int64_t k, int64_t n)
{
  tsr_tensor *q = uniform (b, TSR_TYPE_F32, k, n, BENCH_HEADS);
  tsr_tensor *kt = uniform (b, type, k, m, BENCH_KV_HEADS);
  tsr_tensor *v = uniform (b, type, k, m, BENCH_KV_HEADS);
  return tsr_flash_attn_ext (b->ctx, q, kt, v, NULL,
                             1.0f / sqrtf ((float) k));
}

static struct bench_cost
cost_flash_attn (tsr_type type, int64_t m, int64_t k, int64_t n)
{
  return (struct bench_cost) {
    .flops = 4.0 * BENCH_HEADS * (double) n * (double) m * (double) k,
    .bytes = 2 * F32_BYTES2 (k, (double) n * BENCH_HEADS)
             + 2 * weight_bytes (type, m * BENCH_KV_HEADS, k)
  };
}

/* Row-wise and element-wise ops on f32 [m, n].  */
static tsr_tensor *
build_soft_max (struct bench_build *b, tsr_type type, int64_t m, int64_t k,
                int64_t n)
{
  (void) k;
  return tsr_soft_max (b->ctx, uniform (b, type, m, n, 1), NULL, 1.0f);
}

static tsr_tensor *
build_rms_norm (struct bench_build *b, tsr_type type, int64_t m, int64_t k,
                int64_t n)
{
  (void) k;
  return tsr_rms_norm (b->ctx, uniform (b, type, m, n, 1), 1e-6f);
}

static struct bench_cost
cost_read_write (tsr_type type, int64_t m, int64_t k, int64_t n)
{
  (void) type, (void) k;
  return (struct bench_cost) { .bytes = 2 * F32_BYTES2 (m, n) };
}

static tsr_tensor *
build_add (struct bench_build *b, tsr_type type, int64_t m, int64_t k,
           int64_t n)
{
  (void) k;
  tsr_tensor *x = uniform (b, type, m, n, 1);
  return tsr_add (b->ctx, x, uniform (b, type, m, n, 1));
}

static struct bench_cost
cost_add (tsr_type type, int64_t m, int64_t k, int64_t n)
{
  (void) type, (void) k;
  return (struct bench_cost) { .bytes = 3 * F32_BYTES2 (m, n) };
}

/* BENCH_CHAIN adds in a row, x = x + y: a graph of small nodes, whose
   time shows a backend's cost per node (waking threads...).  */
static tsr_tensor *
build_add_chain (struct bench_build *b, tsr_type type, int64_t m, int64_t k,
                 int64_t n)
{
  (void) k;
  tsr_tensor *x = uniform (b, type, m, n, 1);
  tsr_tensor *y = uniform (b, type, m, n, 1);
  for (int i = 0; i < BENCH_CHAIN; i++)
    x = tsr_add (b->ctx, x, y);
  return x;
}

static struct bench_cost
cost_add_chain (tsr_type type, int64_t m, int64_t k, int64_t n)
{
  struct bench_cost c = cost_add (type, m, k, n);
  c.bytes *= BENCH_CHAIN;
  return c;
}

#define T(x) (1u << TSR_TYPE_##x)
#define WEIGHT_TYPES (T (F32) | T (F16) | T (BF16) | T (Q8_0) | T (Q4_0) \
                      | KQUANT_TYPES | Q32_TYPES)
#define KQUANT_TYPES (T (Q2_K) | T (Q3_K) | T (Q4_K) | T (Q5_K) | T (Q6_K) \
                      | T (IQ4_XS))
#define Q32_TYPES (T (Q4_1) | T (Q5_0) | T (Q5_1) | T (IQ4_NL) | T (MXFP4))

const struct bench_kind bench_kinds[] = {
  { "mul_mat", TSR_OP_MUL_MAT, 1, WEIGHT_TYPES, true, build_mul_mat,
    cost_mul_mat, true },
  { "mul_mat_id", TSR_OP_MUL_MAT_ID, 1, WEIGHT_TYPES, true,
    build_mul_mat_id, cost_mul_mat_id, true },
  { "get_rows", TSR_OP_GET_ROWS, 1, WEIGHT_TYPES, true, build_get_rows,
    cost_get_rows, false },
  { "flash_attn_ext", TSR_OP_FLASH_ATTN_EXT, 1, T (F32) | T (F16), true,
    build_flash_attn, cost_flash_attn, false },
  { "soft_max", TSR_OP_SOFT_MAX, 1, T (F32), false, build_soft_max,
    cost_read_write, false },
  { "rms_norm", TSR_OP_RMS_NORM, 1, T (F32), false, build_rms_norm,
    cost_read_write, false },
  { "add", TSR_OP_ADD, 1, T (F32), false, build_add, cost_add,
    false },
  { "add", TSR_OP_ADD, BENCH_CHAIN, T (F32), false, build_add_chain,
    cost_add_chain, false },
};
const size_t bench_n_kinds = sizeof bench_kinds / sizeof *bench_kinds;

#undef T
#undef WEIGHT_TYPES
#undef KQUANT_TYPES
#undef Q32_TYPES

const char *
bench_case_name (char *buf, size_t n, const struct bench_case *c)
{
  char nodes[24] = "";
  if (c->kind->nodes > 1)
    snprintf (nodes, sizeof nodes, " x%d", c->kind->nodes);
  if (c->kind->uses_k)
    snprintf (buf, n, "%s%s %s %" PRId64 ",%" PRId64 ",%" PRId64,
              c->kind->name, nodes, tsr_type_name (c->type), c->m, c->k,
              c->n);
  else
    snprintf (buf, n, "%s%s %s %" PRId64 ",%" PRId64, c->kind->name, nodes,
              tsr_type_name (c->type), c->m, c->n);
  return buf;
}

/* Running a case.  */

static void
fail (struct bench_result *r, enum bench_status status, const char *fmt, ...)
{
  va_list ap;
  if (r->status != BENCH_OK)
    return;                     /* keep the first reason */
  r->status = status;
  va_start (ap, fmt);
  tt_vmessage (r->msg, sizeof r->msg, fmt, ap);
  va_end (ap);
}

/* Fill input I of B, a row block at a time so that a large weight
   needs little memory beside it.  Quantized weights repeat the first
   block's rows: the reference quantizers' scale searches take about a
   microsecond per element, minutes for a large matrix, and no kernel's
   speed depends on the values.  */
static int
fill_input (const struct bench_build *b, int i, uint64_t seed,
            const char *name)
{
  tsr_tensor *t = b->inputs[i];
  int64_t ne0 = t->ne[0], rows = tsr_nrows (t);
  int64_t block = ne0 >= (1 << 20) ? 1 : (1 << 20) / ne0;
  size_t row_bytes = tsr_row_size (t->type, ne0);
  float *f = malloc ((size_t) (block * ne0) * sizeof *f);
  void *data = malloc ((size_t) block * row_bytes);
  struct tt_rng rng;
  int st = TSR_OK;

  tt_rng_seed (&rng, seed, name, i);
  if (!f || !data)
    st = TSR_ERR_NO_MEMORY;
  for (int64_t r0 = 0; st == TSR_OK && r0 < rows; r0 += block)
    {
      int64_t nr = rows - r0 < block ? rows - r0 : block;
      int64_t count = nr * ne0;
      if (b->fills[i] == FILL_EXPERTS)
        for (int64_t j = 0; j < count; j++)
          ((int32_t *) data)[j] = (int32_t) ((r0 * ne0 + j) % BENCH_EXPERTS);
      else if (b->fills[i] == FILL_ROWS)
        for (int64_t j = 0; j < count; j++)
          ((int32_t *) data)[j] = (int32_t) ((r0 * ne0 + j) * 7919
                                             % b->index_range);
      else if (r0 > 0 && tsr_type_traits (t->type)->is_quantized)
        ;   /* the first block's rows again: see above */
      else
        {
          for (int64_t j = 0; j < count; j++)
            f[j] = (float) (2.0 * tt_rng_uniform (&rng) - 1.0);
          st = tt_from_float (t->type, f, data, count);
        }
      if (st == TSR_OK)
        st = tsr_tensor_set (t, data, (size_t) r0 * row_bytes,
                             (size_t) nr * row_bytes);
    }
  free (f);
  free (data);
  return st;
}

/* One timed compute of G, in microseconds, or a negative number.  */
static double
timed_compute (tsr_backend *be, tsr_graph *g)
{
  double t0 = tt_now_us ();
  if (tsr_backend_graph_compute (be, g) != TSR_OK
      || tsr_backend_synchronize (be) != TSR_OK)
    return -1;
  return tt_now_us () - t0;
}

static void
time_graph (tsr_backend *be, tsr_graph *g, const struct bench_timing *t,
            struct bench_result *r)
{
  int cap = t->repeat > 0 ? t->repeat : MAX_RUNS, n = 0;
  double *us = malloc ((size_t) cap * sizeof *us), total = 0, warm = 0;

  if (!us)
    {
      fail (r, BENCH_ERROR, "out of memory");
      return;
    }
  /* Warm-up: caches, page faults, threads, a backend's first-run
     preparation.  */
  for (int i = 0; t->warmup < 0 ? i == 0 || (warm < t->min_us * WARMUP_SHARE
                                             && i < MAX_WARMUP)
                                : i < t->warmup; i++)
    {
      double x = timed_compute (be, g);
      if (x < 0)
        goto failed;
      warm += x;
    }
  while (n < cap
         && (t->repeat > 0 || n < BENCH_MIN_RUNS || total < t->min_us))
    {
      double x = timed_compute (be, g);
      if (x < 0)
        goto failed;
      us[n++] = x;
      total += x;
    }
  r->runs = n;
  r->us_median = tt_median (us, n);
  r->us_min = us[0];
  /* A clock too coarse for the run must not divide by zero.  */
  if (r->us_min <= 0)
    r->us_min = 1e-3;
  if (r->us_median <= 0)
    r->us_median = 1e-3;
  free (us);
  return;
failed:
  fail (r, BENCH_ERROR, "compute failed: %s", tsr_last_error ());
  free (us);
}

/* Check that BE runs every node of G.  */
static bool
supported (tsr_backend *be, tsr_graph *g, struct bench_result *r)
{
  for (int i = 0; i < tsr_graph_n_nodes (g); i++)
    {
      tsr_tensor *node = tsr_graph_node (g, i);
      if (!tsr_backend_supports_op (be, node))
        {
          fail (r, BENCH_UNSUPPORTED, "not supported by device (%s)",
                tsr_op_name (node->op));
          return false;
        }
    }
  return true;
}

/* --repack: the weights W in a buffer of the first extra buffer type of
   BE's device; NULL (R failed) when it has none.  */
static tsr_buffer *
weights_extra (tsr_backend *be, tsr_tensor *w, struct bench_result *r)
{
  tsr_buffer_type *xb = NULL;
  tsr_buffer *buf = NULL;
  if (tsr_device_extra_buffer_types (tsr_backend_device (be), &xb, 1) == 0)
    {
      fail (r, BENCH_UNSUPPORTED, "the device has no extra buffer type");
      return NULL;
    }
  buf = tsr_buffer_type_alloc (xb, tsr_buffer_type_alloc_size (xb, w));
  if (!buf || tsr_buffer_place_tensor (buf, w, 0) != TSR_OK)
    {
      fail (r, BENCH_ERROR, "cannot place the weights in %s: %s",
            tsr_buffer_type_name (xb), tsr_last_error ());
      if (buf)
        tsr_buffer_free (buf);
      return NULL;
    }
  return buf;
}

/* Copies of the weights W of a cold case that make BENCH_COLD_MIB of
   them, 1 to BENCH_MAX_COPIES.  */
static int
cold_copies (const tsr_tensor *w)
{
  double want = BENCH_COLD_MIB * 1048576.0, bytes = (double) tsr_nbytes (w);
  if (bytes <= 0)
    return 1;
  double n = ceil (want / bytes);
  return n < 1 ? 1 : n > BENCH_MAX_COPIES ? BENCH_MAX_COPIES : (int) n;
}

void
bench_run (const struct bench_case *c, tsr_backend *be,
           const struct bench_timing *t, struct bench_result *r)
{
  struct bench_build b = { 0 };
  tsr_gallocr *ga = NULL;
  tsr_buffer *wbuf[BENCH_MAX_COPIES] = { NULL };
  tsr_tensor *results[BENCH_MAX_COPIES] = { NULL };
  tsr_graph *g = NULL;
  int copies = 1;               /* builds of the graph */
  bool built;
  char name[160];

  memset (r, 0, sizeof *r);
  r->cost = c->kind->cost (c->type, c->m, c->k, c->n);
  bench_case_name (name, sizeof name, c);
  b.ctx = tsr_context_new (true);
  if (!b.ctx)
    {
      fail (r, BENCH_ERROR, "out of memory");
      return;
    }
  tsr_clear_error ();
  /* The first build; then the copies (each with its own inputs).  */
  results[0] = c->kind->build (&b, c->type, c->m, c->k, c->n);
  built = results[0] != NULL;
  if (built && c->kind->cold && !t->hot_weights)
    {
      int want = cold_copies (b.inputs[0]);
      while (built && copies < want)
        {
          b.first_input[copies] = b.n_inputs;
          results[copies] = c->kind->build (&b, c->type, c->m, c->k, c->n);
          built = results[copies++] != NULL;
        }
    }
  r->copies = copies;
  if (built)
    g = tsr_graph_new (b.ctx);
  for (int j = 0; g && j < copies; j++)
    if (tsr_graph_build (g, results[j]) != TSR_OK)
      g = NULL;
  if (!g)
    fail (r, BENCH_ERROR, "cannot build the graph: %s", tsr_last_error ());
  if (r->status == BENCH_OK && t->repack
      && strcmp (c->kind->name, "mul_mat") == 0)
    for (int j = 0; j < copies && r->status == BENCH_OK; j++)
      wbuf[j] = weights_extra (be, b.inputs[b.first_input[j]], r);
  if (r->status == BENCH_OK && supported (be, g, r))
    {
      ga = tsr_gallocr_new (tsr_backend_buffer_type (be));
      if (!ga || tsr_gallocr_alloc_graph (ga, g) != TSR_OK)
        fail (r, BENCH_ERROR, "cannot allocate the tensors (%s): %s",
              tsr_buffer_type_name (tsr_backend_buffer_type (be)),
              tsr_last_error ());
      for (int i = 0; i < b.n_inputs && r->status == BENCH_OK; i++)
        if (fill_input (&b, i, t->seed, name) != TSR_OK)
          fail (r, BENCH_ERROR, "cannot fill input %d: %s", i,
                tsr_last_error ());
      if (r->status == BENCH_OK)
        time_graph (be, g, t, r);
      /* A run computes every copy: the time of one product.  */
      r->us_median /= copies;
      r->us_min /= copies;
    }
  tsr_gallocr_free (ga);
  for (int j = 0; j < copies; j++)
    if (wbuf[j])
      tsr_buffer_free (wbuf[j]);
  tsr_context_free (b.ctx);
}
