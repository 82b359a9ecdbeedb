//! `run --seeds N`: every variant over N seeds, in parallel; each seed's
//! run is deterministic, so any failing seed replays with `--seed`.

use rayon::prelude::*;
use smpsim_kernel::{RunResult, Spec};
use smpsim_report::format::{RunFormat, SeedsFormat};
use smpsim_report::seeds::{over_seeds, Exploration, SeedFindings};
use smpsim_report::VariantRun;
use smpsim_scenario::Scenario;

use crate::pool::variant_run;
use crate::progress::{Item, Progress};
use crate::variants::MAX_SEED;

/// Runs every variant over `n` seeds from the scenario's (or `--seed`'s)
/// and returns the report in `format`.
pub fn run(
    scenario: &Scenario,
    variants: &[Option<String>],
    sets: &[(String, String)],
    n: u64,
    (format, quiet): (RunFormat, bool),
) -> Result<String, String> {
    let format = format
        .over_seeds()
        .map_err(|e| format!("error: --format {e}"))?;
    let base = scenario
        .compile(variants[0].as_deref(), sets)
        .map_err(|e| e.to_string())?
        .seed;
    if base.checked_add(n - 1).is_none_or(|last| last > MAX_SEED) {
        return Err(format!(
            "error: --seeds {n} from seed {base} goes past the largest seed ({MAX_SEED}); give a smaller --seed"
        ));
    }
    let mut all: Vec<Vec<Spec>> = Vec::new();
    for v in variants {
        let specs: Result<Vec<_>, _> = (0..n)
            .map(|k| {
                let mut s = sets.to_vec();
                s.push(("scenario.seed".into(), (base + k).to_string()));
                scenario.compile(v.as_deref(), &s)
            })
            .collect();
        all.push(specs.map_err(|e| e.to_string())?);
    }
    // Every seed of a variant costs about the same: one pilot each.
    let progress = Progress::new("run --seeds", "seeds", quiet);
    let items: Vec<Vec<Item>> = all
        .iter()
        .map(|specs| progress.add_runs(&specs[0], specs.len()))
        .collect();
    let mut report = Vec::new();
    let mut per_variant: Vec<Vec<VariantRun>> = Vec::new();
    for ((v, specs), items) in variants.iter().zip(&all).zip(&items) {
        let mut results = run_seeds(specs, items, &progress);
        let metrics = over_seeds(&results);
        let failing: Vec<SeedFindings> = results
            .iter_mut()
            .filter(|r| !r.findings.is_empty())
            .map(|r| SeedFindings {
                seed: r.seed,
                findings: std::mem::take(&mut r.findings),
            })
            .collect();
        if format == SeedsFormat::Lkml {
            let runs = results.into_iter();
            per_variant.push(runs.map(|r| variant_run(scenario, v, r)).collect());
        }
        report.push(Exploration {
            variant: v.clone().unwrap_or_else(|| "base".into()),
            seeds: n,
            first_seed: base,
            failing,
            metrics,
        });
    }
    progress.done();
    Ok(match format {
        SeedsFormat::Lkml => {
            let machine = &all[0][0].machine.name;
            smpsim_report::lkml::seeds(&scenario.name, machine, &per_variant)
        }
        SeedsFormat::Json => smpsim_report::seeds::json(&report),
        SeedsFormat::Text => smpsim_report::seeds::text(&report, &scenario.path),
    })
}

/// One variant's seeds, run in parallel, in seed order.
fn run_seeds(specs: &[Spec], items: &[Item], progress: &Progress) -> Vec<RunResult> {
    specs
        .par_iter()
        .zip(items.par_iter())
        .map(|(spec, item)| {
            progress.start(item);
            let r = smpsim_kernel::simulate_with_progress(spec, &item.reached);
            progress.finish(item);
            r
        })
        .collect()
}
