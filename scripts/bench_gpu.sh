#!/usr/bin/env bash
# The CUDA stage against the CPU stage and PyTorch on an NVIDIA GPU.
#   scripts/bench_gpu.sh [--seconds S]
# Reference config "medium": dim 1024, 12 layers, 16 heads, seq 1024, batch 8, fp32.
# Writes results/bench/gpu.json: gpu, max_rel_err_vs_cpu, max_rel_err_vs_torch (loss and
# gradients of one step from the same weights, batch 2: the CPU side takes seconds),
# tokens_per_s and torch_tokens_per_s (training steps: F, B, clipping, AdamW; best 1 s
# window), achieved_tflops (tokens/s x config.h's FLOPs per token) and gemm_peak_tflops
# (fp32 8192^3 through PyTorch, TF32 off, as the stage's own GEMMs); and the same under
# "bf16": the stage with model precision bf16 (GEMM operands in bf16, fp32 accumulation,
# everything else fp32) against PyTorch under torch.autocast(bfloat16), its error against
# the fp32 CUDA stage and against autocast's gradients, and the bf16 GEMM peak; "bench",
# the record of the run (bench_record).
# Build dir $XDC_BUILD_DIR (default build-cuda; XDC_NO_BUILD=1 uses what is there);
# PyTorch with CUDA from $XDC_PYTHON (default python3).
. "$(dirname "$0")/lib.sh"
SECONDS_PER_RUN=10
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds S]" >&2; exit 2 ;;
  esac
done
BUILD_DIR=${XDC_BUILD_DIR:-build-cuda}
PY=$XDC_PY
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
echo "bench_gpu: bf16: check vs the fp32 stage and autocast, speed, GEMM peak" >&2
{
  "$BENCH" check --preset medium --batch 2 --precision bf16 --dump "$TMP/d16" > "$TMP/check16.json" &&
    "$PY" workloads/model/bench_torch.py --device cuda --check "$TMP/d16" > "$TMP/torch_check16.json" &&
    "$BENCH" speed --preset medium --batch 8 --precision bf16 --seconds "$SECONDS_PER_RUN" > "$TMP/speed16.json" &&
    "$PY" workloads/model/bench_torch.py --device cuda "${MODEL[@]}" --batch 8 --dtype bf16 \
      --seconds "$SECONDS_PER_RUN" > "$TMP/torch_speed16.json" &&
    "$PY" workloads/model/bench_torch.py --device cuda --gemm-peak --dtype bf16 > "$TMP/gemm16.json"
} || echo "bench_gpu: a bf16 step failed (see above); gpu.json gets the fp32 figures" >&2

mkdir -p results/bench
"$PY" - "$TMP" results/bench/gpu.json <<'PYEOF'
import json, os, sys
d, out = sys.argv[1], sys.argv[2]
r = {k: json.load(open(os.path.join(d, k + ".json")))
     for k in ("check", "torch_check", "speed", "torch_speed", "gemm", "check16", "torch_check16",
               "speed16", "torch_speed16", "gemm16") if os.path.exists(os.path.join(d, k + ".json"))}
c, t, s, ts, g = r["check"], r["torch_check"], r["speed"], r["torch_speed"], r["gemm"]
res = {
    "gpu": s["device"],
    "config": s["config"],
    "dtype": "float32",
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
if all(k in r for k in ("check16", "torch_check16", "speed16", "torch_speed16", "gemm16")):
    c, t, s, ts, g = (r[k] for k in ("check16", "torch_check16", "speed16", "torch_speed16", "gemm16"))
    res["bf16"] = {
        "max_rel_err_vs_fp32_stage": max(c["loss_rel_err"], c["grad_max_rel_err"]),
        "max_rel_err_vs_torch_autocast": max(t["loss_rel_err"], t["grad_max_rel_err"]),
        "tokens_per_s": round(s["tokens_per_s"], 1),
        "torch_tokens_per_s": ts["tokens_per_s"],
        "ratio_vs_torch": round(s["tokens_per_s"] / ts["tokens_per_s"], 3),
        "achieved_tflops": round(s["achieved_tflops"], 2),
        "gemm_peak_tflops": round(g["gemm_peak_tflops"], 2),
    }
else:
    res["bf16"] = "not measured: a bf16 step failed (bench_gpu.sh's output says which)"
json.dump(res, open(out, "w"), indent=1)
print(f"GPU {res['gpu']}: xdc {res['tokens_per_s']:.0f} tok/s vs PyTorch eager "
      f"{res['torch_tokens_per_s']:.0f} tok/s (x{res['ratio_vs_torch']}), "
      f"{res['achieved_tflops']} TFLOP/s of a {res['gemm_peak_tflops']} fp32 GEMM peak; "
      f"rel err vs CPU {res['max_rel_err_vs_cpu']:.2g}, vs torch {res['max_rel_err_vs_torch']:.2g}")
if isinstance(res["bf16"], dict):
    b = res["bf16"]
    print(f"bf16: xdc {b['tokens_per_s']:.0f} tok/s vs PyTorch autocast {b['torch_tokens_per_s']:.0f} "
          f"(x{b['ratio_vs_torch']}), {b['achieved_tflops']} TFLOP/s of a {b['gemm_peak_tflops']} bf16 "
          f"GEMM peak; rel err vs the fp32 stage {b['max_rel_err_vs_fp32_stage']:.2g}, vs autocast "
          f"{b['max_rel_err_vs_torch_autocast']:.2g}")
PYEOF
bench_record results/bench/gpu.json
