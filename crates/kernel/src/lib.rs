//! The kernel mechanisms smpsim simulates, named as in Linux.
//!
//! # Lifecycle
//!
//! 1. The scenario crate compiles a scenario into a [`Spec`]: the machine,
//!    kernel knobs, objects (mutexes), cgroups and task groups, each task
//!    group with a [`Program`].
//! 2. [`Kernel::new`] builds the system: per-CPU runqueues, one task per
//!    placement, cgroup bandwidth pools. [`Kernel::run`] drives it with the
//!    deterministic engine until the scenario's duration.
//! 3. Each CPU is always doing exactly one thing (an [`cpu::Activity`]):
//!    running a task, spinning, handling an interrupt, switching tasks, or
//!    idling. Work and spinning are intervals with a start and an end, never
//!    loops of events; an event fires only where the state of the system
//!    changes (a lock is released, an IPI arrives, a timer expires).
//! 4. The run returns a [`RunResult`]: counters, latency histograms, CPU time
//!    split, per-CPU maximum preempt-off and IRQ-off sections per window, a
//!    `lock_stat`-style table, and detector findings.
//!
//! Mechanisms live in modules named after the kernel concept:
//! [`sched`] (runqueues, tick, wakeup, preemption), [`locking`] (one file
//! per lock kind: `qspinlock`, `ticket`, `tas`, `qrwlock`, and `mutex` with
//! its `osq`), [`coherence`] (cache lines beneath them), [`smp`]
//! (`smp_call_function_single`, CSD queues, `csd_lock_wait`),
//! [`cfs_bandwidth`] (quota, throttle, unthrottle, period timer), [`interp`]
//! (stepping a task through its program).

pub mod coherence;
pub mod costs;
pub mod cpu;
pub mod event;
pub mod hotplug;
pub mod ids;
pub mod interp;
pub mod locking;
pub mod metrics;
pub mod mm;
pub mod program;
pub mod rcu;
pub mod replicas;
pub mod result;
pub mod sched;
mod sim;
pub mod smp;
pub mod spec;
pub mod task;
pub mod testkit;
pub mod trace;

pub use program::*;
pub use result::*;
pub use sim::{summarize, Kernel};
pub use spec::*;

/// Runs one replica of a spec recording every CPU's timeline (at most
/// `limit` segments).
pub fn simulate_traced(spec: &Spec, limit: usize) -> (RunResult, trace::Recorder) {
    let mut kernel = Kernel::new(spec);
    kernel.trace = Some(trace::Recorder::new(spec.machine.nr_cpus(), limit));
    let result = kernel.run();
    (result, kernel.trace.take().expect("recorder"))
}

/// Runs a spec to completion (all its replicas) and returns its result.
pub fn simulate(spec: &Spec) -> RunResult {
    replicas::simulate(spec)
}
