//! Turning results into text, JSON, CSV, LKML, HTML and plots.
//!
//! The results model: a run ([`VariantRun`]), a sweep point (a line of
//! [`results_file`]), a reproduction row and case ([`model`]), each figure
//! read by one path syntax ([`path`]). The renderers are modules over it,
//! chosen by one format enum per command family ([`format`]).
//!
//! [`text`] prints runs side by side as plain-text tables meant to be pasted
//! into an LKML reply; [`metric`] evaluates the metric expressions of a
//! reproduction (`percpu-mutex.counter.ok.rate / global-mutex.counter.ok.rate`)
//! against the JSON form of the runs.

pub mod assumed;
pub mod band;
pub mod band_html;
pub mod band_rows;
pub mod csv;
pub mod format;
pub mod host;
pub mod html;
pub mod lkml;
pub mod lock_stat;
pub mod machine;
pub mod markdown;
pub mod metric;
pub mod model;
pub mod path;
pub mod perf_lock;
pub mod plot;
pub mod results_file;
pub mod schedules;
pub mod seeds;
pub mod sweep_point;
pub mod text;

use serde::Serialize;
use smpsim_kernel::RunResult;

/// One run of one variant, as reported.
#[derive(Clone, Debug, Serialize)]
pub struct VariantRun {
    pub variant: String,
    pub description: String,
    #[serde(flatten)]
    pub result: RunResult,
}

/// JSON of a `run`: the scenario and its variants.
#[derive(Debug, Serialize)]
pub struct RunReport<'a> {
    pub scenario: &'a str,
    pub machine: &'a str,
    pub variants: &'a [VariantRun],
}

/// Human-friendly nanoseconds: `850ns`, `12.3us`, `4.56ms`, `1.23s`.
pub fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1e3 {
        format!("{ns:.0}ns")
    } else if a < 1e6 {
        format!("{:.1}us", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.3}s", ns / 1e9)
    }
}

/// Human-friendly rate: `12.3k`, `4.56M`.
pub fn fmt_rate(r: f64) -> String {
    if r >= 1e9 {
        format!("{:.2}G", r / 1e9)
    } else if r >= 1e6 {
        format!("{:.2}M", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1}k", r / 1e3)
    } else {
        format!("{r:.1}")
    }
}

/// The p50, p90, p99, p99.9 and max cells of a latency row.
pub fn percentile_cells(h: &smpsim_kernel::HistResult) -> Vec<String> {
    [h.p50, h.p90, h.p99, h.p999, h.max]
        .iter()
        .map(|&v| fmt_ns(v as f64))
        .collect()
}
