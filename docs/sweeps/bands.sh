#!/usr/bin/env bash
# The case docs' sensitivity tables, from the same machinery as the bands
# `reproduce` prints (crates/runner/src/band): for each case, every
# published figure with its band and parts, then every assumed value the
# band varied with the figure at each end of its range (the others as
# written). Quick runs by default; FULL=1 for the published lengths.
#
#   bash docs/sweeps/bands.sh [CASE...] > tables.md
set -euo pipefail
cd "$(dirname "$0")/../.."
smpsim=${SMPSIM:-$PWD/target/release/smpsim}
quick=--quick
[ "${FULL:-0}" = 1 ] && quick=
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$smpsim" reproduce "$@" $quick -q --format json -o "$tmp/rows.json"
python3 - "$tmp/rows.json" "${quick:-full}" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
run = "quick runs" if sys.argv[2] == "--quick" else "full runs"

def num(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1e6:
        return "%.3gM" % (v / 1e6)
    if a >= 1e4:
        return "%.3gk" % (v / 1e3)
    return "%.4g" % v

cases = []
for r in rows:
    if not cases or cases[-1][0] != r["case"]:
        cases.append((r["case"], []))
    cases[-1][1].append(r)
for case, rs in cases:
    banded = [r for r in rs if r.get("band")]
    if not banded:
        continue
    print("### %s (%s, `bash docs/sweeps/bands.sh %s`)\n" % (case, run, case))
    print("| figure | published | simulated | band | seeds | assumed | model | dominated by |")
    print("|---|---|---|---|---|---|---|---|")
    for r in banded:
        b, p = r["band"], r["band"]["parts"]
        part = lambda x: "%s - %s" % (num(x["lo"]), num(x["hi"]))
        agrees = {True: " (inside)", False: " (outside)"}.get(r.get("agrees"), "")
        print("| %s | %s%s | %s | %s - %s | %s | %s | %s | %s |" % (
            r["metric"], num(r["published"]), agrees, num(r["simulated"]), num(b["lo"]), num(b["hi"]),
            part(p["seeds"]), part(p["assumed"]), part(p["model"]), b["dominant"]))
    # The assumed values by how far they move the first published figure.
    shown = [r for r in banded if r["published"] is not None][:3] or banded[:3]
    order = [s["name"] for s in shown[0]["band"]["params"]]
    print()
    print("| assumed value | range | " + " | ".join("%s at low / high" % r["metric"] for r in shown) + " |")
    print("|---|---|" + "---|" * len(shown))
    for name in order:
        cells = []
        rng = ""
        for r in shown:
            s = next(x for x in r["band"]["params"] if x["name"] == name)
            rng = "%s - %s" % (s["lo_value"], s["hi_value"])
            cells.append("%s / %s" % (num(s["at_lo"]), num(s["at_hi"])))
        print("| `%s` | %s | %s |" % (name, rng, " | ".join(cells)))
    print()
PY
