/* vocab-tokenize.c - text to token ids.
 *
 * Owns: finding special token texts in the text, SentencePiece
 * normalization, and the merge loop both models share: the symbols of
 * a fragment in a linked list, candidate pairs in a binary heap (the
 * highest score, or the lowest merge rank, first; then the leftmost),
 * a pair made stale by an earlier merge skipped when it comes out.
 * Work memory grows with the longest fragment and is freed before
 * returning.  */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vocab-impl.h"

struct sym
{
  int32_t start, len;           /* bytes of the fragment's text */
  int32_t prev, next;           /* neighbours, -1 at the ends */
  int32_t id;                   /* its token, -1 for none */
};

/* Symbols LEFT and RIGHT, of LLEN and RLEN bytes when the pair was
   found, would merge into token ID.  */
struct pair
{
  int32_t left, right, llen, rlen, id, rank;
  float score;
};

struct work
{
  const tsr_vocab *v;
  const char *text;             /* the fragment being merged */
  struct sym *sym;
  size_t sym_cap;
  struct pair *heap;
  size_t n_heap, heap_cap;
  char *buf;                    /* normalized or byte-mapped text */
  size_t buf_cap;
  struct tsri_pretok pre;
  int32_t *out;                 /* the caller's tokens */
  int64_t max, n;
};

static void
emit (struct work *w, int32_t id)
{
  if (w->n < w->max)
    w->out[w->n] = id;
  w->n++;
}

static int
oom (void)
{
  return tsr_set_error (TSR_ERR_NO_MEMORY, "vocab: tokenize: out of memory");
}

/* Room for N_SYM symbols and N_BUF bytes of text.  */
static int
reserve (struct work *w, size_t n_sym, size_t n_buf)
{
  if (n_sym > w->sym_cap)
    {
      free (w->sym);
      if (!(w->sym = malloc (n_sym * sizeof *w->sym)))
        return w->sym_cap = 0, oom ();
      w->sym_cap = n_sym;
    }
  if (n_buf > w->buf_cap)
    {
      free (w->buf);
      if (!(w->buf = malloc (n_buf)))
        return w->buf_cap = 0, oom ();
      w->buf_cap = n_buf;
    }
  return TSR_OK;
}

/* The heap.  */

static bool
before (const tsr_vocab *v, const struct pair *a, const struct pair *b)
{
  if (v->model == TSRI_VOCAB_SPM && a->score != b->score)
    return a->score > b->score;
  if (v->model == TSRI_VOCAB_BPE && a->rank != b->rank)
    return a->rank < b->rank;
  return a->left < b->left;
}

static int
heap_push (struct work *w, const struct pair *p)
{
  if (w->n_heap == w->heap_cap)
    {
      size_t cap = w->heap_cap ? 2 * w->heap_cap : 64;
      struct pair *h = realloc (w->heap, cap * sizeof *h);
      if (!h)
        return oom ();
      w->heap = h;
      w->heap_cap = cap;
    }
  size_t i = w->n_heap++;
  for (; i && before (w->v, p, &w->heap[(i - 1) / 2]); i = (i - 1) / 2)
    w->heap[i] = w->heap[(i - 1) / 2];
  w->heap[i] = *p;
  return TSR_OK;
}

static void
heap_pop (struct work *w, struct pair *top)
{
  *top = w->heap[0];
  struct pair last = w->heap[--w->n_heap];
  size_t i = 0, n = w->n_heap;
  for (;;)
    {
      size_t c = 2 * i + 1;
      if (c >= n)
        break;
      if (c + 1 < n && before (w->v, &w->heap[c + 1], &w->heap[c]))
        c++;
      if (!before (w->v, &w->heap[c], &last))
        break;
      w->heap[i] = w->heap[c];
      i = c;
    }
  if (n)
    w->heap[i] = last;
}

/* Merging.  */

/* Queue symbols L and R if they make a token.  */
static int
try_pair (struct work *w, int32_t l, int32_t r)
{
  const tsr_vocab *v = w->v;
  if (l < 0 || r < 0)
    return TSR_OK;
  const struct sym *a = &w->sym[l], *b = &w->sym[r];
  struct pair p = { l, r, a->len, b->len, -1, 0, 0.0f };
  if (v->model == TSRI_VOCAB_SPM)
    {
      p.id = tsri_vocab_find (v, w->text + a->start,
                              (size_t) a->len + (size_t) b->len);
      if (p.id < 0 || !tsri_vocab_mergeable (v, p.id))
        return TSR_OK;
      p.score = v->tokens[p.id].score;
    }
  else
    {
      const struct tsri_vocab_merge *m
        = a->id < 0 || b->id < 0 ? NULL : tsri_vocab_merge (v, a->id, b->id);
      if (!m)
        return TSR_OK;
      p.id = m->result;
      p.rank = m->rank;
    }
  return heap_push (w, &p);
}

/* Merge the N symbols of W until no pair makes a token.  */
static int
merge (struct work *w, int32_t n)
{
  int st = TSR_OK;
  w->n_heap = 0;
  for (int32_t i = 1; i < n && st == TSR_OK; i++)
    st = try_pair (w, i - 1, i);
  while (w->n_heap && st == TSR_OK)
    {
      struct pair p;
      heap_pop (w, &p);
      struct sym *a = &w->sym[p.left], *b = &w->sym[p.right];
      if (a->len != p.llen || b->len != p.rlen || a->next != p.right)
        continue;               /* stale: one side merged since */
      a->len += b->len;
      a->id = p.id;
      b->len = 0;
      a->next = b->next;
      if (b->next >= 0)
        w->sym[b->next].prev = p.left;
      st = try_pair (w, a->prev, p.left);
      if (st == TSR_OK)
        st = try_pair (w, p.left, a->next);
    }
  return st;
}

/* Bytes that are no token: their byte tokens if all exist, else the
   unknown token.  */
static int
fallback (struct work *w, const char *s, int32_t len)
{
  const tsr_vocab *v = w->v;
  bool bytes = true;
  for (int32_t i = 0; i < len; i++)
    bytes = bytes && v->byte_token[(unsigned char) s[i]] >= 0;
  for (int32_t i = 0; bytes && i < len; i++)
    emit (w, v->byte_token[(unsigned char) s[i]]);
  if (!bytes && v->unk >= 0)
    emit (w, v->unk);
  if (!bytes && v->unk < 0)
    return tsr_set_error (TSR_ERR_NOT_FOUND, "vocab: tokenize: no token "
                          "for byte 0x%02X (the vocabulary has neither "
                          "byte tokens for it nor an unknown token)",
                          (unsigned char) s[0]);
  return TSR_OK;
}

/* Emit the symbols left after merging, from the first.  */
static int
emit_symbols (struct work *w, int32_t n)
{
  int st = TSR_OK;
  for (int32_t i = n ? 0 : -1; i >= 0 && st == TSR_OK; i = w->sym[i].next)
    {
      const struct sym *s = &w->sym[i];
      if (s->id >= 0)
        emit (w, s->id);
      else
        st = fallback (w, w->text + s->start, s->len);
    }
  return st;
}

static void
link_symbols (struct work *w, int32_t n)
{
  for (int32_t i = 0; i < n; i++)
    {
      w->sym[i].prev = i - 1;
      w->sym[i].next = i + 1 < n ? i + 1 : -1;
    }
}

/* SentencePiece.  */

/* N bytes of text: a leading U+2581 when the vocabulary adds a space
   prefix, spaces replaced by U+2581, one symbol per character.  */
static int
spm_fragment (struct work *w, const char *s, size_t n)
{
  static const char space[] = "\xe2\x96\x81";
  const tsr_vocab *v = w->v;
  int st = reserve (w, n + 1, 3 * n + 3);
  if (st != TSR_OK)
    return st;
  size_t k = 0;
  if (v->add_space_prefix)
    memcpy (w->buf, space, 3), k = 3;
  for (size_t i = 0; i < n; i++)
    if (s[i] == ' ')
      memcpy (w->buf + k, space, 3), k += 3;
    else
      w->buf[k++] = s[i];
  w->text = w->buf;
  int32_t m = 0;
  for (size_t i = 0, len; i < k; i += len, m++)
    {
      uint32_t cp;
      len = tsri_utf8_decode ((const unsigned char *) w->buf + i, k - i, &cp);
      int32_t id = tsri_vocab_find (v, w->buf + i, len);
      w->sym[m].start = (int32_t) i;
      w->sym[m].len = (int32_t) len;
      w->sym[m].id = id >= 0 && tsri_vocab_mergeable (v, id) ? id : -1;
    }
  link_symbols (w, m);
  st = merge (w, m);
  return st == TSR_OK ? emit_symbols (w, m) : st;
}

/* Byte-level BPE.  */

/* The token whose text is the byte-mapped bytes [A, B) of the
   fragment, or -1.  */
static int32_t
whole_piece (struct work *w, size_t a, size_t b)
{
  size_t k = 0;
  for (size_t i = a; i < b; i++)
    k += tsri_utf8_encode (tsri_byte_to_cp ((unsigned char) w->text[i]),
                           w->buf + k);
  return tsri_vocab_find (w->v, w->buf, k);
}

/* The pre-token [A, B) of the fragment: one symbol per byte.  */
static int
bpe_piece (struct work *w, size_t a, size_t b)
{
  const tsr_vocab *v = w->v;
  int32_t id = v->ignore_merges ? whole_piece (w, a, b) : -1;
  if (id >= 0)
    {
      emit (w, id);
      return TSR_OK;
    }
  int32_t m = 0;
  for (size_t i = a; i < b; i++, m++)
    {
      w->sym[m].start = (int32_t) i;
      w->sym[m].len = 1;
      w->sym[m].id = v->byte_token[(unsigned char) w->text[i]];
    }
  link_symbols (w, m);
  int st = merge (w, m);
  return st == TSR_OK ? emit_symbols (w, m) : st;
}

static int
bpe_fragment (struct work *w, const char *s, size_t n)
{
  const uint32_t *ends;
  int64_t k = tsri_pretokenize (w->v->pre, s, n, &w->pre, &ends);
  int st = k < 0 ? TSR_ERR_NO_MEMORY : reserve (w, n, 2 * n);
  w->text = s;
  for (int64_t i = 0, start = 0; i < k && st == TSR_OK; start = ends[i++])
    st = bpe_piece (w, (size_t) start, ends[i]);
  return st;
}

/* Special tokens.  */

/* The length of the special token text at S (N bytes left), and its
   id in *ID; 0 for none.  */
static size_t
match_special (const tsr_vocab *v, const char *s, size_t n, bool parse,
               int32_t *id)
{
  unsigned char c = (unsigned char) s[0];
  for (int32_t i = v->special_first[c]; i < v->special_first[c + 1]; i++)
    {
      const struct tsri_vocab_token *t = &v->tokens[v->special[i]];
      if ((parse || t->type == TSRI_TOKEN_USER_DEFINED) && t->len <= n
          && memcmp (v->text + t->off, s, t->len) == 0)
        {
          *id = v->special[i];
          return t->len;
        }
    }
  return 0;
}

static void
emit_to (void *w, int32_t id)
{
  emit (w, id);
}

static int
fragment (struct work *w, const char *s, size_t n)
{
  switch (w->v->model)
    {
    case TSRI_VOCAB_SPM:
      return spm_fragment (w, s, n);
    case TSRI_VOCAB_WPM:
      return tsri_wpm_fragment (w->v, s, n, emit_to, w);
    case TSRI_VOCAB_UGM:
      return tsri_ugm_fragment (w->v, s, n, emit_to, w);
    default:
      return bpe_fragment (w, s, n);
    }
}

/* Tokenize S: special token texts, and the fragments between them.  */
static int
split_specials (struct work *w, const char *s, size_t n, bool parse)
{
  size_t start = 0;
  for (size_t p = 0; p < n;)
    {
      int32_t id;
      size_t k = match_special (w->v, s + p, n - p, parse, &id);
      if (!k)
        {
          p++;
          continue;
        }
      int st = p > start ? fragment (w, s + start, p - start) : TSR_OK;
      if (st != TSR_OK)
        return st;
      emit (w, id);
      p += k;
      start = p;
    }
  return start < n ? fragment (w, s + start, n - start) : TSR_OK;
}

static int
check_args (const tsr_vocab *v, const char *text, size_t len,
            const int32_t *tokens, int64_t max)
{
  if (!v || (!text && len) || max < 0 || (!tokens && max))
    return tsr_set_error (TSR_ERR_INVALID_ARG, "vocab: tokenize: bad "
                          "arguments");
  if (len > TSRI_VOCAB_MAX_TEXT)
    return tsr_set_error (TSR_ERR_INVALID_ARG, "vocab: tokenize: a text "
                          "of %zu bytes is longer than the %zu taken",
                          len, TSRI_VOCAB_MAX_TEXT);
  return TSR_OK;
}

int64_t
tsr_vocab_tokenize (const tsr_vocab *v, const char *text, size_t len,
                    bool add_bos, bool parse_special, int32_t *tokens,
                    int64_t max)
{
  int st = check_args (v, text, len, tokens, max);
  if (st != TSR_OK)
    return -1;
  if (add_bos && v->bos < 0)
    {
      tsr_set_error (TSR_ERR_INVALID_ARG, "vocab: tokenize: BOS asked for "
                     "but the vocabulary has no BOS token");
      return -1;
    }
  struct work w = { .v = v, .out = tokens, .max = max };
  if (add_bos)
    emit (&w, v->bos);
  st = split_specials (&w, text, len, parse_special);
  /* BERT's special tokens frame the text: [CLS] ... [SEP].  */
  if (st == TSR_OK && add_bos && v->model == TSRI_VOCAB_WPM && v->sep >= 0)
    emit (&w, v->sep);
  free (w.sym);
  free (w.heap);
  free (w.buf);
  tsri_pretok_free (&w.pre);
  return st == TSR_OK ? w.n : -1;
}
