#!/bin/sh
# check-levels.sh SRCDIR BUILDDIR [JOBS] - every CPU level and both
# dispatch mechanisms, run for real (make check-levels).
#
# Builds of their own, under BUILDDIR:
#   noifunc  configure --disable-ifunc: the function-table dispatch at
#            every level this machine runs (the cpu area: its level
#            programs, then the ops, ops-math and ops-nn programs at
#            each level);
#   arm64    a cross build for aarch64-linux-gnu (static: the programs
#            run without libtool's scripts), under qemu-user with CPU
#            models that reach each arm64 level: max (i8mm and SVE:
#            armv8.6-a) runs the whole cpu area at every level, and the
#            types and registry areas; cortex-a53 (armv8-a only) and
#            cortex-a76 (dotprod and fp16: armv8.2-a) the dispatch's
#            program (levels.c), which checks the level chosen where
#            the upper ones are missing (the whole area under each was
#            about 10 minutes of CI repeating the max run's kernels).
#            Levels the emulated CPU lacks are UNSUPPORTED.  Needs Debian's
#            gcc-aarch64-linux-gnu, qemu-user and libltdl-dev:arm64
#            (dpkg --add-architecture arm64); skipped, with a message,
#            where they are missing.
# Each run leaves its DejaGnu summary as BUILDDIR/NAME/tessera-RUN.sum.
# Prints the totals; exits nonzero if anything failed.
set -u
srcdir=$1
top=$2
jobs=${3:-2}
status=0

. "$srcdir/testsuite/build-dir.sh"

# configure_build NAME CONFIGURE-ARGS...
configure_build () {
  name=$1
  shift
  echo "check-levels: $name: configure $*"
  tsr_build_dir "check-levels: $name" "$top/$name" "$@"
}

# run NAME RUN RUNTESTFLAGS [WRAPPER]: one make check, its summary kept.
run () {
  dir=$top/$1
  rm -f "$dir/tessera-$2.sum"
  TESSERA_TEST_WRAPPER=${4-} make -C "$dir" check RUNTESTFLAGS="$3" \
    > "$dir/check-$2.out" 2>&1
  st=$?
  cp "$dir/tessera.sum" "$dir/tessera-$2.sum" 2>/dev/null || st=1
  grep '^# of' "$dir/tessera-$2.sum" 2>/dev/null |
    sed "s/^/check-levels: $1 $2: /"
  grep -E '^(FAIL|UNRESOLVED|ERROR):' "$dir/tessera-$2.sum" 2>/dev/null |
    head -20
  return $st
}

if configure_build noifunc --disable-ifunc --disable-static; then
  run noifunc cpu cpu.exp || status=1
else
  status=1
fi

why=
command -v aarch64-linux-gnu-gcc >/dev/null ||
  why="no aarch64-linux-gnu-gcc (Debian: gcc-aarch64-linux-gnu)"
command -v qemu-aarch64 >/dev/null ||
  why="${why:+$why, }no qemu-aarch64 (Debian: qemu-user)"
[ -f /usr/lib/aarch64-linux-gnu/libltdl.a ] ||
  why="${why:+$why, }no arm64 libltdl (Debian: libltdl-dev:arm64)"
if [ -n "$why" ]; then
  echo "check-levels: arm64: skipped: $why"
elif configure_build arm64 --host=aarch64-linux-gnu --disable-shared; then
  # The programs run with the arm64 C library of the arm64 packages
  # (/lib/ld-linux-aarch64.so.1), the one libltdl-dev:arm64 came with;
  # pairing the cross toolchain's loader (qemu -L /usr/aarch64-linux-gnu)
  # with that C library hangs in pthread_create.
  # The max model runs every level: there the cpu area runs whole; the
  # other two check the dispatch on CPUs that lack the upper levels
  # (levels.c: the best level they run is chosen, the others refused,
  # and each level they run computes its kernels right).
  for cpu in cortex-a53 cortex-a76 max; do
    flags=cpu.exp=levels.c
    [ "$cpu" = max ] && flags="cpu.exp types.exp registry.exp"
    run arm64 "$cpu" "$flags" "qemu-aarch64 -cpu $cpu" || status=1
  done
else
  status=1
fi
exit $status
