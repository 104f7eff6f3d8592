/* module-glue.c - what every backend module would otherwise write for
 * itself: the registration of its devices, KEY=VALUE parameters, the
 * host's memory figures and the message of a kernel's bad index.
 * (tsr_backend_new is in backend.c, tsr_buffer_new in buffer.c.)  */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera-impl.h"

/* Registrations made by tsr_reg_new: the tsr_reg first, so the core
   finds the rest from the pointer init returned.  */
struct glue_reg
{
  tsr_reg reg;
  char *name;                   /* after the devices, same allocation */
  size_t n;
  tsr_device devices[];
};

static const char *
glue_reg_name (tsr_reg *reg)
{
  return ((struct glue_reg *) reg)->name;
}

static size_t
glue_reg_count (tsr_reg *reg)
{
  return ((struct glue_reg *) reg)->n;
}

static tsr_device *
glue_reg_device (tsr_reg *reg, size_t i)
{
  struct glue_reg *g = (struct glue_reg *) reg;
  return i < g->n ? &g->devices[i] : NULL;
}

tsr_reg *
tsr_reg_new (const char *name, const struct tsr_device_iface *iface,
             size_t n_devices, void *const *contexts, void *context)
{
  struct glue_reg *g;

  if (!name || !*name || (n_devices > 0 && !iface))
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "tsr_reg_new: %s",
                     !name || !*name ? "no name" : "devices but no "
                     "device interface");
      return NULL;
    }
  if (n_devices > TSRI_MAX_DEVICES_PER_REG)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "tsr_reg_new: %s: %zu devices "
                     "(at most %d)", name, n_devices,
                     TSRI_MAX_DEVICES_PER_REG);
      return NULL;
    }
  size_t len = strlen (name) + 1;
  g = calloc (1, sizeof *g + n_devices * sizeof g->devices[0] + len);
  if (!g)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "tsr_reg_new: %s: out of memory",
                     name);
      return NULL;
    }
  g->name = memcpy ((char *) &g->devices[n_devices], name, len);
  g->reg.abi_version = TSR_MODULE_ABI_VERSION;
  g->reg.iface.get_name = glue_reg_name;
  g->reg.iface.get_device_count = glue_reg_count;
  g->reg.iface.get_device = glue_reg_device;
  g->reg.context = context;
  g->n = n_devices;
  for (size_t i = 0; i < n_devices; i++)
    {
      g->devices[i].iface = *iface;
      g->devices[i].reg = &g->reg;
      g->devices[i].context = contexts ? contexts[i] : NULL;
    }
  return &g->reg;
}

void
tsri_reg_release (tsr_reg *reg)
{
  if (reg && reg->iface.get_name == glue_reg_name)
    {
      free (reg);               /* one allocation, name included */
    }
}

bool
tsr_param_int (const char *s, int64_t min, int64_t max, int64_t *value)
{
  char *end;
  intmax_t v;

  /* Digits with an optional '-': strtoimax alone would also take
     leading spaces and a '+'.  */
  if (!s || !(isdigit ((unsigned char) s[0])
              || (s[0] == '-' && isdigit ((unsigned char) s[1]))))
    return false;
  errno = 0;
  v = strtoimax (s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
    return false;
  if (value)
    *value = (int64_t) v;
  return true;
}

/* "threads, min_batch" into BUF.  */
static void
key_list (const struct tsr_param *keys, size_t n, char *buf, size_t size)
{
  size_t len = 0;

  buf[0] = '\0';
  for (size_t i = 0; i < n && len < size; i++)
    len += (size_t) snprintf (buf + len, size - len, "%s%s",
                              i ? ", " : "", keys[i].key);
}

int
tsr_params_parse (const char *who, const char *params,
                  const struct tsr_param *keys, size_t n_keys)
{
  char known[256];
  uint64_t seen = 0;            /* keys given, to refuse repeats */
  const char *p = params;

  if (!who)
    who = "backend";
  if (n_keys > 64)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "%s: tsr_params_parse: more "
                          "than 64 keys", who);
  key_list (keys, n_keys, known, sizeof known);
  while (p && *p)
    {
      size_t len = strcspn (p, ","), klen;
      const char *eq = memchr (p, '=', len);
      char value[64];
      size_t i;

      if (len == 0)             /* "a=1,,b=2" or a trailing comma */
        {
          p++;
          continue;
        }
      klen = eq ? (size_t) (eq - p) : len;
      for (i = 0; i < n_keys; i++)
        if (strlen (keys[i].key) == klen
            && strncmp (keys[i].key, p, klen) == 0)
          break;
      if (i == n_keys)
        return n_keys == 0
          ? tsr_set_error (TSR_ERR_INVALID_ARG, "%s: unknown parameter "
                           "'%.*s' (this backend takes none)", who,
                           (int) (len > 64 ? 64 : len), p)
          : tsr_set_error (TSR_ERR_INVALID_ARG, "%s: unknown parameter "
                           "'%.*s' (known: %s)", who,
                           (int) (len > 64 ? 64 : len), p, known);
      if (!eq)
        return tsr_set_error (TSR_ERR_INVALID_ARG, "%s: parameter '%s' "
                              "needs a value (%s=N)", who, keys[i].key,
                              keys[i].key);
      if (seen & ((uint64_t) 1 << i))
        return tsr_set_error (TSR_ERR_INVALID_ARG, "%s: parameter '%s' "
                              "given twice", who, keys[i].key);
      seen |= (uint64_t) 1 << i;
      size_t vlen = len - klen - 1;
      if (vlen >= sizeof value
          || (memcpy (value, eq + 1, vlen), value[vlen] = '\0',
              !tsr_param_int (value, keys[i].min, keys[i].max,
                              keys[i].value)))
        return tsr_set_error (TSR_ERR_INVALID_ARG, "%s: bad value in "
                              "'%.*s' (want an integer in [%" PRId64 ", %"
                              PRId64 "])", who,
                              (int) (len > 64 ? 64 : len), p,
                              keys[i].min, keys[i].max);
      p += len;
    }
  return TSR_OK;
}

void
tsr_host_memory (size_t *free_bytes, size_t *total)
{
  long page = sysconf (_SC_PAGESIZE);
  long pages = sysconf (_SC_PHYS_PAGES);
  long avail = -1;

#ifdef _SC_AVPHYS_PAGES
  avail = sysconf (_SC_AVPHYS_PAGES);
#endif
  if (total)
    *total = page > 0 && pages > 0 ? (size_t) pages * (size_t) page : 0;
  if (free_bytes)
    *free_bytes = page > 0 && avail > 0 ? (size_t) avail * (size_t) page : 0;
}

int64_t
tsr_index_bound (const tsr_tensor *node)
{
  if (!node)
    return 0;
  switch (node->op)
    {
    case TSR_OP_GET_ROWS:       /* rows of the table */
      return node->src[0] ? node->src[0]->ne[1] : 0;
    case TSR_OP_SET_ROWS:       /* rows of the destination */
      return node->src[0] ? node->src[0]->ne[1] : 0;
    case TSR_OP_MUL_MAT_ID:     /* experts */
      return node->src[0] ? node->src[0]->ne[2] : 0;
    default:
      return 0;
    }
}

int
tsr_index_error (const char *who, tsr_graph *g,
                 const struct tsr_index_status *w)
{
  const tsr_tensor *node;

  if (!w || w->tag == 0)
    return TSR_OK;
  if (!who)
    who = "backend";
  node = g && w->tag > 0 && w->tag <= tsr_graph_n_nodes (g)
         ? tsr_graph_node (g, w->tag - 1) : NULL;
  if (!node || tsr_index_bound (node) == 0)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "%s: index %" PRId32 " out "
                          "of range (the status word names node %" PRId32
                          ", which reads no indices)", who, w->value,
                          w->tag);
  return tsr_set_error (TSR_ERR_INVALID_ARG, "%s: %s '%s' (node %" PRId32
                        "): index %" PRId32 " is outside [0, %" PRId64 ")%s",
                        who, tsr_op_name (node->op), tsr_tensor_label (node),
                        w->tag - 1, w->value, tsr_index_bound (node),
                        node->op == TSR_OP_SET_ROWS
                        ? " (nothing was written)" : "");
}
