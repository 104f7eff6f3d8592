/* cpu-ops-math.c - CPU kernels; see include/tessera/ops.h.  */
#include <config.h>

#include "cpu-impl.h"
