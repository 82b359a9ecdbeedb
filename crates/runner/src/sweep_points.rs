//! A sweep's points: the cross product of variants, CPU counts, `--set`
//! values and seeds, in a fixed order, each checked before anything runs.

use std::path::PathBuf;

use smpsim_kernel::Spec;
use smpsim_report::format::SweepFormat;
use smpsim_report::results_file::{parse_cpus, split_values};
use smpsim_scenario::Scenario;

use crate::output::{check_seeds, parse_sets};
use crate::variants::{variants_to_run, MAX_SEED};

/// What a sweep was asked to do (`smpsim sweep`'s arguments).
pub struct Sweep {
    pub scenario: PathBuf,
    pub output: PathBuf,
    /// `--shard K/N`, as given.
    pub shard: Option<String>,
    /// `--cpus`, as given.
    pub cpus: Option<String>,
    pub variants: Vec<String>,
    /// `--set KEY=V1,V2`, as given.
    pub sets: Vec<String>,
    /// `--preset NAME`: the machine every point runs on (`machine.preset`).
    pub preset: Option<String>,
    pub seeds: u64,
    pub format: Option<SweepFormat>,
    pub quiet: bool,
    pub allow_paths: Vec<PathBuf>,
    /// The smpsim (version and commit) each point records.
    pub built_from: String,
    /// `--band`: each point's line gains its figures' bands.
    pub band: bool,
    /// How big the band's design may be (`--band-budget`, `--band-points`).
    pub band_size: crate::band::Options,
}

/// One point of a sweep.
#[derive(Clone, Debug)]
pub struct Point {
    /// Its place in the sweep's fixed order.
    pub index: usize,
    pub variant: Option<String>,
    pub cpus: Option<u32>,
    pub sets: Vec<(String, String)>,
    pub seed: u64,
    /// The groups whose explicit `cpus` the point keeps (with `--cpus`).
    pub kept: Vec<(String, String)>,
}

impl Point {
    /// What identifies the point in a results file.
    pub fn key(&self, scenario_hash: &str) -> String {
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

/// A sweep's points and its scenario's base spec.
pub struct Plan {
    pub points: Vec<Point>,
    pub base: Spec,
}

/// Every point of the sweep, in order, after checking that what it asks
/// (CPU counts, seeds, `--set` values, variants, its size) can run.
pub fn plan(scenario: &Scenario, req: &Sweep) -> Result<Plan, String> {
    let mut sets = parse_sets(&req.sets)?;
    let preset = preset_set(req, &sets)?;
    let base = scenario
        .compile(None, preset.as_slice())
        .map_err(|e| e.to_string())?;
    let cpus = cpu_counts(req, &base)?;
    if req.seeds == 0 {
        return Err("error: --seeds 0: a sweep needs at least one seed".into());
    }
    check_seeds(req.seeds)?;
    // The preset is a setting of every point, first, as `--set` would give it.
    sets.splice(0..0, preset);
    check_set_values(scenario, &sets)?;
    let asked = asked_variants(scenario, req)?;
    let variants = variants_to_run(scenario, &asked);
    check_size(&sets, variants.len(), cpus.len(), req.seeds)?;
    let combos = combinations(&sets);
    // Each variant and combination of settings: its first seed (a swept
    // `scenario.seed` is its own) and the groups that place themselves.
    let mut firsts_of = Vec::new();
    for v in &variants {
        let mut row = Vec::new();
        for c in &combos {
            let seed = scenario
                .compile(v.as_deref(), c)
                .map_or(base.seed, |s| s.seed);
            let kept = match req.cpus {
                Some(_) => scenario
                    .explicit_cpus(v.as_deref(), c)
                    .map_err(|e| e.to_string())?,
                None => Vec::new(),
            };
            row.push((seed, kept));
        }
        firsts_of.push(row);
    }
    let mut points = Vec::new();
    for (v, row) in variants.iter().zip(&firsts_of) {
        for &n in &cpus {
            for (c, (first_seed, kept)) in combos.iter().zip(row) {
                for k in 0..req.seeds {
                    let Some(seed) = first_seed.checked_add(k).filter(|s| *s <= MAX_SEED) else {
                        return Err(format!(
                            "error: seed {first_seed} + {k} is beyond the largest seed ({MAX_SEED}); give a smaller scenario.seed or fewer --seeds"
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
    Ok(Plan { points, base })
}

/// `--preset NAME` as the `machine.preset` setting; a name no preset
/// has, or a second machine given by `--set machine.preset`, is refused
/// before anything runs or is written.
fn preset_set(req: &Sweep, sets: &[(String, String)]) -> Result<Option<(String, String)>, String> {
    let Some(name) = &req.preset else {
        return Ok(None);
    };
    if sets.iter().any(|(k, _)| k == "machine.preset") {
        return Err(format!(
            "error: --preset {name} and --set machine.preset both name the machine; give one"
        ));
    }
    if smpsim_machine::preset_source(name).is_none() {
        let known: Vec<String> = smpsim_machine::preset_names()
            .map(|n| format!("`{n}`"))
            .collect();
        return Err(format!(
            "error: --preset {name}: unknown machine preset `{name}`\n  = help: known presets: {}",
            known.join(", ")
        ));
    }
    Ok(Some(("machine.preset".to_string(), name.clone())))
}

/// `--cpus`' counts (none: one point per the scenario's own CPUs), each at
/// most the machine's.
fn cpu_counts(req: &Sweep, base: &Spec) -> Result<Vec<Option<u32>>, String> {
    let cpus: Vec<Option<u32>> = match &req.cpus {
        None => vec![None],
        Some(c) => parse_cpus(c)?.into_iter().map(Some).collect(),
    };
    if let Some(&Some(n)) = cpus.iter().max() {
        let have = base.machine.nr_cpus() as u32;
        if n > have {
            return Err(format!(
                "error: --cpus {n}: the scenario's machine has {have} CPUs; sweep up to {have}, or --set a larger topology"
            ));
        }
    }
    Ok(cpus)
}

/// Every `--set` value must compile (with the first value of each other
/// `--set`, which may be what makes it valid: a shorter duration with a
/// shorter warmup): a typo in a key fails here, before anything runs.
fn check_set_values(scenario: &Scenario, sets: &[(String, String)]) -> Result<(), String> {
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
            scenario.compile(None, &with).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// `--variant a,b` as well as `--variant a --variant b`; a name the
/// scenario does not have is refused before anything runs.
fn asked_variants(scenario: &Scenario, req: &Sweep) -> Result<Vec<String>, String> {
    let asked: Vec<String> = req
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
        return Err(format!(
            "error: {}: unknown variant `{bad}`; the scenario has: {}",
            req.scenario.display(),
            if known.is_empty() {
                "no variants".to_string()
            } else {
                known.join(", ")
            }
        ));
    }
    Ok(asked)
}

/// Every point is held in memory: count them before making them.
fn check_size(
    sets: &[(String, String)],
    variants: usize,
    cpus: usize,
    seeds: u64,
) -> Result<(), String> {
    let limit = smpsim_scenario::limits::SWEEP_POINTS;
    let max_points = limit.get().map_err(|e| format!("error: {e}"))?;
    let count = sets
        .iter()
        .map(|(_, v)| split_values(v).len() as u64)
        .chain([variants as u64, cpus as u64, seeds])
        .try_fold(1u64, |n, k| n.checked_mul(k))
        .filter(|n| *n <= max_points);
    if count.is_none() {
        return Err(format!(
            "error: the sweep has more than {max_points} points (variants x CPU counts x --set values x seeds; {})",
            limit.explain(max_points)
        ));
    }
    Ok(())
}

/// The cross product of the `--set` values, in a fixed order.
fn combinations(sets: &[(String, String)]) -> Vec<Vec<(String, String)>> {
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, v) in sets {
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
    combos
}

/// The scenario values of a point: with `--cpus N`, `groups` that do not
/// place themselves are restricted to CPUs `0..N`.
pub fn point_sets(p: &Point, groups: &[String]) -> Vec<(String, String)> {
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
/// The error for a kept placement that names a CPU at or beyond the
/// point's `--cpus N`, if there is one.
pub fn placement_beyond(p: &Point, spec: &smpsim_kernel::Spec, n: u32) -> Option<String> {
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
pub fn cpus_header(points: &[Point], base: &smpsim_kernel::Spec) -> String {
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
