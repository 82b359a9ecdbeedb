//! Counting semaphores: the shape of a pipe or futex handoff. `down()`
//! takes a token or sleeps for one (FIFO); `up()` hands a token to the
//! first sleeper, waking it, or keeps it. Both are an RMW on the
//! semaphore's line.

use std::collections::VecDeque;

use crate::coherence::Line;
use crate::locking::objects::Objects;
use crate::locking::sleeping::{Build, SleepingKindInfo, SleepingLock, SleepingLockOps};
use crate::locking::LockingEnv;
use crate::mechanism::Flow;
use crate::program::LockMode;
use crate::spec::ObjectKind;
use crate::task::*;

/// The `semaphore` object type in the sleeping-lock registry: `down()` is
/// its lock, `up()` its unlock.
pub const KIND: SleepingKindInfo = SleepingKindInfo {
    perf_type: "semaphore",
    id: 2,
    name: "semaphore",
    object_type: "semaphore",
    default: true,
    summary: "counting semaphore: down() sleeps for a token, up() hands one over",
    imp: &SemaphoreKind,
};

/// `down()`'s [`Resume::Lock`] step: woken with a token.
const WOKEN: u8 = 0;

pub(crate) struct SemaphoreKind;

/// The kind's own table ([`Objects::kind_table`]).
#[derive(Default)]
struct Semaphores(Vec<Semaphore>);

fn table(o: &mut Objects) -> &mut Vec<Semaphore> {
    &mut o.kind_table::<Semaphores>().0
}

fn table_ref(o: &Objects) -> &[Semaphore] {
    o.kind_table_ref::<Semaphores>().map_or(&[], |t| &t.0)
}

/// The line of semaphore `s` (`lock`, `count`, `wait_list`), for an
/// object placed on it (`line = "NAME"`).
pub(crate) fn line_mut(o: &mut Objects, s: u32) -> &mut Line {
    &mut table(o)[s as usize].line
}

impl SleepingLock for SemaphoreKind {
    fn build(&self, o: &mut Objects, b: &Build) -> usize {
        let ObjectKind::Semaphore { initial } = *b.kind else {
            unreachable!("a semaphore declared as {:?}", b.kind)
        };
        let base = table(o).len();
        table(o).extend((0..b.n).map(|i| Semaphore {
            object: b.object,
            count: initial,
            waiters: Default::default(),
            line: Line::at((b.home)(i)),
        }));
        base
    }

    fn lock_fn(&self, _: LockMode) -> String {
        "down".to_string()
    }

    fn object(&self, o: &Objects, l: u32) -> u32 {
        table_ref(o)[l as usize].object
    }

    fn line_transfers(&self, o: &Objects, first: usize, n: usize) -> u64 {
        table_ref(o)[first..first + n]
            .iter()
            .map(|s| s.line.transfers)
            .sum()
    }
}

impl<K: LockingEnv> SleepingLockOps<K> for SemaphoreKind {
    fn lock(&self, k: &mut K, c: u32, t: TaskId, l: u32, _: LockMode, step: Option<u8>) -> Flow {
        k.down(c, t, l, step == Some(WOKEN))
    }

    fn unlock(&self, k: &mut K, c: u32, t: TaskId, l: u32, _: LockMode) -> Flow {
        k.up(c, t, l);
        Flow::Next
    }

    /// A semaphore's waiters only sleep, so no spin of one ever ends;
    /// were one to, the task would go on where it is.
    fn spin_finished(&self, _: &mut K, _: u32, _: TaskId, _: u32) -> bool {
        true
    }
}

pub struct Semaphore {
    /// The object this instance belongs to.
    pub object: u32,
    pub count: u32,
    pub waiters: VecDeque<TaskId>,
    pub line: Line,
}

/// `down()` and `up()` (over any [`LockingEnv`]).
pub(crate) trait SemaphoreOps: LockingEnv {
    /// `down()`; `woken`: back with a token handed over by `up()`.
    fn down(&mut self, c: u32, t: TaskId, s: u32, woken: bool) -> Flow {
        if woken {
            self.advance(t);
            return Flow::Next;
        }
        let now = self.now();
        let p = self.locking_parts();
        let sem = &mut table(&mut p.locking.objects)[s as usize];
        let cost = sem.line.rmw(p.cost, c, now) - now;
        if sem.count > 0 {
            sem.count -= 1;
            p.tasks[t as usize].batch.push(Mode::Sys, cost);
            self.advance(t);
            return Flow::Next;
        }
        sem.waiters.push_back(t);
        self.sleep_until_woken(c, t, Resume::Lock(WOKEN))
    }

    /// `up()`.
    fn up(&mut self, c: u32, t: TaskId, s: u32) {
        let now = self.now();
        let p = self.locking_parts();
        let sem = &mut table(&mut p.locking.objects)[s as usize];
        let mut cost = sem.line.rmw(p.cost, c, now) - now;
        match sem.waiters.pop_front() {
            Some(w) => {
                self.wake_up(w, c);
                cost += self.cost().wakeup;
            }
            None => sem.count += 1,
        }
        self.tasks_mut()[t as usize].batch.push(Mode::Sys, cost);
        self.advance(t);
    }
}

impl<K: LockingEnv> SemaphoreOps for K {}

/// `up()` of semaphore `s` in an interrupt handler on CPU `c` at `t` (a
/// `sched_tick` hook; up() "may be called from interrupt context",
/// kernel/locking/semaphore.c): the RMW on its line, done when returned,
/// and the first sleeper, whom the caller wakes, or the token kept.
pub(crate) fn up_in_irq(
    o: &mut Objects,
    cost: &crate::costs::CostNs,
    c: u32,
    s: u32,
    t: smpsim_engine::Nanos,
) -> (smpsim_engine::Nanos, Option<TaskId>) {
    let sem = &mut table(o)[s as usize];
    let done = sem.line.rmw(cost, c, t);
    let woken = sem.waiters.pop_front();
    if woken.is_none() {
        sem.count += 1;
    }
    (done, woken)
}
