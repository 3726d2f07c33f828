#!/usr/bin/env bash
# The Vagrantfile: `vagrant validate` passes (with the libvirt provider's checks when
# Debian's vagrant-libvirt is installed, else provider blocks ignored; VirtualBox is not in
# Debian), for 1, 3 and 5 machines; and what `vagrant up` writes before any VM starts --
# the shared key pair and lab.yaml -- is right: lab.yaml loads with the lab parser and
# names each machine. Runs on a copy, so the checkout gets no .vagrant/ or lab.yaml.
#   tests/lab/vagrant_test.sh LAB_TEST_BINARY     (exit 77 = skipped: no vagrant)
set -euo pipefail
LAB_TEST=$1
command -v vagrant >/dev/null || { echo "vagrant not installed (scripts/test.sh installs it)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp Vagrantfile "$tmp/"
export VAGRANT_CWD=$tmp VAGRANT_HOME=$tmp/vagrant.d
if vagrant plugin list 2>/dev/null | grep -q vagrant-libvirt; then
  validate=(env VAGRANT_DEFAULT_PROVIDER=libvirt vagrant validate)
else
  validate=(vagrant validate --ignore-provider)
fi
for n in 1 3 5; do
  out=$(XDC_LAB_MACHINES=$n "${validate[@]}" 2>&1) || { echo "$out"; exit 1; }
  grep -q "validated successfully" <<<"$out" || { echo "$out"; exit 1; }
  echo "vagrant validate, $n machines: ok"
done
# A bad setting is refused before anything is built.
if XDC_LAB_MACHINES=0 "${validate[@]}" >/dev/null 2>&1; then echo "XDC_LAB_MACHINES=0 accepted"; exit 1; fi
[ ! -e "$tmp/lab.yaml" ] || { echo "validate wrote lab.yaml"; exit 1; }

# `vagrant up`'s host-side part: the Vagrantfile evaluated as for `up`, Vagrant's own
# configure step stubbed out (it would start VMs).
VF=$tmp/Vagrantfile XDC_LAB_MACHINES=4 ruby -e '
  module Vagrant; def self.configure(_version); end; end
  vagrantfile = ENV.fetch("VF")
  ARGV.replace(["up"])
  load vagrantfile'
key=$tmp/.vagrant/xdc-lab/id_ed25519
[ "$(stat -c %a "$key")" = 600 ] || { echo "lab key missing or not 600: $key"; exit 1; }
grep -q "^ssh-ed25519 .* xdc-lab$" "$key.pub" || { echo "lab public key missing"; exit 1; }
cat "$tmp/lab.yaml"
out=$(XDC_LAB_FILE=$tmp/lab.yaml XDC_LAB_MACHINES=4 "$LAB_TEST" \
      --gtest_filter=Lab.VagrantWrittenFileLoads 2>&1) || { echo "$out"; exit 1; }
grep -q "\[  PASSED  \] 1 test" <<<"$out" || { echo "$out"; exit 1; }
# The key lab.yaml names is the one made, relative to lab.yaml.
grep -q "key: .vagrant/xdc-lab/id_ed25519" "$tmp/lab.yaml"
echo "vagrant up's lab.yaml and keys: ok"
