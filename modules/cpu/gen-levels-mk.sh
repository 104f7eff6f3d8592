#!/bin/sh
# gen-levels-mk.sh [--table] CPU-LEVELS-DEF - read the CPU level table.
#
# --table: one line per level, SUFFIX|NAME|FAMILY|FLAGS|MARCH|FEATURES
# (what configure reads).  Otherwise the automake fragment levels.mk:
# one convenience library per level, compiled from cpu_level_sources
# with the level's flags and symbol suffix.  configure picks the levels
# to build (TSR_CPU_LEVEL_LIBS); the others stay EXTRA_LTLIBRARIES,
# never built.
set -eu
mode=mk
if [ "${1-}" = --table ]; then
  mode=table
  shift
fi
table () {
  sed -n -e 's/ *\\$//' \
    -e 's/^ *X (\([^,]*\), "\([^"]*\)", \([^,]*\), "\([^"]*\)", "\([^"]*\)", \(.*\), c)$/\1|\2|\3|\4|\5|\6/p' \
    "$1"
}
if [ "$mode" = table ]; then
  table "$1"
  exit 0
fi
echo "## levels.mk - generated from modules/cpu/cpu-levels.def by"
echo "## modules/cpu/gen-levels-mk.sh (make regenerates it): do not edit."
table "$1" | while IFS='|' read -r suffix name family flags march features; do
  v=modules_cpu_libcpu_${suffix}_la
  echo
  echo "EXTRA_LTLIBRARIES += modules/cpu/libcpu-$suffix.la"
  echo "${v}_SOURCES = \$(cpu_level_sources)"
  echo "${v}_CPPFLAGS = \$(AM_CPPFLAGS) -DTSR_CPU_SUFFIX=$suffix"
  echo "${v}_CFLAGS = \$(cpu_level_cflags)${flags:+ $flags}"
done
