#!/usr/bin/env bash
# Install every Debian 12 package xdc needs, then build into build/.
#   scripts/setup.sh            install (if missing) + configure + build
#   XDC_SKIP_APT=1 scripts/setup.sh   build only
#   XDC_TARGETS=xdc scripts/setup.sh  build only the CLI and the programs it runs
#   XDC_TEST_TOOLS=1 scripts/setup.sh also the tools only tests use (scripts/test.sh sets it)
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libnl-3-dev libnl-route-3-dev libnetfilter-queue-dev libmnl-dev
  libyaml-cpp-dev libboost-dev libboost-filesystem-dev
  openmpi-bin libopenmpi-dev
  libgtest-dev libgmock-dev
  libopenblas-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  coinor-libcbc-dev
  iproute2 iptables iperf3 iputils-ping ethtool procps kmod bc
  user-mode-linux python3
  openssh-client  # xdc drives a lab's machines over ssh (harness/lab/remote.h)
  mininet bridge-utils  # the Mininet network backend (harness/network/mininet.h)
  chromium zlib1g-dev
)

# Only for tests: `vagrant validate` of the Vagrantfile (Debian's vagrant, ~50 Ruby packages;
# vagrant-libvirt, 17 more, lets it check the libvirt provider block too).
[ "${XDC_TEST_TOOLS:-0}" = 1 ] && APT_PACKAGES+=(vagrant vagrant-libvirt)
# Only for tests: the sshd each User-Mode Linux lab machine runs (tests/lab/uml_lab_test.sh;
# on a host with systemd the package also enables the host's own ssh service).
[ "${XDC_TEST_TOOLS:-0}" = 1 ] && APT_PACKAGES+=(openssh-server)
# Only for tests: the formatting check (tests/common, Style.SourcesAreClangFormatted).
[ "${XDC_TEST_TOOLS:-0}" = 1 ] && APT_PACKAGES+=(clang-format)
# Only for tests: the parsers' libFuzzer targets (tests/fuzz; ctest Fuzz.ParsersKeepTheirContract
# runs scripts/fuzz.sh --smoke): clang and its libFuzzer runtime.
[ "${XDC_TEST_TOOLS:-0}" = 1 ] && APT_PACKAGES+=(clang libclang-rt-14-dev)
# Only for tests and the shipped `workload:` examples (experiments/byo, docs/workload.md):
# PyTorch (CPU, gloo) and mpi4py from Debian.
[ "${XDC_TEST_TOOLS:-0}" = 1 ] && APT_PACKAGES+=(python3-torch python3-mpi4py)
# Only for tests: the documentation site's strict build (Docs.SiteBuildsWithoutWarnings).
[ "${XDC_TEST_TOOLS:-0}" = 1 ] && APT_PACKAGES+=(mkdocs)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${XDC_SKIP_APT:-0}" != 1 ] && [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=${XDC_BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${XDC_BUILD_TYPE:-RelWithDebInfo} ${XDC_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$(nproc)" --target ${XDC_TARGETS:-all}
echo "setup: built into $BUILD_DIR/"
