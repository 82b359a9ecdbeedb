#!/usr/bin/env bash
# Scaling of the slow-mutex case: N concurrent readers, both variants.
# Prints per-reader sys and wall (mean), as time(1) would.
set -euo pipefail
cd "$(dirname "$0")/../.."
smpsim=${SMPSIM:-./target/release/smpsim}
machine=${1:-intel-spr-224}
printf '%-8s | %-22s | %-22s\n' readers "spin: sys / real (s)" "nospin: sys / real (s)"
for n in 1 2 4 6 12 24; do
  "$smpsim" run scenarios/slow-mutex.toml --variant spin --variant nospin \
    --set tasks.reader.count=$n --set machine.preset=$machine --format json |
  python3 -c '
import json, sys
d = json.load(sys.stdin)
cells = []
for v in d["variants"]:
    g = next(g for g in v["task_groups"] if g["name"] == "reader")
    cells.append("%6.3f / %6.3f" % (g["total"]["sys"] / g["tasks"] / 1e9, g["wall_mean_ns"] / 1e9))
print("%-8s | %-22s | %-22s" % (sys.argv[1], cells[0], cells[1]))' "$n"
done
