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

/// What a row of the table is, which says how it is judged and shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RowKind {
    /// A published figure the simulated one is compared with: a ratio
    /// and a %change mean something.
    Compared,
    /// The published figure is a limit the source sets (`published = 50`
    /// with `pass = { max = 50 }`): shown as the bound (`<= 50`), with no
    /// ratio or %change.
    Bound,
    /// No published figure: the metric is reported, not judged. It is no
    /// pass; it only counts (as a miss) if its rule's bound is broken.
    Information,
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
    /// a published 0), and for a bound.
    pub ratio: Option<f64>,
    /// Within the pass rule (`true`), outside it (`false`), or not judged
    /// (`None`, JSON `null`): an information row within its bound.
    pub pass: Option<bool>,
    pub kind: RowKind,
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
    /// With [`RowKind::Bound`]: `<= ` or `>= `, before the published figure.
    #[serde(skip)]
    pub bound_sign: &'static str,
    /// The simulated figure's band (`--band`), JSON `band`.
    #[serde(rename = "band", skip_serializing_if = "Option::is_none")]
    pub sim_band: Option<crate::band::Band>,
    /// With a band: whether the published figure lies inside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agrees: Option<bool>,
}

impl MetricRow {
    /// A row judged by `rule`: its kind, ratio, verdict and band.
    #[allow(clippy::too_many_arguments)]
    pub fn judged(
        case: String,
        metric: String,
        published: Option<f64>,
        rule: &PassRule,
        simulated: f64,
        seeds: u32,
        (min, max): (f64, f64),
        source: String,
        quick: bool,
    ) -> MetricRow {
        let kind = row_kind(rule, published);
        let within = passes(rule, published, simulated);
        let compared = kind == RowKind::Compared;
        MetricRow {
            case,
            metric,
            published,
            simulated,
            ratio: if compared {
                ratio(published, simulated)
            } else {
                None
            },
            pass: match kind {
                RowKind::Information if within => None,
                _ => Some(within),
            },
            kind,
            rule: rule_text(rule),
            seeds,
            min,
            max,
            source,
            quick,
            band: if compared {
                band(rule, published)
            } else {
                None
            },
            bound_sign: bound_sign(rule, published),
            sim_band: None,
            agrees: None,
        }
    }

    /// The published column: the figure, the bound it is (`<= 50`), or
    /// `-` where there is none.
    pub fn published_text(&self, num: impl Fn(f64) -> String) -> String {
        match (self.kind, self.published) {
            (_, None) => "-".into(),
            (RowKind::Bound, Some(p)) => format!("{}{}", self.bound_sign, num(p)),
            (_, Some(p)) => num(p),
        }
    }

    /// The pass column's word: `yes`, `NO`, or `info` (not judged).
    pub fn verdict_word(&self) -> &'static str {
        match self.pass {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "info",
        }
    }
}

/// A bound's relation as the published column prints it: `<= ` when
/// the published figure is the rule's maximum, `>= ` its minimum.
fn bound_sign(rule: &PassRule, published: Option<f64>) -> &'static str {
    match rule {
        PassRule::Range { max, .. } if max.is_some() && *max == published => "<= ",
        _ => ">= ",
    }
}

/// What a row is: a bound when its published figure is an end of its
/// `min`/`max` rule (the source sets a limit: "max latency <= 50 ms"),
/// information without a published figure, else a comparison.
pub fn row_kind(rule: &PassRule, published: Option<f64>) -> RowKind {
    match (published, rule) {
        (None, _) => RowKind::Information,
        (Some(p), PassRule::Range { min, max }) if *min == Some(p) || *max == Some(p) => {
            RowKind::Bound
        }
        _ => RowKind::Compared,
    }
}

/// Simulated / published, where there is a non-zero published figure.
pub fn ratio(published: Option<f64>, simulated: f64) -> Option<f64> {
    published.filter(|p| *p != 0.0).map(|p| simulated / p)
}

/// One case's verdict: the metrics that pass, those that miss, and the
/// information rows (not judged, so neither).
#[derive(Debug, PartialEq)]
pub struct CaseVerdict {
    pub case: String,
    pub passed: usize,
    pub missed: Vec<String>,
    pub information: usize,
}

impl CaseVerdict {
    /// The metrics judged: passes and misses, information rows left out.
    pub fn judged(&self) -> usize {
        self.passed + self.missed.len()
    }

    /// "N of M metrics pass" and, if any, "(K information rows)".
    pub fn summary(&self) -> String {
        let mut s = format!("{} of {} metrics pass", self.passed, self.judged());
        if self.information > 0 {
            s.push_str(&format!(
                " ({} information row{}, not judged)",
                self.information,
                if self.information == 1 { "" } else { "s" }
            ));
        }
        s
    }
}

/// The verdict of a reproduction, case by case, in the order the cases
/// ran.
pub fn verdict(rows: &[MetricRow]) -> Vec<CaseVerdict> {
    let mut out: Vec<CaseVerdict> = Vec::new();
    for r in rows {
        if out.last().is_none_or(|c| c.case != r.case) {
            out.push(CaseVerdict {
                case: r.case.clone(),
                passed: 0,
                missed: Vec::new(),
                information: 0,
            });
        }
        let c = out.last_mut().expect("pushed");
        match r.pass {
            Some(true) => c.passed += 1,
            Some(false) => c.missed.push(r.metric.clone()),
            None => c.information += 1,
        }
    }
    out
}

/// Over every row: (passed, judged, information).
pub fn totals(rows: &[MetricRow]) -> (usize, usize, usize) {
    let passed = rows.iter().filter(|r| r.pass == Some(true)).count();
    let info = rows.iter().filter(|r| r.pass.is_none()).count();
    (passed, rows.len() - info, info)
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
