#!/usr/bin/env bash
# Scale benchmark: `xdc up` then `xdc down` of the shipped 64-host, 8-DC topology.
# Prints and writes results/bench/network.json = {"hosts", "up_s", "down_s", ...}.
#   scripts/bench_network.sh [ROUNDS]      (default 3; the figures are the median round)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${XDC_BUILD_DIR:-build}
[ -x "$BUILD_DIR/harness/cli/xdc" ] || scripts/setup.sh
XDC=$BUILD_DIR/harness/cli/xdc
TOPO=topologies/scale-64.yaml
ROUNDS=${1:-3}
NAME=bench64
now() { date +%s.%N; }

"$XDC" down "$NAME" >/dev/null 2>&1 || true
ups=(); downs=(); out=""
for i in $(seq "$ROUNDS"); do
  t0=$(now); out=$("$XDC" up "$TOPO" --name "$NAME"); t1=$(now)
  "$XDC" down "$NAME" >/dev/null; t2=$(now)
  ups+=("$(echo "$t1 - $t0" | bc -l)"); downs+=("$(echo "$t2 - $t1" | bc -l)")
  printf 'round %d: up %.3f s, down %.3f s\n' "$i" "${ups[-1]}" "${downs[-1]}"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
up=$(median "${ups[@]}"); down=$(median "${downs[@]}")
hosts=$(grep -c '^  host ' <<<"$out")
dirs=$(grep -c '^  wan ' <<<"$out")
backend=$(grep '^  wan ' <<<"$out" | awk '{print $5}' | sort -u | paste -sd, -)
mkdir -p results/bench
cat > results/bench/network.json <<JSON
{"hosts": $hosts, "wan_directions": $dirs, "shaping_backend": "$backend", "rounds": $ROUNDS,
 "up_s": $(printf %.4f "$up"), "down_s": $(printf %.4f "$down"),
 "per_host_ms": $(echo "($up + $down) * 1000 / $hosts" | bc -l | xargs printf %.2f)}
JSON
cat results/bench/network.json
