#!/usr/bin/env bash
# Sensitivity of the hotplug-smt result to its assumed numbers.
set -euo pipefail
cd "$(dirname "$0")/../.."
smpsim=${SMPSIM:-./target/release/smpsim}
point() {
  local label=$1; shift
  "$smpsim" reproduce hotplug-smt --format json "$@" 2>/dev/null |
    python3 -c '
import json, sys
r = {m["metric"]: m["simulated"] for m in json.load(sys.stdin)}
print("| %s | %.1f s | %.2f s | %.1f | %.1f s | %.2f s | %.1f | %.2f | %.2f |" % (sys.argv[1],
  r["smt1_baseline_s"], r["smt1_expedited_s"], r["smt1_speedup"],
  r["smt8_baseline_s"], r["smt8_expedited_s"], r["smt8_speedup"],
  r["smt1_batched_ratio"], r["smt8_batched_ratio"]))' "$label"
}
echo "| assumption changed | smt=1 base | smt=1 exp | speedup | smt=8 base | smt=8 exp | speedup | batched 1 | batched 8 |"
echo "|---|---|---|---|---|---|---|---|---|"
point "none (scenario as written)"
point "CONFIG_HZ=250" --set kernel.hz=250
point "CONFIG_HZ=1000" --set kernel.hz=1000
point "FQS every 8 jiffies (nr_cpu_ids = 1920 possible CPUs)" --set kernel.jiffies_till_first_fqs=8 --set kernel.jiffies_till_next_fqs=8
point "rcu_node_cost 20 us" --set kernel.rcu_node_cost=20us
point "IPI latency 5 us" --set machine.costs.ipi_latency.ns=5000
point "context switch 5 us" --set machine.costs.context_switch.ns=5000
point "take_cpu_down() 200 us" --set "functions.takedown_cpu='stop_machine_cpuslocked(func = 200us, cpu = cpu); set_cpu_offline(cpu);'"
point "cross-chip line transfer 900 ns" --set machine.costs.line_transfer.cross_socket.ns=900
