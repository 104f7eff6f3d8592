#!/bin/sh
# gpu-check.sh - the one-call measurement for a session that is lent a
# GPU (see the device tool's README, and the manual's "Testing on a
# GPU").  Two steps:
#
#   .ci/gpu-check.sh prepare   here, where nvcc is: a CUDA build for
#                              sm_90 (H100/H200) installed stripped into
#                              .dev/inst, Debian's libltdl beside it,
#                              the CUDA test programs (.dev/tests) and a
#                              small logits comparer (.dev/nmse)
#   .ci/gpu-check.sh run       on the device machine, through the device
#                              tool, with carry [".dev"] (about 45 MiB):
#                              writes everything under $OUT (or /tmp)
#
# What `run` measures (about 2 minutes on an H200):
#   1. nvidia-smi, tessera-info;
#   2. the CUDA test programs (testsuite/tessera.cuda, and
#      tessera.model/sequences.c: mixed batches of several sequences)
#      and the op checker on CUDA0 against the CPU;
#   3. logits of CUDA0 alone against the CPU for every architecture,
#      and bit-identical with TESSERA_CUDA_GRAPHS=0 and with
#      TESSERA_CUDA_FUSION=0 as well;
#   4. the scheduler on CUDA0 + CPU (a 4-layer f32 model, last 2 layers
#      on CUDA0, micro-batches of 8, 1 and 2 in flight);
#   5. the matrix-vector products of every weight type at 4096 x 14336
#      and at the 1B model's shapes (tessera-bench, weight GB/s), and a
#      512-token prompt's attention and products;
#   6. the Llama-3.2-1B-shaped model in q4_0, q8_0 and Q4_K_M: pp512
#      and tg128 on CUDA0 with the device's read roof and the backend's
#      counters (kernels per token, fused nodes, graph replays), the
#      time of each kernel of decoding (TESSERA_CUDA_PROFILE=1), and
#      q4_0 once more with graphs and fusion off (the walk of before);
#   7. NVIDIA's OpenCL driver on the same card (issue 32, point 4): the
#      op checker, logits against the CPU, the 1B-shaped model's pp512
#      and tg128 beside CUDA's, and the kernel profile of decoding
#      (TESSERA_OPENCL_PROFILE=1);
#   8. a summary table.
# `run cuda` or `run opencl` measures one part only (1-6 or 7).
# .dev is ignored by git: nothing of this is committed but the script.
set -eu
srcdir=$(cd "$(dirname "$0")/.." && pwd)
dev=$srcdir/.dev

prepare () {
  b=$srcdir/_build/gpu
  mkdir -p "$b" "$dev"
  (cd "$srcdir" && [ -x configure ] || autoreconf -fi)
  (cd "$b" && { [ -f Makefile ] || "$srcdir/configure" --enable-cuda \
      --with-cuda-archs=90 --prefix=/opt/tessera >/dev/null; } &&
     make -j"$(nproc)" >/dev/null &&
     rm -rf "$dev/inst" && make install-strip DESTDIR="$dev/inst" >/dev/null)
  lt=$(ldconfig -p | sed -n 's/.*libltdl.so.7 .*=> //p' | head -1)
  [ -n "$lt" ] && cp -L "$lt" "$dev/inst/opt/tessera/lib/"
  # The OpenCL ICD loader, for a device machine without one (the
  # vendor's driver is found through /etc/OpenCL/vendors there).
  ocl=$(ldconfig -p | sed -n 's/.*libOpenCL.so.1 .*=> //p' | head -1)
  [ -n "$ocl" ] && cp -L "$ocl" "$dev/inst/opt/tessera/lib/libOpenCL.so.1"
  cat > "$dev/nmse.c" <<'EOF'
/* nmse A B: the normalized mean squared error of the f32 file B
   against A, and whether they are equal byte for byte.  */
#include <stdio.h>
#include <stdlib.h>
int
main (int argc, char **argv)
{
  FILE *a = argc > 2 ? fopen (argv[1], "rb") : NULL;
  FILE *b = argc > 2 ? fopen (argv[2], "rb") : NULL;
  double err = 0, norm = 0;
  long n = 0, same = 1;
  float x, y;
  if (!a || !b)
    {
      fprintf (stderr, "nmse: cannot open %s or %s\n", argv[1], argv[2]);
      return 2;
    }
  while (fread (&x, 4, 1, a) == 1 && fread (&y, 4, 1, b) == 1)
    {
      err += ((double) y - x) * ((double) y - x);
      norm += (double) x * x;
      same &= x == y;
      n++;
    }
  printf ("%ld values, nmse %.3e, %s\n", n, norm > 0 ? err / norm : err,
          same ? "identical" : "different");
  return 0;
}
EOF
  cc -O2 -o "$dev/nmse" "$dev/nmse.c"
  # The CUDA test programs, linked against the installed libraries.
  rm -rf "$dev/tests" && mkdir -p "$dev/tests"
  lib=$dev/inst/opt/tessera/lib
  for t in "$srcdir"/testsuite/tessera.cuda/*.c \
           "$srcdir"/testsuite/tessera.model/sequences.c; do
    cc -O2 -I"$dev/inst/opt/tessera/include" -I"$srcdir/testsuite/lib" \
      -o "$dev/tests/$(basename "$t" .c)" "$t" -L"$lib" -ltessera-model \
      -ltessera -lm -Wl,-rpath,"\$ORIGIN/../inst/opt/tessera/lib"
  done
  du -sh "$dev"
}

run () {
  # Only the log goes to $OUT (the device tool brings back few files);
  # the work files stay in $out.
  log=${OUT:-/tmp/gpu-check}
  out=/tmp/gpu-check-work
  tmp=/tmp/gpu-check-models
  mkdir -p "$log" "$out" "$tmp"
  inst=$dev/inst/opt/tessera
  export LD_LIBRARY_PATH=$inst/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export TESSERA_BACKEND_PATH=$inst/lib/tessera
  bin=$inst/bin
  set +e
  what=${1:-all}
  {
    nvidia-smi -L
    "$bin/tessera-info"
    [ "$what" = opencl ] || measure
    [ "$what" = cuda ] || measure_opencl
    summary
    rm -f "$tmp"/l1b-*.gguf
  } 2>&1 | tee "$log/gpu-check.log"
}

# Logits of MODEL with TOKS on DEVICES into FILE; more arguments go
# to tessera-run.
logits () {
  f=$1; d=$2; shift 2
  "$bin/tessera-run" -m "$m" --tokens="$toks" --logits="$f" -d "$d" "$@" \
    > /dev/null
}

measure () {
  toks=$(seq -s, 1 48)
  echo "== CUDA test programs (and tessera.model/sequences.c: several"
  echo "   sequences in one batch, on the CPU and on CUDA0)"
  # sequences.c writes its models with tessera-gguf under a build
  # directory's layout (TSR_TEST_BUILDDIR): one made of the install.
  bld=/tmp/gpu-check-bld
  mkdir -p "$bld/testsuite/bin"
  ln -sfn "$bin" "$bld/tools"
  export TSR_TEST_BUILDDIR=$bld
  for t in "$dev"/tests/*; do
    timeout 120 "$t" > "$out/test-$(basename "$t").txt" 2>&1
    echo "$(basename "$t"): exit $?, $(grep -c '^PASS' \
      "$out/test-$(basename "$t").txt") passed, $(grep -c '^FAIL' \
      "$out/test-$(basename "$t").txt") failed"
    grep '^FAIL' "$out/test-$(basename "$t").txt" | head -5
  done
  grep -h 'counters\|captures\|fused' "$out"/test-graphs.txt | head -4
  echo "== op checker on CUDA0"
  timeout 240 "$bin/tessera-opcheck" test --device CUDA0 > "$out/opcheck.txt" 2>&1
  echo "opcheck: exit $?"; tail -2 "$out/opcheck.txt"
  grep -i '^FAIL' "$out/opcheck.txt" | head -10
  echo "== architectures: CUDA0 alone against the CPU; graphs and fusion off"
  m=$tmp/arch.gguf
  for a in "llama --type=f32" "llama --type=q4_0 --embd=256 --ff=512" \
           "llama --type=q4_0 --embd=4096 --heads=32 --kv-heads=8 --ff=8192 --layers=1" \
           "llama --type=q4_K --embd=4096 --heads=32 --kv-heads=8 --ff=8192 --layers=1" \
           "qwen2 --type=f32" \
           "qwen3moe --experts=4 --experts-used=2 --type=f32" \
           "gemma2 --swa=8 --attn-softcap=5 --type=f32" \
           "gemma3 --swa=8 --layers=6 --type=f32" "phi3 --swa=8 --type=f32"; do
    # $a holds the architecture and its options: split on purpose.
    "$bin/tessera-gguf" synth --arch=$a "$m" > /dev/null
    # No file of an earlier model may stand in for one that failed.
    rm -f "$out"/a-*.f32
    logits "$out/a-cpu.f32" CPU || echo "FAIL: $a on the CPU"
    logits "$out/a-cuda.f32" CUDA0 -n 4 || echo "FAIL: $a on CUDA0"
    TESSERA_CUDA_GRAPHS=0 logits "$out/a-nog.f32" CUDA0 -n 4 \
      || echo "FAIL: $a on CUDA0, graphs off"
    TESSERA_CUDA_GRAPHS=0 TESSERA_CUDA_FUSION=0 \
      logits "$out/a-nof.f32" CUDA0 -n 4 \
      || echo "FAIL: $a on CUDA0, graphs and fusion off"
    echo "$a: vs CPU $("$dev/nmse" "$out/a-cpu.f32" "$out/a-cuda.f32");" \
      "graphs off: $("$dev/nmse" "$out/a-cuda.f32" "$out/a-nog.f32" \
      | sed 's/.*, //'); fusion off too: $("$dev/nmse" "$out/a-cuda.f32" \
      "$out/a-nof.f32" | sed 's/.*, //')"
  done
  "$bin/tessera-gguf" synth --type=q4_0 --embd=256 --ff=512 --ctx=1024 "$m" \
    > /dev/null
  TESSERA_LOG=debug "$bin/tessera-run" -m "$m" --tokens="$toks" -n 300 \
    -d CUDA0 2>&1 >/dev/null | grep -c 'captured a CUDA graph' \
    | sed 's/^/llama q4_0, 48 + 300 positions: CUDA graphs captured: /'
  echo "== scheduler: CUDA0 + CPU, f32, 4 layers, 48-token prompt"
  m=$tmp/t4.gguf
  "$bin/tessera-gguf" synth --like=tiny --type=f32 --layers=4 "$m"
  rm -f "$out"/cpu.f32 "$out"/cuda-p*.f32
  logits "$out/cpu.f32" CPU
  for p in 1 2; do
    TESSERA_SCHED_DEBUG=1 logits "$out/cuda-p$p.f32" CUDA0,CPU \
      --gpu-layers=2 --ubatch=8 --pipeline=$p 2> "$out/sched-p$p.txt"
    grep '^scheduler' "$out/sched-p$p.txt" | sort | uniq -c | head -3
    "$dev/nmse" "$out/cpu.f32" "$out/cuda-p$p.f32"
  done
  "$dev/nmse" "$out/cuda-p1.f32" "$out/cuda-p2.f32"
  rm -f "$tmp/arch.gguf" "$m"
  echo "== matrix-vector products (weight GB/s)"
  timeout 120 "$bin/tessera-bench" -o mul_mat -d CUDA0 -r 20 -w 5 \
    -T q4_0,q4_1,q5_0,q5_1,q8_0,q2_K,q3_K,q4_K,q5_K,q6_K,iq4_nl,iq4_xs,mxfp4 \
    -s 14336,4096,1 -s 14336,4096,4 -s 8192,2048,1 -s 2048,8192,1 \
    -s 2048,2048,1 > "$out/gemv.txt" 2>&1
  cat "$out/gemv.txt"
  echo "== a 512-token prompt's attention and products (tessera-bench)"
  timeout 60 "$bin/tessera-bench" -o flash_attn_ext -d CUDA0 -r 10 -w 3 \
    -T f16 -s 512,64,512 -s 512,128,512 -s 4096,128,1 2>&1 | grep '^flash'
  timeout 60 "$bin/tessera-bench" -o mul_mat -d CUDA0 -r 10 -w 3 \
    -T q4_0,q8_0,q4_K -s 2048,2048,512 -s 8192,2048,512 -s 2048,8192,512 \
    2>&1 | grep '^mul_mat'
  echo "== the 1B-shaped model"
  l1b
  for t in q4_0 q8_0 Q4_K_M; do
    "$bin/tessera-run" -m "$tmp/l1b-$t.gguf" --bench -d CUDA0 -r 3 \
      | tee "$out/bench-$t.txt"
  done
  for t in q4_0 Q4_K_M; do
    echo "-- $t: the kernels of decoding (TESSERA_CUDA_PROFILE=1, 64 tokens)"
    CUDA_MODULE_LOADING=EAGER TESSERA_CUDA_PROFILE=1 "$bin/tessera-run" -m "$tmp/l1b-$t.gguf" \
      --tokens="$(seq -s, 1 8)" -n 64 -d CUDA0 2>&1 >/dev/null \
      | grep -v 'blas\|^tessera-run' | head -24
  done
  echo "-- q4_0: the kernels of a 512-token prompt (TESSERA_CUDA_PROFILE=1)"
  CUDA_MODULE_LOADING=EAGER TESSERA_CUDA_PROFILE=1 "$bin/tessera-run" -m "$tmp/l1b-q4_0.gguf" \
    --tokens="$(seq -s, 1 512)" -n 1 -d CUDA0 2>&1 >/dev/null \
    | grep -v 'blas\|^tessera-run' | head -24
  echo "== launch settings, one at a time (tokens/s)"
  for t in q4_0 Q4_K_M; do
    for v in TESSERA_CUDA_PDL=0 TESSERA_CUDA_MMVQ_SPLIT=1 \
             TESSERA_CUDA_MMVQ_SPLIT=2; do
      printf '%-7s %-26s %s\n' "$t" "$v" "$(env "$v" "$bin/tessera-run" \
        -m "$tmp/l1b-$t.gguf" --bench -d CUDA0 -r 3 2>&1 \
        | grep -E '^CUDA0 +(pp|tg)' | awk '{printf "%s %s  ", $2, $3}')"
    done
  done
  echo "-- products with one warp a row (TESSERA_CUDA_MMVQ_SPLIT=1)"
  TESSERA_CUDA_MMVQ_SPLIT=1 timeout 60 "$bin/tessera-bench" -o mul_mat \
    -d CUDA0 -r 20 -w 5 -T q4_0,q8_0,q4_K,q6_K -s 14336,4096,1 \
    -s 2048,8192,1 2>&1 | grep '^mul_mat'
  echo "-- q4_0 with TESSERA_CUDA_GRAPHS=0 TESSERA_CUDA_FUSION=0"
  TESSERA_CUDA_GRAPHS=0 TESSERA_CUDA_FUSION=0 "$bin/tessera-run" \
    -m "$tmp/l1b-q4_0.gguf" --bench -d CUDA0 -r 3 | tee "$out/bench-q4_0-off.txt"
  echo "-- q4_0 with TESSERA_CUDA_GRAPHS=0"
  TESSERA_CUDA_GRAPHS=0 "$bin/tessera-run" -m "$tmp/l1b-q4_0.gguf" --bench \
    -d CUDA0 -r 3 | tee "$out/bench-q4_0-nog.txt"
}

# The 1B-shaped model files in q8_0, q4_0 and Q4_K_M, made once.
l1b () {
  m8=$tmp/l1b-q8_0.gguf
  [ -f "$m8" ] || "$bin/tessera-gguf" synth --like=llama-3.2-1b \
    --type=q8_0 "$m8" > /dev/null
  for t in q4_0 Q4_K_M; do
    [ -f "$tmp/l1b-$t.gguf" ] || "$bin/tessera-gguf" requantize --type=$t \
      "$m8" "$tmp/l1b-$t.gguf" > /dev/null
  done
}

measure_opencl () {
  echo "== OpenCL on the GPU (NVIDIA's driver)"
  # The OpenCL device whose description names NVIDIA.
  ocl=$("$bin/tessera-info" | awk '/device [0-9]+: OpenCL/ {d=$3}
    /description:.*NVIDIA/ && d != "" {print d; exit}')
  if [ -z "$ocl" ]; then
    echo "no NVIDIA OpenCL device listed; the driver's OpenCL files:"
    ls /etc/OpenCL/vendors /usr/lib/x86_64-linux-gnu/libnvidia-opencl* \
      /usr/lib64/libnvidia-opencl* 2>&1 | head
    return 0
  fi
  echo "device: $ocl"
  TESSERA_LOG=debug "$bin/tessera-opcheck" test --device "$ocl" --op add \
    2>&1 | grep 'opencl:.*\(work-groups\|kernels built\|failed\)' | head -4
  timeout 120 "$bin/tessera-opcheck" test --device "$ocl" \
    > "$out/ocl-opcheck.txt" 2>&1
  echo "opcheck: exit $?"; tail -2 "$out/ocl-opcheck.txt"
  grep -i '^FAIL' "$out/ocl-opcheck.txt" | head -10
  toks=$(seq -s, 1 48)
  m=$tmp/arch.gguf
  for a in "llama --type=f32" "llama --type=q4_0 --embd=256 --ff=512" \
           "qwen2 --type=q4_K --embd=256 --ff=512"; do
    # $a holds the architecture and its options: split on purpose.
    "$bin/tessera-gguf" synth --arch=$a "$m" > /dev/null
    rm -f "$out"/o-*.f32
    logits "$out/o-cpu.f32" CPU || echo "FAIL: $a on the CPU"
    logits "$out/o-ocl.f32" "$ocl" || echo "FAIL: $a on $ocl"
    echo "$a: $ocl vs CPU $("$dev/nmse" "$out/o-cpu.f32" "$out/o-ocl.f32")"
  done
  rm -f "$m"
  l1b
  for t in q4_0 q8_0 Q4_K_M; do
    timeout 240 "$bin/tessera-run" -m "$tmp/l1b-$t.gguf" --bench -d "$ocl" \
      -r 3 | tee "$out/bench-ocl-$t.txt"
    [ -f "$out/bench-$t.txt" ] || timeout 120 "$bin/tessera-run" \
      -m "$tmp/l1b-$t.gguf" --bench -d CUDA0 -r 3 > "$out/bench-$t.txt"
  done
  for t in q4_0 Q4_K_M; do
    echo "-- $t on $ocl: the kernels (TESSERA_OPENCL_PROFILE=1, 8 + 64 tokens)"
    TESSERA_OPENCL_PROFILE=1 timeout 120 "$bin/tessera-run" \
      -m "$tmp/l1b-$t.gguf" --tokens="$(seq -s, 1 8)" -n 64 -d "$ocl" \
      2>&1 >/dev/null | grep -v '^tessera-run' | head -24
  done
}

summary () {
  echo "== summary (tokens/s: median of 3)"
  for f in "$out"/bench-*.txt; do
    [ -f "$f" ] || continue
    printf '%-22s %s\n' "$(basename "$f" .txt)" \
      "$(grep -E '^(CUDA|OpenCL)[0-9]+ +(pp|tg)' "$f" \
         | awk '{printf "%s %s t/s  ", $2, $3}')"
  done
}

case ${1:-} in
  prepare) prepare ;;
  run) run "${2:-all}" ;;
  *) echo "usage: $0 prepare|run [all|cuda|opencl]" >&2; exit 2 ;;
esac
