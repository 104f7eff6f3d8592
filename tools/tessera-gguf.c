/* tessera-gguf - inspect, validate and convert GGUF model files.
 *
 *   tessera-gguf dump [--json] FILE     metadata, tensor table, type totals
 *   tessera-gguf check FILE...          validate; exit 1 if any is bad
 *   tessera-gguf convert -t TYPE IN OUT every float tensor to TYPE
 *   tessera-gguf requantize -t TYPE|PRESET IN OUT
 *                                       per-tensor types of a preset
 *   tessera-gguf synth [OPTION]... OUT  a model with random weights
 *                                       (gguf-synth.c)
 *
 * Everything about the format lives in the library (tessera/gguf.h),
 * the presets' choices in gguf-recipe.c; this file formats and drives
 * them.  */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tessera.h>

#include "gguf-synth.h"
#include "gguf-recipe.h"
#include "tool-util.h"

#define TEXT_ARRAY_ITEMS 8

static const char *program = "tessera-gguf";

static void
usage (FILE *f)
{
  fprintf (f,
           "Usage: tessera-gguf dump [--json] FILE\n"
           "       tessera-gguf check FILE...\n"
           "       tessera-gguf convert --type=TYPE IN OUT\n"
           "       tessera-gguf requantize --type=TYPE|PRESET IN OUT\n"
           "       tessera-gguf synth [OPTION]... OUT\n"
           "Inspect, validate, convert and synthesize GGUF model files.\n\n"
           "Commands:\n"
           "  dump        print the metadata, the tensor table and the "
           "totals per type\n"
           "  check       validate each FILE; exit 1 if any is malformed\n"
           "  convert     write IN to OUT with every float tensor (quantized "
           "ones\n"
           "              included) converted to TYPE\n"
           "  requantize  write IN to OUT with the weights quantized as "
           "PRESET\n"
           "              chooses per tensor, or all to TYPE (norms and "
           "1-D tensors\n"
           "              stay as they are)\n"
           "  synth       write a model of any architecture with random weights "
           "to OUT\n"
           "              (options: tessera-gguf synth --help)\n\n"
           "Options:\n"
           "  -j, --json         dump: print JSON\n"
           "  -t, --type=TYPE    f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K "
           "q3_K q4_K\n"
           "                     q5_K q6_K q8_K iq4_nl iq4_xs mxfp4 (any "
           "case)\n"
           "                     requantize also takes a PRESET: Q4_K_M "
           "Q4_K_S Q5_K_M\n"
           "                     Q6_K Q8_0 Q4_0 IQ4_XS Q3_K_M Q2_K; a name "
           "that is both\n"
           "                     is the preset\n"
           "  -T, --threads=N    convert, requantize: threads converting "
           "rows\n"
           "                     (default: the processors online); the "
           "output does\n"
           "                     not depend on it\n"
           "  -h, --help         display this help and exit\n"
           "  -V, --version      output version information and exit\n\n"
           "Report bugs to: %s\n", PACKAGE_BUGREPORT);
}

/* Output helpers.  */

/* S quoted, escaped for JSON or, in text, with C-style \xNN escapes of
   everything a terminal could take as a command.  */
static void
print_string (const char *s, size_t len, bool json)
{
  if (json)
    {
      tt_print_json_string (s, len, stdout);   /* valid UTF-8 always */
      return;
    }
  putchar ('"');
  size_t run = 0;
  for (size_t i = 0; i < len; i++)
    {
      unsigned char c = (unsigned char) s[i];
      if (c != '"' && c != '\\' && c != '\0')
        continue;               /* part of a run printed below */
      tt_print_escaped (s + run, i - run, stdout);
      run = i + 1;
      if (c)
        printf ("\\%c", c);
      else
        fputs ("\\x00", stdout);
    }
  tt_print_escaped (s + run, len - run, stdout);
  putchar ('"');
}

static void
print_double (double v, int digits, bool json)
{
  if (json && !isfinite (v))
    fputs ("null", stdout);
  else
    printf ("%.*g", digits, v);
}

/* One value of fixed-size TYPE at P (host layout).  */
static void
print_scalar (tsr_gguf_type type, const void *p, bool json)
{
  union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32;
          int32_t i32; float f32; uint64_t u64; int64_t i64; double f64; } v;
  memcpy (&v, p, tsr_gguf_type_size (type));
  switch (type)
    {
    case TSR_GGUF_UINT8: printf ("%u", v.u8); break;
    case TSR_GGUF_INT8: printf ("%d", v.i8); break;
    case TSR_GGUF_UINT16: printf ("%u", v.u16); break;
    case TSR_GGUF_INT16: printf ("%d", v.i16); break;
    case TSR_GGUF_UINT32: printf ("%u", v.u32); break;
    case TSR_GGUF_INT32: printf ("%d", v.i32); break;
    case TSR_GGUF_FLOAT32: print_double (v.f32, 9, json); break;
    case TSR_GGUF_BOOL: fputs (v.u8 ? "true" : "false", stdout); break;
    case TSR_GGUF_UINT64: printf ("%llu", (unsigned long long) v.u64); break;
    case TSR_GGUF_INT64: printf ("%lld", (long long) v.i64); break;
    case TSR_GGUF_FLOAT64: print_double (v.f64, 17, json); break;
    default: fputs ("?", stdout); break;
    }
}

/* Read the scalar value of KEY (of TYPE) into BUF (8 bytes).  */
static void
get_scalar (const tsr_gguf *g, const char *key, tsr_gguf_type type,
            void *buf)
{
  switch (type)
    {
    case TSR_GGUF_UINT8: tsr_gguf_get_u8 (g, key, buf); break;
    case TSR_GGUF_INT8: tsr_gguf_get_i8 (g, key, buf); break;
    case TSR_GGUF_UINT16: tsr_gguf_get_u16 (g, key, buf); break;
    case TSR_GGUF_INT16: tsr_gguf_get_i16 (g, key, buf); break;
    case TSR_GGUF_UINT32: tsr_gguf_get_u32 (g, key, buf); break;
    case TSR_GGUF_INT32: tsr_gguf_get_i32 (g, key, buf); break;
    case TSR_GGUF_FLOAT32: tsr_gguf_get_f32 (g, key, buf); break;
    case TSR_GGUF_BOOL: tsr_gguf_get_bool (g, key, buf); break;
    case TSR_GGUF_UINT64: tsr_gguf_get_u64 (g, key, buf); break;
    case TSR_GGUF_INT64: tsr_gguf_get_i64 (g, key, buf); break;
    case TSR_GGUF_FLOAT64: tsr_gguf_get_f64 (g, key, buf); break;
    default: break;
    }
}

static void
print_array (const tsr_gguf *g, const char *key, bool json)
{
  tsr_gguf_type et;
  uint64_t n;
  tsr_gguf_get_array_info (g, key, &et, &n);
  uint64_t shown = json || n <= TEXT_ARRAY_ITEMS ? n : TEXT_ARRAY_ITEMS;
  putchar ('[');
  for (uint64_t i = 0; i < shown; i++)
    {
      if (i)
        fputs (", ", stdout);
      if (et == TSR_GGUF_STRING)
        {
          const char *s;
          size_t len;
          tsr_gguf_get_array_str (g, key, i, &s, &len);
          print_string (s, len, json);
        }
      else
        {
          uint64_t v = 0;
          tsr_gguf_get_array_data (g, key, et, i, 1, &v);
          print_scalar (et, &v, json);
        }
    }
  if (shown < n)
    printf (", ... %llu more", (unsigned long long) (n - shown));
  putchar (']');
}

static void
print_value (const tsr_gguf *g, int64_t i, bool json)
{
  const char *key = tsr_gguf_kv_key (g, i);
  tsr_gguf_type type = tsr_gguf_kv_type (g, i);
  if (type == TSR_GGUF_ARRAY)
    print_array (g, key, json);
  else if (type == TSR_GGUF_STRING)
    {
      const char *s;
      size_t len;
      tsr_gguf_get_str (g, key, &s, &len);
      print_string (s, len, json);
    }
  else
    {
      uint64_t v = 0;
      get_scalar (g, key, type, &v);
      if (type == TSR_GGUF_BOOL)
        {
          bool b;
          memcpy (&b, &v, sizeof b);
          fputs (b ? "true" : "false", stdout);
        }
      else
        print_scalar (type, &v, json);
    }
}

static const char *
type_label (const tsr_gguf *g, int64_t i, char *buf, size_t n)
{
  tsr_gguf_type type = tsr_gguf_kv_type (g, i);
  if (type != TSR_GGUF_ARRAY)
    return tsr_gguf_type_name (type);
  tsr_gguf_type et;
  uint64_t len;
  tsr_gguf_get_array_info (g, tsr_gguf_kv_key (g, i), &et, &len);
  snprintf (buf, n, "%s[%llu]", tsr_gguf_type_name (et),
            (unsigned long long) len);
  return buf;
}

/* Tensor counts and bytes per type.  */

struct type_totals
{
  int64_t tensors[TSR_TYPE_COUNT];
  uint64_t bytes[TSR_TYPE_COUNT];
};

static void
count_types (const tsr_gguf *g, struct type_totals *tt)
{
  memset (tt, 0, sizeof *tt);
  for (int64_t i = 0; i < tsr_gguf_n_tensors (g); i++)
    {
      struct tsr_gguf_tensor_info t;
      tsr_gguf_get_tensor_info (g, i, &t);
      tt->tensors[t.type]++;
      tt->bytes[t.type] += t.size;
    }
}

/* dump */

static void
dump_text (const char *path, const tsr_gguf *g)
{
  printf ("%s: GGUF version %u, %llu bytes, alignment %zu, data at offset "
          "%llu\n", path, tsr_gguf_version (g),
          (unsigned long long) tsr_gguf_size (g), tsr_gguf_alignment (g),
          (unsigned long long) tsr_gguf_data_offset (g));
  printf ("metadata: %lld key%s\n", (long long) tsr_gguf_n_kv (g),
          tsr_gguf_n_kv (g) == 1 ? "" : "s");
  for (int64_t i = 0; i < tsr_gguf_n_kv (g); i++)
    {
      char label[64];
      printf ("  %-40s %-12s ", tt_shown (tsr_gguf_kv_key (g, i)),
              type_label (g, i, label, sizeof label));
      print_value (g, i, false);
      putchar ('\n');
    }
  printf ("tensors: %lld\n", (long long) tsr_gguf_n_tensors (g));
  if (tsr_gguf_n_tensors (g))
    printf ("  %5s %-40s %-6s %-28s %12s %12s\n", "#", "name", "type",
            "shape", "offset", "bytes");
  for (int64_t i = 0; i < tsr_gguf_n_tensors (g); i++)
    {
      struct tsr_gguf_tensor_info t;
      tsr_gguf_get_tensor_info (g, i, &t);
      char shape[96];
      int n = snprintf (shape, sizeof shape, "[");
      for (int d = 0; d < t.n_dims; d++)
        n += snprintf (shape + n, sizeof shape - (size_t) n, "%s%lld",
                       d ? ", " : "", (long long) t.ne[d]);
      snprintf (shape + n, sizeof shape - (size_t) n, "]");
      printf ("  %5lld %-40s %-6s %-28s %12llu %12zu\n", (long long) i,
              tt_shown (t.name), tsr_type_name (t.type), shape,
              (unsigned long long) t.offset, t.size);
    }
  struct type_totals tt;
  count_types (g, &tt);
  if (tsr_gguf_n_tensors (g))
    printf ("types:\n");
  for (int t = 0; t < TSR_TYPE_COUNT; t++)
    if (tt.tensors[t])
      printf ("  %-6s %6lld tensor%s %14llu bytes\n", tsr_type_name (t),
              (long long) tt.tensors[t], tt.tensors[t] == 1 ? " " : "s",
              (unsigned long long) tt.bytes[t]);
}

static void
dump_json (const tsr_gguf *g)
{
  printf ("{\n  \"version\": %u,\n  \"size\": %llu,\n  \"alignment\": %zu,\n"
          "  \"data_offset\": %llu,\n  \"metadata\": [", tsr_gguf_version (g),
          (unsigned long long) tsr_gguf_size (g), tsr_gguf_alignment (g),
          (unsigned long long) tsr_gguf_data_offset (g));
  for (int64_t i = 0; i < tsr_gguf_n_kv (g); i++)
    {
      const char *key = tsr_gguf_kv_key (g, i);
      tsr_gguf_type type = tsr_gguf_kv_type (g, i);
      printf ("%s\n    {\"key\": ", i ? "," : "");
      print_string (key, strlen (key), true);
      printf (", \"type\": \"%s\"", tsr_gguf_type_name (type));
      if (type == TSR_GGUF_ARRAY)
        {
          tsr_gguf_type et;
          uint64_t n;
          tsr_gguf_get_array_info (g, key, &et, &n);
          printf (", \"element_type\": \"%s\"", tsr_gguf_type_name (et));
        }
      fputs (", \"value\": ", stdout);
      print_value (g, i, true);
      putchar ('}');
    }
  printf ("%s],\n  \"tensors\": [", tsr_gguf_n_kv (g) ? "\n  " : "");
  for (int64_t i = 0; i < tsr_gguf_n_tensors (g); i++)
    {
      struct tsr_gguf_tensor_info t;
      tsr_gguf_get_tensor_info (g, i, &t);
      printf ("%s\n    {\"name\": ", i ? "," : "");
      print_string (t.name, strlen (t.name), true);
      printf (", \"type\": \"%s\", \"file_type\": %u, \"shape\": [",
              tsr_type_name (t.type), t.file_type);
      for (int d = 0; d < t.n_dims; d++)
        printf ("%s%lld", d ? ", " : "", (long long) t.ne[d]);
      printf ("], \"offset\": %llu, \"size\": %zu}",
              (unsigned long long) t.offset, t.size);
    }
  printf ("%s],\n  \"types\": [", tsr_gguf_n_tensors (g) ? "\n  " : "");
  struct type_totals tt;
  count_types (g, &tt);
  bool first = true;
  for (int t = 0; t < TSR_TYPE_COUNT; t++)
    if (tt.tensors[t])
      {
        printf ("%s\n    {\"type\": \"%s\", \"tensors\": %lld, "
                "\"bytes\": %llu}", first ? "" : ",", tsr_type_name (t),
                (long long) tt.tensors[t], (unsigned long long) tt.bytes[t]);
        first = false;
      }
  printf ("%s]\n}\n", first ? "" : "\n  ");
}

static tsr_gguf *
open_or_report (const char *path)
{
  struct tsr_gguf_error err;
  tsr_gguf *g = tsr_gguf_open (path, &err);
  if (!g)
    fprintf (stderr, "%s: %s: %s\n", program, path, err.message);
  return g;
}

static int
cmd_dump (const char *path, bool json)
{
  tsr_gguf *g = open_or_report (path);
  if (!g)
    return 1;
  if (json)
    dump_json (g);
  else
    dump_text (path, g);
  tsr_gguf_close (g);
  return 0;
}

/* check */

/* A tensor whose size is not its rows times the row size of its type
   (the parser computed it so; a check that the block tables agree).  */
static bool
sizes_ok (const char *path, const tsr_gguf *g)
{
  for (int64_t i = 0; i < tsr_gguf_n_tensors (g); i++)
    {
      struct tsr_gguf_tensor_info t;
      tsr_gguf_get_tensor_info (g, i, &t);
      uint64_t rows = (uint64_t) (t.ne[1] * t.ne[2] * t.ne[3]);
      if (t.size != tsr_row_size (t.type, t.ne[0]) * rows)
        {
          printf ("%s: tensor '%s': %zu bytes, not %llu rows of %zu (%s)\n",
                  tt_shown (path), tt_shown (t.name), t.size,
                  (unsigned long long) rows,
                  tsr_row_size (t.type, t.ne[0]), tsr_type_name (t.type));
          return false;
        }
    }
  return true;
}

static void
print_check_ok (const char *path, const tsr_gguf *g)
{
  struct type_totals tt;
  count_types (g, &tt);
  printf ("%s: OK: GGUF version %u, %lld keys, %lld tensors", path,
          tsr_gguf_version (g), (long long) tsr_gguf_n_kv (g),
          (long long) tsr_gguf_n_tensors (g));
  const char *sep = " (";
  for (int t = 0; t < TSR_TYPE_COUNT; t++)
    if (tt.tensors[t])
      {
        printf ("%s%s %lld", sep, tsr_type_name (t),
                (long long) tt.tensors[t]);
        sep = ", ";
      }
  printf ("%s\n", *sep == ',' ? ")" : "");
}

static int
cmd_check (char **paths, int n)
{
  int bad = 0;
  for (int i = 0; i < n; i++)
    {
      struct tsr_gguf_error err;
      tsr_gguf *g = tsr_gguf_open (paths[i], &err);
      if (g && sizes_ok (paths[i], g))
        print_check_ok (paths[i], g);
      else if (g)
        bad = 1;
      else
        {
          printf ("%s: %s\n", tt_shown (paths[i]), err.message);
          bad = 1;
        }
      tsr_gguf_close (g);
    }
  return bad;
}

/* convert and requantize */

/* How each tensor's type is chosen: convert turns every float tensor
   into TO; requantize follows RECIPE.  */
struct plan
{
  bool requantize;
  tsr_type to;
  struct gr_recipe recipe;
  struct gr_model model;
  int threads;                  /* rows converted in parallel */
};

/* convert: TO for float tensors whose rows fit its blocks and that
   have more than one row; otherwise its own.  Vectors (norms, biases)
   stay as they are, as in the files other converters write, unless TO
   is f32: the model runner reads them in f32 only, and a file it would
   refuse is no use (f16 norms were written before).  */
static tsr_type
convert_type (const struct tsr_gguf_tensor_info *info, tsr_type to)
{
  const struct tsr_type_traits *from = tsr_type_traits (info->type);
  const struct tsr_type_traits *tr = tsr_type_traits (to);
  if (!from->is_float || info->ne[0] % tr->block_size != 0)
    return info->type;
  if (info->n_dims < 2 && to != TSR_TYPE_F32)
    return info->type;
  return to;
}

static tsr_type
target_type (const struct plan *p, const struct tsr_gguf_tensor_info *info)
{
  char note[512];
  if (!p->requantize)
    {
      tsr_type t = convert_type (info, p->to);
      if (t != p->to)
        fprintf (stderr, "%s: %s: kept as %s\n", program,
                 tt_shown (info->name),
                 tsr_type_name (t));
      return t;
    }
  tsr_type t = gr_tensor_type (&p->recipe, &p->model, info, note,
                               sizeof note);
  if (note[0])
    printf ("%s\n", note);
  return t;
}

/* Rows [FIRST, LAST) of a tensor from SRC (type FROM) to DST (type TO),
   ROW elements each, through floats.  */
struct rows_job
{
  const char *src;
  char *dst;
  tsr_type from, to;
  int64_t row, first, last;
  int status;
};

static void *
convert_rows (void *arg)
{
  struct rows_job *j = arg;
  size_t in_row = tsr_row_size (j->from, j->row);
  size_t out_row = tsr_row_size (j->to, j->row);
  float *tmp = malloc ((size_t) (j->row ? j->row : 1) * sizeof *tmp);
  if (!tmp)
    {
      j->status = TSR_ERR_NO_MEMORY;
      return NULL;
    }
  for (int64_t r = j->first; r < j->last; r++)
    {
      tsr_type_traits (j->from)->to_float (j->src + r * in_row, tmp, j->row);
      tsr_type_traits (j->to)->from_float (tmp, j->dst + r * out_row, j->row);
    }
  free (tmp);
  j->status = TSR_OK;
  return NULL;
}

/* A host tensor in CTX holding tensor I of G as TYPE, its rows
   converted by up to THREADS threads (each row is converted alone: the
   bytes do not depend on the number of threads).  */
static tsr_tensor *
converted (const tsr_gguf *g, int64_t i, tsr_type type, int threads,
           tsr_context *ctx)
{
  struct tsr_gguf_tensor_info info;
  tsr_gguf_get_tensor_info (g, i, &info);
  tsr_tensor *t = tsr_new_tensor (ctx, type, TSR_MAX_DIMS, info.ne);
  if (!t)
    return NULL;
  tsr_set_name (t, info.name);
  const char *src = tsr_gguf_tensor_data (g, i);
  /* No elements, nothing to convert (its rows may still be many: a
     2^40 x 0 tensor is 2^40 empty rows).  */
  if (tsr_nelements (t) == 0)
    return t;
  if (type == info.type)
    {
      memcpy (t->data, src, info.size);
      return t;
    }
  enum { MAX_THREADS = 256, MIN_ROWS = 16 };
  int64_t rows = info.ne[1] * info.ne[2] * info.ne[3];
  int64_t nth = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS
                                                        : threads;
  if (nth > rows / MIN_ROWS)
    nth = rows / MIN_ROWS > 0 ? rows / MIN_ROWS : 1;
  struct rows_job jobs[MAX_THREADS];
  pthread_t tid[MAX_THREADS];
  bool started[MAX_THREADS];
  int status = TSR_OK;
  for (int64_t k = 0; k < nth; k++)
    {
      jobs[k] = (struct rows_job) { src, t->data, info.type, type,
                                    info.ne[0], rows * k / nth,
                                    rows * (k + 1) / nth, TSR_OK };
      /* The last part runs here, and so does any a thread cannot take.  */
      started[k] = k + 1 < nth
                   && pthread_create (&tid[k], NULL, convert_rows,
                                      &jobs[k]) == 0;
      if (!started[k] && k + 1 < nth)
        convert_rows (&jobs[k]);
    }
  convert_rows (&jobs[nth - 1]);
  for (int64_t k = 0; k < nth; k++)
    {
      if (started[k])
        pthread_join (tid[k], NULL);
      if (jobs[k].status != TSR_OK)
        status = jobs[k].status;
    }
  return status == TSR_OK ? t : NULL;
}

/* Write W to OUT (the library writes beside it and renames, so OUT may
   be the input, which is mapped).  */
static int
write_renamed (tsr_gguf_writer *w, const char *out)
{
  int st = tsr_gguf_writer_write_file (w, out);
  if (st != TSR_OK)
    fprintf (stderr, "%s: %s\n", program, tsr_last_error ());
  return st;
}

/* "OUT: 7 of 9 tensors converted to Q4_K_M (q4_K 5, q6_K 2, f32 2)".  */
static void
report (const char *out, const struct plan *p, const int64_t *count,
        int64_t changed, int64_t n)
{
  printf ("%s: %lld of %lld tensors %s to %s", out, (long long) changed,
          (long long) n, p->requantize ? "requantized" : "converted",
          p->requantize ? p->recipe.name : tsr_type_name (p->to));
  const char *sep = " (";
  for (int t = 0; t < TSR_TYPE_COUNT; t++)
    if (count[t])
      {
        printf ("%s%s %lld", sep, tsr_type_name (t), (long long) count[t]);
        sep = ", ";
      }
  printf ("%s\n", *sep == ',' ? ")" : "");
}

/* The output's metadata: IN's, plus the file type of a requantized
   model as its readers expect it.  */
static int
copy_metadata (tsr_gguf_writer *w, const tsr_gguf *g, const struct plan *p)
{
  int st = tsr_gguf_writer_copy_kv (w, g);
  if (st == TSR_OK && p->requantize && p->recipe.file_type >= 0)
    st = tsr_gguf_set_u32 (w, "general.file_type",
                           (uint32_t) p->recipe.file_type);
  if (st == TSR_OK && p->requantize)
    st = tsr_gguf_set_u32 (w, "general.quantization_version", 2);
  return st;
}

static int
cmd_convert (const char *in, const char *out, struct plan *p)
{
  tsr_gguf *g = open_or_report (in);
  if (!g)
    return 1;
  tsr_context *ctx = tsr_context_new (false);
  tsr_gguf_writer *w = tsr_gguf_writer_new ();
  int st = ctx && w ? copy_metadata (w, g, p) : TSR_ERR_NO_MEMORY;
  int64_t changed = 0, count[TSR_TYPE_COUNT] = { 0 };
  gr_model_init (g, &p->model);
  for (int64_t i = 0; st == TSR_OK && i < tsr_gguf_n_tensors (g); i++)
    {
      struct tsr_gguf_tensor_info info;
      tsr_gguf_get_tensor_info (g, i, &info);
      tsr_type type = target_type (p, &info);
      tsr_tensor *t = converted (g, i, type, p->threads, ctx);
      st = t ? tsr_gguf_writer_add_tensor (w, t) : (int) TSR_ERR_NO_MEMORY;
      changed += type != info.type;
      count[type]++;
    }
  if (st == TSR_OK)
    st = write_renamed (w, out);
  else
    fprintf (stderr, "%s: %s\n", program, st == TSR_ERR_NO_MEMORY
             && !*tsr_last_error () ? "out of memory" : tsr_last_error ());
  if (st == TSR_OK)
    report (out, p, count, changed, tsr_gguf_n_tensors (g));
  tsr_gguf_writer_free (w);
  tsr_context_free (ctx);
  tsr_gguf_close (g);
  return st == TSR_OK ? 0 : 1;
}

/* The plan for COMMAND and --type NAME; false (with a message) for a
   name that is no type (nor, for requantize, a preset).  */
static bool
make_plan (const char *command, const char *name, struct plan *p)
{
  memset (p, 0, sizeof *p);
  p->requantize = strcmp (command, "requantize") == 0;
  if (p->requantize && gr_recipe_find (name, &p->recipe))
    return true;
  p->to = name ? tsr_type_from_name (name) : TSR_TYPE_COUNT;
  if (!p->requantize && p->to != TSR_TYPE_COUNT && p->to != TSR_TYPE_I32)
    return true;
  struct gr_recipe r;
  if (!p->requantize && gr_recipe_find (name, &r))
    fprintf (stderr, "%s: %s is a preset: use requantize\n", program, name);
  else
    fprintf (stderr, "%s: %s: --type must be a float or quantized type "
             "(f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K..q6_K, "
             "q8_K, iq4_nl, iq4_xs, mxfp4)%s\n", program,
             name ? name : "(none)", p->requantize ? " or a preset (Q4_K_M, "
             "Q4_K_S, Q5_K_M, Q6_K, Q8_0, Q4_0, IQ4_XS, Q3_K_M, Q2_K)" : "");
  return false;
}

int
main (int argc, char **argv)
{
  static const struct option opts[] = {
    { "json", no_argument, NULL, 'j' },
    { "type", required_argument, NULL, 't' },
    { "threads", required_argument, NULL, 'T' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
  };
  /* synth has options of its own.  */
  if (argc > 1 && strcmp (argv[1], "synth") == 0)
    return synth_main (argc - 1, argv + 1);
  bool json = false;
  const char *type_name = NULL;
  long threads = sysconf (_SC_NPROCESSORS_ONLN);
  int c;
  char *end;
  while ((c = getopt_long (argc, argv, "jt:T:hV", opts, NULL)) != -1)
    switch (tt_check_optarg (program, opts, c, optarg, NULL), c)
      {
      case 'j': json = true; break;
      case 't': type_name = optarg; break;
      case 'T':
        errno = 0;
        threads = strtol (optarg, &end, 10);
        if (errno || end == optarg || *end || threads < 1 || threads > 256)
          {
            fprintf (stderr, "%s: --threads=%s: not a number from 1 to "
                     "256\n", program, optarg);
            return 2;
          }
        break;
      case 'h': usage (stdout); return 0;
      case 'V':
        printf ("tessera-gguf (Tessera) %s\n", tsr_version ());
        return 0;
      default: usage (stderr); return 2;
      }
  const char *cmd = optind < argc ? argv[optind++] : NULL;
  int n = argc - optind;
  char **args = argv + optind;
  if (cmd && strcmp (cmd, "dump") == 0 && n == 1)
    return cmd_dump (args[0], json);
  if (cmd && strcmp (cmd, "check") == 0 && n >= 1)
    return cmd_check (args, n);
  if (cmd && (strcmp (cmd, "convert") == 0
              || strcmp (cmd, "requantize") == 0) && n == 2)
    {
      struct plan plan;
      if (!make_plan (cmd, type_name, &plan))
        return 2;
      plan.threads = threads > 0 ? (int) threads : 1;
      return cmd_convert (args[0], args[1], &plan);
    }
  if (cmd)
    fprintf (stderr, "%s: %s: unknown command or wrong number of "
             "arguments\n", program, cmd);
  usage (stderr);
  return 2;
}
