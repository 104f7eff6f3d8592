/* types-impl.h - what the element-type files of libtessera share: the
 * per-type row conversions that lib/types/types.c puts in its traits table,
 * and the scale searches the quantizers are built from.  Not installed.
 *
 * types-quant.c   q4_1, q5_0, q5_1 (blocks of 32)
 * types-kquant.c  q2_K, q3_K, q4_K, q5_K, q6_K, q8_K (super-blocks of 256)
 * types-iq.c      iq4_nl, iq4_xs, mxfp4 (table-valued 4-bit codes)
 * types-fit.c     the searches: affine, signed and table-valued levels  */
#ifndef TSR_TYPES_IMPL_H
#define TSR_TYPES_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <tessera/types.h>

/* Row conversions of N elements (N a multiple of the block size, which
   lib/types/types.c checked).  */
#define TSRI_DECLARE_ROW_CONVERSIONS(t)                                   \
  void tsri_##t##_to_float (const void *src, float *dst, int64_t n);      \
  void tsri_##t##_from_float (const float *src, void *dst, int64_t n)

TSRI_DECLARE_ROW_CONVERSIONS (q4_1);
TSRI_DECLARE_ROW_CONVERSIONS (q5_0);
TSRI_DECLARE_ROW_CONVERSIONS (q5_1);
TSRI_DECLARE_ROW_CONVERSIONS (q2_K);
TSRI_DECLARE_ROW_CONVERSIONS (q3_K);
TSRI_DECLARE_ROW_CONVERSIONS (q4_K);
TSRI_DECLARE_ROW_CONVERSIONS (q5_K);
TSRI_DECLARE_ROW_CONVERSIONS (q6_K);
TSRI_DECLARE_ROW_CONVERSIONS (q8_K);
TSRI_DECLARE_ROW_CONVERSIONS (iq4_nl);
TSRI_DECLARE_ROW_CONVERSIONS (iq4_xs);
TSRI_DECLARE_ROW_CONVERSIONS (mxfp4);

/* The value tables of the table-valued formats (ascending for iq4).  */
extern const int8_t tsri_kvalues_iq4nl[16];
extern const int8_t tsri_kvalues_mxfp4[16];    /* twice the E2M1 values */

/* types-fit.c.  Every search minimizes the plain squared error of the
   block and never reads past N elements; NaN inputs give some valid
   codes, never a crash.  */

/* X rounded to the nearest integer (ties to even), clamped to LO..HI;
   LO for a NaN.  */
int tsri_round_clamp (float x, int lo, int hi);

/* X ~ scale * Q + offset with Q[i] in 0..NMAX.  With NONPOSITIVE the
   offset is kept <= 0 (the k-quants store it as a subtracted minimum).
   Returns the scale (>= 0) and sets *OFFSET.  */
float tsri_fit_affine (const float *x, int n, int nmax, bool nonpositive,
                       uint8_t *q, float *offset);

/* X ~ scale * Q with Q[i] in -NMAX..NMAX-1.  Returns the scale, of
   either sign (the lone level -NMAX goes to the side that needs it).  */
float tsri_fit_signed (const float *x, int n, int nmax, int8_t *q);

/* X ~ scale * TABLE[Q] for a TABLE of 16 ascending values.  Returns
   the scale, of either sign.  */
float tsri_fit_table (const float *x, int n, const int8_t table[16],
                      uint8_t *q);

/* The index of the entry of the ascending TABLE nearest to X.  */
int tsri_table_index (const int8_t table[16], float x);

/* Squared error of X against SCALE * TABLE[Q], choosing each Q (written
   to Q when not NULL).  */
float tsri_table_error (const float *x, int n, const int8_t table[16],
                        float scale, uint8_t *q);

#endif /* TSR_TYPES_IMPL_H */
