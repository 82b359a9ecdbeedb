//! Recording every CPU's timeline for `run --trace`: when
//! [`Kernel::settle`] charges a stretch of a CPU's time, the same stretch
//! goes to the [`Recorder`] as segments of what the CPU was doing (in an
//! IRQ, switching, or running a task in user or kernel mode, or spinning,
//! and on what), before the accounting consumes the task's work batch.
//! Nothing here runs without a recorder.

use super::*;
use crate::trace::{Recorder, SegKind, SpinOn};

impl Kernel<'_> {
    /// Records CPU `c`'s time from `from` to `now` (not yet accounted):
    /// one segment, or one per piece of the task's work batch. Idle time
    /// is the gap between segments.
    pub(super) fn record_timeline(&mut self, c: u32, from: Nanos, now: Nanos) {
        let Some(rec) = self.run.trace.as_mut() else {
            return;
        };
        let cpu = &self.cpus[c as usize];
        match cpu.activity {
            Activity::Idle => {}
            Activity::Switch { .. } => rec.push(c, from, now, SegKind::Switch, NO_TASK),
            Activity::Irq { .. } => rec.push(c, from, now, SegKind::Irq, NO_TASK),
            Activity::Task => {
                let t = &self.tasks[cpu.curr as usize];
                if t.wait.spin != Spin::None {
                    let on = spin_on(self.locking.objects(), t.wait.spin);
                    rec.push(c, from, now, SegKind::Spin(on), cpu.curr);
                } else {
                    record_batch(rec, c, cpu.curr, t, from, now);
                }
            }
        }
    }
}

/// Task `curr`'s time on CPU `c` from `from` to `now`, one segment per
/// piece of its work batch (user or sys), the rest in its current mode.
fn record_batch(rec: &mut Recorder, c: u32, curr: TaskId, t: &Task, from: Nanos, now: Nanos) {
    let mut at = from;
    t.batch.peek(now - from, t.mode, |m, ns| {
        let kind = match m {
            Mode::User => SegKind::User,
            Mode::Sys => SegKind::Sys,
        };
        rec.push(c, at, at + ns, kind, curr);
        at += ns;
    });
}

/// What a spinning task spins on: the lock instance (the object
/// `lock_stat` charges the spin to, and which of its per-CPU instances),
/// or the wait it is in.
fn spin_on(objects: &Objects, spin: Spin) -> SpinOn {
    match (spun_on(objects, spin), spin) {
        (Some((object, l)), _) => SpinOn::Lock {
            object,
            instance: l - objects.first_instance(object),
        },
        (None, Spin::CsdWait) => SpinOn::CsdWait,
        (None, Spin::StopMachine) => SpinOn::StopMachine,
        (None, _) => unreachable!("asked only for a spinning task"),
    }
}
