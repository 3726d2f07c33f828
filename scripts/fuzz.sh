#!/usr/bin/env bash
# Fuzzes every parser of a user's file with libFuzzer, ASan and UBSan (tests/fuzz: one
# target per parser, TARGET_fuzz.cpp), one target after another, at nice 19
# (the --smoke run at its caller's priority):
#   scripts/fuzz.sh [SECONDS]          each target SECONDS (default 600); writes
#                                      results/bench/fuzz.json
#   scripts/fuzz.sh --smoke [SECONDS]  the test suite's run (ctest Fuzz.ParsersKeepTheirContract):
#                                      each target replays its corpus, then fuzzes SECONDS
#                                      (default 4) from seed 1 with a 30 s hang limit (a
#                                      test asserts behaviour: a slow machine is no
#                                      finding; the campaign's 1 s is a measurement);
#                                      exit 77 without clang and libFuzzer
#   XDC_FUZZ_TARGETS="topology lab"    only these targets
#   XDC_FUZZ_RESUME=DIR                 go on from a run's kept directory ("findings", or
#                                      the one a killed run left): a target it finished
#                                      (DIR/TARGET/row.json) is not run again, the others
#                                      start from the corpus it grew (DIR/TARGET/corpus) too
# Builds build-fuzz/ (XDC_FUZZ_BUILD_DIR overrides; clang, -DXDC_FUZZ=ON, only the parsers'
# libraries) and runs each target over a copy of tests/fuzz/corpus/TARGET/ in a directory
# outside the repository, with tests/fuzz/dict/TARGET.dict where there is one, -timeout=1
# (an input running over 1 s is a hang; 30 s with --smoke) and -rss_limit_mb=2048. fuzz.json:
#   {"targets": [{"name", "seconds", "executions", "crashes", "hangs", "stalls", "seeds",
#                 "corpus", "edges"}], "timeout_s", "rss_limit_mb", "load_before", "findings"}
# executions from libFuzzer's final stats (summed over restarts); crashes: the crash-,
# oom- and leak- files it wrote; hangs: its timeout- files whose input is still over 1 s
# replayed alone, stalls: the others; corpus and edges as it ended.
# A finding stops libFuzzer: the script restarts it for the time left (at most 10 times a
# target) on the corpus grown so far. Findings stay in the "findings" directory; each
# becomes a fixture (tests/fuzz/corpus/TARGET/ and a regression test). Then 40 inputs of
# each grown corpus go through the CLI (scripts/fuzz_cli.sh; fuzz.json's "cli": its JSON).
# Exit 1 on any finding or CLI failure.
. "$(dirname "$0")/lib.sh"

SMOKE=0
if [[ ${1:-} == --smoke ]]; then
  SMOKE=1
  shift
fi
SECONDS_EACH=${1:-$([[ $SMOKE == 1 ]] && echo 4 || echo 600)}
FUZZ_BUILD=${XDC_FUZZ_BUILD_DIR:-build-fuzz}
TIMEOUT_S=$([[ $SMOKE == 1 ]] && echo 30 || echo 1)
RSS_MB=2048
TARGETS=${XDC_FUZZ_TARGETS:-$(ls tests/fuzz/*_fuzz.cpp | xargs -n1 basename | sed 's/_fuzz\.cpp$//')}

# libFuzzer is clang's: a program built with -fsanitize=fuzzer must link and run.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/xdc-fuzz.XXXXXX")
# Removed at exit, whatever ends the script (a failed build too), unless it holds findings.
KEEP_WORK=0
trap '[[ $KEEP_WORK == 1 ]] || rm -rf "$WORK"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' >"$WORK/probe.cpp"
if ! command -v clang++ >/dev/null ||
  ! clang++ -fsanitize=fuzzer,address,undefined "$WORK/probe.cpp" -o "$WORK/probe" >/dev/null 2>&1 ||
  ! "$WORK/probe" -runs=0 >/dev/null 2>&1; then
  echo "fuzz: needs clang++ with libFuzzer (Debian: clang libclang-rt-14-dev; scripts/setup.sh" \
    "with XDC_TEST_TOOLS=1 installs them)" >&2
  [[ $SMOKE == 1 ]] && echo "skipped" && exit 77
  exit 2
fi

# A campaign yields the machine (nice 19). The test suite's run builds and runs at its
# caller's priority: at nice 19 on a machine busy at nice 0 it gets a few percent of a core
# and can outlast the test's timeout.
NICE=(nice -n 19)
[[ $SMOKE == 1 ]] && NICE=()
if [[ ! -f "$FUZZ_BUILD/build.ninja" ]]; then
  "${NICE[@]}" cmake -S . -B "$FUZZ_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DXDC_FUZZ=ON >&2
fi
"${NICE[@]}" cmake --build "$FUZZ_BUILD" -j "$(nproc)" >&2

LOAD=$(load_avg)
found=0
rows=()
for t in $TARGETS; do
  if [[ $SMOKE == 0 && -f ${XDC_FUZZ_RESUME:-}/$t/row.json ]]; then
    rows+=("$(cat "$XDC_FUZZ_RESUME/$t/row.json")")
    echo "fuzz: $t: done in $XDC_FUZZ_RESUME: ${rows[-1]}"
    continue
  fi
  bin="$FUZZ_BUILD/tests/fuzz/xdc-fuzz-$t"
  corpus="$WORK/$t/corpus"
  findings="$WORK/$t/findings"
  mkdir -p "$corpus" "$findings"
  cp tests/fuzz/corpus/"$t"/* "$corpus"/
  seeds=$(ls "$corpus" | wc -l)
  opts=(-timeout=$TIMEOUT_S -rss_limit_mb=$RSS_MB -artifact_prefix="$findings/" -print_final_stats=1
    -error_exitcode=1 -timeout_exitcode=1)
  [[ -f tests/fuzz/dict/$t.dict ]] && opts+=(-dict=tests/fuzz/dict/$t.dict)
  # The test suite's run draws the same mutations every time (a slower machine runs fewer
  # of them): it checks the contract on what the campaign has found, it does not search.
  [[ $SMOKE == 1 ]] && opts+=(-seed=1)
  more=()
  [[ -d ${XDC_FUZZ_RESUME:-}/$t/corpus ]] && more=("$XDC_FUZZ_RESUME/$t/corpus")
  log="$WORK/$t/log"
  if [[ $SMOKE == 1 ]]; then
    if ! "${NICE[@]}" "$bin" "${opts[@]}" -runs=0 "$corpus" >"$log" 2>&1 ||
      ! "${NICE[@]}" "$bin" "${opts[@]}" -max_total_time="$SECONDS_EACH" "$corpus" >>"$log" 2>&1; then
      tail -n 40 "$log" >&2
      echo "fuzz: $t: a finding, kept in $findings (reproduce: $bin FILE)" >&2
      found=1
      continue
    fi
    echo "fuzz: $t: $(grep -o 'number_of_executed_units: [0-9]*' "$log" | awk '{s += $2} END {print s}')" \
      "executions, corpus replayed and fuzzed ${SECONDS_EACH}s: ok"
    continue
  fi
  start=$(date +%s)
  executions=0
  for _ in $(seq 10); do
    left=$((SECONDS_EACH - ($(date +%s) - start)))
    ((left > 0)) || break
    rc=0
    "${NICE[@]}" "$bin" "${opts[@]}" -max_total_time="$left" "$corpus" "${more[@]}" >"$log" 2>&1 || rc=$?
    # The final stats; a fuzzer killed from outside prints none: its last "#N" progress line.
    n=$(grep -o 'number_of_executed_units: [0-9]*' "$log" | tail -n 1 | awk '{print $2}' || true)
    [[ -n $n ]] || n=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#' || true)
    executions=$((executions + ${n:-0}))
    [[ $rc == 0 ]] && break
    cat "$log" >>"$WORK/$t/findings.log"
  done
  seconds=$(($(date +%s) - start))
  crashes=$(find "$findings" -name 'crash-*' -o -name 'oom-*' -o -name 'leak-*' | wc -l)
  # A timeout is a hang only if the input is slow again alone: replayed three times, its
  # fastest run still over TIMEOUT_S. Otherwise the machine stalled the fuzzer (another
  # process, swapping), which is counted as a stall and kept, not as the parser's hang.
  hangs=0
  stalls=0
  for f in $(find "$findings" -name 'timeout-*'); do
    best=
    for _ in 1 2 3; do
      t0=$(date +%s%N)
      "$bin" -timeout=60 "$f" >/dev/null 2>&1 || true
      ms=$((($(date +%s%N) - t0) / 1000000))
      [[ -z $best || $ms -lt $best ]] && best=$ms
    done
    if ((best > TIMEOUT_S * 1000)); then hangs=$((hangs + 1)); else stalls=$((stalls + 1)); fi
    echo "fuzz: $t: $(basename "$f") replays in ${best} ms at best" >&2
  done
  edges=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | awk '{print $2}' || true)
  ((crashes + hangs == 0)) || found=1
  echo "fuzz: $t: ${seconds}s, $executions executions, $crashes crashes, $hangs hangs, $stalls stalls"
  printf '{"name": "%s", "seconds": %d, "executions": %d, "crashes": %d, "hangs": %d, "stalls": %d, "seeds": %d, "corpus": %d, "edges": %d}' \
    "$t" "$seconds" "$executions" "$crashes" "$hangs" "$stalls" "$seeds" "$(ls "$corpus" | wc -l)" "${edges:-0}" \
    >"$WORK/$t/row.json"
  rows+=("$(cat "$WORK/$t/row.json")")
done

if [[ $SMOKE == 1 ]]; then
  [[ $found == 1 ]] && KEEP_WORK=1
  exit $found
fi
# A sample of each grown corpus through the programs a user runs (scripts/fuzz_cli.sh):
# every input accepted or refused with exit 2 and FILE:LINE:COL.
# A target taken from XDC_FUZZ_RESUME: the corpus it grew there, else the shipped one.
mkdir -p "$WORK/grown"
for t in $TARGETS; do
  grown=$WORK/$t/corpus
  [[ -d $grown ]] || grown=${XDC_FUZZ_RESUME:-/nonexistent}/$t/corpus
  [[ -d $grown ]] || grown=$ROOT/tests/fuzz/corpus/$t
  ln -sfn "$(realpath "$grown")" "$WORK/grown/$t"
done
XDC_FUZZ_TARGETS="$TARGETS" scripts/fuzz_cli.sh --json "$WORK/cli.json" "$WORK/grown" 40 >/dev/null ||
  found=1
OUT=results/bench/fuzz.json
out_dir "$OUT"
{
  echo '{"targets": ['
  for i in "${!rows[@]}"; do echo "  ${rows[$i]}$([[ $i -lt $((${#rows[@]} - 1)) ]] && echo ,)"; done
  echo "], \"timeout_s\": $TIMEOUT_S, \"rss_limit_mb\": $RSS_MB, \"load_before\": $LOAD,"
  echo " \"cli\": $(cat "$WORK/cli.json"),"
  echo " \"findings\": $([[ $found == 1 ]] && echo "\"$WORK\"" || echo null)}"
} >"$OUT"
bench_record "$OUT"
echo "fuzz: wrote $OUT$([[ $found == 1 ]] && echo "; findings in $WORK")"
[[ $found == 1 ]] && KEEP_WORK=1
exit $found
