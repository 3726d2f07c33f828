#!/bin/bash
# Options a command cannot honour are refused with exit 2 and a message naming them, never
# dropped silently. Every case is refused before anything is built: no root, no network.
# Usage: refused_options_cli.sh XDC_BINARY   (from the source root)
set -u
xdc=$1
fails=0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# expect_refused WORDS... -- ARGS...: exit 2, and each of WORDS on stderr.
expect_refused() {
  local want=()
  while [[ $1 != -- ]]; do
    want+=("$1")
    shift
  done
  shift
  local err rc w
  err=$("$xdc" "$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne 2 ]]; then
    echo "FAIL xdc $*: exit $rc, expected 2"
    fails=$((fails + 1))
    return
  fi
  for w in "${want[@]}"; do
    if [[ "$err" != *"$w"* ]]; then
      echo "FAIL xdc $*: stderr lacks \"$w\":"
      echo "$err" | sed 's/^/  /'
      fails=$((fails + 1))
      return
    fi
  done
}

# A lab's network is built natively on every machine: Mininet cannot span it.
expect_refused "--backend mininet: a lab's network is built by the native backend" -- \
  up --lab "$out/lab.yaml" --backend mininet topologies/two-dc.yaml
expect_refused "--backend: expected native or mininet" -- \
  up --lab "$out/lab.yaml" --backend ns3 topologies/two-dc.yaml
expect_refused "--shaping: expected auto, kernel or userspace" -- \
  up --lab "$out/lab.yaml" --shaping fast topologies/two-dc.yaml
# The TCP probes' options without the probes.
expect_refused excludes --no-throughput --flows -- check --no-throughput --flows 4 two-dc
expect_refused excludes --no-throughput --tcp-seconds -- check --no-throughput --tcp-seconds 5 x
# `sweep --list` runs nothing; `run --network` builds no network to name.
expect_refused excludes --list --retry-failed -- sweep --list --retry-failed x.yaml
expect_refused excludes --name --network -- run --network n --name m x.yaml
# `schedule show` of an experiment, a schedule file, or a single DC.
expect_refused "--csv cannot apply (an experiment brings its own" -- \
  schedule show tests/run/modeled-20ms.yaml --csv
"$xdc" schedule show 1f1b -p 4 -m 4 --csv >"$out/1f1b.csv" || {
  echo "FAIL schedule show 1f1b --csv: exit $?"
  fails=$((fails + 1))
}
expect_refused "--stages, --microbatches cannot apply (a schedule file fixes" -- \
  schedule show "$out/1f1b.csv" -p 8 -m 16
expect_refused "--latency cannot apply (they need --dcs 2 or more)" -- \
  schedule show 1f1b --latency 2
"$xdc" schedule show 1f1b --dcs 2 --latency 2 >/dev/null 2>&1 || {
  echo "FAIL schedule show 1f1b --dcs 2 --latency 2: exit $?, expected 0"
  fails=$((fails + 1))
}
# A GPU number for a CPU profile.
expect_refused "--gpu: applies to --device cuda" -- profile tiny --gpu 1 -o "$out/p.csv"

echo "$fails failures"
[[ $fails -eq 0 ]]
