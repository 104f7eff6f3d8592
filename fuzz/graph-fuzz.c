/* graph-fuzz.c - libFuzzer target for graph building and validation.
 *
 * The input is a program: each step reads a few bytes and creates a
 * tensor (any type, shapes from 0 to near 2^62), takes a view (any
 * offset and strides), reshapes or permutes, calls one of the op
 * builders with fuzzed operands and parameters, or builds a node by
 * hand (any op number, shape, strides, sources, view parent and
 * parameters) and hands it to tsr_node_validate.  Nothing is computed:
 * the context allocates no data.
 *
 * Invariants, beyond "no crash" and no undefined behaviour (ASan and
 * UBSan are on in --enable-fuzzing builds):
 *   - a builder returns a node that tsr_node_validate accepts, or NULL
 *     with a failure status and a message;
 *   - tsr_node_validate answers any hand-built node with a status.
 * A broken invariant aborts, which libFuzzer reports as a crash.  */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tessera.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

struct input
{
  const uint8_t *p;
  size_t n;
};

static uint8_t
u8 (struct input *in)
{
  if (!in->n)
    return 0;
  in->n--;
  return *in->p++;
}

static uint64_t
u64 (struct input *in)
{
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t) u8 (in) << (8 * i);
  return v;
}

/* A dimension: mostly small, sometimes 0, sometimes huge.  */
static int64_t
dim (struct input *in)
{
  uint8_t s = u8 (in);
  switch (s >> 6)
    {
    case 0: return s & 7;
    case 1: return (s & 63) + 1;
    case 2: return (int64_t) (u64 (in) & ((UINT64_C (1) << (s & 62)) - 1));
    default: return (int64_t) (u64 (in) >> 1);
    }
}

static int
small_int (struct input *in)
{
  return (int) (int8_t) u8 (in);
}

static float
some_float (struct input *in)
{
  static const float v[] = { 0.0f, 1.0f, -1.0f, 0.5f, 10000.0f, 1e-30f,
                             1e30f, -0.0f };
  uint8_t s = u8 (in);
  if (s < 8)
    return v[s];
  uint32_t bits = (uint32_t) u64 (in);
  float f;
  memcpy (&f, &bits, sizeof f);
  return f;                     /* NaN and infinities included */
}

static void
require (bool ok, const char *what)
{
  if (!ok)
    {
      fprintf (stderr, "graph-fuzz: invariant broken: %s (%s)\n", what,
               tsr_last_error ());
      abort ();
    }
}

/* A builder's answer: a valid node, or NULL with an error.  */
static void
show (const char *role, const tsr_tensor *t)
{
  if (!t)
    return;
  fprintf (stderr, "  %s: %s %s ne [%lld %lld %lld %lld] nb [%zu %zu %zu "
           "%zu]%s\n", role, tsr_op_name (t->op), tsr_type_name (t->type),
           (long long) t->ne[0], (long long) t->ne[1], (long long) t->ne[2],
           (long long) t->ne[3], t->nb[0], t->nb[1], t->nb[2], t->nb[3],
           t->view_src ? " (view)" : "");
}

static tsr_tensor *
built (tsr_tensor *t, const char *what)
{
  if (t && tsr_node_validate (t) != TSR_OK)
    {
      show ("node", t);
      for (int i = 0; i < TSR_MAX_SRC; i++)
        show ("source", t->src[i]);
    }
  if (t)
    require (tsr_node_validate (t) == TSR_OK, what);
  else
    require (tsr_last_status () != TSR_OK && tsr_last_error ()[0], what);
  return t;
}

#define POOL 24

static tsr_tensor *
pick (struct input *in, tsr_tensor **pool, int n)
{
  uint8_t s = u8 (in);
  if (n == 0 || s == 255)
    return NULL;                /* a NULL operand now and then */
  return pool[s % n];
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct input in = { data, size };
  tsr_context *ctx = tsr_context_new (true);
  if (!ctx)
    return 0;
  tsr_tensor *pool[POOL];
  int n = 0;
  for (int step = 0; step < 64 && in.n; step++)
    {
      uint8_t op = u8 (&in);
      tsr_tensor *a = pick (&in, pool, n), *b = NULL, *c = NULL, *r = NULL;
      tsr_clear_error ();
      switch (op % 12)
        {
        case 0:
          {
            int64_t ne[4] = { dim (&in), dim (&in), dim (&in), dim (&in) };
            r = tsr_new_tensor (ctx, (tsr_type) (u8 (&in) % (TSR_TYPE_COUNT
                                                             + 1)),
                                1 + u8 (&in) % 4, ne);
            if (r)
              require (tsr_nbytes (r) > 0 || tsr_nelements (r) == 0
                       || tsr_nbytes (r) == SIZE_MAX, "nbytes");
            else
              require (tsr_last_status () != TSR_OK, "new tensor status");
          }
          break;
        case 1:
          {
            int64_t ne[4] = { dim (&in), dim (&in), dim (&in), dim (&in) };
            size_t nb1 = (size_t) u64 (&in), nb2 = (size_t) u64 (&in);
            size_t nb3 = (size_t) u64 (&in), off = (size_t) u64 (&in);
            switch (u8 (&in) % 4)
              {
              case 0: r = tsr_view_1d (ctx, a, ne[0], off); break;
              case 1: r = tsr_view_2d (ctx, a, ne[0], ne[1], nb1, off); break;
              case 2:
                r = tsr_view_3d (ctx, a, ne[0], ne[1], ne[2], nb1, nb2, off);
                break;
              default:
                r = tsr_view_4d (ctx, a, ne[0], ne[1], ne[2], ne[3], nb1,
                                 nb2, nb3, off);
              }
            built (r, "view");
          }
          break;
        case 2:
          switch (u8 (&in) % 4)
            {
            case 0: r = tsr_reshape_2d (ctx, a, dim (&in), dim (&in)); break;
            case 1:
              r = tsr_permute (ctx, a, small_int (&in), small_int (&in),
                               small_int (&in), small_int (&in));
              break;
            case 2: r = tsr_transpose (ctx, a); break;
            default: r = tsr_cont (ctx, a);
            }
          built (r, "reshape/permute");
          break;
        case 3:
          b = pick (&in, pool, n);
          switch (u8 (&in) % 8)
            {
            case 0: r = tsr_add (ctx, a, b); break;
            case 1: r = tsr_mul (ctx, a, b); break;
            case 2: r = tsr_div (ctx, a, b); break;
            case 3: r = tsr_mul_mat (ctx, a, b); break;
            case 4: r = tsr_get_rows (ctx, a, b); break;
            case 5: r = tsr_repeat (ctx, a, b); break;
            case 6: r = tsr_cpy (ctx, a, b); break;
            default: r = tsr_swiglu (ctx, a, b);
            }
          built (r, "binary builder");
          break;
        case 4:
          switch (u8 (&in) % 10)
            {
            case 0: r = tsr_silu (ctx, a); break;
            case 1: r = tsr_rms_norm (ctx, a, some_float (&in)); break;
            case 2: r = tsr_sum_rows (ctx, a); break;
            case 3: r = tsr_argmax (ctx, a); break;
            case 4: r = tsr_argsort (ctx, a, (enum tsr_sort_order)
                                              (u8 (&in) % 3)); break;
            case 5: r = tsr_top_k (ctx, a, small_int (&in)); break;
            case 6:
              r = tsr_clamp (ctx, a, some_float (&in), some_float (&in));
              break;
            case 7: r = tsr_upscale (ctx, a, small_int (&in)); break;
            case 8: r = tsr_diag_mask_inf (ctx, a, small_int (&in)); break;
            default:
              r = tsr_cast (ctx, a, (tsr_type) (u8 (&in)
                                                % (TSR_TYPE_COUNT + 1)));
            }
          built (r, "unary builder");
          break;
        case 5:
          b = pick (&in, pool, n);
          c = pick (&in, pool, n);
          switch (u8 (&in) % 6)
            {
            case 0: r = tsr_set_rows (ctx, a, b, c); break;
            case 1: r = tsr_mul_mat_id (ctx, a, b, c); break;
            case 2:
              r = tsr_flash_attn_ext (ctx, a, b, c, pick (&in, pool, n),
                                      some_float (&in));
              break;
            case 3: r = tsr_soft_max (ctx, a, b, some_float (&in)); break;
            case 4:
              r = tsr_rope_ext (ctx, a, b, c, small_int (&in),
                                (enum tsr_rope_mode) (u8 (&in) % 3),
                                some_float (&in), some_float (&in));
              break;
            default: r = tsr_concat (ctx, a, b, small_int (&in));
            }
          built (r, "ternary builder");
          break;
        case 6:
          b = pick (&in, pool, n);
          switch (u8 (&in) % 4)
            {
            case 0:
              r = tsr_im2col (ctx, a, b, small_int (&in), small_int (&in),
                              small_int (&in), small_int (&in),
                              small_int (&in), small_int (&in),
                              u8 (&in) & 1, (tsr_type) (u8 (&in) % 4));
              break;
            case 1:
              r = tsr_pool_2d (ctx, a, (enum tsr_pool_op) (u8 (&in) % 3),
                               small_int (&in), small_int (&in),
                               small_int (&in), small_int (&in),
                               small_int (&in), small_int (&in));
              break;
            case 2:
              r = tsr_pad (ctx, a, small_int (&in), small_int (&in),
                           small_int (&in), small_int (&in));
              break;
            default:
              r = tsr_arange (ctx, some_float (&in), some_float (&in),
                              some_float (&in));
            }
          built (r, "shape builder");
          break;
        default:
          {
            /* A node built by hand from another, mutated.  */
            tsr_tensor h;
            if (a)
              h = *a;
            else
              memset (&h, 0, sizeof h);
            uint8_t what = u8 (&in);
            if (what & 1)
              h.op = (tsr_op) (u8 (&in) % (TSR_OP_COUNT + 2));
            if (what & 2)
              h.type = (tsr_type) (u8 (&in) % (TSR_TYPE_COUNT + 2));
            if (what & 4)
              h.ne[u8 (&in) % 4] = (int64_t) u64 (&in);
            if (what & 8)
              h.nb[u8 (&in) % 4] = (size_t) u64 (&in);
            if (what & 16)
              h.src[u8 (&in) % TSR_MAX_SRC] = pick (&in, pool, n);
            if (what & 32)
              h.op_params[u8 (&in) % TSR_MAX_OP_PARAMS]
                = (int32_t) u64 (&in);
            if (what & 64)
              {
                h.view_src = pick (&in, pool, n);
                h.view_offs = (size_t) u64 (&in);
              }
            int st = tsr_node_validate (&h);
            require (st == TSR_OK || (st != TSR_OK && tsr_last_error ()[0]),
                     "hand-built node status");
          }
          break;
        }
      if (r && n < POOL)
        pool[n++] = r;
    }
  tsr_context_free (ctx);
  return 0;
}
