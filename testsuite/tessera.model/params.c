/* Area: the parameters of tsr_model_load and tsr_session_new
   (tessera/model.h).
   Purpose: one meaning for gpu_layers, the API's as tessera-run's: the
   last N layers (and the output when N > 0) on the first backend, 0
   none, negative every one; the defaults (tsr_model_params_default,
   which NULL stands for) put every layer on the first.  The cache type
   is the one asked: f16 by default, f32 when kv_type says f32 (a
   zero-initialized struct included), never a silent substitute; any
   other type is refused naming it.  Two CPU backends stand for two
   devices.
   Tolerance: an f32 cache against an f16 one: the logits differ (f16
   rounding of keys and values) but within NMSE 1e-4; the f32 cache's
   logits equal those of another f32 session bit for bit.  */
#include <string.h>
#include "model-test.h"

enum { N_TOK = 6, LAYERS = 4 };

static int
on_first (const tsr_model *m, int64_t n_layer)
{
  int n = 0;
  for (int64_t il = 0; il < n_layer; il++)
    n += tsr_model_layer_backend (m, il) == 0;
  return n;
}

/* Logits of the prompt with KV_TYPE, from default parameters or
   (ZERO) a zero-initialized struct with only the batch set.  */
static int
decode (tsr_model *m, bool zero, tsr_type kv_type, float *out)
{
  struct tsr_session_params sp = tsr_session_params_default ();
  if (zero)
    memset (&sp, 0, sizeof sp);
  else
    sp.kv_type = kv_type;
  sp.n_ctx = 32;
  sp.n_batch = N_TOK;
  int32_t t[N_TOK];
  mt_tokens (t, N_TOK, tsr_model_get_hparams (m)->n_vocab, 3);
  tsr_session *s = tsr_session_new (m, &sp);
  int st = s ? tsr_session_decode (s, t, N_TOK, out, true)
             : tsr_last_status ();
  tsr_session_free (s);
  return st;
}

int
main (void)
{
  tsr_backend *cpu = mt_cpu ();
  tsr_backend *cpu2 = cpu ? tsr_backend_init_by_type (TSR_DEVICE_CPU, NULL)
                          : NULL;
  char path[4096];
  if (!cpu || !cpu2
      || !mt_synth ("--type=f32 --untied --layers=4",
                    mt_path ("params", path, sizeof path)))
    return TSR_TEST_EXIT ();

  struct tsr_model_params d = tsr_model_params_default ();
  CHECK (d.gpu_layers == TSR_GPU_LAYERS_ALL && d.gpu_layers < 0
         && !d.backends && !d.no_mmap && !d.no_repack,
         "default model parameters: every layer on the first backend");
  tsr_backend *two[2] = { cpu, cpu2 };
  static const struct { int gpu_layers; int first; bool output_first; }
    cases[] = { { TSR_GPU_LAYERS_ALL, LAYERS, true }, { -7, LAYERS, true },
                { 0, 0, false }, { 1, 1, true }, { 3, 3, true },
                { LAYERS, LAYERS, true }, { 99, LAYERS, true } };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      struct tsr_model_params mp = tsr_model_params_default ();
      mp.backends = two;
      mp.n_backends = 2;
      mp.gpu_layers = cases[i].gpu_layers;
      tsr_model *m = tsr_model_load (path, &mp);
      int n = m ? on_first (m, LAYERS) : -1;
      bool out0 = m && tsr_model_layer_backend (m, LAYERS) == 0;
      bool last = !m || cases[i].first == 0
                  || tsr_model_layer_backend (m, LAYERS - 1) == 0;
      CHECK (m && n == cases[i].first && out0 == cases[i].output_first
             && last, "gpu_layers %d: %d layers on the first backend (%d "
             "expected), the output on the %s (%s)", cases[i].gpu_layers,
             n, cases[i].first, out0 ? "first" : "second",
             m ? "" : tsr_last_error ());
      tsr_model_free (m);
    }
  {
    /* A zero-initialized struct means gpu_layers 0, as documented.  */
    struct tsr_model_params mp;
    memset (&mp, 0, sizeof mp);
    mp.backends = two;
    mp.n_backends = 2;
    tsr_model *m = tsr_model_load (path, &mp);
    CHECK (m && on_first (m, LAYERS) == 0, "a zero-initialized struct: no "
           "layer on the first backend (%s)", m ? "" : tsr_last_error ());
    tsr_model_free (m);
    /* One backend: every layer on it, whatever gpu_layers.  */
    mp.backends = &cpu;
    mp.n_backends = 1;
    m = tsr_model_load (path, &mp);
    CHECK (m && on_first (m, LAYERS) == LAYERS, "one backend, gpu_layers "
           "0: every layer on it (%s)", m ? "" : tsr_last_error ());
    tsr_model_free (m);
  }

  /* Cache types.  */
  struct tsr_session_params sd = tsr_session_params_default ();
  CHECK (sd.kv_type == TSR_TYPE_F16 && sd.n_ctx == 4096 && sd.n_batch == 512,
         "default session parameters: an f16 cache of 4096 positions");
  struct tsr_model_params mp = tsr_model_params_default ();
  mp.backends = &cpu;
  mp.n_backends = 1;
  tsr_model *m = tsr_model_load (path, &mp);
  size_t n = (size_t) N_TOK * (size_t) (m ? tsr_model_get_hparams (m)->n_vocab
                                          : 1);
  float *f16 = malloc (n * sizeof *f16), *f32 = malloc (n * sizeof *f32);
  float *zero = malloc (n * sizeof *zero);
  int s1 = m ? decode (m, false, TSR_TYPE_F16, f16) : -1;
  int s2 = m ? decode (m, false, TSR_TYPE_F32, f32) : -1;
  int s3 = m ? decode (m, true, TSR_TYPE_F32, zero) : -1;
  double e = s1 == TSR_OK && s2 == TSR_OK ? mt_nmse_f (f32, f16, n) : 1;
  CHECK (s1 == TSR_OK && s2 == TSR_OK && e > 0 && e <= 1e-4,
         "kv_type f32 gives an f32 cache, not an f16 one: the logits differ "
         "from f16's by rounding (nmse %.2e)", e);
  CHECK (s3 == TSR_OK && memcmp (zero, f32, n * sizeof *f32) == 0,
         "a zero-initialized struct (kv_type 0 = f32): the f32 cache's "
         "logits, bit for bit");
  struct tsr_session_params bad = tsr_session_params_default ();
  bad.kv_type = TSR_TYPE_Q8_0;
  tsr_session *s = m ? tsr_session_new (m, &bad) : NULL;
  CHECK (m && !s && tsr_last_status () == TSR_ERR_TYPE
         && strstr (tsr_last_error (), "q8_0"),
         "a q8_0 cache is refused, naming it: %s", tsr_last_error ());
  tsr_session_free (s);
  free (f16);
  free (f32);
  free (zero);
  tsr_model_free (m);
  tsr_backend_free (cpu2);
  tsr_backend_free (cpu);
  unlink (path);
  return TSR_TEST_EXIT ();
}
