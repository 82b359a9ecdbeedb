//! Bands on a reproduction's rows: each case's metrics are its figures,
//! its runs the nominal, its `--quick` and `--set` overrides the base.

use smpsim_report::model::{CaseRun, MetricRow};

use super::{bands, Figure, Nominal, Options};
use crate::progress::Progress;

/// Gives every row of `cases` its band (a row whose figure is not a
/// number keeps none); a note per case on the progress.
pub fn attach(
    cases: &[CaseRun],
    rows: &mut [MetricRow],
    quick: bool,
    extra_sets: &[(String, String)],
    opts: &Options,
    progress: &Progress,
) -> Result<(), String> {
    for c in cases {
        let Some(rep) = c.scenario.reproduce.as_ref() else {
            continue;
        };
        let variants: Vec<Option<String>> = c
            .scenario
            .variants
            .iter()
            .map(|v| Some(v.name.clone()))
            .collect();
        let mut sets: Vec<(String, String)> = if quick { rep.quick.clone() } else { Vec::new() };
        sets.extend(extra_sets.iter().cloned());
        let figures: Vec<Figure> = rep
            .metrics
            .iter()
            .map(|m| Figure {
                name: m.name.clone(),
                expr: m.expr.clone(),
            })
            .collect();
        let nominal = Nominal {
            scenario: c.scenario,
            variants: &variants,
            sets: &sets,
            runs: &c.runs,
        };
        let (found, summary) = bands(&nominal, &figures, opts, progress)
            .map_err(|e| format!("error: {}: band: {e}", c.scenario.path.display()))?;
        progress.note(&format!("{}: {}", rep.case, summary.note()));
        for (row, band) in rows[c.rows.clone()].iter_mut().zip(found) {
            if let Some(b) = band {
                row.set_band(b);
            }
        }
    }
    Ok(())
}
