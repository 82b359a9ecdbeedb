#!/usr/bin/env bash
# locktorture spin_lock writers, stock qspinlock vs CNA, on the CNA
# series' 4-socket Haswell-EX (scenarios/contention/locktorture-cna.toml),
# next to the series' published figures (Alex Kogan, "[PATCH v11 0/5] Add
# NUMA-awareness to qspinlock", LKML, 15 Sep 2020: total ops x10^7 at the
# end of each run, mean of 25 runs).
#
# Each point is simulated without locktorture's rare 100 ms holds
# (long_holds = 0: one in nrealwriters * 200,000 acquisitions, too rare for
# a simulated run to hold enough of them), which are then added in closed
# form: each acquisition brings 100 ms / (n * 200,000) of expected time in
# which nothing else runs, so rate = 1 / (1/rate0 + 5e-7 s / n).
# docs/contention.md checks the closed form against runs that keep them.
# Usage: docs/sweeps/locktorture-cna.sh > docs/locktorture-cna.csv
set -euo pipefail
cd "$(dirname "$0")/../.."
smpsim=${SMPSIM:-./target/release/smpsim}
for n in ${COUNTS:-1 2 4 8 16 32 36 72 108 142}; do
  "$smpsim" run scenarios/contention/locktorture-cna.toml -q --format json \
    --set tasks.writer.count="$n" --set tasks.writer.vars.n="$n" \
    --set tasks.writer.vars.long_holds=0
done | python3 -c '
import json, math, sys
# (threads, stock, CNA): the cover letter, total ops x10^7.
published = {1: (2.682, 2.695), 2: (2.810, 2.797), 4: (4.273, 4.294),
             8: (5.071, 6.755), 16: (5.840, 8.940), 32: (6.246, 9.866),
             36: (6.355, 9.968), 72: (6.129, 10.231), 108: (5.921, 10.246),
             142: (5.763, 10.186)}
rows = []
dec = json.JSONDecoder()
text = sys.stdin.read()
i = 0
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    d, i = dec.raw_decode(text, i)
    rate = {v["variant"]: v["counters"][0]["rate"] for v in d["variants"]}
    n = d["variants"][0]["task_groups"][0]["tasks"]
    held = lambda r: 1.0 / (1.0 / r + 5e-7 / n)
    rows.append((n, held(rate["stock"]), held(rate["cna"])))
s1, c1 = rows[0][1], rows[0][2]
print("threads,stock_per_s,cna_per_s,speedup,pub_speedup,stock_rel,pub_stock_rel,cna_rel,pub_cna_rel")
for n, s, c in rows:
    ps, pc = published[n]
    print(f"{n},{s:.0f},{c:.0f},{c/s:.3f},{pc/ps:.3f},{s/s1:.3f},{ps/published[1][0]:.3f},{c/c1:.3f},{pc/published[1][1]:.3f}")
'
