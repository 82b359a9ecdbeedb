//! `struct rw_semaphore` (kernel/locking/rwsem.c), the sleeping side:
//! `down_read()`, `down_write()`, `up_read()`, `up_write()`.
//!
//! `count`, `owner`, `wait_lock` and the wait list share one cache line
//! here (they are within 40 bytes of each other in the struct), and every
//! step the kernel takes on them is a transaction on it:
//!
//! - the fast paths: `down_read()` adds `RWSEM_READER_BIAS` and keeps the
//!   lock if no writer holds it and nobody waits (`RWSEM_READ_FAILED_MASK`
//!   includes the waiters flag, so readers never overtake a queue);
//!   `down_write()` is a cmpxchg from 0;
//! - the slow paths take `wait_lock`, queue the task at the tail of the
//!   wait list and sleep (D state);
//! - `up_read()` by the last reader and `up_write()` with waiters take
//!   `wait_lock` for `rwsem_mark_wake()`: a writer at the head is woken to
//!   take the lock itself (it stays first in the queue, so later arrivals
//!   queue behind it); readers at the head are granted the lock there and
//!   then, with every other reader in the queue (up to
//!   `MAX_READERS_WAKEUP`), and each woken.
//!
//! Not modelled yet: optimistic spinning of writers on the OSQ (and of
//! readers before 5.11), the handoff bit after `RWSEM_WAIT_TIMEOUT`,
//! `downgrade_write()` and the trylock forms.

use std::collections::VecDeque;

use crate::coherence::Line;
use crate::interp::Flow;
use crate::program::LockMode;
use crate::task::*;

/// `MAX_READERS_WAKEUP` (kernel/locking/rwsem.c).
const MAX_READERS_WAKEUP: usize = 0x100;

pub struct Rwsem {
    /// The declared object this is an instance of.
    pub object: u32,
    /// Readers holding it (the reader count of `count`), each with when it
    /// took it.
    pub readers: Vec<(TaskId, u64)>,
    /// The writer holding it (`RWSEM_WRITER_LOCKED` and `owner`).
    pub writer: TaskId,
    /// The wait list, FIFO.
    pub waiters: VecDeque<(TaskId, LockMode)>,
    /// `count`, `owner`, `wait_lock` and `wait_list`.
    pub line: Line,
    /// When the writer took it (for lock_stat hold times).
    pub acquired_at: u64,
}

impl Rwsem {
    pub fn new(object: u32, nr_cpus: usize) -> Self {
        Rwsem {
            object,
            readers: Vec::new(),
            writer: NO_TASK,
            waiters: VecDeque::new(),
            line: Line::new(nr_cpus, 0),
            acquired_at: 0,
        }
    }

    fn free_for(&self, mode: LockMode) -> bool {
        self.writer == NO_TASK && (mode == LockMode::Read || self.readers.is_empty())
    }
}

impl crate::Kernel<'_> {
    /// `down_read()` / `down_write()` of instance `s`; `woken`: back from
    /// the wait list.
    pub(crate) fn rwsem_down(
        &mut self,
        c: u32,
        t: TaskId,
        s: u32,
        mode: LockMode,
        woken: bool,
    ) -> Flow {
        let now = self.now;
        if woken {
            if mode == LockMode::Read {
                // rwsem_mark_wake() granted it before waking us.
                self.advance(t);
                return Flow::Next;
            }
            // A woken writer tries again under wait_lock, still first in
            // the queue.
            let sem = &mut self.objects.rwsems[s as usize];
            let cost = sem.line.rmw(&self.cost, c, now) - now;
            self.tasks[t as usize].batch.push(Mode::Sys, cost);
            if !sem.free_for(LockMode::Write) {
                return self.sleep_until_woken(c, t, Resume::Rwsem);
            }
            sem.waiters.retain(|w| w.0 != t);
            self.rwsem_granted(t, s, mode, now + cost);
            self.advance(t);
            return Flow::Next;
        }
        let sem = &mut self.objects.rwsems[s as usize];
        // The fast path's atomic.
        let mut cost = sem.line.rmw(&self.cost, c, now) - now;
        if sem.waiters.is_empty() && sem.free_for(mode) {
            self.tasks[t as usize].wait.wait_start = now;
            self.rwsem_granted(t, s, mode, now + cost);
            self.tasks[t as usize].batch.push(Mode::Sys, cost);
            self.advance(t);
            return Flow::Next;
        }
        // The slow path: wait_lock, queue, sleep.
        cost = sem.line.rmw(&self.cost, c, now + cost) - now;
        sem.waiters.push_back((t, mode));
        let object = sem.object;
        self.metrics.lock_contended(now, object);
        self.tasks[t as usize].batch.push(Mode::Sys, cost);
        self.sleep_until_woken(c, t, Resume::Rwsem)
    }

    /// The lock is `t`'s in `mode` from `at`.
    fn rwsem_granted(&mut self, t: TaskId, s: u32, mode: LockMode, at: u64) {
        let sem = &mut self.objects.rwsems[s as usize];
        if mode == LockMode::Read {
            sem.readers.push((t, at));
        } else {
            sem.writer = t;
            sem.acquired_at = at;
        }
        let object = sem.object;
        let waited = at.saturating_sub(self.tasks[t as usize].wait.wait_start);
        self.metrics.lock_acquired(self.now, object, waited);
    }

    /// `up_read()` / `up_write()` of instance `s`.
    pub(crate) fn rwsem_up(&mut self, c: u32, t: TaskId, s: u32, mode: LockMode) {
        let now = self.now;
        let sem = &mut self.objects.rwsems[s as usize];
        // When this holder took it.
        let held = match mode {
            LockMode::Read => sem
                .readers
                .iter()
                .position(|r| r.0 == t)
                .map(|i| sem.readers.swap_remove(i).1),
            _ => (sem.writer == t).then(|| {
                sem.writer = NO_TASK;
                sem.acquired_at
            }),
        };
        let Some(since) = held else {
            let (object, name) = (sem.object, self.task_name(t));
            let lock = self.spec.objects[object as usize].name.clone();
            let op = if mode == LockMode::Read {
                "up_read"
            } else {
                "up_write"
            };
            self.metrics.bad_unlock(c, now, &name, op, &lock);
            self.advance(t);
            return;
        };
        let mut cost = sem.line.rmw(&self.cost, c, now) - now;
        let (object, hold) = (sem.object, now.saturating_sub(since));
        let wake = !sem.waiters.is_empty() && sem.readers.is_empty();
        self.metrics.lock_released(now, object, hold);
        if wake {
            // rwsem_wake(): wait_lock, rwsem_mark_wake().
            let sem = &mut self.objects.rwsems[s as usize];
            cost = sem.line.rmw(&self.cost, c, now + cost) - now;
            let woken = self.rwsem_mark_wake(c, s);
            cost += woken as u64 * self.cost.wakeup;
        }
        self.tasks[t as usize].batch.push(Mode::Sys, cost);
        self.advance(t);
    }

    /// `rwsem_mark_wake()`: wake the writer at the head, or grant every
    /// queued reader (up to `MAX_READERS_WAKEUP`) and wake them. Returns
    /// how many were woken.
    fn rwsem_mark_wake(&mut self, c: u32, s: u32) -> usize {
        let sem = &mut self.objects.rwsems[s as usize];
        let Some(&(head, head_mode)) = sem.waiters.front() else {
            return 0;
        };
        if head_mode != LockMode::Read {
            if self.tasks[head as usize].state == TaskState::Sleeping {
                self.wake_up(head, c);
            }
            return 1;
        }
        let mut readers = Vec::new();
        sem.waiters.retain(|&(w, m)| {
            if m == LockMode::Read && readers.len() < MAX_READERS_WAKEUP {
                readers.push(w);
                false
            } else {
                true
            }
        });
        for &r in &readers {
            self.rwsem_granted(r, s, LockMode::Read, self.now);
            if self.tasks[r as usize].state == TaskState::Sleeping {
                self.wake_up(r, c);
            }
        }
        readers.len()
    }
}
