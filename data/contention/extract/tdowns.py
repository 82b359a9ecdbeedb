#!/usr/bin/env python3
"""Curves from concurrency-hierarchy-bench (Travis Downs, 2020).

Usage: tdowns.py RESULTS_DIR > rows.csv
RESULTS_DIR is the repository's results/ directory (commit 1b3f7f8c, results
added in 042844299 and 9b8e0e0d). Reads <machine>/combined.csv, keeps the
points with threads <= the machine's cores (the post's own plots stop there;
more threads oversubscribe the cores and measure the scheduler), and prints
per (machine, benchmark, threads) the median of the 15 trials' Nanos/Op and
the p10..p90 range, both by linear interpolation as pandas' quantile() in
scripts/plot-bar.py computes the post's bars and error lines.
"""
import csv
import os
import sys

# machine id in this data set -> (results dir, cores available to the benchmark)
MACHINES = [("i7-6700hq", "skl", 4), ("i5-1035g4", "icl", 4),
            ("graviton1-16c", "g1-16", 16), ("graviton2-16c", "g2-16", 16)]
# the benchmark's id -> the id used in curves.csv
BENCH = {"atomic add": "atomic_add", "cas add": "cas_add", "pure spin": "tas_spin_hot",
         "pause spin": "tas_spin_pause", "ticket spin": "ticket_spin", "mutex add": "std_mutex",
         "mutex3": "futex_mutex3", "yield spin": "tas_spin_yield", "ticket yield": "ticket_yield",
         "ticket blocking": "ticket_blocking", "queued fifo": "queued_fifo",
         "plain add": "plain_add", "tls add": "tls_add", "cas multi": "cas_multi"}


def quantile(sorted_vals, q):
    pos = (len(sorted_vals) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def fmt(x):
    return f"{x:.2f}".rstrip("0").rstrip(".")


def main():
    root = sys.argv[1]
    out = csv.writer(sys.stdout, lineterminator="\n")
    for machine, sub, cores in MACHINES:
        groups = {}
        with open(os.path.join(root, sub, "combined.csv")) as f:
            for row in csv.DictReader(f):
                n = int(row["Cores"])
                if n > cores:
                    continue
                groups.setdefault((BENCH[row["Implementation"]], n), []).append(float(row["Nanos/Op"]))
        for (bench, n), vals in sorted(groups.items()):
            assert len(vals) == 15, (machine, bench, n, len(vals))
            vals.sort()
            out.writerow([machine, "tdowns-chb", bench, n, fmt(quantile(vals, 0.5)), "ns_per_op_per_thread",
                          "median15", f"p10={fmt(quantile(vals, 0.1))} p90={fmt(quantile(vals, 0.9))}",
                          "pinned one thread per core in CPU order; no SMT"])


main()
