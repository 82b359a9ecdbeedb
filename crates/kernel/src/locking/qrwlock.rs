//! `rwlock_t` as mainline has it: the queued rwlock
//! (kernel/locking/qrwlock.c, include/asm-generic/qrwlock.h).
//!
//! The lock is a word `cnts` (reader count and writer byte) plus a
//! `wait_lock` (an `arch_spinlock_t`) that orders the slow paths FIFO.
//!
//! - `read_lock()`: `atomic_add_return_acquire(_QR_BIAS, &cnts)`; done if
//!   no writer holds or waits (`_QW_WMASK`). Otherwise undo the bias,
//!   queue on `wait_lock`, add the bias again and spin until the writer
//!   byte clears (`atomic_cond_read_acquire(&cnts, !(VAL & _QW_LOCKED))`),
//!   then release `wait_lock` so the next queued task goes.
//! - `write_lock()`: `cmpxchg(&cnts, 0, _QW_LOCKED)`; otherwise queue on
//!   `wait_lock`, set `_QW_WAITING` (new readers stay out), and spin until
//!   `cnts == _QW_WAITING`, then `cmpxchg` it to `_QW_LOCKED`.
//! - `read_unlock()`: `atomic_sub_return_release(_QR_BIAS)`;
//!   `write_unlock()`: `smp_store_release(&wlocked, 0)`.
//!
//! Only the task at the head of the wait queue polls `cnts`; the others
//! wait their turn on the `wait_lock` queue. Readers queued behind a
//! writer go in one after another as `wait_lock` passes between them.

use std::collections::VecDeque;

use smpsim_engine::Nanos;

use super::{Env, LockKindInfo, SpinningLock, Taker};
use crate::coherence::{Line, LineHome};
use crate::program::LockMode;
use crate::task::TaskId;

pub const KIND: LockKindInfo = LockKindInfo {
    id: 7,
    name: "qrwlock",
    object_type: "rwlock",
    default: true,
    options: &[],
    summary: "queued rwlock: reader count and writer byte, a FIFO wait queue for the slow paths (mainline)",
    new: |_, at| Box::new(Qrwlock::new(at)),
};

pub struct Qrwlock {
    cnts: Line,
    wait_lock: Line,
    readers: Vec<TaskId>,
    writer: Option<TaskId>,
    /// `_QW_WAITING`: the queue head is a writer waiting for readers to leave.
    writer_waiting: bool,
    /// Tasks queued on `wait_lock`, head first; the head polls `cnts`.
    queue: VecDeque<Taker>,
}

impl Qrwlock {
    pub fn new(at: LineHome) -> Self {
        Qrwlock {
            cnts: Line::at(at),
            wait_lock: Line::at(at),
            readers: Vec::new(),
            writer: None,
            writer_waiting: false,
            queue: VecDeque::new(),
        }
    }

    /// `me` queues on `wait_lock` at `at`; a new head starts polling `cnts`.
    fn enqueue(&mut self, env: &mut Env, me: Taker, at: Nanos) {
        let queued = self.wait_lock.rmw(env.cost, me.cpu, at);
        self.queue.push_back(me);
        if self.queue.len() == 1 {
            self.become_head(env, me, queued);
        }
    }

    fn become_head(&mut self, env: &mut Env, head: Taker, at: Nanos) {
        let cost = env.cost;
        let at = match head.mode {
            // Readers re-add their bias before waiting for the writer.
            LockMode::Read => self.cnts.rmw(cost, head.cpu, at),
            _ => {
                // A writer that cannot take it at once sets _QW_WAITING.
                self.writer_waiting = true;
                self.cnts.rmw(cost, head.cpu, at)
            }
        };
        self.cnts.poll(cost, head.cpu, at);
        self.advance(env, at);
    }

    /// Lets the queue head in while it can, at or after `at`.
    fn advance(&mut self, env: &mut Env, at: Nanos) {
        let cost = env.cost;
        let Some(&head) = self.queue.front() else {
            return;
        };
        let seen = self.cnts.seen_at(head.cpu).unwrap_or(at).max(at);
        let got = match head.mode {
            LockMode::Read if self.writer.is_none() => {
                self.readers.push(head.task);
                seen
            }
            LockMode::Write if self.writer.is_none() && self.readers.is_empty() => {
                self.writer_waiting = false;
                let got = self.cnts.rmw(cost, head.cpu, seen);
                self.writer = Some(head.task);
                got
            }
            _ => return,
        };
        self.cnts.unpoll(head.cpu);
        self.queue.pop_front();
        env.grants.push((head.task, head.mode, got));
        // arch_spin_unlock(&lock->wait_lock): the next queued task is head.
        let passed = self.wait_lock.store(cost, head.cpu, got);
        if let Some(&next) = self.queue.front() {
            let at = passed + cost.line_transfer(head.cpu, next.cpu);
            self.become_head(env, next, at);
        }
    }
}

impl SpinningLock for Qrwlock {
    fn lock(&mut self, env: &mut Env, me: Taker) -> Option<Nanos> {
        let cost = env.cost;
        let done = self.cnts.rmw(cost, me.cpu, env.now);
        match me.mode {
            LockMode::Read => {
                if self.writer.is_none() && !self.writer_waiting {
                    self.readers.push(me.task);
                    return Some(done);
                }
                // Undo the bias, then queue.
                let undone = self.cnts.rmw(cost, me.cpu, done);
                self.enqueue(env, me, undone);
            }
            _ => {
                if self.writer.is_none()
                    && !self.writer_waiting
                    && self.readers.is_empty()
                    && self.queue.is_empty()
                {
                    self.writer = Some(me.task);
                    return Some(done);
                }
                self.enqueue(env, me, done);
            }
        }
        None
    }

    fn unlock(&mut self, env: &mut Env, me: Taker) -> Nanos {
        let cost = env.cost;
        let released = match me.mode {
            LockMode::Read => {
                let i = self.readers.iter().position(|&r| r == me.task);
                debug_assert!(i.is_some(), "read_unlock by a non-reader");
                if let Some(i) = i {
                    self.readers.swap_remove(i);
                }
                self.cnts.rmw(cost, me.cpu, env.now)
            }
            _ => {
                debug_assert_eq!(self.writer, Some(me.task));
                self.writer = None;
                self.cnts.store(cost, me.cpu, env.now)
            }
        };
        self.advance(env, released);
        released
    }

    /// Readers share it; the writer is reported through `holds`.
    fn owner(&self) -> Option<Taker> {
        None
    }

    fn word(&self) -> &Line {
        &self.cnts
    }

    fn word_mut(&mut self) -> &mut Line {
        &mut self.cnts
    }

    fn holds(&self, task: TaskId, mode: LockMode) -> bool {
        match mode {
            LockMode::Read => self.readers.contains(&task),
            LockMode::Write => self.writer == Some(task),
            LockMode::Exclusive => false,
        }
    }

    fn line_stats(&self) -> (u64, u64) {
        (
            self.cnts.rmws + self.wait_lock.rmws,
            self.cnts.transfers + self.wait_lock.transfers,
        )
    }
}
