/* The helpers modules share instead of copying (tessera/module.h):
   tsr_params_parse and tsr_param_int against hand-written cases,
   tsr_reg_new's registration and its argument checks, tsr_backend_new,
   and tsr_index_error naming the node its status word tags.  */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tessera.h>
#include <tessera/module.h>
#include "tsr-test.h"

static int64_t threads, batch, bytes;

static int
parse (const char *params)
{
  const struct tsr_param keys[] = {
    { "threads", 1, 64, &threads },
    { "min_batch", 1, INT32_MAX, &batch },
    { "max_scratch", 1, INT64_MAX, &bytes },
  };
  threads = batch = bytes = -1;
  return tsr_params_parse ("glue", params, keys, 3);
}

static void
check_params (void)
{
  int64_t v = 0;

  CHECK (parse (NULL) == TSR_OK && threads == -1 && batch == -1,
         "no parameters: nothing set");
  CHECK (parse ("") == TSR_OK && threads == -1, "empty string: nothing set");
  CHECK (parse ("threads=4") == TSR_OK && threads == 4 && batch == -1,
         "one key");
  CHECK (parse ("min_batch=7,threads=1,max_scratch=9223372036854775807")
         == TSR_OK && threads == 1 && batch == 7 && bytes == INT64_MAX,
         "three keys in any order, the top of the range included");
  CHECK (parse ("threads=2,") == TSR_OK && threads == 2,
         "a trailing comma is harmless");
  CHECK (parse ("threads=0") == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "glue: ")
         && strstr (tsr_last_error (), "threads=0")
         && strstr (tsr_last_error (), "[1, 64]"),
         "below the range: refused with the item and the range: %s",
         tsr_last_error ());
  CHECK (parse ("threads=65") == TSR_ERR_INVALID_ARG, "above the range");
  CHECK (parse ("threads=4x") == TSR_ERR_INVALID_ARG
         && parse ("threads=") == TSR_ERR_INVALID_ARG
         && parse ("threads= 4") == TSR_ERR_INVALID_ARG
         && parse ("max_scratch=99999999999999999999") == TSR_ERR_INVALID_ARG,
         "not a whole integer, empty, leading space, overflow: refused");
  CHECK (parse ("threads") == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "needs a value"),
         "a key without a value: %s", tsr_last_error ());
  CHECK (parse ("thread=4") == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "unknown parameter 'thread=4'")
         && strstr (tsr_last_error (),
                    "known: threads, min_batch, max_scratch"),
         "unknown key: refused, the known ones listed: %s",
         tsr_last_error ());
  CHECK (parse ("threads=2,threads=3") == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "twice"), "a key given twice: %s",
         tsr_last_error ());
  CHECK (tsr_params_parse ("none", "a=1", NULL, 0) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "takes none"),
         "a backend with no keys refuses any: %s", tsr_last_error ());
  CHECK (tsr_params_parse ("none", NULL, NULL, 0) == TSR_OK,
         "... and accepts none");

  CHECK (tsr_param_int ("-12", -20, 0, &v) && v == -12, "negative integer");
  CHECK (!tsr_param_int ("", 0, 9, &v) && !tsr_param_int (NULL, 0, 9, &v)
         && !tsr_param_int ("10", 0, 9, &v) && !tsr_param_int ("1.5", 0, 9,
                                                               &v),
         "empty, NULL, out of range, not an integer: refused");
}

static const char *
dev_name (tsr_device *dev)
{
  return *(const char **) dev->context;
}

static void
check_reg (void)
{
  const char *names[2] = { "First", "Second" };
  void *contexts[2] = { &names[0], &names[1] };
  struct tsr_device_iface iface = { .get_name = dev_name };

  tsr_reg *reg = tsr_reg_new ("gluetest", &iface, 2, contexts, &names);
  CHECK (reg && reg->abi_version == TSR_MODULE_ABI_VERSION
         && strcmp (reg->iface.get_name (reg), "gluetest") == 0
         && reg->iface.get_device_count (reg) == 2 && reg->context == &names,
         "a registration of two devices");
  for (size_t i = 0; reg && i < 2; i++)
    {
      tsr_device *dev = reg->iface.get_device (reg, i);
      CHECK (dev && dev->reg == reg && dev->context == contexts[i]
             && strcmp (dev->iface.get_name (dev), names[i]) == 0,
             "device %zu: its registration, context and interface", i);
    }
  CHECK (reg && reg->iface.get_device (reg, 2) == NULL,
         "no device past the count");
  CHECK (tsr_reg_new (NULL, &iface, 1, NULL, NULL) == NULL
         && tsr_last_status () == TSR_ERR_INVALID_ARG, "no name: refused");
  CHECK (tsr_reg_new ("x", NULL, 1, NULL, NULL) == NULL
         && tsr_last_status () == TSR_ERR_INVALID_ARG,
         "devices without an interface: refused");
  CHECK (tsr_reg_new ("x", &iface, (size_t) 1 << 40, NULL, NULL) == NULL
         && strstr (tsr_last_error (), "devices"),
         "an absurd device count: refused: %s", tsr_last_error ());
  /* Never registered, so the registry will not free it: freed here as
     the registry does (one allocation).  load-unload.c's mockgpu module
     checks the registry's freeing.  */
  free (reg);
}

static const char *
be_name (tsr_backend *be)
{
  return "gluebe";
}

static int freed;

static void
be_free (tsr_backend *be)
{
  freed += be->context == &freed;
}

static void
check_backend (void)
{
  tsr_device *cpu = tsr_device_by_type (TSR_DEVICE_CPU);
  struct tsr_backend_iface iface = { .get_name = be_name, .free = be_free };

  CHECK (tsr_backend_new (NULL, iface, NULL) == NULL
         && tsr_last_status () == TSR_ERR_INVALID_ARG, "no device: refused");
  if (!cpu)
    return;
  tsr_backend *be = tsr_backend_new (cpu, iface, &freed);
  CHECK (be && tsr_backend_device (be) == cpu && be->context == &freed
         && strcmp (tsr_backend_name (be), "gluebe") == 0,
         "a backend object with its device, interface and context");
  tsr_backend_free (be);
  CHECK (freed == 1, "tsr_backend_free calls the module's free once");
  iface.free = NULL;
  be = tsr_backend_new (cpu, iface, &freed);
  CHECK (be != NULL, "a backend without a free entry is made");
  tsr_backend_free (be);        /* LeakSanitizer: the core frees it */
  CHECK (freed == 1, "and freed by the core alone, the module's free not "
         "called (%d calls in all)", freed);
}

static void
check_index_error (void)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_tensor *a = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 8, 5);
  tsr_tensor *r = tsr_new_tensor_1d (ctx, TSR_TYPE_I32, 2);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, 8, 2);
  tsr_tensor *g1 = tsr_set_name (tsr_get_rows (ctx, a, r), "rows1");
  tsr_tensor *sum = tsr_set_name (tsr_add (ctx, g1, b), "sum");
  tsr_tensor *g2 = tsr_set_name (tsr_get_rows (ctx, a, r), "rows2");
  tsr_graph *g = tsr_graph_new (ctx);
  tsr_graph_build (g, sum);
  tsr_graph_build (g, g2);
  int n = tsr_graph_n_nodes (g), at2 = -1, atsum = -1;
  for (int i = 0; i < n; i++)
    {
      at2 = tsr_graph_node (g, i) == g2 ? i : at2;
      atsum = tsr_graph_node (g, i) == sum ? i : atsum;
    }
  struct tsr_index_status ok = { 0, 0 };
  struct tsr_index_status w = { at2 + 1, 9 };
  struct tsr_index_status wrong = { atsum + 1, 3 };
  struct tsr_index_status past = { n + 1, 3 };

  CHECK (tsr_index_error ("dev", g, &ok) == TSR_OK, "tag 0: no error");
  CHECK (at2 >= 0 && tsr_index_error ("dev", g, &w) == TSR_ERR_INVALID_ARG
         && strncmp (tsr_last_error (), "dev: get_rows 'rows2'", 21) == 0
         && strstr (tsr_last_error (), "index 9 is outside [0, 5)"),
         "the tagged node is named with the index and bound: %s",
         tsr_last_error ());
  CHECK (tsr_index_error ("dev", g, &wrong) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "reads no indices"),
         "a tag on a node without indices says so: %s", tsr_last_error ());
  CHECK (tsr_index_error ("dev", g, &past) == TSR_ERR_INVALID_ARG
         && strstr (tsr_last_error (), "index 3"),
         "a tag past the graph is still an error: %s", tsr_last_error ());
  CHECK (tsr_index_bound (g1) == 5 && tsr_index_bound (sum) == 0,
         "index bounds: table rows, none for add");
  tsr_context_free (ctx);
}

int
main (void)
{
  check_params ();
  check_reg ();
  check_backend ();
  check_index_error ();
  return TSR_TEST_EXIT ();
}
