/* tessera/module.h - the interface a backend implements.
 *
 * A backend module is a libtool module (tessera-NAME.la) that exports
 * one object, its descriptor, under libtool's NAME_LTX_ naming so the
 * same source works dlopened and compiled in:
 *
 *     #define TSR_MODULE_NAME tessera_cpu     (usually -D from the build)
 *     #include <tessera/module.h>
 *     const struct tsr_module_descriptor TSR_MODULE_DESCRIPTOR = {
 *       TSR_MODULE_ABI_VERSION, "cpu", cpu_score, cpu_init, NULL, 0 };
 *
 * Objects are { iface, owner, context }: IFACE a table of functions
 * (entries marked optional may be NULL; the core checks the others
 * when a module registers or creates an object, and refuses one that
 * lacks an entry, naming it), CONTEXT the backend's own state.
 *
 * Statuses: every entry that can fail returns TSR_OK or a tsr_status,
 * with a message recorded through tsr_set_error.  An asynchronous
 * failure (a kernel or copy that fails after graph_compute or an
 * async set/get returned) is returned by the next synchronize or
 * event_synchronize of that backend, so the core can hand it to the
 * caller; it must not be only logged.
 *
 * Ownership and lifetimes, per object:
 *   tsr_reg          made by init with tsr_reg_new (the core frees it
 *                    when the module is unloaded, after finalize), or
 *                    the module's own object, living until then.  Its
 *                    devices likewise.
 *   tsr_device       as its registration.
 *   tsr_buffer_type  the module's (static or per device), as its device.
 *   tsr_buffer       made by alloc_buffer with tsr_buffer_new; the
 *                    core frees it through tsr_buffer_free, which
 *                    calls free_buffer and then frees the object.
 *   tsr_backend      made by init_backend with tsr_backend_new; the
 *                    core frees it through tsr_backend_free, which
 *                    calls iface.free (for the context) and then frees
 *                    the object.
 *   tsr_event        allocated and freed by the core; event_new fills
 *                    its context, event_free releases that context.
 * Strings returned by get_name, get_description and a score's reason
 * are the module's and must stay valid until it is unloaded.  Changing
 * anything in this file changes the ABI: bump TSR_MODULE_ABI_VERSION.  */
#ifndef TESSERA_MODULE_H
#define TESSERA_MODULE_H

#include <stdint.h>
#include <tessera/backend.h>
#include <tessera/graph.h>
#include <tessera/log.h>
#include <tessera/status.h>
#include <tessera/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSR_MODULE_ABI_VERSION 3

struct tsr_buffer_type_iface {
  const char *(*get_name) (tsr_buffer_type *buft);
  tsr_buffer *(*alloc_buffer) (tsr_buffer_type *buft, size_t size);
  size_t (*get_alignment) (tsr_buffer_type *buft);
  size_t (*get_max_size) (tsr_buffer_type *buft);   /* optional: SIZE_MAX */
  /* optional: tsr_nbytes */
  size_t (*get_alloc_size) (tsr_buffer_type *buft, const tsr_tensor *t);
  bool (*is_host) (tsr_buffer_type *buft);           /* optional: false */
};

struct tsr_buffer_type {
  struct tsr_buffer_type_iface iface;
  tsr_device *device;
  void *context;
};

struct tsr_buffer_iface {
  void (*free_buffer) (tsr_buffer *buf);             /* optional */
  void *(*get_base) (tsr_buffer *buf);
  int (*init_tensor) (tsr_buffer *buf, tsr_tensor *t); /* optional */
  /* ABI 3: a status.  The copy is done when they return.  */
  int (*set_tensor) (tsr_buffer *buf, tsr_tensor *t, const void *data,
                     size_t offset, size_t size);
  int (*get_tensor) (tsr_buffer *buf, const tsr_tensor *t, void *data,
                     size_t offset, size_t size);
  void (*clear) (tsr_buffer *buf, uint8_t value);
};

struct tsr_buffer {
  struct tsr_buffer_iface iface;
  tsr_buffer_type *buft;
  void *context;
  size_t size;
};

struct tsr_device_iface {
  const char *(*get_name) (tsr_device *dev);
  const char *(*get_description) (tsr_device *dev);
  /* optional: 0 bytes free of 0 */
  void (*get_memory) (tsr_device *dev, size_t *free_bytes, size_t *total);
  tsr_device_type (*get_type) (tsr_device *dev);
  void (*get_caps) (tsr_device *dev, struct tsr_device_caps *caps); /* opt. */
  tsr_backend *(*init_backend) (tsr_device *dev, const char *params);
  tsr_buffer_type *(*get_buffer_type) (tsr_device *dev);
  bool (*supports_op) (tsr_device *dev, const tsr_tensor *op);
  bool (*supports_buft) (tsr_device *dev, tsr_buffer_type *buft);
  /* ABI 2.  optional: no pinned host memory.  Host memory the device
     transfers from and to fastest (is_host true, so CPU backends
     compute on it too).  */
  tsr_buffer_type *(*get_host_buffer_type) (tsr_device *dev);
  /* ABI 2.  optional, all three or none: no events.  EVENT_NEW fills
     EV->context (EV->device is set) and returns a status; the others
     act on an event made by it.  */
  int (*event_new) (tsr_device *dev, tsr_event *ev);
  void (*event_free) (tsr_event *ev);
  /* ABI 3: the first failure of the work EV waited for, or TSR_OK.  */
  int (*event_synchronize) (tsr_event *ev);
};

struct tsr_device {
  struct tsr_device_iface iface;
  tsr_reg *reg;
  void *context;
};

struct tsr_backend_iface {
  const char *(*get_name) (tsr_backend *backend);
  /* optional: releases the context (the core frees the object).  */
  void (*free) (tsr_backend *backend);
  /* optional: synchronous buffer set/get.  ABI 3: a status (of the
     queueing; the copy's own failure comes from synchronize).  */
  int (*set_tensor_async) (tsr_backend *backend, tsr_tensor *t,
                           const void *data, size_t offset, size_t size);
  int (*get_tensor_async) (tsr_backend *backend, const tsr_tensor *t,
                           void *data, size_t offset, size_t size);
  /* optional (backends that finish their work before returning).  ABI
     3: waits for the queued work and returns its first failure since
     the last synchronize, or TSR_OK.  */
  int (*synchronize) (tsr_backend *backend);
  /* Compute the nodes of G (may return before they are done).  */
  int (*graph_compute) (tsr_backend *backend, tsr_graph *g);
  int (*set_n_threads) (tsr_backend *backend, int n); /* optional */
  /* ABI 2.  Required when the device has events: mark EV as reached
     when the work queued so far is done; make the work queued after
     this call wait until EV is reached (EV may be another device's of
     the same registration).  */
  int (*event_record) (tsr_backend *backend, tsr_event *ev);
  int (*event_wait) (tsr_backend *backend, tsr_event *ev);
};

struct tsr_event {
  tsr_device *device;
  void *context;
};

struct tsr_backend {
  struct tsr_backend_iface iface;
  tsr_device *device;
  void *context;
  /* The core's, for tsr_backend_clone (modules leave them): the
     parameters the backend was made with (NULL: none) and the thread
     count last set (0: never).  */
  char *params;
  int n_threads;
};

struct tsr_reg_iface {
  const char *(*get_name) (tsr_reg *reg);
  size_t (*get_device_count) (tsr_reg *reg);
  tsr_device *(*get_device) (tsr_reg *reg, size_t i);
};

struct tsr_reg {
  int abi_version;
  struct tsr_reg_iface iface;
  void *context;
};

/* What a module exports.  SCORE says whether the backend can work on
   this machine: 0 means no, with *REASON set to a sentence saying why;
   higher is better.  INIT returns the registration (NULL on failure,
   with an error recorded through tsr_set_error where possible).
   FINALIZE (optional, ABI 3) is called once before the module is
   unloaded, after every object it made is freed.  FLAGS (ABI 3) is
   reserved and must be 0: a later minor version may define bits that
   announce optional entries, without another ABI break.  A module
   whose FLAGS has bits this libtessera does not know is refused.  */
struct tsr_module_descriptor {
  uint32_t abi_version;
  const char *name;
  int (*score) (const char **reason);
  tsr_reg *(*init) (void);
  void (*finalize) (void);
  uint32_t flags;
};

/* Bits of the descriptor's FLAGS (ABI 3 minor additions).
   TSR_MODULE_FLAG_PROC: the descriptor is the first member of a struct
   tsr_module_descriptor_ext, whose GET_PROC returns the module's named
   entry points beyond the backend interface (NULL for a name it does
   not know).  The communication interface below is one.  */
#define TSR_MODULE_FLAG_PROC 0x1u
#define TSR_MODULE_KNOWN_FLAGS TSR_MODULE_FLAG_PROC

struct tsr_module_descriptor_ext {
  struct tsr_module_descriptor base;
  void *(*get_proc) (const char *name);
};

/* A backend module's extra buffer types (tsr_device_extra_buffer_types):
   get_proc (TSR_EXTRA_BUFTS_NAME) returns a function of this type,
   which stores up to MAX of DEV's extra buffer types in BUFTS and
   returns how many it has.  */
#define TSR_EXTRA_BUFTS_NAME "tsr_extra_bufts_1"
typedef size_t (*tsr_extra_bufts_fn) (tsr_device *dev,
                                      tsr_buffer_type **bufts, size_t max);
/* A backend's counters (tsr_backend_get_counters): get_proc
   (TSR_BACKEND_COUNTERS_NAME) returns a function of this type, which
   fills *C for BACKEND (one of the module's) and zeroes its counters
   when CLEAR.  */
#define TSR_BACKEND_COUNTERS_NAME "tsr_backend_counters_1"
typedef int (*tsr_backend_counters_fn) (tsr_backend *backend,
                                        struct tsr_backend_counters *c,
                                        bool clear);
/* And (tsr_buffer_type_repacks) whether BUFT, one of its buffer types,
   stores matrices of TYPE with NE0 columns and NE1 rows in a layout of
   its own.  */
#define TSR_BUFT_REPACKS_NAME "tsr_buft_repacks_1"
typedef bool (*tsr_buft_repacks_fn) (tsr_buffer_type *buft, tsr_type type,
                                     int64_t ne0, int64_t ne1);

/* Communication modules (modules/mpi).  A module named
   tessera-comm-NAME is never loaded by the registry's scans: only
   when a program asks for a communicator (tessera/comm.h), so that a
   program that does not never loads the communication library.  Its
   get_proc (TSR_COMM_IFACE_NAME) returns this table; its registration
   has one device of type TSR_DEVICE_COMM whose backends (one per
   communicator, made by OPEN) compute the communication ops.  Each
   entry returns TSR_OK or a status with the error recorded.  */
#define TSR_COMM_IFACE_NAME "tsr_comm_iface_3"
struct tsr_comm_iface {
  /* A communicator over the whole job (MPI_COMM NULL: the library is
     initialized first if the program has not done it) or over a
     duplicate of the program's communicator *MPI_COMM.  ID is the
     number libtessera gives it, which its ops carry in op_params[0]:
     *BACKEND runs the nodes of that ID only.  TIMEOUT: the seconds any
     wait for other ranks may last, opening included (set_timeout).
     Refused where MPI's thread level is below "serialized".  */
  int (*open) (const void *mpi_comm, int32_t id, double timeout,
               void **comm, int *rank, int *size, tsr_backend **backend);
  /* Frees the backend too.  */
  void (*close) (void *comm);
  /* Seconds any wait for other ranks may take before TSR_ERR_TIMEOUT
     (the communicator is unusable after one: stop the job).  */
  void (*set_timeout) (void *comm, double seconds);
  int (*broadcast) (void *comm, void *data, size_t size, int root);
  /* The largest of each rank's N values, on every rank.  */
  int (*max_u64) (void *comm, uint64_t *values, int n);
  int (*barrier) (void *comm);
  /* Stop every process of the job with exit status CODE; does not
     return.  */
  void (*abort) (void *comm, int code);
  /* "Open MPI v4.1.4, 2 ranks, thread level serialized".  */
  const char *(*describe) (void *comm);
  /* Since the communicator opened: the operations that waited for
     other ranks (graph ops and the calls above), the bytes this rank
     passed to them, and the seconds spent waiting.  */
  void (*stats) (void *comm, uint64_t *ops, uint64_t *bytes,
                 double *seconds);
  /* The host memory the communication ops work in, for every
     communicator (NULL: plain host memory); BUFT is a host type.  */
  void (*set_host_buffer_type) (tsr_buffer_type *buft);
  /* This rank failed with MESSAGE: tell every other rank, whose waits
     on COMM (and later ops) then fail with TSR_ERR_PEER and the
     message within a few seconds; COMM is unusable after it.  Nothing
     when a rank's failure already reached this one.  */
  void (*fail) (void *comm, const char *message);
};

/* The mark of a module's internal functions and data, shared between
   its files but never exported from it (the module exports only its
   descriptor).  In-tree backends name them tsr_NAME_..., so a copy
   compiled into a static libtessera.a stays in Tessera's namespace.  */
#if defined(__GNUC__) && !defined(_WIN32)
#define TSR_MODULE_HIDDEN __attribute__ ((visibility ("hidden")))
#define TSR_MODULE_EXPORT __attribute__ ((visibility ("default")))
#else
#define TSR_MODULE_HIDDEN
#define TSR_MODULE_EXPORT
#endif

#define TSR_MODULE_PASTE2(a, b) a##b
#define TSR_MODULE_PASTE(a, b) TSR_MODULE_PASTE2 (a, b)
#if defined(TSR_MODULE_NAME) && defined(TSR_MODULE_BUILTIN)
/* In-tree backends compiled into libtessera (configure
   --disable-modules): a name in the library's namespace, listed in the
   generated table of built-in backends.  */
#define TSR_MODULE_DESCRIPTOR \
  TSR_MODULE_HIDDEN TSR_MODULE_PASTE (tsri_builtin_, TSR_MODULE_NAME)
#elif defined(TSR_MODULE_NAME)
/* Exported even when the module is compiled with -fvisibility=hidden.  */
#define TSR_MODULE_DESCRIPTOR \
  TSR_MODULE_EXPORT \
  TSR_MODULE_PASTE (TSR_MODULE_NAME, _LTX_tsr_module_descriptor)
#endif
/* The name the loader looks up (lt_dlsym adds the NAME_LTX_ prefix).  */
#define TSR_MODULE_SYMBOL "tsr_module_descriptor"

/* Helpers for modules.  */
/* Record an error for the calling thread; returns STATUS.  */
int tsr_set_error (int status, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__ ((format (printf, 2, 3)))
#endif
  ;
/* The host buffer type (malloc'd, aligned memory) any module may use.  */
tsr_buffer_type *tsr_host_buffer_type (void);
/* A buffer wrapping host memory PTR of SIZE bytes (not freed).  */
tsr_buffer *tsr_buffer_from_host_ptr (void *ptr, size_t size);
/* T's name for messages: its name, or "(unnamed)" when it has none.  */
const char *tsr_tensor_label (const tsr_tensor *t);
/* A graph walk's refusal of NODE, for which the backend has no kernel
   (its types or layouts): records TSR_ERR_UNSUPPORTED with a message
   naming WHO (e.g. "cuda: GPU0"), the op, the node and its operand and
   result types; returns TSR_ERR_UNSUPPORTED.  */
int tsr_no_kernel_error (const char *who, const tsr_tensor *node);
/* Allocate a buffer object; modules fill IFACE and CONTEXT.  */
tsr_buffer *tsr_buffer_new (tsr_buffer_type *buft,
                            struct tsr_buffer_iface iface, void *context,
                            size_t size);
/* Allocate the backend object init_backend returns, for DEV, with
   IFACE and CONTEXT; NULL (error recorded) when out of memory.  */
tsr_backend *tsr_backend_new (tsr_device *dev, struct tsr_backend_iface iface,
                              void *context);
/* The registration init returns: NAME (copied) with N_DEVICES devices
   that share IFACE, device I having context CONTEXTS[I] (CONTEXTS may
   be NULL when N_DEVICES is 0 or every context is NULL), and
   registration context CONTEXT.  The core owns it: it is freed when
   the module is unloaded, after finalize (so finalize may still use
   the contexts, which stay the module's to free).  NULL with an error
   recorded on a bad argument or when out of memory.  */
tsr_reg *tsr_reg_new (const char *name, const struct tsr_device_iface *iface,
                      size_t n_devices, void *const *contexts,
                      void *context);

/* One key init_backend accepts in its PARAMS string: an integer in
   [MIN, MAX], stored into *VALUE when given.  */
struct tsr_param {
  const char *key;
  int64_t min, max;
  int64_t *value;
};
/* Parse PARAMS: NULL or "", or comma-separated KEY=VALUE items whose
   keys are among KEYS[0..N_KEYS).  Sets the values given and returns
   TSR_OK; an unknown key (the message lists the known ones), a key
   without a value, a key given twice or a value that is not an
   integer in the key's range records TSR_ERR_INVALID_ARG with a
   message beginning "WHO: " and returns it (values may have been set
   before the bad item).  */
int tsr_params_parse (const char *who, const char *params,
                      const struct tsr_param *keys, size_t n_keys);
/* Whether S is a whole decimal integer in [MIN, MAX]; stores it into
   *VALUE (if not NULL) when it is.  For environment variables.  */
bool tsr_param_int (const char *s, int64_t min, int64_t max,
                    int64_t *value);
/* The host's physical memory, total and available (0 when the system
   does not say): get_memory of a device computing in host memory.  */
void tsr_host_memory (size_t *free_bytes, size_t *total);

/* The status word of kernels that read indices (get_rows, set_rows,
   mul_mat_id): TAG 0 while every index was in range; else the failing
   node's position in the graph plus one, with VALUE the first bad
   index it found (a kernel sets both once: compare-and-swap on TAG).  */
struct tsr_index_status {
  int32_t tag;
  int32_t value;
};
/* The exclusive bound of NODE's indices (rows of the table for
   get_rows, of the destination for set_rows, experts for mul_mat_id);
   0 for ops that read none.  */
int64_t tsr_index_bound (const tsr_tensor *node);
/* TSR_OK when W->tag is 0; else records TSR_ERR_INVALID_ARG with a
   message beginning "WHO: " naming the op, the node of G at W->tag - 1
   (its name and position), the bad index and the bound, and returns
   it.  */
int tsr_index_error (const char *who, tsr_graph *g,
                     const struct tsr_index_status *w);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_MODULE_H */
