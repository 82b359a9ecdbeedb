#!/usr/bin/env python3
"""Curves from perfbook's counting benchmarks (paulmckrcu/perfbook).

Usage: perfbook.py COUNT_DATA_DIR > rows.csv
COUNT_DATA_DIR is the repository's CodeSamples/count/data directory (commit
4c69e891). Reads the *.raw files of the update-side runs ("uperf": N threads
incrementing one counter) and prints per N the median of the samples and
their p10..p90 (linear interpolation), in ns per update per thread, the
benchmark's own "ns/update" (duration * nupdaters / n_updates).

Raw formats: amd-milan.2024.09.22a (written by reduce.sh of 2024): after the
thread count, pairs "ns/read ns/update" per sample, ns/read being "-nan" in
an update run: the update figures are fields 3, 5, 7, ... (1-based), as
reduce.sh itself reads them. 2012.12.30a.p6ihhpc7: after the thread count,
one ns/update figure per sample.
"""
import csv
import os
import sys

# (machine id, subdirectory, tag, layout, hardware threads)
SETS = [("epyc-milan-vm-166", "amd-milan.2024.09.22a", "amd-milan.2024.09.22a", "pairs", 166),
        ("power6-32c-unverified", "2012.12.30a.p6ihhpc7", "p6ihhpc7.2012.12.30b", "plain", 32)]
BENCH = {"count_atomic": "atomic_inc", "count_nonatomic": "plain_inc"}
PLACEMENT = {"pairs": "not pinned (count_update_perf_test has no run_on()); a VM: 83 vCPU cores x 2 threads presented",
             "plain": "pinning not known (2012 code: updaters not pinned); 32 cores per the commit message"}


def quantile(s, q):
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def fmt(x):
    return f"{x:.2f}".rstrip("0").rstrip(".")


def main():
    root = sys.argv[1]
    out = csv.writer(sys.stdout, lineterminator="\n")
    for mid, sub, tag, layout, hw in SETS:
        for prog, bench in BENCH.items():
            path = os.path.join(root, sub, f"{prog}:u.{tag}.raw")
            for line in open(path):
                f = line.split()
                if not f:
                    continue
                n = int(f[0])
                vals = [float(x) for x in (f[2::2] if layout == "pairs" else f[1:])]
                assert all(v == v for v in vals), (path, n)  # no NaN left
                if n > hw:
                    continue
                vals.sort()
                out.writerow([mid, "perfbook-count", bench, n, fmt(quantile(vals, 0.5)),
                              "ns_per_op_per_thread", f"median{len(vals)}",
                              f"p10={fmt(quantile(vals, 0.1))} p90={fmt(quantile(vals, 0.9))}",
                              PLACEMENT[layout]])


main()
