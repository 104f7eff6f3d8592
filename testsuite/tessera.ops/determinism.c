/* Reproducible matrix products on the CPU, as the manual promises them
   ("Reproducible results"), bit for bit, at the ISA level the CPU
   backend runs (cpu.exp runs this program at every level):
   - every weight type: the same results with 1, 2, 3 and 16 threads,
     at n = 1, 7, 80 and 130 columns (the integer dots, the GEMM, the
     32-row tiles);
   - weights the CPU_REPACK buffer type repacks (q4_0; q8_0 with VNNI;
     q4_K and q6_K with AVX-512BW): the 512 columns computed at once
     equal them computed in batches of 1, 7 and 64 columns (q4_K, q5_K,
     q6_K and iq4_xs from 64 columns through the plain super-blocks'
     tiles, converted: below, their own kernels; at v4-amx q4_K, q5_K
     and iq4_xs from 32 columns on AMX tiles);
   - plain q4_0, q4_1, q5_0, q5_1 (and with VNNI q8_0, iq4_nl, mxfp4)
     at levels with AVX2 or AVX-512, which are packed for the repacked
     kernels as they are
     used from 4 columns on: batches of 4, 7 (the last one 8) and 64
     columns agree with 512 at once, and plain q4_0 and q8_0 equal the
     repacked ones there;
   - those blocks of 32, repacked and plain, from 128 columns in the
     32-row tiles (AVX-512 with VNNI), in rows long enough for several
     runs of blocks: 130 columns at once equal batches of 7;
   - plain q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs at every level:
     batches of 1, 7 and 17 (AVX-512) or 65 (elsewhere) columns agree
     with 512 at once.  With AVX-512BW they are packed by tile from 16
     columns, with AVX2 from 64, and the plain dots below sum as the
     tiles and the repacked kernels do (plain q4_K, q5_K, q6_K and
     iq4_xs equal the repacked ones; at v4-amx, q3_K, q4_K, q5_K and
     iq4_xs go through AMX tiles from 32 columns, so the batches cross
     three kernels); levels without the packing take the plain dots
     at every column count;
   - below the packing (15 columns), plain super-block weights of long
     rows (20 super-blocks, which the plain dots take in chunks): each
     column's results equal the column's alone.
   Where the level has no CPU_REPACK, or no packing, those parts are
   UNSUPPORTED, named.  The inputs are random; the comparisons are of
   the bytes of the results.  */
#include "ops-test.h"

#define K 512     /* two super-blocks of the k-quants */
#define KGEMM 320 /* columns from which plain super-blocks that the level
                     does not pack go to the f32 GEMM */
#define M 24      /* three groups of 8 rows */
#define N 512

static float x_all[N * K];

/* W (TYPE, KW x M, in a buffer of BUFT, or the backend's when BUFT is
   NULL) times the NJ columns of KW floats at X, on BE: into OUT (NJ x
   M, column-major like the result).  */
static int
product_k (tsr_backend *be, tsr_buffer_type *buft, tsr_type type,
           const void *w, int64_t kw, const float *x, int64_t nj, float *out)
{
  tsr_context *ctx = tsr_context_new (true);
  tsr_buffer *wbuf = NULL;
  tsr_tensor *a = tsr_new_tensor_2d (ctx, type, kw, M);
  tsr_tensor *b = tsr_new_tensor_2d (ctx, TSR_TYPE_F32, kw, nj);
  tsr_tensor *r = a && b ? tsr_mul_mat (ctx, a, b) : NULL;
  tsr_graph *g = NULL;
  tsr_gallocr *ga = NULL;
  int st = r ? TSR_OK : TSR_ERR_INVALID_ARG;
  if (st == TSR_OK && buft)
    {
      wbuf = tsr_buffer_type_alloc (buft,
                                    tsr_buffer_type_alloc_size (buft, a));
      st = wbuf ? tsr_buffer_place_tensor (wbuf, a, 0) : TSR_ERR_NO_MEMORY;
    }
  if (st == TSR_OK)
    st = ot_allocate (be, ctx, r, &g, &ga);
  if (st == TSR_OK)
    st = tsr_tensor_set (a, w, 0, tsr_nbytes (a));
  if (st == TSR_OK)
    st = tsr_tensor_set (b, x, 0, tsr_nbytes (b));
  if (st == TSR_OK)
    st = tsr_backend_graph_compute (be, g);
  if (st == TSR_OK)
    st = tsr_tensor_get (r, out, 0, tsr_nbytes (r));
  tsr_gallocr_free (ga);
  if (wbuf)
    tsr_buffer_free (wbuf);
  tsr_context_free (ctx);
  return st;
}

/* Columns [J0, J0 + NJ) of x_all (K x M weights).  */
static int
product (tsr_backend *be, tsr_buffer_type *buft, tsr_type type,
         const void *w, int64_t j0, int64_t nj, float *out)
{
  return product_k (be, buft, type, w, K, x_all + j0 * K, nj, out);
}

/* The 512 columns in batches of BSIZE into OUT, the last one shorter,
   or, where it would be shorter than LEAST, longer.  */
static int
in_batches (tsr_backend *be, tsr_buffer_type *buft, tsr_type type,
            const void *w, int64_t bsize, int64_t least, float *out)
{
  int st = TSR_OK;
  for (int64_t j0 = 0, nj; st == TSR_OK && j0 < N; j0 += nj)
    {
      nj = j0 + bsize < N ? bsize : N - j0;
      if (N - j0 - nj < least)
        nj = N - j0;
      st = product (be, buft, type, w, j0, nj, out + j0 * M);
    }
  return st;
}

/* The elements of A and B (N x M) whose bytes differ.  */
static int64_t
differing (const float *a, const float *b, int64_t n)
{
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    bad += memcmp (&a[i], &b[i], sizeof (float)) != 0;
  return bad;
}

/* W (TYPE in BUFT, or plain when NULL): the 512 columns in batches of
   WHOLE (N: at once) into WANT, then in batches of each of BS[0..2]
   (none under LEAST), compared; a check line each.  Status of the
   computations.  */
static int
check_batches (tsr_backend *be, tsr_buffer_type *buft, tsr_type type,
               const void *w, const int64_t *bs, int64_t least,
               int64_t whole, float *want)
{
  float *got = malloc ((size_t) N * M * sizeof *got);
  int st = in_batches (be, buft, type, w, whole, least, want);
  char ref[64];
  if (whole == N)
    snprintf (ref, sizeof ref, "the %d columns at once", N);
  else
    snprintf (ref, sizeof ref, "batches of %ld", (long) whole);
  for (int i = 0; st == TSR_OK && i < 3; i++)
    {
      st = in_batches (be, buft, type, w, bs[i], least, got);
      int64_t bad = st == TSR_OK ? differing (want, got, N * M) : -1;
      char none[32] = "";
      if (least > 1)
        snprintf (none, sizeof none, " (none under %ld)", (long) least);
      CHECK (bad == 0, "%s %s: batches of %ld%s equal %s (%ld elements "
             "differ)", buft ? "repacked" : "plain", tsr_type_name (type),
             (long) bs[i], none, ref, (long) bad);
    }
  if (st != TSR_OK)
    CHECK (0, "%s %s: computes: %s", buft ? "repacked" : "plain",
           tsr_type_name (type), tsr_last_error ());
  free (got);
  return st;
}

/* Where REPACK repacks TYPE: W in it gives WANT (the plain weights'
   512 columns at once), bit for bit; a check line.  REPACKED: room for
   the result.  */
static void
check_equals_repacked (tsr_backend *be, tsr_buffer_type *repack,
                       tsr_type type, const void *w, const float *want,
                       float *repacked)
{
  const char *name = tsr_type_name (type);
  if (!repack || !tsr_buffer_type_repacks (repack, type, K, M))
    return;
  int st = in_batches (be, repack, type, w, N, 1, repacked);
  int64_t bad = st == TSR_OK ? differing (want, repacked, N * M) : -1;
  CHECK (bad == 0, "plain %s equals repacked %s, bit for bit (%ld "
         "elements differ%s%s)", name, name, (long) bad,
         st == TSR_OK ? "" : "; ", st == TSR_OK ? "" : tsr_last_error ());
}

/* M random rows of KW elements of TYPE.  */
static unsigned char *
random_weights_k (tsr_type type, int64_t kw)
{
  float *f = malloc ((size_t) (kw * M) * sizeof *f);
  unsigned char *q = malloc (tsr_row_size (type, kw) * M);
  for (int64_t i = 0; i < kw * M; i++)
    f[i] = tsr_test_uniform (-1.0f, 1.0f);
  for (int64_t r = 0; r < M; r++)
    tsr_quantize_row (type, f + r * kw, q + r * tsr_row_size (type, kw), kw);
  free (f);
  return q;
}

static unsigned char *
random_weights (tsr_type type)
{
  return random_weights_k (type, K);
}

/* mxfp4 weights W (M rows of K) with E8M0 scale bytes at the edges of
   their conversion (0 and 1: subnormal halves; 2: the least normal)
   and around the middle, one a row (a row of tiny scales beside large
   ones would round them away), so that a repacked kernel that
   converts them itself meets every branch.  */
static void
edge_scales (unsigned char *w)
{
  static const unsigned char e[] = { 0, 1, 2, 3, 100, 127, 128, 140 };
  for (int64_t b = 0; b < K / 32 * M; b++)
    w[17 * b] = e[b / (K / 32) % 8];
}

/* Plain super-block weights below the packing (15 columns at every
   level) of rows long enough that the plain dots go through them in
   chunks (KLONG: 20 super-blocks, three chunks of up to 8): each
   column's results are those of the column alone (n = 1, one pass over
   each row), bit for bit.  */
#define KLONG (20 * 256)
#define NLONG 15
_Static_assert (NLONG * KLONG <= N * K, "x_all holds the long columns");
static void
check_long_rows (tsr_backend *be, tsr_type type)
{
  unsigned char *w = random_weights_k (type, KLONG);
  float *all = malloc ((size_t) (NLONG * M) * sizeof *all);
  float *one = malloc ((size_t) (NLONG * M) * sizeof *one);
  int st = product_k (be, NULL, type, w, KLONG, x_all, NLONG, all);
  for (int64_t j = 0; st == TSR_OK && j < NLONG; j++)
    st = product_k (be, NULL, type, w, KLONG, x_all + j * KLONG, 1,
                    one + j * M);
  int64_t bad = st == TSR_OK ? differing (all, one, NLONG * M) : -1;
  CHECK (bad == 0, "plain %s, rows of %d: %d columns at once equal each "
         "alone (%ld elements differ%s%s)", tsr_type_name (type), KLONG,
         NLONG, (long) bad, st == TSR_OK ? "" : "; ",
         st == TSR_OK ? "" : tsr_last_error ());
  free (one);
  free (all);
  free (w);
}

/* Blocks of 32 in rows long enough that the 32-row tiles (from 128
   columns, with AVX-512 and VNNI) convert and dot them in several runs
   (KRUNS: two runs of 128 blocks and one of 5), M = 24 rows (a tile
   short of 8): NRUNS columns at once equal them in batches of 7 (the
   last one 4: the 8-row kernels), bit for bit, for W in BUFT (repacked)
   or plain.  */
#define KRUNS (32 * (2 * 128 + 5))
#define NRUNS 130
static void
check_runs (tsr_backend *be, tsr_buffer_type *buft, tsr_type type)
{
  unsigned char *w = random_weights_k (type, KRUNS);
  float *x = malloc ((size_t) NRUNS * KRUNS * sizeof *x);
  float *all = malloc ((size_t) (NRUNS * M) * sizeof *all);
  float *parts = malloc ((size_t) (NRUNS * M) * sizeof *parts);
  for (int64_t i = 0; i < (int64_t) NRUNS * KRUNS; i++)
    x[i] = tsr_test_uniform (-1.0f, 1.0f);
  int st = product_k (be, buft, type, w, KRUNS, x, NRUNS, all);
  for (int64_t j0 = 0, nj; st == TSR_OK && j0 < NRUNS; j0 += nj)
    {
      nj = NRUNS - j0 < 7 ? NRUNS - j0 : 7;
      st = product_k (be, buft, type, w, KRUNS, x + j0 * KRUNS, nj,
                      parts + j0 * M);
    }
  int64_t bad = st == TSR_OK ? differing (all, parts, NRUNS * M) : -1;
  CHECK (bad == 0, "%s %s, rows of %d: %d columns at once equal them in "
         "batches of 7 (%ld elements differ%s%s)",
         buft ? "repacked" : "plain", tsr_type_name (type), KRUNS, NRUNS,
         (long) bad, st == TSR_OK ? "" : "; ",
         st == TSR_OK ? "" : tsr_last_error ());
  free (parts);
  free (all);
  free (x);
  free (w);
}

/* The ISA level the CPU backend runs at, from its description.  */
static void
cpu_level (tsr_backend *be, char *level, size_t n)
{
  const char *d = tsr_device_description (tsr_backend_device (be));
  const char *p = d ? strstr (d, "ISA level ") : NULL;
  snprintf (level, n, "%s", "");
  if (p)
    sscanf (p + strlen ("ISA level "), "%31[^ (,;]", level);
}

int
main (void)
{
  static const tsr_type types[] = {
    TSR_TYPE_F32, TSR_TYPE_F16, TSR_TYPE_BF16, TSR_TYPE_Q8_0, TSR_TYPE_Q4_0,
    TSR_TYPE_Q4_1, TSR_TYPE_Q5_0, TSR_TYPE_Q5_1, TSR_TYPE_Q2_K,
    TSR_TYPE_Q3_K, TSR_TYPE_Q4_K, TSR_TYPE_Q5_K, TSR_TYPE_Q6_K,
    TSR_TYPE_IQ4_NL, TSR_TYPE_IQ4_XS, TSR_TYPE_MXFP4
  };
  const int n_types = (int) (sizeof types / sizeof *types);
  tsr_backend *be = ot_backend ();
  if (!be)
    return TSR_TEST_EXIT ();
  tsr_test_seed (35);
  for (int64_t i = 0; i < N * K; i++)
    x_all[i] = tsr_test_uniform (-1.0f, 1.0f);
  float *want = malloc ((size_t) N * M * sizeof *want);
  float *got = malloc ((size_t) N * M * sizeof *got);
  float *repacked = malloc ((size_t) N * M * sizeof *repacked);
  char level[32];
  cpu_level (be, level, sizeof level);

  /* Threads.  */
  static const int threads[] = { 2, 3, 16 };
  static const int64_t ns[] = { 1, 7, 80, 130 };
  for (int t = 0; t < n_types; t++)
    {
      unsigned char *w = random_weights (types[t]);
      for (int i = 0; i < 4; i++)
        {
          int64_t bad = 0;
          int st = tsr_backend_set_n_threads (be, 1);
          if (st == TSR_OK)
            st = product (be, NULL, types[t], w, 0, ns[i], want);
          for (int h = 0; st == TSR_OK && h < 3; h++)
            {
              st = tsr_backend_set_n_threads (be, threads[h]);
              if (st == TSR_OK)
                st = product (be, NULL, types[t], w, 0, ns[i], got);
              if (st == TSR_OK)
                bad += differing (want, got, ns[i] * M);
            }
          CHECK (st == TSR_OK && bad == 0,
                 "%s, n = %ld: 1, 2, 3 and 16 threads bit-identical (%s; "
                 "%ld elements differ)", tsr_type_name (types[t]),
                 (long) ns[i], st == TSR_OK ? "computed" : tsr_last_error (),
                 (long) bad);
        }
      free (w);
    }
  tsr_backend_set_n_threads (be, 2);

  /* Repacked weights: any batches.  */
  tsr_buffer_type *repack = NULL;
  if (!tsr_device_extra_buffer_types (tsr_backend_device (be), &repack, 1))
    repack = NULL;
  static const tsr_type packs[] = { TSR_TYPE_Q4_0, TSR_TYPE_Q4_1,
                                    TSR_TYPE_Q5_0, TSR_TYPE_Q5_1,
                                    TSR_TYPE_Q8_0, TSR_TYPE_IQ4_NL,
                                    TSR_TYPE_MXFP4, TSR_TYPE_Q4_K,
                                    TSR_TYPE_Q5_K, TSR_TYPE_Q6_K,
                                    TSR_TYPE_IQ4_XS };
  for (int t = 0; t < 11; t++)
    {
      const char *name = tsr_type_name (packs[t]);
      if (!repack || !tsr_buffer_type_repacks (repack, packs[t], K, M))
        {
          tsr_test_unsupported ("%s: CPU_REPACK does not repack it at level "
                                "%s", name, level);
          continue;
        }
      unsigned char *w = random_weights (packs[t]);
      static const int64_t bs[] = { 1, 7, 64 };
      check_batches (be, repack, packs[t], w, bs, 1, N, want);
      free (w);
      if (t < 7 && tsr_buffer_type_repacks (repack, packs[t], KRUNS, M))
        check_runs (be, repack, packs[t]);
    }

  /* Plain weights packed as they are used.  */
  bool avx512 = strcmp (level, "v4") == 0 || strcmp (level, "v4-vnni") == 0
                || strcmp (level, "v4-amx") == 0;
  bool avx2 = strcmp (level, "v3") == 0 || strcmp (level, "v3-vnni") == 0
              || avx512;
  bool vnni = strcmp (level, "v3-vnni") == 0
              || strcmp (level, "v4-vnni") == 0 || strcmp (level, "v4-amx") == 0;
  /* Values up to 31 first (pmaddubsw), then those that need VNNI.  */
  static const tsr_type plains[] = { TSR_TYPE_Q4_0, TSR_TYPE_Q4_1,
                                     TSR_TYPE_Q5_0, TSR_TYPE_Q5_1,
                                     TSR_TYPE_Q8_0, TSR_TYPE_IQ4_NL,
                                     TSR_TYPE_MXFP4 };
  for (int t = 0; t < 7; t++)
    {
      const char *name = tsr_type_name (plains[t]);
      if (!avx2 || (t >= 4 && !vnni))
        {
          tsr_test_unsupported ("plain %s: not packed for the repacked "
                                "kernels at level %s", name, level);
          continue;
        }
      unsigned char *w = random_weights (plains[t]);
      if (plains[t] == TSR_TYPE_MXFP4)
        edge_scales (w);
      static const int64_t bs[] = { 4, 7, 64 };
      int st = check_batches (be, NULL, plains[t], w, bs, 4, N, want);
      if (st == TSR_OK)
        check_equals_repacked (be, repack, plains[t], w, want, repacked);
      free (w);
      check_runs (be, NULL, plains[t]);
    }

  /* Plain super-block types at every level: packed by tile from 16
     columns (AVX-512) or 64 (AVX2), the plain dots below, which sum as
     the tiles do; batches of 1, 7 (the last one 1) and one more than
     the packing's least (the last ones of 2 or 57 columns: plain
     dots).  Levels without the packing (and iq4_xs without VNNI) take
     the plain dots up to KGEMM columns, the f32 GEMM from there (the
     manual's stated limit): there the batches are compared with
     batches of KGEMM / 2.  */
  int64_t kleast = avx512 ? 16 : 64;
  static const tsr_type kplains[] = { TSR_TYPE_Q2_K, TSR_TYPE_Q3_K,
                                      TSR_TYPE_Q4_K, TSR_TYPE_Q5_K,
                                      TSR_TYPE_Q6_K, TSR_TYPE_IQ4_XS };
  for (int t = 0; t < 6; t++)
    {
      unsigned char *w = random_weights (kplains[t]);
      const int64_t bs[] = { 1, 7, kleast + 1 };
      bool packed = avx2 && (kplains[t] != TSR_TYPE_IQ4_XS || vnni);
      int st = check_batches (be, NULL, kplains[t], w, bs, 1,
                              packed ? N : KGEMM / 2, want);
      if (st == TSR_OK)
        check_equals_repacked (be, repack, kplains[t], w, want, repacked);
      free (w);
    }

  for (int t = 0; t < 6; t++)
    check_long_rows (be, kplains[t]);

  free (want);
  free (got);
  free (repacked);
  tsr_backend_free (be);
  return TSR_TEST_EXIT ();
}
