/* The registry initializes itself on first use, finds the CPU backend,
   answers lookups by name (any case) and type, and init_best gives a
   backend that computes a graph allocated on its device.  */
#include <string.h>
#include <strings.h>
#include <tessera.h>
#include "tsr-test.h"

static void
compute_on (tsr_backend *be)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 5);
  tsr_tensor *b = tsr_new_tensor_1d (ctx, TSR_TYPE_F32, 5);
  tsr_tensor *c = tsr_mul (ctx, tsr_add (ctx, a, b), b);
  tsr_graph *g = tsr_graph_new (ctx);
  CHECK (tsr_graph_build (g, c) == TSR_OK, "graph of (a + b) * b builds");
  tsr_gallocr *ga = tsr_gallocr_new (tsr_backend_buffer_type (be));
  CHECK (tsr_gallocr_alloc_graph (ga, g) == TSR_OK,
         "graph allocated on the best device");
  float x[5] = { 1, 2, 3, 4, 5 }, y[5] = { -1, 0.5f, 2, 10, 0 }, r[5];
  tsr_backend_tensor_set (be, a, x, 0, sizeof x);
  tsr_backend_tensor_set (be, b, y, 0, sizeof y);
  CHECK (tsr_backend_graph_compute (be, g) == TSR_OK, "graph computes: %s",
         tsr_last_error ());
  tsr_backend_tensor_get (be, c, r, 0, sizeof r);
  int ok = 1;
  for (int i = 0; i < 5; i++)
    ok &= r[i] == (x[i] + y[i]) * y[i];   /* exact in float */
  CHECK (ok, "(a + b) * b is exact");
  tsr_gallocr_free (ga);
  tsr_context_free (ctx);
}

int
main (void)
{
  /* First call: no explicit initialization anywhere.  */
  size_t n_regs = tsr_reg_count ();
  CHECK (n_regs >= 1, "registry initializes itself on first use (%zu regs)",
         n_regs);
  tsr_reg *cpu = tsr_reg_by_name ("cpu");
  CHECK (cpu != NULL, "cpu registration found by name");
  CHECK (tsr_reg_by_name ("CpU") == cpu, "registration lookup ignores case");
  CHECK (tsr_reg_by_name ("no-such-backend") == NULL,
         "unknown registration name gives NULL");
  CHECK (cpu && strcmp (tsr_reg_name (cpu), "cpu") == 0, "reg name is cpu");
  CHECK (tsr_reg_device_count (cpu) == 1, "cpu has one device");
  tsr_device *dev = tsr_reg_device_get (cpu, 0);
  CHECK (dev && tsr_device_get_type (dev) == TSR_DEVICE_CPU,
         "cpu device has type CPU");
  CHECK (tsr_reg_device_get (cpu, 1) == NULL, "device index past the end "
         "gives NULL");
  CHECK (tsr_device_by_name ("cpu") == dev, "device lookup by name, any case");
  CHECK (tsr_device_by_type (TSR_DEVICE_CPU) == dev, "device lookup by type");
  size_t n_dev = tsr_device_count ();
  int found = 0;
  for (size_t i = 0; i < n_dev; i++)
    found += tsr_device_get (i) == dev;
  CHECK (found == 1, "device enumeration lists the cpu device once");
  CHECK (tsr_device_get (n_dev) == NULL, "enumeration ends with NULL");

  struct tsr_device_props p;
  tsr_device_get_props (dev, &p);
  CHECK (p.name && p.description && strlen (p.description) > 0,
         "cpu device has a name and description");
  CHECK (p.memory_total > 0 && p.memory_free <= p.memory_total,
         "cpu device reports memory (%zu of %zu)", p.memory_free,
         p.memory_total);
  CHECK (tsr_device_supports_buffer_type (dev, tsr_device_buffer_type (dev)),
         "cpu device supports its own buffer type");
  CHECK (tsr_buffer_type_is_host (tsr_device_buffer_type (dev)),
         "cpu buffer type is host memory");

  /* The module behind it.  */
  struct tsr_module_info m = { 0 };
  int have = 0;
  for (size_t i = 0; i < tsr_registry_module_count (); i++)
    if (tsr_registry_module_get (i, &m) && m.reg == cpu)
      {
        have = 1;
        break;
      }
  CHECK (have && strcmp (m.name, "cpu") == 0 && m.score > 0,
         "cpu module info: name and positive score");
  CHECK (have && (m.builtin ? strcmp (m.path, "(built-in)") == 0
                  : strstr (m.path, "tessera-cpu") != NULL),
         "cpu module path says where it came from (%s)", have ? m.path : "");

  /* Backends.  */
  tsr_backend *be = tsr_backend_init_by_name ("CPU", NULL);
  CHECK (be != NULL, "backend by name: %s", tsr_last_error ());
  CHECK (be && tsr_backend_device (be) == dev, "backend is on the cpu device");
  tsr_backend_free (be);
  be = tsr_backend_init_by_name ("cpu", "threads=3");
  CHECK (be != NULL, "cpu backend accepts threads=3");
  CHECK (be && tsr_backend_set_n_threads (be, 1) == TSR_OK,
         "thread count can be set");
  CHECK (be && tsr_backend_set_n_threads (be, 0) != TSR_OK,
         "thread count 0 is refused");
  tsr_backend_free (be);
  be = tsr_backend_init_by_name ("cpu", "bogus=1");
  CHECK (be == NULL && strstr (tsr_last_error (), "bogus"),
         "unknown backend parameter is refused with its name: %s",
         tsr_last_error ());
  tsr_backend_free (be);
  be = tsr_backend_init_by_name ("warp-drive", NULL);
  CHECK (be == NULL && tsr_last_status () == TSR_ERR_NOT_FOUND
         && strstr (tsr_last_error (), "warp-drive"),
         "unknown backend name: NULL and a message naming it");
  be = tsr_backend_init_by_type (TSR_DEVICE_CPU, NULL);
  CHECK (be != NULL, "backend by type CPU");
  tsr_backend_free (be);

  be = tsr_backend_init_best ();
  CHECK (be != NULL, "init_best gives a backend");
  if (be)
    {
      tsr_device_type t = tsr_device_get_type (tsr_backend_device (be));
      int better = 0;
      for (size_t i = 0; i < n_dev; i++)
        {
          tsr_device_type u = tsr_device_get_type (tsr_device_get (i));
          /* enum order is not preference order: GPU > IGPU > CPU > ACCEL */
          static const int rank[] = { 1, 3, 2, 0 };
          better |= rank[u] > rank[t];
        }
      CHECK (!better, "init_best picked the most preferred device type");
      compute_on (be);
      tsr_backend_free (be);
    }
  return TSR_TEST_EXIT ();
}
