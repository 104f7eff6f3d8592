/* ocl-impl.h - what the OpenCL backend's files share.  Not installed.
 *
 * The module is split by concern:
 *   ocl-module.c    descriptor, score, platform and device enumeration,
 *                   the registration and the device objects
 *   ocl-device.c    per-device OpenCL state made on first use: context,
 *                   command queue, the kernel program and its kernels
 *   ocl-buffer.c    the device-memory buffer type and its buffers
 *   ocl-backend.c   the backend: async set/get, synchronize, graph walk
 *   ocl-ops.c       which op runs on which kernel (supports_op) and how
 *                   its arguments are set
 *   *.cl            the kernels, embedded at build time (ocl-kernels.h)
 *
 * One in-order command queue per device carries everything: buffer
 * set/get, backend transfers and kernels, so they never need events to
 * stay ordered.  Device memory has no host address: a buffer's base is
 * the fake address OCL_FAKE_BASE, tensor data pointers are that plus
 * the byte offset, and tsr_opencl_tensor_mem translates back.
 * Nothing here is exported: the module exports only its descriptor.  */
#ifndef TSR_OCL_IMPL_H
#define TSR_OCL_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <tessera/module.h>


/* The kernels of the program, by name (ocl-ops.c and the .cl files).  */
#define OCL_KERNELS(X)                                                    \
  X (binary) X (unary) X (glu) X (copy) X (get_rows) X (set_rows_check)   \
  X (set_rows) X (mul_mat) X (mul_mat_vec) X (mul_mat_tiled)             \
  X (mul_mat_id) X (sum_rows)                                             \
  X (norm) X (soft_max) X (rope) X (flash_attn) X (top_k) X (shape)        \
  X (arange) X (reduce) X (argsort) X (im2col) X (pool_2d)               \
  X (quantize) X (set_rows_q)

enum tsr_opencl_kernel_id
{
#define OCL_KERNEL_ENUM(name) OCL_K_##name,
  OCL_KERNELS (OCL_KERNEL_ENUM)
#undef OCL_KERNEL_ENUM
  OCL_K_COUNT
};

/* Base "address" of every buffer: tensor data pointers are this plus
   an offset into the buffer's cl_mem.  Page-aligned, never NULL.  */
#define OCL_FAKE_BASE ((char *) 0x1000)
/* Alignment of tensors in a buffer.  */
#define OCL_ALIGN 128

/* One OpenCL device as a Tessera device.  */
struct tsr_opencl_device
{
  tsr_device *dev;              /* what the registry hands out (in the
                                   registration tsr_reg_new made) */
  struct tsr_buffer_type buft;  /* its device memory */
  int index;                    /* N of "OpenCLN" */
  char name[32];
  char description[512];
  cl_platform_id platform;
  cl_device_id id;
  tsr_device_type type;
  size_t mem_total;
  size_t max_alloc;
  bool fp64;
  bool profile;                 /* TESSERA_OPENCL_PROFILE: the queue
                                   records kernel times */
  int subgroups;                /* 1: cl_khr_subgroups, 2:
                                   cl_intel_subgroups, 0: neither */
  bool cpu;                     /* CL_DEVICE_TYPE_CPU (PoCL's, Intel's
                                   CPU runtime) */
  size_t max_wg;                /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
  unsigned long long local_mem; /* CL_DEVICE_LOCAL_MEM_SIZE */

  pthread_mutex_t lock;         /* the state below and kernel args */
  bool have_queue;              /* context and queue made */
  bool queue_failed;
  bool have_program;            /* program built, kernels made */
  bool program_failed;
  char failure[1024];           /* why, for later callers */
  cl_context context;
  cl_command_queue queue;
  cl_program program;
  cl_kernel kernels[OCL_K_COUNT];
  size_t local[OCL_K_COUNT];    /* the local size of the kernels that
                                   take a work-group per row or tile
                                   (0: the others) */
  bool tiled;                   /* k_mul_mat_tiled runs here (256 items
                                   a group) */
};

struct tsr_opencl_profile;

/* The graph being computed, for the op dispatchers.  */
struct tsr_opencl_launch
{
  struct tsr_opencl_device *d;
  bool uses_status;             /* an op reported into d->status */
  int tag;                      /* the node being enqueued: its graph
                                   position + 1, what it reports */
  struct tsr_opencl_profile *prof;      /* the backend's, or NULL */
  cl_mem status;                /* the backend's status word */
};

/* The kernels taking a work-group per row or tile are written for any
   power-of-two local size from OCL_MIN_WG up to OCL_MAX_WG (the build
   option OCL_WG: that or the device's maximum, if lower; OCL_MIN_WG on
   CPU devices, whose runtimes run a group's items as loop iterations
   and vector lanes of one thread: there a larger group adds only the
   barriers' cost -- PoCL: generation 26 tokens/s with 256 items, 145
   with 16).  */
#define OCL_MIN_WG 16
#define OCL_MAX_WG 256
/* k_mul_mat_tiled's local size, fixed (TILE_ITEMS of ocl-matmul.cl);
   flash attention's at most (a key a work item in each chunk).  */
#define OCL_TILED_WG 256
#define OCL_FA_WG 64

/* ocl-profile.c: TESSERA_OPENCL_PROFILE.  Whether it is asked for; a
   backend's sums (NULL: no memory); a kernel's event EV (now owned by
   the profile) for node T; the end of a compute (waits for its
   kernels); the table on standard error and the sums freed.  */
TSR_MODULE_HIDDEN bool tsr_opencl_profile_wanted (void);
TSR_MODULE_HIDDEN struct tsr_opencl_profile *tsr_opencl_profile_new (void);
TSR_MODULE_HIDDEN void tsr_opencl_profile_add (struct tsr_opencl_profile *p,
                                               const char *kernel,
                                               const tsr_tensor *t,
                                               cl_event ev);
TSR_MODULE_HIDDEN int tsr_opencl_profile_end (struct tsr_opencl_profile *p,
                                              const struct tsr_opencl_device *d);
TSR_MODULE_HIDDEN void tsr_opencl_profile_free (struct tsr_opencl_profile *p,
                                                const struct tsr_opencl_device *d);

/* ocl-device.c: the name of kernel K ("k_...").  */
TSR_MODULE_HIDDEN const char *tsr_opencl_kernel_name (enum tsr_opencl_kernel_id k);

/* ocl-module.c */
TSR_MODULE_HIDDEN const char *tsr_opencl_error_string (cl_int err);

/* ocl-cache.c: the program binary's cache file for D built from SRC
   with OPTS into PATH (false: the cache is off or has no place); the
   file's bytes (malloc'd, NULL when unreadable); writing one (false on
   failure, nothing left half-written).  */
TSR_MODULE_HIDDEN bool tsr_opencl_cache_path (const struct tsr_opencl_device *d,
                                              const char *src,
                                              const char *opts, char *path,
                                              size_t n);
TSR_MODULE_HIDDEN unsigned char *tsr_opencl_cache_read (const char *path,
                                                        size_t *size);
TSR_MODULE_HIDDEN bool tsr_opencl_cache_write (const char *path,
                                               const void *data,
                                               size_t size);

/* ocl-device.c */
/* Make the context and queue of D (once); TSR_OK or an error set.  */
TSR_MODULE_HIDDEN int tsr_opencl_device_ready (struct tsr_opencl_device *d);
/* Build the program and kernels of D (once, after tsr_opencl_device_ready).  */
TSR_MODULE_HIDDEN int tsr_opencl_program_ready (struct tsr_opencl_device *d);
/* Release D's OpenCL objects.  */
TSR_MODULE_HIDDEN void tsr_opencl_device_release (struct tsr_opencl_device *d);

/* ocl-buffer.c */
TSR_MODULE_HIDDEN void tsr_opencl_buft_init (struct tsr_opencl_device *d);
/* The cl_mem holding T's data and T's byte offset in it; false when T
   is not in a buffer of device D.  */
TSR_MODULE_HIDDEN bool tsr_opencl_tensor_mem (const struct tsr_opencl_device *d,
                                const tsr_tensor *t, cl_mem *mem,
                                size_t *offset);

/* ocl-backend.c */
TSR_MODULE_HIDDEN tsr_backend *tsr_opencl_backend_new (tsr_device *dev, const char *params);
/* Events (device interface; record and wait are the backend's).  */
TSR_MODULE_HIDDEN int tsr_opencl_event_new (tsr_device *dev, tsr_event *ev);
TSR_MODULE_HIDDEN void tsr_opencl_event_free (tsr_event *ev);
TSR_MODULE_HIDDEN int tsr_opencl_event_synchronize (tsr_event *ev);

/* ocl-ops.c */
/* Whether a kernel takes OP's types and layouts (the core has checked
   the node: tsr_node_validate).  */
TSR_MODULE_HIDDEN bool tsr_opencl_supports_op (const struct tsr_opencl_device *d,
                                 const tsr_tensor *op);
/* Enqueue NODE's kernel(s) (D's lock held).  */
TSR_MODULE_HIDDEN int tsr_opencl_enqueue_op (struct tsr_opencl_launch *l, tsr_tensor *node);
/* Whether NODE's kernel reports bad indices through the status word.  */
TSR_MODULE_HIDDEN bool tsr_opencl_op_uses_status (const tsr_tensor *node);

#endif /* TSR_OCL_IMPL_H */
