//! Waking an rwsem's waiters: `rwsem_wake()` and `rwsem_mark_wake()`
//! (kernel/locking/rwsem.c), under `wait_lock`: on the rwsem's line, or
//! on `wait_lock`'s when the struct straddles two.

use super::{table, table_ref, RwsemOps, WakeType, MAX_READERS_WAKEUP};
use crate::locking::LockingEnv;
use crate::program::LockMode;
use crate::task::*;
use smpsim_engine::Nanos;

/// `rwsem_wake()` and `rwsem_mark_wake()` (over any [`LockingEnv`]).
pub(crate) trait RwsemWake: LockingEnv {
    /// `wait_lock`, `rwsem_mark_wake()`, unlock, `wake_up_q()`, from CPU `c`
    /// starting at `at`; returns when it is done.
    fn rwsem_wake(&mut self, c: u32, s: u32, wake: WakeType, at: Nanos) -> Nanos {
        let p = self.locking_parts();
        let mut locked = table(&mut p.locking.objects).all[s as usize]
            .wait_lock()
            .rmw(p.cost, c, at);
        let readers = table_ref(&self.locking().objects).all[s as usize]
            .readers
            .len();
        let woken = self.rwsem_mark_wake(c, s, wake);
        let p = self.locking_parts();
        let sem = &mut table(&mut p.locking.objects).all[s as usize];
        if sem.readers.len() > readers {
            // rwsem_mark_wake() granted readers: the atomic_long_add() of
            // their bias to `count`, and `owner`.
            locked = sem.count_under_wait_lock(p.cost, c, locked);
        }
        let unlocked = sem.wait_lock().store(p.cost, c, locked);
        unlocked + woken as u64 * self.cost().wakeup
    }

    /// `rwsem_cond_wake_waiter()`: after queueing, wake whom the current
    /// `count` allows.
    fn rwsem_cond_wake_waiter(&mut self, c: u32, s: u32) {
        let sem = &mut table(&mut self.locking_mut().objects).all[s as usize];
        if sem.writer != NO_TASK {
            return;
        }
        let wake = if sem.readers.is_empty() {
            sem.nonspinnable = false;
            WakeType::Any
        } else {
            WakeType::Readers
        };
        self.rwsem_mark_wake(c, s, wake);
    }

    /// `rwsem_mark_wake()`: wake the writer at the head (for
    /// `RWSEM_WAKE_ANY`), or grant the queued readers (up to
    /// `MAX_READERS_WAKEUP`, skipping writers) and wake them. Returns how
    /// many were woken.
    fn rwsem_mark_wake(&mut self, c: u32, s: u32, wake: WakeType) -> usize {
        let now = self.now();
        let sem = &mut table(&mut self.locking_mut().objects).all[s as usize];
        let Some(&head) = sem.waiters.front() else {
            return 0;
        };
        if head.mode != LockMode::Read {
            if wake == WakeType::Any
                && self.tasks_mut()[head.task as usize].state == TaskState::Sleeping
            {
                self.wake_up(head.task, c);
                return 1;
            }
            return 0;
        }
        if wake != WakeType::ReadOwned && sem.writer != NO_TASK {
            // A writer stole it first: ask for a handoff once the reader
            // at the head has waited too long.
            if now >= head.timeout && !sem.handoff {
                sem.handoff = true;
                let object = sem.object;
                self.metrics_mut().lock_handoff(now, object);
            }
            return 0;
        }
        let mut woken = 0;
        let mut i = 0;
        while i < table(&mut self.locking_mut().objects).all[s as usize]
            .waiters
            .len()
            && woken < MAX_READERS_WAKEUP
        {
            let w = table(&mut self.locking_mut().objects).all[s as usize].waiters[i];
            if w.mode != LockMode::Read {
                i += 1;
                continue;
            }
            table(&mut self.locking_mut().objects).all[s as usize]
                .waiters
                .remove(i);
            self.rwsem_granted(w.task, s, LockMode::Read, now, true);
            if self.tasks_mut()[w.task as usize].state == TaskState::Sleeping {
                self.wake_up(w.task, c);
            }
            woken += 1;
        }
        if woken > 0 {
            table(&mut self.locking_mut().objects).all[s as usize].handoff = false;
        }
        woken
    }
}

impl<K: LockingEnv> RwsemWake for K {}
