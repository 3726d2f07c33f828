#!/usr/bin/env bash
# The chaos loop: each point starts one xdc command on shipped files (up of a small and a
# 64-host topology, run of a modeled and a real-compute experiment, a sweep, link set and
# link down on a live network, down), sends SIGKILL, SIGINT or SIGTERM at a random moment
# to the command or to one of its children (delay line, mpirun, orted, mpi-agent, a
# worker), runs `xdc clean`, and checks that nothing xdc makes is left:
#   namespaces named xdc-*, and processes in a network namespace that was not there before
#   (unnamed ones included); root links named xdc-*; qdiscs on root-namespace devices,
#   iptables and nftables rules, and net.ipv4.tcp_allowed_congestion_control, each as
#   before the loop; mounts under /run/xdc and entries in it other than its lock file;
#   /etc/netns/xdc-*; processes named xdc-*, mpirun, orted or mpi-agent, or naming an xdc
#   namespace, that were not there before.
#   scripts/chaos.sh [POINTS] [OUT.json]   (default 200 points, results/bench/chaos.json)
#   scripts/chaos.sh --bounded             (24 short points, no JSON: the test in scripts/test.sh)
# XDC_CHAOS_SEED=N draws other commands, signals and moments (default 1). Writes
# {"points", "seed", "commands": [{"name", "points"}], "signals": [{"name", "points"}],
# "targets": [{"name", "points"}], "left": [{"point", "command", "signal", "target",
# "after_s", "what"}], "checks": [...], "load_before", "bench"}. Exit 1 when something was
# left. Needs root; exits 77 (skipped) while another xdc network is up: `xdc clean`
# would remove it.
. "$(dirname "$0")/lib.sh"
BOUNDED=0
if [[ ${1:-} == --bounded ]]; then
  BOUNDED=1
  shift
fi
POINTS=${1:-200}
OUT=${2:-results/bench/chaos.json}
[[ $BOUNDED == 1 ]] && POINTS=24
need_root chaos.sh
if [[ -n $(ls /run/netns 2>/dev/null | grep '^xdc-' || true) ]]; then
  echo "chaos.sh: another xdc network is up (xdc ls); not running xdc clean over it" >&2
  exit 77
fi
"$XDC" clean >/dev/null  # no network is up: what a past crash left, before the baseline
RANDOM=${XDC_CHAOS_SEED:-1}
WORK=$(mktemp -d /tmp/chaos-loop.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
load=$(load_avg)

# What the machine holds besides xdc's, before the loop: later states must equal it.
root_ns=$(readlink /proc/$$/ns/net | tr -dc 0-9)
snapshot() {  # -> $1.{qdisc,ipt,nft,cc,ns,procs}
  tc qdisc show >"$1.qdisc" 2>/dev/null || true
  iptables-save 2>/dev/null | grep -v '^#' | sed 's/\[[0-9:]*\]//' >"$1.ipt" || true
  (nft list ruleset 2>/dev/null || true) >"$1.nft"
  sysctl -n net.ipv4.tcp_allowed_congestion_control >"$1.cc"
  # pid, network namespace, name and command line of every live user process but this
  # loop's (a zombie holds nothing: where init does not reap, killed helpers stay as such).
  # (The patterns come through the environment: on awk's own command line they would match it.)
  ps -eo pid=,ppid=,stat=,netns=,comm=,args= | XDC_NS_NAME='xdc-[a-z][a-z0-9-]*[.]' \
    XDC_AGENT='mpi-agent' awk -v me=$$ -v root="$root_ns" -v ns="$1.ns" -v procs="$1.procs" '
    $2 != 2 && $1 != 2 && $1 != me && $2 != me && $3 !~ /^Z/ {
      line = $1 " " $5
      if ($4 != "-" && $4 != root) print line > ns
      if ($5 ~ /^xdc-/ || $5 == "mpirun" || $5 == "orted" || $0 ~ ENVIRON["XDC_AGENT"] ||
          $0 ~ ENVIRON["XDC_NS_NAME"]) print line > procs
    }'
  touch "$1.ns" "$1.procs"
}
snapshot "$WORK/before"

# left: what is there now that xdc made, one line each.
left() {
  snapshot "$WORK/now"
  ip netns list 2>/dev/null | awk '$1 ~ /^xdc-/ {print "netns " $1}'
  ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^xdc-/ {sub(/@.*/, "", $2); print "link " $2}'
  comm -13 <(sort "$WORK/before.ns") <(sort "$WORK/now.ns") | sed 's/^/process in a network namespace: /'
  comm -13 <(sort "$WORK/before.procs") <(sort "$WORK/now.procs") | sed 's/^/process /'
  diff -q "$WORK/before.qdisc" "$WORK/now.qdisc" >/dev/null || echo "qdiscs changed: $(diff "$WORK/before.qdisc" "$WORK/now.qdisc" | grep '^[<>]' | head -3 | tr '\n' ' ')"
  diff -q "$WORK/before.ipt" "$WORK/now.ipt" >/dev/null || echo "iptables changed: $(diff "$WORK/before.ipt" "$WORK/now.ipt" | grep '^[<>]' | head -3 | tr '\n' ' ')"
  diff -q "$WORK/before.nft" "$WORK/now.nft" >/dev/null || echo "nftables changed"
  diff -q "$WORK/before.cc" "$WORK/now.cc" >/dev/null || echo "tcp_allowed_congestion_control $(cat "$WORK/before.cc") -> $(cat "$WORK/now.cc")"
  awk '$2 ~ "^/run/xdc" {print "mount " $2}' /proc/mounts
  if [[ -d /run/xdc ]]; then
    find /run/xdc -mindepth 1 -maxdepth 1 ! -name '*.lock' ! -name 'lock' -printf 'state /run/xdc/%f\n'
  fi
  find /etc/netns -mindepth 1 -maxdepth 1 -name 'xdc-*' -printf 'file /etc/netns/%f\n' 2>/dev/null || true
}
initial=$(left)
if [[ -n $initial ]]; then
  echo "chaos.sh: xdc objects are there before the loop:" >&2
  echo "$initial" >&2
  exit 1
fi

# The commands: NAME and the longest wait before the signal (s); a point waits a uniform
# draw of up to it. `prepare` brings up what a command acts on (not killed).
if [[ $BOUNDED == 1 ]]; then
  commands=(up-two-dc:1.5 up-scale-64:2.5 run-modeled:6 run-real:6 sweep:6 link-set:0.5 link-down:0.5 down:1)
else
  commands=(up-two-dc:1.5 up-scale-64:3 run-modeled:14 run-real:14 sweep:14 link-set:0.5 link-down:0.5 down:1.5)
fi
signals=(KILL INT TERM)
start_cmd() {  # start_cmd COMMAND NET POINT: starts it in the background, sets CMD_PID
  local dir="$WORK/p$3" args
  case $1 in
    up-two-dc) args=(up topologies/two-dc.yaml --name "$2") ;;
    up-scale-64) args=(up topologies/scale-64.yaml --name "$2") ;;
    run-modeled) args=(run experiments/flap.yaml --name "$2" -o "$dir") ;;
    run-real) args=(run experiments/two-dc.yaml --name "$2" -o "$dir") ;;
    sweep) args=(sweep experiments/flap-sweep.yaml -o "$dir") ;;
    link-set) args=(link set "$2" east west --delay 30ms --rate 200mbit) ;;
    link-down) args=(link down "$2" east west) ;;
    down) args=(down "$2") ;;
  esac
  "$XDC" "${args[@]}" >"$dir.log" 2>&1 </dev/null &
  CMD_PID=$!
}
prepare() {  # prepare COMMAND NET
  case $1 in
    link-set | link-down | down) "$XDC" up topologies/two-dc.yaml --name "$2" >/dev/null 2>&1 ;;
  esac
}
# The command's process (half the points) or one of its descendants or helpers (the
# network's delay lines, mpirun, OpenMPI's daemons and agents, the workers), drawn at
# random: "pid name".
pick_target() {  # pick_target PID NET
  local all
  if ((RANDOM % 2 == 0)) && [[ -d /proc/$1 ]]; then
    echo "$1 xdc"
    return
  fi
  mapfile -t all < <(ps -eo pid=,ppid=,stat=,comm=,args= | awk -v top="$1" -v net="$2" '
    $3 !~ /^Z/ { n++; pid[n] = $1; parent[$1] = $2; name[$1] = $4; line[$1] = $0 }
    END {
      for (i = 1; i <= n; i++) {
        p = pid[i]; mine = (p == top)
        for (q = parent[p]; !mine && q > 1 && hops++ < 64; q = parent[q]) if (q == top) mine = 1
        hops = 0
        if (mine || index(line[p], "xdc-" net ".") || index(line[p], "mpi-agent --name " net) ||
            name[p] == "xdc-worker" || name[p] == "orted" || name[p] == "mpirun")
          print p " " name[p]
      }
    }')
  if ((${#all[@]} == 0)); then
    echo "$1 gone"
  else
    echo "${all[RANDOM % ${#all[@]}]}"
  fi
}

declare -A by_command by_signal by_target
: >"$WORK/left.jsonl"
bad=0
t0=$(date +%s)
for ((p = 1; p <= POINTS; p++)); do
  entry=${commands[RANDOM % ${#commands[@]}]}
  cmd=${entry%%:*}
  most=${entry##*:}
  sig=${signals[RANDOM % ${#signals[@]}]}
  net="chaos$p"
  prepare "$cmd" "$net"
  start_cmd "$cmd" "$net" "$p"
  after=$(awk -v r="$RANDOM" -v m="$most" 'BEGIN {printf "%.2f", r / 32767 * m}')
  sleep "$after"
  target=$(pick_target "$CMD_PID" "$net")
  tpid=${target%% *}
  tname=${target#* }
  kill -s "$sig" "$tpid" 2>/dev/null || tname="$tname (had ended)"
  # The command ends by itself after INT or TERM, or after losing a child; then it is
  # killed for good so that the next point starts clean.
  for ((w = 0; w < 100 && $(kill -0 "$CMD_PID" 2>/dev/null && echo 1 || echo 0) == 1; w++)); do
    sleep 0.1
  done
  kill -KILL "$CMD_PID" 2>/dev/null || true
  wait "$CMD_PID" 2>/dev/null || true
  "$XDC" clean >"$WORK/p$p.clean" 2>&1 || echo "xdc clean: exit $? (point $p)" >&2
  what=$(left)
  by_command[$cmd]=$((${by_command[$cmd]:-0} + 1))
  by_signal[$sig]=$((${by_signal[$sig]:-0} + 1))
  tkey=${tname%% *}
  by_target[$tkey]=$((${by_target[$tkey]:-0} + 1))
  status="nothing left"
  if [[ -n $what ]]; then
    bad=$((bad + 1))
    status="LEFT: $(echo "$what" | tr '\n' ';')"
    while IFS= read -r line; do
      "$XDC_PY" -c 'import json,sys; print(json.dumps(dict(zip(["point","command","signal","target","after_s","what"], [int(sys.argv[1])]+sys.argv[2:5]+[float(sys.argv[5]), sys.argv[6]]))))' \
        "$p" "$cmd" "$sig" "$tname" "$after" "$line" >>"$WORK/left.jsonl"
    done <<<"$what"
    "$XDC" clean >/dev/null 2>&1 || true  # the next point starts clean
  fi
  echo "point $p/$POINTS: $cmd, SIG$sig to $tname after ${after} s: $status  [$(($(date +%s) - t0)) s]"
done
echo "chaos: $POINTS points in $(($(date +%s) - t0)) s, $bad left something"

if [[ $BOUNDED == 0 ]]; then
  out_dir "$OUT"
  counts() {  # counts ASSOC_NAME -> [{"name", "points"}]
    local -n a=$1
    local k first=1
    printf '['
    for k in "${!a[@]}"; do
      [[ $first == 1 ]] || printf ', '
      printf '{"name": "%s", "points": %d}' "$k" "${a[$k]}"
      first=0
    done
    printf ']'
  }
  "$XDC_PY" - "$OUT" "$POINTS" "${XDC_CHAOS_SEED:-1}" "$load" "$WORK/left.jsonl" \
    "$(counts by_command)" "$(counts by_signal)" "$(counts by_target)" <<'PY'
import json, sys
out, points, seed, load, left, commands, signals, targets = sys.argv[1:9]
doc = {
    "points": int(points), "seed": int(seed), "load_before": float(load),
    "commands": sorted(json.loads(commands), key=lambda c: c["name"]),
    "signals": sorted(json.loads(signals), key=lambda c: c["name"]),
    "targets": sorted(json.loads(targets), key=lambda c: c["name"]),
    "left": [json.loads(l) for l in open(left) if l.strip()],
    "checks": ["netns xdc-*", "processes in new network namespaces (named or not)",
               "root links xdc-*", "qdiscs on root devices as before", "iptables as before",
               "nftables as before", "tcp_allowed_congestion_control as before",
               "mounts under /run/xdc", "/run/xdc entries but its lock",
               "/etc/netns/xdc-*", "new xdc-*, mpirun, orted, mpi-agent processes"],
}
with open(out, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
PY
  bench_record "$OUT"
fi
[[ $bad == 0 ]]
