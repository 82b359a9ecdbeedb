//! `smpsim run` and `smpsim machine`.

use rayon::prelude::*;

use crate::cli::{MachineArgs, RunArgs, RunFormat};
use crate::output::{emit, fail, parse_sets};
use smpsim_runner::pool::{compile_variants, register, run_specs, variant_run};
use smpsim_runner::progress::{Item, Progress};

/// The largest seed: `scenario.seed` is a TOML integer (i64).
pub const MAX_SEED: u64 = i64::MAX as u64;

/// The variants asked for, or every variant of the scenario (or its base
/// if it has none).
pub fn variants_to_run(
    scenario: &smpsim_scenario::Scenario,
    asked: &[String],
) -> Vec<Option<String>> {
    if !asked.is_empty() {
        asked.iter().cloned().map(Some).collect()
    } else if scenario.variants.is_empty() {
        vec![None]
    } else {
        scenario
            .variants
            .iter()
            .map(|v| Some(v.name.clone()))
            .collect()
    }
}

/// The scenario's warnings (legal, likely not meant), on stderr.
pub fn warn(scenario: &smpsim_scenario::Scenario, quiet: bool) {
    if !quiet {
        for w in &scenario.warnings {
            eprintln!("warning: {}: {w}", scenario.path.display());
        }
    }
}

pub fn main(args: RunArgs) -> i32 {
    let scenario = match crate::output::load_scenario(&args.scenario, &args.allow_paths) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    warn(&scenario, args.quiet);
    let outputs: Vec<(&str, &std::path::Path)> = [("-o", &args.output), ("--trace", &args.trace)]
        .into_iter()
        .filter_map(|(w, p)| p.as_deref().map(|p| (w, p)))
        .collect();
    if let Err(e) =
        crate::output::check_outputs(&crate::output::scenario_inputs(&scenario), &outputs)
    {
        return fail(e);
    }
    let mut sets = match parse_sets(&args.sets) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    if let Some(seed) = args.seed {
        sets.push(("scenario.seed".into(), seed.to_string()));
    }
    let variants = variants_to_run(&scenario, &args.variants);
    let refused = match args.format {
        RunFormat::Csv | RunFormat::PerfLock if args.seeds.is_some() || args.explore.is_some() => {
            "csv and perf-lock show one run"
        }
        RunFormat::Lkml if args.explore.is_some() => "lkml compares variants, over --seeds or not",
        _ => "",
    };
    if !refused.is_empty() {
        return fail(format!(
            "error: --format {refused}; with --seeds or --explore use text or json (or lkml with --seeds)"
        ));
    }
    if args.band {
        if let Err(e) = crate::band::refused(&args) {
            return fail(e);
        }
    }
    if let Some(n) = args.seeds {
        if n == 0 {
            return fail("error: --seeds 0: there is nothing to explore; give 1 or more");
        }
        // Each seed is compiled and held until it runs: bound them.
        if let Err(e) = crate::output::check_seeds(n) {
            return fail(e);
        }
        if args.trace.is_some() {
            return fail(
                "error: --trace records one run; it cannot be combined with --seeds (replay a seed with --seed N --trace FILE)",
            );
        }
        return explore(&scenario, &args, &variants, &sets, n);
    }
    if let Some(n) = args.explore {
        if n == 0 {
            return fail("error: --explore 0: there is nothing to explore; give 1 or more");
        }
        if args.seeds.is_some() || args.schedule.is_some() || args.trace.is_some() {
            return fail("error: --explore runs many schedules; it cannot be combined with --seeds, --schedule or --trace");
        }
        // Each schedule is registered (and may run) before any is known to
        // fail: bound them as seeds are bound.
        let limit = smpsim_scenario::limits::SCHEDULES;
        match limit.get() {
            Err(e) => return fail(format!("error: {e}")),
            Ok(max) if n > max => {
                return fail(format!(
                    "error: --explore {n}: too many schedules ({})",
                    limit.explain(max)
                ))
            }
            Ok(_) => {}
        }
        return crate::explore::main(&scenario, &args, &variants, &sets, n);
    }
    let schedule = args.schedule.clone();
    let delay = args.explore_delay.clone();
    let adjust = move |spec: smpsim_kernel::Spec| match &schedule {
        None => Ok(spec),
        Some(k) => crate::explore::replay_spec(&spec, k, &delay),
    };
    let specs = match compile_variants(&scenario, &variants, &sets, &adjust) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let window =
        smpsim_runner::trace::trace_window(args.trace_window.as_deref(), &variants, &specs);
    let window = match window {
        Ok(w) => w,
        Err(e) => return fail(e),
    };
    if !args.quiet {
        for (v, spec) in variants.iter().zip(&specs) {
            if let Some(w) = smpsim_runner::trace::short_window(spec) {
                eprintln!("warning: {}: {w}", v.as_deref().unwrap_or("base"));
            }
        }
    }
    let progress = Progress::new("run", "variants", args.quiet);
    let items = register(&progress, &specs.iter().collect::<Vec<_>>());
    let runs = run_specs(&scenario, &variants, &specs, &progress, &items);
    progress.done();
    if let Some(path) = &args.trace {
        let limit = usize::try_from(args.trace_limit).unwrap_or(usize::MAX);
        if let Err(e) = smpsim_runner::trace::write_trace(&variants, &specs, limit, window, path) {
            return fail(e);
        }
    }
    let machine = runs_machine(&scenario, &variants, &sets);
    let opts = smpsim_report::text::Options {
        per_cpu: args.per_cpu,
        lock_types: specs
            .first()
            .map(smpsim_report::perf_lock::lock_types)
            .unwrap_or_default(),
    };
    let out = smpsim_report::format::run(args.format, &scenario.name, &machine, &runs, &opts);
    let out = match args.band {
        false => out,
        true => match crate::band::run(
            &scenario,
            &variants,
            &sets,
            &runs,
            args.format,
            out,
            args.quiet,
        ) {
            Ok(out) => out,
            Err(e) => return fail(e),
        },
    };
    match emit(&out, args.output.as_deref()) {
        Ok(()) => 0,
        Err(e) => fail(format!("error: {e}")),
    }
}

/// One seed's detector findings.
#[derive(serde::Serialize)]
struct SeedFindings {
    seed: u64,
    findings: Vec<smpsim_kernel::Finding>,
}

#[derive(serde::Serialize)]
struct Exploration {
    variant: String,
    seeds: u64,
    first_seed: u64,
    failing: Vec<SeedFindings>,
    /// Each counter's rate and each histogram's p50/p99 over the seeds.
    metrics: Vec<OverSeeds>,
}

/// One metric over the seeds of a variant.
#[derive(serde::Serialize)]
struct OverSeeds {
    /// A result path (`counter.NAME.rate`, `hist.NAME.p99`).
    name: String,
    mean: f64,
    /// Sample standard deviation (0 for one seed).
    stddev: f64,
    min: f64,
    max: f64,
    /// Rates print as rates, histogram figures as times.
    #[serde(skip)]
    time: bool,
}

impl OverSeeds {
    fn of(name: String, values: &[f64], time: bool) -> OverSeeds {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        OverSeeds {
            name,
            mean,
            stddev: var.sqrt(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            time,
        }
    }
}

/// Counters' rates and histograms' p50/p99, each over every seed's result
/// (results in seed order; every seed has the same counters and histograms).
fn over_seeds(results: &[smpsim_kernel::RunResult]) -> Vec<OverSeeds> {
    let Some(first) = results.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, c) in first.counters.iter().enumerate() {
        let v: Vec<f64> = results.iter().map(|r| r.counters[i].rate).collect();
        out.push(OverSeeds::of(format!("counter.{}.rate", c.name), &v, false));
    }
    for (i, h) in first.histograms.iter().enumerate() {
        type Quantile = fn(&smpsim_kernel::HistResult) -> u64;
        let quantiles: [(&str, Quantile); 2] = [("p50", |h| h.p50), ("p99", |h| h.p99)];
        for (q, get) in quantiles {
            let v: Vec<f64> = results
                .iter()
                .map(|r| get(&r.histograms[i]) as f64)
                .collect();
            out.push(OverSeeds::of(format!("hist.{}.{q}", h.name), &v, true));
        }
    }
    out
}

/// `run --seeds N`: every variant over N seeds, in parallel; each seed's
/// run is deterministic, so any failing seed replays with `--seed`.
fn explore(
    scenario: &smpsim_scenario::Scenario,
    args: &RunArgs,
    variants: &[Option<String>],
    sets: &[(String, String)],
    n: u64,
) -> i32 {
    let base = match scenario.compile(variants[0].as_deref(), sets) {
        Ok(s) => s.seed,
        Err(e) => return fail(e),
    };
    if base.checked_add(n - 1).is_none_or(|last| last > MAX_SEED) {
        return fail(format!(
            "error: --seeds {n} from seed {base} goes past the largest seed ({MAX_SEED}); give a smaller --seed"
        ));
    }
    let mut all = Vec::new();
    for v in variants {
        let specs: Result<Vec<_>, _> = (0..n)
            .map(|k| {
                let mut s = sets.to_vec();
                s.push(("scenario.seed".into(), (base + k).to_string()));
                scenario.compile(v.as_deref(), &s)
            })
            .collect();
        match specs {
            Ok(s) => all.push(s),
            Err(e) => return fail(e),
        };
    }
    // Every seed of a variant costs about the same: one pilot each.
    let progress = Progress::new("run --seeds", "seeds", args.quiet);
    let items: Vec<Vec<Item>> = all
        .iter()
        .map(|specs| progress.add_runs(&specs[0], specs.len()))
        .collect();
    let mut report = Vec::new();
    let mut per_variant = Vec::new();
    for ((v, specs), items) in variants.iter().zip(&all).zip(&items) {
        let mut results: Vec<smpsim_kernel::RunResult> = specs
            .par_iter()
            .zip(items.par_iter())
            .map(|(spec, item)| {
                progress.start(item);
                let r = smpsim_kernel::simulate_with_progress(spec, &item.reached);
                progress.finish(item);
                r
            })
            .collect();
        let metrics = over_seeds(&results);
        let failing: Vec<SeedFindings> = results
            .iter_mut()
            .filter(|r| !r.findings.is_empty())
            .map(|r| SeedFindings {
                seed: r.seed,
                findings: std::mem::take(&mut r.findings),
            })
            .collect();
        if matches!(args.format, RunFormat::Lkml) {
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
    let out = match args.format {
        RunFormat::Lkml => {
            let machine = runs_machine(scenario, variants, sets);
            let name = scenario.name.as_str();
            smpsim_report::lkml::seeds(name, &machine, &per_variant)
        }
        RunFormat::Json => {
            let mut s = serde_json::to_string_pretty(&report).expect("serializable");
            s.push('\n');
            s
        }
        _ => {
            let mut s = String::new();
            for e in &report {
                s.push_str(&format!(
                    "{}: {} of {} seeds ({}..{}) made a detector fire\n",
                    e.variant,
                    e.failing.len(),
                    e.seeds,
                    e.first_seed,
                    e.first_seed + e.seeds - 1
                ));
                let mut by_detector: std::collections::BTreeMap<&str, Vec<u64>> =
                    Default::default();
                for f in &e.failing {
                    for d in &f.findings {
                        by_detector
                            .entry(d.detector.as_str())
                            .or_default()
                            .push(f.seed);
                    }
                }
                for (d, seeds) in &by_detector {
                    let shown: Vec<String> = seeds.iter().take(8).map(|s| s.to_string()).collect();
                    s.push_str(&format!(
                        "  {d}: {} seeds, e.g. {}{}\n",
                        seeds.len(),
                        shown.join(", "),
                        if seeds.len() > 8 { ", ..." } else { "" }
                    ));
                }
                if !e.metrics.is_empty() {
                    let mut t = smpsim_report::text::Table::new(
                        ["metric", "mean", "stddev", "min", "max"]
                            .map(String::from)
                            .to_vec(),
                    );
                    for m in &e.metrics {
                        let f = |v: f64| {
                            if m.time {
                                smpsim_report::fmt_ns(v)
                            } else {
                                smpsim_report::fmt_rate(v)
                            }
                        };
                        t.row(vec![
                            format!("  {}", m.name),
                            f(m.mean),
                            f(m.stddev),
                            f(m.min),
                            f(m.max),
                        ]);
                    }
                    t.render(&mut s);
                }
                if let Some(f) = e.failing.first() {
                    s.push_str(&format!(
                        "  first: seed {}: {}\n",
                        f.seed, f.findings[0].message
                    ));
                    s.push_str(&format!(
                        "  replay: smpsim run {} --variant {} --seed {}\n",
                        scenario.path.display(),
                        e.variant,
                        f.seed
                    ));
                }
            }
            s
        }
    };
    match emit(&out, args.output.as_deref()) {
        Ok(()) => 0,
        Err(e) => fail(format!("error: {e}")),
    }
}

fn runs_machine(
    scenario: &smpsim_scenario::Scenario,
    variants: &[Option<String>],
    sets: &[(String, String)],
) -> String {
    scenario
        .compile(variants[0].as_deref(), sets)
        .map(|s| s.machine.name)
        .unwrap_or_default()
}

pub fn machine(args: MachineArgs) -> i32 {
    let Some(name) = args.name else {
        for n in smpsim_machine::preset_names() {
            println!("{n}");
        }
        return 0;
    };
    let m = match smpsim_machine::preset(&name) {
        Some(Ok(m)) => m,
        Some(Err(e)) => return fail(format!("error: preset {}: {}", e.name, e.message)),
        None => {
            let known: Vec<_> = smpsim_machine::preset_names().collect();
            return fail(format!(
                "error: unknown machine preset `{name}`; known: {}",
                known.join(", ")
            ));
        }
    };
    let t = &m.topology;
    println!("{}: {}", m.name, m.description);
    println!(
        "topology: {} sockets x {} nodes x {} LLCs x {} cores x {} threads = {} CPUs",
        t.sockets,
        t.numa_nodes_per_socket,
        t.llcs_per_node,
        t.cores_per_llc,
        t.threads_per_core,
        m.nr_cpus()
    );
    if let Some(table) = &t.node_distance {
        println!("node distances (SLIT):");
        for (n, row) in table.iter().enumerate() {
            let row: Vec<String> = row.iter().map(|d| format!("{d:>3}")).collect();
            println!("  node {n:<3} {}", row.join(" "));
        }
    }
    println!("{}", smpsim_machine::RANGE_NOTE);
    for (name, cost) in m.cost_list() {
        let range = cost.range_text();
        println!(
            "  {name:<28} {:>8} ns  {range:<22} {}",
            cost.ns, cost.source
        );
    }
    for c in &m.costs.line_transfer.by_node_distance {
        let name = format!("line_transfer.node_distance {}", c.distance);
        let range = c
            .range
            .map_or("-".into(), |[lo, hi]| format!("[{lo} - {hi}]"));
        println!("  {name:<28} {:>8} ns  {range:<22} {}", c.ns, c.source);
    }
    if !m.idle.source.is_empty() {
        println!(
            "  {:<28} {:>11}  {}",
            "idle.polling", m.idle.polling, m.idle.source
        );
    }
    if !m.atomics.source.is_empty() {
        println!(
            "  {:<28} {:>11}  {}",
            "atomics.kind",
            m.atomics.kind.name(),
            m.atomics.source
        );
    }
    if m.atomics.kind == smpsim_machine::AtomicKind::LlSc {
        println!(
            "  {:<28} {:>11}  {}",
            "atomics.load_reserve",
            m.atomics.load_reserve.name(),
            m.atomics.load_reserve_source
        );
    }
    let c = &m.coherence;
    println!(
        "  {:<28} {:>11}  {}",
        "coherence.home",
        c.home.name(),
        c.home_source
    );
    println!(
        "  {:<28} {:>11}  {}",
        "coherence.occupancy_per_transfer",
        c.occupancy_per_transfer,
        c.occupancy_per_transfer_source
    );
    println!(
        "  {:<28} {:>11}  {}",
        "coherence.forward_fraction", c.forward_fraction, c.forward_fraction_source
    );
    println!("standing: {}", m.standing());
    0
}
