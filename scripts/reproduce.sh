#!/usr/bin/env bash
# Paper reproductions as sweeps (experiments/repro/README.md):
#   scripts/reproduce.sh [atlas|geopipe|crosspipe|all] [xdc sweep options...]
# Each runs `xdc sweep experiments/repro/<name>.yaml -o results/repro/<name>` (resumable:
# rerun to continue after Ctrl-C) and prints its headline numbers from sweep.csv.
# Needs root (network namespaces) and a build (XDC_BUILD_DIR, default build).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${XDC_BUILD_DIR:-build}
XDC=${XDC:-$BUILD_DIR/harness/cli/xdc}
which=${1:-all}
shift || true

# pivot CSV ROW_COLUMN COLUMN_COLUMNS METRIC: a table of METRIC, one line per value of
# ROW_COLUMN (in file order), one column per value of COLUMN_COLUMNS ("a+b": per pair).
pivot() {
  awk -F, -v rk="$2" -v ck="$3" -v mk="$4" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; nk = split(ck, keys, "+"); next }
    {
      r = $(col[rk]); v = $(col[mk]); c = $(col[keys[1]])
      for (k = 2; k <= nk; k++) c = c "/" $(col[keys[k]])
      if (!(r in seen_r)) { seen_r[r] = 1; rows[++nr] = r }
      if (!(c in seen_c)) { seen_c[c] = 1; cols[++nc] = c }
      val[r, c] = v
    }
    END {
      printf "  %-12s", rk; for (j = 1; j <= nc; j++) printf " %16s", cols[j]; printf "\n"
      for (i = 1; i <= nr; i++) {
        printf "  %-12s", rows[i]
        for (j = 1; j <= nc; j++) {
          v = val[rows[i], cols[j]]
          if (v == "") printf " %16s", "-"; else printf " %16.3f", v
        }
        printf "\n"
      }
    }' "$1"
}

sweep() {  # sweep NAME: run experiments/repro/NAME.yaml into results/repro/NAME
  local name=$1
  shift
  echo "== $name"
  "$XDC" sweep "experiments/repro/$name.yaml" -o "results/repro/$name" "$@" || {
    echo "$name: sweep did not finish (rerun to resume); figures so far:"
  }
}

atlas() {
  sweep atlas "$@"
  local csv=results/repro/atlas/sweep.csv
  echo "-- Atlas: slowdown vs one-way WAN latency (iteration time / at 0 ms)"
  pivot "$csv" wan.delay parallelism+schedule slowdown
  echo "-- iteration time (s)"
  pivot "$csv" wan.delay parallelism+schedule iteration_s
  echo "   paper: DP across DCs degrades far more with latency than a well-scheduled PP"
  sweep atlas-real "$@"
  csv=results/repro/atlas-real/sweep.csv
  echo "-- Atlas, real compute and full-size messages: slowdown vs one-way WAN latency"
  pivot "$csv" wan.delay parallelism+schedule slowdown
  echo "-- iteration time (s)"
  pivot "$csv" wan.delay parallelism+schedule iteration_s
}

geopipe() {
  sweep geopipe-latency "$@"
  local csv=results/repro/geopipe-latency/sweep.csv
  echo "-- GeoPipe: iteration time (s) vs latency"
  pivot "$csv" wan.delay schedule iteration_s
  echo "-- bubble ratio (ZeroBubble definition) vs latency"
  pivot "$csv" wan.delay schedule bubble.zerobubble
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { it[$(col["wan.delay"]), $(col["schedule"])] = $(col["iteration_s"])
      bz[$(col["wan.delay"]), $(col["schedule"])] = $(col["bubble.zerobubble"])
      if (!($(col["wan.delay"]) in s)) { s[$(col["wan.delay"])] = 1; d[++n] = $(col["wan.delay"]) } }
    END { for (i = 1; i <= n; i++) { k = d[i]
      if (it[k, "1f1b"] > 0 && it[k, "overlap"] != "" && bz[k, "1f1b"] > 0)
        printf "  %-6s overlap vs 1f1b: bubble %+.1f%%, iteration %+.1f%%\n", k,
          100 * (bz[k, "overlap"] / bz[k, "1f1b"] - 1), 100 * (it[k, "overlap"] / it[k, "1f1b"] - 1) } }' "$csv"
  echo "   paper: bubble -78.91%, iteration -9.1% vs 1F1B"
  sweep geopipe-bandwidth "$@"
  csv=results/repro/geopipe-bandwidth/sweep.csv
  echo "-- GeoPipe: iteration time (s) vs cross-DC rate at 20 ms"
  pivot "$csv" wan.rate schedule iteration_s
  echo "-- simulated"
  pivot "$csv" wan.rate schedule simulated_iteration_s
  echo "   paper: past a bandwidth point more bandwidth stops helping"
}

crosspipe() {
  sweep crosspipe "$@"
  local csv=results/repro/crosspipe/sweep.csv
  echo "-- CrossPipe: iteration time (s) at L latency, D bandwidth-delay (in T_F)"
  pivot "$csv" delays schedule iteration_s
  echo "-- simulated"
  pivot "$csv" delays schedule simulated_iteration_s
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { it[$(col["delays"]), $(col["schedule"])] = $(col["iteration_s"])
      sim[$(col["delays"]), $(col["schedule"])] = $(col["simulated_iteration_s"]) }
    END { k = "L2-D2"
      if (it[k, "1f1b"] > 0) printf "  at (2,2) crosspipe-greedy / 1f1b: measured %.2f", it[k, "crosspipe-greedy"] / it[k, "1f1b"]
      if (sim[k, "1f1b"] > 0) printf ", simulated %.2f", sim[k, "crosspipe-greedy"] / sim[k, "1f1b"]
      printf "\n" }' "$csv"
  echo "   paper (Table 5): CrossUD/1F1B at (2,2) = .196/.321 = 0.61"
}

case $which in
  atlas) atlas "$@" ;;
  geopipe) geopipe "$@" ;;
  crosspipe) crosspipe "$@" ;;
  all) crosspipe "$@"; geopipe "$@"; atlas "$@" ;;
  *) echo "usage: $0 [atlas|geopipe|crosspipe|all] [xdc sweep options]" >&2; exit 2 ;;
esac
