/* tessera-info - what Tessera finds on this machine: backend modules
 * loaded and not loaded (with the reason), registrations and devices.
 * Always exits 0 when it could report, even if some module failed:
 * reporting failures is its job.  */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tessera.h>

#include "tool-util.h"

static void
usage (FILE *f)
{
  fprintf (f,
           "Usage: tessera-info [OPTION]...\n"
           "Show Tessera's backend modules, registrations and devices.\n\n"
           "  -L, --path=DIR     also search DIR for backend modules\n"
           "  -l, --load=FILE    load the backend module FILE\n"
           "  -h, --help         display this help and exit\n"
           "  -V, --version      output version information and exit\n\n"
           "Environment:\n"
           "  TESSERA_BACKEND_PATH  directories and module files to load, "
           "':'-separated\n"
           "  TESSERA_LOG           error, warn, info, debug or none\n\n"
           "Report bugs to: %s\n", PACKAGE_BUGREPORT);
}

static void
print_size (size_t bytes)
{
  if (bytes == 0)
    printf ("unknown");
  else
    printf ("%.1f MiB", (double) bytes / (1024.0 * 1024.0));
}

static void
print_modules (void)
{
  size_t n = tsr_registry_module_count ();
  printf ("Backend modules loaded: %zu\n", n);
  for (size_t i = 0; i < n; i++)
    {
      struct tsr_module_info m;
      if (tsr_registry_module_get (i, &m))
        printf ("  %-10s score %-3d %s\n", tt_shown (m.name), m.score,
                tt_shown (m.path));
    }
  n = tsr_registry_failure_count ();
  printf ("Backend modules not loaded: %zu\n", n);
  for (size_t i = 0; i < n; i++)
    {
      struct tsr_module_failure f;
      if (!tsr_registry_failure_get (i, &f))
        continue;
      if (f.error == TSR_MODULE_UNUSABLE)
        printf ("  %s: not usable: %s\n    (%s)\n", tt_shown (f.name),
                tt_shown (f.reason), tt_shown (f.path));
      else
        printf ("  %s%s%s%s: %s: %s\n", tt_shown (f.path),
                f.name ? " (" : "", f.name ? tt_shown (f.name) : "",
                f.name ? ")" : "", tsr_module_error_string (f.error),
                tt_shown (f.reason));
    }
}

/* No registration (no module loaded, none compiled in): say where it
   looked and how to point it at modules (the usual case: a build tree
   before make install, whose modules are not in the installed
   directory yet).  */
static void
explain_nothing_found (void)
{
  const char *path = tsr_registry_search_path ();
  char dir[4096];

  printf ("\nNo backend module was found.  Searched:\n");
  while (*path)
    {
      size_t n = strcspn (path, ":");
      if (n > 0 && n < sizeof dir)
        {
          struct stat st;
          struct tsr_module_failure f;
          memcpy (dir, path, n);
          dir[n] = '\0';
          printf ("  %s%s\n", tt_shown (dir),
                  tsr_registry_failure_find (dir, &f)
                    ? " (not loaded: see the reason above)"
                  : stat (dir, &st) != 0 ? " (does not exist)"
                  : !S_ISDIR (st.st_mode) ? " (not a directory)"
                  : " (no tessera-*.la or tessera-*.so module in it)");
        }
      path += n + (path[n] == ':');
    }
  printf ("Modules are looked for in the directory 'make install' puts them "
          "in\n(above, last) and in TESSERA_BACKEND_PATH.  From a build "
          "tree, before\n'make install', point TESSERA_BACKEND_PATH at the "
          "build's module\ndirectories, for example\n"
          "  TESSERA_BACKEND_PATH=$builddir/modules/cpu:$builddir/modules/blas"
          "\n(or at single module files), or pass --path=DIR.\n");
}

static void
print_devices (void)
{
  size_t n_regs = tsr_reg_count (), k = 0;
  printf ("Registrations: %zu\n", n_regs);
  for (size_t r = 0; r < n_regs; r++)
    {
      tsr_reg *reg = tsr_reg_get (r);
      size_t n = tsr_reg_device_count (reg);
      printf ("  %s: %zu device%s\n", tt_shown (tsr_reg_name (reg)), n,
              n == 1 ? "" : "s");
      for (size_t i = 0; i < n; i++, k++)
        {
          struct tsr_device_props p;
          tsr_device *dev = tsr_reg_device_get (reg, i);
          tsr_buffer_type *hb = tsr_device_host_buffer_type (dev);
          tsr_device_get_props (dev, &p);
          printf ("    device %zu: %s\n", k, tt_shown (p.name));
          printf ("      description: %s\n", tt_shown (p.description));
          printf ("      type: %s\n", tsr_device_type_name (p.type));
          printf ("      memory: ");
          print_size (p.memory_free);
          printf (" free of ");
          print_size (p.memory_total);
          printf ("\n      caps: async %s, host buffer %s, events %s\n",
                  p.caps.async ? "yes" : "no",
                  hb ? tsr_buffer_type_name (hb) : "no",
                  p.caps.events ? "yes" : "no");
          tsr_buffer_type *xb[8];
          size_t nx = tsr_device_extra_buffer_types (dev, xb, 8);
          for (size_t x = 0; x < nx && x < 8; x++)
            printf ("      extra buffer type: %s\n",
                    tt_shown (tsr_buffer_type_name (xb[x])));
        }
    }
}

int
main (int argc, char **argv)
{
  static const struct option opts[] = {
    { "path", required_argument, NULL, 'L' },
    { "load", required_argument, NULL, 'l' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
  };
  int c;
  while ((c = getopt_long (argc, argv, "L:l:hV", opts, NULL)) != -1)
    switch (tt_check_optarg ("tessera-info", opts, c, optarg, NULL), c)
      {
      case 'L':
        if (tsr_registry_add_search_dir (optarg) != TSR_OK)
          {
            fprintf (stderr, "tessera-info: %s\n", tsr_last_error ());
            return 1;
          }
        break;
      case 'l':
        break;                  /* after every --path, below */
      case 'h':
        usage (stdout);
        return 0;
      case 'V':
        printf ("tessera-info (Tessera) %s\n", tsr_version ());
        return 0;
      default:
        usage (stderr);
        return 2;
      }
  if (optind < argc)
    {
      fprintf (stderr, "tessera-info: unexpected argument '%s'\n",
               argv[optind]);
      usage (stderr);
      return 2;
    }
  /* Modules named with --load, once the search path is complete.  A
     failure is recorded and shown with the others.  */
  optind = 1;
  while ((c = getopt_long (argc, argv, "L:l:hV", opts, NULL)) != -1)
    if (c == 'l')
      tsr_registry_load (optarg);
  printf ("Tessera %s\n", tsr_version ());
  printf ("Backend search path: %s\n",
          tt_shown (tsr_registry_search_path ()));
  print_modules ();
  print_devices ();
  if (tsr_reg_count () == 0)
    explain_nothing_found ();
  return 0;
}
