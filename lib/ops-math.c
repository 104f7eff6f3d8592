/* ops-math.c - see include/tessera/ops.h.  */
#include <config.h>

#include "tessera-impl.h"
