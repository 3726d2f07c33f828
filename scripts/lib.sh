# The preamble the benchmark and reproduction scripts share; source it first:
#   . "$(dirname "$0")/lib.sh"
# Sets -euo pipefail and moves to the repository root (ROOT). Defines
#   BUILD_DIR  XDC_BUILD_DIR, default build
#   XDC        the xdc CLI ($XDC, default $BUILD_DIR/harness/cli/xdc)
#   XDC_PY     python3 ($XDC_PYTHON overrides), with python/ on PYTHONPATH so that
#              `"$XDC_PY" -m xdc_results...` reads results (python/xdc_results)
#   BENCH_COMMAND  the command line that ran the script (scripts/NAME ARGS)
# and the helpers below.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
BUILD_DIR=${XDC_BUILD_DIR:-build}
XDC=${XDC:-$BUILD_DIR/harness/cli/xdc}
XDC_PY=${XDC_PYTHON:-python3}
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
BENCH_COMMAND="scripts/$(basename "$0")${*:+ $*}"

# need_root NAME: exit 2 unless root (network namespaces, qdiscs).
need_root() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "$1: needs root (network namespaces); try sudo $0" >&2
    exit 2
  fi
}

# build_targets TARGET...: configure BUILD_DIR if it is not, then build the targets.
build_targets() {
  if [[ ! -f "$BUILD_DIR/build.ninja" && ! -f "$BUILD_DIR/Makefile" ]]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
  fi
  cmake --build "$BUILD_DIR" -j2 --target "$@" >&2
}

# load_avg: the 1-minute load average (benchmarks record it: other processes distort them).
load_avg() { cut -d' ' -f1 /proc/loadavg; }

# median X...: the middle value (the lower of the two middle ones for an even count).
median() { printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"; }

# out_dir FILE: creates FILE's directory (a benchmark's JSON output).
out_dir() { mkdir -p "$(dirname "$1")"; }

# bench_record FILE: adds to a benchmark's JSON the record of this run: BENCH_COMMAND, the
# date, the commit and the machine (python/xdc_results/bench.py), from which
# `python3 -m xdc_results.figures` renders docs/figures.md.
bench_record() { "$XDC_PY" -m xdc_results.bench record "$1" --command "$BENCH_COMMAND"; }
