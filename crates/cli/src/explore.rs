//! `run --explore N`: schedule exploration. Each schedule is the scenario
//! with a perturbation (random delays before shared-state ops, drawn from
//! the schedule's number); the first schedule on which a detector fires
//! is shrunk, by delta debugging over the delays it took, to the fewest
//! that still make the same detector fire, and printed with the command
//! that replays it (`--schedule K:I,J,...`).

use rayon::prelude::*;
use smpsim_kernel::{Perturb, RunResult, Spec};

use crate::cli::RunArgs;
use crate::output::{emit, fail};
use smpsim_runner::progress::{Item, Progress};

/// One delay in `ONE_IN` decision points is taken.
const ONE_IN: u64 = 4;
/// Schedules run at once (a constant: the output must not depend on the
/// number of threads).
const BATCH: u64 = 16;
/// At most this many replays while shrinking.
const SHRINK_BUDGET: usize = 400;

/// A schedule: its number and, when shrunk or replayed, the delays kept.
fn perturbed(spec: &Spec, schedule: u64, max_delay: u64, keep: Option<Vec<u32>>) -> Spec {
    let mut s = spec.clone();
    s.perturb = Some(Perturb {
        seed: schedule,
        max_delay,
        one_in: ONE_IN,
        keep,
    });
    s
}

/// The first detector that fired, if any.
fn failure(r: &RunResult) -> Option<&str> {
    r.findings.first().map(|f| f.detector.as_str())
}

/// `ddmin` over the delays of a failing schedule: the smallest subset found
/// that still makes `detector` fire.
fn shrink(
    spec: &Spec,
    schedule: u64,
    max_delay: u64,
    applied: Vec<u32>,
    detector: &str,
) -> Vec<u32> {
    let fails = |keep: &[u32]| {
        let r = smpsim_kernel::simulate(&perturbed(spec, schedule, max_delay, Some(keep.to_vec())));
        failure(&r) == Some(detector)
    };
    // A schedule that fails without any of its delays needs none.
    if fails(&[]) {
        return Vec::new();
    }
    let mut keep = applied;
    let mut parts = 2usize;
    let mut budget = SHRINK_BUDGET;
    while keep.len() > 1 && budget > 0 {
        let chunk = keep.len().div_ceil(parts);
        let mut reduced = false;
        let mut i = 0;
        while i < parts && budget > 0 {
            let lo = (i * chunk).min(keep.len());
            let hi = ((i + 1) * chunk).min(keep.len());
            i += 1;
            if lo == hi {
                continue;
            }
            let complement: Vec<u32> = keep[..lo].iter().chain(&keep[hi..]).copied().collect();
            budget -= 1;
            if fails(&complement) {
                keep = complement;
                parts = (parts - 1).max(2);
                reduced = true;
                break;
            }
        }
        if !reduced {
            if parts >= keep.len() {
                break;
            }
            parts = (parts * 2).min(keep.len());
        }
    }
    keep
}

/// A `--explore-delay` value: an integer with a unit (`10us`), or ns.
pub fn parse_delay(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(digits);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("error: --explore-delay {s}: expected a duration such as 10us"))?;
    let scale = match unit {
        "" | "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        _ => {
            return Err(format!(
                "error: --explore-delay {s}: unknown unit `{unit}`; use ns, us or ms"
            ))
        }
    };
    match n.checked_mul(scale) {
        Some(d) if d > 0 => Ok(d),
        _ => Err(format!(
            "error: --explore-delay {s}: must be above zero and below 2^64 ns"
        )),
    }
}

/// A `--schedule K:I,J,...` value.
pub fn parse_schedule(s: &str) -> Result<(u64, Vec<u32>), String> {
    let bad = || {
        format!(
            "error: --schedule {s}: expected SCHEDULE:DELAY,DELAY,... as `run --explore` prints it"
        )
    };
    let (k, list) = s.split_once(':').ok_or_else(bad)?;
    let k = k.trim().parse().map_err(|_| bad())?;
    let keep = if list.trim().is_empty() {
        Vec::new()
    } else {
        list.split(',')
            .map(|x| x.trim().parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?
    };
    Ok((k, keep))
}

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
            Found {
                schedule: k,
                detector: f.detector.clone(),
                message: f.message.clone(),
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
            schedules_run: run,
            found,
            failing,
        });
    }
    progress.done();
    let out = match args.format {
        crate::cli::RunFormat::Json => {
            let mut s = serde_json::to_string_pretty(&report).expect("serializable");
            s.push('\n');
            s
        }
        _ => text(&report),
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
                    "{}: schedule {} of {} made `{}` fire:\n",
                    e.variant, f.schedule, e.schedules_run, f.detector
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

/// `run --schedule K:I,J,...`: the spec of one explored schedule.
pub fn replay_spec(spec: &Spec, schedule: &str, delay: &str) -> Result<Spec, String> {
    let (k, keep) = parse_schedule(schedule)?;
    let max_delay = parse_delay(delay)?;
    Ok(perturbed(spec, k, max_delay, Some(keep)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_and_schedules_parse_and_bad_ones_say_why() {
        assert_eq!(parse_delay("10us"), Ok(10_000));
        assert_eq!(parse_delay("250"), Ok(250));
        assert!(parse_delay("0us").is_err());
        assert!(parse_delay("3 weeks")
            .unwrap_err()
            .contains("--explore-delay"));
        assert_eq!(parse_schedule("7:1,20,3"), Ok((7, vec![1, 20, 3])));
        assert_eq!(parse_schedule("7:"), Ok((7, vec![])));
        assert!(parse_schedule("7").unwrap_err().contains("SCHEDULE:"));
    }
}
