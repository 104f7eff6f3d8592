/* cuda-impl.h - what the CUDA backend's C files share.  Not installed.
 *
 * The module is split by concern:
 *   cuda-module.c     descriptor, score (driver, runtime, devices),
 *                     device enumeration, the registration and devices
 *   cuda-buffer.c     the device-memory buffer type (cudaMalloc)
 *   cuda-backend.c    the backend: a stream, async set/get, the graph
 *                     walk, scratch memory, the index status word
 *   cuda-ops.c        which op runs on which kernel (supports_op) and
 *                     how it is launched
 *   cuda-blas.c       cuBLAS, opened on first use, and mul_mat on it
 *                     (or on the matrix-vector kernels)
 *   cuda-fuse.c       the groups of nodes one kernel computes
 *   cuda-profile.c    TESSERA_CUDA_PROFILE: each kernel's GPU time
 *   *.cu              the kernels (cuda-kernels.h is their C face);
 *                     cuda-mmvq.cu the q8_0 / q4_0 products of token
 *                     generation on 8-bit activations
 *
 * The backend keeps the graphs it computed as CUDA graphs and replays
 * them (cuda-backend.c).
 *
 * Device memory is addressed directly: a buffer's base is its
 * cudaMalloc pointer and tensor data pointers are device addresses that
 * kernels and cuBLAS take as they are (never dereferenced on the
 * host).  Managed memory is never used.
 * Nothing here is exported: the module exports only its descriptor.  */
#ifndef TSR_CUDA_IMPL_H
#define TSR_CUDA_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include <tessera/module.h>

#include "cuda-kernels.h"

/* Alignment of tensors in a buffer (cudaMalloc gives 256).  */
#define CU_ALIGN 256

/* One GPU as a Tessera device.  */
struct tsr_cuda_device
{
  tsr_device *dev;              /* what the registry hands out (in the
                                   registration tsr_reg_new made) */
  struct tsr_buffer_type buft;  /* its memory */
  struct tsr_buffer_type host_buft;     /* pinned host memory */
  char host_name[24];           /* "CUDA<n>_Host" */
  int ordinal;                  /* CUDA device number, N of "CUDAN" */
  char name[16];
  char description[384];
  char pci_bus_id[32];
  int cc_major, cc_minor;       /* compute capability */
  size_t mem_total;
};

/* What the graph walk does at a node (cuda-fuse.c): compute it, skip
   it (an earlier node's kernel computed it), or launch the fused
   kernel of the group it starts, MEMBERS its nodes' positions.  */
enum tsr_cuda_step_kind
{
  TSR_CUDA_STEP_RUN = 0,
  TSR_CUDA_STEP_SKIP,
  TSR_CUDA_STEP_NORM_MUL,
  TSR_CUDA_STEP_ADD_NORM_MUL,
  TSR_CUDA_STEP_MMV_SET,
  TSR_CUDA_STEP_MMV_GLU,
  TSR_CUDA_STEP_PHASES
};
/* The activations of a matrix-vector product rounded to 8 bits by the
   kernel before it (a norm group, flash_attn_ext), instead of by a
   kernel of their own: that step writes them into scratch memory
   (Q8_OUT), the product's step, the next to launch, reads them there
   (Q8_IN).  */
enum { TSR_CUDA_Q8_OUT = 1, TSR_CUDA_Q8_IN = 2 };
struct tsr_cuda_step
{
  uint8_t kind;
  uint8_t n;                    /* nodes in the group */
  uint8_t q8;                   /* 0, TSR_CUDA_Q8_OUT or TSR_CUDA_Q8_IN */
  int members[4];
};

struct tsr_cuda_shape;          /* cuda-backend.c */

/* The backend's state (cuda-backend.c) as the op launchers see it.  */
struct tsr_cuda_backend
{
  struct tsr_cuda_device *d;
  cudaStream_t stream;
  void *blas;                   /* cublasHandle_t, made on first mul_mat */
  void *scratch;                /* device memory for converted operands */
  size_t scratch_size;
  struct tsr_cuda_status *status;     /* device word for bad indices */
  bool uses_status;             /* this graph wrote into it */
  int tag;                      /* the node being launched: its graph
                                   position + 1, the status it reports */
  bool q8_in;                   /* its activations are in scratch, as
                                   8-bit integers (TSR_CUDA_Q8_IN) */
  bool q8_out;                  /* it writes them there too (a
                                   flash_attn_ext node, TSR_CUDA_Q8_OUT) */
  bool graphs;                  /* TESSERA_CUDA_GRAPHS (default on) */
  bool fusion;                  /* TESSERA_CUDA_FUSION (default on) */
  struct tsr_cuda_tuning tuning;        /* TESSERA_CUDA_PDL, _MMVQ_SPLIT */
  bool capturing;               /* a CUDA graph is being captured */
  bool scratch_moved;           /* tsr_cuda_scratch reallocated */
  struct tsr_cuda_shape *shapes;        /* the graph shapes seen last */
  uint64_t clock;               /* computes, for the least recent shape */
  void *sig;                    /* the signature being compared */
  size_t sig_cap;               /* its bytes */
  struct tsr_backend_counters counters;
  struct tsr_cuda_profile *profile;     /* TESSERA_CUDA_PROFILE */
  bool profiling;
};

/* cuda-module.c */
/* "what: <CUDA error name>: <its text>" in the thread's error slot;
   returns TSR_ERR_BACKEND.  */
TSR_MODULE_HIDDEN int tsr_cuda_error (const struct tsr_cuda_device *d, const char *what,
                        cudaError_t err);

/* cuda-buffer.c */
TSR_MODULE_HIDDEN void tsr_cuda_buft_init (struct tsr_cuda_device *d);
TSR_MODULE_HIDDEN void tsr_cuda_host_buft_init (struct tsr_cuda_device *d);
/* Whether T's data lies in a buffer of device D.  */
TSR_MODULE_HIDDEN bool tsr_cuda_tensor_on (const struct tsr_cuda_device *d, const tsr_tensor *t);

/* cuda-backend.c */
TSR_MODULE_HIDDEN tsr_backend *tsr_cuda_backend_new (tsr_device *dev, const char *params);
/* Events (device interface; record and wait are the backend's).  */
TSR_MODULE_HIDDEN int tsr_cuda_event_new (tsr_device *dev, tsr_event *ev);
TSR_MODULE_HIDDEN void tsr_cuda_event_free (tsr_event *ev);
TSR_MODULE_HIDDEN int tsr_cuda_event_synchronize (tsr_event *ev);
/* At least SIZE bytes of scratch device memory (valid until the next
   call, ordered on the backend's stream), or NULL with an error.  */
TSR_MODULE_HIDDEN void *tsr_cuda_scratch (struct tsr_cuda_backend *be, size_t size);

/* cuda-ops.c */
/* Whether a kernel takes OP's types and layouts (the core has checked
   the node: tsr_node_validate).  */
TSR_MODULE_HIDDEN bool tsr_cuda_supports_op (const struct tsr_cuda_device *d,
                               const tsr_tensor *op);
TSR_MODULE_HIDDEN int tsr_cuda_launch_op (struct tsr_cuda_backend *be, tsr_tensor *node);
/* T as a kernel argument.  */
TSR_MODULE_HIDDEN struct tsr_cuda_tdesc tsr_cuda_desc (const tsr_tensor *t);

/* cuda-fuse.c */
/* The steps of G's nodes into STEPS (one per node); the number of
   nodes computed inside another node's kernel.  */
TSR_MODULE_HIDDEN int tsr_cuda_fuse_plan (const tsr_graph *g,
                                          struct tsr_cuda_step *steps);
/* Launch the fused kernel of the group STEP starts.  */
TSR_MODULE_HIDDEN int tsr_cuda_fuse_launch (struct tsr_cuda_backend *be,
                                            const tsr_graph *g,
                                            const struct tsr_cuda_step *step);
/* The counters of a backend (get_proc TSR_BACKEND_COUNTERS_NAME).  */
TSR_MODULE_HIDDEN int tsr_cuda_counters (tsr_backend *backend,
                                         struct tsr_backend_counters *c,
                                         bool clear);

/* cuda-profile.c: TESSERA_CUDA_PROFILE.  Before a walk of N_STEPS
   kernels at most; after each; after the walk (waits for it); the
   table, at the backend's end.  */
TSR_MODULE_HIDDEN int tsr_cuda_profile_begin (struct tsr_cuda_backend *be,
                                              int n_steps);
TSR_MODULE_HIDDEN int tsr_cuda_profile_step (struct tsr_cuda_backend *be,
                                             const tsr_tensor *t,
                                             const struct tsr_cuda_step *step);
TSR_MODULE_HIDDEN int tsr_cuda_profile_end (struct tsr_cuda_backend *be);
TSR_MODULE_HIDDEN void tsr_cuda_profile_free (struct tsr_cuda_backend *be);

/* cuda-blas.c */
/* Whether mul_mat of these operands can go to cuBLAS (after the
   operand conversions cuda-blas.c makes).  */
TSR_MODULE_HIDDEN bool tsr_cuda_mul_mat_supports (const tsr_tensor *d);
TSR_MODULE_HIDDEN int tsr_cuda_mul_mat (struct tsr_cuda_backend *be, tsr_tensor *d);
/* Whether the matrix-vector kernels take mul_mat D (else cuBLAS).  */
TSR_MODULE_HIDDEN bool tsr_cuda_mmv_ready (const tsr_tensor *d);
/* The products of SET (weights of type ATYPE, every one ready as
   above) with the activations B: in integer dot products for q8_0 and
   q4_0 in two dimensions (cuda-mmvq.cu), else cuda-quant.cu's
   kernels.  A status; a failure names NODE (the last of the set).  */
/* Where the activations B of such products go as 8-bit integers: Q
   and DS in scratch memory (grown to hold them); NULL when out of
   memory.  */
TSR_MODULE_HIDDEN char *tsr_cuda_mmv_q8_scratch (struct tsr_cuda_backend *be,
                                                 const tsr_tensor *b,
                                                 void **ds);
/* Whether the products of mul_mat D take their activations as 8-bit
   integers (cuda-mmvq.cu), so a kernel before may round them.  */
TSR_MODULE_HIDDEN bool tsr_cuda_mmv_integer (const tsr_tensor *d);
TSR_MODULE_HIDDEN int tsr_cuda_mmv_launch (struct tsr_cuda_backend *be,
                                           const struct tsr_cuda_mmv_set *set,
                                           int atype, const tsr_tensor *b,
                                           const tsr_tensor *node);
/* Release the cuBLAS handle of BE.  */
TSR_MODULE_HIDDEN void tsr_cuda_blas_release (struct tsr_cuda_backend *be);

#endif /* TSR_CUDA_IMPL_H */
