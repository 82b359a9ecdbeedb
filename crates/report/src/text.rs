//! Plain-text tables, variants side by side.

use std::fmt::Write;

use crate::lock_stat::{lock_stat_rows, LOCK_STAT_COLUMNS};
use crate::{fmt_ns, fmt_rate, VariantRun};

/// A table with a header row; columns right-aligned except the first.
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: Vec<String>) -> Self {
        Table { rows: vec![header] }
    }
    pub fn row(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }
    pub fn render(&self, out: &mut String) {
        let cols = self.rows.iter().map(|r| r.len()).max().unwrap_or(0);
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for (i, row) in self.rows.iter().enumerate() {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                if c == 0 {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
            if i == 0 {
                let total: usize = widths.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
                out.push_str(&"-".repeat(total));
                out.push('\n');
            }
        }
    }
}

/// Length of one latency window of a run.
fn window_len(r: &smpsim_kernel::RunResult) -> u64 {
    let windows = r
        .cpus
        .first()
        .map_or(1, |c| c.preempt_off_windows.len().max(1)) as u64;
    let measured = r
        .stats
        .simulated_ns
        .saturating_sub(r.warmup_ns * r.replicas as u64);
    measured / windows
}

/// Names across runs, in order of first appearance.
fn union<'a>(
    runs: &'a [VariantRun],
    names: impl Fn(&'a VariantRun) -> Vec<&'a str>,
) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for r in runs {
        for n in names(r) {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

fn ratio(v: f64, base: f64) -> String {
    if base == 0.0 {
        if v == 0.0 {
            "=".into()
        } else {
            "inf".into()
        }
    } else {
        format!("{:.2}x", v / base)
    }
}

/// What the text of a run shows beyond its summary.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The per-CPU rows (each CPU's preempt-off windows, the CPUs with
    /// long sections); off by default, as they are hundreds of lines on a
    /// large machine.
    pub per_cpu: bool,
    /// Each lock class's type as `perf lock contention` names it
    /// (`spinlock`, `mutex`, `rwsem`, ...), by class name: see
    /// [`crate::perf_lock::lock_types`].
    pub lock_types: Vec<(String, String)>,
}

/// Formats runs of one scenario, variants side by side; ratios are against
/// the first variant. The verdict (what the detectors reported) comes
/// right after the header, before the tables.
pub fn runs(scenario: &str, machine: &str, runs: &[VariantRun], opts: &Options) -> String {
    let mut out = String::new();
    header(&mut out, scenario, machine, runs);
    findings(&mut out, runs);
    out.push('\n');
    counters(&mut out, runs);
    histograms(&mut out, runs);
    cpu_time(&mut out, runs);
    preempt_off_windows(&mut out, runs, opts.per_cpu);
    task_groups(&mut out, runs);
    time1(&mut out, runs);
    lock_stat(&mut out, runs);
    switches(&mut out, runs);
    ttwu_queue(&mut out, runs);
    rcu(&mut out, runs);
    engine(&mut out, runs);
    out
}

/// The scenario, machine, run length and the variants.
fn header(out: &mut String, scenario: &str, machine: &str, runs: &[VariantRun]) {
    let first = &runs[0].result;
    // A run cut short (an event budget, a detector that stops it) says how
    // far it got.
    let planned = first.duration_ns.saturating_mul(first.replicas as u64);
    let reached = if first.stats.simulated_ns < planned {
        format!(
            "{} of {}",
            fmt_ns(first.stats.simulated_ns as f64 / first.replicas.max(1) as f64),
            fmt_ns(first.duration_ns as f64)
        )
    } else {
        fmt_ns(first.duration_ns as f64)
    };
    // Variants that change the topology: each one's CPU count.
    let cpus = if runs.iter().all(|r| r.result.nr_cpus == first.nr_cpus) {
        format!("{} CPUs", first.nr_cpus)
    } else {
        let each: Vec<String> = runs
            .iter()
            .map(|r| format!("{} {}", r.variant, r.result.nr_cpus))
            .collect();
        format!("CPUs: {}", each.join(", "))
    };
    let _ = writeln!(
        out,
        "{scenario} on {machine} ({cpus}), {} simulated{}{}, seed {}",
        reached,
        if first.replicas > 1 {
            format!(" x {} replicas", first.replicas)
        } else {
            String::new()
        },
        if first.warmup_ns > 0 {
            format!(
                " (first {} warm-up excluded)",
                fmt_ns(first.warmup_ns as f64)
            )
        } else {
            String::new()
        },
        first.seed
    );
    let _ = writeln!(out, "machine standing: {}", first.standing.text);
    for r in runs {
        let _ = writeln!(out, "  {:<18} {}", r.variant, r.description);
    }
    out.push('\n');
}

/// Counters, matched by name (variants may differ in what they count).
fn counters(out: &mut String, runs: &[VariantRun]) {
    let names: Vec<String> = runs.iter().map(|r| r.variant.clone()).collect();
    let multi = runs.len() > 1;
    let counter_names = union(runs, |r| {
        r.result.counters.iter().map(|c| c.name.as_str()).collect()
    });
    if !counter_names.is_empty() {
        let mut head = vec!["counter (per second)".to_string()];
        head.extend(names.iter().cloned());
        if multi {
            head.extend(names[1..].iter().map(|n| format!("{n}/{}", names[0])));
        }
        let mut t = Table::new(head);
        for name in &counter_names {
            let rate = |r: &VariantRun| r.result.counter(name).map(|c| c.rate);
            let mut row = vec![name.to_string()];
            row.extend(runs.iter().map(|r| rate(r).map_or("-".into(), fmt_rate)));
            if multi {
                row.extend(runs[1..].iter().map(|r| match (rate(r), rate(&runs[0])) {
                    (Some(v), Some(b)) => ratio(v, b),
                    _ => "-".into(),
                }));
            }
            t.row(row);
        }
        t.render(out);
        out.push('\n');
    }
}

/// Latency histograms, matched by name.
fn histograms(out: &mut String, runs: &[VariantRun]) {
    let hist_names = union(runs, |r| {
        r.result
            .histograms
            .iter()
            .map(|h| h.name.as_str())
            .collect()
    });
    if !hist_names.is_empty() {
        let mut t = Table::new(
            [
                "latency", "variant", "count", "total", "p50", "p90", "p99", "p99.9", "max",
            ]
            .map(String::from)
            .to_vec(),
        );
        for name in &hist_names {
            for r in runs {
                let Some(h) = r.result.histogram(name) else {
                    continue;
                };
                let mut row = vec![
                    name.to_string(),
                    r.variant.clone(),
                    h.count.to_string(),
                    fmt_ns(h.total),
                ];
                row.extend(crate::percentile_cells(h));
                t.row(row);
            }
        }
        t.render(out);
        out.push('\n');
    }
}

/// CPU time split and section maxima.
fn cpu_time(out: &mut String, runs: &[VariantRun]) {
    let mut t = Table::new(
        [
            "cpu time",
            "user",
            "sys",
            "spin",
            "irq",
            "idle",
            "max preempt-off",
            "max irq-off",
        ]
        .map(String::from)
        .to_vec(),
    );
    for r in runs {
        let mut sum = smpsim_kernel::cpu::CpuTimes::default();
        let (mut mp, mut mi) = (0, 0);
        for c in &r.result.cpus {
            sum.user += c.times.user;
            sum.sys += c.times.sys;
            sum.spin += c.times.spin;
            sum.irq += c.times.irq;
            sum.idle += c.times.idle;
            mp = mp.max(c.max_preempt_off_ns);
            mi = mi.max(c.max_irq_off_ns);
        }
        let total = sum.total().max(1) as f64;
        let pct = |v: u64| format!("{:.1}%", 100.0 * v as f64 / total);
        t.row(vec![
            r.variant.clone(),
            pct(sum.user),
            pct(sum.sys),
            pct(sum.spin),
            pct(sum.irq),
            pct(sum.idle),
            fmt_ns(mp as f64),
            fmt_ns(mi as f64),
        ]);
    }
    t.render(out);
    out.push('\n');
}

/// Per-CPU preempt-off windows (the seed 001 table) when there are several,
/// and the CPUs with sections longer than 1 ms; with `per_cpu` off, one
/// line saying how many rows `--per-cpu` shows.
fn preempt_off_windows(out: &mut String, runs: &[VariantRun], per_cpu: bool) {
    let first = &runs[0].result;
    let windows = first
        .cpus
        .first()
        .map_or(0, |c| c.preempt_off_windows.len());
    if !per_cpu {
        let long = runs
            .iter()
            .flat_map(|r| r.result.cpus.iter())
            .filter(|c| c.long_preempt_off.iter().any(|&n| n > 0))
            .count();
        let rows = if windows >= 2 { first.cpus.len() } else { 0 } + long;
        if rows > 0 {
            let _ = writeln!(
                out,
                "per-CPU rows ({rows}: preempt-off windows per CPU, CPUs with sections over 1 ms): --per-cpu\n"
            );
        }
        return;
    }
    if windows >= 2 {
        let mut head = vec!["cpu".to_string()];
        for r in runs {
            head.push(format!("{} p50", r.variant));
            head.push(format!("{} p99", r.variant));
        }
        let mut t = Table::new(head);
        for (i, c) in first.cpus.iter().enumerate() {
            let mut row = vec![format!("cpu{}", c.cpu)];
            for r in runs {
                let cpu = &r.result.cpus[i];
                row.push(cpu.preempt_off_window_p50_ns.to_string());
                row.push(cpu.preempt_off_window_p99_ns.to_string());
            }
            t.row(row);
        }
        let _ = writeln!(
            out,
            "longest preempt-off section per {} window, P50/P99 over {} windows (ns)",
            fmt_ns(window_len(first) as f64),
            windows
        );
        t.render(out);
        out.push('\n');
    }
    let long: Vec<(usize, &crate::VariantRun)> = runs
        .iter()
        .flat_map(|r| (0..r.result.cpus.len()).map(move |i| (i, r)))
        .filter(|(i, r)| r.result.cpus[*i].long_preempt_off.iter().any(|&n| n > 0))
        .collect();
    if !long.is_empty() {
        let mut t = Table::new(
            ["cpu", "variant", "1~10ms", "10~50ms", "50~100ms", "100ms~"]
                .map(String::from)
                .to_vec(),
        );
        for (i, r) in long {
            let c = &r.result.cpus[i];
            let mut row = vec![format!("cpu{}", c.cpu), r.variant.clone()];
            row.extend(c.long_preempt_off.iter().map(|n| n.to_string()));
            t.row(row);
        }
        out.push_str("preempt-off sections longer than 1 ms (CPUs with none omitted)\n");
        t.render(out);
        out.push('\n');
    }
}

/// Task groups, times per task. Groups are matched across variants by
/// name, in the order they first appear: a variant may have groups the
/// first has not (a kernel thread only its configuration spawns, as
/// `rcuop/N` with `rcu_nocbs`), and those are listed too.
fn task_groups(out: &mut String, runs: &[VariantRun]) {
    let mut t = Table::new(
        [
            "task group",
            "variant",
            "tasks",
            "user",
            "sys",
            "(spin)",
            "runnable",
            "sleep",
        ]
        .map(String::from)
        .to_vec(),
    );
    for name in group_names(runs) {
        for r in runs {
            let Some(g) = r.result.task_groups.iter().find(|g| g.name == name) else {
                continue;
            };
            let n = g.tasks.max(1) as f64;
            let per = |v: u64| fmt_ns(v as f64 / n);
            t.row(vec![
                name.to_string(),
                r.variant.clone(),
                g.tasks.to_string(),
                per(g.total.user),
                per(g.total.sys),
                per(g.total.spin),
                per(g.total.runnable),
                per(g.total.sleep),
            ]);
        }
    }
    out.push_str("(times per task)\n");
    t.render(out);
    out.push('\n');
}

/// Every variant's task-group names, each once, in order of first
/// appearance.
fn group_names(runs: &[VariantRun]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        for g in &r.result.task_groups {
            if !names.contains(&g.name.as_str()) {
                names.push(&g.name);
            }
        }
    }
    names
}

/// time(1) of tasks that ran to completion.
fn time1(out: &mut String, runs: &[VariantRun]) {
    let before_time = out.len();
    for r in runs {
        for g in &r.result.task_groups {
            if g.exited == 0 || g.per_task.is_empty() {
                continue;
            }
            let _ = writeln!(out, "time(1) of {} [{}]:", g.name, r.variant);
            for t in &g.per_task {
                let Some(wall) = t.wall_ns else { continue };
                let s = |ns: u64| {
                    let secs = ns as f64 / 1e9;
                    format!("{}m{:.3}s", (secs / 60.0).floor() as u64, secs % 60.0)
                };
                let _ = writeln!(
                    out,
                    "  {}/{} (cpu{}): real {}  user {}  sys {}  (spinning {})",
                    g.name,
                    t.index,
                    t.cpu,
                    s(wall),
                    s(t.times.user),
                    s(t.times.sys),
                    s(t.times.spin)
                );
            }
        }
    }
    if out.len() > before_time {
        out.push('\n');
    }
}

/// The `lock_stat` table, as `/proc/lock_stat` prints it: every time in
/// microseconds with two decimals.
fn lock_stat(out: &mut String, runs: &[VariantRun]) {
    if runs[0].result.locks.is_empty() {
        return;
    }
    let mut t = Table::new(LOCK_STAT_COLUMNS.map(String::from).to_vec());
    let mut untracked = false;
    for row in lock_stat_rows(runs) {
        untracked |= row[3] == "-";
        t.row(row);
    }
    out.push_str("lock_stat (times in us, as /proc/lock_stat)\n");
    t.render(out);
    if untracked {
        out.push_str(crate::lock_stat::UNTRACKED_NOTE);
        out.push('\n');
    }
    if let Some(line) = crate::lock_stat::cmpxchg_fails_line(runs) {
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(line) = crate::lock_stat::osq_passes_line(runs) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');
}

/// Context switches and lazy TLB.
fn switches(out: &mut String, runs: &[VariantRun]) {
    for r in runs {
        let m = &r.result.mm;
        if r.result.context_switches > 0 || m.mms_freed > 0 {
            let measured = r
                .result
                .stats
                .simulated_ns
                .saturating_sub(r.result.warmup_ns * r.result.replicas as u64);
            let _ = writeln!(
                out,
                "switches [{}]: {} context switches ({}/s), {} lazy mm_count atomics, {} shootdown IPIs, {} mms freed",
                r.variant,
                r.result.context_switches,
                fmt_rate(r.result.context_switches as f64 / (measured.max(1) as f64 / 1e9)),
                m.lazy_refcount_ops,
                m.shootdown_ipis,
                m.mms_freed
            );
        }
    }
}

/// Remote wakeups queued on a wake list (`[kernel] ttwu_queue`).
fn ttwu_queue(out: &mut String, runs: &[VariantRun]) {
    for r in runs {
        let Some(s) = r.result.ttwu_queue else {
            continue;
        };
        // A polling idle target takes a flag write, not an IPI.
        let per_ipi = match s.ipis {
            0 => String::new(),
            n => format!(" ({:.2} wakeups an IPI)", s.queued as f64 / n as f64),
        };
        let _ = writeln!(
            out,
            "ttwu_queue_wakelist [{}]: {} wakeups queued, {} IPIs sent{per_ipi}, {} activated by {} sched_ttwu_pending() runs",
            r.variant, s.queued, s.ipis, s.activated, s.handler_runs
        );
    }
}

/// Grace periods of the runs that use RCU.
fn rcu(out: &mut String, runs: &[VariantRun]) {
    for r in runs {
        let Some(s) = r.result.rcu else { continue };
        let per_gp = s.fqs_scans as f64 / s.grace_periods.max(1) as f64;
        let _ = writeln!(
            out,
            "rcu [{}]: {} grace periods, {} FQS scans ({per_gp:.2} per grace period), {} expedited",
            r.variant, s.grace_periods, s.fqs_scans, s.expedited_grace_periods
        );
        if s.kfree_rcu_objects > 0 {
            let _ = writeln!(
                out,
                "kfree_rcu [{}]: {} objects queued, {} batches behind a grace period, {} freed ({} without waiting for another); waiting for a grace period: peak {}, mean {}",
                r.variant,
                s.kfree_rcu_objects,
                s.kfree_rcu_batches,
                s.kfree_rcu_freed,
                s.kfree_rcu_drained_ready,
                fmt_bytes(s.kfree_rcu_bytes_waiting_peak),
                fmt_bytes(s.kfree_rcu_bytes_waiting_mean)
            );
        }
    }
}

/// Bytes in KiB or MiB past 1 KiB.
fn fmt_bytes(b: u64) -> String {
    match b {
        0..1024 => format!("{b} B"),
        1024..1_048_576 => format!("{:.1} KiB", b as f64 / 1024.0),
        _ => format!("{:.1} MiB", b as f64 / 1_048_576.0),
    }
}

/// Detector findings: the verdict of a run.
fn findings(out: &mut String, runs: &[VariantRun]) {
    for r in runs {
        if r.result.findings.is_empty() {
            let _ = writeln!(out, "detectors [{}]: nothing reported", r.variant);
        }
        for f in &r.result.findings {
            let _ = writeln!(
                out,
                "detectors [{}]: {} at {} ({} occurrences): {}",
                r.variant,
                f.detector,
                fmt_ns(f.time_ns as f64),
                f.occurrences,
                f.message
            );
        }
    }
}

/// Engine statistics.
fn engine(out: &mut String, runs: &[VariantRun]) {
    for r in runs {
        let _ = writeln!(
            out,
            "engine [{}]: {} events ({} stale) in {:.2}s host time, {:.1}M events/s",
            r.variant,
            r.result.stats.events,
            r.result.stats.stale_events,
            r.result.stats.wall_seconds,
            r.result.stats.events as f64 / r.result.stats.wall_seconds.max(1e-9) / 1e6
        );
        // Events per simulated millisecond by kind (empty for a result read
        // back from JSON, which does not carry them).
        let by_kind = r.result.stats.by_kind.nonzero();
        if !by_kind.is_empty() {
            let ms = r.result.stats.simulated_ns.max(1) as f64 / 1e6;
            let list: Vec<String> = by_kind
                .iter()
                .map(|(name, done, stale)| match stale {
                    0 => format!("{name} {:.1}", *done as f64 / ms),
                    _ => format!(
                        "{name} {:.1} (+{:.1} stale)",
                        *done as f64 / ms,
                        *stale as f64 / ms
                    ),
                })
                .collect();
            let _ = writeln!(
                out,
                "engine [{}]: events per simulated ms by kind: {}",
                r.variant,
                list.join(", ")
            );
        }
    }
}
/// A reproduction: the verdict first (pass/miss per case), then the
/// published-vs-simulated table, then the text of its cases (`per_case`).
/// A `--quick` reproduction says so in its first line.
pub fn reproduce(rows: &[crate::model::MetricRow], per_case: String) -> String {
    let mut out = String::new();
    if rows.first().is_some_and(|r| r.quick) {
        out.push_str(QUICK_NOTE);
        out.push_str("\n\n");
    }
    out.push_str("=== verdict ===\n");
    let verdict = crate::model::verdict(rows);
    let w = verdict.iter().map(|c| c.case.len()).max().unwrap_or(0);
    for c in &verdict {
        let _ = write!(out, "{:<w$}  {}", c.case, c.summary());
        if c.missed.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "; MISS: {}", c.missed.join(", "));
        }
    }
    let (passed, judged, info) = crate::model::totals(rows);
    let _ = writeln!(
        out,
        "{passed} of {judged} metrics within their pass rule{}{}\n",
        if info > 0 {
            format!("; {info} with no published figure are information, not judged")
        } else {
            String::new()
        },
        if passed == judged {
            ""
        } else {
            " (--check exits 1)"
        }
    );
    let mut t = Table::new(
        [
            "case",
            "metric",
            "published",
            "simulated",
            "sim/pub",
            "rule",
            "seeds",
            "pass",
        ]
        .map(String::from)
        .to_vec(),
    );
    for r in rows {
        t.row(vec![
            r.case.clone(),
            r.metric.clone(),
            r.published_text(num),
            num(r.simulated),
            r.ratio.map_or("-".into(), |x| format!("{x:.2}")),
            r.rule.clone(),
            r.seeds.to_string(),
            r.verdict_word().into(),
        ]);
    }
    out.push_str("=== published vs simulated ===\n");
    t.render(&mut out);
    out.push('\n');
    out.push_str(&per_case);
    out
}

/// What a `--quick` reproduction says wherever it is shown.
pub const QUICK_NOTE: &str =
    "QUICK: each case's shortened settings (--quick), not the published run lengths";

/// A published or simulated figure: as many decimals as its size needs.
pub fn num(v: f64) -> String {
    if v.abs() >= 1e5 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}
