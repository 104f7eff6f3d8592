/* vocab-unicode.c - the little Unicode the tokenizers need.
 *
 * Owns: UTF-8 decoding that never fails (a byte that starts no valid
 * sequence stands for itself), the general category of a code point and
 * the classes the pre-tokenizers use (letters, numbers, White_Space,
 * other), simple lowercase mapping, canonical decomposition (NFD), and
 * GPT-2's byte-level mapping.  The Unicode data are the tables of
 * vocab-ucd.c, generated from the Unicode Character Database, exact
 * for every code point.  */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "vocab-impl.h"

size_t
tsri_utf8_decode (const unsigned char *s, size_t n, uint32_t *cp)
{
  unsigned c = s[0];
  size_t len;
  uint32_t v, min;
  if (c < 0x80)
    {
      *cp = c;
      return 1;
    }
  if (c >= 0xc2 && c < 0xe0)
    len = 2, v = c & 0x1f, min = 0x80;
  else if (c >= 0xe0 && c < 0xf0)
    len = 3, v = c & 0x0f, min = 0x800;
  else if (c >= 0xf0 && c < 0xf5)
    len = 4, v = c & 0x07, min = 0x10000;
  else
    goto invalid;
  if (len > n)
    goto invalid;
  for (size_t i = 1; i < len; i++)
    {
      if ((s[i] & 0xc0) != 0x80)
        goto invalid;
      v = v << 6 | (s[i] & 0x3f);
    }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    goto invalid;
  *cp = v;
  return len;
invalid:
  *cp = TSRI_CP_INVALID;
  return 1;
}

size_t
tsri_utf8_encode (uint32_t cp, char out[4])
{
  if (cp < 0x80)
    {
      out[0] = (char) cp;
      return 1;
    }
  if (cp < 0x800)
    {
      out[0] = (char) (0xc0 | cp >> 6);
      out[1] = (char) (0x80 | (cp & 0x3f));
      return 2;
    }
  if (cp < 0x10000)
    {
      out[0] = (char) (0xe0 | cp >> 12);
      out[1] = (char) (0x80 | (cp >> 6 & 0x3f));
      out[2] = (char) (0x80 | (cp & 0x3f));
      return 3;
    }
  out[0] = (char) (0xf0 | cp >> 18);
  out[1] = (char) (0x80 | (cp >> 12 & 0x3f));
  out[2] = (char) (0x80 | (cp >> 6 & 0x3f));
  out[3] = (char) (0x80 | (cp & 0x3f));
  return 4;
}

/* Classes.  */

/* The tables are vocab-ucd.c, generated from the Unicode Character
   Database by model/gen-ucd.awk.  */

static int
run_cmp (const void *key, const void *elem)
{
  uint32_t cp = *(const uint32_t *) key;
  const struct tsri_ucd_run *r = elem;
  return cp < r->lo ? -1 : cp > r->hi ? 1 : 0;
}

static const struct tsri_ucd_run *
run_find (const struct tsri_ucd_run *table, size_t n, uint32_t cp)
{
  return bsearch (&cp, table, n, sizeof *table, run_cmp);
}

/* The entry of the pairs table T (N rows of W words, the code point
   first, increasing) for CP, or NULL.  */
static int
pair_cmp (const void *key, const void *elem)
{
  uint32_t cp = *(const uint32_t *) key, x = *(const uint32_t *) elem;
  return cp < x ? -1 : cp > x ? 1 : 0;
}

enum tsri_uc
tsri_cp_category (uint32_t cp)
{
  const struct tsri_ucd_run *r
    = run_find (tsri_ucd_categories, tsri_ucd_n_categories, cp);
  return r ? (enum tsri_uc) r->cat : TSRI_UC_Cn;
}

bool
tsri_cp_is_space (uint32_t cp)
{
  return run_find (tsri_ucd_white_space, tsri_ucd_n_white_space, cp)
         != NULL;
}

enum tsri_cp_class
tsri_cp_class (uint32_t cp)
{
  if (cp < 0x80)
    {
      if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z')
        return TSRI_CP_LETTER;
      if (cp >= '0' && cp <= '9')
        return TSRI_CP_NUMBER;
      if (cp == ' ' || (cp >= '\t' && cp <= '\r'))
        return TSRI_CP_SPACE;
      return TSRI_CP_OTHER;
    }
  if (tsri_cp_is_space (cp))
    return TSRI_CP_SPACE;
  enum tsri_uc c = tsri_cp_category (cp);
  if (TSRI_UC_IS_LETTER (c))
    return TSRI_CP_LETTER;
  if (TSRI_UC_IS_NUMBER (c))
    return TSRI_CP_NUMBER;
  return TSRI_CP_OTHER;
}

bool
tsri_cp_is_punct (uint32_t cp)
{
  return TSRI_UC_IS_PUNCT (tsri_cp_category (cp));
}

uint32_t
tsri_cp_lower (uint32_t cp)
{
  const uint32_t (*e)[2] = bsearch (&cp, tsri_ucd_lower, tsri_ucd_n_lower,
                                    sizeof *tsri_ucd_lower, pair_cmp);
  return e ? (*e)[1] : cp;
}

static int
ccc_of (uint32_t cp)
{
  const uint32_t (*e)[2] = bsearch (&cp, tsri_ucd_ccc, tsri_ucd_n_ccc,
                                    sizeof *tsri_ucd_ccc, pair_cmp);
  return e ? (int) (*e)[1] : 0;
}

/* Hangul syllables decompose by arithmetic (Unicode, section 3.12).  */
#define HANGUL_S 0xac00u
#define HANGUL_L 0x1100u
#define HANGUL_V 0x1161u
#define HANGUL_T 0x11a7u
#define HANGUL_N_T 28u
#define HANGUL_N_VT (21u * HANGUL_N_T)
#define HANGUL_COUNT (19u * HANGUL_N_VT)

/* The full canonical decomposition of CP appended at OUT: how many
   code points (at most TSRI_NFD_MAX).  */
static size_t
decompose (uint32_t cp, uint32_t *out)
{
  if (cp >= HANGUL_S && cp < HANGUL_S + HANGUL_COUNT)
    {
      uint32_t s = cp - HANGUL_S, t = s % HANGUL_N_T;
      out[0] = HANGUL_L + s / HANGUL_N_VT;
      out[1] = HANGUL_V + s % HANGUL_N_VT / HANGUL_N_T;
      if (!t)
        return 2;
      out[2] = HANGUL_T + t;
      return 3;
    }
  const uint32_t (*e)[3] = bsearch (&cp, tsri_ucd_decomp, tsri_ucd_n_decomp,
                                    sizeof *tsri_ucd_decomp, pair_cmp);
  if (!e)
    {
      out[0] = cp;
      return 1;
    }
  size_t n = decompose ((*e)[1], out);
  if ((*e)[2])
    n += decompose ((*e)[2], out + n);
  return n;
}

size_t
tsri_nfd (const uint32_t *in, size_t n, uint32_t *out)
{
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += decompose (in[i], out + k);
  /* Canonical ordering: within each run of marks (class > 0), a stable
     sort by class.  */
  for (size_t i = 1; i < k; i++)
    {
      uint32_t c = out[i];
      int cc = ccc_of (c);
      if (!cc)
        continue;
      size_t j = i;
      while (j > 0 && ccc_of (out[j - 1]) > cc)
        {
          out[j] = out[j - 1];
          j--;
        }
      out[j] = c;
    }
  return k;
}

/* GPT-2's byte-level mapping: bytes that are printable characters
   (! to ~, ¡ to ¬, ® to ÿ) stand for themselves; the 68 others, in
   order, for U+0100 to U+0143.  */

static bool
byte_printable (unsigned b)
{
  return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac)
         || (b >= 0xae && b <= 0xff);
}

uint32_t
tsri_byte_to_cp (unsigned char b)
{
  if (byte_printable (b))
    return b;
  if (b <= 0x20)
    return 0x100 + b;                   /* 33 bytes: U+0100 to U+0120 */
  if (b <= 0xa0)
    return 0x121 + (b - 0x7f);          /* 34 bytes: U+0121 to U+0142 */
  return 0x143;                         /* the soft hyphen */
}

int
tsri_cp_to_byte (uint32_t cp)
{
  if (cp < 0x100)
    return byte_printable (cp) ? (int) cp : -1;
  if (cp <= 0x120)
    return (int) (cp - 0x100);
  if (cp <= 0x142)
    return (int) (cp - 0x121 + 0x7f);
  return cp == 0x143 ? 0xad : -1;
}
