#!/usr/bin/env bash
# Scale benchmark: how the predictor and the emulator grow.
#   predict:  `xdc simulate` of one 1F1B point, Llama-2 70B-shaped stages on H100s
#             (modeled), PP 64 over 8 DCs in a ring (15 ms, 100 Gbit/s), 256 microbatches,
#             DP 8 / 32 / 128 (512 / 2,048 / 8,192 world ranks). Every replica's stage s
#             is on host s (a DC holds at most 250 hosts), so a stage's all-reduce crosses
#             no link. Each run under a 12 GB address-space cap and PREDICT_TIMEOUT
#             seconds; one that does not finish is listed with "failed" and what it met.
#   emulate:  `xdc up` then `xdc down` of rings of DCs: 64 hosts (topologies/scale-64.yaml,
#             8 x 8), 256 (16 x 16) and 1,024 (topologies/scale-1024.yaml, 64 x 16); the
#             median of ROUNDS rounds, up and down back to back as a user would; peak_mb:
#             the xdc process's peak resident memory during up.
#   side_by_side_64: scripts/bench_network.sh's figures of this run (native and Mininet).
# Writes results/bench/scale.json = {"predict": [{"ranks", "microbatches", "dcs", "seconds",
# "peak_mb", "full_sim_error_pct"}], "emulate": [{"hosts", "dcs", "up_s", "down_s",
# "peak_mb"}], "side_by_side_64": {...}, "slopes": {...}, "load_before"} with bench_record's
# record. full_sim_error_pct is null: every point is the full simulation (no reduced model).
# slopes: least-squares slopes of log(seconds) and log(peak_mb) against log(ranks) or
# log(hosts) over the points that finished (1: linear growth, 2: quadratic).
#   sudo scripts/bench_scale.sh [ROUNDS]      (default 3; PREDICT_TIMEOUT=120)
. "$(dirname "$0")/lib.sh"
need_root
[ -x "$XDC" ] || scripts/setup.sh
ROUNDS=${1:-3}
PREDICT_TIMEOUT=${PREDICT_TIMEOUT:-120}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load=$(load_avg)
now() { date +%s.%N; }

# ---- predict ----------------------------------------------------------------------------
placement=""
for dc in $(seq 1 8); do
  for h in $(seq 1 8); do placement+="${placement:+, }dc$dc-h$h"; done
done
wan=""
for dc in $(seq 1 8); do wan+="    - {between: [dc$dc, dc$((dc % 8 + 1))], delay: 15ms, rate: 100gbit}"$'\n'; done
dcs=""
for dc in $(seq 1 8); do dcs+="    - {name: dc$dc, hosts: 8}"$'\n'; done
predict="["
for dp in 8 32 128; do
  ranks=$((dp * 64))
  cat >"$tmp/predict-$dp.yaml" <<YAML
name: bench-scale
topology:
  name: ring8
  intra_dc: {rate: 100gbit, delay: 10us}
  dcs:
$dcs  wan:
$wan
compute:
  modeled: {model: llama2-70b, device: h100, seq: 4096, efficiency: 0.5}
pipeline:
  placement: [$placement]
  data_parallel: $dp
microbatches: 256
microbatch_size: 1
iterations: 3
warmup: 1
schedules: [1f1b]
seed: 1
YAML
  rc=0
  (ulimit -v 12000000; timeout "$PREDICT_TIMEOUT" /usr/bin/time -f '%e %M' -o "$tmp/time-$dp" \
    "$XDC" simulate "$tmp/predict-$dp.yaml" -o "$tmp/sim-$dp" >"$tmp/out-$dp" 2>&1) || rc=$?
  read -r secs kb < <(tail -1 "$tmp/time-$dp" 2>/dev/null || echo "0 0")
  if [ "$rc" = 0 ]; then
    printf 'predict %5d ranks: %8.2f s, %6d MB\n' "$ranks" "$secs" "$((kb / 1024))"
    entry="{\"ranks\": $ranks, \"microbatches\": 256, \"dcs\": 8, \"seconds\": $secs, \"peak_mb\": $((kb / 1024)), \"full_sim_error_pct\": null}"
  else
    why=$([ "$rc" = 124 ] && echo "no answer within $PREDICT_TIMEOUT s" ||
      grep -m1 -iE "bad_alloc|memory|error" "$tmp/out-$dp" | tr -d '"\\' | cut -c1-120)
    [ -n "$why" ] || why="exit $rc"
    printf 'predict %5d ranks: failed after %s s (%s)\n' "$ranks" "${secs:-?}" "$why"
    entry="{\"ranks\": $ranks, \"microbatches\": 256, \"dcs\": 8, \"seconds\": null, \"peak_mb\": null, \"full_sim_error_pct\": null, \"failed\": \"$why (12 GB cap)\"}"
  fi
  [ "$predict" = "[" ] && predict+="$entry" || predict+=", $entry"
done
predict+="]"

# ---- emulate ----------------------------------------------------------------------------
ring_topology() {  # NAME DCS HOSTS_PER_DC > YAML
  echo "name: $1"
  echo "intra_dc: {rate: 10gbit}"
  echo "dcs:"
  for dc in $(seq 1 "$2"); do echo "  - {name: dc$dc, hosts: $3}"; done
  echo "wan:"
  for dc in $(seq 1 "$2"); do
    echo "  - {between: [dc$dc, dc$(($dc % $2 + 1))], delay: 2ms, rate: 1gbit}"
  done
}
ring_topology scale-256 16 16 >"$tmp/scale-256.yaml"
emulate="["
for spec in "64 8 topologies/scale-64.yaml" "256 16 $tmp/scale-256.yaml" \
  "1024 64 topologies/scale-1024.yaml"; do
  read -r hosts ndcs topo <<<"$spec"
  "$XDC" down benchscale >/dev/null 2>&1 || true
  ups=(); downs=(); mems=()
  for i in $(seq "$ROUNDS"); do
    t0=$(now)
    /usr/bin/time -f '%M' -o "$tmp/mem" "$XDC" up "$topo" --name benchscale >/dev/null 2>&1
    t1=$(now)
    "$XDC" down benchscale >/dev/null 2>&1
    t2=$(now)
    ups+=("$(echo "$t1 - $t0" | bc -l)"); downs+=("$(echo "$t2 - $t1" | bc -l)")
    mems+=("$(($(tail -1 "$tmp/mem") / 1024))")
  done
  up=$(median "${ups[@]}"); down=$(median "${downs[@]}"); mem=$(median "${mems[@]}")
  printf 'emulate %5d hosts in %2d DCs: up %.3f s, down %.3f s, %d MB\n' "$hosts" "$ndcs" \
    "$up" "$down" "$mem"
  entry="{\"hosts\": $hosts, \"dcs\": $ndcs, \"up_s\": $(printf %.4f "$up"), \"down_s\": $(printf %.4f "$down"), \"peak_mb\": $mem}"
  [ "$emulate" = "[" ] && emulate+="$entry" || emulate+=", $entry"
done
emulate+="]"

# ---- side by side at 64 hosts -------------------------------------------------------------
scripts/bench_network.sh "$ROUNDS" >"$tmp/network.log"
side=$("$XDC_PY" -c 'import json, sys
d = json.load(open("results/bench/network.json"))
print(json.dumps({"native_up_s": d["up_s"], "native_down_s": d["down_s"],
                  "mininet_up_s": d["mininet"]["up_s"], "mininet_down_s": d["mininet"]["down_s"]}))')

mkdir -p results/bench
printf '{"predict": %s, "emulate": %s, "side_by_side_64": %s, "rounds": %s, "load_before": %s}' \
  "$predict" "$emulate" "$side" "$ROUNDS" "$load" >"$tmp/raw.json"
"$XDC_PY" - "$tmp/raw.json" "$tmp/scale.json" <<'PY'
import json, math, sys
doc = json.load(open(sys.argv[1]))
def slope(points, x, y):
    pts = [(math.log(p[x]), math.log(p[y])) for p in points if p.get(y)]
    if len(pts) < 2:
        return None
    mx = sum(a for a, _ in pts) / len(pts); my = sum(b for _, b in pts) / len(pts)
    sxx = sum((a - mx) ** 2 for a, _ in pts)
    return round(sum((a - mx) * (b - my) for a, b in pts) / sxx, 2)
emu = [dict(p, cycle_s=p["up_s"] + p["down_s"]) for p in doc["emulate"]]
doc["slopes"] = {"predict_seconds_per_ranks": slope(doc["predict"], "ranks", "seconds"),
                 "predict_peak_mb_per_ranks": slope(doc["predict"], "ranks", "peak_mb"),
                 "emulate_up_down_s_per_hosts": slope(emu, "hosts", "cycle_s"),
                 "emulate_peak_mb_per_hosts": slope(doc["emulate"], "hosts", "peak_mb")}
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
cp "$tmp/scale.json" results/bench/scale.json
bench_record results/bench/scale.json
cat results/bench/scale.json
