#!/usr/bin/env bash
# Install, build and run every test (unit and integration: real namespaces, tc, MPI).
# Integration tests need root (network namespaces); run as root or with sudo.
#   scripts/test.sh [ctest args...]     e.g. scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
XDC_TEST_TOOLS=1 scripts/setup.sh
BUILD_DIR=${XDC_BUILD_DIR:-build}
# Tests bring up networks under their own names and take them down again; they run
# `xdc clean` only when no other xdc network is up, so yours survive a test run.
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 900 "$@"
