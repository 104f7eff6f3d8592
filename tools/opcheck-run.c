/* opcheck-run.c - run one case on one backend, and compare two runs.
 *
 * Owns: the random inputs, the guarded allocation (every tensor of the
 * case in one buffer with guard regions between them), computing,
 * reading the result back, the comparison and the table of error
 * thresholds.  Uses only Tessera's public API, so it works on any
 * device a module offers.  It does not decide what to print: the modes
 * in tessera-opcheck.c do.  */
#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "opcheck.h"

/* Error thresholds.  The default is tight: backends computing the
   same formula in another order or with another vector width stay far
   below 1e-7.  Looser entries are for operands a backend may legally
   compute with less precision.  */

#define OC_DEFAULT_NMSE 1e-7
#define OC_ANY_TYPE TSR_TYPE_COUNT

static const struct
{
  tsr_op op;
  int operand;          /* index into oc_params.type */
  const char *role;     /* that operand, for the table */
  tsr_type type;        /* its type, or OC_ANY_TYPE */
  double max_nmse;
  const char *why;
} threshold_table[] = {
#define QUANTIZED(op, t)                                                  \
  { op, 0, "weights", TSR_TYPE_##t, 5e-4,                                 \
    "activations may be quantized too" }
#define WEIGHTS(op)                                                       \
  { op, 0, "weights", TSR_TYPE_F16, 1e-6,                                 \
    "activations may be rounded to f16" },                                \
  { op, 0, "weights", TSR_TYPE_BF16, 1e-5,                                \
    "activations may be rounded to bf16" },                               \
  QUANTIZED (op, Q8_0), QUANTIZED (op, Q4_0), QUANTIZED (op, Q4_1),     \
  QUANTIZED (op, Q5_0), QUANTIZED (op, Q5_1), QUANTIZED (op, Q2_K),       \
  QUANTIZED (op, Q3_K), QUANTIZED (op, Q4_K), QUANTIZED (op, Q5_K),       \
  QUANTIZED (op, Q6_K), QUANTIZED (op, IQ4_NL), QUANTIZED (op, IQ4_XS),   \
  QUANTIZED (op, MXFP4)
#define QUANTIZING(op, operand)                                           \
  { op, operand, "destination", TSR_TYPE_Q8_0, 1e-4,                      \
    "ties may round a value one step off" },                         \
  { op, operand, "destination", TSR_TYPE_Q4_0, 1e-4,                      \
    "ties may round a value one step off" },                         \
  { op, operand, "destination", TSR_TYPE_Q4_1, 1e-4,                      \
    "ties may round a value one step off" },                         \
  { op, operand, "destination", TSR_TYPE_Q5_0, 1e-4,                      \
    "ties may round a value one step off" },                         \
  { op, operand, "destination", TSR_TYPE_Q5_1, 1e-4,                      \
    "ties may round a value one step off" },                         \
  { op, operand, "destination", TSR_TYPE_IQ4_NL, 1e-4,                    \
    "ties may round a value one step off" },                         \
  { op, operand, "destination", TSR_TYPE_MXFP4, 1e-4,                     \
    "ties may round a value one step off" }
  WEIGHTS (TSR_OP_MUL_MAT),
  WEIGHTS (TSR_OP_MUL_MAT_ID),
  QUANTIZING (TSR_OP_CPY, 1),
  QUANTIZING (TSR_OP_SET_ROWS, 0),
#undef WEIGHTS
#undef QUANTIZED
#undef QUANTIZING
  { TSR_OP_FLASH_ATTN_EXT, 1, "K and V", TSR_TYPE_F32, 1e-6,
    "online softmax, in another order" },
  { TSR_OP_FLASH_ATTN_EXT, 1, "K and V", TSR_TYPE_F16, 5e-4,
    "products may be computed in f16" },
};

double
oc_threshold (const struct oc_case *c)
{
  if (c->max_nmse > 0)
    return c->max_nmse;
  for (size_t i = 0; i < OC_N (threshold_table); i++)
    if (threshold_table[i].op == c->op
        && (threshold_table[i].type == OC_ANY_TYPE
            || threshold_table[i].type
               == c->p.type[threshold_table[i].operand]))
      return threshold_table[i].max_nmse;
  return OC_DEFAULT_NMSE;
}

void
oc_print_thresholds (FILE *f)
{
  fprintf (f, "  %-15s %-17s %-6s %s\n", "op", "operand", "NMSE", "why");
  fprintf (f, "  %-15s %-17s %-6.0e %s\n", "(any other)", "", OC_DEFAULT_NMSE,
           "any order or vector width");
  for (size_t i = 0; i < OC_N (threshold_table); i++)
    {
      char what[40];
      snprintf (what, sizeof what, "%s %s", threshold_table[i].role,
                threshold_table[i].type == OC_ANY_TYPE
                ? "any" : tsr_type_name (threshold_table[i].type));
      fprintf (f, "  %-15s %-17s %-6.0e %s\n",
               tsr_op_name (threshold_table[i].op), what,
               threshold_table[i].max_nmse, threshold_table[i].why);
    }
  fprintf (f, "  i32 results are compared exactly; NaN and infinities "
           "must match in place\n  and sign.\n");
}

/* Output.  */

static void
fail (struct oc_output *out, enum oc_status status, const char *fmt, ...)
{
  va_list ap;
  if (out->status != OC_OK)
    return;                     /* keep the first reason */
  out->status = status;
  va_start (ap, fmt);
  /* One line per case, whatever a backend's message holds.  */
  tt_vmessage (out->msg, sizeof out->msg, fmt, ap);
  va_end (ap);
}

void
oc_output_free (struct oc_output *out)
{
  free (out->f);
  free (out->i);
  out->f = NULL;
  out->i = NULL;
}

static tsr_tensor *
root_of (tsr_tensor *t)
{
  return t->view_src ? t->view_src : t;
}

static const char *
label (const tsr_tensor *t)
{
  return t->name[0] ? t->name : "(unnamed)";
}

/* Inputs.  */

static float
random_value (struct oc_fill fill, struct tt_rng *rng)
{
  static const float special[] = { NAN, INFINITY, -INFINITY, 0.0f };
  if (fill.p_special > 0 && tt_rng_uniform (rng) < fill.p_special)
    return special[tt_rng_next (rng) % 4];
  if (fill.p_neginf > 0 && tt_rng_uniform (rng) < fill.p_neginf)
    return -INFINITY;
  return (float) (fill.lo + tt_rng_uniform (rng) * (fill.hi - fill.lo));
}

/* N integers in [lo, hi), rows of ROW; with fill.unique, distinct
   within each row (a partial shuffle of the range).  */
static void
fill_i32 (int32_t *d, int64_t row, int64_t n, struct oc_fill fill,
          struct tt_rng *rng)
{
  int64_t range = (int64_t) (fill.hi - fill.lo);
  if (!fill.unique || range < row)
    {
      for (int64_t i = 0; i < n; i++)
        d[i] = (int32_t) floor (fill.lo + tt_rng_uniform (rng)
                                * (fill.hi - fill.lo));
      return;
    }
  int32_t *pool = malloc ((size_t) range * sizeof *pool);
  if (!pool)
    return;
  for (int64_t r = 0; r < n; r += row)
    {
      for (int64_t i = 0; i < range; i++)
        pool[i] = (int32_t) (fill.lo + (double) i);
      for (int64_t i = 0; i < row; i++)
        {
          int64_t j = i + (int64_t) (tt_rng_next (rng)
                                     % (uint64_t) (range - i));
          int32_t tmp = pool[i];
          pool[i] = pool[j];
          pool[j] = tmp;
          d[r + i] = pool[i];
        }
    }
  free (pool);
}

/* Fill root input T from FILL, with stream STREAM of the case's
   numbers.  */
static int
fill_input (tsr_tensor *t, struct oc_fill fill, uint64_t seed,
            const char *name, int stream)
{
  int64_t n = tsr_nelements (t);
  size_t bytes = tsr_nbytes (t);
  struct tt_rng rng;
  float *f = malloc ((size_t) n * sizeof *f);
  void *data = malloc (bytes);
  int st = TSR_ERR_NO_MEMORY;

  tt_rng_seed (&rng, seed, name, stream);
  if (!f || !data)
    goto done;
  if (t->type == TSR_TYPE_I32)
    fill_i32 (data, t->ne[0], n, fill, &rng);
  else
    {
      for (int64_t i = 0; i < n; i++)
        f[i] = random_value (fill, &rng);
      st = tt_from_float (t->type, f, data, n);
      if (st != TSR_OK)
        goto done;
    }
  st = tsr_tensor_set (t, data, 0, bytes);
done:
  free (f);
  free (data);
  return st;
}

/* Guarded allocation: one buffer of the backend's buffer type,
     [guard 0] tensor 0 [guard 1] tensor 1 ... tensor n-1 [guard n]
   each guard at least OC_GUARD bytes (rounded to the alignment) of a
   known pattern, written and read through i32 tensors placed on
   them.  */

#define OC_GUARD 64

struct guarded
{
  tsr_buffer *buf;
  tsr_context *scratch;         /* the guard tensors */
  int n_roots;
  tsr_tensor **roots;           /* tensors with memory of their own */
  tsr_tensor **guards;          /* n_roots + 1 */
};

static size_t
align_up (size_t n, size_t a)
{
  return (n + a - 1) / a * a;
}

static int32_t
guard_word (int guard, int64_t i)
{
  return (int32_t) (UINT32_C (0x5ca1ab1e)
                    ^ (uint32_t) ((uint64_t) (guard * 7919 + i)
                                  * UINT64_C (2654435761)));
}

static void
guarded_free (struct guarded *g)
{
  tsr_buffer_free (g->buf);
  tsr_context_free (g->scratch);
  free (g->roots);
  free (g->guards);
  memset (g, 0, sizeof *g);
}

static bool
guarded_alloc (struct guarded *g, tsr_context *ctx, tsr_buffer_type *buft,
               struct oc_output *out)
{
  size_t align = tsr_buffer_type_alignment (buft);
  size_t gsize, off, *offs, *gstart;
  int n = 0, k = 0;

  if (align == 0)
    align = 1;
  gsize = align_up (align_up (OC_GUARD, 4), align);
  memset (g, 0, sizeof *g);
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); t;
       t = tsr_context_next_tensor (ctx, t))
    n += !t->view_src;
  g->roots = calloc ((size_t) n + 1, sizeof *g->roots);
  g->guards = calloc ((size_t) n + 1, sizeof *g->guards);
  offs = calloc ((size_t) n + 1, sizeof *offs);
  gstart = calloc ((size_t) n + 1, sizeof *gstart);
  g->scratch = tsr_context_new (true);
  if (!g->roots || !g->guards || !offs || !gstart || !g->scratch)
    {
      fail (out, OC_ERROR, "out of memory");
      goto done;
    }
  g->n_roots = n;
  /* Layout.  */
  off = gsize;
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); t;
       t = tsr_context_next_tensor (ctx, t))
    if (!t->view_src)
      {
        g->roots[k] = t;
        offs[k] = off;
        gstart[k + 1] = align_up (off + tsr_buffer_type_alloc_size (buft, t),
                                  4);
        off = align_up (gstart[k + 1] + gsize, align);
        k++;
      }
  gstart[0] = 0;
  g->buf = tsr_buffer_type_alloc (buft, off);
  if (!g->buf)
    {
      fail (out, OC_ERROR, "cannot allocate %zu bytes of %s: %s", off,
            tsr_buffer_type_name (buft), tsr_last_error ());
      goto done;
    }
  for (k = 0; k < n; k++)
    if (tsr_buffer_place_tensor (g->buf, g->roots[k], offs[k]) != TSR_OK)
      {
        fail (out, OC_ERROR, "cannot place '%s': %s", label (g->roots[k]),
              tsr_last_error ());
        goto done;
      }
  /* Views share their root's memory (tensor.c keeps view_src a root),
     as the library's allocators do it.  */
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); t;
       t = tsr_context_next_tensor (ctx, t))
    if (t->view_src)
      {
        t->buffer = t->view_src->buffer;
        t->data = (char *) t->view_src->data + t->view_offs;
      }
  /* Guards, each up to the next tensor (or the buffer's end).  */
  for (k = 0; k <= n; k++)
    {
      size_t end = k < n ? offs[k] : off;
      int64_t words = (int64_t) ((end - gstart[k]) / 4);
      int32_t *pattern = malloc ((size_t) words * 4);
      tsr_tensor *gt = tsr_new_tensor_1d (g->scratch, TSR_TYPE_I32, words);
      if (!pattern || !gt
          || tsr_buffer_place_tensor (g->buf, gt, gstart[k]) != TSR_OK)
        {
          free (pattern);
          fail (out, OC_ERROR, "cannot place guard %d: %s", k,
                tsr_last_error ());
          goto done;
        }
      for (int64_t i = 0; i < words; i++)
        pattern[i] = guard_word (k, i);
      tsr_tensor_set (gt, pattern, 0, (size_t) words * 4);
      free (pattern);
      g->guards[k] = gt;
    }
done:
  free (offs);
  free (gstart);
  return out->status == OC_OK;
}

/* Report the first overwritten guard.  */
static void
guarded_check (struct guarded *g, struct oc_output *out)
{
  for (int k = 0; k <= g->n_roots && g->guards[k]; k++)
    {
      int64_t words = g->guards[k]->ne[0];
      int32_t *w = malloc ((size_t) words * 4);
      if (!w)
        {
          fail (out, OC_ERROR, "out of memory");
          return;
        }
      tsr_tensor_get (g->guards[k], w, 0, (size_t) words * 4);
      for (int64_t i = 0; i < words; i++)
        if (w[i] != guard_word (k, i))
          {
            if (k == 0)
              fail (out, OC_ERROR, "out-of-bounds write: guard bytes "
                    "before '%s' overwritten (byte %" PRId64 " of %" PRId64
                    ")", label (g->roots[0]), i * 4, words * 4);
            else
              fail (out, OC_ERROR, "out-of-bounds write: guard bytes "
                    "after '%s' overwritten (byte %" PRId64 " of %" PRId64
                    ")", label (g->roots[k - 1]), i * 4, words * 4);
            break;
          }
      free (w);
    }
}

/* Names for messages: inputs a, b, c...; other tensors by op.  */
static void
name_tensors (tsr_context *ctx, const struct oc_build *b)
{
  int k = 0;
  for (int i = 0; i < b->n_inputs; i++)
    if (!b->inputs[i]->name[0])
      {
        char nm[16];
        snprintf (nm, sizeof nm, "in%d", i);
        tsr_set_name (b->inputs[i], nm);
      }
  for (tsr_tensor *t = tsr_context_first_tensor (ctx); t;
       t = tsr_context_next_tensor (ctx, t), k++)
    if (!t->name[0])
      {
        char nm[TSR_MAX_NAME];
        snprintf (nm, sizeof nm, "%s#%d", tsr_op_name (t->op), k);
        tsr_set_name (t, nm);
      }
}

/* Give every root that is not an input a byte pattern, a different one
   on the reference, so that an element a kernel never writes shows as
   a difference.  */
static int
prefill (const struct guarded *g, const struct oc_build *b, bool reference)
{
  for (int k = 0; k < g->n_roots; k++)
    {
      tsr_tensor *t = g->roots[k];
      bool input = false;
      for (int i = 0; i < b->n_inputs; i++)
        input |= b->inputs[i] == t;
      if (input)
        continue;
      size_t bytes = tsr_nbytes (t);
      void *p = malloc (bytes);
      if (!p)
        return TSR_ERR_NO_MEMORY;
      memset (p, reference ? 0x7f : 0xff, bytes);
      tsr_tensor_set (t, p, 0, bytes);
      free (p);
    }
  return TSR_OK;
}

/* Read the result's root (contiguous) into OUT.  */
static void
read_output (tsr_tensor *t, struct oc_output *out)
{
  tsr_tensor *r = root_of (t);
  size_t bytes = tsr_nbytes (r);
  void *raw = malloc (bytes);

  out->n = tsr_nelements (r);
  memcpy (out->ne, r->ne, sizeof out->ne);
  if (!raw)
    {
      fail (out, OC_ERROR, "out of memory");
      return;
    }
  tsr_tensor_get (r, raw, 0, bytes);
  if (r->type == TSR_TYPE_I32)
    {
      out->is_int = true;
      out->i = raw;
      return;
    }
  out->f = malloc ((size_t) out->n * sizeof *out->f);
  if (!out->f)
    fail (out, OC_ERROR, "out of memory");
  else if (r->type == TSR_TYPE_F32)
    memcpy (out->f, raw, bytes);
  else
    tsr_type_traits (r->type)->to_float (raw, out->f, out->n);
  free (raw);
}

/* The self-test's deliberate errors, as a faulty backend would make
   them: in the device's memory, after compute.  */
static void
inject (const struct oc_inject *inj, tsr_tensor *result, struct guarded *g)
{
  tsr_tensor *r = root_of (result);
  size_t at = (size_t) (tsr_nelements (r) / 2) * 4;
  if (r->type == TSR_TYPE_F32 && (inj->corrupt_output || inj->nan_output))
    {
      float v;
      tsr_tensor_get (r, &v, at, sizeof v);
      v = inj->nan_output ? NAN : v + 1.0f;
      tsr_tensor_set (r, &v, at, sizeof v);
    }
  if (r->type == TSR_TYPE_I32 && inj->corrupt_output)
    {
      int32_t v;
      tsr_tensor_get (r, &v, at, sizeof v);
      v++;
      tsr_tensor_set (r, &v, at, sizeof v);
    }
  if (inj->guard_write)
    {
      /* The guard right after the result's root.  */
      for (int k = 0; k < g->n_roots; k++)
        if (g->roots[k] == r)
          {
            unsigned char byte;
            tsr_tensor_get (g->guards[k + 1], &byte, 0, 1);
            byte ^= 0xff;
            tsr_tensor_set (g->guards[k + 1], &byte, 0, 1);
          }
    }
}

static void
run_graph (const struct oc_case *c, tsr_backend *be,
           const struct oc_run_opts *opts, struct oc_build *b,
           tsr_tensor *result, struct oc_output *out)
{
  tsr_graph *g = tsr_graph_new (b->ctx);
  struct guarded mem;

  if (!g || tsr_graph_build (g, result) != TSR_OK)
    {
      fail (out, OC_ERROR, "graph: %s", tsr_last_error ());
      return;
    }
  /* Every node, those that compute first (to name the op that
     matters).  */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < tsr_graph_n_nodes (g); i++)
      {
        tsr_tensor *node = tsr_graph_node (g, i);
        bool view = tsr_op_get_kind (node->op) == TSR_OP_KIND_VIEW;
        if (view == (pass == 1) && !tsr_backend_supports_op (be, node))
          {
            fail (out, OC_UNSUPPORTED, "not supported by device (%s)",
                  tsr_op_name (node->op));
            return;
          }
      }
  if (opts->support_only)
    return;
  name_tensors (b->ctx, b);
  if (!guarded_alloc (&mem, b->ctx, tsr_backend_buffer_type (be), out))
    {
      guarded_free (&mem);
      return;
    }
  for (int i = 0; i < b->n_inputs && out->status == OC_OK; i++)
    if (fill_input (b->inputs[i], b->fills[i], opts->seed, c->name, i)
        != TSR_OK)
      fail (out, OC_ERROR, "cannot fill input %d: %s", i, tsr_last_error ());
  if (out->status == OC_OK && prefill (&mem, b, opts->reference) != TSR_OK)
    fail (out, OC_ERROR, "out of memory");
  if (out->status == OC_OK && tsr_backend_graph_compute (be, g) != TSR_OK)
    fail (out, OC_ERROR, "compute failed: %s", tsr_last_error ());
  if (out->status == OC_OK && opts->repeat > 0)
    {
      double t0 = tt_now_us ();
      for (int i = 0; i < opts->repeat; i++)
        if (tsr_backend_graph_compute (be, g) != TSR_OK)
          {
            fail (out, OC_ERROR, "compute failed: %s", tsr_last_error ());
            break;
          }
      if (out->status == OC_OK && tsr_backend_synchronize (be) != TSR_OK)
        fail (out, OC_ERROR, "compute failed: %s", tsr_last_error ());
      out->us_per_run = (tt_now_us () - t0) / opts->repeat;
    }
  if (out->status == OC_OK && opts->inject)
    inject (opts->inject, result, &mem);
  if (out->status == OC_OK)
    guarded_check (&mem, out);
  if (out->status == OC_OK)
    read_output (result, out);
  guarded_free (&mem);
}

void
oc_run (const struct oc_case *c, tsr_backend *be,
        const struct oc_run_opts *opts, struct oc_output *out)
{
  struct oc_build b = { 0 };
  tsr_tensor *result;

  memset (out, 0, sizeof *out);
  b.ctx = tsr_context_new (true);
  if (!b.ctx)
    {
      fail (out, OC_ERROR, "out of memory");
      return;
    }
  tsr_clear_error ();
  result = c->build (&b, c);
  if (!result)
    fail (out, OC_ERROR, "cannot build the case: %s", tsr_last_error ());
  else
    run_graph (c, be, opts, &b, result, out);
  tsr_context_free (b.ctx);
}

/* Comparison.  */

static const char *
class_name (double v)
{
  return isnan (v) ? "NaN" : v > 0 ? "+inf" : v < 0 ? "-inf" : "finite";
}

/* "[i0, i1, i2, i3]" of flat index I in shape NE.  */
static const char *
index_str (char *buf, size_t n, const int64_t ne[TSR_MAX_DIMS], int64_t i)
{
  int64_t c[TSR_MAX_DIMS];
  for (int d = 0; d < TSR_MAX_DIMS; d++)
    {
      c[d] = i % ne[d];
      i /= ne[d];
    }
  snprintf (buf, n, "[%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "]",
            c[0], c[1], c[2], c[3]);
  return buf;
}

bool
oc_compare (const struct oc_output *ref, const struct oc_output *out,
            double max_nmse, char *msg, size_t msg_size)
{
  char at[96];
  if (ref->n != out->n || ref->is_int != out->is_int
      || memcmp (ref->ne, out->ne, sizeof ref->ne) != 0)
    {
      snprintf (msg, msg_size, "result shape or type differs from the "
                "reference");
      return false;
    }
  if (ref->is_int)
    {
      int64_t bad = 0, first = -1;
      for (int64_t i = 0; i < ref->n; i++)
        if (ref->i[i] != out->i[i])
          {
            if (first < 0)
              first = i;
            bad++;
          }
      if (bad == 0)
        return true;
      snprintf (msg, msg_size, "%" PRId64 " of %" PRId64 " i32 values "
                "differ, first at %s: %" PRId32 ", expected %" PRId32, bad,
                ref->n, index_str (at, sizeof at, ref->ne, first),
                out->i[first], ref->i[first]);
      return false;
    }
  double err = 0, norm = 0;
  for (int64_t i = 0; i < ref->n; i++)
    {
      double r = ref->f[i], x = out->f[i];
      if (!isfinite (r) || !isfinite (x))
        {
          if (strcmp (class_name (r), class_name (x)) != 0)
            {
              snprintf (msg, msg_size, "NaN/Inf mismatch at %s: %g, "
                        "expected %g",
                        index_str (at, sizeof at, ref->ne, i), x, r);
              return false;
            }
          continue;
        }
      err += (x - r) * (x - r);
      norm += r * r;
    }
  /* A reference of zeros: the absolute error.  */
  double nmse = norm > 0 ? err / norm : err;
  if (nmse <= max_nmse)
    return true;
  snprintf (msg, msg_size, "nmse %.3g > %.0e", nmse, max_nmse);
  return false;
}
