#!/usr/bin/env bash
# Runs one command inside a User-Mode Linux guest: a separate Linux kernel (Debian's
# `user-mode-linux`, 6.1, with sch_netem, tbf, htb, veth, network namespaces) booted as
# an ordinary host process, with the host's filesystem as its root (hostfs).
#
#   scripts/uml/run.sh [--timeout S] [--mem SIZE] [--rt-prio N] OUTDIR -- COMMAND [ARGS...]
#
# The Debian kernel (its config: /usr/share/doc/user-mode-linux/config.gz) has network
# namespaces, UTS/PID/user namespaces, high-resolution timers (HZ 100), one CPU; as
# modules veth, bridge, sch_netem/tbf/htb, iptables (legacy tables) and NFQUEUE.
#
# COMMAND runs as root in the guest, from the caller's working directory, with
# XDC_UML_GUEST=<guest kernel release> in its environment. It sees the host's files
# (and writes to them) except /run and /dev/shm, which are the guest's own; its TMPDIR
# is /run/tmp.
# OUTDIR (created, or emptied when an earlier run's) receives: command, output (the
# command's stdout+stderr, also printed here at the end), rc, uname, console.log (the
# guest kernel's console).
# Exit status: COMMAND's; 1 when the guest did not report one (crashed, or killed at
# the timeout, default 600 s); 2 on bad usage or when linux.uml is not installed; 77 when
# User-Mode Linux cannot run on this host at all (its first process cannot start).
# The guest (linux.uml and the helper processes it forks) runs in its own process
# group, which is killed on timeout, on exit of this script and on INT/TERM.
#
# Timing: the guest's timer interrupts are host signals to this one process, so a host
# busy with other work delays them by its scheduling latency (milliseconds on a loaded
# machine), and tbf's 1 ms bucket then loses tokens. Measured with netem 20 ms + tbf,
# host load 5 on 2 cores: 100 Mbit/s gave 74-81 Mbit/s at normal priority, 86-89 at
# nice -10 and 95.3-95.5 with SCHED_FIFO 3; 1 Gbit/s 728-801, 939-943, 953. So the
# guest runs SCHED_FIFO (--rt-prio, default 3, below xdc-delayline's 10; 0 = normal):
# it mostly sleeps, and the kernel's RT throttling keeps 5% of a CPU for the others.
set -euo pipefail

timeout_s=600
mem=1G
rt_prio=3
while [ $# -gt 0 ]; do
  case "$1" in
    --timeout) timeout_s=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --rt-prio) rt_prio=$2; shift 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 3 ] || [ "$2" != "--" ]; then
  echo "usage: $0 [--timeout S] [--mem SIZE] [--rt-prio N] OUTDIR -- COMMAND [ARGS...]" >&2
  exit 2
fi
out=$(realpath -m "$1")
shift 2
cwd=$(pwd)
uml=$(command -v linux.uml || true)
if [ -z "$uml" ]; then
  echo "uml: linux.uml not found: install Debian's user-mode-linux" \
    "(scripts/setup.sh does)" >&2
  exit 2
fi
# Paths travel on the guest's kernel command line, which splits at white space.
for p in "$out" "$cwd"; do
  case "$p" in
    *[[:space:]]*) echo "uml: path with white space not supported: '$p'" >&2; exit 2 ;;
  esac
done
init=$(realpath "$(dirname "$0")/init.sh")

# Emptied only when it is an earlier run's (has a `command`) or already empty.
if [ -d "$out" ] && [ ! -e "$out/command" ] && [ -n "$(ls -A "$out")" ]; then
  echo "uml: $out exists and is no earlier run directory; not emptying it" >&2
  exit 2
fi
rm -rf "$out"
mkdir -p "$out"
printf '%q ' "$@" >"$out/command"
echo >>"$out/command"
: >"$out/output"

rt=()
if [ "$rt_prio" -gt 0 ]; then
  if chrt -f "$rt_prio" true 2>/dev/null; then
    rt=(chrt -f "$rt_prio")
  else
    echo "uml: SCHED_FIFO refused (no CAP_SYS_NICE or RT budget): normal priority," \
      "timing figures will be worse" >&2
  fi
fi
start=$(date +%s.%N)
# setsid: the guest leads a new process group (a background child of a non-interactive
# shell is no group leader, so setsid does not fork and $! is linux.uml's pid).
setsid "${rt[@]}" "$uml" mem="$mem" root=/dev/root rootfstype=hostfs rootflags=/ rw \
  con=null con0=null,fd:2 init="$init" xdc_uml_out="$out" xdc_uml_cwd="$cwd" \
  </dev/null >"$out/console.log" 2>&1 &
guest=$!
# Kills the guest's process group and waits until none of it is left (a killed
# linux.uml's helpers take a moment to go).
kill_guest() {
  for _ in $(seq 100); do
    pgrep -g "$guest" >/dev/null || return 0
    kill -KILL -- "-$guest" 2>/dev/null || true
    sleep 0.1
  done
  echo "uml: processes of group $guest still alive" >&2
}
trap kill_guest EXIT
trap 'exit 1' INT TERM
deadline=$(($(date +%s) + timeout_s))
while kill -0 "$guest" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do
  sleep 0.2
done
timed_out=0
kill -0 "$guest" 2>/dev/null && timed_out=1
kill_guest
wait "$guest" 2>/dev/null || true
trap - EXIT

cat "$out/output"
secs=$(echo "$(date +%s.%N) - $start" | bc)
if [ "$timed_out" = 1 ]; then
  echo "uml: guest killed after ${timeout_s} s (console: $out/console.log)" >&2
  exit 1
fi
if [ ! -s "$out/rc" ] && grep -q "ptrace set fp regs failed" "$out/console.log"; then
  # The guest kernel could not start its first process: this host's CPU and kernel give
  # a floating-point register layout this User-Mode Linux cannot set (seen with AMX).
  echo "uml: SKIP: User-Mode Linux cannot run on this host (its first process died:" \
    "'ptrace set fp regs failed'; console: $out/console.log)" >&2
  exit 77
fi
if [ ! -s "$out/rc" ]; then
  echo "uml: the guest ended without reporting an exit status (console: $out/console.log):" >&2
  tail -n 20 "$out/console.log" >&2
  exit 1
fi
rc=$(cat "$out/rc")
printf 'uml: guest kernel %s, exit status %s, %.1f s\n' "$(cat "$out/uname")" "$rc" "$secs" >&2
exit "$rc"
