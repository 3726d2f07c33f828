#!/usr/bin/env bash
# Mini Llama training throughput against PyTorch, in one go.
#   scripts/bench_model.sh [--seconds S] [--rounds R]
# Installs Debian's python3-torch if missing, builds xdc-bench-model, then measures training
# tokens/s of PyTorch's reference and ours at 1 and 2 threads, alternating the four runs in
# R rounds of S seconds (best of the rounds is kept, per side), so that both sides see the
# same background load; writes results/bench/model.json.
# Both sides run under the same environment, so the same OpenBLAS kernel: OpenBLAS 0.3.21
# does not know recent AVX-512 CPUs and falls back to its Haswell kernel (or the environment
# forces it with OPENBLAS_CORETYPE). Where the CPU has AVX-512 and the first pass ran an
# AVX2 kernel, a second pass runs both sides with OPENBLAS_CORETYPE=SKYLAKEX and writes
# results/bench/model_avx512.json.
# Other processes distort wall-clock figures: the JSON also carries tokens per CPU-second
# and the load average, and bench_record's record of the run.
. "$(dirname "$0")/lib.sh"
SECONDS_PER_RUN=5
ROUNDS=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds S] [--rounds R]" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3   # Debian's interpreter: that is where python3-torch installs
BENCH="$BUILD_DIR/workloads/model/xdc-bench-model"

if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "bench_model: installing python3-torch (Debian package)" >&2
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO=sudo
  $SUDO apt-get install -y python3-torch >&2
fi

build_targets xdc-bench-model

# One JSON line from a run: {"threads", "tokens_per_s", "tokens_per_cpu_s", ...}
# torch.set_num_threads() does not reach the OpenBLAS behind torch's libblas, which would
# otherwise start a thread per core: both pools are pinned; OMP_WAIT_POLICY=PASSIVE tames
# the OpenMP pool (the issue's reference setting).
torch_run() {
  OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=$1 OPENBLAS_NUM_THREADS=$1 \
    "$PY" workloads/model/bench_torch.py --threads "$1" --seconds "$SECONDS_PER_RUN"
}
ours_run() { "$BENCH" --throughput "$1" --seconds "$SECONDS_PER_RUN"; }
# best FIELD JSON-LINES...: the largest value of FIELD
best() {
  "$PY" -c "import json,sys; print(max(json.loads(l)[sys.argv[1]] for l in sys.argv[2:]))" "$@"
}

# run_pass OUT.json
run_pass() {
  local t1=() o1=() t2=() o2=() r
  for ((r = 1; r <= ROUNDS; r++)); do
    echo "bench_model: round $r/$ROUNDS (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    t1+=("$(torch_run 1)"); echo "  torch 1t ${t1[-1]}" >&2
    o1+=("$(ours_run 1)"); echo "  ours  1t ${o1[-1]}" >&2
    t2+=("$(torch_run 2)"); echo "  torch 2t ${t2[-1]}" >&2
    o2+=("$(ours_run 2)"); echo "  ours  2t ${o2[-1]}" >&2
  done
  "$BENCH" \
    --torch-1t "$(best tokens_per_s "${t1[@]}")" --torch-cpu-1t "$(best tokens_per_cpu_s "${t1[@]}")" \
    --torch-2t "$(best tokens_per_s "${t2[@]}")" --torch-cpu-2t "$(best tokens_per_cpu_s "${t2[@]}")" \
    --ours-1t "$(best tokens_per_s "${o1[@]}")" --ours-cpu-1t "$(best tokens_per_cpu_s "${o1[@]}")" \
    --ours-2t "$(best tokens_per_s "${o2[@]}")" --ours-cpu-2t "$(best tokens_per_cpu_s "${o2[@]}")" \
    --sgemm-peak "$(best sgemm_peak_gflops "${o1[@]}")" \
    -o "$1"
}

mkdir -p results/bench
run_pass results/bench/model.json
bench_record results/bench/model.json

if [[ "${OPENBLAS_CORETYPE:-}" != SKYLAKEX ]] && grep -qw avx512f /proc/cpuinfo &&
  grep -q '"openblas_core": "\(Haswell\|Zen\)"' results/bench/model.json; then
  echo >&2
  echo "bench_model: this CPU has AVX-512 but OpenBLAS ran its AVX2 kernel;" \
    "second pass with OPENBLAS_CORETYPE=SKYLAKEX on both sides" >&2
  OPENBLAS_CORETYPE=SKYLAKEX run_pass results/bench/model_avx512.json
  bench_record results/bench/model_avx512.json
fi
