/* cuda-fuse.c - nodes one kernel computes together.
 *
 * A decode step of a model is hundreds of small kernels; each launch
 * costs time of its own, and an intermediate result written by one
 * kernel and read back by the next costs memory traffic.  Before a
 * graph is computed the first time (or when its shape changes, see
 * cuda-backend.c) this file finds groups of nodes that one kernel
 * computes:
 *
 *   NORM_MUL      rms_norm (x), mul (that, w)          one kernel;
 *                 the norm's result is never written
 *   ADD_NORM_MUL  add (a, b), rms_norm (that), mul (that, w): the
 *                 sum is written (the residual reads it later), the
 *                 norm's result is not
 *   MMV_SET       2 or 3 matrix-vector products of one activation
 *                 (q, k, v projections): one launch reads the
 *                 activations once per thread block for all of them
 *   MMV_GLU       mul_mat (gate, x), mul_mat (up, x), swiglu / geglu
 *                 of the two: one launch, neither product written
 *   PHASES        2 to 4 small rope and set_rows nodes in a row (a
 *                 token's q and k rotations, its key and value rows
 *                 into the caches): one thread block computes them in
 *                 order, with a barrier before each that touches what
 *                 an earlier one wrote or writes what it read
 *                 (cuda-set-rows.cu), so every result is written and
 *                 read as by the separate kernels (no conditions on
 *                 memory here)
 *
 * Besides the groups, a norm group or a one-token flash_attn_ext whose
 * result the next launch multiplies in 8-bit integers rounds that
 * product's activations itself (plan_q8).
 *
 * A group computes at the position of its first node; its other
 * nodes are skipped.  It is formed only when that is the same work:
 * a result that is not written has no reader but the group (and is not
 * a graph output); what the group writes does not overlap what it
 * reads (except that the norm kernels, which read a row whole before
 * writing it, may write their results in the very place of their
 * inputs); and no node between the group's first and last reads or
 * writes memory the group writes early, or writes what the group
 * reads.  Results are bit-identical to
 * the separate kernels' (the same operations in the same order).
 *
 * A sub-graph of the scheduler shows the nodes of one split: a result
 * another backend's split reads is copied from the results this split
 * writes, and the patterns above never leave such a result unwritten
 * in the model graphs (a norm's result is read by its mul alone).
 *
 * TESSERA_CUDA_FUSION=0 turns fusion off (cuda-backend.c).  */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "cuda-impl.h"
#include "../op-checks.h"
#include <tessera/ops.h>          /* TSR_ROPE_NEOX */

/* The byte range [lo, hi) a tensor's elements span.  */
static void
span (const tsr_tensor *t, const char **lo, const char **hi)
{
  *lo = t->data;
  *hi = (const char *) t->data + tsr_nbytes (t);
}

static bool
overlaps (const tsr_tensor *a, const tsr_tensor *b)
{
  const char *al, *ah, *bl, *bh;

  if (!a || !b || !a->data || !b->data)
    return false;
  span (a, &al, &ah);
  span (b, &bl, &bh);
  return al < bh && bl < ah;
}

/* Same memory, same layout.  */
static bool
same_place (const tsr_tensor *a, const tsr_tensor *b)
{
  if (a->data != b->data || a->type != b->type)
    return false;
  for (int i = 0; i < 4; i++)
    if (a->ne[i] != b->ne[i] || a->nb[i] != b->nb[i])
      return false;
  return true;
}

static bool
same_shape (const tsr_tensor *a, const tsr_tensor *b)
{
  for (int i = 0; i < 4; i++)
    if (a->ne[i] != b->ne[i])
      return false;
  return true;
}

static bool
is_f32 (const tsr_tensor *t)
{
  return t && t->type == TSR_TYPE_F32;
}

/* Whether T is read by no node of G but USER, is no view's source, and
   is not an output of the graph.  */
static bool
sole_reader (const tsr_graph *g, const tsr_tensor *t, const tsr_tensor *user)
{
  if (t->flags & TSR_FLAG_OUTPUT)
    return false;
  for (int i = 0; i < tsr_graph_n_nodes (g); i++)
    {
      const tsr_tensor *n = tsr_graph_node (g, i);
      if (n->view_src == t)
        return false;
      if (n == user)
        continue;
      for (int j = 0; j < TSR_MAX_SRC; j++)
        if (n->src[j] == t)
          return false;
    }
  return true;
}

/* The group of nodes at positions POS[0 .. N-1] of G (increasing),
   computed at POS[0], writing OUT[0 .. NOUT-1] (OUT[o] the result of
   the node at OUT_AT[o]) and reading IN[0 .. NIN-1]: whether what it
   writes overlaps nothing it reads, and whether no node between its
   first and last reads or writes a result the group now writes before
   that node (the allocator may have given that memory to something
   the node uses) or writes what the group reads.  */
static bool
group_safe (const tsr_graph *g, const int *pos, int n,
            tsr_tensor *const *out, const int *out_at, int nout,
            tsr_tensor *const *in, int nin)
{
  for (int o = 0; o < nout; o++)
    {
      for (int k = 0; k < nin; k++)
        if (overlaps (out[o], in[k]))
          return false;
      for (int p = o + 1; p < nout; p++)
        if (overlaps (out[o], out[p]))
          return false;
    }
  for (int i = pos[0] + 1, m = 1; i < pos[n - 1]; i++)
    {
      const tsr_tensor *node = tsr_graph_node (g, i);
      if (m < n && i == pos[m])
        {
          m++;
          continue;
        }
      if (tsr_op_get_kind (node->op) == TSR_OP_KIND_VIEW)
        continue;
      for (int o = 0; o < nout; o++)
        {
          if (out_at[o] < i)
            continue;           /* written before this node either way */
          if (overlaps (node, out[o]))
            return false;
          for (int j = 0; j < TSR_MAX_SRC; j++)
            if (overlaps (node->src[j], out[o]))
              return false;
        }
      for (int k = 0; k < nin; k++)
        if (overlaps (node, in[k]))
          return false;
    }
  return true;
}

/* The next node after position I that computes (not a view), or -1.  */
static int
next_compute (const tsr_graph *g, int i)
{
  for (i++; i < tsr_graph_n_nodes (g); i++)
    if (tsr_op_get_kind (tsr_graph_node (g, i)->op) != TSR_OP_KIND_VIEW)
      return i;
  return -1;
}

/* mul (NORM, w) as the second node of a fused norm: w f32, broadcast
   over the norm's shape.  */
static bool
norm_weight (const tsr_tensor *mul, const tsr_tensor *norm)
{
  const tsr_tensor *w = mul->src[1];

  if (mul->op != TSR_OP_MUL || mul->src[0] != norm || !is_f32 (mul)
      || !is_f32 (w) || !same_shape (mul, norm))
    return false;
  for (int i = 0; i < 4; i++)
    if (norm->ne[i] % w->ne[i] != 0)
      return false;
  return true;
}

/* rms_norm at I (after an add at I0 when ADD), mul next.  */
static int
match_norm (const tsr_graph *g, int i0, struct tsr_cuda_step *steps)
{
  tsr_tensor *first = tsr_graph_node (g, i0);
  bool add = first->op == TSR_OP_ADD;
  int i1 = add ? next_compute (g, i0) : i0;
  int i2 = i1 >= 0 ? next_compute (g, i1) : -1;
  tsr_tensor *norm, *mul;

  if (i2 < 0)
    return 0;
  norm = tsr_graph_node (g, i1);
  mul = tsr_graph_node (g, i2);
  if (norm->op != TSR_OP_RMS_NORM || !is_f32 (norm)
      || !is_f32 (norm->src[0]) || !norm_weight (mul, norm)
      || !sole_reader (g, norm, mul))
    return 0;
  if (add)
    {
      tsr_tensor *a = first->src[0], *b = first->src[1];
      tsr_tensor *in[1] = { mul->src[1] }, *out[1] = { mul };
      int pos[3] = { i0, i1, i2 }, at[1] = { i2 };
      if (norm->src[0] != first || !is_f32 (first) || !is_f32 (a)
          || !is_f32 (b) || !same_shape (a, first) || !same_shape (b, first)
          || !group_safe (g, pos, 3, out, at, 1, in, 1)
          || overlaps (first, mul) || overlaps (first, mul->src[1]))
        return 0;
      /* The sum and the result over an addend only in its very place:
         the kernel reads a row before it writes it (the addends are
         dead after the add, so the allocator may reuse them).  */
      if ((overlaps (first, a) && !same_place (first, a))
          || (overlaps (first, b) && !same_place (first, b))
          || (overlaps (mul, a) && !same_place (mul, a))
          || (overlaps (mul, b) && !same_place (mul, b)))
        return 0;
      steps[i0] = (struct tsr_cuda_step) { TSR_CUDA_STEP_ADD_NORM_MUL, 3, 0,
                                           { i0, i1, i2 } };
      steps[i1].kind = steps[i2].kind = TSR_CUDA_STEP_SKIP;
      return 3;
    }
  tsr_tensor *x = norm->src[0];
  tsr_tensor *in[1] = { mul->src[1] }, *out[1] = { mul };
  int pos[2] = { i1, i2 }, at[1] = { i2 };
  if (!group_safe (g, pos, 2, out, at, 1, in, 1)
      || (overlaps (mul, x) && !same_place (mul, x)))
    return 0;
  steps[i1] = (struct tsr_cuda_step) { TSR_CUDA_STEP_NORM_MUL, 2, 0,
                                       { i1, i2 } };
  steps[i2].kind = TSR_CUDA_STEP_SKIP;
  return 2;
}

/* A product the matrix-vector kernels take in a set: two-dimensional,
   block weights.  */
static bool
mmv_member (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *b = d->src[1];

  if (d->op != TSR_OP_MUL_MAT || !tsr_cuda_mmv_ready (d))
    return false;
  return a->ne[2] * a->ne[3] == 1 && b->ne[2] * b->ne[3] == 1;
}

/* Of one set: the same activations, weight type and row length.  */
static bool
mmv_mates (const tsr_tensor *x, const tsr_tensor *y)
{
  return x->src[1] == y->src[1] && x->src[0]->type == y->src[0]->type
         && x->src[0]->ne[0] == y->src[0]->ne[0];
}

/* Products at I: with a gated unit after both (MMV_GLU), or with the
   next products of the same activations within a few nodes (MMV_SET).  */
static int
match_mmv (const tsr_graph *g, int i, struct tsr_cuda_step *steps)
{
  enum { LOOK = 8 };              /* nodes searched for mates */
  tsr_tensor *first = tsr_graph_node (g, i);
  int i1 = next_compute (g, i), i2 = i1 >= 0 ? next_compute (g, i1) : -1;

  if (!mmv_member (first))
    return 0;
  if (i2 >= 0)
    {
      tsr_tensor *second = tsr_graph_node (g, i1);
      tsr_tensor *glu = tsr_graph_node (g, i2);
      if ((glu->op == TSR_OP_SWIGLU || glu->op == TSR_OP_GEGLU)
          && glu->src[1] && is_f32 (glu) && glu->nb[0] == 4
          && mmv_member (second) && mmv_mates (first, second)
          && same_shape (first, second) && same_shape (glu, first)
          && ((glu->src[0] == first && glu->src[1] == second)
              || (glu->src[0] == second && glu->src[1] == first))
          && sole_reader (g, first, glu) && sole_reader (g, second, glu))
        {
          tsr_tensor *in[3] = { first->src[1], first->src[0],
                                second->src[0] }, *out[1] = { glu };
          int pos[3] = { i, i1, i2 }, at[1] = { i2 };
          if (group_safe (g, pos, 3, out, at, 1, in, 3))
            {
              /* members[0] the gate, [1] the up product.  */
              bool gate_first = glu->src[0] == first;
              steps[i] = (struct tsr_cuda_step) {
                TSR_CUDA_STEP_MMV_GLU, 3, 0,
                { gate_first ? i : i1, gate_first ? i1 : i, i2 } };
              steps[i1].kind = steps[i2].kind = TSR_CUDA_STEP_SKIP;
              return 3;
            }
        }
    }
  int pos[CU_MMV_MAX_SET] = { i };
  tsr_tensor *out[CU_MMV_MAX_SET] = { first };
  tsr_tensor *in[CU_MMV_MAX_SET + 1] = { first->src[1], first->src[0] };
  int n = 1;
  for (int j = next_compute (g, i), seen = 0;
       j >= 0 && seen < LOOK && n < CU_MMV_MAX_SET;
       j = next_compute (g, j), seen++)
    {
      tsr_tensor *t = tsr_graph_node (g, j);
      if (steps[j].kind == TSR_CUDA_STEP_RUN && mmv_member (t)
          && mmv_mates (first, t))
        {
          pos[n] = j;
          out[n] = t;
          in[n + 1] = t->src[0];
          n++;
        }
    }
  /* Fewer members until the group is safe.  */
  while (n > 1 && !group_safe (g, pos, n, out, pos, n, in, n + 1))
    n--;
  if (n < 2)
    return 0;
  steps[i] = (struct tsr_cuda_step) { TSR_CUDA_STEP_MMV_SET, (uint8_t) n, 0,
                                      { pos[0], pos[1], n > 2 ? pos[2] : -1 } };
  for (int k = 1; k < n; k++)
    steps[pos[k]].kind = TSR_CUDA_STEP_SKIP;
  return n;
}

/* Whether node T can be a phase of k_phases: a rope of f32 and at most
   CU_PHASE_ROPE_MAX elements, or a set_rows of at most CU_PHASE_ROWS_MAX
   source rows (its one-block kernel).  */
static bool
phase_ok (const tsr_tensor *t)
{
  if (t->op == TSR_OP_ROPE)
    return is_f32 (t) && is_f32 (t->src[0])
           && tsr_nelements (t) <= CU_PHASE_ROPE_MAX;
  if (t->op == TSR_OP_SET_ROWS)
    return is_f32 (t->src[1])
           && t->src[1]->ne[1] * t->src[1]->ne[2] * t->src[1]->ne[3]
              <= CU_PHASE_ROWS_MAX;
  return false;
}

/* Phases from I: the computing nodes after it while they can be.  */
static int
match_phases (const tsr_graph *g, int i, struct tsr_cuda_step *steps)
{
  int pos[CU_PHASES_MAX] = { i }, n = 1;

  if (!phase_ok (tsr_graph_node (g, i)))
    return 0;
  for (int j = next_compute (g, i); j >= 0 && n < CU_PHASES_MAX
       && steps[j].kind == TSR_CUDA_STEP_RUN
       && phase_ok (tsr_graph_node (g, j)); j = next_compute (g, j))
    pos[n++] = j;
  if (n < 2)
    return 0;
  steps[i] = (struct tsr_cuda_step) { TSR_CUDA_STEP_PHASES, (uint8_t) n, 0,
                                      { pos[0], pos[1], -1, -1 } };
  for (int k = 1; k < n; k++)
    {
      steps[i].members[k] = pos[k];
      steps[pos[k]].kind = TSR_CUDA_STEP_SKIP;
    }
  return n;
}

/* Whether T's elements lie densely in row-major order.  */
static bool
dense (const tsr_tensor *t)
{
  size_t nb = tsr_type_traits (t->type)->type_size;

  if (t->nb[0] != nb)
    return false;
  for (int i = 1; i < 4; i++)
    {
      nb *= (size_t) t->ne[i - 1];
      if (t->nb[i] != nb && t->ne[i] > 1)
        return false;
    }
  return true;
}

/* Whether the activations B of a product are R itself, or R's memory
   as it is (a reshape of a dense R).  */
static bool
same_memory (const tsr_tensor *b, const tsr_tensor *r)
{
  return b == r || (b->view_src == r && b->data == r->data && dense (b)
                    && dense (r) && b->type == r->type
                    && tsr_nelements (b) == tsr_nelements (r));
}

/* Steps whose result the next launch multiplies in 8-bit integers
   (cuda-mmvq.cu) as its only activations: a norm group (its result two-
   dimensional) or flash_attn_ext (its result dense; the product reads
   its memory as it is, as for one token) rounds them too (Q8_OUT), and
   the product does not (Q8_IN).  Bit for bit the same rounding; one
   kernel fewer.  */
static void
plan_q8 (const tsr_graph *g, struct tsr_cuda_step *steps)
{
  for (int i = 0; i < tsr_graph_n_nodes (g); i++)
    {
      int kind = steps[i].kind, j = i;
      const tsr_tensor *r = tsr_graph_node (g, steps[i].members[steps[i].n
                                                                - 1]);
      bool norm = kind == TSR_CUDA_STEP_NORM_MUL
                  || kind == TSR_CUDA_STEP_ADD_NORM_MUL;
      bool attn = kind == TSR_CUDA_STEP_RUN
                  && r->op == TSR_OP_FLASH_ATTN_EXT && is_f32 (r)
                  && dense (r) && r->ne[0] % 32 == 0;
      if (!norm && !attn)
        continue;
      if (norm && r->ne[2] * r->ne[3] != 1)
        continue;
      /* The next launch: the next computing node not in a group.  */
      do
        j = next_compute (g, j);
      while (j >= 0 && steps[j].kind == TSR_CUDA_STEP_SKIP);
      if (j < 0)
        continue;
      const tsr_tensor *p = tsr_graph_node (g, j);
      if ((steps[j].kind == TSR_CUDA_STEP_RUN
           || steps[j].kind == TSR_CUDA_STEP_MMV_SET
           || steps[j].kind == TSR_CUDA_STEP_MMV_GLU)
          && p->op == TSR_OP_MUL_MAT && tsr_cuda_mmv_integer (p)
          && (norm ? p->src[1] == r : same_memory (p->src[1], r)))
        {
          steps[i].q8 = TSR_CUDA_Q8_OUT;
          steps[j].q8 = TSR_CUDA_Q8_IN;
        }
    }
}

int
tsr_cuda_fuse_plan (const tsr_graph *g, struct tsr_cuda_step *steps)
{
  int n = tsr_graph_n_nodes (g), fused = 0;

  for (int i = 0; i < n; i++)
    steps[i] = (struct tsr_cuda_step) { TSR_CUDA_STEP_RUN, 1, 0,
                                        { i, -1, -1, -1 } };
  for (int i = 0; i < n; i++)
    {
      const tsr_tensor *t = tsr_graph_node (g, i);
      int k = 0;
      if (steps[i].kind != TSR_CUDA_STEP_RUN)
        continue;
      if (t->op == TSR_OP_ADD || t->op == TSR_OP_RMS_NORM)
        k = match_norm (g, i, steps);
      else if (t->op == TSR_OP_MUL_MAT)
        k = match_mmv (g, i, steps);
      else if (t->op == TSR_OP_ROPE || t->op == TSR_OP_SET_ROWS)
        k = match_phases (g, i, steps);
      fused += k > 0 ? k - 1 : 0;
    }
  plan_q8 (g, steps);
  return fused;
}

/* Launching a group.  */

static int
fused_launched (struct tsr_cuda_backend *be, const tsr_tensor *d, int err)
{
  if (err == 0)
    return TSR_OK;
  return tsr_set_error (TSR_ERR_BACKEND, "cuda: %s: fused kernel ending in "
                        "%s '%s' failed: %s", be->d->name, tsr_op_name (d->op),
                        d->name, cudaGetErrorString ((cudaError_t) err));
}

int
tsr_cuda_fuse_launch (struct tsr_cuda_backend *be, const tsr_graph *g,
                      const struct tsr_cuda_step *step)
{
  tsr_tensor *m[4];
  struct tsr_cuda_mmv_set set;
  struct tsr_cuda_phases ph;

  for (int k = 0; k < step->n; k++)
    m[k] = tsr_graph_node (g, step->members[k]);
  switch (step->kind)
    {
    case TSR_CUDA_STEP_NORM_MUL:
    case TSR_CUDA_STEP_ADD_NORM_MUL:
      {
        bool add = step->kind == TSR_CUDA_STEP_ADD_NORM_MUL;
        tsr_tensor *norm = m[add ? 1 : 0], *mul = m[add ? 2 : 1];
        const tsr_tensor *x = norm->src[0];
        char *q8 = NULL;
        void *ds8 = NULL;
        if (step->q8 == TSR_CUDA_Q8_OUT
            && !(q8 = tsr_cuda_mmv_q8_scratch (be, mul, &ds8)))
          return TSR_ERR_NO_MEMORY;
        return fused_launched (be, mul, tsr_cuda_rms_norm_mul
          (be->stream, tsr_get_op_param_f32 (norm, 0), tsr_cuda_desc (mul),
           tsr_cuda_desc (add ? m[0]->src[0] : x),
           tsr_cuda_desc (add ? m[0]->src[1] : x),
           tsr_cuda_desc (add ? m[0] : x), add, tsr_cuda_desc (mul->src[1]),
           (signed char *) q8, ds8));
      }
    case TSR_CUDA_STEP_MMV_SET:
    case TSR_CUDA_STEP_MMV_GLU:
      set.glu = step->kind == TSR_CUDA_STEP_MMV_GLU ? (int) m[2]->op : 0;
      set.n = set.glu ? 2 : step->n;
      for (int k = 0; k < set.n; k++)
        {
          set.a[k] = tsr_cuda_desc (m[k]->src[0]);
          set.d[k] = tsr_cuda_desc (m[k]);
        }
      if (set.glu)
        set.d[0] = tsr_cuda_desc (m[2]);
      return tsr_cuda_mmv_launch (be, &set, m[0]->src[0]->type,
                                  m[0]->src[1], m[step->n - 1]);
    case TSR_CUDA_STEP_PHASES:
      ph.n = step->n;
      for (int k = 0; k < step->n; k++)
        {
          struct tsr_cuda_phase *p = &ph.p[k];
          const tsr_tensor *t = m[k];
          memset (p, 0, sizeof *p);
          p->op = (int) t->op;
          p->d = tsr_cuda_desc (t);
          if (t->op == TSR_OP_ROPE)
            {
              const tsr_tensor *ff = t->src[2];
              p->a = tsr_cuda_desc (t->src[0]);
              p->b = tsr_cuda_desc (t->src[1]);
              p->x = tsr_cuda_desc (ff ? ff : t->src[1]);
              p->has_ff = ff != NULL;
              p->n_dims = tsr_get_op_param_i32 (t, 0);
              p->neox = tsr_get_op_param_i32 (t, 1) == TSR_ROPE_NEOX;
              p->freq_base = tsr_get_op_param_f32 (t, 2);
              p->freq_scale = tsr_get_op_param_f32 (t, 3);
            }
          else
            {
              p->a = tsr_cuda_desc (t->src[1]);
              p->b = tsr_cuda_desc (t->src[2]);
              p->dtype = (int) t->type;
              p->tag = step->members[k] + 1;
              be->uses_status = true;
            }
        }
      return fused_launched (be, m[step->n - 1],
                             tsr_cuda_run_phases (be->stream, &ph, be->status));
    default:
      return tsr_set_error (TSR_ERR_BACKEND, "cuda: %s: no fused kernel "
                            "%d", be->d->name, step->kind);
    }
}
