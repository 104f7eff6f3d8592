/* tessera/graph.h - computation graphs.
 *
 * A graph lists, in an order that respects dependencies, the nodes
 * (tensors computed by an operation) and leafs (tensors without one:
 * inputs and weights) needed to compute one or more result tensors.  */
#ifndef TESSERA_GRAPH_H
#define TESSERA_GRAPH_H

#include <tessera/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_graph tsr_graph;

/* An empty graph owned by CTX (released with it).  */
tsr_graph *tsr_graph_new (tsr_context *ctx);
/* Add RESULT and everything it depends on.  A result is marked as an
   output.  Returns TSR_OK or an error (NULL result: the error recorded
   when it was built is kept).  */
int tsr_graph_build (tsr_graph *g, tsr_tensor *result);
/* Add T and everything it depends on, in that order, without marking
   T as an output: an order for nodes a later tsr_graph_build reaches
   anyway (say, the products of one activation next to each other, so
   that a backend may compute them in one kernel).  */
int tsr_graph_add (tsr_graph *g, tsr_tensor *t);

int tsr_graph_n_nodes (const tsr_graph *g);
tsr_tensor *tsr_graph_node (const tsr_graph *g, int i); /* i < 0: from end */
int tsr_graph_n_leafs (const tsr_graph *g);
tsr_tensor *tsr_graph_leaf (const tsr_graph *g, int i);

/* Print nodes and leafs, one per line, to STREAM (a FILE *).  */
void tsr_graph_print (const tsr_graph *g, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_GRAPH_H */
