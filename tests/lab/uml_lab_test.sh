#!/usr/bin/env bash
# A lab of three machines with kernels of their own (User-Mode Linux guests booted by
# scripts/uml/lab.sh, sshd each, on a switch in the namespace `xdclab`), driven from here
# over ssh as xdc drives a lab (harness/lab/remote.h):
#  - each machine answers over ssh, runs a kernel other than this machine's, and reaches
#    the others;
#  - an xdc network built on lab2 (`xdc up topologies/two-dc.yaml` there: namespaces, veths,
#    netem) is lab2's alone (lab1 sees none of it) and all gone after `xdc clean --lab lab.yaml` run from the controller, on every
#    machine: no namespace, no xdc process;
#  - `xdc clean --lab` with a machine that does not answer exits 1 naming it.
#   tests/lab/uml_lab_test.sh XDC [DIR]   (root; DIR default build/uml-lab)
set -euo pipefail
cd "$(dirname "$0")/../.."
XDC=$(realpath "$1")
DIR=$(realpath -m "${2:-build/uml-lab}")
LAB=scripts/uml/lab.sh
fail() { echo "uml_lab_test: FAIL: $*" >&2; exit 1; }
trap '$LAB down "$DIR"' EXIT

start=$(date +%s.%N)
$LAB up 3 "$DIR"
echo "uml_lab_test: 3 machines up in $(echo "$(date +%s.%N) - $start" | bc) s"
echo "xdc: $XDC" >>"$DIR/lab.yaml"
here=$(uname -r)
for i in 1 2 3; do
  k=$($LAB ssh "$DIR" "lab$i" uname -r)
  [ -n "$k" ] && [ "$k" != "$here" ] || fail "lab$i runs kernel '$k' (this machine: $here)"
  name=$($LAB ssh "$DIR" "lab$i" cat /proc/sys/kernel/hostname)
  [ "$name" = "lab$i" ] || fail "lab$i calls itself '$name'"
  echo "uml_lab_test: lab$i: kernel $k"
done
$LAB ssh "$DIR" lab1 ping -c 1 -W 5 10.99.0.13 >/dev/null || fail "lab1 does not reach lab3"

$LAB ssh "$DIR" lab2 "$XDC" up "$PWD/topologies/two-dc.yaml" ||
  fail "xdc up on lab2 failed"
left=$($LAB ssh "$DIR" lab2 ip netns list | wc -l)
[ "$left" -gt 0 ] || fail "xdc up on lab2 made no namespace"
echo "uml_lab_test: lab2 holds $left namespaces of two-dc"
# Another machine sees none of it (each guest's /run and /etc/netns are its own).
seen=$($LAB ssh "$DIR" lab1 sh -c 'ls /run/netns /etc/netns 2>/dev/null | grep -c xdc-' || true)
[ "${seen:-0}" -eq 0 ] || fail "lab1 sees $seen of lab2's namespace entries"

ip netns exec xdclab "$XDC" clean --lab "$DIR/lab.yaml" || fail "xdc clean --lab exited $?"
for i in 1 2 3; do
  ns=$($LAB ssh "$DIR" "lab$i" ip netns list | wc -l)
  procs=$($LAB ssh "$DIR" "lab$i" pgrep -c '^xdc-' || true)
  [ "$ns" -eq 0 ] || fail "lab$i keeps $ns namespaces after xdc clean --lab"
  [ "${procs:-0}" -eq 0 ] || fail "lab$i keeps $procs xdc processes after xdc clean --lab"
done
echo "uml_lab_test: nothing left on lab1..lab3 after xdc clean --lab"

# A machine that does not answer: clean says which and exits 1.
sed 's/ssh: 10.99.0.13/ssh: 10.99.0.99/' "$DIR/lab.yaml" >"$DIR/lab-bad.yaml"
rc=0
out=$(ip netns exec xdclab "$XDC" clean --lab "$DIR/lab-bad.yaml" 2>&1) || rc=$?
[ "$rc" -eq 1 ] || fail "clean --lab with lab3 unreachable exited $rc"
echo "$out" | grep -q "lab3: not cleaned" || fail "the message does not name lab3: $out"
echo "uml_lab_test: an unreachable machine: exit 1, \"$(echo "$out" | grep lab3 | head -1)\""
echo "uml_lab_test: PASS"
