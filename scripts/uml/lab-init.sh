#!/bin/sh
# PID 1 of a lab machine started by scripts/uml/lab.sh (see there): a User-Mode Linux
# guest with its own kernel, the host's filesystem as root (guest-setup.sh) and one
# network interface, eth0 (a TAP device on the lab's switch). It configures eth0 as
# $xdc_lab_ip/24, starts an sshd with host keys of its own (in the guest's /run) that lets
# in root with the lab's key ($xdc_lab_dir/id_ed25519.pub), writes
# $xdc_lab_dir/$xdc_lab_name.ready (its kernel release) and waits; `poweroff -f` over ssh,
# or killing the guest, ends it. Kernel command line: xdc_lab_dir, xdc_lab_name, xdc_lab_ip.
trap 'poweroff -f' EXIT
dir=$xdc_lab_dir
log="$dir/$xdc_lab_name.log"
uml_note() { echo "lab init: $*" >>"$log"; }
# The kernel backend's qdiscs and veths, bridges for DCs, VXLAN for WAN links between machines.
uml_modules="sch_netem sch_tbf sch_htb veth bridge vxlan"
. "$(dirname "$0")/guest-setup.sh"

ip addr add "$xdc_lab_ip/24" dev eth0 && ip link set eth0 up || uml_note "eth0: cannot configure"
echo "$xdc_lab_name" >/proc/sys/kernel/hostname
mkdir -p /run/sshd /run/lab-ssh
chmod 0755 /run/sshd
ssh-keygen -q -t ed25519 -N '' -f /run/lab-ssh/host_ed25519 || uml_note "ssh-keygen failed"
cat >/run/lab-ssh/sshd_config <<EOF
Port 22
ListenAddress $xdc_lab_ip
HostKey /run/lab-ssh/host_ed25519
PermitRootLogin prohibit-password
AuthorizedKeysFile $dir/id_ed25519.pub
StrictModes no
UsePAM no
PidFile /run/lab-ssh/sshd.pid
SetEnv TMPDIR=/run/tmp
EOF
/usr/sbin/sshd -f /run/lab-ssh/sshd_config -E "$log" || uml_note "sshd did not start"
uname -r >"$dir/$xdc_lab_name.ready"
while :; do sleep 3600; done
