/* tessera/hash.h - keyed hashes for tables indexed by input.
 *
 * SipHash-2-4 under a 128-bit key drawn once per process from the
 * system's random source: a table indexed by names or numbers that come
 * from a file (token texts, merges, tensor names) cannot be made to put
 * every entry in one chain, whatever the file.  Results must not depend
 * on hash values, which change from process to process.  libtessera
 * hashes GGUF keys and tensor names with it; libtessera-model its
 * vocabularies.  */
#ifndef TESSERA_HASH_H
#define TESSERA_HASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The keyed hash of the LEN bytes at DATA, and of the value V.  */
uint64_t tsr_hash (const void *data, size_t len);
uint64_t tsr_hash_u64 (uint64_t v);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_HASH_H */
