/* ocl-common.cl - what every kernel of the OpenCL backend shares.
 *
 * The kernel files are concatenated in the order modules/opencl/local.mk
 * lists them (this one first) and built as one program per device.
 * TSR_OP_* and TSR_TYPE_* come from the build options (ocl-device.c
 * makes them from tessera/ops.def and tessera/types.h), so the numbers
 * cannot drift from the library's.
 *
 * A tensor reaches a kernel as a buffer and a struct tdesc: its shape,
 * byte strides and byte offset in the buffer.  Every kernel follows the
 * strides, so views and permutations need no copies.  Kernels walk
 * their work items in a grid-stride loop: any global size covers any
 * tensor; the kernels that give a row or a tile to a work-group walk
 * the groups likewise (FOR_GROUPS).  Conversions are bit-exact with
 * libtessera's (f16 and bf16 round to nearest even, NaN kept quiet).
 * Sums of one work item over a row are in acc_t (double where the
 * device has it); the work-group reductions are in float, as a GPU's
 * are (the op checker's tolerances hold).  */

#if OCL_SUBGROUPS == 1
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#elif OCL_SUBGROUPS == 2
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#endif

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t;
#else
typedef float acc_t;
#endif

typedef struct
{
  long ne[4];
  long nb[4];
  long off;
} tdesc;

/* Address of element (I0, I1, I2, I3) of tensor T in buffer P.  */
#define AT(p, t, i0, i1, i2, i3)                                          \
  ((p) + (t).off + (long) (i0) * (t).nb[0] + (long) (i1) * (t).nb[1]      \
   + (long) (i2) * (t).nb[2] + (long) (i3) * (t).nb[3])

/* The indices of element I of T in row-major order.  */
#define SPLIT4(i, t, i0, i1, i2, i3)                                      \
  long i0 = (i) % (t).ne[0], i1, i2, i3;                                  \
  {                                                                       \
    long r_ = (i) / (t).ne[0];                                            \
    i1 = r_ % (t).ne[1];                                                  \
    r_ /= (t).ne[1];                                                      \
    i2 = r_ % (t).ne[2];                                                  \
    i3 = r_ / (t).ne[2];                                                  \
  }

/* The indices of row R of T (dimensions 1..3).  */
#define SPLIT_ROW(r, t, i1, i2, i3)                                       \
  long i1 = (r) % (t).ne[1], i2 = (r) / (t).ne[1] % (t).ne[2],            \
       i3 = (r) / ((t).ne[1] * (t).ne[2]);

#define FOR_ITEMS(i, n)                                                   \
  for (long i = get_global_id (0); i < (n); i += get_global_size (0))

/* The block types' decoders (ocl-quant.cl).  */
int block_elems (int type);
float block_value (global const uchar *b, int type, int e);

float
f16_to_f32 (ushort h)
{
  uint sign = ((uint) h & 0x8000u) << 16;
  uint e = ((uint) h >> 10) & 0x1fu, m = (uint) h & 0x3ffu;

  if (e == 0x1fu)
    return as_float (sign | 0x7f800000u | (m << 13));
  if (e == 0)
    {
      float v = (float) m * 0x1p-24f;
      return sign ? -v : v;
    }
  return as_float (sign | ((e + 112u) << 23) | (m << 13));
}

ushort
f32_to_f16 (float f)
{
  uint x = as_uint (f);
  uint sign = (x >> 16) & 0x8000u;
  uint e8 = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
  int e = (int) e8 - 127 + 15;

  if (e8 == 0xffu)
    return (ushort) (sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  if (e >= 0x1f)
    return (ushort) (sign | 0x7c00u);
  if (e <= 0)
    {
      if (e < -10)
        return (ushort) sign;
      uint m = mant | 0x800000u;
      int shift = 14 - e;
      uint hv = m >> shift;
      uint rem = m & ((1u << shift) - 1u);
      uint mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (hv & 1u)))
        hv++;
      return (ushort) (sign | hv);
    }
  uint h = ((uint) e << 10) | (mant >> 13);
  uint rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    h++;
  return (ushort) (sign | h);
}

ushort
f32_to_bf16 (float f)
{
  uint x = as_uint (f);

  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (ushort) ((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (ushort) (x >> 16);
}

/* i32 <- f32 as the CPU backend does: toward zero, NaN to 0, saturated.  */
int
f32_to_i32 (float v)
{
  return convert_int_sat_rtz (v);
}

/* Element I0 of a row of TYPE starting at ROW, elements NB0 bytes apart
   (for block types: blocks NB0 bytes apart).  */
float
load_elem (global const char *row, long i0, long nb0, int type)
{
  if (type == TSR_TYPE_F32)
    return *(global const float *) (row + i0 * nb0);
  if (type == TSR_TYPE_F16)
    return vload_half (0, (global const half *) (row + i0 * nb0));
  if (type == TSR_TYPE_BF16)
    return as_float ((uint) *(global const ushort *) (row + i0 * nb0) << 16);
  if (type == TSR_TYPE_I32)
    return (float) *(global const int *) (row + i0 * nb0);
  const int per = block_elems (type);
  return block_value ((global const uchar *) (row + (i0 / per) * nb0), type,
                      (int) (i0 % per));
}

/* Store V as TYPE (f32, f16, bf16 or i32) at P.  */
void
store_elem (global char *p, int type, float v)
{
  if (type == TSR_TYPE_F32)
    *(global float *) p = v;
  else if (type == TSR_TYPE_F16)
    *(global ushort *) p = f32_to_f16 (v);
  else if (type == TSR_TYPE_BF16)
    *(global ushort *) p = f32_to_bf16 (v);
  else if (type == TSR_TYPE_I32)
    *(global int *) p = f32_to_i32 (v);
}

/* Record the first out-of-range index V of node TAG (its graph
   position + 1): status[0] = TAG, status[1] = V, the layout of struct
   tsr_index_status.  */
void
report_index (volatile global int *status, int tag, int v)
{
  if (atomic_cmpxchg (status, 0, tag) == 0)
    status[1] = v;
}

/* Reductions over a work-group, for the kernels that give a row (or a
   tile) to a work-group rather than to a work item.  OCL_WG, a build
   option (ocl-device.c), is a power of two bounding those kernels'
   local size; they take any power-of-two local size up to it
   (tsr_opencl_device.local).  Every item of the group must call, with
   S a local array of OCL_WG floats; every item gets the result, and S
   is free again on return.  Where the device has subgroups
   (cl_khr_subgroups or cl_intel_subgroups: OCL_SUBGROUPS 1 or 2) each
   subgroup reduces in registers and the groups' results meet in S;
   elsewhere a tree in S, halving the active items at each step.  */
#define WG_REDUCE(name, op, sg_op)                                        \
  float                                                                   \
  name (float v, local float *s)                                          \
  {                                                                       \
    const int lid = get_local_id (0);                                     \
    WG_REDUCE_BODY (op, sg_op)                                            \
    barrier (CLK_LOCAL_MEM_FENCE);                                        \
    return v;                                                             \
  }

#if OCL_SUBGROUPS
#define WG_REDUCE_BODY(op, sg_op)                                         \
  v = sg_op (v);                                                          \
  if (get_sub_group_local_id () == 0)                                     \
    s[get_sub_group_id ()] = v;                                           \
  barrier (CLK_LOCAL_MEM_FENCE);                                          \
  v = s[0];                                                               \
  for (uint g_ = 1; g_ < get_num_sub_groups (); g_++)                     \
    v = op (v, s[g_]);
#else
#define WG_REDUCE_BODY(op, sg_op)                                         \
  s[lid] = v;                                                             \
  barrier (CLK_LOCAL_MEM_FENCE);                                          \
  for (int h_ = (int) get_local_size (0) / 2; h_ > 0; h_ /= 2)            \
    {                                                                     \
      if (lid < h_)                                                       \
        s[lid] = op (s[lid], s[lid + h_]);                                \
      barrier (CLK_LOCAL_MEM_FENCE);                                      \
    }                                                                     \
  v = s[0];
#endif

#define WG_ADD(x, y) ((x) + (y))
/* NaNs lose, as in the one-item-per-row loops (y > m ? y : m).  */
#define WG_MAX(x, y) fmax ((x), (y))

WG_REDUCE (wg_sum, WG_ADD, sub_group_reduce_add)
WG_REDUCE (wg_max, WG_MAX, sub_group_reduce_max)

/* A work-group's walk over N rows (or tiles): group G takes R = G,
   G + groups, ...  */
#define FOR_GROUPS(r, n)                                                  \
  for (long r = get_group_id (0); r < (n); r += get_num_groups (0))
