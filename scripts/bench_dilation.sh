#!/usr/bin/env bash
# Time dilation benchmark: WAN links faster than this machine
# carries, built k times slower (`xdc up --time-dilation k`) and measured by `xdc check`,
# which reports them undilated. Points: k in DILATIONS x rate in RATES, one-way delay
# DELAY, one TCP flow per direction (iperf3 -C $CONGESTION; "" = the hosts' default), each
# point measured RUNS times; the figures are medians over runs and both directions.
#   scripts/bench_dilation.sh [OUT.json]      (default results/bench/dilation.json)
# Writes {"dilation": [{"k", "rate_mbit", "delay_ms", "goodput_ratio", "rtt_err_pct",
#   "congestion", "runs", "goodput_mbit", "rtt_ms", "samples"}...], "load_before", "bench"}
# (load_before: the 1-minute load average before; bench: bench_record's) and prints it.
# goodput_ratio = median goodput / configured rate (TCP over an L2-counting shaper tops
# out near 1448/1514 = 95.6%); rtt_err_pct = |median RTT - base - 2 x delay| / (2 x delay).
# Socket buffers must exceed the dilated BDP (10 Gbit/s x 10 ms = 12.5 MB): the topology
# states 64 MiB in its `tcp:` block (stock Debian: 6 MiB / 4 MiB).
# Needs root and a build (XDC_BUILD_DIR, default build). Throughput depends on the
# machine's load: run it on a quiet machine, and read the medians.
. "$(dirname "$0")/lib.sh"
OUT=${1:-results/bench/dilation.json}
DILATIONS=${DILATIONS:-"10 20"}
RATES=${RATES:-"5gbit 10gbit"}
DELAY=${DELAY:-5ms}
RUNS=${RUNS:-3}
CONGESTION=${CONGESTION-cubic}
# Seconds of TCP ramp-up not measured (xdc check takes at least 30 round trips as built).
# CUBIC grows its window in wall-clock seconds, which dilation does not stretch: after
# HyStart leaves slow start early it needs ~25 s of wall clock to fill a 10 Gbit/s, 10 ms
# pipe, so CUBIC points omit 25 s by default.
if [[ "$CONGESTION" == cubic ]]; then TCP_OMIT=${TCP_OMIT:-25}; else TCP_OMIT=${TCP_OMIT:-2}; fi
NAME=${NAME:-bdil}
out_dir "$OUT"
load=$(load_avg)
work=$(mktemp -d)
trap '"$XDC" down "$NAME" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

cat >"$work/topo.yaml" <<YAML
# One WAN link, one host per side. Buffers: the hosts' TCP buffer limits must exceed the
# BDP of the emulated link (10 Gbit/s x 10 ms RTT = 12.5 MB).
name: $NAME
tcp: {rmem_max: 64mib, wmem_max: 64mib}
dcs:
  - {name: east, hosts: [e1]}
  - {name: west, hosts: [w1]}
wan:
  - between: [east, west]
    delay: $DELAY
    rate: RATE
YAML

cc_args=()
[[ -n "$CONGESTION" ]] && cc_args=(--congestion "$CONGESTION")
points=()
for k in $DILATIONS; do
  for rate in $RATES; do
    sed "s/rate: RATE/rate: $rate/" "$work/topo.yaml" >"$work/point.yaml"
    for run in $(seq 1 "$RUNS"); do
      "$XDC" up "$work/point.yaml" --name "$NAME" --time-dilation "$k" >/dev/null
      "$XDC" check "$NAME" --json --pings 100 --udp-packets 2000 --tcp-omit-seconds "$TCP_OMIT" \
        "${cc_args[@]}" \
        >"$work/k$k-$rate-$run.json" || true  # a failed verdict still has figures
      "$XDC" down "$NAME" >/dev/null
      echo "k=$k rate=$rate run $run done" >&2
    done
    points+=("$k $rate")
  done
done

"$XDC_PY" - "$work" "$OUT" "$RUNS" "$CONGESTION" "$load" "${points[@]}" <<'PY'
import glob, json, statistics, sys
work, out, runs, congestion = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
load = float(sys.argv[5])
res = []
for p in sys.argv[6:]:
    k, rate = p.split()
    goodput, rtt, delay_ms, rate_mbit, samples = [], [], None, None, []
    for f in sorted(glob.glob(f"{work}/k{k}-{rate}-*.json")):
        j = json.load(open(f))
        for l in j["links"]:
            m, c = l["measured"], l["configured"]
            delay_ms, rate_mbit = c["delay_ms"], c["rate_mbit"]
            goodput.append(m["goodput_mbit"])
            rtt.append(m["rtt_median_ms"] - m["base_rtt_ms"])
            samples.append({"from": l["from"], "goodput_mbit": round(m["goodput_mbit"], 1),
                            "rtt_ms": round(m["rtt_median_ms"] - m["base_rtt_ms"], 4)})
    g, r = statistics.median(goodput), statistics.median(rtt)
    res.append({"k": float(k), "rate_mbit": rate_mbit, "delay_ms": delay_ms,
                "goodput_ratio": round(g / rate_mbit, 4),
                "rtt_err_pct": round(abs(r - 2 * delay_ms) / (2 * delay_ms) * 100, 3),
                "congestion": congestion or "host default", "runs": runs,
                "goodput_mbit": round(g, 1), "rtt_ms": round(r, 4), "samples": samples})
text = json.dumps({"dilation": res, "load_before": load}, indent=2)
open(out, "w").write(text + "\n")
print(text)
PY
bench_record "$OUT"
