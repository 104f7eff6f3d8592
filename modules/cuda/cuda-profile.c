/* cuda-profile.c - where a graph's time goes on the GPU, per kernel,
 * without a profiler: TESSERA_CUDA_PROFILE=1.
 *
 * A profiled compute is walked (not replayed from a CUDA graph) with
 * an event recorded after each kernel.  The walk starts with a kernel
 * that holds the stream for a while (tsr_cuda_hold), so that the host
 * has queued every kernel before the first runs: the kernels then run
 * back to back as they would from a graph, and the time between two
 * events is one kernel's, not the host's launch.  Times are summed per
 * label (the op, or the fused group, with its weight type and shape)
 * and printed to standard error when the backend is freed, largest
 * first, with the computes they came from.  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-impl.h"
#include "../kernel-times.h"

struct tsr_cuda_profile
{
  cudaEvent_t *ev;              /* ev[0] after the hold, ev[k] after
                                   step k */
  int n_ev;
  char (*label)[96];            /* of each step of the compute */
  int n_steps;
  struct tsr_ktimes sums;
};

static const char *const fused_name[] = {
  [TSR_CUDA_STEP_NORM_MUL] = "fused rms_norm+mul",
  [TSR_CUDA_STEP_ADD_NORM_MUL] = "fused add+rms_norm+mul",
  [TSR_CUDA_STEP_MMV_SET] = "fused mul_mat x",
  [TSR_CUDA_STEP_MMV_GLU] = "fused mul_mat+glu",
  [TSR_CUDA_STEP_PHASES] = "phases x",
};

static void
label_of (const tsr_tensor *t, const struct tsr_cuda_step *step, char *out,
          size_t size)
{
  const tsr_tensor *w = t->src[0];
  int kind = step ? step->kind : TSR_CUDA_STEP_RUN;
  int len = kind == TSR_CUDA_STEP_RUN
            ? snprintf (out, size, "%s", tsr_op_name (t->op))
            : kind == TSR_CUDA_STEP_MMV_SET || kind == TSR_CUDA_STEP_PHASES
            ? snprintf (out, size, "%s%d", fused_name[kind], step->n)
            : snprintf (out, size, "%s", fused_name[kind]);
  if ((t->op == TSR_OP_MUL_MAT || t->op == TSR_OP_MUL_MAT_ID) && w
      && len > 0 && (size_t) len < size)
    snprintf (out + len, size - (size_t) len, " %s %lldx%lld n=%lld",
              tsr_type_name (w->type), (long long) w->ne[0],
              (long long) w->ne[1], (long long) t->src[1]->ne[1]);
}

int
tsr_cuda_profile_begin (struct tsr_cuda_backend *be, int n_steps)
{
  struct tsr_cuda_profile *p = be->profile;
  cudaError_t err = cudaSuccess;

  if (!p && !(p = be->profile = calloc (1, sizeof *p)))
    return tsr_set_error (TSR_ERR_NO_MEMORY, "cuda: no memory to profile");
  if (n_steps + 1 > p->n_ev)
    {
      cudaEvent_t *ev = realloc (p->ev, (size_t) (n_steps + 1) * sizeof *ev);
      char (*label)[96] = realloc (p->label, (size_t) (n_steps + 1)
                                             * sizeof *label);
      if (ev)
        p->ev = ev;
      if (label)
        p->label = label;
      if (!ev || !label)
        return tsr_set_error (TSR_ERR_NO_MEMORY, "cuda: no memory to "
                              "profile");
      for (int i = p->n_ev; i < n_steps + 1 && err == cudaSuccess; i++)
        if ((err = cudaEventCreate (&p->ev[i])) == cudaSuccess)
          p->n_ev = i + 1;
      if (err != cudaSuccess)
        return tsr_cuda_error (be->d, "cudaEventCreate (profile)", err);
    }
  p->n_steps = 0;
  /* Long enough for the host to queue every kernel behind it.  */
  err = (cudaError_t) tsr_cuda_hold (be->stream, 50.0 * n_steps + 200.0);
  if (err == cudaSuccess)
    err = cudaEventRecord (p->ev[0], be->stream);
  return err == cudaSuccess ? TSR_OK
         : tsr_cuda_error (be->d, "the profile's first event", err);
}

int
tsr_cuda_profile_step (struct tsr_cuda_backend *be, const tsr_tensor *t,
                       const struct tsr_cuda_step *step)
{
  struct tsr_cuda_profile *p = be->profile;
  int k = ++p->n_steps;

  if (k >= p->n_ev)
    return TSR_OK;              /* more steps than begin was told */
  label_of (t, step, p->label[k], sizeof p->label[k]);
  cudaError_t err = cudaEventRecord (p->ev[k], be->stream);
  return err == cudaSuccess ? TSR_OK
         : tsr_cuda_error (be->d, "a profile event", err);
}

int
tsr_cuda_profile_end (struct tsr_cuda_backend *be)
{
  struct tsr_cuda_profile *p = be->profile;
  int n = p->n_steps < p->n_ev ? p->n_steps : p->n_ev - 1;
  cudaError_t err = cudaEventSynchronize (p->ev[n]);

  for (int k = 1; k <= n && err == cudaSuccess; k++)
    {
      float ms = 0;
      err = cudaEventElapsedTime (&ms, p->ev[k - 1], p->ev[k]);
      if (err == cudaSuccess)
        tsr_ktimes_add (&p->sums, p->label[k], ms);
    }
  p->sums.computes++;
  return err == cudaSuccess ? TSR_OK
         : tsr_cuda_error (be->d, "reading the profile's events", err);
}

void
tsr_cuda_profile_free (struct tsr_cuda_backend *be)
{
  struct tsr_cuda_profile *p = be->profile;
  char who[64];

  if (!p)
    return;
  snprintf (who, sizeof who, "cuda: %s", be->d->name);
  tsr_ktimes_print_free (&p->sums, who, "GPU", 56);
  for (int i = 0; i < p->n_ev; i++)
    cudaEventDestroy (p->ev[i]);
  free (p->ev);
  free (p->label);
  free (p);
  be->profile = NULL;
}
