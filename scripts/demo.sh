#!/usr/bin/env bash
# Install, build and run the default experiment (experiments/two-dc.yaml): two emulated DCs
# 40 ms apart over a lossless 1 Gbit/s WAN, a 4-stage pipeline (2 stages per DC) training
# the mini Llama, comparing 1F1B, `overlap` and `crosspipe-greedy`, each run 3 times.
# Prints the comparison table (means with 95% CIs beside the predictions and their bands)
# and where the results are; arguments go to `xdc run` (-v: every iteration's line).
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
