#!/usr/bin/env bash
# The CUDA stage against the CPU stage and PyTorch on an NVIDIA GPU (issue 16's contract).
#   scripts/bench_gpu.sh [--seconds S]
# Reference config "medium": dim 1024, 12 layers, 16 heads, seq 1024, batch 8, fp32.
# Writes results/bench/gpu.json: gpu, max_rel_err_vs_cpu, max_rel_err_vs_torch (loss and
# gradients of one step from the same weights, batch 2: the CPU side takes seconds),
# tokens_per_s and torch_tokens_per_s (training steps: F, B, clipping, AdamW; best 1 s
# window), achieved_tflops (tokens/s x config.h's FLOPs per token) and gemm_peak_tflops
# (fp32 8192^3 through PyTorch, TF32 off, as the stage's own GEMMs). bf16 is not measured:
# the CUDA stage computes in fp32 only.
# Build dir $XDC_BUILD_DIR (default build-cuda; XDC_NO_BUILD=1 uses what is there);
# PyTorch with CUDA from $XDC_PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=10
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds S]" >&2; exit 2 ;;
  esac
done
BUILD_DIR=${XDC_BUILD_DIR:-build-cuda}
PY=${XDC_PYTHON:-python3}
if [[ "${XDC_NO_BUILD:-0}" != 1 ]]; then
  if [[ ! -f "$BUILD_DIR/build.ninja" && ! -f "$BUILD_DIR/Makefile" ]]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXDC_CUDA=ON >&2
  fi
  cmake --build "$BUILD_DIR" --target xdc-bench-gpu >&2
fi
BENCH="$BUILD_DIR/workloads/model/xdc-bench-gpu"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
MODEL=(--dim 1024 --layers 12 --heads 16 --ffn 2736 --seq 1024 --vocab 256)

echo "bench_gpu: check vs the CPU stage (batch 2)" >&2
"$BENCH" check --preset medium --batch 2 --dump "$TMP/d" > "$TMP/check.json"
echo "bench_gpu: check vs PyTorch autograd" >&2
"$PY" workloads/model/bench_torch.py --device cuda --check "$TMP/d" > "$TMP/torch_check.json"
echo "bench_gpu: xdc training speed, ${SECONDS_PER_RUN} s" >&2
"$BENCH" speed --preset medium --batch 8 --seconds "$SECONDS_PER_RUN" > "$TMP/speed.json"
echo "bench_gpu: PyTorch eager training speed, ${SECONDS_PER_RUN} s" >&2
"$PY" workloads/model/bench_torch.py --device cuda "${MODEL[@]}" --batch 8 \
  --seconds "$SECONDS_PER_RUN" > "$TMP/torch_speed.json"
echo "bench_gpu: fp32 GEMM peak" >&2
"$PY" workloads/model/bench_torch.py --device cuda --gemm-peak > "$TMP/gemm.json"

mkdir -p results/bench
"$PY" - "$TMP" results/bench/gpu.json <<'PYEOF'
import json, os, sys
d, out = sys.argv[1], sys.argv[2]
r = {k: json.load(open(os.path.join(d, k + ".json")))
     for k in ("check", "torch_check", "speed", "torch_speed", "gemm")}
c, t, s, ts, g = r["check"], r["torch_check"], r["speed"], r["torch_speed"], r["gemm"]
res = {
    "gpu": s["device"],
    "config": s["config"],
    "dtype": "float32",
    "bf16": "not measured: the CUDA stage computes in fp32 only",
    "max_rel_err_vs_cpu": max(c["loss_rel_err"], c["grad_max_rel_err"]),
    "max_rel_err_vs_torch": max(t["loss_rel_err"], t["grad_max_rel_err"]),
    "rel_err_basis": "one step from the same weights (batch 2): max of |loss - ref| / |ref| and, "
                     "per parameter tensor, max|g - g_ref| / max|g_ref|",
    "tokens_per_s": round(s["tokens_per_s"], 1),
    "torch_tokens_per_s": ts["tokens_per_s"],
    "ratio_vs_torch": round(s["tokens_per_s"] / ts["tokens_per_s"], 3),
    "achieved_tflops": round(s["achieved_tflops"], 2),
    "gemm_peak_tflops": round(g["gemm_peak_tflops"], 2),
    "fraction_of_gemm_peak": round(s["achieved_tflops"] / g["gemm_peak_tflops"], 3),
    "torch": ts["torch"],
    "runs": r,
}
json.dump(res, open(out, "w"), indent=1)
print(f"GPU {res['gpu']}: xdc {res['tokens_per_s']:.0f} tok/s vs PyTorch eager "
      f"{res['torch_tokens_per_s']:.0f} tok/s (x{res['ratio_vs_torch']}), "
      f"{res['achieved_tflops']} TFLOP/s of a {res['gemm_peak_tflops']} fp32 GEMM peak; "
      f"rel err vs CPU {res['max_rel_err_vs_cpu']:.2g}, vs torch {res['max_rel_err_vs_torch']:.2g}")
PYEOF
