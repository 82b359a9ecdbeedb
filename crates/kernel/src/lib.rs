//! The kernel mechanisms smpsim simulates, named as in Linux.
//!
//! # The life of a run
//!
//! 1. **Spec.** The scenario crate compiles a scenario into a [`Spec`]:
//!    the machine, kernel knobs, objects (locks, atomics, semaphores),
//!    cgroups and task groups, each with a [`Program`] of [`Op`]s.
//! 2. **Kernel.** [`Kernel::new`] builds the system from it: per-CPU
//!    runqueues and sched domains, one task per placement, the kernel
//!    threads the scenario's mechanisms need ([`kthread`], [`KTHREADS`]:
//!    the RCU GP kthread `rcu_sched` when it uses RCU, a `migration/N`
//!    stopper per CPU when it calls `stop_machine`, an `rcuop/N` per
//!    `rcu_nocbs` CPU, a `kworker` per CPU for `kfree_rcu()`'s batches),
//!    each object's instances with their cache
//!    lines, cgroup bandwidth pools. [`Kernel::run`] hands it to the
//!    deterministic engine (`smpsim-engine`) until the scenario's duration.
//! 3. **Events.** Each CPU is always doing exactly one thing (an
//!    [`cpu::Activity`]): running a task's batch of local work, spinning,
//!    handling an interrupt, switching tasks, or idling. Work and spinning
//!    are intervals with a start and an end, never loops of events; an
//!    [`event::Event`] fires only where the state of the system changes (a
//!    lock is released, an IPI arrives, a timer expires). Events are
//!    grouped by mechanism and the core `handle()` only routes them: the
//!    scheduler's to [`sched`], IPIs to [`smp`], RCU's to [`rcu`], and so
//!    on. Between events a task runs its program through [`interp`], which
//!    calls the mechanism each shared-state op names (its ops implement
//!    [`mechanism::MechanismOp`], the contract beneath the mechanisms).
//! 4. **Result.** The run returns a [`RunResult`]: counters, latency
//!    histograms, CPU time split, per-CPU maximum preempt-off and IRQ-off
//!    sections per window, a `lock_stat`-style table, and what the
//!    detectors ([`result::Detector`]) found. [`simulate`] runs a spec's
//!    replicas in parallel and merges them.
//!
//! # Layout
//!
//! As the kernel's tree has it: [`sched`] (runqueues, tick, wakeup,
//! preemption; [`sched::balance`] for sched domains, wake-up placement and
//! load balancing; [`sched::cfs_bandwidth`] for quota, throttle and
//! unthrottle), [`kthread`] (kernel threads), [`locking`] (one file per
//! lock kind, the spinning ones of [`locking::LOCK_KINDS`]: `qspinlock`,
//! `ticket`, `tas`, `ttas`, `mcs`, `cna`, `distributed_mutex`, `qrwlock`;
//! the sleeping ones of [`locking::SLEEPING_KINDS`]: `mutex` with its
//! `osq`, `rwsem`, `semaphore`, `seqcount`, `rt_mutex`, `percpu_rwsem`,
//! `numa_osq` (a mutex with the model's NUMA-aware OSQ);
//! and `percpu_ref`, the atomics and shared variables; a test keeps this
//! list whole), [`rcu`] (normal grace periods
//! driven by the GP kthread, expedited ones, callbacks), [`smp`]
//! (`smp_call_function_*`, CSD queues, `csd_lock_wait()`),
//! [`stop_machine`] (the per-CPU stoppers and `multi_cpu_stop()`), [`hotplug`],
//! [`mm`] (`mm_struct` lifetime and lazy TLB), [`hooks`] (scenario code
//! run at scheduler events), [`lock_stat`] (lockdep's `/proc/lock_stat`
//! booking, every lock kind's). Beneath them: [`coherence`]
//! (cache lines), [`costs`] (the machine's costs as integers), [`ids`]
//! (ids and sentinels, a leaf every module may use).

pub mod check;
pub mod coherence;
pub mod costs;
pub mod cpu;
pub mod cpumask;
pub(crate) mod env;
pub mod event;
pub mod hooks;
pub mod hotplug;
pub mod ids;
pub mod interp;
pub mod invariants;
pub mod kthread;
pub mod lock_stat;
pub mod locking;
pub mod mechanism;
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
pub mod stop_machine;
pub mod task;
pub mod testkit;
pub mod trace;

/// Every kernel thread smpsim models ([`kthread::KthreadInfo`]), spawned
/// in this order when the scenario uses its mechanism.
pub static KTHREADS: &[kthread::KthreadInfo] = &[
    rcu::gp_kthread::KTHREAD,
    stop_machine::KTHREAD,
    rcu::nocb::KTHREAD,
    rcu::kfree::KTHREAD,
];

pub use program::*;
pub use result::*;
pub use sim::{summarize, Kernel, Simulation};
pub use sim::{DEFAULT_FOLDS, FOLD_ALL, FOLD_IRQ_EXIT, FOLD_SPIN_END, FOLD_TASK};
pub use spec::*;

/// Runs one replica of a spec recording every CPU's timeline during
/// `window` (at most `limit` segments).
pub fn simulate_traced(
    spec: &Spec,
    limit: usize,
    window: std::ops::Range<smpsim_engine::Nanos>,
) -> (RunResult, trace::Recorder) {
    let mut kernel = Kernel::new(spec);
    let recorder = trace::Recorder::new(spec.machine.nr_cpus(), limit, window);
    kernel.record_timeline_into(recorder);
    let result = kernel.run();
    (result, kernel.take_timeline().expect("recorder"))
}

/// Runs a spec to completion (all its replicas) and returns its result.
pub fn simulate(spec: &Spec) -> RunResult {
    replicas::simulate(spec)
}

/// [`simulate`], adding the simulated time each replica reaches to
/// `progress` as the run goes (in steps of a hundredth of the duration), so
/// that a progress bar can show it; the result is the same.
pub fn simulate_with_progress(
    spec: &Spec,
    progress: &std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> RunResult {
    replicas::simulate_with(spec, Some(progress))
}
