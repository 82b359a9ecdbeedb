#!/usr/bin/env bash
# folly's SmallLocksBenchmark (runContended: N threads per lock or line,
# burn(100) inside, burn(1000) outside) on its two published machines,
# model against the published time per iteration, point by point
# (scenarios/contention/folly-small-locks.toml: dual Xeon E5-2680 v4, 56
# threads; folly-small-locks-d2191.toml: Xeon D-2191, 36 threads).
#
# Published: folly/synchronization/test/SmallLocksBenchmark.cpp, the
# results comment as of commit 886a70d91 (2019-06-12), time per iteration
# in ns. N = 64 and 128 oversubscribe the machines and are left out; N = 1
# sized the loops (the scenarios say how), so it is printed but not
# counted. atomic_fetch_xor is what each machine's [coherence] was fitted
# to; the two lock rows are predictions (MicroSpinLock as `ttas` with
# folly's Sleeper, DistributedMutex as `distributed_mutex`). The `microspin-nosleep` row
# (`ttas` without the Sleeper) and the `tas` row (a bare test-and-set
# lock) run MicroSpinLock's loop for scale; they are printed, not counted.
# The microspin row runs 150 ms simulated per point, so the whole table
# takes about a minute.
#
# Usage: docs/sweeps/folly-small-locks.sh           the table
#        FIT=1 docs/sweeps/folly-small-locks.sh     the fit grid of [coherence] on atomic_fetch_xor
set -euo pipefail
cd "$(dirname "$0")/../.."
export SMPSIM=${SMPSIM:-./target/release/smpsim}
python3 - <<'PY'
import json, math, os, subprocess
smpsim = os.environ["SMPSIM"]
machines = {
    "xeon-e5-2680v4-56": ("scenarios/contention/folly-small-locks.toml", 56, {
        "fetch-xor": {1: 603, 2: 661, 4: 731, 8: 1320, 16: 2500, 32: 3880},
        "microspin": {1: 822, 2: 861, 4: 2360, 8: 4600, 16: 11060, 32: 30740},
        "microspin-nosleep": {1: 822, 2: 861, 4: 2360, 8: 4600, 16: 11060, 32: 30740},
        "microspin-tas": {1: 822, 2: 861, 4: 2360, 8: 4600, 16: 11060, 32: 30740},
        "distributedmutex": {1: 695, 2: 938, 4: 1900, 8: 2990, 16: 6840, 32: 17830}}),
    "xeon-d2191-36": ("scenarios/contention/folly-small-locks-d2191.toml", 36, {
        "fetch-xor": {1: 1530, 2: 1260, 4: 1270, 8: 1390, 16: 2480, 32: 4120},
        "microspin": {1: 1340, 2: 1380, 4: 1770, 8: 5230, 16: 14300, 32: 34350},
        "microspin-nosleep": {1: 1340, 2: 1380, 4: 1770, 8: 5230, 16: 14300, 32: 34350},
        "microspin-tas": {1: 1340, 2: 1380, 4: 1770, 8: 5230, 16: 14300, 32: 34350},
        "distributedmutex": {1: 1390, 2: 1490, 4: 2720, 8: 5530, 16: 9360, 32: 17930}}),
}
folly_name = {"fetch-xor": "atomic_fetch_xor", "microspin": "folly_microspin",
              "microspin-nosleep": "folly_microspin",
              "microspin-tas": "folly_microspin", "distributedmutex": "folly_distributedmutex"}

def curve(path, threads, variant, sets=()):
    out = {}
    for n in (1, 2, 4, 8, 16, 32):
        cmd = [smpsim, "run", path, "-q", "--format", "json", "--variant", variant,
               "--set", f"tasks.thread.vars.groups={threads // n}"]
        for s in sets:
            cmd += ["--set", s]
        v = json.loads(subprocess.check_output(cmd))["variants"][0]
        out[n] = threads * 1e9 / v["counters"][0]["rate"]
    return out

def stats(errs):
    s = sorted(errs)
    mid = len(s) // 2
    med = s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
    return f"median x{math.exp(med):.2f}, worst x{math.exp(s[-1]):.2f} over {len(s)} points"

if os.environ.get("FIT"):
    grid = [("blocking", ff, 0) for ff in (0.5, 0.75, 1.0)]
    grid += [("pipelined", ff, occ) for ff in (0.5, 1.0) for occ in (2, *range(60, 161, 10), 115, 125)]
    for mach, (path, threads, pub) in machines.items():
        rows = []
        for home, ff, occ in grid:
            sets = [f"machine.coherence.home={home}", f"machine.coherence.forward_fraction={ff}",
                    'machine.coherence.occupancy={ns=%d, source="fit"}' % occ]
            m = curve(path, threads, "fetch-xor", sets)
            errs = [math.log(m[n] / pub["fetch-xor"][n]) ** 2 for n in m if n > 1]
            rows.append((sum(errs) / len(errs), home, ff, occ, m))
        print(f"{mach}: atomic_fetch_xor, mean squared ln(model/published) over N = 2-32")
        for score, home, ff, occ, m in sorted(rows):
            print(f"  {score:.4f}  home={home} forward_fraction={ff} occupancy={occ} ns: "
                  + " ".join(f"{m[n]:.0f}" for n in m))
    raise SystemExit

everything = []
for mach, (path, threads, pub) in machines.items():
    print(f"{mach} ({threads} threads): time per iteration, ns")
    print("| benchmark (smpsim kind) | N | published | model | model/published |")
    print("|---|---:|---:|---:|---:|")
    for variant, p in pub.items():
        m = curve(path, threads, variant)
        errs = []
        for n in p:
            ratio = m[n] / p[n]
            note = " (sizing)" if n == 1 else ""
            print(f"| {folly_name[variant]} ({variant}) | {n} | {p[n]} | {m[n]:.0f} | {ratio:.2f}{note} |")
            if n > 1:
                errs.append(abs(math.log(ratio)))
        everything += [(mach, variant, e) for e in errs]
        print(f"\n{mach} {variant}: {stats(errs)}\n")
counted = lambda v: v not in ("microspin-tas", "microspin-nosleep")
for label, keep in [("fitted (atomic_fetch_xor)", lambda v: v == "fetch-xor"),
                    ("predicted (both lock rows)", lambda v: v in ("microspin", "distributedmutex")),
                    ("predicted microspin (ttas, sleeper)", lambda v: v == "microspin"),
                    ("predicted distributedmutex (distributed_mutex)", lambda v: v == "distributedmutex"),
                    ("all three curves", counted),
                    ("not counted: microspin on ttas without the sleeper", lambda v: v == "microspin-nosleep"),
                    ("not counted: microspin on tas", lambda v: v == "microspin-tas")]:
    print(f"{label}: {stats([e for _, v, e in everything if keep(v)])}")
for mach in machines:
    print(f"{mach}, all three curves: {stats([e for m, v, e in everything if m == mach and counted(v)])}")
PY
