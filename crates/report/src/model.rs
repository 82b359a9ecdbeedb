//! The typed results of a reproduction: a case as run and its rows of
//! published-vs-simulated metrics, with the pass rules that judge them.
//! (A run is [`crate::VariantRun`]; a sweep point, a line of
//! [`crate::results_file`].)

use serde::Serialize;
use smpsim_scenario::{PassRule, Scenario};

use crate::VariantRun;

/// One case as run: what the HTML and LKML reports are made of.
pub struct CaseRun<'a> {
    pub scenario: &'a Scenario,
    pub machine: smpsim_machine::Machine,
    /// Its rows in the metric table.
    pub rows: std::ops::Range<usize>,
    /// The runs of every variant, per seed.
    pub runs: Vec<Vec<VariantRun>>,
}

#[derive(Serialize)]
pub struct MetricRow {
    pub case: String,
    pub metric: String,
    /// The published figure; `None` (JSON `null`, text `-`) where the
    /// source gives none and the metric is only reported.
    pub published: Option<f64>,
    pub simulated: f64,
    /// Simulated / published; `None` without a published figure (or with
    /// a published 0).
    pub ratio: Option<f64>,
    pub pass: bool,
    pub rule: String,
    pub seeds: u32,
    pub min: f64,
    pub max: f64,
    pub source: String,
    /// Run with `--quick` (the case's shortened settings), not at the
    /// published lengths.
    pub quick: bool,
    /// The ratios the pass rule accepts, when it is a ratio rule.
    #[serde(skip)]
    pub band: Option<(f64, f64)>,
}

/// Simulated / published, where there is a non-zero published figure.
pub fn ratio(published: Option<f64>, simulated: f64) -> Option<f64> {
    published.filter(|p| *p != 0.0).map(|p| simulated / p)
}

/// The verdict of a reproduction, case by case: how many metrics pass and
/// which miss, in the order the cases ran.
pub fn verdict(rows: &[MetricRow]) -> Vec<(String, usize, Vec<String>)> {
    let mut out: Vec<(String, usize, Vec<String>)> = Vec::new();
    for r in rows {
        if out.last().is_none_or(|c| c.0 != r.case) {
            out.push((r.case.clone(), 0, Vec::new()));
        }
        let c = out.last_mut().expect("pushed");
        if r.pass {
            c.1 += 1;
        } else {
            c.2.push(r.metric.clone());
        }
    }
    out
}

/// A pass rule as the tables print it.
pub fn rule_text(r: &PassRule) -> String {
    match r {
        PassRule::Factor(f) => format!("within {f}x"),
        PassRule::WithinPct(p) => format!("within {p}%"),
        PassRule::Abs(a) => format!("within +/-{a}"),
        PassRule::Range { min, max } => match (min, max) {
            (Some(a), Some(b)) => format!("in [{a}, {b}]"),
            (Some(a), None) => format!(">= {a}"),
            (None, Some(b)) => format!("<= {b}"),
            (None, None) => "any".into(),
        },
    }
}

/// The simulated / published ratios a pass rule accepts (none without a
/// published figure).
pub fn band(r: &PassRule, published: Option<f64>) -> Option<(f64, f64)> {
    let published = published?;
    match *r {
        PassRule::Factor(f) => Some((1.0 / f, f)),
        PassRule::WithinPct(p) => Some(((1.0 - p / 100.0).max(1e-3), 1.0 + p / 100.0)),
        PassRule::Abs(a) if published > 0.0 => Some((
            ((published - a) / published).max(1e-3),
            (published + a) / published,
        )),
        PassRule::Range { min, max } if published > 0.0 => Some((
            min.map_or(1e-3, |m| (m / published).max(1e-3)),
            max.map_or(1e3, |m| m / published),
        )),
        _ => None,
    }
}

/// Whether `v` passes `r`. A rule relative to the published figure needs
/// one (the scenario crate refuses a metric without it).
pub fn passes(r: &PassRule, published: Option<f64>, v: f64) -> bool {
    if !v.is_finite() {
        return false;
    }
    let published = published.unwrap_or(f64::NAN);
    match *r {
        PassRule::Factor(f) => v >= published / f && v <= published * f,
        PassRule::WithinPct(p) => (v - published).abs() <= published.abs() * p / 100.0,
        PassRule::Abs(a) => (v - published).abs() <= a,
        PassRule::Range { min, max } => min.is_none_or(|m| v >= m) && max.is_none_or(|m| v <= m),
    }
}
