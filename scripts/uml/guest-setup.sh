# Sourced by the init scripts of User-Mode Linux guests (init.sh: one command; lab-init.sh:
# a lab machine). Root is the host's filesystem (hostfs, read-write), so this:
#  - covers /run, /dev/shm and /etc/netns with the guest's own tmpfs: nothing the guest
#    creates there (network namespaces in /run/netns, /run/xdc, lock files, the
#    namespaces' hosts files) reaches the host's or another guest's; its temporary
#    directory (TMPDIR) is /run/tmp, while /tmp itself stays the host's;
#  - makes the UML kernel's modules (/usr/lib/uml/modules/<release>) loadable, both by
#    hand and by the kernel's own autoloading (qdisc kinds, iptables tables), through a
#    modprobe wrapper: the host has no /lib/modules/<guest release> and the guest must
#    not create one on the host's disk; loads $uml_modules (a missing one is reported
#    through uml_note, which the caller defines).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=0755 tmpfs /run
# /tmp stays the host's, so directories there (a lab's, a checkout under /tmp) are seen as
# they are; what the guest's programs put in a temporary directory goes to its own
# (TMPDIR: mktemp, OpenMPI's session directories). Not a tmpfs over /tmp with those
# directories mounted again: UML 6.1.176's hostfs ignores the host path of a second mount
# (and a bind mount of a hostfs directory shows another), so they would not be seen.
mkdir -p /run/tmp && chmod 1777 /run/tmp
export TMPDIR=/run/tmp
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# Per-namespace /etc files (`ip netns exec` binds /etc/netns/<ns>/*; xdc writes hosts
# files there): the guest's own too, or guests and host would see each other's networks.
mkdir -p /etc/netns && mount -t tmpfs -o mode=0755 tmpfs /etc/netns

release=$(uname -r)
mkdir -p /run/uml/modroot/lib/modules
ln -s "/usr/lib/uml/modules/$release" "/run/uml/modroot/lib/modules/$release"
printf '#!/bin/sh\nexec /usr/sbin/modprobe -d /run/uml/modroot "$@"\n' >/run/uml/modprobe
chmod +x /run/uml/modprobe
echo /run/uml/modprobe >/proc/sys/kernel/modprobe
for m in $uml_modules; do
  /run/uml/modprobe "$m" || uml_note "cannot load module $m"
done
ip link set lo up
