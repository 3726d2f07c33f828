#!/bin/sh
# PID 1 of a User-Mode Linux guest started by scripts/uml/run.sh (see there).
# Root is the host's filesystem (hostfs, read-write), so this script:
#  - covers /run, /tmp and /dev/shm with the guest's own tmpfs: nothing the guest
#    creates there (network namespaces in /run/netns, /run/xdc, lock files) reaches
#    the host's;
#  - makes the UML kernel's modules (/usr/lib/uml/modules/<release>) loadable, both by
#    hand and by the kernel's own autoloading (qdisc kinds, iptables tables), through a
#    modprobe wrapper: the host has no /lib/modules/<guest release> and the guest must
#    not create one on the host's disk;
#  - runs the command written in $xdc_uml_out/command from $xdc_uml_cwd, stdout and
#    stderr to $xdc_uml_out/output, its exit status to $xdc_uml_out/rc, and powers off.
# xdc_uml_out and xdc_uml_cwd come from the kernel command line (the kernel hands
# unknown name=value words to init as environment variables).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
# Whatever happens below, the guest must end, or the host waits for its timeout.
trap 'poweroff -f' EXIT

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# A host directory under /run or /tmp is hidden by the tmpfs above: show it again.
for dir in "$xdc_uml_out" "$xdc_uml_cwd"; do
  case "$dir" in
    /run/* | /tmp/*) mkdir -p "$dir" && mount -t hostfs -o "$dir" hostfs "$dir" ;;
  esac
done
out=$xdc_uml_out

release=$(uname -r)
mkdir -p /run/uml/modroot/lib/modules
ln -s "/usr/lib/uml/modules/$release" "/run/uml/modroot/lib/modules/$release"
printf '#!/bin/sh\nexec /usr/sbin/modprobe -d /run/uml/modroot "$@"\n' >/run/uml/modprobe
chmod +x /run/uml/modprobe
echo /run/uml/modprobe >/proc/sys/kernel/modprobe
# What the kernel backend uses; loaded up front so that a missing one is named here.
for m in sch_netem sch_tbf sch_htb veth; do
  /run/uml/modprobe "$m" || echo "uml init: cannot load module $m" >>"$out/output"
done
ip link set lo up

echo "$release" >"$out/uname"
cd "$xdc_uml_cwd" || exit 1
export XDC_UML_GUEST="$release"
sh "$out/command" >>"$out/output" 2>&1 </dev/null
echo $? >"$out/rc"
sync
