#!/usr/bin/env bash
# Throughput against CPUs for every spinlock implementation of
# scenarios/lock-scaling.toml, as CSV (acquisitions per second).
# Usage: docs/sweeps/lock-scaling.sh [PRESET [CPU-COUNTS]] > docs/lock-scaling.csv
set -euo pipefail
cd "$(dirname "$0")/../.."
smpsim=${SMPSIM:-./target/release/smpsim}
machine=${1:-opteron-6172-48}
variants=(qspinlock ticket tas tas_backoff mcs)
counts=${2:-"1 2 4 6 8 12 16 24 32 40 48"}
echo "cpus,${variants[*]}" | tr ' ' ','
for n in $counts; do
  args=()
  for v in "${variants[@]}"; do args+=(--variant "$v"); done
  "$smpsim" run scenarios/lock-scaling.toml "${args[@]}" \
    --set machine.preset="$machine" --set tasks.locker.count="$n" --format json |
  python3 -c '
import json, sys
d = json.load(sys.stdin)
rates = []
for v in d["variants"]:
    c = next(c for c in v["counters"] if c["name"] == "acquisitions")
    rates.append("%.0f" % c["rate"])
print(sys.argv[1] + "," + ",".join(rates))' "$n"
done
