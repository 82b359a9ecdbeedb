//! `struct percpu_rw_semaphore` (kernel/locking/percpu-rwsem.c) with its
//! `rcu_sync` (kernel/rcu/sync.c): `cpu_hotplug_lock`, and any a scenario
//! declares (`type = "percpu_rwsem"`, ops `percpu_down_read` and friends).
//!
//! Readers (`percpu_down_read()`) take a per-CPU count on the fast path
//! while the `rcu_sync` is idle (`rcu_sync_is_idle()`); otherwise
//! (`__percpu_down_read()`) they check `block` and sleep while a writer
//! holds the lock. A writer (`percpu_down_write()`) first calls
//! `rcu_sync_enter()`: from GP_IDLE it waits for a full grace period
//! (`synchronize_rcu()`, so expedited under `rcu_expedite_gp()`); from
//! GP_PASSED, GP_EXIT or GP_REPLAY it does not wait at all. It then sets
//! `block` and waits for the readers to drain (`rcuwait_wait_event()` on
//! `readers_active_check()`). `percpu_up_write()` clears `block`, wakes the
//! waiters and calls `rcu_sync_exit()`, which leaves GP_PASSED for GP_EXIT
//! and queues `rcu_sync_func()` after a grace period (GP_EXIT -> GP_IDLE,
//! or GP_REPLAY -> GP_EXIT and another grace period, or back to GP_PASSED
//! if a writer came meanwhile).
//!
//! Costs: the reader's fast path touches only its CPU's `read_count` and
//! a `gp_state` every cache keeps shared, so it pays nothing beyond the
//! op (assumed: a `this_cpu_inc()` and a hit, a few cycles). Not modelled:
//! the writer's `block` xchg and `readers_active_check()`'s sum over every
//! CPU's count (microseconds at most, beside the grace period the writer
//! waits for first).
//!
//! The kind registers like every sleeping lock; `cpu_hotplug_lock` is one
//! more instance, built at boot ([`new_hotplug_lock`]), with no row in
//! `lock_stat` (as before, the hotplug lock is counted by its users).

use std::collections::VecDeque;

use crate::event::RcuCallback;
use crate::lock_stat::LockCpu;
use crate::locking::objects::Objects;
use crate::locking::sleeping::{Build, SleepingKindInfo, SleepingLock, SleepingLockOps};
use crate::locking::LockingEnv;
use crate::mechanism::Flow;
use crate::program::LockMode;
use crate::task::*;
use smpsim_engine::Nanos;

/// `percpu_rwsem` in the sleeping-lock registry.
pub const KIND: SleepingKindInfo = SleepingKindInfo {
    perf_type: "pcpu-sem",
    id: 5,
    name: "percpu_rwsem",
    object_type: "percpu_rwsem",
    default: true,
    summary: "`struct percpu_rw_semaphore`: per-CPU reader counts, writers wait for a grace period (rcu_sync) and for the readers to drain",
    imp: &PercpuRwsemKind,
};

/// The object of `cpu_hotplug_lock`, which no scenario declares.
const NO_OBJECT: u32 = u32::MAX;

/// Where `percpu_down_write()` continues ([`Resume::Lock`] steps).
mod step {
    /// `rcu_sync_enter()`'s grace period is over.
    pub const AFTER_GP: u8 = 0;
    /// Take the write side (or wait for the writer before us).
    pub const TAKE: u8 = 1;
    /// The readers have drained.
    pub const DRAINED: u8 = 2;
    /// A reader woken by `percpu_up_write()`: try again from the start.
    pub const READ_AGAIN: u8 = 3;
}

/// `enum { GP_IDLE = 0, GP_ENTER, GP_PASSED, GP_EXIT, GP_REPLAY }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum GpState {
    Idle,
    Enter,
    Passed,
    Exit,
    Replay,
}

pub struct PercpuRwsem {
    /// The declared object, or [`NO_OBJECT`] for `cpu_hotplug_lock`.
    object: u32,
    gp_state: GpState,
    gp_count: u32,
    /// Writers that found GP_ENTER and wait for GP_PASSED.
    enter_waiters: Vec<TaskId>,
    /// The sum of the per-CPU `read_count`s.
    readers: u32,
    /// Readers holding a declared instance, with when they took it (for
    /// `lock_stat` and the release check).
    holders: Vec<(TaskId, Nanos)>,
    /// A writer holds the lock (`sem->block`).
    block: bool,
    writer: TaskId,
    acquired_at: Nanos,
    write_waiters: VecDeque<TaskId>,
    read_waiters: Vec<TaskId>,
    /// The writer waiting for readers to drain.
    drain_waiter: TaskId,
}

impl PercpuRwsem {
    fn new(object: u32) -> Self {
        PercpuRwsem {
            object,
            gp_state: GpState::Idle,
            gp_count: 0,
            enter_waiters: Vec::new(),
            readers: 0,
            holders: Vec::new(),
            block: false,
            writer: NO_TASK,
            acquired_at: 0,
            write_waiters: VecDeque::new(),
            read_waiters: Vec::new(),
            drain_waiter: NO_TASK,
        }
    }

    fn declared(&self) -> bool {
        self.object != NO_OBJECT
    }
}

/// Builds `cpu_hotplug_lock`; returns its instance index.
pub(crate) fn new_hotplug_lock(o: &mut Objects) -> u32 {
    o.sleeping.push(Box::new(PercpuRwsem::new(NO_OBJECT)));
    (o.sleeping.len() - 1) as u32
}

/// Whether a scenario declares one (its writers need RCU's grace periods).
pub(crate) fn declared_in(spec: &crate::Spec) -> bool {
    spec.objects
        .iter()
        .any(|o| super::sleeping::kind_of(&o.kind).is_some_and(|k| k.id == KIND.id))
}

pub(crate) struct PercpuRwsemKind;

fn sem(o: &mut Objects, l: u32) -> &mut PercpuRwsem {
    o.sleeping[l as usize]
        .downcast_mut::<PercpuRwsem>()
        .expect("a percpu_rw_semaphore instance")
}

fn sem_ref(o: &Objects, l: u32) -> &PercpuRwsem {
    o.sleeping[l as usize]
        .downcast_ref::<PercpuRwsem>()
        .expect("a percpu_rw_semaphore instance")
}

impl SleepingLock for PercpuRwsemKind {
    fn build(&self, o: &mut Objects, b: &Build) -> usize {
        let base = o.sleeping.len();
        for _ in 0..b.n {
            o.sleeping.push(Box::new(PercpuRwsem::new(b.object)));
        }
        base
    }

    fn object(&self, o: &Objects, l: u32) -> u32 {
        sem_ref(o, l).object
    }

    fn line_transfers(&self, _: &Objects, _: usize, _: usize) -> u64 {
        0
    }

    fn has_read_side(&self) -> bool {
        true
    }

    fn lock_fn(&self, mode: LockMode) -> String {
        match mode {
            LockMode::Read => "percpu_down_read",
            _ => "percpu_down_write",
        }
        .to_string()
    }
}

impl<K: LockingEnv> SleepingLockOps<K> for PercpuRwsemKind {
    fn lock(&self, k: &mut K, c: u32, t: TaskId, l: u32, mode: LockMode, step: Option<u8>) -> Flow {
        match mode {
            LockMode::Read => down_read(k, c, t, l, step.is_some()),
            _ => down_write(k, c, t, l, step),
        }
    }

    fn unlock(&self, k: &mut K, c: u32, t: TaskId, l: u32, mode: LockMode) -> Flow {
        match mode {
            LockMode::Read => up_read(k, c, t, l),
            _ => up_write(k, c, t, l),
        }
        Flow::Next
    }

    fn spin_finished(&self, _: &mut K, _: u32, _: TaskId, _: u32) -> bool {
        // Nobody spins on a percpu_rw_semaphore: waiters sleep.
        true
    }
}

fn sleep_at<K: LockingEnv>(k: &mut K, c: u32, t: TaskId, step: u8) -> Flow {
    k.sleep_until_woken(c, t, Resume::Lock(step))
}

/// `percpu_down_read()`; `woken`: again after sleeping behind a writer.
fn down_read<K: LockingEnv>(k: &mut K, c: u32, t: TaskId, l: u32, woken: bool) -> Flow {
    let now = k.now();
    let s = sem(&mut k.locking_mut().objects, l);
    // Fast path while the rcu_sync is idle; slow path checks `block`.
    if s.gp_state == GpState::Idle || !s.block {
        s.readers += 1;
        if s.declared() {
            let object = s.object;
            s.holders.push((t, now));
            // A wait only for a reader that slept (and was counted as a
            // contention then).
            let waited =
                woken.then(|| now.saturating_sub(k.tasks_mut()[t as usize].wait.wait_start));
            k.metrics_mut().lock_acquired_mode(
                now,
                object,
                LockCpu::new(l, c),
                LockMode::Read,
                waited,
            );
        }
        k.advance(t);
        return Flow::Next;
    }
    // Sleep until the writer is done, then try again from the start.
    s.read_waiters.push(t);
    if s.declared() {
        let object = s.object;
        k.tasks_mut()[t as usize].wait.wait_start = now;
        k.metrics_mut()
            .lock_contended_mode(now, object, LockCpu::new(l, c), LockMode::Read);
    }
    sleep_at(k, c, t, step::READ_AGAIN)
}

/// `percpu_up_read()`.
fn up_read<K: LockingEnv>(k: &mut K, c: u32, t: TaskId, l: u32) {
    let now = k.now();
    let s = sem(&mut k.locking_mut().objects, l);
    if s.declared() {
        let object = s.object;
        let Some(i) = s.holders.iter().position(|h| h.0 == t) else {
            let (name, lock) = (
                k.task_name(t),
                k.spec().objects[object as usize].name.clone(),
            );
            k.metrics_mut()
                .bad_unlock(c, now, &name, "percpu_up_read", &lock);
            k.advance(t);
            return;
        };
        let (_, since) = s.holders.swap_remove(i);
        k.metrics_mut()
            .lock_released_mode(now, object, LockMode::Read, now - since);
    }
    let s = sem(&mut k.locking_mut().objects, l);
    s.readers = s.readers.saturating_sub(1);
    if s.readers == 0 && s.drain_waiter != NO_TASK {
        let w = std::mem::replace(&mut s.drain_waiter, NO_TASK);
        k.wake_up(w, c);
    }
    k.advance(t);
}

/// Writer `t` waits in `wait` (for a grace period, the writer before it,
/// or the readers' drain). Its first wait (`first`) is where lock_stat
/// counts the contention, and the wait is timed from there (when it called
/// `percpu_down_write()`: it waits at once or not at all) across every
/// sleep until it holds the lock.
fn writer_waits<K: LockingEnv>(
    k: &mut K,
    c: u32,
    t: TaskId,
    l: u32,
    first: bool,
    wait: impl FnOnce(&mut K) -> Flow,
) -> Flow {
    let s = sem(&mut k.locking_mut().objects, l);
    if !s.declared() {
        return wait(k);
    }
    let object = s.object;
    if first {
        let now = k.now();
        k.metrics_mut()
            .lock_contended_mode(now, object, LockCpu::new(l, c), LockMode::Write);
    }
    let wait_start = k.tasks_mut()[t as usize].wait.wait_start;
    let flow = wait(k);
    // Keep the lock-wait start, not the sleep start, for lock_stat.
    k.tasks_mut()[t as usize].wait.wait_start = wait_start;
    flow
}

/// `percpu_down_write()`, from the start (`step` none) or continued.
fn down_write<K: LockingEnv>(k: &mut K, c: u32, t: TaskId, l: u32, step: Option<u8>) -> Flow {
    let now = k.now();
    // Not the first call: the writer waited (see `writer_waits()`).
    let first = step.is_none();
    let mut step = step;
    if step.is_none() {
        if sem(&mut k.locking_mut().objects, l).declared() {
            k.tasks_mut()[t as usize].wait.wait_start = now;
        }
        // rcu_sync_enter()
        let s = sem(&mut k.locking_mut().objects, l);
        let state = s.gp_state;
        s.gp_count += 1;
        if state == GpState::Idle {
            s.gp_state = GpState::Enter;
            k.tasks_mut()[t as usize].resume = Resume::Lock(step::AFTER_GP);
            return writer_waits(k, c, t, l, first, |k| {
                k.synchronize_rcu(c, t, false);
                Flow::Stop
            });
        }
        if state == GpState::Enter {
            s.enter_waiters.push(t);
            return writer_waits(k, c, t, l, first, |k| sleep_at(k, c, t, step::TAKE));
        }
        step = Some(step::TAKE);
    }
    if step == Some(step::AFTER_GP) {
        // The synchronous rcu_sync_func(): GP_ENTER -> GP_PASSED.
        let s = sem(&mut k.locking_mut().objects, l);
        if s.gp_state == GpState::Enter {
            s.gp_state = GpState::Passed;
        }
        let waiters = std::mem::take(&mut s.enter_waiters);
        for w in waiters {
            k.wake_up(w, c);
        }
        step = Some(step::TAKE);
    }
    if step == Some(step::TAKE) {
        let s = sem(&mut k.locking_mut().objects, l);
        if s.block {
            s.write_waiters.push_back(t);
            return writer_waits(k, c, t, l, first, |k| sleep_at(k, c, t, step::TAKE));
        }
        s.block = true;
        s.writer = t;
        if s.readers > 0 {
            s.drain_waiter = t;
            return writer_waits(k, c, t, l, first, |k| sleep_at(k, c, t, step::DRAINED));
        }
    }
    let s = sem(&mut k.locking_mut().objects, l);
    s.acquired_at = now;
    if s.declared() {
        let object = s.object;
        // A writer that waited at all (a grace period, another writer, the
        // readers' drain) was contended at its first wait.
        let waited = (!first).then(|| now - k.tasks_mut()[t as usize].wait.wait_start);
        k.metrics_mut().lock_acquired_mode(
            now,
            object,
            LockCpu::new(l, c),
            LockMode::Write,
            waited,
        );
    }
    k.advance(t);
    Flow::Next
}

/// `percpu_up_write()`.
fn up_write<K: LockingEnv>(k: &mut K, c: u32, t: TaskId, l: u32) {
    let now = k.now();
    let s = sem(&mut k.locking_mut().objects, l);
    if s.declared() {
        let object = s.object;
        if !s.block || s.writer != t {
            let (name, lock) = (
                k.task_name(t),
                k.spec().objects[object as usize].name.clone(),
            );
            k.metrics_mut()
                .bad_unlock(c, now, &name, "percpu_up_write", &lock);
            k.advance(t);
            return;
        }
        let held = now - s.acquired_at;
        k.metrics_mut()
            .lock_released_mode(now, object, LockMode::Write, held);
    }
    let s = sem(&mut k.locking_mut().objects, l);
    s.block = false;
    s.writer = NO_TASK;
    let readers = std::mem::take(&mut s.read_waiters);
    let writer = s.write_waiters.pop_front();
    // rcu_sync_exit()
    s.gp_count -= 1;
    let mut queue_cb = false;
    if s.gp_count == 0 {
        match s.gp_state {
            GpState::Passed => {
                s.gp_state = GpState::Exit;
                queue_cb = true;
            }
            GpState::Exit => s.gp_state = GpState::Replay,
            _ => {}
        }
    }
    for r in readers {
        if k.tasks_mut()[r as usize].state == TaskState::Sleeping {
            k.wake_up(r, c);
        }
    }
    if let Some(w) = writer {
        k.wake_up(w, c);
    }
    if queue_cb {
        k.call_rcu(c, RcuCallback::RcuSync { sem: l });
    }
    k.advance(t);
}

/// `percpu_rw_semaphore`'s `rcu_sync` step RCU calls back into (over any
/// [`LockingEnv`]).
pub(crate) trait PercpuRwsemOps: LockingEnv {
    /// `rcu_sync_func()` of instance `l`, a grace period after
    /// `rcu_sync_exit()`.
    fn rcu_sync_func(&mut self, l: u32) {
        let s = sem(&mut self.locking_mut().objects, l);
        if s.gp_count > 0 {
            s.gp_state = GpState::Passed;
            let waiters = std::mem::take(&mut s.enter_waiters);
            for w in waiters {
                self.wake_up(w, crate::sched::FROM_SOFTIRQ);
            }
        } else if s.gp_state == GpState::Replay {
            s.gp_state = GpState::Exit;
            self.call_rcu(0, RcuCallback::RcuSync { sem: l });
        } else {
            s.gp_state = GpState::Idle;
        }
    }
}

impl<K: LockingEnv> PercpuRwsemOps for K {}
