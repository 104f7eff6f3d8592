/* tessera/backend.h - buffer types, buffers, devices and backends.
 *
 * A buffer type allocates one kind of memory (host RAM, GPU memory...)
 * as buffers; a device is one piece of hardware; a backend is an
 * execution stream on a device that moves tensor data and computes
 * graphs.  Devices come from the registry (tessera/registry.h).  */
#ifndef TESSERA_BACKEND_H
#define TESSERA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <tessera/graph.h>
#include <tessera/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_buffer_type tsr_buffer_type;
typedef struct tsr_buffer tsr_buffer;
typedef struct tsr_device tsr_device;
typedef struct tsr_backend tsr_backend;
typedef struct tsr_reg tsr_reg;
typedef struct tsr_event tsr_event;

typedef enum tsr_device_type {
  TSR_DEVICE_CPU = 0,
  TSR_DEVICE_GPU,
  TSR_DEVICE_IGPU,    /* integrated GPU sharing host memory */
  TSR_DEVICE_ACCEL,   /* accelerator working with a CPU (e.g. BLAS) */
  TSR_DEVICE_COMM     /* communication with other processes (MPI):
                         runs only the communication ops, never
                         chosen as a compute device */
} tsr_device_type;

struct tsr_device_caps {
  bool async;                 /* asynchronous set/get/compute */
  bool host_buffer;           /* offers a pinned host buffer type */
  bool events;                /* synchronization events */
};

struct tsr_device_props {
  const char *name;
  const char *description;
  size_t memory_free;
  size_t memory_total;
  tsr_device_type type;
  struct tsr_device_caps caps;
};

const char *tsr_device_type_name (tsr_device_type type);

/* Buffer types.  */
const char *tsr_buffer_type_name (tsr_buffer_type *buft);
/* A buffer of SIZE bytes, or NULL with an error.  */
tsr_buffer *tsr_buffer_type_alloc (tsr_buffer_type *buft, size_t size);
size_t tsr_buffer_type_alignment (tsr_buffer_type *buft);
size_t tsr_buffer_type_max_size (tsr_buffer_type *buft);
/* Bytes T needs in a buffer of this type.  */
size_t tsr_buffer_type_alloc_size (tsr_buffer_type *buft,
                                   const tsr_tensor *t);
bool tsr_buffer_type_is_host (tsr_buffer_type *buft);
/* The device that offers BUFT (a GPU for its pinned host memory; NULL
   for tsr_host_buffer_type).  */
tsr_device *tsr_buffer_type_device (tsr_buffer_type *buft);
/* The device whose memory BUFT's buffers are: for host memory (the
   host buffer type, a GPU's pinned host memory: is_host) the CPU
   device, NULL when none is registered; otherwise the device that
   offers it (CPU_REPACK: the CPU; a GPU's own memory: that GPU).  The
   scheduler runs a node that reads a weight where this says the weight
   is.  */
tsr_device *tsr_buffer_type_memory_device (tsr_buffer_type *buft);

/* Buffers.  */
void tsr_buffer_free (tsr_buffer *buf);
size_t tsr_buffer_size (tsr_buffer *buf);
void *tsr_buffer_base (tsr_buffer *buf);
bool tsr_buffer_is_host (tsr_buffer *buf);
void tsr_buffer_clear (tsr_buffer *buf, unsigned char value);
tsr_buffer_type *tsr_buffer_get_type (tsr_buffer *buf);
/* Place T at byte OFFSET of BUF (T must fit).  */
int tsr_buffer_place_tensor (tsr_buffer *buf, tsr_tensor *t, size_t offset);

/* Devices.  */
const char *tsr_device_name (tsr_device *dev);
const char *tsr_device_description (tsr_device *dev);
tsr_device_type tsr_device_get_type (tsr_device *dev);
void tsr_device_memory (tsr_device *dev, size_t *free_bytes,
                        size_t *total_bytes);
void tsr_device_get_props (tsr_device *dev, struct tsr_device_props *props);
tsr_reg *tsr_device_reg (tsr_device *dev);
tsr_buffer_type *tsr_device_buffer_type (tsr_device *dev);
bool tsr_device_supports_op (tsr_device *dev, const tsr_tensor *op);
bool tsr_device_supports_buffer_type (tsr_device *dev,
                                      tsr_buffer_type *buft);
/* A backend on DEV.  PARAMS is a backend-specific option string
   (may be NULL).  NULL with an error on failure.  */
tsr_backend *tsr_device_init (tsr_device *dev, const char *params);
/* Pinned host memory of DEV: host memory (a CPU computes on it) that
   DEV transfers from and to fastest, so that set/get through a
   backend of DEV run asynchronously.  NULL when DEV has none
   (caps.host_buffer false).  */
tsr_buffer_type *tsr_device_host_buffer_type (tsr_device *dev);
/* DEV's extra buffer types: memory its backends compute on in a layout
   of their own for some weights (the CPU's "CPU_REPACK": q4_0, q8_0 and
   q4_K matrices with rows interleaved for its integer dots), read and written
   through tsr_tensor_get / tsr_tensor_set as usual.  Stores up to MAX
   of them in BUFTS (may be NULL when MAX is 0) and returns how many DEV
   has.  Only tensors whose use DEV computes belong there (the model
   loader puts weight matrices there); other ops reading them are
   refused (tsr_device_supports_op).  */
size_t tsr_device_extra_buffer_types (tsr_device *dev,
                                      tsr_buffer_type **bufts, size_t max);
/* Whether BUFT stores matrices of TYPE with NE0 columns and NE1 rows
   (per matrix) in a layout of its own (CPU_REPACK: q4_0 with rows in
   multiples of 8, q8_0 where the CPU has VNNI, q4_K where it has
   AVX-512), so that its device
   computes on them faster; false for other buffer types.  */
bool tsr_buffer_type_repacks (tsr_buffer_type *buft, tsr_type type,
                              int64_t ne0, int64_t ne1);

/* Events: points in a backend's queue of work.  Where the device has
   them (caps.events), a program records an event after some work and
   waits for it on the host or in another backend's queue.  */
/* A new event of DEV, or NULL with an error (TSR_ERR_UNSUPPORTED when
   DEV has no events).  */
tsr_event *tsr_event_new (tsr_device *dev);
void tsr_event_free (tsr_event *ev);
tsr_device *tsr_event_device (tsr_event *ev);
/* Mark EV as reached when what BACKEND (a backend of EV's device) has
   queued so far is done.  */
int tsr_event_record (tsr_event *ev, tsr_backend *backend);
/* Wait on the host until EV is reached (at once if never recorded);
   the first failure of the work it waited for, or TSR_OK.  */
int tsr_event_synchronize (tsr_event *ev);
/* Make what BACKEND queues from now on wait until EV is reached.
   BACKEND must be of EV's registration; other backends cannot see the
   event: synchronize on the host instead.  */
int tsr_backend_event_wait (tsr_backend *backend, tsr_event *ev);

/* Backends.  */
const char *tsr_backend_name (tsr_backend *backend);
void tsr_backend_free (tsr_backend *backend);
tsr_device *tsr_backend_device (tsr_backend *backend);
tsr_buffer_type *tsr_backend_buffer_type (tsr_backend *backend);
tsr_buffer *tsr_backend_alloc_buffer (tsr_backend *backend, size_t size);
/* Compute every node of G and wait for the result.  The first failure,
   including one of a kernel that failed after the backend queued it,
   with its message.  */
int tsr_backend_graph_compute (tsr_backend *backend, tsr_graph *g);
/* Wait for the work queued on BACKEND; the first failure of that work
   since the last synchronize, or TSR_OK.  */
int tsr_backend_synchronize (tsr_backend *backend);
/* Threads used by BACKEND; TSR_ERR_UNSUPPORTED where the backend has no
   such setting.  */
int tsr_backend_set_n_threads (tsr_backend *backend, int n_threads);
/* A new backend on BACKEND's device, made with the parameters BACKEND
   was made with and given its thread count: a second stream of work on
   the same device and memory (a backend computes one graph at a time;
   threads that compute at once each need their own).  NULL with an
   error.  */
tsr_backend *tsr_backend_clone (tsr_backend *backend);
bool tsr_backend_supports_op (tsr_backend *backend, const tsr_tensor *op);
/* Copy into / out of T through BACKEND and wait: the first failure of
   the copy, or TSR_OK.  */
int tsr_backend_tensor_set (tsr_backend *backend, tsr_tensor *t,
                            const void *data, size_t offset, size_t size);
int tsr_backend_tensor_get (tsr_backend *backend, const tsr_tensor *t,
                            void *data, size_t offset, size_t size);
/* The same, queued on BACKEND after its earlier work: DATA must stay
   valid (and, for a get, unread) until tsr_backend_synchronize or an
   event recorded after it is reached.  Synchronous on backends that
   are (caps.async false).  The status of queueing the copy; a failure
   of the copy itself is returned by the synchronize that waits for
   it.  */
int tsr_backend_tensor_set_async (tsr_backend *backend, tsr_tensor *t,
                                  const void *data, size_t offset,
                                  size_t size);
int tsr_backend_tensor_get_async (tsr_backend *backend,
                                  const tsr_tensor *t, void *data,
                                  size_t offset, size_t size);

/* What a backend counts of its own work, since it was made or its
   counters were last cleared: for backends that queue device work
   (CUDA), how much each compute asked of the device.  */
struct tsr_backend_counters {
  uint64_t computes;            /* graph computes that succeeded */
  uint64_t nodes;               /* nodes computed by them (not views) */
  uint64_t launches;            /* kernels and device commands queued,
                                   directly or in replayed device graphs
                                   (a library call such as one GEMM
                                   counts as one) */
  uint64_t fused;               /* nodes computed inside another node's
                                   kernel */
  uint64_t graph_captures;      /* device graphs captured (a new shape) */
  uint64_t graph_replays;       /* computes run by replaying one */
};
/* BACKEND's counters into *C, and zero them when CLEAR.
   TSR_ERR_UNSUPPORTED (C zeroed) for a backend that keeps none.  */
int tsr_backend_get_counters (tsr_backend *backend,
                              struct tsr_backend_counters *c, bool clear);

/* Allocate every tensor of CTX (a no_alloc context) in one new buffer
   of BUFT.  NULL with an error on failure, or when there is nothing to
   allocate.  */
tsr_buffer *tsr_context_alloc_tensors (tsr_context *ctx,
                                       tsr_buffer_type *buft);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_BACKEND_H */
