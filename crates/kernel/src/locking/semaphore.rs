//! Counting semaphores: the shape of a pipe or futex handoff. `down()`
//! takes a token or sleeps for one (FIFO); `up()` hands a token to the
//! first sleeper, waking it, or keeps it. Both are an RMW on the
//! semaphore's line.

use std::collections::VecDeque;

use crate::coherence::Line;
use crate::interp::Flow;
use crate::task::*;

pub struct Semaphore {
    pub count: u32,
    pub waiters: VecDeque<TaskId>,
    pub line: Line,
}

impl crate::Kernel<'_> {
    /// `down()`; `woken`: back with a token handed over by `up()`.
    pub(crate) fn down(&mut self, c: u32, t: TaskId, s: u32, woken: bool) -> Flow {
        if woken {
            self.advance(t);
            return Flow::Next;
        }
        let now = self.now;
        let sem = &mut self.objects.semaphores[s as usize];
        let cost = sem.line.rmw(&self.cost, c, now) - now;
        if sem.count > 0 {
            sem.count -= 1;
            self.tasks[t as usize].batch.push(Mode::Sys, cost);
            self.advance(t);
            return Flow::Next;
        }
        sem.waiters.push_back(t);
        self.sleep_until_woken(c, t, Resume::Down)
    }

    /// `up()`.
    pub(crate) fn up(&mut self, c: u32, t: TaskId, s: u32) {
        let now = self.now;
        let sem = &mut self.objects.semaphores[s as usize];
        let mut cost = sem.line.rmw(&self.cost, c, now) - now;
        match sem.waiters.pop_front() {
            Some(w) => {
                self.wake_up(w, c);
                cost += self.cost.wakeup;
            }
            None => sem.count += 1,
        }
        self.tasks[t as usize].batch.push(Mode::Sys, cost);
        self.advance(t);
    }
}
