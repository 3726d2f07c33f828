#!/bin/sh
# PID 1 of a User-Mode Linux guest started by scripts/uml/run.sh (see there).
# It runs the command written in $xdc_uml_out/command from $xdc_uml_cwd, stdout and
# stderr to $xdc_uml_out/output, its exit status to $xdc_uml_out/rc, and powers off
# (guest-setup.sh, sourced first, sets the guest up: own /run and TMPDIR, modules).
# xdc_uml_out and xdc_uml_cwd come from the kernel command line (the kernel hands
# unknown name=value words to init as environment variables).
# Whatever happens below, the guest must end, or the host waits for its timeout.
trap 'poweroff -f' EXIT
out=$xdc_uml_out
uml_note() { echo "uml init: $*" >>"$out/output"; }
# What the kernel backend uses; loaded up front so that a missing one is named here.
uml_modules="sch_netem sch_tbf sch_htb veth"
. "$(dirname "$0")/guest-setup.sh"

echo "$release" >"$out/uname"
cd "$xdc_uml_cwd" || exit 1
export XDC_UML_GUEST="$release"
sh "$out/command" >>"$out/output" 2>&1 </dev/null
echo $? >"$out/rc"
sync
