//! `lock_stat` as lockdep books it (`kernel/locking/lockdep.c` under
//! `CONFIG_LOCK_STAT`), for every lock kind alike.
//!
//! # Lifecycle
//!
//! [`crate::locking::build::objects`] makes one empty
//! [`LockStat`] row per declared object (a class: all its instances).
//! While the run goes on, each lock kind calls, on its object's row:
//!
//! - [`Metrics::lock_contended`] when an acquisition finds the lock taken
//!   (`__lock_contended()`): a contention, and the wait starts here (the
//!   kernel's `hlock->waittime_stamp`). If the instance was last acquired
//!   on another CPU, a `con-bounce`.
//! - [`Metrics::lock_acquired`] when it gets it (`__lock_acquired()`): an
//!   acquisition, the wait since [`Metrics::lock_contended`] if there was
//!   one, and an `acq-bounce` if the instance was last acquired on
//!   another CPU; this CPU then becomes the instance's (`lock->cpu = cpu`).
//! - [`Metrics::lock_released`] when it lets go: the hold time.
//!
//! The `_mode` forms book a reader-writer lock's read side on its own row
//! (`NAME-R`, with `bounce_contended_read` / `bounce_acquired_read`); both
//! sides share the instance's CPU, one `struct lockdep_map`. Only the
//! measured part of the run counts, but the instance's CPU follows every
//! acquisition, warm-up included, as `lock->cpu` does. An instance not yet
//! acquired starts at CPU 0: a statically defined lock's `lockdep_map` is
//! zero-filled, and `lockdep_init_map()` records the CPU that initialises
//! it, the boot CPU for the model's objects. The run's result takes the
//! rows as they are (`sim::collect` adds the model's own `bounces`) and
//! replicas add them up.

use smpsim_engine::Nanos;

use crate::metrics::Metrics;
use crate::program::LockMode;
use crate::result::{LockStat, ReadSide};

/// Where a `lock_stat` event happens: on lock instance `instance` (its
/// index in its kind's table; with the object it names one `struct
/// lockdep_map`), by CPU `cpu` (`smp_processor_id()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockCpu {
    pub instance: u32,
    pub cpu: u32,
}

impl LockCpu {
    pub fn new(instance: u32, cpu: u32) -> Self {
        LockCpu { instance, cpu }
    }
}

/// Which of a lock row's times a sample is of (an index of
/// `Metrics::lock_samples`).
#[derive(Clone, Copy)]
enum LockTime {
    Wait = 0,
    Hold = 1,
    ReadWait = 2,
    ReadHold = 3,
}

/// The counts of one side of a row (`write_*` or `read_*` in lockdep's
/// `struct lock_class_stats`) an acquisition adds to.
struct Side<'a> {
    acquisitions: &'a mut u64,
    acq_bounces: &'a mut u64,
    wait_total_ns: &'a mut Nanos,
    wait_min_ns: &'a mut Nanos,
    wait_max_ns: &'a mut Nanos,
}

impl<'a> Side<'a> {
    fn write(l: &'a mut LockStat) -> Self {
        Side {
            acquisitions: &mut l.acquisitions,
            acq_bounces: &mut l.acq_bounces,
            wait_total_ns: &mut l.wait_total_ns,
            wait_min_ns: &mut l.wait_min_ns,
            wait_max_ns: &mut l.wait_max_ns,
        }
    }

    fn read(r: &'a mut ReadSide) -> Self {
        Side {
            acquisitions: &mut r.acquisitions,
            acq_bounces: &mut r.acq_bounces,
            wait_total_ns: &mut r.wait_total_ns,
            wait_min_ns: &mut r.wait_min_ns,
            wait_max_ns: &mut r.wait_max_ns,
        }
    }
}

impl Metrics {
    /// Counts a sample of `which` of lock row `object`; whether it is the
    /// first one or `v` is below the minimum `min` so far: `lock_time_inc()`'s
    /// `time < lt->min || !lt->nr`.
    fn new_min(
        samples: &mut [[u64; 4]],
        object: u32,
        which: LockTime,
        v: Nanos,
        min: Nanos,
    ) -> bool {
        let nr = &mut samples[object as usize][which as usize];
        *nr += 1;
        *nr == 1 || v < min
    }

    /// Grows the per-row sample counts to the rows there are (rows are
    /// added while the objects are built, before the run).
    #[inline]
    fn grow_lock_samples(&mut self) {
        if self.lock_samples.len() < self.locks.len() {
            self.resize_lock_samples();
        }
    }

    /// Out of line: it happens once per row, and inlined its call would
    /// make every booking save more registers.
    #[cold]
    #[inline(never)]
    fn resize_lock_samples(&mut self) {
        self.lock_samples.resize(self.locks.len(), [0; 4]);
    }

    /// Whether the instance was last acquired on another CPU than `on`'s
    /// (`lock->cpu != smp_processor_id()`).
    fn bounces_to(&self, object: u32, on: LockCpu) -> bool {
        let last = self
            .lock_cpu
            .get(object as usize)
            .and_then(|cpus| cpus.get(on.instance as usize));
        last.copied().unwrap_or(0) != on.cpu
    }

    /// `lock->cpu = cpu`; returns whether that moved the instance (it was
    /// last acquired on another CPU): one look-up for both.
    #[inline]
    fn set_lock_cpu(&mut self, object: u32, on: LockCpu) -> bool {
        let slot = self
            .lock_cpu
            .get_mut(object as usize)
            .and_then(|cpus| cpus.get_mut(on.instance as usize));
        match slot {
            Some(last) => std::mem::replace(last, on.cpu) != on.cpu,
            None => self.first_lock_cpu(object, on),
        }
    }

    /// [`Self::set_lock_cpu`] of an instance not acquired before: the
    /// table grows to reach it (out of line, as
    /// [`Self::resize_lock_samples`]).
    #[cold]
    #[inline(never)]
    fn first_lock_cpu(&mut self, object: u32, on: LockCpu) -> bool {
        let (object, instance) = (object as usize, on.instance as usize);
        if self.lock_cpu.len() <= object {
            self.lock_cpu.resize(object + 1, Vec::new());
        }
        let cpus = &mut self.lock_cpu[object];
        if cpus.len() <= instance {
            cpus.resize(instance + 1, 0);
        }
        std::mem::replace(&mut cpus[instance], on.cpu) != on.cpu
    }

    /// Whether the read side of row `object` books an event in `mode`.
    fn on_read_side(&self, object: u32, mode: LockMode) -> bool {
        mode == LockMode::Read && self.locks[object as usize].read.is_some()
    }

    /// An acquisition that found the lock taken: `__lock_contended()`.
    pub fn lock_contended(&mut self, now: Nanos, object: u32, on: LockCpu) {
        self.lock_contended_mode(now, object, on, LockMode::Exclusive);
    }

    /// An acquisition: `waited` is `Some(wait)` for one that went through
    /// [`Self::lock_contended`] (the wait since then) and `None` for the
    /// fast path. As the kernel's `__lock_acquired()`, which computes a
    /// waittime only when `lock_contended()` set `hlock->waittime_stamp`:
    /// an uncontended acquisition's atomic, however long its cache-line
    /// transfer, is no wait, so waittime-total stays 0 while contentions
    /// are 0.
    pub fn lock_acquired(&mut self, now: Nanos, object: u32, on: LockCpu, waited: Option<Nanos>) {
        self.acquired_on_side(now, object, on, false, waited);
    }

    /// A release after holding the lock `held`.
    pub fn lock_released(&mut self, now: Nanos, object: u32, held: Nanos) {
        self.released_on_side(now, object, false, held);
    }

    /// [`Self::lock_contended`] of a lock taken in `mode`: a read of a
    /// reader-writer lock counts on its read side (`NAME-R`).
    pub fn lock_contended_mode(&mut self, now: Nanos, object: u32, on: LockCpu, mode: LockMode) {
        if !self.measuring(now) {
            return;
        }
        let bounce = u64::from(self.bounces_to(object, on));
        let read = self.on_read_side(object, mode);
        let l = &mut self.locks[object as usize];
        match l.read.as_mut().filter(|_| read) {
            Some(r) => {
                r.contentions += 1;
                r.con_bounces += bounce;
            }
            None => {
                l.contentions += 1;
                l.con_bounces += bounce;
            }
        }
    }

    /// [`Self::lock_acquired`] of a lock taken in `mode`.
    pub fn lock_acquired_mode(
        &mut self,
        now: Nanos,
        object: u32,
        on: LockCpu,
        mode: LockMode,
        waited: Option<Nanos>,
    ) {
        let read = self.on_read_side(object, mode);
        self.acquired_on_side(now, object, on, read, waited);
    }

    /// [`Self::lock_acquired_mode`] on the read side (`read`) or the write
    /// side of the row; inlined so that the exclusive form, by far the
    /// commonest, drops the read side's branches.
    #[inline(always)]
    fn acquired_on_side(
        &mut self,
        now: Nanos,
        object: u32,
        on: LockCpu,
        read: bool,
        waited: Option<Nanos>,
    ) {
        let bounce = u64::from(self.set_lock_cpu(object, on));
        if !self.measuring(now) {
            return;
        }
        // `if (waittime) lock_time_inc(...)`: a wait that took no time is
        // no sample.
        let waited = waited.filter(|&w| w > 0);
        let which = if read {
            LockTime::ReadWait
        } else {
            LockTime::Wait
        };
        if waited.is_some() {
            self.grow_lock_samples();
        }
        let l = &mut self.locks[object as usize];
        let side = match l.read.as_mut().filter(|_| read) {
            Some(r) => Side::read(r),
            None => Side::write(l),
        };
        *side.acquisitions += 1;
        *side.acq_bounces += bounce;
        if let Some(waited) = waited {
            *side.wait_total_ns += waited;
            *side.wait_max_ns = (*side.wait_max_ns).max(waited);
            let min = *side.wait_min_ns;
            if Self::new_min(&mut self.lock_samples, object, which, waited, min) {
                *side.wait_min_ns = waited;
            }
        }
    }

    /// [`Self::lock_released`] of a lock held in `mode`.
    pub fn lock_released_mode(&mut self, now: Nanos, object: u32, mode: LockMode, held: Nanos) {
        let read = self.on_read_side(object, mode);
        self.released_on_side(now, object, read, held);
    }

    /// [`Self::lock_released_mode`] on one side of the row (see
    /// [`Self::acquired_on_side`]).
    #[inline(always)]
    fn released_on_side(&mut self, now: Nanos, object: u32, read: bool, held: Nanos) {
        if !self.measuring(now) {
            return;
        }
        let which = if read {
            LockTime::ReadHold
        } else {
            LockTime::Hold
        };
        self.grow_lock_samples();
        let l = &mut self.locks[object as usize];
        let (total, min, max) = match l.read.as_mut().filter(|_| read) {
            Some(r) => (&mut r.hold_total_ns, &mut r.hold_min_ns, &mut r.hold_max_ns),
            None => (&mut l.hold_total_ns, &mut l.hold_min_ns, &mut l.hold_max_ns),
        };
        *total += held;
        *max = (*max).max(held);
        if Self::new_min(&mut self.lock_samples, object, which, held, *min) {
            *min = held;
        }
    }

    /// A wait still going on when the run ends, `waited` so far: booked in
    /// the wait total and maximum (not as an acquisition, and not as a
    /// sample of the minimum). The kernel books a wait when it ends; a
    /// waiter starved for the whole run would otherwise leave its wait out
    /// of lock_stat while its spinning is in `spin-total`.
    pub fn lock_wait_in_progress(
        &mut self,
        now: Nanos,
        object: u32,
        mode: LockMode,
        waited: Nanos,
    ) {
        if !self.measuring(now) || waited == 0 {
            return;
        }
        let read = self.on_read_side(object, mode);
        let l = &mut self.locks[object as usize];
        let (total, max) = match l.read.as_mut().filter(|_| read) {
            Some(r) => (&mut r.wait_total_ns, &mut r.wait_max_ns),
            None => (&mut l.wait_total_ns, &mut l.wait_max_ns),
        };
        *total += waited;
        *max = (*max).max(waited);
    }

    /// An acquisition by handoff (`MUTEX_FLAG_HANDOFF`).
    pub fn lock_handoff(&mut self, now: Nanos, object: u32) {
        if self.measuring(now) {
            self.locks[object as usize].handoffs += 1;
        }
    }

    /// Time spent spinning for the lock.
    pub fn lock_spin(&mut self, now: Nanos, object: u32, spun: Nanos) {
        if self.measuring(now) {
            self.locks[object as usize].spin_total_ns += spun;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WARMUP: Nanos = 1_000;

    /// Metrics with one lock row (a read side if `rw`), measuring from
    /// `WARMUP`.
    fn metrics(rw: bool) -> Metrics {
        let mut m = Metrics::new(4, 1_000_000, WARMUP, 1_000_000, 0, 0);
        m.locks.push(LockStat {
            name: "lock".into(),
            instances: 2,
            read: rw.then(ReadSide::default),
            ..Default::default()
        });
        m
    }

    /// The first wait and hold set the minima (a zero minimum is "no
    /// sample yet"), later ones only lower them; each side keeps its own.
    #[test]
    fn minima_start_at_the_first_sample() {
        let mut m = metrics(true);
        m.lock_released(WARMUP, 0, 50);
        m.lock_released(WARMUP, 0, 70);
        m.lock_released(WARMUP, 0, 20);
        m.lock_acquired(WARMUP, 0, LockCpu::new(0, 0), Some(9));
        m.lock_acquired(WARMUP, 0, LockCpu::new(0, 0), Some(0));
        m.lock_acquired(WARMUP, 0, LockCpu::new(0, 0), Some(12));
        m.lock_released_mode(WARMUP, 0, LockMode::Read, 30);
        m.lock_acquired_mode(WARMUP, 0, LockCpu::new(0, 0), LockMode::Read, Some(4));
        let (w, r) = (&m.locks[0], m.locks[0].read.unwrap());
        assert_eq!(
            (w.hold_min_ns, w.hold_max_ns, w.hold_total_ns),
            (20, 70, 140)
        );
        assert_eq!((w.wait_min_ns, w.wait_max_ns, w.wait_total_ns), (9, 12, 21));
        assert_eq!((r.hold_min_ns, r.wait_min_ns, r.acquisitions), (30, 4, 1));
        assert_eq!(m.lock_samples[0], [2, 3, 1, 1]);
    }

    #[test]
    fn acq_bounces_count_acquisitions_on_another_cpu_than_the_last() {
        let mut m = metrics(false);
        // Alternately on CPUs 1 and 2: every acquisition moves the lock
        // (the first from CPU 0, where an unused lock starts).
        for i in 0..10u64 {
            let cpu = 1 + (i % 2) as u32;
            m.lock_acquired(WARMUP + i, 0, LockCpu::new(0, cpu), None);
        }
        assert_eq!((m.locks[0].acquisitions, m.locks[0].acq_bounces), (10, 10));
        // Then 10 times on CPU 2, the last one: none.
        for i in 0..10u64 {
            m.lock_acquired(WARMUP + 10 + i, 0, LockCpu::new(0, 2), None);
        }
        assert_eq!((m.locks[0].acquisitions, m.locks[0].acq_bounces), (20, 10));
        // The other instance has its own CPU (still 0).
        m.lock_acquired(WARMUP + 30, 0, LockCpu::new(1, 0), None);
        assert_eq!(m.locks[0].acq_bounces, 10);
        assert_eq!(m.locks[0].con_bounces, 0);
    }

    #[test]
    fn con_bounces_only_when_contended_from_another_cpu_than_the_last_acquirer() {
        let mut m = metrics(false);
        m.lock_acquired(WARMUP, 0, LockCpu::new(0, 3), None);
        // Contended from the last acquirer's CPU: no con-bounce.
        m.lock_contended(WARMUP + 1, 0, LockCpu::new(0, 3));
        assert_eq!((m.locks[0].contentions, m.locks[0].con_bounces), (1, 0));
        // From another CPU: one; lock_contended() does not move the lock.
        m.lock_contended(WARMUP + 2, 0, LockCpu::new(0, 1));
        m.lock_contended(WARMUP + 3, 0, LockCpu::new(0, 1));
        assert_eq!((m.locks[0].contentions, m.locks[0].con_bounces), (3, 2));
        m.lock_acquired(WARMUP + 9, 0, LockCpu::new(0, 1), Some(7));
        assert_eq!(m.locks[0].acq_bounces, 2);
        assert_eq!(m.locks[0].wait_total_ns, 7);
    }

    #[test]
    fn the_warm_up_moves_the_lock_but_counts_nothing() {
        let mut m = metrics(false);
        m.lock_acquired(0, 0, LockCpu::new(0, 2), Some(5));
        m.lock_contended(1, 0, LockCpu::new(0, 1));
        assert_eq!(m.locks[0], metrics(false).locks[0]);
        // Measured: CPU 2 had it last, so no bounce on CPU 2.
        m.lock_acquired(WARMUP, 0, LockCpu::new(0, 2), None);
        assert_eq!((m.locks[0].acquisitions, m.locks[0].acq_bounces), (1, 0));
    }

    #[test]
    fn the_read_side_counts_its_own_bounces_on_the_shared_instance_cpu() {
        let mut m = metrics(true);
        m.lock_acquired_mode(WARMUP, 0, LockCpu::new(0, 1), LockMode::Write, None);
        m.lock_contended_mode(WARMUP + 1, 0, LockCpu::new(0, 2), LockMode::Read);
        m.lock_acquired_mode(WARMUP + 2, 0, LockCpu::new(0, 2), LockMode::Read, Some(1));
        m.lock_acquired_mode(WARMUP + 3, 0, LockCpu::new(0, 2), LockMode::Read, None);
        let (w, r) = (&m.locks[0], m.locks[0].read.unwrap());
        assert_eq!((w.acquisitions, w.acq_bounces, w.con_bounces), (1, 1, 0));
        assert_eq!((r.acquisitions, r.acq_bounces, r.contentions), (2, 1, 1));
        assert_eq!((r.con_bounces, r.wait_total_ns, w.wait_total_ns), (1, 1, 0));
        // A writer after the readers on CPU 2 bounces from there.
        m.lock_acquired_mode(WARMUP + 4, 0, LockCpu::new(0, 1), LockMode::Write, None);
        assert_eq!(m.locks[0].acq_bounces, 2);
    }
}
