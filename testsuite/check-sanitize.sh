#!/bin/sh
# check-sanitize.sh SRCDIR BUILDDIR [JOBS] - the sanitizer job
# (make check-sanitize).
#
# Two instrumented builds of their own, under BUILDDIR:
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (errors fatal,
#         leaks detected): the registry, loader, gguf, ops, validate,
#         vocab and model areas of the testsuite, where hostile input is
#         handled (model files, tokenizer keys, run-time options), and
#         the soak tests (leaks after long runs);
#   tsan  ThreadSanitizer: the registry's threaded tests, and sessions
#         on 8 threads sharing one model (model/threads.c).
# Only the CPU backend is built, at the baseline ISA level (the
# function-table dispatch, which configure picks for instrumented
# builds), so the job fits the CI budget; the full testsuite under ASan
# is one configure line away (see the manual, "Testing").
# Prints each build's DejaGnu totals; exits nonzero if anything failed.
set -u
srcdir=$1
top=$2
jobs=${3:-2}
status=0

. "$srcdir/testsuite/build-dir.sh"

levels=
# build NAME FLAGS RUNTESTFLAGS
build () {
  dir=$top/$1
  echo "check-sanitize: $1 ($2) in $dir"
  tsr_build_dir "check-sanitize: $1" "$dir" --disable-static $levels \
    CFLAGS="-O1 -g -fno-omit-frame-pointer $2" LDFLAGS="$2" || return 1
  make -C "$dir" check RUNTESTFLAGS="$3" > "$dir/check.out" 2>&1
  st=$?
  grep '^# of' "$dir/tessera.sum" | sed "s/^/check-sanitize: $1: /"
  grep -E '^(FAIL|UNRESOLVED|ERROR):' "$dir/tessera.sum" | head -20
  return $st
}

# The baseline level of x86-64; elsewhere every level (slower).
case $(uname -m) in
  x86_64|amd64) levels=--with-cpu-levels=x86-64 ;;
  *) levels= ;;
esac

asan_areas="registry.exp loader.exp gguf.exp ops.exp validate.exp mpi.exp"
asan_areas="$asan_areas vocab.exp model.exp soak.exp"
# The soak tests (make check-soak) too: LeakSanitizer after 1,000 model
# load/free cycles and a 20,000-token generation.
TESSERA_SOAK=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  build asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
  "$asan_areas" || status=1
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  build tsan "-fsanitize=thread" "registry.exp=threads*.c model.exp=threads.c" \
  || status=1
exit $status
