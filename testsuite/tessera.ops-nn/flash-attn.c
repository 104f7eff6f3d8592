/* flash_attn_ext against a two-pass double-precision softmax: f32 and
   f16 keys and values, grouped heads (n_head a multiple of
   n_head_kv), d_v != d, masks in f32 and f16 with broadcast heads,
   -inf entries (causal, or scattered as several sequences' cells
   interleave in a cache) and fully masked rows (zeros), large scores,
   permuted
   (non-contiguous) q, k and v, and enough rows for several threads;
   soft-capped scores (tsr_flash_attn_ext_softcap: c tanh (s / c)
   before the mask) with caps that bend them, strongly or barely; a
   negative or infinite cap refused.  */
#include "nn-test.h"

/* The soft-cap of the cases being run (0: tsr_flash_attn_ext).  */
static float cap;
/* Masks hide all but every third cell (shifted per row) as well.  */
static int scatter;

struct shape
{
  int64_t d, dv, nq, nkv, nh, nhkv, nb;
};

static void
reference (const tsr_tensor *q, const tsr_tensor *k, const tsr_tensor *v,
           const tsr_tensor *mask, double scale, const int64_t *ne,
           double *want)
{
  double *s = malloc (k->ne[1] * sizeof *s);
  for (int64_t b = 0; b < q->ne[3]; b++)
    for (int64_t h = 0; h < q->ne[2]; h++)
      for (int64_t iq = 0; iq < q->ne[1]; iq++)
        {
          int64_t hk = h / (q->ne[2] / k->ne[2]);
          double max = -INFINITY, sum = 0;
          for (int64_t j = 0; j < k->ne[1]; j++)
            {
              double dot = 0;
              for (int64_t i = 0; i < q->ne[0]; i++)
                dot += ot_get (q, i, iq, h, b) * ot_get (k, i, j, hk, b);
              s[j] = scale * dot;
              if (cap > 0)
                s[j] = cap * tanh (s[j] / cap);
              s[j] += mask ? ot_get (mask, j, iq, h % mask->ne[2],
                                     b % mask->ne[3]) : 0;
              if (s[j] > max)
                max = s[j];
            }
          for (int64_t j = 0; j < k->ne[1]; j++)
            {
              s[j] = max == -INFINITY ? 0 : exp (s[j] - max);
              sum += s[j];
            }
          for (int64_t i = 0; i < v->ne[0]; i++)
            {
              double o = 0;
              for (int64_t j = 0; j < k->ne[1]; j++)
                o += s[j] * ot_get (v, i, j, hk, b);
              want[ot_index (ne, i, iq, h, b)] = sum > 0 ? o / sum : 0;
            }
        }
  free (s);
}

/* Q [d, nq, nh, nb] made by permuting a [d, nh, nq, nb] tensor (the
   layout a projection gives) when PERMUTED.  */
static tsr_tensor *
attn_operand (tsr_context *ctx, tsr_type type, int64_t d, int64_t n,
              int64_t h, int64_t b, int permuted)
{
  if (!permuted)
    return tsr_new_tensor_4d (ctx, type, d, n, h, b);
  tsr_tensor *p = tsr_new_tensor_4d (ctx, type, d, h, n, b);
  return tsr_permute (ctx, p, 0, 2, 1, 3);
}

/* Mask [nkv, nq + 3, m2, m3]: random values, a causal pattern of -inf
   and the query row 1 fully masked when FULL.  */
static void
fill_mask (tsr_tensor *m, int full)
{
  OT_FOR_EACH (m, j, iq, i2, i3)
    {
      double v = tsr_test_uniform (-2.0f, 1.0f);
      if (j > iq + 2 + i2 || (full && iq == 1)
          || (scatter && (j + iq) % 3 != 0))
        v = -INFINITY;
      ot_set (m, j, iq, i2, i3, v);
    }
}

static void
check_attn (tsr_backend *be, struct shape s, tsr_type kt, tsr_type vt,
            tsr_type mt, int m2, int full, int permuted, float scale,
            float range)
{
  char desc[260];
  snprintf (desc, sizeof desc, "flash_attn_ext d %ld d_v %ld n_q %ld n_kv "
            "%ld heads %ld/%ld batch %ld, k %s v %s, mask %s%s%s%s%s, "
            "scale %g, soft-cap %g",
            (long) s.d, (long) s.dv, (long) s.nq, (long) s.nkv, (long) s.nh,
            (long) s.nhkv, (long) s.nb, tsr_type_name (kt),
            tsr_type_name (vt), mt == TSR_TYPE_COUNT ? "none"
                                : tsr_type_name (mt),
            m2 > 1 ? " per head" : "", scatter ? " scattered" : "",
            full ? " with a masked row" : "",
            permuted ? ", permuted" : "", (double) scale, (double) cap);
  tsr_context *ctx = tsr_context_new (false);
  tsr_tensor *q = attn_operand (ctx, TSR_TYPE_F32, s.d, s.nq, s.nh, s.nb,
                                permuted);
  tsr_tensor *k = attn_operand (ctx, kt, s.d, s.nkv, s.nhkv, s.nb, permuted);
  tsr_tensor *v = attn_operand (ctx, vt, s.dv, s.nkv, s.nhkv, s.nb,
                                permuted);
  tsr_tensor *mask = NULL;
  if (mt != TSR_TYPE_COUNT)
    {
      mask = tsr_new_tensor_4d (ctx, mt, s.nkv, s.nq + 3, m2, 1);
      fill_mask (mask, full);
    }
  ot_fill (q, -range, range);
  ot_fill (k, -range, range);
  ot_fill (v, -1.0f, 1.0f);
  tsr_tensor *r = cap > 0 ? tsr_flash_attn_ext_softcap (ctx, q, k, v, mask,
                                                        scale, cap)
                          : tsr_flash_attn_ext (ctx, q, k, v, mask, scale);
  if (ot_run (desc, be, ctx, r))
    {
      int64_t ne[4] = { s.dv, s.nq, s.nh, s.nb };
      double *want = malloc (ot_count (ne) * sizeof *want);
      reference (q, k, v, mask, scale, ne, want);
      ot_compare (desc, r, ne, want, 2e-6, 2e-5);
      free (want);
    }
  tsr_context_free (ctx);
}

int
main (void)
{
  const tsr_type F32 = TSR_TYPE_F32, F16 = TSR_TYPE_F16,
                 NONE = TSR_TYPE_COUNT;
  tsr_backend *be = nt_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (31);
  struct shape small = { 12, 9, 5, 11, 4, 2, 2 };
  check_attn (be, small, F32, F32, NONE, 1, 0, 0, 0.3f, 1.0f);
  check_attn (be, small, F32, F32, F32, 1, 0, 0, 0.3f, 1.0f);
  check_attn (be, small, F16, F16, F16, 2, 1, 0, 0.3f, 1.0f);
  check_attn (be, small, F16, F32, F32, 4, 1, 1, 0.5f, 1.0f);
  check_attn (be, small, F32, F16, F16, 1, 0, 1, 0.3f, 1.0f);
  /* One key; one head each; scores up to ~400 (no overflow).  */
  check_attn (be, (struct shape) { 7, 7, 3, 1, 1, 1, 1 }, F32, F32, NONE, 1,
              0, 0, 1.0f, 1.0f);
  check_attn (be, (struct shape) { 16, 5, 4, 9, 3, 3, 1 }, F32, F32, F32, 1,
              0, 0, 1.0f, 5.0f);
  check_attn (be, (struct shape) { 16, 5, 4, 9, 6, 1, 1 }, F16, F16, NONE,
              1, 0, 1, 1.0f, 3.0f);
  /* Enough rows for several threads.  */
  check_attn (be, (struct shape) { 64, 64, 33, 20, 16, 4, 1 }, F16, F16, F16,
              1, 0, 0, 0.125f, 1.0f);
  /* Soft-capped: scores up to ~30 capped at 2 (flat) and at 50 (nearly
     linear), blocks of more than one vector, a masked row.  */
  for (int c = 0; c < 2; c++)
    {
      cap = c ? 50.0f : 2.0f;
      check_attn (be, (struct shape) { 16, 5, 4, 9, 3, 3, 1 }, F32, F32, F32,
                  1, 0, 0, 1.0f, 5.0f);
      check_attn (be, small, F16, F16, F16, 2, 1, 0, 0.3f, 3.0f);
      check_attn (be, (struct shape) { 64, 64, 33, 100, 16, 4, 1 }, F16, F16,
                  F16, 1, 1, 1, 0.125f, 2.0f);
    }
  cap = 0;
  /* Scattered visible cells, the mask broadcast over heads and per
     head, 100 keys (not a multiple of 8).  */
  scatter = 1;
  check_attn (be, (struct shape) { 64, 64, 33, 100, 16, 4, 1 }, F16, F16,
              F32, 1, 0, 0, 0.125f, 2.0f);
  check_attn (be, (struct shape) { 64, 64, 9, 100, 8, 2, 1 }, F16, F16,
              F32, 8, 1, 0, 0.125f, 2.0f);
  scatter = 0;
  {
    tsr_context *ctx = tsr_context_new (true);
    tsr_tensor *q = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 8, 2, 2);
    tsr_tensor *k = tsr_new_tensor_3d (ctx, TSR_TYPE_F32, 8, 4, 2);
    CHECK (!tsr_flash_attn_ext_softcap (ctx, q, k, k, NULL, 1.0f, -1.0f)
           && tsr_last_status () == TSR_ERR_INVALID_ARG
           && !tsr_flash_attn_ext_softcap (ctx, q, k, k, NULL, 1.0f,
                                           INFINITY),
           "flash_attn_ext: a negative or infinite soft-cap is refused (%s)",
           tsr_last_error ());
    tsr_context_free (ctx);
  }
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
