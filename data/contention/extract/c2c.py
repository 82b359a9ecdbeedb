#!/usr/bin/env python3
"""Idle transfer costs from nviennot/core-to-core-latency result matrices.

Usage: c2c.py RESULTS_DIR > rows.csv
RESULTS_DIR is the repository's results/ directory (commit 96a943ac). Each
CSV cell (row i, column j) is the mean over samples of one CPU pair's CAS
ping-pong, already divided by 2 in the tool (src/bench/cas.rs: duration /
round trips / 2): a one-way transfer. Pairs are classed by a topology stated
below per machine (Linux CPU numbering: the sockets' cores first, then their
SMT siblings, checked against the matrix: see the p10/p90 of each class in
the output, which would mix clusters if the map were wrong). Prints per class
the median over pairs, p10, p90 and the number of pairs.
"""
import csv
import os
import sys


def load(path):
    rows = [r for r in csv.reader(open(path))]
    n = len(rows)
    vals = {}
    for i, r in enumerate(rows):
        for j, v in enumerate(r):
            if v.strip() and i != j:
                a, b = min(i, j), max(i, j)
                vals.setdefault((a, b), []).append(float(v))
    # a full matrix holds both (i,j) and (j,i): take their mean
    return n, {k: sum(v) / len(v) for k, v in vals.items()}


def smt_sockets(cores_per_socket, sockets, llc_cores=None, smt=2, adjacent=False, shared_llc=True):
    """cpu -> (socket, llc, core) for Linux's numbering: cores 0..C-1 (socket
    after socket), then their SMT siblings C..2C-1 in the same order; with
    adjacent=True siblings are neighbours (2k, 2k+1). llc_cores: cores per
    shared L3 when a socket has several; shared_llc=False when the socket's
    cores share no last-level cache (the class is then same_socket)."""
    total = cores_per_socket * sockets

    def topo(cpu):
        core = cpu // smt if adjacent else cpu % total
        socket = core // cores_per_socket
        llc = core // llc_cores if llc_cores else (socket if shared_llc else -1 - core)
        return socket, llc, core
    return topo


def classify(topo, a, b):
    sa, la, ca = topo(a)
    sb, lb, cb = topo(b)
    if ca == cb:
        return "smt"
    if la == lb:
        return "same_llc"
    if sa == sb:
        return "same_socket"
    return "cross_socket"


# machine id -> (file, topology, what the topology rests on)
MACHINES = [
    ("e5-2680v4-2s", "Dual Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz.csv", smt_sockets(14, 2),
     "2 sockets x 14 cores x 2 threads (56 CPUs); one LLC per socket"),
    ("e5-2695v4-2s", "Intel(R) Xeon(R) CPU E5-2695 v4 @ 2.10GHz.csv", smt_sockets(18, 2),
     "2 sockets x 18 cores x 2 threads (72 CPUs)"),
    ("gold6242-2s", "Dual Intel(R) Xeon Gold 6242 @ 2.8GHz.csv", smt_sockets(16, 2),
     "2 sockets x 16 cores x 2 threads (64 CPUs)"),
    ("gold6242-1s", "Intel(R) Xeon Gold 6242 @ 2.8GHz.csv", smt_sockets(16, 1),
     "1 socket x 16 cores x 2 threads (32 CPUs)"),
    ("platinum8275cl-2s", "Intel(R) Xeon(R) Platinum 8275CL CPU @ 3.00GHz.csv", smt_sockets(24, 2),
     "2 sockets x 24 cores x 2 threads (96 CPUs)"),
    ("platinum8375c-2s", "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz.csv", smt_sockets(32, 2),
     "2 sockets x 32 cores x 2 threads (128 CPUs)"),
    ("i7-6700k", "Intel Core i7-6700K.csv", smt_sockets(4, 1, adjacent=True),
     "1 socket x 4 cores x 2 threads (8 CPUs); SMT siblings numbered adjacent (0,1), as the matrix shows"),
    ("i7-1165g7", "Intel(R) Core(TM) i7-1165G7 @ 2.80GHz.csv", smt_sockets(4, 1),
     "1 socket x 4 cores x 2 threads (8 CPUs)"),
    ("i5-10310u", "Intel Core i5-10310U.csv", smt_sockets(4, 1),
     "1 socket x 4 cores x 2 threads (8 CPUs)"),
    ("epyc7742-2s", "Dual AMD EPYC 7742 64-Core Processor.csv", smt_sockets(64, 2, llc_cores=4),
     "2 sockets x 64 cores x 2 threads (256 CPUs); Zen 2 CCX = 4 cores sharing an L3"),
    ("epyc7r13-2s", "AMD EPYC 7R13 48-Core Processor.csv", smt_sockets(48, 2, llc_cores=8),
     "2 sockets x 48 cores x 2 threads (192 CPUs); Zen 3 CCX = 8 cores sharing an L3"),
    ("epyc7773x", "AMD EPYC 7773X.csv", smt_sockets(64, 1, llc_cores=8),
     "1 socket x 64 cores x 2 threads (128 CPUs); Zen 3 CCX = 8 cores"),
    ("ryzen9-5950x", "AMD Ryzen 9 5950X @ 3.40 GHz.csv", smt_sockets(16, 1, llc_cores=8),
     "1 socket x 16 cores x 2 threads (32 CPUs); Zen 3 CCX = 8 cores"),
    ("graviton2-64c", "AWS Graviton2.csv", smt_sockets(64, 1, smt=1),
     "1 socket x 64 cores, no SMT; one mesh, one LLC"),
    ("graviton3-64c", "AWS Graviton3.csv", smt_sockets(64, 1, smt=1),
     "1 socket x 64 cores, no SMT; one mesh, one LLC"),
    ("power7-2s", "Dual IBM Power7 8 cores@3.3 GHz 2010-Q1.csv", smt_sockets(8, 2, smt=1, shared_llc=False),
     "2 sockets x 8 cores, 16 CPUs (one thread per core as measured); each core has its own L3 region"),
]


def quantile(s, q):
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def main():
    root = sys.argv[1]
    out = csv.writer(sys.stdout, lineterminator="\n")
    for mid, fname, topo, note in MACHINES:
        n, vals = load(os.path.join(root, fname))
        classes = {}
        for (a, b), v in vals.items():
            classes.setdefault(classify(topo, a, b), []).append(v)
        sockets = set()
        for (a, b), v in vals.items():
            cls = classify(topo, a, b)
            if cls in ("same_llc", "same_socket"):
                # the same class seen from each socket alone: two sockets of
                # one machine need not measure alike
                sockets.add(topo(a)[0])
                classes.setdefault(f"{cls}_s{topo(a)[0]}", []).append(v)
        names = []
        for cls in ("smt", "same_llc", "same_socket"):
            names.append(cls)
            if len(sockets) > 1:
                names += [f"{cls}_s{k}" for k in sorted(sockets)]
        for cls in names + ["cross_socket"]:
            if cls not in classes:
                continue
            s = sorted(classes[cls])
            out.writerow([mid, "nviennot-c2c", cls, f"{quantile(s, 0.5):.1f}", "one_way", len(s),
                          f"p10={quantile(s, 0.1):.1f} p90={quantile(s, 0.9):.1f}",
                          f"results/{fname}", note])


main()
