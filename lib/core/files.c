/* files.c - what Tessera checks about a file before it reads, maps or
 * loads it: that it is a regular file (a FIFO would block a read
 * forever, a device has no end), and for a shared library that its ELF
 * headers and segments lie inside the file (the dynamic loader maps
 * segments blindly and dies of SIGBUS on a truncated file).  */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(HAVE_ELF_H) && defined(HAVE_LINK_H)
#include <elf.h>
#include <link.h>               /* ElfW: the process's own ELF class */
#endif
#ifdef ElfW
#define CHECK_ELF 1
#endif

#include "tessera-impl.h"

const char *
tsri_file_kind (unsigned mode)
{
  mode_t m = (mode_t) mode;
  if (S_ISREG (m))
    return "a regular file";
  if (S_ISDIR (m))
    return "a directory";
  if (S_ISFIFO (m))
    return "a FIFO";
  if (S_ISCHR (m))
    return "a character device";
  if (S_ISBLK (m))
    return "a block device";
#ifdef S_ISSOCK
  if (S_ISSOCK (m))
    return "a socket";
#endif
  if (S_ISLNK (m))
    return "a symbolic link";
  return "not a regular file";
}

int
tsri_open_regular (const char *path, struct stat *st, char *reason,
                   size_t size)
{
  /* Non-blocking, so that opening a FIFO does not wait for a writer;
     no controlling terminal from a tty.  */
  int fd = open (path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    {
      int e = errno;
      snprintf (reason, size, "%s", strerror (e));
      errno = e;
      return -1;
    }
  if (fstat (fd, st) != 0)
    {
      int e = errno;
      snprintf (reason, size, "%s", strerror (e));
      close (fd);
      errno = e;
      return -1;
    }
  if (!S_ISREG (st->st_mode))
    {
      snprintf (reason, size, "it is %s, not a regular file",
                tsri_file_kind ((unsigned) st->st_mode));
      close (fd);
      errno = EINVAL;
      return -1;
    }
  /* Reads block from now on (a regular file never waits anyway).  */
  int fl = fcntl (fd, F_GETFL);
  if (fl != -1)
    fcntl (fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

/* Read exactly N bytes at OFFSET; false if the file is shorter.  */
static bool
read_at (int fd, void *buf, size_t n, uint64_t offset)
{
  size_t got = 0;
  while (got < n)
    {
      ssize_t r = pread (fd, (char *) buf + got, n - got,
                         (off_t) (offset + got));
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return false;
      got += (size_t) r;
    }
  return true;
}

bool
tsri_check_shared_object (int fd, uint64_t size, char *reason,
                          size_t rsize)
{
  unsigned char ident[16];
  if (size == 0)
    {
      snprintf (reason, rsize, "is empty (0 bytes), not a shared library");
      return false;
    }
  if (size < 4 || !read_at (fd, ident, 4, 0)
      || memcmp (ident, "\177ELF", 4) != 0)
    {
      /* Text (a linker script, a libtool file under a .so name) or
         random bytes.  */
      snprintf (reason, rsize, "is not a shared library (no ELF header; "
                "%llu bytes)", (unsigned long long) size);
      return false;
    }
#ifdef CHECK_ELF
  ElfW (Ehdr) eh;
  if (size < sizeof eh || !read_at (fd, &eh, sizeof eh, 0))
    {
      snprintf (reason, rsize, "is truncated: %llu bytes, shorter than an "
                "ELF header", (unsigned long long) size);
      return false;
    }
  if (eh.e_ident[EI_CLASS] != (sizeof (void *) == 8 ? ELFCLASS64
                                                    : ELFCLASS32))
    {
      snprintf (reason, rsize, "is a %s ELF file; this process is %d-bit",
                eh.e_ident[EI_CLASS] == ELFCLASS64 ? "64-bit"
                : eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit"
                : "malformed", (int) (8 * sizeof (void *)));
      return false;
    }
  if (eh.e_type != ET_DYN)
    {
      snprintf (reason, rsize, "is an ELF file but not a shared library "
                "(type %u)", (unsigned) eh.e_type);
      return false;
    }
  uint64_t ph_end = (uint64_t) eh.e_phoff
                    + (uint64_t) eh.e_phnum * eh.e_phentsize;
  if (eh.e_phentsize != sizeof (ElfW (Phdr)) || eh.e_phnum == 0
      || eh.e_phoff > size || ph_end > size)
    {
      snprintf (reason, rsize, "is truncated or malformed: its program "
                "headers (%u at offset %llu) do not lie inside its %llu "
                "bytes", (unsigned) eh.e_phnum,
                (unsigned long long) eh.e_phoff, (unsigned long long) size);
      return false;
    }
  for (unsigned i = 0; i < eh.e_phnum; i++)
    {
      ElfW (Phdr) ph;
      if (!read_at (fd, &ph, sizeof ph, eh.e_phoff + (uint64_t) i
                                                      * sizeof ph))
        {
          snprintf (reason, rsize, "cannot read program header %u", i);
          return false;
        }
      if ((ph.p_type == PT_LOAD || ph.p_type == PT_DYNAMIC)
          && (ph.p_offset > size || ph.p_filesz > size - ph.p_offset))
        {
          snprintf (reason, rsize, "is truncated: segment %u ends at byte "
                    "%llu, past its end (%llu bytes)", i,
                    (unsigned long long) ph.p_offset
                      + (unsigned long long) ph.p_filesz,
                    (unsigned long long) size);
          return false;
        }
    }
  if (eh.e_shoff != 0
      && (eh.e_shoff > size
          || (uint64_t) eh.e_shnum * eh.e_shentsize > size - eh.e_shoff))
    {
      snprintf (reason, rsize, "is truncated: its section headers end past "
                "its end (%llu bytes)", (unsigned long long) size);
      return false;
    }
#endif
  return true;
}
