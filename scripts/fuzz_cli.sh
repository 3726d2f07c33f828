#!/usr/bin/env bash
# Feeds a sample of the fuzz corpora through the real programs, as a user without root:
#   scripts/fuzz_cli.sh [--json OUT] [DIR] [N]
# DIR: a corpus root with one TARGET/ folder per fuzz target (default tests/fuzz/corpus; a
# grown corpus, e.g. fuzz.sh's findings directory, works too); N: inputs per target
# (default 40), every k-th of its files sorted by name (k = ceil(files / N)).
# XDC_FUZZ_TARGETS="topology lab" checks only these. XDC and XDC_WORKER name the programs
# (default build/harness/cli/xdc and build/harness/cli/xdc-worker, built when unset).
#
# Each input is written to a file of its kind and read by the command a user would run on
# such a file (below), stopped before anything is built: as root, each command runs as
# uid 65534, except `xdc up` and `xdc run`, which need root and are stopped by a refusal
# that follows the file's reading (an invalid network name, --network with --lab), before
# anything is built. An input passes when the command
#   exits 0, or runs past 20 s (accepted; cut),
#   exits 2 with the refusal that stops it once the file is read (accepted; stopped),
#   the worker: exits 1 (the spec was read; the run failed: no MPI world of its size, no
#   files where it points), or
#   exits 2 printing "xdc: FILE:LINE:COL: ..." (the worker: "xdc-worker: rank R (host H):
#   FILE:LINE:COL: ...") for an existing FILE (rejected with a position);
# anything else (a crash, a signal, exit 1, exit 2 without a position) is a failure,
# listed with its input. The JSON (OUT, or standard output) is
#   {"corpus", "per_target", "timeout_s", "targets": [{"name", "command", "checked",
#    "accepted", "accepted_cut", "rejected_with_position", "failures": [{"input", "exit",
#    "message"}]}]}
# Exit 1 on any failure.
GIVEN_XDC=${XDC:-}
. "$(dirname "$0")/lib.sh"

JSON_OUT=
if [[ ${1:-} == --json ]]; then
  JSON_OUT=$2
  shift 2
fi
CORPUS=${1:-tests/fuzz/corpus}
PER_TARGET=${2:-40}
TIMEOUT_S=20
TARGETS=${XDC_FUZZ_TARGETS:-$(find tests/fuzz -maxdepth 1 -name '*_fuzz.cpp' -printf '%f\n' | sed 's/_fuzz\.cpp$//' | LC_ALL=C sort)}
WORKER=${XDC_WORKER:-$BUILD_DIR/harness/cli/xdc-worker}
[[ -n $GIVEN_XDC ]] || build_targets xdc xdc-worker
XDC=$(realpath "$XDC")
WORKER=$(realpath "$WORKER")

# The YAML inputs are read as experiments/fuzz-input.yaml of this checkout, as the fuzz
# targets read them (tests/fuzz/fuzz_input.h): WORK/experiments holds links to what
# experiments/ holds, WORK/topologies is topologies/.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/xdc-fuzz-cli.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/experiments"
ln -s "$ROOT"/experiments/* "$WORK/experiments/"
ln -s "$ROOT/topologies" "$WORK/topologies"
chmod -R a+rwX "$WORK"
IN_DIR=$WORK/experiments

# as_user CMD...: CMD, as uid/gid 65534 when this script runs as root.
as_user() {
  if [[ $(id -u) -eq 0 ]]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
  else
    "$@"
  fi
}

# json_str TEXT: TEXT as a JSON string (bytes other than printable ASCII as spaces).
json_str() {
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$(LC_ALL=C tr -c ' -~' ' ' <<<"$s" | sed 's/ *$//')"
}

# topology_with TEXT: a topology of two DCs whose one WAN link ends in TEXT (the keys of
# the link, indented by 4).
topology_with() {
  printf 'name: fuzzcli\ndcs:\n  - {name: a, hosts: 1}\n  - {name: b, hosts: 1}\n'
  printf 'wan:\n  - between: [a, b]\n    delay: 10ms\n%s\n' "$1"
}

# prepare TARGET INPUT: writes INPUT as the file a user's command reads, sets CMD (the
# command), FILE (the input's path), STOP (the message of the refusal that stops the
# command once the file is read, "" when there is none) and PAST (1: exit 1 means the
# file was read and what followed failed).
#   topology          xdc up --name 'not valid!' TOPO (the name is refused before a build)
#   changes           the same, of a topology whose WAN link's `changes:` is the input
#                     (each line indented by 6)
#   trace_csv         the same, of a topology whose WAN link's `trace:` is the input as a
#                     CSV (compress: 20); mahimahi: as format: mahimahi, window: 1ms; loop:
#                     true for an input of odd length (as the fuzz targets)
#   experiment        xdc simulate EXP -o DIR
#   sweep             xdc sweep SWEEP --list -o DIR
#   lab               xdc run tests/run/modeled-20ms.yaml --lab LAB --network x (--network
#                     is refused beside --lab once the lab is read)
#   schedule_csv      xdc schedule validate CSV
#   profile_csv       xdc simulate --profile CSV -o DIR
#   run_spec          xdc-worker --spec JSON (an MPI singleton)
prepare() {
  local t=$1 in=$2 loop
  loop=$(($(stat -c %s "$in") % 2 == 1))
  loop=${loop/1/true}
  loop=${loop/0/false}
  STOP=
  PAST=0
  AS_ROOT=0
  case $t in
    topology | changes | trace_csv | mahimahi)
      FILE=$IN_DIR/fuzz-input.yaml
      CMD=("$XDC" up --name 'not valid!' "$FILE")
      AS_ROOT=1
      STOP='network name "not valid!" may only contain'
      case $t in
        topology) cp "$in" "$FILE" ;;
        changes) topology_with "    changes:"$'\n'"$(sed 's/^/      /' "$in")" >"$FILE" ;;
        trace_csv)
          FILE=$IN_DIR/fuzz-input.csv
          cp "$in" "$FILE"
          topology_with "    trace: {file: fuzz-input.csv, compress: 20, loop: $loop}" \
            >"$IN_DIR/fuzz-input.yaml"
          ;;
        mahimahi)
          FILE=$IN_DIR/fuzz-input.mahi
          cp "$in" "$FILE"
          topology_with "    trace: {file: fuzz-input.mahi, format: mahimahi, window: 1ms, loop: $loop}" \
            >"$IN_DIR/fuzz-input.yaml"
          ;;
      esac
      ;;
    experiment)
      FILE=$IN_DIR/fuzz-input.yaml
      cp "$in" "$FILE"
      CMD=("$XDC" simulate "$FILE" -o "$WORK/out")
      ;;
    sweep)
      FILE=$IN_DIR/fuzz-input.yaml
      cp "$in" "$FILE"
      CMD=("$XDC" sweep "$FILE" --list -o "$WORK/out")
      ;;
    lab)
      FILE=$IN_DIR/fuzz-input.yaml
      cp "$in" "$FILE"
      CMD=("$XDC" run "$ROOT/tests/run/modeled-20ms.yaml" --lab "$FILE" --network x)
      AS_ROOT=1
      STOP='--lab builds its own network: drop --network'
      ;;
    schedule_csv)
      FILE=$WORK/fuzz-input.csv
      cp "$in" "$FILE"
      CMD=("$XDC" schedule validate "$FILE")
      ;;
    profile_csv)
      FILE=$WORK/fuzz-input.csv
      cp "$in" "$FILE"
      CMD=("$XDC" simulate --profile "$FILE" -o "$WORK/out")
      ;;
    run_spec)
      FILE=$WORK/spec.json
      cp "$in" "$FILE"
      CMD=("$WORKER" --spec "$FILE")
      PAST=1
      ;;
    *)
      echo "fuzz_cli: no command reads a $t input" >&2
      exit 2
      ;;
  esac
  chmod a+r "$WORK"/* "$IN_DIR"/fuzz-input.* 2>/dev/null || true
}

# The line of an error with a position: the program's prefix, then FILE:LINE:COL: .
POS_RE='^(xdc|xdc-worker: rank [0-9]+ \(host [^)]*\)): (.+):([1-9][0-9]*):([1-9][0-9]*): '

# shown CMD...: CMD as the JSON states it, the scratch and checkout paths shortened.
shown() { echo "$*" | sed "s|$WORK/||g; s|$ROOT/||g"; }

any_failure=0
rows=()
for t in $TARGETS; do
  mapfile -t all < <(find "$CORPUS/$t/" -maxdepth 1 -type f -printf '%f\n' | LC_ALL=C sort)
  stride=$(((${#all[@]} + PER_TARGET - 1) / PER_TARGET))
  ((stride > 0)) || stride=1
  checked=0 accepted=0 cut=0 positioned=0
  failures=()
  for ((i = 0; i < ${#all[@]}; i += stride)); do
    name=${all[$i]}
    rm -rf "$WORK/out" "$IN_DIR"/fuzz-input.*
    prepare "$t" "$CORPUS/$t/$name"
    rc=0
    as=(as_user)
    [[ $AS_ROOT == 1 ]] && as=()
    (cd "$WORK" && "${as[@]}" timeout -k 5 "$TIMEOUT_S" "${CMD[@]}") >/dev/null 2>"$WORK/err" || rc=$?
    checked=$((checked + 1))
    why=
    if [[ $rc == 0 ]]; then
      accepted=$((accepted + 1))
    elif [[ $rc == 1 && $PAST == 1 ]]; then
      accepted=$((accepted + 1))
    elif [[ $rc == 124 || $rc == 137 ]]; then
      cut=$((cut + 1))
    elif [[ $rc == 2 && -n $STOP ]] && grep -a -qF -- "$STOP" "$WORK/err"; then
      accepted=$((accepted + 1))
    elif [[ $rc == 2 ]]; then
      line=$(grep -a -E -m1 "$POS_RE" "$WORK/err" || true)
      if [[ -n $line && $line =~ $POS_RE && -f ${BASH_REMATCH[2]} ]]; then
        positioned=$((positioned + 1))
      else
        why="exit 2 without FILE:LINE:COL"
      fi
    else
      why="exit $rc"
    fi
    if [[ -n $why ]]; then
      msg=$(grep -a -v '^xdc: \(info\|warning\)' "$WORK/err" | head -c 400 || true)
      echo "fuzz_cli: $t: $name: $why: $msg" >&2
      failures+=("{\"input\": $(json_str "$CORPUS/$t/$name"), \"exit\": $rc, \"message\": $(json_str "$msg")}")
    fi
  done
  echo "fuzz_cli: $t: $checked checked, $accepted accepted, $cut cut at ${TIMEOUT_S}s," \
    "$positioned rejected with a position, ${#failures[@]} failures" >&2
  ((${#failures[@]} == 0)) || any_failure=1
  list=$(IFS=,; echo "${failures[*]}")
  rows+=("{\"name\": \"$t\", \"command\": $(json_str "$(shown "${CMD[@]}")"), \"checked\": $checked, \"accepted\": $accepted, \"accepted_cut\": $cut, \"rejected_with_position\": $positioned, \"failures\": [$list]}")
done

json() {
  echo "{\"corpus\": $(json_str "$CORPUS"), \"per_target\": $PER_TARGET, \"timeout_s\": $TIMEOUT_S, \"targets\": ["
  for i in "${!rows[@]}"; do echo "  ${rows[$i]}$([[ $i -lt $((${#rows[@]} - 1)) ]] && echo ,)"; done
  echo "]}"
}
if [[ -n $JSON_OUT ]]; then
  out_dir "$JSON_OUT"
  json >"$JSON_OUT"
else
  json
fi
exit $any_failure
