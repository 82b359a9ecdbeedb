//! An rwsem's optimistic spinning (`rwsem_optimistic_spin()`,
//! kernel/locking/rwsem.c): the OSQ, its head watching the owner, and what
//! ends a spin (the release, the owner leaving its CPU, `need_resched()`).

use super::{rspin_threshold, table, table_ref, RwsemOps, RwsemStep, KIND};
use crate::event::*;
use crate::locking::LockingEnv;
use crate::mechanism::Flow;
use crate::program::LockMode;
use crate::task::*;
use smpsim_engine::Nanos;

/// An rwsem's optimistic spinning (over any [`LockingEnv`]).
pub(crate) trait RwsemSpin: LockingEnv {
    /// `rwsem_optimistic_spin()` begins: `osq_lock()` at `at`.
    fn rwsem_optimistic_spin(&mut self, t: TaskId, s: u32, at: Nanos) {
        let c = self.tasks_mut()[t as usize].cpu;
        let p = self.locking_parts();
        let sem = &mut table(&mut p.locking.objects).all[s as usize];
        let queued = sem.line.rmw(p.cost, c, at);
        let head = sem.osq.lock(t);
        self.preempt_disable(t);
        let task = &mut self.tasks_mut()[t as usize];
        task.wait.spin = Spin::Sleeping {
            kind: KIND.id,
            lock: s,
            how: SpinHow::Queued,
        };
        task.wait.spin_done = false;
        task.wait.spin_abort = false;
        task.gen = task.gen.wrapping_add(1);
        if head {
            self.rwsem_watch(t, s, queued);
        }
    }

    /// The OSQ head `t` looks at the owner from `at`: takes the lock if it
    /// can, spins on a running writer or (a writer) on readers for a
    /// bounded time, or gives up.
    fn rwsem_watch(&mut self, t: TaskId, s: u32, at: Nanos) {
        let c = self.tasks_mut()[t as usize].cpu;
        let at = at.max(self.now());
        let mode = self.rwsem_wanted_mode(t);
        let sem = &table_ref(&self.locking().objects).all[s as usize];
        if sem.nonspinnable_for(mode) {
            // rwsem_spin_on_owner() returns OWNER_NONSPINNABLE first, even
            // if the lock is free: break out and queue.
            self.rwsem_spin_abort(t, 0);
            return;
        }
        if sem.free_for(mode) {
            // rwsem_try_{write,read}_lock_unqueued() succeeds.
            self.rwsem_grant_to_spinner(t, s, mode, at);
            return;
        }
        let writer_runs =
            sem.writer != NO_TASK && self.tasks()[sem.writer as usize].state == TaskState::Running;
        let reader_owned = sem.writer == NO_TASK;
        let spinnable = !sem.handoff && (writer_runs || (reader_owned && mode == LockMode::Write));
        if !spinnable {
            self.rwsem_spin_abort(t, 0);
            return;
        }
        let readers = sem.readers.len();
        let owner_cpu = (sem.writer != NO_TASK).then(|| self.tasks()[sem.writer as usize].cpu);
        let p = self.locking_parts();
        let mut ready = table(&mut p.locking.objects).all[s as usize]
            .line
            .poll(p.cost, c, at);
        if let Some(oc) = owner_cpu {
            // owner_on_cpu(owner): the owner's task_struct, one read.
            ready += self.cost().line_transfer(oc, c);
        }
        let task = &mut self.tasks_mut()[t as usize];
        task.wait.spin = Spin::Sleeping {
            kind: KIND.id,
            lock: s,
            how: SpinHow::OnOwner,
        };
        task.wait.spin_ready = ready;
        if reader_owned {
            // The reader-owned spin ends at rwsem_rspin_threshold().
            let gen = task.gen;
            self.at(
                at + rspin_threshold(readers),
                Event::Sched(SchedEvent::SpinEnd { task: t, gen }),
            );
        }
        if !table(&mut self.locking_mut().objects).watched.contains(&s) {
            table(&mut self.locking_mut().objects).watched.push(s);
        }
    }

    /// The mode the lock op `t` is in wants.
    fn rwsem_wanted_mode(&self, t: TaskId) -> LockMode {
        let task = &self.tasks()[t as usize];
        let program = &self.spec().task_groups[task.group as usize].program;
        match program.ops.get(task.pc as usize) {
            Some(crate::program::Op::Locking(crate::program::LockingOp::Lock { mode, .. })) => {
                *mode
            }
            _ => LockMode::Write,
        }
    }

    /// Something changed on `s` (a release, a downgrade): the OSQ head, if
    /// it watches, takes the lock or gives up as the owner now allows.
    fn rwsem_spinner_check(&mut self, s: u32) {
        let Some(head) = table(&mut self.locking_mut().objects).all[s as usize]
            .osq
            .head()
        else {
            return;
        };
        let task = &self.tasks()[head as usize];
        if task.wait.spin_done
            || task.wait.spin_abort
            || task.wait.spin
                != (Spin::Sleeping {
                    kind: KIND.id,
                    lock: s,
                    how: SpinHow::OnOwner,
                })
        {
            return;
        }
        let hc = task.cpu;
        let seen = table_ref(&self.locking().objects).all[s as usize]
            .line
            .seen_at(hc)
            .unwrap_or(self.now())
            .max(task.wait.spin_ready);
        let sem = &table_ref(&self.locking().objects).all[s as usize];
        let mode = self.rwsem_wanted_mode(head);
        if sem.nonspinnable_for(mode) {
            table(&mut self.locking_mut().objects).all[s as usize]
                .line
                .unpoll(hc);
            self.rwsem_spin_abort(head, seen.saturating_sub(self.now()));
        } else if sem.free_for(mode) {
            table(&mut self.locking_mut().objects).all[s as usize]
                .line
                .unpoll(hc);
            self.rwsem_grant_to_spinner(head, s, mode, seen);
        } else if sem.writer == NO_TASK && mode == LockMode::Write && !sem.handoff {
            // Readers own it now (a downgrade): the bounded spin starts.
            table(&mut self.locking_mut().objects).all[s as usize]
                .line
                .unpoll(hc);
            self.rwsem_watch(head, s, seen);
        } else if sem.handoff {
            table(&mut self.locking_mut().objects).all[s as usize]
                .line
                .unpoll(hc);
            self.rwsem_spin_abort(head, seen.saturating_sub(self.now()));
        }
    }

    /// The spinner `t` takes the lock with a cmpxchg issued at `at`,
    /// leaves the OSQ, and the next node becomes head.
    fn rwsem_grant_to_spinner(&mut self, t: TaskId, s: u32, mode: LockMode, at: Nanos) {
        let c = self.tasks_mut()[t as usize].cpu;
        let p = self.locking_parts();
        let sem = &mut table(&mut p.locking.objects).all[s as usize];
        let got = sem.line.rmw(p.cost, c, at.max(p.now));
        let next = sem.osq.pop_head();
        self.rwsem_granted(t, s, mode, got, true);
        let gen = self.tasks_mut()[t as usize].gen;
        self.at(got, Event::Sched(SchedEvent::SpinEnd { task: t, gen }));
        if let Some(next) = next {
            // osq_unlock(): WRITE_ONCE(next->locked, 1).
            let nc = self.tasks_mut()[next as usize].cpu;
            self.rwsem_watch(next, s, got + self.cost().line_transfer(c, nc));
        } else {
            table(&mut self.locking_mut().objects)
                .watched
                .retain(|&w| w != s);
        }
    }

    /// The spin of `t` ends without the lock, `delay` from now.
    fn rwsem_spin_abort(&mut self, t: TaskId, delay: Nanos) {
        let task = &mut self.tasks_mut()[t as usize];
        if task.wait.spin_done || task.wait.spin_abort {
            return;
        }
        task.wait.spin_abort = true;
        let gen = task.gen;
        self.at(
            self.now() + delay,
            Event::Sched(SchedEvent::SpinEnd { task: t, gen }),
        );
    }

    /// A task left its CPU: a spinner watching it as a writer owner gives
    /// up one line transfer later.
    fn rwsem_owner_leaves_cpu(&mut self, owner: TaskId) {
        if table(&mut self.locking_mut().objects).watched.is_empty() {
            return;
        }
        let oc = self.tasks_mut()[owner as usize].cpu;
        for k in 0..table(&mut self.locking_mut().objects).watched.len() {
            let s = table(&mut self.locking_mut().objects).watched[k];
            if table(&mut self.locking_mut().objects).all[s as usize].writer != owner {
                continue;
            }
            if let Some(head) = table(&mut self.locking_mut().objects).all[s as usize]
                .osq
                .head()
            {
                let hc = self.tasks_mut()[head as usize].cpu;
                let delay = self.cost().line_transfer(oc, hc);
                self.rwsem_spin_abort(head, delay);
            }
        }
    }

    /// The spin of `t` on `s` ended (its `SpinEnd`): true if it has the
    /// lock; otherwise it leaves the OSQ and queues (the caller stops).
    fn rwsem_spin_finished(&mut self, c: u32, t: TaskId, s: u32) -> bool {
        let mode = self.rwsem_wanted_mode(t);
        if table(&mut self.locking_mut().objects).all[s as usize].holds(t, mode) {
            self.tasks_mut()[t as usize].wait.spin_abort = false;
            self.advance(t);
            if self.preempt_enable(t) {
                self.schedule(c);
                return false;
            }
            return true;
        }
        self.preempt_enable(t);
        self.rwsem_leave_osq(t, s);
        let sem = &mut table(&mut self.locking_mut().objects).all[s as usize];
        if mode == LockMode::Write
            && sem.writer == NO_TASK
            && !sem.readers.is_empty()
            && !sem.handoff
        {
            // The reader-owned spin timed out: rwsem_set_nonspinnable().
            sem.nonspinnable = true;
            sem.rd_nonspinnable = sem.reader_spin;
        }
        self.tasks_mut()[t as usize].wait.spin_abort = false;
        if let Flow::Next = self.rwsem_queue(c, t, s, mode, self.now()) {
            return true;
        }
        false
    }

    /// `t` leaves the OSQ without the lock; if it was the head, the next
    /// node becomes head.
    fn rwsem_leave_osq(&mut self, t: TaskId, s: u32) {
        let c = self.tasks_mut()[t as usize].cpu;
        let sem = &mut table(&mut self.locking_mut().objects).all[s as usize];
        sem.line.unpoll(c);
        if sem.osq.unqueue(t) == Some(true) {
            match sem.osq.head() {
                Some(next) => {
                    let nc = self.tasks_mut()[next as usize].cpu;
                    let at = self.now() + self.cost().line_transfer(c, nc);
                    self.rwsem_watch(next, s, at);
                }
                None => table(&mut self.locking_mut().objects)
                    .watched
                    .retain(|&w| w != s),
            }
        }
    }

    /// `need_resched()` seen by a spinner: leave the OSQ, reschedule, then
    /// queue (`RwsemStep::Queue`).
    fn rwsem_spin_need_resched(&mut self, c: u32, t: TaskId, s: u32) {
        self.settle(c);
        let mode = self.rwsem_wanted_mode(t);
        if table(&mut self.locking_mut().objects).all[s as usize].holds(t, mode) {
            // Granted already; the spin ends with the cmpxchg.
            return;
        }
        self.rwsem_leave_osq(t, s);
        let task = &mut self.tasks_mut()[t as usize];
        task.wait.spin = Spin::None;
        task.wait.spin_abort = false;
        task.gen = task.gen.wrapping_add(1);
        task.resume = Resume::Lock(RwsemStep::Queue as u8);
        self.preempt_enable(t);
        self.schedule(c);
    }
}

impl<K: LockingEnv> RwsemSpin for K {}
