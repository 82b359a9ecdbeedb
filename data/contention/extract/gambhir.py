#!/usr/bin/env python3
"""One-line atomic counter curves from Shubhankar Gambhir's counter post.

Usage: gambhir.py POST.md > rows.csv
POST.md is `_posts/2026-06-24-what-does-a-lock-actually-cost-concurrent-counter-benchmarks.md`
of Shubhankar-Gambhir/Shubhankar-Gambhir.github.io (commit fa61f2aa; the
later stored version 0de9733d has the same tables). Read: the two
"(ops/sec)" tables of "The Contention Curve", rows "AtomicCounter (relaxed)"
and "AtomicSeqCstCounter": the median of 5 runs of the companion
repository's harness (Shubhankar-Gambhir/concurrent-data-structures-cpp,
commit 82f4f578, counter/benchmarks/bench_counter.cpp): N threads, thread i
pinned to CPU i, each doing 1,000,000 `fetch_add(1)` on one
std::atomic<int64_t> after a common go flag; ops/sec = N x 1,000,000 / the
wall time until every thread has joined. Written as the time one thread
takes per operation of its own, N x 1e9 / (ops/sec), the unit of every
other curve here. Points with more threads than the machine's hardware
threads are dropped (the Neoverse-N1 has 16 cores: its N = 32 row is
oversubscribed).
"""
import csv
import re
import sys

# table heading -> (machine id, hardware threads, placement note)
TABLES = {
    "### x86 Xeon Gold 6130 (ops/sec)": (
        "gold6130-2s", 64,
        "pinned: thread i on CPU i (bench_counter.cpp pin_thread); which socket and core CPU i is "
        "on is not stated (2 sockets x 16 cores x 2 threads)"),
    "### ARM Neoverse-N1 (ops/sec)": (
        "neoverse-n1-16c-unidentified", 16,
        "pinned: thread i on CPU i; the machine is not identified (16 Neoverse-N1 cores; clock not stated)"),
}
ROWS = {"AtomicCounter (relaxed)": "atomic_add", "AtomicSeqCstCounter": "atomic_add_seqcst"}


def ops(cell):
    m = re.fullmatch(r"([\d.]+)M", cell.strip())
    assert m, cell
    return float(m.group(1)) * 1e6


def main():
    lines = open(sys.argv[1]).read().splitlines()
    out = csv.writer(sys.stdout, lineterminator="\n")
    for heading, (mid, hw, note) in TABLES.items():
        at = lines.index(heading)
        header = [c.strip() for c in lines[at + 2].strip("|").split("|")]
        assert header[0] == "Variant", header
        threads = [int(c) for c in header[1:]]
        for line in lines[at + 4:]:
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.strip("|").split("|")]
            bench = ROWS.get(cells[0])
            if not bench:
                continue
            for n, cell in zip(threads, cells[1:]):
                if n > hw:
                    continue
                ns = n * 1e9 / ops(cell)
                out.writerow([mid, "gambhir-counters", bench, n, f"{ns:.1f}", "ns_per_op_per_thread",
                              "median5", "", note])


main()
