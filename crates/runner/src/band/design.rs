//! What a band varies and how: the parameters (the machine's assumed
//! costs and the scenario's values written with a range), the design's
//! points as `--set` overrides, and how far its runs are shortened.

use smpsim_kernel::Spec;
use smpsim_machine::{Contended, Machine};
use smpsim_report::VariantRun;
use smpsim_scenario::Scenario;

/// One parameter a band varies, by the `--set` key that reaches it.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// As `smpsim machine` names a cost (`ipi_latency`), or the scenario
    /// key (`kernel.tg_walk_cost`).
    pub name: String,
    pub key: String,
    /// The range's ends as TOML values.
    pub lo: String,
    pub hi: String,
}

/// A number as a TOML float (`500.0`), for a cost's `ns`.
fn toml_float(x: f64) -> String {
    format!("{x:?}")
}

/// Every parameter of the scenario (with `sets`), in a fixed order: the
/// machine's costs with a range (assumed ones at least: the default
/// x0.5 - x2), as `Machine::cost_list` lists them, then its line
/// transfers by node distance ([`distance_param`]), then the scenario's
/// values written with a range, by key. A cost of 0, or a range of no
/// width, is left out: varying it changes nothing. The global contention
/// rules are the model's part, not an assumed value.
pub fn params(
    scenario: &Scenario,
    spec: &Spec,
    sets: &[(String, String)],
) -> Result<Vec<Param>, String> {
    let mut out = Vec::new();
    for (name, cost) in spec.machine.cost_list() {
        if name.starts_with("coherence.") {
            continue;
        }
        let Some((lo, hi)) = cost.band_range() else {
            continue;
        };
        if hi <= lo || cost.ns == 0.0 {
            continue;
        }
        out.push(Param {
            name: name.to_string(),
            key: format!("machine.{}.ns", Machine::cost_path(name)),
            lo: toml_float(lo),
            hi: toml_float(hi),
        });
    }
    out.extend(distance_param(&spec.machine));
    let values = scenario
        .assumed_values(None, sets)
        .map_err(|e| e.to_string())?;
    for v in values {
        if v.lo == v.hi {
            continue;
        }
        out.push(Param {
            name: v.key.clone(),
            key: v.key,
            lo: v.lo,
            hi: v.hi,
        });
    }
    Ok(out)
}

/// The line transfers by node distance as one parameter: `--set`
/// reaches the list only whole (two entries varied apart would clash in a
/// corner), so its ends are the list with every cost that has a range
/// (stated, or the default for an assumed one) at that end together;
/// none when no entry has one.
fn distance_param(machine: &Machine) -> Option<Param> {
    let costs = &machine.costs.line_transfer.by_node_distance;
    let ranges: Vec<Option<(f64, f64)>> = costs
        .iter()
        .map(|c| {
            let cost = smpsim_machine::Cost {
                ns: c.ns,
                range: c.range,
                source: c.source.clone(),
            };
            cost.band_range().filter(|(lo, hi)| hi > lo && c.ns != 0.0)
        })
        .collect();
    if ranges.iter().all(Option::is_none) {
        return None;
    }
    let list = |top: bool| {
        let items: Vec<String> = costs
            .iter()
            .zip(&ranges)
            .map(|(c, r)| {
                let ns = r.map_or(c.ns, |(lo, hi)| if top { hi } else { lo });
                format!(
                    "{{ distance = {}, ns = {}, source = \"band\" }}",
                    c.distance,
                    toml_float(ns)
                )
            })
            .collect();
        format!("[{}]", items.join(", "))
    };
    Some(Param {
        name: "line_transfer.by_node_distance".into(),
        key: "machine.costs.line_transfer.by_node_distance".into(),
        lo: list(false),
        hi: list(true),
    })
}

/// The machine's stated error on contended lines: the median factor
/// over its own curves left out of the global rules' fit, or over every
/// machine's when it has none (`Machine::standing`).
pub fn model_factor(machine: &Machine) -> f64 {
    match machine.standing().contended {
        Contended::Checked { median, .. } => median,
        Contended::Extrapolated { median, .. } => median,
    }
}

/// The model's error as a run: every line transfer and the home's
/// occupancy times `factor` (above 1: slower lines, below: faster). A
/// figure moves as far as it rests on contended lines; one that does not
/// touch a shared line does not move.
pub fn model_sets(machine: &Machine, factor: f64) -> Vec<(String, String)> {
    let lt = &machine.costs.line_transfer;
    let mut sets: Vec<(String, String)> = [
        ("local", &lt.local),
        ("smt_sibling", &lt.smt_sibling),
        ("same_llc", &lt.same_llc),
        ("same_node", &lt.same_node),
        ("same_socket", &lt.same_socket),
        ("cross_socket", &lt.cross_socket),
    ]
    .into_iter()
    .map(|(name, c)| {
        (
            format!("machine.costs.line_transfer.{name}"),
            format!(
                "{{ ns = {}, source = \"band: the model's stated error\" }}",
                toml_float(c.ns * factor)
            ),
        )
    })
    .collect();
    if !lt.by_node_distance.is_empty() {
        let items: Vec<String> = lt
            .by_node_distance
            .iter()
            .map(|c| {
                format!(
                    "{{ distance = {}, ns = {}, source = \"band\" }}",
                    c.distance,
                    toml_float(c.ns * factor)
                )
            })
            .collect();
        sets.push((
            "machine.costs.line_transfer.by_node_distance".into(),
            format!("[{}]", items.join(", ")),
        ));
    }
    let occ = &machine.coherence.occupancy;
    sets.push((
        "machine.coherence.occupancy".into(),
        format!(
            "{{ ns = {}, source = \"band: the model's stated error\" }}",
            toml_float(occ.ns * factor)
        ),
    ));
    sets
}

/// A variant's design points run in full while they cost at most this
/// many model events together (about a host second): short runs pay no
/// shortening.
pub const FREE_EVENTS: f64 = 1e7;

/// The shortest a band's run is made: this part of the nominal run.
pub const MIN_SCALE: f64 = 1.0 / 40.0;

/// How the band's runs are shortened.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// Their cost as a part of the nominal run's (1: not shortened).
    pub factor: f64,
    /// The overrides that shorten them.
    pub sets: Vec<(String, String)>,
}

impl Scale {
    pub fn full() -> Scale {
        Scale {
            factor: 1.0,
            sets: Vec::new(),
        }
    }
}

/// How far to shorten `points` design points of the nominal run, each
/// variant on its own (`runs`: the variants at the first seed; `specs`:
/// their compiled specs), so that each variant's design costs about
/// `budget` times its nominal run, or [`FREE_EVENTS`] if that is more: a
/// cheap variant (a slow "before") runs longer than a dear one. Decided
/// from the runs' event counts, which are deterministic, never from host
/// time: the band is the same on any host and thread count. A variant's
/// overrides are scoped to it (`variant.NAME.scenario.duration`).
pub fn scale(
    runs: &[VariantRun],
    specs: &[Spec],
    variants: &[Option<String>],
    points: usize,
    budget: f64,
) -> Scale {
    let mut out = Scale::full();
    let mut dearest = 0.0;
    for ((run, spec), variant) in runs.iter().zip(specs).zip(variants) {
        let one = scale_one(run, spec, points, budget);
        let events = run.result.stats.events as f64;
        if events > dearest {
            dearest = events;
            out.factor = one.factor;
        }
        let prefix = variant
            .as_ref()
            .map_or(String::new(), |v| format!("variant.{v}."));
        out.sets.extend(
            one.sets
                .into_iter()
                .map(|(k, v)| (format!("{prefix}{k}"), v)),
        );
    }
    out
}

/// [`scale`] for one variant. Replicas go first (each keeps its
/// windows); then the warm-up and the measured part, alike, down to
/// [`MIN_SCALE`] (and never below one latency window,
/// `kernel.latency_window`, where the run has one); a run that ended
/// before its duration (its work done) is not cut. The budget is a
/// target: a run that cannot be cut costs what it costs.
fn scale_one(run: &VariantRun, spec: &Spec, points: usize, budget: f64) -> Scale {
    let events = run.result.stats.events as f64;
    if events <= 0.0 || points == 0 {
        return Scale::full();
    }
    let want = ((budget * events).max(FREE_EVENTS) / (points as f64 * events)).min(1.0);
    if want >= 1.0 {
        return Scale::full();
    }
    let mut sets = Vec::new();
    let mut factor = 1.0;
    let replicas = spec.replicas.max(1);
    if replicas > 1 {
        let keep = ((replicas as f64 * want).floor() as u32).max(1);
        sets.push(("scenario.replicas".into(), keep.to_string()));
        factor = keep as f64 / replicas as f64;
    }
    let ended_early = run.result.stats.simulated_ns < run.result.duration_ns;
    // A run measured in latency windows keeps one whole window at least
    // (a worst-window figure of a cut window means something else).
    let measured = spec.duration.saturating_sub(spec.warmup);
    let window = spec.knobs.latency_window;
    let floor = if window > 0 && window <= measured {
        window as f64 / measured as f64
    } else {
        MIN_SCALE
    };
    let left = (want / factor).max(floor).max(MIN_SCALE);
    if left < 1.0 && !ended_early && spec.duration > 0 {
        let warmup = (spec.warmup as f64 * left).round() as u64;
        let measured = (measured as f64 * left).round().max(1.0) as u64;
        sets.push(("scenario.warmup".into(), format!("{warmup}ns")));
        sets.push((
            "scenario.duration".into(),
            format!("{}ns", warmup + measured),
        ));
        factor *= left;
    }
    Scale { factor, sets }
}

/// What a design point is.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// The nominal values at another seed (shortened as every point).
    Seed(u64),
    /// The nominal values at the first seed, shortened: what the other
    /// points are measured against.
    Reference,
    /// One parameter at an end of its range: (index, `true` for its top).
    End(usize, bool),
    /// The model's error: lines slower (`true`) or faster.
    Model(bool),
    /// The chosen parameters together, each at an end.
    Corner(Vec<(usize, bool)>),
}

/// A point's overrides over the band's base (`base` then the shortening
/// then the point's own, the seed last).
pub fn point_sets(
    kind: &Kind,
    params: &[Param],
    base: &[(String, String)],
    scale: &Scale,
    seed: u64,
    model: &[(String, String)],
    model_down: &[(String, String)],
) -> Vec<(String, String)> {
    let mut sets: Vec<(String, String)> = base.to_vec();
    sets.extend(scale.sets.iter().cloned());
    let end = |i: usize, top: bool| {
        let p = &params[i];
        (p.key.clone(), if top { p.hi.clone() } else { p.lo.clone() })
    };
    let mut seed = seed;
    match kind {
        Kind::Seed(s) => seed = *s,
        Kind::Reference => {}
        Kind::End(i, top) => sets.push(end(*i, *top)),
        Kind::Model(true) => sets.extend(model.iter().cloned()),
        Kind::Model(false) => sets.extend(model_down.iter().cloned()),
        Kind::Corner(ends) => sets.extend(ends.iter().map(|&(i, top)| end(i, top))),
    }
    sets.push(("scenario.seed".into(), seed.to_string()));
    sets
}

/// The two corners of the chosen parameters where each pushes the
/// figure (`ends`: its value at every parameter's bottom and top) the
/// same way: every one at the end that raises it, then every one at the
/// end that lowers it. A parameter whose ends are not both numbers
/// counts as raising it at its top.
pub fn pushing_corners(chosen: &[usize], ends: &[(Option<f64>, Option<f64>)]) -> Vec<Kind> {
    let raises_at_top: Vec<bool> = chosen
        .iter()
        .map(|&i| match ends[i] {
            (Some(lo), Some(hi)) => hi >= lo,
            _ => true,
        })
        .collect();
    [true, false]
        .into_iter()
        .map(|up| {
            Kind::Corner(
                chosen
                    .iter()
                    .zip(&raises_at_top)
                    .map(|(&i, &top_raises)| (i, top_raises == up))
                    .collect(),
            )
        })
        .collect()
}

/// Every corner of the chosen parameters (each at its bottom or top), in
/// a fixed order.
pub fn corners(chosen: &[usize]) -> Vec<Kind> {
    (0..1u32 << chosen.len())
        .map(|bits| {
            Kind::Corner(
                chosen
                    .iter()
                    .enumerate()
                    .map(|(j, &i)| (i, bits & (1 << j) != 0))
                    .collect(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corners_cover_every_combination_once() {
        let c = corners(&[3, 5]);
        assert_eq!(c.len(), 4);
        assert_eq!(c[0], Kind::Corner(vec![(3, false), (5, false)]));
        assert_eq!(c[3], Kind::Corner(vec![(3, true), (5, true)]));
    }

    #[test]
    fn pushing_corners_follow_each_parameters_direction() {
        // Parameter 0 raises the figure at its top, parameter 2 lowers it.
        let ends = [(Some(1.0), Some(3.0)), (None, None), (Some(5.0), Some(2.0))];
        let c = pushing_corners(&[0, 2], &ends);
        assert_eq!(c[0], Kind::Corner(vec![(0, true), (2, false)]));
        assert_eq!(c[1], Kind::Corner(vec![(0, false), (2, true)]));
    }

    #[test]
    fn distance_costs_vary_together_only_with_a_range() {
        let mut m = smpsim_machine::preset("opteron-6172-48").unwrap().unwrap();
        // Measured, no range: not varied.
        assert_eq!(distance_param(&m), None);
        let lt = &mut m.costs.line_transfer.by_node_distance;
        lt[0].range = Some([60.0, 100.0]);
        lt[1].source = "assumed: for the test".into();
        let two = lt[1].ns;
        let p = distance_param(&m).unwrap();
        assert_eq!(p.key, "machine.costs.line_transfer.by_node_distance");
        assert!(p.lo.contains("distance = 16, ns = 60.0"), "{}", p.lo);
        assert!(p.lo.contains(&format!("ns = {:?}", two * 0.5)), "{}", p.lo);
        assert!(p.hi.contains("distance = 16, ns = 100.0"), "{}", p.hi);
        assert!(p.hi.contains(&format!("ns = {:?}", two * 2.0)), "{}", p.hi);
    }

    #[test]
    fn model_sets_scale_every_line_and_the_occupancy() {
        let m = smpsim_machine::preset("opteron-6172-48").unwrap().unwrap();
        let sets = model_sets(&m, 2.0);
        let same_llc = m.costs.line_transfer.same_llc.ns * 2.0;
        assert!(sets
            .iter()
            .any(|(k, v)| k == "machine.costs.line_transfer.same_llc"
                && v.contains(&format!("ns = {same_llc:?}"))));
        assert!(sets
            .iter()
            .any(|(k, _)| k == "machine.costs.line_transfer.by_node_distance"));
        assert!(sets
            .iter()
            .any(|(k, v)| k == "machine.coherence.occupancy" && v.contains("ns = 20.0")));
    }
}
