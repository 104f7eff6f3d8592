/* tessera/alloc.h - the graph allocator.
 *
 * Places every tensor of a graph in one buffer of a buffer type, giving
 * the memory of an intermediate result to later tensors once its last
 * consumer has run.  Leafs, inputs and outputs keep their memory.  The
 * buffer is kept and reused by later graphs that fit in it.  */
#ifndef TESSERA_ALLOC_H
#define TESSERA_ALLOC_H

#include <tessera/backend.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_gallocr tsr_gallocr;

tsr_gallocr *tsr_gallocr_new (tsr_buffer_type *buft);
/* Free GALLOC and its buffer.  The tensors it placed still point into
   that buffer: computing them afterwards, or allocating their graph
   with another allocator, fails with TSR_ERR_STATE ("freed").  */
void tsr_gallocr_free (tsr_gallocr *galloc);
/* Compute the layout of G and size the buffer for it without placing
   tensors (call once with the largest graph).  */
int tsr_gallocr_reserve (tsr_gallocr *galloc, tsr_graph *g);
/* Place the tensors of G that have no data yet.  */
int tsr_gallocr_alloc_graph (tsr_gallocr *galloc, tsr_graph *g);
/* Size of the allocator's buffer (0 before the first graph).  */
size_t tsr_gallocr_buffer_size (const tsr_gallocr *galloc);
/* Bytes the graphs would need without any reuse (for comparison).  */
size_t tsr_gallocr_unshared_size (const tsr_gallocr *galloc);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_ALLOC_H */
