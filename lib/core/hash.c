/* hash.c - the hash of names and keys that come from input (files,
 * tokens, merges), for Tessera's hash tables: SipHash-2-4 under a
 * 128-bit key drawn once per process from the system's random source.
 * An unkeyed hash (FNV, as before) lets a crafted file put every name
 * into one chain: 50,000 colliding keys made parsing quadratic.  With
 * a secret key, colliding inputs cannot be chosen, and each lookup
 * stays O(1) on any file.  Tables hold positions, never depend on
 * the order of hashes, so results do not vary with the key.  */
#include <config.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_SYS_RANDOM_H
#include <sys/random.h>
#endif

#include "siphash.h"
#include "tessera-impl.h"
#include <tessera/hash.h>

static uint64_t hash_key[2];
static pthread_once_t hash_once = PTHREAD_ONCE_INIT;

/* Fill BUF with N random bytes from the system; false if it has none
   to give.  */
static bool
system_random (unsigned char *buf, size_t n)
{
#ifdef HAVE_GETRANDOM
  size_t got = 0;
  while (got < n)
    {
      ssize_t r = getrandom (buf + got, n - got, GRND_NONBLOCK);
      if (r <= 0)
        break;
      got += (size_t) r;
    }
  if (got == n)
    return true;
#endif
  int fd = open ("/dev/urandom", O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return false;
  size_t have = 0;
  while (have < n)
    {
      ssize_t r = read (fd, buf + have, n - have);
      if (r <= 0)
        break;
      have += (size_t) r;
    }
  close (fd);
  return have == n;
}

static void
hash_start (void)
{
  unsigned char k[16];
  if (system_random (k, sizeof k))
    {
      memcpy (hash_key, k, sizeof hash_key);
      return;
    }
  /* No random source (a chroot without /dev): what varies between
     processes, mixed.  Weaker, but a file cannot know it in advance.  */
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  uint64_t seed[4] = { (uint64_t) ts.tv_sec, (uint64_t) ts.tv_nsec,
                       (uint64_t) getpid (), (uint64_t) (uintptr_t) &ts };
  uint64_t zero[2] = { 0, 0 };
  hash_key[0] = tsri_siphash24 (zero, seed, sizeof seed);
  seed[0] ^= 0x9e3779b97f4a7c15ULL;
  hash_key[1] = tsri_siphash24 (zero, seed, sizeof seed);
}

uint64_t
tsri_hash (const void *data, size_t len)
{
  pthread_once (&hash_once, hash_start);
  return tsri_siphash24 (hash_key, data, len);
}

uint64_t
tsri_hash_u64 (uint64_t v)
{
  unsigned char b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char) (v >> (8 * i));
  return tsri_hash (b, sizeof b);
}

uint64_t
tsr_hash (const void *data, size_t len)
{
  return tsri_hash (data, len);
}

uint64_t
tsr_hash_u64 (uint64_t v)
{
  return tsri_hash_u64 (v);
}

/* Name indexes.  */

int64_t
tsri_name_index_find (const struct tsri_name_index *ix, const char *s,
                      size_t len, tsri_name_at name_at, const void *owner)
{
  if (!ix->slots)
    return -1;
  for (uint64_t h = tsri_hash (s, len) & ix->mask;; h = (h + 1) & ix->mask)
    {
      int64_t pos = ix->slots[h] - 1;
      if (pos < 0)
        return -1;
      const char *name;
      size_t n;
      name_at (owner, pos, &name, &n);
      if (n == len && memcmp (name, s, len) == 0)
        return pos;
    }
}

static void
index_put (int64_t *slots, uint64_t mask, int64_t pos, tsri_name_at name_at,
           const void *owner)
{
  const char *name;
  size_t n;
  name_at (owner, pos, &name, &n);
  uint64_t h = tsri_hash (name, n) & mask;
  while (slots[h])
    h = (h + 1) & mask;
  slots[h] = pos + 1;
}

int
tsri_name_index_add (struct tsri_name_index *ix, int64_t pos,
                     tsri_name_at name_at, const void *owner)
{
  uint64_t cap = ix->slots ? ix->mask + 1 : 0;
  if ((uint64_t) (ix->count + 1) * 2 > cap)
    {
      uint64_t ncap = cap ? cap * 2 : 16;
      int64_t *slots = ncap <= SIZE_MAX / sizeof *slots
                       ? calloc ((size_t) ncap, sizeof *slots) : NULL;
      if (!slots)
        return tsr_set_error (TSR_ERR_NO_MEMORY, "out of memory (name "
                              "index of %lld entries)",
                              (long long) ix->count + 1);
      for (uint64_t k = 0; k < cap; k++)
        if (ix->slots[k])
          index_put (slots, ncap - 1, ix->slots[k] - 1, name_at, owner);
      free (ix->slots);
      ix->slots = slots;
      ix->mask = ncap - 1;
    }
  index_put (ix->slots, ix->mask, pos, name_at, owner);
  ix->count++;
  return TSR_OK;
}

void
tsri_name_index_free (struct tsri_name_index *ix)
{
  free (ix->slots);
  *ix = (struct tsri_name_index) { 0 };
}
