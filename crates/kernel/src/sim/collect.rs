//! The end of a run: what the kernel's state says, turned into the
//! [`RunResult`] every output reads (measured times, counters, lock_stat,
//! task groups), after the warm-up is taken off.

use super::*;

impl Kernel<'_> {
    pub(super) fn finish(&mut self, stats: smpsim_engine::EngineStats) -> RunResult {
        let spec = self.spec;
        // Close the per-task state accounting.
        for t in 0..self.tasks.len() as u32 {
            let state = self.tasks[t as usize].state;
            self.set_state(t, state);
            self.check_hung_task(t);
        }
        self.book_spinning_waits();
        RunResult {
            nr_cpus: self.nr_cpus(),
            standing: MachineStanding::of(&spec.machine),
            replicas: 1,
            duration_ns: spec.duration,
            warmup_ns: spec.warmup,
            seed: spec.seed,
            counters: self.counter_results(),
            histograms: self
                .metrics
                .hist_names
                .iter()
                .zip(&self.metrics.hists)
                .zip(&self.metrics.exact)
                .map(|((name, h), exact)| summarize_exact(name, h, exact))
                .collect(),
            cpus: self.cpu_results(),
            task_groups: self.task_group_results(),
            context_switches: self.cpus.iter().map(|c| c.nr_switches).sum(),
            mm: self.mm.stats(),
            capacity: self.cost.scales_work.then_some(self.sched.capacity_stats()),
            rcu: self.rcu.stats(),
            ttwu_queue: (spec.knobs.ttwu_queue != crate::spec::TtwuQueue::RqLock)
                .then_some(self.sched.ttwu.stats),
            perturbations: self
                .sched
                .perturb
                .as_mut()
                .map(|p| std::mem::take(&mut p.applied))
                .unwrap_or_default(),
            locks: self.lock_results(),
            cfs_bandwidth: self
                .sched
                .pools()
                .iter()
                .map(|p| BandwidthStat {
                    cgroup: spec.cgroups[p.cgroup].name.clone(),
                    nr_periods: p.nr_periods,
                    nr_throttled: p.nr_throttled,
                    throttle_events: p.throttle_events,
                    nr_unthrottled: p.nr_unthrottled,
                    usage_ns: p.usage,
                    slack_returned_ns: p.slack_returned,
                    slack_distributions: p.slack_distributions,
                })
                .collect(),
            findings: std::mem::take(&mut self.metrics.findings),
            stats: RunStats {
                events: stats.events,
                stale_events: stats.stale_events,
                simulated_ns: self.now,
                wall_seconds: 0.0,
                by_kind: self.run.event_counts,
            },
            raw_histograms: std::mem::take(&mut self.metrics.hists),
            exact_histograms: std::mem::take(&mut self.metrics.exact),
        }
    }

    /// Reads every CPU's and task's times at the end of the warm-up (each
    /// accounted up to now first), for results of the measured part.
    pub(super) fn warmup_end_times(&mut self) {
        for c in 0..self.nr_cpus() {
            self.settle(c);
        }
        for t in 0..self.tasks.len() as u32 {
            let state = self.tasks[t as usize].state;
            self.set_state(t, state);
        }
        self.metrics.cpu_times_base = self.cpus.iter().map(|c| c.times).collect();
        self.metrics.task_times_base = self.tasks.iter().map(|t| t.times).collect();
    }

    /// A CPU's times in the measured part of the run.
    pub(super) fn measured_cpu_times(&self, c: usize) -> crate::cpu::CpuTimes {
        match self.metrics.cpu_times_base.get(c) {
            Some(base) => self.cpus[c].times.since(base),
            None => self.cpus[c].times,
        }
    }

    /// A task's times in the measured part of the run.
    fn measured_task_times(&self, t: usize) -> TaskTimes {
        match self.metrics.task_times_base.get(t) {
            Some(base) => self.tasks[t].times.since(base),
            None => self.tasks[t].times,
        }
    }

    /// Counters with their rates over the measured part of the run.
    fn counter_results(&self) -> Vec<CounterResult> {
        let measured = self.now.saturating_sub(self.spec.warmup).max(1) as f64 / 1e9;
        self.spec
            .counters
            .iter()
            .zip(&self.metrics.counters)
            .map(|(name, &count)| CounterResult {
                name: name.clone(),
                count,
                rate: count as f64 / measured,
            })
            .collect()
    }

    /// Each CPU's time split, section maxima and per-window maxima.
    fn cpu_results(&self) -> Vec<CpuResult> {
        let w = self.metrics.windows;
        self.cpus
            .iter()
            .map(|cpu| {
                let c = cpu.id as usize;
                let pw = self.metrics.preempt_off_windows[c * w..(c + 1) * w].to_vec();
                let iw = self.metrics.irq_off_windows[c * w..(c + 1) * w].to_vec();
                CpuResult {
                    cpu: cpu.id,
                    times: self.measured_cpu_times(c),
                    nr_switches: cpu.nr_switches,
                    max_preempt_off_ns: self.metrics.max_preempt_off[c],
                    max_irq_off_ns: self.metrics.max_irq_off[c],
                    preempt_off_window_p50_ns: crate::metrics::nearest_rank(&pw, 0.50),
                    preempt_off_window_p99_ns: crate::metrics::nearest_rank(&pw, 0.99),
                    long_preempt_off: self.metrics.long_preempt_off[c],
                    preempt_off_windows: pw,
                    irq_off_windows: iw,
                }
            })
            .collect()
    }

    /// Each task group's summed times, exits and wall times (and, for small
    /// groups, each task's).
    fn task_group_results(&self) -> Vec<TaskGroupResult> {
        let mut task_groups: Vec<TaskGroupResult> = self
            .spec
            .task_groups
            .iter()
            .map(|tg| TaskGroupResult {
                name: tg.name.clone(),
                tasks: tg.placement.len() as u32,
                total: TaskTimes::default(),
                total_saturated: false,
                exited: 0,
                wall_mean_ns: 0,
                wall_max_ns: 0,
                per_task: Vec::new(),
            })
            .collect();
        // Kernel threads, named as ps shows them.
        task_groups.extend(self.run.kthreads.iter().map(|k| TaskGroupResult {
            name: format!("[{}]", k.name),
            tasks: match k.spawn {
                crate::kthread::Spawn::PerCpu { .. } => self.nr_cpus(),
                crate::kthread::Spawn::One { .. } => 1,
                crate::kthread::Spawn::ForCpus { cpus } => cpus(self.spec).len() as u32,
            },
            total: TaskTimes::default(),
            total_saturated: false,
            exited: 0,
            wall_mean_ns: 0,
            wall_max_ns: 0,
            per_task: Vec::new(),
        }));
        // Wall times summed wide: many tasks' long runs exceed u64.
        let mut wall_sums = vec![0u128; task_groups.len()];
        for (i, task) in self.tasks.iter().enumerate() {
            let g = &mut task_groups[task.group as usize];
            let t = &self.measured_task_times(i);
            g.total_saturated |= g.total.add_saturating(t);
            if let Some(wall) = task.exited_at {
                g.exited += 1;
                wall_sums[task.group as usize] += u128::from(wall);
                g.wall_max_ns = g.wall_max_ns.max(wall);
            }
            if g.tasks <= 64 {
                g.per_task.push(TaskResult {
                    index: task.index,
                    cpu: task.cpu,
                    times: *t,
                    wall_ns: task.exited_at,
                });
            }
        }
        for (g, sum) in task_groups.iter_mut().zip(wall_sums) {
            // A mean of u64 values fits in u64.
            g.wall_mean_ns = (sum / u128::from(g.exited.max(1))) as u64;
        }
        task_groups
    }

    /// The `lock_stat` rows, with the line bounces of the measured part.
    fn lock_results(&mut self) -> Vec<crate::result::LockStat> {
        let now = self.lock_line_transfers();
        let fails = self.cmpxchg_fails();
        let passes = self.osq_passes();
        let mut locks = std::mem::take(&mut self.metrics.locks);
        for (i, l) in locks.iter_mut().enumerate() {
            l.bounces = now[i] - self.metrics.bounce_base.get(i).copied().unwrap_or(0);
            l.cmpxchg_fails =
                fails[i] - self.metrics.cmpxchg_fails_base.get(i).copied().unwrap_or(0);
            let (within, across) = self
                .metrics
                .osq_passes_base
                .get(i)
                .copied()
                .unwrap_or_default();
            l.osq_within_node = passes[i].within_node - within;
            l.osq_across_nodes = passes[i].across_nodes - across;
        }
        locks
    }
}

/// The summary of a latency histogram from its buckets alone (minimum and
/// maximum to 3 significant digits).
pub fn summarize(name: &str, h: &hdrhistogram::Histogram<u64>) -> HistResult {
    let bounds = crate::result::ExactSamples {
        min: if h.is_empty() { 0 } else { h.min() },
        max: h.max(),
    };
    summarize_exact(name, h, &bounds)
}

/// The summary of a latency histogram: total, mean and quantiles from its
/// buckets (the quantiles kept within the samples' range), minimum and
/// maximum exact.
pub fn summarize_exact(
    name: &str,
    h: &hdrhistogram::Histogram<u64>,
    exact: &crate::result::ExactSamples,
) -> HistResult {
    if h.is_empty() {
        return HistResult {
            name: name.to_string(),
            count: 0,
            total: 0.0,
            min: 0,
            mean: 0.0,
            p50: 0,
            p90: 0,
            p99: 0,
            p999: 0,
            max: 0,
        };
    }
    let q = |p: f64| h.value_at_quantile(p).clamp(exact.min, exact.max);
    HistResult {
        name: name.to_string(),
        count: h.len(),
        total: h.mean() * h.len() as f64,
        min: exact.min,
        mean: h.mean(),
        p50: q(0.50),
        p90: q(0.90),
        p99: q(0.99),
        p999: q(0.999),
        max: exact.max,
    }
}
