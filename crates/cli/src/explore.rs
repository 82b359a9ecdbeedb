//! `run --explore N`: schedule exploration. Each schedule is the scenario
//! with a perturbation (random delays before shared-state ops, drawn from
//! the schedule's number); the first schedule on which a detector fires
//! is shrunk, by delta debugging over the delays it took, to the fewest
//! that still make the same detector fire, and printed with the command
//! that replays it (`--schedule K:I,J,...`).

use rayon::prelude::*;
use smpsim_kernel::RunResult;
use smpsim_report::format::ExploreFormat;

use crate::cli::RunArgs;
use crate::output::{emit, fail};
use smpsim_runner::progress::{Item, Progress};

pub use smpsim_runner::explore::replay_spec;
use smpsim_runner::explore::*;

#[derive(serde::Serialize)]
struct Found {
    schedule: u64,
    detector: String,
    message: String,
    delays_first: usize,
    delays_shrunk: Vec<u32>,
    replay: String,
}

#[derive(serde::Serialize)]
struct VariantExploration {
    variant: String,
    /// `--explore N`: how many schedules were asked for.
    schedules_asked: u64,
    /// How many ran: fewer when a failing one stopped the search.
    schedules_run: u64,
    found: Option<Found>,
    /// With `--keep-going`: every failing schedule.
    failing: Vec<u64>,
}

/// `run --explore N` over every variant.
pub fn main(
    scenario: &smpsim_scenario::Scenario,
    args: &RunArgs,
    variants: &[Option<String>],
    sets: &[(String, String)],
    n: u64,
) -> i32 {
    let max_delay = match parse_delay(&args.explore_delay) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let mut specs = Vec::new();
    for v in variants {
        match scenario.compile(v.as_deref(), sets) {
            Ok(s) => specs.push(s),
            Err(e) => return fail(e),
        }
    }
    // Every schedule of a variant costs about the same: one pilot each.
    let progress = Progress::new("explore", "schedules", args.quiet);
    let items: Vec<Vec<Item>> = specs
        .iter()
        .map(|spec| progress.add_runs(spec, n as usize))
        .collect();
    let mut report = Vec::new();
    for ((v, spec), items) in variants.iter().zip(specs).zip(&items) {
        let name = v.clone().unwrap_or_else(|| "base".into());
        // Batches of a fixed size run in parallel, in order, so that what
        // is run and found is the same on any number of threads.
        let batch = BATCH;
        let mut failing = Vec::new();
        let mut first: Option<(u64, RunResult)> = None;
        let mut run = 0;
        while run < n && (first.is_none() || args.keep_going) {
            let end = (run + batch).min(n);
            let results: Vec<(u64, RunResult)> = (run..end)
                .into_par_iter()
                .map(|k| {
                    let item = &items[k as usize];
                    progress.start(item);
                    let r = smpsim_kernel::simulate_with_progress(
                        &perturbed(&spec, k, max_delay, None),
                        &item.reached,
                    );
                    progress.finish(item);
                    (k, r)
                })
                .collect();
            run = end;
            for (k, r) in results {
                if failure(&r).is_some() {
                    failing.push(k);
                    if first.is_none() {
                        first = Some((k, r));
                    }
                }
            }
        }
        // Schedules not run because one failed are not work left.
        for item in &items[run as usize..] {
            progress.finish(item);
        }
        let found = first.map(|(k, r)| {
            let f = &r.findings[0];
            let applied = r.perturbations.clone();
            let shrunk = shrink(&spec, k, max_delay, applied.clone(), &f.detector);
            let list: Vec<String> = shrunk.iter().map(|x| x.to_string()).collect();
            // The report says what the replay shows: the shrunk schedule's
            // finding (its time, CPU and op), not the first run's.
            let replayed =
                smpsim_kernel::simulate(&perturbed(&spec, k, max_delay, Some(shrunk.clone())));
            let message = replayed
                .findings
                .iter()
                .find(|g| g.detector == f.detector)
                .map_or_else(|| f.message.clone(), |g| g.message.clone());
            Found {
                schedule: k,
                detector: f.detector.clone(),
                message,
                delays_first: applied.len(),
                replay: format!(
                    "smpsim run {} --variant {name} --explore-delay {} --schedule {k}:{}",
                    scenario.path.display(),
                    args.explore_delay,
                    list.join(",")
                ),
                delays_shrunk: shrunk,
            }
        });
        report.push(VariantExploration {
            variant: name,
            schedules_asked: n,
            schedules_run: run,
            found,
            failing,
        });
    }
    progress.done();
    let out = match args.format.over_schedules() {
        Ok(ExploreFormat::Json) => {
            let mut s = serde_json::to_string_pretty(&report).expect("serializable");
            s.push('\n');
            s
        }
        Ok(ExploreFormat::Text) => text(&report),
        Err(e) => return fail(format!("error: --format {e}")),
    };
    match emit(&out, args.output.as_deref()) {
        Ok(()) => 0,
        Err(e) => fail(format!("error: {e}")),
    }
}

fn text(report: &[VariantExploration]) -> String {
    let mut s = String::new();
    for e in report {
        match &e.found {
            None => s.push_str(&format!(
                "{}: {} schedules explored, no detector fired\n",
                e.variant, e.schedules_run
            )),
            Some(f) => {
                s.push_str(&format!(
                    "{}: schedule {} made `{}` fire ({} of the {} asked run):\n",
                    e.variant, f.schedule, f.detector, e.schedules_run, e.schedules_asked
                ));
                for line in f.message.lines() {
                    s.push_str(&format!("  {line}\n"));
                }
                s.push_str(&format!(
                    "  shrunk from {} delays to {}: {:?}\n  replay: {}\n",
                    f.delays_first,
                    f.delays_shrunk.len(),
                    f.delays_shrunk,
                    f.replay
                ));
                if e.failing.len() > 1 {
                    s.push_str(&format!(
                        "  {} of the {} schedules run failed\n",
                        e.failing.len(),
                        e.schedules_run
                    ));
                }
            }
        }
    }
    s
}
