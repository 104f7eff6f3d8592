/* alloc.c - the graph allocator.
 *
 * Walks a graph in execution order with an offset allocator over one
 * virtual buffer: a node gets memory before it runs, and the memory of
 * an intermediate result goes back to the free list once the last node
 * reading it (directly or through a view) has run.  Leafs, inputs and
 * outputs are never released.  The largest extent reached sizes the
 * real buffer, which is then reused by later graphs that fit.  */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "tessera-impl.h"

struct tsr_gallocr
{
  tsr_buffer_type *buft;
  tsr_buffer *buffer;
  size_t reserved;              /* size asked for by the largest graph */
  size_t unshared;
};

/* Per-tensor bookkeeping, found through a pointer hash.  */
struct slot
{
  const tsr_tensor *t;
  size_t offset;
  int last_use;                 /* node index of the last reader */
  bool placed;                  /* has an offset in this layout */
  bool keep;                    /* never released */
};

struct layout
{
  struct slot *slots;
  size_t cap;
  /* Free blocks, sorted by offset.  */
  struct block { size_t offset, size; } *free;
  size_t n_free, cap_free;
  size_t end, max_end, unshared, align;
};

static struct slot *
slot_of (struct layout *L, const tsr_tensor *t)
{
  size_t h = tsri_hash_ptr (t, L->cap);
  while (L->slots[h].t && L->slots[h].t != t)
    h = (h + 1) & (L->cap - 1);
  if (!L->slots[h].t)
    {
      L->slots[h].t = t;
      L->slots[h].last_use = -1;
    }
  return &L->slots[h];
}

static const tsr_tensor *
root_of (const tsr_tensor *t)
{
  return t->view_src ? t->view_src : t;
}

static size_t
align_up (size_t n, size_t a)
{
  return (n + a - 1) / a * a;
}

static int
take (struct layout *L, size_t size, size_t *offset)
{
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < L->n_free; i++)
    if (L->free[i].size >= size
        && (best == SIZE_MAX || L->free[i].size < L->free[best].size))
      best = i;
  if (best != SIZE_MAX)
    {
      *offset = L->free[best].offset;
      L->free[best].offset += size;
      L->free[best].size -= size;
      if (L->free[best].size == 0)
        {
          memmove (&L->free[best], &L->free[best + 1],
                   (L->n_free - best - 1) * sizeof *L->free);
          L->n_free--;
        }
      return TSR_OK;
    }
  /* Grow at the end, absorbing a free block that ends there.  */
  if (L->n_free && L->free[L->n_free - 1].offset
                   + L->free[L->n_free - 1].size == L->end)
    {
      L->end = L->free[L->n_free - 1].offset;
      L->n_free--;
    }
  *offset = L->end;
  L->end += size;
  if (L->end > L->max_end)
    L->max_end = L->end;
  return TSR_OK;
}

static int
give_back (struct layout *L, size_t offset, size_t size)
{
  size_t i = 0;
  while (i < L->n_free && L->free[i].offset < offset)
    i++;
  if (i > 0 && L->free[i - 1].offset + L->free[i - 1].size == offset)
    {
      L->free[i - 1].size += size;
      if (i < L->n_free && offset + size == L->free[i].offset)
        {
          L->free[i - 1].size += L->free[i].size;
          memmove (&L->free[i], &L->free[i + 1],
                   (L->n_free - i - 1) * sizeof *L->free);
          L->n_free--;
        }
      return TSR_OK;
    }
  if (i < L->n_free && offset + size == L->free[i].offset)
    {
      L->free[i].offset = offset;
      L->free[i].size += size;
      return TSR_OK;
    }
  if (L->n_free == L->cap_free)
    {
      size_t cap = L->cap_free ? 2 * L->cap_free : 16;
      struct block *nb = realloc (L->free, cap * sizeof *nb);
      if (!nb)
        return tsr_set_error (TSR_ERR_NO_MEMORY, "graph allocator: out of "
                              "memory");
      L->free = nb;
      L->cap_free = cap;
    }
  memmove (&L->free[i + 1], &L->free[i], (L->n_free - i) * sizeof *L->free);
  L->free[i] = (struct block) { offset, size };
  L->n_free++;
  return TSR_OK;
}

static size_t
tensor_size (tsr_gallocr *ga, struct layout *L, const tsr_tensor *t)
{
  return align_up (tsr_buffer_type_alloc_size (ga->buft, t), L->align);
}

static int
place (tsr_gallocr *ga, struct layout *L, const tsr_tensor *t, bool keep)
{
  const tsr_tensor *root = t->view_src ? t->view_src : t;
  if (root->buffer && !tsri_buffer_live (root->buffer))
    return tsr_set_error (TSR_ERR_STATE, "graph allocator: tensor '%s' is "
                          "in a buffer that has been freed (placed by an "
                          "allocator since freed?)", tsr_tensor_label (t));
  if (t->data || t->view_src)
    return TSR_OK;
  struct slot *s = slot_of (L, t);
  if (s->placed)
    return TSR_OK;
  size_t size = tensor_size (ga, L, t);
  int st = take (L, size, &s->offset);
  s->placed = true;
  s->keep = s->keep || keep || (t->flags & (TSR_FLAG_INPUT | TSR_FLAG_OUTPUT));
  L->unshared += size;
  return st;
}

/* Lay out G; fills L.  */
static int
plan (tsr_gallocr *ga, tsr_graph *g, struct layout *L)
{
  int n = g->n_nodes + g->n_leafs;
  L->cap = 16;
  while (L->cap < (size_t) n * 2 + 16)
    L->cap *= 2;
  L->slots = calloc (L->cap, sizeof *L->slots);
  if (!L->slots)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "graph allocator: out of "
                          "memory");
  L->align = tsr_buffer_type_alignment (ga->buft);
  /* Last reader of each root tensor.  */
  for (int i = 0; i < g->n_nodes; i++)
    {
      const tsr_tensor *node = g->nodes[i];
      for (int j = 0; j < TSR_MAX_SRC; j++)
        if (node->src[j])
          slot_of (L, root_of (node->src[j]))->last_use = i;
      if (node->view_src && (node->flags & TSR_FLAG_OUTPUT))
        slot_of (L, node->view_src)->keep = true;
    }
  int st = TSR_OK;
  for (int i = 0; i < g->n_leafs && st == TSR_OK; i++)
    st = place (ga, L, g->leafs[i], true);
  for (int i = 0; i < g->n_nodes && st == TSR_OK; i++)
    {
      const tsr_tensor *node = g->nodes[i];
      st = place (ga, L, node, i == g->n_nodes - 1);
      for (int j = 0; j < TSR_MAX_SRC && st == TSR_OK; j++)
        {
          if (!node->src[j])
            continue;
          struct slot *s = slot_of (L, root_of (node->src[j]));
          if (s->last_use == i && s->placed && !s->keep
              && s->t != root_of (node))
            {
              st = give_back (L, s->offset, tensor_size (ga, L, s->t));
              s->keep = true;   /* released once */
            }
        }
    }
  return st;
}

static void
layout_free (struct layout *L)
{
  free (L->slots);
  free (L->free);
}

tsr_gallocr *
tsr_gallocr_new (tsr_buffer_type *buft)
{
  if (!buft)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "graph allocator: NULL buffer "
                     "type");
      return NULL;
    }
  tsr_gallocr *ga = calloc (1, sizeof *ga);
  if (!ga)
    tsr_set_error (TSR_ERR_NO_MEMORY, "graph allocator: out of memory");
  else
    ga->buft = buft;
  return ga;
}

void
tsr_gallocr_free (tsr_gallocr *ga)
{
  if (!ga)
    return;
  tsr_buffer_free (ga->buffer);
  free (ga);
}

static int
ensure_buffer (tsr_gallocr *ga, size_t size)
{
  if (size <= ga->reserved && ga->buffer)
    return TSR_OK;
  if (size > ga->reserved)
    ga->reserved = size;
  tsr_buffer_free (ga->buffer);
  ga->buffer = tsr_buffer_type_alloc (ga->buft, ga->reserved);
  if (ga->buffer)
    tsri_buffer_set_scratch (ga->buffer);
  return ga->buffer ? TSR_OK : tsr_last_status ();
}

/* Lay out G and make the buffer big enough for it.  */
static int
plan_and_size (tsr_gallocr *ga, tsr_graph *g, struct layout *L)
{
  if (!ga || !g)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "graph allocator: NULL "
                          "argument");
  int st = plan (ga, g, L);
  if (st == TSR_OK)
    {
      ga->unshared = L->unshared;
      st = ensure_buffer (ga, L->max_end);
    }
  return st;
}

int
tsr_gallocr_reserve (tsr_gallocr *ga, tsr_graph *g)
{
  struct layout L = { 0 };
  int st = plan_and_size (ga, g, &L);
  layout_free (&L);
  return st;
}

int
tsr_gallocr_alloc_graph (tsr_gallocr *ga, tsr_graph *g)
{
  struct layout L = { 0 };
  int st = plan_and_size (ga, g, &L);
  /* Roots first, then views (whose sources are placed by then).  */
  for (size_t i = 0; st == TSR_OK && i < L.cap; i++)
    if (L.slots[i].t && L.slots[i].placed)
      st = tsr_buffer_place_tensor (ga->buffer, (tsr_tensor *) L.slots[i].t,
                                    L.slots[i].offset);
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; st == TSR_OK; i++)
      {
        tsr_tensor *t = pass ? tsr_graph_node (g, i) : tsr_graph_leaf (g, i);
        if (!t)
          break;
        if (!t->data && t->view_src)
          {
            if (!t->view_src->data)
              st = tsr_set_error (TSR_ERR_STATE, "graph allocator: view "
                                  "'%s' of a tensor that has no memory",
                                  t->name);
            else
              st = tsri_tensor_init_view (t);
          }
      }
  layout_free (&L);
  return st;
}

tsr_buffer *
tsri_gallocr_buffer (const tsr_gallocr *ga)
{
  return ga ? ga->buffer : NULL;
}

size_t
tsr_gallocr_buffer_size (const tsr_gallocr *ga)
{
  return ga && ga->buffer ? ga->buffer->size : 0;
}

size_t
tsr_gallocr_unshared_size (const tsr_gallocr *ga)
{
  return ga ? ga->unshared : 0;
}
