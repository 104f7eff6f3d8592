/* tessera-model.h - libtessera-model (pkg-config tessera-model): model
   files of the language model families, their forward pass as Tessera
   graphs, sessions with their key/value caches, sampling, vocabularies
   and tokenizers.  Built on libtessera's public API (tessera.h, which
   this includes).  Include this, and link -ltessera-model -ltessera.  */
#ifndef TESSERA_MODEL_UMBRELLA_H
#define TESSERA_MODEL_UMBRELLA_H

#include <tessera.h>
#include <tessera/vocab.h>
#include <tessera/model.h>
#include <tessera/chat.h>

#endif /* TESSERA_MODEL_UMBRELLA_H */
