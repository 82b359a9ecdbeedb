//! `smpsim sweep SCENARIO`: the cross product of CPU counts, variants,
//! `--set` values and seeds, each point one simulation, run in parallel.
//!
//! Points stream to a JSON Lines file as they finish, one line each, so an
//! interrupted sweep keeps every finished point; running the same command
//! again skips the points already in the file (each keyed by the
//! scenario's text, the variant, the settings and the seed) and runs the
//! rest. When every point is in, the file is rewritten in point order, so
//! a resumed sweep ends with the same bytes as an uninterrupted one. A
//! point whose scenario does not compile records its error and the sweep
//! goes on.
//!
//! `--cpus N` restricts the tasks to CPUs `0..N`: it sets every task
//! group's `cpus` to `"0-(N-1)"` (a `per_cpu` group then has N times its
//! count, a `count` group spreads over N CPUs).

use std::collections::HashSet;

use smpsim_report::results_file::{parse_cpus, split_values};
use std::io::Write;
use std::path::Path;

use rayon::prelude::*;

use crate::cli::SweepArgs;
use crate::output::{fail, parse_sets};
use smpsim_runner::pilot::pilot;
use smpsim_runner::progress::{Item, Progress};

/// One point of a sweep.
#[derive(Clone, Debug)]
struct Point {
    variant: Option<String>,
    cpus: Option<u32>,
    sets: Vec<(String, String)>,
    seed: u64,
}

impl Point {
    /// What identifies the point in a results file.
    fn key(&self, scenario_hash: &str) -> String {
        let sets: Vec<String> = self.sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(
            "{scenario_hash}|{}|{}|{}|{}",
            self.variant.as_deref().unwrap_or("base"),
            self.cpus.map_or("-".into(), |c| c.to_string()),
            sets.join(";"),
            self.seed
        )
    }
}

pub fn main(args: SweepArgs) -> i32 {
    let scenario = match smpsim_scenario::load(&args.scenario) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    // Points are appended to `-o`: never to the scenario itself.
    if let Err(e) = crate::output::check_outputs(
        &crate::output::scenario_inputs(&scenario),
        &[("-o", &args.output)],
    ) {
        return fail(e);
    }
    let base = match scenario.compile(None, &[]) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let cpus: Vec<Option<u32>> = match &args.cpus {
        None => vec![None],
        Some(c) => match parse_cpus(c) {
            Ok(v) => v.into_iter().map(Some).collect(),
            Err(e) => return fail(e),
        },
    };
    if let Some(&Some(n)) = cpus.iter().max() {
        let have = base.machine.nr_cpus() as u32;
        if n > have {
            return fail(format!(
                "error: --cpus {n}: the scenario's machine has {have} CPUs; sweep up to {have}, or --set a larger topology"
            ));
        }
    }
    if args.seeds == 0 {
        return fail("error: --seeds 0: a sweep needs at least one seed");
    }
    if let Err(e) = crate::output::check_seeds(args.seeds) {
        return fail(e);
    }
    let sets = match parse_sets(&args.sets) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    // Every `--set` value must compile (with the first value of each other
    // `--set`, which may be what makes it valid: a shorter duration with a
    // shorter warmup): a typo in a key fails here, before anything runs.
    let firsts: Vec<(String, String)> = sets
        .iter()
        .filter_map(|(k, v)| split_values(v).into_iter().next().map(|f| (k.clone(), f)))
        .collect();
    for (i, (k, v)) in sets.iter().enumerate() {
        for value in split_values(v) {
            let mut with: Vec<(String, String)> = firsts
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, kv)| kv.clone())
                .collect();
            with.push((k.clone(), value.clone()));
            if let Err(e) = scenario.compile(None, &with) {
                return fail(e);
            }
        }
    }
    // `--variant a,b` as well as `--variant a --variant b`; a name the
    // scenario does not have is refused before anything runs.
    let asked: Vec<String> = args
        .variants
        .iter()
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if let Some(bad) = asked
        .iter()
        .find(|v| !scenario.variant_names().any(|n| n == v.as_str()))
    {
        let known: Vec<&str> = scenario.variant_names().collect();
        return fail(format!(
            "error: {}: unknown variant `{bad}`; the scenario has: {}",
            args.scenario.display(),
            if known.is_empty() {
                "no variants".to_string()
            } else {
                known.join(", ")
            }
        ));
    }
    let variants = crate::run::variants_to_run(&scenario, &asked);
    // Every point is held in memory: count them before making them.
    let limit = smpsim_scenario::limits::SWEEP_POINTS;
    let max_points = match limit.get() {
        Ok(m) => m,
        Err(e) => return fail(format!("error: {e}")),
    };
    let count = sets
        .iter()
        .map(|(_, v)| split_values(v).len() as u64)
        .chain([variants.len() as u64, cpus.len() as u64, args.seeds])
        .try_fold(1u64, |n, k| n.checked_mul(k))
        .filter(|n| *n <= max_points);
    if count.is_none() {
        return fail(format!(
            "error: the sweep has more than {max_points} points (variants x CPU counts x --set values x seeds; {})",
            limit.explain(max_points)
        ));
    }
    // The cross product, in a fixed order.
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, v) in &sets {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                split_values(v).into_iter().map(move |value| {
                    let mut c = c.clone();
                    c.push((k.clone(), value));
                    c
                })
            })
            .collect();
    }
    let mut points = Vec::new();
    for v in &variants {
        for &n in &cpus {
            for c in &combos {
                for k in 0..args.seeds {
                    points.push(Point {
                        variant: v.clone(),
                        cpus: n,
                        sets: c.clone(),
                        seed: base.seed + k,
                    });
                }
            }
        }
    }
    let hash = smpsim_report::results_file::scenario_hash(&scenario.text);
    let done = match smpsim_report::results_file::finished(&args.output, &hash) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let todo: Vec<&Point> = points
        .iter()
        .filter(|p| !done.contains(&p.key(&hash)))
        .collect();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.output);
    let file = match file {
        Ok(f) => std::sync::Mutex::new(f),
        Err(e) => return fail(format!("error: {}: {e}", args.output.display())),
    };
    let cpu_keys: Vec<String> = base
        .task_groups
        .iter()
        .map(|g| format!("tasks.{}.cpus", g.name))
        .collect();
    let total = todo.len();
    let specs: Vec<Result<smpsim_kernel::Spec, String>> = todo
        .iter()
        .map(|p| {
            scenario
                .compile(p.variant.as_deref(), &point_sets(p, &cpu_keys))
                .map_err(|e| e.to_string())
        })
        .collect();
    let progress = Progress::new("sweep", "points", args.quiet);
    let costs: Vec<(u64, f64)> = specs
        .par_iter()
        .map(|s| match s {
            Ok(spec) if !progress.quiet() => pilot(spec),
            _ => (0, 1.0),
        })
        .collect();
    let items: Vec<Item> = costs.iter().map(|&(p, c)| progress.add(p, c)).collect();
    let written: Result<(), String> = todo
        .par_iter()
        .zip(specs.par_iter())
        .zip(items.par_iter())
        .try_for_each(|((p, spec), item)| {
            progress.start(item);
            let line = run_point(&scenario, &hash, p, spec, item);
            progress.finish(item);
            let mut f = file.lock().expect("no panics while writing");
            // A write that fails part way (a full disk) is cut back off,
            // so the file holds only whole points.
            let before = f.metadata().map(|m| m.len());
            f.write_all(line.as_bytes())
                .and_then(|_| f.flush())
                .map_err(|e| {
                    if let Ok(len) = before {
                        let _ = f.set_len(len);
                    }
                    format!("error: {}: {e}", args.output.display())
                })
        });
    progress.done();
    if let Err(e) = written {
        return fail(e);
    }
    // All points are in: the file in point order.
    if let Err(e) = sort_file(&args.output, &points, &hash) {
        return fail(e);
    }
    if let Some(format) = args.format {
        let mine = points_keys(&points, &hash);
        let lines = match smpsim_report::results_file::read_points(&args.output) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        let points: Vec<serde_json::Value> = lines
            .into_iter()
            .filter(|p| p["key"].as_str().is_some_and(|k| mine.contains(k)))
            .collect();
        let out = smpsim_report::format::sweep(format.into(), &points, "");
        if let Err(e) = crate::output::emit(&out, None) {
            return fail(format!("error: {e}"));
        }
    }
    if !args.quiet {
        eprintln!(
            "sweep: {} points ({} run now, {} already in {})",
            points.len(),
            total,
            points.len() - total,
            args.output.display()
        );
    }
    0
}

/// The keys of a sweep's points.
fn points_keys(points: &[Point], hash: &str) -> HashSet<String> {
    points.iter().map(|p| p.key(hash)).collect()
}

/// The scenario values of a point.
fn point_sets(p: &Point, cpu_keys: &[String]) -> Vec<(String, String)> {
    let mut sets = p.sets.clone();
    if let Some(n) = p.cpus {
        // A TOML string, so that `0` is a CPU list and not an integer.
        let list = format!("\"0-{}\"", n - 1);
        sets.extend(cpu_keys.iter().map(|k| (k.clone(), list.clone())));
    }
    sets.push(("scenario.seed".into(), p.seed.to_string()));
    sets
}

/// One point's JSON line (with its newline).
fn run_point(
    scenario: &smpsim_scenario::Scenario,
    hash: &str,
    p: &Point,
    spec: &Result<smpsim_kernel::Spec, String>,
    item: &Item,
) -> String {
    let settings: serde_json::Map<String, serde_json::Value> = p
        .sets
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    let mut line = serde_json::json!({
        "key": p.key(hash),
        "scenario": scenario.name,
        "scenario_hash": hash,
        "scenario_file": scenario.path.display().to_string(),
        "variant": p.variant.as_deref().unwrap_or("base"),
        "cpus": p.cpus,
        "settings": settings,
        "seed": p.seed,
        "smpsim": crate::BUILT_FROM,
    });
    match spec {
        Ok(spec) => {
            let mut r =
                serde_json::to_value(smpsim_kernel::simulate_with_progress(spec, &item.reached))
                    .expect("serializable");
            // Host time would make the file differ between runs.
            r["stats"]["wall_seconds"] = serde_json::Value::from(0.0);
            line["result"] = r;
        }
        Err(e) => line["error"] = serde_json::Value::String(e.clone()),
    }
    let mut s = serde_json::to_string(&line).expect("serializable");
    s.push('\n');
    s
}

/// Rewrites the results file with this sweep's points in point order
/// (lines of other points, from a wider earlier sweep, after them).
fn sort_file(path: &Path, points: &[Point], hash: &str) -> Result<(), String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("error: {}: {e}", path.display()))?;
    let mut lines: Vec<(String, &str)> = text
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            Some((v["key"].as_str()?.to_string(), l))
        })
        .collect();
    let order: std::collections::HashMap<String, usize> = points
        .iter()
        .enumerate()
        .map(|(i, p)| (p.key(hash), i))
        .collect();
    lines.sort_by_key(|(k, _)| (order.get(k).copied().unwrap_or(usize::MAX), k.clone()));
    lines.dedup_by(|a, b| a.0 == b.0);
    let mut out = String::with_capacity(text.len());
    for (_, l) in lines {
        out.push_str(l);
        out.push('\n');
    }
    crate::output::emit(&out, Some(path)).map_err(|e| format!("error: {e}"))
}
