/* comm.c - communicators and the communication ops.
 *
 * Owns: opening a communicator through the communication module (the
 * registry loads tessera-comm-mpi on the first request, never in its
 * scans), the host-memory helpers built on the module's table, and the
 * builders and rules of all_reduce, all_gather, send and recv.  The
 * data path (the MPI calls, the waits and their time limits) is the
 * module's, in its backend: libtessera never calls MPI.  */
#include <config.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera-impl.h"
#include "siphash.h"
#include <tessera/comm.h>

struct tsr_comm
{
  const struct tsr_comm_iface *iface;
  void *impl;
  int32_t id;
  int rank, size;
  tsr_backend *backend;
};

/* Communicator ids, carried by the ops (op_params[0]): never reused in
   a process, so a node of a freed communicator is refused rather than
   run on another.  */
static atomic_int next_id = 1;

#define DEFAULT_TIMEOUT 300.0

static tsr_comm *
comm_open (const void *mpi_comm)
{
  tsr_reg *reg = tsri_registry_comm_module ("mpi");
  if (!reg)
    return NULL;
  const struct tsr_comm_iface *iface = tsr_reg_get_proc (reg,
                                                         TSR_COMM_IFACE_NAME);
  if (!iface)
    {
      tsr_set_error (TSR_ERR_MODULE, "the mpi module has no %s interface: "
                     "it was built for another Tessera", TSR_COMM_IFACE_NAME);
      return NULL;
    }
  tsr_comm *c = calloc (1, sizeof *c);
  if (!c)
    {
      tsr_set_error (TSR_ERR_NO_MEMORY, "comm: out of memory");
      return NULL;
    }
  c->iface = iface;
  c->id = atomic_fetch_add (&next_id, 1);
  /* The timeout holds from the open on: MPI_Comm_idup waits for every
     rank to open too.  */
  double timeout = DEFAULT_TIMEOUT;
  const char *env = getenv ("TESSERA_COMM_TIMEOUT");
  int64_t v;
  if (env && *env)
    {
      if (tsr_param_int (env, 1, 1000000, &v))
        timeout = (double) v;
      else
        tsr_log (TSR_LOG_WARN, "TESSERA_COMM_TIMEOUT=%s is not a whole "
                 "number of seconds in [1, 1000000]: %g s used", env,
                 timeout);
    }
  if (iface->open (mpi_comm, c->id, timeout, &c->impl, &c->rank, &c->size,
                   &c->backend) != TSR_OK)
    {
      free (c);
      return NULL;
    }
  return c;
}

tsr_comm *
tsr_comm_world (void)
{
  return comm_open (NULL);
}

tsr_comm *
tsr_comm_from_mpi (const void *mpi_comm)
{
  if (!mpi_comm)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "comm: NULL MPI communicator "
                     "(tsr_comm_world opens the whole job)");
      return NULL;
    }
  return comm_open (mpi_comm);
}

void
tsr_comm_free (tsr_comm *c)
{
  if (!c)
    return;
  c->iface->close (c->impl);
  free (c);
}

int
tsr_comm_rank (const tsr_comm *c)
{
  return c ? c->rank : -1;
}

int
tsr_comm_size (const tsr_comm *c)
{
  return c ? c->size : 0;
}

const char *
tsr_comm_describe (const tsr_comm *c)
{
  return c ? c->iface->describe (c->impl) : "(no communicator)";
}

tsr_backend *
tsr_comm_backend (tsr_comm *c)
{
  return c ? c->backend : NULL;
}

int
tsr_comm_set_timeout (tsr_comm *c, double seconds)
{
  if (!c || !(seconds > 0) || seconds > 1e9)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "comm: a timeout must be "
                          "positive seconds, at most 1e9");
  c->iface->set_timeout (c->impl, seconds);
  return TSR_OK;
}

int
tsr_comm_set_host_buffer_type (tsr_comm *c, tsr_buffer_type *buft)
{
  if (!c)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "comm: NULL communicator");
  if (buft && !tsr_buffer_type_is_host (buft))
    return tsr_set_error (TSR_ERR_INVALID_ARG, "comm: buffer type %s is "
                          "not host memory", tsr_buffer_type_name (buft));
  c->iface->set_host_buffer_type (buft);
  return TSR_OK;
}

int
tsr_comm_get_stats (const tsr_comm *c, struct tsr_comm_stats *stats)
{
  if (!c || !stats)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "comm stats: NULL argument");
  c->iface->stats (c->impl, &stats->ops, &stats->bytes, &stats->seconds);
  return TSR_OK;
}

int
tsr_comm_broadcast (tsr_comm *c, void *data, size_t size, int root)
{
  if (!c || (!data && size))
    return tsr_set_error (TSR_ERR_INVALID_ARG, "comm broadcast: NULL "
                          "argument");
  if (root < 0 || root >= c->size)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "comm broadcast: root %d is "
                          "not a rank (0 to %d)", root, c->size - 1);
  return c->iface->broadcast (c->impl, data, size, root);
}

int
tsr_comm_barrier (tsr_comm *c)
{
  if (!c)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "comm barrier: NULL "
                          "communicator");
  return c->iface->barrier (c->impl);
}

int
tsr_comm_check_same (tsr_comm *c, const void *data, size_t size,
                     const char *what)
{
  /* A fixed key: every process must hash alike.  */
  static const uint64_t key[2] = { UINT64_C (0x7465737365726121),
                                   UINT64_C (0x636f6d6d2d636865) };
  if (!c || (!data && size))
    return tsr_set_error (TSR_ERR_INVALID_ARG, "comm check: NULL argument");
  what = what ? what : "the data";
  uint64_t mine[2] = { tsri_siphash24 (key, data, size), size };
  uint64_t root[2] = { mine[0], mine[1] };
  int st = c->iface->broadcast (c->impl, root, sizeof root, 0);
  if (st != TSR_OK)
    return st;
  bool differs = mine[0] != root[0] || mine[1] != root[1];
  /* Whether any rank differs, and the highest that does.  */
  uint64_t any[2] = { differs, differs ? (uint64_t) c->rank : 0 };
  if ((st = c->iface->max_u64 (c->impl, any, 2)) != TSR_OK)
    return st;
  if (!any[0])
    return TSR_OK;
  if (differs)
    return tsr_set_error (TSR_ERR_STATE, "%s of rank %d differs from rank "
                          "0's (every rank must use the same)", what,
                          c->rank);
  return tsr_set_error (TSR_ERR_STATE, "%s differs between ranks: rank %d's "
                        "is not rank 0's (every rank must use the same)",
                        what, (int) any[1]);
}

void
tsr_comm_abort (tsr_comm *c, int code, const char *message)
{
  if (message)
    fprintf (stderr, "rank %d: %s\n", c ? c->rank : -1, message);
  fflush (stderr);
  if (c)
    c->iface->abort (c->impl, code);
  exit (code);
}

void
tsr_comm_fail (tsr_comm *c, const char *message)
{
  char msg[1024];

  if (!c)
    return;
  /* Copied: the message may be the thread's error slot, which the
     module's calls may rewrite.  */
  snprintf (msg, sizeof msg, "%s", message ? message : tsr_last_error ());
  c->iface->fail (c->impl, msg);
}

/* The ops.  */

static bool
comm_params (const tsr_tensor *n, struct tsri_verdict *v, int32_t *size)
{
  *size = tsr_get_op_param_i32 (n, 1);
  if (tsr_get_op_param_i32 (n, 0) < 1 || *size < 1)
    {
      tsri_reject (v, TSR_ERR_INVALID_ARG, "%s: no communicator in its "
                   "parameters (build it with tsr_%s)", tsr_op_name (n->op),
                   tsr_op_name (n->op));
      return false;
    }
  return true;
}

static bool
contiguous_src (const tsr_tensor *n, struct tsri_verdict *v)
{
  if (!tsri_need_srcs (n, 1, v))
    return false;
  if (tsr_is_contiguous (n->src[0]))
    return true;
  tsri_reject (v, TSR_ERR_SHAPE, "%s: the operand must be contiguous",
               tsr_op_name (n->op));
  return false;
}

static bool
peer_params (const tsr_tensor *n, int32_t size, struct tsri_verdict *v)
{
  int32_t peer = tsr_get_op_param_i32 (n, 2);
  int32_t tag = tsr_get_op_param_i32 (n, 3);
  if (peer < 0 || peer >= size)
    {
      tsri_reject (v, TSR_ERR_INVALID_ARG, "%s: peer %d is not a rank (0 "
                   "to %d)", tsr_op_name (n->op), peer, size - 1);
      return false;
    }
  if (tag < 0 || tag > 32767)
    {
      tsri_reject (v, TSR_ERR_INVALID_ARG, "%s: tag %d is outside [0, "
                   "32767]", tsr_op_name (n->op), tag);
      return false;
    }
  return true;
}

int
tsri_rule_all_reduce (const tsr_tensor *n, struct tsri_result *r,
                      struct tsri_verdict *v)
{
  int32_t size;
  if (!comm_params (n, v, &size) || !contiguous_src (n, v)
      || !tsri_need_type (n, n->src[0], "operand", TSR_TYPE_F32, v))
    return v->status;
  r->type = TSR_TYPE_F32;
  memcpy (r->ne, n->src[0]->ne, sizeof r->ne);
  return TSR_OK;
}

int
tsri_rule_all_gather (const tsr_tensor *n, struct tsri_result *r,
                      struct tsri_verdict *v)
{
  int32_t size;
  if (!comm_params (n, v, &size) || !contiguous_src (n, v))
    return v->status;
  if (n->src[0]->ne[3] != 1)
    return tsri_reject (v, TSR_ERR_SHAPE, "all_gather: the operand has four "
                        "dimensions; the ranks' parts make the fourth");
  r->type = n->src[0]->type;
  memcpy (r->ne, n->src[0]->ne, sizeof r->ne);
  r->ne[3] = size;
  return TSR_OK;
}

int
tsri_rule_send (const tsr_tensor *n, struct tsri_result *r,
                struct tsri_verdict *v)
{
  int32_t size;
  if (!comm_params (n, v, &size) || !contiguous_src (n, v)
      || !peer_params (n, size, v))
    return v->status;
  r->type = TSR_TYPE_I32;
  r->ne[0] = r->ne[1] = r->ne[2] = r->ne[3] = 1;
  return TSR_OK;
}

int
tsri_rule_recv (const tsr_tensor *n, struct tsri_result *r,
                struct tsri_verdict *v)
{
  int32_t size;
  if (!comm_params (n, v, &size) || !peer_params (n, size, v))
    return v->status;
  /* Its shape is its own: what the peer sends must match it.  */
  r->type = n->type;
  memcpy (r->ne, n->ne, sizeof r->ne);
  return TSR_OK;
}

static bool
comm_ok (const char *op, tsr_context *ctx, const tsr_comm *c)
{
  if (ctx && c)
    return true;
  tsr_set_error (TSR_ERR_INVALID_ARG, "%s: NULL %s", op,
                 ctx ? "communicator" : "context");
  return false;
}

static void
set_comm_params (tsr_tensor *proto, const tsr_comm *c)
{
  proto->op_params[0] = c->id;
  proto->op_params[1] = c->size;
}

tsr_tensor *
tsr_all_reduce (tsr_context *ctx, tsr_comm *c, tsr_tensor *a)
{
  tsr_tensor proto = { .op = TSR_OP_ALL_REDUCE, .src = { a } };
  if (!comm_ok ("all_reduce", ctx, c))
    return NULL;
  set_comm_params (&proto, c);
  return tsri_build (ctx, &proto);
}

tsr_tensor *
tsr_all_gather (tsr_context *ctx, tsr_comm *c, tsr_tensor *a)
{
  tsr_tensor proto = { .op = TSR_OP_ALL_GATHER, .src = { a } };
  if (!comm_ok ("all_gather", ctx, c))
    return NULL;
  set_comm_params (&proto, c);
  return tsri_build (ctx, &proto);
}

static bool
not_self (const char *op, const tsr_comm *c, int peer)
{
  if (peer != c->rank)
    return true;
  tsr_set_error (TSR_ERR_INVALID_ARG, "%s: peer %d is this rank", op, peer);
  return false;
}

tsr_tensor *
tsr_send (tsr_context *ctx, tsr_comm *c, tsr_tensor *a, int peer, int tag)
{
  tsr_tensor proto = { .op = TSR_OP_SEND, .src = { a } };
  if (!comm_ok ("send", ctx, c) || !not_self ("send", c, peer))
    return NULL;
  set_comm_params (&proto, c);
  proto.op_params[2] = peer;
  proto.op_params[3] = tag;
  return tsri_build (ctx, &proto);
}

tsr_tensor *
tsr_recv (tsr_context *ctx, tsr_comm *c, tsr_type type, int n_dims,
          const int64_t *ne, int peer, int tag)
{
  tsr_tensor proto = { .op = TSR_OP_RECV, .type = type };
  if (!comm_ok ("recv", ctx, c) || !not_self ("recv", c, peer))
    return NULL;
  if (n_dims < 1 || n_dims > TSR_MAX_DIMS || !ne)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "recv: %d dimensions (1 to %d)",
                     n_dims, TSR_MAX_DIMS);
      return NULL;
    }
  if (!tsr_type_valid (type))
    {
      tsr_set_error (TSR_ERR_TYPE, "recv: type %d is not a type", (int) type);
      return NULL;
    }
  for (int i = 0; i < TSR_MAX_DIMS; i++)
    {
      proto.ne[i] = i < n_dims ? ne[i] : 1;
      if (proto.ne[i] < 1)
        {
          tsr_set_error (TSR_ERR_SHAPE, "recv: dimension %d is %lld", i,
                         (long long) proto.ne[i]);
          return NULL;
        }
    }
  if (proto.ne[0] % tsr_type_traits (type)->block_size != 0)
    {
      tsr_set_error (TSR_ERR_SHAPE, "recv: rows of %lld are not whole %s "
                     "blocks", (long long) proto.ne[0], tsr_type_name (type));
      return NULL;
    }
  set_comm_params (&proto, c);
  proto.op_params[2] = peer;
  proto.op_params[3] = tag;
  return tsri_build (ctx, &proto);
}
