/* bench.h - what the parts of tessera-bench share.  Not installed.
 *
 * tessera-bench times operations on every device.  It is split by
 * concern:
 *   tessera-bench.c   options, the case list (defaults, --quick,
 *                     filters, --shape), devices and the main loop
 *   bench-run.c       the benchmarks: building one case's graph,
 *                     counting its floating-point operations and bytes,
 *                     allocating and filling its inputs once and timing
 *                     repeated computes
 *   bench-report.c    the output formats: table, CSV and JSON
 *
 * A benchmark ("kind") is an operation with a fixed way of building its
 * graph from a type and a shape m, k, n; a case is a kind with one type
 * and one shape.  Only Tessera's public API is used.  */
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <tessera.h>

#include "tool-util.h"

struct bench_build;

/* Floating-point operations and bytes of one compute of a case.  */
struct bench_cost
{
  double flops;          /* 0: not a matrix product */
  double bytes;          /* read and written, weights counted once */
  double weight_bytes;   /* weights read, for products with n <= 8;
                            0 otherwise */
};

struct bench_kind
{
  const char *name;        /* the operation's name, as --op takes it */
  tsr_op op;
  int nodes;               /* nodes of the graph */
  unsigned types;          /* accepted types: bit 1 << tsr_type */
  bool uses_k;             /* shape m, k, n; else m (row length), n */
  tsr_tensor *(*build) (struct bench_build *b, tsr_type type, int64_t m,
                        int64_t k, int64_t n);
  struct bench_cost (*cost) (tsr_type type, int64_t m, int64_t k,
                             int64_t n);
  bool cold;               /* a product reading its weights whole: each
                              run reads them from memory (bench_run) */
};

/* Every benchmark, in the order cases are run (bench-run.c).  */
extern const struct bench_kind bench_kinds[];
extern const size_t bench_n_kinds;

/* Sizes fixed by the benchmarks, for the help and the man page.  */
#define BENCH_EXPERTS 8          /* mul_mat_id: experts */
#define BENCH_EXPERTS_USED 2     /* mul_mat_id: experts per token */
#define BENCH_HEADS 32           /* flash_attn_ext: query heads */
#define BENCH_KV_HEADS 8         /* flash_attn_ext: key/value heads */
#define BENCH_CHAIN 32           /* add chain: nodes */
/* Products (cold kinds) compute on copies of their weights and inputs,
   enough of them to fill BENCH_COLD_MIB MiB of weights, each copy
   once a run: the caches of any CPU or GPU known hold less, so every
   product reads its weights from memory as the layers of a model do
   (one copy, as with --hot-weights, would run a matrix that fits the
   last-level cache from it).  */
#define BENCH_COLD_MIB 256
#define BENCH_MAX_COPIES 64

struct bench_case
{
  const struct bench_kind *kind;
  tsr_type type;
  int64_t m, k, n;
};

enum bench_status
{
  BENCH_OK,
  BENCH_UNSUPPORTED,   /* the device does not support a node */
  BENCH_ERROR          /* building, allocating or computing failed */
};

/* Automatic timed runs: at least this many.  */
#define BENCH_MIN_RUNS 3

struct bench_timing
{
  int warmup;          /* warm-up runs; < 0: automatic */
  int repeat;          /* timed runs; <= 0: automatic */
  double min_us;       /* automatic: time the timed runs take at least */
  uint64_t seed;
  bool repack;         /* mul_mat weights in the device's extra buffer type */
  bool hot_weights;    /* one copy of the weights (BENCH_COLD_MIB) */
};

struct bench_result
{
  enum bench_status status;
  char msg[256];
  int runs;
  int copies;          /* of the weights and inputs (BENCH_COLD_MIB) */
  double us_median, us_min;     /* of one product: a run's time over
                                   COPIES */
  struct bench_cost cost;
};

/* Run case C on backend BE (bench-run.c).  */
void bench_run (const struct bench_case *c, tsr_backend *be,
                const struct bench_timing *t, struct bench_result *r);
/* "mul_mat q4_0 4096,14336,1": names a case in messages and seeds its
   inputs.  */
const char *bench_case_name (char *buf, size_t n, const struct bench_case *c);

/* Reports (bench-report.c).  */
enum bench_format
{
  BENCH_TABLE,
  BENCH_CSV,
  BENCH_JSON
};

struct bench_device
{
  tsr_device *dev;
  tsr_backend *be;
  int threads;         /* set with --threads; 0: the backend's own */
};

/* The host's roofs, measured in the same run as the cases.  */
struct bench_peaks
{
  char level[32];          /* the CPU ISA level whose instructions they
                              are for ("v4-vnni") */
  double fma;              /* f32 multiply-add peak, GFLOP/s */
  const char *fma_unit;    /* its instructions */
  double dot8;             /* 8-bit dot-product peak, GOP/s; 0: the
                              level's kernels have no such instructions */
  const char *dot8_unit;
};

/* The peaks of the instructions of ISA level LEVEL (the CPU device's
   level, as its description names it; NULL or one this build or CPU
   does not know: the best level the CPU runs) on THREADS threads
   (bench-peaks.c).  */
void bench_peaks_measure (const char *level, int threads,
                          struct bench_peaks *p);

struct bench_roofs
{
  int threads;             /* of the measurements */
  double read;             /* read bandwidth before the cases, GB/s */
  double read_after;       /* and after them (0: not yet) */
  struct bench_peaks peaks;
};

/* The roofline efficiency of result R of case C on device D: the time
   the case would take at the roof that bounds it, max (bytes / read
   roof, operations / peak), over its median time; the peak is the FMA
   one for f32, f16 and bf16 weights and attention, the 8-bit
   dot-product one for quantized weights (their activations are
   quantized to 8 bits).  *BOUND names the roof ("memory", "fma",
   "dot8").  0 where it does not apply: no roofs, a device that is not
   the host's CPU, a case that did not run.  */
double bench_efficiency (const struct bench_roofs *roofs,
                         const struct bench_device *d,
                         const struct bench_case *c,
                         const struct bench_result *r, const char **bound);

/* The operations per second at the roofs of matrix-product case C
   with N columns (any real N >= 1) instead of its own: min (peak,
   operations / (bytes / read roof)), in GFLOP/s (bench-report.c).  */
double bench_roof_gflops (const struct bench_roofs *roofs,
                          const struct bench_case *c, double n);

/* ROOFS: NULL when not measured (no efficiency column; nothing printed
   at the end).  */
void bench_report_begin (FILE *f, enum bench_format fmt,
                         const struct bench_device *devs, size_t n_devs);
void bench_report_device (FILE *f, enum bench_format fmt,
                          const struct bench_device *d,
                          const struct bench_roofs *roofs);
void bench_report_result (FILE *f, enum bench_format fmt,
                          const struct bench_device *d,
                          const struct bench_case *c,
                          const struct bench_result *r,
                          const struct bench_roofs *roofs);
void bench_report_end (FILE *f, enum bench_format fmt,
                       const struct bench_roofs *roofs);

/* One plotted result.  */
struct bench_point
{
  const struct bench_device *dev;
  struct bench_case c;
  struct bench_result r;
};

/* Writes the mul_mat results among PTS as a roofline chart in SVG to
   PATH: GFLOP/s against N on logarithmic axes, a line per device, type
   and m, k, with the memory roof of each type and m, k and the compute
   peaks drawn (bench-plot.c).  0, or -1 with a message on stderr.  */
int bench_plot_svg (const char *path, const char *program,
                    const struct bench_point *pts, size_t n,
                    const struct bench_roofs *roofs);

/* tessera-bench -o all_reduce (bench-comm.c): all_reduce of SIZES[i]
   floats (N_SIZES 0: the default sizes) over the ranks of the MPI job,
   REPEAT timed runs each (<= 0: 9); rank 0 prints in FORMAT.  Exit
   status.  */
int bench_comm (const int64_t *sizes, int n_sizes, int repeat,
                enum bench_format format, const char *program);

#endif /* BENCH_H */
