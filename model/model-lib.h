/* model-lib.h - what every file of libtessera-model includes: the
 * public API of libtessera, which is all the model library is built on
 * (tessera/module.h for tsr_set_error, the error helper every library
 * of the family shares).  Not installed.  */
#ifndef TESSERA_MODEL_LIB_H
#define TESSERA_MODEL_LIB_H

#include <tessera.h>
#include <tessera/hash.h>
#include <tessera/module.h>
#include <tessera/vocab.h>
#include <tessera/model.h>

#endif /* TESSERA_MODEL_LIB_H */
