//! `cpu_hotplug_lock`: a percpu-rwsem (kernel/locking/percpu-rwsem.c) with
//! its `rcu_sync` (kernel/rcu/sync.c).
//!
//! Readers (`cpus_read_lock()`) take a per-CPU count on the fast path while
//! the `rcu_sync` is idle; otherwise they check `block` and sleep while a
//! writer holds the lock. A writer (`cpus_write_lock()`) first calls
//! `rcu_sync_enter()`: from GP_IDLE it waits for a full grace period
//! (`synchronize_rcu()`, so expedited under `rcu_expedite_gp()`); from
//! GP_PASSED, GP_EXIT or GP_REPLAY it does not wait at all. It then sets
//! `block` and waits for the readers to drain. `cpus_write_unlock()` clears
//! `block`, wakes the waiters and calls `rcu_sync_exit()`, which leaves
//! GP_PASSED for GP_EXIT and queues `rcu_sync_func()` after a grace period
//! (GP_EXIT -> GP_IDLE, or GP_REPLAY -> GP_EXIT and another grace period,
//! or back to GP_PASSED if a writer came meanwhile).

use std::collections::VecDeque;

use crate::interp::Flow;
use crate::rcu::RcuCallback;
use crate::task::*;

/// `enum { GP_IDLE = 0, GP_ENTER, GP_PASSED, GP_EXIT, GP_REPLAY }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum GpState {
    Idle,
    Enter,
    Passed,
    Exit,
    Replay,
}

pub struct HotplugLock {
    pub gp_state: GpState,
    pub gp_count: u32,
    /// Writers that found GP_ENTER and wait for GP_PASSED.
    enter_waiters: Vec<TaskId>,
    pub readers: u32,
    /// A writer holds the lock (`sem->block`).
    pub block: bool,
    write_waiters: VecDeque<TaskId>,
    read_waiters: Vec<TaskId>,
    /// The writer waiting for readers to drain.
    drain_waiter: TaskId,
    /// Grace periods writers waited for in `rcu_sync_enter()`.
    pub enter_gps: u64,
    pub enter_skips: u64,
}

impl Default for HotplugLock {
    fn default() -> Self {
        HotplugLock {
            gp_state: GpState::Idle,
            gp_count: 0,
            enter_waiters: Vec::new(),
            readers: 0,
            block: false,
            write_waiters: VecDeque::new(),
            read_waiters: Vec::new(),
            drain_waiter: NO_TASK,
            enter_gps: 0,
            enter_skips: 0,
        }
    }
}

impl crate::Kernel<'_> {
    fn sleep_at(&mut self, c: u32, t: TaskId, step: CpusWriteLockStep) -> Flow {
        self.sleep_until_woken(c, t, Resume::CpusWriteLock(step))
    }

    /// `cpus_write_lock()`, from the start (`step` none) or continued.
    pub(crate) fn cpus_write_lock(
        &mut self,
        c: u32,
        t: TaskId,
        step: Option<CpusWriteLockStep>,
    ) -> Flow {
        use CpusWriteLockStep::*;
        let mut step = step;
        if step.is_none() {
            // rcu_sync_enter()
            let lock = &mut self.hotplug_lock;
            let state = lock.gp_state;
            lock.gp_count += 1;
            if state == GpState::Idle {
                lock.gp_state = GpState::Enter;
                lock.enter_gps += 1;
                self.tasks[t as usize].resume = Resume::CpusWriteLock(AfterGp);
                self.synchronize_rcu(c, t, false);
                return Flow::Stop;
            }
            if state == GpState::Enter {
                lock.enter_waiters.push(t);
                return self.sleep_at(c, t, Take);
            }
            lock.enter_skips += 1;
            step = Some(Take);
        }
        if step == Some(AfterGp) {
            // The synchronous rcu_sync_func(): GP_ENTER -> GP_PASSED.
            let lock = &mut self.hotplug_lock;
            if lock.gp_state == GpState::Enter {
                lock.gp_state = GpState::Passed;
            }
            let waiters = std::mem::take(&mut lock.enter_waiters);
            for w in waiters {
                self.wake_up(w, c);
            }
            step = Some(Take);
        }
        if step == Some(Take) {
            let lock = &mut self.hotplug_lock;
            if lock.block {
                lock.write_waiters.push_back(t);
                return self.sleep_at(c, t, Take);
            }
            lock.block = true;
            if lock.readers > 0 {
                lock.drain_waiter = t;
                return self.sleep_at(c, t, Drained);
            }
        }
        self.advance(t);
        Flow::Next
    }

    /// `cpus_write_unlock()`.
    pub(crate) fn cpus_write_unlock(&mut self, c: u32, t: TaskId) {
        let lock = &mut self.hotplug_lock;
        lock.block = false;
        let readers = std::mem::take(&mut lock.read_waiters);
        let writer = lock.write_waiters.pop_front();
        // rcu_sync_exit()
        lock.gp_count -= 1;
        let mut queue_cb = false;
        if lock.gp_count == 0 {
            match lock.gp_state {
                GpState::Passed => {
                    lock.gp_state = GpState::Exit;
                    queue_cb = true;
                }
                GpState::Exit => lock.gp_state = GpState::Replay,
                _ => {}
            }
        }
        for r in readers {
            if self.tasks[r as usize].state == TaskState::Sleeping {
                self.wake_up(r, c);
            }
        }
        if let Some(w) = writer {
            self.wake_up(w, c);
        }
        if queue_cb {
            self.call_rcu(c, RcuCallback::RcuSync);
        }
        self.advance(t);
    }

    /// `rcu_sync_func()`, a grace period after `rcu_sync_exit()`.
    pub(crate) fn rcu_sync_func(&mut self) {
        let lock = &mut self.hotplug_lock;
        if lock.gp_count > 0 {
            lock.gp_state = GpState::Passed;
            let waiters = std::mem::take(&mut lock.enter_waiters);
            for w in waiters {
                self.wake_up(w, crate::sched::FROM_SOFTIRQ);
            }
        } else if lock.gp_state == GpState::Replay {
            lock.gp_state = GpState::Exit;
            self.call_rcu(0, RcuCallback::RcuSync);
        } else {
            lock.gp_state = GpState::Idle;
        }
    }

    /// `cpus_read_lock()`.
    pub(crate) fn cpus_read_lock(&mut self, c: u32, t: TaskId) -> Flow {
        let lock = &mut self.hotplug_lock;
        // Fast path while the rcu_sync is idle; slow path checks `block`.
        if lock.gp_state == GpState::Idle || !lock.block {
            lock.readers += 1;
            self.advance(t);
            return Flow::Next;
        }
        // Sleep until the writer is done, then try again from the start.
        lock.read_waiters.push(t);
        self.sleep_until_woken(c, t, Resume::Op)
    }

    /// `cpus_read_unlock()`.
    pub(crate) fn cpus_read_unlock(&mut self, c: u32, t: TaskId) {
        let lock = &mut self.hotplug_lock;
        lock.readers = lock.readers.saturating_sub(1);
        if lock.readers == 0 && lock.drain_waiter != NO_TASK {
            let w = std::mem::replace(&mut lock.drain_waiter, NO_TASK);
            self.wake_up(w, c);
        }
        self.advance(t);
    }
}
