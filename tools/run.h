/* run.h - what tessera-run's files share: its options and the model
 * benchmark.  Not installed.  */
#ifndef RUN_H
#define RUN_H

#include <stdbool.h>
#include <stdint.h>

#include <tessera-model.h>

#define RUN_MAX_SETS 8

struct run_options
{
  const char *model;
  const char *tokens;           /* --tokens=ID,ID,... */
  const char *prompt;           /* -p TEXT */
  const char *logits_file;
  const char *devices[RUN_MAX_SETS];    /* --device=LIST, repeatable */
  int n_sets;
  int gpu_layers;               /* -1: all on the first device; 0: none */
  int n_predict;                /* -1: until end of generation */
  int keep;                     /* --keep: positions a shift keeps */
  bool no_shift;                /* --no-context-shift */
  bool chat;                    /* --chat */
  const char *chat_template;    /* --chat-template=NAME */
  const char *system;           /* --system=TEXT */
  int n_ctx, n_batch, n_threads;
  int n_ubatch, n_pipeline;     /* --ubatch, --pipeline (0: defaults) */
  struct tsr_sampler_params sampling;
  bool print_ids, ignore_eos, no_mmap, no_repack, special;
  bool kv_f32;                  /* --cache-type=f32 */
  /* --tensor-parallel, --pipeline-parallel: the ranks of the MPI job
     share the model (COMM opened by main).  */
  enum tsr_model_split split;
  tsr_comm *comm;
  /* --bench */
  bool bench;
  int pp, tg, repetitions;
  bool pp_given;                /* --pp given (else --bench-batched's 128) */
  const char *format;           /* table, csv, json */
  int n_parallel;                /* --parallel: continuations (0: one) */
  /* --bench-batched */
  bool bench_batched, pp_shared;
  const char *parallel_list;    /* --parallel-list=N,N,... */
};

/* Backends of the comma-separated device LIST (NULL: none chosen, the
   model picks) into BE, less the first when GPU_LAYERS is 0; their
   count, or -1 after a message.  */
int run_open_backends (const char *list, int gpu_layers, tsr_backend **be,
                       int max);

/* "CPU+CUDA0": the devices of M's backends into BUF (SIZE bytes).  */
void run_device_names (tsr_model *m, char *buf, size_t size);

/* tessera-run --bench: pp and tg tokens per second per device set.
   Exit status.  */
int run_bench (const struct run_options *o);
/* tessera-run --bench-batched: prompt and aggregate generation speeds
   of 1, 2, 4... sequences decoded together.  Exit status.  */
int run_bench_batched (const struct run_options *o);

#endif /* RUN_H */
