/* siphash.h - SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast
 * short-input PRF", 2012), written from the paper's description: a
 * keyed 64-bit hash of a byte string.  Without the 128-bit key nobody
 * can choose inputs that collide, which is what lets tables indexed
 * by names read from files stay O(1) per lookup on hostile files.
 *
 * Self-contained (no Tessera headers) so that the testsuite can check
 * it against the paper's test vector.  Not installed.  */
#ifndef TESSERA_SIPHASH_H
#define TESSERA_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define TSRI_SIP_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define TSRI_SIP_ROUND(v0, v1, v2, v3)                                \
  do                                                                  \
    {                                                                 \
      v0 += v1; v1 = TSRI_SIP_ROTL (v1, 13); v1 ^= v0;                \
      v0 = TSRI_SIP_ROTL (v0, 32);                                    \
      v2 += v3; v3 = TSRI_SIP_ROTL (v3, 16); v3 ^= v2;                \
      v0 += v3; v3 = TSRI_SIP_ROTL (v3, 21); v3 ^= v0;                \
      v2 += v1; v1 = TSRI_SIP_ROTL (v1, 17); v1 ^= v2;                \
      v2 = TSRI_SIP_ROTL (v2, 32);                                    \
    }                                                                 \
  while (0)

/* The little-endian 64-bit word of the N (< 8) bytes at P.  */
static inline uint64_t
tsri_sip_word (const unsigned char *p, size_t n)
{
  uint64_t m = 0;
  for (size_t i = 0; i < n; i++)
    m |= (uint64_t) p[i] << (8 * i);
  return m;
}

/* SipHash-2-4 of the LEN bytes at DATA under KEY (k0, k1: the key's
   bytes 0-7 and 8-15 read little-endian).  */
static inline uint64_t
tsri_siphash24 (const uint64_t key[2], const void *data, size_t len)
{
  const unsigned char *p = data;
  uint64_t v0 = key[0] ^ 0x736f6d6570736575ULL;
  uint64_t v1 = key[1] ^ 0x646f72616e646f6dULL;
  uint64_t v2 = key[0] ^ 0x6c7967656e657261ULL;
  uint64_t v3 = key[1] ^ 0x7465646279746573ULL;
  size_t whole = len - len % 8;
  for (size_t i = 0; i < whole; i += 8)
    {
      uint64_t m = tsri_sip_word (p + i, 8);
      v3 ^= m;
      TSRI_SIP_ROUND (v0, v1, v2, v3);
      TSRI_SIP_ROUND (v0, v1, v2, v3);
      v0 ^= m;
    }
  /* The last word: the remaining bytes, and the length's low byte in
     the top byte.  */
  uint64_t m = tsri_sip_word (p + whole, len % 8) | (uint64_t) len << 56;
  v3 ^= m;
  TSRI_SIP_ROUND (v0, v1, v2, v3);
  TSRI_SIP_ROUND (v0, v1, v2, v3);
  v0 ^= m;
  v2 ^= 0xff;
  for (int r = 0; r < 4; r++)
    TSRI_SIP_ROUND (v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

#endif /* TESSERA_SIPHASH_H */
