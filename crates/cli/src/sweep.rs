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

/// `--cpus 1,2,4` or `--cpus 1..384:x2` (doubling) or `1..8:+1`.
pub fn parse_cpus(s: &str) -> Result<Vec<u32>, String> {
    let bad = |why: &str| format!("error: --cpus {s}: {why}");
    let mut out = Vec::new();
    if let Some((range, step)) = s.split_once(':') {
        let (lo, hi) = range
            .split_once("..")
            .ok_or_else(|| bad("a range is LO..HI:xK or LO..HI:+K"))?;
        let lo: u32 = lo.trim().parse().map_err(|_| bad("LO is not a number"))?;
        let hi: u32 = hi.trim().parse().map_err(|_| bad("HI is not a number"))?;
        let (mul, k) = match step.trim().split_at(1) {
            ("x", k) => (true, k),
            ("+", k) => (false, k),
            _ => return Err(bad("the step is xK (multiply) or +K (add)")),
        };
        let k: u32 = k.parse().map_err(|_| bad("the step is not a number"))?;
        if lo == 0 || (mul && k < 2) || (!mul && k == 0) {
            return Err(bad("the range must start at 1 or more and grow"));
        }
        let mut n = lo;
        while n <= hi {
            out.push(n);
            n = if mul {
                n.saturating_mul(k)
            } else {
                n.saturating_add(k)
            };
        }
    } else {
        for part in s.split(',') {
            let n: u32 = part
                .trim()
                .parse()
                .map_err(|_| bad("expected CPU counts such as 1,2,4 or a range 1..64:x2"))?;
            out.push(n);
        }
    }
    if out.contains(&0) {
        return Err(bad("a point needs at least one CPU"));
    }
    if out.is_empty() {
        return Err(bad("no CPU counts"));
    }
    Ok(out)
}

/// Splits `v1,v2,...` at top-level commas (not inside `[]`, `()` or quotes).
fn split_values(v: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth, mut quoted) = (Vec::new(), String::new(), 0i32, false);
    for ch in v.chars() {
        match ch {
            '"' => quoted = !quoted,
            '[' | '(' if !quoted => depth += 1,
            ']' | ')' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur.trim().to_string());
    out
}

/// The keys already in a results file for this scenario. A last line
/// cut short by an interrupted write (no newline at its end) is dropped
/// from the file; any other line that is not a point of this scenario is
/// an error, and the file is left as it is.
fn finished(path: &Path, hash: &str) -> Result<HashSet<String>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashSet::new()),
        Err(e) => return Err(format!("error: {}: {e}", path.display())),
    };
    let mut keys = HashSet::new();
    let mut good_len = 0usize;
    let mut rest = &bytes[..];
    let mut n = 0;
    while let Some(end) = rest.iter().position(|&b| b == b'\n') {
        n += 1;
        let line = &rest[..end];
        let not_point = || {
            format!(
                "error: {}: line {n} is not a sweep point; give another -o",
                path.display()
            )
        };
        let v: serde_json::Value = serde_json::from_slice(line).map_err(|_| not_point())?;
        let (Some(k), Some(h)) = (v["key"].as_str(), v["scenario_hash"].as_str()) else {
            return Err(not_point());
        };
        if h != hash {
            return Err(format!(
                "error: {}: its points are from another scenario (or another version of this one); give another -o, or remove it to start over",
                path.display()
            ));
        }
        keys.insert(k.to_string());
        good_len += end + 1;
        rest = &rest[end + 1..];
    }
    if !rest.is_empty() {
        // A torn last line: the point runs again.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| format!("error: {}: {e}", path.display()))?;
        f.set_len(good_len as u64)
            .map_err(|e| format!("error: {}: {e}", path.display()))?;
    }
    Ok(keys)
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
    let done = match finished(&args.output, &hash) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_counts_parse_as_lists_and_ranges() {
        assert_eq!(parse_cpus("1,2,4"), Ok(vec![1, 2, 4]));
        assert_eq!(parse_cpus("1..16:x2"), Ok(vec![1, 2, 4, 8, 16]));
        assert_eq!(parse_cpus("2..8:+3"), Ok(vec![2, 5, 8]));
        assert!(parse_cpus("0,1").unwrap_err().contains("at least one CPU"));
        assert!(parse_cpus("1..8:x1").is_err());
        assert!(parse_cpus("a").is_err());
    }

    #[test]
    fn set_values_split_at_top_level_commas() {
        assert_eq!(split_values("1,2"), vec!["1", "2"]);
        assert_eq!(split_values("[0, 1],[2]"), vec!["[0, 1]", "[2]"]);
        assert_eq!(split_values("\"a,b\""), vec!["\"a,b\""]);
    }
}
