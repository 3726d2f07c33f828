#!/usr/bin/env bash
# A lab of machines on this one: User-Mode Linux guests (Debian's user-mode-linux, each
# its own 6.1 kernel as an ordinary process, the host's filesystem as root), each with an
# sshd of its own, on one switch in a network namespace of their own (`xdclab`: a bridge,
# 10.99.0.1/24, and a TAP device per machine), so that they reach each other and the
# namespace, never the host's networks. The lab test (tests/lab/uml_lab_test.sh) runs xdc
# across it.
#
#   scripts/uml/lab.sh up N DIR [--mem SIZE]   boot lab1..labN (10.99.0.11, .12, ...)
#   scripts/uml/lab.sh ssh DIR MACHINE CMD...  run CMD on a machine (from the namespace)
#   scripts/uml/lab.sh down DIR                power them off, remove the namespace
#
# `up` writes into DIR (any absolute path: the guests see the host's files but for /run,
# which is their own, guest-setup.sh): the lab's
# key pair (id_ed25519, made once), lab.yaml (the lab file of harness/lab/lab.h naming the
# machines), and per machine NAME.pid, NAME.console (its kernel's console), NAME.log (its
# init and sshd), NAME.ready (its kernel release, once sshd runs). It waits until every
# machine answers over ssh (exit 1 naming those that did not within 180 s, the lab taken
# down). `down` also cleans up after an `up` that was killed. Needs root.
set -euo pipefail
ns=xdclab
subnet=10.99.0
here=$(cd "$(dirname "$0")" && pwd)

die() { echo "lab: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (network namespace, TAP devices)"

lab_ssh() {  # lab_ssh DIR IP CMD...
  local dir=$1 ip=$2
  shift 2
  ip netns exec "$ns" ssh -q -i "$dir/id_ed25519" -o BatchMode=yes \
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 \
    "root@$ip" "$@"
}

down() {
  local dir=$1
  for pidfile in "$dir"/lab*.pid; do
    [ -e "$pidfile" ] || continue
    local pid
    pid=$(cat "$pidfile")
    # linux.uml leads its own process group (setsid below); its helpers are in it.
    for _ in $(seq 50); do
      pgrep -g "$pid" >/dev/null 2>&1 || break
      kill -KILL -- "-$pid" 2>/dev/null || true
      sleep 0.1
    done
    rm -f "$pidfile" "${pidfile%.pid}.ready"
  done
  ip netns del "$ns" 2>/dev/null || true
}

up() {
  local n=$1 dir=$2 mem=$3
  command -v linux.uml >/dev/null || die "linux.uml not found: install Debian's user-mode-linux"
  [ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd not found: install openssh-server"
  mkdir -p "$dir"
  down "$dir"
  [ -e "$dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C xdc-lab -f "$dir/id_ed25519"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n "$ns" link add br0 type bridge
  ip -n "$ns" addr add "$subnet.1/24" dev br0
  ip -n "$ns" link set br0 up
  {
    echo "# Written by scripts/uml/lab.sh: $n User-Mode Linux machines on namespace $ns's switch."
    echo "name: uml"
    echo "machines:"
  } >"$dir/lab.yaml"
  for i in $(seq "$n"); do
    local name=lab$i ip=$subnet.$((10 + i)) tap=xdcl$i
    ip -n "$ns" tuntap add dev "$tap" mode tap
    ip -n "$ns" link set "$tap" master br0 up
    rm -f "$dir/$name.ready" "$dir/$name.log"
    # The guest process lives in the lab's namespace, where its TAP device is.
    setsid ip netns exec "$ns" linux.uml mem="$mem" root=/dev/root rootfstype=hostfs \
      rootflags=/ rw con=null con0=null,fd:2 "eth0=tuntap,$tap" init="$here/lab-init.sh" \
      xdc_lab_dir="$dir" xdc_lab_name="$name" xdc_lab_ip="$ip" \
      </dev/null >"$dir/$name.console" 2>&1 &
    echo $! >"$dir/$name.pid"
    echo "  - {name: $name, ssh: $ip, user: root, key: id_ed25519, data_interface: eth0}" \
      >>"$dir/lab.yaml"
  done
  echo "dcs: auto" >>"$dir/lab.yaml"
  local deadline=$(($(date +%s) + 180)) missing
  while :; do
    missing=""
    for i in $(seq "$n"); do
      [ -s "$dir/lab$i.ready" ] && lab_ssh "$dir" "$subnet.$((10 + i))" true 2>/dev/null ||
        missing="$missing lab$i"
    done
    [ -z "$missing" ] && break
    if grep -qs "ptrace set fp regs failed" "$dir"/lab*.console; then
      # The guests' kernel cannot start their first process on this host's CPU and kernel
      # (the floating-point register layout; scripts/uml/run.sh says the same).
      echo "lab: SKIP: User-Mode Linux cannot run on this host ('ptrace set fp regs" \
        "failed'; consoles: $dir/*.console)" >&2
      down "$dir"
      exit 77
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "lab: not answering over ssh after 180 s:$missing (consoles: $dir/*.console)" >&2
      down "$dir"
      exit 1
    fi
    sleep 1
  done
  echo "lab: $n machines up in $dir (lab.yaml)" >&2
}

cmd=${1:-}
case $cmd in
  up)
    [ $# -ge 3 ] || die "usage: $0 up N DIR [--mem SIZE]"
    mem=384M
    [ "${4:-}" = --mem ] && mem=${5:?--mem SIZE}
    up "$2" "$(realpath -m "$3")" "$mem"
    ;;
  ssh)
    [ $# -ge 4 ] || die "usage: $0 ssh DIR MACHINE CMD..."
    dir=$(realpath -m "$2") machine=$3
    shift 3
    ip=$(awk -v m="$machine" '$0 ~ "name: " m "," { sub(/.*ssh: /, ""); sub(/,.*/, ""); print }' \
      "$dir/lab.yaml")
    [ -n "$ip" ] || die "no machine $machine in $dir/lab.yaml"
    lab_ssh "$dir" "$ip" "$@"
    ;;
  down)
    [ $# -eq 2 ] || die "usage: $0 down DIR"
    down "$(realpath -m "$2")"
    ;;
  *) die "usage: $0 up N DIR | ssh DIR MACHINE CMD... | down DIR" ;;
esac
