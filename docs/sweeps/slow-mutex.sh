#!/usr/bin/env bash
# Scaling of the slow-mutex case: N concurrent readers, both variants.
# Prints per-reader sys and wall (mean), as time(1) would.
# One `smpsim sweep` over the reader count (resumable: the points are in
# $OUT, default a temporary file), then a table from its results.
set -euo pipefail
cd "$(dirname "$0")/../.."
smpsim=${SMPSIM:-./target/release/smpsim}
machine=${1:-intel-spr-224}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=${OUT:-$tmp/slow-mutex.jsonl}
"$smpsim" sweep scenarios/slow-mutex.toml --variant spin --variant nospin \
  --set tasks.reader.count=1,2,4,6,12,24 --set machine.preset="$machine" -q -o "$out"
python3 - "$out" <<'PY'
import json, sys
cells = {}
for line in open(sys.argv[1]):
    p = json.loads(line)
    g = next(g for g in p["result"]["task_groups"] if g["name"] == "reader")
    n = int(p["settings"]["tasks.reader.count"])
    cells[(n, p["variant"])] = "%6.3f / %6.3f" % (g["total"]["sys"] / g["tasks"] / 1e9, g["wall_mean_ns"] / 1e9)
print("%-8s | %-22s | %-22s" % ("readers", "spin: sys / real (s)", "nospin: sys / real (s)"))
for n in sorted({n for n, _ in cells}):
    print("%-8s | %-22s | %-22s" % (n, cells[(n, "spin")], cells[(n, "nospin")]))
PY
