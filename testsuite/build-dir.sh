# build-dir.sh - what check-levels.sh and check-sanitize.sh share (they
# source it): one build of their own, of the CPU backend alone.
#
# tsr_build_dir TAG DIR CONFIGURE-ARGS...: configure $srcdir in DIR,
# unless it is configured already, with --disable-cuda --disable-opencl
# --without-blis and the ARGS, then make -j$jobs.  A failure prints
# "TAG: configure failed" or "TAG: build failed" with the log to read,
# and returns 1.
tsr_build_dir () {
  tag=$1
  dir=$2
  shift 2
  mkdir -p "$dir" || return 1
  if [ ! -f "$dir/Makefile" ]; then
    (cd "$dir" && "$srcdir/configure" --disable-cuda --disable-opencl \
       --without-blis "$@") > "$dir/configure.out" 2>&1 || {
      echo "$tag: configure failed (see $dir/config.log)"
      return 1
    }
  fi
  make -C "$dir" -j"$jobs" > "$dir/make.out" 2>&1 || {
    tail -20 "$dir/make.out"
    echo "$tag: build failed (see $dir/make.out)"
    return 1
  }
}
