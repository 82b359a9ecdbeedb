//! The contract between the interpreter and the mechanisms: what a
//! mechanism's ops implement ([`MechanismOp`]) and what running one
//! returns ([`Flow`]). Beneath the mechanisms, so that they need not
//! import the interpreter (`interp.rs`) that calls them.

use crate::task::{Resume, TaskId};

/// What a mechanism op did.
pub(crate) enum Flow {
    /// Done; interpret the next op (the op may have added work to the batch).
    Next,
    /// The op set up what the CPU does next (spin, sleep, switch).
    Stop,
    /// Not yet: the task's batch runs up to the op first.
    Wait,
}

/// The ops of one mechanism, run against the kernel `K` it is given: the
/// whole [`crate::Kernel`] today, or the narrow view of it that the
/// mechanism declares (its `Env` trait), so that a mechanism's file need
/// not name `Kernel`. Grouped as [`crate::event::Event`] groups events: each
/// mechanism's file has its op enum (a variant of [`crate::program::Op`]) and implements
/// this with the one exhaustive match that runs it, with no fallback arm,
/// so an op without its handler is a compile error. What the interpreter
/// does for every op of every mechanism (wait for the task's batch,
/// perturbed schedules) is in [`crate::Kernel::run_task`], written once.
///
/// A match over the ops that forgets one does not compile:
///
/// ```compile_fail,E0004
/// use smpsim_kernel::program::LockingOp;
/// fn handled(op: &LockingOp) -> &'static str {
///     match op {
///         LockingOp::Lock { .. } | LockingOp::Unlock { .. } => "lock",
///         LockingOp::Down(_) | LockingOp::Up(_) => "semaphore",
///         LockingOp::RwsemTrylock { .. } | LockingOp::DowngradeWrite(_) => "rwsem",
///         LockingOp::WriteSeqcount { .. }
///         | LockingOp::ReadSeqcountBegin { .. }
///         | LockingOp::ReadSeqcountRetry { .. } => "seqcount",
///         LockingOp::CpusReadLock
///         | LockingOp::CpusReadUnlock
///         | LockingOp::CpusWriteLock
///         | LockingOp::CpusWriteUnlock => "cpu_hotplug_lock",
///         LockingOp::AtomicRmw(_) | LockingOp::AtomicRead(_) => "atomic",
///         // `AtomicCmpxchgLoop` has no arm: error[E0004].
///     }
/// }
/// ```
pub(crate) trait MechanismOp<K: ?Sized> {
    /// Whether it touches only the task: it then runs at its planned time
    /// inside the task's batch of local work, adding no event, instead of
    /// waiting for the batch to run up to it.
    fn local(&self) -> bool {
        false
    }
    /// Runs it for task `t`, current on CPU `c` (`resume`: where a
    /// resumed op left off). It moves the task to its next op when done
    /// (a local op always is).
    fn run(&self, k: &mut K, c: u32, t: TaskId, resume: Resume) -> Flow;
}
