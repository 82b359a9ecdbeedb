//! Bands: how sure a figure is, printed beside it.
//!
//! A figure (a metric expression over the variants' results, such as a
//! before/after ratio) is uncertain for three reasons, each measured by
//! running the scenario again with `--set` overrides:
//!
//! 1. **seeds**: the spread over seeds (the caller's own, or
//!    [`Options::seeds`] of the design's);
//! 2. **assumed**: every assumed value over its range ([`design::params`]):
//!    first one at a time at each end of its range, which ranks them,
//!    then the [`Options::joint`] that move the figures most together, at
//!    every corner;
//! 3. **model**: the machine's stated error on contended lines
//!    ([`design::model_factor`], from `contention.toml`'s machines left
//!    out of the fit), applied as every line transfer times and divided by
//!    that factor: a figure moves as far as it rests on contended lines.
//!
//! Each part is the range of the figure under that source alone (the
//! seeds' spread of shortened runs narrowed by `sqrt` of their length, as
//! a mean's over a longer run); the
//! parts combine in quadrature ([`combine::band`]). The design's runs are
//! shortened so that they cost about [`Options::budget`] times the
//! nominal run ([`design::scale`]); a shortened point moves the figure by
//! the factor it moves the shortened reference. Every choice is made from
//! deterministic quantities, and the runs come back in the design's
//! order: the band is the same bytes on any number of threads.

pub mod cases;
pub mod combine;
pub mod command;
pub mod design;
mod pool;
pub mod runs;

use smpsim_report::band::Band;
use smpsim_report::metric::{self, Runs};
use smpsim_report::VariantRun;
use smpsim_scenario::Scenario;

use crate::progress::Progress;
use combine::Values;
use design::{Kind, Param};

/// How big a design.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Seeds of the design's own spread, the reference's included (used
    /// when the caller ran one seed).
    pub seeds: u32,
    /// Parameters varied together in the joint stage (at two corners).
    pub joint: usize,
    /// The most design points (each runs every variant): the parameters
    /// past it are not varied, and the band says so.
    pub max_points: usize,
    /// The design's cost as a multiple of the nominal run's.
    pub budget: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seeds: 3,
            joint: 2,
            max_points: 64,
            budget: 0.75,
        }
    }
}

/// A figure: its name and its expression over the variants' results
/// (`percpu-mutex.counter.ok.rate / global-mutex.counter.ok.rate`).
#[derive(Clone, Debug)]
pub struct Figure {
    pub name: String,
    pub expr: String,
}

/// What a band computation did, for a note beside the bands.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub points: usize,
    pub runs: usize,
    /// The design's runs' length as a part of the nominal run's (of its
    /// dearest variant: each variant is shortened on its own).
    pub scale: f64,
    pub params: Vec<String>,
    /// Parameters not varied: past [`Options::max_points`].
    pub capped: Vec<String>,
    pub joint: Vec<String>,
    pub model_factor: f64,
}

impl Summary {
    pub fn note(&self) -> String {
        let mut s = format!(
            "band: {} points ({} runs) at {} of the run's length; {} assumed values varied{}; model x{:.2}",
            self.points,
            self.runs,
            if self.scale >= 1.0 {
                "the whole".to_string()
            } else {
                format!("{:.3}", self.scale)
            },
            self.params.len(),
            if self.joint.is_empty() {
                String::new()
            } else {
                format!(" (together: {})", self.joint.join(", "))
            },
            self.model_factor
        );
        if !self.capped.is_empty() {
            s.push_str(&format!(
                "; not varied (past the cap on points): {}",
                self.capped.join(", ")
            ));
        }
        s
    }
}

/// The scenario as the caller ran it.
pub struct Nominal<'a> {
    pub scenario: &'a Scenario,
    pub variants: &'a [Option<String>],
    /// The caller's overrides, without the seed.
    pub sets: &'a [(String, String)],
    /// The caller's runs, per seed (from the first seed), variants in order.
    pub runs: &'a [Vec<VariantRun>],
}

pub(crate) fn runs_map(runs: &[VariantRun]) -> Runs {
    runs.iter()
        .map(|r| {
            (
                r.variant.clone(),
                serde_json::to_value(&r.result).expect("json"),
            )
        })
        .collect()
}

/// Every figure at one point (`None` where it is not a number there).
fn evaluate(figures: &[Figure], runs: &[VariantRun]) -> Vec<Option<f64>> {
    let map = runs_map(runs);
    figures
        .iter()
        .map(|f| metric::eval(&f.expr, &map).ok().filter(|v| v.is_finite()))
        .collect()
}

/// The bands of `figures` (`None` for a figure that is not a number in
/// the nominal run), and what was run.
pub fn bands(
    nominal: &Nominal,
    figures: &[Figure],
    opts: &Options,
    progress: &Progress,
) -> Result<(Vec<Option<Band>>, Summary), String> {
    let scenario = nominal.scenario;
    let first = nominal.runs.first().ok_or("a band needs the nominal run")?;
    let base = scenario
        .compile(nominal.variants[0].as_deref(), nominal.sets)
        .map_err(|e| e.to_string())?;
    let seed = first.first().map(|r| r.result.seed).unwrap_or(base.seed);
    let mut params = design::params(scenario, &base, nominal.sets)?;
    let own_seeds = if nominal.runs.len() >= 2 {
        0
    } else {
        opts.seeds.saturating_sub(1) as usize
    };
    let fixed = own_seeds + 1 + 2 + 2;
    let room = opts.max_points.saturating_sub(fixed) / 2;
    let capped: Vec<String> = params.iter().skip(room).map(|p| p.name.clone()).collect();
    params.truncate(room);
    let points_planned = fixed + 2 * params.len();
    if figures.is_empty() {
        // Nothing to put a band on: nothing to run.
        let summary = Summary {
            points: 0,
            runs: 0,
            scale: 1.0,
            params: params.iter().map(|p| p.name.clone()).collect(),
            capped,
            joint: Vec::new(),
            model_factor: design::model_factor(&base.machine),
        };
        return Ok((Vec::new(), summary));
    }
    let specs: Vec<smpsim_kernel::Spec> =
        crate::pool::compile_variants(scenario, nominal.variants, nominal.sets, &Ok)?;
    let scale = design::scale(first, &specs, nominal.variants, points_planned, opts.budget);
    let factor = design::model_factor(&base.machine);
    let up = design::model_sets(&base.machine, factor);
    let down = design::model_sets(&base.machine, 1.0 / factor);
    let shortened = scale.factor < 1.0;

    // Stage 1: seeds, the reference, every parameter alone, the model.
    let mut kinds: Vec<Kind> = (1..=own_seeds as u64)
        .map(|k| Kind::Seed(seed.saturating_add(k)))
        .collect();
    if shortened {
        kinds.push(Kind::Reference);
    }
    for i in 0..params.len() {
        kinds.push(Kind::End(i, false));
        kinds.push(Kind::End(i, true));
    }
    kinds.push(Kind::Model(true));
    kinds.push(Kind::Model(false));
    let run = |kinds: &[Kind]| -> Result<Vec<Vec<Option<f64>>>, String> {
        let sets: Vec<Vec<(String, String)>> = kinds
            .iter()
            .map(|k| design::point_sets(k, &params, nominal.sets, &scale, seed, &up, &down))
            .collect();
        let runs = pool::run_points(nominal, &sets, progress)?;
        Ok(runs.iter().map(|r| evaluate(figures, r)).collect())
    };
    let stage1 = run(&kinds)?;
    let nominal_values: Vec<Vec<Option<f64>>> =
        nominal.runs.iter().map(|r| evaluate(figures, r)).collect();
    let mut values: Vec<Values> = (0..figures.len())
        .map(|f| {
            let caller: Vec<f64> = nominal_values.iter().filter_map(|v| v[f]).collect();
            let centre = if caller.is_empty() {
                f64::NAN
            } else {
                caller.iter().sum::<f64>() / caller.len() as f64
            };
            Values {
                centre,
                reference: nominal_values[0][f].unwrap_or(f64::NAN),
                caller_seeds: caller,
                ends: vec![(None, None); params.len()],
                scale: scale.factor,
                ..Default::default()
            }
        })
        .collect();
    for (kind, at) in kinds.iter().zip(&stage1) {
        for (v, x) in values.iter_mut().zip(at) {
            match kind {
                Kind::Seed(_) => v.seeds.push(*x),
                Kind::Reference => v.reference = x.unwrap_or(f64::NAN),
                Kind::End(i, false) => v.ends[*i].0 = *x,
                Kind::End(i, true) => v.ends[*i].1 = *x,
                Kind::Model(_) => v.model.push(*x),
                Kind::Corner(_) => {}
            }
        }
    }

    // Stage 2: the parameters that move the figures most, together.
    let reach: Vec<Vec<f64>> = values
        .iter()
        .map(|v| {
            v.ends
                .iter()
                .map(|&(a, b)| {
                    [a, b]
                        .into_iter()
                        .flatten()
                        .map(|x| (x - v.reference).abs() / v.reference.abs().max(1e-300))
                        .fold(0.0, f64::max)
                })
                .collect()
        })
        .collect();
    let chosen = combine::choose(&reach, params.len(), opts.joint);
    let corner_kinds = if chosen.len() >= 2 && !values.is_empty() {
        design::pushing_corners(&chosen, &values[0].ends)
    } else {
        Vec::new()
    };
    let stage2 = run(&corner_kinds)?;
    for at in &stage2 {
        for (v, x) in values.iter_mut().zip(at) {
            v.corners.push(*x);
        }
    }

    let names: Vec<String> = params.iter().map(|p| p.name.clone()).collect();
    let set_values: Vec<(String, String)> = params
        .iter()
        .map(|p| (p.lo.clone(), p.hi.clone()))
        .collect();
    let bands = values
        .iter()
        .map(|v| combine::band(v, &names, &set_values))
        .collect();
    let points = kinds.len() + corner_kinds.len();
    let summary = Summary {
        points,
        runs: points * nominal.variants.len(),
        scale: scale.factor,
        params: names,
        capped,
        joint: chosen.iter().map(|&i| params[i].name.clone()).collect(),
        model_factor: factor,
    };
    Ok((bands, summary))
}

/// The parameters a band of the scenario would vary (for `--band` to
/// list, and tests).
pub fn parameters(scenario: &Scenario, sets: &[(String, String)]) -> Result<Vec<Param>, String> {
    let base = scenario.compile(None, sets).map_err(|e| e.to_string())?;
    design::params(scenario, &base, sets)
}
