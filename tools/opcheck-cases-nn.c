/* opcheck-cases-nn.c - cases of the transformer and convolution ops
 * (include/tessera/ops.h, "Transformer and convolution ops"): rope,
 * set_rows, flash_attn_ext, mul_mat_id, im2col, pool_2d.  */
#include <config.h>

#include <math.h>
#include <string.h>

#include "opcheck.h"

#define F32 TSR_TYPE_F32
#define F16 TSR_TYPE_F16
#define I32 TSR_TYPE_I32


static const struct oc_fill unit = { .lo = -1, .hi = 1 };

/* rope */

static tsr_tensor *
build_rope (struct oc_build *b, const struct oc_case *c)
{
  const struct oc_params *p = &c->p;
  tsr_tensor *x = oc_operand (b, p, 0, unit);
  tsr_tensor *pos = oc_operand (b, p, 1, OC_UNIFORM (0, p->iv[2]));
  tsr_tensor *ff = p->iv[3] ? oc_operand (b, p, 2, OC_UNIFORM (1, 32))
                            : NULL;
  return tsr_rope_ext (b->ctx, x, pos, ff, p->iv[0],
                       (enum tsr_rope_mode) p->iv[1], p->fv[0], p->fv[1]);
}

static void
cases_rope (struct oc_list *l)
{
  /* head_dim, n_head, n_tokens, batch, n_dims, max position */
  static const int shapes[][6] = {
    { 2, 1, 1, 1, 2, 10 }, { 64, 4, 7, 1, 64, 1000 },
    { 64, 4, 7, 2, 32, 1000 }, { 6, 3, 5, 1, 4, 50 },
    { 128, 32, 16, 1, 128, 4096 }, { 80, 2, 3, 1, 64, 100 },
  };
  char sa[64];
  for (size_t s = 0; s < OC_N (shapes); s++)
    for (int mode = 0; mode < 2; mode++)
      {
        const int *sh = shapes[s];
        struct oc_params p = { .type = { F32, I32 },
                               .iv = { sh[4], mode, sh[5] },
                               .fv = { 10000.0f, s == 3 ? 0.5f : 1.0f } };
        oc_ne (p.ne[0], sh[0], sh[1], sh[2], sh[3]);
        oc_ne (p.ne[1], sh[2], 1, 1, 1);
        if (s == 2 && mode == 1)
          p.layout[0] = OC_PERMUTED;
        oc_add (l, TSR_OP_ROPE, build_rope, &p, "rope %s n_dims=%d %s "
                "base=%g scale=%g",
                oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]),
                sh[4], mode ? "neox" : "normal", p.fv[0], p.fv[1]);
        if (s != 1 && s != 4)
          continue;
        /* With frequency factors (rope_freqs.weight of Llama 3).  */
        p.type[2] = F32;
        p.iv[3] = 1;
        oc_ne (p.ne[2], sh[4] / 2, 1, 1, 1);
        oc_add (l, TSR_OP_ROPE, build_rope, &p, "rope %s n_dims=%d %s "
                "base=%g freq_factors",
                oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]),
                sh[4], mode ? "neox" : "normal", p.fv[0]);
      }
}

/* set_rows */

static tsr_tensor *
build_set_rows (struct oc_build *b, const struct oc_case *c)
{
  const struct oc_params *p = &c->p;
  struct oc_fill idx = OC_UNIFORM (0, (double) p->ne[0][1]);
  idx.unique = true;
  tsr_tensor *dst = oc_operand (b, p, 0, unit);
  tsr_tensor *src = oc_operand (b, p, 1, unit);
  return tsr_set_rows (b->ctx, dst, src, oc_operand (b, p, 2, idx));
}

static void
cases_set_rows (struct oc_list *l)
{
  /* k, r, d2, d3, n, b2, b3 */
  static const int64_t shapes[][7] = {
    { 32, 1, 1, 1, 1, 1, 1 }, { 64, 10, 1, 1, 4, 1, 1 },
    { 32, 9, 2, 1, 9, 2, 1 }, { 96, 7, 2, 3, 3, 2, 3 },
    { 32, 6, 1, 1, 2, 3, 1 },     /* batches of idx write one dst batch */
    { 256, 200, 1, 1, 150, 1, 1 },
  };
  char sa[64], sb[64];
  for (size_t t = 0; t < oc_n_row32_types; t++)
    for (size_t s = 0; s <= OC_N (shapes); s++)
      {
        const int64_t *sh = shapes[s < OC_N (shapes) ? s : 3];
        struct oc_params p = { .type = { oc_row32_types[t], F32, I32 } };
        oc_ne (p.ne[0], sh[0], sh[1], sh[2], sh[3]);
        oc_ne (p.ne[1], sh[0], sh[4], sh[5], sh[6]);
        oc_ne (p.ne[2], sh[4], sh[5], sh[6], 1);
        if (s == OC_N (shapes))
          p.layout[1] = t % 2 ? OC_PERMUTED : OC_TRANSPOSED;
        oc_add (l, TSR_OP_SET_ROWS, build_set_rows, &p, "set_rows %s %s",
                oc_shape_str (sa, sizeof sa, p.type[0], p.ne[0], OC_CONT),
                oc_shape_str (sb, sizeof sb, F32, p.ne[1], p.layout[1]));
      }
}

/* flash_attn_ext */

static tsr_tensor *
build_flash_attn (struct oc_build *b, const struct oc_case *c)
{
  const struct oc_params *p = &c->p;
  tsr_tensor *q = oc_operand (b, p, 0, unit);
  tsr_tensor *k = oc_operand (b, p, 1, unit);
  tsr_tensor *v = oc_operand (b, p, 2, unit);
  tsr_tensor *mask = NULL;
  if (p->iv[0])
    {
      struct oc_fill mf = OC_UNIFORM (-1, 0);
      mf.p_neginf = 0.3;
      mask = oc_operand (b, p, 3, mf);
    }
  return tsr_flash_attn_ext_softcap (b->ctx, q, k, v, mask, p->fv[0],
                                     p->fv[1]);
}

static void
cases_flash_attn (struct oc_list *l)
{
  /* d, d_v, n_q, n_kv, n_head, n_head_kv, batch, mask rows, m2, m3
     (mask rows 0: no mask) */
  static const int shapes[][10] = {
    { 64, 64, 1, 32, 4, 4, 1, 0, 1, 1 },
    { 64, 64, 7, 65, 4, 2, 1, 7, 1, 1 },
    { 64, 64, 7, 65, 4, 1, 2, 8, 4, 2 },
    { 128, 64, 3, 17, 2, 2, 1, 3, 2, 1 },
    { 40, 40, 5, 256, 8, 8, 1, 5, 1, 1 },
    { 64, 64, 64, 256, 8, 2, 1, 64, 1, 1 },   /* split over threads */
    /* Prompts (CUDA's tiles of 32 query rows): a partial tile and
       chunk of keys; head size 128 with batches and a broadcast mask.  */
    { 64, 64, 17, 33, 8, 8, 1, 17, 1, 1 },
    { 128, 128, 40, 70, 4, 2, 2, 40, 2, 1 },
  };
  char sq[64], sk[64], sm[64];
  /* The last pass soft-caps the scores (Gemma 2's 50, and a cap of 1
     that flattens them), on the masked shapes.  */
  for (int capped = 0; capped < 3; capped++)
  for (size_t s = capped ? 1 : 0; s < (capped ? 3 : OC_N (shapes)); s++)
    for (int kt = 0; kt < 2; kt++)
      {
        const int *sh = shapes[s];
        tsr_type kvt = kt ? F16 : F32;
        struct oc_params p = {
          .type = { F32, kvt, kvt, s % 2 ? F16 : F32 },
          .iv = { sh[7] != 0 },
          .fv = { 1.0f / sqrtf ((float) sh[0]),
                  capped == 1 ? 50.0f : capped == 2 ? 1.0f : 0.0f },
        };
        oc_ne (p.ne[0], sh[0], sh[2], sh[4], sh[6]);
        oc_ne (p.ne[1], sh[0], sh[3], sh[5], sh[6]);
        oc_ne (p.ne[2], sh[1], sh[3], sh[5], sh[6]);
        oc_ne (p.ne[3], sh[3], sh[7], sh[8], sh[9]);
        if (s == 1)
          p.layout[0] = OC_PERMUTED;
        oc_add (l, TSR_OP_FLASH_ATTN_EXT, build_flash_attn, &p,
                "flash_attn_ext q=%s kv=%s v=%d mask=%s%s",
                oc_shape_str (sq, sizeof sq, F32, p.ne[0], p.layout[0]),
                oc_shape_str (sk, sizeof sk, kvt, p.ne[1], OC_CONT), sh[1],
                sh[7] ? oc_shape_str (sm, sizeof sm, p.type[3], p.ne[3],
                                      OC_CONT) : "none",
                capped == 1 ? " softcap=50" : capped == 2 ? " softcap=1"
                                                          : "");
      }
}

/* mul_mat_id */

static tsr_tensor *
build_mul_mat_id (struct oc_build *b, const struct oc_case *c)
{
  const struct oc_params *p = &c->p;
  struct oc_fill ids = OC_UNIFORM (0, (double) p->ne[0][2]);
  ids.unique = true;
  tsr_tensor *as = oc_operand (b, p, 0, unit);
  tsr_tensor *x = oc_operand (b, p, 1, unit);
  return tsr_mul_mat_id (b->ctx, as, x, oc_operand (b, p, 2, ids));
}

/* mul_mat_id of WT for each of the N SHAPES (k, m, n_expert, n_used,
   n_tokens, n_b), then the first with permuted activations.  */
static void
add_mul_mat_id_cases (struct oc_list *l, tsr_type wt,
                      const int64_t (*shapes)[6], size_t n)
{
  char sa[64], sb[64];
  for (size_t s = 0; s <= n; s++)
    {
      const int64_t *sh = shapes[s < n ? s : 0];
      struct oc_params p = { .type = { wt, F32, I32 } };
      oc_ne (p.ne[0], sh[0], sh[1], sh[2], 1);
      oc_ne (p.ne[1], sh[0], sh[5], sh[4], 1);
      oc_ne (p.ne[2], sh[3], sh[4], 1, 1);
      if (s == n)
        p.layout[1] = OC_PERMUTED;
      oc_add (l, TSR_OP_MUL_MAT_ID, build_mul_mat_id, &p,
              "mul_mat_id %s %s used=%d",
              oc_shape_str (sa, sizeof sa, wt, p.ne[0], OC_CONT),
              oc_shape_str (sb, sizeof sb, F32, p.ne[1], p.layout[1]),
              (int) sh[3]);
    }
}

static void
cases_mul_mat_id (struct oc_list *l)
{
  /* k, m, n_expert, n_used, n_tokens, n_b */
  static const int64_t shapes[][6] = {
    { 64, 16, 4, 2, 3, 2 }, { 32, 5, 8, 3, 7, 1 }, { 256, 33, 3, 1, 5, 1 },
    { 128, 256, 4, 2, 64, 2 },
  };
  static const int64_t block_shapes[][6] = {
    { 256, 16, 4, 2, 3, 2 }, { 256, 5, 8, 3, 7, 1 }, { 512, 33, 3, 1, 5, 1 },
    { 256, 64, 4, 2, 32, 2 },
  };
  for (size_t t = 0; t < OC_N_WEIGHT_TYPES; t++)
    add_mul_mat_id_cases (l, oc_weight_types[t], shapes, OC_N (shapes));
  for (size_t t = 0; t < OC_N_BLOCK_TYPES; t++)
    add_mul_mat_id_cases (l, oc_block_types[t], block_shapes,
                          OC_N (block_shapes));
}

/* im2col and pool_2d */

static tsr_tensor *
build_im2col (struct oc_build *b, const struct oc_case *c)
{
  const struct oc_params *p = &c->p;
  const int *v = p->iv;
  tsr_tensor *kernel = oc_operand (b, p, 0, unit);
  tsr_tensor *input = oc_operand (b, p, 1, unit);
  return tsr_im2col (b->ctx, kernel, input, v[0], v[1], v[2], v[3], v[4],
                     v[5], v[6], p->type[2]);
}

static void
cases_im2col (struct oc_list *l)
{
  /* kernel ne[4], input ne[4], s0, s1, p0, p1, d0, d1, is_2d */
  static const int shapes[][15] = {
    { 3, 3, 2, 4, 10, 8, 2, 1, 1, 1, 1, 1, 1, 1, 1 },
    { 5, 3, 3, 2, 17, 9, 3, 2, 2, 1, 0, 2, 1, 2, 1 },
    { 1, 1, 4, 1, 7, 7, 4, 1, 1, 1, 0, 0, 1, 1, 1 },
    { 3, 4, 2, 1, 20, 4, 2, 1, 2, 1, 1, 0, 1, 1, 0 },
    { 5, 1, 1, 1, 33, 1, 1, 1, 1, 1, 0, 0, 3, 1, 0 },
    { 3, 3, 16, 8, 64, 64, 16, 1, 1, 1, 1, 1, 1, 1, 1 },
  };
  char sk[64], si[64];
  for (size_t s = 0; s <= OC_N (shapes); s++)
    for (int dt = 0; dt < 2; dt++)
      {
        const int *sh = shapes[s < OC_N (shapes) ? s : 1];
        struct oc_params p = { .type = { F16, F32, dt ? F16 : F32 } };
        oc_ne (p.ne[0], sh[0], sh[1], sh[2], sh[3]);
        oc_ne (p.ne[1], sh[4], sh[5], sh[6], sh[7]);
        for (int i = 0; i < 7; i++)
          p.iv[i] = sh[8 + i];
        if (s == OC_N (shapes))
          p.layout[1] = dt ? OC_PERMUTED : OC_TRANSPOSED;
        oc_add (l, TSR_OP_IM2COL, build_im2col, &p, "im2col %s %s s=%d,%d "
                "p=%d,%d d=%d,%d %s -> %s",
                oc_shape_str (sk, sizeof sk, F16, p.ne[0], OC_CONT),
                oc_shape_str (si, sizeof si, F32, p.ne[1], p.layout[1]),
                sh[8], sh[9], sh[10], sh[11], sh[12], sh[13],
                sh[14] ? "2d" : "1d", tsr_type_name (p.type[2]));
      }
}

static tsr_tensor *
build_pool (struct oc_build *b, const struct oc_case *c)
{
  const int *v = c->p.iv;
  tsr_tensor *x = oc_operand (b, &c->p, 0, OC_UNIFORM (-3, 3));
  return tsr_pool_2d (b->ctx, x, (enum tsr_pool_op) v[0], v[1], v[2], v[3],
                      v[4], v[5], v[6]);
}

static void
cases_pool (struct oc_list *l)
{
  /* input ne[4], k0, k1, s0, s1, p0, p1 */
  static const int shapes[][10] = {
    { 16, 12, 3, 2, 2, 2, 2, 2, 0, 0 }, { 17, 9, 2, 1, 3, 3, 1, 1, 1, 1 },
    { 15, 7, 4, 1, 3, 2, 2, 1, 1, 0 }, { 5, 4, 1, 1, 1, 1, 1, 1, 0, 0 },
    { 128, 128, 8, 1, 2, 2, 2, 2, 0, 0 },
  };
  char sa[64];
  for (size_t s = 0; s <= OC_N (shapes); s++)
    for (int op = 0; op < 2; op++)
      {
        const int *sh = shapes[s < OC_N (shapes) ? s : 1];
        struct oc_params p = { .type = { F32 }, .iv = { op } };
        oc_ne (p.ne[0], sh[0], sh[1], sh[2], sh[3]);
        for (int i = 0; i < 6; i++)
          p.iv[1 + i] = sh[4 + i];
        if (s == OC_N (shapes))
          p.layout[0] = op ? OC_PERMUTED : OC_STRIDED;
        oc_add (l, TSR_OP_POOL_2D, build_pool, &p, "pool_2d %s %s k=%d,%d "
                "s=%d,%d p=%d,%d", op ? "avg" : "max",
                oc_shape_str (sa, sizeof sa, F32, p.ne[0], p.layout[0]),
                sh[4], sh[5], sh[6], sh[7], sh[8], sh[9]);
      }
}

void
oc_cases_nn (struct oc_list *l)
{
  cases_rope (l);
  cases_set_rows (l);
  cases_flash_attn (l);
  cases_mul_mat_id (l);
  cases_im2col (l);
  cases_pool (l);
}
