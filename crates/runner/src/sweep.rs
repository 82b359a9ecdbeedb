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
//! scaled and which it kept before it runs ([`crate::sweep_points`]).
//!
//! `--set scenario.seed=A,B` is honoured: each point runs (and is
//! labelled with) its own seed, `--seeds K` then runs A..A+K at each.

use std::io::Write;
use std::path::Path;

use rayon::prelude::*;
use smpsim_kernel::Spec;
use smpsim_report::format::SweepFormat;
use smpsim_report::results_file;
use smpsim_report::sweep_point::SweepPoint;
use smpsim_scenario::Scenario;

use crate::output::{check_outputs, emit, open_append, scenario_inputs};
use crate::pilot::pilot;
use crate::progress::{Item, Progress};
pub use crate::sweep_points::Sweep;
use crate::sweep_points::{cpus_header, placement_beyond, plan, point_sets, Plan, Point};

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

/// Runs the sweep: every point of the shard not yet in the results file,
/// then the file in point order, then (with `--format`) the points on
/// stdout.
pub fn run(req: &Sweep) -> Result<(), String> {
    let shard = req.shard.as_deref().map(parse_shard).transpose()?;
    let scenario = crate::output::load_scenario(&req.scenario, &req.allow_paths)?;
    crate::variants::warn(&scenario, req.quiet);
    check_results_file(&req.output, &scenario)?;
    let Plan { points, base } = plan(&scenario, req)?;
    let whole = points.len();
    let mut hash = results_file::scenario_hash(&scenario.text);
    if req.band {
        // A point with its band is not the point without: not resumed
        // from, nor mixed with, a sweep without bands.
        hash.push_str("+band");
        let size = &req.band_size;
        if *size != crate::band::Options::default() {
            // A point's band depends on the design's size too.
            hash.push_str(&format!("({},{})", size.budget, size.max_points));
        }
    }
    let done = results_file::finished(&req.output, &hash)?;
    // This shard's points (every point without --shard).
    let points: Vec<Point> = points
        .into_iter()
        .filter(|p| in_shard(p.index, shard))
        .collect();
    let todo: Vec<&Point> = points
        .iter()
        .filter(|p| !done.contains(&p.key(&hash)))
        .collect();
    // Never through a link planted at the path, never into a FIFO.
    let file = open_append(&req.output).map_err(|e| format!("error: {e}"))?;
    let specs = point_specs(&scenario, &todo)?;
    if let (Some(_), false) = (&req.cpus, req.quiet) {
        eprintln!("{}", cpus_header(&points, &base));
    }
    let ran = Ran {
        scenario: &scenario,
        hash: &hash,
        whole,
        req,
    };
    ran.run_all(&todo, &specs, std::sync::Mutex::new(file))?;
    // All points are in: the file in point order.
    sort_file(&req.output, &points, &hash)?;
    if let Some(format) = req.format {
        print_points(&req.output, &points, &hash, format)?;
    }
    if !req.quiet {
        eprintln!(
            "sweep: {}{} points ({} run now, {} already in {})",
            shard.map_or(String::new(), |(k, n)| format!("shard {k}/{n}: ")),
            points.len(),
            todo.len(),
            points.len() - todo.len(),
            req.output.display()
        );
    }
    Ok(())
}

/// The results file is read, appended to and rewritten: a FIFO or a device
/// would block or lose the points, and it is never the scenario itself.
fn check_results_file(output: &Path, scenario: &Scenario) -> Result<(), String> {
    if let Ok(meta) = std::fs::metadata(output) {
        if !meta.is_file() {
            return Err(format!(
                "error: -o {}: {}, not a regular file; a sweep reads, appends to and rewrites its results file, so give a file path",
                output.display(),
                file_kind(&meta)
            ));
        }
    }
    check_outputs(&scenario_inputs(scenario), &[("-o", output)])
}

/// Each point's spec (or why it does not compile); a kept placement must
/// fit in the point's CPUs, or the point is not the size it says.
fn point_specs(scenario: &Scenario, todo: &[&Point]) -> Result<Vec<Result<Spec, String>>, String> {
    let specs: Vec<Result<Spec, String>> = todo
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
    for (p, spec) in todo.iter().zip(&specs) {
        if let (Some(n), Ok(spec)) = (p.cpus, spec) {
            if let Some(e) = placement_beyond(p, spec, n) {
                return Err(e);
            }
        }
    }
    Ok(specs)
}

/// What every point of one sweep shares.
struct Ran<'a> {
    scenario: &'a Scenario,
    hash: &'a str,
    /// How many points the whole sweep has.
    whole: usize,
    req: &'a Sweep,
}

impl Ran<'_> {
    /// Runs the points in parallel, appending each to `file` as it ends.
    fn run_all(
        &self,
        todo: &[&Point],
        specs: &[Result<Spec, String>],
        file: std::sync::Mutex<std::fs::File>,
    ) -> Result<(), String> {
        let progress = Progress::new("sweep", "points", self.req.quiet);
        let costs: Vec<(u64, f64)> = specs
            .par_iter()
            .map(|s| match s {
                Ok(spec) if !progress.quiet() => pilot(spec),
                _ => (0, 1.0),
            })
            .collect();
        let items: Vec<Item> = costs.iter().map(|&(p, c)| progress.add(p, c)).collect();
        let written = todo
            .par_iter()
            .zip(specs.par_iter())
            .zip(items.par_iter())
            .try_for_each(|((p, spec), item)| {
                progress.start(item);
                let line = self.point(p, spec, item).to_line();
                progress.finish(item);
                let mut f = file.lock().expect("no panics while writing");
                // A write that fails part way (a full disk) is cut back
                // off, so the file holds only whole points.
                let before = f.metadata().map(|m| m.len());
                f.write_all(line.as_bytes())
                    .and_then(|_| f.flush())
                    .map_err(|e| {
                        if let Ok(len) = before {
                            let _ = f.set_len(len);
                        }
                        format!("error: {}: {e}", self.req.output.display())
                    })
            });
        progress.done();
        written
    }

    /// The overrides a point was compiled with, for its band's design.
    fn band_sets(&self, p: &Point) -> Vec<(String, String)> {
        let groups: Vec<String> = match p.cpus {
            None => Vec::new(),
            Some(_) => self
                .scenario
                .compile(p.variant.as_deref(), &p.sets)
                .map(|s| s.task_groups.into_iter().map(|g| g.name).collect())
                .unwrap_or_default(),
        };
        point_sets(p, &groups)
    }

    /// One point run (or its compile error), as its results-file line.
    fn point(&self, p: &Point, spec: &Result<Spec, String>, item: &Item) -> SweepPoint {
        let mut point = SweepPoint {
            band: None,
            cpus: p.cpus,
            error: None,
            index: Some(p.index as u64),
            key: p.key(self.hash),
            result: None,
            scenario: self.scenario.name.clone(),
            scenario_file: self.scenario.path.display().to_string(),
            scenario_hash: self.hash.to_string(),
            seed: p.seed,
            settings: p.sets.iter().cloned().collect(),
            smpsim: Some(self.req.built_from.clone()),
            sweep_points: Some(self.whole as u64),
            variant: p.variant.clone().unwrap_or_else(|| "base".into()),
        };
        match spec {
            Ok(spec) => {
                let result = smpsim_kernel::simulate_with_progress(spec, &item.reached);
                if self.req.band {
                    let sets = self.band_sets(p);
                    point.band = Some(crate::band::command::sweep_point(
                        self.scenario,
                        &p.variant,
                        &sets,
                        &result,
                        &self.req.band_size,
                    ));
                }
                let mut r = serde_json::to_value(result).expect("serializable");
                // Host time would make the file differ between runs.
                r["stats"]["wall_seconds"] = serde_json::Value::from(0.0);
                point.result = Some(r);
            }
            Err(e) => point.error = Some(e.clone()),
        }
        point
    }
}

/// This sweep's points of the results file, in `format`, on stdout.
fn print_points(
    output: &Path,
    points: &[Point],
    hash: &str,
    format: SweepFormat,
) -> Result<(), String> {
    let mine: std::collections::HashSet<String> = points.iter().map(|p| p.key(hash)).collect();
    let lines: Vec<SweepPoint> = results_file::read_points(output)?
        .into_iter()
        .filter(|p| mine.contains(&p.key))
        .collect();
    let out = smpsim_report::format::sweep(format.into(), &lines, "");
    emit(&out, None).map_err(|e| format!("error: {e}"))
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

/// Rewrites the results file with this sweep's points in point order
/// (lines of other points, from a wider earlier sweep, after them).
fn sort_file(path: &Path, points: &[Point], hash: &str) -> Result<(), String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("error: {}: {e}", path.display()))?;
    let mut lines: Vec<(String, &str)> = text
        .lines()
        .filter_map(|l| Some((SweepPoint::from_line(l).ok()?.key, l)))
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
    emit(&out, Some(path)).map_err(|e| format!("error: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_points_round_robin() {
        assert_eq!(parse_shard("2/4"), Ok((2, 4)));
        assert!(parse_shard("0/4").is_err() && parse_shard("5/4").is_err());
        let mine: Vec<usize> = (0..8).filter(|&i| in_shard(i, Some((2, 4)))).collect();
        assert_eq!(mine, [1, 5]);
        assert!(in_shard(7, None));
    }
}
