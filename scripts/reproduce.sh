#!/usr/bin/env bash
# Paper reproductions as sweeps (experiments/repro/README.md):
#   scripts/reproduce.sh [atlas|atlas-real|geopipe|crosspipe|bubbletea|dhelix|diloco|all] [xdc sweep options...]
# Each runs its sweeps (`xdc sweep experiments/repro/<name>.yaml -o results/repro/<name>`,
# resumable: rerun to continue after Ctrl-C), prints its headline numbers and writes
# results/repro/<paper>/headline.json: atlas also runs experiments/multi-connection-sweep.yaml;
# bubbletea's is its highest-rate point; geopipe and dhelix also predict the papers' own
# settings (geopipe-paper*.yaml; dhelix.yaml, dhelix-h100.yaml); diloco: the WAN all-reduce
# of synchronous DP (dp-sync.yaml), DiLoCo: loss, WAN bytes, utilisation, overlap (diloco-*.yaml).
# Figures by python/xdc_results/papers.py; every err_pct (and the tables' measured vs
# simulated %) is 100 (simulated - measured) / measured: positive = predicted slower.
# Needs root (network namespaces) and a build (XDC_BUILD_DIR, default build).
. "$(dirname "$0")/lib.sh"
which=${1:-all}
shift || true
R=results/repro

papers() { "$XDC_PY" -m xdc_results.papers "$@"; }
# pivot CSV ROW COLUMNS METRIC: METRIC per ROW value (lines) and COLUMNS value ("a+b": pairs)
pivot() { papers pivot "$@"; }
sweep() {  # sweep NAME FILE [OPTIONS]: run sweep FILE into results/repro/NAME
  local name=$1 file=$2
  shift 2
  echo "== $name"
  "$XDC" sweep "$file" -o "$R/$name" "$@" || echo "$name: sweep did not finish (rerun to resume); figures so far:"
}

atlas() {
  sweep atlas experiments/repro/atlas.yaml "$@"
  local csv=$R/atlas/sweep.csv
  echo "-- Atlas: slowdown vs one-way WAN latency (iteration time / at 0 ms)"
  pivot "$csv" wan.delay parallelism+schedule slowdown
  echo "-- iteration time (s), measured"
  pivot "$csv" wan.delay parallelism+schedule iteration_s
  sweep atlas-connections experiments/multi-connection-sweep.yaml "$@"
  sweep atlas-wan-sharing experiments/wan-sharing-sweep.yaml "$@"
  # The prediction of every point by the current simulator (no namespaces, seconds).
  "$XDC" simulate experiments/repro/atlas.yaml -o $R/atlas-simulated >/dev/null
  "$XDC" simulate experiments/wan-sharing-sweep.yaml -o $R/atlas-wan-sharing-simulated >/dev/null
  papers atlas $R
}

atlas_real() {
  sweep atlas-real experiments/repro/atlas-real.yaml "$@"
  local csv=$R/atlas-real/sweep.csv
  echo "-- Atlas, real compute and full-size messages: slowdown vs one-way WAN latency"
  pivot "$csv" wan.delay parallelism+schedule slowdown
  echo "-- iteration time (s)"
  pivot "$csv" wan.delay parallelism+schedule iteration_s
}

geopipe() {
  sweep geopipe-latency experiments/repro/geopipe-latency.yaml "$@"
  local csv=$R/geopipe-latency/sweep.csv
  echo "-- GeoPipe: iteration time (s) vs latency"
  pivot "$csv" wan.delay schedule iteration_s
  echo "-- bubble ratio (ZeroBubble definition) vs latency"
  pivot "$csv" wan.delay schedule bubble.zerobubble
  papers geopipe-latency $R/geopipe-latency
  echo "   paper: bubble -78.91%, iteration -9.1% vs 1F1B"
  sweep geopipe-bandwidth experiments/repro/geopipe-bandwidth.yaml "$@"
  csv=$R/geopipe-bandwidth/sweep.csv
  echo "-- GeoPipe: iteration time (s) vs cross-DC rate at 20 ms"
  pivot "$csv" wan.rate schedule iteration_s
  echo "-- simulated"
  pivot "$csv" wan.rate schedule simulated_iteration_s
  echo "   paper: past a bandwidth point more bandwidth stops helping"
  geopipe_paper "$@"
}

# GeoPipe in its own setting (TP 8 x PP 8, 3 DCs on a DC-OTN; geopipe-paper*.yaml): grids
# predicted (seconds, no namespaces), one small point emulated beside its prediction.
geopipe_paper() {
  "$XDC" simulate experiments/repro/geopipe-paper.yaml -o $R/geopipe-paper
  "$XDC" simulate experiments/repro/geopipe-paper-bandwidth.yaml -o $R/geopipe-paper-bandwidth
  sweep geopipe-paper-measured experiments/repro/geopipe-paper-measured.yaml "$@"
  papers geopipe-paper $R
}

crosspipe() {
  sweep crosspipe experiments/repro/crosspipe.yaml "$@"
  local csv=$R/crosspipe/sweep.csv
  echo "-- CrossPipe: iteration time (s) at L latency, D bandwidth-delay (in T_F)"
  pivot "$csv" delays schedule iteration_s
  echo "-- simulated"
  pivot "$csv" delays schedule simulated_iteration_s
  papers crosspipe $R/crosspipe
  echo "   paper (Table 5): CrossUD/1F1B at (2,2) = .196/.321 = 0.61"
}

bubbletea() {
  sweep bubbletea experiments/repro/bubbletea.yaml "$@"
  papers bubbletea $R/bubbletea
}

dhelix() {
  "$XDC" simulate experiments/repro/dhelix.yaml -o $R/dhelix-a40
  "$XDC" simulate experiments/repro/dhelix-h100.yaml -o $R/dhelix-h100
  sweep dhelix-measured experiments/repro/dhelix-measured.yaml "$@"
  sweep dhelix-measured-scale experiments/repro/dhelix-measured-scale.yaml "$@"
  papers dhelix $R
}

diloco() {
  for s in dp-sync diloco-{loss,bytes,utilisation,overlap}; do sweep $s experiments/repro/$s.yaml "$@"; done
  # Table 4: under the paper's assumptions, then the 1B model under xdc's (nothing is run).
  "$XDC" simulate --paper-table4 -o $R/diloco-table4
  for u in 0.5 0.8 0.9 0.95 0.99; do
    "$XDC" simulate experiments/repro/diloco-table4-1b.yaml --utilisation $u -o $R/diloco-table4/xdc-$u
  done
  papers diloco $R
}

case $which in
  atlas|atlas-real|geopipe|crosspipe|bubbletea|dhelix|diloco) "${which//-/_}" "$@" ;;
  all) crosspipe "$@"; geopipe "$@"; atlas "$@"; bubbletea "$@"; dhelix "$@"; diloco "$@" ;;
  -h|--help) sed -n '2,12p' "$0" ;;
  *) echo "usage: $0 [atlas|atlas-real|geopipe|crosspipe|bubbletea|dhelix|diloco|all] [xdc sweep options]" >&2; exit 2 ;;
esac
