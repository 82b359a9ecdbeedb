#!/usr/bin/env bash
# Sensitivity of the ipi-preempt result to its assumed workload numbers.
# Each point edits one assumption in a copy of the scenario and runs the
# quick reproduction (10 replicas x 2 windows of 30 s).
set -euo pipefail
cd "$(dirname "$0")/../.."
smpsim=${SMPSIM:-$PWD/target/release/smpsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
point() {
  local label=$1 edit=$2
  sed -e "$edit" scenarios/ipi-preempt.toml > "$tmp/ipi-preempt.toml"
  if cmp -s scenarios/ipi-preempt.toml "$tmp/ipi-preempt.toml" && [ -n "$edit" ]; then
    echo "sweep: the edit for '$label' changed nothing" >&2; exit 1
  fi
  "$smpsim" reproduce ipi-preempt --quick --format json --scenarios "$tmp" 2>/dev/null |
    python3 -c '
import json, sys
r = {m["metric"]: m["simulated"] for m in json.load(sys.stdin)}
print("| %s | %.2f ms | %.2f ms | %.1f%% |" % (sys.argv[1], r["p99_max_preempt_off_ns_before"] / 1e6,
      r["p99_max_preempt_off_ns_after"] / 1e6, r["reduction_pct"]))' "$label"
}
echo "| assumption changed | P99 before | P99 after | reduction |"
echo "|---|---|---|---|"
point "none (scenario as written)" ""
point "IRQ-off stalls 4x more often (1 in 5,000)" 's/weight = 19999/weight = 4999/'
point "IRQ-off stalls 4x rarer (1 in 80,000)" 's/weight = 19999/weight = 79999/'
point "stall length exp(2 ms)" 's/time = "exp(5ms)"/time = "exp(2ms)"/'
point "stall length exp(10 ms)" 's/time = "exp(5ms)"/time = "exp(10ms)"/'
point "lru_lock hold sigma 0.5" 's/lognormal(20us, 1.0)/lognormal(20us, 0.5)/'
point "lru_lock hold sigma 1.5" 's/lognormal(20us, 1.0)/lognormal(20us, 1.5)/'
point "task exits 4x as often" 's/time = "exp(20ms)"/time = "exp(5ms)"/'
point "reclaim 4x rarer" 's/time = "exp(10ms)"/time = "exp(40ms)"/'
point "CONFIG_HZ=250" 's/^hz = 1000 /hz = 250 /'
