#!/bin/bash
# Runs a command on a machine made busy: on every CPU, xdc-stall (tests/common/stall.cpp)
# takes BUSY_MS at random moments about every PERIOD_MS under SCHED_FIFO, so that every
# process, the delay lines included, stalls as on a loaded or oversubscribed machine.
# A timing test asserts behaviour; it should pass here as on an idle machine. Here, not
# under a hypervisor's steal (which stops a whole vCPU), packets can also arrive reordered
# (2 of 7 runs of Reshape's delay changes under TCP): most likely one handed back by the
# delay line waits in the backlog of a CPU whose softirqs a staller holds, and later ones,
# handed back from the other CPU, overtake it.
#
#   scripts/busy.sh [--busy MS] [--period MS] [--priority P] -- COMMAND...
#
# Defaults: 15 ms of every 50 (a third of each CPU), priority 50. Exit status: COMMAND's.
# The build (build/, or XDC_BUILD_DIR) must have xdc-stall: ninja -C build xdc-stall.
set -euo pipefail
cd "$(dirname "$0")/.."
busy=15 period=50 priority=50
while [ $# -gt 0 ]; do
  case "$1" in
    --busy) busy=$2; shift 2 ;;
    --period) period=$2; shift 2 ;;
    --priority) priority=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "busy.sh: unknown option $1 (usage: busy.sh [--busy MS] [--period MS] [--priority P] -- COMMAND...)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "busy.sh: no command (usage: busy.sh [options] -- COMMAND...)" >&2; exit 2; }
stall=${XDC_BUILD_DIR:-build}/tests/common/xdc-stall
[ -x "$stall" ] || { echo "busy.sh: $stall not built (ninja -C ${XDC_BUILD_DIR:-build} xdc-stall)" >&2; exit 2; }
pids=()
cleanup() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
for ((cpu = 0; cpu < $(nproc); cpu++)); do
  "$stall" "$cpu" "$busy" "$period" "$priority" &
  pids+=($!)
done
sleep 0.2
for p in "${pids[@]}"; do
  if ! kill -0 "$p" 2>/dev/null; then
    r=0
    wait "$p" || r=$?
    echo "busy.sh: xdc-stall did not start (exit $r)" >&2
    exit $((r == 2 ? 2 : 1))
  fi
done
rc=0
"$@" || rc=$?
exit $rc
