//! `run --explore N`: schedule exploration. Each schedule is the scenario
//! with a perturbation (random delays before shared-state ops, drawn from
//! the schedule's number); the first schedule on which a detector fires
//! is shrunk, by delta debugging over the delays it took, to the fewest
//! that still make the same detector fire, and printed with the command
//! that replays it (`--schedule K:I,J,...`).

use rayon::prelude::*;
use smpsim_kernel::{RunResult, Spec};
use smpsim_report::format::{ExploreFormat, RunFormat};
use smpsim_report::schedules::{Found, VariantExploration};
use smpsim_scenario::Scenario;

use crate::explore::{failure, parse_delay, perturbed, shrink, BATCH};
use crate::progress::{Item, Progress};

/// How to explore (`run --explore`'s options).
pub struct Schedules<'a> {
    /// `--explore-delay`, as given: the longest delay a schedule inserts.
    pub explore_delay: &'a str,
    /// `--keep-going`: run every schedule, not only up to the first that
    /// fails.
    pub keep_going: bool,
    pub format: RunFormat,
    pub quiet: bool,
}

/// `run --explore N` over every variant: the report in `req`'s format.
pub fn run(
    scenario: &Scenario,
    req: &Schedules,
    variants: &[Option<String>],
    sets: &[(String, String)],
    n: u64,
) -> Result<String, String> {
    let max_delay = parse_delay(req.explore_delay)?;
    let mut specs = Vec::new();
    for v in variants {
        specs.push(
            scenario
                .compile(v.as_deref(), sets)
                .map_err(|e| e.to_string())?,
        );
    }
    // Every schedule of a variant costs about the same: one pilot each.
    let progress = Progress::new("explore", "schedules", req.quiet);
    let items: Vec<Vec<Item>> = specs
        .iter()
        .map(|spec| progress.add_runs(spec, n as usize))
        .collect();
    let mut report = Vec::new();
    for ((v, spec), items) in variants.iter().zip(specs).zip(&items) {
        let explorer = Explorer {
            spec: &spec,
            max_delay,
            progress: &progress,
            items,
        };
        let name = v.clone().unwrap_or_else(|| "base".into());
        let (run, failing, first) = explorer.search(n, req.keep_going);
        let found = first.map(|(k, r)| explorer.shrunk(k, &r, scenario, req, &name));
        report.push(VariantExploration {
            variant: name,
            schedules_asked: n,
            schedules_run: run,
            found,
            failing,
        });
    }
    progress.done();
    match req.format.over_schedules() {
        Ok(ExploreFormat::Json) => Ok(smpsim_report::schedules::json(&report)),
        Ok(ExploreFormat::Text) => Ok(smpsim_report::schedules::text(&report)),
        Err(e) => Err(format!("error: --format {e}")),
    }
}

/// One variant's schedules.
struct Explorer<'a> {
    spec: &'a Spec,
    max_delay: u64,
    progress: &'a Progress,
    items: &'a [Item],
}

impl Explorer<'_> {
    /// Runs schedules until one fails (all `n` with `keep_going`): how
    /// many ran, the failing ones, and the first failure's result.
    fn search(&self, n: u64, keep_going: bool) -> (u64, Vec<u64>, Option<(u64, RunResult)>) {
        // Batches of a fixed size run in parallel, in order, so that what
        // is run and found is the same on any number of threads.
        let mut failing = Vec::new();
        let mut first: Option<(u64, RunResult)> = None;
        let mut run = 0;
        while run < n && (first.is_none() || keep_going) {
            let end = (run + BATCH).min(n);
            let results: Vec<(u64, RunResult)> = (run..end)
                .into_par_iter()
                .map(|k| {
                    let item = &self.items[k as usize];
                    self.progress.start(item);
                    let r = smpsim_kernel::simulate_with_progress(
                        &perturbed(self.spec, k, self.max_delay, None),
                        &item.reached,
                    );
                    self.progress.finish(item);
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
        for item in &self.items[run as usize..] {
            self.progress.finish(item);
        }
        (run, failing, first)
    }

    /// Schedule `k`'s failure `r` shrunk to the fewest delays that still
    /// make its detector fire, with the command that replays it.
    fn shrunk(
        &self,
        k: u64,
        r: &RunResult,
        scenario: &Scenario,
        req: &Schedules,
        name: &str,
    ) -> Found {
        let f = &r.findings[0];
        let applied = r.perturbations.clone();
        let shrunk = shrink(self.spec, k, self.max_delay, applied.clone(), &f.detector);
        let list: Vec<String> = shrunk.iter().map(|x| x.to_string()).collect();
        // The report says what the replay shows: the shrunk schedule's
        // finding (its time, CPU and op), not the first run's.
        let replayed = smpsim_kernel::simulate(&perturbed(
            self.spec,
            k,
            self.max_delay,
            Some(shrunk.clone()),
        ));
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
                req.explore_delay,
                list.join(",")
            ),
            delays_shrunk: shrunk,
        }
    }
}
