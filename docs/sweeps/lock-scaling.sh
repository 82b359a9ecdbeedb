#!/usr/bin/env bash
# Throughput against CPUs for every spinlock implementation of
# scenarios/lock-scaling.toml, as CSV (acquisitions per second), one column
# per implementation: `smpsim sweep` over the task count, then
# `smpsim plot --format csv`, pivoted. The last column, `ttas`, is the
# `tas` variant with its kind switched to test-and-test-and-set (x86
# before 2.6.25): not a variant of the scenario, a second sweep.
# Usage: docs/sweeps/lock-scaling.sh [PRESET [CPU-COUNTS]] > docs/lock-scaling.csv
set -euo pipefail
cd "$(dirname "$0")/../.."
smpsim=${SMPSIM:-./target/release/smpsim}
machine=${1:-opteron-6172-48}
counts=${2:-"1 2 4 6 8 12 16 24 32 40 48"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$smpsim" sweep scenarios/lock-scaling.toml -q -o "$tmp/r.jsonl" ${EXTRA_SET:-} \
  --set machine.preset="$machine" --set tasks.locker.count="$(echo $counts | tr ' ' ',')"
"$smpsim" sweep scenarios/lock-scaling.toml -q -o "$tmp/ttas.jsonl" ${EXTRA_SET:-} --variant tas \
  --set variant.tas.objects.lock.kind=ttas \
  --set machine.preset="$machine" --set tasks.locker.count="$(echo $counts | tr ' ' ',')"
for r in r ttas; do
  "$smpsim" plot "$tmp/$r.jsonl" --x tasks.locker.count --y counter.acquisitions.rate \
    --format csv -o "$tmp/$r.csv"
done
python3 - "$tmp/r.csv" "$tmp/r.jsonl" "$tmp/ttas.csv" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
# The scenario's variant order, as the sweep ran them.
variants = list(dict.fromkeys(json.loads(l)["variant"] for l in open(sys.argv[2])))
# The switched `tas` sweep is the `ttas` column.
rows += [dict(r, variant="ttas") for r in csv.DictReader(open(sys.argv[3]))]
variants.append("ttas")
xs = sorted({int(float(r["tasks.locker.count"])) for r in rows})
rate = {(r["variant"], int(float(r["tasks.locker.count"]))): float(r["mean"]) for r in rows}
print(",".join(["cpus"] + variants))
for x in xs:
    print(",".join([str(x)] + ["%.0f" % rate[(v, x)] for v in variants]))
PY
