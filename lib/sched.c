/* sched.c - running one graph over several backends.
 *
 * Owns: placing nodes on backends, cutting the node list into splits,
 * the copies that carry a split's inputs to its backend, allocation
 * through one graph allocator per backend, and compute.  The user's
 * graph is never modified: a node that reads a copy is computed
 * through a clone (the scheduler's own tensor, sharing the node's
 * memory, whose sources name the copies), so the same graph can be
 * computed by another scheduler in turn.
 *
 * Copies go through the backends' own transfers: from host memory with
 * the receiving backend's asynchronous set (queued before the split's
 * work, no wait), into host memory with the sending backend's get,
 * between two devices through one staging area in pinned host memory
 * when a device offers it (allocated once, grown when needed), never
 * through a malloc per copy.
 *
 * Thread safety: a scheduler is one thread's object; different
 * schedulers may run at once on different backends.  Two schedulers
 * that share a backend must not compute at the same time (a backend
 * runs one graph at a time).  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera-impl.h"

#define NONE (-1)

/* A tensor carried to another backend.  */
struct copy
{
  tsr_tensor *src;              /* the original (may be a view) */
  tsr_tensor *dst;              /* same layout, on backend B */
  int backend;
  int split;                    /* first split that reads it */
};

/* Inside a split, node->src[j] is read through a copy.  */
struct swap
{
  tsr_tensor *node;
  int j;
  tsr_tensor *copy;
};

struct split
{
  int backend;
  int first, last;              /* node indices in the user's graph */
  tsr_graph sub;                /* its non-view nodes */
  struct swap *swaps;
  int n_swaps;
};

struct placement
{
  const tsr_tensor *t;
  int backend;
};

struct tsr_sched
{
  int n_backends;
  tsr_backend *backends[TSR_SCHED_MAX_BACKENDS];
  tsr_gallocr *galloc[TSR_SCHED_MAX_BACKENDS];
  /* Forced placements (user) and computed ones (per graph).  */
  struct placement *forced, *placed;
  size_t n_forced, cap_forced, cap_placed;
  tsr_context *ctx;             /* copies, sub-graphs: per graph */
  struct split *splits;
  int n_splits, cap_splits;
  struct copy *copies;
  int n_copies, cap_copies;
  tsr_graph *graph;
  /* Staging for copies between two devices: pinned host memory when a
     device offers it (STAGING_BUF), else malloc'd (STAGING).  */
  tsr_buffer *staging_buf;
  void *staging;
  size_t staging_size;
};

/* Placement maps: open addressing keyed by tensor pointer.  */

static struct placement *
map_slot (struct placement *m, size_t cap, const tsr_tensor *t)
{
  size_t h = tsri_hash_ptr (t, cap);
  while (m[h].t && m[h].t != t)
    h = (h + 1) & (cap - 1);
  return &m[h];
}

static int
placed_on (const tsr_sched *s, const tsr_tensor *t)
{
  if (!s->placed)
    return NONE;
  struct placement *p = map_slot (s->placed, s->cap_placed, t);
  return p->t ? p->backend : NONE;
}

static void
place_on (tsr_sched *s, const tsr_tensor *t, int b)
{
  struct placement *p = map_slot (s->placed, s->cap_placed, t);
  p->t = t;
  p->backend = b;
}

static int
forced_on (const tsr_sched *s, const tsr_tensor *t)
{
  for (size_t i = 0; i < s->n_forced; i++)
    if (s->forced[i].t == t)
      return s->forced[i].backend;
  return NONE;
}

static int
backend_index (const tsr_sched *s, const tsr_backend *be)
{
  for (int i = 0; i < s->n_backends; i++)
    if (s->backends[i] == be)
      return i;
  return NONE;
}

tsr_sched *
tsr_sched_new (tsr_backend *const *backends, int n_backends)
{
  if (!backends || n_backends < 1 || n_backends > TSR_SCHED_MAX_BACKENDS)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "scheduler: %d backends (1 to %d "
                     "allowed)", n_backends, TSR_SCHED_MAX_BACKENDS);
      return NULL;
    }
  tsr_sched *s = calloc (1, sizeof *s);
  if (!s)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "scheduler: out of memory");
      return NULL;
    }
  s->n_backends = n_backends;
  for (int i = 0; i < n_backends; i++)
    {
      s->backends[i] = backends[i];
      s->galloc[i] = backends[i]
        ? tsr_gallocr_new (tsr_backend_buffer_type (backends[i])) : NULL;
      if (!s->galloc[i])
        {
          if (!backends[i])
            tsr_set_error (TSR_ERR_INVALID_ARG, "scheduler: backend %d is "
                           "NULL", i);
          tsr_sched_free (s);
          return NULL;
        }
    }
  return s;
}

static void
clear_graph_state (tsr_sched *s)
{
  tsr_context_free (s->ctx);
  s->ctx = NULL;
  free (s->placed);
  s->placed = NULL;
  s->cap_placed = 0;
  for (int i = 0; i < s->n_splits; i++)
    free (s->splits[i].swaps);
  s->n_splits = 0;
  s->n_copies = 0;
  s->graph = NULL;
}

static void
free_staging (tsr_sched *s)
{
  if (s->staging_buf)
    tsr_buffer_free (s->staging_buf);
  else
    free (s->staging);
  s->staging_buf = NULL;
  s->staging = NULL;
  s->staging_size = 0;
}

void
tsr_sched_free (tsr_sched *s)
{
  if (!s)
    return;
  clear_graph_state (s);
  free_staging (s);
  for (int i = 0; i < s->n_backends; i++)
    tsr_gallocr_free (s->galloc[i]);
  free (s->splits);
  free (s->copies);
  free (s->forced);
  free (s);
}

void
tsr_sched_reset (tsr_sched *s)
{
  if (!s)
    return;
  clear_graph_state (s);
  s->n_forced = 0;
}

int
tsr_sched_set_backend (tsr_sched *s, tsr_tensor *t, tsr_backend *backend)
{
  if (!s || !t)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "scheduler: NULL argument");
  int b = backend_index (s, backend);
  if (b == NONE)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "scheduler: backend %s is "
                          "not one of the scheduler's",
                          tsr_backend_name (backend));
  for (size_t i = 0; i < s->n_forced; i++)
    if (s->forced[i].t == t)
      {
        s->forced[i].backend = b;
        return TSR_OK;
      }
  if (s->n_forced == s->cap_forced)
    {
      size_t cap = s->cap_forced ? 2 * s->cap_forced : 16;
      struct placement *n = realloc (s->forced, cap * sizeof *n);
      if (!n)
        return tsr_set_error (TSR_ERR_NO_MEMORY, "scheduler: out of memory");
      s->forced = n;
      s->cap_forced = cap;
    }
  s->forced[s->n_forced++] = (struct placement) { t, b };
  return TSR_OK;
}

tsr_backend *
tsr_sched_get_backend (tsr_sched *s, const tsr_tensor *t)
{
  int b = s && t ? placed_on (s, t) : NONE;
  return b == NONE ? NULL : s->backends[b];
}

static const tsr_tensor *
root_of (const tsr_tensor *t)
{
  return t->view_src ? t->view_src : t;
}

/* The backend whose memory holds T's data already, or NONE.  */
static int
owner_of_data (const tsr_sched *s, const tsr_tensor *t)
{
  if (!t->data || !t->buffer)
    return NONE;
  for (int b = 0; b < s->n_backends; b++)
    if (tsr_buffer_get_type (t->buffer)
        == tsr_backend_buffer_type (s->backends[b]))
      return b;
  return NONE;
}

/* Can backend B read ROOT where it lives?  */
static bool
readable (const tsr_sched *s, int b, const tsr_tensor *root)
{
  tsr_device *dev = tsr_backend_device (s->backends[b]);
  if (!root->data)
    {
      /* It will be allocated where it is placed; another backend that
         reads that memory type needs no copy (its allocator keeps the
         tensor alive for the reader, see allocate_on).  */
      int p = placed_on (s, root);
      return p == b
             || (p != NONE
                 && tsr_device_supports_buffer_type (dev,
                      tsr_backend_buffer_type (s->backends[p])));
    }
  if (!root->buffer)            /* host arena memory */
    return tsr_device_supports_buffer_type (dev, tsr_host_buffer_type ());
  return tsr_device_supports_buffer_type (dev,
                                          tsr_buffer_get_type (root->buffer));
}

/* Choose a backend for NODE (not a view).  */
static int
choose (tsr_sched *s, const tsr_tensor *node)
{
  int b = forced_on (s, node);
  if (b != NONE)
    {
      if (!tsr_backend_supports_op (s->backends[b], node))
        return tsr_set_error (TSR_ERR_UNSUPPORTED, "scheduler: node '%s' "
                              "(%s) is forced onto %s, which does not "
                              "support it", node->name,
                              tsr_op_name (node->op),
                              tsr_backend_name (s->backends[b])), NONE;
      return b;
    }
  /* Where its weights live.  */
  for (int j = 0; j < TSR_MAX_SRC; j++)
    {
      const tsr_tensor *src = node->src[j];
      if (!src)
        continue;
      const tsr_tensor *r = root_of (src);
      if (!(r->flags & TSR_FLAG_PARAM) && r->op != TSR_OP_NONE)
        continue;
      /* Several backends may share one memory type (host memory):
         the first of them, by priority, that supports the node.  */
      for (int w = 0; r->data && r->buffer && w < s->n_backends; w++)
        if (tsr_buffer_get_type (r->buffer)
            == tsr_backend_buffer_type (s->backends[w])
            && tsr_backend_supports_op (s->backends[w], node))
          return w;
    }
  for (b = 0; b < s->n_backends; b++)
    if (tsr_backend_supports_op (s->backends[b], node))
      return b;
  tsr_set_error (TSR_ERR_UNSUPPORTED, "scheduler: no backend supports node "
                 "'%s' (%s, %s [%lld, %lld, %lld, %lld])", node->name,
                 tsr_op_name (node->op), tsr_type_name (node->type),
                 (long long) node->ne[0], (long long) node->ne[1],
                 (long long) node->ne[2], (long long) node->ne[3]);
  return NONE;
}

/* A backend for NODE, which writes into the memory of node->view_src:
   forced, or the first that supports it and reaches that memory.  */
static int
choose_writer (tsr_sched *s, const tsr_tensor *node)
{
  const tsr_tensor *r = node->view_src;
  bool unplaced = !r->data && placed_on (s, r) == NONE;
  int forced = forced_on (s, node);
  for (int b = 0; b < s->n_backends; b++)
    if ((forced == NONE || forced == b)
        && tsr_backend_supports_op (s->backends[b], node)
        && (unplaced || readable (s, b, r)))
      return b;
  tsr_set_error (TSR_ERR_UNSUPPORTED, "scheduler: %s into '%s': no "
                 "backend%s that reaches its memory supports it",
                 tsr_op_name (node->op), r->name,
                 forced == NONE ? "" : " forced for it");
  return NONE;
}

static int
assign (tsr_sched *s, tsr_graph *g)
{
  size_t cap = 64;
  while (cap < 2 * (size_t) (g->n_nodes + g->n_leafs) + 16)
    cap *= 2;
  s->placed = calloc (cap, sizeof *s->placed);
  if (!s->placed)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "scheduler: out of memory");
  s->cap_placed = cap;
  for (int i = 0; i < g->n_leafs; i++)
    {
      int b = owner_of_data (s, g->leafs[i]);
      if (b != NONE)
        place_on (s, g->leafs[i], b);
    }
  for (int i = 0; i < g->n_nodes; i++)
    {
      const tsr_tensor *node = g->nodes[i];
      struct tsri_verdict v;
      int b;
      /* Checked here once: the backends' walks trust the nodes.  */
      if (tsri_node_check (node, &v) != TSR_OK)
        return tsr_set_error (v.status, "scheduler: %s", v.msg);
      if (node->view_src && tsr_op_get_kind (node->op) == TSR_OP_KIND_VIEW)
        {
          /* Views go with the memory they view.  */
          b = placed_on (s, node->view_src);
          if (b == NONE)
            b = owner_of_data (s, node->view_src);
          if (b == NONE)
            b = 0;
        }
      else if (node->view_src)
        {
          /* cpy-like nodes write into their destination's memory: they
             run on a backend that reaches it.  */
          if ((b = choose_writer (s, node)) == NONE)
            return tsr_last_status ();
        }
      else if ((b = choose (s, node)) == NONE)
        return tsr_last_status ();
      place_on (s, node, b);
      /* Inputs without memory yet live where they are first read.  */
      for (int j = 0; j < TSR_MAX_SRC; j++)
        if (node->src[j] && !root_of (node->src[j])->data
            && placed_on (s, root_of (node->src[j])) == NONE)
          place_on (s, root_of (node->src[j]), b);
    }
  return TSR_OK;
}

static int
grow (void **arr, int *cap, int n, size_t elem)
{
  if (n < *cap)
    return TSR_OK;
  int ncap = *cap ? 2 * *cap : 16;
  void *a = realloc (*arr, (size_t) ncap * elem);
  if (!a)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "scheduler: out of memory");
  *arr = a;
  *cap = ncap;
  return TSR_OK;
}

/* The copy of X on backend B, made if needed.  */
static tsr_tensor *
copy_of (tsr_sched *s, tsr_tensor *x, int b, int split)
{
  for (int i = 0; i < s->n_copies; i++)
    if (s->copies[i].src == x && s->copies[i].backend == b)
      return s->copies[i].dst;
  if (grow ((void **) &s->copies, &s->cap_copies, s->n_copies,
            sizeof *s->copies) != TSR_OK)
    return NULL;
  tsr_tensor *c = tsr_new_tensor_4d (s->ctx, x->type, x->ne[0], x->ne[1],
                                     x->ne[2], x->ne[3]);
  if (!c)
    return NULL;
  memcpy (c->nb, x->nb, sizeof c->nb);   /* same layout: a byte copy */
  snprintf (c->name, sizeof c->name, "%.50s#%s", x->name,
            tsr_backend_name (s->backends[b]));
  c->flags |= TSR_FLAG_INPUT;
  place_on (s, c, b);
  s->copies[s->n_copies++] = (struct copy) { x, c, b, split };
  return c;
}

static int
add_swap (struct split *sp, tsr_tensor *node, int j, tsr_tensor *copy,
          int *cap)
{
  if (grow ((void **) &sp->swaps, cap, sp->n_swaps, sizeof *sp->swaps)
      != TSR_OK)
    return TSR_ERR_NO_MEMORY;
  sp->swaps[sp->n_swaps++] = (struct swap) { node, j, copy };
  return TSR_OK;
}

static int
make_splits (tsr_sched *s, tsr_graph *g)
{
  int swap_cap = 0;
  for (int i = 0; i < g->n_nodes; i++)
    {
      tsr_tensor *node = g->nodes[i];
      if (tsr_op_get_kind (node->op) == TSR_OP_KIND_VIEW)
        continue;
      int b = placed_on (s, node);
      struct split *sp = s->n_splits ? &s->splits[s->n_splits - 1] : NULL;
      if (!sp || sp->backend != b)
        {
          if (grow ((void **) &s->splits, &s->cap_splits, s->n_splits,
                    sizeof *s->splits) != TSR_OK)
            return TSR_ERR_NO_MEMORY;
          sp = &s->splits[s->n_splits++];
          memset (sp, 0, sizeof *sp);
          sp->backend = b;
          sp->first = i;
          swap_cap = 0;
        }
      sp->last = i;
      for (int j = 0; j < TSR_MAX_SRC; j++)
        {
          tsr_tensor *x = node->src[j];
          if (!x || readable (s, b, root_of (x)))
            continue;
          tsr_tensor *c = copy_of (s, x, b, s->n_splits - 1);
          if (!c || add_swap (sp, node, j, c, &swap_cap) != TSR_OK)
            return tsr_last_status ();
        }
    }
  /* Sub-graphs: the non-view nodes of each split.  */
  for (int k = 0; k < s->n_splits; k++)
    {
      struct split *sp = &s->splits[k];
      int n = 0;
      sp->sub.nodes = tsri_context_alloc (s->ctx, (size_t) (sp->last
                                          - sp->first + 1)
                                          * sizeof *sp->sub.nodes);
      if (!sp->sub.nodes)
        return tsr_last_status ();
      for (int i = sp->first; i <= sp->last; i++)
        if (tsr_op_get_kind (g->nodes[i]->op) != TSR_OP_KIND_VIEW)
          sp->sub.nodes[n++] = g->nodes[i];
      sp->sub.n_nodes = sp->sub.cap_nodes = n;
      sp->sub.ctx = s->ctx;
    }
  return TSR_OK;
}

/* Allocate what lives on backend B through its graph allocator.  */
static int
allocate_on (tsr_sched *s, tsr_graph *g, int b)
{
  tsr_graph *gb = tsr_graph_new (s->ctx);
  if (!gb)
    return tsr_last_status ();
  int n = g->n_nodes, m = g->n_leafs + s->n_copies;
  gb->nodes = tsri_context_alloc (s->ctx, (size_t) (n + 1) * sizeof (void *));
  gb->leafs = tsri_context_alloc (s->ctx, (size_t) (m + 1) * sizeof (void *));
  int32_t *saved = tsri_context_alloc (s->ctx, (size_t) (n + 1)
                                       * sizeof *saved);
  if (!gb->nodes || !gb->leafs || !saved)
    return tsr_last_status ();
  for (int i = 0; i < g->n_leafs; i++)
    if (placed_on (s, g->leafs[i]) == b && !g->leafs[i]->data)
      gb->leafs[gb->n_leafs++] = g->leafs[i];
  for (int i = 0; i < s->n_copies; i++)
    if (s->copies[i].backend == b)
      gb->leafs[gb->n_leafs++] = s->copies[i].dst;
  /* Nodes on B; those read by another backend's nodes must survive
     B's later nodes, so they count as outputs here.  */
  for (int i = 0; i < n; i++)
    {
      tsr_tensor *node = g->nodes[i];
      if (placed_on (s, root_of (node)) != b)
        continue;
      saved[gb->n_nodes] = node->flags;
      gb->nodes[gb->n_nodes++] = node;
    }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < TSR_MAX_SRC; j++)
      {
        tsr_tensor *x = g->nodes[i]->src[j];
        if (x && root_of (x)->op != TSR_OP_NONE
            && placed_on (s, g->nodes[i]) != b
            && placed_on (s, root_of (x)) == b)
          ((tsr_tensor *) root_of (x))->flags |= TSR_FLAG_OUTPUT;
      }
  int st = gb->n_nodes || gb->n_leafs
           ? tsr_gallocr_alloc_graph (s->galloc[b], gb) : TSR_OK;
  for (int i = 0; i < gb->n_nodes; i++)
    gb->nodes[i]->flags = saved[i];
  return st;
}

/* Tensors of G placed by an earlier allocation of this scheduler are
   placed afresh: the new placement may differ.  */
static void
forget_memory (tsr_sched *s, tsr_graph *g)
{
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < (pass ? g->n_nodes : g->n_leafs); i++)
      {
        tsr_tensor *t = pass ? g->nodes[i] : g->leafs[i];
        for (int b = 0; t->buffer && b < s->n_backends; b++)
          if (t->buffer == tsri_gallocr_buffer (s->galloc[b]))
            {
              t->buffer = NULL;
              t->data = NULL;
            }
      }
}

/* In each split's sub-graph, a node that reads copies becomes a clone
   of it (its memory, its parameters) whose sources are the copies.
   Called once the nodes have their memory.  */
static int
make_clones (tsr_sched *s)
{
  for (int k = 0; k < s->n_splits; k++)
    {
      struct split *sp = &s->splits[k];
      for (int i = 0; i < sp->sub.n_nodes; i++)
        {
          tsr_tensor *node = sp->sub.nodes[i], *clone = NULL;
          for (int w = 0; w < sp->n_swaps; w++)
            {
              if (sp->swaps[w].node != node)
                continue;
              if (!clone)
                {
                  clone = tsr_new_tensor_1d (s->ctx, TSR_TYPE_F32, 1);
                  if (!clone)
                    return tsr_last_status ();
                  *clone = *node;
                }
              clone->src[sp->swaps[w].j] = sp->swaps[w].copy;
            }
          if (clone)
            sp->sub.nodes[i] = clone;
        }
    }
  return TSR_OK;
}

int
tsr_sched_alloc_graph (tsr_sched *s, tsr_graph *g)
{
  if (!s || !g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "scheduler: NULL argument");
  clear_graph_state (s);
  forget_memory (s, g);
  s->ctx = tsr_context_new (true);
  if (!s->ctx)
    return tsr_last_status ();
  int st = assign (s, g);
  if (st == TSR_OK)
    st = make_splits (s, g);
  for (int b = 0; st == TSR_OK && b < s->n_backends; b++)
    st = allocate_on (s, g, b);
  if (st == TSR_OK)
    st = make_clones (s);
  if (st != TSR_OK)
    {
      clear_graph_state (s);
      return st;
    }
  s->graph = g;
  const char *dbg = getenv ("TESSERA_SCHED_DEBUG");
  if (dbg && *dbg && strcmp (dbg, "0") != 0)
    tsr_sched_print (s, stderr);
  return TSR_OK;
}

/* N bytes of host memory to stage a copy between two devices, in
   pinned memory of one of them where offered.  */
static void *
staging (tsr_sched *s, size_t n, int from, int to)
{
  if (n <= s->staging_size)
    return s->staging;
  free_staging (s);
  for (int k = 0; k < 2 && !s->staging_buf; k++)
    {
      tsr_buffer_type *pinned = tsr_device_host_buffer_type
        (tsr_backend_device (s->backends[k ? to : from]));
      if (pinned)
        s->staging_buf = tsr_buffer_type_alloc (pinned, n);
    }
  tsr_clear_error ();             /* no pinned memory: plain memory */
  s->staging = s->staging_buf ? tsr_buffer_base (s->staging_buf)
                              : malloc (n ? n : 1);
  if (!s->staging)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "scheduler: no memory to stage a "
                     "copy of %zu bytes", n);
      return NULL;
    }
  s->staging_size = n;
  return s->staging;
}

static bool
in_host_memory (const tsr_tensor *t)
{
  return !t->buffer || tsr_buffer_is_host (t->buffer);
}

/* Carry C->src to C->dst for the split about to run on C->backend.  */
static int
run_copy (tsr_sched *s, const struct copy *c)
{
  size_t n = tsr_nbytes (c->src);
  int from = placed_on (s, root_of (c->src));
  tsr_backend *to = s->backends[c->backend];
  int st = TSR_OK;

  /* The source's backend has finished writing it.  */
  if (from != NONE)
    st = tsr_backend_synchronize (s->backends[from]);
  if (st != TSR_OK)
    return st;
  if (in_host_memory (c->src))
    /* Queued on the receiving backend before the split's work.  */
    return tsr_backend_tensor_set_async (to, c->dst, c->src->data, 0, n);
  tsr_backend *src_be = from != NONE ? s->backends[from] : NULL;
  if (in_host_memory (c->dst))
    return tsr_backend_tensor_get (src_be, c->src, c->dst->data, 0, n);
  void *tmp = staging (s, n, from != NONE ? from : c->backend, c->backend);
  if (!tmp)
    return tsr_last_status ();
  /* The staging area is reused by the next copy: the receiving side
     must have read it before that copy overwrites it.  */
  st = tsr_backend_tensor_get (src_be, c->src, tmp, 0, n);
  if (st == TSR_OK)
    st = tsr_backend_tensor_set (to, c->dst, tmp, 0, n);
  return st;
}

int
tsr_sched_graph_compute (tsr_sched *s, tsr_graph *g)
{
  if (!s || !g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "scheduler: NULL argument");
  if (g != s->graph)
    return tsr_set_error (TSR_ERR_STATE, "scheduler: graph not allocated "
                          "by this scheduler (call tsr_sched_alloc_graph)");
  int st = TSR_OK;
  for (int k = 0; k < s->n_splits && st == TSR_OK; k++)
    {
      struct split *sp = &s->splits[k];
      /* A split may read its predecessor's results in place.  */
      if (k > 0 && s->splits[k - 1].backend != sp->backend)
        st = tsr_backend_synchronize (s->backends[s->splits[k - 1].backend]);
      for (int i = 0; i < s->n_copies && st == TSR_OK; i++)
        if (s->copies[i].split == k)
          st = run_copy (s, &s->copies[i]);
      if (st != TSR_OK)
        break;
      tsr_backend *be = s->backends[sp->backend];
      st = be->iface.graph_compute (be, &sp->sub);
    }
  /* Every backend waits, even after a failure; the first failure is
     the one reported, with its message.  */
  for (int b = 0; b < s->n_backends; b++)
    st = tsri_sync_after (s->backends[b], st);
  return st;
}

int
tsr_sched_n_splits (const tsr_sched *s)
{
  return s ? s->n_splits : 0;
}

int
tsr_sched_n_copies (const tsr_sched *s)
{
  return s ? s->n_copies : 0;
}

int
tsr_sched_n_nodes_on (const tsr_sched *s, tsr_backend *backend)
{
  int b = s ? backend_index (s, backend) : NONE, n = 0;
  for (int k = 0; b != NONE && k < s->n_splits; k++)
    if (s->splits[k].backend == b)
      n += s->splits[k].sub.n_nodes;
  return n;
}

void
tsr_sched_print (const tsr_sched *s, void *stream)
{
  FILE *f = stream ? stream : stderr;
  if (!s || !s->graph)
    {
      fprintf (f, "scheduler: no graph allocated\n");
      return;
    }
  fprintf (f, "scheduler: %d splits, %d copies\n", s->n_splits, s->n_copies);
  for (int k = 0; k < s->n_splits; k++)
    {
      const struct split *sp = &s->splits[k];
      fprintf (f, "  split %d on %s: nodes %d..%d (%d to compute)\n", k,
               tsr_backend_name (s->backends[sp->backend]), sp->first,
               sp->last, sp->sub.n_nodes);
      for (int i = 0; i < s->n_copies; i++)
        if (s->copies[i].split == k)
          fprintf (f, "    copy '%s' (%zu bytes) to %s\n",
                   s->copies[i].src->name, tsr_nbytes (s->copies[i].src),
                   tsr_backend_name (s->backends[s->copies[i].backend]));
      for (int i = 0; i < sp->sub.n_nodes; i++)
        fprintf (f, "    %s '%s'\n", tsr_op_name (sp->sub.nodes[i]->op),
                 sp->sub.nodes[i]->name);
    }
}
