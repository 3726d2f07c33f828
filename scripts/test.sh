#!/usr/bin/env bash
# Install, build and run every test (unit and integration: real namespaces, tc, MPI).
# Integration tests need root (network namespaces); run as root or with sudo.
#   scripts/test.sh [ctest args...]     e.g. scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD_DIR=${XDC_BUILD_DIR:-build}
# Anything a previous crashed run left behind would disturb measurements.
"$BUILD_DIR/harness/cli/xdc" clean >/dev/null 2>&1 || true
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 900 "$@"
