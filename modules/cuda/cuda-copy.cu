/* cuda-copy.cu - moving and converting elements: cpy / cont between
 * types and layouts, byte-exact copies (same type, block types as
 * whole blocks), get_rows.  One thread per destination element in a
 * grid-stride loop.  The module also converts mul_mat operands with
 * tsr_cuda_convert (weights to f16, activations to f16 or dense f32).
 * Copies into block types (quantizing) are cuda-set-rows.cu's.  */
#include "cuda-common.cuh"

static __global__ void
k_convert (tsr_cuda_tdesc d, int dtype, tsr_cuda_tdesc s, int stype, int64_t n)
{
  CU_FOR_ITEMS (i, n)
    {
      int64_t d0, d1, d2, d3, s0, s1, s2, s3;
      tsr_cuda_split (i, d, &d0, &d1, &d2, &d3);
      tsr_cuda_split (i, s, &s0, &s1, &s2, &s3);
      tsr_cuda_store (tsr_cuda_at (d, d0, d1, d2, d3), dtype,
                tsr_cuda_load (tsr_cuda_at (s, 0, s1, s2, s3), s0, s.nb[0], stype));
    }
}

static __global__ void
k_copy_bytes (tsr_cuda_tdesc d, tsr_cuda_tdesc s, int esize, int64_t n)
{
  CU_FOR_ITEMS (i, n)
    {
      int64_t d0, d1, d2, d3, s0, s1, s2, s3;
      tsr_cuda_split (i, d, &d0, &d1, &d2, &d3);
      tsr_cuda_split (i, s, &s0, &s1, &s2, &s3);
      char *dp = tsr_cuda_at (d, d0, d1, d2, d3);
      const char *sp = tsr_cuda_at (s, s0, s1, s2, s3);
      if (esize == 4)
        *(uint32_t *) dp = *(const uint32_t *) sp;
      else if (esize == 2)
        *(uint16_t *) dp = *(const uint16_t *) sp;
      else
        for (int k = 0; k < esize; k++)
          dp[k] = sp[k];
    }
}

static __global__ void
k_get_rows (tsr_cuda_tdesc d, tsr_cuda_tdesc a, int atype, tsr_cuda_tdesc rows,
            tsr_cuda_status *status, int tag, int64_t n)
{
  tsr_cuda_pdl_begin ();
  CU_FOR_ITEMS (e, n)
    {
      int64_t i0, i, j, l;
      tsr_cuda_split (e, d, &i0, &i, &j, &l);
      int idx = *(const int32_t *) tsr_cuda_at (rows, i, j, l, 0);
      float v = 0.0f;
      if (idx < 0 || idx >= a.ne[1])
        tsr_cuda_bad_index (status, tag, idx);
      else
        v = tsr_cuda_load (tsr_cuda_at (a, 0, idx, j % a.ne[2], l % a.ne[3]), i0,
                     a.nb[0], atype);
      tsr_cuda_f32 (d, i0, i, j, l) = v;
    }
}

/* Bytes of one element (of a block, for block types) of TYPE, and
   elements per block; 0 for types without a dense fast path.  */
static int
dense_unit (int type, int *per)
{
  *per = 1;
  switch (type)
    {
    case TSR_TYPE_F32: return 4;
    case TSR_TYPE_F16: case TSR_TYPE_BF16: return 2;
    default:
      *per = tsr_cuda_is_block (type) ? tsr_cuda_block_elems (type) : 1;
      return tsr_cuda_block_bytes (type);
    }
}

/* Whether T (of TYPE) is one dense array, 16-byte aligned.  */
static bool
dense (const tsr_cuda_tdesc &t, int type)
{
  int per, unit = dense_unit (type, &per);
  int64_t stride = unit;

  if (unit == 0 || ((uintptr_t) t.data & 15) != 0 || t.ne[0] % per != 0)
    return false;
  for (int i = 0; i < 4; i++)
    {
      if (t.ne[i] > 1 && t.nb[i] != stride)
        return false;
      stride *= i == 0 ? t.ne[0] / per : t.ne[i];
    }
  return true;
}

int
tsr_cuda_convert (cudaStream_t st, tsr_cuda_tdesc d, int dtype, tsr_cuda_tdesc s, int stype)
{
  int64_t n = host_nelements (d);
  bool quant = tsr_cuda_is_block (stype);

  /* Both dense: no index arithmetic (cuda-quant.cu).  */
  if (dense (d, dtype) && dense (s, stype)
      && (dtype == TSR_TYPE_F32 || dtype == TSR_TYPE_F16
          || (dtype == TSR_TYPE_BF16 && !quant)))
    return tsr_cuda_convert_dense (st, d.data, dtype, s.data, stype, n);
  k_convert<<<tsr_cuda_blocks (n), CU_THREADS, 0, st>>> (d, dtype, s, stype, n);
  return tsr_cuda_launched ();
}

int
tsr_cuda_copy_bytes (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc s, int esize)
{
  int64_t n = host_nelements (d);
  k_copy_bytes<<<tsr_cuda_blocks (n), CU_THREADS, 0, st>>> (d, s, esize, n);
  return tsr_cuda_launched ();
}

int
tsr_cuda_get_rows (cudaStream_t st, tsr_cuda_tdesc d, tsr_cuda_tdesc a, int atype,
             tsr_cuda_tdesc rows, tsr_cuda_status *status, int tag)
{
  int64_t n = host_nelements (d);
  return tsr_cuda_launch (k_get_rows, dim3 (tsr_cuda_blocks (n)),
                          dim3 (CU_THREADS), 0, st, d, a, atype, rows, status,
                          tag, n);
}
