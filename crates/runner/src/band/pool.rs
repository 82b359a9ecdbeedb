//! A band's design points run on the job pool ([`crate::pool`]), the
//! dearest first, with the progress; the runs come back in the points'
//! order, whatever the number of threads.

use std::sync::Mutex;

use smpsim_report::VariantRun;

use super::Nominal;
use crate::pool::{compile_variants, run_dearest_first, Job};
use crate::progress::Progress;

/// Runs every variant at each point (`--set` overrides over the
/// scenario); per point, the variants' runs in order.
pub fn run_points(
    nominal: &Nominal,
    points: &[Vec<(String, String)>],
    progress: &Progress,
) -> Result<Vec<Vec<VariantRun>>, String> {
    if points.is_empty() {
        return Ok(Vec::new());
    }
    let specs: Vec<Vec<smpsim_kernel::Spec>> = points
        .iter()
        .map(|sets| compile_variants(nominal.scenario, nominal.variants, sets, &Ok))
        .collect::<Result<_, _>>()?;
    // Priced by the nominal run's host cost per simulated ns, variant by
    // variant: this orders the jobs and paces the progress, and changes
    // no result. No pilots: a design point costs what its variant does.
    let first = &nominal.runs[0];
    let cost: Vec<f64> = first
        .iter()
        .map(|r| {
            let ns = r.result.stats.simulated_ns.max(1) as f64;
            (r.result.stats.wall_seconds / ns).max(1e-12)
        })
        .collect();
    let mut jobs = Vec::new();
    for point in &specs {
        for ((variant, spec), cost) in nominal.variants.iter().zip(point).zip(&cost) {
            let planned = spec.duration.saturating_mul(spec.replicas.max(1) as u64);
            jobs.push(Job {
                scenario: nominal.scenario,
                variant,
                spec,
                item: progress.add(planned, *cost),
                estimate: planned as f64 * cost,
                started: Mutex::new(None),
            });
        }
    }
    let mut runs = run_dearest_first(&jobs, progress).into_iter();
    Ok(specs
        .iter()
        .map(|point| runs.by_ref().take(point.len()).collect())
        .collect())
}
