//! Independent replicas of one spec, run in parallel and pooled.
//!
//! Statistics over long windows (the longest preempt-off section in each
//! 30 s window) need many windows; simulating them as replicas with seeds
//! `seed, seed+1, ...` uses every core and stays deterministic: each
//! replica depends only on its seed, and they are merged in seed order.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use rayon::prelude::*;

use crate::result::*;
use crate::sim::summarize_exact;
use crate::spec::Spec;
use crate::Kernel;

/// Runs `spec.replicas` replicas (at least one) and merges them.
pub fn simulate(spec: &Spec) -> RunResult {
    simulate_with(spec, None)
}

/// [`simulate`], each replica adding the simulated time it reaches to
/// `progress` as it goes.
pub fn simulate_with(spec: &Spec, progress: Option<&Arc<AtomicU64>>) -> RunResult {
    let run = |spec: &Spec| {
        let mut k = Kernel::new(spec);
        k.report_progress(progress.cloned());
        k.run()
    };
    if spec.replicas <= 1 {
        return run(spec);
    }
    let runs: Vec<RunResult> = (0..spec.replicas)
        .into_par_iter()
        .map(|i| {
            let mut one = spec.clone();
            one.seed = spec.seed.wrapping_add(i as u64);
            one.replicas = 1;
            run(&one)
        })
        .collect();
    merge(runs)
}

/// Pools replicas: sums counts and times, concatenates windows, merges
/// histograms, and recomputes rates and percentiles from the pool.
pub fn merge(mut runs: Vec<RunResult>) -> RunResult {
    let mut out = runs.remove(0);
    let mut measured = out.stats.simulated_ns.saturating_sub(out.warmup_ns);
    for r in runs {
        measured += r.stats.simulated_ns.saturating_sub(r.warmup_ns);
        out.replicas += r.replicas;
        for (a, b) in out.counters.iter_mut().zip(&r.counters) {
            a.count += b.count;
        }
        for (a, b) in out.raw_histograms.iter_mut().zip(&r.raw_histograms) {
            a.add(b).expect("same bounds");
        }
        for (a, b) in out.exact_histograms.iter_mut().zip(&r.exact_histograms) {
            a.merge(b);
        }
        for (a, b) in out.cpus.iter_mut().zip(&r.cpus) {
            a.times.user += b.times.user;
            a.times.sys += b.times.sys;
            a.times.spin += b.times.spin;
            a.times.irq += b.times.irq;
            a.times.softirq += b.times.softirq;
            a.times.idle += b.times.idle;
            a.nr_switches += b.nr_switches;
            a.max_preempt_off_ns = a.max_preempt_off_ns.max(b.max_preempt_off_ns);
            a.max_irq_off_ns = a.max_irq_off_ns.max(b.max_irq_off_ns);
            for i in 0..4 {
                a.long_preempt_off[i] += b.long_preempt_off[i];
            }
            a.preempt_off_windows
                .extend_from_slice(&b.preempt_off_windows);
            a.irq_off_windows.extend_from_slice(&b.irq_off_windows);
        }
        if let (Some(a), Some(b)) = (out.capacity.as_mut(), r.capacity) {
            a.add(&b);
        }
        if let (Some(a), Some(b)) = (out.ttwu_queue.as_mut(), r.ttwu_queue) {
            a.add(&b);
        }
        if let (Some(a), Some(b)) = (out.rcu.as_mut(), r.rcu) {
            a.add(
                &b,
                u64::from(out.replicas - r.replicas),
                u64::from(r.replicas),
            );
        }
        for (a, b) in out.task_groups.iter_mut().zip(&r.task_groups) {
            a.total_saturated |= a.total.add_saturating(&b.total) || b.total_saturated;
            let exited = a.exited + b.exited;
            if exited > 0 {
                // In u128: the weighted sum of two u64 means can exceed u64.
                let sum = u128::from(a.wall_mean_ns) * u128::from(a.exited)
                    + u128::from(b.wall_mean_ns) * u128::from(b.exited);
                a.wall_mean_ns = (sum / u128::from(exited)) as u64;
            }
            a.exited = exited;
            a.wall_max_ns = a.wall_max_ns.max(b.wall_max_ns);
            // A task's times pooled like its group's total (which they sum
            // to); its wall time, the longest of its replicas.
            for (ta, tb) in a.per_task.iter_mut().zip(&b.per_task) {
                a.total_saturated |= ta.times.add_saturating(&tb.times);
                ta.wall_ns = ta.wall_ns.max(tb.wall_ns);
            }
        }
        for (a, b) in out.locks.iter_mut().zip(&r.locks) {
            a.merge(b);
        }
        for (a, b) in out.cfs_bandwidth.iter_mut().zip(&r.cfs_bandwidth) {
            a.nr_periods += b.nr_periods;
            a.nr_throttled += b.nr_throttled;
            a.throttle_events += b.throttle_events;
            a.nr_unthrottled += b.nr_unthrottled;
            a.usage_ns += b.usage_ns;
            a.slack_returned_ns += b.slack_returned_ns;
            a.slack_distributions += b.slack_distributions;
        }
        for f in r.findings {
            match out.findings.iter_mut().find(|g| g.detector == f.detector) {
                Some(g) => g.occurrences += f.occurrences,
                None => out.findings.push(f),
            }
        }
        out.context_switches += r.context_switches;
        out.mm.add(&r.mm);
        out.stats.events += r.stats.events;
        out.stats.stale_events += r.stats.stale_events;
        out.stats.by_kind.add(&r.stats.by_kind);
        out.stats.simulated_ns += r.stats.simulated_ns;
    }
    let seconds = measured.max(1) as f64 / 1e9;
    for c in &mut out.counters {
        c.rate = c.count as f64 / seconds;
    }
    for ((h, raw), exact) in out
        .histograms
        .iter_mut()
        .zip(&out.raw_histograms)
        .zip(&out.exact_histograms)
    {
        *h = summarize_exact(&h.name, raw, exact);
    }
    for c in &mut out.cpus {
        c.preempt_off_window_p50_ns = crate::metrics::nearest_rank(&c.preempt_off_windows, 0.50);
        c.preempt_off_window_p99_ns = crate::metrics::nearest_rank(&c.preempt_off_windows, 0.99);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn replicas_pool_counts_and_windows_deterministically() {
        let mut s = global_mutex_bench(4, 1_000, 20_000, 4_000_000);
        s.knobs.latency_window = 1_000_000;
        let one = simulate(&s);
        s.replicas = 3;
        let three = simulate(&s);
        assert_eq!(three, simulate(&s));
        assert_eq!(three.replicas, 3);
        assert_eq!(
            three.cpus[0].preempt_off_windows.len(),
            3 * one.cpus[0].preempt_off_windows.len()
        );
        // The first replica is the single run; the pool holds more.
        assert!(three.counters[0].count > 2 * one.counters[0].count);
        let rate_ratio = three.counters[0].rate / one.counters[0].rate;
        assert!((0.8..1.25).contains(&rate_ratio), "{rate_ratio}");
    }

    #[test]
    fn replicas_pool_each_tasks_times_like_their_group() {
        let mut s = global_mutex_bench(4, 1_000, 20_000, 4_000_000);
        s.replicas = 2;
        let two = simulate(&s);
        for g in &two.task_groups {
            if g.per_task.is_empty() {
                continue;
            }
            let mut sum = crate::task::TaskTimes::default();
            for t in &g.per_task {
                sum.add_saturating(&t.times);
            }
            assert_eq!(sum, g.total, "group {}", g.name);
        }
    }
}
