/* cuda-blas.c - mul_mat on cuBLAS, and cuBLAS itself, opened on first
 * use.
 *
 * cuBLAS is not linked into the module: loading libcublas costs tens
 * of milliseconds (hundreds when not cached), which every program
 * using Tessera would pay at start even where no GPU exists.  It is
 * opened with dlopen when a backend first multiplies matrices, by its
 * soname, then from the toolkit's library directory found by
 * configure; a failure is remembered and reported by each mul_mat.
 *
 * Tessera's mul_mat is d[i, j] = dot (a row i, b row j) with a [k, m]
 * and b [k, n]: in cuBLAS's column-major terms a is a k x m matrix, b a
 * k x n one, and d = a^T b (m x n), one GEMM per batch.  Operands:
 *   a f32 (dense rows): as it is, SGEMM (full f32, no TF32);
 *   a bf16, or f32 with strided elements: converted to dense f32, SGEMM;
 *   a f16 (dense rows): as it is, b converted to f16, GemmEx with f32
 *     accumulation (tensor cores);
 *   a of a block type (q8_0, q4_0, q4_1 .. mxfp4): dequantized to f16
 *     (tsr_cuda_convert), then as f16; but with at most CU_MMV_MAX_COLS
 *     columns in b, no cuBLAS: a matrix-vector kernel reads the
 *     quantized weights as they are (cuda-quant.cu).
 * The converted operands live in the backend's scratch memory.  */
#include <config.h>

#include <dlfcn.h>
#include <stdio.h>

#include <cublas_v2.h>

#include "cuda-impl.h"
#include "../op-checks.h"

#define CU_STR2(x) #x
#define CU_STR(x) CU_STR2 (x)
#define CUBLAS_SONAME "libcublas.so." CU_STR (CUBLAS_VER_MAJOR)

/* The cuBLAS functions used, with their own prototypes.  */
static struct
{
  __typeof__ (cublasCreate_v2) *create;
  __typeof__ (cublasDestroy_v2) *destroy;
  __typeof__ (cublasSetStream_v2) *set_stream;
  __typeof__ (cublasSgemm_v2) *sgemm;
  __typeof__ (cublasSgemmStridedBatched) *sgemm_batched;
  __typeof__ (cublasGemmEx) *gemm_ex;
  __typeof__ (cublasGemmStridedBatchedEx) *gemm_ex_batched;
  __typeof__ (cublasGetStatusString) *status_string;
} blas;
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static char blas_error[512];

static void
blas_open (void)
{
  void *h = dlopen (CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);

  if (!h && TSR_CUDA_LIBDIR[0])
    h = dlopen (TSR_CUDA_LIBDIR "/" CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    {
      snprintf (blas_error, sizeof blas_error, "cuda: cannot open cuBLAS "
                "(%s): %s", CUBLAS_SONAME, dlerror ());
      tsr_log (TSR_LOG_WARN, "%s; the CUDA devices do not offer mul_mat",
               blas_error);
      return;
    }
#define SYM(field, name)                                                  \
  if (!(*(void **) &blas.field = dlsym (h, name)))                        \
    {                                                                     \
      snprintf (blas_error, sizeof blas_error, "cuda: %s lacks %s",       \
                CUBLAS_SONAME, name);                                     \
      tsr_log (TSR_LOG_WARN, "%s; the CUDA devices do not offer mul_mat", \
               blas_error);                                               \
      return;                                                             \
    }
  SYM (create, "cublasCreate_v2");
  SYM (destroy, "cublasDestroy_v2");
  SYM (set_stream, "cublasSetStream_v2");
  SYM (sgemm, "cublasSgemm_v2");
  SYM (sgemm_batched, "cublasSgemmStridedBatched");
  SYM (gemm_ex, "cublasGemmEx");
  SYM (gemm_ex_batched, "cublasGemmStridedBatchedEx");
  SYM (status_string, "cublasGetStatusString");
#undef SYM
}

static int
blas_fail (struct tsr_cuda_backend *be, const char *what, cublasStatus_t st)
{
  return tsr_set_error (TSR_ERR_BACKEND, "cuda: %s: %s failed: %s (%d)",
                        be->d->name, what, blas.status_string (st), (int) st);
}

/* The backend's cuBLAS handle, on its stream.  */
static int
blas_handle (struct tsr_cuda_backend *be)
{
  cublasStatus_t st;

  pthread_once (&blas_once, blas_open);
  if (blas_error[0])
    return tsr_set_error (TSR_ERR_BACKEND, "%s", blas_error);
  if (be->blas)
    return TSR_OK;
  st = blas.create ((cublasHandle_t *) &be->blas);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = blas.set_stream (be->blas, be->stream);
  if (st != CUBLAS_STATUS_SUCCESS)
    {
      if (be->blas)
        blas.destroy (be->blas);
      be->blas = NULL;
      return blas_fail (be, "cublasCreate", st);
    }
  return TSR_OK;
}

void
tsr_cuda_blas_release (struct tsr_cuda_backend *be)
{
  if (be->blas)
    blas.destroy (be->blas);
  be->blas = NULL;
}

/* Rows dense and row and batch strides whole elements of ESIZE.  */
static bool
gemm_ready (const tsr_tensor *t, size_t esize)
{
  return t->nb[0] == esize && t->nb[1] % esize == 0
         && t->nb[2] % esize == 0 && t->nb[3] % esize == 0
         && t->nb[1] >= esize * (size_t) t->ne[0];
}

/* The core has checked the shapes and that b and d are f32
   (tsr_node_validate); what is left is the weight types the kernels
   decode, the int sizes of cuBLAS, a result GEMM can write, and cuBLAS
   itself.  */
bool
tsr_cuda_mul_mat_supports (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *b = d->src[1];

  if (!tsr_chk_weight (a))
    return false;
  /* cuBLAS takes int sizes and leading dimensions.  */
  for (int i = 0; i < 2; i++)
    if (a->ne[i] > INT32_MAX || b->ne[i] > INT32_MAX
        || d->nb[1] / 4 > INT32_MAX)
      return false;
  if (!gemm_ready (d, 4))
    return false;
  /* Without cuBLAS (logged once by blas_open) the product is not
     offered, so that a scheduler runs it elsewhere rather than fail at
     every computation.  */
  pthread_once (&blas_once, blas_open);
  return blas_error[0] == '\0';
}

/* An operand as GEMM reads it: device address, element type, leading
   dimension and batch strides, in elements.  */
struct operand
{
  const char *data;
  cudaDataType_t type;
  size_t esize;
  int64_t ld, s2, s3;
};

static struct operand
as_is (const tsr_tensor *t, cudaDataType_t type, size_t esize)
{
  return (struct operand) { t->data, type, esize,
                            (int64_t) (t->nb[1] / esize),
                            (int64_t) (t->nb[2] / esize),
                            (int64_t) (t->nb[3] / esize) };
}

/* T converted into dense memory at MEM (f16 when HALF, else f32).  */
static int
converted (struct tsr_cuda_backend *be, const tsr_tensor *t, void *mem, bool half,
           struct operand *op)
{
  size_t esize = half ? 2 : 4;
  struct tsr_cuda_tdesc dst = tsr_cuda_desc (t);
  int err;

  dst.data = mem;
  dst.nb[0] = (int64_t) esize;
  for (int i = 1; i < 4; i++)
    dst.nb[i] = dst.nb[i - 1] * dst.ne[i - 1];
  err = tsr_cuda_convert (be->stream, dst, half ? TSR_TYPE_F16 : TSR_TYPE_F32,
                    tsr_cuda_desc (t), t->type);
  if (err != 0)
    return tsr_set_error (TSR_ERR_BACKEND, "cuda: %s: converting '%s' "
                          "for mul_mat failed: %s", be->d->name, t->name,
                          cudaGetErrorString ((cudaError_t) err));
  *op = (struct operand) { mem, half ? CUDA_R_16F : CUDA_R_32F, esize,
                           dst.ne[0], dst.ne[0] * dst.ne[1],
                           dst.ne[0] * dst.ne[1] * dst.ne[2] };
  return TSR_OK;
}

static size_t
round_up (size_t n)
{
  return (n + CU_ALIGN - 1) / CU_ALIGN * CU_ALIGN;
}

/* Prepare A and B: which of them need converting, into scratch.  */
static int
operands (struct tsr_cuda_backend *be, const tsr_tensor *a, const tsr_tensor *b,
          struct operand *oa, struct operand *ob)
{
  bool half = a->type == TSR_TYPE_F16 || tsr_chk_is_block_weight (a->type);
  bool a_as_is = (a->type == TSR_TYPE_F32 && gemm_ready (a, 4))
                 || (a->type == TSR_TYPE_F16 && gemm_ready (a, 2));
  bool b_as_is = !half && gemm_ready (b, 4);
  size_t esize = half ? 2 : 4;
  size_t a_size = a_as_is ? 0 : round_up (esize * tsr_nelements (a));
  size_t b_size = b_as_is ? 0 : round_up (esize * tsr_nelements (b));
  char *mem = NULL;
  int st = TSR_OK;

  if (a_size + b_size > 0 && !(mem = tsr_cuda_scratch (be, a_size + b_size)))
    return TSR_ERR_NO_MEMORY;
  if (a_as_is)
    *oa = as_is (a, half ? CUDA_R_16F : CUDA_R_32F, esize);
  else
    st = converted (be, a, mem, half, oa);
  if (st != TSR_OK)
    return st;
  if (b_as_is)
    *ob = as_is (b, CUDA_R_32F, 4);
  else
    st = converted (be, b, mem + a_size, half, ob);
  return st;
}

/* One GEMM per batch, or per dimension-3 batch over dimension 2 when
   a is not broadcast there.  */
static cublasStatus_t
gemms (struct tsr_cuda_backend *be, tsr_tensor *d, const struct operand *oa,
       const struct operand *ob)
{
  const tsr_tensor *a = d->src[0], *b = d->src[1];
  int m = (int) d->ne[0], n = (int) d->ne[1], k = (int) a->ne[0];
  int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
  int64_t ldc = (int64_t) (d->nb[1] / 4), sc2 = (int64_t) (d->nb[2] / 4);
  int64_t batch = r2 == 1 ? d->ne[2] : 1;
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;

  for (int64_t i3 = 0; i3 < d->ne[3] && st == CUBLAS_STATUS_SUCCESS; i3++)
    for (int64_t i2 = 0; i2 < d->ne[2] && st == CUBLAS_STATUS_SUCCESS;
         i2 += batch)
      {
        const char *pa = oa->data + oa->esize * (size_t) ((i2 / r2) * oa->s2
                                                          + (i3 / r3)
                                                          * oa->s3);
        const char *pb = ob->data + ob->esize * (size_t) (i2 * ob->s2
                                                          + i3 * ob->s3);
        float *pc = (float *) ((char *) d->data + i2 * d->nb[2]
                               + i3 * d->nb[3]);

        /* A single product as a plain GEMM: cuBLAS chooses among more
           kernels for it than for a batch of one.  */
        if (batch == 1 && oa->type == CUDA_R_32F)
          st = blas.sgemm (be->blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k,
                           &one, (const float *) pa, (int) oa->ld,
                           (const float *) pb, (int) ob->ld, &zero, pc,
                           (int) ldc);
        else if (batch == 1)
          st = blas.gemm_ex (be->blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k,
                             &one, pa, oa->type, (int) oa->ld, pb, ob->type,
                             (int) ob->ld, &zero, pc, CUDA_R_32F, (int) ldc,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        else if (oa->type == CUDA_R_32F)
          st = blas.sgemm_batched (be->blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n,
                                   k, &one, (const float *) pa,
                                   (int) oa->ld, oa->s2, (const float *) pb,
                                   (int) ob->ld, ob->s2, &zero, pc,
                                   (int) ldc, sc2, (int) batch);
        else
          st = blas.gemm_ex_batched (be->blas, CUBLAS_OP_T, CUBLAS_OP_N, m,
                                     n, k, &one, pa, oa->type, (int) oa->ld,
                                     oa->s2, pb, ob->type, (int) ob->ld,
                                     ob->s2, &zero, pc, CUDA_R_32F,
                                     (int) ldc, sc2, (int) batch,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      }
  return st;
}

/* Whether the matrix-vector kernels take D: quantized weights, a few
   columns of f32 activations, the alignment their vector loads need
   (otherwise cuBLAS computes it).  */
bool
tsr_cuda_mmv_ready (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *b = d->src[1];

  if (!tsr_chk_is_block_weight (a->type) || b->ne[1] > CU_MMV_MAX_COLS
      || d->ne[2] * d->ne[3] > 65535 || d->nb[0] != 4 || b->nb[0] != 4)
    return false;
  if ((uintptr_t) b->data % 16 != 0)
    return false;
  for (int i = 1; i < 4; i++)
    if (b->nb[i] % 16 != 0)
      return false;
  return true;
}

char *
tsr_cuda_mmv_q8_scratch (struct tsr_cuda_backend *be, const tsr_tensor *b,
                         void **ds)
{
  size_t qbytes = round_up ((size_t) tsr_nelements (b));
  size_t dsbytes = (size_t) tsr_nelements (b) / 32 * 2 * sizeof (float);
  char *mem = tsr_cuda_scratch (be, qbytes + dsbytes);

  *ds = mem ? mem + qbytes : NULL;
  return mem;
}

bool
tsr_cuda_mmv_integer (const tsr_tensor *d)
{
  const tsr_tensor *a = d->src[0], *b = d->src[1];

  return d->op == TSR_OP_MUL_MAT && tsr_cuda_mmv_ready (d)
         && tsr_cuda_mmvq_takes (a->type) && b->ne[0] % 32 == 0
         && a->ne[2] * a->ne[3] == 1 && b->ne[2] * b->ne[3] == 1;
}

int
tsr_cuda_mmv_launch (struct tsr_cuda_backend *be,
                     const struct tsr_cuda_mmv_set *set, int atype,
                     const tsr_tensor *b, const tsr_tensor *node)
{
  bool flat = b->ne[2] * b->ne[3] == 1;
  int err;

  for (int m = 0; m < set->n; m++)
    flat = flat && set->a[m].ne[2] * set->a[m].ne[3] == 1;
  if (tsr_cuda_mmvq_takes (atype) && flat)
    {
      /* The activations rounded once for the whole set, here or (Q8_IN)
         by the norm kernel just before.  */
      void *ds;
      char *mem = tsr_cuda_mmv_q8_scratch (be, b, &ds);
      if (!mem)
        return TSR_ERR_NO_MEMORY;
      err = be->q8_in ? 0 : tsr_cuda_quantize_q8 (be->stream,
                                                  tsr_cuda_desc (b),
                                                  (signed char *) mem, ds);
      if (err == 0)
        err = tsr_cuda_mmvq (be->stream, set, atype,
                             (const signed char *) mem, ds,
                             b->ne[0], (int) b->ne[1]);
    }
  else
    err = tsr_cuda_mul_mat_vec_set (be->stream, set, atype,
                                    tsr_cuda_desc (b));
  if (err != 0)
    return tsr_set_error (TSR_ERR_BACKEND, "cuda: %s: %s%s '%s' failed: %s",
                          be->d->name, set->n > 1 || set->glu
                          ? "fused kernel ending in " : "",
                          tsr_op_name (node->op), node->name,
                          cudaGetErrorString ((cudaError_t) err));
  return TSR_OK;
}

int
tsr_cuda_mul_mat (struct tsr_cuda_backend *be, tsr_tensor *d)
{
  struct operand oa, ob;
  cublasStatus_t cst;
  int st;

  /* Token generation with quantized weights: read them as they are
     (cuda-mmvq.cu, cuda-quant.cu) instead of converting the whole
     matrix.  */
  if (tsr_cuda_mmv_ready (d))
    {
      struct tsr_cuda_mmv_set set = { .n = 1 };
      set.a[0] = tsr_cuda_desc (d->src[0]);
      set.d[0] = tsr_cuda_desc (d);
      return tsr_cuda_mmv_launch (be, &set, d->src[0]->type, d->src[1], d);
    }
  st = blas_handle (be);

  if (st == TSR_OK)
    st = operands (be, d->src[0], d->src[1], &oa, &ob);
  if (st != TSR_OK)
    return st;
  cst = gemms (be, d, &oa, &ob);
  tsr_cuda_count (1);           /* cuBLAS's kernels: one library call */
  if (cst != CUBLAS_STATUS_SUCCESS)
    return blas_fail (be, "mul_mat GEMM", cst);
  return TSR_OK;
}
