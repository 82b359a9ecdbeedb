//! What the run measures while it runs: counters, latency histograms,
//! per-CPU section maxima per window, lock statistics, detector findings.

use hdrhistogram::Histogram;
use smpsim_engine::Nanos;

use crate::result::Finding;

/// `lock_stat`-style counters of one lock class (all instances of an object).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LockStat {
    pub name: String,
    pub instances: u32,
    pub acquisitions: u64,
    /// Acquisitions that found the lock held.
    pub contentions: u64,
    pub wait_total_ns: Nanos,
    pub wait_max_ns: Nanos,
    pub hold_total_ns: Nanos,
    pub hold_max_ns: Nanos,
    /// Time waiters spent spinning (optimistic spin) rather than sleeping.
    pub spin_total_ns: Nanos,
    /// Acquisitions through handoff (`MUTEX_FLAG_HANDOFF`).
    pub handoffs: u64,
}

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
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            hard_lockup: 10_000_000_000,
            soft_lockup: 20_000_000_000,
            csd_lock_timeout: 5_000_000_000,
            hung_task: 120_000_000_000,
        }
    }
}

pub struct Metrics {
    pub warmup: Nanos,
    pub window: Nanos,
    pub windows: usize,
    pub counters: Vec<u64>,
    pub hists: Vec<Histogram<u64>>,
    /// Per CPU, per window: longest preempt-disabled section ending in it.
    pub preempt_off_windows: Vec<Nanos>,
    pub irq_off_windows: Vec<Nanos>,
    pub locks: Vec<LockStat>,
    pub findings: Vec<Finding>,
    pub thresholds: Thresholds,
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
        let windows = (duration.saturating_sub(warmup)).div_ceil(window).max(1) as usize;
        Metrics {
            warmup,
            window,
            windows,
            counters: vec![0; counters],
            hists: (0..hists)
                .map(|_| Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("bounds"))
                .collect(),
            preempt_off_windows: vec![0; cpus * windows],
            irq_off_windows: vec![0; cpus * windows],
            locks: Vec::new(),
            findings: Vec::new(),
            thresholds: Thresholds::default(),
        }
    }

    #[inline]
    pub fn measuring(&self, now: Nanos) -> bool {
        now >= self.warmup
    }

    #[inline]
    pub fn count(&mut self, now: Nanos, counter: u32) {
        if self.measuring(now) {
            self.counters[counter as usize] += 1;
        }
    }

    #[inline]
    pub fn record(&mut self, now: Nanos, hist: u32, value: Nanos) {
        if self.measuring(now) {
            self.hists[hist as usize].saturating_record(value.max(1));
        }
    }

    fn window_of(&self, now: Nanos) -> usize {
        (((now - self.warmup) / self.window) as usize).min(self.windows - 1)
    }

    /// A preempt-disabled section `[start, now)` ended on `cpu`.
    pub fn preempt_off_section(&mut self, cpu: u32, start: Nanos, now: Nanos) {
        let len = now - start;
        if len >= self.thresholds.soft_lockup {
            self.finding(
                "soft_lockup",
                now,
                cpu,
                format!(
                    "BUG: soft lockup - CPU#{cpu} stuck for {}s with preemption disabled",
                    len / 1_000_000_000
                ),
            );
        }
        if self.measuring(now) {
            let slot = cpu as usize * self.windows + self.window_of(now);
            let w = &mut self.preempt_off_windows[slot];
            *w = (*w).max(len);
        }
    }

    /// An IRQ-disabled section `[start, now)` ended on `cpu`.
    pub fn irq_off_section(&mut self, cpu: u32, start: Nanos, now: Nanos) {
        let len = now - start;
        if len >= self.thresholds.hard_lockup {
            self.finding(
                "hard_lockup",
                now,
                cpu,
                format!(
                    "NMI watchdog: Watchdog detected hard LOCKUP on cpu {cpu} (IRQs off for {} ms)",
                    len / 1_000_000
                ),
            );
        }
        if self.measuring(now) {
            let slot = cpu as usize * self.windows + self.window_of(now);
            let w = &mut self.irq_off_windows[slot];
            *w = (*w).max(len);
        }
    }

    pub fn csd_wait(&mut self, cpu: u32, start: Nanos, now: Nanos) {
        if now - start >= self.thresholds.csd_lock_timeout {
            self.finding(
                "csd_lock_timeout",
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
            "sleeping_in_atomic",
            now,
            cpu,
            format!("BUG: sleeping function called from invalid context ({what}) on CPU#{cpu}"),
        );
    }

    pub fn hung_task(&mut self, cpu: u32, now: Nanos, task: String, blocked: Nanos) {
        self.finding(
            "hung_task",
            now,
            cpu,
            format!(
                "INFO: task {task} blocked for more than {} seconds",
                blocked / 1_000_000_000
            ),
        );
    }

    /// Records the first finding of each detector (later ones only count).
    fn finding(&mut self, detector: &'static str, now: Nanos, cpu: u32, message: String) {
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
