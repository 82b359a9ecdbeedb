#!/usr/bin/env python3
"""The global-mutex benchmark of `smpsim bench` (testkit::global_mutex_bench)
written for SimPy, to compare time to solution (docs/performance.md).

N CPUs, one task each, looping: syscall entry (300 ns, the generic-x86
preset's `costs.syscall`), mutex_lock, hold Exp(1 us), mutex_unlock,
work Exp(20 us). The mutex is a FIFO `simpy.Resource` of capacity 1.

This is the workload's queueing skeleton only: no cache-line transfers,
no optimistic spinning, no sleeping and wakeup costs, no scheduler tick,
no per-CPU time accounting or lock_stat. So each acquisition costs SimPy
fewer events and less work than it costs smpsim: the comparison favours
SimPy.

    python3 docs/perf/simpy_global_mutex.py [--cpus 16] [--millis 1000]
"""

import argparse
import random
import time

import simpy

SYSCALL_NS = 300.0  # generic-x86 preset: costs.syscall
HOLD_NS = 1_000.0  # global_mutex_bench: hold Exp(1 us)
THINK_NS = 20_000.0  # global_mutex_bench: work Exp(20 us)


def locker(env, mutex, rng, acquired):
    while True:
        yield env.timeout(SYSCALL_NS)
        with mutex.request() as req:
            yield req
            yield env.timeout(rng.expovariate(1.0 / HOLD_NS))
        acquired[0] += 1
        yield env.timeout(rng.expovariate(1.0 / THINK_NS))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpus", type=int, default=16)
    ap.add_argument("--millis", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    env = simpy.Environment()
    mutex = simpy.Resource(env, capacity=1)
    acquired = [0]
    for _ in range(args.cpus):
        env.process(locker(env, mutex, rng, acquired))
    start = time.process_time()
    env.run(until=args.millis * 1_000_000.0)
    cpu = time.process_time() - start
    print(
        f"simpy {simpy.__version__}: {args.cpus} CPUs, {args.millis} ms simulated, "
        f"{acquired[0]} acquisitions, {cpu:.2f} s CPU"
    )


if __name__ == "__main__":
    main()
