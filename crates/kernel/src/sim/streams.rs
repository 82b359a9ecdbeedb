//! Which random stream each draw of a run comes from.
//!
//! Every consumer of randomness has a stream of its own, named by the run's
//! seed (a replica's own seed), a source id and two indices
//! ([`Rng::for_stream`], whose doc gives the mixing):
//!
//! | source | indices | draws |
//! |---|---|---|
//! | [`TASK`] | task group, index in the group | everything a scenario task's program draws, and the costs of what it calls (`smp_call_function*()` functions, `stop_machine()`'s function, `call_rcu()` callbacks) |
//! | [`KTHREAD`] | kind (place in `KTHREADS`), thread index | a kernel thread's draws (none yet; seeded so that one added later has its own) |
//! | [`HOOK`] | CPU, 0 | `[hooks]` run by the kernel on that CPU |
//! | [`HANDLER`] | CPU, 0 | cross-CPU call handlers (`[handlers]`) run on that CPU |
//!
//! A kernel thread is keyed by its kind's place in the full table, not by
//! its task group, whose number follows the scenario's groups: adding a
//! task group changes no kernel thread's stream. Hooks and handlers run on
//! a CPU's behalf, in an order that the tasks there set, so they draw from
//! the CPU's stream rather than from whichever task happens to be there.
//! `--explore`'s perturbation keeps its stream of decisions, seeded from
//! its own seed (`check.rs`): its decisions are numbered in the run's
//! order so that a failing schedule can be shrunk and replayed.

use smpsim_engine::Rng;

use crate::task::Task;

/// A scenario task.
pub(crate) const TASK: u64 = 1;
/// A kernel thread.
pub(crate) const KTHREAD: u64 = 2;
/// The hooks run on one CPU.
pub(crate) const HOOK: u64 = 3;
/// The cross-CPU call handlers run on one CPU.
pub(crate) const HANDLER: u64 = 4;

/// The stream of scenario task `task` (its group and index are set).
pub(crate) fn task_stream(seed: u64, task: &Task) -> Rng {
    Rng::for_stream(seed, TASK, task.group as u64, task.index as u64)
}

/// The stream of a kernel thread of kind `kind` (its place in the kernel's
/// table of kinds) with index `index`.
pub(crate) fn kthread_stream(seed: u64, kind: usize, index: u32) -> Rng {
    Rng::for_stream(seed, KTHREAD, kind as u64, index as u64)
}

/// The per-CPU streams of kernel-context draws, each only allocated when
/// the scenario has something that draws from it.
pub(crate) struct CpuStreams {
    /// By CPU: `[hooks]`' draws. Empty without hooks.
    pub(crate) hook: Vec<Rng>,
    /// By CPU: cross-CPU call handlers' draws. Empty without handlers.
    pub(crate) handler: Vec<Rng>,
}

impl CpuStreams {
    pub(crate) fn new(seed: u64, nr_cpus: u32, hooks: bool, handlers: bool) -> Self {
        let per_cpu = |used: bool, source: u64| -> Vec<Rng> {
            if !used {
                return Vec::new();
            }
            (0..nr_cpus as u64)
                .map(|c| Rng::for_stream(seed, source, c, 0))
                .collect()
        };
        CpuStreams {
            hook: per_cpu(hooks, HOOK),
            handler: per_cpu(handlers, HANDLER),
        }
    }
}
