#!/bin/sh
# gpu-check.sh - the one-call measurement for a session that is lent a
# GPU (see the device tool's README).  Two steps:
#
#   .ci/gpu-check.sh prepare   here, where nvcc is: a CUDA build for
#                              sm_90 (H100/H200) installed stripped into
#                              .dev/inst, Debian's libltdl beside it,
#                              and a small logits comparer (.dev/nmse)
#   .ci/gpu-check.sh run       on the device machine, through the device
#                              tool, with carry [".dev"] (about 40 MiB):
#                              writes everything under $OUT (or /tmp)
#
# What `run` measures (about 4 minutes on an H100):
#   1. nvidia-smi, tessera-info;
#   2. the scheduler on CUDA0 + CPU (issue 31): logits of a 48-token
#      prompt, 4-layer f32 model, last 2 layers on CUDA0, micro-batches
#      of 8 with 1 and 2 in flight: bit-identical to each other, NMSE
#      against the CPU alone; TESSERA_SCHED_DEBUG listing (splits,
#      waits in a queue or on the host);
#   3. the Llama-3.2-1B-shaped q4_0 model: -d CUDA0 (pp512, tg128),
#      and -d CUDA0,CPU --gpu-layers=8 with --ubatch=128 and
#      --pipeline=1 / 2 (pp512, tg32), with the scheduler's line per
#      generated token.
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
  du -sh "$dev"
}

run () {
  out=${OUT:-/tmp/gpu-check}
  tmp=/tmp/gpu-check-models
  mkdir -p "$out" "$tmp"
  inst=$dev/inst/opt/tessera
  export LD_LIBRARY_PATH=$inst/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export TESSERA_BACKEND_PATH=$inst/lib/tessera
  bin=$inst/bin
  set +e
  measure 2>&1 | tee "$out/gpu-check.log"
}

measure () {
  nvidia-smi -L
  "$bin/tessera-info"
  echo "== scheduler: CUDA0 + CPU, f32, 4 layers, 48-token prompt"
  m4=$tmp/t4.gguf
  "$bin/tessera-gguf" synth --like=tiny --type=f32 --layers=4 "$m4"
  toks=$(seq -s, 1 48)
  "$bin/tessera-run" -m "$m4" --tokens="$toks" -n 0 --logits="$out/cpu.f32" \
    -d CPU
  for p in 1 2; do
    TESSERA_SCHED_DEBUG=1 "$bin/tessera-run" -m "$m4" --tokens="$toks" -n 0 \
      --logits="$out/cuda-p$p.f32" -d CUDA0,CPU --gpu-layers=2 --ubatch=8 \
      --pipeline=$p 2> "$out/sched-p$p.txt"
    grep '^scheduler' "$out/sched-p$p.txt" | sort | uniq -c
    grep -v '^ ' "$out/sched-p$p.txt" | grep -v '^scheduler' | tail -3
    "$dev/nmse" "$out/cpu.f32" "$out/cuda-p$p.f32"
  done
  "$dev/nmse" "$out/cuda-p1.f32" "$out/cuda-p2.f32"
  echo "== other architectures: CUDA0 alone against the CPU, f32"
  for a in "qwen3moe --experts=4 --experts-used=2" \
           "gemma2 --swa=8 --attn-softcap=5" "gemma3 --swa=8 --layers=6" \
           "phi3 --swa=8"; do
    f=$tmp/arch.gguf
    # $a holds the architecture and its options: split on purpose.
    "$bin/tessera-gguf" synth --arch=$a --type=f32 "$f" > /dev/null
    "$bin/tessera-run" -m "$f" --tokens="$toks" -n 0 --logits="$out/a-cpu.f32" \
      -d CPU > /dev/null
    TESSERA_SCHED_DEBUG=1 "$bin/tessera-run" -m "$f" --tokens="$toks" -n 4 \
      --logits="$out/a-cuda.f32" -d CUDA0 2> "$out/a-sched.txt" > /dev/null
    echo "$a: $(grep -c '^scheduler' "$out/a-sched.txt") scheduler lines," \
      "$("$dev/nmse" "$out/a-cpu.f32" "$out/a-cuda.f32")"
    grep '^scheduler' "$out/a-sched.txt" | tail -1
  done
  rm -f "$tmp/arch.gguf"
  echo "== 1B-shaped q4_0"
  m=$tmp/l1b.gguf
  "$bin/tessera-gguf" synth --like=llama-3.2-1b --type=q4_0 "$m"
  "$bin/tessera-run" -m "$m" --bench -d CUDA0 -r 3
  for p in 1 2; do
    "$bin/tessera-run" -m "$m" --bench -d CUDA0,CPU --gpu-layers=8 \
      --ubatch=128 --pipeline=$p --tg=32 -r 3
  done
  rm -f "$m" "$m4"
}

case ${1:-} in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
