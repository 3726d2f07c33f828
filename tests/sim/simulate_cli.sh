#!/bin/bash
# `xdc simulate EXP.yaml` and `xdc simulate SWEEP.yaml` through the real CLI as a user
# without privileges (uid/gid 65534 when started as root): no namespaces, no root.
#  - EXP: summary.json in `xdc run`'s schema marked as a simulation (measured fields
#    absent, every schedule's simulated iteration > 0), per schedule the simulated trace
#    and schedule.csv, report.html;
#  - SWEEP: one row per point and schedule in sweep.csv, the simulated column filled and
#    the measured one empty; a sweep of `zip:` axes alone is a sweep too;
#  - `xdc schedule show EXP.yaml` draws each schedule of the experiment;
#  - bad input: exit 2 with FILE:LINE:COL, as `xdc run`.
# Usage: simulate_cli.sh XDC_BINARY   (from the source root)
set -u
xdc=$1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
out=$(mktemp -d)
chmod 777 "$out"
trap 'rm -rf "$out"' EXIT
as_user() {
  if [[ $(id -u) -eq 0 ]]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
  else
    "$@"
  fi
}

# An experiment: two schedules of tests/run/modeled-20ms.yaml.
if ! as_user "$xdc" simulate tests/run/modeled-20ms.yaml -o "$out/exp" >"$out/exp.log" 2>&1; then
  fail "xdc simulate EXP.yaml: exit $?"; cat "$out/exp.log"
fi
s=$out/exp/summary.json
[[ $(jq -r .simulated "$s") == true ]] || fail "summary.json: simulated is not true"
[[ $(jq -r .experiment "$s") == modeled-20ms ]] || fail "summary.json: experiment"
[[ $(jq -r .backend "$s") == null ]] || fail "summary.json: a backend in a simulation"
[[ $(jq '.schedules | length' "$s") == 2 ]] || fail "summary.json: not 2 schedules"
for name in 1f1b crosspipe-greedy; do
  e=$(jq ".schedules[] | select(.schedule == \"$name\")" "$s")
  [[ $(jq -r .ok <<<"$e") == true ]] || fail "$name: not ok"
  [[ $(jq '.simulated_iteration_s > 0' <<<"$e") == true ]] || fail "$name: no simulated time"
  [[ $(jq 'has("iteration_s_mean") or has("iteration_s")' <<<"$e") == false ]] ||
    fail "$name: a measured field in a simulation"
  for f in schedule.csv simulated.trace.csv simulated.trace.json; do
    [[ -s $out/exp/$name/$f ]] || fail "$name/$f missing"
  done
done
[[ -s $out/exp/report.html ]] || fail "report.html missing"
grep -q "simulation only" "$out/exp/report.html" || fail "report.html does not say simulation only"
# The traces it points to are the ones written.
grep -q "<code>1f1b/simulated.trace.json</code>" "$out/exp/report.html" ||
  fail "report.html does not name 1f1b/simulated.trace.json"
! grep -q "<code>1f1b/trace.json</code>" "$out/exp/report.html" ||
  fail "report.html names 1f1b/trace.json, which a simulation does not write"

# A run whose WAN changes (experiments/flap.yaml: a 2 s cut at iteration 5): the simulated
# iteration is the mean of the predicted iterations, as the measured one is of the measured.
as_user "$xdc" simulate experiments/flap.yaml -o "$out/flap" >"$out/flap.log" 2>&1
rc=$?
if [[ $rc -ne 0 ]]; then
  fail "xdc simulate flap.yaml: exit $rc"; cat "$out/flap.log"
fi
jq -e '.schedules[0] | (.simulated_series.iteration_s | add / length) as $m |
  (.simulated_iteration_s - $m | fabs) < 1e-9 and .simulated_iteration_s > .simulated_steady_iteration_s' \
  "$out/flap/summary.json" >/dev/null || fail "flap: simulated_iteration_s is not the series' mean"

# A sweep: tests/sweep/grid.yaml, 3 delays x 2 schedule lists x 2 sizes = 12 points.
if ! as_user "$xdc" simulate tests/sweep/grid.yaml -o "$out/sweep" >"$out/sweep.log" 2>&1; then
  fail "xdc simulate SWEEP.yaml: exit $?"; cat "$out/sweep.log"
fi
csv=$out/sweep/sweep.csv
rows=$(($(wc -l <"$csv") - 1))
[[ $rows -eq 12 ]] || fail "sweep.csv: $rows rows, expected 12"
header=$(head -1 "$csv")
col() { tr ',' '\n' <<<"$header" | grep -nx "$1" | cut -d: -f1; }
sim=$(col simulated_iteration_s)
meas=$(col iteration_s)
filled=$(tail -n +2 "$csv" | cut -d, -f"$sim" | grep -c '^[0-9.e+-]\+$')
[[ $filled -eq 12 ]] || fail "sweep.csv: $filled of 12 rows have simulated_iteration_s"
measured=$(tail -n +2 "$csv" | cut -d, -f"$meas" | grep -c .)
[[ $measured -eq 0 ]] || fail "sweep.csv: $measured rows have a measured iteration_s"
[[ -s $out/sweep/index.html ]] || fail "index.html missing"
# A simulated sweep's slowdown and bubbles come from the simulation: plotted, tabulated.
ssl=$(col simulated_slowdown)
filled=$(tail -n +2 "$csv" | cut -d, -f"$ssl" | grep -c '^[0-9.e+-]\+$')
[[ $filled -eq 12 ]] || fail "sweep.csv: $filled of 12 rows have simulated_slowdown"
for svg in "$out"/sweep/slowdown-vs-*.svg; do
  grep -q "<polyline" "$svg" || fail "$svg: no series"
done
grep -q "<td>[0-9.]* (sim)</td>" "$out/sweep/index.html" ||
  fail "index.html: no simulated slowdown or bubble in the table"

# A sweep with a `zip:` and no `grid:` (experiments/repro/crosspipe.yaml): its 4 points x 3
# schedules.
as_user "$xdc" simulate experiments/repro/crosspipe.yaml -o "$out/zip" >"$out/zip.log" 2>&1
rc=$?
if [[ $rc -ne 0 ]]; then
  fail "xdc simulate of a zip sweep: exit $rc"; cat "$out/zip.log"
fi
rows=$(($(wc -l <"$out/zip/sweep.csv") - 1))
[[ $rows -eq 12 ]] || fail "zip sweep.csv: $rows rows, expected 12"

# `xdc schedule show EXP.yaml`: the experiment's schedules as planned and predicted.
shown=$(as_user "$xdc" schedule show tests/run/modeled-20ms.yaml 2>&1) || fail "schedule show EXP.yaml: exit $?"
for name in 1f1b crosspipe-greedy; do
  grep -q "^$name: 4 ranks, 4 stages, 8 microbatches; simulated iteration" <<<"$shown" ||
    fail "schedule show EXP.yaml: no $name"
done

# Bad input: exit 2, FILE:LINE:COL, nothing written.
err=$(as_user "$xdc" simulate tests/run/bad-host.yaml -o "$out/bad" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] || fail "bad experiment: exit $rc, expected 2"
grep -q "tests/run/bad-host.yaml:9:" <<<"$err" || fail "bad experiment: no FILE:LINE:COL in: $err"
[[ ! -e $out/bad ]] || fail "bad experiment: $out/bad was written"

# A schedule the experiment's sizes do not allow: exit 2 at the list item that names it.
sed 's/^microbatches: .*/microbatches: 6/; s/^schedules: .*/schedules: [1f1b, interleaved]/' \
  tests/run/modeled-20ms.yaml >"$out/late.yaml"
sed -i "s|^topology: \([^/]\)|topology: $PWD/tests/run/\1|" "$out/late.yaml"
line=$(grep -n '^schedules:' "$out/late.yaml" | cut -d: -f1)
err=$(as_user "$xdc" simulate "$out/late.yaml" -o "$out/late" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] || fail "late schedule: exit $rc, expected 2 ($err)"
grep -q "late.yaml:$line:[0-9]*: schedules: interleaved: microbatches (6)" <<<"$err" ||
  fail "late schedule: no FILE:LINE:COL at the schedule in: $err"

# The same refusal at a sweep point: at the sweep's axis, naming the point (the line of the
# point's generated experiment is no line of the base file).
printf 'name: late\nexperiment: %s\ngrid:\n  microbatches: [8, 6]\n  schedules: [[interleaved]]\n' \
  "$PWD/tests/run/modeled-20ms.yaml" >"$out/late-sweep.yaml"
err=$(as_user "$xdc" simulate "$out/late-sweep.yaml" -o "$out/late-sweep" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] || fail "late schedule in a sweep: exit $rc, expected 2 ($err)"
grep -q "late-sweep.yaml:4:3: point (microbatches=6, schedules=interleaved): schedules: interleaved:" \
  <<<"$err" || fail "late schedule in a sweep: not at the axis: $err"

# A run described by flags is the experiment it writes: the flags, that file, and the same
# setting written by hand predict the same iteration per schedule.
flags=(-s 1f1b,overlap -p 4 -m 8 --dcs 2 --latency 20ms --bandwidth 1gbit --tf 20ms --tb 40ms
  --activation 4mb)
as_user "$xdc" simulate "${flags[@]}" -o "$out/flags" >"$out/flags.log" 2>&1 ||
  fail "xdc simulate FLAGS: exit $?"
as_user "$xdc" simulate "$out/flags/experiment.yaml" -o "$out/flags-file" >/dev/null 2>&1 ||
  fail "xdc simulate of the flags' experiment.yaml: exit $?"
as_user "$xdc" simulate tests/sim/flags-two-dc.yaml -o "$out/flags-hand" >/dev/null 2>&1 ||
  fail "xdc simulate tests/sim/flags-two-dc.yaml: exit $?"
its() { jq -c '[.schedules[] | [.schedule, .simulated_iteration_s]]' "$1/summary.json"; }
[[ "$(its "$out/flags")" == "$(its "$out/flags-file")" ]] ||
  fail "flags $(its "$out/flags") vs their experiment.yaml $(its "$out/flags-file")"
[[ "$(its "$out/flags")" == "$(its "$out/flags-hand")" ]] ||
  fail "flags $(its "$out/flags") vs the same setting by hand $(its "$out/flags-hand")"
[[ $(jq '[.schedules[].simulated_iteration_s > 0] | all' "$out/flags/summary.json") == true ]] ||
  fail "flags: no simulated iteration"

# The rate for a utilisation: a bisection per point of a sweep. At 0 ms the outer loops
# reach 50% at some rate and FP4 needs less than bf16; across 10 ms stock TCP's window
# keeps DP below 50% at any rate. Streaming DiLoCo's Table 4 under the paper's assumptions.
as_user "$xdc" simulate experiments/repro/diloco-table4-1b.yaml --utilisation 0.5 \
  -o "$out/rate" >/dev/null 2>&1 || fail "--utilisation 0.5 failed"
rate() { jq -r --arg p "$1" '.schedules[] | select(.point == $p) | .rate_bps' "$out/rate/rate.json"; }
[[ $(jq '.schedules | length' "$out/rate/rate.json") == 10 ]] || fail "--utilisation: not 10 rows"
bf16=$(rate delay-0ms_method-streaming-overlapped)
fp4=$(rate delay-0ms_method-streaming-overlapped-fp4)
[[ $bf16 != null && $fp4 != null && $(jq -n "$fp4 < $bf16") == true ]] ||
  fail "--utilisation: fp4 $fp4 vs bf16 $bf16 bit/s"
[[ $(rate delay-10ms_method-dp) == null ]] || fail "--utilisation: DP over 10 ms reached 50%"
grep -q "within 20% of the paper's: 59 of 60" <(as_user "$xdc" simulate --paper-table4 \
  -o "$out/table4") || fail "--paper-table4: not 59 of 60 cells within 20%"
[[ $(jq length "$out/table4/table4.json") == 75 ]] || fail "--paper-table4: not 75 cells"
err=$(as_user "$xdc" simulate --paper-table4 --stages 3 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] || fail "--paper-table4 --stages 3: exit $rc, expected 2 ($err)"

# Bad flags: exit 2, nothing printed on stdout, nothing written.
res=$(as_user "$xdc" simulate -s 1f1b,interleaved -p 4 -m 8 -v 0 -o "$out/chunks" 2>/dev/null)
rc=$?
[[ $rc -eq 2 && -z $res && ! -e $out/chunks ]] ||
  fail "--chunks 0: exit $rc, stdout '$res', expected 2 and nothing"
res=$(as_user "$xdc" simulate -s 1f1b --memory-cap 2 -o "$out/cap" 2>/dev/null)
rc=$?
[[ $rc -eq 2 && -z $res && ! -e $out/cap ]] ||
  fail "1f1b past --memory-cap 2: exit $rc, stdout '$res', expected 2 and nothing"
as_user "$xdc" schedule show 1f1b --memory-cap 2 >/dev/null 2>&1
rc=$?
[[ $rc -eq 2 ]] || fail "schedule show 1f1b past --memory-cap 2: exit $rc, expected 2"
touch "$out/afile"
err=$(as_user "$xdc" simulate tests/run/modeled-20ms.yaml -o "$out/afile" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 2 ]] || fail "-o FILE: exit $rc, expected 2 ($err)"

if [[ $fails -ne 0 ]]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "ok"
