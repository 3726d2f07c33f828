#!/bin/bash
# `xdc check NET --json` through the real CLI, on a network built under time dilation:
# standard output is exactly one JSON document (progress goes to standard error), the
# figures are undilated (a 1 Gbit/s, 5 ms link built at k = 10 as 100 Mbit/s, 50 ms reads
# 1 Gbit/s and 10 ms), a check asking for another k than the network's is refused, and
# --link chooses links.
# Usage: check_json_cli.sh XDC_BINARY (from the repository root)
set -u
xdc=$1
net=tjson
out=$(mktemp -d)
trap '"$xdc" down "$net" >/dev/null 2>&1; rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$xdc" up tests/network/dilated-pair.yaml --name "$net" --time-dilation 10 >"$out/up.txt" 2>&1 ||
  fail "xdc up: $(cat "$out/up.txt")"
grep -q "as built: delay 50 ms, rate 100 mbit" "$out/up.txt" || fail "xdc up output: $(cat "$out/up.txt")"

"$xdc" check "$net" --json --pings 40 --udp-packets 1000 --tcp-seconds 3 >"$out/check.json" \
  2>"$out/check.err"
rc=$?
python3 - "$out/check.json" "$rc" <<'PY' || fail "check output (stderr: $(cat "$out/check.err"))"
import json, sys
text = open(sys.argv[1]).read()
j = json.loads(text)  # the whole of standard output must be one JSON document
rc = int(sys.argv[2])
assert j["time_dilation"] == 10, j["time_dilation"]
assert len(j["links"]) == 2
for l in j["links"]:
    m, c = l["measured"], l["configured"]
    assert c["delay_ms"] == 5 and c["rate_mbit"] == 1000, c
    rtt = m["rtt_median_ms"] - m["base_rtt_ms"]
    print(f'{l["from"]}->{l["to"]}: RTT {rtt:.3f} ms (10), goodput {m["goodput_mbit"]:.0f} Mbit/s (1000)')
    assert abs(rtt - 10) <= 0.2, rtt
    # Undilated: a 100 Mbit/s link read as ~1 Gbit/s, not ~100. How close TCP gets to the
    # rate in 3 s depends on the machine's load (a benchmark's figure: bench_dilation.sh).
    assert 500 <= m["goodput_mbit"] <= 1010, m["goodput_mbit"]
assert rc == 0, f"xdc check exited {rc}"
PY
[[ -s "$out/check.err" ]] || fail "no progress on standard error"

"$xdc" check "$net" --time-dilation 5 --no-throughput >/dev/null 2>"$out/err.txt"
[[ $? -eq 2 ]] || fail "--time-dilation 5 on a network built at 10: expected exit 2"
grep -q "built with time dilation 10" "$out/err.txt" || fail "message: $(cat "$out/err.txt")"

# --link picks links by their two DCs, in either order; a pair without a WAN link: exit 2
# naming the ones there are.
"$xdc" check "$net" --link west east --json --no-throughput --pings 20 --udp-packets 200 \
  >"$out/one.json" 2>/dev/null || fail "--link west east: exit $?"
python3 -c 'import json, sys; assert len(json.load(open(sys.argv[1]))["links"]) == 2' \
  "$out/one.json" || fail "--link west east: $(cat "$out/one.json")"
"$xdc" check "$net" --link east north --no-throughput >/dev/null 2>"$out/err.txt"
[[ $? -eq 2 ]] || fail "--link east north: expected exit 2"
grep -q "with a WAN link between them (east west)" "$out/err.txt" ||
  fail "--link message: $(cat "$out/err.txt")"

# An experiment that still uses message_scale: exit 2, FILE:LINE:COL, pointing to time_dilation.
sed 's/seq: 1024, efficiency: 0.5}/seq: 1024, efficiency: 0.5, message_scale: 0.1}/; /^time_dilation/d' \
  tests/run/modeled-20ms.yaml >"$out/old.yaml"
sed -i "s|\.\./\.\./topologies|$PWD/topologies|" "$out/old.yaml"
"$xdc" run "$out/old.yaml" --name tjsonold >/dev/null 2>"$out/old.err"
[[ $? -eq 2 ]] || fail "message_scale: expected exit 2; $(cat "$out/old.err")"
grep -q "^xdc: $out/old.yaml:[0-9]*:[0-9]*: .*time_dilation" "$out/old.err" ||
  fail "message_scale message: $(cat "$out/old.err")"
echo "ok"
