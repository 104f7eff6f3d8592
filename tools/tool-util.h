/* tool-util.h - helpers shared by the command-line tools.  Not installed.
 *
 * Owns what tessera-opcheck and tessera-bench both need and nothing
 * else: the deterministic random numbers their inputs are drawn from,
 * the monotonic clock, the command-line checks that end in exit
 * status 2 (bad usage), operation lookup by name, converting floats to
 * any element type, and choosing devices by name.  Only Tessera's
 * public API is used.  */
#ifndef TOOL_UTIL_H
#define TOOL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tessera.h>

/* Random numbers: splitmix64, seeded from the user's seed, a name (a
   case's) and a stream number (one stream per input), so that the
   inputs of a case depend on nothing else.  */
struct tt_rng
{
  uint64_t s;
};
void tt_rng_seed (struct tt_rng *r, uint64_t seed, const char *name,
                  int stream);
uint64_t tt_rng_next (struct tt_rng *r);
double tt_rng_uniform (struct tt_rng *r);   /* [0, 1) */

/* CLOCK_MONOTONIC in microseconds.  */
double tt_now_us (void);

/* S made safe to print (tsr_escape_text): names from files, module
   paths, strings a module returned.  The result lives in one of 8
   rotating buffers of this thread (so a printf may take up to 8), and
   is cut at 4 KiB.  */
const char *tt_shown (const char *s);
/* The N bytes at S (no NUL among them; any length) written to F made
   safe the same way, in pieces cut only between characters.  */
void tt_print_escaped (const char *s, size_t n, FILE *f);

/* The N bytes at S as a JSON string, quoted, on F: quotes,
   backslashes and control characters escaped, every byte that is not
   part of a valid UTF-8 character written as \ufffd (so the output is
   always valid JSON and valid UTF-8).  */
void tt_print_json_string (const char *s, size_t n, FILE *f);

/* Print "PROGRAM: " and FMT (one %s, ARG) and a pointer to --help on
   standard error, and exit with status 2.  */
void tt_usage_error (const char *program, const char *fmt, const char *arg)
#if defined(__GNUC__)
  __attribute__ ((noreturn))
#endif
  ;
/* An option C (of OPTS) given an empty argument, as in --load='', is a
   usage error naming the option, unless C is in ALLOW_EMPTY (may be
   NULL).  Call with getopt's optarg first thing in the option loop.  */
struct option;
void tt_check_optarg (const char *program, const struct option *opts, int c,
                      const char *arg, const char *allow_empty);
/* ARG as an integer in [MIN, MAX], or a usage error naming WHAT.  */
long long tt_parse_number (const char *program, const char *arg,
                           const char *what, long long min, long long max);

/* The options every tool has, for the default case of its getopt
   switch: 'h' prints USAGE on standard output and exits 0, 'V' the
   version, anything else (getopt has said what) points to --help and
   exits 2.  */
void tt_common_option (const char *program, int c, void (*usage) (FILE *))
#if defined(__GNUC__)
  __attribute__ ((noreturn))
#endif
  ;
/* Call EACH (NAME, DATA) for every name of the comma-separated LIST
   (empty names skipped).  */
void tt_for_each_name (const char *list,
                       void (*each) (const char *name, void *data),
                       void *data);

/* FMT and AP into BUF as one line (newlines and tabs become spaces),
   for a one-line-per-case report.  */
void tt_vmessage (char *buf, size_t size, const char *fmt, va_list ap);

/* The operation named NAME (case-insensitive), or TSR_OP_COUNT.  */
tsr_op tt_op_by_name (const char *name);
/* Set OPS[op] for every operation named in the comma-separated LIST;
   an unknown name is a usage error.  */
void tt_parse_ops (const char *program, const char *list,
                   bool ops[TSR_OP_COUNT]);

/* N floats (a multiple of TYPE's block size) as TYPE into DST: copied,
   converted, or quantized with the reference quantizer.  TSR_OK or an
   error (i32 is not a float type).  */
int tt_from_float (tsr_type type, const float *src, void *dst, int64_t n);

/* The registry's devices, or only the one named NAME (case-insensitive)
   when NAME is not NULL, into DEVS (room for tsr_device_count ()).
   An unknown NAME is a usage error whose message lists the devices.
   Returns how many.  */
size_t tt_select_devices (const char *program, const char *name,
                          tsr_device **devs);

/* The host's memory read bandwidth in GB/s (1e9 bytes per second):
   THREADS threads summing a buffer far larger than the caches with the
   widest vectors the CPU has, the best of several passes.  0 when the buffer cannot be had.  */
double tt_read_bandwidth (int threads);

/* The median of the N (>= 1) values of V, which it sorts in place (so
   V[0] and V[N - 1] are then the least and the greatest): the middle
   value, or the mean of the two middle ones for an even N.  */
double tt_median (double *v, int n);

/* The read bandwidth of BE's own memory in GB/s: BE sums a 1 GiB f32
   tensor in its buffer type, the best of several passes.  For devices
   that are not the host.  0 when it cannot be measured.  */
double tt_device_bandwidth (tsr_backend *be);

/* The kB of this process's mappings of the file PATH, and how many of
   them the kernel maps with 2 MiB pages (Linux's /proc/self/smaps);
   false where that cannot be read or PATH is not mapped.  */
bool tt_mapped_pages (const char *path, uint64_t *kb, uint64_t *pmd_kb);

#endif /* TOOL_UTIL_H */
