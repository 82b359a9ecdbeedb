#!/usr/bin/env python3
"""Curves from folly's SmallLocksBenchmark results comment.

Usage: folly.py SmallLocksBenchmark.cpp > rows.csv
The file is folly/synchronization/test/SmallLocksBenchmark.cpp at commit
886a70d9164fb1e25e7d450e3841937e9fb6f55a (the results comment at its end).
Prints time/iter in ns for the kept benchmarks at N <= the machine's hardware
threads (larger N oversubscribe it). One run each: no spread.
"""
import csv
import re
import sys

MACHINES = {"Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz": ("e5-2680v4-2s", 56),
            "Intel(R) Xeon(R) D-2191 CPU @ 1.60GHz": ("d-2191", 36)}
# folly benchmark name -> id in curves.csv
KEEP = {"atomic_fetch_xor": "fetch_xor", "atomic_cas": "cas_loop", "atomics_fetch_add": "fetch_add_5lines",
        "folly_microspin": "microspinlock_work100", "folly_microspin_simple": "microspinlock_work0",
        "google_spin": "google_spinlock_work100", "google_spin_simple": "google_spinlock_work0",
        "folly_distributedmutex": "distributedmutex_work100",
        "folly_distributedmutex_simple": "distributedmutex_work0",
        "std_mutex": "std_mutex_work100", "std_mutex_simple": "std_mutex_work0"}
UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
ROW = re.compile(r"^(\w+)\((\d+)thread\)\s+(?:[\d.]+%\s+)?([\d.]+)(ns|us|ms|s)\s")


def main():
    machine = None
    out = csv.writer(sys.stdout, lineterminator="\n")
    seen = set()
    for line in open(sys.argv[1]):
        line = line.rstrip("\n")
        if line in MACHINES:
            machine = MACHINES[line]
            continue
        m = ROW.match(line)
        if not m or machine is None or m.group(1) not in KEEP:
            continue
        mid, hw = machine
        n = int(m.group(2))
        if n > hw:
            continue
        ns = float(m.group(3)) * UNIT[m.group(4)]
        key = (mid, KEEP[m.group(1)], n)
        assert key not in seen, key
        seen.add(key)
        out.writerow([mid, "folly-slb", KEEP[m.group(1)], n, f"{ns:.2f}".rstrip("0").rstrip("."),
                      "ns_per_op_per_thread", "single_run", "",
                      f"all {hw} hw threads run; groups of N share one line/lock; not pinned"])


main()
