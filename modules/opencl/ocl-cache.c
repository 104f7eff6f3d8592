/* ocl-cache.c - the kernel program's binaries, kept between processes.
 *
 * Building the kernels from source takes the driver seconds (PoCL: 2.5
 * s on a cold cache of its own); the binary it made is stored in
 *
 *   $TESSERA_CACHE_DIR/opencl/KEY.bin, else
 *   $XDG_CACHE_HOME/tessera/opencl/KEY.bin, else
 *   $HOME/.cache/tessera/opencl/KEY.bin
 *
 * where KEY hashes everything the binary depends on: the kernel source,
 * the build options, the platform's name and version, the device's
 * name and version and the driver's version.  A later process loads it
 * with clCreateProgramWithBinary; an entry the driver refuses (another
 * driver, a damaged file) is rebuilt from source and rewritten.
 * TESSERA_OPENCL_CACHE=0 turns the cache off.  Entries are written to a
 * temporary file and renamed, so a reader never sees half of one; a
 * cache that cannot be written costs only the rebuild next time (said
 * at TESSERA_LOG=debug).  */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ocl-impl.h"

/* FNV-1a over the N bytes at P, continuing from H: the same in every
   process (tsr_hash is keyed per process, for tables), which a file
   name must be.  */
static uint64_t
fnv1a (uint64_t h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * UINT64_C (0x100000001b3);
  return h;
}

/* Directory DIR and its parents made as needed (mode 0700).  */
static bool
make_dirs (char *dir)
{
  for (char *p = dir + 1; *p; p++)
    if (*p == '/')
      {
        *p = '\0';
        if (mkdir (dir, 0700) != 0 && errno != EEXIST)
          {
            *p = '/';
            return false;
          }
        *p = '/';
      }
  return mkdir (dir, 0700) == 0 || errno == EEXIST;
}

/* The cache directory in BUF (N bytes), or false when the cache is off
   or has no place.  */
static bool
cache_dir (char *buf, size_t n)
{
  const char *off = getenv ("TESSERA_OPENCL_CACHE");
  const char *dir = getenv ("TESSERA_CACHE_DIR");
  const char *xdg = getenv ("XDG_CACHE_HOME");
  const char *home = getenv ("HOME");
  int len;

  if (off && strcmp (off, "0") == 0)
    return false;
  if (dir && *dir)
    len = snprintf (buf, n, "%s/opencl", dir);
  else if (xdg && *xdg == '/')
    len = snprintf (buf, n, "%s/tessera/opencl", xdg);
  else if (home && *home)
    len = snprintf (buf, n, "%s/.cache/tessera/opencl", home);
  else
    return false;
  return len > 0 && (size_t) len < n;
}

/* A string property of the platform (DEV false) or device into BUF.  */
static void
info_string (const struct tsr_opencl_device *d, bool dev, cl_uint param,
             char *buf, size_t n)
{
  buf[0] = '\0';
  if ((dev ? clGetDeviceInfo (d->id, param, n - 1, buf, NULL)
           : clGetPlatformInfo (d->platform, param, n - 1, buf, NULL))
      != CL_SUCCESS)
    buf[0] = '\0';
  buf[n - 1] = '\0';
}

bool
tsr_opencl_cache_path (const struct tsr_opencl_device *d, const char *src,
                       const char *opts, char *path, size_t n)
{
  char dir[3072], s[5][256];
  if (!cache_dir (dir, sizeof dir))
    return false;
  info_string (d, false, CL_PLATFORM_NAME, s[0], sizeof s[0]);
  info_string (d, false, CL_PLATFORM_VERSION, s[1], sizeof s[1]);
  info_string (d, true, CL_DEVICE_NAME, s[2], sizeof s[2]);
  info_string (d, true, CL_DEVICE_VERSION, s[3], sizeof s[3]);
  info_string (d, true, CL_DRIVER_VERSION, s[4], sizeof s[4]);
  /* Each string with its terminating NUL, so that no two lists of
     strings run together the same.  */
  uint64_t key = fnv1a (UINT64_C (0xcbf29ce484222325), src, strlen (src) + 1);
  key = fnv1a (key, opts, strlen (opts) + 1);
  for (int i = 0; i < 5; i++)
    key = fnv1a (key, s[i], strlen (s[i]) + 1);
  int len = snprintf (path, n, "%s/%016" PRIx64 ".bin", dir, key);
  return len > 0 && (size_t) len < n;
}

unsigned char *
tsr_opencl_cache_read (const char *path, size_t *size)
{
  FILE *f = fopen (path, "rb");
  unsigned char *data = NULL;
  long len;

  *size = 0;
  if (!f)
    return NULL;
  if (fseek (f, 0, SEEK_END) == 0 && (len = ftell (f)) > 0
      && len < (1L << 30) && fseek (f, 0, SEEK_SET) == 0
      && (data = malloc ((size_t) len))
      && fread (data, 1, (size_t) len, f) == (size_t) len)
    *size = (size_t) len;
  else
    {
      free (data);
      data = NULL;
    }
  fclose (f);
  return data;
}

bool
tsr_opencl_cache_write (const char *path, const void *data, size_t size)
{
  char dir[4096], tmp[4200];
  snprintf (dir, sizeof dir, "%s", path);
  char *slash = strrchr (dir, '/');
  if (!slash)
    return false;
  *slash = '\0';
  if (!make_dirs (dir))
    return false;
  snprintf (tmp, sizeof tmp, "%s.%ld.tmp", path, (long) getpid ());
  FILE *f = fopen (tmp, "wb");
  if (!f)
    return false;
  bool ok = fwrite (data, 1, size, f) == size;
  ok = fclose (f) == 0 && ok;
  if (ok)
    ok = rename (tmp, path) == 0;
  if (!ok)
    remove (tmp);
  return ok;
}
