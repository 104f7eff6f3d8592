/* sched.c - running one graph over several backends.
 *
 * Owns: placing nodes on backends, ordering them so that each backend's
 * nodes run in as few splits as the dependencies allow, the copies
 * that carry a split's inputs to its backend, allocation through one
 * graph allocator per backend, compute, and the counters of all that.
 * The user's graph is never modified: a node that reads a copy is
 * computed through a clone (the scheduler's own tensor, sharing the
 * node's memory, whose sources name the copies), so the same graph can
 * be computed by another scheduler in turn.
 *
 * Placement follows memory (see place_fixed and place_nodes):
 *   1. a node named with tsr_sched_set_backend runs there;
 *   2. a node that writes into memory that exists (a cache row, the
 *      destination of tsr_cpy) runs on the device that memory belongs
 *      to, else on one that reaches it;
 *   3. a node that reads memory that exists (a weight, a cache) runs
 *      on a backend at that memory: the device it belongs to, or, for
 *      host memory, any device that computes on host memory in place
 *      (the CPU, BLAS, an integrated GPU), by priority.  When none of
 *      them supports the node, it runs on the first backend that does
 *      and the memory is copied there on every compute: an exception,
 *      counted and logged;
 *   4. every other node goes where it costs the fewest bytes copied:
 *      its inputs that would have to move, and its result, once per
 *      other device among its readers that cannot read it in place.
 *      A first pass in graph order, then sweeps backwards and forwards
 *      until nothing improves.  Ties stay with the previous node's
 *      backend, so a chain of such nodes (norm, rope, add...) follows
 *      the weights around it instead of splitting.
 * The nodes are then put in an order that keeps each backend's work
 * together (a topological order that switches backend only when no
 * node of the current one is ready), and cut into splits where the
 * backend changes.
 *
 * Compute queues the splits without waiting in between (see
 * plan_transfers): a split waits only for splits of other asynchronous
 * backends whose results it reads, for an event in its own queue when
 * both backends are of one registration with events, else on the host.
 * Copies go through the backends' own transfers: from host memory with
 * the receiving backend's asynchronous set (queued before the split's
 * work), into host memory with the producing backend's asynchronous get
 * queued right after the split that computes the source, between two
 * devices through a staging area of their own (pinned host memory when
 * a device offers it), allocated with the plan, never per compute.
 *
 * Thread safety: a scheduler is one thread's object; different
 * schedulers may run at once on different backends.  Two schedulers
 * that share a backend must not compute at the same time (a backend
 * runs one graph at a time).  */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera-impl.h"

#define NONE (-1)

/* A tensor carried to another backend.  */
/* How a copy moves: queued on the receiving backend from host memory
   (SET), queued on the sending backend into the receiver's host memory
   right after the split that computes the source (GET), or both
   through a staging area of its own (STAGED).  */
enum route { ROUTE_SET, ROUTE_GET, ROUTE_STAGED };

struct copy
{
  tsr_tensor *src;              /* the original (may be a view) */
  tsr_tensor *dst;              /* same layout, on backend B */
  int backend;
  int split;                    /* first split that reads it */
  enum tsr_sched_copy_kind kind;
  int from;                     /* split computing the source, or NONE */
  int owner;                    /* backend whose memory holds the source */
  enum route route;
  size_t staging_off;           /* ROUTE_STAGED */
};

/* Before split K runs: what it waits for, split FROM of another
   backend, in that backend's queue (ON_DEVICE) or on the host.  */
struct wait
{
  int from;
  bool on_device;
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
  int first, last;              /* positions in the scheduler's order */
  tsr_graph sub;                /* its non-view nodes */
  struct swap *swaps;
  int n_swaps;
  struct wait *waits;           /* in the scheduler's context */
  int n_waits;
  tsr_event *done;              /* recorded after it when waited for */
};

struct placement
{
  const tsr_tensor *t;
  int backend;
  int split;                    /* where a node is computed, or NONE */
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
  tsr_tensor **order;           /* the graph's nodes in compute order */
  struct split *splits;
  int n_splits, cap_splits;
  struct copy *copies;
  int n_copies, cap_copies;
  int n_exceptions;
  int n_host_waits, n_device_waits;     /* per compute */
  /* Per backend: whether the plan runs splits there, and the event
     recorded after its last one (asynchronous backends with events).
     PENDING: a compute was queued and not yet waited for.  */
  bool used[TSR_SCHED_MAX_BACKENDS];
  tsr_event *end[TSR_SCHED_MAX_BACKENDS];
  bool pending;
  double pending_t0;
  tsr_graph *graph;
  /* Staging for copies between two devices: pinned host memory when a
     device offers it (STAGING_BUF), else malloc'd (STAGING).  */
  tsr_buffer *staging_buf;
  void *staging;
  size_t staging_size;
  bool warned;                  /* the exceptions' warning, once */
  bool check_finite;            /* TESSERA_CHECK_FINITE: node by node */
  struct tsr_sched_stats totals;        /* the cumulative counters */
};

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

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
  if (!p->t)
    p->split = NONE;
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
  const char *cf = getenv ("TESSERA_CHECK_FINITE");
  s->check_finite = cf && *cf && strcmp (cf, "0") != 0;
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
  free (s->order);
  s->order = NULL;
  for (int i = 0; i < s->n_splits; i++)
    {
      free (s->splits[i].swaps);
      tsr_event_free (s->splits[i].done);
    }
  s->n_splits = 0;
  s->n_copies = 0;
  s->n_exceptions = 0;
  s->n_host_waits = s->n_device_waits = 0;
  for (int b = 0; b < TSR_SCHED_MAX_BACKENDS; b++)
    {
      tsr_event_free (s->end[b]);
      s->end[b] = NULL;
      s->used[b] = false;
    }
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
  tsr_sched_synchronize (s);
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
  tsr_sched_synchronize (s);
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
  s->forced[s->n_forced++] = (struct placement) { t, b, NONE };
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

/* Memory that exists before the graph is allocated: the caller's
   tensors (weights, caches), as opposed to the graph's results and its
   inputs, which get memory where they are placed.  */
static bool
has_memory (const tsr_tensor *root)
{
  return root->op == TSR_OP_NONE && root->data;
}

/* The buffer type of ROOT's memory (host arena memory: the host's).  */
static tsr_buffer_type *
memory_type (const tsr_tensor *root)
{
  return root->buffer ? tsr_buffer_get_type (root->buffer)
                      : tsr_host_buffer_type ();
}

/* Is backend B at memory of type BUFT: the device that memory belongs
   to, or, for host memory, a device that computes on host memory in
   place (not a discrete GPU: its pinned host memory is the host's,
   which it reaches only across the bus)?  */
static bool
at_memory (const tsr_sched *s, int b, tsr_buffer_type *buft)
{
  tsr_device *dev = tsr_backend_device (s->backends[b]);
  if (tsr_buffer_type_is_host (buft))
    return tsr_device_get_type (dev) != TSR_DEVICE_GPU
           && tsr_device_supports_buffer_type (dev, buft);
  return tsr_buffer_type_memory_device (buft) == dev;
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
  return tsr_device_supports_buffer_type (dev, memory_type (root));
}

/* What a copy of X carries, by the tensor whose memory it is.  */
static enum tsr_sched_copy_kind
kind_of (const tsr_tensor *x)
{
  const tsr_tensor *r = root_of (x);
  if (!has_memory (r))
    return TSR_SCHED_COPY_ACTIVATION;
  return r->flags & TSR_FLAG_PARAM ? TSR_SCHED_COPY_WEIGHT
                                   : TSR_SCHED_COPY_CACHE;
}

/* Placement of one graph: per node (index into g->nodes) its backend,
   whether a rule fixed it, and who reads it.  */
struct plan
{
  tsr_sched *s;
  tsr_graph *g;
  int n;
  int *bk;                      /* backend per node, NONE: undecided */
  unsigned char *fixed;         /* placed by rules 1-3 */
  unsigned char *view;          /* a view: goes with its memory */
  int *cstart, *cons;           /* readers of node i: cons[cstart[i]..] */
  bool reach[TSR_SCHED_MAX_BACKENDS][TSR_SCHED_MAX_BACKENDS];
};

/* Node index of T, or NONE.  The placement map holds, during planning,
   index + 1 for nodes (leafs' entries are added later).  */
static int
node_index (const struct plan *p, const tsr_tensor *t)
{
  struct placement *m = map_slot (p->s->placed, p->s->cap_placed, t);
  return m->t ? m->backend - 1 : NONE;
}

/* Where the memory of ROOT will be: its node's backend, or NONE.  */
static int
where (const struct plan *p, const tsr_tensor *root)
{
  int i = node_index (p, root);
  return i == NONE ? NONE : p->bk[i];
}

/* Would backend B need a copy of X (a source of a node)?  */
static bool
needs_copy (const struct plan *p, int b, const tsr_tensor *x)
{
  const tsr_tensor *r = root_of (x);
  if (r->data)
    return !tsr_device_supports_buffer_type
             (tsr_backend_device (p->s->backends[b]), memory_type (r));
  int w = where (p, r);
  return w != NONE && !p->reach[b][w];
}

/* Bytes copied per compute for readers on other backends of node I's
   result (or of its view V) if it ran on backend B.  */
static size_t
out_cost (const struct plan *p, int i, int b, const tsr_tensor *v)
{
  size_t c = 0;
  unsigned charged = 0;
  for (int k = p->cstart[i]; k < p->cstart[i + 1]; k++)
    {
      int r = p->cons[k];
      if (p->view[r])
        {
          c += out_cost (p, r, b, p->g->nodes[r]);
          continue;
        }
      int pr = p->bk[r];
      if (pr == NONE || pr == b || p->reach[pr][b]
          || (charged & (1u << pr)))
        continue;
      charged |= 1u << pr;
      c += tsr_nbytes (v);
    }
  return c;
}

/* Bytes copied per compute if node I ran on backend B: its inputs that
   B cannot read where they are (unless another reader on B needs the
   same copy anyway) and its result for its readers.  */
static size_t
cost (const struct plan *p, int i, int b)
{
  const tsr_tensor *node = p->g->nodes[i];
  size_t c = 0;
  for (int j = 0; j < TSR_MAX_SRC; j++)
    {
      const tsr_tensor *x = node->src[j];
      if (!x || !needs_copy (p, b, x))
        continue;
      int xi = node_index (p, x);
      bool shared = false;
      for (int k = xi == NONE ? 0 : p->cstart[xi];
           xi != NONE && k < p->cstart[xi + 1] && !shared; k++)
        shared = p->cons[k] != i && !p->view[p->cons[k]]
                 && p->bk[p->cons[k]] == b;
      if (!shared)
        c += tsr_nbytes (x);
    }
  return c + out_cost (p, i, b, node);
}

static int
exception (struct plan *p, const tsr_tensor *node, const tsr_tensor *r,
           int b)
{
  tsr_sched *s = p->s;
  s->n_exceptions++;
  tsr_log (TSR_LOG_INFO, "scheduler: %s '%s' reads '%s' in %s memory, "
           "where no backend of this scheduler can run it: it runs on %s "
           "and '%s' (%zu bytes) is copied there on every compute",
           tsr_op_name (node->op), tsr_tensor_label (node),
           tsr_tensor_label (r), tsr_buffer_type_name (memory_type (r)),
           tsr_backend_name (s->backends[b]), tsr_tensor_label (r),
           tsr_nbytes (r));
  return b;
}

static int
unsupported (const tsr_tensor *node)
{
  tsr_set_error (TSR_ERR_UNSUPPORTED, "scheduler: no backend supports node "
                 "'%s' (%s, %s [%lld, %lld, %lld, %lld])", node->name,
                 tsr_op_name (node->op), tsr_type_name (node->type),
                 (long long) node->ne[0], (long long) node->ne[1],
                 (long long) node->ne[2], (long long) node->ne[3]);
  return NONE;
}

/* The first backend by priority that supports NODE, or NONE.  */
static int
first_supporting (const tsr_sched *s, const tsr_tensor *node)
{
  for (int b = 0; b < s->n_backends; b++)
    if (tsr_backend_supports_op (s->backends[b], node))
      return b;
  return NONE;
}

/* Rule 2: a node that writes into the memory of node->view_src.  */
static int
place_writer (struct plan *p, const tsr_tensor *node, int forced)
{
  tsr_sched *s = p->s;
  const tsr_tensor *r = node->view_src;
  int w = has_memory (r) ? NONE : where (p, r);
  /* Where the memory is, then any backend that reaches it.  */
  for (int pass = 0; pass < 2; pass++)
    for (int b = 0; b < s->n_backends; b++)
      {
        bool ok = has_memory (r)
                  ? (pass ? readable (s, b, r)
                          : at_memory (s, b, memory_type (r)))
                  : (w == NONE || (pass ? p->reach[b][w] : b == w));
        if (ok && (forced == NONE || forced == b)
            && tsr_backend_supports_op (s->backends[b], node))
          return b;
      }
  tsr_set_error (TSR_ERR_UNSUPPORTED, "scheduler: %s into '%s': no "
                 "backend%s that reaches its memory supports it",
                 tsr_op_name (node->op), r->name,
                 forced == NONE ? "" : " forced for it");
  return NONE;
}

/* Rules 1-3 for node I: its backend, NONE with an error, or NONE with
   *FREE set when rule 4 decides.  */
static int
place_fixed (struct plan *p, int i, bool *free_node)
{
  tsr_sched *s = p->s;
  const tsr_tensor *node = p->g->nodes[i];
  int f = forced_on (s, node);
  *free_node = false;
  if (node->view_src)
    {
      if (has_memory (node->view_src) || where (p, node->view_src) != NONE
          || f != NONE)
        return place_writer (p, node, f);
      /* Into a result with no place yet: it goes where the writer
         does.  */
      int b = first_supporting (s, node);
      int ri = node_index (p, node->view_src);
      if (b != NONE && ri != NONE && p->bk[ri] == NONE)
        {
          p->bk[ri] = b;
          p->fixed[ri] = 1;
        }
      return b == NONE ? unsupported (node) : b;
    }
  if (f != NONE)
    {
      if (!tsr_backend_supports_op (s->backends[f], node))
        return tsr_set_error (TSR_ERR_UNSUPPORTED, "scheduler: node '%s' "
                              "(%s) is forced onto %s, which does not "
                              "support it", node->name,
                              tsr_op_name (node->op),
                              tsr_backend_name (s->backends[f])), NONE;
      return f;
    }
  /* Rule 3: memory it reads, the largest first.  */
  const tsr_tensor *mem[TSR_MAX_SRC];
  int n_mem = 0;
  for (int j = 0; j < TSR_MAX_SRC; j++)
    if (node->src[j] && has_memory (root_of (node->src[j])))
      {
        const tsr_tensor *r = root_of (node->src[j]);
        int k = n_mem++;
        for (; k > 0 && tsr_nbytes (mem[k - 1]) < tsr_nbytes (r); k--)
          mem[k] = mem[k - 1];
        mem[k] = r;
      }
  if (n_mem == 0)
    {
      *free_node = true;
      return NONE;
    }
  for (int k = 0; k < n_mem; k++)
    for (int b = 0; b < s->n_backends; b++)
      if (at_memory (s, b, memory_type (mem[k]))
          && tsr_backend_supports_op (s->backends[b], node))
        return b;
  /* Or where some backend reads it in place.  */
  for (int k = 0; k < n_mem; k++)
    for (int b = 0; b < s->n_backends; b++)
      if (readable (s, b, mem[k])
          && tsr_backend_supports_op (s->backends[b], node))
        return b;
  int b = first_supporting (s, node);
  return b == NONE ? unsupported (node) : exception (p, node, mem[0], b);
}

/* Rule 4 for node I: the backend of least cost among those that
   support it; ties go to PREFER (the previous node's), then to the
   current one, then by priority.  */
static int
cheapest (const struct plan *p, int i, int prefer)
{
  const tsr_sched *s = p->s;
  const tsr_tensor *node = p->g->nodes[i];
  int best = NONE, cur = p->bk[i];
  size_t best_cost = 0;
  for (int b = 0; b < s->n_backends; b++)
    {
      if (!tsr_backend_supports_op (s->backends[b], node))
        continue;
      size_t c = cost (p, i, b);
      bool better = best == NONE || c < best_cost
                    || (c == best_cost && b == prefer && best != prefer)
                    || (c == best_cost && b == cur && best != prefer
                        && best != cur);
      if (better)
        {
          best = b;
          best_cost = c;
        }
    }
  return best;
}

/* The reader lists of the plan's nodes.  */
static int
readers (struct plan *p)
{
  tsr_graph *g = p->g;
  int n = p->n, e = 0;
  p->cstart = calloc ((size_t) n + 1, sizeof *p->cstart);
  if (!p->cstart)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "scheduler: out of memory");
  for (int i = 0; i < n; i++)
    for (int j = 0; j < TSR_MAX_SRC; j++)
      {
        int k = g->nodes[i]->src[j] ? node_index (p, g->nodes[i]->src[j])
                                    : NONE;
        if (k != NONE)
          {
            p->cstart[k + 1]++;
            e++;
          }
      }
  for (int i = 0; i < n; i++)
    p->cstart[i + 1] += p->cstart[i];
  p->cons = malloc ((size_t) (e ? e : 1) * sizeof *p->cons);
  int *fill = malloc ((size_t) (n ? n : 1) * sizeof *fill);
  if (!p->cons || !fill)
    {
      free (fill);
      return tsr_set_error (TSR_ERR_NO_MEMORY, "scheduler: out of memory");
    }
  memcpy (fill, p->cstart, (size_t) n * sizeof *fill);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < TSR_MAX_SRC; j++)
      {
        int k = g->nodes[i]->src[j] ? node_index (p, g->nodes[i]->src[j])
                                    : NONE;
        if (k != NONE)
          p->cons[fill[k]++] = i;
      }
  free (fill);
  return TSR_OK;
}

/* The previous non-view node's backend before node I, or NONE.  */
static int
previous_backend (const struct plan *p, int i)
{
  while (--i >= 0)
    if (!p->view[i] && p->bk[i] != NONE)
      return p->bk[i];
  return NONE;
}

static int
place_nodes (struct plan *p)
{
  tsr_sched *s = p->s;
  tsr_graph *g = p->g;
  for (int a = 0; a < s->n_backends; a++)
    for (int b = 0; b < s->n_backends; b++)
      p->reach[a][b] = a == b || tsr_device_supports_buffer_type
        (tsr_backend_device (s->backends[a]),
         tsr_backend_buffer_type (s->backends[b]));
  /* Rules 1-3, in graph order; rule 4's first pass in the same walk,
     so that a node sees its inputs placed.  */
  for (int i = 0; i < p->n; i++)
    {
      const tsr_tensor *node = g->nodes[i];
      struct tsri_verdict v;
      /* Checked here once: the backends' walks trust the nodes.  */
      if (tsri_node_check (node, &v) != TSR_OK)
        return tsr_set_error (v.status, "scheduler: %s", v.msg);
      if (node->view_src && tsr_op_get_kind (node->op) == TSR_OP_KIND_VIEW)
        {
          p->view[i] = 1;
          continue;
        }
      bool free_node;
      int b = place_fixed (p, i, &free_node);
      if (!free_node && b == NONE)
        return tsr_last_status ();
      if (!free_node)
        {
          p->bk[i] = b;
          p->fixed[i] = 1;
        }
    }
  for (int i = 0; i < p->n; i++)
    if (!p->view[i] && !p->fixed[i])
      {
        int b = cheapest (p, i, previous_backend (p, i));
        if (b == NONE)
          return unsupported (g->nodes[i]), tsr_last_status ();
        p->bk[i] = b;
      }
  /* Sweeps: a node moves only to a strictly cheaper backend, so this
     ends; a few sweeps settle what a model's layers need.  */
  for (int sweep = 0; sweep < 8; sweep++)
    {
      bool moved = false;
      for (int k = 0; k < p->n; k++)
        {
          int i = sweep % 2 == 0 ? p->n - 1 - k : k;
          if (p->view[i] || p->fixed[i])
            continue;
          /* Ties go to CUR: another answer is strictly cheaper.  */
          int cur = p->bk[i];
          int b = cheapest (p, i, cur);
          if (b != cur)
            {
              p->bk[i] = b;
              moved = true;
            }
        }
      if (!moved)
        break;
    }
  return TSR_OK;
}

/* A min-heap of node indices, one per backend.  */
struct heap
{
  int *a;
  int n;
};

static void
heap_push (struct heap *h, int v)
{
  int i = h->n++;
  while (i > 0 && h->a[(i - 1) / 2] > v)
    {
      h->a[i] = h->a[(i - 1) / 2];
      i = (i - 1) / 2;
    }
  h->a[i] = v;
}

static int
heap_pop (struct heap *h)
{
  int top = h->a[0], v = h->a[--h->n], i = 0;
  for (;;)
    {
      int c = 2 * i + 1;
      if (c >= h->n)
        break;
      if (c + 1 < h->n && h->a[c + 1] < h->a[c])
        c++;
      if (h->a[c] >= v)
        break;
      h->a[i] = h->a[c];
      i = c;
    }
  if (h->n)
    h->a[i] = v;
  return top;
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

/* An edge of the order: node FROM before node TO.  */
struct edge
{
  int from, to;
};

struct edges
{
  struct edge *e;
  int n, cap;
};

static int
add_edge (struct edges *E, int from, int to)
{
  if (grow ((void **) &E->e, &E->cap, E->n, sizeof *E->e) != TSR_OK)
    return TSR_ERR_NO_MEMORY;
  E->e[E->n++] = (struct edge) { from, to };
  return TSR_OK;
}

/* An access to memory that some node writes into in place.  */
struct access
{
  const tsr_tensor *root;
  int node;
};

static int
by_root (const void *a, const void *b)
{
  const struct access *x = a, *y = b;
  if (x->root != y->root)
    return (uintptr_t) x->root < (uintptr_t) y->root ? -1 : 1;
  return x->node - y->node;
}

/* Edges that keep the graph's order of the accesses to memory written
   in place (a reader before the write reads the old contents): a
   writer comes after every access since the previous writer, a reader
   after the previous writer.  */
static int
memory_edges (const struct plan *p, struct edges *E)
{
  tsr_graph *g = p->g;
  struct access *acc = NULL;
  int n_acc = 0, cap_acc = 0, n_wr = 0, st = TSR_OK;
  const tsr_tensor **wr = malloc ((size_t) (p->n ? p->n : 1) * sizeof *wr);
  if (!wr)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "scheduler: out of memory");
  for (int i = 0; i < p->n; i++)
    if (!p->view[i] && g->nodes[i]->view_src)
      wr[n_wr++] = g->nodes[i]->view_src;
  for (int i = 0; i < p->n && n_wr && st == TSR_OK; i++)
    {
      const tsr_tensor *node = g->nodes[i], *touched[TSR_MAX_SRC + 1];
      int n_t = 0;
      if (p->view[i])
        continue;
      if (node->view_src)
        touched[n_t++] = node->view_src;
      for (int j = 0; j < TSR_MAX_SRC; j++)
        if (node->src[j])
          touched[n_t++] = root_of (node->src[j]);
      for (int t = 0; t < n_t && st == TSR_OK; t++)
        {
          bool written = false, dup = false;
          for (int w = 0; w < n_wr && !written; w++)
            written = wr[w] == touched[t];
          for (int u = 0; u < t && !dup; u++)
            dup = touched[u] == touched[t];
          if (written && !dup
              && (st = grow ((void **) &acc, &cap_acc, n_acc, sizeof *acc))
                 == TSR_OK)
            acc[n_acc++] = (struct access) { touched[t], i };
        }
    }
  free (wr);
  if (st == TSR_OK && n_acc)
    qsort (acc, (size_t) n_acc, sizeof *acc, by_root);
  for (int a = 0, end; a < n_acc && st == TSR_OK; a = end)
    {
      int last_w = NONE, since = a;
      for (end = a; end < n_acc && acc[end].root == acc[a].root; end++)
        ;
      for (int k = a; k < end && st == TSR_OK; k++)
        {
          bool writes = g->nodes[acc[k].node]->view_src == acc[k].root;
          if (writes)
            {
              for (int e = since; e < k && st == TSR_OK; e++)
                st = add_edge (E, acc[e].node, acc[k].node);
              last_w = acc[k].node;
              since = k;
            }
          else if (last_w != NONE)
            st = add_edge (E, last_w, acc[k].node);
        }
    }
  free (acc);
  return st;
}

/* The compute order: a topological order of the nodes (sources and
   in-place writes respected) that stays on one backend while it has a
   node ready, taking the earliest ready node of the graph's order, and
   otherwise moves to the backend whose ready node comes first.  Views
   compute nothing: they come as soon as they are ready.  */
static int
make_order (struct plan *p)
{
  tsr_sched *s = p->s;
  int n = p->n, st = TSR_OK;
  struct edges E = { 0 };
  for (int i = 0; i < n && st == TSR_OK; i++)
    for (int k = p->cstart[i]; k < p->cstart[i + 1] && st == TSR_OK; k++)
      st = add_edge (&E, i, p->cons[k]);
  if (st == TSR_OK)
    st = memory_edges (p, &E);
  size_t n1 = (size_t) n + 1;
  int *indeg = calloc (n1, sizeof *indeg);
  int *estart = calloc (n1, sizeof *estart);
  int *succ = malloc ((size_t) (E.n ? E.n : 1) * sizeof *succ);
  int *stack = malloc (n1 * sizeof *stack);
  int *pool = malloc (n1 * (size_t) s->n_backends * sizeof *pool);
  s->order = malloc (n1 * sizeof *s->order);
  if (st == TSR_OK && (!indeg || !estart || !succ || !stack || !pool
                       || !s->order))
    st = tsr_set_error (TSR_ERR_NO_MEMORY, "scheduler: out of memory");
  if (st == TSR_OK)
    {
      struct heap h[TSR_SCHED_MAX_BACKENDS];
      int n_stack = 0, done = 0, cur = NONE;
      for (int e = 0; e < E.n; e++)
        {
          indeg[E.e[e].to]++;
          estart[E.e[e].from + 1]++;
        }
      for (int i = 0; i < n; i++)
        estart[i + 1] += estart[i];
      memcpy (stack, estart, (size_t) n * sizeof *stack);  /* fill */
      for (int e = 0; e < E.n; e++)
        succ[stack[E.e[e].from]++] = E.e[e].to;
      for (int b = 0; b < s->n_backends; b++)
        h[b] = (struct heap) { pool + (size_t) b * n1, 0 };
      for (int i = n - 1; i >= 0; i--)
        if (indeg[i] == 0)
          {
            if (p->view[i])
              stack[n_stack++] = i;
            else
              heap_push (&h[p->bk[i]], i);
          }
      while (done < n)
        {
          int i;
          if (n_stack)
            i = stack[--n_stack];
          else
            {
              if (cur == NONE || h[cur].n == 0)
                {
                  cur = NONE;
                  for (int b = 0; b < s->n_backends; b++)
                    if (h[b].n && (cur == NONE || h[b].a[0] < h[cur].a[0]))
                      cur = b;
                }
              if (cur == NONE)
                break;
              i = heap_pop (&h[cur]);
            }
          s->order[done++] = p->g->nodes[i];
          for (int e = estart[i]; e < estart[i + 1]; e++)
            if (--indeg[succ[e]] == 0)
              {
                if (p->view[succ[e]])
                  stack[n_stack++] = succ[e];
                else
                  heap_push (&h[p->bk[succ[e]]], succ[e]);
              }
        }
      /* A graph built by tsr_graph_build has no cycle; in-place writes
         that contradict its order could make one.  */
      if (done < n)
        st = tsr_set_error (TSR_ERR_INVALID_ARG, "scheduler: the graph's "
                            "in-place writes and reads cannot be ordered");
    }
  free (E.e);
  free (indeg);
  free (estart);
  free (succ);
  free (stack);
  free (pool);
  return st;
}

/* The placement map after planning: nodes, views with their memory,
   leafs with memory at the first backend at it, and inputs with no
   memory yet where they are first read.  */
static void
publish (tsr_sched *s, const struct plan *p)
{
  tsr_graph *g = p->g;
  for (int i = 0; i < p->n; i++)
    place_on (s, g->nodes[i], p->view[i] ? NONE : p->bk[i]);
  for (int i = 0; i < g->n_leafs; i++)
    if (has_memory (g->leafs[i]))
      for (int b = s->n_backends - 1; b >= 0; b--)
        if (at_memory (s, b, memory_type (g->leafs[i])))
          place_on (s, g->leafs[i], b);
  for (int i = 0; i < p->n; i++)
    {
      const tsr_tensor *node = s->order[i];
      int b = placed_on (s, node);
      for (int j = 0; b != NONE && j < TSR_MAX_SRC; j++)
        if (node->src[j] && !root_of (node->src[j])->data
            && placed_on (s, root_of (node->src[j])) == NONE)
          place_on (s, root_of (node->src[j]), b);
    }
  for (int i = 0; i < p->n; i++)
    if (p->view[i])
      {
        int b = placed_on (s, g->nodes[i]->view_src);
        place_on (s, g->nodes[i], b == NONE ? 0 : b);
      }
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
  struct plan p = { .s = s, .g = g, .n = g->n_nodes };
  size_t n1 = (size_t) p.n + 1;
  p.bk = malloc (n1 * sizeof *p.bk);
  p.fixed = calloc (n1, 1);
  p.view = calloc (n1, 1);
  int st = p.bk && p.fixed && p.view
           ? TSR_OK
           : tsr_set_error (TSR_ERR_NO_MEMORY, "scheduler: out of memory");
  /* While planning, the map gives node indices plus one.  */
  for (int i = 0; i < p.n && st == TSR_OK; i++)
    {
      p.bk[i] = NONE;
      place_on (s, g->nodes[i], i + 1);
    }
  if (st == TSR_OK)
    st = readers (&p);
  if (st == TSR_OK)
    st = place_nodes (&p);
  if (st == TSR_OK)
    st = make_order (&p);
  if (st == TSR_OK)
    publish (s, &p);
  free (p.bk);
  free (p.fixed);
  free (p.view);
  free (p.cstart);
  free (p.cons);
  return st;
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
  s->copies[s->n_copies++] = (struct copy) { x, c, b, split, kind_of (x),
                                             NONE, NONE, ROUTE_SET, 0 };
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
      tsr_tensor *node = s->order[i];
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
      map_slot (s->placed, s->cap_placed, node)->split = s->n_splits - 1;
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
        if (tsr_op_get_kind (s->order[i]->op) != TSR_OP_KIND_VIEW)
          sp->sub.nodes[n++] = s->order[i];
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
  /* Nodes on B, in compute order; those read by another backend's
     nodes must survive B's later nodes, so they count as outputs
     here.  */
  for (int i = 0; i < n; i++)
    {
      tsr_tensor *node = s->order[i];
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

/* Tensors of G placed by a graph allocator (this scheduler's earlier
   allocation, or another scheduler's) are placed afresh: the new
   placement may differ, and another allocator's memory may be a device
   this placement does not run the node on.  Memory the caller placed
   tensors in (weights, caches, a buffer of its own) is kept.  */
static void
forget_memory (tsr_graph *g)
{
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < (pass ? g->n_nodes : g->n_leafs); i++)
      {
        tsr_tensor *t = pass ? g->nodes[i] : g->leafs[i];
        if (t->buffer && tsri_buffer_scratch (t->buffer))
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

static int plan_transfers (tsr_sched *s, tsr_graph *g);

int
tsr_sched_alloc_graph (tsr_sched *s, tsr_graph *g)
{
  if (!s || !g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "scheduler: NULL argument");
  /* The memory and events of a compute still in flight are about to be
     reused.  */
  int pst = tsr_sched_synchronize (s);
  if (pst != TSR_OK)
    return pst;
  double t0 = now_s ();
  clear_graph_state (s);
  forget_memory (g);
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
  if (st == TSR_OK)
    st = plan_transfers (s, g);
  if (st != TSR_OK)
    {
      clear_graph_state (s);
      return st;
    }
  s->graph = g;
  s->totals.n_plans++;
  s->totals.plan_seconds += now_s () - t0;
  if (s->n_exceptions && !s->warned)
    {
      s->warned = true;
      tsr_log (TSR_LOG_WARN, "scheduler: %d node%s cannot run where the "
               "memory %s read%s is, and that memory is copied on every "
               "compute (TESSERA_LOG=info names them)", s->n_exceptions,
               s->n_exceptions == 1 ? "" : "s",
               s->n_exceptions == 1 ? "it" : "they",
               s->n_exceptions == 1 ? "s" : "");
    }
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
  const tsr_tensor *r = root_of (t);
  return !r->buffer || tsr_buffer_is_host (r->buffer);
}

/* Does backend B finish its work before its calls return?  */
static bool
synchronous (const tsr_sched *s, int b)
{
  return !s->backends[b]->iface.synchronize;
}

/* The split that computes the data X shows: the split of the first node
   that is not a view along X's views (a write into a cache shows
   through views of its result); NONE for a leaf's memory.  */
static int
producer (const tsr_sched *s, const tsr_tensor *x)
{
  while (x->view_src && tsr_op_get_kind (x->op) == TSR_OP_KIND_VIEW
         && x->src[0])
    x = x->src[0];
  if (x->op == TSR_OP_NONE)
    return NONE;
  return map_slot (s->placed, s->cap_placed, x)->split;
}

/* Memory that nodes write into in place, and the backends whose nodes
   touch it: such memory shared between backends makes a split wait for
   every earlier split of the others (reads and writes of it are not
   tracked one by one across queues).  */
struct shared_mem
{
  const tsr_tensor *root;
  unsigned backends;
};

static int
find_mem (const struct shared_mem *m, int n, const tsr_tensor *root)
{
  for (int i = 0; i < n; i++)
    if (m[i].root == root)
      return i;
  return NONE;
}

/* The roots a node touches: its destination, its sources' memory.  */
static int
touched (const tsr_tensor *node, const tsr_tensor **out)
{
  int n = 0;
  if (node->view_src && tsr_op_get_kind (node->op) != TSR_OP_KIND_VIEW)
    out[n++] = node->view_src;
  for (int j = 0; j < TSR_MAX_SRC; j++)
    if (node->src[j])
      out[n++] = root_of (node->src[j]);
  return n;
}

static int
add_wait (tsr_sched *s, int k, int from, int *cap, int latest[])
{
  int a = s->splits[from].backend;
  if (latest[a] >= from)
    return TSR_OK;              /* an in-order queue: the later covers it */
  latest[a] = from;
  struct split *sp = &s->splits[k];
  for (int w = 0; w < sp->n_waits; w++)
    if (s->splits[sp->waits[w].from].backend == a)
      {
        sp->waits[w].from = from;
        return TSR_OK;
      }
  if (sp->n_waits == *cap)
    {
      int ncap = *cap ? 2 * *cap : 4;
      struct wait *nw = tsri_context_alloc (s->ctx, (size_t) ncap
                                            * sizeof *nw);
      if (!nw)
        return tsr_last_status ();
      if (sp->n_waits)
        memcpy (nw, sp->waits, (size_t) sp->n_waits * sizeof *nw);
      sp->waits = nw;
      *cap = ncap;
    }
  sp->waits[sp->n_waits++] = (struct wait) { from, false };
  return TSR_OK;
}

/* After allocation: how each copy moves and when, what each split waits
   for (events in the waiting backend's queue where both backends have
   them, the host otherwise), and which splits record events.  */
static int
plan_transfers (tsr_sched *s, tsr_graph *g)
{
  int st = TSR_OK;
  size_t staged = 0;
  /* Copies.  */
  for (int i = 0; i < s->n_copies; i++)
    {
      struct copy *c = &s->copies[i];
      c->from = producer (s, c->src);
      c->owner = placed_on (s, root_of (c->src));
      c->route = in_host_memory (c->src) ? ROUTE_SET
                 : in_host_memory (c->dst) ? ROUTE_GET : ROUTE_STAGED;
      if (c->route == ROUTE_STAGED)
        {
          c->staging_off = staged;
          staged += (tsr_nbytes (c->src) + 63) / 64 * 64;
        }
    }
  if (staged && !staging (s, staged, s->copies[0].owner >= 0
                                     ? s->copies[0].owner : 0,
                          s->copies[0].backend))
    return tsr_last_status ();
  /* Written memory touched by several backends.  */
  struct shared_mem *mem = NULL;
  int n_mem = 0, cap_mem = 0;
  for (int i = 0; i < g->n_nodes && st == TSR_OK; i++)
    {
      const tsr_tensor *node = s->order[i];
      if (node->view_src && tsr_op_get_kind (node->op) != TSR_OP_KIND_VIEW
          && find_mem (mem, n_mem, node->view_src) == NONE
          && (st = grow ((void **) &mem, &cap_mem, n_mem, sizeof *mem))
             == TSR_OK)
        mem[n_mem++] = (struct shared_mem) { node->view_src, 0 };
    }
  for (int i = 0; i < g->n_nodes && st == TSR_OK && n_mem; i++)
    {
      const tsr_tensor *node = s->order[i], *t[TSR_MAX_SRC + 1];
      if (tsr_op_get_kind (node->op) == TSR_OP_KIND_VIEW)
        continue;
      for (int n = touched (node, t), u = 0; u < n; u++)
        {
          int m = find_mem (mem, n_mem, t[u]);
          if (m != NONE)
            mem[m].backends |= 1u << placed_on (s, node);
        }
    }
  /* Waits, split by split.  */
  for (int k = 0; k < s->n_splits && st == TSR_OK; k++)
    {
      struct split *sp = &s->splits[k];
      int b = sp->backend, cap = 0, latest[TSR_SCHED_MAX_BACKENDS];
      bool everything = false;
      for (int a = 0; a < s->n_backends; a++)
        latest[a] = NONE;
      for (int i = sp->first; i <= sp->last && st == TSR_OK; i++)
        {
          const tsr_tensor *node = s->order[i], *t[TSR_MAX_SRC + 1];
          if (tsr_op_get_kind (node->op) == TSR_OP_KIND_VIEW)
            continue;
          for (int j = 0; j < TSR_MAX_SRC && st == TSR_OK; j++)
            {
              int from = node->src[j] ? producer (s, node->src[j]) : NONE;
              if (from != NONE && s->splits[from].backend != b)
                st = add_wait (s, k, from, &cap, latest);
            }
          for (int n = touched (node, t), u = 0; u < n; u++)
            {
              int m = find_mem (mem, n_mem, t[u]);
              everything |= m != NONE && (mem[m].backends & ~(1u << b));
            }
        }
      /* Copies read here whose source a split computes.  */
      for (int i = 0; i < s->n_copies && st == TSR_OK; i++)
        if (s->copies[i].split == k && s->copies[i].from != NONE)
          st = add_wait (s, k, s->copies[i].from, &cap, latest);
      for (int j = k - 1; everything && j >= 0 && st == TSR_OK; j--)
        if (s->splits[j].backend != b)
          st = add_wait (s, k, j, &cap, latest);
      /* A synchronous backend's work is done when its split returns.  */
      int n = 0;
      for (int w = 0; w < sp->n_waits; w++)
        {
          int a = s->splits[sp->waits[w].from].backend;
          if (synchronous (s, a))
            continue;
          tsr_backend *to = s->backends[b], *fr = s->backends[a];
          sp->waits[w].on_device = !synchronous (s, b)
                                   && to->iface.event_wait
                                   && fr->iface.event_record
                                   && to->device->reg == fr->device->reg;
          sp->waits[n++] = sp->waits[w];
        }
      sp->n_waits = n;
    }
  free (mem);
  /* Events where a split is waited for and its device has them; a host
     wait without one synchronizes the backend instead.  */
  for (int k = 0; k < s->n_splits && st == TSR_OK; k++)
    for (int w = 0; w < s->splits[k].n_waits; w++)
      {
        struct split *from = &s->splits[s->splits[k].waits[w].from];
        tsr_backend *be = s->backends[from->backend];
        if (!from->done && be->iface.event_record)
          {
            from->done = tsr_event_new (tsr_backend_device (be));
            tsr_clear_error ();
          }
        if (!from->done)
          s->splits[k].waits[w].on_device = false;
      }
  for (int k = 0; k < s->n_splits; k++)
    for (int w = 0; w < s->splits[k].n_waits; w++)
      {
        s->n_host_waits += !s->splits[k].waits[w].on_device;
        s->n_device_waits += s->splits[k].waits[w].on_device;
      }
  /* The end of a compute on each asynchronous backend, so that waiting
     for this compute does not wait for work queued after it.  */
  for (int k = 0; k < s->n_splits; k++)
    s->used[s->splits[k].backend] = true;
  for (int b = 0; b < s->n_backends && st == TSR_OK; b++)
    if (s->used[b] && !synchronous (s, b)
        && s->backends[b]->iface.event_record)
      {
        s->end[b] = tsr_event_new (tsr_backend_device (s->backends[b]));
        tsr_clear_error ();
      }
  return st;
}

/* The copies read first by split K, queued on its backend (the waits
   for their sources are done).  */
static int
copies_in (tsr_sched *s, int k)
{
  tsr_backend *to = s->backends[s->splits[k].backend];
  int st = TSR_OK;
  for (int i = 0; i < s->n_copies && st == TSR_OK; i++)
    {
      const struct copy *c = &s->copies[i];
      if (c->split != k)
        continue;
      size_t n = tsr_nbytes (c->src);
      void *tmp = (char *) s->staging + c->staging_off;
      tsr_backend *own = c->owner != NONE ? s->backends[c->owner] : NULL;
      switch (c->route)
        {
        case ROUTE_SET:
          st = tsr_backend_tensor_set_async (to, c->dst, c->src->data, 0, n);
          break;
        case ROUTE_GET:
          /* Done by the sending side after its split, except for memory
             no split computes (a weight, a cache read as it is).  */
          if (c->from == NONE)
            st = tsr_backend_tensor_get (own, c->src, c->dst->data, 0, n);
          break;
        case ROUTE_STAGED:
          if (c->from == NONE)
            st = tsr_backend_tensor_get (own, c->src, tmp, 0, n);
          if (st == TSR_OK)
            st = tsr_backend_tensor_set_async (to, c->dst, tmp, 0, n);
          break;
        }
    }
  return st;
}

/* The copies whose source split K computed, queued on its backend
   after its work.  */
static int
copies_out (tsr_sched *s, int k)
{
  tsr_backend *be = s->backends[s->splits[k].backend];
  int st = TSR_OK;
  for (int i = 0; i < s->n_copies && st == TSR_OK; i++)
    {
      const struct copy *c = &s->copies[i];
      if (c->from != k || c->route == ROUTE_SET)
        continue;
      void *to = c->route == ROUTE_GET ? c->dst->data
                                       : (char *) s->staging + c->staging_off;
      st = tsr_backend_tensor_get_async (be, c->src, to, 0,
                                         tsr_nbytes (c->src));
    }
  return st;
}

static int
wait_for (tsr_sched *s, const struct wait *w, tsr_backend *be)
{
  const struct split *from = &s->splits[w->from];
  if (w->on_device)
    return tsr_backend_event_wait (be, from->done);
  return from->done ? tsr_event_synchronize (from->done)
                    : tsr_backend_synchronize (s->backends[from->backend]);
}

/* TESSERA_CHECK_FINITE: whether the f32 or f16 result of NODE, just
   computed on BE, holds a NaN or an infinity; an error naming the node,
   its op, its inputs and the first such element when it does.  */
static int
check_node (tsr_backend *be, tsr_tensor *node)
{
  if ((node->type != TSR_TYPE_F32 && node->type != TSR_TYPE_F16)
      || !tsr_is_contiguous (node))
    return TSR_OK;
  size_t n = (size_t) tsr_nelements (node), bytes = tsr_nbytes (node);
  void *buf = malloc (bytes ? bytes : 1);
  if (!buf)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "check-finite: out of memory");
  int st = tsr_backend_tensor_get (be, node, buf, 0, bytes);
  size_t bad = n;
  float v = 0;
  for (size_t i = 0; st == TSR_OK && i < n && bad == n; i++)
    {
      v = node->type == TSR_TYPE_F32 ? ((const float *) buf)[i]
          : tsr_fp16_to_fp32 (((const tsr_fp16_t *) buf)[i]);
      if (!isfinite (v))
        bad = i;
    }
  free (buf);
  if (st != TSR_OK || bad == n)
    return st;
  char inputs[256] = "";
  size_t len = 0;
  for (int j = 0; j < TSR_MAX_SRC && node->src[j] && len < sizeof inputs;
       j++)
    len += (size_t) snprintf (inputs + len, sizeof inputs - len, "%s'%s'",
                              j ? ", " : "", tsr_tensor_label (node->src[j]));
  return tsr_set_error (TSR_ERR_NUMERIC, "check-finite: node '%s' (%s of "
                        "%s, on %s) holds %s at element %zu of %zu",
                        tsr_tensor_label (node), tsr_op_name (node->op),
                        inputs[0] ? inputs : "nothing",
                        tsr_backend_name (be), isnan (v) ? "NaN" : "an "
                        "infinity", bad, n);
}

/* Split SP on BE node by node, each result checked before the next
   node can reuse its memory.  */
static int
compute_checked (tsr_backend *be, struct split *sp)
{
  int st = TSR_OK;
  for (int i = 0; i < sp->sub.n_nodes && st == TSR_OK; i++)
    {
      tsr_tensor *node = sp->sub.nodes[i];
      if (tsr_op_get_kind (node->op) == TSR_OP_KIND_VIEW)
        continue;
      struct tsr_graph one = sp->sub;
      one.nodes = sp->sub.nodes + i;
      one.n_nodes = 1;
      st = be->iface.graph_compute (be, &one);
      if (st == TSR_OK)
        st = tsr_backend_synchronize (be);
      if (st == TSR_OK)
        st = check_node (be, node);
    }
  return st;
}

int
tsr_sched_graph_compute_async (tsr_sched *s, tsr_graph *g)
{
  if (!s || !g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "scheduler: NULL argument");
  if (g != s->graph)
    return tsr_set_error (TSR_ERR_STATE, "scheduler: graph not allocated "
                          "by this scheduler (call tsr_sched_alloc_graph)");
  /* One compute in flight per scheduler: its memory is the next's.  */
  int st = tsr_sched_synchronize (s);
  if (st != TSR_OK)
    return st;
  double t0 = now_s (), inside = 0, t;
  /* Splits are queued one after the other; a split waits only for the
     splits whose results it reads, in its own queue where it can.  */
  for (int k = 0; k < s->n_splits && st == TSR_OK; k++)
    {
      struct split *sp = &s->splits[k];
      tsr_backend *be = s->backends[sp->backend];
      t = now_s ();
      for (int w = 0; w < sp->n_waits && st == TSR_OK; w++)
        st = wait_for (s, &sp->waits[w], be);
      if (st == TSR_OK)
        st = copies_in (s, k);
      if (st == TSR_OK)
        st = s->check_finite ? compute_checked (be, sp)
                             : be->iface.graph_compute (be, &sp->sub);
      if (st == TSR_OK)
        st = copies_out (s, k);
      if (st == TSR_OK && sp->done)
        st = tsr_event_record (sp->done, be);
      inside += now_s () - t;
    }
  for (int b = 0; b < s->n_backends && st == TSR_OK; b++)
    if (s->end[b])
      st = tsr_event_record (s->end[b], s->backends[b]);
  double end = now_s ();
  s->totals.compute_seconds += end - t0;
  s->totals.overhead_seconds += end - t0 - inside;
  if (st != TSR_OK)
    {
      /* Nothing stays in flight after a failure; the first failure is
         the one reported, with its message.  */
      for (int b = 0; b < s->n_backends; b++)
        st = tsri_sync_after (s->backends[b], st);
      return st;
    }
  s->pending = true;
  s->pending_t0 = end;
  return TSR_OK;
}

int
tsr_sched_synchronize (tsr_sched *s)
{
  if (!s || !s->pending)
    return TSR_OK;
  double t0 = now_s ();
  int st = TSR_OK;
  char msg[1024] = "";
  /* Every backend waits, even after a failure; the first failure is
     the one reported, with its message.  */
  for (int b = 0; b < s->n_backends; b++)
    if (s->used[b])
      {
        int r = s->end[b] ? tsr_event_synchronize (s->end[b])
                          : tsr_backend_synchronize (s->backends[b]);
        if (r != TSR_OK && st == TSR_OK)
          {
            st = r;
            snprintf (msg, sizeof msg, "%s", tsr_last_error ());
          }
      }
  if (st != TSR_OK)
    tsr_set_error (st, "%s", msg);
  s->pending = false;
  s->totals.compute_seconds += now_s () - t0;
  if (st == TSR_OK)
    {
      s->totals.n_computes++;
      for (int i = 0; i < s->n_copies; i++)
        s->totals.total_bytes[s->copies[i].kind]
          += tsr_nbytes (s->copies[i].src);
    }
  return st;
}

int
tsr_sched_graph_compute (tsr_sched *s, tsr_graph *g)
{
  int st = tsr_sched_graph_compute_async (s, g);
  return st == TSR_OK ? tsr_sched_synchronize (s) : st;
}

void
tsr_sched_get_stats (const tsr_sched *s, struct tsr_sched_stats *stats)
{
  if (!stats)
    return;
  memset (stats, 0, sizeof *stats);
  if (!s)
    return;
  *stats = s->totals;
  stats->n_splits = s->n_splits;
  stats->n_copies = s->n_copies;
  stats->n_exceptions = s->n_exceptions;
  stats->n_host_waits = s->n_host_waits;
  stats->n_device_waits = s->n_device_waits;
  for (int i = 0; i < s->n_copies; i++)
    {
      stats->copies[s->copies[i].kind]++;
      stats->bytes[s->copies[i].kind] += tsr_nbytes (s->copies[i].src);
    }
}

void
tsr_sched_clear_stats (tsr_sched *s)
{
  if (s)
    memset (&s->totals, 0, sizeof s->totals);
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

static const char *const kind_names[TSR_SCHED_COPY_KINDS] = {
  "weight", "cache", "activation"
};

void
tsr_sched_print (const tsr_sched *s, void *stream)
{
  FILE *f = stream ? stream : stderr;
  if (!s || !s->graph)
    {
      fprintf (f, "scheduler: no graph allocated\n");
      return;
    }
  struct tsr_sched_stats st;
  tsr_sched_get_stats (s, &st);
  fprintf (f, "scheduler: %d splits, %d copies per compute (bytes: "
           "weights %llu, cache %llu, activations %llu), %d exception%s, "
           "waits between splits: %d on the host, %d in a device's "
           "queue\n", st.n_splits, st.n_copies,
           (unsigned long long) st.bytes[TSR_SCHED_COPY_WEIGHT],
           (unsigned long long) st.bytes[TSR_SCHED_COPY_CACHE],
           (unsigned long long) st.bytes[TSR_SCHED_COPY_ACTIVATION],
           st.n_exceptions, st.n_exceptions == 1 ? "" : "s",
           st.n_host_waits, st.n_device_waits);
  for (int k = 0; k < s->n_splits; k++)
    {
      const struct split *sp = &s->splits[k];
      fprintf (f, "  split %d on %s: %d nodes\n", k,
               tsr_backend_name (s->backends[sp->backend]), sp->sub.n_nodes);
      for (int w = 0; w < sp->n_waits; w++)
        fprintf (f, "    wait for split %d (%s) %s\n", sp->waits[w].from,
                 tsr_backend_name (s->backends[s->splits[sp->waits[w].from]
                                               .backend]),
                 sp->waits[w].on_device ? "in its queue" : "on the host");
      for (int i = 0; i < s->n_copies; i++)
        if (s->copies[i].split == k)
          fprintf (f, "    copy %s '%s' (%zu bytes) to %s\n",
                   kind_names[s->copies[i].kind],
                   tsr_tensor_label (s->copies[i].src),
                   tsr_nbytes (s->copies[i].src),
                   tsr_backend_name (s->backends[s->copies[i].backend]));
      for (int i = 0; i < sp->sub.n_nodes; i++)
        fprintf (f, "    %s '%s'\n", tsr_op_name (sp->sub.nodes[i]->op),
                 tsr_tensor_label (sp->sub.nodes[i]));
    }
}
