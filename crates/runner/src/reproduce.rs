//! `smpsim reproduce`: every scenario with a `[reproduce]` section is a
//! case; its variants are run over the case's seeds and its metrics
//! evaluated next to the published figures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use smpsim_kernel::Spec;
use smpsim_report::format::ReproduceFormat;
use smpsim_report::metric::{self, Runs};
use smpsim_report::model::{CaseRun, MetricRow};
use smpsim_report::{text, VariantRun};
use smpsim_scenario::Scenario;

use crate::output::{check_outputs, emit, parse_sets, scenario_inputs};
use crate::pool::{compile_variants, register_resumable, run_dearest_first, Job};
use crate::progress::Progress;
use crate::variants::{warn, MAX_SEED};

/// What `smpsim reproduce` was asked to do (its arguments).
pub struct Reproduce {
    /// The cases to run (all when empty; `list` lists them).
    pub cases: Vec<String>,
    pub quick: bool,
    pub seeds: Option<u32>,
    pub format: ReproduceFormat,
    pub per_cpu: bool,
    /// `--set KEY=VALUE`, as given.
    pub sets: Vec<String>,
    pub quiet: bool,
    pub html: Option<PathBuf>,
    pub scenarios: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub allow_paths: Vec<PathBuf>,
    /// Each figure with its band (on unless `--no-band`).
    pub band: bool,
    /// How big the band's design may be (`--band-budget`, `--band-points`).
    pub band_size: crate::band::Options,
}

/// A case to run: its scenario, seeds, variants and the specs per seed.
struct CaseWork<'a> {
    scenario: &'a Scenario,
    seeds: u32,
    variants: Vec<Option<String>>,
    specs: Vec<Vec<Spec>>,
}

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

/// Runs the cases asked for and writes the table (and the page); whether
/// every judged metric passed.
pub fn run(req: &Reproduce) -> Result<bool, String> {
    // Refused before the cases run, not after.
    let outputs: Vec<(&str, &Path)> = [("--html", &req.html), ("-o", &req.output)]
        .into_iter()
        .filter_map(|(w, p)| p.as_deref().map(|p| (w, p)))
        .collect();
    check_outputs(&[], &outputs)?;
    let dir = scenario_dir(req.scenarios.as_deref());
    let cases = load_cases(&dir, &req.allow_paths)?;
    // No output over a case's scenario, included file or profile.
    let inputs: Vec<(&str, &Path)> = cases.iter().flat_map(scenario_inputs).collect();
    check_outputs(&inputs, &outputs)?;
    let extra_sets = parse_sets(&req.sets)?;
    let names: Vec<String> = cases
        .iter()
        .map(|c| c.reproduce.as_ref().unwrap().case.clone())
        .collect();
    if req.cases.iter().any(|c| c == "list") {
        for (n, c) in names.iter().zip(&cases) {
            println!("{n:<20} {}", c.description);
        }
        return Ok(true);
    }
    if let Some(n) = req.seeds {
        // Each seed of each case is compiled and held until it runs.
        crate::output::check_seeds(n as u64)?;
    }
    for want in &req.cases {
        if !names.contains(want) {
            return Err(format!(
                "error: unknown case `{want}`; known cases: {}",
                names.join(", ")
            ));
        }
    }
    let work = compile_cases(&cases, req, &extra_sets)?;
    let progress = Progress::new("reproduce", "runs", req.quiet);
    let mut finished = run_all(&work, req, &progress).into_iter();
    let mut rows = Vec::new();
    let mut text_out = String::new();
    let mut done_cases = Vec::new();
    for case in &work {
        let per_seed: Vec<Vec<VariantRun>> = case
            .specs
            .iter()
            .map(|_| finished.by_ref().take(case.variants.len()).collect())
            .collect();
        done_cases.push(judge(case, per_seed, req, &mut rows, &mut text_out)?);
    }
    if req.band {
        crate::band::cases::attach(
            &done_cases,
            &mut rows,
            req.quick,
            &extra_sets,
            &req.band_size,
            &progress,
        )?;
    }
    progress.done();
    // An information row within its bound is no failure.
    let all_pass = rows.iter().all(|r| r.pass != Some(false));
    let out = smpsim_report::format::reproduce(req.format, &rows, text_out);
    if let Some(path) = &req.html {
        let page = smpsim_report::html::reproduce(
            &done_cases,
            &rows,
            &smpsim_report::html::command_line(),
        );
        emit(&page, Some(path)).map_err(|e| format!("error: {e}"))?;
    }
    emit(&out, req.output.as_deref()).map_err(|e| format!("error: {e}"))?;
    Ok(all_pass)
}

/// Every run of every case asked for, compiled first, so that the
/// progress knows the whole of the work.
fn compile_cases<'a>(
    cases: &'a [Scenario],
    req: &Reproduce,
    extra_sets: &[(String, String)],
) -> Result<Vec<CaseWork<'a>>, String> {
    let mut work = Vec::new();
    for scenario in cases {
        let rep = scenario.reproduce.as_ref().unwrap();
        if !req.cases.is_empty() && !req.cases.contains(&rep.case) {
            continue;
        }
        warn(scenario, req.quiet);
        // `--seeds 0` is refused by the argument parser; a case's own
        // `seeds` is at least 1 (the scenario crate checks it).
        let seeds = req.seeds.unwrap_or(rep.seeds);
        let variants: Vec<Option<String>> = scenario
            .variants
            .iter()
            .map(|v| Some(v.name.clone()))
            .collect();
        let mut specs = Vec::new();
        for k in 0..seeds {
            let mut sets: Vec<(String, String)> = if req.quick {
                rep.quick.clone()
            } else {
                Vec::new()
            };
            sets.extend(extra_sets.iter().cloned());
            let base_seed = scenario.compile(None, &sets).map(|s| s.seed).unwrap_or(1);
            let Some(seed) = base_seed.checked_add(k as u64).filter(|s| *s <= MAX_SEED) else {
                return Err(format!(
                    "error: {}: seed {base_seed} + {k} goes past the largest seed",
                    scenario.path.display()
                ));
            };
            sets.push(("scenario.seed".into(), seed.to_string()));
            specs.push(compile_variants(scenario, &variants, &sets, &Ok)?);
        }
        work.push(CaseWork {
            scenario,
            seeds,
            variants,
            specs,
        });
    }
    Ok(work)
}

/// Every run of every case on one pool, the dearest first; the results in
/// the cases' order (case, seed, variant).
fn run_all(work: &[CaseWork], req: &Reproduce, progress: &Progress) -> Vec<VariantRun> {
    let all_specs: Vec<&Spec> = work.iter().flat_map(|w| w.specs.iter().flatten()).collect();
    progress.note(&format!(
        "reproduce: pricing {} runs by running their start",
        all_specs.len()
    ));
    let costed = register_resumable(progress, &all_specs);
    let mut jobs = Vec::with_capacity(costed.len());
    let mut costed = costed.into_iter();
    for case in work {
        for seed_specs in &case.specs {
            for (variant, spec) in case.variants.iter().zip(seed_specs) {
                let (item, estimate, started) = costed.next().expect("one item per spec");
                jobs.push(Job {
                    scenario: case.scenario,
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
        if req.quick { " (quick)" } else { "" }
    ));
    run_dearest_first(&jobs, progress)
}

/// One case's metrics over its seeds' runs, as rows of the table (and its
/// first seed's runs as text).
fn judge<'a>(
    case: &CaseWork<'a>,
    per_seed: Vec<Vec<VariantRun>>,
    req: &Reproduce,
    rows: &mut Vec<MetricRow>,
    text_out: &mut String,
) -> Result<CaseRun<'a>, String> {
    let scenario = case.scenario;
    let rep = scenario.reproduce.as_ref().unwrap();
    let machine = case.specs[0][0].machine.clone();
    text_out.push_str(&format!("=== {} ===\n", rep.case));
    let opts = text::Options {
        per_cpu: req.per_cpu,
        lock_types: smpsim_report::perf_lock::lock_types(&case.specs[0][0]),
    };
    text_out.push_str(&text::runs(
        &scenario.name,
        &machine.name,
        &per_seed[0],
        &opts,
    ));
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
            values.push(metric::eval(&m.expr, &map).map_err(|e| {
                format!(
                    "error: {}: metric `{}`: {e}",
                    scenario.path.display(),
                    m.name
                )
            })?);
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
            case.seeds,
            (min, max),
            m.source.clone(),
            req.quick,
        ));
    }
    text_out.push('\n');
    Ok(CaseRun {
        scenario,
        machine,
        rows: case_rows..rows.len(),
        runs: per_seed,
    })
}
