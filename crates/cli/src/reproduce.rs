//! `smpsim reproduce`: every scenario with a `[reproduce]` section is a
//! case; its variants are run over the case's seeds and its metrics
//! evaluated next to the published figures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use smpsim_report::metric::{self, Runs};
use smpsim_report::model::{CaseRun, MetricRow};
use smpsim_report::{text, VariantRun};
use smpsim_scenario::Scenario;

use crate::cli::ReproduceArgs;
use crate::output::{emit, fail};
use smpsim_runner::progress::Progress;

/// A case to run: its scenario, seeds, variants and the specs per seed.
type CaseWork<'a> = (
    &'a Scenario,
    u32,
    Vec<Option<String>>,
    Vec<Vec<smpsim_kernel::Spec>>,
);

/// Where the cases are: `--scenarios DIR`, else the scenarios shipped with
/// this build (whatever the current directory), else `./scenarios`.
fn scenario_dir(arg: Option<&Path>) -> PathBuf {
    if let Some(p) = arg {
        return p.to_path_buf();
    }
    let shipped = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios"));
    if shipped.is_dir() {
        return shipped;
    }
    PathBuf::from("scenarios")
}

/// Every scenario of `dir` with a `[reproduce]` section. A file without one
/// is not a case: if it does not even load, it is skipped with a warning
/// rather than failing every case.
fn load_cases(dir: &Path, allow: &[PathBuf]) -> Result<Vec<Scenario>, String> {
    let allow = crate::output::allow_paths(allow)?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("error: {}: {e} (use --scenarios DIR)", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for f in files {
        match smpsim_scenario::load_allowing(&f, &allow) {
            Ok(s) if s.reproduce.is_some() => cases.push(s),
            Ok(_) => {}
            Err(e) => {
                let text = std::fs::read_to_string(&f).unwrap_or_default();
                if text
                    .lines()
                    .any(|l| l.trim_start().starts_with("[reproduce"))
                {
                    return Err(e.to_string());
                }
                eprintln!(
                    "reproduce: skipping {} (not a case, and it does not load: {})",
                    f.display(),
                    e.to_string().lines().next().unwrap_or("")
                );
            }
        }
    }
    if cases.is_empty() {
        return Err(format!(
            "error: no cases in {}: no scenario there has a [reproduce] section (use --scenarios DIR)",
            dir.display()
        ));
    }
    Ok(cases)
}

pub fn main(args: ReproduceArgs) -> i32 {
    // Refused before the cases run, not after.
    let outputs: Vec<(&str, &Path)> = [("--html", &args.html), ("-o", &args.output)]
        .into_iter()
        .filter_map(|(w, p)| p.as_deref().map(|p| (w, p)))
        .collect();
    if let Err(e) = crate::output::check_outputs(&[], &outputs) {
        return fail(e);
    }
    let dir = scenario_dir(args.scenarios.as_deref());
    let cases = match load_cases(&dir, &args.allow_paths) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    // No output over a case's scenario, included file or profile.
    let inputs: Vec<(&str, &Path)> = cases
        .iter()
        .flat_map(crate::output::scenario_inputs)
        .collect();
    if let Err(e) = crate::output::check_outputs(&inputs, &outputs) {
        return fail(e);
    }
    let extra_sets = match crate::output::parse_sets(&args.sets) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let names: Vec<String> = cases
        .iter()
        .map(|c| c.reproduce.as_ref().unwrap().case.clone())
        .collect();
    if args.cases.iter().any(|c| c == "list") {
        for (n, c) in names.iter().zip(&cases) {
            println!("{n:<20} {}", c.description);
        }
        return 0;
    }
    if let Some(n) = args.seeds {
        // Each seed of each case is compiled and held until it runs.
        if let Err(e) = crate::output::check_seeds(n as u64) {
            return fail(e);
        }
    }
    for want in &args.cases {
        if !names.contains(want) {
            return fail(format!(
                "error: unknown case `{want}`; known cases: {}",
                names.join(", ")
            ));
        }
    }
    // Every run of every case compiled first, so that the progress knows
    // the whole of the work.
    let mut work: Vec<CaseWork> = Vec::new();
    for scenario in &cases {
        let rep = scenario.reproduce.as_ref().unwrap();
        if !args.cases.is_empty() && !args.cases.contains(&rep.case) {
            continue;
        }
        crate::run::warn(scenario, args.quiet);
        // `--seeds 0` is refused by the argument parser; a case's own
        // `seeds` is at least 1 (the scenario crate checks it).
        let seeds = args.seeds.unwrap_or(rep.seeds);
        let variants: Vec<Option<String>> = scenario
            .variants
            .iter()
            .map(|v| Some(v.name.clone()))
            .collect();
        let mut specs = Vec::new();
        for k in 0..seeds {
            let mut sets: Vec<(String, String)> = if args.quick {
                rep.quick.clone()
            } else {
                Vec::new()
            };
            sets.extend(extra_sets.iter().cloned());
            let base_seed = scenario.compile(None, &sets).map(|s| s.seed).unwrap_or(1);
            let last = crate::run::MAX_SEED;
            let Some(seed) = base_seed.checked_add(k as u64).filter(|s| *s <= last) else {
                return fail(format!(
                    "error: {}: seed {base_seed} + {k} goes past the largest seed",
                    scenario.path.display()
                ));
            };
            sets.push(("scenario.seed".into(), seed.to_string()));
            match smpsim_runner::pool::compile_variants(scenario, &variants, &sets, &Ok) {
                Ok(s) => specs.push(s),
                Err(e) => return fail(e),
            }
        }
        work.push((scenario, seeds, variants, specs));
    }
    let progress = Progress::new("reproduce", "runs", args.quiet);
    let all_specs: Vec<&smpsim_kernel::Spec> =
        work.iter().flat_map(|w| w.3.iter().flatten()).collect();
    progress.note(&format!(
        "reproduce: pricing {} runs by running their start",
        all_specs.len()
    ));
    let costed = smpsim_runner::pool::register_resumable(&progress, &all_specs);
    // Every run of every case on one pool, the dearest first.
    let mut jobs = Vec::with_capacity(costed.len());
    let mut costed = costed.into_iter();
    for (scenario, _, variants, specs) in &work {
        for seed_specs in specs {
            for (variant, spec) in variants.iter().zip(seed_specs) {
                let (item, estimate, started) = costed.next().expect("one item per spec");
                jobs.push(smpsim_runner::pool::Job {
                    scenario,
                    variant,
                    spec,
                    item,
                    estimate,
                    started: std::sync::Mutex::new(started),
                });
            }
        }
    }
    progress.note(&format!(
        "reproduce: {} runs of {} cases{}, the dearest first, each on from its start",
        jobs.len(),
        work.len(),
        if args.quick { " (quick)" } else { "" }
    ));
    let mut finished = smpsim_runner::pool::run_dearest_first(&jobs, &progress).into_iter();
    let mut rows = Vec::new();
    let mut text_out = String::new();
    let mut done_cases = Vec::new();
    for (scenario, seeds, variants, specs) in &work {
        let rep = scenario.reproduce.as_ref().unwrap();
        let per_seed: Vec<Vec<VariantRun>> = specs
            .iter()
            .map(|_| finished.by_ref().take(variants.len()).collect())
            .collect();
        let first = &per_seed[0];
        let machine = specs[0][0].machine.clone();
        text_out.push_str(&format!("=== {} ===\n", rep.case));
        let opts = text::Options {
            per_cpu: args.per_cpu,
            lock_types: smpsim_report::perf_lock::lock_types(&specs[0][0]),
        };
        text_out.push_str(&text::runs(&scenario.name, &machine.name, first, &opts));
        let case_rows = rows.len();
        for m in &rep.metrics {
            let mut values = Vec::new();
            for runs in &per_seed {
                let map: Runs = runs
                    .iter()
                    .map(|r| {
                        (
                            r.variant.clone(),
                            serde_json::to_value(&r.result).expect("json"),
                        )
                    })
                    .collect::<BTreeMap<_, _>>();
                match metric::eval(&m.expr, &map) {
                    Ok(v) => values.push(v),
                    Err(e) => {
                        return fail(format!(
                            "error: {}: metric `{}`: {e}",
                            scenario.path.display(),
                            m.name
                        ))
                    }
                }
            }
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            rows.push(MetricRow::judged(
                rep.case.clone(),
                m.name.clone(),
                m.published,
                &m.pass,
                mean,
                *seeds,
                (min, max),
                m.source.clone(),
                args.quick,
            ));
        }
        text_out.push('\n');
        done_cases.push(CaseRun {
            scenario,
            machine,
            rows: case_rows..rows.len(),
            runs: per_seed,
        });
    }
    if !args.no_band {
        let opts = smpsim_runner::band::Options::default();
        let attached = smpsim_runner::band::cases::attach(
            &done_cases,
            &mut rows,
            args.quick,
            &extra_sets,
            &opts,
            &progress,
        );
        if let Err(e) = attached {
            return fail(e);
        }
    }
    progress.done();
    // An information row within its bound is no failure.
    let all_pass = rows.iter().all(|r| r.pass != Some(false));
    let out = smpsim_report::format::reproduce(args.format, &rows, text_out);
    if let Some(path) = &args.html {
        let page = smpsim_report::html::reproduce(
            &done_cases,
            &rows,
            &smpsim_report::html::command_line(),
        );
        if let Err(e) = emit(&page, Some(path)) {
            return fail(format!("error: {e}"));
        }
    }
    if let Err(e) = emit(&out, args.output.as_deref()) {
        return fail(format!("error: {e}"));
    }
    if args.check && !all_pass {
        return 1;
    }
    0
}
