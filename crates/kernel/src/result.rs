//! The result of a run, as data (the report crate formats it).

use serde::Serialize;
use smpsim_engine::Nanos;

use crate::cpu::CpuTimes;
use crate::task::TaskTimes;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    pub nr_cpus: u32,
    /// What the machine's figures rest on.
    pub standing: MachineStanding,
    /// Independent replicas merged into this result.
    pub replicas: u32,
    pub duration_ns: Nanos,
    pub warmup_ns: Nanos,
    pub seed: u64,
    pub counters: Vec<CounterResult>,
    pub histograms: Vec<HistResult>,
    pub cpus: Vec<CpuResult>,
    pub task_groups: Vec<TaskGroupResult>,
    pub locks: Vec<LockStat>,
    /// Context switches in the measured part of the run (all CPUs).
    pub context_switches: u64,
    /// Lazy-TLB counters.
    pub mm: MmStats,
    /// The delays an explored schedule took (their decision indices).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub perturbations: Vec<u32>,
    /// What unequal CPUs did to `work`, on machines with core types or an
    /// SMT co-run slowdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityStats>,
    /// Grace periods, in runs that use RCU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcu: Option<RcuStats>,
    /// `ttwu_queue_wakelist()`, in runs with `[kernel] ttwu_queue` set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttwu_queue: Option<TtwuQueueStats>,
    /// `cpu.stat` of every bandwidth-limited cgroup.
    pub cfs_bandwidth: Vec<BandwidthStat>,
    pub findings: Vec<Finding>,
    pub stats: RunStats,
    /// The histograms themselves, for merging replicas.
    #[serde(skip)]
    pub raw_histograms: Vec<hdrhistogram::Histogram<u64>>,
    /// Each histogram's exact smallest and largest samples (the buckets
    /// keep them to 3 significant digits only).
    #[serde(skip)]
    pub exact_histograms: Vec<ExactSamples>,
}

/// What a run's machine rests on ([`smpsim_machine::Machine::standing`]):
/// its costs measured or assumed, and how far its contended lines can be
/// trusted (the global contention rules' error on machines left out of
/// their fit, or on its own curves).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MachineStanding {
    pub name: String,
    /// Costs measured idle or documented.
    pub measured: u32,
    /// Costs assumed, by name.
    pub assumed: Vec<String>,
    /// Its own contended curves were predicted without them (else
    /// extrapolated from the global rules).
    pub contended_checked: bool,
    /// The expected factor of error on contended lines: the median over
    /// its own curves left out of the fit, or over every machine's.
    pub contended_error: f64,
    /// All of it, as a sentence.
    pub text: String,
}

impl MachineStanding {
    pub fn of(m: &smpsim_machine::Machine) -> Self {
        let s = m.standing();
        let (checked, error) = match &s.contended {
            smpsim_machine::Contended::Checked { median, .. } => (true, *median),
            smpsim_machine::Contended::Extrapolated { median, .. } => (false, *median),
        };
        MachineStanding {
            name: m.name.clone(),
            measured: s.measured.len() as u32,
            assumed: s.assumed.iter().map(|a| a.to_string()).collect(),
            contended_checked: checked,
            contended_error: error,
            text: s.to_string(),
        }
    }
}

/// Remote wakeups queued on the wakee CPU's wake list
/// (`ttwu_queue_wakelist()`), over the measured part of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TtwuQueueStats {
    /// Wakeups queued on a wake list (`__ttwu_queue_wakelist()`).
    pub queued: u64,
    /// IPIs those sent (`llist_add()` found the queue empty and the
    /// target was not a polling idle CPU).
    pub ipis: u64,
    /// Wakees activated by `sched_ttwu_pending()` on their CPU.
    pub activated: u64,
    /// Handler runs of `sched_ttwu_pending()` that activated some.
    pub handler_runs: u64,
}

impl TtwuQueueStats {
    /// Pools another replica's counts into these.
    pub fn add(&mut self, o: &TtwuQueueStats) {
        let TtwuQueueStats {
            queued,
            ipis,
            activated,
            handler_runs,
        } = *o;
        self.queued += queued;
        self.ipis += ipis;
        self.activated += activated;
        self.handler_runs += handler_runs;
    }
}

/// RCU over the measured part of the run (the `rcu_gp_duration`
/// histogram has the lengths).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RcuStats {
    /// Normal grace periods completed.
    pub grace_periods: u64,
    /// `rcu_gp_fqs()` scans by the GP kthread.
    pub fqs_scans: u64,
    /// Expedited grace periods completed.
    pub expedited_grace_periods: u64,
    /// `resched_cpu()` calls by the FQS scan on holdouts (only past half
    /// the stall timeout).
    #[serde(skip_serializing_if = "is_zero")]
    pub fqs_resched_ipis: u64,
    /// Callbacks queued by the scenario's `call_rcu()` ops (the kernel's
    /// own, such as `synchronize_rcu()`'s, are not counted).
    #[serde(skip_serializing_if = "is_zero")]
    pub callbacks_queued: u64,
    /// Callbacks invoked (`rdp->n_cbs_invoked`), softirq and `rcuop`.
    #[serde(skip_serializing_if = "is_zero")]
    pub callbacks_invoked: u64,
    /// Of those, invoked by `rcuop/N` kthreads (`rcu_nocbs`).
    #[serde(skip_serializing_if = "is_zero")]
    pub callbacks_invoked_offloaded: u64,
    /// `rcu_do_batch()` runs in `RCU_SOFTIRQ` that invoked a callback with
    /// a cost.
    #[serde(skip_serializing_if = "is_zero")]
    pub softirq_batches: u64,
    /// Softirq runs that left ready callbacks for the next tick (the
    /// kernel's `ksoftirqd` hand-off).
    #[serde(skip_serializing_if = "is_zero")]
    pub softirq_deferred: u64,
    /// Lazy callback lists flushed to wait for a grace period.
    #[serde(skip_serializing_if = "is_zero")]
    pub lazy_flushes: u64,
    /// `synchronize_rcu()` callers woken by the GP kthread
    /// (`rcu_normal_wake_from_gp`).
    #[serde(skip_serializing_if = "is_zero")]
    pub wakeups_from_gp: u64,
    /// Objects queued by `kfree_rcu()` (`kvfree_call_rcu()`).
    #[serde(skip_serializing_if = "is_zero")]
    pub kfree_rcu_objects: u64,
    /// Batches queued behind a grace period by `kfree_rcu_monitor()`
    /// (`queue_rcu_work()` calls).
    #[serde(skip_serializing_if = "is_zero")]
    pub kfree_rcu_batches: u64,
    /// Objects freed (by `kfree_rcu_work()`, or by the monitor's
    /// `kvfree_rcu_drain_ready()`).
    #[serde(skip_serializing_if = "is_zero")]
    pub kfree_rcu_freed: u64,
    /// Of the objects the monitor looked at, those it freed at once: a
    /// full grace period had already passed since they were queued.
    #[serde(skip_serializing_if = "is_zero")]
    pub kfree_rcu_drained_ready: u64,
    /// Bytes queued by `kfree_rcu()` and not yet freed (the memory waiting
    /// for a grace period): the most at any time.
    #[serde(skip_serializing_if = "is_zero")]
    pub kfree_rcu_bytes_waiting_peak: u64,
    /// The same, averaged over time.
    #[serde(skip_serializing_if = "is_zero")]
    pub kfree_rcu_bytes_waiting_mean: u64,
}

impl MmStats {
    /// Pools another replica's counts into these (all are counts). The
    /// destructuring is exhaustive, so a new field does not compile until
    /// it is pooled here (replicas once dropped eight of them).
    pub fn add(&mut self, other: &MmStats) {
        let MmStats {
            lazy_refcount_ops,
            shootdown_ipis,
            mms_freed,
            violations,
            deferred_tlb_flushes,
            tlb_broadcast_flushes,
            invlpgb,
            tlb_flush_ipis,
            global_asids,
            mask_flush_ipis,
            mask_flush_ipis_not_running,
            mask_flush_missed,
        } = *other;
        self.lazy_refcount_ops += lazy_refcount_ops;
        self.shootdown_ipis += shootdown_ipis;
        self.mms_freed += mms_freed;
        self.violations += violations;
        self.deferred_tlb_flushes += deferred_tlb_flushes;
        self.tlb_broadcast_flushes += tlb_broadcast_flushes;
        self.invlpgb += invlpgb;
        self.tlb_flush_ipis += tlb_flush_ipis;
        self.global_asids += global_asids;
        self.mask_flush_ipis += mask_flush_ipis;
        self.mask_flush_ipis_not_running += mask_flush_ipis_not_running;
        self.mask_flush_missed += mask_flush_missed;
    }
}

impl RcuStats {
    /// Pools another replica's counts into these: `pooled` replicas are
    /// in `self` already, `other` stands for `added` more. The destructuring
    /// is exhaustive, so a new field does not compile until it is pooled
    /// here (replicas once dropped the callback and softirq counts).
    pub fn add(&mut self, other: &RcuStats, pooled: u64, added: u64) {
        let RcuStats {
            grace_periods,
            fqs_scans,
            expedited_grace_periods,
            fqs_resched_ipis,
            callbacks_queued,
            callbacks_invoked,
            callbacks_invoked_offloaded,
            softirq_batches,
            softirq_deferred,
            lazy_flushes,
            wakeups_from_gp,
            kfree_rcu_objects,
            kfree_rcu_batches,
            kfree_rcu_freed,
            kfree_rcu_drained_ready,
            kfree_rcu_bytes_waiting_peak,
            kfree_rcu_bytes_waiting_mean,
        } = *other;
        self.grace_periods += grace_periods;
        self.fqs_scans += fqs_scans;
        self.expedited_grace_periods += expedited_grace_periods;
        self.fqs_resched_ipis += fqs_resched_ipis;
        self.callbacks_queued += callbacks_queued;
        self.callbacks_invoked += callbacks_invoked;
        self.callbacks_invoked_offloaded += callbacks_invoked_offloaded;
        self.softirq_batches += softirq_batches;
        self.softirq_deferred += softirq_deferred;
        self.lazy_flushes += lazy_flushes;
        self.wakeups_from_gp += wakeups_from_gp;
        self.kfree_rcu_objects += kfree_rcu_objects;
        self.kfree_rcu_batches += kfree_rcu_batches;
        self.kfree_rcu_freed += kfree_rcu_freed;
        self.kfree_rcu_drained_ready += kfree_rcu_drained_ready;
        self.kfree_rcu_bytes_waiting_peak = self
            .kfree_rcu_bytes_waiting_peak
            .max(kfree_rcu_bytes_waiting_peak);
        // Replicas measure windows of the same length: the mean of means,
        // weighted by how many replicas each side pools.
        let total = u128::from((pooled + added).max(1));
        let mean = (u128::from(self.kfree_rcu_bytes_waiting_mean) * u128::from(pooled)
            + u128::from(kfree_rcu_bytes_waiting_mean) * u128::from(added))
            / total;
        self.kfree_rcu_bytes_waiting_mean = mean as u64;
    }
}

/// Like a cgroup's `cpu.stat`, over the measured part of the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BandwidthStat {
    pub cgroup: String,
    pub nr_periods: u64,
    /// Periods that began with a cfs_rq of the cgroup throttled, as
    /// `cpu.stat`'s (`do_sched_cfs_period_timer()`): at most `nr_periods`.
    pub nr_throttled: u64,
    /// Per-CPU cfs_rq throttle events (`throttle_cfs_rq()` calls).
    pub throttle_events: u64,
    pub nr_unthrottled: u64,
    /// CPU time the cgroup's tasks used.
    pub usage_ns: u64,
    /// Runtime cfs_rqs gave back to the pool (`return_cfs_rq_runtime()`).
    #[serde(skip_serializing_if = "is_zero")]
    pub slack_returned_ns: u64,
    /// Slack timer runs that distributed the pool.
    #[serde(skip_serializing_if = "is_zero")]
    pub slack_distributions: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CounterResult {
    pub name: String,
    pub count: u64,
    /// Per second of measured (post-warmup) simulated time.
    pub rate: f64,
}

/// A latency histogram summary, in nanoseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistResult {
    pub name: String,
    pub count: u64,
    /// Sum of all samples (count x mean), for time breakdowns.
    pub total: f64,
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuResult {
    pub cpu: u32,
    #[serde(flatten)]
    pub times: CpuTimes,
    pub nr_switches: u64,
    pub max_preempt_off_ns: Nanos,
    pub max_irq_off_ns: Nanos,
    /// P50 and P99 over windows of the longest preempt-off section in
    /// each window (the seed 001 table).
    pub preempt_off_window_p50_ns: Nanos,
    pub preempt_off_window_p99_ns: Nanos,
    /// Preempt-off sections of 1-10, 10-50, 50-100 and 100+ ms.
    pub long_preempt_off: [u64; 4],
    /// Longest preempt-off section per window (`latency_window`).
    pub preempt_off_windows: Vec<Nanos>,
    pub irq_off_windows: Vec<Nanos>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskGroupResult {
    pub name: String,
    pub tasks: u32,
    /// Summed over the group's tasks, each field saturating at
    /// `u64::MAX` (`total_saturated` then says so): never wrapped.
    pub total: TaskTimes,
    /// A field of `total` reached `u64::MAX`: it is a floor, not the sum.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub total_saturated: bool,
    /// Tasks that ran their program to the end, and their mean and
    /// longest wall time (from the start of the run to `exit`).
    pub exited: u32,
    pub wall_mean_ns: Nanos,
    pub wall_max_ns: Nanos,
    /// Per task, only for groups of at most 64 tasks.
    pub per_task: Vec<TaskResult>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskResult {
    pub index: u32,
    pub cpu: u32,
    #[serde(flatten)]
    pub times: TaskTimes,
    /// Time from the start of the run until the task exited.
    pub wall_ns: Option<Nanos>,
}

/// A report of one of the kernel's detectors.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub detector: String,
    pub time_ns: Nanos,
    pub cpu: u32,
    pub message: String,
    pub occurrences: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunStats {
    /// Events that changed the model.
    pub events: u64,
    /// Events found superseded (a re-armed timer, a cancelled segment).
    pub stale_events: u64,
    /// Simulated time reached (less than the duration if the event budget ran out).
    pub simulated_ns: Nanos,
    /// Host time spent simulating, filled in by the caller; the only
    /// non-deterministic field of a result.
    pub wall_seconds: f64,
    /// The events by kind (deterministic). Shown with the engine line of
    /// the text output, which results digests leave out; not in the JSON,
    /// so results files are those of before the counts existed.
    #[serde(skip)]
    pub by_kind: EventCounts,
}

/// Events delivered, by [`crate::event::EventKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// Events that changed the model.
    pub done: [u64; crate::event::NR_EVENT_KINDS],
    /// Events found superseded.
    pub stale: [u64; crate::event::NR_EVENT_KINDS],
    /// Of `done` and `stale`, the events folded: handled as soon as they
    /// were scheduled, without going through the queue.
    pub folded: [u64; crate::event::NR_EVENT_KINDS],
}

impl EventCounts {
    /// Adds another run's counts (replicas).
    pub fn add(&mut self, other: &EventCounts) {
        for k in 0..crate::event::NR_EVENT_KINDS {
            self.done[k] += other.done[k];
            self.stale[k] += other.stale[k];
            self.folded[k] += other.folded[k];
        }
    }

    /// Events the queue delivered (all events but the folded).
    pub fn delivered(&self) -> u64 {
        let all: u64 = self.done.iter().chain(&self.stale).sum();
        all - self.folded.iter().sum::<u64>()
    }

    /// `(kind name, events, stale events)` of every kind that occurred,
    /// most events first (ties in kind order); a kind's folded events
    /// apart, under `fold.` and its name (a folded event is never stale).
    pub fn nonzero(&self) -> Vec<(&'static str, u64, u64)> {
        use crate::event::{EVENT_KINDS, FOLDED_KINDS, NR_EVENT_KINDS};
        let queued = (0..NR_EVENT_KINDS)
            .filter(|&k| self.done[k] + self.stale[k] > self.folded[k])
            .map(|k| (EVENT_KINDS[k], self.done[k] - self.folded[k], self.stale[k]));
        let folded = (0..NR_EVENT_KINDS)
            .filter(|&k| self.folded[k] > 0)
            .map(|k| (FOLDED_KINDS[k], self.folded[k], 0));
        let mut v: Vec<_> = queued.chain(folded).collect();
        v.sort_by_key(|&(_, done, _)| std::cmp::Reverse(done));
        v
    }
}

impl RunResult {
    pub fn counter(&self, name: &str) -> Option<&CounterResult> {
        self.counters.iter().find(|c| c.name == name)
    }
    pub fn histogram(&self, name: &str) -> Option<&HistResult> {
        self.histograms.iter().find(|h| h.name == name)
    }
    pub fn lock(&self, name: &str) -> Option<&LockStat> {
        self.locks.iter().find(|l| l.name == name)
    }
    /// What a detector (by its report name) found, if anything.
    pub fn finding(&self, detector: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.detector == detector)
    }
}

/// `lock_stat`-style counters of one lock class (all instances of an object).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LockStat {
    pub name: String,
    pub instances: u32,
    pub acquisitions: u64,
    /// Acquisitions that found the lock held.
    pub contentions: u64,
    pub wait_total_ns: Nanos,
    /// The shortest wait and hold (0 with none), as `/proc/lock_stat`'s
    /// `waittime-min` and `holdtime-min`.
    pub wait_min_ns: Nanos,
    pub wait_max_ns: Nanos,
    pub hold_total_ns: Nanos,
    pub hold_min_ns: Nanos,
    pub hold_max_ns: Nanos,
    /// Time waiters spent spinning (optimistic spin) rather than sleeping.
    pub spin_total_ns: Nanos,
    /// Acquisitions through handoff (`MUTEX_FLAG_HANDOFF`).
    pub handoffs: u64,
    /// `/proc/lock_stat`'s `con-bounces`: contentions on an instance last
    /// acquired on another CPU (`__lock_contended()`'s `lock->cpu !=
    /// smp_processor_id()`).
    pub con_bounces: u64,
    /// `acq-bounces`: acquisitions of an instance last acquired on another
    /// CPU (`__lock_acquired()`).
    pub acq_bounces: u64,
    /// The model's own count: times the lock's cache lines moved between
    /// CPUs, every miss including spinners' re-fetches (which lockdep's
    /// two bounce counts, one per event, do not see).
    pub bounces: u64,
    /// The model's own count too: compare-and-exchange attempts on an
    /// atomic's line that failed because another CPU wrote the word since
    /// it was read (`atomic_try_cmpxchg()` in a scenario's retry loop).
    #[serde(skip_serializing_if = "is_zero")]
    pub cmpxchg_fails: u64,
    /// The model's own counts for a `mutex` (either OSQ: `mutex` or
    /// `numa_osq`): passes of the optimistic-spin queue's head role
    /// (`osq_unlock()` to the next spinner) to a spinner on the leaving
    /// head's NUMA node, and to one on another node.
    #[serde(skip_serializing_if = "is_zero")]
    pub osq_within_node: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub osq_across_nodes: u64,
    /// A sleeping reader-writer lock's read side, which `/proc/lock_stat`
    /// shows as a class of its own (`NAME-R`; the fields above are then
    /// `NAME-W`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<ReadSide>,
}

impl LockStat {
    /// Adds another run's counts (of the same lock class).
    pub fn merge(&mut self, o: &LockStat) {
        // Destructured whole, so that a new count does not compile until
        // it is pooled here (a replica's figure beside pooled totals is a
        // silent wrong result).
        let LockStat {
            name: _,
            instances: _,
            acquisitions,
            contentions,
            wait_total_ns,
            wait_min_ns,
            wait_max_ns,
            hold_total_ns,
            hold_min_ns,
            hold_max_ns,
            spin_total_ns,
            handoffs,
            con_bounces,
            acq_bounces,
            bounces,
            cmpxchg_fails,
            osq_within_node,
            osq_across_nodes,
            read,
        } = o;
        self.acquisitions += acquisitions;
        self.contentions += contentions;
        pool_times(
            [
                &mut self.wait_total_ns,
                &mut self.wait_min_ns,
                &mut self.wait_max_ns,
            ],
            [*wait_total_ns, *wait_min_ns, *wait_max_ns],
        );
        pool_times(
            [
                &mut self.hold_total_ns,
                &mut self.hold_min_ns,
                &mut self.hold_max_ns,
            ],
            [*hold_total_ns, *hold_min_ns, *hold_max_ns],
        );
        self.spin_total_ns += spin_total_ns;
        self.handoffs += handoffs;
        self.con_bounces += con_bounces;
        self.acq_bounces += acq_bounces;
        self.bounces += bounces;
        self.cmpxchg_fails += cmpxchg_fails;
        self.osq_within_node += osq_within_node;
        self.osq_across_nodes += osq_across_nodes;
        if let (Some(r), Some(or)) = (&mut self.read, read) {
            r.merge(or);
        }
    }
}

/// The read acquisitions of a reader-writer lock class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReadSide {
    pub acquisitions: u64,
    pub contentions: u64,
    pub wait_total_ns: Nanos,
    pub wait_min_ns: Nanos,
    pub wait_max_ns: Nanos,
    pub hold_total_ns: Nanos,
    pub hold_min_ns: Nanos,
    pub hold_max_ns: Nanos,
    /// `bounce_contended_read` and `bounce_acquired_read`.
    pub con_bounces: u64,
    pub acq_bounces: u64,
}

impl ReadSide {
    /// Adds another run's counts.
    pub fn merge(&mut self, o: &ReadSide) {
        self.acquisitions += o.acquisitions;
        self.contentions += o.contentions;
        pool_times(
            [
                &mut self.wait_total_ns,
                &mut self.wait_min_ns,
                &mut self.wait_max_ns,
            ],
            [o.wait_total_ns, o.wait_min_ns, o.wait_max_ns],
        );
        pool_times(
            [
                &mut self.hold_total_ns,
                &mut self.hold_min_ns,
                &mut self.hold_max_ns,
            ],
            [o.hold_total_ns, o.hold_min_ns, o.hold_max_ns],
        );
        self.con_bounces += o.con_bounces;
        self.acq_bounces += o.acq_bounces;
    }
}

/// Pools another run's `[total, min, max]` of one time (a wait or a
/// hold) into `a`'s.
fn pool_times(a: [&mut Nanos; 3], b: [Nanos; 3]) {
    let [total, min, max] = a;
    *total += b[0];
    *min = merged_min(*min, *max, b[1], b[2]);
    *max = (*max).max(b[2]);
}

/// The minimum of two runs' samples, each given as (min, max): a run
/// whose max is 0 has no sample above 0, so the other's minimum stands
/// unless both are such runs.
pub fn merged_min(a_min: Nanos, a_max: Nanos, b_min: Nanos, b_max: Nanos) -> Nanos {
    match (a_max, b_max) {
        (0, _) => b_min,
        (_, 0) => a_min,
        _ => a_min.min(b_min),
    }
}

/// The kernel detectors smpsim runs, by the names their reports go by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detector {
    /// The NMI watchdog: IRQs off for `watchdog_thresh`.
    HardLockup,
    /// The softlockup watchdog: no reschedule for 2 x `watchdog_thresh`.
    SoftLockup,
    /// `CONFIG_CSD_LOCK_WAIT_DEBUG`: a CSD unlocked only after `csd_lock_timeout`.
    CsdLockTimeout,
    /// khungtaskd: D state for `hung_task_timeout_secs`.
    HungTask,
    /// `might_sleep()` under `CONFIG_DEBUG_ATOMIC_SLEEP`.
    SleepingInAtomic,
    /// lockdep: a release of a lock the task does not hold.
    BadUnlockBalance,
    /// The mm-lifetime checker.
    MmUseAfterFree,
    MmDoubleFree,
    MmLeak,
    /// `select_fallback_rq()`: a task whose CPUs all went offline runs
    /// elsewhere ("process N (comm) no longer affine to cpuM").
    NoLongerAffine,
    /// A per-CPU object indexed outside `[0, nr_cpu_ids)`.
    BadPerCpuIndex,
    /// `preempt_enable()` without a matching `preempt_disable()`.
    PreemptCountUnderflow,
    /// lockdep: a task takes a lock it already holds.
    RecursiveLocking,
    /// lockdep: an acquisition order that closes a cycle.
    CircularLocking,
    /// lockdep: a lock taken in hardirq context and with hardirqs on.
    InconsistentLockState,
    /// The RCU CPU stall detector: a grace period older than
    /// `rcu_cpu_stall_timeout`.
    RcuStall,
    /// The RCU guarantee checker: a grace period ended under a reader that
    /// began before it.
    RcuGuarantee,
    /// A scenario's `assert` op found its condition false.
    Assertion,
    /// An expression divided by zero (the kernel's `divide error`).
    DivideError,
    /// A loop count or a cross-CPU call's `units` evaluated negative.
    NegativeCount,
    /// An op named a CPU that does not exist.
    BadCpu,
    /// `CONFIG_DEBUG_RWSEMS`: an rwsem released or downgraded by a task
    /// that does not hold it that way.
    DebugRwsems,
    /// The membarrier checker: a command returned while a CPU it covers
    /// ran the caller's mm without a barrier since the command began.
    Membarrier,
    /// `cpu_down()` of the last online CPU: refused with `-EBUSY`.
    OfflineLastCpu,
    /// An IPI for an offline CPU: `smp_call_function_single()` to one
    /// (`-ENXIO`, nothing sent), or a CSD queued on one ("IPI on offline
    /// CPU").
    IpiOfflineCpu,
    /// lockdep's `lockdep_sys_exit()`: a task returns to user space with
    /// a lock it took in the kernel still held.
    LockHeldReturningToUser,
}

impl Detector {
    /// The name in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Detector::HardLockup => "hard_lockup",
            Detector::SoftLockup => "soft_lockup",
            Detector::CsdLockTimeout => "csd_lock_timeout",
            Detector::HungTask => "hung_task",
            Detector::SleepingInAtomic => "sleeping_in_atomic",
            Detector::BadUnlockBalance => "bad_unlock_balance",
            Detector::MmUseAfterFree => "mm_use_after_free",
            Detector::MmDoubleFree => "mm_double_free",
            Detector::MmLeak => "mm_leak",
            Detector::NoLongerAffine => "no_longer_affine",
            Detector::BadPerCpuIndex => "bad_percpu_index",
            Detector::PreemptCountUnderflow => "preempt_count_underflow",
            Detector::RecursiveLocking => "recursive_locking",
            Detector::CircularLocking => "circular_locking_dependency",
            Detector::InconsistentLockState => "inconsistent_lock_state",
            Detector::RcuStall => "rcu_stall",
            Detector::RcuGuarantee => "rcu",
            Detector::Assertion => "assertion",
            Detector::DivideError => "divide_error",
            Detector::NegativeCount => "negative_count",
            Detector::BadCpu => "bad_cpu",
            Detector::DebugRwsems => "debug_rwsems",
            Detector::Membarrier => "membarrier",
            Detector::OfflineLastCpu => "offline_last_cpu",
            Detector::IpiOfflineCpu => "ipi_offline_cpu",
            Detector::LockHeldReturningToUser => "lock_held_returning_to_user",
        }
    }
}

/// CPU capacity over the measured part of the run (`sched::capacity`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CapacityStats {
    /// Time `work` took beyond what it takes on a full-capacity CPU alone
    /// on its core.
    pub stretch_ns: u64,
    /// `work` ops planned while an SMT sibling was busy.
    pub smt_corun_work: u64,
    /// Wake-ups placed by `select_idle_capacity()`.
    pub select_idle_capacity: u64,
    /// Of those, wake-ups where no idle CPU fitted the task and the
    /// biggest idle one was taken.
    pub no_fit: u64,
}

impl CapacityStats {
    pub fn add(&mut self, o: &CapacityStats) {
        self.stretch_ns += o.stretch_ns;
        self.smt_corun_work += o.smt_corun_work;
        self.select_idle_capacity += o.select_idle_capacity;
        self.no_fit += o.no_fit;
    }
}

/// Lazy-TLB counters of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MmStats {
    /// Atomic operations on `mm_count` for lazy references.
    pub lazy_refcount_ops: u64,
    /// IPIs sent by `cleanup_lazy_tlbs()` at the final `__mmdrop()`.
    pub shootdown_ipis: u64,
    pub mms_freed: u64,
    /// Findings of the mm-lifetime checker.
    pub violations: u64,
    /// TLB flushes a lazy CPU did at its next switch back to the mm,
    /// instead of taking the flush IPI.
    #[serde(skip_serializing_if = "is_zero")]
    pub deferred_tlb_flushes: u64,
    /// `flush_tlb_mm_range()` calls done by broadcast
    /// (`broadcast_tlb_flush()`): no IPI to any CPU.
    #[serde(skip_serializing_if = "is_zero")]
    pub tlb_broadcast_flushes: u64,
    /// `INVLPGB` instructions those issued.
    #[serde(skip_serializing_if = "is_zero")]
    pub invlpgb: u64,
    /// Flush IPIs `flush_tlb_mm_range()` sent (`flush_tlb_multi()`), on a
    /// machine with broadcast invalidation.
    #[serde(skip_serializing_if = "is_zero")]
    pub tlb_flush_ipis: u64,
    /// mms given a global ASID (`use_global_asid()`).
    #[serde(skip_serializing_if = "is_zero")]
    pub global_asids: u64,
    /// Flush IPIs sent to the CPUs of a mask built earlier
    /// (`flush_tlb_mm_range(..., cpus = MASK)`).
    #[serde(skip_serializing_if = "is_zero")]
    pub mask_flush_ipis: u64,
    /// Of those, IPIs to CPUs no longer running the mm (lazy, idle, or on
    /// another mm): interrupted for nothing.
    #[serde(skip_serializing_if = "is_zero")]
    pub mask_flush_ipis_not_running: u64,
    /// CPUs running the mm (not lazy) that such a flush did not reach: they
    /// started running it after the mask was built, and their TLB is left
    /// behind the mm's generation (a missed shootdown).
    #[serde(skip_serializing_if = "is_zero")]
    pub mask_flush_missed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A histogram's smallest and largest samples as they were: the buckets
/// round a sample to 3 significant digits (a 2 ms sample reads 1,999,872
/// or 2,000,895), so the minimum and maximum reported are these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExactSamples {
    pub min: Nanos,
    pub max: Nanos,
}

impl Default for ExactSamples {
    fn default() -> Self {
        ExactSamples {
            min: Nanos::MAX,
            max: 0,
        }
    }
}

impl ExactSamples {
    #[inline]
    pub fn add(&mut self, v: Nanos) {
        // As the bucket holds it: a sample of 0 counts as 1.
        let v = v.max(1);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Pools another run's samples (replicas).
    pub fn merge(&mut self, o: &ExactSamples) {
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rcu_all(v: u64) -> RcuStats {
        RcuStats {
            grace_periods: v,
            fqs_scans: v,
            expedited_grace_periods: v,
            fqs_resched_ipis: v,
            callbacks_queued: v,
            callbacks_invoked: v,
            callbacks_invoked_offloaded: v,
            softirq_batches: v,
            softirq_deferred: v,
            lazy_flushes: v,
            wakeups_from_gp: v,
            kfree_rcu_objects: v,
            kfree_rcu_batches: v,
            kfree_rcu_freed: v,
            kfree_rcu_drained_ready: v,
            kfree_rcu_bytes_waiting_peak: v,
            kfree_rcu_bytes_waiting_mean: v,
        }
    }

    #[test]
    fn pooled_rcu_stats_sum_every_count() {
        let mut a = rcu_all(3);
        a.add(&rcu_all(3), 1, 1);
        // Counts add; the peak is the larger, the mean the weighted mean.
        let want = RcuStats {
            kfree_rcu_bytes_waiting_peak: 3,
            kfree_rcu_bytes_waiting_mean: 3,
            ..rcu_all(6)
        };
        assert_eq!(a, want);
        let mut b = rcu_all(0);
        b.kfree_rcu_bytes_waiting_mean = 10;
        let mut c = rcu_all(0);
        c.kfree_rcu_bytes_waiting_mean = 40;
        b.add(&c, 2, 1);
        assert_eq!(b.kfree_rcu_bytes_waiting_mean, 20);
    }

    /// Two runs of one lock class: counts add, the shortest wait and hold
    /// is the shorter of the runs', the longest the longer; the read side
    /// pools the same way.
    #[test]
    fn pooled_lock_stats_add_counts_and_keep_the_extremes() {
        let side = ReadSide {
            acquisitions: 3,
            contentions: 1,
            wait_total_ns: 30,
            wait_min_ns: 5,
            wait_max_ns: 20,
            hold_total_ns: 60,
            hold_min_ns: 10,
            hold_max_ns: 40,
            con_bounces: 1,
            acq_bounces: 2,
        };
        let one = LockStat {
            name: "l".into(),
            instances: 1,
            acquisitions: side.acquisitions,
            contentions: side.contentions,
            wait_total_ns: side.wait_total_ns,
            wait_min_ns: side.wait_min_ns,
            wait_max_ns: side.wait_max_ns,
            hold_total_ns: side.hold_total_ns,
            hold_min_ns: side.hold_min_ns,
            hold_max_ns: side.hold_max_ns,
            spin_total_ns: 7,
            handoffs: 1,
            con_bounces: side.con_bounces,
            acq_bounces: side.acq_bounces,
            bounces: 9,
            cmpxchg_fails: 4,
            osq_within_node: 3,
            osq_across_nodes: 1,
            read: Some(side),
        };
        let mut other = one.clone();
        (other.wait_min_ns, other.wait_max_ns) = (2, 50);
        (other.hold_min_ns, other.hold_max_ns) = (15, 30);
        other.read = Some(ReadSide {
            wait_min_ns: 8,
            hold_max_ns: 90,
            ..side
        });
        let mut a = one.clone();
        a.merge(&other);
        let r = a.read.unwrap();
        assert_eq!((a.acquisitions, a.contentions, a.handoffs), (6, 2, 2));
        assert_eq!((a.wait_total_ns, a.wait_min_ns, a.wait_max_ns), (60, 2, 50));
        assert_eq!(
            (a.hold_total_ns, a.hold_min_ns, a.hold_max_ns),
            (120, 10, 40)
        );
        assert_eq!((a.spin_total_ns, a.bounces, a.cmpxchg_fails), (14, 18, 8));
        assert_eq!((a.con_bounces, a.acq_bounces), (2, 4));
        assert_eq!((a.osq_within_node, a.osq_across_nodes), (6, 2));
        assert_eq!((r.acquisitions, r.wait_min_ns, r.hold_max_ns), (6, 5, 90));
        assert_eq!((r.wait_total_ns, r.hold_min_ns, r.acq_bounces), (60, 10, 4));
    }

    #[test]
    fn pooled_mm_stats_sum_every_count() {
        let one = MmStats {
            lazy_refcount_ops: 1,
            shootdown_ipis: 2,
            mms_freed: 3,
            violations: 4,
            deferred_tlb_flushes: 5,
            tlb_broadcast_flushes: 6,
            invlpgb: 7,
            tlb_flush_ipis: 8,
            global_asids: 9,
            mask_flush_ipis: 10,
            mask_flush_ipis_not_running: 11,
            mask_flush_missed: 12,
        };
        let mut a = one;
        a.add(&one);
        assert_eq!(
            a,
            MmStats {
                lazy_refcount_ops: 2,
                shootdown_ipis: 4,
                mms_freed: 6,
                violations: 8,
                deferred_tlb_flushes: 10,
                tlb_broadcast_flushes: 12,
                invlpgb: 14,
                tlb_flush_ipis: 16,
                global_asids: 18,
                mask_flush_ipis: 20,
                mask_flush_ipis_not_running: 22,
                mask_flush_missed: 24,
            }
        );
    }
}
