//! What the run measures while it runs: counters, latency histograms,
//! per-CPU section maxima per window, lock statistics (booked by
//! [`crate::lock_stat`]), detector findings.

use hdrhistogram::Histogram;
use smpsim_engine::Nanos;

pub use crate::result::LockStat;
use crate::result::{Detector, Finding};

/// Kernel detector thresholds (defaults from the kernel's own).
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    /// Hard lockup: IRQs off this long (`watchdog_thresh` = 10 s).
    pub hard_lockup: Nanos,
    /// Soft lockup: no reschedule this long (2 x `watchdog_thresh`).
    pub soft_lockup: Nanos,
    /// `csd_lock_timeout` (CONFIG_CSD_LOCK_WAIT_DEBUG) = 5 s.
    pub csd_lock_timeout: Nanos,
    /// `hung_task_timeout_secs` = 120 s.
    pub hung_task: Nanos,
    /// `rcupdate.rcu_cpu_stall_timeout` = 21 s.
    pub rcu_stall: Nanos,
}

impl Thresholds {
    /// From the kernel's own knobs: `watchdog_thresh` (hard lockup, and
    /// twice it for a soft lockup), `hung_task_timeout_secs`,
    /// `csd_lock_timeout`.
    pub fn from_knobs(k: &crate::spec::Knobs) -> Self {
        Thresholds {
            hard_lockup: k.watchdog_thresh,
            soft_lockup: 2 * k.watchdog_thresh,
            csd_lock_timeout: k.csd_lock_timeout,
            hung_task: k.hung_task_timeout,
            rcu_stall: k.rcu_cpu_stall_timeout,
        }
    }
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds::from_knobs(&crate::spec::Knobs::default())
    }
}

pub struct Metrics {
    pub warmup: Nanos,
    /// The end of the run (its duration).
    pub end: Nanos,
    pub window: Nanos,
    pub windows: usize,
    /// The measured run is shorter than one window: it is the only one.
    partial_window: bool,
    pub counters: Vec<u64>,
    pub hists: Vec<Histogram<u64>>,
    /// Beside each histogram: its samples' exact minimum and maximum.
    pub exact: Vec<crate::result::ExactSamples>,
    /// Per CPU, per window: longest preempt-disabled section ending in it.
    pub preempt_off_windows: Vec<Nanos>,
    pub irq_off_windows: Vec<Nanos>,
    /// Per CPU: longest sections over the whole measured run.
    pub max_preempt_off: Vec<Nanos>,
    pub max_irq_off: Vec<Nanos>,
    /// Per CPU: preempt-off sections of 1-10, 10-50, 50-100 and 100+ ms.
    pub long_preempt_off: Vec<[u64; 4]>,
    pub locks: Vec<LockStat>,
    /// Per lock row: how many write waits, write holds, read waits and
    /// read holds were sampled, for the minimum's first sample (lockdep's
    /// `lock_time_inc()` keys it on `lt->nr`).
    pub(crate) lock_samples: Vec<[u64; 4]>,
    /// Per lock instance (object, index in its kind's table): the CPU
    /// that last acquired it, lockdep's `lock->cpu`; an instance not yet
    /// acquired counts as CPU 0 ([`crate::lock_stat`]). Indexed
    /// `[object][instance]`, grown on first use: no hashing on the
    /// acquisition path.
    pub(crate) lock_cpu: Vec<Vec<u32>>,
    pub findings: Vec<Finding>,
    pub thresholds: Thresholds,
    /// Histogram names: the spec's, then the kernel's own.
    pub(crate) hist_names: Vec<String>,
    /// Line transfers of each object's lines when the warm-up ended.
    pub(crate) bounce_base: Vec<u64>,
    /// Each object's failed compare-and-exchanges at the end of the
    /// warm-up, as `bounce_base`.
    pub(crate) cmpxchg_fails_base: Vec<u64>,
    /// Each object's OSQ head-role passes (within a node, across nodes)
    /// at the end of the warm-up.
    pub(crate) osq_passes_base: Vec<(u64, u64)>,
    /// Each CPU's and each task's times when the warm-up ended: results
    /// report the measured part only, as lock_stat and counters do.
    pub(crate) cpu_times_base: Vec<crate::cpu::CpuTimes>,
    pub(crate) task_times_base: Vec<crate::task::TaskTimes>,
}

impl Metrics {
    pub fn new(
        cpus: usize,
        duration: Nanos,
        warmup: Nanos,
        window: Nanos,
        counters: usize,
        hists: usize,
    ) -> Self {
        let window = window.max(1);
        // Only whole windows count; a run shorter than one window has one
        // partial window.
        let measured = duration.saturating_sub(warmup);
        let windows = (measured / window).max(1) as usize;
        Metrics {
            warmup,
            end: duration,
            window,
            windows,
            partial_window: measured < window,
            counters: vec![0; counters],
            hists: (0..hists)
                .map(|_| Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("bounds"))
                .collect(),
            exact: vec![crate::result::ExactSamples::default(); hists],
            preempt_off_windows: vec![0; cpus * windows],
            irq_off_windows: vec![0; cpus * windows],
            max_preempt_off: vec![0; cpus],
            max_irq_off: vec![0; cpus],
            long_preempt_off: vec![[0; 4]; cpus],
            locks: Vec::new(),
            lock_samples: Vec::new(),
            lock_cpu: Vec::new(),
            findings: Vec::new(),
            thresholds: Thresholds::default(),
            hist_names: Vec::new(),
            bounce_base: Vec::new(),
            cmpxchg_fails_base: Vec::new(),
            osq_passes_base: Vec::new(),
            cpu_times_base: Vec::new(),
            task_times_base: Vec::new(),
        }
    }

    #[inline]
    pub fn measuring(&self, now: Nanos) -> bool {
        now >= self.warmup
    }

    /// Whether `now` is inside the run (not after its end).
    #[inline]
    pub fn in_run(&self, now: Nanos) -> bool {
        now <= self.end
    }

    #[inline]
    pub fn count(&mut self, now: Nanos, counter: u32) {
        crate::invariants::check(crate::invariants::credit_in_run(now, self.end));
        if self.measuring(now) {
            self.counters[counter as usize] += 1;
        }
    }

    #[inline]
    pub fn record(&mut self, now: Nanos, hist: u32, value: Nanos) {
        crate::invariants::check(crate::invariants::credit_in_run(now, self.end));
        if self.measuring(now) {
            self.hists[hist as usize].saturating_record(value.max(1));
            self.exact[hist as usize].add(value);
        }
    }

    /// A count or sample that happened at `now`; the run's end bounds what
    /// may be credited (nothing is dated after it).
    pub fn credit(&mut self, now: Nanos, what: crate::task::CreditKind) {
        match what {
            crate::task::CreditKind::Count(c) => self.count(now, c),
            crate::task::CreditKind::Record(h, v) => self.record(now, h, v),
        }
    }

    /// The window a section ending at `now` belongs to, if a whole one.
    fn window_of(&self, now: Nanos) -> Option<usize> {
        if self.partial_window {
            return Some(0);
        }
        let w = ((now - self.warmup) / self.window) as usize;
        (w < self.windows).then_some(w)
    }

    /// A preempt-disabled section `[start, now)` ended on `cpu`.
    pub fn preempt_off_section(&mut self, cpu: u32, start: Nanos, now: Nanos) {
        let len = now - start;
        if len >= self.thresholds.soft_lockup {
            // Dated when the section crossed the threshold: the watchdog
            // fires then, not when the section ends.
            let crossed = start.saturating_add(self.thresholds.soft_lockup);
            self.soft_lockup(cpu, crossed, len);
        }
        if self.measuring(now) {
            let c = cpu as usize;
            self.max_preempt_off[c] = self.max_preempt_off[c].max(len);
            let bucket = match len / 1_000_000 {
                0 => None,
                1..=9 => Some(0),
                10..=49 => Some(1),
                50..=99 => Some(2),
                _ => Some(3),
            };
            if let Some(b) = bucket {
                self.long_preempt_off[c][b] += 1;
            }
            if let Some(w) = self.window_of(now) {
                let slot = &mut self.preempt_off_windows[c * self.windows + w];
                *slot = (*slot).max(len);
            }
        }
    }

    /// The soft lockup detector's report of a preempt-disabled section
    /// `len` long. The two reports are out of line: they build strings,
    /// and inlined they would make every section's bookkeeping save more
    /// registers.
    #[cold]
    #[inline(never)]
    fn soft_lockup(&mut self, cpu: u32, now: Nanos, len: Nanos) {
        self.finding(
            Detector::SoftLockup,
            now,
            cpu,
            format!(
                "BUG: soft lockup - CPU#{cpu} stuck for {}s with preemption disabled",
                len / 1_000_000_000
            ),
        );
    }

    /// The hard lockup detector's report of an IRQ-disabled section `len`
    /// long.
    #[cold]
    #[inline(never)]
    fn hard_lockup(&mut self, cpu: u32, now: Nanos, len: Nanos) {
        self.finding(
            Detector::HardLockup,
            now,
            cpu,
            format!(
                "NMI watchdog: Watchdog detected hard LOCKUP on cpu {cpu} (IRQs off for {} ms)",
                len / 1_000_000
            ),
        );
    }

    /// An IRQ-disabled section `[start, now)` ended on `cpu`.
    pub fn irq_off_section(&mut self, cpu: u32, start: Nanos, now: Nanos) {
        let len = now - start;
        if len >= self.thresholds.hard_lockup {
            // Dated when the section crossed the threshold, as the NMI
            // watchdog sees it, not when the section ends.
            let crossed = start.saturating_add(self.thresholds.hard_lockup);
            self.hard_lockup(cpu, crossed, len);
        }
        if self.measuring(now) {
            let c = cpu as usize;
            self.max_irq_off[c] = self.max_irq_off[c].max(len);
            if let Some(w) = self.window_of(now) {
                let slot = &mut self.irq_off_windows[c * self.windows + w];
                *slot = (*slot).max(len);
            }
        }
    }

    pub fn csd_wait(&mut self, cpu: u32, start: Nanos, now: Nanos) {
        if now - start >= self.thresholds.csd_lock_timeout {
            self.finding(
                Detector::CsdLockTimeout,
                now,
                cpu,
                format!(
                    "csd: Detected non-responsive CSD lock on CPU#{cpu} for {} ms",
                    (now - start) / 1_000_000
                ),
            );
        }
    }

    pub fn sleep_in_atomic(&mut self, cpu: u32, now: Nanos, what: &str) {
        self.finding(
            Detector::SleepingInAtomic,
            now,
            cpu,
            format!("BUG: sleeping function called from invalid context ({what}) on CPU#{cpu}"),
        );
    }

    pub fn hung_task(&mut self, cpu: u32, now: Nanos, task: String, blocked: Nanos) {
        self.finding(
            Detector::HungTask,
            now,
            cpu,
            format!(
                "INFO: task {task} blocked for more than {} seconds",
                blocked / 1_000_000_000
            ),
        );
    }

    /// A task runs ops forever without simulated time passing: on a real
    /// CPU that is a loop the softlockup watchdog would catch.
    pub fn no_progress(&mut self, cpu: u32, now: Nanos, task: &str, pc: u32, op: &str) {
        self.finding(
            Detector::SoftLockup,
            now,
            cpu,
            format!(
                "BUG: soft lockup - CPU#{cpu} stuck: {task} loops without using any time, at op #{pc} ({op}); the run stops here"
            ),
        );
    }

    /// `preempt_enable()` (or `rcu_read_unlock()`) without a matching
    /// disable: the kernel's `preempt_count_sub()` warns.
    pub fn preempt_underflow(&mut self, cpu: u32, now: Nanos, task: &str) {
        self.finding(
            Detector::PreemptCountUnderflow,
            now,
            cpu,
            format!(
                "WARNING: CPU: {cpu} PID: {task} at preempt_count_sub: DEBUG_LOCKS_WARN_ON(val > preempt_count()) (preempt_enable() without preempt_disable())"
            ),
        );
    }

    /// lockdep's self-deadlock report: a task takes a lock it holds (not a
    /// recursive read of an rwlock, which lockdep allows).
    pub fn recursive_locking(&mut self, cpu: u32, now: Nanos, task: &str, op: &str, lock: &str) {
        self.finding(
            Detector::RecursiveLocking,
            now,
            cpu,
            format!(
                "WARNING: possible recursive locking detected: {task} is trying to acquire lock ({lock}) with {op}() but task is already holding lock ({lock}); *** DEADLOCK ***"
            ),
        );
    }

    /// The membarrier checker found a CPU the command did not order.
    pub fn membarrier_missed(
        &mut self,
        cpu: u32,
        now: Nanos,
        task: &str,
        missed: u32,
        runner: &str,
        begin: Nanos,
    ) {
        self.finding(
            Detector::Membarrier,
            now,
            cpu,
            format!(
                "membarrier: {task} returned from a command that began at {begin} ns while CPU{missed} ran {runner} of the same mm throughout with no full memory barrier: accesses {runner} made may not be ordered against the caller's"
            ),
        );
    }

    /// `DEBUG_RWSEMS_WARN_ON(check)`: `task` released (or downgraded)
    /// `lock` with `op` without holding it that way.
    #[allow(clippy::too_many_arguments)]
    pub fn rwsem_warn(
        &mut self,
        cpu: u32,
        now: Nanos,
        task: &str,
        op: &str,
        lock: &str,
        check: &str,
        owner: &str,
    ) {
        self.finding(
            Detector::DebugRwsems,
            now,
            cpu,
            format!(
                "DEBUG_RWSEMS_WARN_ON({check}): {task} called {op}() on {lock}, owner = {owner}; the rwsem is left as it was"
            ),
        );
    }

    /// An op named a CPU that does not exist.
    pub fn bad_cpu(&mut self, cpu: u32, now: Nanos, op: &str, target: i64, nr_cpus: u32) {
        self.finding(
            Detector::BadCpu,
            now,
            cpu,
            format!(
                "{op}({target}): no such CPU (the machine has CPUs 0-{}); nothing done",
                nr_cpus - 1
            ),
        );
    }

    /// `cpu_down()` of the last online CPU.
    pub fn offline_last_cpu(&mut self, cpu: u32, now: Nanos, target: u32) {
        self.finding(
            Detector::OfflineLastCpu,
            now,
            cpu,
            format!(
                "cpu_down({target}): -EBUSY: CPU{target} is the last online CPU (num_online_cpus() == 1); it stays online"
            ),
        );
    }

    /// A cross-CPU call or CSD for an offline CPU.
    pub fn ipi_offline_cpu(&mut self, cpu: u32, now: Nanos, message: String) {
        self.finding(Detector::IpiOfflineCpu, now, cpu, message);
    }

    /// An expression divided by zero.
    pub fn divide_error(&mut self, cpu: u32, now: Nanos, task: &str, pc: u32, a: i64, b: i64) {
        self.finding(
            Detector::DivideError,
            now,
            cpu,
            format!("divide error: {task} computed {a} / {b} at op {pc}; the run stops"),
        );
    }

    /// A scenario's `assert` failed.
    pub fn assertion(&mut self, cpu: u32, now: Nanos, task: &str, pc: u32, message: &str) {
        self.finding(
            Detector::Assertion,
            now,
            cpu,
            format!("assertion failed: {message} ({task} on CPU{cpu}, op {pc})"),
        );
    }

    /// The RCU guarantee checker found a reader outliving a grace period.
    pub fn rcu_guarantee(&mut self, cpu: u32, now: Nanos, report: String) {
        self.finding(Detector::RcuGuarantee, now, cpu, report);
    }

    /// The RCU CPU stall warning, as the kernel prints it.
    pub fn rcu_stall(&mut self, cpu: u32, now: Nanos, report: String) {
        self.finding(Detector::RcuStall, now, cpu, report);
    }

    /// lockdep's inconsistent-lock-state report, as the kernel prints it.
    pub fn inconsistent_lock_state(&mut self, cpu: u32, now: Nanos, report: String) {
        self.finding(Detector::InconsistentLockState, now, cpu, report);
    }

    /// lockdep's report of a return to user space with locks held.
    pub fn lock_held_returning_to_user(&mut self, cpu: u32, now: Nanos, report: String) {
        self.finding(Detector::LockHeldReturningToUser, now, cpu, report);
    }

    /// lockdep's circular-dependency report, as the kernel prints it.
    pub fn circular_locking(&mut self, cpu: u32, now: Nanos, report: String) {
        self.finding(Detector::CircularLocking, now, cpu, report);
    }

    /// A per-CPU object indexed outside `[0, nr_cpu_ids)`.
    pub fn bad_index(
        &mut self,
        cpu: u32,
        now: Nanos,
        task: &str,
        object: &str,
        index: i64,
        bound: IndexBound,
    ) {
        let message = match bound {
            IndexBound::NrCpuIds(nr) => format!(
                "BUG: {task} indexed per-CPU `{object}` with {index}, outside [0, {nr}) (nr_cpu_ids); the run stops here"
            ),
            IndexBound::ArrayLen(len) => format!(
                "BUG: {task} indexed array `{object}[{len}]` with {index}, outside [0, {len}); the run stops here"
            ),
        };
        self.finding(Detector::BadPerCpuIndex, now, cpu, message);
    }

    /// lockdep's "bad unlock balance": a release of a lock the task does
    /// not hold (in that mode).
    pub fn bad_unlock(&mut self, cpu: u32, now: Nanos, task: &str, op: &str, lock: &str) {
        self.finding(
            Detector::BadUnlockBalance,
            now,
            cpu,
            format!(
                "WARNING: bad unlock balance detected! {task} is trying to release lock ({lock}) with {op}() but there are no more locks to release!"
            ),
        );
    }

    /// A loop count or `units` evaluated negative: taken as 0.
    pub fn negative_count(
        &mut self,
        cpu: u32,
        now: Nanos,
        task: &str,
        what: &str,
        n: i64,
        at: &str,
    ) {
        self.finding(
            Detector::NegativeCount,
            now,
            cpu,
            format!("{task}: {what} is negative ({n}) in {at}; taken as 0"),
        );
    }

    pub fn mm_violation(&mut self, detector: Detector, now: Nanos, cpu: u32, message: String) {
        self.finding(detector, now, cpu, message);
    }

    pub fn no_longer_affine(&mut self, cpu: u32, now: Nanos, task: &str) {
        self.finding(
            Detector::NoLongerAffine,
            now,
            cpu,
            format!("process {task} no longer affine to cpu{cpu}"),
        );
    }

    /// Records the first finding of each detector (later ones only count).
    fn finding(&mut self, detector: Detector, now: Nanos, cpu: u32, message: String) {
        let detector = detector.name();
        if let Some(f) = self.findings.iter_mut().find(|f| f.detector == detector) {
            f.occurrences += 1;
            return;
        }
        self.findings.push(Finding {
            detector: detector.to_string(),
            time_ns: now,
            cpu,
            message,
            occurrences: 1,
        });
    }
}

/// The `p`-quantile (0..=1) of `values` by nearest rank; 0 when empty.
pub fn nearest_rank(values: &[Nanos], p: f64) -> Nanos {
    if values.is_empty() {
        return 0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = (p * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// What an index was checked against: the CPUs (a per-CPU object) or an
/// object array's length.
#[derive(Clone, Copy, Debug)]
pub enum IndexBound {
    NrCpuIds(u32),
    ArrayLen(u32),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_maxima_and_percentiles_on_a_hand_built_trace() {
        // 2 CPUs, 10 windows of 1 ms after a 1 ms warm-up.
        let mut m = Metrics::new(2, 11_000_000, 1_000_000, 1_000_000, 0, 0);
        assert_eq!(m.windows, 10);
        // Before the warm-up ends: ignored.
        m.preempt_off_section(0, 0, 900_000);
        // cpu0: window k gets sections of (k+1)*10 us and a shorter one.
        for k in 0..10u64 {
            let end = 1_000_000 + k * 1_000_000 + 500_000;
            m.preempt_off_section(0, end - (k + 1) * 10_000, end);
            m.preempt_off_section(0, end + 100_000 - 5_000, end + 100_000);
        }
        // cpu1: one 2 ms section ending in window 3, one 20 ms section.
        m.preempt_off_section(1, 2_500_000, 4_500_000);
        m.preempt_off_section(1, 0, 20_000_000);
        let cpu0: Vec<_> = m.preempt_off_windows[0..10].to_vec();
        assert_eq!(cpu0, (1..=10).map(|k| k * 10_000).collect::<Vec<_>>());
        assert_eq!(nearest_rank(&cpu0, 0.5), 50_000);
        assert_eq!(nearest_rank(&cpu0, 0.99), 100_000);
        assert_eq!(m.max_preempt_off[0], 100_000);
        let cpu1 = &m.preempt_off_windows[10..20];
        assert_eq!(cpu1[3], 2_000_000);
        // The 20 ms section ends after the last whole window: not in a window,
        // but counted in the maximum and the long-section buckets.
        assert_eq!(cpu1.iter().filter(|&&v| v > 0).count(), 1);
        assert_eq!(m.max_preempt_off[1], 20_000_000);
        assert_eq!(m.long_preempt_off[1], [1, 1, 0, 0]);
        assert_eq!(m.long_preempt_off[0], [0, 0, 0, 0]);
    }
}
