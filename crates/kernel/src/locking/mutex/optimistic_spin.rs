//! `mutex_optimistic_spin()` (kernel/locking/mutex.c): who may spin
//! (`mutex_can_spin_on_owner()`), the OSQ in front of the owner
//! word, the head's polling of `lock->owner` as an interval on the lock's
//! line, and how a spin ends: the lock granted on release, the owner
//! leaving its CPU, or `need_resched()`. The wait list, handoff and the
//! fast paths are the parent module's.

use super::{table, table_ref, MutexOps, MutexStep, KIND};
use crate::event::*;
use crate::locking::LockingEnv;
use crate::task::*;
use smpsim_engine::Nanos;

/// A mutex's optimistic spinning: the OSQ, its head watching the owner,
/// and what ends a spin (over any [`LockingEnv`]).
pub(crate) trait MutexSpin: LockingEnv {
    /// `mutex_can_spin_on_owner()` plus the knobs that turn spinning off.
    fn can_spin(&self, c: u32, m: u32) -> bool {
        let lock = &table_ref(&self.locking().objects).all[m as usize];
        self.spec().knobs.mutex_spin_on_owner
            && lock.spin
            && !self.cpu(c).need_resched
            && self.owner_on_cpu(lock.owner)
    }

    /// `t` starts spinning on the owner at `at`: `mutex_spin_on_owner()`
    /// polls the lock word (so every write to the line makes it re-fetch)
    /// and the owner's `on_cpu`.
    fn watch_owner(&mut self, t: TaskId, m: u32, at: Nanos) {
        self.tasks_mut()[t as usize].wait.spin = Spin::Sleeping {
            kind: KIND.id,
            lock: m,
            how: SpinHow::OnOwner,
        };
        let c = self.tasks_mut()[t as usize].cpu;
        let at = at.max(self.now());
        let p = self.locking_parts();
        let mut ready = table(&mut p.locking.objects).all[m as usize]
            .word
            .poll(p.cost, c, at);
        // owner_on_cpu(owner): a read of the owner's task_struct, last
        // written by the owner's CPU when it switched in; it stays in this
        // CPU's cache while the owner runs.
        let owner = table(&mut self.locking_mut().objects).all[m as usize].owner;
        if owner != NO_TASK {
            ready += self
                .cost()
                .line_transfer(self.tasks()[owner as usize].cpu, c);
        }
        self.tasks_mut()[t as usize].wait.spin_ready = ready;
    }

    /// A spinner stops watching the owner.
    fn unwatch_owner(&mut self, t: TaskId, m: u32) {
        let c = self.tasks_mut()[t as usize].cpu;
        table(&mut self.locking_mut().objects).all[m as usize]
            .word
            .unpoll(c);
    }

    fn begin_spin(&mut self, t: TaskId, spin: Spin) {
        self.preempt_disable(t);
        let task = &mut self.tasks_mut()[t as usize];
        task.wait.spin = spin;
        task.wait.spin_done = false;
        task.wait.spin_abort = false;
        task.gen = task.gen.wrapping_add(1);
    }

    fn start_osq_spin(&mut self, t: TaskId, m: u32) {
        // osq_lock(): xchg of the OSQ tail, on the lock's line.
        let (c, now) = (self.tasks_mut()[t as usize].cpu, self.now());
        let p = self.locking_parts();
        let queued = table(&mut p.locking.objects).all[m as usize]
            .word
            .rmw(p.cost, c, now);
        let node = p.cost.node(c);
        let head = table(&mut p.locking.objects).all[m as usize]
            .osq
            .lock_from(t, node, now);
        self.begin_spin(
            t,
            Spin::Sleeping {
                kind: KIND.id,
                lock: m,
                how: SpinHow::Queued,
            },
        );
        if head {
            self.watch_owner(t, m, queued);
        }
    }

    /// Ownership moved to spinner `w`: it saw the release when its
    /// re-fetch of the line landed (now if none was pending), and stops
    /// watching the owner; its cmpxchg makes it the owner. Returns when it
    /// owns the lock.
    fn grant_to_spinner(&mut self, w: TaskId, m: u32) -> Nanos {
        let wc = self.tasks_mut()[w as usize].cpu;
        let seen = table(&mut self.locking_mut().objects).all[m as usize]
            .word
            .take_poll(wc)
            .unwrap_or(self.now());
        // It notices only once its first reads of the lock and the owner
        // are in.
        let seen = seen.max(self.tasks_mut()[w as usize].wait.spin_ready);
        let cost = self.take_ownership_at(wc, w, m, seen, true);
        let gen = self.tasks_mut()[w as usize].gen;
        self.at(
            self.now() + cost,
            Event::Sched(SchedEvent::SpinEnd { task: w, gen }),
        );
        self.now() + cost
    }

    /// A task leaves its CPU: spinners on the locks it owns give up.
    fn owner_leaves_cpu(&mut self, owner: TaskId) {
        let Some(&held) = table(&mut self.locking_mut().objects)
            .held
            .get(owner as usize)
        else {
            return;
        };
        let oc = self.tasks_mut()[owner as usize].cpu;
        for &m in held.locks() {
            self.abort_spinners(m, oc);
        }
    }

    /// The owner of `m` (last on CPU `oc`) is not running: every spinner
    /// on it notices one line transfer later and gives up.
    fn abort_spinners(&mut self, m: u32, oc: u32) {
        let ws = table(&mut self.locking_mut().objects).all[m as usize].waiter_spinner;
        let n = table(&mut self.locking_mut().objects).all[m as usize]
            .osq
            .len();
        for k in 0..=n {
            let s = match table(&mut self.locking_mut().objects).all[m as usize]
                .osq
                .get(k)
            {
                Some(s) => s,
                None if ws != NO_TASK => ws,
                None => break,
            };
            let task = &mut self.tasks_mut()[s as usize];
            if task.wait.spin_done || task.wait.spin_abort {
                continue;
            }
            task.wait.spin_abort = true;
            let (gen, sc) = (task.gen, task.cpu);
            let delay = self.cost().line_transfer(oc, sc);
            self.at(
                self.now() + delay,
                Event::Sched(SchedEvent::SpinEnd { task: s, gen }),
            );
        }
    }

    /// `need_resched()` seen by a mutex spinner: leave the OSQ, reschedule
    /// (`schedule_preempt_disabled()`), then continue in the slow path.
    fn mutex_spin_need_resched(&mut self, c: u32, t: TaskId, m: u32) {
        self.settle(c);
        self.leave_spin(t, m);
        let p = self.locking_parts();
        let task = &mut p.tasks[t as usize];
        task.resume = Resume::Lock(
            if table(&mut p.locking.objects).all[m as usize]
                .waiters
                .contains(&t)
            {
                MutexStep::WokenWaiter as u8
            } else {
                MutexStep::AfterYield as u8
            },
        );
        self.preempt_enable(t);
        self.schedule(c);
    }

    /// Removes a spinner from the OSQ or the waiter-spinner slot.
    fn leave_spin(&mut self, t: TaskId, m: u32) {
        let task = &mut self.tasks_mut()[t as usize];
        task.wait.spin = Spin::None;
        task.wait.spin_done = false;
        task.gen = task.gen.wrapping_add(1);
        self.drop_spinner(t, m);
    }

    /// Takes a spinner off the OSQ (promoting the next node to head) or out
    /// of the waiter-spinner slot.
    fn drop_spinner(&mut self, t: TaskId, m: u32) {
        self.unwatch_owner(t, m);
        let lock = &mut table(&mut self.locking_mut().objects).all[m as usize];
        if lock.waiter_spinner == t {
            lock.waiter_spinner = NO_TASK;
        }
        if lock.osq.unqueue(t) == Some(true) {
            if let Some(next) = lock.osq.head() {
                self.watch_owner(next, m, self.now());
            }
        }
    }

    /// A mutex spin ended: the lock was handed over, or the owner left its
    /// CPU. Returns true if the task goes on with its program.
    fn mutex_spin_finished(&mut self, c: u32, t: TaskId, m: u32) -> bool {
        let abort = std::mem::take(&mut self.tasks_mut()[t as usize].wait.spin_abort);
        let acquired = table(&mut self.locking_mut().objects).all[m as usize].owner == t;
        if acquired {
            self.advance(t);
            if self.preempt_enable(t) {
                self.schedule(c);
                return false;
            }
            return true;
        }
        debug_assert!(abort, "spin ended without the lock");
        // `mutex_spin_on_owner()` failed: the owner is off-CPU.
        self.drop_spinner(t, m);
        self.preempt_enable(t);
        if table(&mut self.locking_mut().objects).all[m as usize].owner == NO_TASK
            && !table(&mut self.locking_mut().objects).all[m as usize].handoff
        {
            // Released meanwhile: take it.
            self.remove_waiter(m, t);
            let cost = self.take_ownership(c, t, m);
            self.tasks_mut()[t as usize].batch.push(Mode::Sys, cost);
            self.advance(t);
            return true;
        }
        self.sleep_on_mutex(c, t, m);
        false
    }
}

impl<K: LockingEnv> MutexSpin for K {}
