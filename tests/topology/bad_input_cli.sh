#!/bin/bash
# bad_input_test.cpp through the real CLI: `xdc up BAD.yaml` exits 2 and prints
# "xdc: <file>:<line>:<col>: <message>" exactly as the file's "# expect:" line says, and
# leaves nothing behind. `--name` is deliberately invalid, so that even a wrongly accepted
# topology is refused before anything is built (and the message check then fails).
# Usage: bad_input_cli.sh XDC_BINARY BAD_DIR
set -u
xdc=$1
dir=$2
fails=0
count=0
for f in "$dir"/*.yaml; do
  count=$((count + 1))
  expect=$(head -n1 "$f")
  expect=${expect#"# expect: "}
  err=$("$xdc" up --name 'not valid!' "$f" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne 2 ]]; then
    echo "FAIL $f: exit code $rc, expected 2"
    fails=$((fails + 1))
  elif [[ "$err" != "xdc: $f:$expect" ]]; then
    echo "FAIL $f:"
    echo "  expected: xdc: $f:$expect"
    echo "  got:      $err"
    fails=$((fails + 1))
  fi
done
# Nothing of a network named after the bad files ("t") or the refused name may exist.
if ls /run/netns 2>/dev/null | grep -q '^xdc-t\.' || [[ -e /run/xdc/t ]]; then
  echo "FAIL: something of network 't' exists after bad inputs"
  fails=$((fails + 1))
fi
echo "$count bad topologies, $fails failures"
[[ $count -ge 25 && $fails -eq 0 ]]
