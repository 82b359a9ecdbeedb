#!/usr/bin/env bash
# Sensitivity of the membarrier-percpu result to its assumed numbers.
# Each line: the override, then throughput_ratio and the two absolute rates.
set -euo pipefail
cd "$(dirname "$0")/../.."
smpsim=${SMPSIM:-./target/release/smpsim}
point() {
  local label=$1; shift
  "$smpsim" reproduce membarrier-percpu --quick --format json "$@" 2>/dev/null |
    python3 -c 'import json,sys; r={m["metric"]: m["simulated"] for m in json.load(sys.stdin)}; print("%-40s ratio %7.1f  sentinel-after %.2f ms" % (sys.argv[1], r["throughput_ratio"], r["sentinel_max_latency_ms_after"]))' "$label"
}
point "scenario as written"
for v in 50ns 300ns; do point "kernel.tg_walk_cost=$v" --set kernel.tg_walk_cost=$v; done
point "kernel.hz=250" --set kernel.hz=250
for v in 500 2000; do point "costs.ipi_latency.ns=$v" --set machine.costs.ipi_latency.ns=$v; done
for v in 50 200; do point "costs.line_transfer.same_node.ns=$v" --set machine.costs.line_transfer.same_node.ns=$v; done
point "costs.context_switch.ns=2000" --set machine.costs.context_switch.ns=2000
