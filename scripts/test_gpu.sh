#!/usr/bin/env bash
# The CUDA stage's correctness checks, on a machine with an NVIDIA GPU.
#   scripts/test_gpu.sh
# Builds the CUDA targets (build dir $XDC_BUILD_DIR, default build-cuda; XDC_NO_BUILD=1 uses
# what is there), then fails unless every check passes on the GPU — a machine without one
# fails here (nothing was checked), unlike scripts/test.sh, where the GPU tests fall back:
#   1. model_stage_api_test with XDC_EXPECT_GPU=1: the CUDA stage through the stage
#      interface equals the CPU stage (no fallback allowed);
#   2. xdc-bench-gpu check, "tiny" (grouped-query attention) and "small": loss and every
#      gradient tensor within 1e-4 relative of the CPU stage (fp32);
#   3. the same on the "medium" reference config (batch 2), then PyTorch autograd on the
#      same weights and tokens (bench_torch.py --check): within 1e-4;
#   3b. precision bf16: within 5e-2 of the fp32 CUDA stage and of torch.autocast(bf16);
#   4. xdc-bench-gpu pipeline: 4 stages on one GPU train 5 steps with the CPU run's losses
#      within 1e-4;
#   5. xdc-worker over MPI (mpirun from PATH): 4 ranks on GPU 0 vs on the CPU, the
#      per-iteration losses within 1e-4.
# PyTorch with CUDA is taken from $XDC_PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${XDC_BUILD_DIR:-build-cuda}
PY=${XDC_PYTHON:-python3}
TOL=1e-4
if [[ "${XDC_NO_BUILD:-0}" != 1 ]]; then
  if [[ ! -f "$BUILD_DIR/build.ninja" && ! -f "$BUILD_DIR/Makefile" ]]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXDC_CUDA=ON
  fi
  cmake --build "$BUILD_DIR" --target xdc-bench-gpu model_stage_api_test
fi
BENCH="$BUILD_DIR/workloads/model/xdc-bench-gpu"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
# within KEY... < JSON: every key of the JSON line at most $TOL
within() {
  local json=$1; shift
  "$PY" - "$json" "$TOL" "$@" <<'PYEOF'
import json, sys
j, tol = json.loads(sys.argv[1]), float(sys.argv[2])
bad = [f"{k} = {j[k]:.3g}" for k in sys.argv[3:] if not j[k] <= tol]
print("  " + ", ".join(f"{k} {j[k]:.3g}" for k in sys.argv[3:]) + (" FAIL" if bad else " ok"))
sys.exit(1 if bad else 0)
PYEOF
}

echo "== 1. stage interface on the GPU"
XDC_EXPECT_GPU=1 "$BUILD_DIR/tests/model/model_stage_api_test" || fail=1

for preset in tiny small; do
  echo "== 2. CUDA vs CPU stage, $preset"
  out=$("$BENCH" check --preset "$preset" --batch 4) || { fail=1; continue; }
  echo "  $out"
  within "$out" loss_rel_err grad_max_rel_err || fail=1
done

echo "== 3. CUDA vs CPU stage and PyTorch autograd, medium (batch 2)"
if out=$("$BENCH" check --preset medium --batch 2 --dump "$TMP/medium"); then
  echo "  $out"
  within "$out" loss_rel_err grad_max_rel_err || fail=1
  if t=$("$PY" workloads/model/bench_torch.py --device cuda --check "$TMP/medium"); then
    echo "  torch: $t"
    within "$t" loss_rel_err grad_max_rel_err || fail=1
  else
    fail=1
  fi
else
  fail=1
fi

echo "== 3b. precision bf16 (medium, batch 2) vs the fp32 CUDA stage and torch.autocast: within 5e-2"
if out=$("$BENCH" check --preset medium --batch 2 --precision bf16 --dump "$TMP/medium16"); then
  echo "  $out"
  TOL=5e-2 within "$out" loss_rel_err grad_max_rel_err || fail=1
  if t=$("$PY" workloads/model/bench_torch.py --device cuda --check "$TMP/medium16"); then
    echo "  torch autocast: $t"
    TOL=5e-2 within "$t" loss_rel_err grad_max_rel_err || fail=1
  else
    fail=1
  fi
else
  fail=1
fi

echo "== 4. 4-stage pipeline on one GPU vs the CPU, 5 training steps"
if out=$("$BENCH" pipeline --preset small --stages 4 --microbatches 4 --batch 4 --steps 5); then
  echo "  $out"
  within "$out" loss_max_rel_err || fail=1
else
  fail=1
fi

echo "== 5. xdc-worker over MPI: 4 ranks (1F1B, 4 stages of \"small\") on GPU 0 vs on the CPU"
# The workers as `xdc run` starts them, without the emulated network (all ranks on this
# machine, loopback): the same run spec with rank_gpus [0, 0, 0, 0] and without; the
# per-iteration losses must agree within 1e-4.
WORKER="$BUILD_DIR/harness/cli/xdc-worker"
if ! command -v mpirun >/dev/null; then
  echo "  no mpirun on this machine: the MPI pipeline on the GPU was NOT checked" >&2
  fail=1
else
  "$BUILD_DIR/harness/cli/xdc" schedule show 1f1b -p 4 -m 4 --csv > "$TMP/1f1b.csv"
  for dev in gpu cpu; do
    mkdir -p "$TMP/$dev"
    "$PY" - "$TMP" "$dev" <<'PYEOF'
import json, sys
tmp, dev = sys.argv[1], sys.argv[2]
spec = {"run_dir": f"{tmp}/{dev}", "schedule_name": "1f1b", "schedule_csv": f"{tmp}/1f1b.csv",
        "pipeline_ranks": 4, "data_parallel": 1, "rank_hosts": ["h0", "h1", "h2", "h3"],
        "microbatches": 4, "microbatch_size": 4, "iterations": 4, "warmup": 1, "seed": 1,
        "compute": "real", "model": {"preset": "small"},
        "stage_layers": [[0, 1], [1, 2], [2, 3], [3, 4]],
        "data_glob": "/usr/share/common-licenses/*", "learning_rate": 0.003, "threads": 1,
        "timeout_s": 300, "rank_gpus": [0, 0, 0, 0] if dev == "gpu" else []}
json.dump(spec, open(f"{tmp}/{dev}/spec.json", "w"))
PYEOF
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 4 --oversubscribe \
      --bind-to none --mca btl tcp,self -x LD_LIBRARY_PATH -x OPENBLAS_NUM_THREADS=1 \
      "$WORKER" --spec "$TMP/$dev/spec.json" > "$TMP/$dev/mpirun.log" 2>&1 ||
      { cat "$TMP/$dev/mpirun.log"; fail=1; }
  done
  out=$("$PY" - "$TMP" <<'PYEOF'
import json, sys
tmp = sys.argv[1]
g = json.load(open(f"{tmp}/gpu/rank3.json"))
c = json.load(open(f"{tmp}/cpu/rank3.json"))
rel = max(abs(a - b) / abs(b) for a, b in zip(g["loss"], c["loss"]))
print(json.dumps({"compute_gpu": g.get("compute"), "compute_cpu": c.get("compute"),
                  "loss_gpu": g["loss"], "loss_cpu": c["loss"], "loss_max_rel_err": rel}))
PYEOF
  ) || fail=1
  echo "  $out"
  [[ -n "$out" ]] && { within "$out" loss_max_rel_err || fail=1; }
fi

if [[ $fail -ne 0 ]]; then
  echo "test_gpu: FAILED" >&2
  exit 1
fi
echo "test_gpu: all GPU checks passed"
