#!/usr/bin/env bash
# `xdc check` of every shipped topology (topologies/*.yaml), one after another, each with
# the options its header asks for (a line "#   xdc check topologies/NAME.yaml OPTIONS";
# none: the defaults). Writes results/bench/check.json:
#   {"topologies": [{"file", "options", "rc", "seconds", "ok", "links", "report"}],
#    "load_before", "bench"}
# where report is the check's own JSON (per link: configured, measured, floor, verdicts).
#   scripts/bench_check.sh [OUT.json]
# Needs root and an idle machine (the checks measure it). Exit 1 when a check failed.
. "$(dirname "$0")/lib.sh"
need_root bench_check.sh
OUT=${1:-results/bench/check.json}
build_targets xdc
WORK=$(mktemp -d /tmp/xdc-bench-check.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
load=$(load_avg)
rows=()
failed=0
for topo in topologies/*.yaml; do
  name=$(basename "$topo" .yaml)
  opts=$(sed -n "s|^#   xdc check $topo \(.*\)$|\1|p" "$topo" | head -n 1)
  echo "bench_check: xdc check $topo $opts" >&2
  start=$(date +%s%N)
  rc=0
  # shellcheck disable=SC2086  # the header's options are words
  "$XDC" check "$topo" $opts -o "$WORK/$name.json" >"$WORK/$name.txt" 2>"$WORK/$name.err" || rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  cat "$WORK/$name.txt" >&2
  ((rc == 0)) || failed=1
  [[ -s $WORK/$name.json ]] || echo null >"$WORK/$name.json"
  rows+=("$("$XDC_PY" - "$topo" "$opts" "$rc" "$ms" "$WORK/$name.json" <<'PY'
import json, sys
topo, opts, rc, ms, path = sys.argv[1:]
report = json.load(open(path))
links = report["links"] if report else []
print(json.dumps({"file": topo, "options": opts, "rc": int(rc), "seconds": round(int(ms) / 1000, 1),
                  "ok": int(rc) == 0, "links": len(links), "report": report}))
PY
)")
done
out_dir "$OUT"
{
  echo '{"topologies": ['
  for i in "${!rows[@]}"; do echo "  ${rows[$i]}$([[ $i -lt $((${#rows[@]} - 1)) ]] && echo ,)"; done
  echo "], \"load_before\": $load}"
} >"$OUT"
bench_record "$OUT"
echo "bench_check: wrote $OUT" >&2
exit $failed
