#!/usr/bin/env bash
# Scale benchmark: `xdc up` then `xdc down` of the shipped 64-host, 8-DC topology, on the
# native backend and on the Mininet one (xdc up --backend mininet, harness/network/mininet.h).
# Prints both side by side and writes results/bench/network.json =
# {"hosts", "up_s", "down_s", ..., "mininet": {"up_s", "down_s"}, "load_before"} (top
# level: native; load_before: the 1-minute load average before), with bench_record's record.
#   scripts/bench_network.sh [ROUNDS]      (default 3; the figures are the median round)
. "$(dirname "$0")/lib.sh"
[ -x "$XDC" ] || scripts/setup.sh
TOPO=topologies/scale-64.yaml
ROUNDS=${1:-3}
NAME=bench64
now() { date +%s.%N; }

"$XDC" down "$NAME" >/dev/null 2>&1 || true
load=$(load_avg)
declare -A UP DOWN
for backend in native mininet; do
  ups=(); downs=()
  for i in $(seq "$ROUNDS"); do
    t0=$(now); o=$("$XDC" up "$TOPO" --name "$NAME" --backend "$backend"); t1=$(now)
    "$XDC" down "$NAME" >/dev/null; t2=$(now)
    [ "$backend" = native ] && out=$o
    ups+=("$(echo "$t1 - $t0" | bc -l)"); downs+=("$(echo "$t2 - $t1" | bc -l)")
    printf '%-8s round %d: up %.3f s, down %.3f s\n' "$backend" "$i" "${ups[-1]}" "${downs[-1]}"
  done
  UP[$backend]=$(median "${ups[@]}"); DOWN[$backend]=$(median "${downs[@]}")
done
up=${UP[native]}; down=${DOWN[native]}
printf '\n%-8s %8s %8s   (median of %d, 64 hosts)\n' backend up_s down_s "$ROUNDS"
for b in native mininet; do printf '%-8s %8.3f %8.3f\n' "$b" "${UP[$b]}" "${DOWN[$b]}"; done
hosts=$(grep -c '^  host ' <<<"$out")
dirs=$(grep -c '^  wan ' <<<"$out")
backend=$(grep '^  wan ' <<<"$out" | awk '{print $5}' | sort -u | paste -sd, -)
mkdir -p results/bench
cat > results/bench/network.json <<JSON
{"hosts": $hosts, "wan_directions": $dirs, "shaping_backend": "$backend", "rounds": $ROUNDS,
 "up_s": $(printf %.4f "$up"), "down_s": $(printf %.4f "$down"),
 "per_host_ms": $(echo "($up + $down) * 1000 / $hosts" | bc -l | xargs printf %.2f),
 "mininet": {"up_s": $(printf %.4f "${UP[mininet]}"), "down_s": $(printf %.4f "${DOWN[mininet]}")},
 "load_before": $load}
JSON
bench_record results/bench/network.json
cat results/bench/network.json
