//! `smpsim run`: a scenario's variants run once each and reported side by
//! side, or over seeds ([`crate::seeds`]), or over schedules
//! ([`crate::schedules`]).

use std::path::{Path, PathBuf};

use smpsim_report::format::RunFormat;
use smpsim_scenario::Scenario;

use crate::output::{check_outputs, emit, load_scenario, parse_sets, scenario_inputs};
use crate::pool::{compile_variants, register, run_specs};
use crate::progress::Progress;
use crate::variants::{variants_to_run, warn};

/// What a run was asked to do (`smpsim run`'s arguments).
pub struct Run {
    pub scenario: PathBuf,
    pub variants: Vec<String>,
    /// `--set KEY=VALUE`, as given.
    pub sets: Vec<String>,
    pub seed: Option<u64>,
    pub trace: Option<PathBuf>,
    pub trace_limit: u64,
    pub trace_window: Option<String>,
    pub seeds: Option<u64>,
    pub explore: Option<u64>,
    pub explore_delay: String,
    pub keep_going: bool,
    pub schedule: Option<String>,
    pub quiet: bool,
    pub per_cpu: bool,
    pub format: RunFormat,
    pub output: Option<PathBuf>,
    pub allow_paths: Vec<PathBuf>,
    /// `--band`: each figure with its band (seeds, assumed values over
    /// their ranges, the model's stated error).
    pub band: bool,
    /// How big the band's design may be (`--band-budget`, `--band-points`).
    pub band_size: crate::band::Options,
}

/// Runs what `req` asks and writes the report to its output (stdout
/// without one).
pub fn run(req: &Run) -> Result<(), String> {
    let scenario = load_scenario(&req.scenario, &req.allow_paths)?;
    warn(&scenario, req.quiet);
    let outputs: Vec<(&str, &Path)> = [("-o", &req.output), ("--trace", &req.trace)]
        .into_iter()
        .filter_map(|(w, p)| p.as_deref().map(|p| (w, p)))
        .collect();
    check_outputs(&scenario_inputs(&scenario), &outputs)?;
    let mut sets = parse_sets(&req.sets)?;
    if let Some(seed) = req.seed {
        sets.push(("scenario.seed".into(), seed.to_string()));
    }
    let variants = variants_to_run(&scenario, &req.variants);
    let refused = if req.seeds.is_some() {
        req.format.over_seeds().err()
    } else if req.explore.is_some() {
        req.format.over_schedules().err()
    } else {
        None
    };
    if req.band {
        band_refused(req)?;
    }
    if let Some(refused) = refused {
        return Err(format!(
            "error: --format {refused}; with --seeds or --explore use text or json (or lkml with --seeds)"
        ));
    }
    let out = if let Some(n) = req.seeds {
        check_seeds(req, n)?;
        crate::seeds::run(&scenario, &variants, &sets, n, (req.format, req.quiet))?
    } else if let Some(n) = req.explore {
        check_schedules(req, n)?;
        let how = crate::schedules::Schedules {
            explore_delay: &req.explore_delay,
            keep_going: req.keep_going,
            format: req.format,
            quiet: req.quiet,
        };
        crate::schedules::run(&scenario, &how, &variants, &sets, n)?
    } else {
        once(&scenario, req, &variants, &sets)?
    };
    emit(&out, req.output.as_deref()).map_err(|e| format!("error: {e}"))
}

/// `--band` runs its own seeds and design and is shown in text, JSON or
/// LKML; anything else with it is refused before the run.
fn band_refused(req: &Run) -> Result<(), String> {
    if req.seeds.is_some() || req.explore.is_some() || req.schedule.is_some() {
        return Err("error: --band runs its own seeds and design; it cannot be combined with --seeds, --explore or --schedule".into());
    }
    if matches!(req.format, RunFormat::Csv | RunFormat::PerfLock) {
        return Err("error: --band is shown with --format text, json or lkml".into());
    }
    Ok(())
}

/// `--seeds N`: at least one, within the limit, and no `--trace`.
fn check_seeds(req: &Run, n: u64) -> Result<(), String> {
    if n == 0 {
        return Err("error: --seeds 0: there is nothing to explore; give 1 or more".into());
    }
    // Each seed is compiled and held until it runs: bound them.
    crate::output::check_seeds(n)?;
    if req.trace.is_some() {
        return Err(
            "error: --trace records one run; it cannot be combined with --seeds (replay a seed with --seed N --trace FILE)".into(),
        );
    }
    Ok(())
}

/// `--explore N`: at least one, alone, within the limit.
fn check_schedules(req: &Run, n: u64) -> Result<(), String> {
    if n == 0 {
        return Err("error: --explore 0: there is nothing to explore; give 1 or more".into());
    }
    if req.seeds.is_some() || req.schedule.is_some() || req.trace.is_some() {
        return Err("error: --explore runs many schedules; it cannot be combined with --seeds, --schedule or --trace".into());
    }
    // Each schedule is registered (and may run) before any is known to
    // fail: bound them as seeds are bound.
    let limit = smpsim_scenario::limits::SCHEDULES;
    match limit.get() {
        Err(e) => Err(format!("error: {e}")),
        Ok(max) if n > max => Err(format!(
            "error: --explore {n}: too many schedules ({})",
            limit.explain(max)
        )),
        Ok(_) => Ok(()),
    }
}

/// Each variant once (on `--schedule`'s perturbation, if given), traced
/// with `--trace`: the report in `req`'s format.
fn once(
    scenario: &Scenario,
    req: &Run,
    variants: &[Option<String>],
    sets: &[(String, String)],
) -> Result<String, String> {
    let adjust = |spec: smpsim_kernel::Spec| match &req.schedule {
        None => Ok(spec),
        Some(k) => crate::explore::replay_spec(&spec, k, &req.explore_delay),
    };
    let specs = compile_variants(scenario, variants, sets, &adjust)?;
    let window = crate::trace::trace_window(req.trace_window.as_deref(), variants, &specs)?;
    if !req.quiet {
        for (v, spec) in variants.iter().zip(&specs) {
            if let Some(w) = crate::trace::short_window(spec) {
                eprintln!("warning: {}: {w}", v.as_deref().unwrap_or("base"));
            }
        }
    }
    let progress = Progress::new("run", "variants", req.quiet);
    let items = register(&progress, &specs.iter().collect::<Vec<_>>());
    let runs = run_specs(scenario, variants, &specs, &progress, &items);
    progress.done();
    if let Some(path) = &req.trace {
        let limit = usize::try_from(req.trace_limit).unwrap_or(usize::MAX);
        crate::trace::write_trace(variants, &specs, limit, window, path)?;
    }
    // The machine the runs ran on, from their specs (every variant runs
    // the scenario's machine).
    let machine = specs.first().map(|s| s.machine.name.clone());
    let opts = smpsim_report::text::Options {
        per_cpu: req.per_cpu,
        lock_types: specs
            .first()
            .map(smpsim_report::perf_lock::lock_types)
            .unwrap_or_default(),
    };
    let out = smpsim_report::format::run(
        req.format,
        &scenario.name,
        &machine.unwrap_or_default(),
        &runs,
        &opts,
    );
    if !req.band {
        return Ok(out);
    }
    let how = (&req.band_size, req.format, req.quiet);
    crate::band::command::run(scenario, variants, sets, &runs, how, out)
}
