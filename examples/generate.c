/* generate.c - the smallest program that runs a model file: load it,
 * tokenize a prompt, run it through a session and generate tokens
 * greedily, printing them as text.
 *
 *   tessera-generate MODEL.gguf "Once upon a time" [N]
 *
 * tools/tessera-run.c does the same with every option; this is the
 * part an embedder copies.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tessera-model.h>

static int
fail (const char *what)
{
  fprintf (stderr, "generate: %s: %s\n", what, tsr_last_error ());
  return 1;
}

int
main (int argc, char **argv)
{
  if (argc < 3)
    {
      fprintf (stderr, "usage: %s MODEL.gguf PROMPT [N]\n", argv[0]);
      return 2;
    }
  int n_gen = argc > 3 ? atoi (argv[3]) : 16;

  /* NULL parameters: the best device, with the CPU behind it.  */
  tsr_model *model = tsr_model_load (argv[1], NULL);
  if (!model)
    return fail ("load");
  tsr_vocab *vocab = tsr_vocab_from_gguf (tsr_model_gguf (model));
  if (!vocab)
    return fail ("tokenizer");

  /* Count the prompt's tokens, then get them.  */
  size_t len = strlen (argv[2]);
  bool bos = tsr_vocab_add_bos (vocab);
  int64_t n = tsr_vocab_tokenize (vocab, argv[2], len, bos, false, NULL, 0);
  int32_t *prompt = malloc (sizeof *prompt * (size_t) (n > 0 ? n : 1));
  if (n <= 0 || !prompt)
    return fail ("tokenize");
  tsr_vocab_tokenize (vocab, argv[2], len, bos, false, prompt, n);

  struct tsr_session_params sp = tsr_session_params_default ();
  sp.n_ctx = 512;
  tsr_session *s = tsr_session_new (model, &sp);
  int64_t n_vocab = tsr_model_get_hparams (model)->n_vocab;
  float *logits = malloc (sizeof *logits * (size_t) n_vocab);
  if (!s || !logits || tsr_session_decode (s, prompt, (int) n, logits, false))
    return fail ("prompt");

  struct tsr_sampler_params greedy = { 0 };
  tsr_sampler *smp = tsr_sampler_new (&greedy);
  fputs (argv[2], stdout);
  for (int i = 0; i < n_gen; i++)
    {
      int32_t id = tsr_sampler_sample (smp, logits, n_vocab);
      char piece[128];
      int64_t k = tsr_vocab_token_to_piece (vocab, id, false, piece,
                                            sizeof piece);
      if (k > 0)
        fwrite (piece, 1, (size_t) (k < 128 ? k : 128), stdout);
      if (tsr_vocab_is_eog (vocab, id)
          || tsr_session_decode (s, &id, 1, logits, false) != TSR_OK)
        break;
    }
  putchar ('\n');

  tsr_sampler_free (smp);
  free (logits);
  free (prompt);
  tsr_session_free (s);
  tsr_vocab_free (vocab);
  tsr_model_free (model);
  return 0;
}
