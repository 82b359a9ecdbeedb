//! `struct rw_semaphore` as kernel/locking/rwsem.c has it (mainline since
//! 5.11): `down_read()`, `down_write()`, `up_read()`, `up_write()`, the
//! trylock forms and `downgrade_write()`.
//!
//! The state is the kernel's, bit for bit where it matters: the reader
//! count and `RWSEM_WRITER_LOCKED` of `count` (`readers`, `writer`), its
//! `RWSEM_FLAG_WAITERS` (a non-empty wait list) and `RWSEM_FLAG_HANDOFF`
//! (`handoff`), and the `owner` word's `RWSEM_READER_OWNED` and
//! `RWSEM_NONSPINNABLE` flags. `count`, `owner`, `osq`, `wait_lock` and
//! the wait list share one cache line (they are within 40 bytes of each
//! other), and every step the kernel takes on them is a transaction on it.
//!
//! A layout may put the struct across two lines (`line = ["a", "b"]`):
//! `count`, `owner` and `osq` (the first 24 bytes, what every fast path
//! and spinner touches) on the first, `wait_lock` and `wait_list` (what
//! only the slow paths take, under `raw_spin_lock_irq(&sem->wait_lock)`)
//! on the second. The slow paths' `count` updates under `wait_lock`
//! (`atomic_long_add_return(adjustment, &sem->count)`, the cmpxchg of
//! `rwsem_try_write_lock()`, `rwsem_mark_wake()`'s grant) are then
//! transactions on the first line of their own; on one line the
//! `wait_lock` acquire already brought the line, and the model folds them
//! into it.
//!
//! The lifecycle of an acquisition:
//!
//! 1. **Fast paths.** `down_read()` adds `RWSEM_READER_BIAS` and keeps the
//!    lock unless `RWSEM_READ_FAILED_MASK` (writer, waiters, handoff) is
//!    set; `down_write()` is a cmpxchg of `count` from 0.
//! 2. **Reader slow path** (`rwsem_down_read_slowpath()`): a reader may
//!    *steal* the lock when no writer holds it and no handoff is pending,
//!    unless other readers already own it (then it queues, so that a
//!    stream of readers cannot starve a queued writer); a stealing reader
//!    that finds waiters wakes the queued readers with it. Otherwise it
//!    queues and sleeps until `rwsem_mark_wake()` grants it the lock.
//! 3. **Writer slow path** (`rwsem_down_write_slowpath()`): first
//!    `rwsem_optimistic_spin()` if `rwsem_can_spin_on_owner()`: queue on
//!    the OSQ; its head spins while a *writer* owner runs (polling the
//!    line, `owner->on_cpu` read once), and while *readers* own the lock
//!    only until `rwsem_rspin_threshold()` ((20 + readers) / 2 us, at most
//!    25 us), after which it sets `RWSEM_NONSPINNABLE` and nobody spins
//!    until a writer next takes the lock. A spin ends with the lock, or
//!    when the owner leaves its CPU or `need_resched()` is set. Then the
//!    writer queues (FIFO), tries `rwsem_try_write_lock()` and sleeps; a
//!    waiter that has waited `RWSEM_WAIT_TIMEOUT` (4 ms) sets the handoff
//!    bit, after which no spinner, stealing reader or new arrival can take
//!    the lock before the first waiter.
//! 4. **Release.** `up_read()` by the last reader with waiters, and
//!    `up_write()` with waiters, call `rwsem_wake()`: `rwsem_mark_wake()`
//!    wakes a writer at the head (it takes the lock itself, so a spinner
//!    can still steal it first), or grants the lock to every queued reader
//!    (up to `MAX_READERS_WAKEUP`, readers behind a writer too) and wakes
//!    them. The OSQ head notices the release one re-fetch of the line
//!    later and takes the lock with a cmpxchg.
//!
//! `reader_spin = true` restores what 5.3 to 5.10 did (removed by
//! "locking/rwsem: Remove reader optimistic spinning", v5.11): readers
//! also spin on the OSQ while a writer owner runs, and take the lock in
//! turn when it is released.
//!
//! Not modelled: the first waiter's spin on the owner after it set the
//! handoff bit (it sleeps instead), a spinner that keeps spinning while
//! the handoff bit is set (it gives up and queues), killable and
//! interruptible waits, and RT tasks setting the handoff bit at once.

use std::collections::VecDeque;

use crate::coherence::{Line, LineHome};
use crate::lock_stat::LockCpu;
use crate::locking::objects::Objects;
use crate::locking::osq::Osq;
use crate::locking::sleeping::{Build, SleepingKindInfo, SleepingLock, SleepingLockOps};
use crate::locking::LockingEnv;
use crate::mechanism::Flow;
use crate::program::LockMode;
use crate::spec::ObjectKind;
use crate::task::*;
use smpsim_engine::Nanos;
use spin::RwsemSpin;
use wake::RwsemWake;

mod spin;
mod wake;

/// `MAX_READERS_WAKEUP` (kernel/locking/rwsem.c).
const MAX_READERS_WAKEUP: usize = 0x100;

/// A task on the wait list.
#[derive(Clone, Copy, Debug)]
pub struct Waiter {
    pub task: TaskId,
    pub mode: LockMode,
    /// `waiter->timeout`: when it may set the handoff bit.
    pub timeout: Nanos,
}

pub struct Rwsem {
    /// The declared object this is an instance of.
    pub object: u32,
    /// Writers spin on the OSQ (`CONFIG_RWSEM_SPIN_ON_OWNER`).
    pub spin: bool,
    /// Readers spin too (before 5.11).
    pub reader_spin: bool,
    /// Readers holding it (the reader count of `count`), each with when it
    /// took it.
    pub readers: Vec<(TaskId, Nanos)>,
    /// The writer holding it (`RWSEM_WRITER_LOCKED` and `owner`).
    pub writer: TaskId,
    /// The wait list, FIFO.
    pub waiters: VecDeque<Waiter>,
    /// `RWSEM_FLAG_HANDOFF`.
    pub handoff: bool,
    /// `RWSEM_READER_OWNED` in `owner`: readers took it last.
    pub reader_owned: bool,
    /// `RWSEM_NONSPINNABLE` in `owner` (`RWSEM_WR_NONSPINNABLE` before
    /// 5.11).
    pub nonspinnable: bool,
    /// `RWSEM_RD_NONSPINNABLE` (5.3 to 5.10, `reader_spin`): set with the
    /// writers' bit, cleared only when a writer takes the lock.
    pub rd_nonspinnable: bool,
    /// Optimistic spinners, head first.
    pub osq: Osq,
    /// `count`, `owner` and `osq`; `wait_lock` and `wait_list` too unless
    /// `wait_line` holds them.
    pub line: Line,
    /// The line of `wait_lock` and `wait_list` when the struct straddles
    /// two lines.
    pub wait_line: Option<Line>,
    /// When the writer took it (for lock_stat hold times).
    pub acquired_at: Nanos,
}

impl Rwsem {
    pub fn new(object: u32, spin: bool, reader_spin: bool, at: LineHome) -> Self {
        Rwsem {
            object,
            spin,
            reader_spin,
            readers: Vec::new(),
            writer: NO_TASK,
            waiters: VecDeque::new(),
            handoff: false,
            reader_owned: false,
            nonspinnable: false,
            rd_nonspinnable: false,
            osq: Osq::default(),
            line: Line::at(at),
            wait_line: None,
            acquired_at: 0,
        }
    }

    /// The line `raw_spin_lock_irq(&sem->wait_lock)` and the wait list
    /// are on.
    fn wait_lock(&mut self) -> &mut Line {
        match &mut self.wait_line {
            Some(line) => line,
            None => &mut self.line,
        }
    }

    /// A slow path's access to `count` under `wait_lock`, issued at `at`:
    /// a transaction on the first line when the struct straddles two; on
    /// one line, folded into the `wait_lock` acquire that brought it.
    fn count_under_wait_lock(&mut self, cost: &crate::costs::CostNs, c: u32, at: Nanos) -> Nanos {
        if self.wait_line.is_some() {
            self.line.rmw(cost, c, at)
        } else {
            at
        }
    }

    /// `RWSEM_LOCK_MASK` is clear: nobody holds it.
    fn unlocked(&self) -> bool {
        self.writer == NO_TASK && self.readers.is_empty()
    }

    /// Whether `t` could take it in `mode` without waiting, given the
    /// handoff bit: a reader needs no writer, a writer an unlocked `count`.
    fn free_for(&self, mode: LockMode) -> bool {
        !self.handoff
            && self.writer == NO_TASK
            && (mode == LockMode::Read || self.readers.is_empty())
    }

    /// The nonspinnable bit a spinner of `mode` obeys.
    fn nonspinnable_for(&self, mode: LockMode) -> bool {
        if mode == LockMode::Read {
            self.rd_nonspinnable
        } else {
            self.nonspinnable
        }
    }

    fn holds(&self, t: TaskId, mode: LockMode) -> bool {
        match mode {
            LockMode::Read => self.readers.iter().any(|r| r.0 == t),
            _ => self.writer == t,
        }
    }
}

/// Where `down_read()`/`down_write()` continue (their [`Resume::Lock`]
/// step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwsemStep {
    /// Woken on the wait list.
    Woken = 0,
    /// Back from a reschedule that ended an optimistic spin: queue.
    Queue = 1,
}

/// `struct rw_semaphore` in the sleeping-lock registry.
pub const KIND: SleepingKindInfo = SleepingKindInfo {
    perf_type: "rwsem",
    id: 1,
    name: "rwsem",
    object_type: "rwsem",
    default: true,
    summary: "`struct rw_semaphore` (5.11+): reader stealing, writer OSQ spinning, handoff",
    imp: &RwsemKind,
};

pub(crate) struct RwsemKind;

/// The kind's own table ([`Objects::rwsems`]).
#[derive(Default)]
pub(crate) struct Rwsems {
    /// Every `struct rw_semaphore` instance.
    all: Vec<Rwsem>,
    /// Instances whose OSQ head spins on the owner (few at a time): an
    /// owner leaving its CPU ends those spins.
    watched: Vec<u32>,
}

#[inline(always)]
fn table(o: &mut Objects) -> &mut Rwsems {
    &mut o.rwsems
}

#[inline(always)]
fn table_ref(o: &Objects) -> &Rwsems {
    &o.rwsems
}

/// The line of rwsem `s` (`count` to `wait_list`, or `count` to `osq`
/// when it straddles two), for an object placed on it (`line = "NAME"`).
pub(crate) fn line_mut(o: &mut Objects, s: u32) -> &mut Line {
    &mut table(o).all[s as usize].line
}

/// The line of rwsem `s`'s `wait_lock` and `wait_list`, for an object
/// placed on the second line of `line = ["a", "b"]`.
pub(crate) fn wait_line_mut(o: &mut Objects, s: u32) -> &mut Line {
    table(o).all[s as usize].wait_lock()
}

/// Puts rwsem `s`'s `wait_lock` and `wait_list` on a line of their own,
/// homed `at` (`line = ["a", "b"]`).
pub(crate) fn split(o: &mut Objects, s: u32, at: LineHome) {
    table(o).all[s as usize].wait_line = Some(Line::at(at));
}

impl SleepingLock for RwsemKind {
    fn build(&self, o: &mut Objects, b: &Build) -> usize {
        let ObjectKind::Rwsem { spin, reader_spin } = *b.kind else {
            unreachable!("an rwsem declared as {:?}", b.kind)
        };
        let all = &mut table(o).all;
        let base = all.len();
        all.extend((0..b.n).map(|i| Rwsem::new(b.object, spin, reader_spin, (b.home)(i))));
        base
    }

    fn lock_fn(&self, mode: LockMode) -> String {
        format!("down_{}", mode.op_prefix())
    }

    fn object(&self, o: &Objects, l: u32) -> u32 {
        table_ref(o).all[l as usize].object
    }

    fn line_transfers(&self, o: &Objects, first: usize, n: usize) -> u64 {
        table_ref(o).all[first..first + n]
            .iter()
            .map(|r| r.line.transfers + r.wait_line.as_ref().map_or(0, |l| l.transfers))
            .sum()
    }
}

impl<K: LockingEnv> SleepingLockOps<K> for RwsemKind {
    fn lock(&self, k: &mut K, c: u32, t: TaskId, l: u32, mode: LockMode, step: Option<u8>) -> Flow {
        let step = step.map(|s| {
            if s == RwsemStep::Queue as u8 {
                RwsemStep::Queue
            } else {
                RwsemStep::Woken
            }
        });
        k.rwsem_down(c, t, l, mode, step)
    }

    fn unlock(&self, k: &mut K, c: u32, t: TaskId, l: u32, mode: LockMode) -> Flow {
        k.rwsem_up(c, t, l, mode);
        Flow::Next
    }

    fn owner_leaves_cpu(&self, k: &mut K, owner: TaskId) {
        k.rwsem_owner_leaves_cpu(owner);
    }

    fn spin_need_resched(&self, k: &mut K, c: u32, t: TaskId, l: u32) {
        k.rwsem_spin_need_resched(c, t, l);
    }

    fn spin_finished(&self, k: &mut K, c: u32, t: TaskId, l: u32) -> bool {
        k.rwsem_spin_finished(c, t, l)
    }
}

/// `RWSEM_WAIT_TIMEOUT`: `DIV_ROUND_UP(HZ, 250)` jiffies.
fn wait_timeout(hz: u32) -> Nanos {
    let hz = hz.max(1) as u64;
    hz.div_ceil(250) * (1_000_000_000 / hz)
}

/// `rwsem_rspin_threshold()`: how long a writer spins on a reader-owned
/// rwsem, `(20 + readers) / 2` us with at most 30 readers counted.
fn rspin_threshold(readers: usize) -> Nanos {
    (20 + readers.min(30) as u64) * 1000 / 2
}

/// `down_*()`, `up_*()`, `downgrade_write()` and the trylocks of an rwsem
/// (over any [`LockingEnv`]).
pub(crate) trait RwsemOps: LockingEnv {
    /// `down_read()` / `down_write()` of instance `s`, from the start or
    /// continued at `step`.
    fn rwsem_down(
        &mut self,
        c: u32,
        t: TaskId,
        s: u32,
        mode: LockMode,
        step: Option<RwsemStep>,
    ) -> Flow {
        match step {
            None => {}
            Some(RwsemStep::Woken) => return self.rwsem_woken(c, t, s, mode),
            Some(RwsemStep::Queue) => return self.rwsem_queue(c, t, s, mode, self.now()),
        }
        let now = self.now();
        if table(&mut self.locking_mut().objects).all[s as usize].holds(t, LockMode::Write) {
            let (name, lock) = (self.task_name(t), self.object_name(s));
            let op = rwsem_op_name(mode, true);
            self.metrics_mut()
                .recursive_locking(c, now, &name, op, &lock);
        }
        self.tasks_mut()[t as usize].wait.wait_start = now;
        let p = self.locking_parts();
        let sem = &mut table(&mut p.locking.objects).all[s as usize];
        // The fast path's atomic (add of RWSEM_READER_BIAS, or cmpxchg).
        let at = sem.line.rmw(p.cost, c, now);
        if sem.waiters.is_empty() && sem.free_for(mode) {
            self.rwsem_granted(t, s, mode, at, false);
            return self.rwsem_done(t, at);
        }
        let object = sem.object;
        self.metrics_mut()
            .lock_contended_mode(now, object, LockCpu::new(s, c), mode);
        if mode == LockMode::Read {
            self.rwsem_down_read_slowpath(c, t, s, at)
        } else if self.rwsem_can_spin_on_owner(c, s, mode) {
            self.rwsem_optimistic_spin(t, s, at);
            Flow::Stop
        } else {
            self.rwsem_queue(c, t, s, mode, at)
        }
    }

    /// The op is done at `at`: charge the time and go on.
    fn rwsem_done(&mut self, t: TaskId, at: Nanos) -> Flow {
        let cost = at.saturating_sub(self.now());
        self.tasks_mut()[t as usize].batch.push(Mode::Sys, cost);
        self.advance(t);
        Flow::Next
    }

    /// `rwsem_down_read_slowpath()`: steal, spin (before 5.11), or queue.
    fn rwsem_down_read_slowpath(&mut self, c: u32, t: TaskId, s: u32, at: Nanos) -> Flow {
        let sem = &table_ref(&self.locking().objects).all[s as usize];
        let others_read = sem.reader_owned && !sem.readers.is_empty();
        // Reader lock stealing came with the removal of reader spinning
        // (5.11): a kernel that spins readers does not steal.
        if !sem.reader_spin && sem.writer == NO_TASK && !sem.handoff && !others_read {
            // Reader optimistic lock stealing.
            self.rwsem_granted(t, s, LockMode::Read, at, true);
            let mut done = at;
            if !table(&mut self.locking_mut().objects).all[s as usize]
                .waiters
                .is_empty()
            {
                // The first reader wakes the queued readers.
                done = self.rwsem_wake(c, s, WakeType::ReadOwned, done);
            }
            return self.rwsem_done(t, done);
        }
        if table(&mut self.locking_mut().objects).all[s as usize].reader_spin
            && self.rwsem_can_spin_on_owner(c, s, LockMode::Read)
        {
            self.rwsem_optimistic_spin(t, s, at);
            return Flow::Stop;
        }
        self.rwsem_queue(c, t, s, LockMode::Read, at)
    }

    /// `rwsem_can_spin_on_owner()`, with the object's knobs: a spinner of
    /// `mode` checks its own nonspinnable bit.
    fn rwsem_can_spin_on_owner(&self, c: u32, s: u32, mode: LockMode) -> bool {
        let sem = &table_ref(&self.locking().objects).all[s as usize];
        sem.spin
            && !sem.nonspinnable_for(mode)
            && !self.cpu(c).need_resched
            && (sem.writer == NO_TASK
                || self.tasks()[sem.writer as usize].state == TaskState::Running)
    }

    /// Queues `t` at the tail of the wait list under `wait_lock` (from
    /// `at`), then takes the lock if it can or sleeps.
    fn rwsem_queue(&mut self, c: u32, t: TaskId, s: u32, mode: LockMode, at: Nanos) -> Flow {
        let timeout = self.now() + wait_timeout(self.spec().knobs.hz);
        let p = self.locking_parts();
        let sem = &mut table(&mut p.locking.objects).all[s as usize];
        // raw_spin_lock_irq(&sem->wait_lock)
        let mut done = sem.wait_lock().rmw(p.cost, c, at);
        if mode == LockMode::Read && sem.waiters.is_empty() && sem.writer == NO_TASK {
            // The bias is already in `count` and nobody waits: it is ours.
            // raw_spin_unlock_irq(), then rwsem_set_reader_owned() writes
            // `owner` (on one line, the unlock's store covers it).
            done = sem.wait_lock().store(p.cost, c, done);
            if sem.wait_line.is_some() {
                done = sem.line.store(p.cost, c, done);
            }
            self.rwsem_granted(t, s, mode, done, true);
            return self.rwsem_done(t, done);
        }
        sem.waiters.push_back(Waiter {
            task: t,
            mode,
            timeout,
        });
        let first = sem.waiters.len() == 1;
        // The count adjustment (WAITERS flag, the reader's bias back out).
        done = sem.line.rmw(p.cost, c, done);
        if mode == LockMode::Write {
            // Its cmpxchg follows the adjustment on the line it holds.
            if self.rwsem_try_write_lock(t, s, done) {
                let p = self.locking_parts();
                let done = table(&mut p.locking.objects).all[s as usize]
                    .wait_lock()
                    .store(p.cost, c, done);
                return self.rwsem_done(t, done);
            }
            if !first {
                self.rwsem_cond_wake_waiter(c, s);
            }
        } else {
            self.rwsem_cond_wake_waiter(c, s);
            if table(&mut self.locking_mut().objects).all[s as usize].holds(t, LockMode::Read) {
                // Granted to itself among the queued readers.
                let p = self.locking_parts();
                let done = table(&mut p.locking.objects).all[s as usize]
                    .wait_lock()
                    .store(p.cost, c, done);
                return self.rwsem_done(t, done);
            }
        }
        // raw_spin_unlock_irq(&sem->wait_lock) before schedule().
        let p = self.locking_parts();
        let done = table(&mut p.locking.objects).all[s as usize]
            .wait_lock()
            .store(p.cost, c, done);
        p.tasks[t as usize].batch.push(Mode::Sys, done - p.now);
        self.rwsem_sleep(c, t)
    }

    fn rwsem_sleep(&mut self, c: u32, t: TaskId) -> Flow {
        let wait_start = self.tasks_mut()[t as usize].wait.wait_start;
        self.tasks_mut()[t as usize].resume = Resume::Lock(RwsemStep::Woken as u8);
        self.block(c, t);
        // Keep the lock-wait start, not the sleep start, for lock_stat.
        self.tasks_mut()[t as usize].wait.wait_start = wait_start;
        Flow::Stop
    }

    /// Back from the wait list: a reader was granted the lock before it
    /// was woken; a writer retries under `wait_lock`.
    fn rwsem_woken(&mut self, c: u32, t: TaskId, s: u32, mode: LockMode) -> Flow {
        let now = self.now();
        if table(&mut self.locking_mut().objects).all[s as usize].holds(t, mode) {
            return self.rwsem_done(t, now);
        }
        if mode == LockMode::Read {
            // Woken without the lock (cannot happen in the kernel, but a
            // spurious wakeup must not lose the waiter): sleep again.
            return self.rwsem_sleep(c, t);
        }
        // raw_spin_lock_irq(&sem->wait_lock), rwsem_try_write_lock()'s
        // read and cmpxchg of `count`, raw_spin_unlock_irq().
        let p = self.locking_parts();
        let sem = &mut table(&mut p.locking.objects).all[s as usize];
        let locked = sem.wait_lock().rmw(p.cost, c, now);
        let at = sem.count_under_wait_lock(p.cost, c, locked);
        let got = self.rwsem_try_write_lock(t, s, at);
        let p = self.locking_parts();
        let done = table(&mut p.locking.objects).all[s as usize]
            .wait_lock()
            .store(p.cost, c, at);
        if got {
            return self.rwsem_done(t, done);
        }
        self.tasks_mut()[t as usize]
            .batch
            .push(Mode::Sys, done - now);
        self.rwsem_sleep(c, t)
    }

    /// `rwsem_try_write_lock()` for the queued writer `t`, under
    /// `wait_lock`: takes the lock if it is free and no one else has the
    /// handoff; otherwise sets the handoff bit once `t` waited long enough.
    fn rwsem_try_write_lock(&mut self, t: TaskId, s: u32, at: Nanos) -> bool {
        let now = self.now();
        let sem = &mut table(&mut self.locking_mut().objects).all[s as usize];
        let Some(i) = sem.waiters.iter().position(|w| w.task == t) else {
            return false;
        };
        let first = i == 0;
        if sem.handoff && !first {
            return false;
        }
        if !sem.unlocked() {
            if !sem.handoff && now >= sem.waiters[i].timeout {
                sem.handoff = true;
                let object = sem.object;
                self.metrics_mut().lock_handoff(now, object);
            }
            return false;
        }
        sem.waiters.remove(i);
        sem.handoff = false;
        self.rwsem_granted(t, s, LockMode::Write, at, true);
        true
    }

    /// The lock is `t`'s in `mode` from `at`; `contended` if the acquire
    /// found it unavailable (lock_stat counted a contention).
    fn rwsem_granted(&mut self, t: TaskId, s: u32, mode: LockMode, at: Nanos, contended: bool) {
        let sem = &mut table(&mut self.locking_mut().objects).all[s as usize];
        if mode == LockMode::Read {
            sem.readers.push((t, at));
            // __rwsem_set_reader_owned() keeps RWSEM_NONSPINNABLE.
            sem.reader_owned = true;
        } else {
            sem.writer = t;
            sem.acquired_at = at;
            // rwsem_set_owner() clears the owner's flags.
            sem.reader_owned = false;
            sem.nonspinnable = false;
            sem.rd_nonspinnable = false;
        }
        crate::invariants::check(crate::invariants::rw_owners(
            "an rwsem",
            sem.writer,
            sem.readers.len(),
        ));
        let object = sem.object;
        // lock_stat records wait time only for an acquisition it counted
        // as contended (lock_contended() set its waittime stamp): the
        // uncontended fast path's atomic is not a wait.
        let waited =
            contended.then(|| at.saturating_sub(self.tasks_mut()[t as usize].wait.wait_start));
        // A reader granted by its waker is counted on the CPU it last ran
        // on (the kernel counts it when it runs again).
        let on = LockCpu::new(s, self.tasks_mut()[t as usize].cpu);
        let now = self.now();
        self.metrics_mut()
            .lock_acquired_mode(now, object, on, mode, waited);
    }

    /// `up_read()` / `up_write()` of instance `s`.
    fn rwsem_up(&mut self, c: u32, t: TaskId, s: u32, mode: LockMode) {
        let now = self.now();
        let sem = &mut table(&mut self.locking_mut().objects).all[s as usize];
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
            self.rwsem_bad_release(c, t, s, mode);
            self.advance(t);
            return;
        };
        let p = self.locking_parts();
        let sem = &mut table(&mut p.locking.objects).all[s as usize];
        let mut done = sem.line.rmw(p.cost, c, now);
        let object = sem.object;
        p.metrics
            .lock_released_mode(now, object, mode, now.saturating_sub(since));
        let sem = &mut table(&mut self.locking_mut().objects).all[s as usize];
        if sem.unlocked() {
            // clear_nonspinnable() on the last reader's way out.
            sem.nonspinnable = false;
            if !sem.waiters.is_empty() {
                // rwsem_wake()
                done = self.rwsem_wake(c, s, WakeType::Any, done);
            }
        }
        self.tasks_mut()[t as usize]
            .batch
            .push(Mode::Sys, done - now);
        self.rwsem_spinner_check(s);
        self.advance(t);
    }

    /// `downgrade_write()`: the writer becomes a reader and wakes the
    /// queued readers.
    fn rwsem_downgrade_write(&mut self, c: u32, t: TaskId, s: u32) {
        let now = self.now();
        if table(&mut self.locking_mut().objects).all[s as usize].writer != t {
            self.rwsem_bad_release(c, t, s, LockMode::Exclusive);
            self.advance(t);
            return;
        }
        let p = self.locking_parts();
        let sem = &mut table(&mut p.locking.objects).all[s as usize];
        let mut done = sem.line.rmw(p.cost, c, now);
        let (object, since) = (sem.object, sem.acquired_at);
        p.metrics
            .lock_released_mode(now, object, LockMode::Write, now.saturating_sub(since));
        let sem = &mut table(&mut self.locking_mut().objects).all[s as usize];
        sem.writer = NO_TASK;
        sem.readers.push((t, now));
        sem.reader_owned = true;
        if !sem.waiters.is_empty() {
            // rwsem_downgrade_wake()
            done = self.rwsem_wake(c, s, WakeType::ReadOwned, done);
        }
        self.tasks_mut()[t as usize]
            .batch
            .push(Mode::Sys, done - now);
        self.rwsem_spinner_check(s);
        self.advance(t);
    }

    /// `down_read_trylock()` / `down_write_trylock()`: one cmpxchg; true
    /// if the lock was taken.
    fn rwsem_trylock(&mut self, c: u32, t: TaskId, s: u32, mode: LockMode) -> bool {
        let now = self.now();
        self.tasks_mut()[t as usize].wait.wait_start = now;
        let p = self.locking_parts();
        let sem = &mut table(&mut p.locking.objects).all[s as usize];
        let at = sem.line.rmw(p.cost, c, now);
        // __down_read_trylock(): no bit of RWSEM_READ_FAILED_MASK;
        // __down_write_trylock(): `count` is 0.
        let got = sem.waiters.is_empty() && sem.free_for(mode);
        if got {
            self.rwsem_granted(t, s, mode, at, false);
        }
        self.tasks_mut()[t as usize].batch.push(Mode::Sys, at - now);
        got
    }

    /// A release of what `t` does not hold, in the kernel's words:
    /// `DEBUG_RWSEMS_WARN_ON()` where `CONFIG_DEBUG_RWSEMS` checks it,
    /// lockdep's bad unlock balance where only lockdep would notice.
    fn rwsem_bad_release(&mut self, c: u32, t: TaskId, s: u32, mode: LockMode) {
        let (name, lock) = (self.task_name(t), self.object_name(s));
        let sem = &table_ref(&self.locking().objects).all[s as usize];
        let check = match mode {
            LockMode::Read if sem.readers.is_empty() => Some("!is_rwsem_reader_owned(sem)"),
            LockMode::Read => None,
            LockMode::Write => {
                Some("(rwsem_owner(sem) != current) && !rwsem_test_oflags(sem, RWSEM_NONSPINNABLE)")
            }
            // downgrade_write()
            _ => Some("rwsem_owner(sem) != current"),
        };
        let op = match mode {
            LockMode::Read => "up_read",
            LockMode::Write => "up_write",
            _ => "downgrade_write",
        };
        match check {
            Some(check) => {
                let owner = match sem.writer {
                    NO_TASK if sem.reader_owned => "readers".to_string(),
                    NO_TASK => "none".to_string(),
                    w => self.task_name(w),
                };
                let now = self.now();
                self.metrics_mut()
                    .rwsem_warn(c, now, &name, op, &lock, check, &owner);
            }
            None => {
                let now = self.now();
                self.metrics_mut().bad_unlock(c, now, &name, op, &lock)
            }
        }
    }
}

impl<K: LockingEnv> RwsemOps for K {}

/// An rwsem's name, for the reports.
pub(crate) trait RwsemNames: LockingEnv {
    /// The declared name of instance `s`'s object.
    fn object_name(&self, s: u32) -> String {
        let object = table_ref(&self.locking().objects).all[s as usize].object as usize;
        self.spec().objects[object].name.clone()
    }
}

impl<K: LockingEnv> RwsemNames for K {}

/// `enum rwsem_wake_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WakeType {
    /// `RWSEM_WAKE_ANY`: the lock is free; wake a writer or readers.
    Any,
    /// `RWSEM_WAKE_READERS`: readers hold it; wake only readers.
    Readers,
    /// `RWSEM_WAKE_READ_OWNED`: the waker holds it for read.
    ReadOwned,
}

/// The kernel function an rwsem op is.
fn rwsem_op_name(mode: LockMode, take: bool) -> &'static str {
    match (mode, take) {
        (LockMode::Read, true) => "down_read",
        (LockMode::Read, false) => "up_read",
        (_, true) => "down_write",
        (_, false) => "up_write",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_timeout_is_four_ms_at_common_hz() {
        assert_eq!(wait_timeout(250), 4_000_000);
        assert_eq!(wait_timeout(1000), 4_000_000);
        // HZ=100: one jiffy, 10 ms.
        assert_eq!(wait_timeout(100), 10_000_000);
    }

    /// Eight writers on a contended rwsem without optimistic spinning:
    /// every acquisition that finds it held queues under `wait_lock` and
    /// every release with waiters takes `wait_lock` in `rwsem_wake()`.
    /// Returns the rwsem after the run and how many acquisitions it saw.
    fn contended_down_write(split: bool) -> (Rwsem, u64) {
        use crate::program::{Dist, ObjRef, Op};
        use crate::spec::{ObjectDecl, Policy};
        use crate::testkit::*;
        const US: u64 = 1_000;
        let mut s = spec(flat_machine(8), 5_000 * US);
        s.objects.push(ObjectDecl {
            name: "sem".into(),
            kind: ObjectKind::Rwsem {
                spin: false,
                reader_spin: false,
            },
            per_cpu: false,
        });
        if split {
            s.layout.split = vec![(0, vec![])];
        }
        let acquired = counter(&mut s, "acquired");
        let sem = ObjRef {
            object: 0,
            index: None,
        };
        forever(
            &mut s,
            "writer",
            (0..8).collect(),
            Policy::Normal,
            vec![
                lock_op(&sem, LockMode::Write, true),
                Op::Work(Dist::Const(US)),
                lock_op(&sem, LockMode::Write, false),
                Op::Count(acquired),
                Op::Work(Dist::Exp { mean: 2 * US }),
            ],
        );
        let mut k = crate::Kernel::new(&s);
        k.run();
        let n = k.metrics.counters[acquired as usize];
        let sem = std::mem::take(&mut k.locking.objects.rwsems.all)
            .into_iter()
            .next()
            .expect("one rwsem");
        (sem, n)
    }

    /// With `wait_lock` and `wait_list` on a line of their own, a
    /// contended `down_write()`'s `wait_lock` acquires and releases land
    /// there: the `count` line sees about two RMWs fewer per acquisition
    /// (6.0 on one line, 4.0 on two in this run), and the slow path now
    /// moves two lines where it moved one (line transfers per acquisition
    /// 2.5 on one line, 2.5 + 2.5 on two).
    #[test]
    fn a_split_rwsem_keeps_wait_lock_traffic_off_the_count_line() {
        let (one, one_n) = contended_down_write(false);
        let (two, two_n) = contended_down_write(true);
        assert!(one.wait_line.is_none());
        let wait = two.wait_line.as_ref().expect("split");
        assert!(one_n > 1000 && two_n > 1000, "{one_n} {two_n}");
        let per = |x: u64, n: u64| x as f64 / n as f64;
        let figures = format!(
            "one line: {one_n} acquisitions, {} rmws, {} transfers; two: {two_n}, count {} rmws {} transfers, wait_lock {} rmws {} transfers",
            one.line.rmws, one.line.transfers, two.line.rmws, two.line.transfers, wait.rmws, wait.transfers
        );
        assert!(
            per(two.line.rmws, two_n) < per(one.line.rmws, one_n) - 1.5,
            "{figures}"
        );
        assert!(per(wait.rmws, two_n) > 1.5, "{figures}");
        assert!(
            per(two.line.transfers + wait.transfers, two_n) > 1.5 * per(one.line.transfers, one_n),
            "{figures}"
        );
    }

    #[test]
    fn rspin_threshold_grows_with_readers_to_25us() {
        assert_eq!(rspin_threshold(0), 10_000);
        assert_eq!(rspin_threshold(10), 15_000);
        assert_eq!(rspin_threshold(30), 25_000);
        assert_eq!(rspin_threshold(1000), 25_000);
    }
}
