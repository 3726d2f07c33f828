#!/usr/bin/env bash
# Install, build and run the default experiment: two emulated DCs 20 ms apart, a 4-stage
# pipeline (2 stages per DC) training the mini Llama, comparing 1F1B, `overlap` and
# `crosspipe-greedy`. Prints the comparison table and where the results are.
# Needs root (network namespaces); run as root or with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."
# The demo needs the CLI and the programs it runs (xdc-worker, xdc-delayline), not the tests.
XDC_TARGETS=xdc scripts/setup.sh
BUILD_DIR=${XDC_BUILD_DIR:-build}
XDC=$BUILD_DIR/harness/cli/xdc
# A previous run killed hard may have left a network behind.
"$XDC" down two-dc >/dev/null 2>&1 || true
exec "$XDC" run experiments/two-dc.yaml "$@"
