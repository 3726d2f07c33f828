#!/bin/bash
# What a user other than root can do to a live network: nothing. As root (under umask 000,
# so that the modes below are xdc's own) the test brings up topologies/two-dc.yaml with
# userspace delay lines; then, as uid/gid 65534, it tries to reshape a WAN link, connect
# to a delay line's control socket, list and read the network's state directory and
# every file in it, create files in /run/xdc and /run/xdc-delayline, and xdc up / down /
# clean: each refused (exit 2 "needs root", or EACCES) and nothing changed, read back as
# root. A command that needs no root (xdc schedule show) still runs as 65534. Each try is
# printed with its outcome. The network is taken down as root; nothing is left.
# Usage: locked_paths_cli.sh XDC_BINARY   (from the repository root, as root)
set -u
xdc=$1
net=lk1
[[ $(id -u) -eq 0 ]] || {
  echo "SKIP: needs root (it builds a network, then drops to uid 65534)"
  exit 77
}
out=$(mktemp -d)
chmod 755 "$out"
trap '"$xdc" down "$net" >/dev/null 2>&1; rm -rf "$out"' EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
mode_of() { stat -c '%a %U:%G' "$1"; }
# The namespaces, state directories and delay lines of this test's networks ($net, and
# ${net}x that an `xdc up` as 65534 would build); another engineer's may come and go.
xdc_world() {
  ip netns list | awk -v a="xdc-$net." -v b="xdc-${net}x." \
    'index($1, a) == 1 || index($1, b) == 1 {print $1}' | sort
  [[ -e /run/xdc/${net}x ]] && echo "/run/xdc/${net}x"
  find "/run/xdc/$net" -maxdepth 1 ! -name '*.tmp' 2>/dev/null | sort
  pgrep -f -- "--netns=xdc-$net\\." | sort
}
delay_of() { # the delay of direction $1 as `xdc link show` reads it back, as root
  "$xdc" link show "$net" --json 2>/dev/null |
    jq -r --arg d "$1" '.links[] | select(.link == $d) | "\(.params.delay_us / 1000)ms"' 2>/dev/null
}

(umask 000 && "$xdc" up topologies/two-dc.yaml --name "$net" --shaping userspace) \
  >"$out/up.txt" 2>&1 || {
  cat "$out/up.txt"
  echo "FAIL: xdc up as root"
  exit 1
}
state=/run/xdc/$net/state.json
ctl=$(jq -r '[.links[].record.ctl_path // empty] | first // empty' "$state")
[[ -S $ctl ]] || fail "no delay line control socket in $state (got '$ctl')"

echo "as root, built under umask 000:"
for p in /run/xdc /run/xdc/$net /run/xdc/$net/delayline "$state" "$ctl" \
  "${ctl%.ctl}.stats.json" "${ctl%.ctl}.log"; do
  [[ -e $p ]] || continue
  m=$(mode_of "$p")
  echo "  $p: $m"
  want="600 root:root"
  [[ -d $p ]] && want="700 root:root"
  [[ $m == "$want" ]] || fail "$p: mode $m, expected $want"
done

# Reshape a link.
before=$(delay_of 'east->west')
err=$(nobody "$xdc" link set "$net" east west --delay 50ms 2>&1 >/dev/null)
rc=$?
after=$(delay_of 'east->west')
echo "uid 65534: xdc link set $net east west --delay 50ms -> exit $rc '$err'; link" \
  "$([[ $after == "$before" ]] && echo unchanged || echo CHANGED): delay $after (was $before)"
[[ $rc -eq 2 && $err == *"needs root"* ]] || fail "link set: exit $rc, expected 2 'needs root'"
[[ -n $before && $after == "$before" ]] || fail "link set: delay $before -> $after"
for cmd in "link down $net east west" "dc isolate $net east" "link show $net" "ls"; do
  # shellcheck disable=SC2086
  err=$(nobody "$xdc" $cmd 2>&1 >/dev/null)
  rc=$?
  echo "uid 65534: xdc $cmd -> exit $rc '$err'"
  [[ $rc -eq 2 && $err == *"needs root"* ]] || fail "xdc $cmd: exit $rc, expected 2 'needs root'"
done
after=$(delay_of 'east->west')
down=$("$xdc" link show "$net" --json | jq '[.links[] | select(.down)] | length')
echo "  as root after them: delay $after, $down directions down"
[[ $after == "$before" && $down == 0 ]] || fail "the link changed: delay $after, $down down"

# Connect to the delay line's control socket.
got=$(nobody /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect(sys.argv[1])
    print("connected")
except OSError as e:
    import errno
    print(errno.errorcode.get(e.errno, e.errno))
' "$ctl" 2>&1)
echo "uid 65534: connect($ctl) -> $got"
[[ $got == EACCES ]] || fail "control socket: $got, expected EACCES"

# List and read the state directory and every file below it.
err=$(nobody ls /run/xdc 2>&1)
echo "uid 65534: ls /run/xdc -> exit $? '$err'"
[[ $err == *"Permission denied"* ]] || fail "ls /run/xdc: '$err'"
err=$(nobody ls "/run/xdc/$net" 2>&1)
echo "uid 65534: ls /run/xdc/$net -> exit $? '$err'"
[[ $err == *"Permission denied"* ]] || fail "ls /run/xdc/$net: '$err'"
files=$(
  find "/run/xdc/$net" \( -type f -o -type s \)
  find /run/xdc -maxdepth 1 -type f
)
read_ok=0
for f in $files; do
  if nobody cat "$f" >/dev/null 2>&1; then
    echo "uid 65534: cat $f -> READ"
    read_ok=$((read_ok + 1))
  fi
done
echo "uid 65534: cat each of the $(wc -w <<<"$files") files below /run/xdc ($(
  for f in $files; do basename "$f"; done | sort -u | tr '\n' ' ' | sed 's/ $//'
)) -> $read_ok read"
[[ $read_ok -eq 0 ]] || fail "$read_ok files readable by uid 65534"

# Create files in the state roots.
for d in /run/xdc /run/xdc-delayline; do
  err=$(nobody touch "$d/intruder" 2>&1)
  rc=$?
  echo "uid 65534: touch $d/intruder -> exit $rc '$err'"
  [[ $rc -ne 0 && ! -e $d/intruder ]] || fail "$d/intruder created"
  rm -f "$d/intruder"
done

# up, down, clean: refused before anything is touched.
world=$(xdc_world)
for cmd in "up topologies/two-dc.yaml --name ${net}x" "down $net" "clean"; do
  # shellcheck disable=SC2086
  err=$(nobody "$xdc" $cmd 2>&1 >/dev/null)
  rc=$?
  now=$(xdc_world)
  echo "uid 65534: xdc $cmd -> exit $rc '$err'; namespaces, state and delay lines" \
    "$([[ $now == "$world" ]] && echo unchanged || echo CHANGED)"
  [[ $rc -eq 2 && $err == *"needs root"* ]] || fail "xdc $cmd: exit $rc, expected 2 'needs root'"
  [[ $now == "$world" ]] || fail "xdc $cmd changed: $(diff <(echo "$world") <(echo "$now"))"
done

# What needs no root still runs.
nobody "$xdc" schedule show 1f1b -p 2 -m 4 >/dev/null 2>"$out/show.err"
rc=$?
echo "uid 65534: xdc schedule show 1f1b -p 2 -m 4 -> exit $rc"
[[ $rc -eq 0 ]] || fail "schedule show as uid 65534: exit $rc: $(cat "$out/show.err")"

"$xdc" down "$net" >/dev/null 2>"$out/down.err" || fail "xdc down as root: $(cat "$out/down.err")"
left=$(xdc_world)
[[ -z $left ]] || fail "left after xdc down: $left"
echo "as root: xdc down $net -> nothing of $net left"
[[ $fails -eq 0 ]] || exit 1
echo "ok"
