/* tessera.h - the Tessera tensor library (libtessera, pkg-config
   tessera): tensors, operations, graphs, backends, the scheduler, GGUF
   files, communication.  Include this.  Running model files is
   libtessera-model's (tessera-model.h).  */
#ifndef TESSERA_H
#define TESSERA_H

#include <tessera/status.h>
#include <tessera/log.h>
#include <tessera/types.h>
#include <tessera/tensor.h>
#include <tessera/ops.h>
#include <tessera/graph.h>
#include <tessera/backend.h>
#include <tessera/alloc.h>
#include <tessera/registry.h>
#include <tessera/gguf.h>
#include <tessera/hash.h>
#include <tessera/sched.h>
#include <tessera/comm.h>
#include <tessera/version.h>

#endif /* TESSERA_H */
