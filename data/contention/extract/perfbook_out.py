#!/usr/bin/env python3
"""Curves from perfbook's counting benchmarks, read from perf.sh's own logs.

Usage: perfbook_out.py COUNT_DATA_DIR > rows.csv
COUNT_DATA_DIR is CodeSamples/count/data of paulmckrcu/perfbook at commit
4c69e891. Reads the perf.sh.<tag>.out logs: each run prints a header line
"<program> <N> uperf <stride>" and, two lines on, "ns/read: .. ns/update: V",
V being the benchmark's own figure (duration * nupdaters / n_updates: the
time one thread takes per increment of its own). Prints per N the median of
the samples and their p10..p90 (linear interpolation), as extract/perfbook.py.

Sets:
- perfsqh.2010.02.11a: IBM 9119-595 (cpuinfo.perfsqh: 128 CPUs "POWER5+
  (gs)"; commit f56b81e0: "64-core P5 system"); 4 samples per N
  (perf.sh of that commit: nsamples=5, loop i=1..4).
- hps.2019.10.23a: 8-socket Xeon Platinum 8176 (cpuinfo.hps, lscpu.hps:
  8 x 28 cores x 2 threads = 448 CPUs); 30 samples per N (the same figures
  as count_*:u.hps.2019.10.23a.raw, fields 32-61).
"""
import csv
import os
import sys

# (machine id, log tag, hardware threads, placement note)
SETS = [("power5p-595-64c", "perfsqh.2010.02.11a", 128,
         "not pinned (count_update_perf_test has no run_on()); 64 cores x 2 SMT = 128 CPUs: two updaters may share a core"),
        ("platinum8176-8s", "hps.2019.10.23a", 448,
         "not pinned (count_update_perf_test has no run_on()); 8 sockets x 28 cores x 2 SMT = 448 CPUs")]
BENCH = {"count_atomic": "atomic_inc", "count_nonatomic": "plain_inc"}


def quantile(s, q):
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def fmt(x):
    return f"{x:.2f}".rstrip("0").rstrip(".")


def samples(path):
    """{(program, N): [ns/update, ...]} over the log's update runs."""
    runs = {}
    key = None
    for line in open(path):
        f = line.split()
        if len(f) == 4 and f[2] == "uperf":
            key = (f[0], int(f[1]))
        elif key and f[:1] == ["ns/read:"]:
            runs.setdefault(key, []).append(float(f[f.index("ns/update:") + 1]))
            key = None
    return runs


def main():
    root = sys.argv[1]
    out = csv.writer(sys.stdout, lineterminator="\n")
    for mid, tag, hw, note in SETS:
        runs = samples(os.path.join(root, f"perf.sh.{tag}.out"))
        for prog, bench in BENCH.items():
            for n in sorted(k[1] for k in runs if k[0] == prog):
                vals = sorted(runs[(prog, n)])
                assert all(v == v for v in vals), (tag, prog, n)  # no NaN
                if n > hw:
                    continue
                out.writerow([mid, "perfbook-count", bench, n, fmt(quantile(vals, 0.5)),
                              "ns_per_op_per_thread", f"median{len(vals)}",
                              f"p10={fmt(quantile(vals, 0.1))} p90={fmt(quantile(vals, 0.9))}",
                              note])


main()
