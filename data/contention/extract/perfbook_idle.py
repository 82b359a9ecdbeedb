#!/usr/bin/env python3
"""Idle transfer costs from perfbook's two "CPU 0 view" tables.

Usage: perfbook_idle.py cpu/overheads.tex > rows.csv
The file is cpu/overheads.tex of paulmckrcu/perfbook (commit 4c69e891), the
tables "CPU 0 View of Synchronization Mechanisms on 8-Socket System With Intel
Xeon Platinum 8176 CPUs @ 2.10 GHz" and "Performance of Synchronization
Mechanisms on 16-CPU 2.8 GHz Intel X5550 (Nehalem) System". Prints the
"Blind CAS" row of each
distance: two CPUs take turns incrementing one counter by cmpxchg with the
expected value known in advance (CodeSamples/cpu/cachetorture.c,
blindcmpxchg0/1), ns per successful cmpxchg = one handoff of the line, the
same measure as core-to-core-latency's one-way figure.
"""
import csv
import re
import sys

CLASSES = {"On-Core": "smt", "Off-Core": "same_llc", "Off-Socket": "cross_socket_1hop",
           "Cross-Interconnect": "cross_socket_2hop"}
# (caption start, machine id, topology note; the 2-socket table's Off-Socket is just cross_socket)
TABLES = [("CPU 0 View of Synchronization Mechanisms on 8-Socket System", "platinum8176-8s",
           "8 sockets x 28 cores x 2 threads (448 CPUs); CPU 0's view, one figure per distance; "
           "the table's rows: On-Core (CPU 224), Off-Core (1-27), Off-Socket (28-111), Cross-Interconnect (112-223)"),
          ("Performance of Synchronization Mechanisms on 16-CPU 2.8", "xeon-x5550-2s",
           "2 sockets x 4 cores x 2 threads (16 CPUs); rows On-Core, Off-Core, Off-Socket")]


def main():
    text = open(sys.argv[1]).read()
    out = csv.writer(sys.stdout, lineterminator="\n")
    for caption, mid, note in TABLES:
        table = text[:text.index(caption)]
        table = table[table.rindex("\\begin{tabular}"):]
        section = None
        for line in table.splitlines():
            m = re.search(r"\\multicolumn\{2\}\{l\}\{([A-Za-z-]+)\}", line)
            if m:
                section = m.group(1)
                continue
            m = re.match(r"\s*&\s*Blind CAS\s*&\s*([\d.]+)\s*&", line)
            if m and section in CLASSES:
                cls = CLASSES[section]
                if mid == "xeon-x5550-2s" and cls == "cross_socket_1hop":
                    cls = "cross_socket"
                out.writerow([mid, "perfbook-cpu", cls, m.group(1), "one_way", "", "",
                              "cpu/overheads.tex (table: " + caption + " ...)", note])


main()
