//! `spinlock_t` (kernel/locking/qspinlock.c, as the model sees it):
//! `spin_lock()` disables preemption, `spin_lock_irqsave()` also IRQs;
//! a taken lock is waited for by spinning, waiters queue FIFO (the MCS
//! queue of qspinlock) and `spin_unlock()` passes the lock to the head of
//! the queue one cache-line transfer later. The whole wait and hold is a
//! preempt-disabled (and with irqsave, IRQ-disabled) section: what the
//! preemptirq tracers see as lock contention.

use std::collections::VecDeque;

use crate::event::Event;
use crate::interp::Flow;
use crate::task::*;

pub struct Spinlock {
    pub object: u32,
    pub owner: TaskId,
    /// The cache line of the lock word.
    pub word: crate::coherence::Line,
    pub waiters: VecDeque<TaskId>,
    pub acquired_at: u64,
}

impl Spinlock {
    pub fn new(object: u32, nr_cpus: usize) -> Self {
        Spinlock {
            object,
            owner: NO_TASK,
            word: crate::coherence::Line::new(nr_cpus, 0),
            waiters: VecDeque::new(),
            acquired_at: 0,
        }
    }
}

impl crate::Kernel<'_> {
    /// Makes `t` the owner of spinlock `l` at `at`.
    fn spin_take(&mut self, t: TaskId, l: u32, at: u64) {
        let now = self.now;
        let lock = &mut self.spinlocks[l as usize];
        lock.owner = t;
        lock.acquired_at = at;
        let waited = at - self.tasks[t as usize].wait_start;
        if self.metrics.measuring(now) {
            let stat = &mut self.metrics.locks[lock.object as usize];
            stat.acquisitions += 1;
            stat.wait_total_ns += waited;
            stat.wait_max_ns = stat.wait_max_ns.max(waited);
        }
    }

    /// `spin_lock()` / `spin_lock_irqsave()`.
    pub(crate) fn spin_lock(&mut self, c: u32, t: TaskId, l: u32, irqsave: bool) -> Flow {
        if irqsave {
            // local_irq_save(): remember whether IRQs were already off.
            let task = &mut self.tasks[t as usize];
            if task.irqs_off {
                task.irq_saved |= 1 << task.irq_depth;
            } else {
                task.irq_saved &= !(1 << task.irq_depth);
            }
            task.irq_depth += 1;
            task.irqs_off = true;
            self.irq_off_begin(c);
        }
        self.preempt_disable(t);
        self.tasks[t as usize].wait_start = self.now;
        let lock = &self.spinlocks[l as usize];
        if lock.owner == NO_TASK {
            let now = self.now;
            let cost = self.spinlocks[l as usize].word.rmw(&self.cost, c, now) - now;
            self.spin_take(t, l, self.now + cost);
            self.tasks[t as usize].batch.push(Mode::Sys, cost);
            self.advance(t);
            return Flow::Next;
        }
        if self.metrics.measuring(self.now) {
            self.metrics.locks[lock.object as usize].contentions += 1;
        }
        self.spinlocks[l as usize].waiters.push_back(t);
        let task = &mut self.tasks[t as usize];
        task.gen = task.gen.wrapping_add(1);
        task.spin = Spin::SpinLock { lock: l };
        task.spin_done = false;
        Flow::Stop
    }

    /// `spin_unlock()` / `spin_unlock_irqrestore()`.
    pub(crate) fn spin_unlock(&mut self, c: u32, t: TaskId, l: u32, irqrestore: bool) -> Flow {
        let now = self.now;
        let lock = &mut self.spinlocks[l as usize];
        debug_assert_eq!(lock.owner, t, "spin_unlock by non-owner");
        let held = now.saturating_sub(lock.acquired_at);
        if self.metrics.measuring(now) {
            let stat = &mut self.metrics.locks[lock.object as usize];
            stat.hold_total_ns += held;
            stat.hold_max_ns = stat.hold_max_ns.max(held);
        }
        // The unlock store, then the head waiter's RMW pulls the line over.
        let released = lock.word.rmw(&self.cost, c, now);
        self.tasks[t as usize].batch.push(Mode::Sys, released - now);
        match lock.waiters.pop_front() {
            Some(next) => {
                let nc = self.tasks[next as usize].cpu;
                let seen = self.spinlocks[l as usize]
                    .word
                    .rmw(&self.cost, nc, released);
                self.spin_take(next, l, seen);
                let gen = self.tasks[next as usize].gen;
                self.at(seen, Event::SpinEnd { task: next, gen });
            }
            None => self.spinlocks[l as usize].owner = NO_TASK,
        }
        self.advance(t);
        if irqrestore {
            // local_irq_restore(): back to the state saved at lock time.
            let task = &mut self.tasks[t as usize];
            task.irq_depth = task.irq_depth.saturating_sub(1);
            task.irqs_off = task.irq_saved & (1 << task.irq_depth) != 0;
            if !task.irqs_off {
                self.irq_off_end(c);
            }
        }
        let resched = self.preempt_enable(t);
        if irqrestore && !self.tasks[t as usize].irqs_off && self.cpus[c as usize].has_pending_irq()
        {
            self.enter_irq(c);
            return Flow::Stop;
        }
        if resched {
            self.schedule(c);
            return Flow::Stop;
        }
        Flow::Next
    }
}
