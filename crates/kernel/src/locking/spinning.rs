//! What every spinning lock does the same way, whatever its
//! implementation: `spin_lock()` disables preemption (`_irqsave` also
//! IRQs) for the whole wait and hold, a waiter spins as one interval until
//! the implementation grants it the lock, and `lock_stat` and the
//! bad-unlock detector see every kind alike.

use smpsim_engine::Nanos;

use super::{Env, LockingEnv, SpinningLock, Taker};
use crate::event::*;
use crate::lock_stat::LockCpu;
use crate::mechanism::Flow;
use crate::program::LockMode;
use crate::task::*;

/// One spinning-lock instance: the implementation plus who holds it since when.
pub struct LockInstance {
    /// The object this instance belongs to (for `lock_stat`).
    pub object: u32,
    pub imp: Box<dyn SpinningLock>,
    /// Holders, how, and since when (a writer or owner, or the readers).
    holders: Vec<(TaskId, LockMode, Nanos)>,
}

impl LockInstance {
    pub fn new(object: u32, imp: Box<dyn SpinningLock>) -> Self {
        LockInstance {
            object,
            imp,
            holders: Vec::new(),
        }
    }

    /// Who holds it, how, and since when (for the unit tests' checks).
    #[cfg(test)]
    pub fn holders(&self) -> &[(TaskId, LockMode, Nanos)] {
        &self.holders
    }

    /// Whether it is held (`spin_is_locked()`): by a task or a hook, in
    /// any mode.
    pub fn is_locked(&self) -> bool {
        !self.holders.is_empty() || self.imp.owner().is_some()
    }

    /// Ownership is sound: an exclusive or write holder holds alone, and
    /// the implementation agrees with the holders recorded here.
    pub fn ownership_sound(&self) -> bool {
        let exclusive = self
            .holders
            .iter()
            .filter(|h| h.1 != LockMode::Read)
            .count();
        (exclusive == 0 || self.holders.len() == 1)
            && self.holders.iter().all(|h| self.imp.holds(h.0, h.1))
    }
}

/// A task's `spin_lock()` and `spin_unlock()` of every kind, and the
/// grants and timers a kind reports.
pub(crate) trait SpinningLocks: LockingEnv {
    /// `t` now holds lock `l`, from `at`; `contended`: it waited for it
    /// (the trylock failed and lock_contended() was counted).
    ///
    /// Booked as acquired at `at`, when the waiter has it (the kernel's
    /// `lock_acquired()` runs there): a grant decided before the end of
    /// the warm-up for a waiter that gets the lock after it is measured,
    /// as the spinning up to `at` is.
    fn lock_granted(&mut self, t: TaskId, l: u32, mode: LockMode, at: Nanos, contended: bool) {
        let waited = contended.then(|| at - self.lock_wait_start(t));
        let on = LockCpu::new(l, self.lock_holder_cpu(t));
        let lock = &mut self.locking_mut().objects.spinlocks[l as usize];
        lock.holders.push((t, mode, at));
        debug_assert!(lock.ownership_sound(), "lock ownership unsound");
        let object = lock.object;
        self.metrics_mut().lock_acquired(at, object, on, waited);
    }

    /// Releases lock `l` held by `holder` (a task, or a hook's holder id)
    /// on CPU `c` in `mode`, now: ends its lock_stat hold and runs the
    /// kind's unlock; returns when the releasing store is done. `None`,
    /// and nothing done, when `holder` does not hold it so.
    fn release_held(&mut self, c: u32, holder: TaskId, l: u32, mode: LockMode) -> Option<Nanos> {
        let now = self.now();
        let lock = &mut self.locking_mut().objects.spinlocks[l as usize];
        let at = lock
            .holders
            .iter()
            .position(|h| h.0 == holder && h.1 == mode)
            .filter(|_| lock.imp.holds(holder, mode))?;
        let (_, _, since) = lock.holders.swap_remove(at);
        let object = lock.object;
        self.metrics_mut()
            .lock_released(now, object, now.saturating_sub(since));
        let taker = Taker {
            task: holder,
            cpu: c,
            mode,
        };
        Some(self.with_lock(l, |imp, env| imp.unlock(env, taker)))
    }

    /// Runs `f` on lock `l`'s implementation with an [`Env`] at the current
    /// time; returns its answer, then acts on what it produced: waiters
    /// granted the lock see it at their time; a timer the lock asked for.
    fn with_lock<R>(&mut self, l: u32, f: impl FnOnce(&mut dyn SpinningLock, &mut Env) -> R) -> R {
        let mut grants = std::mem::take(&mut self.locking_mut().lock_grants);
        debug_assert!(
            grants.is_empty(),
            "no grants left from an earlier lock operation"
        );
        let p = self.locking_parts();
        let mut env = Env {
            now: p.now,
            cost: p.cost,
            grants: &mut grants,
            timer: None,
        };
        let r = f(
            p.locking.objects.spinlocks[l as usize].imp.as_mut(),
            &mut env,
        );
        let timer = env.timer;
        for &(w, mode, at) in &grants {
            self.lock_granted(w, l, mode, at, true);
            if let Some(c) = crate::ids::hook_holder_cpu(w) {
                // A hook spinning on CPU `c`: the CPU goes on with it.
                self.hook_lock_granted(c, at);
                continue;
            }
            let gen = self.tasks_mut()[w as usize].gen;
            self.at(at, Event::Sched(SchedEvent::SpinEnd { task: w, gen }));
        }
        grants.clear();
        self.locking_mut().lock_grants = grants;
        if let Some(at) = timer {
            self.at(
                at.max(self.now()),
                Event::Lock(LockEvent::Timer { lock: l }),
            );
        }
        r
    }

    /// A timer a lock asked for fired.
    fn on_lock_event(&mut self, e: LockEvent) -> smpsim_engine::Handled {
        let LockEvent::Timer { lock } = e;
        self.with_lock(lock, |imp, env| imp.timer(env));
        smpsim_engine::Handled::Done
    }

    /// `spin_lock()`, `read_lock()`, `write_lock()` and their `_irqsave` forms.
    fn spin_lock(&mut self, c: u32, t: TaskId, l: u32, mode: LockMode, irqsave: bool) -> Flow {
        if irqsave {
            // local_irq_save(): remember whether IRQs were already off.
            let task = &mut self.tasks_mut()[t as usize];
            // Past 32 levels (an irqsave never restored) the saved state is
            // not kept; IRQs were off there anyway.
            let bit = 1u32.checked_shl(task.irq.irq_depth.into()).unwrap_or(0);
            if task.irq.irqs_off {
                task.irq.irq_saved |= bit;
            } else {
                task.irq.irq_saved &= !bit;
            }
            task.irq.irq_depth = task.irq.irq_depth.saturating_add(1);
            task.irq.irqs_off = true;
            self.irq_off_begin(c);
        }
        self.preempt_disable(t);
        self.tasks_mut()[t as usize].wait.wait_start = self.now();
        let (granted, recursive) = self.spin_lock_attempt(t, c, l, mode);
        match granted {
            Some(done) => {
                let cost = done - self.now();
                self.tasks_mut()[t as usize].batch.push(Mode::Sys, cost);
                self.advance(t);
                Flow::Next
            }
            None => {
                let task = &mut self.tasks_mut()[t as usize];
                task.gen = task.gen.wrapping_add(1);
                task.wait.spin = Spin::Lock { lock: l };
                task.wait.spin_done = false;
                debug_assert!(
                    recursive
                        || !self.locking_mut().objects.spinlocks[l as usize]
                            .holders
                            .iter()
                            .any(|h| h.0 == t),
                    "a lock granted to the task that just found it taken"
                );
                Flow::Stop
            }
        }
    }

    /// `spin_unlock()`, `read_unlock()`, `write_unlock()` and their
    /// `_irqrestore` forms.
    fn spin_unlock(&mut self, c: u32, t: TaskId, l: u32, mode: LockMode, irqrestore: bool) -> Flow {
        let now = self.now();
        match self.release_held(c, t, l, mode) {
            Some(released) => {
                self.tasks_mut()[t as usize]
                    .batch
                    .push(Mode::Sys, released - now);
            }
            None => {
                // Not ours to release: report it as lockdep would and leave
                // the lock (and the task's IRQ/preempt state) alone.
                let name = self.task_name(t);
                let object = self.locking_mut().objects.spinlocks[l as usize].object as usize;
                let lock = self.spec().objects[object].name.clone();
                let op = format!(
                    "{}_unlock{}",
                    mode.op_prefix(),
                    if irqrestore { "_irqrestore" } else { "" }
                );
                self.metrics_mut().bad_unlock(c, now, &name, &op, &lock);
                self.advance(t);
                return Flow::Next;
            }
        }
        self.advance(t);
        if irqrestore {
            // local_irq_restore(): back to the state saved at lock time.
            let task = &mut self.tasks_mut()[t as usize];
            task.irq.irq_depth = task.irq.irq_depth.saturating_sub(1);
            task.irq.irqs_off = match 1u32.checked_shl(task.irq.irq_depth.into()) {
                Some(bit) => task.irq.irq_saved & bit != 0,
                None => true,
            };
            if !task.irq.irqs_off {
                self.irq_off_end(c);
            }
        }
        let resched = self.preempt_enable(t);
        if irqrestore && !self.tasks_mut()[t as usize].irq.irqs_off && self.cpu(c).has_pending_irq()
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

impl<K: LockingEnv> SpinningLocks for K {}

/// The end of the run's book of spinning waits.
pub(crate) trait SpinningWaits: LockingEnv {
    /// At the end of the run, every task still spinning for a spinning
    /// lock books its wait so far in lock_stat
    /// ([`crate::metrics::Metrics::lock_wait_in_progress`]): a waiter that
    /// never got the lock (a `ttas` or `tas` lock serves the CPUs nearest
    /// the releaser first) waited as long as it spun.
    fn book_spinning_waits(&mut self) {
        let now = self.now();
        for t in 0..self.tasks_mut().len() {
            let task = &self.tasks()[t];
            let Spin::Lock { lock } = task.wait.spin else {
                continue;
            };
            let instance = &self.locking().objects.spinlocks[lock as usize];
            // Granted for this wait already (its SpinEnd not yet seen):
            // booked then. A hold from before the wait began is a
            // recursive acquisition, which spins for good.
            let start = task.wait.wait_start;
            if instance
                .holders
                .iter()
                .any(|h| h.0 == t as TaskId && h.2 > start)
            {
                continue;
            }
            let op = self
                .spec()
                .task_groups
                .get(task.group as usize)
                .and_then(|g| g.program.ops.get(task.pc as usize));
            let mode = match op {
                Some(crate::program::Op::Locking(crate::program::LockingOp::Lock {
                    mode, ..
                })) => *mode,
                _ => LockMode::Exclusive,
            };
            let waited = now.saturating_sub(task.wait.wait_start);
            let object = instance.object;
            self.metrics_mut()
                .lock_wait_in_progress(now, object, mode, waited);
        }
    }
}

impl<K: LockingEnv> SpinningWaits for K {}

/// A `[hooks]` run's spinlocks (`hooks.rs`): the same implementation,
/// `lock_stat` rows and bad-unlock report as a task's, taken by the CPU
/// itself (its [`crate::ids::hook_holder`] id) where IRQs and preemption
/// are already off, so neither changes.
pub(crate) trait HookSpinlocks: LockingEnv {
    /// The CPU lock holder or waiter `t` (a task or a hook) is on.
    fn lock_holder_cpu(&self, t: TaskId) -> u32 {
        crate::ids::hook_holder_cpu(t).unwrap_or_else(|| self.tasks()[t as usize].cpu)
    }

    /// When lock waiter `t` (a task or a hook) began to wait.
    fn lock_wait_start(&self, t: TaskId) -> Nanos {
        match crate::ids::hook_holder_cpu(t) {
            Some(c) => self.hook_spin_since(c),
            None => self.tasks()[t as usize].wait.wait_start,
        }
    }

    /// `spin_lock()` (`read_lock()`, `write_lock()`) of instance `l` by the
    /// hook on CPU `c`, now: `Some(t)` if it holds the lock at `t`, `None`
    /// if it spins until a release grants it ([`Self::with_lock`] then
    /// calls `hook_lock_granted()`).
    fn hook_spin_lock(&mut self, c: u32, l: u32, mode: LockMode) -> Option<Nanos> {
        self.spin_lock_attempt(crate::ids::hook_holder(c), c, l, mode)
            .0
    }

    /// The attempt a task and a hook both make on instance `l`: report a
    /// recursive acquisition (the kernel deadlocks there; so does the
    /// model, after saying so), ask the lock's kind, and book the grant or
    /// the contention. Returns when it holds the lock, if it does at once,
    /// and whether the attempt was recursive.
    fn spin_lock_attempt(
        &mut self,
        holder: TaskId,
        c: u32,
        l: u32,
        mode: LockMode,
    ) -> (Option<Nanos>, bool) {
        let recursive = self.locking_mut().objects.spinlocks[l as usize]
            .holders
            .iter()
            .any(|h| h.0 == holder && (h.1 != LockMode::Read || mode != LockMode::Read));
        if recursive {
            let name = match crate::ids::hook_holder_cpu(holder) {
                Some(c) => format!("CPU{c} hook"),
                None => self.task_name(holder),
            };
            let object = self.locking_mut().objects.spinlocks[l as usize].object as usize;
            let lock = self.spec().objects[object].name.clone();
            let op = format!("{}_lock", mode.op_prefix());
            let now = self.now();
            self.metrics_mut()
                .recursive_locking(c, now, &name, &op, &lock);
        }
        let taker = Taker {
            task: holder,
            cpu: c,
            mode,
        };
        let granted = self.with_lock(l, |imp, env| imp.lock(env, taker));
        match granted {
            Some(done) => self.lock_granted(holder, l, mode, done, false),
            None => {
                let object = self.locking_mut().objects.spinlocks[l as usize].object;
                let now = self.now();
                self.metrics_mut()
                    .lock_contended(now, object, LockCpu::new(l, c));
            }
        }
        (granted, recursive)
    }

    /// `spin_unlock()` of instance `l` by the hook on CPU `c`, now; returns
    /// when the releasing store is done.
    fn hook_spin_unlock(&mut self, c: u32, l: u32, mode: LockMode) -> Nanos {
        let now = self.now();
        match self.release_held(c, crate::ids::hook_holder(c), l, mode) {
            Some(released) => released,
            None => {
                // Scenario loading pairs every hook unlock with its lock;
                // kept as the kernel's report all the same.
                let object = self.locking_mut().objects.spinlocks[l as usize].object as usize;
                let lock = self.spec().objects[object].name.clone();
                let op = format!("{}_unlock", mode.op_prefix());
                self.metrics_mut()
                    .bad_unlock(c, now, &format!("CPU{c} hook"), &op, &lock);
                now
            }
        }
    }
}

impl<K: LockingEnv> HookSpinlocks for K {}
