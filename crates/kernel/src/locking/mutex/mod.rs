//! `struct mutex` as kernel/locking/mutex.c has it (without ww_mutex):
//!
//! - fast path: an uncontended `cmpxchg` of the owner word;
//! - optimistic spinning (`mutex_optimistic_spin`), with preemption
//!   disabled: allowed when `CONFIG_MUTEX_SPIN_ON_OWNER`, the lock's own
//!   `spin` knob, no `need_resched()`, and the owner on a CPU. Spinners
//!   queue on the OSQ (an MCS lock); only its head spins on the owner. A
//!   spin ends when the lock is released to the spinner, the owner leaves
//!   its CPU, or `need_resched()` is set (then the spinner reschedules
//!   first, `schedule_preempt_disabled()`);
//! - the wait list: FIFO, sleeping in TASK_UNINTERRUPTIBLE; unlock wakes
//!   the first waiter only;
//! - handoff: a woken first waiter that still finds the lock taken sets
//!   `MUTEX_FLAG_HANDOFF`; the next unlock hands the lock straight to it,
//!   so spinners cannot steal it again. The first waiter spins on the owner
//!   itself (without the OSQ) after wakeup.
//!
//! `struct mutex` is one cache line (owner, `wait_lock`, `osq`,
//! `wait_list`), and every step the kernel takes on it is a transaction
//! on that line, served one at a time ([`crate::coherence`]):
//!
//! - an arrival that finds the lock taken: the failed
//!   `__mutex_trylock_fast()` cmpxchg, then `osq_lock()`'s xchg of the
//!   OSQ tail (a spinner), or `wait_lock` taken and released around
//!   `__mutex_add_waiter()` and the `MUTEX_FLAG_WAITERS` atomic (a sleeper);
//! - the OSQ head **polls** the owner word (`mutex_spin_on_owner()` reads
//!   `lock->owner` and `owner->on_cpu`), so every write to the line makes
//!   it re-fetch the line, and the release reaches it one re-fetch later;
//!   it then takes the lock with a cmpxchg. The other OSQ nodes spin on
//!   their own node: no traffic on the lock's line;
//! - `__mutex_unlock_slowpath()` with waiters: the releasing cmpxchg, then
//!   `wait_lock` around picking the waiter to wake (`wake_up_q()` after);
//! - a woken waiter: `wait_lock` again, its trylock cmpxchg, and the
//!   `wait_lock` release.

mod optimistic_spin;

use crate::coherence::{Line, LineHome};
use crate::lock_stat::LockCpu;
use crate::locking::objects::Objects;
use crate::locking::osq::Osq;
use crate::locking::sleeping::{Build, SleepingKindInfo, SleepingLock, SleepingLockOps};
use crate::locking::LockingEnv;
use crate::mechanism::Flow;
use crate::program::LockMode;
use crate::spec::ObjectKind;
use crate::task::*;
use optimistic_spin::MutexSpin;
use smpsim_engine::Nanos;
use std::collections::VecDeque;

pub struct Mutex {
    /// The object this instance belongs to (for `lock_stat`).
    pub object: u32,
    /// False for a mutex that never spins (`slow_mutex_lock`).
    pub spin: bool,
    pub owner: TaskId,
    /// The lock's cache line: owner word and flags, `wait_lock`, the OSQ
    /// tail and the wait list head.
    pub word: Line,
    /// `MUTEX_FLAG_HANDOFF`.
    pub handoff: bool,
    /// OSQ: the head spins on the owner, the rest on their own node.
    pub osq: Osq,
    /// The wait list, FIFO.
    pub waiters: VecDeque<TaskId>,
    /// The first waiter, spinning on the owner after a wakeup.
    pub waiter_spinner: TaskId,
    pub acquired_at: u64,
}

impl Mutex {
    pub fn new(object: u32, spin: bool, at: LineHome) -> Self {
        Mutex {
            object,
            spin,
            owner: NO_TASK,
            word: Line::at(at),
            handoff: false,
            osq: Osq::default(),
            waiters: VecDeque::new(),
            waiter_spinner: NO_TASK,
            acquired_at: 0,
        }
    }
}

/// Where `mutex_lock()` continues (its [`Resume::Lock`] step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MutexStep {
    /// Woken on the wait list (or back from a spin while on it).
    WokenWaiter = 0,
    /// Back from `schedule_preempt_disabled()` after a spin saw need_resched.
    AfterYield = 1,
}

/// The mutexes one task holds, innermost last: what a context switch
/// away from it walks (`owner_leaves_cpu()`). Nesting deeper than this is
/// not tracked (spinners on the deeper ones would keep spinning).
#[derive(Clone, Copy, Debug, Default)]
pub struct Held {
    locks: [u32; 8],
    n: u8,
}

impl Held {
    fn push(&mut self, m: u32) {
        debug_assert!(
            (self.n as usize) < self.locks.len(),
            "more nested mutexes than tracked"
        );
        if (self.n as usize) < self.locks.len() {
            self.locks[self.n as usize] = m;
            self.n += 1;
        }
    }

    fn remove(&mut self, m: u32) {
        let n = self.n as usize;
        if let Some(i) = self.locks[..n].iter().position(|&h| h == m) {
            // Usually the innermost: nothing to shift.
            if i + 1 < n {
                self.locks.copy_within(i + 1..n, i);
            }
            self.n -= 1;
        }
    }

    fn locks(&self) -> &[u32] {
        &self.locks[..self.n as usize]
    }
}

/// The kind's own table ([`Objects::mutexes`]).
#[derive(Default)]
pub(crate) struct Mutexes {
    /// Every `struct mutex` instance.
    all: Vec<Mutex>,
    /// The mutexes each task holds, by task id (grown as tasks take them).
    held: Vec<Held>,
}

#[inline(always)]
fn table(o: &mut Objects) -> &mut Mutexes {
    &mut o.mutexes
}

#[inline(always)]
fn table_ref(o: &Objects) -> &Mutexes {
    &o.mutexes
}

/// The line of mutex `m`'s word, for an object placed on it
/// (`[layout] lines`).
pub(crate) fn word_mut(o: &mut Objects, m: u32) -> &mut Line {
    &mut table(o).all[m as usize].word
}

/// Builds `b.n` mutexes whose OSQ `osq` makes (a variant's kind, such as
/// [`crate::locking::osq_numa`]'s, builds through here); returns the
/// first one's index.
pub(crate) fn build_with(o: &mut Objects, b: &Build, spin: bool, osq: fn() -> Osq) -> usize {
    let all = &mut table(o).all;
    let base = all.len();
    all.extend((0..b.n).map(|i| Mutex {
        osq: osq(),
        ..Mutex::new(b.object, spin, (b.home)(i))
    }));
    base
}

/// Mutex `m`'s OSQ (for its counts).
pub(crate) fn osq(o: &Objects, m: u32) -> &Osq {
    &table_ref(o).all[m as usize].osq
}

/// Task `t`'s [`Held`], the table grown to reach it.
#[inline]
fn held_by(o: &mut Objects, t: TaskId) -> &mut Held {
    let t = t as usize;
    if table(o).held.len() <= t {
        grow_held(o, t);
    }
    &mut table(o).held[t]
}

/// Out of line: once per task, and inlined it would make every
/// acquisition and release save more registers.
#[cold]
#[inline(never)]
fn grow_held(o: &mut Objects, t: usize) {
    table(o).held.resize(t + 1, Held::default());
}

/// `struct mutex` in the sleeping-lock registry.
pub const KIND: SleepingKindInfo = SleepingKindInfo {
    perf_type: "mutex",
    id: 0,
    name: "mutex",
    object_type: "mutex",
    default: true,
    summary: "`struct mutex`: OSQ optimistic spinning, FIFO wait list, handoff",
    imp: &MutexKind,
};

pub(crate) struct MutexKind;

impl SleepingLock for MutexKind {
    fn build(&self, o: &mut Objects, b: &Build) -> usize {
        let ObjectKind::Mutex { spin } = *b.kind else {
            unreachable!("a mutex declared as {:?}", b.kind)
        };
        let all = &mut table(o).all;
        let base = all.len();
        all.extend((0..b.n).map(|i| Mutex::new(b.object, spin, (b.home)(i))));
        base
    }

    fn lock_fn(&self, _: LockMode) -> String {
        "mutex_lock".to_string()
    }

    fn object(&self, o: &Objects, l: u32) -> u32 {
        table_ref(o).all[l as usize].object
    }

    fn line_transfers(&self, o: &Objects, first: usize, n: usize) -> u64 {
        table_ref(o).all[first..first + n]
            .iter()
            .map(|m| m.word.transfers)
            .sum()
    }
}

impl<K: LockingEnv> SleepingLockOps<K> for MutexKind {
    fn lock(&self, k: &mut K, c: u32, t: TaskId, l: u32, _: LockMode, step: Option<u8>) -> Flow {
        let step = step.map(|s| {
            if s == MutexStep::AfterYield as u8 {
                MutexStep::AfterYield
            } else {
                MutexStep::WokenWaiter
            }
        });
        k.mutex_lock(c, t, l, step)
    }

    fn unlock(&self, k: &mut K, c: u32, t: TaskId, l: u32, _: LockMode) -> Flow {
        k.mutex_unlock(c, t, l);
        k.advance(t);
        Flow::Next
    }

    fn owner_leaves_cpu(&self, k: &mut K, owner: TaskId) {
        k.owner_leaves_cpu(owner);
    }

    fn spin_need_resched(&self, k: &mut K, c: u32, t: TaskId, l: u32) {
        k.mutex_spin_need_resched(c, t, l);
    }

    fn spin_finished(&self, k: &mut K, c: u32, t: TaskId, l: u32) -> bool {
        k.mutex_spin_finished(c, t, l)
    }
}

/// `mutex_lock()`, `mutex_unlock()` and the ownership they move (over any
/// [`LockingEnv`]).
pub(crate) trait MutexOps: LockingEnv {
    fn owner_on_cpu(&self, owner: TaskId) -> bool {
        owner != NO_TASK && self.tasks()[owner as usize].state == TaskState::Running
    }

    /// Makes `t`, which waited for it (lock_contended() counted), the
    /// owner (a cmpxchg of the lock word from CPU `c`); returns how long
    /// the RMW takes from now.
    fn take_ownership(&mut self, c: u32, t: TaskId, m: u32) -> u64 {
        self.take_ownership_at(c, t, m, self.now(), true)
    }

    /// The same, the cmpxchg issued at `at` (when the taker saw the
    /// release); `contended: false` for the fast path, whose atomic is no
    /// wait in lock_stat.
    fn take_ownership_at(&mut self, c: u32, t: TaskId, m: u32, at: Nanos, contended: bool) -> u64 {
        let now = self.now();
        let p = self.locking_parts();
        let lock = &mut table(&mut p.locking.objects).all[m as usize];
        let cost = lock.word.rmw(p.cost, c, at.max(now)) - now;
        lock.owner = t;
        lock.acquired_at = now + cost;
        let waited = contended.then(|| now + cost - p.tasks[t as usize].wait.wait_start);
        p.metrics
            .lock_acquired(now, lock.object, LockCpu::new(m, c), waited);
        held_by(&mut p.locking.objects, t).push(m);
        cost
    }

    /// lockdep's report of `t` taking mutex `m` it holds (recursive
    /// locking) or, with `unlock`, releasing one it does not hold (bad
    /// unlock balance). Out of line: it builds strings, and inlined it
    /// would make every lock and unlock save more registers.
    #[cold]
    #[inline(never)]
    fn report_mutex_misuse(&mut self, c: u32, t: TaskId, m: u32, unlock: bool) {
        let name = self.task_name(t);
        let object = table(&mut self.locking_mut().objects).all[m as usize].object as usize;
        let lock = self.spec().objects[object].name.clone();
        if unlock {
            let now = self.now();
            self.metrics_mut()
                .bad_unlock(c, now, &name, "mutex_unlock", &lock);
        } else {
            let now = self.now();
            self.metrics_mut()
                .recursive_locking(c, now, &name, "mutex_lock", &lock);
        }
    }

    /// `mutex_lock()`, first attempt (`step` none) or continued.
    fn mutex_lock(&mut self, c: u32, t: TaskId, m: u32, step: Option<MutexStep>) -> Flow {
        if step.is_none() && table(&mut self.locking_mut().objects).all[m as usize].owner == t {
            self.report_mutex_misuse(c, t, m, false);
        }
        let lock = &table_ref(&self.locking().objects).all[m as usize];
        let (owner, handoff, object) = (lock.owner, lock.handoff, lock.object);
        if step.is_none() {
            let now = self.now();
            self.tasks_mut()[t as usize].wait.wait_start = now;
            if owner == NO_TASK && !handoff {
                // __mutex_trylock_fast() succeeded: uncontended.
                let cost = self.take_ownership_at(c, t, m, self.now(), false);
                self.tasks_mut()[t as usize].batch.push(Mode::Sys, cost);
                self.advance(t);
                return Flow::Next;
            }
            self.metrics_mut()
                .lock_contended(now, object, LockCpu::new(m, c));
            // The failed __mutex_trylock_fast() cmpxchg.
            let p = self.locking_parts();
            table(&mut p.locking.objects).all[m as usize]
                .word
                .rmw(p.cost, c, now);
            if self.can_spin(c, m) {
                self.start_osq_spin(t, m);
                return Flow::Stop;
            }
            self.sleep_on_mutex(c, t, m);
            return Flow::Stop;
        }
        // Resumed in the slow path.
        if owner == t {
            // Handed off to us while we slept.
            self.tasks_mut()[t as usize].batch.push(Mode::Sys, 0);
            self.advance(t);
            return Flow::Next;
        }
        if owner == NO_TASK && !handoff {
            let mut cost = self.take_ownership(c, t, m);
            if step == Some(MutexStep::WokenWaiter)
                && table(&mut self.locking_mut().objects).all[m as usize]
                    .waiters
                    .contains(&t)
            {
                // __mutex_remove_waiter() under wait_lock.
                self.remove_waiter(m, t);
                let p = self.locking_parts();
                let word = &mut table(&mut p.locking.objects).all[m as usize].word;
                let at = word.rmw(p.cost, c, p.now + cost);
                cost = word.store(p.cost, c, at) - p.now;
            }
            self.tasks_mut()[t as usize].batch.push(Mode::Sys, cost);
            self.advance(t);
            return Flow::Next;
        }
        if step == Some(MutexStep::WokenWaiter)
            && table(&mut self.locking_mut().objects).all[m as usize]
                .waiters
                .front()
                == Some(&t)
        {
            // `__mutex_trylock_or_handoff(lock, first)`.
            table(&mut self.locking_mut().objects).all[m as usize].handoff = true;
            if self.can_spin(c, m)
                && table(&mut self.locking_mut().objects).all[m as usize].waiter_spinner == NO_TASK
            {
                table(&mut self.locking_mut().objects).all[m as usize].waiter_spinner = t;
                self.begin_spin(
                    t,
                    Spin::Sleeping {
                        kind: KIND.id,
                        lock: m,
                        how: SpinHow::OnOwner,
                    },
                );
                self.watch_owner(t, m, self.now());
                return Flow::Stop;
            }
        }
        self.sleep_on_mutex(c, t, m);
        Flow::Stop
    }

    /// Adds the task to the wait list (if not on it) and sleeps.
    fn sleep_on_mutex(&mut self, c: u32, t: TaskId, m: u32) {
        let now = self.now();
        let p = self.locking_parts();
        let lock = &mut table(&mut p.locking.objects).all[m as usize];
        if !lock.waiters.contains(&t) {
            lock.waiters.push_back(t);
            // wait_lock, __mutex_add_waiter() with the WAITERS flag, unlock.
            let at = lock.word.rmw(p.cost, c, now);
            let at = lock.word.rmw(p.cost, c, at);
            lock.word.store(p.cost, c, at);
        }
        self.tasks_mut()[t as usize].resume = Resume::Lock(MutexStep::WokenWaiter as u8);
        let wait_start = self.tasks_mut()[t as usize].wait.wait_start;
        self.block(c, t);
        // Keep the lock-wait start, not the sleep start, for lock_stat.
        self.tasks_mut()[t as usize].wait.wait_start = wait_start;
    }

    fn remove_waiter(&mut self, m: u32, t: TaskId) {
        let lock = &mut table(&mut self.locking_mut().objects).all[m as usize];
        if let Some(i) = lock.waiters.iter().position(|&w| w == t) {
            lock.waiters.remove(i);
        }
    }

    /// `mutex_unlock()`.
    fn mutex_unlock(&mut self, c: u32, t: TaskId, m: u32) {
        let now = self.now();
        if table(&mut self.locking_mut().objects).all[m as usize].owner != t {
            // Not ours: lockdep's bad unlock balance; leave the lock alone.
            self.report_mutex_misuse(c, t, m, true);
            return;
        }
        held_by(&mut self.locking_mut().objects, t).remove(m);
        let p = self.locking_parts();
        let lock = &mut table(&mut p.locking.objects).all[m as usize];
        let held = now.saturating_sub(lock.acquired_at);
        p.metrics.lock_released(now, lock.object, held);
        // The release (cmpxchg, or the handoff store) writes the lock word;
        // with waiters, __mutex_unlock_slowpath() also takes and releases
        // wait_lock to pick the one to wake.
        let mut released = lock.word.rmw(p.cost, c, now);
        if !lock.waiters.is_empty() {
            released = lock.word.rmw(p.cost, c, released);
            released = lock.word.store(p.cost, c, released);
        }
        p.tasks[t as usize].batch.push(Mode::Sys, released - now);
        let mut woke = false;
        if lock.handoff && !lock.waiters.is_empty() {
            // `__mutex_handoff()` to the top waiter.
            let w = lock.waiters.pop_front().expect("waiter");
            lock.handoff = false;
            lock.owner = w;
            p.metrics.lock_handoff(now, lock.object);
            if lock.waiter_spinner == w {
                lock.waiter_spinner = NO_TASK;
                self.grant_to_spinner(w, m);
            } else {
                self.grant_ownership_to_sleeper(w, m);
                if self.tasks_mut()[w as usize].state == TaskState::Sleeping {
                    self.wake_up(w, c);
                    woke = true;
                }
                // The new owner is not on a CPU: spinners stop (!owner_on_cpu).
                if self.tasks_mut()[w as usize].state != TaskState::Running {
                    let wc = self.tasks_mut()[w as usize].cpu;
                    self.abort_spinners(m, wc);
                }
            }
        } else if let Some(head) = lock.osq.head().filter(|&h| {
            matches!(
                p.tasks[h as usize].wait.spin,
                Spin::Sleeping {
                    how: SpinHow::OnOwner,
                    ..
                }
            )
        }) {
            // The OSQ head sees the release when its re-fetch of the line
            // lands, takes the lock with a cmpxchg, and osq_unlock() hands
            // the head role to the next node.
            let next = lock.osq.pop_head_at(now);
            lock.owner = head;
            let got = self.grant_to_spinner(head, m);
            if let Some(next) = next {
                let hc = self.tasks_mut()[head as usize].cpu;
                let nc = self.tasks_mut()[next as usize].cpu;
                self.watch_owner(next, m, got + self.cost().line_transfer(hc, nc));
            }
            woke = self.wake_first_waiter(c, m);
        } else if lock.waiter_spinner != NO_TASK {
            let w = lock.waiter_spinner;
            lock.waiter_spinner = NO_TASK;
            lock.owner = w;
            self.remove_waiter(m, w);
            table(&mut self.locking_mut().objects).all[m as usize].handoff = false;
            self.grant_to_spinner(w, m);
        } else {
            lock.owner = NO_TASK;
            woke = self.wake_first_waiter(c, m);
        }
        if woke {
            let cost = self.cost().wakeup;
            self.tasks_mut()[t as usize].batch.push(Mode::Sys, cost);
        }
    }

    fn wake_first_waiter(&mut self, c: u32, m: u32) -> bool {
        if let Some(&w) = table(&mut self.locking_mut().objects).all[m as usize]
            .waiters
            .front()
        {
            if self.tasks_mut()[w as usize].state == TaskState::Sleeping {
                self.wake_up(w, c);
                return true;
            }
        }
        false
    }

    fn grant_ownership_to_sleeper(&mut self, w: TaskId, m: u32) {
        let wc = self.tasks_mut()[w as usize].cpu;
        self.take_ownership(wc, w, m);
    }
}

impl<K: LockingEnv> MutexOps for K {}

#[cfg(test)]
mod tests {
    use super::table_ref;
    use crate::testkit::*;
    use crate::*;

    #[test]
    fn held_removes_the_innermost_or_shifts_the_rest_down() {
        let mut h = super::Held::default();
        for m in [3, 5, 7] {
            h.push(m);
        }
        h.remove(7);
        assert_eq!(h.locks(), &[3, 5]);
        h.push(9);
        h.remove(3);
        assert_eq!(h.locks(), &[5, 9]);
        h.remove(4);
        assert_eq!(h.locks(), &[5, 9]);
    }

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    /// One task takes the lock and holds it for `hold`; the others arrive
    /// slightly later and contend.
    fn contenders(cpus: u32, hold: u64, duration: u64) -> Spec {
        let mut s = spec(flat_machine(cpus), duration);
        let m = mutex(&mut s, "m", true, false);
        let lock = ObjRef {
            object: m,
            index: None,
        };
        task_group(
            &mut s,
            "owner",
            vec![0],
            Policy::Normal,
            0,
            vec![
                Op::mutex_lock(lock.clone()),
                Op::Work(Dist::Const(hold)),
                Op::mutex_unlock(lock.clone()),
                Op::Exit,
            ],
        );
        task_group(
            &mut s,
            "waiter",
            (1..cpus).collect(),
            Policy::Normal,
            0,
            vec![
                Op::Work(Dist::Const(US)),
                Op::mutex_lock(lock.clone()),
                Op::mutex_unlock(lock),
                Op::Exit,
            ],
        );
        s
    }

    #[test]
    fn only_the_osq_head_spins_on_the_owner() {
        let s = contenders(4, 10 * MS, 2 * MS);
        let mut k = Kernel::new(&s);
        k.run();
        let spinning = |how: task::SpinHow| {
            let is = |t: &&task::Task| matches!(t.wait.spin, task::Spin::Sleeping { how: h, .. } if h == how);
            k.tasks.iter().filter(is).count()
        };
        let heads = spinning(task::SpinHow::OnOwner);
        let queued = spinning(task::SpinHow::Queued);
        assert_eq!((heads, queued), (1, 2));
        let lock = &table_ref(&k.locking.objects).all[0];
        assert_eq!(lock.osq.len(), 3);
        assert!(matches!(
            k.tasks[lock.osq.head().unwrap() as usize].wait.spin,
            task::Spin::Sleeping {
                how: task::SpinHow::OnOwner,
                ..
            }
        ));
    }

    #[test]
    fn the_lock_passes_down_the_osq_in_order() {
        let s = contenders(4, 100 * US, 5 * MS);
        let r = simulate(&s);
        let l = r.lock("m").unwrap();
        assert_eq!(l.acquisitions, 4);
        assert_eq!(l.contentions, 3);
        // Nobody slept: each waiter spun until its turn.
        assert_eq!(r.task_groups[1].total.sleep, 0);
        assert!(r.task_groups[1].total.spin >= 3 * 99 * US);
    }

    /// `struct mutex` is one line: a contended arrival's failed
    /// `__mutex_trylock_fast()` cmpxchg and its `osq_lock()` xchg, the
    /// release in `mutex_unlock()` and the spinner's cmpxchg that takes the
    /// lock are each a transaction on it, and the OSQ head re-fetches it
    /// after every write.
    #[test]
    fn every_step_of_a_contended_acquisition_touches_the_mutex_line() {
        let s = contenders(4, 100 * US, 5 * MS);
        let mut k = Kernel::new(&s);
        k.run();
        let word = &table_ref(&k.locking.objects).all[0].word;
        // 1 uncontended take + 3 x (failed fast path, OSQ xchg, cmpxchg)
        // + 4 releases.
        assert_eq!(word.rmws, 1 + 3 * 3 + 4, "{word:?}");
        assert!(word.refetches >= 3, "{word:?}");
    }

    /// A spinner whose CPU has other work stops spinning when the tick sets
    /// need_resched, and sleeps on the wait list instead.
    #[test]
    fn need_resched_ends_the_spin() {
        let hog = |with_hog: bool| {
            let mut s = contenders(2, 20 * MS, 40 * MS);
            if with_hog {
                task_group(
                    &mut s,
                    "hog",
                    vec![1],
                    Policy::Normal,
                    1,
                    vec![Op::Work(Dist::Const(MS)), Op::Jump(0)],
                );
            }
            simulate(&s).task_groups[1].total
        };
        let alone = hog(false);
        let shared = hog(true);
        assert!(alone.spin > 19 * MS, "{alone:?}");
        assert!(
            shared.spin < 5 * MS,
            "spun {} ns with a runnable task waiting",
            shared.spin
        );
        assert!(shared.sleep > 10 * MS, "{shared:?}");
    }

    /// A waiter woken by unlock that finds the lock stolen sets HANDOFF and
    /// gets it at the next unlock, however fast the other side re-locks.
    #[test]
    fn handoff_prevents_starvation() {
        let mut s = spec(flat_machine(2), 50 * MS);
        let m = mutex(&mut s, "m", false, false);
        let got = counter(&mut s, "waiter_got_it");
        let lock = ObjRef {
            object: m,
            index: None,
        };
        forever(
            &mut s,
            "greedy",
            vec![0],
            Policy::Normal,
            vec![
                Op::mutex_lock(lock.clone()),
                Op::Work(Dist::Const(100 * US)),
                Op::mutex_unlock(lock.clone()),
            ],
        );
        forever(
            &mut s,
            "waiter",
            vec![1],
            Policy::Normal,
            vec![
                Op::Work(Dist::Const(10 * US)),
                Op::mutex_lock(lock.clone()),
                Op::Count(got),
                Op::mutex_unlock(lock),
            ],
        );
        let r = simulate(&s);
        let l = r.lock("m").unwrap();
        assert!(l.handoffs > 0, "{l:?}");
        assert!(r.counter("waiter_got_it").unwrap().count > 100);
        // Never more than about two of the greedy task's hold times.
        assert!(l.wait_max_ns < 300 * US, "{l:?}");
    }
}
