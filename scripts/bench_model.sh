#!/usr/bin/env bash
# Mini Llama training throughput against PyTorch, in one go (issue 3, acceptance 4-5).
#   scripts/bench_model.sh [--seconds S]
# Installs Debian's python3-torch if missing, builds xdc-bench-model, runs PyTorch's
# reference at 1 and 2 threads, then ours, and writes results/bench/model.json.
# Both sides run under the same environment, so the same OpenBLAS kernel: OpenBLAS 0.3.21
# does not know recent AVX-512 CPUs and falls back to its Haswell kernel (or the environment
# forces it with OPENBLAS_CORETYPE). Where the CPU has AVX-512 and the first round ran an
# AVX2 kernel, a second round runs both sides with OPENBLAS_CORETYPE=SKYLAKEX and writes
# results/bench/model_avx512.json.
# Other processes on the machine distort wall-clock figures: the JSON also carries tokens
# per CPU-second and the load average.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=10
if [[ "${1:-}" == "--seconds" ]]; then SECONDS_PER_RUN=$2; fi
BUILD_DIR=${XDC_BUILD_DIR:-build}
PY=/usr/bin/python3   # Debian's interpreter: that is where python3-torch installs

if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "bench_model: installing python3-torch (Debian package)" >&2
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO=sudo
  $SUDO apt-get install -y python3-torch >&2
fi

if [[ ! -f "$BUILD_DIR/build.ninja" && ! -f "$BUILD_DIR/Makefile" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$BUILD_DIR" --target xdc-bench-model -j2 >&2

field() { "$PY" -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

# run_round OUT.json: PyTorch at 1 and 2 threads, then ours, in the current environment.
run_round() {
  # torch.set_num_threads() does not reach the OpenBLAS behind torch's libblas, which would
  # otherwise start a thread per core: pin both pools.
  echo "bench_model: PyTorch reference, 1 thread" >&2
  local t1 t2
  t1=$(OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
    "$PY" workloads/model/bench_torch.py --threads 1 --seconds "$SECONDS_PER_RUN")
  echo "  $t1" >&2
  echo "bench_model: PyTorch reference, 2 threads (OMP_WAIT_POLICY=PASSIVE)" >&2
  t2=$(OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \
    "$PY" workloads/model/bench_torch.py --threads 2 --seconds "$SECONDS_PER_RUN")
  echo "  $t2" >&2
  "$BUILD_DIR/workloads/model/xdc-bench-model" --seconds "$SECONDS_PER_RUN" \
    --torch-1t "$(field "$t1" tokens_per_s)" --torch-cpu-1t "$(field "$t1" tokens_per_cpu_s)" \
    --torch-2t "$(field "$t2" tokens_per_s)" --torch-cpu-2t "$(field "$t2" tokens_per_cpu_s)" \
    -o "$1"
}

mkdir -p results/bench
run_round results/bench/model.json

if [[ "${OPENBLAS_CORETYPE:-}" != SKYLAKEX ]] && grep -qw avx512f /proc/cpuinfo &&
  grep -q '"openblas_core": "\(Haswell\|Zen\)"' results/bench/model.json; then
  echo >&2
  echo "bench_model: this CPU has AVX-512 but OpenBLAS chose its AVX2 kernel;" \
    "second round with OPENBLAS_CORETYPE=SKYLAKEX on both sides" >&2
  OPENBLAS_CORETYPE=SKYLAKEX run_round results/bench/model_avx512.json
fi
