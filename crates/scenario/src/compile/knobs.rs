//! `[kernel]`: the knobs (tick, RCU, lazy TLB, windows), checked and
//! defaulted as the kernel's own boot parameters and sysctls are.

use smpsim_engine::Nanos;
use smpsim_kernel::Knobs;
use smpsim_kernel::LazyTlb;
use smpsim_kernel::TtwuQueue;

use super::cpus::cpus;
use super::durations::Durations;
use crate::error::{DResult, Diag, Sources};
use crate::raw::{RawDoc, RawKernel, S};

pub(super) fn knobs(dur: &Durations<'_>, k: Option<&S<RawKernel>>) -> DResult<Knobs> {
    let d = Knobs::default();
    let Some(k) = k else { return Ok(d) };
    let k = k.get_ref();
    let hz = match &k.hz {
        None => d.hz,
        Some(hz) => match u32::try_from(*hz.get_ref()) {
            Ok(v) if (1..=100_000).contains(&v) => v,
            _ => return Err(Diag::new(hz.span(), "`hz` must be between 1 and 100000")),
        },
    };
    let positive = |v: &Option<S<String>>, default: Nanos, what: &str| -> DResult<Nanos> {
        let n = dur.opt(v, default)?;
        match v {
            Some(s) if n == 0 => Err(Diag::new(
                s.span(),
                format!("`{what}` must be greater than zero"),
            )),
            _ => Ok(n),
        }
    };
    Ok(Knobs {
        hz,
        sched_slice: positive(&k.sched_slice, d.sched_slice, "sched_slice")?,
        wakeup_granularity: dur.opt(&k.wakeup_granularity, d.wakeup_granularity)?,
        mutex_spin_on_owner: k
            .mutex_spin_on_owner
            .as_ref()
            .map_or(d.mutex_spin_on_owner, |v| *v.get_ref()),
        cfs_bandwidth_slice: positive(
            &k.cfs_bandwidth_slice,
            d.cfs_bandwidth_slice,
            "cfs_bandwidth_slice",
        )?,
        tg_walk_cost: dur.opt(&k.tg_walk_cost, d.tg_walk_cost)?,
        cfs_throttle_base_cost: dur.opt(&k.cfs_throttle_base_cost, d.cfs_throttle_base_cost)?,
        latency_window: positive(&k.latency_window, d.latency_window, "latency_window")?,
        csd_wait_preemptible: k
            .csd_wait_preemptible
            .as_ref()
            .map_or(d.csd_wait_preemptible, |v| *v.get_ref()),
        rcu_expedited: k
            .rcu_expedited
            .as_ref()
            .map_or(d.rcu_expedited, |v| *v.get_ref()),
        jiffies_till_first_fqs: jiffies(&k.jiffies_till_first_fqs, "jiffies_till_first_fqs")?,
        jiffies_till_next_fqs: jiffies(&k.jiffies_till_next_fqs, "jiffies_till_next_fqs")?,
        rcu_node_cost: dur.opt(&k.rcu_node_cost, d.rcu_node_cost)?,
        lazy_tlb: lazy_tlb(&k.lazy_tlb, d.lazy_tlb)?,
        rcu_fanout_leaf: rcu_fanout_leaf(&k.rcu_fanout_leaf, d.rcu_fanout_leaf)?,
        rcu_gp_kthread_cpu: match &k.rcu_gp_kthread_cpu {
            None => None,
            Some(v) => Some(u32::try_from(*v.get_ref()).map_err(|_| {
                Diag::new(
                    v.span(),
                    "`rcu_gp_kthread_cpu` must be a CPU number (0 or more)",
                )
            })?),
        },
        watchdog_thresh: positive(&k.watchdog_thresh, d.watchdog_thresh, "watchdog_thresh")?,
        hung_task_timeout: positive(
            &k.hung_task_timeout_secs,
            d.hung_task_timeout,
            "hung_task_timeout_secs",
        )?,
        csd_lock_timeout: positive(&k.csd_lock_timeout, d.csd_lock_timeout, "csd_lock_timeout")?,
        rcu_cpu_stall_timeout: positive(
            &k.rcu_cpu_stall_timeout,
            d.rcu_cpu_stall_timeout,
            "rcu_cpu_stall_timeout",
        )?,
        load_balance: k
            .load_balance
            .as_ref()
            .map_or(d.load_balance, |v| *v.get_ref()),
        lockdep: k.lockdep.as_ref().map_or(d.lockdep, |v| *v.get_ref()),
        tg_load_avg_ratelimit: dur.opt(&k.tg_load_avg_ratelimit, d.tg_load_avg_ratelimit)?,
        sched_migration_cost: dur.opt(&k.sched_migration_cost, d.sched_migration_cost)?,
        migration_footprint_lines: footprint_lines(
            &k.migration_footprint_lines,
            d.migration_footprint_lines,
        )?,
        tlb_broadcast: k
            .tlb_broadcast
            .as_ref()
            .map_or(d.tlb_broadcast, |v| *v.get_ref()),
        cfs_bandwidth_slack: k
            .cfs_bandwidth_slack
            .as_ref()
            .map_or(d.cfs_bandwidth_slack, |v| *v.get_ref()),
        cfs_slice_expiry: k
            .cfs_slice_expiry
            .as_ref()
            .map_or(d.cfs_slice_expiry, |v| *v.get_ref()),
        asym_cpu_capacity: k
            .asym_cpu_capacity
            .as_ref()
            .map_or(d.asym_cpu_capacity, |v| *v.get_ref()),
        ttwu_queue: ttwu_queue(&k.ttwu_queue, d.ttwu_queue)?,
        // Set by rcu_callback_knobs(), which needs the machine.
        ..d
    })
}

/// `migration_footprint_lines`: at most 1 GiB of 64-byte lines.
pub(super) fn footprint_lines(v: &Option<S<i64>>, default: u32) -> DResult<u32> {
    match v {
        None => Ok(default),
        Some(n) => match u32::try_from(*n.get_ref()) {
            Ok(x) if x <= 1 << 24 => Ok(x),
            _ => Err(Diag::new(
                n.span(),
                "`migration_footprint_lines` must be between 0 and 16777216 (1 GiB of lines)",
            )),
        },
    }
}

/// The `ttwu_queue` knob: how a remote wakeup is queued
/// ([`TtwuQueue`]).
pub(super) fn ttwu_queue(v: &Option<S<String>>, default: TtwuQueue) -> DResult<TtwuQueue> {
    let Some(v) = v else { return Ok(default) };
    match v.get_ref().as_str() {
        "rq_lock" => Ok(TtwuQueue::RqLock),
        "wakelist" => Ok(TtwuQueue::Wakelist),
        "cross_llc" => Ok(TtwuQueue::CrossLlc),
        other => Err(Diag::new(
            v.span(),
            format!(
                "unknown ttwu_queue mode `{other}`; expected one of: rq_lock, wakelist, cross_llc"
            ),
        )),
    }
}

/// The `lazy_tlb` knob: a mode of docs/lazy-tlb.md.
pub(super) fn lazy_tlb(v: &Option<S<String>>, default: LazyTlb) -> DResult<LazyTlb> {
    let Some(v) = v else { return Ok(default) };
    match v.get_ref().as_str() {
        "refcount" => Ok(LazyTlb::Refcount),
        "shootdown" => Ok(LazyTlb::Shootdown),
        "cpumask-refcount" => Ok(LazyTlb::CpumaskRefcount),
        "cpumask-refcount-naive" => Ok(LazyTlb::CpumaskRefcountNaive),
        other => Err(Diag::new(
            v.span(),
            format!("unknown lazy_tlb mode `{other}`; expected one of: refcount, shootdown, cpumask-refcount, cpumask-refcount-naive"),
        )),
    }
}

/// The RCU callback knobs (`rcutree.blimit`, `qhimark`, `qlowmark`,
/// `rcu_nocbs=`, lazy RCU, `rcu_normal_wake_from_gp`).
pub(super) fn rcu_callback_knobs(
    knobs: &mut Knobs,
    k: &RawKernel,
    dur: &Durations<'_>,
    srcs: &Sources,
    nr: usize,
) -> DResult<()> {
    let count = |v: &Option<S<i64>>, default: u64, what: &str| -> DResult<u64> {
        match v {
            None => Ok(default),
            Some(n) if (1..=1 << 40).contains(n.get_ref()) => Ok(*n.get_ref() as u64),
            Some(n) => Err(Diag::new(
                n.span(),
                format!("`{what}` must be a number of callbacks, 1 or more"),
            )),
        }
    };
    knobs.rcu_blimit = count(&k.rcu_blimit, knobs.rcu_blimit, "rcu_blimit")?;
    knobs.rcu_qhimark = count(&k.rcu_qhimark, knobs.rcu_qhimark, "rcu_qhimark")?;
    knobs.rcu_qlowmark = count(&k.rcu_qlowmark, knobs.rcu_qlowmark, "rcu_qlowmark")?;
    if let Some(v) = &k.rcu_nocbs {
        knobs.rcu_nocbs = cpus(srcs, Some(v), nr)?.into_iter().collect();
    }
    if let Some(v) = &k.rcu_lazy {
        knobs.rcu_lazy = *v.get_ref();
    }
    if let Some(v) = &k.rcu_lazy_flush {
        knobs.rcu_lazy_flush = dur.opt(&k.rcu_lazy_flush, knobs.rcu_lazy_flush)?;
        if knobs.rcu_lazy_flush == 0 {
            return Err(Diag::new(
                v.span(),
                "`rcu_lazy_flush` must be greater than zero",
            ));
        }
    }
    if let Some(v) = &k.rcu_normal_wake_from_gp {
        knobs.rcu_normal_wake_from_gp = *v.get_ref();
    }
    Ok(())
}

/// The `kfree_rcu()` knobs: `KFREE_DRAIN_JIFFIES` and the costs
/// (`rcu/kfree.rs`).
pub(super) fn kfree_rcu_knobs(
    knobs: &mut Knobs,
    k: &RawKernel,
    dur: &Durations<'_>,
) -> DResult<()> {
    if let Some(v) = &k.kfree_drain_jiffies {
        match u64::try_from(*v.get_ref()) {
            Ok(j) if (1..=1 << 32).contains(&j) => knobs.kfree_drain_jiffies = Some(j),
            _ => {
                return Err(Diag::new(
                    v.span(),
                    "`kfree_drain_jiffies` must be a number of jiffies, 1 or more (KFREE_DRAIN_JIFFIES)",
                ))
            }
        }
    }
    knobs.kfree_rcu_cost = dur.opt(&k.kfree_rcu_cost, knobs.kfree_rcu_cost)?;
    knobs.kfree_rcu_free_cost = dur.opt(&k.kfree_rcu_free_cost, knobs.kfree_rcu_free_cost)?;
    Ok(())
}

/// `CONFIG_RCU_FANOUT_LEAF`: 2 to 64.
pub(super) fn rcu_fanout_leaf(v: &Option<S<i64>>, default: u32) -> DResult<u32> {
    let Some(v) = v else { return Ok(default) };
    match u32::try_from(*v.get_ref()) {
        Ok(n) if (2..=64).contains(&n) => Ok(n),
        _ => Err(Diag::new(
            v.span(),
            "`rcu_fanout_leaf` must be between 2 and 64 (CONFIG_RCU_FANOUT_LEAF)",
        )),
    }
}

/// Per-CPU maxima are kept per `latency_window` of the measured time (two
/// tables of one u64 per CPU per window): refuse a run whose tables would
/// not fit in memory, rather than abort allocating them.
pub(super) fn check_window_tables(
    raw: &RawDoc,
    measured: Nanos,
    window: Nanos,
    nr_cpus: usize,
) -> DResult<()> {
    /// 2^27 cells: 1 GiB of tables.
    const MAX_CELLS: u64 = 1 << 27;
    let windows = (measured / window).max(1);
    let cells = windows.saturating_mul(2 * nr_cpus as u64);
    if cells <= MAX_CELLS {
        return Ok(());
    }
    let fits = (MAX_CELLS / (2 * nr_cpus as u64)).max(1);
    let at = raw
        .kernel
        .as_ref()
        .and_then(|k| k.get_ref().latency_window.as_ref())
        .map_or(raw.scenario.get_ref().duration.span(), |w| w.span());
    Err(Diag::new(
        at,
        format!(
            "{windows} latency windows per CPU on {nr_cpus} CPUs do not fit in memory (at most {fits}): \
             make `latency_window` longer or `duration` shorter"
        ),
    ))
}

/// A jiffies count knob: 1 to 300 jiffies, as the kernel clamps them.
pub(super) fn jiffies(v: &Option<S<i64>>, what: &str) -> DResult<Option<u32>> {
    match v {
        None => Ok(None),
        Some(j) => match u32::try_from(*j.get_ref()) {
            Ok(n) if (1..=300).contains(&n) => Ok(Some(n)),
            _ => Err(Diag::new(
                j.span(),
                format!("`{what}` must be between 1 and 300 jiffies"),
            )),
        },
    }
}
