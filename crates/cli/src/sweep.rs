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
//! `--cpus N` restricts the tasks to CPUs `0..N`: it sets the `cpus` of
//! every task group that does not give its own to `"0-(N-1)"` (a
//! `per_cpu` group then has N times its count, a `count` group spreads
//! over N CPUs). A group that gives `cpus` keeps that placement at every
//! point, so a point runs what `run` of the same size runs; a placement
//! naming a CPU at or beyond N is refused. The sweep says which groups it
//! scaled and which it kept before it runs.
//!
//! `--set scenario.seed=A,B` is honoured: each point runs (and is
//! labelled with) its own seed, `--seeds K` then runs A..A+K at each.

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
    /// Its place in the sweep's fixed order.
    index: usize,
    variant: Option<String>,
    cpus: Option<u32>,
    sets: Vec<(String, String)>,
    seed: u64,
    /// The groups whose explicit `cpus` the point keeps (with `--cpus`).
    kept: Vec<(String, String)>,
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

/// A sweep's arguments, its scenario, output and shard checked.
struct Args {
    scenario: std::path::PathBuf,
    output: std::path::PathBuf,
    shard: Option<(usize, usize)>,
    a: SweepArgs,
}

/// Parses `--shard K/N`: K and N with 1 <= K <= N.
fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad =
        || format!("error: --shard {s}: expected K/N with 1 <= K <= N (shard K of N), e.g. 2/4");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let k: usize = k.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// Whether shard `(k, n)` runs the point at `index`: every N-th point from
/// the (K-1)-th, so each shard has points of every CPU count and setting.
fn in_shard(index: usize, shard: Option<(usize, usize)>) -> bool {
    shard.is_none_or(|(k, n)| index % n == k - 1)
}

pub fn main(args: SweepArgs) -> i32 {
    if let Some(crate::cli::SweepCommand::Merge(m)) = args.command {
        return merge(&m.files, &m.output, m.partial);
    }
    let (Some(scenario_path), Some(output)) = (args.scenario.clone(), args.output.clone()) else {
        return fail("error: sweep needs a SCENARIO and -o FILE");
    };
    let shard = match args.shard.as_deref().map(parse_shard).transpose() {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let args = Args {
        scenario: scenario_path,
        output,
        shard,
        a: args,
    };
    let scenario = match crate::output::load_scenario(&args.scenario, &args.a.allow_paths) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    crate::run::warn(&scenario, args.a.quiet);
    // The results file is read, appended to and rewritten: a FIFO or a
    // device would block or lose the points.
    if let Ok(meta) = std::fs::metadata(&args.output) {
        if !meta.is_file() {
            return fail(format!(
                "error: -o {}: {}, not a regular file; a sweep reads, appends to and rewrites its results file, so give a file path",
                args.output.display(),
                file_kind(&meta)
            ));
        }
    }
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
    let cpus: Vec<Option<u32>> = match &args.a.cpus {
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
    if args.a.seeds == 0 {
        return fail("error: --seeds 0: a sweep needs at least one seed");
    }
    if let Err(e) = crate::output::check_seeds(args.a.seeds) {
        return fail(e);
    }
    let sets = match parse_sets(&args.a.sets) {
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
        .a
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
        .chain([variants.len() as u64, cpus.len() as u64, args.a.seeds])
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
    // Each variant and combination of settings: its first seed (a swept
    // `scenario.seed` is its own) and the groups that place themselves.
    let mut firsts_of = Vec::new();
    for v in &variants {
        let mut row = Vec::new();
        for c in &combos {
            let seed = scenario
                .compile(v.as_deref(), c)
                .map_or(base.seed, |s| s.seed);
            let kept = if args.a.cpus.is_some() {
                match scenario.explicit_cpus(v.as_deref(), c) {
                    Ok(k) => k,
                    Err(e) => return fail(e),
                }
            } else {
                Vec::new()
            };
            row.push((seed, kept));
        }
        firsts_of.push(row);
    }
    let mut points = Vec::new();
    for (v, row) in variants.iter().zip(&firsts_of) {
        for &n in &cpus {
            for (c, (first_seed, kept)) in combos.iter().zip(row) {
                for k in 0..args.a.seeds {
                    let last = crate::run::MAX_SEED;
                    let Some(seed) = first_seed.checked_add(k).filter(|s| *s <= last) else {
                        return fail(format!(
                            "error: seed {first_seed} + {k} is beyond the largest seed ({last}); give a smaller scenario.seed or fewer --seeds"
                        ));
                    };
                    points.push(Point {
                        index: points.len(),
                        variant: v.clone(),
                        cpus: n,
                        sets: c.clone(),
                        seed,
                        kept: kept.clone(),
                    });
                }
            }
        }
    }
    let whole = points.len();
    let mut hash = smpsim_report::results_file::scenario_hash(&scenario.text);
    if args.a.band {
        // A point with its band is not the point without: not resumed
        // from, nor mixed with, a sweep without bands.
        hash.push_str("+band");
    }
    let done = match smpsim_report::results_file::finished(&args.output, &hash) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    // This shard's points (every point without --shard).
    let points: Vec<Point> = points
        .into_iter()
        .filter(|p| in_shard(p.index, args.shard))
        .collect();
    let todo: Vec<&Point> = points
        .iter()
        .filter(|p| !done.contains(&p.key(&hash)))
        .collect();
    // Never through a link planted at the path, never into a FIFO.
    let file = match crate::output::open_append(&args.output) {
        Ok(f) => std::sync::Mutex::new(f),
        Err(e) => return fail(format!("error: {e}")),
    };
    let total = todo.len();
    let specs: Vec<Result<smpsim_kernel::Spec, String>> = todo
        .iter()
        .map(|p| {
            // The variant's groups (a variant may add some): compiled once
            // more, only with --cpus.
            let groups: Vec<String> = match p.cpus {
                None => Vec::new(),
                Some(_) => scenario
                    .compile(p.variant.as_deref(), &p.sets)
                    .map(|s| s.task_groups.into_iter().map(|g| g.name).collect())
                    .unwrap_or_default(),
            };
            scenario
                .compile(p.variant.as_deref(), &point_sets(p, &groups))
                .map_err(|e| e.to_string())
        })
        .collect();
    // A kept placement must fit in the point's CPUs, or the point is not
    // the size it says.
    for (p, spec) in todo.iter().zip(&specs) {
        if let (Some(n), Ok(spec)) = (p.cpus, spec) {
            if let Some(e) = placement_beyond(p, spec, n) {
                return fail(e);
            }
        }
    }
    if let (Some(_), false) = (&args.a.cpus, args.a.quiet) {
        eprintln!("{}", cpus_header(&points, &base));
    }
    let progress = Progress::new("sweep", "points", args.a.quiet);
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
            let band = args.a.band.then(|| band_sets(&scenario, p));
            let line = run_point(&scenario, &hash, p, spec, item, whole, band);
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
    if let Some(format) = args.a.format {
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
    if !args.a.quiet {
        eprintln!(
            "sweep: {}{} points ({} run now, {} already in {})",
            args.shard
                .map_or(String::new(), |(k, n)| format!("shard {k}/{n}: ")),
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

/// The scenario values of a point: with `--cpus N`, `groups` that do not
/// place themselves are restricted to CPUs `0..N`.
fn point_sets(p: &Point, groups: &[String]) -> Vec<(String, String)> {
    let mut sets = p.sets.clone();
    if let Some(n) = p.cpus {
        // A TOML string, so that `0` is a CPU list and not an integer.
        let list = format!("\"0-{}\"", n - 1);
        sets.extend(
            groups
                .iter()
                .filter(|g| !p.kept.iter().any(|(k, _)| k == *g))
                .map(|g| (format!("tasks.{g}.cpus"), list.clone())),
        );
    }
    sets.push(("scenario.seed".into(), p.seed.to_string()));
    sets
}

/// The overrides a point was compiled with, for its band's design.
fn band_sets(scenario: &smpsim_scenario::Scenario, p: &Point) -> Vec<(String, String)> {
    let groups: Vec<String> = match p.cpus {
        None => Vec::new(),
        Some(_) => scenario
            .compile(p.variant.as_deref(), &p.sets)
            .map(|s| s.task_groups.into_iter().map(|g| g.name).collect())
            .unwrap_or_default(),
    };
    point_sets(p, &groups)
}

/// The error for a kept placement that names a CPU at or beyond the
/// point's `--cpus N`, if there is one.
fn placement_beyond(p: &Point, spec: &smpsim_kernel::Spec, n: u32) -> Option<String> {
    for (name, written) in &p.kept {
        let g = spec.task_groups.iter().find(|g| &g.name == name)?;
        let allowed = match &g.affinity {
            smpsim_kernel::spec::Affinity::Cpus(c) => c.clone(),
            smpsim_kernel::spec::Affinity::Pinned => Vec::new(),
        };
        let highest = g.placement.iter().chain(&allowed).copied().max();
        if let Some(h) = highest.filter(|&h| h >= n) {
            return Some(format!(
                "error: --cpus {n}: task group `{name}` places its tasks itself (cpus = {written}), on CPU {h}, beyond the point's CPUs 0-{}; sweep from {} CPUs, or leave its `cpus` out so --cpus restricts it",
                n - 1,
                h + 1
            ));
        }
    }
    None
}

/// What `--cpus` did to the task groups, said before the sweep runs.
fn cpus_header(points: &[Point], base: &smpsim_kernel::Spec) -> String {
    let mut kept: Vec<String> = Vec::new();
    for p in points {
        for (name, written) in &p.kept {
            let s = format!("{name} (cpus = {written})");
            if !kept.contains(&s) {
                kept.push(s);
            }
        }
    }
    let scaled: Vec<&str> = base
        .task_groups
        .iter()
        .map(|g| g.name.as_str())
        .filter(|g| !points.iter().all(|p| p.kept.iter().any(|(k, _)| k == g)))
        .collect();
    let mut s = format!(
        "sweep: --cpus N restricts task groups {} to CPUs 0..N-1",
        if scaled.is_empty() {
            "(none)".to_string()
        } else {
            scaled.join(", ")
        }
    );
    if !kept.is_empty() {
        s.push_str(&format!(
            "; keeps the explicit placement of {}",
            kept.join(", ")
        ));
    }
    s
}

/// What a path that is not a regular file is, for an error.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// One point's JSON line (with its newline).
fn run_point(
    scenario: &smpsim_scenario::Scenario,
    hash: &str,
    p: &Point,
    spec: &Result<smpsim_kernel::Spec, String>,
    item: &Item,
    whole: usize,
    band: Option<Vec<(String, String)>>,
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
        "index": p.index,
        "sweep_points": whole,
        "smpsim": crate::BUILT_FROM,
    });
    match spec {
        Ok(spec) => {
            let result = smpsim_kernel::simulate_with_progress(spec, &item.reached);
            if let Some(sets) = band {
                line["band"] = crate::band::sweep_point(scenario, &p.variant, &sets, &result);
            }
            let mut r = serde_json::to_value(result).expect("serializable");
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

/// One line of a results file given to `sweep merge`.
struct MergeLine<'a> {
    index: u64,
    key: String,
    file: &'a Path,
    line: &'a str,
}

/// `sweep merge`: the shards' lines in the sweep's point order, as the
/// whole sweep writes them. Each line is kept byte for byte (never parsed
/// and written again). Refused: lines of different scenarios (or scenario
/// texts), a point in two files, two points at one place in the order (not
/// shards of one sweep), a file that is not a sweep's, shards that name
/// the scenario by different paths, and (unless `partial`) a set of
/// shards that leaves points of the sweep out.
fn merge(files: &[std::path::PathBuf], output: &Path, partial: bool) -> i32 {
    let inputs: Vec<(&str, &Path)> = files.iter().map(|f| ("input", f.as_path())).collect();
    if let Err(e) = crate::output::check_outputs(&inputs, &[("-o", output)]) {
        return fail(e);
    }
    let texts: Vec<String> = match files
        .iter()
        .map(|f| std::fs::read_to_string(f).map_err(|e| format!("error: {}: {e}", f.display())))
        .collect()
    {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let mut lines: Vec<MergeLine> = Vec::new();
    let mut scenario: Option<(String, String, &Path)> = None;
    // The scenario's path as the first line names it, and the sweep's
    // size (when the lines record it).
    let mut scenario_file: Option<(String, String)> = None;
    let mut whole: Option<(u64, String)> = None;
    for (file, text) in files.iter().zip(&texts) {
        if !text.is_empty() && !text.ends_with('\n') {
            return fail(format!(
                "error: {}: the last line is torn (the shard did not finish); run its sweep again to complete it",
                file.display()
            ));
        }
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let at = || format!("{}:{}", file.display(), n + 1);
            let v: serde_json::Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(e) => return fail(format!("error: {}: not a sweep result ({e})", at())),
            };
            let (Some(key), Some(hash), Some(index)) = (
                v["key"].as_str(),
                v["scenario_hash"].as_str(),
                v["index"].as_u64(),
            ) else {
                return fail(format!(
                    "error: {}: not a point of a sweep this smpsim can merge (no key, scenario_hash or index); run the sweep again",
                    at()
                ));
            };
            let name = v["scenario"].as_str().unwrap_or("").to_string();
            match &scenario {
                None => scenario = Some((hash.to_string(), name, file)),
                Some((h, first_name, first)) if h != hash => {
                    return fail(format!(
                        "error: mixed scenarios: {} holds `{first_name}` (scenario text {h}), {} holds `{name}` (scenario text {hash}); merge the shards of one sweep",
                        first.display(),
                        at()
                    ))
                }
                Some(_) => {}
            }
            let named = v["scenario_file"].as_str().unwrap_or("").to_string();
            match &scenario_file {
                None => scenario_file = Some((named, at())),
                Some((first, where_)) if *first != named => {
                    return fail(format!(
                        "error: {where_} names the scenario `{first}`, {} names it `{named}`: shards of one sweep run the same command (give the scenario by the same path), so `report` finds it",
                        at()
                    ))
                }
                Some(_) => {}
            }
            if let Some(n) = v["sweep_points"].as_u64() {
                match &whole {
                    None => whole = Some((n, at())),
                    Some((m, where_)) if *m != n => {
                        return fail(format!(
                            "error: {where_} is a point of a sweep of {m} points, {} of one of {n}: not shards of one sweep (the same command with --shard K/N)",
                            at()
                        ))
                    }
                    Some(_) => {}
                }
            }
            lines.push(MergeLine {
                index,
                key: key.to_string(),
                file,
                line,
            });
        }
    }
    lines.sort_by(|a, b| a.index.cmp(&b.index).then_with(|| a.key.cmp(&b.key)));
    for w in lines.windows(2) {
        if w[0].key == w[1].key {
            return fail(format!(
                "error: overlapping points: {} and {} both hold point {} ({}); give each shard once",
                w[0].file.display(),
                w[1].file.display(),
                w[0].index,
                w[0].key
            ));
        }
        if w[0].index == w[1].index {
            return fail(format!(
                "error: {} and {} hold different points at place {} ({} and {}): not shards of one sweep (the same command with --shard K/N)",
                w[0].file.display(),
                w[1].file.display(),
                w[0].index,
                w[0].key,
                w[1].key
            ));
        }
    }
    // A point at each place 0..n when all shards are in. The lines say
    // n; a file of an older smpsim does not, and then only the places up
    // to the last point given can be checked.
    let known_total = whole.as_ref().map(|(n, _)| *n);
    let total = known_total.unwrap_or_else(|| lines.last().map_or(0, |l| l.index + 1));
    let present: HashSet<u64> = lines.iter().map(|l| l.index).collect();
    let absent: Vec<u64> = (0..total).filter(|i| !present.contains(i)).collect();
    if let Some(l) = lines.iter().find(|l| l.index >= total) {
        return fail(format!(
            "error: {}: point {} of a sweep of {total} points: not a point of this sweep",
            l.file.display(),
            l.index
        ));
    }
    let missing = absent.len() as u64;
    let shown: Vec<String> = absent.iter().take(10).map(|i| i.to_string()).collect();
    let which = format!(
        "{missing} of the sweep's {total} points are missing (places {}{}{}): a shard not given or not finished",
        shown.join(", "),
        if absent.len() > shown.len() { ", ..." } else { "" },
        if known_total.is_none() {
            "; points after the last given cannot be counted in files of an older smpsim"
        } else {
            ""
        }
    );
    if missing > 0 && !partial {
        return fail(format!(
            "error: {which}; give every shard's file, finish the missing shards (the same command with --shard K/N), or pass --partial to merge what there is"
        ));
    }
    let mut out = String::with_capacity(texts.iter().map(|t| t.len()).sum());
    for l in &lines {
        out.push_str(l.line);
        out.push('\n');
    }
    if let Err(e) = crate::output::emit(&out, Some(output)) {
        return fail(format!("error: {e}"));
    }
    eprintln!(
        "sweep merge: {} points from {} files into {}{}",
        lines.len(),
        files.len(),
        output.display(),
        if missing > 0 {
            format!(" (--partial: {which})")
        } else {
            String::new()
        }
    );
    0
}
