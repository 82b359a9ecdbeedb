#!/usr/bin/env bash
# The case docs' sensitivity tables, from the same machinery as the bands
# `reproduce` prints (crates/runner/src/band): for each case, every
# published figure with its band and parts, then every assumed value the
# band varied with the figure at each end of its range (the others as
# written). Quick runs by default; FULL=1 for the published lengths.
#
#   bash docs/sweeps/bands.sh [CASE...] > tables.md
#   ROWS=rows.json bash docs/sweeps/bands.sh   # from a `reproduce --format json` already run
#   WRITE=1 bash docs/sweeps/bands.sh          # also into docs/CASE.md, between its
#                                              # <!-- bands.sh begin/end --> markers
set -euo pipefail
cd "$(dirname "$0")/../.."
smpsim=${SMPSIM:-$PWD/target/release/smpsim}
quick=--quick
[ "${FULL:-0}" = 1 ] && quick=
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${ROWS:-}" ]; then
  cp "$ROWS" "$tmp/rows.json"
  python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))[0]["quick"] else 1)' "$tmp/rows.json" || quick=
else
  "$smpsim" reproduce "$@" $quick -q --format json -o "$tmp/rows.json"
fi
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

import io, os, contextlib
write = os.environ.get("WRITE") == "1"
cases = []
for r in rows:
    if not cases or cases[-1][0] != r["case"]:
        cases.append((r["case"], []))
    cases[-1][1].append(r)
def table(case, rs):
  banded = [r for r in rs if r.get("band")]
  if banded:
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

BEGIN, END = "<!-- bands.sh begin -->", "<!-- bands.sh end -->"
for case, rs in cases:
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        table(case, rs)
    print(text.getvalue(), end="")
    doc = "docs/%s.md" % case
    if write and text.getvalue() and os.path.exists(doc):
        d = open(doc).read()
        block = "%s\n%s%s" % (BEGIN, text.getvalue(), END)
        if BEGIN in d and END in d:
            d = d[:d.index(BEGIN)] + block + d[d.index(END) + len(END):]
        else:
            d = (d.rstrip("\n") + "\n\n## Bands (generated: `WRITE=1 bash docs/sweeps/bands.sh`)\n\n"
                 + "Each published figure with its band, its parts and what dominates it\n"
                 + "(README, \"How to read a band\"), then every assumed value the band\n"
                 + "varied with the figures at each end of its range, the others as written:\n"
                 + "the sensitivity table, from the same runs. A value assumed only in a\n"
                 + "comment is not varied. The design's runs are shortened (README), so\n"
                 + "read the rows against each other more than as whole-run figures.\n\n"
                 + block + "\n")
        open(doc, "w").write(d)
PY
