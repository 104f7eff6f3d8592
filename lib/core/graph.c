/* graph.c - computation graphs built from result tensors.
 *
 * Owns: the topological order of nodes and the list of leafs.  Arrays
 * live in the graph's context and grow by doubling; a small open-
 * addressing set remembers which tensors are already in the graph.  */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "tessera-impl.h"

struct tsri_visited
{
  size_t cap, count;
  const tsr_tensor **slots;
  bool *done;                   /* per slot: its walk finished */
};

tsr_graph *
tsr_graph_new (tsr_context *ctx)
{
  if (!ctx)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "graph: NULL context");
      return NULL;
    }
  tsr_graph *g = tsri_context_alloc (ctx, sizeof *g);
  if (!g)
    return NULL;
  g->ctx = ctx;
  g->visited = tsri_context_alloc (ctx, sizeof *g->visited);
  return g->visited ? g : NULL;
}

/* Insert T; returns 1 if added, 0 if present and its walk is finished,
   2 if present and still being walked (T depends on itself: a cycle),
   -1 on allocation failure.  */
static int
visited_add (tsr_graph *g, const tsr_tensor *t)
{
  struct tsri_visited *v = g->visited;
  if ((v->count + 1) * 2 > v->cap)
    {
      size_t cap = v->cap ? v->cap * 2 : 64;
      const tsr_tensor **slots = tsri_context_alloc (g->ctx,
                                                     cap * sizeof *slots);
      bool *done = tsri_context_alloc (g->ctx, cap * sizeof *done);
      if (!slots || !done)
        return -1;
      memset (done, 0, cap * sizeof *done);
      for (size_t i = 0; i < v->cap; i++)
        if (v->slots[i])
          {
            size_t h = tsri_hash_ptr (v->slots[i], cap);
            while (slots[h])
              h = (h + 1) & (cap - 1);
            slots[h] = v->slots[i];
            done[h] = v->done[i];
          }
      v->slots = slots;         /* old arrays stay in the arena */
      v->done = done;
      v->cap = cap;
    }
  size_t h = tsri_hash_ptr (t, v->cap);
  while (v->slots[h])
    {
      if (v->slots[h] == t)
        return v->done[h] ? 0 : 2;
      h = (h + 1) & (v->cap - 1);
    }
  v->slots[h] = t;
  v->done[h] = false;
  v->count++;
  return 1;
}

/* T's walk is finished (it is in the graph).  */
static void
visited_done (tsr_graph *g, const tsr_tensor *t)
{
  struct tsri_visited *v = g->visited;
  size_t h = tsri_hash_ptr (t, v->cap);
  while (v->slots[h] != t)
    h = (h + 1) & (v->cap - 1);
  v->done[h] = true;
}

static int
push (tsr_graph *g, tsr_tensor ***arr, int *n, int *cap, tsr_tensor *t)
{
  if (*n == *cap)
    {
      int ncap = *cap ? *cap * 2 : 64;
      tsr_tensor **a = tsri_context_alloc (g->ctx, (size_t) ncap * sizeof *a);
      if (!a)
        return TSR_ERR_NO_MEMORY;
      if (*n)
        memcpy (a, *arr, (size_t) *n * sizeof *a);
      *arr = a;
      *cap = ncap;
    }
  (*arr)[(*n)++] = t;
  return TSR_OK;
}

/* Post-order walk without recursion (graphs can be deep).  */
struct frame
{
  tsr_tensor *t;
  int next_src;
};

static int
visit (tsr_graph *g, tsr_tensor *root)
{
  size_t cap = 64, depth = 0;
  struct frame *stack = tsri_context_alloc (g->ctx, cap * sizeof *stack);
  if (!stack)
    return TSR_ERR_NO_MEMORY;
  int added = visited_add (g, root);
  if (added <= 0)
    return added < 0 ? TSR_ERR_NO_MEMORY : TSR_OK;
  stack[depth++] = (struct frame) { root, 0 };
  while (depth)
    {
      struct frame *f = &stack[depth - 1];
      tsr_tensor *t = f->t;
      if (f->next_src < TSR_MAX_SRC)
        {
          tsr_tensor *s = t->src[f->next_src++];
          if (!s)
            continue;
          added = visited_add (g, s);
          if (added < 0)
            return TSR_ERR_NO_MEMORY;
          if (added == 2)
            /* S is on the path from the root to T: T reads S, which
               depends on T.  A graph must not be computed in a
               circle (it would read results before they exist).  */
            return tsr_set_error (TSR_ERR_INVALID_ARG, "graph build: a "
                                  "cycle: %s '%s' reads %s '%s', which "
                                  "depends on it",
                                  tsr_op_name (t->op), tsr_tensor_label (t),
                                  tsr_op_name (s->op), tsr_tensor_label (s));
          if (!added)
            continue;
          if (depth == cap)
            {
              struct frame *ns = tsri_context_alloc (g->ctx, 2 * cap
                                                     * sizeof *ns);
              if (!ns)
                return TSR_ERR_NO_MEMORY;
              memcpy (ns, stack, cap * sizeof *ns);
              stack = ns;
              cap *= 2;
            }
          stack[depth++] = (struct frame) { s, 0 };
          continue;
        }
      depth--;
      visited_done (g, t);
      int st = t->op == TSR_OP_NONE
        ? push (g, &g->leafs, &g->n_leafs, &g->cap_leafs, t)
        : push (g, &g->nodes, &g->n_nodes, &g->cap_nodes, t);
      if (st != TSR_OK)
        return st;
    }
  return TSR_OK;
}

/* T and what it depends on into G, T marked as an output when RESULT;
   CALL ("build", "add") and WHAT (the argument) name them in errors.  */
static int
add (tsr_graph *g, tsr_tensor *t, bool result, const char *call,
     const char *what)
{
  if (!g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "graph %s: NULL graph", call);
  if (!t)
    {
      if (tsr_last_status () != TSR_OK)
        return tsr_last_status ();
      return tsr_set_error (TSR_ERR_INVALID_ARG, "graph %s: NULL %s", call,
                            what);
    }
  if (result)
    tsr_set_output (t);
  int st = visit (g, t);
  if (st == TSR_ERR_NO_MEMORY)
    tsr_set_error (st, "graph %s: out of memory", call);
  return st;
}

int
tsr_graph_build (tsr_graph *g, tsr_tensor *result)
{
  return add (g, result, true, "build", "result");
}

int
tsr_graph_add (tsr_graph *g, tsr_tensor *t)
{
  return add (g, t, false, "add", "tensor");
}

int
tsr_graph_n_nodes (const tsr_graph *g)
{
  return g ? g->n_nodes : 0;
}

tsr_tensor *
tsr_graph_node (const tsr_graph *g, int i)
{
  if (!g)
    return NULL;
  if (i < 0)
    i += g->n_nodes;
  return i >= 0 && i < g->n_nodes ? g->nodes[i] : NULL;
}

int
tsr_graph_n_leafs (const tsr_graph *g)
{
  return g ? g->n_leafs : 0;
}

tsr_tensor *
tsr_graph_leaf (const tsr_graph *g, int i)
{
  return g && i >= 0 && i < g->n_leafs ? g->leafs[i] : NULL;
}

static void
print_tensor (FILE *f, const char *what, int i, const tsr_tensor *t)
{
  fprintf (f, "%s %3d: %-10s %-5s [%lld, %lld, %lld, %lld] %s\n", what, i,
           tsr_op_name (t->op), tsr_type_name (t->type),
           (long long) t->ne[0], (long long) t->ne[1], (long long) t->ne[2],
           (long long) t->ne[3], t->name);
}

void
tsr_graph_print (const tsr_graph *g, void *stream)
{
  FILE *f = stream ? stream : stdout;
  for (int i = 0; g && i < g->n_leafs; i++)
    print_tensor (f, "leaf", i, g->leafs[i]);
  for (int i = 0; g && i < g->n_nodes; i++)
    print_tensor (f, "node", i, g->nodes[i]);
}
