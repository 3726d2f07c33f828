#!/usr/bin/env bash
# A WAN that TCP believes: writes results/bench/wan.json and prints it.
#   tcp_loss        one TCP flow over a lossy two-DC link, RTT 10/40/160 ms x loss
#                   0.01/0.1/1% (CUBIC) and BBR at 40 ms / 1%: goodput (median of 3) beside
#                   the same flow with every offload off (reference) and Mathis' model;
#                   loss by ping and by TCP retransmissions against the configured rate
#                   (harness/check/bench_wan.cpp)
#   kernel_backend  the kernel (netem) backend measured inside a User-Mode Linux guest
#                   (scripts/uml/bench_kernel_backend.sh)
#   dilation        time-dilated links: 5 and 10 Gbit/s at 5 ms one way, k = 10 and 20,
#                   as `xdc check` reports them (scripts/bench_dilation.sh)
#   tcp_settings_recorded  `xdc up` records the hosts' TCP settings in its state
#   bench           the record of the run (bench_record)
#   scripts/bench_wan.sh [OUT.json] [--quick]
# Needs root. About 15 minutes in full (each tcp_loss point ~1 min); --quick: 3 points.
. "$(dirname "$0")/lib.sh"
OUT=results/bench/wan.json
QUICK=()
for a in "$@"; do
  case "$a" in
    --quick) QUICK=(--quick); export RUNS=1 DILATIONS=10 ;;
    *) OUT=$a ;;
  esac
done
need_root bench_wan
build_targets xdc xdc-delayline xdc-bench-wan
export XDC_EXE="$PWD/$BUILD_DIR/harness/cli/xdc"
export XDC_DELAYLINE="$PWD/$BUILD_DIR/harness/cli/xdc-delayline"
# Each part's figures are kept beside OUT (a later failure loses none of them).
parts="$(dirname "$OUT")/wan-parts"
mkdir -p "$parts"

echo "== kernel backend in a User-Mode Linux guest" >&2
if scripts/uml/bench_kernel_backend.sh "$parts/kernel.json" >&2; then
  echo "{\"kernel_backend\": $(cat "$parts/kernel.json")}" > "$parts/kernel_backend.json"
else
  echo '{"kernel_backend": {"ran": false}}' > "$parts/kernel_backend.json"
fi

echo "== time dilation" >&2
scripts/bench_dilation.sh "$parts/dilation.json" >&2 ||
  echo '{"dilation": []}' > "$parts/dilation.json"

echo "== TCP settings recorded by xdc up" >&2
recorded=false
name="wanrec$$"
if "$XDC_EXE" up topologies/two-dc.yaml --name "$name" >&2; then
  if grep -q '"congestion"' "/run/xdc/$name/state.json"; then recorded=true; fi
  "$XDC_EXE" down "$name" >&2
fi
echo "{\"tcp_settings_recorded\": $recorded}" > "$parts/recorded.json"

echo "== TCP over lossy links" >&2
"$BUILD_DIR/harness/check/xdc-bench-wan" "${QUICK[@]}" --merge "$parts/kernel_backend.json" \
  --merge "$parts/dilation.json" --merge "$parts/recorded.json" "$OUT"
bench_record "$OUT"
