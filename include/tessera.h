/* tessera.h - the Tessera tensor library.  Include this.  */
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
#include <tessera/vocab.h>
#include <tessera/sched.h>
#include <tessera/model.h>
#include <tessera/comm.h>
#include <tessera/version.h>

#endif /* TESSERA_H */
