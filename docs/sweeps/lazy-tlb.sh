#!/usr/bin/env bash
# Scaling of the lazy-tlb benchmark: N CPUs (N/2 ping-pong pairs) in the
# three lazy-TLB modes, on POWER8 costs (12 cores per chip).
set -euo pipefail
cd "$(dirname "$0")/../.."
smpsim=${SMPSIM:-$PWD/target/release/smpsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| CPUs | refcount switches/s | shootdown switches/s | cpumask-refcount switches/s | shootdown / refcount |"
echo "|---|---|---|---|---|"
for n in 2 4 8 12 24 48 96 192; do
  python3 - "$n" "$tmp/lazy-tlb.toml" <<'PY'
import re, sys
n, out = int(sys.argv[1]), sys.argv[2]
s = open("scenarios/lazy-tlb.toml").read()
sockets, per = (1, n) if n < 12 else (n // 12, 12)
s = s.replace('preset = "power8-192"', 'preset = "power8-192"\n[machine.topology]\nsockets = %d\nllcs_per_node = %d\n' % (sockets, per), 1)
even = ", ".join(str(i) for i in range(0, n, 2))
odd = ", ".join(str(i) for i in range(1, n, 2))
blocks = re.findall(r"cpus = \[[^\]]*\]", s)
s = s.replace(blocks[0], "cpus = [%s]" % even, 1).replace(blocks[1], "cpus = [%s]" % odd, 1)
s = s.replace("count = 96", "count = %d" % (n // 2))
s = s.replace("[kernel]", "[kernel]\n", 1)
open(out, "w").write(s)
PY
  "$smpsim" reproduce lazy-tlb --quick --format json --scenarios "$tmp" 2>/dev/null |
    python3 -c '
import json, sys
r = {m["metric"]: m["simulated"] for m in json.load(sys.stdin)}
print("| %s | %.2fM | %.2fM | %.2fM | %.1f |" % (sys.argv[1], r["switches_per_s_refcount"] / 1e6,
      r["switches_per_s_shootdown"] / 1e6, r["switches_per_s_cpumask_refcount"] / 1e6, r["speedup"]))' "$n"
done
