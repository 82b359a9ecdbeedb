//! A compare-and-exchange retry loop written by the scenario, one attempt
//! per op: `old = atomic_read(v)`, then `while (!atomic_try_cmpxchg(v,
//! &old, new)) { ... }` (include/linux/atomic/atomic-instrumented.h:
//! `atomic_try_cmpxchg()` returns whether it swapped and, when it did not,
//! writes the value it found into `*old`). lib/lockref.c's `CMPXCHG_LOOP`
//! is such a loop on a lockref's 64-bit word.
//!
//! The model keeps a word's version (its line's count of writes, see
//! [`Line::try_cmpxchg`]), not its value: `old` is the version a read saw,
//! and an attempt fails when another CPU wrote the word since.
//!
//! These take the pieces of the kernel they touch (the object's line, the
//! costs, the task), not the kernel itself.

use smpsim_engine::Nanos;

use crate::coherence::Line;
use crate::costs::CostNs;
use crate::ids::ObjId;
use crate::locking::objects::Objects;
use crate::program::{Pc, Slot};
use crate::spec::{ObjectKind, Spec};
use crate::task::{Mode, Resume, Task};

/// Failed compare-and-exchanges so far on each object's atomic lines, all
/// instances (0 for an object that is not an atomic).
pub fn cmpxchg_fails(o: &Objects, spec: &Spec, nr_cpus: u32) -> Vec<u64> {
    spec.objects
        .iter()
        .enumerate()
        .map(|(id, obj)| {
            if obj.kind != ObjectKind::Atomic {
                return 0;
            }
            let base = o.first_instance(id as u32) as usize;
            let n = if obj.per_cpu { nr_cpus as usize } else { 1 };
            (base..base + n)
                .map(|l| o.cmpxchg_fails_of(l as ObjId))
                .sum()
        })
        .collect()
}

/// `old = atomic_read(v)`: a read of the line by CPU `c` at `now`; `slot`
/// keeps the version it saw.
pub(crate) fn read_old(
    line: &mut Line,
    cost: &CostNs,
    c: u32,
    now: Nanos,
    task: &mut Task,
    slot: Slot,
) {
    let seen = line.writes();
    let done = line.read(cost, c, now);
    task.vars[slot as usize] = seen as i64;
    task.batch.push(Mode::Sys, done - now);
    next(task, task.pc + 1);
}

/// One `atomic_try_cmpxchg(v, &old, new)` attempt, `old` in `slot`: on
/// success the task goes on at `done`; on failure `old` gets the version
/// found and the task goes on to the loop's body.
pub(crate) fn try_cmpxchg(
    line: &mut Line,
    cost: &CostNs,
    c: u32,
    now: Nanos,
    task: &mut Task,
    slot: Slot,
    done: Pc,
) -> bool {
    let expected = task.vars[slot as usize] as u64;
    let (end, ok) = line.try_cmpxchg(cost, c, now, expected);
    if ok {
        next(task, done);
    } else {
        task.vars[slot as usize] = line.writes() as i64;
        next(task, task.pc + 1);
    }
    // At least a nanosecond: a loop of failures always moves time on.
    task.batch.push(Mode::Sys, end.max(now + 1) - now);
    ok
}

/// The task goes on at `pc`, a fresh op.
fn next(task: &mut Task, pc: Pc) {
    task.pc = pc;
    task.perturbed = false;
    task.resume = Resume::Op;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs() -> CostNs {
        let m = smpsim_machine::preset("generic-x86").unwrap().unwrap();
        CostNs::new(&m)
    }

    /// An attempt fails only if another CPU wrote the word since the read;
    /// the failure writes nothing, so the version it found is the one the
    /// retry expects, and the retry succeeds.
    #[test]
    fn an_attempt_fails_after_another_write_and_the_retry_succeeds() {
        let c = costs();
        let mut line = Line::new(8, 0);
        let old = line.writes();
        let t = line.read(&c, 1, 0);
        // CPU 2 writes the word between CPU 1's read and its attempt.
        let t = line.rmw(&c, 2, t);
        let (t, ok) = line.try_cmpxchg(&c, 1, t, old);
        assert!(!ok);
        assert_eq!(line.cmpxchg_fails, 1);
        let found = line.writes();
        assert_eq!(found, old + 1, "a failed attempt writes nothing");
        let (_, ok) = line.try_cmpxchg(&c, 1, t, found);
        assert!(ok);
        assert_eq!((line.writes(), line.cmpxchg_fails), (old + 2, 1));
    }

    /// A failed `lock cmpxchg` is a locked write on the line (Intel SDM
    /// vol. 2A, CMPXCHG: the destination is written back when the
    /// comparison fails), so `Line::cmpxchg` charges it as a
    /// read-for-ownership; but the value it writes back is the one it
    /// found: a loop of a failure and its retry changes the value once.
    #[test]
    fn a_failed_locked_cmpxchg_fetches_the_line_and_changes_nothing() {
        let c = costs();
        let mut line = Line::new(8, 0);
        let old = line.writes();
        let t = line.read(&c, 1, 0);
        // CPU 2 writes the word between CPU 1's read and its attempt.
        let t = line.rmw(&c, 2, t);
        let found = line.writes();
        let (rmws, transfers) = (line.rmws, line.transfers);
        let (_, ok) = line.cmpxchg(&c, 1, t, old);
        assert!(ok, "the retry succeeds on the line the failure fetched");
        assert_eq!(line.cmpxchg_fails, 1);
        assert_eq!(line.rmws - rmws, 2, "two locked attempts");
        assert_eq!(
            line.transfers - transfers,
            1,
            "the failed attempt fetched the line for ownership; the retry hits"
        );
        assert_eq!(line.writes(), found + 1, "one value change per loop");
    }
}
