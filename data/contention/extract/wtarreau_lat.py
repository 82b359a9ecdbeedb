#!/usr/bin/env python3
"""Idle transfer costs from wtarreau/atomic-tests' two-thread matrices.

Usage: wtarreau_lat.py RESULTS_DIR > rows.csv
RESULTS_DIR is the repository's results/ directory (commit ebb75dbb). Read:
lat-epyc-74F3.txt, the "#Op=2" block that `thr-lat.sh` printed: for each CPU
pair, `cas-bench -o 2 -r 1 -t 2 0:A 1:B`, two threads pinned to A and B taking
turns incrementing one counter by compare-and-exchange with the expected value
known in advance (cas-bench.c, operation2: each retries its cmpxchg until the
other has written), printing run time / increments of both threads: ns per
hand-off of the line, one way, as perfbook's "Blind CAS" and
core-to-core-latency's cells. The file's own header gives the topology
(lscpu -e in the same file: CPUs 0-23 one thread of each core, 24-47 their
siblings; an L3 per 3 consecutive cores); the matrix covers CPUs 0 to 24.
(i,j) and (j,i) are averaged first. Prints per class the median over pairs,
p10, p90 and the number of pairs (the same quantile as c2c.py).
"""
import csv
import os
import sys

FILE = "lat-epyc-74F3.txt"
NOTE = ("1 socket x 24 cores x 2 threads (48 CPUs; CPUs 0-23 then their siblings 24-47); "
        "an L3 per 3 cores (lscpu -e in the file); matrix of CPUs 0-24, so one SMT pair (0, 24)")


def core(cpu):
    return cpu % 24


def classify(a, b):
    if core(a) == core(b):
        return "smt"
    if core(a) // 3 == core(b) // 3:
        return "same_llc"
    return "same_socket"


def op2_matrix(text):
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("#Op=2"))
    cpus = [int(c) for c in lines[start].split()[1:]]
    vals = {}
    for line in lines[start + 1:]:
        f = line.split()
        if not f:
            break
        a = int(f[0])
        for b, v in zip(cpus, f[1:]):
            if v != "-":
                vals.setdefault((min(a, b), max(a, b)), []).append(float(v))
    return {k: sum(v) / len(v) for k, v in vals.items()}


def quantile(s, q):
    s = sorted(s)
    x = q * (len(s) - 1)
    i = int(x)
    return s[i] if i + 1 >= len(s) else s[i] + (s[i + 1] - s[i]) * (x - i)


def main():
    text = open(os.path.join(sys.argv[1], FILE)).read()
    assert text.startswith("# AMD EPYC 74F3 24-Core Processor"), "not the EPYC 74F3 file"
    pairs = op2_matrix(text)
    out = csv.writer(sys.stdout, lineterminator="\n")
    for cls in ["smt", "same_llc", "same_socket"]:
        s = [v for (a, b), v in pairs.items() if classify(a, b) == cls]
        out.writerow(["epyc74f3-1s", "wtarreau-atomic", cls, f"{quantile(s, 0.5):.1f}", "one_way", len(s),
                      f"p10={quantile(s, 0.1):.1f} p90={quantile(s, 0.9):.1f}", "results/" + FILE, NOTE])


main()
