/* blas-matmul.c - mul_mat on BLIS.
 *
 * Tessera's mul_mat is dst[i, j] = dot (a row i, b row j) per batch,
 * with a [k, m, a2, a3] the weights, b [k, n, b2, b3] f32 and dst
 * [m, n, b2, b3] f32; batch (i2, i3) of b uses batch (i2 / (b2 / a2),
 * i3 / (b3 / a3)) of a.  Read as BLIS matrices (element strides, rs
 * between rows, cs between columns):
 *
 *   A = a batch, m x k:  rs = a->nb[1] / 4, cs = a->nb[0] / 4
 *   B = b batch, k x n:  rs = b->nb[0] / 4, cs = b->nb[1] / 4
 *   C = dst batch, m x n: rs = dst->nb[0] / 4, cs = dst->nb[1] / 4
 *
 * and C = A B is one bli_sgemm_ex per batch on the tensors' own memory:
 * nothing is copied for f32 operands.  Weights of other types (f16,
 * bf16, q8_0, q4_0, any type with a to_float conversion) are converted
 * to f32 rows in scratch memory, at most scratch->limit bytes at a
 * time (64 MiB by default), and each converted chunk serves every batch of b that
 * broadcasts onto it before the next is converted.  A batch of b whose
 * strides BLIS cannot take (zero or overlapping strides) is repacked.
 *
 * This file is the only one that includes blis.h.  */
#include <config.h>

#include <blis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas-impl.h"

#define F32 ((size_t) sizeof (float))

/* Strides of an ROWS x COLS matrix as BLIS accepts them, or false.  A
   unit dimension's stride is free, so it is set to one that cannot
   fail the check; the others must not make elements overlap.  */
static bool
blis_strides (int64_t rows, int64_t cols, int64_t *rs, int64_t *cs)
{
  if (rows == 1)
    *rs = *cs * cols > 1 ? *cs * cols : 1;
  if (cols == 1)
    *cs = *rs * rows > 1 ? *rs * rows : 1;
  if (*rs < 1 || *cs < 1)
    return false;
  if (rows == 1 || cols == 1)
    return true;
  return *rs < *cs ? rows * *rs <= *cs : *rs > *cs && cols * *cs <= *rs;
}

/* Element strides of tensor T's dimensions I (rows) and J (columns)
   into *RS and *CS; false when a byte stride is not a float multiple
   or BLIS would refuse them for ROWS x COLS.  */
static bool
tensor_strides (const tsr_tensor *t, int i, int j, int64_t rows,
                int64_t cols, int64_t *rs, int64_t *cs)
{
  if (t->nb[i] % F32 != 0 || t->nb[j] % F32 != 0)
    return false;
  *rs = (int64_t) (t->nb[i] / F32);
  *cs = (int64_t) (t->nb[j] / F32);
  return blis_strides (rows, cols, rs, cs);
}

static bool
weights_direct (const tsr_tensor *a, int64_t *rs, int64_t *cs)
{
  return a->type == TSR_TYPE_F32
         && tensor_strides (a, 1, 0, a->ne[1], a->ne[0], rs, cs);
}

bool
tsr_blas_mul_mat_ok (const tsr_tensor *dst)
{
  const tsr_tensor *a = dst->src[0], *b = dst->src[1];
  const struct tsr_type_traits *tr;
  int64_t rs, cs;

  tr = tsr_type_traits (a->type);
  if (!tr->to_float)
    return false;
  /* Converted rows are read whole: they must be dense.  */
  if (!weights_direct (a, &rs, &cs) && a->nb[0] != tr->type_size)
    return false;
  for (int d = 0; d < TSR_MAX_DIMS; d++)
    if (b->nb[d] % F32 != 0)
      return false;
  /* dst is written in place, never repacked.  */
  return tensor_strides (dst, 0, 1, dst->ne[0], dst->ne[1], &rs, &cs);
}

void
tsr_blas_scratch_free (struct tsr_blas_scratch *s)
{
  free (s->a);
  free (s->b);
  s->a = s->b = NULL;
  s->a_bytes = s->b_bytes = 0;
}

/* Make *P hold BYTES (contents not kept).  */
static int
reserve (float **p, size_t *have, size_t bytes, const char *what)
{
  void *q;

  if (*have >= bytes)
    return TSR_OK;
  bytes = (bytes + 63) & ~(size_t) 63;
  q = aligned_alloc (64, bytes);
  if (!q)
    return tsr_set_error (TSR_ERR_NO_MEMORY, "blas: no memory for %zu "
                          "bytes of scratch space for %s", bytes, what);
  free (*p);
  *p = q;
  *have = bytes;
  return TSR_OK;
}

/* One C = A B on BLIS.  */
static void
gemm (const rntm_t *rntm, int64_t m, int64_t n, int64_t k,
      const float *a, int64_t rsa, int64_t csa,
      const float *b, int64_t rsb, int64_t csb,
      float *c, int64_t rsc, int64_t csc)
{
  float one = 1.0f, zero = 0.0f;
  rntm_t r = *rntm;             /* BLIS may write to it */

  /* Strides were checked for the whole matrices; a chunk of rows needs
     them fixed again only where it is a single row.  */
  blis_strides (m, k, &rsa, &csa);
  blis_strides (m, n, &rsc, &csc);
  bli_sgemm_ex (BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &one,
                (float *) a, rsa, csa, (float *) b, rsb, csb, &zero,
                c, rsc, csc, NULL, &r);
}

/* Where mul_mat's loop is.  */
struct job
{
  const tsr_tensor *a, *b;
  tsr_tensor *dst;
  int64_t k, m, n, r2, r3;
  rntm_t rntm;
  struct tsr_blas_scratch *scratch;
};

/* Multiply rows [R0, R0 + ROWS) of a batch, given as A (RSA, CSA), by
   every batch of b that broadcasts onto weight batch (IA2, IA3).  */
static int
multiply_chunk (struct job *j, int64_t ia2, int64_t ia3, int64_t r0,
                int64_t rows, const float *a, int64_t rsa, int64_t csa)
{
  const tsr_tensor *b = j->b;
  tsr_tensor *dst = j->dst;
  int64_t rsc = (int64_t) (dst->nb[0] / F32);
  int64_t csc = (int64_t) (dst->nb[1] / F32);

  for (int64_t i3 = ia3 * j->r3; i3 < (ia3 + 1) * j->r3; i3++)
    for (int64_t i2 = ia2 * j->r2; i2 < (ia2 + 1) * j->r2; i2++)
      {
        const char *bb = (const char *) b->data + i2 * b->nb[2]
                         + i3 * b->nb[3];
        char *cc = (char *) dst->data + i2 * dst->nb[2] + i3 * dst->nb[3]
                   + r0 * dst->nb[0];
        int64_t rsb, csb;

        if (!tensor_strides (b, 0, 1, j->k, j->n, &rsb, &csb))
          {
            /* Repack this batch as n contiguous rows of k.  */
            int st = reserve (&j->scratch->b, &j->scratch->b_bytes,
                              (size_t) (j->k * j->n) * F32, "b");
            if (st != TSR_OK)
              return st;
            for (int64_t c = 0; c < j->n; c++)
              for (int64_t l = 0; l < j->k; l++)
                j->scratch->b[c * j->k + l]
                  = *(const float *) (bb + c * b->nb[1] + l * b->nb[0]);
            bb = (const char *) j->scratch->b;
            rsb = 1;
            csb = j->k;
          }
        gemm (&j->rntm, rows, j->n, j->k, a, rsa, csa,
              (const float *) bb, rsb, csb, (float *) cc, rsc, csc);
      }
  return TSR_OK;
}

/* Weight batch (IA2, IA3) converted to f32 chunk by chunk.  */
static int
converted_batch (struct job *j, int64_t ia2, int64_t ia3)
{
  const tsr_tensor *a = j->a;
  tsr_to_float_fn to_float = tsr_type_traits (a->type)->to_float;
  size_t row_bytes = (size_t) j->k * F32;
  int64_t chunk = (int64_t) (j->scratch->limit / row_bytes);
  int st;

  if (chunk < 1)
    chunk = 1;
  if (chunk > j->m)
    chunk = j->m;
  st = reserve (&j->scratch->a, &j->scratch->a_bytes,
                (size_t) chunk * row_bytes, "converted weights");
  for (int64_t r0 = 0; r0 < j->m && st == TSR_OK; r0 += chunk)
    {
      int64_t rows = j->m - r0 < chunk ? j->m - r0 : chunk;
      for (int64_t r = 0; r < rows; r++)
        to_float ((const char *) a->data + (r0 + r) * a->nb[1]
                  + ia2 * a->nb[2] + ia3 * a->nb[3],
                  j->scratch->a + r * j->k, j->k);
      st = multiply_chunk (j, ia2, ia3, r0, rows, j->scratch->a, j->k, 1);
    }
  return st;
}

int
tsr_blas_mul_mat (tsr_tensor *dst, int n_threads,
                  struct tsr_blas_scratch *scratch)
{
  struct job j;
  int64_t rsa, csa;

  if (!tsr_blas_mul_mat_ok (dst))
    return tsr_set_error (TSR_ERR_UNSUPPORTED, "blas: cannot compute "
                          "mul_mat '%s' (operand types, shapes or strides)",
                          dst->name);
  j.a = dst->src[0];
  j.b = dst->src[1];
  j.dst = dst;
  j.k = j.a->ne[0];
  j.m = j.a->ne[1];
  j.n = j.b->ne[1];
  j.r2 = j.b->ne[2] / j.a->ne[2];
  j.r3 = j.b->ne[3] / j.a->ne[3];
  j.scratch = scratch;
  bli_rntm_init (&j.rntm);
  bli_rntm_set_num_threads (n_threads, &j.rntm);
  if (j.m == 0 || j.n == 0)
    return TSR_OK;
  if (j.k == 0)
    {
      for (int64_t i3 = 0; i3 < dst->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < dst->ne[2]; i2++)
          for (int64_t c = 0; c < j.n; c++)
            for (int64_t r = 0; r < j.m; r++)
              *(float *) ((char *) dst->data + r * dst->nb[0]
                          + c * dst->nb[1] + i2 * dst->nb[2]
                          + i3 * dst->nb[3]) = 0.0f;
      return TSR_OK;
    }
  for (int64_t ia3 = 0; ia3 < j.a->ne[3]; ia3++)
    for (int64_t ia2 = 0; ia2 < j.a->ne[2]; ia2++)
      {
        int st;
        if (weights_direct (j.a, &rsa, &csa))
          st = multiply_chunk (&j, ia2, ia3, 0, j.m,
                               (const float *) ((const char *) j.a->data
                                                + ia2 * j.a->nb[2]
                                                + ia3 * j.a->nb[3]),
                               rsa, csa);
        else
          st = converted_batch (&j, ia2, ia3);
        if (st != TSR_OK)
          return st;
      }
  return TSR_OK;
}

void
tsr_blas_describe (char *buf, size_t size)
{
  const char *threading = bli_info_get_enable_openmp () ? "OpenMP"
                          : bli_info_get_enable_pthreads () ? "pthreads"
                          : "single-threaded";

  snprintf (buf, size, "BLIS %s (%s kernels, %s)",
            bli_info_get_version_str (),
            bli_arch_string (bli_arch_query_id ()), threading);
}
