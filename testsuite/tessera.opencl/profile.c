/* Area: the OpenCL backend's kernel profile (modules/opencl/ocl-profile.c)
   and the kernel each product takes (ocl-ops.c).
   Purpose: with TESSERA_OPENCL_PROFILE=1 a run ends with a table of the
   kernels that ran, by op and weight shape; a prompt of 12 tokens puts
   its products on the tiled kernel (k_mul_mat_tiled, n=12) and each
   generated token on the work-group matrix-vector kernel
   (k_mul_mat_vec, n=1), attention on k_flash_attn, the norms on k_norm;
   a prompt of 2 tokens takes no tiled product; without the variable no
   table is printed.  A TESSERA_OPENCL_WG that is not a power of two
   from 16 to 256 is a clear error of the device, not a crash.
   Each step runs tessera-run in a child process.
   Limitations: the times themselves are not checked (a benchmark's
   matter); the subgroup path needs a device with subgroups.  */
#include "../tessera.model/model-test.h"
#include "ocl-test.h"

static char model[4096];

/* tessera-run on the model with the prompt TOKENS and the extra
   environment ENV; its exit status, its output in mt_out.  */
static int
run_tool (const char *env, const char *tokens)
{
  char cmd[8400];
  snprintf (cmd, sizeof cmd, "%s '%s/tools/tessera-run' -m '%s' "
            "--tokens=%s -n 3 -d OpenCL0", env, mt_bld, model, tokens);
  return mt_shell (cmd);
}

/* The number of calls of the profile line starting with LABEL (0 when
   there is none).  */
static long
calls (const char *label)
{
  for (const char *p = mt_out; (p = strstr (p, label)); p++)
    if (p == mt_out || p[-1] == '\n')
      {
        const char *q = p + strlen (label);
        while (*q == ' ')
          q++;
        return strtol (q, NULL, 10);
      }
  return 0;
}

/* Whether some profile line starts with PREFIX and has N_COLS in it.  */
static bool
has_line (const char *prefix, const char *n_cols)
{
  for (const char *p = mt_out; (p = strstr (p, prefix)); p++)
    if (p == mt_out || p[-1] == '\n')
      {
        const char *end = strchr (p, '\n');
        const char *hit = strstr (p, n_cols);
        if (hit && (!end || hit < end))
          return true;
      }
  return false;
}

int
main (void)
{
  static const char *const prompt12 = "1,2,3,4,5,6,7,8,9,10,11,12";
  if (!mt_init () || !ocl_test_device ())
    return TSR_TEST_EXIT ();
  if (!mt_synth ("--type=q4_0 --layers=2", mt_path ("profile", model,
                                                    sizeof model)))
    return TSR_TEST_EXIT ();

  int st = run_tool ("TESSERA_OPENCL_PROFILE=1", prompt12);
  if (st != 0 && strstr (mt_out, "no backend or device named"))
    {
      tsr_test_unsupported ("tessera-run started from this test does not "
                            "see OpenCL0");
      unlink (model);
      return TSR_TEST_EXIT ();
    }
  CHECK (st == 0 && strstr (mt_out, "opencl: OpenCL0: profile of ")
         && strstr (mt_out, "us/call"),
         "TESSERA_OPENCL_PROFILE=1: the run ends with the kernel table "
         "(%s)", st == 0 ? "" : mt_out);
  CHECK (has_line ("k_mul_mat_tiled mul_mat q4_0", "n=12")
         && !has_line ("k_mul_mat_tiled", "n=1 ")
         && !has_line ("k_mul_mat mul_mat", ""),
         "the 12-token prompt's products take the tiled kernel, and only "
         "they");
  CHECK (has_line ("k_mul_mat_vec mul_mat q4_0", "n=1")
         && !has_line ("k_mul_mat_vec", "n=12"),
         "generated tokens' products take the matrix-vector kernel");
  CHECK (calls ("k_flash_attn flash_attn_ext") >= 2 * 2
         && calls ("k_norm rms_norm") >= 2 * (2 * 2 + 1),
         "attention and the norms run on their work-group kernels (%ld, "
         "%ld calls)", calls ("k_flash_attn flash_attn_ext"),
         calls ("k_norm rms_norm"));

  st = run_tool ("TESSERA_OPENCL_PROFILE=1", "1,2");
  CHECK (st == 0 && strstr (mt_out, "profile of ")
         && !strstr (mt_out, "k_mul_mat_tiled")
         && has_line ("k_mul_mat_vec mul_mat q4_0", "n=2"),
         "a 2-token prompt takes no tiled product");

  st = run_tool ("TESSERA_OPENCL_PROFILE=0", prompt12);
  CHECK (st == 0 && !strstr (mt_out, "profile of"),
         "without the variable no table is printed");

  st = run_tool ("TESSERA_OPENCL_WG=100", "1,2");
  CHECK (st != 0 && st != -1
         && strstr (mt_out, "TESSERA_OPENCL_WG='100' is not a power of "
                    "two from 16 to 256"),
         "a bad TESSERA_OPENCL_WG is an error that says so (status %d)",
         st);
  st = run_tool ("TESSERA_OPENCL_WG=32", "1,2");
  CHECK (st == 0, "TESSERA_OPENCL_WG=32 runs (%s)", st == 0 ? "" : mt_out);
  unlink (model);
  return TSR_TEST_EXIT ();
}
