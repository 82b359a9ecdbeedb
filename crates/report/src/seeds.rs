//! `run --seeds N`'s report: per variant, the seeds that made a detector
//! fire and each metric over the seeds; as JSON or text.

use serde::Serialize;
use smpsim_kernel::{Finding, HistResult, RunResult};

use crate::{fmt_ns, fmt_rate};

/// One seed's detector findings.
#[derive(Serialize)]
pub struct SeedFindings {
    pub seed: u64,
    pub findings: Vec<Finding>,
}

/// One variant over its seeds.
#[derive(Serialize)]
pub struct Exploration {
    pub variant: String,
    pub seeds: u64,
    pub first_seed: u64,
    pub failing: Vec<SeedFindings>,
    /// Each counter's rate and each histogram's p50/p99 over the seeds.
    pub metrics: Vec<OverSeeds>,
}

/// One metric over the seeds of a variant.
#[derive(Serialize)]
pub struct OverSeeds {
    /// A result path (`counter.NAME.rate`, `hist.NAME.p99`).
    pub name: String,
    pub mean: f64,
    /// Sample standard deviation (0 for one seed).
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    /// Rates print as rates, histogram figures as times.
    #[serde(skip)]
    pub time: bool,
}

impl OverSeeds {
    fn of(name: String, values: &[f64], time: bool) -> OverSeeds {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        OverSeeds {
            name,
            mean,
            stddev: var.sqrt(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            time,
        }
    }
}

/// Counters' rates and histograms' p50/p99, each over every seed's result
/// (results in seed order; every seed has the same counters and histograms).
pub fn over_seeds(results: &[RunResult]) -> Vec<OverSeeds> {
    let Some(first) = results.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, c) in first.counters.iter().enumerate() {
        let v: Vec<f64> = results.iter().map(|r| r.counters[i].rate).collect();
        out.push(OverSeeds::of(format!("counter.{}.rate", c.name), &v, false));
    }
    for (i, h) in first.histograms.iter().enumerate() {
        type Quantile = fn(&HistResult) -> u64;
        let quantiles: [(&str, Quantile); 2] = [("p50", |h| h.p50), ("p99", |h| h.p99)];
        for (q, get) in quantiles {
            let v: Vec<f64> = results
                .iter()
                .map(|r| get(&r.histograms[i]) as f64)
                .collect();
            out.push(OverSeeds::of(format!("hist.{}.{q}", h.name), &v, true));
        }
    }
    out
}

/// The report as JSON.
pub fn json(report: &[Exploration]) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("serializable");
    s.push('\n');
    s
}

/// The report as text; `scenario_path` for the replay command.
pub fn text(report: &[Exploration], scenario_path: &std::path::Path) -> String {
    let mut s = String::new();
    for e in report {
        s.push_str(&format!(
            "{}: {} of {} seeds ({}..{}) made a detector fire\n",
            e.variant,
            e.failing.len(),
            e.seeds,
            e.first_seed,
            e.first_seed + e.seeds - 1
        ));
        by_detector(&mut s, e);
        metrics_table(&mut s, e);
        if let Some(f) = e.failing.first() {
            s.push_str(&format!(
                "  first: seed {}: {}\n",
                f.seed, f.findings[0].message
            ));
            s.push_str(&format!(
                "  replay: smpsim run {} --variant {} --seed {}\n",
                scenario_path.display(),
                e.variant,
                f.seed
            ));
        }
    }
    s
}

/// Each detector that fired and on which seeds (the first eight).
fn by_detector(s: &mut String, e: &Exploration) {
    let mut by_detector: std::collections::BTreeMap<&str, Vec<u64>> = Default::default();
    for f in &e.failing {
        for d in &f.findings {
            by_detector
                .entry(d.detector.as_str())
                .or_default()
                .push(f.seed);
        }
    }
    for (d, seeds) in &by_detector {
        let shown: Vec<String> = seeds.iter().take(8).map(|s| s.to_string()).collect();
        s.push_str(&format!(
            "  {d}: {} seeds, e.g. {}{}\n",
            seeds.len(),
            shown.join(", "),
            if seeds.len() > 8 { ", ..." } else { "" }
        ));
    }
}

/// Each metric's mean, deviation and range over the seeds.
fn metrics_table(s: &mut String, e: &Exploration) {
    if e.metrics.is_empty() {
        return;
    }
    let mut t = crate::text::Table::new(
        ["metric", "mean", "stddev", "min", "max"]
            .map(String::from)
            .to_vec(),
    );
    for m in &e.metrics {
        let f = |v: f64| if m.time { fmt_ns(v) } else { fmt_rate(v) };
        t.row(vec![
            format!("  {}", m.name),
            f(m.mean),
            f(m.stddev),
            f(m.min),
            f(m.max),
        ]);
    }
    t.render(s);
}
