//! Output formats, one enum per command family, each variant a renderer
//! over the results model. Adding a format is one renderer module and one
//! registration: a variant of its family's enum here and its arm in that
//! family's function (the command line takes the enum as it is).

use clap::ValueEnum;

use crate::model::MetricRow;
use crate::{band_rows, csv, html, lkml, markdown, results_file, text, RunReport, VariantRun};

/// `run --format`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum RunFormat {
    Text,
    Json,
    Lkml,
    Csv,
    /// `perf lock contention`'s table: contended, total wait, max wait,
    /// avg wait, type, name; sorted by total wait.
    PerfLock,
}

/// What `run --seeds` prints: a summary over every seed of each variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedsFormat {
    Text,
    Json,
    Lkml,
}

/// What `run --explore` prints: the schedules that made a detector fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExploreFormat {
    Text,
    Json,
}

impl RunFormat {
    /// The format of `run --seeds`, or why this one has none. Every format
    /// is named, so a new one is handled or refused here, never printed as
    /// text.
    pub fn over_seeds(self) -> Result<SeedsFormat, &'static str> {
        match self {
            RunFormat::Text => Ok(SeedsFormat::Text),
            RunFormat::Json => Ok(SeedsFormat::Json),
            RunFormat::Lkml => Ok(SeedsFormat::Lkml),
            RunFormat::Csv | RunFormat::PerfLock => Err("csv and perf-lock show one run"),
        }
    }

    /// The format of `run --explore`, or why this one has none (as
    /// [`RunFormat::over_seeds`]).
    pub fn over_schedules(self) -> Result<ExploreFormat, &'static str> {
        match self {
            RunFormat::Text => Ok(ExploreFormat::Text),
            RunFormat::Json => Ok(ExploreFormat::Json),
            RunFormat::Lkml => Err("lkml compares variants, over --seeds or not"),
            RunFormat::Csv | RunFormat::PerfLock => Err("csv and perf-lock show one run"),
        }
    }
}

/// A run of a scenario's variants.
pub fn run(
    format: RunFormat,
    scenario: &str,
    machine: &str,
    runs: &[VariantRun],
    opts: &text::Options,
) -> String {
    match format {
        RunFormat::Text => text::runs(scenario, machine, runs, opts),
        RunFormat::PerfLock => crate::perf_lock::contention(runs, &opts.lock_types),
        RunFormat::Lkml => lkml::runs(scenario, machine, runs),
        RunFormat::Csv => csv::run_windows(runs),
        RunFormat::Json => {
            let report = RunReport {
                scenario,
                machine,
                variants: runs,
            };
            let mut s = serde_json::to_string_pretty(&report).expect("serializable");
            s.push('\n');
            s
        }
    }
}

/// `reproduce --format`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ReproduceFormat {
    Text,
    Json,
    Lkml,
    Markdown,
}

/// A reproduction's rows; `per_case` is the text of its cases' runs (the
/// text format prints it first).
pub fn reproduce(format: ReproduceFormat, rows: &[MetricRow], per_case: String) -> String {
    match format {
        ReproduceFormat::Text => text::reproduce(rows, per_case) + &band_rows::reproduce_text(rows),
        ReproduceFormat::Lkml => lkml::reproduce(rows) + &band_rows::lkml_table(rows),
        ReproduceFormat::Markdown => markdown::reproduce(rows),
        ReproduceFormat::Json => {
            let mut s = serde_json::to_string_pretty(rows).expect("json");
            s.push('\n');
            s
        }
    }
}

/// `report --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// One self-contained page: plots, points, findings, machine, assumed values.
    Html,
    /// One row per point.
    Csv,
    /// 72-column text comparing the variants, for a mailing-list reply.
    Lkml,
}

/// What `sweep` prints on stdout once every point is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SweepFormat {
    /// 72-column text comparing the variants at each point.
    Lkml,
    /// One row per point.
    Csv,
}

impl From<SweepFormat> for ReportFormat {
    fn from(f: SweepFormat) -> ReportFormat {
        match f {
            SweepFormat::Lkml => ReportFormat::Lkml,
            SweepFormat::Csv => ReportFormat::Csv,
        }
    }
}

/// A sweep's points (`report`, and `sweep --format`); `command` is what
/// regenerates them, for the page to say.
pub fn sweep(
    format: ReportFormat,
    points: &[crate::sweep_point::SweepPoint],
    command: &str,
) -> String {
    match format {
        ReportFormat::Html => {
            let scenario = results_file::scenario_of(points);
            html::sweep(points, scenario.as_ref(), command)
        }
        ReportFormat::Csv => csv::sweep_points(points),
        ReportFormat::Lkml => lkml::sweep(points),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_many_runs_a_format_is_itself_or_refused() {
        // A format never falls back to another (csv printed as text).
        for f in RunFormat::value_variants() {
            if let Ok(g) = f.over_seeds() {
                assert_eq!(format!("{g:?}"), format!("{f:?}"));
            }
            if let Ok(g) = f.over_schedules() {
                assert_eq!(format!("{g:?}"), format!("{f:?}"));
            }
        }
        assert!(RunFormat::Csv.over_seeds().is_err());
        assert!(RunFormat::Lkml.over_schedules().is_err());
    }
}
