//! What must hold in every run whatever the scenario, checked as the run
//! goes in debug builds (so in every `cargo test` and fuzzing run): a
//! violation is a bug of the model, and panics with a message naming it.
//! Release builds skip the checks (they cost time on big machines), unless
//! built with the `invariants` feature (the fuzz harness does).
//!
//! Each check is a plain function returning the violation, so that a test
//! can plant one and see it caught.

use smpsim_engine::Nanos;

use crate::cpu::CpuTimes;
use crate::task::{TaskId, TaskState, NO_TASK};

/// Panics (debug builds) on a violated invariant.
#[inline]
#[track_caller]
pub fn check(r: Result<(), String>) {
    if cfg!(any(debug_assertions, feature = "invariants")) {
        if let Err(what) = r {
            panic!("smpsim invariant violated: {what}");
        }
    }
}

/// A count or histogram sample is never dated after the run's end.
pub fn credit_in_run(at: Nanos, end: Nanos) -> Result<(), String> {
    if at > end {
        return Err(format!(
            "a count or sample dated {at} ns, after the run's end at {end} ns"
        ));
    }
    Ok(())
}

/// A CPU's times (user + sys + spin + irq + idle) add up to the simulated
/// time it was measured over.
pub fn cpu_time_adds_up(cpu: u32, times: &CpuTimes, measured: Nanos) -> Result<(), String> {
    if times.total() != measured {
        return Err(format!(
            "CPU{cpu}'s times add up to {} ns, not the {measured} ns measured: {times:?}",
            times.total()
        ));
    }
    Ok(())
}

/// A CPU passes an RCU quiescent state in user mode only outside IRQ-off,
/// preempt-off and RCU read-side sections: a grace period must not end
/// while a CPU it waits for is in one.
pub fn quiescent_outside_atomic(
    cpu: u32,
    preempt_count: u32,
    irqs_off: bool,
    rcu_read_depth: u32,
) -> Result<(), String> {
    if preempt_count > 0 || irqs_off || rcu_read_depth > 0 {
        return Err(format!(
            "CPU{cpu} reported an RCU quiescent state with preempt_count {preempt_count}, IRQs {}, RCU read depth {rcu_read_depth}",
            if irqs_off { "off" } else { "on" }
        ));
    }
    Ok(())
}

/// An RCU callback is invoked only after a grace period that began after
/// it was queued has ended: `gp` (the grace period it waited for) has
/// completed and started at or after `queued_at`.
pub fn rcu_callback_after_gp(
    gp: u64,
    completed: u64,
    gp_started: Nanos,
    queued_at: Nanos,
) -> Result<(), String> {
    if gp > completed || gp_started < queued_at {
        return Err(format!(
            "an RCU callback queued at {queued_at} ns was invoked after grace period {completed}, waiting for grace period {gp} (started at {gp_started} ns)"
        ));
    }
    Ok(())
}

/// A task switched in on CPU `c`: the CPU is online (kernel threads bound
/// to it aside), the task is on that CPU's runqueue, and it was not running
/// anywhere (no CPU runs a task another runs).
pub fn switch_in(
    task: TaskId,
    c: u32,
    task_cpu: u32,
    was: TaskState,
    cpu_online: bool,
    kthread: bool,
) -> Result<(), String> {
    if task == NO_TASK {
        return Ok(());
    }
    if !cpu_online && !kthread {
        return Err(format!("task {task} switched in on offline CPU{c}"));
    }
    if task_cpu != c {
        return Err(format!(
            "task {task} of CPU{task_cpu}'s runqueue switched in on CPU{c}"
        ));
    }
    if was == TaskState::Running {
        return Err(format!(
            "task {task} switched in on CPU{c} while already running"
        ));
    }
    Ok(())
}

/// A reader-writer lock has at most one writer, and no readers beside it.
pub fn rw_owners(lock: &str, writer: TaskId, readers: usize) -> Result<(), String> {
    if writer != NO_TASK && readers > 0 {
        return Err(format!(
            "{lock} is held for write by task {writer} and for read by {readers} readers"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credit_after_the_end_is_caught() {
        assert!(credit_in_run(1_000, 1_000).is_ok());
        assert!(credit_in_run(1_001, 1_000).is_err());
    }

    #[test]
    #[cfg(any(debug_assertions, feature = "invariants"))]
    #[should_panic(expected = "invariant violated")]
    fn check_panics_in_debug_builds() {
        check(credit_in_run(2, 1));
    }

    #[test]
    fn cpu_time_that_does_not_add_up_is_caught() {
        let t = CpuTimes {
            user: 5,
            sys: 2,
            spin: 1,
            irq: 1,
            softirq: 0,
            idle: 1,
        };
        assert!(cpu_time_adds_up(0, &t, 10).is_ok());
        assert!(cpu_time_adds_up(0, &t, 11).is_err());
    }

    #[test]
    fn a_task_on_an_offline_cpu_is_caught() {
        assert!(switch_in(3, 1, 1, TaskState::Runnable, true, false).is_ok());
        assert!(switch_in(3, 1, 1, TaskState::Runnable, false, false).is_err());
        // The CPU's own kthreads (the stopper) may run there.
        assert!(switch_in(3, 1, 1, TaskState::Runnable, false, true).is_ok());
        assert!(switch_in(NO_TASK, 1, 0, TaskState::Running, false, false).is_ok());
    }

    #[test]
    fn a_task_on_two_cpus_is_caught() {
        assert!(switch_in(3, 1, 0, TaskState::Runnable, true, false).is_err());
        assert!(switch_in(3, 1, 1, TaskState::Running, true, false).is_err());
    }

    #[test]
    fn a_writer_beside_readers_is_caught() {
        assert!(rw_owners("sem", NO_TASK, 3).is_ok());
        assert!(rw_owners("sem", 2, 0).is_ok());
        assert!(rw_owners("sem", 2, 1).is_err());
    }
}
